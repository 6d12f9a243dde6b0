//! Configuration kinds besides FelixConfiguration (`felix.rs`): KubeControllersConfiguration, Tier
//! and ClusterInformation (upstream's validators and the clientv3 defaulting of
//! KubeControllersConfiguration and Tier, through v3.32).
//!
//! The allowed values are written on the spec types (`resource::spec`) and read from their schemas
//! (`field_rules.rs`); the rules that need code are here. Which line has a field or value is
//! `resource::availability`'s business.

use regex::Regex;

use super::{Checker, Family};
use crate::resource::ObjectMeta;
use crate::resource::spec::{KubeControllersConfigurationSpec, TierSpec};

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
    checker.one_of_field("spec.logSeverityScreen", spec.log_severity_screen.as_ref());
    checker.one_of_field("spec.healthChecks", spec.health_checks.as_ref());
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
        checker.one_of_field(
            "spec.controllers.node.syncLabels",
            node.sync_labels.as_ref(),
        );
        if let Some(host_endpoint) = &node.host_endpoint {
            checker.one_of_field(
                "spec.controllers.node.hostEndpoint.autoCreate",
                host_endpoint.auto_create.as_ref(),
            );
            checker.one_of_field(
                "spec.controllers.node.hostEndpoint.createDefaultHostEndpoint",
                host_endpoint.create_default_host_endpoint.as_ref(),
            );
            for (index, template) in host_endpoint.templates.iter().enumerate() {
                host_endpoint_template(
                    checker,
                    &format!("spec.controllers.node.hostEndpoint.templates[{index}]"),
                    template,
                );
            }
        }
    }
    if let Some(load_balancer) = &controllers.load_balancer {
        checker.one_of_field(
            "spec.controllers.loadBalancer.assignIPs",
            load_balancer.assign_ips.as_ref(),
        );
    }
    if let Some(migration) = &controllers.policy_migration {
        checker.one_of_field(
            "spec.controllers.policyMigration.enabled",
            migration.enabled.as_ref(),
        );
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
}

/// A template of automatic host endpoints (v3.30): a name, interfaces by CIDR (or by name pattern
/// from v3.31), labels and a node selector.
fn host_endpoint_template(
    checker: &mut Checker,
    path: &str,
    template: &crate::resource::spec::kube_controllers::HostEndpointTemplate,
) {
    if !template.generate_name.is_empty() {
        checker.name(&format!("{path}.generateName"), &template.generate_name);
    }
    for (index, cidr) in template.interface_cidrs.iter().enumerate() {
        checker.address_or_cidr(
            &format!("{path}.interfaceCIDRs[{index}]"),
            cidr,
            Family::Any,
        );
    }
    if let Some(pattern) = &template.interface_pattern {
        if Regex::new(pattern).is_err() {
            checker.fail(
                format!("{path}.interfacePattern"),
                Some(pattern),
                "must be a valid regular expression",
            );
        }
    }
    if template.interface_cidrs.is_empty() && template.interface_pattern.is_none() {
        checker.fail(
            path,
            None,
            "a template needs `interfaceCIDRs` or `interfacePattern`",
        );
    }
    checker.labels(&format!("{path}.labels"), &template.labels);
    checker.selector(
        &format!("{path}.nodeSelector"),
        template.node_selector.as_ref(),
        super::SelectorContext::Plain,
    );
}

/// The order of the `default` tier, which is also the default order of any tier.
const DEFAULT_TIER_ORDER: f64 = 1_000_000.0;
/// The fixed order of the tier that holds Kubernetes admin network policies.
const ADMIN_NETWORK_POLICY_TIER_ORDER: f64 = 1_000.0;

/// The fixed order of v3.32's `kube-baseline` tier.
const KUBE_BASELINE_TIER_ORDER: f64 = 10_000_000.0;

pub(super) fn tier(checker: &mut Checker, spec: &mut TierSpec, metadata: &ObjectMeta) {
    let name = metadata.name.as_str();
    // v3.32 replaced the admin network policy tiers by `kube-admin` and `kube-baseline`.
    let fixed_order = match name {
        "default" => Some(DEFAULT_TIER_ORDER),
        "adminnetworkpolicy" if !checker.has(3, 32, 0) => Some(ADMIN_NETWORK_POLICY_TIER_ORDER),
        "kube-admin" if checker.has(3, 32, 0) => Some(ADMIN_NETWORK_POLICY_TIER_ORDER),
        "kube-baseline" if checker.has(3, 32, 0) => Some(KUBE_BASELINE_TIER_ORDER),
        _ => None,
    };
    if spec.order.is_none() {
        // Upstream defaults every tier to the default tier's order, including `adminnetworkpolicy`
        // (which then fails the fixed-order check below, as upstream).
        spec.order = Some(DEFAULT_TIER_ORDER);
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
    checker.one_of_field("spec.defaultAction", spec.default_action.as_ref());
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
