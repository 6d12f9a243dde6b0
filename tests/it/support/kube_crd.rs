//! Custom resources checked against their CRD's structural schema, as kube-apiserver checks them,
//! for the test API server ([`super::kube_api`]).
//!
//! The schemas are written from the CRD manifests upstream ships (field names, types, enums,
//! `nullable`, `required`, `minimum`/`maximum`, `pattern`), not copied: CalicoNodeStatus here, from
//! `libcalico-go/config/crd/crd.projectcalico.org_caliconodestatuses.yaml` of release-v3.32; the
//! IPAM kinds in both API groups in [`super::kube_crd_ipam`]. What a real server does with a body,
//! reproduced:
//! - a field the schema does not have is pruned from what is stored (a `Warning: unknown field
//!   "spec.x"` header), or refused with `fieldValidation=Strict` (400, `strict decoding error`);
//! - a null in a field that is not `nullable` is pruned, as if the field were absent;
//! - a value of the wrong type, outside an `enum`, a `minimum` or a `maximum`, not matching a
//!   `pattern`, or a missing `required` field make the request `422 Invalid` with one cause per
//!   problem (`spec.classes[0]: Unsupported value: "x": supported values: "Agent", "BGP",
//!   "Routes"`);
//! - the object name must be a lowercase RFC 1123 subdomain (`metadata.name: Invalid value: ...`).
//!
//! Otherwise `metadata` is the server's own business (`x-preserve`), and `apiVersion`/`kind` are
//! matched by routing.

use serde_json::{Map, Value, json};

/// The schema of a custom resource kind the server checks, if it checks it.
pub fn schema(api_version: &str, kind: &str) -> Option<Value> {
    match (api_version, kind) {
        ("crd.projectcalico.org/v1", "CalicoNodeStatus") => Some(calico_node_status()),
        _ => super::kube_crd_ipam::schema_for(api_version, kind),
    }
}

/// What checking an object found.
#[derive(Debug, Default)]
pub struct Findings {
    /// Fields the schema does not declare (pruned, or refused with strict field validation).
    pub unknown: Vec<String>,
    /// Validation errors, each as the API server words it.
    pub invalid: Vec<String>,
}

/// Prunes `object` (unknown fields, nulls where not nullable) and validates what remains.
pub fn check_and_prune(schema: &Value, object: &mut Value) -> Findings {
    let mut outcome = Findings::default();
    prune(schema, object, "", &mut outcome.unknown);
    check(schema, object, "", &mut outcome.invalid);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if !is_subdomain(name) {
        outcome.invalid.insert(
            0,
            format!(
                "metadata.name: Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            ),
        );
    }
    outcome
}

fn is_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn prune(schema: &Value, value: &mut Value, path: &str, unknown: &mut Vec<String>) {
    if schema.get("x-preserve").is_some() {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let field_schema = properties
                    .and_then(|properties| properties.get(&key))
                    .or(additional);
                let Some(field_schema) = field_schema else {
                    map.remove(&key);
                    unknown.push(child(path, &key));
                    continue;
                };
                let nullable = field_schema.get("nullable") == Some(&Value::Bool(true));
                if map[&key].is_null() && !nullable {
                    map.remove(&key);
                    continue;
                }
                prune(
                    field_schema,
                    map.get_mut(&key).unwrap(),
                    &child(path, &key),
                    unknown,
                );
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter_mut().enumerate() {
                    prune(item_schema, item, &format!("{path}[{index}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
        return;
    }
    if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        let found = type_name(value);
        if found != expected {
            errors.push(format!(
                "{path}: Invalid value: \"{found}\": {path} in body must be of type {expected}: \"{found}\""
            ));
            return;
        }
    }
    if schema.get("x-preserve").is_some() {
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            errors.push(format!(
                "{path}: Unsupported value: {value}: supported values: {}",
                listed.join(", ")
            ));
        }
    }
    if let (Some(minimum), Some(number)) = (
        schema.get("minimum").and_then(Value::as_i64),
        value.as_i64(),
    ) {
        if number < minimum {
            errors.push(format!(
                "{path}: Invalid value: {number}: {path} in body should be greater than or equal to {minimum}"
            ));
        }
    }
    if let (Some(maximum), Some(number)) = (
        schema.get("maximum").and_then(Value::as_i64),
        value.as_i64(),
    ) {
        if number > maximum {
            errors.push(format!(
                "{path}: Invalid value: {number}: {path} in body should be less than or equal to {maximum}"
            ));
        }
    }
    if let (Some(pattern), Some(text)) = (
        schema.get("pattern").and_then(Value::as_str),
        value.as_str(),
    ) {
        if !regex::Regex::new(pattern).unwrap().is_match(text) {
            errors.push(format!(
                "{path}: Invalid value: \"{text}\": {path} in body should match '{pattern}'"
            ));
        }
    }
    match value {
        Value::Object(map) => {
            for required in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !map.contains_key(required) {
                    errors.push(format!("{}: Required value", child(path, required)));
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            for (key, field) in map {
                if let Some(field_schema) = properties
                    .and_then(|properties: &Map<String, Value>| properties.get(key))
                    .or(additional)
                {
                    check(field_schema, field, &child(path, key), errors);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{index}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn string() -> Value {
    json!({"type": "string"})
}

fn strings(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

fn daemon() -> Value {
    json!({"type": "object", "properties": {
        "lastBootTime": string(),
        "lastReconfigurationTime": string(),
        "routerID": string(),
        "state": strings(&["Ready", "NotReady"]),
        "version": string(),
    }})
}

fn peers() -> Value {
    json!({"type": "array", "items": {"type": "object", "properties": {
        "peerIP": string(),
        "since": string(),
        "state": strings(&["Idle", "Connect", "Active", "OpenSent", "OpenConfirm", "Established", "Close"]),
        "type": strings(&["NodeMesh", "NodePeer", "GlobalPeer"]),
    }}})
}

fn routes() -> Value {
    json!({"type": "array", "items": {"type": "object", "properties": {
        "destination": string(),
        "gateway": string(),
        "interface": string(),
        "learnedFrom": {"type": "object", "properties": {
            "peerIP": string(),
            "sourceType": strings(&["Kernel", "Static", "Direct", "NodeMesh", "BGPPeer"]),
        }},
        "type": strings(&["FIB", "RIB"]),
    }}})
}

/// `caliconodestatuses.crd.projectcalico.org` as v3.32 defines it.
fn calico_node_status() -> Value {
    json!({"type": "object", "properties": {
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object", "x-preserve": true},
        "spec": {"type": "object", "properties": {
            "classes": {"type": "array", "items": strings(&["Agent", "BGP", "Routes"])},
            "node": string(),
            "updatePeriodSeconds": {"type": "integer", "format": "int32"},
        }},
        "status": {"type": "object", "properties": {
            "agent": {"type": "object", "properties": {"birdV4": daemon(), "birdV6": daemon()}},
            "bgp": {
                "type": "object",
                "properties": {
                    "numberEstablishedV4": {"type": "integer"},
                    "numberEstablishedV6": {"type": "integer"},
                    "numberNotEstablishedV4": {"type": "integer"},
                    "numberNotEstablishedV6": {"type": "integer"},
                    "peersV4": peers(),
                    "peersV6": peers(),
                },
                "required": ["numberEstablishedV4", "numberEstablishedV6", "numberNotEstablishedV4", "numberNotEstablishedV6"],
            },
            "lastUpdated": {"type": "string", "format": "date-time", "nullable": true},
            "routes": {"type": "object", "properties": {"routesV4": routes(), "routesV6": routes()}},
        }},
    }})
}
