//! Structural-schema validation of the IPAM custom resources for the test API server, as
//! kube-apiserver validates a custom resource against its CRD's `openAPIV3Schema`.
//!
//! The schemas are upstream's CRDs of v3.32, written out here from their facts:
//! `libcalico-go/config/crd/crd.projectcalico.org_{ipamblocks,blockaffinities,ipamhandles,
//! ipamconfigs}.yaml` and `api/config/crd/projectcalico.org_{ipamblocks,blockaffinities,
//! ipamhandles,ipamconfigurations}.yaml`. What the real server does, and this module reproduces:
//! - a field the schema does not declare is pruned (dropped, with a `Warning`), or with
//!   `fieldValidation=Strict` refused with `400 BadRequest` `strict decoding error: unknown field
//!   "spec.x"`;
//! - `null` where the schema is not `nullable` is pruned, as if the field were absent;
//! - then the object is validated: a value of the wrong type, outside an `enum`, a `minimum` or a
//!   `maximum`, not matching a `pattern`, or a `required` field missing is `422 Invalid`:
//!   `IPAMBlock.crd.projectcalico.org "10-0-0-0-26" is invalid: spec.allocations[0]: Invalid value:
//!   "string": spec.allocations[0] in body must be of type integer: "string"` (several errors in
//!   `[...]`, separated by `, `);
//! - the object name must be a lowercase RFC 1123 subdomain (`metadata.name: Invalid value: ...`).
//!
//! Defaulting (`default:`) is not applied: netctl always sends the fields that have defaults.

use serde_json::{Map, Value, json};

/// The schema of an IPAM kind of `api_version`, when the server checks it.
pub fn schema_for(api_version: &str, kind: &str) -> Option<Value> {
    let v3 = match api_version {
        "crd.projectcalico.org/v1" => false,
        "projectcalico.org/v3" => true,
        _ => return None,
    };
    let string = json!({"type": "string"});
    let integer = json!({"type": "integer"});
    let boolean = json!({"type": "boolean"});
    let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let spec = match kind {
        "IPAMBlock" => {
            let affinity = match v3 {
                true => {
                    json!({"type": "string", "pattern": "^(host|virtual):[a-zA-Z0-9\\.\\-_]+$"})
                }
                false => string.clone(),
            };
            json!({
                "type": "object",
                "properties": {
                    "affinity": affinity,
                    "affinityClaimTime": string,
                    "allocations": {"type": "array", "items": {"type": "integer", "nullable": true}},
                    "attributes": {"type": "array", "items": {"type": "object", "properties": {
                        "alternateOwnerAttrs": string_map,
                        "handle_id": string,
                        "secondary": string_map,
                    }}},
                    "cidr": string,
                    "deleted": boolean,
                    "sequenceNumber": integer,
                    "sequenceNumberForAllocation": {"type": "object", "additionalProperties": integer},
                    "strictAffinity": boolean,
                    "unallocated": {"type": "array", "items": integer},
                },
                "required": ["allocations", "attributes", "cidr", "strictAffinity", "unallocated"],
            })
        }
        "BlockAffinity" => {
            let (deleted, state) = match v3 {
                true => (
                    boolean.clone(),
                    json!({"type": "string", "enum": ["", "confirmed", "pending", "pendingDeletion"]}),
                ),
                false => (string.clone(), string.clone()),
            };
            json!({
                "type": "object",
                "properties": {"cidr": string, "deleted": deleted, "node": string, "state": state, "type": string},
                "required": ["cidr", "deleted", "node", "state"],
            })
        }
        "IPAMHandle" => json!({
            "type": "object",
            "properties": {
                "block": {"type": "object", "additionalProperties": integer},
                "deleted": boolean,
                "handleID": string,
            },
            "required": ["block", "handleID"],
        }),
        "IPAMConfig" if !v3 => config_spec(2147483647),
        "IPAMConfiguration" if v3 => config_spec(1000000),
        _ => return None,
    };
    Some(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "x-preserve": true},
            "spec": spec,
        },
    }))
}

fn config_spec(maximum: i64) -> Value {
    json!({
        "type": "object",
        "properties": {
            "autoAllocateBlocks": {"type": "boolean"},
            "kubeVirtVMAddressPersistence": {"type": "string", "enum": ["Enabled", "Disabled"]},
            "maxBlocksPerHost": {"type": "integer", "minimum": 0, "maximum": maximum},
            "strictAffinity": {"type": "boolean"},
        },
        "required": ["autoAllocateBlocks", "strictAffinity"],
    })
}

/// What validating an object found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Fields the schema does not declare (pruned, or refused with strict field validation).
    pub unknown: Vec<String>,
    /// Validation errors, each as the API server words it.
    pub invalid: Vec<String>,
}

/// Prunes `object` (unknown fields, nulls where not nullable) and validates what remains.
pub fn validate(schema: &Value, object: &mut Value) -> Outcome {
    let mut outcome = Outcome::default();
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
