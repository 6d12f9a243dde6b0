//! BGP kinds: Node, BGPPeer, BGPFilter and BGPConfiguration (upstream `validateNodeSpec`,
//! `validateBGPPeerSpec`, the BGPFilter field validators and the BGPConfiguration rules through
//! v3.32; a rule that came with a later line applies from that line).
//!
//! Whether the BGPFilters a peer names exist needs the datastore and is left to the caller.

use std::sync::LazyLock;

use regex::Regex;

use super::{Checker, Family, SelectorContext};
use crate::resource::ObjectMeta;
use crate::resource::spec::numorstring::{AsNumber, parse_as_number};
use crate::resource::spec::{
    BgpConfigurationSpec, BgpFilterRule, BgpFilterSpec, BgpPeerSpec, NodeSpec,
};

/// The priorities of v3.32's route and filter priority fields.
const PRIORITY_RANGE: (i64, i64) = (1, 2_147_483_646);

/// An interface name with optional `*` wildcards, as upstream's `ignoredInterfaces` and BGPFilter
/// `interface` validators.
static INTERFACE_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-zA-Z0-9_.*-]{1,15}$").expect("the interface pattern is a valid regex")
});

fn as_number(checker: &mut Checker, path: &str, value: Option<&AsNumber>) {
    if let Some(value) = value {
        if let Err(reason) = parse_as_number(value) {
            checker.fail(path, Some(&value.to_string()), reason);
        }
    }
}

/// An address with an optional prefix length, of one family (upstream's `cidrv4`/`cidrv6`).
fn address_with_optional_prefix(checker: &mut Checker, path: &str, value: &str, family: Family) {
    if !value.is_empty() {
        checker.address_or_cidr(path, value, family);
    }
}

fn optional_ip(checker: &mut Checker, path: &str, value: &str, family: Family) {
    if !value.is_empty() {
        checker.ip(path, value, family);
    }
}

fn optional_mac(checker: &mut Checker, path: &str, value: &str) {
    if !value.is_empty() && !super::syntax::is_mac_address(value) {
        checker.fail(path, Some(value), "must be a valid MAC address");
    }
}

pub(super) fn node(checker: &mut Checker, spec: &mut NodeSpec) {
    if let Some(bgp) = &spec.bgp {
        if bgp == &Default::default() {
            checker.fail(
                "spec.bgp",
                None,
                "spec.bgp should not be empty (remove it or set an address)",
            );
        }
        address_with_optional_prefix(
            checker,
            "spec.bgp.ipv4Address",
            &bgp.ipv4_address,
            Family::V4,
        );
        address_with_optional_prefix(
            checker,
            "spec.bgp.ipv6Address",
            &bgp.ipv6_address,
            Family::V6,
        );
        optional_ip(
            checker,
            "spec.bgp.ipv4IPIPTunnelAddr",
            &bgp.ipv4_ipip_tunnel_address,
            Family::V4,
        );
        optional_ip(
            checker,
            "spec.bgp.routeReflectorClusterID",
            &bgp.route_reflector_cluster_id,
            Family::V4,
        );
        as_number(checker, "spec.bgp.asNumber", bgp.as_number.as_ref());
    }
    optional_ip(
        checker,
        "spec.ipv4VXLANTunnelAddr",
        &spec.ipv4_vxlan_tunnel_address,
        Family::V4,
    );
    optional_ip(
        checker,
        "spec.ipv6VXLANTunnelAddr",
        &spec.ipv6_vxlan_tunnel_address,
        Family::V6,
    );
    optional_mac(
        checker,
        "spec.vxlanTunnelMACAddr",
        &spec.vxlan_tunnel_mac_address,
    );
    optional_mac(
        checker,
        "spec.vxlanTunnelMACAddrV6",
        &spec.vxlan_tunnel_mac_address_v6,
    );
    if let Some(wireguard) = &spec.wireguard {
        optional_ip(
            checker,
            "spec.wireguard.interfaceIPv4Address",
            &wireguard.interface_ipv4_address,
            Family::V4,
        );
        optional_ip(
            checker,
            "spec.wireguard.interfaceIPv6Address",
            &wireguard.interface_ipv6_address,
            Family::V6,
        );
    }
    for (index, address) in spec.addresses.iter().enumerate() {
        let path = format!("spec.addresses[{index}]");
        checker.network(&format!("{path}.address"), &address.address, Family::Any);
        if !address.address_type.is_empty() {
            checker.one_of_field(&format!("{path}.type"), Some(&address.address_type));
        }
    }
    for (index, reference) in spec.orch_refs.iter().enumerate() {
        if reference.orchestrator.is_empty() {
            checker.fail(
                format!("spec.orchRefs[{index}].orchestrator"),
                None,
                "orchestrator is required",
            );
        }
    }
}

/// Parses a peer address: `IP`, `IPv4:port` or `[IPv6]:port`. Returns whether it is IPv4.
fn parse_peer_address(text: &str) -> Option<bool> {
    if let Ok(address) = text.parse::<std::net::IpAddr>() {
        return Some(address.is_ipv4());
    }
    let address = text.parse::<std::net::SocketAddr>().ok()?;
    (address.port() != 0).then_some(address.is_ipv4())
}

pub(super) fn bgp_peer(checker: &mut Checker, spec: &mut BgpPeerSpec) {
    if !spec.node.is_empty() {
        checker.name("spec.node", &spec.node);
    }
    checker.selector(
        "spec.nodeSelector",
        spec.node_selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.selector(
        "spec.peerSelector",
        spec.peer_selector.as_ref(),
        SelectorContext::Plain,
    );
    let peer_family = if spec.peer_ip.is_empty() {
        None
    } else {
        let family = parse_peer_address(&spec.peer_ip);
        if family.is_none() {
            checker.fail(
                "spec.peerIP",
                Some(&spec.peer_ip),
                "must be an IP address, `IPv4:port` or `[IPv6]:port`",
            );
        }
        family
    };
    as_number(checker, "spec.asNumber", spec.as_number.as_ref());
    checker.one_of_field("spec.sourceAddress", spec.source_address.as_ref());
    checker.duration("spec.maxRestartTime", spec.max_restart_time.as_ref());
    checker.in_range("spec.ttlSecurity", spec.ttl_security, 0, 255);
    checker.in_range(
        "spec.numAllowedLocalASNumbers",
        spec.num_allowed_local_as_numbers,
        0,
        i64::from(i32::MAX),
    );
    if let Some(reference) = spec
        .password
        .as_ref()
        .and_then(|p| p.secret_key_ref.as_ref())
    {
        if reference.name.is_empty() {
            checker.fail(
                "spec.password.secretKeyRef.name",
                None,
                "secret name is required",
            );
        }
        if reference.key.is_empty() {
            checker.fail(
                "spec.password.secretKeyRef.key",
                None,
                "secret key is required",
            );
        }
    }
    for (index, filter) in spec.filters.iter().enumerate() {
        checker.name(&format!("spec.filters[{index}]"), filter);
    }
    checker.selector(
        "spec.localWorkloadSelector",
        spec.local_workload_selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.one_of_field("spec.nextHopMode", spec.next_hop_mode.as_ref());
    checker.one_of_field("spec.reversePeering", spec.reverse_peering.as_ref());
    as_number(checker, "spec.localASNumber", spec.local_as_number.as_ref());
    checker.duration("spec.keepaliveTime", spec.keepalive_time.as_ref());
    if spec.next_hop_mode.is_some() && spec.keep_original_next_hop == Some(true) {
        checker.fail(
            "spec.keepOriginalNextHop",
            Some("true"),
            "keepOriginalNextHop is deprecated and must not be true when nextHopMode is set",
        );
    }
    if spec.local_workload_selector.is_some() {
        if spec.as_number.is_none() {
            checker.fail(
                "spec.asNumber",
                None,
                "asNumber is required when localWorkloadSelector is set",
            );
        }
        if !spec.peer_ip.is_empty() {
            checker.fail(
                "spec.peerIP",
                Some(&spec.peer_ip),
                "peerIP must be empty when localWorkloadSelector is set",
            );
        }
        if spec.peer_selector.is_some() {
            checker.fail(
                "spec.peerSelector",
                spec.peer_selector.as_deref(),
                "peerSelector must be empty when localWorkloadSelector is set",
            );
        }
    }

    if !spec.node.is_empty() && spec.node_selector.is_some() {
        checker.fail(
            "spec.nodeSelector",
            spec.node_selector.as_deref(),
            "node and nodeSelector cannot both be set",
        );
    }
    if !spec.peer_ip.is_empty() && spec.peer_selector.is_some() {
        checker.fail(
            "spec.peerSelector",
            spec.peer_selector.as_deref(),
            "peerIP and peerSelector cannot both be set",
        );
    }
    if spec.peer_selector.is_some() && spec.local_workload_selector.is_none() {
        if let Some(value) = &spec.as_number {
            checker.fail(
                "spec.asNumber",
                Some(&value.to_string()),
                "asNumber must be empty when peerSelector is set (the peers' own AS numbers are used)",
            );
        }
    }
    if let Some(reachable_by) = spec.reachable_by.as_ref().filter(|value| !value.is_empty()) {
        let reachable_family = checker.ip("spec.reachableBy", reachable_by, Family::Any);
        if spec.peer_ip.is_empty() {
            checker.fail(
                "spec.reachableBy",
                Some(reachable_by),
                "reachableBy must be empty when peerIP is empty",
            );
        } else if let (Some(reachable), Some(peer)) = (reachable_family, peer_family) {
            if reachable != peer {
                checker.fail(
                    "spec.reachableBy",
                    Some(reachable_by),
                    "reachableBy must be of the same address family as peerIP",
                );
            }
        }
    }
}

pub(super) fn bgp_filter(checker: &mut Checker, spec: &mut BgpFilterSpec) {
    let lists = [
        ("exportV4", &spec.export_v4, Family::V4),
        ("importV4", &spec.import_v4, Family::V4),
        ("exportV6", &spec.export_v6, Family::V6),
        ("importV6", &spec.import_v6, Family::V6),
    ];
    for (list, rules, family) in lists {
        for (index, rule) in rules.iter().enumerate() {
            bgp_filter_rule(checker, &format!("spec.{list}[{index}]"), rule, family);
        }
    }
}

/// One BGPFilter rule. Upstream checks the CIDR family, prefix-length bounds, `source` and the
/// interface pattern in its validator and the `action` and `matchOperator` values in the CRD schema;
/// on etcd there is no CRD, so both sets are checked here.
fn bgp_filter_rule(checker: &mut Checker, path: &str, rule: &BgpFilterRule, family: Family) {
    if rule.action.is_empty() {
        checker.fail(
            format!("{path}.action"),
            None,
            "action is required (`Accept` or `Reject`)",
        );
    } else {
        checker.one_of_field(&format!("{path}.action"), Some(&rule.action));
    }
    checker.one_of_field(
        &format!("{path}.matchOperator"),
        rule.match_operator.as_ref(),
    );
    if !rule.cidr.is_empty() {
        checker.network(&format!("{path}.cidr"), &rule.cidr, family);
    }
    if let Some(length) = &rule.prefix_length {
        let maximum = if family == Family::V4 { 32 } else { 128 };
        checker.in_range(&format!("{path}.prefixLength.min"), length.min, 0, maximum);
        checker.in_range(&format!("{path}.prefixLength.max"), length.max, 0, maximum);
    }
    checker.one_of_field(&format!("{path}.source"), rule.source.as_ref());
    if let Some(interface) = &rule.interface {
        if interface != "*" && !INTERFACE_PATTERN.is_match(interface) {
            checker.fail(
                format!("{path}.interface"),
                Some(interface),
                "must be an interface name of at most 15 characters (letters, digits, `_.-` and `*` wildcards)",
            );
        }
    }
    checker.one_of_field(&format!("{path}.peerType"), rule.peer_type.as_ref());
    if let Some(communities) = &rule.communities {
        if communities.values.len() != 1 {
            checker.fail(
                format!("{path}.communities.values"),
                None,
                "exactly one community value is matched",
            );
        }
        for (index, value) in communities.values.iter().enumerate() {
            if !is_community_value(value) {
                checker.fail(
                    format!("{path}.communities.values[{index}]"),
                    Some(value),
                    "community value must be `aa:nn` (16-bit numbers) or `aa:nn:mm` (32-bit numbers)",
                );
            }
        }
    }
    for (index, number) in rule.as_path_prefix.iter().enumerate() {
        as_number(
            checker,
            &format!("{path}.asPathPrefix[{index}]"),
            Some(number),
        );
    }
    let (minimum, maximum) = PRIORITY_RANGE;
    checker.in_range(&format!("{path}.priority"), rule.priority, minimum, maximum);
    if rule.operations.len() > 10 {
        checker.fail(format!("{path}.operations"), None, "at most 10 operations");
    }
    if !rule.operations.is_empty() && rule.action != "Accept" {
        checker.fail(
            format!("{path}.operations"),
            None,
            "operations may only be used with action `Accept`",
        );
    }
    for (index, operation) in rule.operations.iter().enumerate() {
        let at = format!("{path}.operations[{index}]");
        let set = [
            operation.add_community.is_some(),
            operation.prepend_as_path.is_some(),
            operation.set_priority.is_some(),
        ];
        if set.iter().filter(|set| **set).count() != 1 {
            checker.fail(
                &at,
                None,
                "exactly one of `addCommunity`, `prependASPath` or `setPriority` must be set",
            );
        }
        if let Some(value) = operation
            .add_community
            .as_ref()
            .and_then(|add| add.value.as_ref())
        {
            if !is_community_value(value) {
                checker.fail(
                    format!("{at}.addCommunity.value"),
                    Some(value),
                    "community value must be `aa:nn` (16-bit numbers) or `aa:nn:mm` (32-bit numbers)",
                );
            }
        }
        if let Some(prepend) = &operation.prepend_as_path {
            if prepend.prefix.is_empty() || prepend.prefix.len() > 10 {
                checker.fail(
                    format!("{at}.prependASPath.prefix"),
                    None,
                    "between 1 and 10 AS numbers",
                );
            }
            for (position, number) in prepend.prefix.iter().enumerate() {
                as_number(
                    checker,
                    &format!("{at}.prependASPath.prefix[{position}]"),
                    Some(number),
                );
            }
        }
        if let Some(priority) = &operation.set_priority {
            checker.in_range(
                &format!("{at}.setPriority.value"),
                Some(priority.value),
                minimum,
                maximum,
            );
        }
    }
    // v3.32 checks the BGPFilter CRD's own rules on etcd too (its validator runs the CRD schema).
    if checker.has(3, 32, 0) {
        if rule.cidr.is_empty() != rule.match_operator.is_none() {
            checker.fail(
                format!("{path}.cidr"),
                None,
                "cidr and matchOperator must both be set or both be empty",
            );
        }
        if rule.prefix_length.is_some() && rule.cidr.is_empty() {
            checker.fail(
                format!("{path}.prefixLength"),
                None,
                "cidr is required when prefixLength is set",
            );
        }
    }
}

/// Checks a BGP community value: `aa:nn` (16-bit parts) or `aa:nn:mm` (32-bit parts).
fn is_community_value(text: &str) -> bool {
    let parts: Vec<&str> = text.split(':').collect();
    match parts.len() {
        2 => parts.iter().all(|part| part.parse::<u16>().is_ok()),
        3 => parts.iter().all(|part| part.parse::<u32>().is_ok()),
        _ => false,
    }
}

pub(super) fn bgp_configuration(
    checker: &mut Checker,
    spec: &mut BgpConfigurationSpec,
    metadata: &ObjectMeta,
) {
    checker.one_of_field("spec.logSeverityScreen", spec.log_severity_screen.as_ref());
    as_number(checker, "spec.asNumber", spec.as_number.as_ref());
    for (field, blocks) in [
        ("serviceLoadBalancerIPs", &spec.service_load_balancer_ips),
        ("serviceExternalIPs", &spec.service_external_ips),
        ("serviceClusterIPs", &spec.service_cluster_ips),
    ] {
        // Upstream: `validate:"omitempty,net"`, so an empty CIDR (`[{}]`) is accepted.
        for (index, block) in blocks.iter().enumerate() {
            if !block.cidr.is_empty() {
                checker.network(
                    &format!("spec.{field}[{index}].cidr"),
                    &block.cidr,
                    Family::Any,
                );
            }
        }
    }
    checker.in_range("spec.listenPort", spec.listen_port, 1, 65535);
    for (index, community) in spec.communities.iter().enumerate() {
        let path = format!("spec.communities[{index}]");
        if community.name.is_empty() {
            checker.fail(format!("{path}.name"), None, "community name is required");
        } else {
            checker.name(&format!("{path}.name"), &community.name);
        }
        if !is_community_value(&community.value) {
            checker.fail(
                format!("{path}.value"),
                Some(&community.value),
                "community value must be `aa:nn` (16-bit numbers) or `aa:nn:mm` (32-bit numbers)",
            );
        }
    }
    for (index, advertisement) in spec.prefix_advertisements.iter().enumerate() {
        let path = format!("spec.prefixAdvertisements[{index}]");
        checker.network(&format!("{path}.cidr"), &advertisement.cidr, Family::Any);
        for (community_index, community) in advertisement.communities.iter().enumerate() {
            let known = spec
                .communities
                .iter()
                .any(|named| &named.name == community);
            if !known && !is_community_value(community) {
                checker.fail(
                    format!("{path}.communities[{community_index}]"),
                    Some(community),
                    "must name a community of spec.communities or be a community value `aa:nn` / `aa:nn:mm`",
                );
            }
        }
    }
    checker.duration(
        "spec.nodeMeshMaxRestartTime",
        spec.node_mesh_max_restart_time.as_ref(),
    );
    checker.one_of_field("spec.bindMode", spec.bind_mode.as_ref());
    if let Some(address) = &spec.local_workload_peering_ipv4 {
        checker.ip("spec.localWorkloadPeeringIPV4", address, Family::V4);
    }
    if let Some(address) = &spec.local_workload_peering_ipv6 {
        checker.ip("spec.localWorkloadPeeringIPV6", address, Family::V6);
    }
    checker.one_of_field(
        "spec.serviceLoadBalancerAggregation",
        spec.service_load_balancer_aggregation.as_ref(),
    );
    checker.one_of_field(
        "spec.programClusterRoutes",
        spec.program_cluster_routes.as_ref(),
    );
    let (minimum, maximum) = PRIORITY_RANGE;
    checker.in_range(
        "spec.ipv4NormalRoutePriority",
        spec.ipv4_normal_route_priority,
        minimum,
        maximum,
    );
    checker.in_range(
        "spec.ipv6NormalRoutePriority",
        spec.ipv6_normal_route_priority,
        minimum,
        maximum,
    );
    for (index, interface) in spec.ignored_interfaces.iter().enumerate() {
        if interface == "*" || !INTERFACE_PATTERN.is_match(interface) {
            checker.fail(
                format!("spec.ignoredInterfaces[{index}]"),
                Some(interface),
                "must be 1-15 of a-z, A-Z, 0-9, `_`, `.`, `-` or `*` (and not just `*`)",
            );
        }
    }
    if !spec.communities.is_empty() && spec.prefix_advertisements.is_empty() {
        checker.fail(
            "spec.communities",
            None,
            "communities are defined but not used in spec.prefixAdvertisements",
        );
    }
    if spec.node_to_node_mesh_enabled == Some(false) {
        if spec.node_mesh_password.is_some() {
            checker.fail(
                "spec.nodeMeshPassword",
                None,
                "nodeMeshPassword cannot be set when nodeToNodeMeshEnabled is false",
            );
        }
        if spec.node_mesh_max_restart_time.is_some() {
            checker.fail(
                "spec.nodeMeshMaxRestartTime",
                None,
                "nodeMeshMaxRestartTime cannot be set when nodeToNodeMeshEnabled is false",
            );
        }
    }
    if metadata.name != "default" {
        let restricted = [
            (
                "nodeToNodeMeshEnabled",
                spec.node_to_node_mesh_enabled.is_some(),
            ),
            ("asNumber", spec.as_number.is_some()),
            (
                "serviceLoadBalancerIPs",
                !spec.service_load_balancer_ips.is_empty(),
            ),
            ("serviceExternalIPs", !spec.service_external_ips.is_empty()),
            ("serviceClusterIPs", !spec.service_cluster_ips.is_empty()),
            ("nodeMeshPassword", spec.node_mesh_password.is_some()),
            (
                "nodeMeshMaxRestartTime",
                spec.node_mesh_max_restart_time.is_some(),
            ),
        ];
        for (field, set) in restricted {
            if set {
                checker.fail(
                    format!("spec.{field}"),
                    None,
                    format!(
                        "cannot set {field} on a non default BGP Configuration (only on `default`)"
                    ),
                );
            }
        }
    }
}
