//! Specs of HostEndpoint and WorkloadEndpoint (upstream `HostEndpointSpec`, `WorkloadEndpointSpec`
//! through v3.32; the workload's QoS controls from v3.30).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::numorstring::{NumberOrString, Protocol};

/// An interface (or a set of expected addresses) of a host that policy applies to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostEndpointSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// An interface name, or `*` for all interfaces of the host.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub interface_name: String,
    #[serde(default, rename = "expectedIPs", skip_serializing_if = "Vec::is_empty")]
    pub expected_ips: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<EndpointPort>,
}

/// A named port of an endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointPort {
    #[serde(default)]
    pub name: String,
    pub protocol: Protocol,
    #[serde(default)]
    pub port: i64,
}

/// A workload's network interface (normally written by the orchestrator plugin, not by hand).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadEndpointSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub orchestrator: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workload: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    #[serde(
        default,
        rename = "containerID",
        skip_serializing_if = "String::is_empty"
    )]
    pub container_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub endpoint: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service_account_name: String,
    #[serde(default, rename = "ipNetworks", skip_serializing_if = "Vec::is_empty")]
    pub ip_networks: Vec<String>,
    #[serde(default, rename = "ipNATs", skip_serializing_if = "Vec::is_empty")]
    pub ip_nats: Vec<IpNat>,
    #[serde(
        default,
        rename = "ipv4Gateway",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipv4_gateway: String,
    #[serde(
        default,
        rename = "ipv6Gateway",
        skip_serializing_if = "String::is_empty"
    )]
    pub ipv6_gateway: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub interface_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<WorkloadEndpointPort>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_spoofed_source_prefixes: Vec<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos_controls: Option<QosControls>,
}

/// Bandwidth, packet-rate and connection limits of a workload (upstream `QoSControls`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QosControls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_bandwidth: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_burst: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.2"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_peakrate: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.2"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_minburst: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_bandwidth: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_burst: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.2"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_peakrate: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.2"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_minburst: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_packet_rate: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.2"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_packet_burst: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_packet_rate: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.2"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_packet_burst: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_max_connections: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_max_connections: Option<i64>,
    /// A DSCP value: a number from 0 to 63 or a name such as `AF11` or `EF`.
    #[schemars(extend("x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<NumberOrString>,
}

/// A one-to-one NAT mapping of a workload address.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IpNat {
    #[serde(default, rename = "internalIP")]
    pub internal_ip: String,
    #[serde(default, rename = "externalIP")]
    pub external_ip: String,
}

/// A named port of a workload, optionally exposed on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadEndpointPort {
    #[serde(default)]
    pub name: String,
    pub protocol: Protocol,
    #[serde(default)]
    pub port: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i64>,
    #[serde(default, rename = "hostIP", skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<String>,
}
