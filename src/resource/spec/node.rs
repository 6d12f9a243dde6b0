//! The spec of Node (upstream `NodeSpec` through v3.32; `interfaces` from v3.31). A Node's `status` is owned by the node agent and is
//! not part of what netctl validates.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::numorstring::AsNumber;

/// One host running the node agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bgp: Option<NodeBgpSpec>,
    #[serde(
        default,
        rename = "ipv4VXLANTunnelAddr",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipv4_vxlan_tunnel_address: String,
    #[serde(
        default,
        rename = "vxlanTunnelMACAddr",
        skip_serializing_if = "String::is_empty"
    )]
    pub vxlan_tunnel_mac_address: String,
    #[serde(
        default,
        rename = "ipv6VXLANTunnelAddr",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipv6_vxlan_tunnel_address: String,
    #[serde(
        default,
        rename = "vxlanTunnelMACAddrV6",
        skip_serializing_if = "String::is_empty"
    )]
    pub vxlan_tunnel_mac_address_v6: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orch_refs: Vec<OrchestratorReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard: Option<NodeWireguardSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<NodeAddress>,
    #[schemars(extend("x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<NodeInterface>,
}

/// One network interface of a node and its addresses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeInterface {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
}

/// The BGP settings of one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeBgpSpec {
    #[serde(default, rename = "asNumber", skip_serializing_if = "Option::is_none")]
    pub as_number: Option<AsNumber>,
    #[serde(
        default,
        rename = "ipv4Address",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipv4_address: String,
    #[serde(
        default,
        rename = "ipv6Address",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipv6_address: String,
    #[serde(
        default,
        rename = "ipv4IPIPTunnelAddr",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipv4_ipip_tunnel_address: String,
    #[serde(
        default,
        rename = "routeReflectorClusterID",
        skip_serializing_if = "String::is_empty"
    )]
    pub route_reflector_cluster_id: String,
}

/// The node's name in an orchestrator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrchestratorReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    #[serde(default)]
    pub orchestrator: String,
}

/// The node's WireGuard interface addresses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeWireguardSpec {
    #[serde(
        default,
        rename = "interfaceIPv4Address",
        skip_serializing_if = "String::is_empty"
    )]
    pub interface_ipv4_address: String,
    #[serde(
        default,
        rename = "interfaceIPv6Address",
        skip_serializing_if = "String::is_empty"
    )]
    pub interface_ipv6_address: String,
}

/// One address of the node and where it came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeAddress {
    #[serde(default)]
    pub address: String,
    /// `CalicoNodeIP`, `InternalIP` or `ExternalIP`.
    #[schemars(extend("enum" = ["CalicoNodeIP", "InternalIP", "ExternalIP"]))]
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub address_type: String,
}

/// What the system reports about a node (upstream `NodeStatus`). Documents may carry it (a Node read
/// back with `get -o yaml`); netctl checks it as upstream does and never writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeStatus {
    /// The node's IPv4 WireGuard public key (32 bytes, standard base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_public_key: Option<String>,
    /// The node's IPv6 WireGuard public key (32 bytes, standard base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_public_key_v6: Option<String>,
    /// The Kubernetes node's `spec.podCIDRs`.
    #[serde(default, rename = "podCIDRs", skip_serializing_if = "Vec::is_empty")]
    pub pod_cidrs: Vec<String>,
}
