//! Kubernetes' strategic merge patch as calicoctl applies it to Calico resources (`patch` without
//! `--type`, `calicoctl/calicoctl/resourcemgr/resourcemgr.go` `Patch`: `strategicpatch.
//! StrategicMergePatch` of the stored resource with the patch, over the v3 Go types).
//!
//! What the Go types make of it: objects merge key by key and `null` deletes a key; a list is
//! replaced whole unless its field declares a patch strategy — and the Calico v3 types declare none
//! (`api/pkg/apis/projectcalico/v3/`), so only the Kubernetes `ObjectMeta` lists merge:
//! `metadata.finalizers` as a set of strings and `metadata.ownerReferences` by `uid`. Merged lists
//! keep apimachinery's order: items the patch names in the patch's order, interleaved with the
//! other stored items in stored order (a new finalizer `c` on `[a, b]` gives `[c, a, b]`).
//!
//! The directives: `$patch: replace` (an object replaced whole, or in a merging list the list
//! replaced by the patch's items), `$patch: delete` (an object removed, or in a merging list the
//! item with that key removed), `$retainKeys`, `$setElementOrder/<list>` and
//! `$deleteFromPrimitiveList/<list>`. Where upstream does something no one means, netctl refuses or
//! does what the directive says, and says so in `docs/architecture.md`: `$patch: delete` on an
//! object removes it (upstream leaves an empty object, which the Go type may then refuse), and a
//! directive inside a list that is replaced whole, or `$setElementOrder`/`$deleteFromPrimitiveList`
//! on such a list, is refused (upstream writes the directive into the list as data).
//!
//! Pure: JSON in, JSON out. The caller validates the result as any other document.

use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// A strategic merge patch that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicMergeError {
    #[error("a strategic merge patch must be a JSON object, e.g. '{{\"spec\":{{...}}}}'")]
    NotAnObject,
    #[error("`$patch` at `{path}` must be `replace` or `delete`, not `{value}`")]
    UnknownDirective { path: String, value: String },
    #[error("`$patch: delete` at the top would delete the whole resource: use `netctl delete`")]
    DeleteRoot,
    #[error(
        "`{path}` is replaced whole by a strategic merge (Calico's types declare no merge key for it): it takes no `{directive}`"
    )]
    DirectiveInReplacedList { path: String, directive: String },
    #[error("an item of `{path}` has no `{key}`, the key its items merge by")]
    MissingMergeKey { path: String, key: &'static str },
    #[error("`{path}` mixes strings and objects")]
    MixedList { path: String },
    #[error("`$retainKeys` at `{path}` must be a list of field names")]
    RetainKeysNotAList { path: String },
    #[error("`{path}.{key}` is patched but not named in `$retainKeys`")]
    NotRetained { path: String, key: String },
    #[error("`{directive}{list}` at `{path}` must be a list")]
    DirectiveNotAList {
        path: String,
        directive: &'static str,
        list: String,
    },
}

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListStrategy {
    /// Replaced whole by the patch's list (every Calico field).
    Replace,
    /// A set of scalars (`metadata.finalizers`).
    Set,
    /// Objects merged by the value of a key (`metadata.ownerReferences` by `uid`).
    ByKey(&'static str),
}

/// The patch strategy of the list at `path` (object keys from the document's root).
fn list_strategy(path: &[String]) -> ListStrategy {
    match path {
        [metadata, field] if metadata == "metadata" && field == "finalizers" => ListStrategy::Set,
        [metadata, field] if metadata == "metadata" && field == "ownerReferences" => {
            ListStrategy::ByKey("uid")
        }
        _ => ListStrategy::Replace,
    }
}

fn dotted(path: &[String]) -> String {
    if path.is_empty() {
        ".".to_string()
    } else {
        path.join(".")
    }
}

/// `original` with the strategic merge `patch` applied.
pub fn strategic_merge(original: &Value, patch: &Value) -> Result<Value, StrategicMergeError> {
    let Value::Object(patch) = patch else {
        return Err(StrategicMergeError::NotAnObject);
    };
    if patch.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
        return Err(StrategicMergeError::DeleteRoot);
    }
    let original = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let mut path = Vec::new();
    Ok(merge_map(original, patch, &mut path)?.map_or(Value::Null, Value::Object))
}

/// Merges `patch` into `original`; `None` when a `$patch: delete` removes the object.
fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<Option<Map<String, Value>>, StrategicMergeError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                let rest: Map<String, Value> = patch
                    .iter()
                    .filter(|(key, _)| key.as_str() != DIRECTIVE)
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                merge_map(Map::new(), &rest, path)
            }
            Some("delete") => Ok(None),
            _ => Err(StrategicMergeError::UnknownDirective {
                path: dotted(path),
                value: directive.to_string(),
            }),
        };
    }
    if let Some(retained) = patch.get(RETAIN_KEYS) {
        retain_keys(&mut original, patch, retained, path)?;
    }
    let mut ordered = Vec::new();
    for (key, order) in patch {
        if let Some(list) = key.strip_prefix(SET_ELEMENT_ORDER) {
            ordered.push(list.to_string());
            set_element_order(&mut original, patch, list, order, path)?;
        }
    }
    for (key, value) in patch {
        if key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if let Some(list) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            delete_from_list(&mut original, list, value, path)?;
            continue;
        }
        if ordered.contains(key) {
            continue;
        }
        path.push(key.clone());
        let merged = match (original.remove(key), value) {
            (_, Value::Null) => None,
            (Some(Value::Object(stored)), Value::Object(patch)) => {
                merge_map(stored, patch, path)?.map(Value::Object)
            }
            (Some(Value::Array(stored)), Value::Array(patch)) => {
                Some(Value::Array(merge_list(stored, patch, path)?))
            }
            (_, Value::Object(patch)) => merge_map(Map::new(), patch, path)?.map(Value::Object),
            (_, Value::Array(patch)) => Some(Value::Array(merge_list(Vec::new(), patch, path)?)),
            (_, scalar) => Some(scalar.clone()),
        };
        path.pop();
        if let Some(merged) = merged {
            original.insert(key.clone(), merged);
        }
    }
    Ok(Some(original))
}

/// `$retainKeys`: keys of the stored object not named are dropped; a patched key must be named.
fn retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retained: &Value,
    path: &[String],
) -> Result<(), StrategicMergeError> {
    let Some(names) = retained.as_array().and_then(|names| {
        names
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()
    }) else {
        return Err(StrategicMergeError::RetainKeysNotAList { path: dotted(path) });
    };
    for (key, value) in patch {
        let directive = key.starts_with('$');
        if !directive && !value.is_null() && !names.contains(&key.as_str()) {
            return Err(StrategicMergeError::NotRetained {
                path: dotted(path),
                key: key.clone(),
            });
        }
    }
    original.retain(|key, _| names.contains(&key.as_str()));
    Ok(())
}

/// The strategy of the merging list `list` under `path`, or the refusal for a replaced one.
fn merging_list(
    path: &[String],
    list: &str,
    directive: &str,
) -> Result<ListStrategy, StrategicMergeError> {
    let mut at = path.to_vec();
    at.push(list.to_string());
    match list_strategy(&at) {
        ListStrategy::Replace => Err(StrategicMergeError::DirectiveInReplacedList {
            path: dotted(&at),
            directive: directive.to_string(),
        }),
        strategy => Ok(strategy),
    }
}

/// `$deleteFromPrimitiveList/<list>`: the values removed from a merging list of scalars.
fn delete_from_list(
    original: &mut Map<String, Value>,
    list: &str,
    values: &Value,
    path: &[String],
) -> Result<(), StrategicMergeError> {
    merging_list(path, list, DELETE_FROM_PRIMITIVE_LIST)?;
    let Value::Array(values) = values else {
        return Err(StrategicMergeError::DirectiveNotAList {
            path: dotted(path),
            directive: DELETE_FROM_PRIMITIVE_LIST,
            list: list.to_string(),
        });
    };
    if let Some(Value::Array(stored)) = original.get_mut(list) {
        stored.retain(|item| !values.contains(item));
    }
    Ok(())
}

/// `$setElementOrder/<list>`: the list merged with the patch's items, then ordered as given (items
/// not named keep their stored order among them).
fn set_element_order(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    list: &str,
    order: &Value,
    path: &mut Vec<String>,
) -> Result<(), StrategicMergeError> {
    let strategy = merging_list(path, list, SET_ELEMENT_ORDER)?;
    let Value::Array(order) = order else {
        return Err(StrategicMergeError::DirectiveNotAList {
            path: dotted(path),
            directive: SET_ELEMENT_ORDER,
            list: list.to_string(),
        });
    };
    let stored = match original.remove(list) {
        Some(Value::Array(stored)) => stored,
        _ => Vec::new(),
    };
    path.push(list.to_string());
    let merged = match patch.get(list) {
        Some(Value::Array(items)) => merge_list(stored.clone(), items, path)?,
        Some(Value::Null) => Vec::new(),
        _ => stored.clone(),
    };
    let key = match strategy {
        ListStrategy::ByKey(key) => Some(key),
        _ => None,
    };
    let ordered = normalize_order(merged, order, &stored, key);
    path.pop();
    original.insert(list.to_string(), Value::Array(ordered));
    Ok(())
}

/// A patch list merged into a stored one by the strategy of `path`.
fn merge_list(
    stored: Vec<Value>,
    patch: &[Value],
    path: &mut Vec<String>,
) -> Result<Vec<Value>, StrategicMergeError> {
    match list_strategy(path) {
        ListStrategy::Replace => patch.iter().map(|item| replaced_item(item, path)).collect(),
        ListStrategy::Set => {
            if patch.iter().any(Value::is_object) {
                return Err(StrategicMergeError::MixedList { path: dotted(path) });
            }
            let mut merged: Vec<Value> = Vec::new();
            for item in stored.iter().chain(patch) {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
            }
            Ok(normalize_order(merged, patch, &stored, None))
        }
        ListStrategy::ByKey(key) => merge_by_key(stored, patch, key, path),
    }
}

/// An item of a list that is replaced whole: nulls dropped as the Go types drop them, directives
/// refused.
fn replaced_item(item: &Value, path: &mut Vec<String>) -> Result<Value, StrategicMergeError> {
    match item {
        Value::Object(map) => {
            if let Some(directive) = map.keys().find(|key| key.starts_with('$')) {
                return Err(StrategicMergeError::DirectiveInReplacedList {
                    path: dotted(path),
                    directive: directive.clone(),
                });
            }
            Ok(merge_map(Map::new(), map, path)?.map_or(Value::Null, Value::Object))
        }
        other => Ok(other.clone()),
    }
}

fn key_value<'a>(item: &'a Value, key: &str) -> Option<&'a Value> {
    item.as_object().and_then(|map| map.get(key))
}

/// Objects merged by `key`: `$patch: delete` items remove theirs, a `$patch: replace` item makes
/// the patch's items the list, others merge into the stored item with the same key or are added.
fn merge_by_key(
    stored: Vec<Value>,
    patch: &[Value],
    key: &'static str,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, StrategicMergeError> {
    let mut merged = stored.clone();
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        let Some(map) = item.as_object() else {
            return Err(StrategicMergeError::MixedList { path: dotted(path) });
        };
        match map.get(DIRECTIVE).map(|value| value.as_str()) {
            None => plain.push(item),
            Some(Some("replace")) => replace = true,
            Some(Some("delete")) => {
                let Some(value) = map.get(key) else {
                    return Err(StrategicMergeError::MissingMergeKey {
                        path: dotted(path),
                        key,
                    });
                };
                merged.retain(|stored| key_value(stored, key) != Some(value));
            }
            Some(_) => {
                return Err(StrategicMergeError::UnknownDirective {
                    path: dotted(path),
                    value: map[DIRECTIVE].to_string(),
                });
            }
        }
    }
    if replace {
        merged.clear();
    }
    let mut patched = Vec::new();
    for item in plain {
        let Some(value) = key_value(item, key) else {
            return Err(StrategicMergeError::MissingMergeKey {
                path: dotted(path),
                key,
            });
        };
        let patch_map = item.as_object().expect("checked above");
        let position = merged
            .iter()
            .position(|stored| key_value(stored, key) == Some(value));
        let base = match position {
            Some(index) => match merged[index].take() {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            None => Map::new(),
        };
        let item = merge_map(base, patch_map, path)?.map_or(Value::Null, Value::Object);
        match position {
            Some(index) => merged[index] = item.clone(),
            None => merged.push(item.clone()),
        }
        patched.push(item);
    }
    let order = if replace { Vec::new() } else { stored };
    Ok(normalize_order(merged, &patched, &order, Some(key)))
}

/// apimachinery's order for a merged list: the items the patch (or `$setElementOrder`) names in
/// that order, the others in stored order, the two interleaved so that two stored items keep their
/// stored order and a new item goes before the stored items still to come.
fn normalize_order(
    merged: Vec<Value>,
    patch_order: &[Value],
    stored_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let identity = |item: &Value| -> Value {
        match key {
            Some(key) => key_value(item, key).cloned().unwrap_or(Value::Null),
            None => item.clone(),
        }
    };
    let index_in = |list: &[Value], item: &Value| -> Option<usize> {
        let wanted = identity(item);
        list.iter().position(|other| identity(other) == wanted)
    };
    let (mut named, mut others): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| index_in(patch_order, item).is_some());
    named.sort_by_key(|item| index_in(patch_order, item));
    others.sort_by_key(|item| index_in(stored_order, item));
    let mut result = Vec::with_capacity(named.len() + others.len());
    let (mut left, mut right) = (others.into_iter().peekable(), named.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(stored), Some(patched)) => {
                match (
                    index_in(stored_order, stored),
                    index_in(stored_order, patched),
                ) {
                    (Some(a), Some(b)) => a < b,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        result.extend(next);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy() -> Value {
        json!({
            "apiVersion": "projectcalico.org/v3",
            "kind": "GlobalNetworkPolicy",
            "metadata": {
                "name": "allow-dns",
                "labels": {"team": "net", "tier": "base"},
                "finalizers": ["a", "b"],
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "A", "name": "n1", "uid": "u1"},
                    {"apiVersion": "v1", "kind": "A", "name": "n2", "uid": "u2"}
                ]
            },
            "spec": {
                "order": 100,
                "selector": "all()",
                "ingress": [{"action": "Allow", "protocol": "UDP"}, {"action": "Deny"}],
                "types": ["Ingress"]
            }
        })
    }

    fn merged(patch: Value) -> Value {
        strategic_merge(&policy(), &patch).unwrap()
    }

    #[test]
    fn calico_lists_are_replaced_whole_and_objects_merge_key_by_key() {
        let result = merged(
            json!({"spec": {"ingress": [{"action": "Log"}], "order": null},
                                    "metadata": {"labels": {"tier": null, "zone": "a"}}}),
        );
        assert_eq!(result["spec"]["ingress"], json!([{"action": "Log"}]));
        assert_eq!(result["spec"].get("order"), None);
        assert_eq!(result["spec"]["types"], json!(["Ingress"]));
        assert_eq!(
            result["metadata"]["labels"],
            json!({"team": "net", "zone": "a"})
        );
    }

    #[test]
    fn finalizers_merge_as_a_set_in_apimachinerys_order() {
        let finalizers = |patch: Value| merged(patch)["metadata"]["finalizers"].clone();
        assert_eq!(
            finalizers(json!({"metadata": {"finalizers": ["c"]}})),
            json!(["c", "a", "b"])
        );
        assert_eq!(
            finalizers(json!({"metadata": {"finalizers": ["b", "c"]}})),
            json!(["a", "b", "c"])
        );
        assert_eq!(
            finalizers(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})),
            json!(["b"])
        );
        assert_eq!(
            finalizers(
                json!({"metadata": {"$setElementOrder/finalizers": ["b", "a", "c"],
                                           "finalizers": ["c"]}})
            ),
            json!(["b", "a", "c"])
        );
    }

    #[test]
    fn owner_references_merge_by_uid_with_delete_and_replace_directives() {
        let owners = |patch: Value| merged(patch)["metadata"]["ownerReferences"].clone();
        assert_eq!(
            owners(json!({"metadata": {"ownerReferences": [
                {"uid": "u3", "apiVersion": "v1", "kind": "A", "name": "n3"},
                {"uid": "u1", "name": "renamed"}]}})),
            json!([
                {"apiVersion": "v1", "kind": "A", "name": "n3", "uid": "u3"},
                {"apiVersion": "v1", "kind": "A", "name": "renamed", "uid": "u1"},
                {"apiVersion": "v1", "kind": "A", "name": "n2", "uid": "u2"}
            ])
        );
        assert_eq!(
            owners(json!({"metadata": {"ownerReferences": [{"uid": "u1", "$patch": "delete"}]}})),
            json!([{"apiVersion": "v1", "kind": "A", "name": "n2", "uid": "u2"}])
        );
        assert_eq!(
            owners(json!({"metadata": {"ownerReferences": [
                {"uid": "u9", "apiVersion": "v1", "kind": "K", "name": "x"}, {"$patch": "replace"}]}})),
            json!([{"apiVersion": "v1", "kind": "K", "name": "x", "uid": "u9"}])
        );
        assert_eq!(
            strategic_merge(
                &policy(),
                &json!({"metadata": {"ownerReferences": [{"name": "no-key"}]}})
            ),
            Err(StrategicMergeError::MissingMergeKey {
                path: "metadata.ownerReferences".into(),
                key: "uid"
            })
        );
    }

    #[test]
    fn object_directives_replace_delete_and_retain() {
        let result = merged(json!({"metadata": {"labels": {"$patch": "replace", "z": "3"}}}));
        assert_eq!(result["metadata"]["labels"], json!({"z": "3"}));
        let result = merged(json!({"metadata": {"labels": {"$patch": "delete"}}}));
        assert_eq!(result["metadata"].get("labels"), None);
        let result = merged(json!({"spec": {"$retainKeys": ["selector", "order"], "order": 5}}));
        assert_eq!(result["spec"], json!({"selector": "all()", "order": 5}));
        assert!(matches!(
            strategic_merge(
                &policy(),
                &json!({"spec": {"$retainKeys": ["order"], "selector": "x"}})
            ),
            Err(StrategicMergeError::NotRetained { .. })
        ));
        assert!(matches!(
            strategic_merge(&policy(), &json!({"spec": {"$patch": "merge"}})),
            Err(StrategicMergeError::UnknownDirective { .. })
        ));
        assert_eq!(
            strategic_merge(&policy(), &json!({"$patch": "delete"})),
            Err(StrategicMergeError::DeleteRoot)
        );
    }

    #[test]
    fn directives_on_replaced_lists_are_refused_instead_of_stored_as_data() {
        for patch in [
            json!({"spec": {"ingress": [{"$patch": "delete", "action": "Deny"}]}}),
            json!({"spec": {"$setElementOrder/types": ["Egress"]}}),
            json!({"spec": {"$deleteFromPrimitiveList/types": ["Ingress"]}}),
        ] {
            assert!(
                matches!(
                    strategic_merge(&policy(), &patch),
                    Err(StrategicMergeError::DirectiveInReplacedList { .. })
                ),
                "{patch}"
            );
        }
    }

    #[test]
    fn nulls_inside_new_values_are_dropped_as_the_go_types_drop_them() {
        let result = merged(json!({"metadata": {"annotations": {"q": null, "r": "s"}},
                                    "spec": {"egress": [{"action": "Allow", "protocol": null}]}}));
        assert_eq!(result["metadata"]["annotations"], json!({"r": "s"}));
        assert_eq!(result["spec"]["egress"], json!([{"action": "Allow"}]));
        assert_eq!(
            strategic_merge(&policy(), &json!([])),
            Err(StrategicMergeError::NotAnObject)
        );
    }
}
