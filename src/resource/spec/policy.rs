//! Specs of NetworkPolicy and GlobalNetworkPolicy (upstream v3.29 `NetworkPolicySpec`,
//! `GlobalNetworkPolicySpec`).
//!
//! Types defaulting and every check live in `validate.rs`; these are plain shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::float;
use super::rule::Rule;

/// The spec of a namespaced NetworkPolicy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPolicySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float")]
    #[schemars(with = "Option<f64>")]
    pub order: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingress: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// `Ingress` and/or `Egress`; defaulted from the rules when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub performance_hints: Vec<String>,
}

/// The spec of a cluster-wide GlobalNetworkPolicy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GlobalNetworkPolicySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float")]
    #[schemars(with = "Option<f64>")]
    pub order: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingress: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// `Ingress` and/or `Egress`; defaulted from the rules when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<String>,
    #[serde(default, rename = "doNotTrack", skip_serializing_if = "is_false")]
    pub do_not_track: bool,
    #[serde(default, rename = "preDNAT", skip_serializing_if = "is_false")]
    pub pre_dnat: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub apply_on_forward: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub performance_hints: Vec<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}
