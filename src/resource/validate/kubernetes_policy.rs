//! StagedKubernetesNetworkPolicy: a Kubernetes NetworkPolicy staged (label selectors, ports,
//! address blocks), or nothing at all when it stages a removal.

use super::Checker;
use super::syntax::{self, Cidr};
use crate::resource::spec::StagedKubernetesNetworkPolicySpec;
use crate::resource::spec::numorstring::{NumberOrString, parse_port};
use crate::resource::spec::policy::{KubernetesPolicyPeer, KubernetesPolicyPort, LabelSelector};

/// A staged Kubernetes network policy: the Kubernetes NetworkPolicy rules (label selectors, ports,
/// address blocks), or nothing at all when it stages a removal.
pub(super) fn staged_kubernetes_network_policy(
    checker: &mut Checker,
    spec: &mut StagedKubernetesNetworkPolicySpec,
) {
    if super::policy::staged_action(checker, spec.staged_action.as_ref()) {
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
        checker.one_of_field(&format!("{at}.protocol"), port.protocol.as_ref());
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
