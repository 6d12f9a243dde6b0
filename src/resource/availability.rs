//! Which releases have which kinds, fields and values — and the check of a document against the
//! release a command follows, so a field the cluster's line lacks is refused, never silently stored.
//!
//! There is one set of typed specs for every line v3.27 … v3.32. A field (or a value of a field)
//! added after v3.27.0, or removed since, carries the releases that have it as annotations in its
//! JSON Schema, written on the Rust field with `#[schemars(extend(...))]`:
//!
//! - `x-netctl-since: "v3.30.2"`: the first release with it (patch releases count: upstream added
//!   fields in patches);
//! - `x-netctl-until: "v3.32.0"`: the first release without it again (removed);
//! - `x-netctl-gaps: [["v3.31.0", "v3.31.4"]]`: releases in between without it (a field removed in
//!   one minor release and back in a later patch);
//! - `x-netctl-values: {"Trace": {"since": "v3.30.1"}}`: the same, per value of a string field (or
//!   of each item of a list of strings).
//!
//! A kind's own first release is [`Kind::since`]. The checked-in schemas (`schemas/`) carry these
//! annotations, and [`schema_for_release`] gives the schema of one release. This module reads only
//! schemas and documents; what the annotations say is upstream's (every tag's API types).

use serde_json::{Map, Value};

use super::kind::PerKind;
use super::{FieldError, Kind};
use crate::release::{ApiRelease, Release};

const SINCE: &str = "x-netctl-since";
const UNTIL: &str = "x-netctl-until";
const GAPS: &str = "x-netctl-gaps";
const VALUES: &str = "x-netctl-values";

/// The releases that have a kind, a field or a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Availability {
    pub since: Option<Release>,
    pub until: Option<Release>,
    /// Releases `[from, back)` without it, between `since` and `until`.
    pub gaps: Vec<(Release, Release)>,
}

/// Why a release lacks something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Absence {
    /// It came with a later release.
    NotYet { since: Release },
    /// It was removed in this release or an earlier one.
    Removed { until: Release },
    /// The release falls in a gap: removed in `from`, back in `back`.
    Gap { from: Release, back: Release },
}

impl Availability {
    /// The annotations of one schema object (a property's, or a value rule's `since`/`until`).
    fn read(object: &Map<String, Value>, since: &str, until: &str) -> Availability {
        let release = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_str)
                .and_then(|text| text.parse::<Release>().ok())
        };
        let gaps = object
            .get(GAPS)
            .and_then(Value::as_array)
            .map(|gaps| {
                gaps.iter()
                    .filter_map(|gap| {
                        let pair = gap.as_array()?;
                        let from = pair.first()?.as_str()?.parse().ok()?;
                        let back = pair.get(1)?.as_str()?.parse().ok()?;
                        Some((from, back))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Availability {
            since: release(since),
            until: release(until),
            gaps,
        }
    }

    /// The availability a field's schema states.
    pub fn of_field(schema: &Value) -> Availability {
        schema
            .as_object()
            .map(|object| Availability::read(object, SINCE, UNTIL))
            .unwrap_or_default()
    }

    /// Whether `release` has it (compared without pre-release parts: `v3.30.0-rc1` is the v3.30.0
    /// code line).
    pub fn at(&self, release: &Release) -> Result<(), Absence> {
        let release = release.code_line();
        if let Some(since) = &self.since
            && release < *since
        {
            return Err(Absence::NotYet {
                since: since.clone(),
            });
        }
        if let Some(until) = &self.until
            && release >= *until
        {
            return Err(Absence::Removed {
                until: until.clone(),
            });
        }
        for (from, back) in &self.gaps {
            if release >= *from && release < *back {
                return Err(Absence::Gap {
                    from: from.clone(),
                    back: back.clone(),
                });
            }
        }
        Ok(())
    }
}

impl Absence {
    /// `` `spec.nextHopMode` needs v3.30.2; the cluster runs v3.29.4 ``.
    pub fn message(&self, subject: &str, api: &ApiRelease) -> String {
        let context = api.describe();
        match self {
            Absence::NotYet { since } => format!("{subject} needs {since}; {context}"),
            Absence::Removed { until } => {
                format!("{subject} was removed in {until}; {context}")
            }
            Absence::Gap { from, back } => {
                let lacking = match back.0.patch {
                    patch if patch > 0 && back.same_line(from) && patch - 1 > from.0.patch => {
                        format!(
                            "{from} to {} lack it",
                            Release::new(back.0.major, back.0.minor, patch - 1)
                        )
                    }
                    _ => format!("{from} lacks it"),
                };
                format!("{subject} needs {back} ({lacking}); {context}")
            }
        }
    }
}

/// The refusal of a kind the release does not have, if it does not.
pub fn check_kind(kind: Kind, api: &ApiRelease) -> Option<FieldError> {
    let availability = Availability {
        since: kind.since(),
        ..Availability::default()
    };
    let absence = availability.at(&api.release).err()?;
    Some(FieldError {
        path: "kind".to_string(),
        value: None,
        reason: absence.message(&format!("`{kind}`"), api),
        line: None,
    })
}

/// Every field and value of `document` (a whole resource document of `kind`) that the release
/// lacks, each with its path (`spec.nextHopMode`, `spec.allowedUses[0]`).
pub fn check_document(kind: Kind, document: &Value, api: &ApiRelease) -> Vec<FieldError> {
    if !is_walked(kind, api) {
        return Vec::new();
    }
    let schema = schema_of(kind);
    let walker = Walker {
        definitions: schema.get("$defs").and_then(Value::as_object),
        api,
    };
    let mut errors = Vec::new();
    let mut path = String::new();
    walker.walk(schema, document, &mut path, &mut errors);
    errors
}

/// Whether a document of `kind` can lack anything at the release: most documents are checked for
/// a release that has everything their kind's schema names, and then no walk can find anything
/// (the walk was a tenth of `validate`).
pub fn is_walked(kind: Kind, api: &ApiRelease) -> bool {
    !annotations_of(kind)
        .iter()
        .all(|availability| availability.at(&api.release).is_ok())
}

/// One value of a string field and the releases that have it.
pub type ValueRule = (String, Availability);

/// Every value of the kind's fields that only some releases have (`x-netctl-values`), with its
/// releases: what a validator's list of allowed values leaves out for a release that lacks it.
pub fn value_rules(kind: Kind) -> &'static [ValueRule] {
    static RULES: PerKind<Vec<ValueRule>> = PerKind::new();
    RULES.get(kind, |kind| {
        let mut rules = Vec::new();
        collect_value_rules(schema_of(kind), &mut rules);
        rules
    })
}

fn collect_value_rules(schema: &Value, rules: &mut Vec<ValueRule>) {
    match schema {
        Value::Object(object) => {
            if let Some(values) = object.get(VALUES).and_then(Value::as_object) {
                for (value, rule) in values {
                    if let Some(rule) = rule.as_object() {
                        rules.push((value.clone(), Availability::read(rule, "since", "until")));
                    }
                }
            }
            object
                .values()
                .for_each(|value| collect_value_rules(value, rules));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_value_rules(item, rules)),
        _ => {}
    }
}

/// Every availability the kind's document schema states, on a field (at any depth, `$defs`
/// included, and more than the walk reads) or on a value ([`value_rules`]): when a release has all
/// of them, the walk of a document can refuse nothing.
fn annotations_of(kind: Kind) -> &'static [Availability] {
    static ANNOTATIONS: PerKind<Vec<Availability>> = PerKind::new();
    ANNOTATIONS.get(kind, |kind| {
        let mut found = Vec::new();
        collect_field_annotations(schema_of(kind), &mut found);
        found.extend(value_rules(kind).iter().map(|(_, rule)| rule.clone()));
        found
    })
}

fn collect_field_annotations(schema: &Value, found: &mut Vec<Availability>) {
    match schema {
        Value::Object(object) => {
            let availability = Availability::read(object, SINCE, UNTIL);
            if availability != Availability::default() {
                found.push(availability);
            }
            object
                .values()
                .for_each(|value| collect_field_annotations(value, found));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_field_annotations(item, found)),
        _ => {}
    }
}

/// The document schema of each kind, built once.
fn schema_of(kind: Kind) -> &'static Value {
    super::spec::schema::document_schema_of(kind)
}

struct Walker<'a> {
    definitions: Option<&'a Map<String, Value>>,
    api: &'a ApiRelease,
}

impl<'a> Walker<'a> {
    /// The schema a value is checked against: `$ref`s followed, and an `anyOf`/`oneOf` of one
    /// non-null branch (schemars' `Option<T>`) taken as that branch.
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let Some(object) = schema.as_object() else {
            return schema;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let target = reference
                .strip_prefix("#/$defs/")
                .and_then(|name| self.definitions?.get(name));
            return target.map_or(schema, |target| self.resolve(target));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                let kept: Vec<&Value> = branches
                    .iter()
                    .filter(|branch| branch.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                if let [single] = kept.as_slice() {
                    return self.resolve(single);
                }
            }
        }
        schema
    }

    fn walk(
        &self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        errors: &mut Vec<FieldError>,
    ) {
        let schema = self.resolve(schema);
        match value {
            Value::Object(map) => {
                if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                    for (key, item) in map {
                        if let Some(property) = properties.get(key) {
                            let length = path.len();
                            push_key(path, key);
                            self.field(property, item, path, errors);
                            path.truncate(length);
                        }
                    }
                } else if let Some(additional) =
                    schema.get("additionalProperties").filter(|v| v.is_object())
                {
                    for (key, item) in map {
                        let length = path.len();
                        path.push_str(&format!("[{key}]"));
                        self.walk(additional, item, path, errors);
                        path.truncate(length);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (index, item) in items.iter().enumerate() {
                        let length = path.len();
                        path.push_str(&format!("[{index}]"));
                        self.walk(item_schema, item, path, errors);
                        path.truncate(length);
                    }
                }
            }
            _ => {}
        }
    }

    /// One field present in the document: refused whole when the release lacks it, otherwise its
    /// values checked and its content walked.
    fn field(
        &self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        errors: &mut Vec<FieldError>,
    ) {
        if let Err(absence) = Availability::of_field(schema).at(&self.api.release) {
            errors.push(FieldError {
                path: path.clone(),
                value: None,
                reason: absence.message(&format!("`{path}`"), self.api),
                line: None,
            });
            return;
        }
        if let Some(rules) = schema.get(VALUES).and_then(Value::as_object) {
            let mut check = |text: &str, at: String| {
                let Some(rule) = rules.get(text).and_then(Value::as_object) else {
                    return;
                };
                let availability = Availability::read(rule, "since", "until");
                if let Err(absence) = availability.at(&self.api.release) {
                    errors.push(FieldError {
                        reason: absence.message(&format!("`{at}` value `{text}`"), self.api),
                        path: at,
                        value: None,
                        line: None,
                    });
                }
            };
            match value {
                Value::String(text) => check(text, path.clone()),
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        if let Some(text) = item.as_str() {
                            check(text, format!("{path}[{index}]"));
                        }
                    }
                }
                _ => {}
            }
        }
        self.walk(schema, value, path, errors);
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// The schema as `release` has it: every property (at any depth, `$defs` included) that the release
/// lacks is removed, with its `required` entry; the annotations stay, so a reader sees from which
/// patch a field exists.
pub fn schema_for_release(schema: &Value, release: &Release) -> Value {
    let mut schema = schema.clone();
    prune(&mut schema, release);
    schema
}

fn prune(schema: &mut Value, release: &Release) {
    match schema {
        Value::Object(object) => {
            prune_values(object, release);
            if let Some(Value::Object(properties)) = object.get_mut("properties") {
                properties
                    .retain(|_, property| Availability::of_field(property).at(release).is_ok());
                let kept: Vec<String> = properties.keys().cloned().collect();
                if let Some(Value::Array(required)) = object.get_mut("required") {
                    required.retain(|name| {
                        name.as_str()
                            .is_some_and(|name| kept.iter().any(|k| k == name))
                    });
                }
            }
            object.values_mut().for_each(|value| prune(value, release));
        }
        Value::Array(items) => items.iter_mut().for_each(|item| prune(item, release)),
        _ => {}
    }
}

/// A field's allowed values (`enum`, its own or its items') without those the release lacks
/// (`x-netctl-values`).
fn prune_values(object: &mut Map<String, Value>, release: &Release) {
    let Some(Value::Object(rules)) = object.get(VALUES) else {
        return;
    };
    let lacking: Vec<String> = rules
        .iter()
        .filter(|(_, rule)| {
            rule.as_object().is_some_and(|rule| {
                Availability::read(rule, "since", "until")
                    .at(release)
                    .is_err()
            })
        })
        .map(|(value, _)| value.clone())
        .collect();
    if lacking.is_empty() {
        return;
    }
    let retain = |values: Option<&mut Value>| {
        if let Some(Value::Array(values)) = values {
            values.retain(|value| {
                value
                    .as_str()
                    .is_none_or(|text| !lacking.iter().any(|l| l == text))
            });
        }
    };
    retain(object.get_mut("enum"));
    retain(
        object
            .get_mut("items")
            .and_then(|items| items.get_mut("enum")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(text: &str) -> ApiRelease {
        ApiRelease::cluster(text.parse().unwrap())
    }

    fn reasons(kind: Kind, document: Value, release: &str) -> Vec<String> {
        check_document(kind, &document, &cluster(release))
            .into_iter()
            .map(|error| error.reason)
            .collect()
    }

    #[test]
    fn a_kind_whose_annotations_a_release_all_has_is_not_walked_and_the_others_are() {
        let has_all = |kind: Kind, release: &str| {
            let release: Release = release.parse().unwrap();
            annotations_of(kind)
                .iter()
                .all(|availability| availability.at(&release).is_ok())
        };
        // The newest line has every field of a host endpoint: its documents are not walked.
        let newest = ApiRelease::newest().release.to_string();
        assert!(has_all(Kind::HostEndpoint, &newest));
        // A BGP peer's `nextHopMode` came in v3.30.2: a v3.29.4 document is walked (and refused,
        // below), so is one of v3.30.1.
        assert!(!annotations_of(Kind::BgpPeer).is_empty());
        assert!(!has_all(Kind::BgpPeer, "v3.29.4"));
        assert!(!has_all(Kind::BgpPeer, "v3.30.1"));
        // Fields are found under `$defs` too, and value rules count.
        let schema = serde_json::json!({
            "properties": {"logSeverity": {"x-netctl-values": {"Trace": {"since": "v3.30.1"}}}},
            "$defs": {"Peer": {"properties": {"mode": {"x-netctl-until": "v3.32.0"}}}}
        });
        let mut found = Vec::new();
        collect_field_annotations(&schema, &mut found);
        let release = |text: &str| Some(text.parse::<Release>().unwrap());
        assert_eq!(
            found,
            [Availability {
                until: release("v3.32.0"),
                ..Availability::default()
            }]
        );
        let value_rule = Availability {
            since: release("v3.30.1"),
            ..Availability::default()
        };
        assert!(annotations_of(Kind::KubeControllersConfiguration).contains(&value_rule));
    }

    #[test]
    fn a_field_of_a_later_patch_is_refused_with_the_patch_it_needs() {
        let peer = serde_json::json!({"spec": {"peerIP": "10.0.0.1", "nextHopMode": "Self"}});
        assert_eq!(
            reasons(Kind::BgpPeer, peer.clone(), "v3.29.4"),
            ["`spec.nextHopMode` needs v3.30.2; the cluster runs v3.29.4"]
        );
        assert_eq!(
            reasons(Kind::BgpPeer, peer.clone(), "v3.30.1"),
            ["`spec.nextHopMode` needs v3.30.2; the cluster runs v3.30.1"]
        );
        assert!(reasons(Kind::BgpPeer, peer, "v3.30.2").is_empty());
    }

    #[test]
    fn a_removed_field_is_refused_on_the_line_that_removed_it() {
        let felix = serde_json::json!({"spec": {"iptablesLockTimeout": "10s"}});
        assert!(reasons(Kind::FelixConfiguration, felix.clone(), "v3.31.7").is_empty());
        assert_eq!(
            reasons(Kind::FelixConfiguration, felix, "v3.32.1"),
            ["`spec.iptablesLockTimeout` was removed in v3.32.0; the cluster runs v3.32.1"]
        );
    }

    #[test]
    fn a_field_missing_from_some_patches_names_the_patch_it_is_back_in() {
        let felix = serde_json::json!({"spec": {"logActionRateLimit": "10/minute"}});
        assert_eq!(
            reasons(Kind::FelixConfiguration, felix.clone(), "v3.31.2"),
            [
                "`spec.logActionRateLimit` needs v3.31.4 (v3.31.0 to v3.31.3 lack it); the cluster runs v3.31.2"
            ]
        );
        assert!(reasons(Kind::FelixConfiguration, felix.clone(), "v3.30.7").is_empty());
        assert!(reasons(Kind::FelixConfiguration, felix, "v3.31.4").is_empty());
        let wireguard = serde_json::json!({"spec": {"wireguardThreadingEnabled": true}});
        assert_eq!(
            reasons(Kind::FelixConfiguration, wireguard, "v3.29.0"),
            [
                "`spec.wireguardThreadingEnabled` needs v3.29.1 (v3.29.0 lacks it); the cluster runs v3.29.0"
            ]
        );
    }

    #[test]
    fn values_of_a_later_release_are_refused_in_fields_and_lists() {
        let pool =
            serde_json::json!({"spec": {"cidr": "10.0.0.0/16", "allowedUses": ["LoadBalancer"]}});
        assert_eq!(
            reasons(Kind::IpPool, pool, "v3.29.7"),
            ["`spec.allowedUses[0]` value `LoadBalancer` needs v3.30.0; the cluster runs v3.29.7"]
        );
        let felix =
            serde_json::json!({"spec": {"logSeveritySys": "Trace", "bpfRedirectToPeer": "L2Only"}});
        assert_eq!(
            reasons(Kind::FelixConfiguration, felix, "v3.32.0"),
            [
                "`spec.bpfRedirectToPeer` value `L2Only` was removed in v3.32.0; the cluster runs v3.32.0"
            ]
        );
    }

    #[test]
    fn nested_fields_are_found_through_lists_and_references() {
        let filter =
            serde_json::json!({"spec": {"exportV4": [{"action": "Accept", "peerType": "eBGP"}]}});
        assert_eq!(
            reasons(Kind::BgpFilter, filter, "v3.31.7"),
            ["`spec.exportV4[0].peerType` needs v3.32.0; the cluster runs v3.31.7"]
        );
        let controllers = serde_json::json!({"spec": {"controllers": {"node": {"hostEndpoint": {
            "autoCreate": "Enabled",
            "templates": [{"generateName": "a", "interfacePattern": "eth.*"}]
        }}}}});
        assert_eq!(
            reasons(Kind::KubeControllersConfiguration, controllers, "v3.30.7"),
            [
                "`spec.controllers.node.hostEndpoint.templates[0].interfacePattern` needs v3.31.0; the cluster runs v3.30.7"
            ]
        );
    }

    #[test]
    fn kinds_name_their_first_release() {
        let error = check_kind(Kind::StagedNetworkPolicy, &cluster("v3.29.4")).unwrap();
        assert_eq!(
            error.reason,
            "`StagedNetworkPolicy` needs v3.30.0; the cluster runs v3.29.4"
        );
        assert!(check_kind(Kind::Tier, &cluster("v3.29.0")).is_none());
        assert!(check_kind(Kind::Tier, &cluster("v3.28.5")).is_some());
        assert!(check_kind(Kind::GlobalNetworkPolicy, &cluster("v3.13.4")).is_none());
    }

    #[test]
    fn a_release_schema_leaves_out_what_the_release_lacks() {
        let schema = crate::resource::spec::document_schema(Kind::BgpPeer);
        let old = schema_for_release(&schema, &Release::new(3, 29, 7));
        let spec = &old["properties"]["spec"]["properties"];
        assert!(spec.get("peerIP").is_some());
        assert!(spec.get("nextHopMode").is_none());
        let new = schema_for_release(&schema, &Release::new(3, 32, 1));
        assert_eq!(
            new["properties"]["spec"]["properties"]["nextHopMode"][SINCE],
            "v3.30.2"
        );
    }
}
