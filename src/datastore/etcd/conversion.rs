//! Conversion between [`Resource`] and etcd keys and values, in upstream's layout.
//!
//! Keys are `/calico/resources/v3/projectcalico.org/<plural>[/<namespace>]/<name>` and values are the JSON
//! of the whole resource without `resourceVersion`; on read, `resourceVersion` is the key's mod revision
//! (upstream `libcalico-go/lib/backend/model/resource.go`, `libcalico-go/lib/backend/etcdv3/`
//! `etcdv3.go` and `conversion.go`).
//!
//! Policies in the default tier ((Staged)(Global)NetworkPolicy) have had three layouts
//! ([`PolicyLayout`]): the name itself up to v3.28; `default.<name>` with the name the user gave in
//! the `projectcalico.org/metadata` annotation from v3.29 to v3.31
//! (`libcalico-go/lib/names/policy.go`, `libcalico-go/lib/backend/etcdv3/etcdv3.go`); the name
//! itself again, still with the annotation, from v3.32 (upstream's kube-controllers then moves the
//! older keys).
//! Reading accepts every layout; which one a write uses is the cluster's (`etcd/policy_keys.rs`).

use std::collections::BTreeMap;

use crate::datastore::{StoreError, StoredBody};
use crate::release::Release;
use crate::resource::{API_VERSION, Kind, Resource, ResourceKey};

/// Every key netctl reads or writes lives under this prefix.
pub const RESOURCE_ROOT: &str = "/calico/resources/v3/projectcalico.org/";

/// The annotation in which upstream keeps a policy's original name.
const METADATA_ANNOTATION: &str = "projectcalico.org/metadata";

/// Name prefixes that upstream leaves untiered (`libcalico-go/lib/names/policy.go`).
const UNTIERED_PREFIXES: [&str; 3] = ["knp.default.", "kanp.adminnetworkpolicy.", "ossg."];

fn is_policy(kind: Kind) -> bool {
    kind.is_tiered_policy()
}

/// How a release stores policies of the default tier in etcd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyLayout {
    /// Up to v3.28: the key and `metadata.name` are the name; no annotation.
    Untiered,
    /// v3.29 to v3.31: the key and `metadata.name` are `default.<name>`; the name is in the
    /// `projectcalico.org/metadata` annotation. Also what netctl writes when the cluster's release
    /// is not known: every release from v3.29.4 reads it, and v3.32 moves it.
    Tiered,
    /// From v3.32: the key and `metadata.name` are the name, with the annotation.
    Named,
}

impl PolicyLayout {
    /// The layout of a release; `None` (not known) is [`PolicyLayout::Tiered`].
    pub fn of(release: Option<&Release>) -> PolicyLayout {
        match release.map(Release::code_line) {
            None => PolicyLayout::Tiered,
            Some(release) if release < Release::new(3, 29, 0) => PolicyLayout::Untiered,
            Some(release) if release < Release::new(3, 32, 0) => PolicyLayout::Tiered,
            Some(_) => PolicyLayout::Named,
        }
    }
}

/// Whether a policy name is one upstream ties to the default tier: no dot, no untiered prefix.
fn is_default_tier_name(kind: Kind, name: &str) -> bool {
    is_policy(kind)
        && !name.contains('.')
        && !UNTIERED_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// The name a policy is stored under in the v3.29–v3.31 layout: `default.<name>` for a
/// default-tier name without a tier prefix.
pub fn stored_name(kind: Kind, name: &str) -> String {
    stored_name_in(kind, name, PolicyLayout::Tiered)
}

/// The name a resource is stored under in `layout`.
pub fn stored_name_in(kind: Kind, name: &str, layout: PolicyLayout) -> String {
    if layout == PolicyLayout::Tiered && is_default_tier_name(kind, name) {
        format!("default.{name}")
    } else {
        name.to_string()
    }
}

/// Whether a resource may be stored under either of two keys (a default-tier policy name): then
/// reads look in both and writes keep only one.
pub fn has_two_layouts(key: &ResourceKey) -> bool {
    is_default_tier_name(key.kind, &key.name)
}

/// The keys a resource may be stored under, the one `layout` writes first: for a default-tier
/// policy name both `default.<name>` and `<name>`, else the one key.
pub fn key_paths(key: &ResourceKey, layout: PolicyLayout) -> Vec<String> {
    let path = |name: &str| path_of(key, name);
    if !has_two_layouts(key) {
        return vec![path(&key.name)];
    }
    let tiered = path(&format!("default.{}", key.name));
    let plain = path(&key.name);
    match layout {
        PolicyLayout::Tiered => vec![tiered, plain],
        PolicyLayout::Untiered | PolicyLayout::Named => vec![plain, tiered],
    }
}

fn path_of(key: &ResourceKey, name: &str) -> String {
    match (&key.namespace, key.kind.is_namespaced()) {
        (Some(namespace), true) => {
            format!("{RESOURCE_ROOT}{}/{namespace}/{name}", key.kind.plural())
        }
        _ => format!("{RESOURCE_ROOT}{}/{name}", key.kind.plural()),
    }
}

/// The etcd key of one resource in the v3.29–v3.31 layout.
pub fn key_path(key: &ResourceKey) -> String {
    path_of(key, &stored_name(key.kind, &key.name))
}

/// The key prefix of a list: one kind, optionally one namespace.
pub fn list_prefix(kind: Kind, namespace: Option<&str>) -> String {
    match namespace {
        Some(namespace) if kind.is_namespaced() => {
            format!("{RESOURCE_ROOT}{}/{namespace}/", kind.plural())
        }
        _ => format!("{RESOURCE_ROOT}{}/", kind.plural()),
    }
}

/// The smallest key greater than every key starting with `prefix` (etcd's range end for a prefix).
pub fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Whether a key belongs to a list of `kind` (cluster-scoped kinds have exactly one segment after the
/// plural, namespaced kinds two), so a stray key under the prefix is not mistaken for a resource.
pub fn key_matches_kind(kind: Kind, key: &str) -> bool {
    let Some(rest) = key
        .strip_prefix(RESOURCE_ROOT)
        .and_then(|rest| rest.strip_prefix(kind.plural()))
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return false;
    };
    let segments = rest.split('/').count();
    if kind.is_namespaced() {
        segments == 2
    } else {
        segments == 1
    }
}

/// Serializes a resource for storage in the v3.29–v3.31 layout.
pub fn encode(resource: &Resource) -> Vec<u8> {
    encode_in(resource, PolicyLayout::Tiered)
}

/// Serializes a resource for storage: apiVersion and kind set, resourceVersion cleared, policy names
/// as `layout` stores them, with the original kept in the metadata annotation from v3.29.
pub fn encode_in(resource: &Resource, layout: PolicyLayout) -> Vec<u8> {
    encode_filled(resource, layout, None)
}

/// What a create fills in where the resource has none.
#[derive(Debug, Clone, Copy)]
pub struct Created<'a> {
    pub uid: &'a str,
    pub creation_timestamp: &'a str,
}

/// Serializes a resource being created, in the v3.29–v3.31 layout, with its `uid` and
/// `creationTimestamp` set from `created` where it has none.
pub fn encode_created(resource: &Resource, created: Created<'_>) -> Vec<u8> {
    encode_filled(resource, PolicyLayout::Tiered, Some(created))
}

fn encode_filled(
    resource: &Resource,
    layout: PolicyLayout,
    created: Option<Created<'_>>,
) -> Vec<u8> {
    if is_policy(resource.kind) && layout != PolicyLayout::Untiered {
        // The stored name and an annotation differ from the resource's: written from a copy
        // (policies are not written by the ten thousand).
        let mut stored = resource.clone();
        if let Some(created) = created {
            fill_created(&mut stored, created);
        }
        let original = stored.metadata.name.clone();
        stored.metadata.name = stored_name_in(stored.kind, &original, layout);
        stored.metadata.annotations.insert(
            METADATA_ANNOTATION.to_string(),
            serde_json::json!({ "name": original }).to_string(),
        );
        return serde_json::to_vec(&StoredView::of(&stored, None)).unwrap_or_default();
    }
    // Serializing a Resource cannot fail: every field is a plain JSON value.
    serde_json::to_vec(&StoredView::of(resource, created)).unwrap_or_default()
}

fn fill_created(resource: &mut Resource, created: Created<'_>) {
    let metadata = &mut resource.metadata;
    metadata.uid.get_or_insert_with(|| created.uid.to_string());
    metadata
        .creation_timestamp
        .get_or_insert_with(|| created.creation_timestamp.to_string());
}

/// A resource as stored, serialized from the resource without copying it: the fields in
/// [`Resource`]'s order, `apiVersion` set, `resourceVersion` and `selfLink` left out.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StoredView<'a> {
    api_version: &'a str,
    kind: Kind,
    metadata: StoredMetadata<'a>,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    spec: &'a serde_json::Value,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    status: &'a serde_json::Value,
}

/// [`crate::resource::ObjectMeta`] as stored (see [`StoredView`]).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StoredMetadata<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    creation_timestamp: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
    #[serde(flatten)]
    other: OtherFields<'a>,
}

/// The metadata fields netctl does not type, without `selfLink` (never stored).
struct OtherFields<'a>(&'a serde_json::Map<String, serde_json::Value>);

impl serde::Serialize for OtherFields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            self.0
                .iter()
                .filter(|(name, _)| name.as_str() != "selfLink"),
        )
    }
}

impl<'a> StoredView<'a> {
    fn of(resource: &'a Resource, created: Option<Created<'a>>) -> StoredView<'a> {
        let metadata = &resource.metadata;
        StoredView {
            api_version: API_VERSION,
            kind: resource.kind,
            metadata: StoredMetadata {
                name: &metadata.name,
                namespace: metadata.namespace.as_deref(),
                uid: metadata
                    .uid
                    .as_deref()
                    .or(created.map(|created| created.uid)),
                creation_timestamp: metadata
                    .creation_timestamp
                    .as_deref()
                    .or(created.map(|created| created.creation_timestamp)),
                labels: &metadata.labels,
                annotations: &metadata.annotations,
                other: OtherFields(&metadata.other),
            },
            spec: &resource.spec,
            status: &resource.status,
        }
    }
}

/// Parses a stored value and sets `resourceVersion` to the key's mod revision.
pub fn decode(key: &str, value: &[u8], mod_revision: i64) -> Result<Resource, StoreError> {
    let resource: Resource =
        serde_json::from_slice(value).map_err(|source| StoreError::InvalidData {
            location: key.to_string(),
            source,
        })?;
    Ok(as_read(resource, mod_revision))
}

/// Parses a stored value for [`Detail::Document`](crate::datastore::Detail), once: the resource
/// without its spec and status, which are handed back as tapes of the stored text for the printer
/// (`output::StoredJson`), never decoded into values. A policy's spec is also decoded (its name
/// may come from `spec.tier`): the same output, at the old cost, for a kind that is seldom listed
/// by the thousand.
pub fn decode_document(
    key: &str,
    value: &[u8],
    mod_revision: i64,
) -> Result<(Resource, StoredBody), StoreError> {
    let invalid = |source| StoreError::InvalidData {
        location: key.to_string(),
        source,
    };
    let text: std::sync::Arc<str> = match std::str::from_utf8(value) {
        Ok(text) => std::sync::Arc::from(text),
        // Not UTF-8: serde_json says where, as for any other read.
        Err(_) => {
            let error = serde_json::from_slice::<serde::de::IgnoredAny>(value).err();
            return Err(invalid(error.unwrap_or_else(|| {
                serde::de::Error::custom("the stored value is not UTF-8")
            })));
        }
    };
    let mut deserializer = serde_json::Deserializer::from_str(&text);
    let envelope = serde::de::DeserializeSeed::deserialize(
        document::Envelope { text: &text },
        &mut deserializer,
    )
    .and_then(|envelope| deserializer.end().map(|()| envelope))
    .map_err(invalid)?;
    let part = |tape: Option<crate::output::StoredTape>| {
        tape.filter(|tape| !tape.is_null())
            .map(|tape| tape.into_json(text.clone()))
    };
    let body = StoredBody {
        spec: part(envelope.spec),
        status: part(envelope.status),
    };
    let mut resource = Resource {
        api_version: envelope.api_version,
        kind: envelope.kind,
        metadata: envelope.metadata,
        spec: serde_json::Value::Null,
        status: serde_json::Value::Null,
    };
    if is_policy(resource.kind) {
        resource.spec = body
            .spec
            .as_ref()
            .map(crate::output::StoredJson::to_value)
            .unwrap_or_default();
    }
    Ok((as_read(resource, mod_revision), body))
}

/// Parses only what [`Detail::Summary`](crate::datastore::Detail) asks for: kind, name, namespace,
/// the labels when `labels`, and the top-level spec fields named in `spec_fields` (a policy's
/// `tier` too, which its name needs). Everything else is skipped without being decoded, which is
/// most of a resource: a table of host endpoints reads two of their fifteen-odd values.
pub fn decode_summary(
    kind: Kind,
    key: &str,
    value: &[u8],
    mod_revision: i64,
    spec_fields: &[&str],
    labels: bool,
) -> Result<Resource, StoreError> {
    let seed = summary::Envelope {
        spec_fields,
        labels,
        tier: is_policy(kind),
    };
    let mut deserializer = serde_json::Deserializer::from_slice(value);
    let resource = serde::de::DeserializeSeed::deserialize(seed, &mut deserializer)
        .and_then(|resource| deserializer.end().map(|()| resource))
        .map_err(|source| StoreError::InvalidData {
            location: key.to_string(),
            source,
        })?;
    Ok(as_read(resource, mod_revision))
}

/// What every read does to a stored resource: `resourceVersion` from the key's mod revision, no
/// `selfLink`, and a policy's own name back from its tiered one.
fn as_read(mut resource: Resource, mod_revision: i64) -> Resource {
    resource.metadata.resource_version = Some(mod_revision.to_string());
    resource.metadata.other.remove("selfLink");
    if is_policy(resource.kind) {
        let original = resource
            .metadata
            .annotations
            .remove(METADATA_ANNOTATION)
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|meta| meta.get("name")?.as_str().map(str::to_string));
        resource.metadata.name = match original {
            Some(name) => name,
            None => strip_default_tier(&resource),
        };
    }
    resource
}

/// Without the annotation, upstream strips `default.` from default-tier policy names.
fn strip_default_tier(resource: &Resource) -> String {
    let tier = resource
        .spec
        .get("tier")
        .and_then(|tier| tier.as_str())
        .unwrap_or("default");
    match resource.metadata.name.strip_prefix("default.") {
        Some(name) if tier == "default" => name.to_string(),
        _ => resource.metadata.name.clone(),
    }
}

mod document;
mod summary;
#[cfg(test)]
mod tests;
