//! JSON Schemas of whole resource documents, generated from the typed specs.
//!
//! The files under `schemas/` (one per kind, `<plural>.schema.json`) are written from these and kept
//! in sync by the test below; editors and CI linters can use them to check manifests before netctl
//! sees them. The schemas describe shape only: rules that span fields (and defaulting) live in
//! `validate.rs`.

use schemars::JsonSchema;
use serde::Serialize;

use super::*;
use crate::resource::Kind;

/// The JSON Schema of a whole resource document of `kind` (envelope, metadata and typed spec).
pub fn document_schema(kind: Kind) -> serde_json::Value {
    match kind {
        Kind::BgpConfiguration => document_schema_for::<BgpConfigurationSpec>(kind),
        Kind::BgpFilter => document_schema_for::<BgpFilterSpec>(kind),
        Kind::BgpPeer => document_schema_for::<BgpPeerSpec>(kind),
        Kind::ClusterInformation => document_schema_for::<ClusterInformationSpec>(kind),
        Kind::FelixConfiguration => document_schema_for::<FelixConfigurationSpec>(kind),
        Kind::GlobalNetworkPolicy => document_schema_for::<GlobalNetworkPolicySpec>(kind),
        Kind::GlobalNetworkSet | Kind::NetworkSet => document_schema_for::<NetworkSetSpec>(kind),
        Kind::HostEndpoint => document_schema_for::<HostEndpointSpec>(kind),
        Kind::IpPool => document_schema_for::<IpPoolSpec>(kind),
        Kind::IpReservation => document_schema_for::<IpReservationSpec>(kind),
        Kind::KubeControllersConfiguration => {
            document_schema_for::<KubeControllersConfigurationSpec>(kind)
        }
        Kind::NetworkPolicy => document_schema_for::<NetworkPolicySpec>(kind),
        Kind::Node => document_schema_for::<NodeSpec>(kind),
        Kind::Profile => document_schema_for::<ProfileSpec>(kind),
        Kind::Tier => document_schema_for::<TierSpec>(kind),
        Kind::WorkloadEndpoint => document_schema_for::<WorkloadEndpointSpec>(kind),
    }
}

fn document_schema_for<T: JsonSchema + Serialize>(kind: Kind) -> serde_json::Value {
    let mut spec = schemars::schema_for!(T).to_value();
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
    let definitions = spec
        .as_object_mut()
        .and_then(|object| {
            object.remove("$schema");
            object.remove("$defs")
        })
        .unwrap_or_else(|| serde_json::json!({}));
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
    serde_json::json!({
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
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Fails when the checked-in `schemas/*.schema.json` drift from the typed specs. After changing a
    /// spec, regenerate them with:
    ///
    /// ```text
    /// NETCTL_UPDATE_SCHEMAS=1 cargo test --lib resource::spec::schema
    /// ```
    #[test]
    fn checked_in_schemas_match_the_typed_specs() {
        let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
        let update = std::env::var_os("NETCTL_UPDATE_SCHEMAS").is_some();
        let mut stale = Vec::new();
        for kind in Kind::ALL {
            let path = directory.join(format!("{}.schema.json", kind.plural()));
            let generated = serde_json::to_string_pretty(&document_schema(kind)).unwrap() + "\n";
            if update {
                std::fs::create_dir_all(&directory).unwrap();
                std::fs::write(&path, generated).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(generated.as_str()) {
                stale.push(path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "schemas are missing or out of date: {stale:?}\nregenerate with \
             `NETCTL_UPDATE_SCHEMAS=1 cargo test --lib resource::spec::schema`"
        );
    }

    #[test]
    fn schemas_describe_the_envelope_and_the_spec() {
        let schema = document_schema(Kind::GlobalNetworkPolicy);
        assert_eq!(schema["properties"]["kind"]["const"], "GlobalNetworkPolicy");
        assert_eq!(schema["properties"]["spec"]["additionalProperties"], false);
        assert!(schema["$defs"]["Rule"].is_object());
        let namespaced = document_schema(Kind::NetworkPolicy);
        assert!(namespaced["properties"]["metadata"]["properties"]["namespace"].is_object());
    }
}
