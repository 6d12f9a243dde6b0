//! Specs of IPPool and IPReservation (upstream v3.29 `IPPoolSpec`, `IPReservationSpec`).
//!
//! The v1-era fields `ipip` and `nat-outgoing` are accepted by the decoder only so that validation can
//! say they must not be used, as upstream does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A range of addresses that workloads (and tunnels) are given addresses from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpPoolSpec {
    #[serde(default)]
    pub cidr: String,
    /// `Always`, `CrossSubnet` or `Never` (the default).
    #[serde(default, rename = "vxlanMode", skip_serializing_if = "Option::is_none")]
    pub vxlan_mode: Option<String>,
    /// `Always`, `CrossSubnet` or `Never` (the default).
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
    /// `Workload` and/or `Tunnel`; defaults to both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_uses: Vec<String>,
    /// The v1 IPIP setting; must not be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipip: Option<serde_json::Value>,
    /// The v1 NAT setting; must not be true.
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
