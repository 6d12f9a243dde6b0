//! Configuration kinds: FelixConfiguration, KubeControllersConfiguration, Tier and
//! ClusterInformation (upstream v3.29 `validateFelixConfigSpec`, the clientv3 defaulting of
//! FelixConfiguration, KubeControllersConfiguration and Tier).
//!
//! FelixConfiguration's enum values and duration fields are checked here; the free-form
//! `bpfConntrackTimeouts` map is passed through unchecked (its keys change between releases).

use super::{Checker, Family};
use crate::resource::ObjectMeta;
use crate::resource::spec::felix::RouteTableRange;
use crate::resource::spec::numorstring::{NumberOrString, PortMeaning, check_protocol, parse_port};
use crate::resource::spec::{FelixConfigurationSpec, KubeControllersConfigurationSpec, TierSpec};

const LOG_LEVELS: [&str; 5] = ["Debug", "Info", "Warning", "Error", "Fatal"];
const ENABLED_DISABLED: [&str; 2] = ["Enabled", "Disabled"];

/// Upstream's limit on `kubeNodePortRanges` (the dataplane has room for seven ranges).
const MAXIMUM_NODE_PORT_RANGES: usize = 7;

/// An OpenStack region becomes part of a namespace name `openstack-region-<region>`, which must stay
/// a DNS label of at most 63 characters.
const MAXIMUM_OPENSTACK_REGION_LENGTH: usize = 63 - "openstack-region-".len();

pub(super) fn felix_configuration(checker: &mut Checker, spec: &mut FelixConfigurationSpec) {
    default_felix(spec);
    let enums: [(&str, Option<&String>, &[&str]); 25] = [
        ("floatingIPs", spec.floating_ips.as_ref(), &ENABLED_DISABLED),
        (
            "iptablesBackend",
            spec.iptables_backend.as_ref(),
            &["Legacy", "NFT", "Auto"],
        ),
        (
            "logSeverityFile",
            spec.log_severity_file.as_ref(),
            &LOG_LEVELS,
        ),
        (
            "logSeverityScreen",
            spec.log_severity_screen.as_ref(),
            &LOG_LEVELS,
        ),
        (
            "logSeveritySys",
            spec.log_severity_sys.as_ref(),
            &LOG_LEVELS,
        ),
        (
            "iptablesFilterAllowAction",
            spec.iptables_filter_allow_action.as_ref(),
            &["Accept", "Return"],
        ),
        (
            "iptablesMangleAllowAction",
            spec.iptables_mangle_allow_action.as_ref(),
            &["Accept", "Return"],
        ),
        (
            "iptablesFilterDenyAction",
            spec.iptables_filter_deny_action.as_ref(),
            &["Drop", "Reject"],
        ),
        (
            "nftablesFilterAllowAction",
            spec.nftables_filter_allow_action.as_ref(),
            &["Accept", "Return"],
        ),
        (
            "nftablesMangleAllowAction",
            spec.nftables_mangle_allow_action.as_ref(),
            &["Accept", "Return"],
        ),
        (
            "nftablesFilterDenyAction",
            spec.nftables_filter_deny_action.as_ref(),
            &["Drop", "Reject"],
        ),
        (
            "nftablesMode",
            spec.nftables_mode.as_ref(),
            &["Enabled", "Disabled", "Auto"],
        ),
        (
            "bpfLogLevel",
            spec.bpf_log_level.as_ref(),
            &["Off", "Info", "Debug"],
        ),
        (
            "bpfConnectTimeLoadBalancing",
            spec.bpf_connect_time_load_balancing.as_ref(),
            &["TCP", "Enabled", "Disabled"],
        ),
        (
            "bpfHostNetworkedNATWithoutCTLB",
            spec.bpf_host_networked_nat_without_ctlb.as_ref(),
            &ENABLED_DISABLED,
        ),
        (
            "bpfExternalServiceMode",
            spec.bpf_external_service_mode.as_ref(),
            &["Tunnel", "DSR"],
        ),
        (
            "bpfEnforceRPF",
            spec.bpf_enforce_rpf.as_ref(),
            &["Disabled", "Strict", "Loose"],
        ),
        (
            "bpfAttachType",
            spec.bpf_attach_type.as_ref(),
            &["TC", "TCX"],
        ),
        (
            "routeSource",
            spec.route_source.as_ref(),
            &["WorkloadIPs", "CalicoIPAM"],
        ),
        (
            "serviceLoopPrevention",
            spec.service_loop_prevention.as_ref(),
            &["Drop", "Reject", "Disabled"],
        ),
        (
            "workloadSourceSpoofing",
            spec.workload_source_spoofing.as_ref(),
            &["Disabled", "Any"],
        ),
        (
            "awsSrcDstCheck",
            spec.aws_src_dst_check.as_ref(),
            &["DoNothing", "Enable", "Disable"],
        ),
        (
            "ipForwarding",
            spec.ip_forwarding.as_ref(),
            &ENABLED_DISABLED,
        ),
        (
            "tproxyMode",
            spec.tproxy_mode.as_ref(),
            &["Disabled", "Enabled"],
        ),
        (
            "windowsManageFirewallRules",
            spec.windows_manage_firewall_rules.as_ref(),
            &ENABLED_DISABLED,
        ),
    ];
    for (field, value, allowed) in enums {
        checker.one_of(&format!("spec.{field}"), value, allowed);
    }
    // Upstream matches these two case-insensitively.
    for (field, value, allowed) in [
        (
            "chainInsertMode",
            spec.chain_insert_mode.as_ref(),
            &["Insert", "Append"][..],
        ),
        (
            "defaultEndpointToHostAction",
            spec.default_endpoint_to_host_action.as_ref(),
            &["Drop", "Accept", "Return"][..],
        ),
    ] {
        if let Some(value) = value {
            if !allowed.iter().any(|name| name.eq_ignore_ascii_case(value)) {
                checker.fail(
                    format!("spec.{field}"),
                    Some(value),
                    format!("must be one of {}", super::quote_list(allowed)),
                );
            }
        }
    }
    let durations = [
        ("dataplaneWatchdogTimeout", &spec.dataplane_watchdog_timeout),
        ("routeRefreshInterval", &spec.route_refresh_interval),
        ("interfaceRefreshInterval", &spec.interface_refresh_interval),
        ("iptablesRefreshInterval", &spec.iptables_refresh_interval),
        (
            "iptablesPostWriteCheckInterval",
            &spec.iptables_post_write_check_interval,
        ),
        ("iptablesLockTimeout", &spec.iptables_lock_timeout),
        (
            "iptablesLockProbeInterval",
            &spec.iptables_lock_probe_interval,
        ),
        ("ipsetsRefreshInterval", &spec.ipsets_refresh_interval),
        ("xdpRefreshInterval", &spec.xdp_refresh_interval),
        ("netlinkTimeout", &spec.netlink_timeout),
        ("reportingInterval", &spec.reporting_interval),
        ("reportingTTL", &spec.reporting_ttl),
        ("endpointReportingDelay", &spec.endpoint_reporting_delay),
        (
            "debugSimulateCalcGraphHangAfter",
            &spec.debug_simulate_calc_graph_hang_after,
        ),
        (
            "debugSimulateDataplaneHangAfter",
            &spec.debug_simulate_dataplane_hang_after,
        ),
        (
            "debugSimulateDataplaneApplyDelay",
            &spec.debug_simulate_dataplane_apply_delay,
        ),
        (
            "usageReportingInitialDelay",
            &spec.usage_reporting_initial_delay,
        ),
        ("usageReportingInterval", &spec.usage_reporting_interval),
        ("nftablesRefreshInterval", &spec.nftables_refresh_interval),
        (
            "bpfKubeProxyMinSyncPeriod",
            &spec.bpf_kube_proxy_min_sync_period,
        ),
        ("wireguardKeepAlive", &spec.wireguard_keep_alive),
        ("flowLogsFlushInterval", &spec.flow_logs_flush_interval),
    ];
    for (field, value) in durations {
        checker.duration(&format!("spec.{field}"), value.as_ref());
    }
    for (index, timeout_override) in spec.health_timeout_overrides.iter().enumerate() {
        let path = format!("spec.healthTimeoutOverrides[{index}]");
        if timeout_override.name.is_empty() {
            checker.fail(format!("{path}.name"), None, "name is required");
        }
        checker.duration(&format!("{path}.timeout"), Some(&timeout_override.timeout));
    }
    let ports = [
        ("metadataPort", spec.metadata_port),
        ("healthPort", spec.health_port),
        ("prometheusMetricsPort", spec.prometheus_metrics_port),
        ("debugPort", spec.debug_port),
        ("vxlanPort", spec.vxlan_port),
        ("wireguardListeningPort", spec.wireguard_listening_port),
        ("wireguardListeningPortV6", spec.wireguard_listening_port_v6),
        ("tproxyPort", spec.tproxy_port),
    ];
    for (field, value) in ports {
        checker.in_range(&format!("spec.{field}"), value, 1, 65535);
    }
    for (field, value) in [
        ("ipipMTU", spec.ipip_mtu),
        ("vxlanMTU", spec.vxlan_mtu),
        ("vxlanMTUV6", spec.vxlan_mtu_v6),
        ("wireguardMTU", spec.wireguard_mtu),
        ("wireguardMTUV6", spec.wireguard_mtu_v6),
    ] {
        checker.in_range(&format!("spec.{field}"), value, 0, 65535);
    }
    checker.in_range(
        "spec.iptablesMarkMask",
        spec.iptables_mark_mask,
        0,
        i64::from(u32::MAX),
    );
    checker.in_range(
        "spec.nftablesMarkMask",
        spec.nftables_mark_mask,
        0,
        i64::from(u32::MAX),
    );
    for (field, ports) in [
        (
            "failsafeInboundHostPorts",
            &spec.failsafe_inbound_host_ports,
        ),
        (
            "failsafeOutboundHostPorts",
            &spec.failsafe_outbound_host_ports,
        ),
    ] {
        for (index, entry) in ports.iter().enumerate() {
            let path = format!("spec.{field}[{index}]");
            if let Err(reason) = check_protocol(&entry.protocol) {
                checker.fail(
                    format!("{path}.protocol"),
                    Some(&entry.protocol.to_string()),
                    reason,
                );
            }
            checker.in_range(&format!("{path}.port"), Some(entry.port), 0, 65535);
            if let Some(net) = &entry.net {
                checker.address_or_cidr(&format!("{path}.net"), net, Family::Any);
            }
        }
    }
    if spec.kube_node_port_ranges.len() > MAXIMUM_NODE_PORT_RANGES {
        checker.fail(
            "spec.kubeNodePortRanges",
            None,
            format!(
                "at most {MAXIMUM_NODE_PORT_RANGES} ranges are allowed, found {}",
                spec.kube_node_port_ranges.len()
            ),
        );
    }
    for (index, range) in spec.kube_node_port_ranges.iter().enumerate() {
        numeric_port_range(checker, &format!("spec.kubeNodePortRanges[{index}]"), range);
    }
    if let Some(range) = &spec.nat_port_range {
        numeric_port_range(checker, "spec.natPortRange", range);
    }
    if let Some(range) = &spec.bpf_psnat_ports {
        numeric_port_range(checker, "spec.bpfPSNATPorts", range);
    }
    for (index, cidr) in spec.external_nodes_cidr_list.iter().enumerate() {
        checker.address_or_cidr(
            &format!("spec.externalNodesCIDRList[{index}]"),
            cidr,
            Family::V4,
        );
    }
    for (field, cidrs) in [
        ("bpfDSROptoutCIDRs", &spec.bpf_dsr_optout_cidrs),
        ("bpfExcludeCIDRsFromNAT", &spec.bpf_exclude_cidrs_from_nat),
    ] {
        for (index, cidr) in cidrs.iter().enumerate() {
            checker.address_or_cidr(&format!("spec.{field}[{index}]"), cidr, Family::Any);
        }
    }
    for (field, value, family) in [
        ("natOutgoingAddress", &spec.nat_outgoing_address, Family::V4),
        (
            "deviceRouteSourceAddress",
            &spec.device_route_source_address,
            Family::V4,
        ),
        (
            "deviceRouteSourceAddressIPv6",
            &spec.device_route_source_address_ipv6,
            Family::V6,
        ),
    ] {
        if let Some(value) = value.as_ref().filter(|value| !value.is_empty()) {
            checker.ip(&format!("spec.{field}"), value, family);
        }
    }
    if spec.route_table_range.is_some() && !spec.route_table_ranges.is_empty() {
        checker.fail(
            "spec.routeTableRanges",
            None,
            "routeTableRange and routeTableRanges cannot both be set (use routeTableRanges)",
        );
    }
    if let Some(range) = &spec.route_table_range {
        route_table_range(checker, "spec.routeTableRange", range);
    }
    for (index, range) in spec.route_table_ranges.iter().enumerate() {
        route_table_range(checker, &format!("spec.routeTableRanges[{index}]"), range);
    }
    if let Some(region) = &spec.openstack_region {
        if !super::syntax::is_dns_label(region) || region.len() > MAXIMUM_OPENSTACK_REGION_LENGTH {
            checker.fail(
                "spec.openstackRegion",
                Some(region),
                format!(
                    "must be a DNS label of at most {MAXIMUM_OPENSTACK_REGION_LENGTH} characters \
                     (it becomes part of a namespace name)"
                ),
            );
        }
    }
}

/// Upstream's FelixConfiguration defaulting, including the mapping of the deprecated
/// `bpfConnectTimeLoadBalancingEnabled` onto its two replacements.
fn default_felix(spec: &mut FelixConfigurationSpec) {
    if spec.floating_ips.is_none() {
        spec.floating_ips = Some("Disabled".to_string());
    }
    let (load_balancing, host_nat) = match spec.bpf_connect_time_load_balancing_enabled {
        Some(true) => ("Enabled", "Disabled"),
        Some(false) => ("Disabled", "Enabled"),
        None => ("TCP", "Enabled"),
    };
    if spec.bpf_connect_time_load_balancing.is_none() {
        spec.bpf_connect_time_load_balancing = Some(load_balancing.to_string());
    }
    if spec.bpf_host_networked_nat_without_ctlb.is_none() {
        spec.bpf_host_networked_nat_without_ctlb = Some(host_nat.to_string());
    }
}

fn numeric_port_range(checker: &mut Checker, path: &str, range: &NumberOrString) {
    match parse_port(range) {
        Ok(PortMeaning::Range { .. }) => {}
        Ok(PortMeaning::Named(_)) => checker.fail(
            path,
            Some(&range.to_string()),
            "named ports are not allowed here (use a number or `min:max`)",
        ),
        Err(reason) => checker.fail(path, Some(&range.to_string()), reason),
    }
}

fn route_table_range(checker: &mut Checker, path: &str, range: &RouteTableRange) {
    if range.min < 1 || range.max > i64::from(u32::MAX) || range.min > range.max {
        checker.fail(
            path,
            Some(&format!("{}-{}", range.min, range.max)),
            "route table range must have 1 <= min <= max <= 4294967295",
        );
    }
}

/// The only name a KubeControllersConfiguration or ClusterInformation may have.
const SINGLETON_NAME: &str = "default";

pub(super) fn kube_controllers_configuration(
    checker: &mut Checker,
    spec: &mut KubeControllersConfigurationSpec,
    metadata: &ObjectMeta,
) {
    if spec.prometheus_metrics_port.is_none() {
        spec.prometheus_metrics_port = Some(9094);
    }
    if let Some(node) = &mut spec.controllers.node {
        if node.leak_grace_period.is_none() {
            // Written as Go's `time.Duration` prints 15 minutes, as upstream stores it.
            node.leak_grace_period = Some("15m0s".to_string());
        }
    }
    if !metadata.name.is_empty() && metadata.name != SINGLETON_NAME {
        checker.fail(
            "metadata.name",
            Some(&metadata.name),
            "a KubeControllersConfiguration must be named `default`",
        );
    }
    checker.one_of(
        "spec.logSeverityScreen",
        spec.log_severity_screen.as_ref(),
        &LOG_LEVELS,
    );
    checker.one_of(
        "spec.healthChecks",
        spec.health_checks.as_ref(),
        &ENABLED_DISABLED,
    );
    checker.duration(
        "spec.etcdV3CompactionPeriod",
        spec.etcd_v3_compaction_period.as_ref(),
    );
    checker.in_range(
        "spec.prometheusMetricsPort",
        spec.prometheus_metrics_port,
        0,
        65535,
    );
    checker.in_range("spec.debugProfilePort", spec.debug_profile_port, 0, 65535);
    let controllers = &spec.controllers;
    if let Some(node) = &controllers.node {
        checker.duration(
            "spec.controllers.node.reconcilerPeriod",
            node.reconciler_period.as_ref(),
        );
        checker.duration(
            "spec.controllers.node.leakGracePeriod",
            node.leak_grace_period.as_ref(),
        );
        checker.one_of(
            "spec.controllers.node.syncLabels",
            node.sync_labels.as_ref(),
            &ENABLED_DISABLED,
        );
        if let Some(host_endpoint) = &node.host_endpoint {
            checker.one_of(
                "spec.controllers.node.hostEndpoint.autoCreate",
                host_endpoint.auto_create.as_ref(),
                &ENABLED_DISABLED,
            );
            checker.one_of(
                "spec.controllers.node.hostEndpoint.createDefaultHostEndpoint",
                host_endpoint.create_default_host_endpoint.as_ref(),
                &ENABLED_DISABLED,
            );
        }
    }
    for (name, reconciler) in [
        ("policy", &controllers.policy),
        ("workloadEndpoint", &controllers.workload_endpoint),
        ("serviceAccount", &controllers.service_account),
        ("namespace", &controllers.namespace),
    ] {
        if let Some(reconciler) = reconciler {
            checker.duration(
                &format!("spec.controllers.{name}.reconcilerPeriod"),
                reconciler.reconciler_period.as_ref(),
            );
        }
    }
    if let Some(load_balancer) = &controllers.load_balancer {
        checker.one_of(
            "spec.controllers.loadBalancer.assignIPs",
            load_balancer.assign_ips.as_ref(),
            &["AllServices", "RequestedServicesOnly"],
        );
    }
}

/// The order of the `default` tier, which is also the default order of any tier.
const DEFAULT_TIER_ORDER: f64 = 1_000_000.0;
/// The fixed order of the tier that holds Kubernetes admin network policies.
const ADMIN_NETWORK_POLICY_TIER_ORDER: f64 = 1_000.0;

pub(super) fn tier(checker: &mut Checker, spec: &mut TierSpec, metadata: &ObjectMeta) {
    let name = metadata.name.as_str();
    let fixed_order = match name {
        "default" => Some(DEFAULT_TIER_ORDER),
        "adminnetworkpolicy" => Some(ADMIN_NETWORK_POLICY_TIER_ORDER),
        _ => None,
    };
    if spec.order.is_none() {
        spec.order = Some(fixed_order.unwrap_or(DEFAULT_TIER_ORDER));
    }
    if spec.default_action.is_none() {
        spec.default_action = Some("Deny".to_string());
    }
    if !name.is_empty() && !super::syntax::is_dns_label(name) {
        checker.fail(
            "metadata.name",
            Some(name),
            "tier name must be a DNS label (at most 63 lower case alphanumerics or `-`, no dots)",
        );
    }
    if let (Some(fixed), Some(order)) = (fixed_order, spec.order) {
        if order != fixed {
            checker.fail(
                "spec.order",
                Some(&order.to_string()),
                format!("the `{name}` tier must have order {fixed}"),
            );
        }
    }
    checker.one_of(
        "spec.defaultAction",
        spec.default_action.as_ref(),
        &["Deny", "Pass"],
    );
}

pub(super) fn cluster_information(checker: &mut Checker, metadata: &ObjectMeta) {
    if !metadata.name.is_empty() && metadata.name != SINGLETON_NAME {
        checker.fail(
            "metadata.name",
            Some(&metadata.name),
            "a ClusterInformation must be named `default`",
        );
    }
}
