//! Specs of NetworkPolicy and GlobalNetworkPolicy (upstream `NetworkPolicySpec`,
//! `GlobalNetworkPolicySpec`; `tier` from v3.29) and of their staged forms (v3.30), which add
//! `stagedAction`. A staged spec converts into the enforced one so that both are checked alike.
//!
//! Types defaulting and every check live in `validate.rs`; these are plain shapes.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::float;
use super::numorstring::NumberOrString;
use super::rule::Rule;

/// The spec of a namespaced NetworkPolicy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPolicySpec {
    #[schemars(extend("x-netctl-since" = "v3.29.0"))]
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
    #[schemars(extend("x-netctl-since" = "v3.29.0"))]
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

/// The spec of a StagedNetworkPolicy: a NetworkPolicy to be, and what to do with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StagedNetworkPolicySpec {
    /// `Set` (the default), `Delete`, `Learn` or `Ignore`.
    #[schemars(extend("enum" = ["Set", "Delete", "Learn", "Ignore"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_action: Option<String>,
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub performance_hints: Vec<String>,
}

/// The spec of a StagedGlobalNetworkPolicy: a GlobalNetworkPolicy to be, and what to do with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StagedGlobalNetworkPolicySpec {
    /// `Set` (the default), `Delete`, `Learn` or `Ignore`.
    #[schemars(extend("enum" = ["Set", "Delete", "Learn", "Ignore"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_action: Option<String>,
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

impl StagedNetworkPolicySpec {
    /// The NetworkPolicy this stages, and its staged action apart.
    pub fn split(self) -> (Option<String>, NetworkPolicySpec) {
        let enforced = NetworkPolicySpec {
            tier: self.tier,
            order: self.order,
            ingress: self.ingress,
            egress: self.egress,
            selector: self.selector,
            types: self.types,
            service_account_selector: self.service_account_selector,
            performance_hints: self.performance_hints,
        };
        (self.staged_action, enforced)
    }

    /// The staged spec of `enforced` with `action`.
    pub fn join(action: Option<String>, enforced: NetworkPolicySpec) -> StagedNetworkPolicySpec {
        StagedNetworkPolicySpec {
            staged_action: action,
            tier: enforced.tier,
            order: enforced.order,
            ingress: enforced.ingress,
            egress: enforced.egress,
            selector: enforced.selector,
            types: enforced.types,
            service_account_selector: enforced.service_account_selector,
            performance_hints: enforced.performance_hints,
        }
    }
}

impl StagedGlobalNetworkPolicySpec {
    /// The GlobalNetworkPolicy this stages, and its staged action apart.
    pub fn split(self) -> (Option<String>, GlobalNetworkPolicySpec) {
        let enforced = GlobalNetworkPolicySpec {
            tier: self.tier,
            order: self.order,
            ingress: self.ingress,
            egress: self.egress,
            selector: self.selector,
            types: self.types,
            do_not_track: self.do_not_track,
            pre_dnat: self.pre_dnat,
            apply_on_forward: self.apply_on_forward,
            service_account_selector: self.service_account_selector,
            namespace_selector: self.namespace_selector,
            performance_hints: self.performance_hints,
        };
        (self.staged_action, enforced)
    }

    /// The staged spec of `enforced` with `action`.
    pub fn join(
        action: Option<String>,
        enforced: GlobalNetworkPolicySpec,
    ) -> StagedGlobalNetworkPolicySpec {
        StagedGlobalNetworkPolicySpec {
            staged_action: action,
            tier: enforced.tier,
            order: enforced.order,
            ingress: enforced.ingress,
            egress: enforced.egress,
            selector: enforced.selector,
            types: enforced.types,
            do_not_track: enforced.do_not_track,
            pre_dnat: enforced.pre_dnat,
            apply_on_forward: enforced.apply_on_forward,
            service_account_selector: enforced.service_account_selector,
            namespace_selector: enforced.namespace_selector,
            performance_hints: enforced.performance_hints,
        }
    }
}

/// The spec of a StagedKubernetesNetworkPolicy: a Kubernetes `networking.k8s.io/v1` NetworkPolicy
/// spec to be, and what to do with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StagedKubernetesNetworkPolicySpec {
    /// `Set` (the default), `Delete`, `Learn` or `Ignore`.
    #[schemars(extend("enum" = ["Set", "Delete", "Learn", "Ignore"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingress: Vec<KubernetesIngressRule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<KubernetesEgressRule>,
    /// `Ingress` and/or `Egress`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_types: Vec<String>,
}

/// A Kubernetes label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One requirement of a Kubernetes label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    #[serde(default)]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(default)]
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A Kubernetes NetworkPolicy ingress rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubernetesIngressRule {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<KubernetesPolicyPort>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<KubernetesPolicyPeer>,
}

/// A Kubernetes NetworkPolicy egress rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubernetesEgressRule {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<KubernetesPolicyPort>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<KubernetesPolicyPeer>,
}

/// A port of a Kubernetes NetworkPolicy rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubernetesPolicyPort {
    /// `TCP` (the default), `UDP` or `SCTP`.
    #[schemars(extend("enum" = ["TCP", "UDP", "SCTP"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// A number or a named port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<NumberOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_port: Option<i64>,
}

/// A peer of a Kubernetes NetworkPolicy rule: pods, namespaces, or an address block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubernetesPolicyPeer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_block: Option<KubernetesIpBlock>,
}

/// An address block of a Kubernetes NetworkPolicy peer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubernetesIpBlock {
    #[serde(default)]
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}
