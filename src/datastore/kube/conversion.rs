//! Conversion between [`Resource`] and the Calico custom resources in either API group, in
//! upstream's layout (`libcalico-go/lib/backend/k8s/resources/resources.go`,
//! `customresource.go`), so that data written by either tool reads back in the other.
//!
//! Under `crd.projectcalico.org/v1` the custom resource carries the name (see `names.rs` for the
//! default-tier policies), namespace, `resourceVersion`, a converted UID, only the labels and
//! annotations that name `projectcalico.org/` or `operator.tigera.io/`, and the
//! `projectcalico.org/metadata` annotation holding the v3 metadata as JSON (without namespace,
//! `resourceVersion` and UID; with the name for the tiered policy kinds only). Under
//! `projectcalico.org/v3` (v3.32's native CRDs) the custom resource is the resource itself, as
//! upstream's `convertKVPairToResource` passes it: all its metadata on the object, its UID as the
//! server gave it, no annotation. The spec is copied as is either way. This module knows nothing
//! about HTTP.

use std::collections::BTreeMap;

use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::config::CalicoApiGroup;
use crate::datastore::StoreError;
use crate::resource::{API_VERSION, Kind, ObjectMeta, Resource};

/// The API group of the Calico custom resources before v3.32's native CRDs.
pub const CRD_GROUP: &str = "crd.projectcalico.org";

/// The version of the `crd.projectcalico.org` custom resources.
pub const CRD_VERSION: &str = "v1";

/// The annotation that holds the v3 metadata of a `crd.projectcalico.org/v1` custom resource.
pub const METADATA_ANNOTATION: &str = "projectcalico.org/metadata";

/// Server-kept metadata a resource read from a native CRD leaves out: field ownership is the API
/// server's record, not the resource's, and sending it back on an update would overwrite it.
const SERVER_METADATA: [&str; 2] = ["managedFields", "selfLink"];

/// The kind and plural of the custom resource that holds a kind in `group`: the kind's own, except
/// IPAMConfiguration under v1, which upstream keeps in the allocator's `IPAMConfig` object
/// `ipamconfigs` (`libcalico-go/lib/backend/k8s/resources/ipam_config_v3.go`): one object for both.
pub fn crd_names(kind: Kind, group: CalicoApiGroup) -> (&'static str, &'static str) {
    match (kind, group) {
        (Kind::IpamConfiguration, CalicoApiGroup::CrdV1) => ("IPAMConfig", "ipamconfigs"),
        (other, _) => (other.as_str(), other.plural()),
    }
}

/// The API resource of a custom-resource kind in `group`.
pub fn api_resource(kind: Kind, group: CalicoApiGroup) -> ApiResource {
    let (crd_kind, plural) = crd_names(kind, group);
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group.group(), group.version(), crd_kind),
        plural,
    )
}

/// `ippools.crd.projectcalico.org`, as the API server names a resource type in messages.
pub fn resource_name(kind: Kind, group: CalicoApiGroup) -> String {
    format!("{}.{}", crd_names(kind, group).1, group.group())
}

/// The kinds whose v1 metadata annotation keeps the name (upstream
/// `ConvertCalicoResourceToK8sResource`: the policies, staged ones included).
fn is_policy(kind: Kind) -> bool {
    kind.is_tiered_policy()
}

/// Whether a label or annotation is copied onto the custom resource itself (upstream keeps only
/// these there; every key is in the metadata annotation).
fn is_projected_key(key: &str) -> bool {
    key.contains("projectcalico.org/") || key.contains("operator.tigera.io/")
}

/// Converts a UID between its v3 and custom-resource forms, so the two objects never share a UID:
/// the bits of each of the 16 bytes are reversed, except bytes 6 and 8, which hold the UUID version
/// and variant and are kept, so the result is still a valid (random, RFC 4122) UUID. This follows
/// upstream `conversion.go` (`ConvertUID`, `reverseUID`). The conversion is its own inverse.
///
/// Upstream fails on a UID that is not a UUID; the API server only ever assigns UUIDs, so such a UID
/// was not written by Kubernetes and is kept as is rather than failing the whole read.
pub fn convert_uid(uid: &str) -> String {
    let hex: String = uid.chars().filter(|character| *character != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|character| character.is_ascii_hexdigit()) {
        return uid.to_string();
    }
    let bytes: Vec<u8> = (0..16)
        .filter_map(|index| u8::from_str_radix(&hex[2 * index..2 * index + 2], 16).ok())
        .enumerate()
        .map(|(index, byte)| match index {
            6 | 8 => byte,
            _ => byte.reverse_bits(),
        })
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

/// The API version of Calico resources as users see them.
const V3_API_VERSION: &str = "projectcalico.org/v3";

/// The API version of the custom resources, as owner references name it.
const CRD_API_VERSION: &str = "crd.projectcalico.org/v1";

/// Rewrites the owner references kept in v3 metadata (`other["ownerReferences"]`): each reference
/// whose `apiVersion` is one of `from` gets `to` and a converted UID. Others (Kubernetes owners such
/// as a Deployment) are left alone.
fn convert_owner_references(metadata: &mut ObjectMeta, from: &[&str], to: &str) {
    let Some(Value::Array(references)) = metadata.other.get_mut("ownerReferences") else {
        return;
    };
    for reference in references {
        let matches = reference["apiVersion"]
            .as_str()
            .is_some_and(|version| from.contains(&version));
        if !matches {
            continue;
        }
        reference["apiVersion"] = json!(to);
        if let Some(uid) = reference["uid"].as_str() {
            reference["uid"] = json!(convert_uid(uid));
        }
    }
}

/// The custom resource (as JSON) for a resource in `group`, named `name` (`names.rs` chooses it);
/// `resourceVersion` is kept for updates.
pub fn to_custom_resource(resource: &Resource, group: CalicoApiGroup, name: &str) -> Value {
    match group {
        CalicoApiGroup::CrdV1 => to_v1_object(resource, name),
        CalicoApiGroup::V3 => to_v3_object(resource, name),
    }
}

/// The resource as a native `projectcalico.org/v3` custom resource: itself, named `name`.
fn to_v3_object(resource: &Resource, name: &str) -> Value {
    let kind = resource.kind;
    let mut metadata = resource.metadata.clone();
    metadata.name = name.to_string();
    if !kind.is_namespaced() {
        metadata.namespace = None;
    }
    for field in SERVER_METADATA {
        metadata.other.remove(field);
    }
    // Serializing ObjectMeta cannot fail: every field is a plain JSON value.
    let mut object = json!({
        "apiVersion": CalicoApiGroup::V3.api_version(),
        "kind": kind.as_str(),
        "metadata": serde_json::to_value(&metadata).unwrap_or_else(|_| json!({})),
        "spec": if resource.spec.is_null() { json!({}) } else { resource.spec.clone() },
    });
    if !resource.status.is_null() {
        object["status"] = resource.status.clone();
    }
    object
}

fn to_v1_object(resource: &Resource, name: &str) -> Value {
    let kind = resource.kind;
    let mut v3 = resource.metadata.clone();
    v3.namespace = None;
    v3.resource_version = None;
    v3.uid = None;
    v3.other.remove("selfLink");
    // Owners that are Calico resources are named by their custom resource on the way in, as
    // upstream `resources.go` (`ConvertCalicoResourceToK8sResource`) does.
    convert_owner_references(&mut v3, &[V3_API_VERSION], CRD_API_VERSION);
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
        "name": name,
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
    let mut spec = if resource.spec.is_null() {
        json!({})
    } else {
        resource.spec.clone()
    };
    // The `ipamconfigs` object is also the allocator's, and its CRD requires both flags: an
    // IPAMConfiguration of a release before v3.32 has no `autoAllocateBlocks`; the allocator's
    // default (true) is what it means.
    if kind == Kind::IpamConfiguration {
        for (field, default) in [("autoAllocateBlocks", true), ("strictAffinity", false)] {
            if spec.get(field).is_none() {
                spec[field] = json!(default);
            }
        }
    }
    let mut object = json!({
        "apiVersion": CalicoApiGroup::CrdV1.api_version(),
        "kind": crd_names(kind, CalicoApiGroup::CrdV1).0,
        "metadata": metadata,
        "spec": spec,
    });
    // The status is copied as is, as upstream does (it is the stored one: updates keep it).
    if !resource.status.is_null() {
        object["status"] = resource.status.clone();
    }
    object
}

/// The resource a custom resource of `group` holds.
pub fn from_custom_resource(
    kind: Kind,
    object: &Value,
    group: CalicoApiGroup,
) -> Result<Resource, StoreError> {
    match group {
        CalicoApiGroup::CrdV1 => from_v1_object(kind, object),
        CalicoApiGroup::V3 => from_v3_object(kind, object),
    }
}

/// A native `projectcalico.org/v3` custom resource is the resource: only what the server keeps
/// for itself is left out.
fn from_v3_object(kind: Kind, object: &Value) -> Result<Resource, StoreError> {
    let mut metadata: ObjectMeta =
        serde_json::from_value(object["metadata"].clone()).map_err(|source| {
            StoreError::InvalidData {
                location: format!(
                    "{} `{}` (metadata)",
                    resource_name(kind, CalicoApiGroup::V3),
                    object["metadata"]["name"].as_str().unwrap_or_default()
                ),
                source,
            }
        })?;
    for field in SERVER_METADATA {
        metadata.other.remove(field);
    }
    if !kind.is_namespaced() {
        metadata.namespace = None;
    }
    Ok(resource_of(kind, metadata, object))
}

/// The resource with `metadata` and the custom resource's spec (`{}` when it has none) and status.
fn resource_of(kind: Kind, metadata: ObjectMeta, object: &Value) -> Resource {
    let spec = match &object["spec"] {
        Value::Null => json!({}),
        spec => spec.clone(),
    };
    Resource {
        api_version: API_VERSION.to_string(),
        kind,
        metadata,
        spec,
        status: object["status"].clone(),
    }
}

fn from_v1_object(kind: Kind, object: &Value) -> Result<Resource, StoreError> {
    let metadata = &object["metadata"];
    let text = |field: &str| metadata[field].as_str().map(str::to_string);
    let stored = text("name").unwrap_or_default();
    let location = match text("namespace") {
        Some(namespace) => format!("{}/{namespace}/{stored}", kind.plural()),
        None => format!("{}/{stored}", kind.plural()),
    };
    let annotation = metadata["annotations"][METADATA_ANNOTATION].as_str();
    let map = |field: &str| -> BTreeMap<String, String> {
        metadata[field]
            .as_object()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|(key, _)| key.as_str() != METADATA_ANNOTATION)
                    .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut v3: ObjectMeta = match annotation {
        Some(annotation) => {
            let mut v3: ObjectMeta =
                serde_json::from_str(annotation).map_err(|source| StoreError::InvalidData {
                    location: format!("{location} (annotation `{METADATA_ANNOTATION}`)"),
                    source,
                })?;
            // As upstream `resources.go` (`ConvertK8sResourceToCalicoResource`): the labels and
            // annotations of the custom resource itself come first and the annotation's win, so
            // ones written directly on the custom resource by older versions are kept; owners
            // that are custom resources (or v3 owners written before upstream converted their
            // UIDs) are named as v3 resources again.
            let mut labels = map("labels");
            labels.append(&mut v3.labels);
            v3.labels = labels;
            let mut annotations = map("annotations");
            annotations.append(&mut v3.annotations);
            v3.annotations = annotations;
            convert_owner_references(&mut v3, &[CRD_API_VERSION, V3_API_VERSION], V3_API_VERSION);
            v3
        }
        // Written by something else: take what the custom resource itself has.
        None => ObjectMeta {
            labels: map("labels"),
            annotations: map("annotations"),
            creation_timestamp: text("creationTimestamp"),
            ..ObjectMeta::default()
        },
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
    Ok(resource_of(kind, v3, object))
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

    const V1: CalicoApiGroup = CalicoApiGroup::CrdV1;
    const V3: CalicoApiGroup = CalicoApiGroup::V3;

    #[test]
    fn uid_conversion_reverses_bits_but_keeps_version_and_variant() {
        // Worked by hand: 6f 1e 2a 3b reverse to f6 78 54 dc, 01 to 80; byte 6 (0x40, version 4)
        // and byte 8 (0x80, variant) stay.
        assert_eq!(
            convert_uid("6f1e2a3b-0000-4000-8000-000000000001"),
            "f67854dc-0000-4000-8000-000000000080"
        );
        // Every byte non-trivial: 12→48 34→2c 56→6a 78→1e 9a→59 bc→3d, 4d kept, ef→f7, 81 kept,
        // 23→c4 45→a2 67→e6 89→91 ab→d5 cd→b3 ef→f7.
        assert_eq!(
            convert_uid("12345678-9abc-4def-8123-456789abcdef"),
            "482c6a1e-593d-4df7-81c4-a2e691d5b3f7"
        );
        assert_eq!(
            convert_uid("482c6a1e-593d-4df7-81c4-a2e691d5b3f7"),
            "12345678-9abc-4def-8123-456789abcdef"
        );
        assert_eq!(convert_uid("not-a-uuid"), "not-a-uuid");
    }

    proptest::proptest! {
        #[test]
        fn uid_conversion_is_an_involution_that_keeps_version_and_variant(bytes in proptest::array::uniform16(proptest::num::u8::ANY)) {
            let text: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
            let uid = format!("{}-{}-{}-{}-{}", &text[0..8], &text[8..12], &text[12..16], &text[16..20], &text[20..32]);
            let converted = convert_uid(&uid);
            proptest::prop_assert_eq!(convert_uid(&converted), uid.clone());
            // Version (byte 6) and variant (byte 8) are the same characters in both forms.
            proptest::prop_assert_eq!(&converted[14..16], &uid[14..16]);
            proptest::prop_assert_eq!(&converted[19..21], &uid[19..21]);
        }
    }

    #[test]
    fn owner_references_are_converted_both_ways() {
        let mut set = Resource::new(Kind::NetworkSet, "web");
        set.metadata.namespace = Some("prod".into());
        set.metadata.other.insert(
            "ownerReferences".into(),
            json!([
                {"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "t",
                 "uid": "6f1e2a3b-0000-4000-8000-000000000001"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
                 "uid": "12345678-9abc-4def-8123-456789abcdef"}
            ]),
        );
        let object = to_custom_resource(&set, V1, "web");
        let annotation: Value = serde_json::from_str(
            object["metadata"]["annotations"][METADATA_ANNOTATION]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            annotation["ownerReferences"],
            json!([
                {"apiVersion": "crd.projectcalico.org/v1", "kind": "Tier", "name": "t",
                 "uid": "f67854dc-0000-4000-8000-000000000080"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
                 "uid": "12345678-9abc-4def-8123-456789abcdef"}
            ])
        );
        let back = from_custom_resource(Kind::NetworkSet, &object, V1).unwrap();
        assert_eq!(back.metadata.other, set.metadata.other);

        // Owners written as v3 before upstream converted owner UIDs are converted on read too.
        let mut legacy = object.clone();
        legacy["metadata"]["annotations"][METADATA_ANNOTATION] = json!(
            json!({"ownerReferences": [{"apiVersion": "projectcalico.org/v3", "kind": "Tier",
                "name": "t", "uid": "f67854dc-0000-4000-8000-000000000080"}]})
            .to_string()
        );
        let back = from_custom_resource(Kind::NetworkSet, &legacy, V1).unwrap();
        assert_eq!(
            back.metadata.other["ownerReferences"][0]["uid"],
            "6f1e2a3b-0000-4000-8000-000000000001"
        );
        assert_eq!(
            back.metadata.other["ownerReferences"][0]["apiVersion"],
            "projectcalico.org/v3"
        );
    }

    #[test]
    fn calico_labels_and_annotations_are_kept_on_the_custom_resource() {
        let mut pool = Resource::new(Kind::IpPool, "pool");
        pool.metadata.labels.insert("team".into(), "a".into());
        pool.metadata
            .labels
            .insert("operator.tigera.io/managed".into(), "yes".into());
        pool.metadata
            .annotations
            .insert("projectcalico.org/note".into(), "n".into());
        pool.metadata
            .annotations
            .insert("owner".into(), "me".into());
        let object = to_custom_resource(&pool, V1, "pool");
        assert_eq!(
            object["metadata"]["labels"],
            json!({"operator.tigera.io/managed": "yes"})
        );
        let annotations = object["metadata"]["annotations"].as_object().unwrap();
        assert_eq!(annotations["projectcalico.org/note"], "n");
        assert!(!annotations.contains_key("owner"));
        let back = from_custom_resource(Kind::IpPool, &object, V1).unwrap();
        assert_eq!(back.metadata.labels, pool.metadata.labels);
        assert_eq!(back.metadata.annotations, pool.metadata.annotations);

        // Labels set directly on the custom resource (as older versions wrote them) are kept, and
        // the metadata annotation wins where both have a key.
        let mut older = object.clone();
        older["metadata"]["labels"]["legacy"] = json!("x");
        older["metadata"]["labels"]["team"] = json!("stale");
        let back = from_custom_resource(Kind::IpPool, &older, V1).unwrap();
        assert_eq!(back.metadata.labels["legacy"], "x");
        assert_eq!(back.metadata.labels["team"], "a");
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
        let object = to_custom_resource(&policy, V1, "default.allow-all");
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
        let back = from_custom_resource(Kind::GlobalNetworkPolicy, &object, V1).unwrap();
        assert_eq!(back.metadata.name, "allow-all");
        assert_eq!(back.metadata.labels, policy.metadata.labels);
        assert_eq!(back.metadata.uid, policy.metadata.uid);
    }

    #[test]
    fn a_custom_resource_without_the_annotation_reads_back() {
        let object = json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
            "metadata": {"name": "pool", "resourceVersion": "7", "labels": {"a": "b"}},
            "spec": {"cidr": "10.0.0.0/16"}});
        let pool = from_custom_resource(Kind::IpPool, &object, V1).unwrap();
        assert_eq!(pool.metadata.name, "pool");
        assert_eq!(pool.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(pool.metadata.labels["a"], "b");
        assert_eq!(pool.spec["cidr"], "10.0.0.0/16");
    }

    #[test]
    fn a_staged_policy_keeps_its_name_in_the_annotation_too() {
        let policy = Resource::new(Kind::StagedGlobalNetworkPolicy, "trial");
        let object = to_custom_resource(&policy, V1, "default.trial");
        let annotation: Value = serde_json::from_str(
            object["metadata"]["annotations"][METADATA_ANNOTATION]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(annotation["name"], "trial");
        let mut bare = object.clone();
        bare["metadata"]["annotations"] = json!({});
        let back = from_custom_resource(Kind::StagedGlobalNetworkPolicy, &bare, V1).unwrap();
        assert_eq!(back.metadata.name, "trial");
    }

    #[test]
    fn a_native_v3_custom_resource_is_the_resource_itself() {
        let mut policy = Resource::new(Kind::NetworkPolicy, "allow-dns");
        policy.metadata.namespace = Some("prod".into());
        policy.metadata.labels.insert("team".into(), "a".into());
        policy
            .metadata
            .annotations
            .insert("owner".into(), "me".into());
        policy.metadata.uid = Some("6f1e2a3b-0000-4000-8000-000000000001".into());
        policy.metadata.resource_version = Some("12".into());
        policy.metadata.other.insert(
            "ownerReferences".into(),
            json!([{"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "t",
                    "uid": "6f1e2a3b-0000-4000-8000-000000000002"}]),
        );
        policy.spec = json!({"selector": "all()", "tier": "default"});
        let object = to_custom_resource(&policy, V3, "allow-dns");
        assert_eq!(
            object,
            json!({
                "apiVersion": "projectcalico.org/v3",
                "kind": "NetworkPolicy",
                "metadata": {
                    "name": "allow-dns", "namespace": "prod",
                    "uid": "6f1e2a3b-0000-4000-8000-000000000001", "resourceVersion": "12",
                    "labels": {"team": "a"}, "annotations": {"owner": "me"},
                    "ownerReferences": [{"apiVersion": "projectcalico.org/v3", "kind": "Tier",
                        "name": "t", "uid": "6f1e2a3b-0000-4000-8000-000000000002"}],
                },
                "spec": {"selector": "all()", "tier": "default"},
            })
        );
        let mut stored = object.clone();
        stored["metadata"]["managedFields"] = json!([{"manager": "netctl"}]);
        stored["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        let back = from_custom_resource(Kind::NetworkPolicy, &stored, V3).unwrap();
        assert_eq!(back.metadata.uid, policy.metadata.uid);
        assert_eq!(back.metadata.labels, policy.metadata.labels);
        assert_eq!(back.metadata.annotations, policy.metadata.annotations);
        assert_eq!(back.metadata.other, policy.metadata.other);
        assert_eq!(
            back.metadata.creation_timestamp.as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
        assert_eq!(back.spec, policy.spec);
    }
}
