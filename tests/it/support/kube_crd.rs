//! Custom resources checked against their CRD's structural schema, as kube-apiserver checks them,
//! for the test API server ([`super::kube_api`]).
//!
//! The schemas are written here from the CRD manifests upstream ships (field names, types, enums,
//! `nullable`, `required`), not copied: CalicoNodeStatus in both groups, from
//! `libcalico-go/config/crd/crd.projectcalico.org_caliconodestatuses.yaml` of release-v3.32 (the v3
//! one is the same), the IPAM kinds in both API groups ([`super::kube_crd_ipam`], with `pattern` and bounds), and every kind of v3.32's native `projectcalico.org/v3` CRDs from the field
//! table in [`super::kube_crd_fields`]: `metadata` and `spec` required, the spec's top-level fields
//! and their types, a `status` only where the CRD has one. What a real server does with a body,
//! reproduced:
//! - a field the schema does not have is pruned from what is stored (a `Warning: unknown field
//!   "spec.x"` header), or refused with `fieldValidation=Strict` (400, `strict decoding error`);
//! - a null in a field that is not `nullable` is pruned;
//! - a value of the wrong type, a value outside an `enum`, a `minimum` or a `maximum`, a string
//!   not matching a `pattern`, a missing `required` field and a name that is not a lowercase RFC
//!   1123 subdomain make the request `422 Invalid` with one cause per problem
//!   (`spec.classes[0]: Unsupported value: "x": supported values: "Agent", "BGP", "Routes"`).
//!
//! `metadata` is the server's own business and `apiVersion`/`kind` are matched by routing. A
//! schema node marked `x-kubernetes-preserve-unknown-fields` is not looked into (the nested
//! objects of the field tables).

use serde_json::{Value, json};

/// What the schema says about a body.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Findings {
    /// Paths of fields to prune (`spec.foo`), unknown ones first.
    pub unknown: Vec<String>,
    pub nulls: Vec<String>,
    /// One cause per problem, as the server words it.
    pub invalid: Vec<String>,
}

/// The schema of a custom resource kind the server checks, if it checks it.
pub fn schema(api_version: &str, kind: &str) -> Option<Value> {
    match (api_version, kind) {
        ("crd.projectcalico.org/v1", "CalicoNodeStatus") => Some(calico_node_status()),
        ("operator.tigera.io/v1", "TigeraStatus") => Some(tigera_status()),
        ("projectcalico.org/v3", "CalicoNodeStatus") => {
            let mut schema = calico_node_status();
            schema["required"] = json!(["metadata", "spec"]);
            Some(schema)
        }
        _ => super::kube_crd_ipam::schema(api_version, kind).or_else(|| match api_version {
            "projectcalico.org/v3" => v3_schema(kind),
            _ => None,
        }),
    }
}

/// A kind of the `projectcalico.org/v3` group from its field table.
fn v3_schema(kind: &str) -> Option<Value> {
    let fields = super::kube_crd_fields::V3_KINDS
        .iter()
        .find(|fields| fields.kind == kind)?;
    let properties: serde_json::Map<String, Value> = fields
        .spec
        .iter()
        .map(|(name, kind)| {
            let mut field = json!({"x-kubernetes-preserve-unknown-fields": true});
            if !kind.is_empty() {
                field["type"] = json!(kind);
            }
            (name.to_string(), field)
        })
        .collect();
    let mut schema = json!({"type": "object", "required": ["metadata", "spec"], "properties": {
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": properties, "required": fields.required},
    }});
    if fields.status {
        schema["properties"]["status"] =
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    }
    Some(schema)
}

/// Whether a PUT of the object leaves its `status` alone and a POST drops it (the CRD has a
/// status subresource): under `projectcalico.org/v3` IPPool, KubeControllersConfiguration and
/// Tier, under `crd.projectcalico.org/v1` only KubeControllersConfiguration.
pub fn calico_status_subresource(group: &str, kind: &str) -> bool {
    match group {
        "projectcalico.org" => super::kube_crd_fields::V3_KINDS
            .iter()
            .any(|fields| fields.kind == kind && fields.status_subresource),
        _ => kind == "KubeControllersConfiguration",
    }
}

/// Checks `body` against `schema` (the whole object's `openAPIV3Schema`).
pub fn check(schema: &Value, body: &Value) -> Findings {
    let mut findings = Findings::default();
    let name = body["metadata"]["name"].as_str().unwrap_or_default();
    if !is_subdomain(name) {
        findings.invalid.push(format!(
            "metadata.name: Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        ));
    }
    if let (Some(required), Some(object)) = (schema["required"].as_array(), body.as_object()) {
        for name in required.iter().filter_map(Value::as_str) {
            if object.get(name).is_none_or(Value::is_null) {
                findings.invalid.push(format!("{name}: Required value"));
            }
        }
    }
    if let (Some(properties), Some(object)) = (schema["properties"].as_object(), body.as_object()) {
        for (key, value) in object {
            if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match properties.get(key) {
                Some(field) => walk(field, value, key, &mut findings),
                None => findings.unknown.push(key.clone()),
            }
        }
    }
    findings
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

fn walk(schema: &Value, value: &Value, path: &str, findings: &mut Findings) {
    if value.is_null() {
        if schema["nullable"] != json!(true) {
            findings.nulls.push(path.to_string());
        }
        return;
    }
    let expected = schema["type"].as_str().unwrap_or("");
    let found = match value {
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let fits =
        expected.is_empty() || expected == found || (expected == "number" && found == "integer");
    if !fits {
        findings.invalid.push(format!(
            "{path}: Invalid value: \"{found}\": {path} in body must be of type {expected}: \"{found}\""
        ));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array() {
        if !allowed.contains(value) {
            let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            findings.invalid.push(format!(
                "{path}: Unsupported value: {value}: supported values: {}",
                listed.join(", ")
            ));
        }
    }
    bounds(schema, value, path, findings);
    if schema["x-kubernetes-preserve-unknown-fields"] == json!(true)
        && schema.get("properties").is_none()
    {
        return;
    }
    match value {
        Value::Object(object) => {
            if let Some(required) = schema["required"].as_array() {
                for name in required.iter().filter_map(Value::as_str) {
                    if object.get(name).is_none_or(Value::is_null) {
                        findings
                            .invalid
                            .push(format!("{path}.{name}: Required value"));
                    }
                }
            }
            let properties = schema["properties"].as_object();
            let additional = schema.get("additionalProperties");
            for (key, child) in object {
                let child_path = format!("{path}.{key}");
                match properties
                    .and_then(|properties| properties.get(key))
                    .or(additional)
                {
                    Some(field) => walk(field, child, &child_path, findings),
                    None => findings.unknown.push(child_path),
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(
                    &schema["items"],
                    item,
                    &format!("{path}[{index}]"),
                    findings,
                );
            }
        }
        _ => {}
    }
}

/// `minimum`, `maximum` and `pattern`, worded as the server words them.
fn bounds(schema: &Value, value: &Value, path: &str, findings: &mut Findings) {
    if let Some(number) = value.as_i64() {
        if let Some(minimum) = schema["minimum"]
            .as_i64()
            .filter(|minimum| number < *minimum)
        {
            findings.invalid.push(format!(
                "{path}: Invalid value: {number}: {path} in body should be greater than or equal to {minimum}"
            ));
        }
        if let Some(maximum) = schema["maximum"]
            .as_i64()
            .filter(|maximum| number > *maximum)
        {
            findings.invalid.push(format!(
                "{path}: Invalid value: {number}: {path} in body should be less than or equal to {maximum}"
            ));
        }
    }
    if let (Some(pattern), Some(text)) = (schema["pattern"].as_str(), value.as_str()) {
        if !regex::Regex::new(pattern).unwrap().is_match(text) {
            findings.invalid.push(format!(
                "{path}: Invalid value: \"{text}\": {path} in body should match '{pattern}'"
            ));
        }
    }
}

/// Removes a pruned field (`spec.a.b`, `status.bgp.peersV4[0].x`) from `object`.
pub fn prune(object: &mut Value, path: &str) {
    let mut parts: Vec<(String, Option<usize>)> = Vec::new();
    for part in path.split('.') {
        match part.split_once('[') {
            Some((name, index)) => {
                parts.push((name.to_string(), None));
                let index = index.trim_end_matches(']').parse().ok();
                parts.push((String::new(), index));
            }
            None => parts.push((part.to_string(), None)),
        }
    }
    let Some(((last, _), parents)) = parts.split_last() else {
        return;
    };
    let mut node = object;
    for (name, index) in parents {
        node = match index {
            Some(index) => &mut node[*index],
            None => &mut node[name.as_str()],
        };
    }
    if let Some(object) = node.as_object_mut() {
        object.remove(last);
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
        "metadata": {"type": "object"},
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

/// `tigerastatuses.operator.tigera.io`, the operator's report per component (`manifests/
/// operator-crds.yaml`): conditions `Available`, `Progressing`, `Degraded`.
fn tigera_status() -> Value {
    json!({"type": "object", "properties": {
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "spec": {"type": "object"},
        "status": {"type": "object", "properties": {
            "conditions": {"type": "array", "items": {"type": "object", "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": string(),
                "observedGeneration": {"type": "integer", "format": "int64"},
                "reason": string(),
                "status": string(),
                "type": string(),
            }, "required": ["lastTransitionTime", "status", "type"]}},
        }, "required": ["conditions"]},
    }})
}
