//! Client-side validation and defaulting of resources, as upstream does before a write, for the
//! release a command follows (the cluster's line; offline the newest netctl knows).
//!
//! [`validate_and_default_for`] refuses what the release lacks (a kind, field or value of a later
//! or an earlier line, `resource::availability`), decodes a resource's spec into its typed form
//! (strictly: unknown fields are errors), applies upstream's defaults, checks every rule that needs
//! nothing but the document itself — the rules that changed between lines as that release has them
//! — and writes the normalised spec back. All problems of a document are reported together, each
//! with the path of its field, so an operator can fix a file in one pass.
//!
//! Deliberately out of scope, because they need the datastore (the caller checks them where it has
//! one):
//! - IPPool: overlap with other pools' CIDRs; existing IPAM blocks in the range having the same block
//!   size; CIDR and block size unchanged on update (needs the stored pool).
//! - NetworkPolicy / GlobalNetworkPolicy: the tier in `spec.tier` existing.
//! - BGPPeer: every name in `spec.filters` existing as a BGPFilter.
//! - Profile: `projectcalico-default-allow` is reserved (the datastore answers "already exists").
//! - Tier: `default` and `adminnetworkpolicy` cannot be deleted, nor a tier that still has policies.
//! - Create versus update rules on `metadata.resourceVersion`, `uid` and `creationTimestamp`.
//! - Storage conventions applied on write: the `projectcalico.org/tier` label on policies of a
//!   non-default tier and the tier-prefixed stored policy name (upstream
//!   `libcalico-go/lib/names/policy.go`, `libcalico-go/lib/backend/etcdv3/etcdv3.go`).
//!
//! The namespace of a namespaced resource must be filled in (from `-n` or `default`) by the caller
//! before validation, as upstream calicoctl does; a missing one is an error here.

mod config;
mod felix;
pub(crate) mod field_rules;
mod ipam;
mod kubernetes_policy;
mod network;
mod node_status;
mod peering;
mod policy;
mod rule;
pub mod syntax;

use std::fmt;

use super::availability;
use super::selector::{GlobalUsage, Selector};
use super::spec::TypedSpec;
use super::{API_VERSION, Kind, ObjectMeta, Resource, ResourceKey};
use crate::release::{ApiRelease, Release};
use crate::yaml::Node;
use syntax::Cidr;

/// One problem with one field of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Where the field is, e.g. `spec.ingress[1].protocol` or `metadata.labels[app]`.
    pub path: String,
    /// The offending value as written, when there is one to show.
    pub value: Option<String>,
    /// What is wrong, and where possible what would be right.
    pub reason: String,
    /// The 1-based line the field was written on, when the document came from a file.
    pub line: Option<usize>,
}

/// Renders as `path = 'value': reason`, or `path: reason` when there is no value, after
/// `line N: ` when the line is known. A reason that names its own field first (`` `spec.x` needs
/// v3.30.2; … ``) is printed alone.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if self.value.is_none() && self.reason.starts_with(&format!("`{}`", self.path)) {
            return f.write_str(&self.reason);
        }
        match &self.value {
            Some(value) => write!(f, "{} = '{}': {}", self.path, value, self.reason),
            None => write!(f, "{}: {}", self.path, self.reason),
        }
    }
}

/// Every problem found in one resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    pub key: ResourceKey,
    pub errors: Vec<FieldError>,
}

/// Renders a header naming the resource, then one field error per line.
impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.errors.len() == 1 {
            "error"
        } else {
            "errors"
        };
        write!(f, "`{}` has {} {noun}:", self.key, self.errors.len())?;
        for error in &self.errors {
            write!(f, "\n  {error}")?;
        }
        Ok(())
    }
}

/// As [`validate_and_default_for`], for the newest release netctl knows (what offline commands
/// follow).
pub fn validate_and_default(resource: &mut Resource) -> Result<(), ValidationError> {
    validate_and_default_for(resource, &ApiRelease::newest())
}

/// Validates `resource` for `release` and, when it is valid, replaces its spec with the defaulted,
/// normalised typed spec. On error the resource is left as it was and every problem found is
/// returned.
pub fn validate_and_default_for(
    resource: &mut Resource,
    release: &ApiRelease,
) -> Result<(), ValidationError> {
    let spec = std::mem::take(&mut resource.spec);
    match check(resource, SpecSource::Value(&spec), release) {
        Ok(typed) => {
            resource.spec = typed.to_value();
            Ok(())
        }
        Err(error) => {
            resource.spec = spec;
            Err(error)
        }
    }
}

/// As [`validate_and_default_for`], for a resource whose spec is still the document's node (the
/// loader's): the spec is decoded straight from it into its typed form, then written to the
/// resource when it is valid.
pub(crate) fn validate_node_and_default(
    resource: &mut Resource,
    spec: Option<&Node<'_>>,
    release: &ApiRelease,
) -> Result<(), ValidationError> {
    let typed = check(resource, SpecSource::Node(spec), release)?;
    resource.spec = typed.to_value();
    Ok(())
}

/// As [`validate_node_and_default`], without writing the defaulted spec anywhere: for a command
/// that keeps nothing (`validate`).
pub(crate) fn validate_node(
    resource: &Resource,
    spec: Option<&Node<'_>>,
    release: &ApiRelease,
) -> Result<(), ValidationError> {
    check(resource, SpecSource::Node(spec), release).map(|_| ())
}

/// Where a spec being validated comes from.
#[derive(Clone, Copy)]
enum SpecSource<'a, 'text> {
    Value(&'a serde_json::Value),
    Node(Option<&'a Node<'text>>),
}

impl SpecSource<'_, '_> {
    /// The document as JSON (`{"spec": ...}`), for the walk of what the release lacks.
    fn document(self) -> serde_json::Value {
        let spec = match self {
            SpecSource::Value(spec) => spec.clone(),
            SpecSource::Node(spec) => spec.map(Node::to_value).unwrap_or_default(),
        };
        serde_json::json!({ "spec": spec })
    }

    fn decode(self, kind: Kind) -> Result<TypedSpec, super::spec::DecodeError> {
        match self {
            SpecSource::Value(spec) => TypedSpec::decode(kind, spec),
            SpecSource::Node(spec) => TypedSpec::decode_node(kind, spec),
        }
    }
}

/// Every check of one resource for `release`: the typed, defaulted spec when it is valid.
fn check(
    resource: &Resource,
    spec: SpecSource<'_, '_>,
    release: &ApiRelease,
) -> Result<TypedSpec, ValidationError> {
    let kind = resource.kind;
    let mut checker = Checker::new(release.release.clone(), kind);
    if let Some(refused) = availability::check_kind(kind, release) {
        return Err(ValidationError {
            key: resource.key(),
            errors: vec![refused],
        });
    }
    // The document is walked (as JSON) only when the release lacks something its kind's schema
    // names: most documents are checked for a release that has everything.
    if availability::is_walked(kind, release) {
        checker.refuse_absent(availability::check_document(
            kind,
            &spec.document(),
            release,
        ));
    }
    if resource.api_version != API_VERSION {
        checker.fail(
            "apiVersion",
            Some(&resource.api_version),
            format!("must be `{API_VERSION}`"),
        );
    }
    check_metadata(&mut checker, kind, &resource.metadata);
    let typed = match spec.decode(kind) {
        Err(error) => {
            checker.fail(error.path, None, error.reason);
            None
        }
        Ok(mut typed) => {
            default_and_check_spec(&mut checker, &mut typed, &resource.metadata);
            Some(typed)
        }
    };
    match typed {
        Some(typed) if checker.errors.is_empty() => Ok(typed),
        _ => Err(ValidationError {
            key: resource.key(),
            errors: checker.errors,
        }),
    }
}

fn default_and_check_spec(checker: &mut Checker, spec: &mut TypedSpec, metadata: &ObjectMeta) {
    match spec {
        TypedSpec::NetworkPolicy(spec) => policy::network_policy(checker, spec, metadata),
        TypedSpec::GlobalNetworkPolicy(spec) => {
            policy::global_network_policy(checker, spec, metadata)
        }
        TypedSpec::StagedNetworkPolicy(spec) => policy::staged(checker, spec, metadata),
        TypedSpec::StagedGlobalNetworkPolicy(spec) => policy::staged(checker, spec, metadata),
        TypedSpec::StagedKubernetesNetworkPolicy(spec) => {
            kubernetes_policy::staged_kubernetes_network_policy(checker, spec)
        }
        TypedSpec::Profile(spec) => policy::profile(checker, spec),
        TypedSpec::HostEndpoint(spec) => network::host_endpoint(checker, spec),
        TypedSpec::WorkloadEndpoint(spec) => network::workload_endpoint(checker, spec),
        TypedSpec::IpPool(spec) => network::ip_pool(checker, spec),
        TypedSpec::IpReservation(spec) => network::ip_reservation(checker, spec),
        TypedSpec::GlobalNetworkSet(spec) | TypedSpec::NetworkSet(spec) => {
            network::network_set(checker, spec, metadata)
        }
        TypedSpec::Node(spec) => peering::node(checker, spec),
        TypedSpec::BgpPeer(spec) => peering::bgp_peer(checker, spec),
        TypedSpec::CalicoNodeStatus(spec) => node_status::calico_node_status(checker, spec),
        TypedSpec::BgpFilter(spec) => peering::bgp_filter(checker, spec),
        TypedSpec::BgpConfiguration(spec) => peering::bgp_configuration(checker, spec, metadata),
        TypedSpec::FelixConfiguration(spec) => felix::felix_configuration(checker, spec),
        TypedSpec::KubeControllersConfiguration(spec) => {
            config::kube_controllers_configuration(checker, spec, metadata)
        }
        TypedSpec::Tier(spec) => config::tier(checker, spec, metadata),
        TypedSpec::ClusterInformation(_) => config::cluster_information(checker, metadata),
        TypedSpec::IpamConfiguration(spec) => ipam::ipam_configuration(checker, spec, metadata),
    }
}

/// The size limit of all annotations of one resource together, as Kubernetes.
const ANNOTATIONS_SIZE_LIMIT: usize = 256 * 1024;

fn check_metadata(checker: &mut Checker, kind: Kind, metadata: &ObjectMeta) {
    if metadata.name.is_empty() {
        checker.fail("metadata.name", None, "name is required");
    } else if !(kind.is_tiered_policy() || kind == Kind::Tier) {
        // Policies and tiers have their own name rules (see `policy.rs` and `config.rs`).
        checker.name("metadata.name", &metadata.name);
    }
    match (&metadata.namespace, kind.is_namespaced()) {
        (None, true) => checker.fail(
            "metadata.namespace",
            None,
            format!("namespace is required for the namespaced kind `{kind}`"),
        ),
        (Some(namespace), true) => {
            if !syntax::is_dns_label(namespace) {
                checker.fail(
                    "metadata.namespace",
                    Some(namespace),
                    "namespace must be a DNS label (at most 63 lower case alphanumerics or `-`)",
                );
            }
        }
        (Some(namespace), false) => checker.fail(
            "metadata.namespace",
            Some(namespace),
            format!("namespace must not be set: `{kind}` is not a namespaced kind"),
        ),
        (None, false) => {}
    }
    checker.labels("metadata.labels", &metadata.labels);
    annotations(checker, "metadata.annotations", &metadata.annotations);
}

/// Annotation keys are qualified names (checked lower-cased, as upstream) and all annotations
/// together stay within the size limit.
fn annotations(
    checker: &mut Checker,
    path: &str,
    annotations: &std::collections::BTreeMap<String, String>,
) {
    let mut annotations_size = 0;
    for (key, value) in annotations {
        annotations_size += key.len() + value.len();
        if let Err(reason) = syntax::check_qualified_name(&key.to_lowercase()) {
            checker.fail(
                format!("{path}[{key}]"),
                None,
                format!("invalid annotation key: {reason}"),
            );
        }
    }
    if annotations_size > ANNOTATIONS_SIZE_LIMIT {
        checker.fail(
            path,
            None,
            format!(
                "annotations are too large by {} bytes (at most {ANNOTATIONS_SIZE_LIMIT} in total)",
                annotations_size - ANNOTATIONS_SIZE_LIMIT
            ),
        );
    }
}

/// Where a selector appears, which decides whether `global()` may be used in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorContext {
    /// Any selector except an EntityRule's `namespaceSelector`: `global()` is not allowed.
    Plain,
    /// An EntityRule's `namespaceSelector`: `global()` is allowed, but only on its own.
    EntityRuleNamespace,
}

/// Checks one selector field; the single place selector syntax is checked.
pub fn check_selector(path: &str, text: &str, context: SelectorContext) -> Option<FieldError> {
    let error = |reason: String| FieldError {
        path: path.to_string(),
        value: Some(text.to_string()),
        reason,
        line: None,
    };
    let selector = match Selector::parse(text) {
        Ok(selector) => selector,
        Err(invalid) => {
            return Some(error(format!(
                "invalid selector: {} at column {}",
                invalid.kind(),
                invalid.column()
            )));
        }
    };
    match (context, selector.global_usage()) {
        (SelectorContext::Plain, GlobalUsage::Alone | GlobalUsage::Combined) => Some(error(
            "global() can only be used in an EntityRule namespaceSelector".to_string(),
        )),
        (SelectorContext::EntityRuleNamespace, GlobalUsage::Combined) => Some(error(
            "global() cannot be combined with other selectors".to_string(),
        )),
        _ => None,
    }
}

/// Which address family a field accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Any,
    V4,
    V6,
}

impl Family {
    fn accepts(self, is_ipv4: bool) -> bool {
        match self {
            Family::Any => true,
            Family::V4 => is_ipv4,
            Family::V6 => !is_ipv4,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Family::Any => "",
            Family::V4 => "IPv4 ",
            Family::V6 => "IPv6 ",
        }
    }
}

/// Collects field errors; the helpers check one field each. `release` is the release whose rules
/// apply where upstream changed a rule between lines.
#[derive(Debug)]
pub(crate) struct Checker {
    errors: Vec<FieldError>,
    release: Release,
    /// Fields and values already refused because the release lacks them: their other checks
    /// would only repeat the point.
    absent: Vec<String>,
    /// The values of the kind's fields that only some releases have (from the schema).
    value_rules: &'static [availability::ValueRule],
    /// The rules written on the kind's spec fields (allowed values, durations).
    field_rules: &'static field_rules::FieldRules,
}

impl Checker {
    pub(crate) fn new(release: Release, kind: Kind) -> Checker {
        Checker {
            errors: Vec::new(),
            release: release.code_line(),
            absent: Vec::new(),
            value_rules: availability::value_rules(kind),
            field_rules: field_rules::field_rules(kind),
        }
    }

    /// Records the refusals of what the release lacks.
    fn refuse_absent(&mut self, refusals: Vec<FieldError>) {
        self.absent
            .extend(refusals.iter().map(|refusal| refusal.path.clone()));
        self.errors.extend(refusals);
    }

    /// Whether the release the document is checked for is `since` or later.
    pub(crate) fn has(&self, major: u64, minor: u64, patch: u64) -> bool {
        self.release >= Release::new(major, minor, patch)
    }

    pub(crate) fn fail(
        &mut self,
        path: impl Into<String>,
        value: Option<&str>,
        reason: impl Into<String>,
    ) {
        self.errors.push(FieldError {
            path: path.into(),
            value: value.map(str::to_string),
            reason: reason.into(),
            line: None,
        });
    }

    /// A resource name (DNS-1123 subdomain).
    pub(crate) fn name(&mut self, path: &str, value: &str) {
        if let Err(reason) = syntax::check_subdomain(value) {
            self.fail(path, Some(value), reason);
        }
    }

    pub(crate) fn selector(
        &mut self,
        path: &str,
        value: Option<&String>,
        context: SelectorContext,
    ) {
        if let Some(error) = value.and_then(|text| check_selector(path, text, context)) {
            self.errors.push(error);
        }
    }

    pub(crate) fn labels(
        &mut self,
        path: &str,
        labels: &std::collections::BTreeMap<String, String>,
    ) {
        for (key, value) in labels {
            if let Err(reason) = syntax::check_qualified_name(key) {
                self.fail(
                    format!("{path}[{key}]"),
                    None,
                    format!("invalid label key: {reason}"),
                );
            }
            if let Err(reason) = syntax::check_label_value(value) {
                self.fail(format!("{path}[{key}]"), Some(value), reason);
            }
        }
    }

    /// One of a fixed set of values (case-sensitive). `allowed` is every line's set: a value the
    /// release lacks was refused already, and the message lists the values the release has.
    fn one_of(&mut self, path: &str, value: Option<&String>, allowed: &[&str]) {
        if self.absent.iter().any(|absent| absent == path) {
            return;
        }
        let has = |candidate: &&str| {
            self.value_rules
                .iter()
                .filter(|(value, _)| value == candidate)
                .all(|(_, rule)| rule.at(&self.release).is_ok())
        };
        let allowed: Vec<&str> = allowed.iter().copied().filter(has).collect();
        let allowed = allowed.as_slice();
        if let Some(value) = value {
            if !allowed.contains(&value.as_str()) {
                self.fail(
                    path,
                    Some(value),
                    format!("must be one of {}", quote_list(allowed)),
                );
            }
        }
    }

    /// One of the values the field's spec type allows (`field_rules`); an empty value passes when
    /// the field allows `""` (upstream's `omitempty`), and the message does not list it.
    pub(crate) fn one_of_field(&mut self, path: &str, value: Option<&String>) {
        let Some(allowed) = self.field_rules.allowed(path) else {
            debug_assert!(false, "`{path}` lists no allowed values on its spec type");
            return;
        };
        let unset_allowed = allowed.iter().any(String::is_empty);
        let value = value.filter(|value| !(unset_allowed && value.is_empty()));
        let listed: Vec<&str> = allowed
            .iter()
            .map(String::as_str)
            .filter(|allowed| !allowed.is_empty())
            .collect();
        self.one_of(path, value, &listed);
    }

    pub(crate) fn duration(&mut self, path: &str, value: Option<&String>) {
        if let Some(value) = value {
            if let Err(reason) = syntax::check_go_duration(value) {
                self.fail(path, Some(value), reason);
            }
        }
    }

    /// A number in an inclusive range.
    pub(crate) fn in_range(&mut self, path: &str, value: Option<i64>, minimum: i64, maximum: i64) {
        if let Some(value) = value {
            if value < minimum || value > maximum {
                self.fail(
                    path,
                    Some(&value.to_string()),
                    format!("must be between {minimum} and {maximum}"),
                );
            }
        }
    }

    /// An IP address (no prefix length).
    pub(crate) fn ip(&mut self, path: &str, value: &str, family: Family) -> Option<bool> {
        match value.parse::<std::net::IpAddr>() {
            Ok(address) if family.accepts(address.is_ipv4()) => Some(address.is_ipv4()),
            _ => {
                self.fail(
                    path,
                    Some(value),
                    format!("must be a valid {}address", family.describe()),
                );
                None
            }
        }
    }

    /// An address or a strictly masked network (upstream's `net`). Returns the parsed network.
    pub(crate) fn network(&mut self, path: &str, value: &str, family: Family) -> Option<Cidr> {
        let cidr = self.address_or_cidr(path, value, family)?;
        self.strictly_masked(path, value, cidr)
    }

    /// A network `value` parsed as `cidr` that must be strictly masked (no host bits set).
    pub(crate) fn strictly_masked(&mut self, path: &str, value: &str, cidr: Cidr) -> Option<Cidr> {
        if cidr.is_strictly_masked() {
            return Some(cidr);
        }
        self.fail(
            path,
            Some(value),
            format!(
                "CIDR is not strictly masked (did you mean `{}`?)",
                cidr.network()
            ),
        );
        None
    }

    /// An address or a network, not necessarily strictly masked. Returns the parsed network.
    pub(crate) fn address_or_cidr(
        &mut self,
        path: &str,
        value: &str,
        family: Family,
    ) -> Option<Cidr> {
        match Cidr::parse_address_or_cidr(value) {
            Some(cidr) if family.accepts(cidr.is_ipv4()) => Some(cidr),
            _ => {
                self.fail(
                    path,
                    Some(value),
                    format!("must be a valid {}address or CIDR", family.describe()),
                );
                None
            }
        }
    }
}

/// `` `A`, `B` or `C` `` for messages.
pub(crate) fn quote_list(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|value| format!("`{value}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
