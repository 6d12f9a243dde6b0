//! Policy rules shared by NetworkPolicy, GlobalNetworkPolicy and Profile: `Rule`, `EntityRule`, ICMP
//! matches, HTTP matches and service matches, as upstream's `api.Rule` (v3.29).
//!
//! Only the shape lives here; what makes a rule valid is checked in `validate.rs`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::numorstring::{Port, Protocol};

/// One ingress or egress rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// `Allow`, `Deny`, `Log` or `Pass`.
    #[schemars(extend("enum" = ["Allow", "Deny", "Log", "Pass"]))]
    #[serde(default)]
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_protocol: Option<Protocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp: Option<IcmpFields>,
    #[serde(default, rename = "notICMP", skip_serializing_if = "Option::is_none")]
    pub not_icmp: Option<IcmpFields>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EntityRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<EntityRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpMatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<RuleMetadata>,
}

/// ICMP type and code to match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IcmpFields {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub icmp_type: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
}

/// The source or destination side of a rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntityRule {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nets: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<ServiceMatch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<Port>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_nets: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_ports: Vec<Port>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_accounts: Option<ServiceAccountMatch>,
}

/// Service accounts to match, by name and/or label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAccountMatch {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// A Kubernetes service to match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceMatch {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// An application-layer HTTP match (allow rules only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpMatch {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<HttpPath>,
}

/// One HTTP path to match: exactly one of `exact` or `prefix`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpPath {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// Free-form annotations attached to a rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleMetadata {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}
