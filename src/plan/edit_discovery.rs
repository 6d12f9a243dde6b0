//! Discovery of the hand edits of an installed manifest: the overlay ([`super::overlay`]) that
//! carries them onto the new release's manifest, found by a three-way comparison.
//!
//! For every object of the installed release's manifest (upstream old), the object as it runs in
//! the cluster (live) is compared with it; each difference is an edit the operator made, unless the
//! API server made it (status, server-set metadata, defaults it fills, rollout annotations). Each
//! edit is then checked against the new release's manifest (upstream new): when upstream left the
//! field as it was, the edit is carried in the overlay; when the new manifest already says what the
//! cluster has, nothing is needed; when upstream changed the field too, discovery cannot tell which
//! should win and says so ([`Undecided`]) instead of guessing.
//!
//! Lists whose items all have a unique string `name` (containers, env, volumes, volumeMounts, ports,
//! ...) are compared item by item by name, as strategic merge compares them; other lists are
//! compared whole. Secrets are never read into a plan: one in the manifest is reported, not diffed.
//!
//! This module is pure: reading the manifests and the live objects is the caller's (`request.rs`,
//! `cluster_facts.rs`); applying the overlay is `overlay.rs`'s.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Digest as _;

use super::overlay::{PATCH_DIRECTIVE, object_label};

/// One step of a path into an object: a map key, or the item of a named list with that `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Named(String),
}

/// A field as messages show it: `spec.template.spec.containers[calico-node].env[FOO]`.
fn path_text(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Named(name) => {
                let _ = write!(out, "[{name}]");
            }
        }
    }
    out
}

/// A difference between the released object and the live one: the live value (`None`: removed).
#[derive(Debug, Clone, PartialEq)]
struct Difference {
    path: Vec<Segment>,
    live: Option<Value>,
}

/// A field discovery cannot decide: the operator changed it and so did upstream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Undecided {
    /// `apiVersion kind namespace/name`, as [`object_label`] writes it.
    pub object: String,
    pub field: String,
    /// The field in the installed release's manifest, the cluster and the new manifest, as compact
    /// JSON (`absent` when not there).
    pub released: String,
    pub live: String,
    pub new: String,
}

/// The identity of a live object and the digest of what discovery compared, so a plan can be
/// refused when the object changed after it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveObject {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `sha256:<hex>` of the object without server-set fields, or `absent`.
    pub digest: String,
}

impl LiveObject {
    /// `apiVersion kind namespace/name`.
    pub fn label(&self) -> String {
        let name = match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        };
        format!("`{} {} {name}`", self.api_version, self.kind)
    }

    /// The identity and digest of `object` (from the manifest) as it is live (`None`: not there).
    pub fn of(object: &Value, live: Option<&Value>) -> LiveObject {
        let field = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        LiveObject {
            api_version: field("/apiVersion").unwrap_or_default(),
            kind: field("/kind").unwrap_or_default(),
            name: field("/metadata/name").unwrap_or_default(),
            namespace: field("/metadata/namespace"),
            digest: live.map_or_else(|| "absent".to_string(), live_digest),
        }
    }
}

/// What discovery found for one manifest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Discovery {
    /// Overlay documents carrying the edits, one per changed object, in manifest order.
    pub overlay: Vec<Value>,
    /// Each carried edit, `object field`, for the plan.
    pub edits: Vec<String>,
    pub undecided: Vec<Undecided>,
    /// What discovery did not compare, and why (a Secret, an object not in the cluster, ...).
    pub notes: Vec<String>,
    /// Every object of the installed manifest that was read, with its digest.
    pub live: Vec<LiveObject>,
}

/// The objects of a manifest (empty documents skipped).
pub fn manifest_objects(text: &str) -> Result<Vec<Value>, String> {
    let values = crate::yaml::read_values(text).map_err(|error| {
        format!(
            "document {}, line {}: {}",
            error.document, error.line, error.kind
        )
    })?;
    Ok(values
        .into_iter()
        .filter(|value| value.get("kind").and_then(Value::as_str).is_some())
        .collect())
}

fn identity(object: &Value) -> (Option<&str>, Option<&str>, Option<&str>) {
    let field = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    (
        field("/kind"),
        field("/metadata/name"),
        field("/metadata/namespace"),
    )
}

/// Compares `released` (the installed release's manifest objects), `live` (each of them as read
/// from the cluster, in the same order; `None` when not there) and `new` (the new manifest's
/// objects). Objects are matched by kind, name and namespace: the apiVersion may move between
/// releases.
pub fn discover(released: &[Value], live: &[Option<Value>], new: &[Value]) -> Discovery {
    let mut discovery = Discovery::default();
    for (old, live) in released.iter().zip(live) {
        let label = object_label(old);
        if old.get("kind").and_then(Value::as_str) == Some("Secret") {
            discovery.notes.push(format!(
                "{label} is a Secret: its values never go into a plan, so it was not read; carry edits of it into `upgrade.yaml` by hand"
            ));
            continue;
        }
        discovery.live.push(LiveObject::of(old, live.as_ref()));
        let Some(live) = live else {
            discovery.notes.push(format!(
                "{label} is not in the cluster: deleted by hand, or never created; the new manifest creates it again"
            ));
            continue;
        };
        let live = without_server_fields(live);
        let mut differences = Vec::new();
        compare(old, &live, &mut Vec::new(), &mut differences);
        if differences.is_empty() {
            continue;
        }
        let Some(target) = new.iter().find(|object| identity(object) == identity(old)) else {
            for difference in &differences {
                discovery.undecided.push(Undecided {
                    object: label.clone(),
                    field: path_text(&difference.path),
                    released: shown(lookup(old, &difference.path)),
                    live: shown(difference.live.as_ref()),
                    new: "the new manifest has no such object".to_string(),
                });
            }
            continue;
        };
        let mut document = overlay_header(target);
        let mut carried = false;
        for difference in differences {
            let released_value = lookup(old, &difference.path);
            let new_value = lookup(target, &difference.path);
            if new_value == difference.live.as_ref() {
                // The new release already says what the cluster has.
                continue;
            }
            if new_value != released_value {
                discovery.undecided.push(Undecided {
                    object: label.clone(),
                    field: path_text(&difference.path),
                    released: shown(released_value),
                    live: shown(difference.live.as_ref()),
                    new: shown(new_value),
                });
                continue;
            }
            let change = match (released_value, difference.live.as_ref()) {
                (None, live) => format!("added {}", shown(live)),
                (released, None) => format!("removed (was {})", shown(released)),
                (released, live) => format!("{} → {}", shown(released), shown(live)),
            };
            discovery
                .edits
                .push(format!("{label} {}: {change}", path_text(&difference.path)));
            insert(&mut document, &difference.path, difference.live);
            carried = true;
        }
        if carried {
            discovery.overlay.push(document);
        }
    }
    discovery
}

/// `{apiVersion, kind, metadata: {name, namespace}}` of `object`, as the new manifest writes them.
fn overlay_header(object: &Value) -> Value {
    let mut metadata = Map::new();
    for key in ["name", "namespace"] {
        if let Some(value) = object.pointer(&format!("/metadata/{key}")) {
            metadata.insert(key.to_string(), value.clone());
        }
    }
    serde_json::json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "metadata": metadata,
    })
}

fn shown(value: Option<&Value>) -> String {
    match value {
        None => "absent".to_string(),
        Some(Value::String(text)) => format!("`{text}`"),
        Some(other) => format!("`{other}`"),
    }
}

fn item_name(item: &Value) -> Option<&str> {
    item.as_object()?.get("name")?.as_str()
}

fn named(items: &[Value]) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    items
        .iter()
        .all(|item| item_name(item).is_some_and(|name| seen.insert(name)))
}

/// The value at `path` in `value`, following named lists by `name`.
fn lookup<'a>(value: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    let mut current = value;
    for segment in path {
        current = match segment {
            Segment::Key(key) => current.as_object()?.get(key)?,
            Segment::Named(name) => current
                .as_array()?
                .iter()
                .find(|item| item_name(item) == Some(name))?,
        };
    }
    Some(current)
}

/// Writes `live` at `path` of an overlay document: `None` deletes (`null` for a key, `$patch:
/// delete` for a named item).
fn insert(document: &mut Value, path: &[Segment], live: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = document;
    for segment in parents {
        current = match segment {
            Segment::Key(key) => {
                let map = ensure_map(current);
                map.entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
            }
            Segment::Named(name) => named_item(current, name),
        };
    }
    match last {
        Segment::Key(key) => {
            ensure_map(current).insert(key.clone(), live.unwrap_or(Value::Null));
        }
        Segment::Named(name) => {
            let item = named_item(current, name);
            *item = match live {
                Some(value) => value,
                None => serde_json::json!({"name": name, PATCH_DIRECTIVE: "delete"}),
            };
        }
    }
}

fn ensure_map(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("made a map above"),
    }
}

fn named_item<'a>(list: &'a mut Value, name: &str) -> &'a mut Value {
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let Value::Array(items) = list else {
        unreachable!("made a list above");
    };
    let position = match items.iter().position(|item| item_name(item) == Some(name)) {
        Some(position) => position,
        None => {
            items.push(serde_json::json!({"name": name}));
            items.len() - 1
        }
    };
    &mut items[position]
}

/// Metadata the API server sets on every object.
const SERVER_METADATA: [&str; 8] = [
    "managedFields",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Annotations written by controllers and kubectl, not by the operator's edits.
const SERVER_ANNOTATIONS: [&str; 4] = [
    "deprecated.daemonset.template.generation",
    "deployment.kubernetes.io/revision",
    "kubectl.kubernetes.io/last-applied-configuration",
    "kubectl.kubernetes.io/restartedAt",
];

/// A live object without what the server sets: `status`, server metadata (at any depth: pod
/// templates carry `creationTimestamp: null`) and controller annotations. What is left can be
/// applied again (the `save_previous` copy of `kube.apply`).
pub fn without_server_fields(live: &Value) -> Value {
    let mut live = live.clone();
    if let Some(map) = live.as_object_mut() {
        map.remove("status");
    }
    strip_metadata(&mut live);
    live
}

fn strip_metadata(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(metadata)) = map.get_mut("metadata") {
                for key in SERVER_METADATA {
                    metadata.remove(key);
                }
                if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
                    for key in SERVER_ANNOTATIONS {
                        annotations.remove(key);
                    }
                    if annotations.is_empty() {
                        metadata.remove("annotations");
                    }
                }
            }
            for (_, child) in map.iter_mut() {
                strip_metadata(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_metadata),
        _ => {}
    }
}

/// The digest of a live object without server-set fields, over JSON with sorted keys (the same
/// object gives the same digest whatever order the server writes keys in).
pub fn live_digest(live: &Value) -> String {
    let canonical = sorted(&without_server_fields(live));
    let bytes = serde_json::to_vec(&canonical).unwrap_or_default();
    let hex: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|key| (key.clone(), sorted(&map[key])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Whether `value` at `key` of the live map `parent` is what the API server fills in when the
/// manifest leaves the field out (the defaults kubectl shows on objects made from calico.yaml).
fn is_server_default(key: &str, value: &Value, parent: &Map<String, Value>) -> bool {
    use serde_json::json;
    let expected = match key {
        "terminationMessagePath" => json!("/dev/termination-log"),
        "terminationMessagePolicy" => json!("File"),
        "imagePullPolicy" => {
            // `Always` for `:latest` or no tag, else `IfNotPresent`.
            let image = parent.get("image").and_then(Value::as_str).unwrap_or("");
            let tag = image
                .rsplit_once('/')
                .map_or(image, |(_, last)| last)
                .split_once(':')
                .map(|(_, tag)| tag);
            match (image.contains('@'), tag) {
                (true, _) => json!("IfNotPresent"),
                (false, None | Some("latest")) => json!("Always"),
                _ => json!("IfNotPresent"),
            }
        }
        "dnsPolicy" => json!("ClusterFirst"),
        "schedulerName" => json!("default-scheduler"),
        "restartPolicy" => json!("Always"),
        "terminationGracePeriodSeconds" => json!(30),
        "securityContext" => json!({}),
        "revisionHistoryLimit" => json!(10),
        "progressDeadlineSeconds" => json!(600),
        "enableServiceLinks" => json!(true),
        "protocol" => json!("TCP"),
        "defaultMode" => json!(420),
        "successThreshold" => json!(1),
        "failureThreshold" => json!(3),
        "periodSeconds" => json!(10),
        "timeoutSeconds" => json!(1),
        "sessionAffinity" => json!("None"),
        "internalTrafficPolicy" => json!("Cluster"),
        "conversion" => json!({"strategy": "None"}),
        // `fieldRef` and `hostPath` fill these; anywhere else they are edits.
        "apiVersion" if parent.contains_key("fieldPath") => json!("v1"),
        "type" if parent.contains_key("path") && !parent.contains_key("name") => json!(""),
        // A DaemonSet's and a Deployment's rolling update.
        "updateStrategy" => {
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        }
        "strategy" => {
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        }
        // The deprecated copy of `serviceAccountName` the server keeps beside it.
        "serviceAccount" => match parent.get("serviceAccountName") {
            Some(name) => name.clone(),
            None => return false,
        },
        // Set from the priority class by admission.
        "priority" => return parent.contains_key("priorityClassName") && value.is_number(),
        "preemptionPolicy" => json!("PreemptLowerPriority"),
        "scheme" => json!("HTTP"),
        // A Service's addresses are assigned by the server; a ServiceAccount's token secrets (before
        // Kubernetes 1.24) are made by its controller.
        "clusterIP" | "clusterIPs" | "ipFamilies" => return true,
        "ipFamilyPolicy" => json!("SingleStack"),
        "secrets" => return parent.get("kind").and_then(Value::as_str) == Some("ServiceAccount"),
        "maxSurge" if parent.get("maxUnavailable").is_some_and(Value::is_number) => json!(0),
        "maxSurge" => json!("25%"),
        "maxUnavailable" => json!("25%"),
        _ => return false,
    };
    *value == expected
}

/// A value added in the cluster, without the server defaults inside it (a hand-added container
/// gets `terminationMessagePath` too).
fn without_defaults(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, child)| !is_server_default(key, child, map))
                .map(|(key, child)| (key.clone(), without_defaults(child)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_defaults).collect()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Collects the differences between `released` and `live` under `path`.
fn compare(
    released: &Value,
    live: &Value,
    path: &mut Vec<Segment>,
    differences: &mut Vec<Difference>,
) {
    match (released, live) {
        (Value::Object(released), Value::Object(live)) => {
            for (key, old) in released {
                path.push(Segment::Key(key.clone()));
                match live.get(key) {
                    Some(now) => compare(old, now, path, differences),
                    // An empty value the server dropped is not an edit.
                    None if is_empty(old) => {}
                    None => differences.push(Difference {
                        path: path.clone(),
                        live: None,
                    }),
                }
                path.pop();
            }
            for (key, now) in live {
                if released.contains_key(key) || is_server_default(key, now, live) {
                    continue;
                }
                let now = without_defaults(now);
                if is_empty(&now) {
                    continue;
                }
                path.push(Segment::Key(key.clone()));
                differences.push(Difference {
                    path: path.clone(),
                    live: Some(now),
                });
                path.pop();
            }
        }
        (Value::Array(old_items), Value::Array(live_items))
            if named(old_items) && named(live_items) =>
        {
            for old in old_items {
                let name = item_name(old).unwrap_or_default();
                path.push(Segment::Named(name.to_string()));
                match live_items.iter().find(|item| item_name(item) == Some(name)) {
                    Some(now) => compare(old, now, path, differences),
                    None => differences.push(Difference {
                        path: path.clone(),
                        live: None,
                    }),
                }
                path.pop();
            }
            for now in live_items {
                let name = item_name(now).unwrap_or_default();
                if old_items.iter().any(|item| item_name(item) == Some(name)) {
                    continue;
                }
                path.push(Segment::Named(name.to_string()));
                differences.push(Difference {
                    path: path.clone(),
                    live: Some(without_defaults(now)),
                });
                path.pop();
            }
        }
        (old, now) => {
            let now = without_defaults(now);
            if *old != now && !(is_empty(old) && is_empty(&now)) {
                differences.push(Difference {
                    path: path.clone(),
                    live: Some(now),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "calico-config", "namespace": "kube-system"}, "data": data})
    }

    fn daemon_set(image: &str, env: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "calico-node", "namespace": "kube-system"},
               "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                        "template": {"metadata": {"labels": {"k8s-app": "calico-node"}},
                                     "spec": {"serviceAccountName": "calico-node",
                                              "containers": [{"name": "calico-node", "image": image, "env": env}]}}}})
    }

    /// What a real API server adds to an object made from `object`.
    fn as_served(mut object: Value) -> Value {
        object["metadata"]["uid"] = json!("0b7c");
        object["metadata"]["resourceVersion"] = json!("812");
        object["metadata"]["generation"] = json!(3);
        object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        object["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
        object["metadata"]["annotations"] = json!({
            "deprecated.daemonset.template.generation": "3",
            "kubectl.kubernetes.io/last-applied-configuration": "{}"});
        if object["kind"] == "DaemonSet" {
            object["status"] = json!({"numberReady": 2});
            object["spec"]["revisionHistoryLimit"] = json!(10);
            object["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] = json!(0);
            let spec = &mut object["spec"]["template"]["spec"];
            spec["dnsPolicy"] = json!("ClusterFirst");
            spec["schedulerName"] = json!("default-scheduler");
            spec["securityContext"] = json!({});
            spec["restartPolicy"] = json!("Always");
            spec["terminationGracePeriodSeconds"] = json!(30);
            spec["serviceAccount"] = json!("calico-node");
            object["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
            for container in object["spec"]["template"]["spec"]["containers"]
                .as_array_mut()
                .unwrap()
            {
                container["terminationMessagePath"] = json!("/dev/termination-log");
                container["terminationMessagePolicy"] = json!("File");
                container["imagePullPolicy"] = json!("IfNotPresent");
            }
        }
        object
    }

    #[test]
    fn server_set_fields_are_no_edits() {
        let released = vec![
            config(json!({"veth_mtu": "0"})),
            daemon_set("calico/node:v3.25.2", json!([{"name": "A", "value": "1"}])),
        ];
        let live: Vec<Option<Value>> = released
            .iter()
            .map(|object| Some(as_served(object.clone())))
            .collect();
        let new = vec![
            config(json!({"veth_mtu": "0"})),
            daemon_set("calico/node:v3.29.0", json!([{"name": "A", "value": "1"}])),
        ];
        let discovery = discover(&released, &live, &new);
        assert_eq!(discovery.overlay, Vec::<Value>::new(), "{discovery:?}");
        assert!(discovery.undecided.is_empty(), "{discovery:?}");
        assert_eq!(discovery.live.len(), 2);
    }

    #[test]
    fn edits_are_carried_and_upstream_changes_are_not_guessed() {
        let released = vec![
            config(json!({"veth_mtu": "0", "calico_backend": "bird", "typha": "none"})),
            daemon_set(
                "calico/node:v3.25.2",
                json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
            ),
        ];
        let mut edited_config = as_served(config(
            json!({"veth_mtu": "1440", "calico_backend": "vxlan", "typha": "none"}),
        ));
        edited_config["metadata"]["annotations"]["team"] = json!("network");
        let mut edited_node = as_served(daemon_set(
            "calico/node:v3.25.2",
            json!([{"name": "A", "value": "1"}, {"name": "C", "value": "3"}]),
        ));
        // A hand-added container gets the server's defaults as well.
        edited_node["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "debug", "image": "busybox:1.36",
                         "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}));
        let live = vec![Some(edited_config), Some(edited_node)];
        let new = vec![
            // Upstream changed calico_backend too, and removed typha.
            config(json!({"veth_mtu": "0", "calico_backend": "none"})),
            daemon_set(
                "calico/node:v3.29.0",
                json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
            ),
        ];
        let discovery = discover(&released, &live, &new);
        assert_eq!(
            discovery.overlay,
            vec![
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "calico-config", "namespace": "kube-system",
                                    "annotations": {"team": "network"}},
                       "data": {"veth_mtu": "1440"}}),
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
                       "metadata": {"name": "calico-node", "namespace": "kube-system"},
                       "spec": {"template": {"spec": {"containers": [
                           {"name": "calico-node", "env": [
                               {"name": "B", "$patch": "delete"},
                               {"name": "C", "value": "3"}]},
                           {"name": "debug", "image": "busybox:1.36"}]}}}}),
            ]
        );
        assert_eq!(
            discovery.undecided,
            vec![Undecided {
                object: "`v1 ConfigMap kube-system/calico-config`".to_string(),
                field: "data.calico_backend".to_string(),
                released: "`bird`".to_string(),
                live: "`vxlan`".to_string(),
                new: "`none`".to_string(),
            }]
        );
        // The edits apply to the new manifest and change exactly those fields.
        let mut merged = new[1].clone();
        super::super::overlay::merge(&mut merged, &discovery.overlay[1]);
        assert_eq!(
            merged["spec"]["template"]["spec"]["containers"][0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "C", "value": "3"}])
        );
        assert_eq!(
            merged["spec"]["template"]["spec"]["containers"][0]["image"],
            "calico/node:v3.29.0"
        );
    }

    #[test]
    fn secrets_are_not_read_and_missing_objects_are_noted() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
                            "metadata": {"name": "calico-etcd-secrets", "namespace": "kube-system"}});
        let released = vec![secret.clone(), config(json!({"a": "1"}))];
        let live = vec![
            Some(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "calico-etcd-secrets"},
                        "data": {"etcd-key": "c2VjcmV0"}}),
            ),
            None,
        ];
        let discovery = discover(&released, &live, &[secret, config(json!({"a": "1"}))]);
        assert!(discovery.overlay.is_empty());
        assert_eq!(discovery.notes.len(), 2, "{:?}", discovery.notes);
        assert!(discovery.notes[0].contains("is a Secret"));
        assert!(!format!("{discovery:?}").contains("c2VjcmV0"));
        assert_eq!(discovery.live.len(), 1);
        assert_eq!(discovery.live[0].digest, "absent");
    }

    #[test]
    fn digests_ignore_key_order_and_server_fields() {
        let object = config(json!({"a": "1", "b": "2"}));
        let reordered = json!({"data": {"b": "2", "a": "1"}, "kind": "ConfigMap", "apiVersion": "v1",
                               "metadata": {"namespace": "kube-system", "name": "calico-config"}});
        assert_eq!(live_digest(&object), live_digest(&as_served(reordered)));
        assert_ne!(
            live_digest(&object),
            live_digest(&config(json!({"a": "1", "b": "3"})))
        );
    }
}
