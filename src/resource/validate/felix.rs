//! FelixConfiguration (upstream `validateFelixConfigSpec` and the clientv3 defaulting, through
//! v3.32): the allowed values and durations written on the spec's fields (read from its schema,
//! `field_rules.rs`), then the rules that need code, in groups. Which line has a field or value is
//! `resource::availability`'s business.

use std::sync::LazyLock;

use regex::Regex;

use super::field_rules::field_rules;
use super::{Checker, Family};
use crate::resource::Kind;
use crate::resource::spec::FelixConfigurationSpec;
use crate::resource::spec::numorstring::{NumberOrString, PortMeaning, parse_port};

/// Upstream's limit on `kubeNodePortRanges` (an iptables multiport match holds 15 ports; each range
/// takes two).
const MAXIMUM_NODE_PORT_RANGES: usize = 7;

/// An OpenStack region becomes part of a namespace name `openstack-region-<region>`, which must stay
/// a DNS label of at most 63 characters.
const MAXIMUM_OPENSTACK_REGION_LENGTH: usize = 63 - "openstack-region-".len();
/// The rules written beside FelixConfiguration's fields: each field's allowed values (an empty
/// string is unset, as upstream's `omitempty`) and each duration, in the order of the fields.
fn schema_rules(checker: &mut Checker, spec: &FelixConfigurationSpec) {
    let rules = field_rules(Kind::FelixConfiguration);
    // The spec is small and FelixConfiguration documents are few: the fields are read by name.
    let fields = serde_json::to_value(spec).unwrap_or_default();
    let text = |field: &str| {
        fields
            .get(field)
            .and_then(|value| value.as_str().map(str::to_string))
    };
    for (field, path) in rules.top_level_allowed() {
        checker.one_of_field(path, text(field).as_ref());
    }
    for (field, path) in rules.top_level_durations() {
        checker.duration(path, text(field).as_ref());
    }
}

pub(super) fn felix_configuration(checker: &mut Checker, spec: &mut FelixConfigurationSpec) {
    default_felix(spec);
    schema_rules(checker, spec);
    later_felix_fields(checker, spec);
    texts(checker, spec);
    numbers(checker, spec);
    networks(checker, spec);
}

/// Lists of `key=value`, regular expressions, host and interface names, health reporter names.
fn texts(checker: &mut Checker, spec: &FelixConfigurationSpec) {
    for (field, value) in [
        ("featureDetectOverride", &spec.feature_detect_override),
        ("featureGates", &spec.feature_gates),
    ] {
        if let Some(value) = value {
            if !is_key_value_list(value) {
                checker.fail(
                    format!("spec.{field}"),
                    Some(value),
                    "must be a comma-separated list of `key=value` pairs",
                );
            }
        }
    }
    for (field, value) in [
        ("logDebugFilenameRegex", &spec.log_debug_filename_regex),
        ("bpfDataIfacePattern", &spec.bpf_data_iface_pattern),
        ("bpfL3IfacePattern", &spec.bpf_l3_iface_pattern),
        ("bpfDisableGROForIfaces", &spec.bpf_disable_gro_for_ifaces),
        ("mtuIfacePattern", &spec.mtu_iface_pattern),
    ] {
        if let Some(value) = value {
            if let Err(error) = regex::Regex::new(value) {
                let reason = error
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .to_string();
                checker.fail(
                    format!("spec.{field}"),
                    Some(value),
                    format!("must be a valid regular expression: {}", reason.trim()),
                );
            }
        }
    }
    if let Some(host) = &spec.prometheus_metrics_host {
        if !PROMETHEUS_HOST.is_match(host) {
            checker.fail(
                "spec.prometheusMetricsHost",
                Some(host),
                "must be 1-64 of a-z, A-Z, 0-9, `:`, `.`, `_`, `+` or `-`",
            );
        }
    }
    if let Some(filter) = &spec.iptables_nat_outgoing_interface_filter {
        interface_filter(checker, "spec.iptablesNATOutgoingInterfaceFilter", filter);
    }
    for (index, filter) in spec.bpf_force_track_packets_from_ifaces.iter().enumerate() {
        interface_filter(
            checker,
            &format!("spec.bpfForceTrackPacketsFromIfaces[{index}]"),
            filter,
        );
    }
    for interface in spec.bpf_log_filters.keys() {
        if !INTERFACE_NAME.is_match(interface) {
            checker.fail(
                format!("spec.bpfLogFilters[{interface}]"),
                None,
                "key must be an interface name: 1-15 of a-z, A-Z, 0-9, `_`, `.` or `-`",
            );
        }
    }
    for (field, value) in [
        ("wireguardInterfaceName", &spec.wireguard_interface_name),
        (
            "wireguardInterfaceNameV6",
            &spec.wireguard_interface_name_v6,
        ),
    ] {
        if let Some(name) = value.as_ref().filter(|name| !name.is_empty()) {
            if !INTERFACE_NAME.is_match(name) {
                checker.fail(
                    format!("spec.{field}"),
                    Some(name),
                    "interface name must be 1-15 of a-z, A-Z, 0-9, `_`, `.` or `-`",
                );
            }
        }
    }
    for (index, timeout_override) in spec.health_timeout_overrides.iter().enumerate() {
        let path = format!("spec.healthTimeoutOverrides[{index}]");
        if !HEALTH_REPORTER_NAME.is_match(&timeout_override.name) {
            checker.fail(
                format!("{path}.name"),
                Some(&timeout_override.name),
                "name must be letters, digits, `_`, `-` or spaces",
            );
        }
        checker.duration(&format!("{path}.timeout"), Some(&timeout_override.timeout));
        if timeout_override.timeout.starts_with('-') {
            checker.fail(
                format!("{path}.timeout"),
                Some(&timeout_override.timeout),
                "timeout must not be negative",
            );
        }
    }
}

/// Ports, MTUs, marks, priorities, the Go runtime's limits, failsafe ports and port ranges.
fn numbers(checker: &mut Checker, spec: &FelixConfigurationSpec) {
    let ports = [
        ("metadataPort", spec.metadata_port, 0),
        ("healthPort", spec.health_port, 0),
        ("prometheusMetricsPort", spec.prometheus_metrics_port, 0),
        ("debugPort", spec.debug_port, 0),
        ("vxlanPort", spec.vxlan_port, 0),
        ("wireguardListeningPort", spec.wireguard_listening_port, 1),
        (
            "wireguardListeningPortV6",
            spec.wireguard_listening_port_v6,
            1,
        ),
    ];
    for (field, value, minimum) in ports {
        checker.in_range(&format!("spec.{field}"), value, minimum, 65535);
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
    let unsigned_32 = i64::from(u32::MAX);
    checker.in_range(
        "spec.iptablesMarkMask",
        spec.iptables_mark_mask,
        0,
        unsigned_32,
    );
    checker.in_range(
        "spec.nftablesMarkMask",
        spec.nftables_mark_mask,
        0,
        unsigned_32,
    );
    checker.in_range(
        "spec.bpfExtToServiceConnmark",
        spec.bpf_ext_to_service_connmark,
        0,
        unsigned_32,
    );
    checker.in_range(
        "spec.wireguardRoutingRulePriority",
        spec.wireguard_routing_rule_priority,
        1,
        32765,
    );
    for (field, value) in [
        ("goGCThreshold", spec.go_gc_threshold),
        ("goMemoryLimitMB", spec.go_memory_limit_mb),
        ("goMaxProcs", spec.go_max_procs),
    ] {
        checker.in_range(&format!("spec.{field}"), value, -1, i64::MAX);
    }
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
            checker.one_of_field(&format!("{path}.protocol"), Some(&entry.protocol));
            checker.in_range(&format!("{path}.port"), Some(entry.port), 0, 65535);
            if let Some(net) = entry.net.as_ref().filter(|net| !net.is_empty()) {
                checker.address_or_cidr(&format!("{path}.net"), net, Family::Any);
            }
        }
    }
    if spec.kube_node_port_ranges.len() > MAXIMUM_NODE_PORT_RANGES {
        checker.fail(
            "spec.kubeNodePortRanges",
            None,
            format!(
                "node port ranges list is too long: at most {MAXIMUM_NODE_PORT_RANGES} ranges, found {}",
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
}

/// Addresses and networks, route tables and the OpenStack region.
fn networks(checker: &mut Checker, spec: &FelixConfigurationSpec) {
    for (index, cidr) in spec.external_nodes_cidr_list.iter().enumerate() {
        checker.address_or_cidr(
            &format!("spec.externalNodesList[{index}]"),
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
            "spec.routeTableRange",
            None,
            "routeTableRange cannot be set when routeTableRanges is also set",
        );
    }
    if let Some(range) = &spec.route_table_range {
        if range.min < 1 || range.max < range.min || range.max > MAXIMUM_ROUTE_TABLE_RANGE_INDEX {
            checker.fail(
                "spec.routeTableRange",
                Some(&format!("{}-{}", range.min, range.max)),
                format!("must be a range of route table indices within 1..{MAXIMUM_ROUTE_TABLE_RANGE_INDEX}"),
            );
        }
    }
    let mut designated_tables: i64 = 0;
    for (index, range) in spec.route_table_ranges.iter().enumerate() {
        let path = format!("spec.routeTableRanges[{index}]");
        let value = format!("{}-{}", range.min, range.max);
        if range.min > range.max {
            checker.fail(&path, Some(&value), "min cannot be greater than max");
        }
        if range.min < 1 {
            checker.fail(&path, Some(&value), "cannot target indices below 1");
        }
        if range.max > i64::from(u32::MAX) {
            checker.fail(
                &path,
                Some(&value),
                format!("max index is too high (at most {})", u32::MAX),
            );
        }
        designated_tables += (range.max - range.min + 1).max(0);
    }
    if designated_tables > MAXIMUM_DESIGNATED_ROUTE_TABLES {
        checker.fail(
            "spec.routeTableRanges",
            None,
            format!("targets too many tables: {designated_tables}, at most {MAXIMUM_DESIGNATED_ROUTE_TABLES}"),
        );
    }
    if let Some(region) = spec
        .openstack_region
        .as_ref()
        .filter(|region| !region.is_empty())
    {
        if region.len() > MAXIMUM_OPENSTACK_REGION_LENGTH {
            checker.fail(
                "spec.openstackRegion",
                Some(region),
                format!(
                    "is too long: at most {MAXIMUM_OPENSTACK_REGION_LENGTH} characters (it becomes part \
                     of a namespace name)"
                ),
            );
        } else if !super::syntax::is_dns_label(region) {
            checker.fail(
                "spec.openstackRegion",
                Some(region),
                "must be a valid DNS label",
            );
        }
    }
}

/// Upstream's `routeTableRange` (the single, older field) is limited to the indices below the kernel's
/// reserved tables.
const MAXIMUM_ROUTE_TABLE_RANGE_INDEX: i64 = 250;
/// Upstream caps the tables `routeTableRanges` may designate in total.
const MAXIMUM_DESIGNATED_ROUTE_TABLES: i64 = 0xffff;

static INTERFACE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-zA-Z0-9_.-]{1,15}$").expect("the interface name pattern is a valid regex")
});
static INTERFACE_FILTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-zA-Z0-9:._+-]{1,15}$").expect("the interface filter pattern is a valid regex")
});
static PROMETHEUS_HOST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-zA-Z0-9:._+-]{1,64}$").expect("the prometheus host pattern is a valid regex")
});
static HEALTH_REPORTER_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-zA-Z0-9_ -]+$").expect("the health reporter name pattern is a valid regex")
});
static KEY_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\w+=.*$").expect("the key=value pattern is a valid regex"));

/// An interface name or a prefix wildcard such as `docker+`.
fn interface_filter(checker: &mut Checker, path: &str, value: &str) {
    if !INTERFACE_FILTER.is_match(value) {
        checker.fail(
            path,
            Some(value),
            "must be 1-15 of a-z, A-Z, 0-9, `:`, `.`, `_`, `+` or `-`",
        );
    }
}

/// A comma-separated `key=value` list; empty items (a trailing comma) are allowed.
fn is_key_value_list(value: &str) -> bool {
    value
        .split(',')
        .filter(|item| !item.is_empty())
        .all(|item| KEY_VALUE.is_match(item))
}

/// Upstream's FelixConfiguration defaulting. The deprecated `bpfConnectTimeLoadBalancingEnabled`,
/// when set, overrides both of its replacements (whatever they say), as upstream does.
fn default_felix(spec: &mut FelixConfigurationSpec) {
    spec.floating_ips
        .get_or_insert_with(|| "Disabled".to_string());
    spec.bpf_connect_time_load_balancing
        .get_or_insert_with(|| "TCP".to_string());
    spec.bpf_host_networked_nat_without_ctlb
        .get_or_insert_with(|| "Enabled".to_string());
    if let Some(enabled) = spec.bpf_connect_time_load_balancing_enabled {
        let load_balancing = if enabled { "Enabled" } else { "Disabled" };
        spec.bpf_connect_time_load_balancing = Some(load_balancing.to_string());
        spec.bpf_host_networked_nat_without_ctlb = Some("Disabled".to_string());
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

/// A conntrack timeout of the BPF dataplane: a duration (microseconds allowed) or `Auto`.
static CONNTRACK_TIMEOUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(([0-9]*(\.[0-9]*)?(ms|s|h|m|us)+)+|Auto)$")
        .expect("the conntrack timeout pattern is a valid regex")
});

/// A log rate limit: `N/second`, `N/minute`, `N/hour` or `N/day` with N from 1 to 9999.
static RATE_LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[1-9]\d{0,3}/(?:second|minute|hour|day)$")
        .expect("the rate limit pattern is a valid regex")
});

/// The FelixConfiguration fields of v3.30 to v3.32 that need more than an enum or a duration.
fn later_felix_fields(checker: &mut Checker, spec: &FelixConfigurationSpec) {
    let priority = (1, 2_147_483_646);
    for (field, value, (minimum, maximum)) in [
        (
            "ipv4NormalRoutePriority",
            spec.ipv4_normal_route_priority,
            priority,
        ),
        (
            "ipv4ElevatedRoutePriority",
            spec.ipv4_elevated_route_priority,
            priority,
        ),
        (
            "ipv6NormalRoutePriority",
            spec.ipv6_normal_route_priority,
            priority,
        ),
        (
            "ipv6ElevatedRoutePriority",
            spec.ipv6_elevated_route_priority,
            priority,
        ),
        (
            "bpfMaglevMaxEndpointsPerService",
            spec.bpf_maglev_max_endpoints_per_service,
            (1, 3000),
        ),
        (
            "bpfMaglevMaxServices",
            spec.bpf_maglev_max_services,
            (1, 3000),
        ),
        (
            "bpfKubeProxyHealthzPort",
            spec.bpf_kube_proxy_healthz_port,
            (0, 65535),
        ),
        (
            "bpfKubeProxyHealtzPort",
            spec.bpf_kube_proxy_healtz_port,
            (0, 65535),
        ),
        (
            "logActionRateLimitBurst",
            spec.log_action_rate_limit_burst,
            (0, 9999),
        ),
        (
            "bpfMapSizeConntrackCleanupQueue",
            spec.bpf_map_size_conntrack_cleanup_queue,
            (1, i64::MAX),
        ),
    ] {
        checker.in_range(&format!("spec.{field}"), value, minimum, maximum);
    }
    if let Some(limit) = &spec.log_action_rate_limit {
        if !RATE_LIMIT.is_match(limit) {
            checker.fail(
                "spec.logActionRateLimit",
                Some(limit),
                "must be `N/second`, `N/minute`, `N/hour` or `N/day` with N from 1 to 9999",
            );
        }
    }
    if let Some(timeouts) = &spec.bpf_conntrack_timeouts {
        for (field, value) in [
            ("creationGracePeriod", &timeouts.creation_grace_period),
            ("tcpSynSent", &timeouts.tcp_syn_sent),
            ("tcpEstablished", &timeouts.tcp_established),
            ("tcpFinsSeen", &timeouts.tcp_fins_seen),
            ("tcpResetSeen", &timeouts.tcp_reset_seen),
            ("udpTimeout", &timeouts.udp_timeout),
            ("genericTimeout", &timeouts.generic_timeout),
            ("icmpTimeout", &timeouts.icmp_timeout),
        ] {
            if let Some(value) = value
                .as_ref()
                .filter(|value| !CONNTRACK_TIMEOUT.is_match(value))
            {
                checker.fail(
                    format!("spec.bpfConntrackTimeouts.{field}"),
                    Some(value),
                    "must be a duration (e.g. `30s`, `1m30s`) or `Auto`",
                );
            }
        }
    }
    checker.selector(
        "spec.nodeSelector",
        spec.node_selector.as_ref(),
        super::SelectorContext::Plain,
    );
    if let Some(mark) = &spec.istio_dscp_mark {
        if let Err(reason) = crate::resource::spec::numorstring::check_dscp(mark) {
            checker.fail("spec.istioDSCPMark", Some(&mark.to_string()), reason);
        }
    }
}
