//! Policies: NetworkPolicy, GlobalNetworkPolicy, their staged twins and Profile (upstream's policy
//! spec validators and `defaultPolicyTypesField`). A staged policy is validated by the very
//! function of the kind it stages ([`staged`]), after its `stagedAction`; a staged removal only by
//! the name rules.
//!
//! Covers name formats (the tier prefix rule of v3.29–v3.31, which v3.32 dropped), types
//! defaulting, the GlobalNetworkPolicy-only preDNAT/doNotTrack rules and staged actions; the rules
//! themselves are `rule.rs`'s, the staged Kubernetes policy `kubernetes_policy.rs`'s.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::rule::{RuleOwner, rules};
use super::{Checker, SelectorContext, syntax};
use crate::resource::ObjectMeta;
use crate::resource::spec::rule::Rule;
use crate::resource::spec::{
    GlobalNetworkPolicySpec, NetworkPolicySpec, ProfileSpec, StagedGlobalNetworkPolicySpec,
    StagedNetworkPolicySpec,
};

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

/// The name rules of a policy kind: a prefix reserved for the policies Kubernetes objects become,
/// and the kind's name pattern.
pub(super) struct PolicyNames {
    reserved_prefix: &'static str,
    reserved_for: &'static str,
    pattern: &'static LazyLock<Regex>,
}

const NETWORK_POLICY_NAMES: PolicyNames = PolicyNames {
    reserved_prefix: "knp.default.",
    reserved_for: "Kubernetes network policies",
    pattern: &NETWORK_POLICY_NAME,
};

const GLOBAL_NETWORK_POLICY_NAMES: PolicyNames = PolicyNames {
    reserved_prefix: "kanp.adminnetworkpolicy.",
    reserved_for: "Kubernetes admin network policies",
    pattern: &GLOBAL_NETWORK_POLICY_NAME,
};

/// The name rules both policy kinds share: the reserved prefix, the kind's name pattern, and the
/// tier prefix rules.
fn policy_name(checker: &mut Checker, name: &str, tier: Option<&str>, names: &PolicyNames) {
    if name.is_empty() {
        return;
    }
    let reserved_prefix = names.reserved_prefix;
    if name.starts_with(reserved_prefix) {
        checker.fail(
            "metadata.name",
            Some(name),
            format!(
                "names starting with `{reserved_prefix}` are reserved for {}",
                names.reserved_for
            ),
        );
    } else if name.len() > 253 || !names.pattern.is_match(name) {
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

/// The fields both policy kinds have, checked alike.
struct Common<'a> {
    types: &'a mut Vec<String>,
    ingress: &'a [Rule],
    egress: &'a [Rule],
    tier: Option<&'a String>,
    selectors: &'a [(&'static str, Option<&'a String>)],
    performance_hints: &'a [String],
}

/// The checks both policy kinds share, in upstream's order: types defaulted from the rules, the
/// name rules, the tier, the selectors, the types and the performance hints (the rules themselves
/// are checked by each kind, for its [`RuleOwner`]).
fn common(checker: &mut Checker, fields: Common<'_>, name: &str, names: &PolicyNames) {
    default_types(fields.types, fields.ingress, fields.egress);
    policy_name(checker, name, fields.tier.map(String::as_str), names);
    tier_field(checker, fields.tier);
    for &(path, selector) in fields.selectors {
        checker.selector(path, selector, SelectorContext::Plain);
    }
    types(checker, fields.types);
    performance_hints(checker, fields.performance_hints);
}

pub(super) fn network_policy(
    checker: &mut Checker,
    spec: &mut NetworkPolicySpec,
    metadata: &ObjectMeta,
) {
    let fields = Common {
        types: &mut spec.types,
        ingress: &spec.ingress,
        egress: &spec.egress,
        tier: spec.tier.as_ref(),
        selectors: &[
            ("spec.selector", spec.selector.as_ref()),
            (
                "spec.serviceAccountSelector",
                spec.service_account_selector.as_ref(),
            ),
        ],
        performance_hints: &spec.performance_hints,
    };
    common(checker, fields, &metadata.name, &NETWORK_POLICY_NAMES);
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
    let fields = Common {
        types: &mut spec.types,
        ingress: &spec.ingress,
        egress: &spec.egress,
        tier: spec.tier.as_ref(),
        selectors: &[
            ("spec.selector", spec.selector.as_ref()),
            (
                "spec.serviceAccountSelector",
                spec.service_account_selector.as_ref(),
            ),
            ("spec.namespaceSelector", spec.namespace_selector.as_ref()),
        ],
        performance_hints: &spec.performance_hints,
    };
    common(
        checker,
        fields,
        &metadata.name,
        &GLOBAL_NETWORK_POLICY_NAMES,
    );
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

/// A policy kind that has a staged twin: its validator and name rules, which the twin shares.
pub(super) trait Enforced: Default + Clone + PartialEq {
    const NAMES: PolicyNames;
    fn tier(&self) -> Option<&str>;
    fn without_tier(&self) -> Self;
    fn validate(checker: &mut Checker, spec: &mut Self, metadata: &ObjectMeta);
}

/// [`Enforced`] for a policy spec with a `tier` field: its name rules and validator.
macro_rules! enforced {
    ($spec:ty, $names:expr, $validate:path) => {
        impl Enforced for $spec {
            const NAMES: PolicyNames = $names;
            fn tier(&self) -> Option<&str> {
                self.tier.as_deref()
            }
            fn without_tier(&self) -> Self {
                Self {
                    tier: None,
                    ..self.clone()
                }
            }
            fn validate(checker: &mut Checker, spec: &mut Self, metadata: &ObjectMeta) {
                $validate(checker, spec, metadata);
            }
        }
    };
}

enforced!(NetworkPolicySpec, NETWORK_POLICY_NAMES, network_policy);
enforced!(
    GlobalNetworkPolicySpec,
    GLOBAL_NETWORK_POLICY_NAMES,
    global_network_policy
);

/// A staged policy: its staged action and the spec of the kind it stages.
pub(super) trait Staged: Default {
    type Enforced: Enforced;
    fn split(self) -> (Option<String>, Self::Enforced);
    fn join(action: Option<String>, enforced: Self::Enforced) -> Self;
}

impl Staged for StagedNetworkPolicySpec {
    type Enforced = NetworkPolicySpec;
    fn split(self) -> (Option<String>, NetworkPolicySpec) {
        StagedNetworkPolicySpec::split(self)
    }
    fn join(action: Option<String>, enforced: NetworkPolicySpec) -> Self {
        StagedNetworkPolicySpec::join(action, enforced)
    }
}

impl Staged for StagedGlobalNetworkPolicySpec {
    type Enforced = GlobalNetworkPolicySpec;
    fn split(self) -> (Option<String>, GlobalNetworkPolicySpec) {
        StagedGlobalNetworkPolicySpec::split(self)
    }
    fn join(action: Option<String>, enforced: GlobalNetworkPolicySpec) -> Self {
        StagedGlobalNetworkPolicySpec::join(action, enforced)
    }
}

/// A staged action, when one is written; whether it stages a removal.
pub(super) fn staged_action(checker: &mut Checker, action: Option<&String>) -> bool {
    checker.one_of_field("spec.stagedAction", action);
    action.is_some_and(|action| action == "Delete")
}

/// A staged (global) network policy: the staged action, then the kind it stages validated by that
/// kind's own function; a staged removal names the policy and nothing else but its tier.
pub(super) fn staged<S: Staged>(checker: &mut Checker, spec: &mut S, metadata: &ObjectMeta) {
    let (action, mut enforced) = std::mem::take(spec).split();
    if staged_action(checker, action.as_ref()) {
        if enforced.without_tier() != S::Enforced::default() {
            checker.fail(
                "spec",
                None,
                "with `stagedAction: Delete` every spec field except `tier` must be empty",
            );
        }
        policy_name(
            checker,
            &metadata.name,
            enforced.tier(),
            &S::Enforced::NAMES,
        );
    } else {
        S::Enforced::validate(checker, &mut enforced, metadata);
    }
    *spec = S::join(action, enforced);
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
