//! The spec of FelixConfiguration (upstream `FelixConfigurationSpec` through v3.32): the dataplane
//! agent's settings, cluster-wide (`default`) or per node (`node.<name>`).
//!
//! Every field of upstream's spec in any line v3.27 … v3.32 is typed here, so that an unknown field
//! is an error (a misspelt setting would otherwise be silently ignored by the agent); each field added
//! after v3.27.0 or removed since carries the releases that have it (`x-netctl-since`,
//! `x-netctl-until`, `x-netctl-gaps`; see `resource::availability`), read from upstream's tags.
//! Durations are kept as written (Go duration syntax) and checked in `validate.rs`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::numorstring::{NumberOrString, Port};

/// Dataplane agent settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FelixConfigurationSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_internal_dataplane_driver: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataplane_driver: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataplane_watchdog_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_support: Option<bool>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_refresh_interval: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_refresh_interval: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_refresh_interval: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_post_write_check_interval: Option<String>,
    #[schemars(extend("x-netctl-until" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_lock_file_path: Option<String>,
    #[schemars(extend("format" = "duration", "x-netctl-until" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_lock_timeout: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_lock_probe_interval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_detect_override: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<String>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"]))]
    #[serde(
        default,
        rename = "floatingIPs",
        skip_serializing_if = "Option::is_none"
    )]
    pub floating_ips: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipsets_refresh_interval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ipset_size: Option<i64>,
    #[schemars(extend("enum" = ["", "Legacy", "NFT", "Auto"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_backend: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_refresh_interval: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netlink_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_addr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openstack_region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_exclude: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_insert_mode: Option<String>,
    #[schemars(extend("enum" = ["", "Drop", "Accept", "Return"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_endpoint_to_host_action: Option<String>,
    #[schemars(extend("enum" = ["", "Accept", "Return"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_filter_allow_action: Option<String>,
    #[schemars(extend("enum" = ["", "Accept", "Return"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_mangle_allow_action: Option<String>,
    #[schemars(extend("enum" = ["", "Drop", "Reject"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_filter_deny_action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file_path: Option<String>,
    #[schemars(extend("enum" = ["", "Trace", "Debug", "Info", "Warning", "Error", "Fatal"], "x-netctl-values" = {"Trace": {"since": "v3.30.1"}}))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_severity_file: Option<String>,
    #[schemars(extend("enum" = ["", "Trace", "Debug", "Info", "Warning", "Error", "Fatal"], "x-netctl-values" = {"Trace": {"since": "v3.30.1"}}))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_severity_screen: Option<String>,
    #[schemars(extend("enum" = ["", "Trace", "Debug", "Info", "Warning", "Error", "Fatal"], "x-netctl-values" = {"Trace": {"since": "v3.30.1"}}))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_severity_sys: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_debug_filename_regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipip_enabled: Option<bool>,
    #[serde(default, rename = "ipipMTU", skip_serializing_if = "Option::is_none")]
    pub ipip_mtu: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_enabled: Option<bool>,
    #[serde(default, rename = "vxlanMTU", skip_serializing_if = "Option::is_none")]
    pub vxlan_mtu: Option<i64>,
    #[serde(
        default,
        rename = "vxlanMTUV6",
        skip_serializing_if = "Option::is_none"
    )]
    pub vxlan_mtu_v6: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_port: Option<i64>,
    #[serde(default, rename = "vxlanVNI", skip_serializing_if = "Option::is_none")]
    pub vxlan_vni: Option<i64>,
    #[serde(
        default,
        rename = "allowVXLANPacketsFromWorkloads",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_vxlan_packets_from_workloads: Option<bool>,
    #[serde(
        default,
        rename = "allowIPIPPacketsFromWorkloads",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_ipip_packets_from_workloads: Option<bool>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_interval: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(
        default,
        rename = "reportingTTL",
        skip_serializing_if = "Option::is_none"
    )]
    pub reporting_ttl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_reporting_enabled: Option<bool>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_reporting_delay: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.28.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_status_path_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iptables_mark_mask: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_conntrack_invalid_check: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_port: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_timeout_overrides: Vec<HealthTimeoutOverride>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_go_metrics_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_process_metrics_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_wire_guard_metrics_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failsafe_inbound_host_ports: Vec<ProtocolPort>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failsafe_outbound_host_ports: Vec<ProtocolPort>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kube_node_port_ranges: Vec<Port>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_memory_profile_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_disable_log_dropping: Option<bool>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_simulate_calc_graph_hang_after: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_simulate_dataplane_hang_after: Option<String>,
    #[schemars(extend("format" = "duration", "x-netctl-since" = "v3.28.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_simulate_dataplane_apply_delay: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.28.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_host: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.28.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_reporting_enabled: Option<bool>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_reporting_initial_delay: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_reporting_interval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_port_range: Option<Port>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_outgoing_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_route_source_address: Option<String>,
    #[serde(
        default,
        rename = "deviceRouteSourceAddressIPv6",
        skip_serializing_if = "Option::is_none"
    )]
    pub device_route_source_address_ipv6: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_route_protocol: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_external_routes: Option<bool>,
    #[serde(
        default,
        rename = "externalNodesList",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub external_nodes_cidr_list: Vec<String>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled", "Auto"], "x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nftables_mode: Option<String>,
    #[schemars(extend("format" = "duration", "x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nftables_refresh_interval: Option<String>,
    #[schemars(extend("enum" = ["", "Accept", "Return"], "x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nftables_filter_allow_action: Option<String>,
    #[schemars(extend("enum" = ["", "Accept", "Return"], "x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nftables_mangle_allow_action: Option<String>,
    #[schemars(extend("enum" = ["", "Drop", "Reject"], "x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nftables_filter_deny_action: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nftables_mark_mask: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_disable_unprivileged: Option<bool>,
    #[schemars(extend("enum" = ["", "Off", "Info", "Debug"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_log_level: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bpf_log_filters: BTreeMap<String, String>,
    #[serde(
        default,
        rename = "bpfCTLBLogFilter",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_ctlb_log_filter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_data_iface_pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_l3_iface_pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_connect_time_load_balancing_enabled: Option<bool>,
    #[schemars(extend("enum" = ["", "TCP", "Enabled", "Disabled"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_connect_time_load_balancing: Option<String>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"]))]
    #[serde(
        default,
        rename = "bpfHostNetworkedNATWithoutCTLB",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_host_networked_nat_without_ctlb: Option<String>,
    #[schemars(extend("enum" = ["", "Tunnel", "DSR"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_external_service_mode: Option<String>,
    #[serde(
        default,
        rename = "bpfDSROptoutCIDRs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub bpf_dsr_optout_cidrs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_ext_to_service_connmark: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_kube_proxy_iptables_cleanup_enabled: Option<bool>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_kube_proxy_min_sync_period: Option<String>,
    #[schemars(extend("x-netctl-until" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_kube_proxy_endpoint_slices_enabled: Option<bool>,
    #[serde(
        default,
        rename = "bpfPSNATPorts",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_psnat_ports: Option<Port>,
    #[serde(
        default,
        rename = "bpfMapSizeNATFrontend",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_map_size_nat_frontend: Option<i64>,
    #[serde(
        default,
        rename = "bpfMapSizeNATBackend",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_map_size_nat_backend: Option<i64>,
    #[serde(
        default,
        rename = "bpfMapSizeNATAffinity",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_map_size_nat_affinity: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_map_size_route: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_map_size_conntrack: Option<i64>,
    #[serde(
        default,
        rename = "bpfMapSizeIPSets",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_map_size_ip_sets: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_map_size_if_state: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_host_conntrack_bypass: Option<bool>,
    #[schemars(extend("enum" = ["", "Disabled", "Strict", "Loose"]))]
    #[serde(
        default,
        rename = "bpfEnforceRPF",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_enforce_rpf: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_policy_debug_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bpf_force_track_packets_from_ifaces: Vec<String>,
    #[serde(
        default,
        rename = "bpfDisableGROForIfaces",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_disable_gro_for_ifaces: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.27.1"))]
    #[serde(
        default,
        rename = "bpfExcludeCIDRsFromNAT",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub bpf_exclude_cidrs_from_nat: Vec<String>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled", "L2Only"], "x-netctl-since" = "v3.29.0", "x-netctl-values" = {"L2Only": {"until": "v3.32.0"}}))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_redirect_to_peer: Option<String>,
    #[schemars(extend("enum" = ["", "WorkloadIPs", "CalicoIPAM"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_table_range: Option<RouteTableRange>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route_table_ranges: Vec<RouteTableRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_sync_disabled: Option<bool>,
    #[schemars(extend("enum" = ["", "Drop", "Reject", "Disabled"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_loop_prevention: Option<String>,
    #[schemars(extend("enum" = ["", "Disabled", "Any"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_source_spoofing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu_iface_pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_enabled_v6: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_listening_port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_listening_port_v6: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_routing_rule_priority: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_interface_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_interface_name_v6: Option<String>,
    #[serde(
        default,
        rename = "wireguardMTU",
        skip_serializing_if = "Option::is_none"
    )]
    pub wireguard_mtu: Option<i64>,
    #[serde(
        default,
        rename = "wireguardMTUV6",
        skip_serializing_if = "Option::is_none"
    )]
    pub wireguard_mtu_v6: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_host_encryption_enabled: Option<bool>,
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_keep_alive: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.28.3", "x-netctl-gaps" = [["v3.29.0", "v3.29.1"]]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard_threading_enabled: Option<bool>,
    #[schemars(extend("enum" = ["", "DoNothing", "Enable", "Disable"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_src_dst_check: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar_acceleration_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_enabled: Option<bool>,
    #[serde(
        default,
        rename = "genericXDPEnabled",
        skip_serializing_if = "Option::is_none"
    )]
    pub generic_xdp_enabled: Option<bool>,
    #[serde(
        default,
        rename = "iptablesNATOutgoingInterfaceFilter",
        skip_serializing_if = "Option::is_none"
    )]
    pub iptables_nat_outgoing_interface_filter: Option<String>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"], "x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_forwarding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_sync_path_prefix: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.29.0"))]
    #[serde(
        default,
        rename = "goGCThreshold",
        skip_serializing_if = "Option::is_none"
    )]
    pub go_gc_threshold: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.29.0"))]
    #[serde(
        default,
        rename = "goMemoryLimitMB",
        skip_serializing_if = "Option::is_none"
    )]
    pub go_memory_limit_mb: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.29.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_max_procs: Option<i64>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_manage_firewall_rules: Option<String>,
    #[schemars(extend("enum" = ["", "Auto", "Userspace", "BPFProgram"], "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_conntrack_mode: Option<String>,
    #[schemars(extend("enum" = ["", "Off", "Debug"], "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_conntrack_log_level: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_conntrack_timeouts: Option<BpfConntrackTimeouts>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(
        default,
        rename = "bpfExportBufferSizeMB",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_export_buffer_size_mb: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_map_size_conntrack_cleanup_queue: Option<i64>,
    #[schemars(extend("enum" = ["", "Disabled", "DoubleIfFull"], "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_map_size_conntrack_scaling: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_map_size_per_cpu_conntrack: Option<i64>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"], "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_profiling: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_logs_collector_debug_trace: Option<bool>,
    #[schemars(extend("format" = "duration", "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_logs_flush_interval: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_logs_goldmane_server: Option<String>,
    #[schemars(extend("enum" = ["", "None", "Continuous"], "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_logs_policy_evaluation_mode: Option<String>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"], "x-netctl-since" = "v3.30.1"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_logs_local_reporter: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.4"))]
    #[serde(
        default,
        rename = "cgroupV2Path",
        skip_serializing_if = "Option::is_none"
    )]
    pub cgroup_v2_path: Option<String>,
    /// The misspelt first name of `bpfKubeProxyHealthzPort`, in v3.30.4 only.
    #[schemars(extend("x-netctl-since" = "v3.30.4", "x-netctl-until" = "v3.30.5"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_kube_proxy_healtz_port: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.30.5"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_kube_proxy_healthz_port: Option<i64>,
    /// `N/second|minute|hour|day`, N from 1 to 9999 (v3.31.0 to v3.31.3 lack it).
    #[schemars(extend("x-netctl-since" = "v3.30.6", "x-netctl-gaps" = [["v3.31.0", "v3.31.4"]]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_action_rate_limit: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.30.6", "x-netctl-gaps" = [["v3.31.0", "v3.31.4"]]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_action_rate_limit_burst: Option<i64>,
    #[schemars(extend("enum" = ["", "TC", "TCX"], "x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_attach_type: Option<String>,
    #[schemars(extend("enum" = ["", "Auto", "Strict"], "x-netctl-since" = "v3.31.0"))]
    #[serde(
        default,
        rename = "bpfJITHardening",
        skip_serializing_if = "Option::is_none"
    )]
    pub bpf_jit_hardening: Option<String>,
    #[schemars(extend("enum" = ["", "IPPoolsOnly", "IPPoolsAndHostIPs"], "x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_outgoing_exclusions: Option<String>,
    /// `Enabled` or `Disabled` (the default): whether Felix programs the routes of `vxlanMode:
    /// Never` pools.
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"], "x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_cluster_routes: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.31.0"))]
    #[serde(
        default,
        rename = "requireMTUFile",
        skip_serializing_if = "Option::is_none"
    )]
    pub require_mtu_file: Option<bool>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_maglev_max_endpoints_per_service: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_maglev_max_services: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_normal_route_priority: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_elevated_route_priority: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_normal_route_priority: Option<i64>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_elevated_route_priority: Option<i64>,
    #[schemars(extend("enum" = ["", "Enabled", "Disabled"], "x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub istio_ambient_mode: Option<String>,
    /// A DSCP value: a number from 0 to 63 or a name such as `AF11` or `EF`.
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(
        default,
        rename = "istioDSCPMark",
        skip_serializing_if = "Option::is_none"
    )]
    pub istio_dscp_mark: Option<NumberOrString>,
    #[schemars(extend("format" = "duration", "x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_migration_route_convergence_time: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(
        default,
        rename = "prometheusMetricsCAFile",
        skip_serializing_if = "Option::is_none"
    )]
    pub prometheus_metrics_ca_file: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_cert_file: Option<String>,
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_key_file: Option<String>,
    #[schemars(extend("enum" = ["", "RequireAndVerifyClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven", "NoClientCert"], "x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_client_auth: Option<String>,
}

/// Conntrack timeouts of the BPF dataplane: a duration (`30s`, `1m30s`) or `Auto`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BpfConntrackTimeouts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_grace_period: Option<String>,
    #[serde(
        default,
        rename = "tcpSynSent",
        skip_serializing_if = "Option::is_none"
    )]
    pub tcp_syn_sent: Option<String>,
    #[serde(
        default,
        rename = "tcpEstablished",
        skip_serializing_if = "Option::is_none"
    )]
    pub tcp_established: Option<String>,
    #[serde(
        default,
        rename = "tcpFinsSeen",
        skip_serializing_if = "Option::is_none"
    )]
    pub tcp_fins_seen: Option<String>,
    #[serde(
        default,
        rename = "tcpResetSeen",
        skip_serializing_if = "Option::is_none"
    )]
    pub tcp_reset_seen: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_timeout: Option<String>,
}

/// A protocol and port (optionally limited to a network) that is always allowed on host endpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProtocolPort {
    /// `TCP`, `UDP` or `SCTP` (a name only, unlike rule protocols).
    #[schemars(extend("enum" = ["TCP", "UDP", "SCTP"]))]
    pub protocol: String,
    pub port: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
}

/// A range of routing table indexes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouteTableRange {
    pub min: i64,
    pub max: i64,
}

/// An override of one health reporter's timeout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HealthTimeoutOverride {
    pub name: String,
    #[schemars(extend("format" = "duration"))]
    pub timeout: String,
}
