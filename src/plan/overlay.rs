//! Manifest overlays: the user's own edits of an installed manifest, carried onto the new one.
//!
//! A manifest install (`docs/upgrade-procedures.md`, "Single manifest, ...") is upgraded by
//! applying the new release's `calico.yaml` (or `canal.yaml`, `calico-etcd.yaml`, ...). Whatever
//! the user changed by hand in the old manifest — an
//! IP pool CIDR, an env var of `calico-node`, `etcd_endpoints` — is lost unless it is made again in the
//! new one. An overlay is a YAML stream of partial objects, given to the plan with
//! `--manifest-overlay FILE`; each document names one object of the manifest and the fields to change.
//!
//! The rules, close to kustomize's strategic-merge patches but without per-field schema knowledge:
//!
//! - A document names its object by `apiVersion`, `kind`, `metadata.name` and `metadata.namespace`;
//!   the namespace must be written exactly as the manifest writes it (absent for cluster-scoped
//!   objects). A document that names no object of the manifest is an error, never a silent no-op.
//!   Documents apply in order, so two documents for one object both take effect.
//! - Maps merge recursively; a `null` value deletes the key.
//! - A list merges item by item by `name` when every item of both lists is a map with a string `name`
//!   and the names in each list are unique (containers, initContainers, env, volumes, volumeMounts,
//!   ports, ...): items with a known name merge recursively, new ones are appended in overlay order,
//!   and an item `{name: x, $patch: delete}` removes item `x`. Any other list replaces the old list.
//! - Scalars replace.
//!
//! Objects the overlay does not change keep their original text (comments included); changed ones are
//! written back as YAML. This module is pure: no I/O, so the planner (to show the diff) and the
//! executor (to write the bytes it applies) compute exactly the same result.

use std::fmt::Write as _;

use crate::errors::Hint;
use serde_json::{Map, Value};
use sha2::Digest as _;

/// The key of a list item's directive, as in kustomize: `$patch: delete` removes the item.
pub const PATCH_DIRECTIVE: &str = "$patch";

/// Why an overlay could not be read or applied.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OverlayError {
    #[error("the manifest overlay `{origin}` is not valid YAML: {message}")]
    Syntax { origin: String, message: String },
    #[error("document {index} of the manifest overlay `{origin}` has no `{field}`")]
    Incomplete {
        origin: String,
        index: usize,
        field: &'static str,
    },
    #[error("document {index} of the manifest overlay `{origin}` is not a map")]
    NotAMap { origin: String, index: usize },
    #[error("the manifest overlay `{origin}` has no documents")]
    Empty { origin: String },
    #[error("the manifest is not valid YAML: {message}")]
    ManifestSyntax { message: String },
    #[error("the manifest overlay names {object}, which is not in the new manifest")]
    NoSuchObject {
        object: String,
        candidates: Vec<String>,
    },
    #[error(
        "a `{PATCH_DIRECTIVE}` directive in the overlay of {object} is not `delete`: `{found}`"
    )]
    Directive { object: String, found: String },
}

impl Hint for OverlayError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            OverlayError::Incomplete { .. } => "every overlay document names its object by `apiVersion`, `kind`, `metadata.name` (and `metadata.namespace` when the manifest gives one)".to_string(),
            OverlayError::NotAMap { .. } => "an overlay document is a partial object: `apiVersion`, `kind`, `metadata` and the fields to change".to_string(),
            OverlayError::NoSuchObject { candidates, .. } if candidates.is_empty() => "check `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` against the new manifest".to_string(),
            OverlayError::NoSuchObject { candidates, .. } => format!(
                "the new manifest has {}; the namespace must match as the manifest writes it",
                candidates.join(", ")
            ),
            _ => return None,
        })
    }
}

/// `apiVersion kind namespace/name` of an object or an overlay document, as messages show it.
pub fn object_label(document: &Value) -> String {
    let field = |pointer: &str| document.pointer(pointer).and_then(Value::as_str);
    let name = match field("/metadata/namespace") {
        Some(namespace) => format!("{namespace}/{}", field("/metadata/name").unwrap_or("?")),
        None => field("/metadata/name").unwrap_or("?").to_string(),
    };
    format!(
        "`{} {} {name}`",
        field("/apiVersion").unwrap_or("?"),
        field("/kind").unwrap_or("?")
    )
}

fn identity(document: &Value) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
    let field = |pointer: &str| document.pointer(pointer).and_then(Value::as_str);
    (
        field("/apiVersion"),
        field("/kind"),
        field("/metadata/name"),
        field("/metadata/namespace"),
    )
}

/// Checks that a document names its object; `origin` and `index` (from 1) are for the message.
pub fn check_document(document: &Value, origin: &str, index: usize) -> Result<(), OverlayError> {
    if !document.is_object() {
        return Err(OverlayError::NotAMap {
            origin: origin.to_string(),
            index,
        });
    }
    for (pointer, field) in [
        ("/apiVersion", "apiVersion"),
        ("/kind", "kind"),
        ("/metadata/name", "metadata.name"),
    ] {
        if document.pointer(pointer).and_then(Value::as_str).is_none() {
            return Err(OverlayError::Incomplete {
                origin: origin.to_string(),
                index,
                field,
            });
        }
    }
    Ok(())
}

/// Reads an overlay file: a YAML stream of overlay documents (empty documents are skipped).
pub fn parse_overlay(text: &str, origin: &str) -> Result<Vec<Value>, OverlayError> {
    let mut documents = Vec::new();
    // Read as the manifest is (YAML 1.1, as kubectl reads both): `defaultMode: 0400` is 256.
    let values = crate::yaml::read_values(text).map_err(|error| OverlayError::Syntax {
        origin: origin.to_string(),
        message: format!(
            "document {}, line {}: {}",
            error.document, error.line, error.kind
        ),
    })?;
    for value in values {
        check_document(&value, origin, documents.len() + 1)?;
        documents.push(value);
    }
    if documents.is_empty() {
        return Err(OverlayError::Empty {
            origin: origin.to_string(),
        });
    }
    Ok(documents)
}

/// Merges `overlay` into `target` by the rules in the module documentation.
pub fn merge(target: &mut Value, overlay: &Value) {
    match (target, overlay) {
        (Value::Object(target), Value::Object(overlay)) => merge_maps(target, overlay),
        (Value::Array(target), Value::Array(overlay)) if merges_by_name(target, overlay) => {
            merge_named_lists(target, overlay)
        }
        (target, overlay) => *target = without_directives(overlay),
    }
}

fn merge_maps(target: &mut Map<String, Value>, overlay: &Map<String, Value>) {
    for (key, value) in overlay {
        match (value, target.get_mut(key)) {
            (Value::Null, _) => {
                target.remove(key);
            }
            (value, Some(existing)) => merge(existing, value),
            (value, None) => {
                target.insert(key.clone(), without_directives(value));
            }
        }
    }
}

/// A value as it is written when nothing is there to merge into: `null` map entries and deleted list
/// items mean nothing there.
fn without_directives(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| !value.is_null() && key.as_str() != PATCH_DIRECTIVE)
                .map(|(key, value)| (key.clone(), without_directives(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|item| !is_delete(item))
                .map(without_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}

fn item_name(item: &Value) -> Option<&str> {
    item.as_object()?.get("name")?.as_str()
}

fn is_delete(item: &Value) -> bool {
    item.get(PATCH_DIRECTIVE).and_then(Value::as_str) == Some("delete")
}

fn unique_names(items: &[Value]) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    items
        .iter()
        .all(|item| item_name(item).is_some_and(|name| seen.insert(name)))
}

/// Lists merge by `name` when every item of both has a unique string `name` (an empty old list
/// qualifies; an empty overlay list replaces, so `[]` empties a list).
fn merges_by_name(target: &[Value], overlay: &[Value]) -> bool {
    !overlay.is_empty() && unique_names(target) && unique_names(overlay)
}

fn merge_named_lists(target: &mut Vec<Value>, overlay: &[Value]) {
    for item in overlay {
        let name = item_name(item).unwrap_or_default();
        let position = target.iter().position(|old| item_name(old) == Some(name));
        match (position, is_delete(item)) {
            (Some(position), true) => {
                target.remove(position);
            }
            (None, true) => {}
            (Some(position), false) => merge(&mut target[position], item),
            (None, false) => target.push(without_directives(item)),
        }
    }
}

/// One object the overlay changed: its label and its YAML before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedObject {
    pub object: String,
    pub before: String,
    pub after: String,
}

/// A manifest with an overlay applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Overlaid {
    /// The whole manifest: unchanged documents as they were, changed ones re-written as YAML.
    pub text: String,
    /// The changed objects, in manifest order (an overlay that sets what is already there changes
    /// nothing and is not listed).
    pub changed: Vec<ChangedObject>,
}

/// Splits a YAML stream into documents at `---` lines, keeping each document's text (and comments).
fn split_documents(text: &str) -> Vec<String> {
    let mut documents = vec![String::new()];
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare.starts_with("--- ") || bare.starts_with("---\t") {
            documents.push(String::new());
        } else if let Some(last) = documents.last_mut() {
            last.push_str(line);
        }
    }
    documents
}

/// Changed objects are written back so that any reader (kubectl's YAML 1.1 included) reads the
/// values the overlay produced: strings that look like other types are quoted.
fn to_yaml(value: &Value) -> String {
    crate::yaml::emit::value_to_string(value)
}

/// Applies `overlay` to the manifest `text`. Every overlay document must name an object of it.
pub fn apply_overlay(text: &str, overlay: &[Value]) -> Result<Overlaid, OverlayError> {
    let mut documents: Vec<(String, Value)> = Vec::new();
    for document in split_documents(text) {
        let value: Value = match crate::yaml::read_values(&document) {
            Ok(mut values) if values.len() == 1 => values.remove(0),
            Ok(values) if values.is_empty() => Value::Null,
            Ok(values) => {
                return Err(OverlayError::ManifestSyntax {
                    message: format!(
                        "a document between `---` lines holds {} documents",
                        values.len()
                    ),
                });
            }
            Err(error) => {
                return Err(OverlayError::ManifestSyntax {
                    message: error.to_string(),
                });
            }
        };
        documents.push((document, value));
    }
    let originals: Vec<Value> = documents.iter().map(|(_, value)| value.clone()).collect();
    for patch in overlay {
        let wanted = identity(patch);
        let Some((_, value)) = documents
            .iter_mut()
            .find(|(_, value)| !value.is_null() && identity(value) == wanted)
        else {
            let candidates = documents
                .iter()
                .filter(|(_, value)| identity(value).1 == wanted.1 && wanted.1.is_some())
                .map(|(_, value)| object_label(value))
                .collect();
            return Err(OverlayError::NoSuchObject {
                object: object_label(patch),
                candidates,
            });
        };
        if let Some(found) = directive_other_than_delete(patch) {
            return Err(OverlayError::Directive {
                object: object_label(patch),
                found,
            });
        }
        merge(value, patch);
    }
    let mut out = String::new();
    let mut changed = Vec::new();
    for (index, ((original_text, value), original)) in documents.iter().zip(&originals).enumerate()
    {
        if index > 0 {
            out.push_str("---\n");
        }
        if value == original {
            out.push_str(original_text);
        } else {
            let after = to_yaml(value);
            changed.push(ChangedObject {
                object: object_label(value),
                before: to_yaml(original),
                after: after.clone(),
            });
            out.push_str(&after);
        }
    }
    Ok(Overlaid { text: out, changed })
}

fn directive_other_than_delete(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) => map.iter().find_map(|(key, value)| {
            if key == PATCH_DIRECTIVE && value.as_str() != Some("delete") {
                Some(value.to_string())
            } else {
                directive_other_than_delete(value)
            }
        }),
        Value::Array(items) => items.iter().find_map(directive_other_than_delete),
        _ => None,
    }
}

/// A unified diff of the changed objects (3 lines of context), one `---`/`+++` header per object.
pub fn unified_diff(changed: &[ChangedObject]) -> String {
    let mut out = String::new();
    for object in changed {
        let diff = similar::TextDiff::from_lines(&object.before, &object.after);
        let _ = write!(
            out,
            "{}",
            diff.unified_diff().context_radius(3).header(
                &format!("{} (as released)", object.object),
                &format!("{} (with the overlay)", object.object),
            )
        );
    }
    out
}

/// The plan-time review of one download's overlay: the diff when the manifest could be read
/// (`bytes`), else why not. An overlay that names no object of the manifest is an error.
pub fn preview(
    step: &str,
    url: &str,
    overlay: &[Value],
    bytes: Result<&[u8], String>,
) -> Result<super::ManifestPreview, OverlayError> {
    let mut preview = super::ManifestPreview {
        step: step.to_string(),
        url: url.to_string(),
        sha256: None,
        diff: None,
        unavailable: None,
    };
    match bytes {
        Ok(bytes) => {
            let text =
                std::str::from_utf8(bytes).map_err(|error| OverlayError::ManifestSyntax {
                    message: error.to_string(),
                })?;
            let result = apply_overlay(text, overlay)?;
            let hex: String = sha2::Sha256::digest(bytes)
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            preview.sha256 = Some(format!("sha256:{hex}"));
            preview.diff = Some(unified_diff(&result.changed));
        }
        Err(reason) => preview.unavailable = Some(reason),
    }
    Ok(preview)
}

/// The overlay documents as one YAML stream, for showing when the manifest cannot be read.
pub fn overlay_yaml(overlay: &[Value]) -> String {
    overlay
        .iter()
        .map(to_yaml)
        .collect::<Vec<_>>()
        .join("---\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn merged(target: Value, overlay: Value) -> Value {
        let mut target = target;
        merge(&mut target, &overlay);
        target
    }

    #[test]
    fn maps_merge_recursively_and_null_deletes() {
        assert_eq!(
            merged(
                json!({"data": {"a": "1", "b": "2"}, "keep": true}),
                json!({"data": {"a": "9", "b": null, "c": "3"}})
            ),
            json!({"data": {"a": "9", "c": "3"}, "keep": true})
        );
        // Deleting what is not there, and nulls inside new values, leave nothing behind.
        assert_eq!(
            merged(json!({}), json!({"x": null, "y": {"z": null, "w": 1}})),
            json!({"y": {"w": 1}})
        );
    }

    #[test]
    fn named_lists_merge_by_name_and_others_replace() {
        let target = json!({"containers": [
            {"name": "node", "image": "n:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"name": "exporter", "image": "e:1"}
        ], "args": ["--x", "--y"]});
        let overlay = json!({"containers": [
            {"name": "node", "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}, {"name": "A", "$patch": "delete"}]},
            {"name": "sidecar", "image": "s:1"}
        ], "args": ["--z"]});
        assert_eq!(
            merged(target, overlay),
            json!({"containers": [
                {"name": "node", "image": "n:1", "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]},
                {"name": "exporter", "image": "e:1"},
                {"name": "sidecar", "image": "s:1"}
            ], "args": ["--z"]})
        );
        // Items without a name (or with duplicate names) make the list replace; `[]` empties it.
        assert_eq!(
            merged(
                json!({"ports": [{"containerPort": 1}]}),
                json!({"ports": [{"name": "p", "containerPort": 2}]})
            ),
            json!({"ports": [{"name": "p", "containerPort": 2}]})
        );
        assert_eq!(
            merged(json!({"env": [{"name": "A"}]}), json!({"env": []})),
            json!({"env": []})
        );
    }

    const MANIFEST: &str = "# Source: calico/templates/calico-config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-config\n  namespace: kube-system\ndata:\n  veth_mtu: \"0\"\n---\n# untouched, comment kept\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: calico-node\n  namespace: kube-system\n";

    #[test]
    fn only_changed_documents_are_rewritten_and_diffed() {
        let overlay = parse_overlay(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-config\n  namespace: kube-system\ndata:\n  veth_mtu: \"1440\"\n",
            "edits.yaml",
        )
        .unwrap();
        let result = apply_overlay(MANIFEST, &overlay).unwrap();
        assert_eq!(
            result.text,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-config\n  namespace: kube-system\ndata:\n  veth_mtu: '1440'\n---\n# untouched, comment kept\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: calico-node\n  namespace: kube-system\n"
        );
        assert_eq!(result.changed.len(), 1);
        let diff = unified_diff(&result.changed);
        assert!(
            diff.contains("--- `v1 ConfigMap kube-system/calico-config` (as released)"),
            "{diff}"
        );
        assert!(
            diff.contains("-  veth_mtu: '0'\n+  veth_mtu: '1440'\n"),
            "{diff}"
        );
        // The same input always gives the same bytes (a resume applies what the plan showed).
        assert_eq!(apply_overlay(MANIFEST, &overlay).unwrap(), result);
    }

    #[test]
    fn an_overlay_naming_no_object_is_an_error_with_the_candidates() {
        let overlay = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "calico-config"}, "data": {"x": "1"}})];
        let error = apply_overlay(MANIFEST, &overlay).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the manifest overlay names `v1 ConfigMap calico-config`, which is not in the new manifest"
        );
        assert_eq!(
            error.hint().unwrap(),
            "the new manifest has `v1 ConfigMap kube-system/calico-config`; the namespace must match as the manifest writes it"
        );
    }

    #[test]
    fn bad_overlay_files_are_refused() {
        assert!(matches!(
            parse_overlay("a: [", "o.yaml").unwrap_err(),
            OverlayError::Syntax { .. }
        ));
        assert_eq!(
            parse_overlay("apiVersion: v1\nkind: ConfigMap\n", "o.yaml")
                .unwrap_err()
                .to_string()
                .lines()
                .next()
                .unwrap(),
            "document 1 of the manifest overlay `o.yaml` has no `metadata.name`"
        );
        assert!(matches!(
            parse_overlay("---\n", "o.yaml").unwrap_err(),
            OverlayError::Empty { .. }
        ));
        assert!(matches!(
            parse_overlay("- a\n", "o.yaml").unwrap_err(),
            OverlayError::NotAMap { .. }
        ));
        let overlay = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "calico-config", "namespace": "kube-system"},
            "data": {"$patch": "replace"}})];
        assert!(matches!(
            apply_overlay(MANIFEST, &overlay).unwrap_err(),
            OverlayError::Directive { .. }
        ));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0i64..5).prop_map(Value::from),
            "[a-c]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::btree_map("[a-d]", inner.clone(), 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
                prop::collection::btree_map("[a-d]", inner.clone(), 0..3).prop_map(|map| {
                    Value::Array(
                        map.into_iter()
                            .map(|(name, value)| json!({"name": name, "value": value}))
                            .collect(),
                    )
                }),
                prop::collection::vec(inner, 0..3).prop_map(Value::Array),
            ]
        })
    }

    proptest! {
        /// Applying an overlay twice is applying it once, so a resumed run (or an overlay that
        /// repeats what the manifest already says) changes nothing more.
        #[test]
        fn merging_is_idempotent(target in json_value(), overlay in json_value()) {
            let once = merged(target, overlay.clone());
            let twice = merged(once.clone(), overlay);
            prop_assert_eq!(once, twice);
        }

        /// An empty overlay map changes no map.
        #[test]
        fn an_empty_overlay_changes_nothing(target in prop::collection::btree_map("[a-d]", json_value(), 0..4)) {
            let target = Value::Object(target.into_iter().collect());
            prop_assert_eq!(merged(target.clone(), json!({})), target);
        }

        /// Every non-null scalar an overlay map sets is in the result at its path.
        #[test]
        fn set_scalars_win(target in json_value(), key in "[a-d]", inner in "[a-d]", value in "[a-c]{1,2}") {
            let overlay = json!({ key.clone(): { inner.clone(): value.clone() } });
            let result = merged(json!({"base": target}), overlay);
            prop_assert_eq!(&result[&key][&inner], &Value::from(value));
        }
    }
}
