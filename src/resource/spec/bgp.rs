//! Specs of BGPPeer, BGPFilter and BGPConfiguration (upstream `BGPPeerSpec`, `BGPFilterSpec`,
//! `BGPConfigurationSpec` through v3.32), each field added after v3.27.0 annotated with the release
//! that brought it (`x-netctl-since`, see `resource::availability`).

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
    #[schemars(extend("enum" = ["UseNodeIP", "None"]))]
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
    /// Peers with the workloads this selector picks, on their own node (needs `asNumber`).
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_workload_selector: Option<String>,
    /// `Auto`, `Self` or `Keep`: how the next hop of routes sent to this peer is set; replaces
    /// `keepOriginalNextHop`.
    #[schemars(extend("enum" = ["Auto", "Self", "Keep"], "x-netctl-since" = "v3.30.2"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_hop_mode: Option<String>,
    /// `Auto` or `Manual`: whether the reverse peering is created automatically.
    #[schemars(extend("enum" = ["Auto", "Manual"], "x-netctl-since" = "v3.30.3"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_peering: Option<String>,
    /// The local AS number for this peering, over BGPConfiguration's.
    #[schemars(extend("x-netctl-since" = "v3.31.0"))]
    #[serde(
        default,
        rename = "localASNumber",
        skip_serializing_if = "Option::is_none"
    )]
    pub local_as_number: Option<AsNumber>,
    #[schemars(extend("format" = "duration", "x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_time: Option<String>,
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
    #[schemars(extend("enum" = ["Trace", "Debug", "Info", "Warning", "Error", "Fatal"], "x-netctl-values" = {"Trace": {"since": "v3.30.1"}}))]
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
    #[schemars(extend("enum" = ["None", "NodeIP"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_interfaces: Vec<String>,
    /// The IPv4 address workloads peer with when a BGPPeer has `localWorkloadSelector`.
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(
        default,
        rename = "localWorkloadPeeringIPV4",
        skip_serializing_if = "Option::is_none"
    )]
    pub local_workload_peering_ipv4: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(
        default,
        rename = "localWorkloadPeeringIPV6",
        skip_serializing_if = "Option::is_none"
    )]
    pub local_workload_peering_ipv6: Option<String>,
    /// `Enabled` (the default) or `Disabled`: advertise load balancer IPs as one route per block.
    #[schemars(extend("enum" = ["Enabled", "Disabled"], "x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_load_balancer_aggregation: Option<String>,
    /// `Enabled` or `Disabled`: whether BIRD programs the routes of `vxlanMode: Never` pools.
    #[schemars(extend("enum" = ["Enabled", "Disabled"], "x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_cluster_routes: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_normal_route_priority: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_normal_route_priority: Option<i64>,
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
/// The fields are upstream's through v3.32 (`api/pkg/apis/projectcalico/v3/bgpfilter.go`); the peer
/// type, community, AS-path and priority matches and the operations came with v3.32, the prefix
/// length with v3.29, and a cluster of an older line is refused them (`resource::availability`).
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
    #[schemars(extend("x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_length: Option<BgpFilterPrefixLength>,
    /// `RemotePeers`: routes learned from BGP peers.
    #[schemars(extend("enum" = ["RemotePeers"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// An interface name, optionally with `*` wildcards (`*.calico`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// `Equal`, `NotEqual`, `In` or `NotIn`, comparing the route with `cidr`.
    #[schemars(extend("enum" = ["Equal", "NotEqual", "In", "NotIn"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_operator: Option<String>,
    /// `Accept` or `Reject`.
    #[schemars(extend("enum" = ["Accept", "Reject"]))]
    #[serde(default)]
    pub action: String,
    /// `eBGP` or `iBGP`: only routes from (export: to) peers of this type.
    #[schemars(extend("enum" = ["eBGP", "iBGP"], "x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_type: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub communities: Option<BgpFilterCommunityMatch>,
    /// Routes whose AS path starts with these AS numbers.
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(
        default,
        rename = "asPathPrefix",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub as_path_prefix: Vec<AsNumber>,
    /// 1 to 2147483646: the order of this rule among the filters of a peering.
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// What to change on an accepted route (1 to 10 operations, `Accept` rules only).
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<BgpFilterOperation>,
}

/// Routes carrying a BGP community (exactly one value upstream accepts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BgpFilterCommunityMatch {
    /// `aa:nn` (each part 0–65535) or the large form `aa:nn:mm` (each part 0–4294967295).
    #[serde(default)]
    pub values: Vec<String>,
}

/// One change to an accepted route: exactly one of the three.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BgpFilterOperation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_community: Option<BgpFilterAddCommunity>,
    #[serde(
        default,
        rename = "prependASPath",
        skip_serializing_if = "Option::is_none"
    )]
    pub prepend_as_path: Option<BgpFilterPrependAsPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_priority: Option<BgpFilterSetPriority>,
}

/// A community added to the route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BgpFilterAddCommunity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// AS numbers put in front of the route's AS path (1 to 10).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BgpFilterPrependAsPath {
    #[serde(default)]
    pub prefix: Vec<AsNumber>,
}

/// The route's priority (1 to 2147483646).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BgpFilterSetPriority {
    #[serde(default)]
    pub value: i64,
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
