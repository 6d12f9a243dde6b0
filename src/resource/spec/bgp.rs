//! Specs of BGPPeer, BGPFilter and BGPConfiguration (upstream v3.29 `BGPPeerSpec`, `BGPFilterSpec`,
//! `BGPConfigurationSpec`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::numorstring::AsNumber;

/// A BGP peering, global or for the nodes a selector picks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BgpPeerSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<String>,
    /// An IP, `IP:port` or `[IPv6]:port`.
    #[serde(default, rename = "peerIP", skip_serializing_if = "String::is_empty")]
    pub peer_ip: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_number: Option<AsNumber>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<BgpPassword>,
    /// `UseNodeIP` or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_address: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restart_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_original_next_hop: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_allowed_local_as_numbers: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_security: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reachable_by: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
}

/// Where a BGP password comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BgpPassword {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyReference>,
}

/// A key of a Kubernetes secret.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretKeyReference {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// Cluster-wide (`default`) or per-node (`node.<name>`) BGP settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BgpConfigurationSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_severity_screen: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_to_node_mesh_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_number: Option<AsNumber>,
    #[serde(
        default,
        rename = "serviceLoadBalancerIPs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub service_load_balancer_ips: Vec<ServiceCidrBlock>,
    #[serde(
        default,
        rename = "serviceExternalIPs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub service_external_ips: Vec<ServiceCidrBlock>,
    #[serde(
        default,
        rename = "serviceClusterIPs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub service_cluster_ips: Vec<ServiceCidrBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen_port: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub communities: Vec<Community>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefix_advertisements: Vec<PrefixAdvertisement>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_mesh_password: Option<BgpPassword>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_mesh_max_restart_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_interfaces: Vec<String>,
}

/// A CIDR of service addresses to advertise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceCidrBlock {
    /// Optional upstream (`omitempty`): an empty block (`{}`) is accepted and advertises nothing.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cidr: String,
}

/// A named BGP community value (`aa:nn` or `aa:nn:mm`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Community {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub value: String,
}

/// Communities to attach to the routes of a CIDR.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrefixAdvertisement {
    #[serde(default)]
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub communities: Vec<String>,
}

/// Route filters, applied to the peerings that name the filter in `spec.filters`. Within a list the
/// first matching rule decides; a route no rule matches is accepted.
///
/// The fields are those of upstream v3.29 (`api/pkg/apis/projectcalico/v3/bgpfilter.go` at that
/// release); later releases added peer type, communities, AS-path and priority matches, which a v3.29
/// cluster would not act on, so they are refused here as unknown fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BgpFilterSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub export_v4: Vec<BgpFilterRule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_v4: Vec<BgpFilterRule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub export_v6: Vec<BgpFilterRule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_v6: Vec<BgpFilterRule>,
}

/// One rule of a BGP filter; the family (v4 or v6) is that of the list holding it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BgpFilterRule {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_length: Option<BgpFilterPrefixLength>,
    /// `RemotePeers`: routes learned from BGP peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// An interface name, optionally with `*` wildcards (`*.calico`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// `Equal`, `NotEqual`, `In` or `NotIn`, comparing the route with `cidr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_operator: Option<String>,
    /// `Accept` or `Reject`.
    #[serde(default)]
    pub action: String,
}

/// Bounds on the prefix length of matched routes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BgpFilterPrefixLength {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
}
