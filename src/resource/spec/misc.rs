//! Specs of the small kinds: Profile, GlobalNetworkSet, NetworkSet, Tier and ClusterInformation.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::float;
use super::rule::Rule;

/// Rules and labels applied to the endpoints that name the profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProfileSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingress: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<Rule>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels_to_apply: BTreeMap<String, String>,
}

/// Addresses that policy selectors can match by label (GlobalNetworkSet and NetworkSet share it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkSetSpec {
    /// IP addresses or CIDRs (not necessarily strictly masked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nets: Vec<String>,
}

/// A tier of policies: its place in evaluation order and what happens when no policy decides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TierSpec {
    /// Defaults to 1,000,000.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "float")]
    #[schemars(with = "Option<f64>")]
    pub order: Option<f64>,
    /// `Deny` (the default) or `Pass`.
    #[schemars(extend("enum" = ["Deny", "Pass"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_action: Option<String>,
}

/// Cluster-wide facts written by the system itself (read-only for users).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterInformationSpec {
    #[serde(
        default,
        rename = "clusterGUID",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_guid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calico_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datastore_ready: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}
