//! Policies and their rules: NetworkPolicy, GlobalNetworkPolicy, their staged forms, the staged
//! Kubernetes policy and Profile (upstream `validateRule`, `validateEntityRule`, the policy spec
//! validators and `defaultPolicyTypesField`).
//!
//! Covers name formats (the tier prefix rule of v3.29–v3.31, which v3.32 dropped), types
//! defaulting, rule actions, protocols, ports (named ports without a protocol from v3.32), ICMP,
//! nets, HTTP and service matches, the GNP-only preDNAT/doNotTrack rules and staged actions.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::syntax::{self, Cidr};
use super::{Checker, Family, SelectorContext};
use crate::resource::ObjectMeta;
use crate::resource::spec::numorstring::PortMeaning;
use crate::resource::spec::numorstring::{
    NumberOrString, Protocol, check_protocol, parse_port, protocol_supports_ports,
};
use crate::resource::spec::policy::{KubernetesPolicyPeer, KubernetesPolicyPort, LabelSelector};
use crate::resource::spec::rule::{EntityRule, HttpMatch, IcmpFields, Rule};
use crate::resource::spec::{
    GlobalNetworkPolicySpec, NetworkPolicySpec, ProfileSpec, StagedGlobalNetworkPolicySpec,
    StagedKubernetesNetworkPolicySpec, StagedNetworkPolicySpec,
};

/// What a staged policy does: `Set` (the default) stages the policy, `Delete` stages its removal.
const STAGED_ACTIONS: [&str; 4] = ["Set", "Delete", "Learn", "Ignore"];

const LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const SUBDOMAIN: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

static NETWORK_POLICY_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^({LABEL}(\.{LABEL})?|(knp|ossg)\.default\.{SUBDOMAIN})$"
    ))
    .expect("the network policy name pattern is a valid regex")
});
static GLOBAL_NETWORK_POLICY_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^({LABEL}\.)?{LABEL}$"))
        .expect("the global network policy name pattern is a valid regex")
});

/// Which resource a set of rules belongs to; services matches need a namespace in a GNP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RuleOwner {
    NetworkPolicy,
    GlobalNetworkPolicy,
    Profile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Ingress,
    Egress,
}

/// The name rules both policy kinds share: a prefix reserved for the Kubernetes-derived policies, the
/// kind's name pattern, and the tier prefix rules.
fn policy_name(
    checker: &mut Checker,
    name: &str,
    tier: Option<&str>,
    (reserved_prefix, reserved_for): (&str, &str),
    pattern: &Regex,
) {
    if name.is_empty() {
        return;
    }
    if name.starts_with(reserved_prefix) {
        checker.fail(
            "metadata.name",
            Some(name),
            format!("names starting with `{reserved_prefix}` are reserved for {reserved_for}"),
        );
    } else if name.len() > 253 || !pattern.is_match(name) {
        checker.fail(
            "metadata.name",
            Some(name),
            "name must be a DNS label (lower case alphanumerics or `-`), optionally prefixed by its \
             tier and a dot",
        );
    } else if checker.has(3, 29, 0) && !checker.has(3, 32, 0) {
        // The tier prefix rule came with tiers (v3.29); v3.32 names policies freely.
        tiered_name(checker, name, tier);
    }
}

pub(super) fn network_policy(
    checker: &mut Checker,
    spec: &mut NetworkPolicySpec,
    metadata: &ObjectMeta,
) {
    default_types(&mut spec.types, &spec.ingress, &spec.egress);
    policy_name(
        checker,
        &metadata.name,
        spec.tier.as_deref(),
        ("knp.default.", "Kubernetes network policies"),
        &NETWORK_POLICY_NAME,
    );
    tier_field(checker, spec.tier.as_ref());
    checker.selector(
        "spec.selector",
        spec.selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.selector(
        "spec.serviceAccountSelector",
        spec.service_account_selector.as_ref(),
        SelectorContext::Plain,
    );
    types(checker, &spec.types);
    performance_hints(checker, &spec.performance_hints);
    rules(
        checker,
        &spec.ingress,
        &spec.egress,
        RuleOwner::NetworkPolicy,
    );
}

pub(super) fn global_network_policy(
    checker: &mut Checker,
    spec: &mut GlobalNetworkPolicySpec,
    metadata: &ObjectMeta,
) {
    // The preDNAT checks look at the types as written, before defaulting fills them in.
    let egress_type_written = spec.types.iter().any(|value| value == "Egress");
    default_types(&mut spec.types, &spec.ingress, &spec.egress);
    policy_name(
        checker,
        &metadata.name,
        spec.tier.as_deref(),
        (
            "kanp.adminnetworkpolicy.",
            "Kubernetes admin network policies",
        ),
        &GLOBAL_NETWORK_POLICY_NAME,
    );
    tier_field(checker, spec.tier.as_ref());
    checker.selector(
        "spec.selector",
        spec.selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.selector(
        "spec.serviceAccountSelector",
        spec.service_account_selector.as_ref(),
        SelectorContext::Plain,
    );
    checker.selector(
        "spec.namespaceSelector",
        spec.namespace_selector.as_ref(),
        SelectorContext::Plain,
    );
    types(checker, &spec.types);
    performance_hints(checker, &spec.performance_hints);
    if spec.pre_dnat && spec.do_not_track {
        checker.fail(
            "spec.preDNAT",
            Some("true"),
            "preDNAT and doNotTrack cannot both be true",
        );
    }
    if spec.pre_dnat && !spec.egress.is_empty() {
        checker.fail(
            "spec.egress",
            None,
            "a preDNAT policy cannot have egress rules",
        );
    }
    if spec.pre_dnat && egress_type_written {
        checker.fail(
            "spec.types",
            None,
            "a preDNAT policy cannot have the `Egress` type",
        );
    }
    if (spec.pre_dnat || spec.do_not_track) && !spec.apply_on_forward {
        checker.fail(
            "spec.applyOnForward",
            Some("false"),
            "applyOnForward must be true when preDNAT or doNotTrack is set",
        );
    }
    rules(
        checker,
        &spec.ingress,
        &spec.egress,
        RuleOwner::GlobalNetworkPolicy,
    );
}

/// A staged action, when one is written.
fn staged_action(checker: &mut Checker, action: Option<&String>) -> bool {
    checker.one_of("spec.stagedAction", action, &STAGED_ACTIONS);
    action.is_some_and(|action| action == "Delete")
}

pub(super) fn staged_network_policy(
    checker: &mut Checker,
    spec: &mut StagedNetworkPolicySpec,
    metadata: &ObjectMeta,
) {
    let (action, mut enforced) = std::mem::take(spec).split();
    if staged_action(checker, action.as_ref()) {
        // Staging a removal: the policy is named, nothing else but its tier.
        let mut rest = enforced.clone();
        rest.tier = None;
        if rest != NetworkPolicySpec::default() {
            checker.fail(
                "spec",
                None,
                "with `stagedAction: Delete` every spec field except `tier` must be empty",
            );
        }
        policy_name(
            checker,
            &metadata.name,
            enforced.tier.as_deref(),
            ("knp.default.", "Kubernetes network policies"),
            &NETWORK_POLICY_NAME,
        );
    } else {
        network_policy(checker, &mut enforced, metadata);
    }
    *spec = StagedNetworkPolicySpec::join(action, enforced);
}

pub(super) fn staged_global_network_policy(
    checker: &mut Checker,
    spec: &mut StagedGlobalNetworkPolicySpec,
    metadata: &ObjectMeta,
) {
    let (action, mut enforced) = std::mem::take(spec).split();
    if staged_action(checker, action.as_ref()) {
        let mut rest = enforced.clone();
        rest.tier = None;
        if rest != GlobalNetworkPolicySpec::default() {
            checker.fail(
                "spec",
                None,
                "with `stagedAction: Delete` every spec field except `tier` must be empty",
            );
        }
        policy_name(
            checker,
            &metadata.name,
            enforced.tier.as_deref(),
            (
                "kanp.adminnetworkpolicy.",
                "Kubernetes admin network policies",
            ),
            &GLOBAL_NETWORK_POLICY_NAME,
        );
    } else {
        global_network_policy(checker, &mut enforced, metadata);
    }
    *spec = StagedGlobalNetworkPolicySpec::join(action, enforced);
}

/// A staged Kubernetes network policy: the Kubernetes NetworkPolicy rules (label selectors, ports,
/// address blocks), or nothing at all when it stages a removal.
pub(super) fn staged_kubernetes_network_policy(
    checker: &mut Checker,
    spec: &mut StagedKubernetesNetworkPolicySpec,
) {
    if staged_action(checker, spec.staged_action.as_ref()) {
        let rest = StagedKubernetesNetworkPolicySpec {
            staged_action: None,
            ..spec.clone()
        };
        if rest != StagedKubernetesNetworkPolicySpec::default() {
            checker.fail(
                "spec",
                None,
                "with `stagedAction: Delete` every other spec field must be empty",
            );
        }
        return;
    }
    if let Some(selector) = &spec.pod_selector {
        label_selector(checker, "spec.podSelector", selector);
    }
    for (index, value) in spec.policy_types.iter().enumerate() {
        if value != "Ingress" && value != "Egress" {
            checker.fail(
                format!("spec.policyTypes[{index}]"),
                Some(value),
                "policy type must be `Ingress` or `Egress`",
            );
        }
    }
    for (index, rule) in spec.ingress.iter().enumerate() {
        let path = format!("spec.ingress[{index}]");
        kubernetes_ports(checker, &path, &rule.ports);
        kubernetes_peers(checker, &format!("{path}.from"), &rule.from);
    }
    for (index, rule) in spec.egress.iter().enumerate() {
        let path = format!("spec.egress[{index}]");
        kubernetes_ports(checker, &path, &rule.ports);
        kubernetes_peers(checker, &format!("{path}.to"), &rule.to);
    }
}

fn label_selector(checker: &mut Checker, path: &str, selector: &LabelSelector) {
    checker.labels(&format!("{path}.matchLabels"), &selector.match_labels);
    for (index, requirement) in selector.match_expressions.iter().enumerate() {
        let at = format!("{path}.matchExpressions[{index}]");
        if let Err(reason) = syntax::check_qualified_name(&requirement.key) {
            checker.fail(format!("{at}.key"), Some(&requirement.key), reason);
        }
        match requirement.operator.as_str() {
            "In" | "NotIn" if requirement.values.is_empty() => checker.fail(
                format!("{at}.values"),
                None,
                format!(
                    "operator `{}` needs at least one value",
                    requirement.operator
                ),
            ),
            "Exists" | "DoesNotExist" if !requirement.values.is_empty() => checker.fail(
                format!("{at}.values"),
                None,
                format!("operator `{}` takes no values", requirement.operator),
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => checker.fail(
                format!("{at}.operator"),
                Some(other),
                "must be one of `In`, `NotIn`, `Exists` or `DoesNotExist`",
            ),
        }
    }
}

fn kubernetes_ports(checker: &mut Checker, path: &str, ports: &[KubernetesPolicyPort]) {
    for (index, port) in ports.iter().enumerate() {
        let at = format!("{path}.ports[{index}]");
        checker.one_of(
            &format!("{at}.protocol"),
            port.protocol.as_ref(),
            &["TCP", "UDP", "SCTP"],
        );
        if let Some(value) = &port.port {
            if let Err(reason) = parse_port(value) {
                checker.fail(format!("{at}.port"), Some(&value.to_string()), reason);
            }
        }
        match (&port.port, port.end_port) {
            (_, None) => {}
            (Some(NumberOrString::Number(start)), Some(end)) if end >= *start && end <= 65535 => {}
            (_, Some(end)) => checker.fail(
                format!("{at}.endPort"),
                Some(&end.to_string()),
                "endPort needs a numeric `port` and must be between it and 65535",
            ),
        }
    }
}

fn kubernetes_peers(checker: &mut Checker, path: &str, peers: &[KubernetesPolicyPeer]) {
    for (index, peer) in peers.iter().enumerate() {
        let at = format!("{path}[{index}]");
        for (field, selector) in [
            ("podSelector", &peer.pod_selector),
            ("namespaceSelector", &peer.namespace_selector),
        ] {
            if let Some(selector) = selector {
                label_selector(checker, &format!("{at}.{field}"), selector);
            }
        }
        if let Some(block) = &peer.ip_block {
            if peer.pod_selector.is_some() || peer.namespace_selector.is_some() {
                checker.fail(
                    format!("{at}.ipBlock"),
                    None,
                    "ipBlock cannot be combined with podSelector or namespaceSelector",
                );
            }
            let network = Cidr::parse(&block.cidr);
            if network.is_none() {
                checker.fail(
                    format!("{at}.ipBlock.cidr"),
                    Some(&block.cidr),
                    "must be a CIDR, e.g. `10.0.0.0/8`",
                );
            }
            for (position, except) in block.except.iter().enumerate() {
                if Cidr::parse(except).is_none() {
                    checker.fail(
                        format!("{at}.ipBlock.except[{position}]"),
                        Some(except),
                        "must be a CIDR, e.g. `10.1.0.0/16`",
                    );
                }
            }
        }
    }
}

pub(super) fn profile(checker: &mut Checker, spec: &mut ProfileSpec) {
    rules(checker, &spec.ingress, &spec.egress, RuleOwner::Profile);
    checker.labels("spec.labelsToApply", &spec.labels_to_apply);
}

/// Upstream's `defaultPolicyTypesField`: only egress rules give `[Egress]`, both kinds give
/// `[Ingress, Egress]`, anything else (including no rules at all) gives `[Ingress]`.
fn default_types(types: &mut Vec<String>, ingress: &[Rule], egress: &[Rule]) {
    if !types.is_empty() {
        return;
    }
    let defaulted: &[&str] = match (ingress.is_empty(), egress.is_empty()) {
        (_, true) => &["Ingress"],
        (true, false) => &["Egress"],
        (false, false) => &["Ingress", "Egress"],
    };
    *types = defaulted.iter().map(|value| value.to_string()).collect();
}

/// The v3.29 rule that a policy's name carries its tier: `name` or `default.name` in the default
/// tier, `<tier>.name` in any other.
fn tiered_name(checker: &mut Checker, name: &str, tier: Option<&str>) {
    if ["knp.", "ossg.", "kanp.", "kbanp."]
        .iter()
        .any(|prefix| name.starts_with(prefix))
    {
        return;
    }
    let tier = tier.filter(|tier| !tier.is_empty()).unwrap_or("default");
    let prefix = name.split_once('.').map(|(prefix, _)| prefix);
    let acceptable = match prefix {
        None => tier == "default",
        Some(prefix) => prefix == tier,
    };
    if !acceptable {
        let advice = if tier == "default" {
            "a policy in the default tier is named `<name>` or `default.<name>`".to_string()
        } else {
            format!("a policy in tier `{tier}` must be named `{tier}.<name>`")
        };
        checker.fail(
            "metadata.name",
            Some(name),
            format!("incorrectly formatted policy name: {advice}"),
        );
    }
}

fn tier_field(checker: &mut Checker, tier: Option<&String>) {
    if let Some(tier) = tier {
        if !syntax::is_dns_label(tier) {
            checker.fail(
                "spec.tier",
                Some(tier),
                "tier must be a DNS label (at most 63 lower case alphanumerics or `-`)",
            );
        }
    }
}

fn types(checker: &mut Checker, types: &[String]) {
    let mut seen = BTreeSet::new();
    for (index, value) in types.iter().enumerate() {
        let path = format!("spec.types[{index}]");
        if value != "Ingress" && value != "Egress" {
            checker.fail(path, Some(value), "type must be `Ingress` or `Egress`");
        } else if !seen.insert(value) {
            checker.fail(path, Some(value), "type specified more than once");
        }
    }
}

fn performance_hints(checker: &mut Checker, hints: &[String]) {
    let mut seen = BTreeSet::new();
    for (index, hint) in hints.iter().enumerate() {
        let path = format!("spec.performanceHints[{index}]");
        if hint != "AssumeNeededOnEveryNode" {
            checker.fail(path, Some(hint), "must be `AssumeNeededOnEveryNode`");
        } else if !seen.insert(hint) {
            checker.fail(path, Some(hint), "hint specified more than once");
        }
    }
}

fn rules(checker: &mut Checker, ingress: &[Rule], egress: &[Rule], owner: RuleOwner) {
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
        checker.one_of(
            &format!("{path}.action"),
            Some(&rule.action),
            &["Allow", "Deny", "Log", "Pass"],
        );
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
        Some(cidr) if !cidr.is_strictly_masked() => {
            checker.fail(
                path,
                Some(value),
                format!(
                    "CIDR is not strictly masked (did you mean `{}`?)",
                    cidr.network()
                ),
            );
            None
        }
        Some(cidr) => Some(cidr),
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
