//! The rules of policies and profiles (upstream `validateRule`, `validateEntityRule`): actions,
//! protocols, ports (named ports without a protocol from v3.32), ICMP, nets, HTTP and service
//! matches, and the GlobalNetworkPolicy-only positions of service account and namespace
//! selectors. Which resource the rules belong to is the caller's ([`RuleOwner`]).

use std::collections::BTreeSet;

use super::syntax::Cidr;
use super::{Checker, Family, SelectorContext};
use crate::resource::spec::numorstring::{
    NumberOrString, PortMeaning, Protocol, check_protocol, parse_port, protocol_supports_ports,
};
use crate::resource::spec::rule::{EntityRule, HttpMatch, IcmpFields, Rule};

/// Which resource a set of rules belongs to; services matches need a namespace in a GNP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RuleOwner {
    NetworkPolicy,
    GlobalNetworkPolicy,
    Profile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Ingress,
    Egress,
}

pub(super) fn rules(checker: &mut Checker, ingress: &[Rule], egress: &[Rule], owner: RuleOwner) {
    for (index, ingress_rule) in ingress.iter().enumerate() {
        rule(
            checker,
            &format!("spec.ingress[{index}]"),
            ingress_rule,
            Direction::Ingress,
            owner,
        );
    }
    for (index, egress_rule) in egress.iter().enumerate() {
        rule(
            checker,
            &format!("spec.egress[{index}]"),
            egress_rule,
            Direction::Egress,
            owner,
        );
    }
}

/// Which ICMP family a protocol is, if any.
fn icmp_family(protocol: &Protocol) -> Option<Family> {
    match protocol {
        NumberOrString::Number(1) => Some(Family::V4),
        NumberOrString::Number(58) => Some(Family::V6),
        NumberOrString::Text(text) => match text.as_str() {
            "ICMP" | "1" => Some(Family::V4),
            "ICMPv6" | "58" => Some(Family::V6),
            _ => None,
        },
        NumberOrString::Number(_) => None,
    }
}

fn rule(checker: &mut Checker, path: &str, rule: &Rule, direction: Direction, owner: RuleOwner) {
    if rule.action.is_empty() {
        checker.fail(
            format!("{path}.action"),
            None,
            "action is required: `Allow`, `Deny`, `Log` or `Pass`",
        );
    } else {
        checker.one_of_field(&format!("{path}.action"), Some(&rule.action));
    }
    if let Some(version) = rule.ip_version {
        if version != 4 && version != 6 {
            checker.fail(
                format!("{path}.ipVersion"),
                Some(&version.to_string()),
                "ipVersion must be 4 or 6",
            );
        }
    }
    for (field, protocol) in [
        ("protocol", &rule.protocol),
        ("notProtocol", &rule.not_protocol),
    ] {
        if let Some(protocol) = protocol {
            if let Err(reason) = check_protocol(protocol) {
                checker.fail(
                    format!("{path}.{field}"),
                    Some(&protocol.to_string()),
                    reason,
                );
            }
        }
    }
    let icmp_protocol = rule.protocol.as_ref().and_then(icmp_family);
    // Upstream checks the ICMP family against ipVersion for `notProtocol` too.
    let icmp_family_named = icmp_protocol.or(rule.not_protocol.as_ref().and_then(icmp_family));
    match (icmp_family_named, rule.ip_version) {
        (Some(Family::V4), Some(6)) => checker.fail(
            format!("{path}.ipVersion"),
            Some("6"),
            "protocol `ICMP` requires ipVersion 4 (use `ICMPv6` for IPv6)",
        ),
        (Some(Family::V6), Some(4)) => checker.fail(
            format!("{path}.ipVersion"),
            Some("4"),
            "protocol `ICMPv6` requires ipVersion 6 (use `ICMP` for IPv4)",
        ),
        _ => {}
    }
    for (field, icmp) in [("icmp", &rule.icmp), ("notICMP", &rule.not_icmp)] {
        if let Some(icmp) = icmp {
            icmp_fields(checker, &format!("{path}.{field}"), icmp, icmp_protocol);
        }
    }

    let protocol_has_ports = rule.protocol.as_ref().is_some_and(protocol_supports_ports);
    let mut families = BTreeSet::new();
    for (side, entity) in [("source", &rule.source), ("destination", &rule.destination)] {
        let Some(entity) = entity else { continue };
        let entity_path = format!("{path}.{side}");
        entity_rule(checker, &entity_path, entity, side, direction, owner);
        for (field, ports) in [("ports", &entity.ports), ("notPorts", &entity.not_ports)] {
            if ports.is_empty() || protocol_has_ports {
                continue;
            }
            // v3.32 lets named ports go without a protocol (each name says its own).
            if rule.protocol.is_none() && checker.has(3, 32, 0) {
                let all_named = ports
                    .iter()
                    .all(|port| matches!(parse_port(port), Ok(PortMeaning::Named(_))));
                if !all_named {
                    checker.fail(
                        format!("{entity_path}.{field}"),
                        None,
                        "rules with a numeric port or port range must set protocol to `TCP`, `UDP` or `SCTP`",
                    );
                }
                continue;
            }
            checker.fail(
                format!("{entity_path}.{field}"),
                None,
                "rules that specify ports must set protocol to `TCP`, `UDP` or `SCTP`",
            );
        }
        for (field, nets) in [("nets", &entity.nets), ("notNets", &entity.not_nets)] {
            for (index, net) in nets.iter().enumerate() {
                let Some(cidr) = Cidr::parse(net) else {
                    continue;
                };
                families.insert(cidr.is_ipv4());
                let version_matches = match rule.ip_version {
                    Some(4) => cidr.is_ipv4(),
                    Some(6) => !cidr.is_ipv4(),
                    _ => true,
                };
                if !version_matches {
                    checker.fail(
                        format!("{entity_path}.{field}[{index}]"),
                        Some(net),
                        format!(
                            "CIDR family does not match the rule's ipVersion {}",
                            rule.ip_version.unwrap_or_default()
                        ),
                    );
                }
            }
        }
    }
    if families.len() > 1 {
        checker.fail(path, None, "rule contains both IPv4 and IPv6 CIDRs");
    }
    if let Some(http) = &rule.http {
        http_match(checker, path, http, rule, direction);
    }
    if let Some(metadata) = &rule.metadata {
        super::annotations(
            checker,
            &format!("{path}.metadata.annotations"),
            &metadata.annotations,
        );
    }
}

fn icmp_fields(checker: &mut Checker, path: &str, icmp: &IcmpFields, protocol: Option<Family>) {
    if protocol.is_none() {
        checker.fail(
            path,
            None,
            "rules that specify ICMP fields must set protocol to `ICMP` or `ICMPv6`",
        );
    }
    checker.in_range(&format!("{path}.type"), icmp.icmp_type, 0, 254);
    checker.in_range(&format!("{path}.code"), icmp.code, 0, 255);
    if let (Some(code), None) = (icmp.code, icmp.icmp_type) {
        checker.fail(
            format!("{path}.code"),
            Some(&code.to_string()),
            "ICMP code requires the ICMP type to be set",
        );
    }
}

/// A rule's `nets`/`notNets` entry: upstream parses these as CIDRs (a prefix length is required) and
/// requires them strictly masked.
fn rule_net(checker: &mut Checker, path: &str, value: &str) -> Option<Cidr> {
    match Cidr::parse(value) {
        None => {
            checker.fail(
                path,
                Some(value),
                "must be a CIDR with a prefix length, e.g. `10.0.0.0/8` or `10.0.0.1/32`",
            );
            None
        }
        Some(cidr) => checker.strictly_masked(path, value, cidr),
    }
}

fn entity_rule(
    checker: &mut Checker,
    path: &str,
    entity: &EntityRule,
    side: &str,
    direction: Direction,
    owner: RuleOwner,
) {
    for (index, net) in entity.nets.iter().enumerate() {
        rule_net(checker, &format!("{path}.nets[{index}]"), net);
    }
    for (index, net) in entity.not_nets.iter().enumerate() {
        let net_path = format!("{path}.notNets[{index}]");
        if let Some(cidr) = rule_net(checker, &net_path, net) {
            if cidr.is_catch_all() {
                checker.fail(
                    net_path,
                    Some(net),
                    "a catch-all CIDR cannot be negated (the rule would never match)",
                );
            }
        }
    }
    checker.selector(
        &format!("{path}.selector"),
        entity.selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.selector(
        &format!("{path}.notSelector"),
        entity.not_selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.selector(
        &format!("{path}.namespaceSelector"),
        entity.namespace_selector.as_ref(),
        SelectorContext::EntityRuleNamespace,
    );
    for (field, ports) in [("ports", &entity.ports), ("notPorts", &entity.not_ports)] {
        for (index, port) in ports.iter().enumerate() {
            if let Err(reason) = parse_port(port) {
                checker.fail(
                    format!("{path}.{field}[{index}]"),
                    Some(&port.to_string()),
                    reason,
                );
            }
        }
    }
    if let Some(accounts) = &entity.service_accounts {
        for (index, name) in accounts.names.iter().enumerate() {
            checker.name(&format!("{path}.serviceAccounts.names[{index}]"), name);
        }
        checker.selector(
            &format!("{path}.serviceAccounts.selector"),
            accounts.selector.as_ref(),
            SelectorContext::Plain,
        );
    }
    let Some(services) = &entity.services else {
        return;
    };
    let services_path = format!("{path}.services");
    match (side, direction) {
        ("destination", Direction::Ingress) => checker.fail(
            &services_path,
            None,
            "a destination services match is only allowed in egress rules",
        ),
        ("source", Direction::Egress) => checker.fail(
            &services_path,
            None,
            "a source services match is only allowed in ingress rules",
        ),
        _ => {}
    }
    if services.name.is_empty() {
        checker.fail(
            format!("{services_path}.name"),
            None,
            "a services match must name the service",
        );
    } else {
        checker.name(&format!("{services_path}.name"), &services.name);
    }
    let position_allowed = matches!(
        (side, direction),
        ("destination", Direction::Egress) | ("source", Direction::Ingress)
    );
    if services.namespace.is_empty() {
        if owner == RuleOwner::GlobalNetworkPolicy && position_allowed {
            checker.fail(
                format!("{services_path}.namespace"),
                None,
                "must specify a namespace for a services match in a GlobalNetworkPolicy",
            );
        }
    } else {
        checker.name(&format!("{services_path}.namespace"), &services.namespace);
    }
    let combined: Vec<&str> = [
        ("selector", entity.selector.is_some()),
        ("notSelector", entity.not_selector.is_some()),
        ("namespaceSelector", entity.namespace_selector.is_some()),
        ("serviceAccounts", entity.service_accounts.is_some()),
        ("nets", !entity.nets.is_empty()),
        ("notNets", !entity.not_nets.is_empty()),
    ]
    .into_iter()
    .filter_map(|(field, present)| present.then_some(field))
    .collect();
    if !combined.is_empty() {
        checker.fail(
            &services_path,
            None,
            format!(
                "a services match cannot be combined with {}",
                super::quote_list(&combined)
            ),
        );
    }
    if side == "destination" && (!entity.ports.is_empty() || !entity.not_ports.is_empty()) {
        checker.fail(
            &services_path,
            None,
            "a destination services match cannot be combined with ports (the service's ports are used)",
        );
    }
}

fn http_match(
    checker: &mut Checker,
    path: &str,
    http: &HttpMatch,
    rule: &Rule,
    direction: Direction,
) {
    let http_path = format!("{path}.http");
    if rule.action != "Allow" {
        checker.fail(
            &http_path,
            None,
            "an HTTP match is only allowed in rules with action `Allow`",
        );
    }
    if direction == Direction::Egress {
        checker.fail(
            &http_path,
            None,
            "an HTTP match is not allowed in egress rules",
        );
    }
    if let Some(protocol) = &rule.protocol {
        let is_tcp = matches!(protocol, NumberOrString::Number(6))
            || matches!(protocol, NumberOrString::Text(text) if text == "TCP" || text == "6");
        if !is_tcp {
            checker.fail(
                format!("{path}.protocol"),
                Some(&protocol.to_string()),
                "rules with an HTTP match must use protocol `TCP`",
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (index, method) in http.methods.iter().enumerate() {
        let method_path = format!("{http_path}.methods[{index}]");
        if !seen.insert(method) {
            checker.fail(
                method_path,
                Some(method),
                "HTTP method listed more than once",
            );
        }
    }
    for (index, http_path_match) in http.paths.iter().enumerate() {
        let match_path = format!("{http_path}.paths[{index}]");
        match (&http_path_match.exact, &http_path_match.prefix) {
            (Some(_), Some(_)) | (None, None) => checker.fail(
                match_path,
                None,
                "exactly one of `exact` or `prefix` must be set",
            ),
            (Some(value), None) | (None, Some(value)) => {
                let field = if http_path_match.exact.is_some() {
                    "exact"
                } else {
                    "prefix"
                };
                if !value.starts_with('/') || value.contains(['?', '#', ' ']) {
                    checker.fail(
                        format!("{match_path}.{field}"),
                        Some(value),
                        "HTTP path must start with `/` and contain no `?`, `#` or space",
                    );
                }
            }
        }
    }
}
