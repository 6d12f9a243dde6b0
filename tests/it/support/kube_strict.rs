//! Strict decoding of the request bodies of core kinds for the test API server, as kube-apiserver
//! decodes them: into the kind's typed object (here the `k8s-openapi` type), refusing a value of the
//! wrong type and finding fields the type does not have.
//!
//! What a real API server answers, which [`super::kube_api`] reproduces from these findings:
//! - create/update (POST/PUT): a type mismatch is `400 BadRequest` with the message
//!   `<Kind> in version "<v>" cannot be handled as a <Kind>: json: cannot unmarshal <json type> into
//!   Go struct field <path> of type <Go type>`; an unknown field is `400 BadRequest`
//!   `strict decoding error: unknown field "<path>"` with `fieldValidation=Strict`, and otherwise
//!   dropped with a `Warning` header;
//! - server-side apply: both are `500` with no reason and the message `failed to create typed patch
//!   object (<ns>/<name>; <apiVersion>, Kind=<Kind>): .<path>: expected numeric (int or float), got
//!   string` or `...: field not declared in schema` (structured-merge-diff's conversion error).
//!
//! Custom resources are checked against their CRD's schema where [`super::kube_crd`] has it
//! (CalicoNodeStatus); the other Calico and operator kinds are not checked. Batch Jobs are checked
//! too (canal-etcd has one).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Why a body does not decode into its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A value of the wrong type at `path` (`spec.template.spec.volumes[0].secret.defaultMode`):
    /// the JSON type found and the Go type expected.
    WrongType {
        path: String,
        found: &'static str,
        expected: String,
    },
    /// Fields the kind does not have.
    Unknown { paths: Vec<String> },
}

/// Whether the server checks `kind` of `api_version` strictly.
pub fn is_checked(api_version: &str, kind: &str) -> bool {
    decoder(api_version, kind).is_some()
}

/// Decodes `body` as its kind strictly. `Ok` for kinds that are not checked.
pub fn check(api_version: &str, kind: &str, body: &Value) -> Result<(), Refusal> {
    match decoder(api_version, kind) {
        Some(decode) => decode(body),
        None => Ok(()),
    }
}

type Decoder = fn(&Value) -> Result<(), Refusal>;

fn decoder(api_version: &str, kind: &str) -> Option<Decoder> {
    Some(match (api_version, kind) {
        ("v1", "ConfigMap") => typed::<ConfigMap>,
        ("v1", "Secret") => typed::<Secret>,
        ("v1", "ServiceAccount") => typed::<ServiceAccount>,
        ("v1", "Namespace") => typed::<Namespace>,
        ("v1", "Pod") => typed::<Pod>,
        ("v1", "Node") => typed::<Node>,
        ("v1", "Service") => typed::<Service>,
        ("apps/v1", "DaemonSet") => typed::<DaemonSet>,
        ("apps/v1", "Deployment") => typed::<Deployment>,
        ("batch/v1", "Job") => typed::<Job>,
        ("coordination.k8s.io/v1", "Lease") => typed::<Lease>,
        ("policy/v1", "PodDisruptionBudget") => typed::<PodDisruptionBudget>,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => typed::<ClusterRole>,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => typed::<ClusterRoleBinding>,
        ("rbac.authorization.k8s.io/v1", "Role") => typed::<Role>,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => typed::<RoleBinding>,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => typed::<SelfSubjectAccessReview>,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            typed::<CustomResourceDefinition>
        }
        _ => return None,
    })
}

fn typed<T: DeserializeOwned + Serialize>(body: &Value) -> Result<(), Refusal> {
    let decoded: T = serde_path_to_error::deserialize(body.clone()).map_err(|error| {
        let path = error.path().to_string();
        let found = json_type(find(body, &path));
        Refusal::WrongType {
            expected: go_type(&error.inner().to_string()),
            path,
            found,
        }
    })?;
    // k8s-openapi ignores fields it does not know; what did not survive the round trip is unknown.
    let kept = serde_json::to_value(&decoded).unwrap_or(Value::Null);
    let mut paths = Vec::new();
    unknown_fields(body, &kept, String::new(), &mut paths);
    if paths.is_empty() {
        Ok(())
    } else {
        Err(Refusal::Unknown { paths })
    }
}

fn unknown_fields(sent: &Value, kept: &Value, path: String, out: &mut Vec<String>) {
    match (sent, kept) {
        (Value::Object(sent), Value::Object(kept)) => {
            for (key, value) in sent {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match kept.get(key) {
                    Some(kept_value) => unknown_fields(value, kept_value, child, out),
                    // A null is an absent field to the decoder.
                    None if value.is_null() => {}
                    None => out.push(child),
                }
            }
        }
        (Value::Array(sent), Value::Array(kept)) => {
            for (index, (value, kept_value)) in sent.iter().zip(kept).enumerate() {
                unknown_fields(value, kept_value, format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

/// The value at a serde path (`a.b[0].c`).
fn find<'a>(value: &'a Value, path: &str) -> &'a Value {
    let mut node = value;
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let (name, indexes) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            node = &node[name];
        }
        for index in indexes
            .split(['[', ']'])
            .filter_map(|index| index.parse::<usize>().ok())
        {
            node = &node[index];
        }
    }
    node
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The Go type named by serde's "expected ..." (`i32` is `int32`).
fn go_type(message: &str) -> String {
    let expected = message
        .split("expected ")
        .nth(1)
        .unwrap_or("a value")
        .trim();
    match expected {
        "i32" => "int32",
        "i64" => "int64",
        "u32" => "uint32",
        "a boolean" | "bool" => "bool",
        "a string" => "string",
        "f64" => "float64",
        "a sequence" => "[]interface {}",
        other if other.starts_with("struct ") || other.starts_with("a map") => "object",
        other => other,
    }
    .to_string()
}
