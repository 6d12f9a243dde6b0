//! Addressing kinds: HostEndpoint, WorkloadEndpoint, IPPool, IPReservation, GlobalNetworkSet and
//! NetworkSet (upstream v3.29 `validateHostEndpointSpec`, `validateIPPoolSpec` and the IPPool
//! defaulting in `clientv3/ippool.go`).
//!
//! Overlap between pools needs the other pools and is left to the caller (see `validate.rs`).

use std::sync::LazyLock;

use regex::Regex;

use super::syntax::{self, Cidr};
use super::{Checker, Family, SelectorContext};
use crate::resource::ObjectMeta;
use crate::resource::spec::WorkloadEndpointSpec;
use crate::resource::spec::numorstring::{Protocol, check_protocol, protocol_supports_ports};
use crate::resource::spec::{HostEndpointSpec, IpPoolSpec, IpReservationSpec, NetworkSetSpec};

static INTERFACE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-zA-Z0-9_.-]{1,15}$").expect("the interface name pattern is a valid regex")
});

pub(super) fn host_endpoint(checker: &mut Checker, spec: &mut HostEndpointSpec) {
    if spec.node.is_empty() {
        checker.fail("spec.node", None, "no node has been specified");
    } else {
        checker.name("spec.node", &spec.node);
    }
    if spec.interface_name.is_empty() && spec.expected_ips.is_empty() {
        checker.fail(
            "spec",
            None,
            "no interface or expected IPs have been specified (set `interfaceName`, `expectedIPs` or both)",
        );
    }
    interface_name(checker, "spec.interfaceName", &spec.interface_name, true);
    for (index, address) in spec.expected_ips.iter().enumerate() {
        checker.ip(&format!("spec.expectedIPs[{index}]"), address, Family::Any);
    }
    for (index, profile) in spec.profiles.iter().enumerate() {
        checker.name(&format!("spec.profiles[{index}]"), profile);
    }
    for (index, port) in spec.ports.iter().enumerate() {
        endpoint_port(
            checker,
            &format!("spec.ports[{index}]"),
            &port.name,
            &port.protocol,
            port.port,
        );
    }
}

static CONTAINER_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")
        .expect("the container ID pattern is a valid regex")
});

pub(super) fn workload_endpoint(checker: &mut Checker, spec: &mut WorkloadEndpointSpec) {
    for (field, value) in [
        ("orchestrator", &spec.orchestrator),
        ("workload", &spec.workload),
        ("node", &spec.node),
        ("pod", &spec.pod),
        ("endpoint", &spec.endpoint),
        ("serviceAccountName", &spec.service_account_name),
    ] {
        if !value.is_empty() {
            checker.name(&format!("spec.{field}"), value);
        }
    }
    if !spec.container_id.is_empty() && !CONTAINER_ID.is_match(&spec.container_id) {
        checker.fail(
            "spec.containerID",
            Some(&spec.container_id),
            "container ID must be alphanumerics or `-`, starting and ending with an alphanumeric",
        );
    }
    let mut networks = Vec::new();
    for (index, network) in spec.ip_networks.iter().enumerate() {
        let path = format!("spec.ipNetworks[{index}]");
        if let Some(cidr) = checker.network(&path, network, Family::Any) {
            let single_address = if cidr.is_ipv4() { 32 } else { 128 };
            if cidr.prefix != single_address {
                checker.fail(
                    &path,
                    Some(network),
                    "IP network contains multiple addresses (use a /32 or /128)",
                );
            }
            networks.push(cidr);
        }
    }
    for (index, nat) in spec.ip_nats.iter().enumerate() {
        let path = format!("spec.ipNATs[{index}]");
        let internal = checker.ip(&format!("{path}.internalIP"), &nat.internal_ip, Family::Any);
        let external = checker.ip(&format!("{path}.externalIP"), &nat.external_ip, Family::Any);
        if let (Some(internal), Some(external)) = (internal, external) {
            if internal != external {
                checker.fail(
                    format!("{path}.externalIP"),
                    Some(&nat.external_ip),
                    "internal and external IPs must be of the same IP version",
                );
            }
        }
        let inside = Cidr::parse_address_or_cidr(&nat.internal_ip)
            .is_some_and(|address| networks.iter().any(|network| network.overlaps(&address)));
        if internal.is_some() && !inside {
            checker.fail(
                format!("{path}.internalIP"),
                Some(&nat.internal_ip),
                "NAT internal IP is not in the endpoint's ipNetworks",
            );
        }
    }
    if !spec.ipv4_gateway.is_empty() {
        checker.ip("spec.ipv4Gateway", &spec.ipv4_gateway, Family::V4);
    }
    if !spec.ipv6_gateway.is_empty() {
        checker.ip("spec.ipv6Gateway", &spec.ipv6_gateway, Family::V6);
    }
    for (index, profile) in spec.profiles.iter().enumerate() {
        checker.name(&format!("spec.profiles[{index}]"), profile);
    }
    if spec.interface_name.is_empty() {
        checker.fail("spec.interfaceName", None, "interface name is required");
    }
    interface_name(checker, "spec.interfaceName", &spec.interface_name, false);
    if !spec.mac.is_empty() && !syntax::is_mac_address(&spec.mac) {
        checker.fail("spec.mac", Some(&spec.mac), "must be a valid MAC address");
    }
    for (index, port) in spec.ports.iter().enumerate() {
        let path = format!("spec.ports[{index}]");
        let host_port = port.host_port.unwrap_or_default();
        if port.name.is_empty() {
            if host_port == 0 {
                checker.fail(
                    format!("{path}.name"),
                    None,
                    "port name must not be empty when no hostPort is specified",
                );
            }
        } else {
            port_name(checker, &path, &port.name);
        }
        port_protocol_and_number(checker, &path, &port.protocol, port.port);
        checker.in_range(&format!("{path}.hostPort"), port.host_port, 0, 65535);
        if let Some(host_ip) = port.host_ip.as_ref().filter(|host_ip| !host_ip.is_empty()) {
            checker.network(&format!("{path}.hostIP"), host_ip, Family::Any);
        }
    }
    for (index, prefix) in spec.allow_spoofed_source_prefixes.iter().enumerate() {
        checker.address_or_cidr(
            &format!("spec.allowSpoofedSourcePrefixes[{index}]"),
            prefix,
            Family::Any,
        );
    }
}

fn interface_name(checker: &mut Checker, path: &str, name: &str, allow_wildcard: bool) {
    if name.is_empty() || (allow_wildcard && name == "*") {
        return;
    }
    if !INTERFACE_NAME.is_match(name) {
        let wildcard = if allow_wildcard { "`*` or " } else { "" };
        checker.fail(
            path,
            Some(name),
            format!("interface name must be {wildcard}1-15 of a-z, A-Z, 0-9, `_`, `.` or `-`"),
        );
    }
}

fn endpoint_port(checker: &mut Checker, path: &str, name: &str, protocol: &Protocol, port: i64) {
    port_name(checker, path, name);
    port_protocol_and_number(checker, path, protocol, port);
}

fn port_name(checker: &mut Checker, path: &str, name: &str) {
    if !syntax::is_port_name(name) {
        checker.fail(
            format!("{path}.name"),
            Some(name),
            "port name must be at most 15 lower case alphanumerics or `-`, with at least one letter",
        );
    }
}

fn port_protocol_and_number(checker: &mut Checker, path: &str, protocol: &Protocol, port: i64) {
    if let Err(reason) = check_protocol(protocol) {
        checker.fail(
            format!("{path}.protocol"),
            Some(&protocol.to_string()),
            reason,
        );
    } else if !protocol_supports_ports(protocol) {
        checker.fail(
            format!("{path}.protocol"),
            Some(&protocol.to_string()),
            "endpoint port protocol does not support ports (use `TCP`, `UDP` or `SCTP`)",
        );
    }
    checker.in_range(&format!("{path}.port"), Some(port), 1, 65535);
}

/// Defaults and checks an IPPool as upstream's `validateAndSetDefaults` and `validateIPPoolSpec`.
pub(super) fn ip_pool(checker: &mut Checker, spec: &mut IpPoolSpec) {
    // Defaults that do not depend on the CIDR.
    for mode in [&mut spec.ipip_mode, &mut spec.vxlan_mode] {
        if mode.as_deref().is_none_or(str::is_empty) {
            *mode = Some("Never".to_string());
        }
    }
    if spec.node_selector.as_deref().is_none_or(str::is_empty) {
        spec.node_selector = Some("all()".to_string());
    }
    if spec.allowed_uses.is_empty() {
        spec.allowed_uses = vec!["Workload".to_string(), "Tunnel".to_string()];
    }
    // From v3.30 the client fills in the assignment mode (`libcalico-go/lib/clientv3/ippool.go`).
    if spec.assignment_mode.is_none() && checker.has(3, 30, 0) {
        spec.assignment_mode = Some("Automatic".to_string());
    }

    // Messages show the CIDR as written; the normalised form is only stored.
    let written = spec.cidr.clone();
    let cidr = if spec.cidr.is_empty() {
        checker.fail("spec.cidr", None, "IPPool CIDR must be specified");
        None
    } else {
        match Cidr::parse(&spec.cidr) {
            None => {
                checker.fail(
                    "spec.cidr",
                    Some(&spec.cidr),
                    "IPPool CIDR must be a valid subnet (address/prefix length)",
                );
                None
            }
            Some(cidr) if !cidr.is_strictly_masked() => {
                checker.fail(
                    "spec.cidr",
                    Some(&spec.cidr),
                    format!(
                        "IPPool CIDR is not strictly masked (did you mean `{}`?)",
                        cidr.network()
                    ),
                );
                None
            }
            Some(cidr) => Some(cidr),
        }
    };
    if let Some(cidr) = cidr {
        spec.cidr = cidr.to_string();
        let (default_block_size, minimum, maximum) = if cidr.is_ipv4() {
            (26, 20, 32)
        } else {
            (122, 116, 128)
        };
        let block_size = *spec.block_size.get_or_insert(default_block_size);
        if block_size < minimum || block_size > maximum {
            let family = if cidr.is_ipv4() { "IPv4" } else { "IPv6" };
            checker.fail(
                "spec.blockSize",
                Some(&block_size.to_string()),
                format!("{family} block size must be between {minimum} and {maximum}"),
            );
        } else if !spec.disabled && i64::from(cidr.prefix) > block_size {
            checker.fail(
                "spec.cidr",
                Some(&written),
                format!(
                    "IP pool size is too small for use with Calico IPAM: the prefix length must be \
                     at most the block size ({block_size})"
                ),
            );
        }
        let link_local = if cidr.is_ipv4() {
            "169.254.0.0/16"
        } else {
            "fe80::/10"
        };
        if Cidr::parse(link_local).is_some_and(|link_local| cidr.overlaps(&link_local)) {
            checker.fail(
                "spec.cidr",
                Some(&written),
                format!("IPPool CIDR overlaps with the link-local range `{link_local}`"),
            );
        }
        if !cidr.is_ipv4() && matches!(spec.ipip_mode.as_deref(), Some("Always" | "CrossSubnet")) {
            checker.fail(
                "spec.ipipMode",
                spec.ipip_mode.as_deref(),
                "IPIP is not supported on an IPv6 pool",
            );
        }
    }
    checker.one_of_field("spec.ipipMode", spec.ipip_mode.as_ref());
    checker.one_of_field("spec.vxlanMode", spec.vxlan_mode.as_ref());
    let enabled =
        |mode: &Option<String>| matches!(mode.as_deref(), Some("Always") | Some("CrossSubnet"));
    if enabled(&spec.ipip_mode) && enabled(&spec.vxlan_mode) {
        checker.fail(
            "spec.vxlanMode",
            spec.vxlan_mode.as_deref(),
            "IPIP and VXLAN cannot both be enabled on one pool",
        );
    }
    for (index, allowed_use) in spec.allowed_uses.iter().enumerate() {
        checker.one_of_field(&format!("spec.allowedUses[{index}]"), Some(allowed_use));
    }
    load_balancer_pool(checker, spec);
    checker.one_of_field("spec.assignmentMode", spec.assignment_mode.as_ref());
    checker.selector(
        "spec.nodeSelector",
        spec.node_selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.selector(
        "spec.namespaceSelector",
        spec.namespace_selector.as_ref(),
        SelectorContext::Plain,
    );
    if spec
        .namespace_selector
        .as_deref()
        .is_some_and(|selector| !selector.is_empty())
        && spec
            .allowed_uses
            .iter()
            .any(|allowed_use| allowed_use == "Tunnel")
    {
        checker.fail(
            "spec.namespaceSelector",
            spec.namespace_selector.as_deref(),
            "a pool used for `Tunnel` addresses cannot have a namespaceSelector (tunnel addresses \
             belong to no namespace); set `allowedUses: [Workload]`",
        );
    }
    if spec.ipip.is_some() {
        checker.fail(
            "spec.ipip",
            None,
            "the v1 field `ipip` must not be set (use `ipipMode`)",
        );
    }
    if spec.nat_outgoing_v1 == Some(true) {
        checker.fail(
            "spec.nat-outgoing",
            Some("true"),
            "the v1 field `nat-outgoing` must not be true (use `natOutgoing`)",
        );
    }
}

/// The rules of a pool for Service load balancer addresses (v3.30): that use alone, no
/// encapsulation, every node, and exported over BGP (upstream refuses `disableBGPExport: true`).
fn load_balancer_pool(checker: &mut Checker, spec: &IpPoolSpec) {
    // Before v3.30 the value itself is refused; these rules are v3.30's.
    if !checker.has(3, 30, 0)
        || !spec
            .allowed_uses
            .iter()
            .any(|allowed_use| allowed_use == "LoadBalancer")
    {
        return;
    }
    for (index, allowed_use) in spec.allowed_uses.iter().enumerate() {
        if allowed_use != "LoadBalancer" {
            checker.fail(
                format!("spec.allowedUses[{index}]"),
                Some(allowed_use),
                "`LoadBalancer` cannot be combined with other uses",
            );
        }
    }
    for (path, mode) in [
        ("spec.ipipMode", &spec.ipip_mode),
        ("spec.vxlanMode", &spec.vxlan_mode),
    ] {
        if matches!(mode.as_deref(), Some("Always" | "CrossSubnet")) {
            checker.fail(
                path,
                mode.as_deref(),
                "encapsulation cannot be enabled on a `LoadBalancer` pool",
            );
        }
    }
    if spec.disable_bgp_export {
        checker.fail(
            "spec.disableBGPExport",
            Some("true"),
            "a `LoadBalancer` pool must be exported over BGP (leave `disableBGPExport` false)",
        );
    }
    if spec.node_selector.as_deref() != Some("all()") {
        checker.fail(
            "spec.nodeSelector",
            spec.node_selector.as_deref(),
            "a `LoadBalancer` pool must have node selector `all()`",
        );
    }
}

pub(super) fn ip_reservation(checker: &mut Checker, spec: &mut IpReservationSpec) {
    for (index, cidr) in spec.reserved_cidrs.iter().enumerate() {
        checker.address_or_cidr(&format!("spec.reservedCIDRs[{index}]"), cidr, Family::Any);
    }
}

/// The label upstream reserves on network sets (it carries the namespace in the dataplane).
const RESERVED_NETWORK_SET_LABEL: &str = "projectcalico.org/namespace";

pub(super) fn network_set(checker: &mut Checker, spec: &mut NetworkSetSpec, metadata: &ObjectMeta) {
    for (index, net) in spec.nets.iter().enumerate() {
        checker.address_or_cidr(&format!("spec.nets[{index}]"), net, Family::Any);
    }
    if metadata.labels.contains_key(RESERVED_NETWORK_SET_LABEL) {
        checker.fail(
            format!("metadata.labels[{RESERVED_NETWORK_SET_LABEL}]"),
            None,
            format!(
                "`{RESERVED_NETWORK_SET_LABEL}` is reserved and cannot be set on a network set"
            ),
        );
    }
}
