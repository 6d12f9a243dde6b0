//! Specs of IPPool and IPReservation (upstream `IPPoolSpec`, `IPReservationSpec` through v3.32).
//!
//! The v1-era fields `ipip` and `nat-outgoing` are accepted by the decoder only so that validation can
//! say they must not be used, as upstream does up to v3.31; v3.32 removed them
//! (`x-netctl-until`, see `resource::availability`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A range of addresses that workloads (and tunnels) are given addresses from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpPoolSpec {
    #[serde(default)]
    pub cidr: String,
    /// `Always`, `CrossSubnet` or `Never` (the default).
    #[schemars(extend("enum" = ["Always", "CrossSubnet", "Never"]))]
    #[serde(default, rename = "vxlanMode", skip_serializing_if = "Option::is_none")]
    pub vxlan_mode: Option<String>,
    /// `Always`, `CrossSubnet` or `Never` (the default).
    #[schemars(extend("enum" = ["Always", "CrossSubnet", "Never"]))]
    #[serde(default, rename = "ipipMode", skip_serializing_if = "Option::is_none")]
    pub ipip_mode: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nat_outgoing: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    #[serde(
        default,
        rename = "disableBGPExport",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub disable_bgp_export: bool,
    /// Defaults to 26 for IPv4 and 122 for IPv6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size: Option<i64>,
    /// Defaults to `all()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<String>,
    /// `Workload` and/or `Tunnel` (defaults to both), or `LoadBalancer` alone (from v3.30).
    #[schemars(extend("items" = {"type": "string", "enum": ["Workload", "Tunnel", "LoadBalancer"]}, "x-netctl-values" = {"LoadBalancer": {"since": "v3.30.0"}}))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_uses: Vec<String>,
    /// Which namespaces' workloads may take addresses from this pool.
    #[schemars(extend("x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<String>,
    /// `Automatic` (the default from v3.30) or `Manual`: whether IPAM hands out addresses from this
    /// pool without being asked for it by name.
    #[schemars(extend("enum" = ["Automatic", "Manual"], "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignment_mode: Option<String>,
    /// The v1 IPIP setting; must not be set.
    #[schemars(extend("x-netctl-until" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipip: Option<serde_json::Value>,
    /// The v1 NAT setting; must not be true.
    #[schemars(extend("x-netctl-until" = "v3.32.0"))]
    #[serde(
        default,
        rename = "nat-outgoing",
        skip_serializing_if = "Option::is_none"
    )]
    pub nat_outgoing_v1: Option<bool>,
}

/// Addresses that IPAM must never hand out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpReservationSpec {
    #[serde(
        default,
        rename = "reservedCIDRs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reserved_cidrs: Vec<String>,
}
