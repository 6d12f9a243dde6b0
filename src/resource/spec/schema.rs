//! JSON Schemas of whole resource documents, generated from the typed specs, with the releases that
//! have each field (`x-netctl-since` and friends, see `resource::availability`).
//!
//! The files under `schemas/` are written from these (each with an `$id`) and kept in sync by the
//! test in `cli::schema`: the newest line's in `schemas/<plural>.schema.json`, and each older
//! line's in `schemas/v3.NN/` (as that line's newest patch has it: fields it lacks left out, kinds
//! it lacks have no file). Editors and
//! CI linters can use them to check manifests before netctl sees them. The schemas describe shape
//! only: rules that span fields (and defaulting) live in `validate.rs`.

use schemars::JsonSchema;
use serde::Serialize;

use super::*;
use crate::resource::Kind;

/// [`document_schema`], built once per kind and process (what validation and loading read).
pub fn document_schema_of(kind: Kind) -> &'static serde_json::Value {
    static SCHEMAS: crate::resource::kind::PerKind<serde_json::Value> =
        crate::resource::kind::PerKind::new();
    SCHEMAS.get(kind, document_schema)
}

/// The JSON Schema of a whole resource document of `kind` (envelope, metadata and typed spec).
pub fn document_schema(kind: Kind) -> serde_json::Value {
    match kind {
        Kind::BgpConfiguration => document_schema_for::<BgpConfigurationSpec>(kind),
        Kind::BgpFilter => document_schema_for::<BgpFilterSpec>(kind),
        Kind::BgpPeer => document_schema_for::<BgpPeerSpec>(kind),
        Kind::CalicoNodeStatus => document_schema_for::<CalicoNodeStatusSpec>(kind),
        Kind::ClusterInformation => document_schema_for::<ClusterInformationSpec>(kind),
        Kind::FelixConfiguration => document_schema_for::<FelixConfigurationSpec>(kind),
        Kind::GlobalNetworkPolicy => document_schema_for::<GlobalNetworkPolicySpec>(kind),
        Kind::GlobalNetworkSet | Kind::NetworkSet => document_schema_for::<NetworkSetSpec>(kind),
        Kind::HostEndpoint => document_schema_for::<HostEndpointSpec>(kind),
        Kind::IpamConfiguration => document_schema_for::<IpamConfigurationSpec>(kind),
        Kind::IpPool => document_schema_for::<IpPoolSpec>(kind),
        Kind::IpReservation => document_schema_for::<IpReservationSpec>(kind),
        Kind::KubeControllersConfiguration => {
            document_schema_for::<KubeControllersConfigurationSpec>(kind)
        }
        Kind::NetworkPolicy => document_schema_for::<NetworkPolicySpec>(kind),
        Kind::Node => document_schema_for::<NodeSpec>(kind),
        Kind::Profile => document_schema_for::<ProfileSpec>(kind),
        Kind::StagedGlobalNetworkPolicy => {
            document_schema_for::<StagedGlobalNetworkPolicySpec>(kind)
        }
        Kind::StagedKubernetesNetworkPolicy => {
            document_schema_for::<StagedKubernetesNetworkPolicySpec>(kind)
        }
        Kind::StagedNetworkPolicy => document_schema_for::<StagedNetworkPolicySpec>(kind),
        Kind::Tier => document_schema_for::<TierSpec>(kind),
        Kind::WorkloadEndpoint => document_schema_for::<WorkloadEndpointSpec>(kind),
    }
}

fn document_schema_for<T: JsonSchema + Serialize>(kind: Kind) -> serde_json::Value {
    let mut spec = schemars::schema_for!(T).to_value();
    allow_null_in_enums(&mut spec);
    let mut status = serde_json::json!({
        "description": "Owned by the system (e.g. a Node's status): accepted and ignored."
    });
    if kind == Kind::Node {
        let mut node_status = schemars::schema_for!(node::NodeStatus).to_value();
        if let Some(object) = node_status.as_object_mut() {
            object.remove("$schema");
            object.insert(
                "description".to_string(),
                serde_json::json!(
                    "Owned by the system: checked as upstream checks it, never written."
                ),
            );
        }
        status = node_status;
    }
    // The status's own definitions join the spec's under the document's `$defs`.
    let mut status_definitions = serde_json::Map::new();
    if kind == Kind::CalicoNodeStatus {
        let mut report = schemars::schema_for!(node_status::CalicoNodeStatusStatus).to_value();
        if let Some(object) = report.as_object_mut() {
            object.remove("$schema");
            if let Some(serde_json::Value::Object(definitions)) = object.remove("$defs") {
                status_definitions = definitions;
            }
            object.insert(
                "description".to_string(),
                serde_json::json!(
                    "Written by the node's calico-node: accepted and ignored in documents."
                ),
            );
        }
        status = report;
    }
    let mut definitions = spec
        .as_object_mut()
        .and_then(|object| {
            object.remove("$schema");
            object.remove("$defs")
        })
        .unwrap_or_else(|| serde_json::json!({}));
    if let Some(definitions) = definitions.as_object_mut() {
        definitions.extend(status_definitions);
    }
    let string_map = serde_json::json!({
        "type": "object",
        "additionalProperties": { "type": "string" }
    });
    let mut metadata_properties = serde_json::json!({
        "name": { "type": "string", "maxLength": 253 },
        "labels": string_map,
        "annotations": string_map,
        "uid": { "type": "string" },
        "creationTimestamp": { "type": "string" },
        "resourceVersion": { "type": "string" }
    });
    if kind.is_namespaced() {
        metadata_properties["namespace"] = serde_json::json!({ "type": "string" });
    }
    let mut metadata = serde_json::json!({
        "type": "object",
        "properties": metadata_properties,
        "required": ["name"]
    });
    if !kind.is_namespaced() {
        metadata["not"] = serde_json::json!({ "required": ["namespace"] });
    }
    let mut document = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": kind.as_str(),
        "description": format!("A `{}` resource of `{}`.", kind.as_str(), crate::resource::API_VERSION),
        "type": "object",
        "properties": {
            "apiVersion": { "const": crate::resource::API_VERSION },
            "kind": { "const": kind.as_str() },
            "metadata": metadata,
            "spec": spec,
            "status": status
        },
        "required": ["apiVersion", "kind", "metadata"],
        "additionalProperties": false,
        "$defs": definitions
    });
    if let Some(since) = kind.since() {
        document["x-netctl-since"] = serde_json::json!(since.to_string());
    }
    document
}

/// An optional field's allowed values (written beside the field, `enum`) include `null`: a document
/// may write `field: ~`, which is the field left out.
fn allow_null_in_enums(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(object) => {
            let nullable = object
                .get("type")
                .and_then(|kind| kind.as_array())
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "null"));
            if let (true, Some(serde_json::Value::Array(values))) =
                (nullable, object.get_mut("enum"))
            {
                if !values.iter().any(serde_json::Value::is_null) {
                    values.push(serde_json::Value::Null);
                }
            }
            object.values_mut().for_each(allow_null_in_enums);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(allow_null_in_enums),
        _ => {}
    }
}

/// What every `$id` starts with; the rest is the file's path under `schemas/`
/// (`urn:netctl:schema:v3.29/hostendpoints.schema.json`).
pub const SCHEMA_ID_PREFIX: &str = "urn:netctl:schema:";

/// `schema` with an `$id` (after `$schema`) naming the file at `path` under `schemas/`.
pub fn with_id(path: &str, schema: serde_json::Value) -> serde_json::Value {
    let serde_json::Value::Object(fields) = schema else {
        return schema;
    };
    let mut identified = serde_json::Map::new();
    let mut fields = fields.into_iter().peekable();
    if let Some((key, value)) = fields.next_if(|(key, _)| key == "$schema") {
        identified.insert(key, value);
    }
    identified.insert(
        "$id".to_string(),
        serde_json::Value::String(format!("{SCHEMA_ID_PREFIX}{path}")),
    );
    identified.extend(fields.filter(|(key, _)| key != "$id"));
    serde_json::Value::Object(identified)
}

/// The text of a schema file: pretty JSON and a final newline.
pub fn schema_text(schema: &serde_json::Value) -> String {
    serde_json::to_string_pretty(schema).unwrap_or_default() + "\n"
}

/// The path under `schemas/` of `kind`'s schema for `line` (the newest line's at the top).
pub fn kind_schema_path(kind: Kind, line: &crate::release::Release) -> String {
    if line.line() == crate::release::newest_known().line() {
        format!("{}.schema.json", kind.plural())
    } else {
        format!("{}/{}.schema.json", line.line(), kind.plural())
    }
}

/// The schema files of every line: `(path under schemas/, content)`, each with its `$id`. The
/// newest line's are at the top, each older line's under `v3.NN/`.
pub fn schema_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for line in crate::release::known_lines() {
        for kind in Kind::ALL {
            if kind.since().is_some_and(|since| since > line) {
                continue;
            }
            let schema =
                crate::resource::availability::schema_for_release(&document_schema(kind), &line);
            let path = kind_schema_path(kind, &line);
            files.push((path.clone(), schema_text(&with_id(&path, schema))));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_describe_the_envelope_and_the_spec() {
        let schema = document_schema(Kind::GlobalNetworkPolicy);
        assert_eq!(schema["properties"]["kind"]["const"], "GlobalNetworkPolicy");
        assert_eq!(schema["properties"]["spec"]["additionalProperties"], false);
        assert!(schema["$defs"]["Rule"].is_object());
        let namespaced = document_schema(Kind::NetworkPolicy);
        assert!(namespaced["properties"]["metadata"]["properties"]["namespace"].is_object());
    }

    #[test]
    fn each_line_has_the_schemas_of_its_kinds_only() {
        let files = schema_files();
        let has = |name: &str| files.iter().any(|(known, _)| known == name);
        assert!(has("stagednetworkpolicies.schema.json"));
        assert!(has("v3.30/stagednetworkpolicies.schema.json"));
        assert!(!has("v3.29/stagednetworkpolicies.schema.json"));
        assert!(has("v3.29/tiers.schema.json"));
        assert!(!has("v3.28/tiers.schema.json"));
        let felix = |name: &str| {
            files
                .iter()
                .find(|(known, _)| known == name)
                .map(|(_, text)| text.clone())
                .unwrap()
        };
        assert!(felix("v3.31/felixconfigurations.schema.json").contains("\"iptablesLockTimeout\""));
        assert!(!felix("felixconfigurations.schema.json").contains("\"iptablesLockTimeout\""));
    }
}
