//! Conversion between [`Resource`] and the custom resources of `crd.projectcalico.org/v1`, in
//! upstream's layout (`reference/calicoctl.md` §3.7), so that data written by either tool reads back
//! in the other.
//!
//! The custom resource carries the name (tiered for policies), namespace, `resourceVersion`, a
//! converted UID, only the labels and annotations that name `projectcalico.org/` or
//! `operator.tigera.io/`, and the `projectcalico.org/metadata` annotation holding the v3 metadata as
//! JSON (without namespace, `resourceVersion` and UID; with the name for policies only). The spec is
//! copied as is. This module knows nothing about HTTP.

use std::collections::BTreeMap;

use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::datastore::StoreError;
use crate::datastore::etcd::stored_name;
use crate::resource::{API_VERSION, Kind, ObjectMeta, Resource};

/// The API group of the Calico custom resources.
pub const CRD_GROUP: &str = "crd.projectcalico.org";

/// The version of the Calico custom resources.
pub const CRD_VERSION: &str = "v1";

/// The annotation that holds the v3 metadata of a custom resource.
pub const METADATA_ANNOTATION: &str = "projectcalico.org/metadata";

/// The API resource of a custom-resource kind.
pub fn api_resource(kind: Kind) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(CRD_GROUP, CRD_VERSION, kind.as_str()),
        kind.plural(),
    )
}

fn is_policy(kind: Kind) -> bool {
    matches!(kind, Kind::NetworkPolicy | Kind::GlobalNetworkPolicy)
}

/// Whether a label or annotation is copied onto the custom resource itself (upstream keeps only
/// these there; every key is in the metadata annotation).
fn is_projected_key(key: &str) -> bool {
    key.contains("projectcalico.org/") || key.contains("operator.tigera.io/")
}

/// Converts a UID between its v3 and custom-resource forms by reversing the bits of each of its 16
/// bytes, as upstream does so the two objects never share a UID. The conversion is its own inverse.
/// A UID that is not a UUID is kept as is.
pub fn convert_uid(uid: &str) -> String {
    let hex: String = uid.chars().filter(|character| *character != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|character| character.is_ascii_hexdigit()) {
        return uid.to_string();
    }
    let bytes: Vec<u8> = (0..16)
        .filter_map(|index| u8::from_str_radix(&hex[2 * index..2 * index + 2], 16).ok())
        .map(u8::reverse_bits)
        .collect();
    let text: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &text[0..8],
        &text[8..12],
        &text[12..16],
        &text[16..20],
        &text[20..32]
    )
}

/// The custom resource (as JSON) for a resource; `resourceVersion` is kept for updates.
pub fn to_custom_resource(resource: &Resource) -> Value {
    let kind = resource.kind;
    let mut v3 = resource.metadata.clone();
    v3.namespace = None;
    v3.resource_version = None;
    v3.uid = None;
    v3.other.remove("selfLink");
    if !is_policy(kind) {
        v3.name = String::new();
    }
    let projected = |map: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        map.iter()
            .filter(|(key, _)| is_projected_key(key))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    };
    let labels = projected(&resource.metadata.labels);
    let mut annotations = projected(&resource.metadata.annotations);
    // Serializing ObjectMeta cannot fail: every field is a plain JSON value.
    annotations.insert(
        METADATA_ANNOTATION.to_string(),
        serde_json::to_string(&v3).unwrap_or_default(),
    );
    let mut metadata = json!({
        "name": stored_name(kind, &resource.metadata.name),
        "labels": labels,
        "annotations": annotations,
    });
    if kind.is_namespaced()
        && let Some(namespace) = &resource.metadata.namespace
    {
        metadata["namespace"] = json!(namespace);
    }
    if let Some(version) = &resource.metadata.resource_version {
        metadata["resourceVersion"] = json!(version);
    }
    if let Some(uid) = &resource.metadata.uid {
        metadata["uid"] = json!(convert_uid(uid));
    }
    let spec = if resource.spec.is_null() {
        json!({})
    } else {
        resource.spec.clone()
    };
    json!({
        "apiVersion": format!("{CRD_GROUP}/{CRD_VERSION}"),
        "kind": kind.as_str(),
        "metadata": metadata,
        "spec": spec,
    })
}

/// The resource a custom resource holds.
pub fn from_custom_resource(kind: Kind, object: &Value) -> Result<Resource, StoreError> {
    let metadata = &object["metadata"];
    let text = |field: &str| metadata[field].as_str().map(str::to_string);
    let stored = text("name").unwrap_or_default();
    let location = match text("namespace") {
        Some(namespace) => format!("{}/{namespace}/{stored}", kind.plural()),
        None => format!("{}/{stored}", kind.plural()),
    };
    let annotation = metadata["annotations"][METADATA_ANNOTATION].as_str();
    let mut v3: ObjectMeta = match annotation {
        Some(annotation) => {
            serde_json::from_str(annotation).map_err(|source| StoreError::InvalidData {
                location: format!("{location} (annotation `{METADATA_ANNOTATION}`)"),
                source,
            })?
        }
        // Written by something else: take what the custom resource itself has.
        None => {
            let map = |field: &str| -> BTreeMap<String, String> {
                metadata[field]
                    .as_object()
                    .map(|entries| {
                        entries
                            .iter()
                            .filter_map(|(key, value)| {
                                Some((key.clone(), value.as_str()?.to_string()))
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            ObjectMeta {
                labels: map("labels"),
                annotations: map("annotations"),
                creation_timestamp: text("creationTimestamp"),
                ..ObjectMeta::default()
            }
        }
    };
    v3.name = if is_policy(kind) {
        match (&annotation, v3.name.is_empty()) {
            (Some(_), false) => v3.name,
            _ => strip_default_tier(&stored, &object["spec"]),
        }
    } else {
        stored
    };
    v3.namespace = text("namespace").filter(|_| kind.is_namespaced());
    v3.resource_version = text("resourceVersion");
    v3.uid = text("uid").map(|uid| convert_uid(&uid));
    if v3.creation_timestamp.is_none() {
        v3.creation_timestamp = text("creationTimestamp");
    }
    let spec = match &object["spec"] {
        Value::Null => json!({}),
        spec => spec.clone(),
    };
    Ok(Resource {
        api_version: API_VERSION.to_string(),
        kind,
        metadata: v3,
        spec,
    })
}

/// Without the annotation, upstream strips `default.` from default-tier policy names.
fn strip_default_tier(name: &str, spec: &Value) -> String {
    let tier = spec["tier"].as_str().unwrap_or("default");
    match name.strip_prefix("default.") {
        Some(rest) if tier == "default" => rest.to_string(),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_conversion_is_its_own_inverse_and_changes_the_uid() {
        let uid = "6f1e2a3b-0000-4000-8000-000000000001";
        let converted = convert_uid(uid);
        assert_ne!(converted, uid);
        assert_eq!(convert_uid(&converted), uid);
        assert_eq!(convert_uid("not-a-uuid"), "not-a-uuid");
    }

    #[test]
    fn policies_are_tiered_and_keep_their_name_in_the_annotation() {
        let mut policy = Resource::new(Kind::GlobalNetworkPolicy, "allow-all");
        policy.metadata.labels.insert("team".into(), "a".into());
        policy
            .metadata
            .labels
            .insert("projectcalico.org/tier".into(), "default".into());
        policy.metadata.uid = Some("6f1e2a3b-0000-4000-8000-000000000001".into());
        let object = to_custom_resource(&policy);
        assert_eq!(object["metadata"]["name"], "default.allow-all");
        assert_eq!(object["apiVersion"], "crd.projectcalico.org/v1");
        assert_eq!(
            object["metadata"]["labels"],
            json!({"projectcalico.org/tier": "default"})
        );
        let annotation: Value = serde_json::from_str(
            object["metadata"]["annotations"][METADATA_ANNOTATION]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(annotation["name"], "allow-all");
        assert_eq!(annotation["labels"]["team"], "a");
        assert!(annotation.get("uid").is_none());
        let back = from_custom_resource(Kind::GlobalNetworkPolicy, &object).unwrap();
        assert_eq!(back.metadata.name, "allow-all");
        assert_eq!(back.metadata.labels, policy.metadata.labels);
        assert_eq!(back.metadata.uid, policy.metadata.uid);
    }

    #[test]
    fn a_custom_resource_without_the_annotation_reads_back() {
        let object = json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
            "metadata": {"name": "pool", "resourceVersion": "7", "labels": {"a": "b"}},
            "spec": {"cidr": "10.0.0.0/16"}});
        let pool = from_custom_resource(Kind::IpPool, &object).unwrap();
        assert_eq!(pool.metadata.name, "pool");
        assert_eq!(pool.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(pool.metadata.labels["a"], "b");
        assert_eq!(pool.spec["cidr"], "10.0.0.0/16");
    }
}
