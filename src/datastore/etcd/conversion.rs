//! Conversion between [`Resource`] and etcd keys and values, in upstream's layout.
//!
//! Keys are `/calico/resources/v3/projectcalico.org/<plural>[/<namespace>]/<name>` and values are the JSON
//! of the whole resource without `resourceVersion`; on read, `resourceVersion` is the key's mod revision
//! (`reference/calicoctl.md` §3.1–3.3).
//!
//! Policies in the default tier ((Staged)(Global)NetworkPolicy) have had three layouts
//! ([`PolicyLayout`]): the name itself up to v3.28; `default.<name>` with the name the user gave in
//! the `projectcalico.org/metadata` annotation from v3.29 to v3.31 (§3.5); the name itself again,
//! still with the annotation, from v3.32 (upstream's kube-controllers then moves the older keys).
//! Reading accepts every layout; which one a write uses is the cluster's (`etcd/policy_keys.rs`).

use std::collections::BTreeMap;

use crate::datastore::{StoreError, StoredBody};
use crate::release::Release;
use crate::resource::{API_VERSION, Kind, Resource, ResourceKey};

/// Every key netctl reads or writes lives under this prefix.
pub const RESOURCE_ROOT: &str = "/calico/resources/v3/projectcalico.org/";

/// The annotation in which upstream keeps a policy's original name.
const METADATA_ANNOTATION: &str = "projectcalico.org/metadata";

/// Name prefixes that upstream leaves untiered (§3.5).
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

/// Parses a stored value for [`Detail::Document`](crate::datastore::Detail): the resource
/// without its spec and status, which are handed back as their stored JSON text to be printed
/// without being decoded. A policy is decoded whole first (its name may come from `spec.tier`)
/// and its spec written back to text: the same output, at the old cost, for a kind that is
/// seldom listed by the thousand.
pub fn decode_document(
    key: &str,
    value: &[u8],
    mod_revision: i64,
) -> Result<(Resource, StoredBody), StoreError> {
    let invalid = |source| StoreError::InvalidData {
        location: key.to_string(),
        source,
    };
    let envelope: DocumentEnvelope<'_> = serde_json::from_slice(value).map_err(invalid)?;
    let text = |raw: Option<&serde_json::value::RawValue>| raw.map(|raw| Box::from(raw.get()));
    let body = StoredBody {
        spec: text(envelope.spec),
        status: text(envelope.status),
    };
    let mut resource = Resource {
        api_version: envelope.api_version,
        kind: envelope.kind,
        metadata: envelope.metadata,
        spec: serde_json::Value::Null,
        status: serde_json::Value::Null,
    };
    if !is_policy(resource.kind) {
        return Ok((as_read(resource, mod_revision), body));
    }
    let parse = |text: &Option<Box<str>>| match text {
        Some(text) => serde_json::from_str(text).map_err(invalid),
        None => Ok(serde_json::Value::Null),
    };
    resource.spec = parse(&body.spec)?;
    resource = as_read(resource, mod_revision);
    Ok((resource, body))
}

/// What [`decode_document`] reads: [`Resource`]'s fields, the spec and status left as text.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DocumentEnvelope<'a> {
    api_version: String,
    kind: Kind,
    #[serde(default)]
    metadata: crate::resource::ObjectMeta,
    #[serde(default, borrow)]
    spec: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow)]
    status: Option<&'a serde_json::value::RawValue>,
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

/// The serde seeds of [`decode_summary`]: one pass over the stored JSON that keeps only what a
/// table needs and skips the rest (`IgnoredAny` validates without allocating).
mod summary {
    use std::borrow::Cow;
    use std::collections::BTreeMap;
    use std::fmt;

    use serde::Deserialize;
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde_json::{Map, Value};

    use super::METADATA_ANNOTATION;
    use crate::resource::{API_VERSION, Kind, ObjectMeta, Resource};

    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "camelCase")]
    enum EnvelopeField {
        Kind,
        Metadata,
        Spec,
        #[serde(other)]
        Other,
    }

    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "camelCase")]
    enum MetadataField {
        Name,
        Namespace,
        Labels,
        Annotations,
        #[serde(other)]
        Other,
    }

    /// A map key, borrowed from the input when it has no escapes.
    struct Key<'de>(Cow<'de, str>);

    impl<'de> Deserialize<'de> for Key<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
            struct KeyVisitor;
            impl<'de> Visitor<'de> for KeyVisitor {
                type Value = Key<'de>;
                fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                    formatter.write_str("a string")
                }
                fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Key<'de>, E> {
                    Ok(Key(Cow::Borrowed(text)))
                }
                fn visit_str<E>(self, text: &str) -> Result<Key<'de>, E> {
                    Ok(Key(Cow::Owned(text.to_string())))
                }
            }
            deserializer.deserialize_str(KeyVisitor)
        }
    }

    /// A whole resource, keeping what the fields below name.
    pub(super) struct Envelope<'a> {
        pub spec_fields: &'a [&'a str],
        pub labels: bool,
        /// The resource is a policy: keep `spec.tier` and the name annotation, which its name is
        /// read back from.
        pub tier: bool,
    }

    impl<'de> DeserializeSeed<'de> for Envelope<'_> {
        type Value = Resource;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Resource, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Envelope<'_> {
        type Value = Resource;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a resource")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Resource, A::Error> {
            let mut kind = None;
            let mut metadata = ObjectMeta::default();
            let mut spec = Value::Null;
            while let Some(field) = map.next_key::<EnvelopeField>()? {
                match field {
                    EnvelopeField::Kind => kind = Some(map.next_value::<Kind>()?),
                    EnvelopeField::Metadata => {
                        metadata = map.next_value_seed(Metadata {
                            labels: self.labels,
                            policy: self.tier,
                        })?
                    }
                    EnvelopeField::Spec => {
                        spec = map.next_value_seed(Spec {
                            fields: self.spec_fields,
                            tier: self.tier,
                        })?
                    }
                    EnvelopeField::Other => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            let kind = kind.ok_or_else(|| serde::de::Error::missing_field("kind"))?;
            Ok(Resource {
                api_version: API_VERSION.to_string(),
                kind,
                metadata,
                spec,
                status: Value::Null,
            })
        }
    }

    struct Metadata {
        labels: bool,
        policy: bool,
    }

    impl<'de> DeserializeSeed<'de> for Metadata {
        type Value = ObjectMeta;
        fn deserialize<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<ObjectMeta, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Metadata {
        type Value = ObjectMeta;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("object metadata")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectMeta, A::Error> {
            let mut metadata = ObjectMeta::default();
            while let Some(field) = map.next_key::<MetadataField>()? {
                match field {
                    MetadataField::Name => metadata.name = map.next_value()?,
                    MetadataField::Namespace => metadata.namespace = map.next_value()?,
                    MetadataField::Labels if self.labels => {
                        metadata.labels = map
                            .next_value::<Option<BTreeMap<String, String>>>()?
                            .unwrap_or_default()
                    }
                    // Only the annotation that names a stored policy is kept.
                    MetadataField::Annotations if self.policy => {
                        if let Some(name) = map.next_value_seed(PolicyAnnotation)? {
                            metadata
                                .annotations
                                .insert(METADATA_ANNOTATION.to_string(), name);
                        }
                    }
                    MetadataField::Labels | MetadataField::Annotations | MetadataField::Other => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(metadata)
        }
    }

    /// The annotations of a stored policy, of which only [`METADATA_ANNOTATION`] is read.
    struct PolicyAnnotation;

    impl<'de> DeserializeSeed<'de> for PolicyAnnotation {
        type Value = Option<String>;
        fn deserialize<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Option<String>, D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for PolicyAnnotation {
        type Value = Option<String>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("annotations")
        }

        fn visit_unit<E>(self) -> Result<Option<String>, E> {
            Ok(None)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
            let mut found = None;
            while let Some(Key(key)) = map.next_key::<Key>()? {
                if key == METADATA_ANNOTATION {
                    found = map.next_value()?;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }

    struct Spec<'a> {
        fields: &'a [&'a str],
        tier: bool,
    }

    impl<'de> DeserializeSeed<'de> for Spec<'_> {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Spec<'_> {
        type Value = Value;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a spec")
        }

        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut kept = Map::new();
            while let Some(Key(key)) = map.next_key::<Key>()? {
                let wanted = self.fields.contains(&key.as_ref()) || (self.tier && key == "tier");
                if wanted {
                    kept.insert(key.into_owned(), map.next_value()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Value::Object(kept))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resource as it was encoded before the encoding borrowed it: a copy, changed, serialized.
    fn encoded_through_a_copy(resource: &Resource) -> Vec<u8> {
        let mut stored = resource.clone();
        stored.api_version = API_VERSION.to_string();
        stored.metadata.resource_version = None;
        serde_json::to_vec(&stored).unwrap()
    }

    #[test]
    fn a_resource_is_encoded_as_a_changed_copy_of_it_would_be() {
        let mut endpoint = Resource::new(Kind::HostEndpoint, "h1");
        endpoint.api_version = "projectcalico.org/v3".into();
        endpoint.metadata.uid = Some("u1".into());
        endpoint.metadata.resource_version = Some("42".into());
        endpoint.metadata.creation_timestamp = Some("2026-01-01T00:00:00Z".into());
        endpoint.metadata.labels.insert("zone".into(), "a".into());
        endpoint
            .metadata
            .annotations
            .insert("note".into(), "x".into());
        endpoint
            .metadata
            .other
            .insert("generation".into(), serde_json::json!(3));
        endpoint.spec = serde_json::json!({"node": "n1", "expectedIPs": ["10.0.0.1"]});
        endpoint.status = serde_json::json!({"seen": true});
        assert_eq!(encode(&endpoint), encoded_through_a_copy(&endpoint));
        let mut bare = Resource::new(Kind::GlobalNetworkSet, "s1");
        bare.spec = serde_json::Value::Null;
        bare.metadata.namespace = Some("ignored".into());
        assert_eq!(encode(&bare), encoded_through_a_copy(&bare));
        // `selfLink` is never stored.
        let mut linked = endpoint.clone();
        linked
            .metadata
            .other
            .insert("selfLink".into(), serde_json::json!("/x"));
        assert_eq!(encode(&linked), encoded_through_a_copy(&endpoint));
    }

    #[test]
    fn a_created_resource_gets_a_uid_and_timestamp_only_where_it_has_none() {
        let created = Created {
            uid: "new-uid",
            creation_timestamp: "2026-11-25T00:00:00Z",
        };
        let fresh = Resource::new(Kind::HostEndpoint, "h1");
        let stored: Resource = serde_json::from_slice(&encode_created(&fresh, created)).unwrap();
        assert_eq!(stored.metadata.uid.as_deref(), Some("new-uid"));
        assert_eq!(
            stored.metadata.creation_timestamp.as_deref(),
            Some("2026-11-25T00:00:00Z")
        );
        let mut kept = fresh.clone();
        kept.metadata.uid = Some("u1".into());
        let stored: Resource = serde_json::from_slice(&encode_created(&kept, created)).unwrap();
        assert_eq!(stored.metadata.uid.as_deref(), Some("u1"));
        let mut policy = Resource::new(Kind::GlobalNetworkPolicy, "p1");
        policy.spec = serde_json::json!({"tier": "default"});
        let stored: Resource = serde_json::from_slice(&encode_created(&policy, created)).unwrap();
        assert_eq!(stored.metadata.uid.as_deref(), Some("new-uid"));
        assert_eq!(stored.metadata.name, "default.p1");
    }

    #[test]
    fn keys_follow_the_upstream_layout() {
        let node = ResourceKey::new(Kind::Node, None, "node1");
        assert_eq!(
            key_path(&node),
            "/calico/resources/v3/projectcalico.org/nodes/node1"
        );
        let policy = ResourceKey::new(Kind::NetworkPolicy, Some("prod".into()), "my-policy");
        assert_eq!(
            key_path(&policy),
            "/calico/resources/v3/projectcalico.org/networkpolicies/prod/default.my-policy"
        );
        let tiered = ResourceKey::new(Kind::GlobalNetworkPolicy, None, "security.block");
        assert_eq!(
            key_path(&tiered),
            "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/security.block"
        );
    }

    #[test]
    fn policy_names_round_trip_through_storage() {
        let mut policy = Resource::new(Kind::GlobalNetworkPolicy, "allow-all-upgrade");
        policy.metadata.resource_version = Some("12".into());
        let bytes = encode(&policy);
        let stored: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(stored["metadata"]["name"], "default.allow-all-upgrade");
        assert!(stored["metadata"].get("resourceVersion").is_none());
        let back = decode("k", &bytes, 42).unwrap();
        assert_eq!(back.metadata.name, "allow-all-upgrade");
        assert_eq!(back.metadata.resource_version.as_deref(), Some("42"));
        assert!(back.metadata.annotations.is_empty());
    }

    #[test]
    fn upstream_policy_without_annotation_loses_default_prefix() {
        let text = br#"{"apiVersion":"projectcalico.org/v3","kind":"GlobalNetworkPolicy","metadata":{"name":"default.p"},"spec":{}}"#;
        assert_eq!(decode("k", text, 1).unwrap().metadata.name, "p");
    }

    /// One stored resource per kind with every field a table column reads, and more beside.
    fn stored_examples() -> Vec<(Kind, serde_json::Value)> {
        use serde_json::json;
        let meta = |name: &str| {
            json!({"name": name, "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z",
                   "labels": {"a": "b"}, "annotations": {"note": "x"}, "generation": 3})
        };
        let mut namespaced = meta("default.p1");
        namespaced["namespace"] = json!("prod");
        let mut tiered = meta("security.p2");
        tiered["annotations"][METADATA_ANNOTATION] = json!(r#"{"name":"security.p2"}"#);
        let mut workload = meta("node1-k8s-pod-eth0");
        workload["namespace"] = json!("prod");
        vec![
            (
                Kind::HostEndpoint,
                json!({"metadata": meta("h1"), "spec": {"node": "n1",
                "interfaceName": "*", "expectedIPs": ["10.0.0.1", "fd00::1"],
                "profiles": ["p1", "p2"], "ports": [{"name": "ssh", "port": 22}]}}),
            ),
            (
                Kind::GlobalNetworkPolicy,
                json!({"metadata": tiered, "spec": {"tier": "security",
                "order": 1000000, "selector": "all()", "ingress": [{"action": "Allow"}]}}),
            ),
            (
                Kind::GlobalNetworkPolicy,
                json!({"metadata": meta("default.p3"),
                "spec": {"order": 1.5, "selector": "has(a)"}}),
            ),
            (
                Kind::NetworkPolicy,
                json!({"metadata": namespaced, "spec": {"order": 10,
                "selector": "role == 'db'", "egress": []}}),
            ),
            (
                Kind::Node,
                json!({"metadata": meta("n1"), "spec": {"bgp": {"ipv4Address":
                "10.0.0.1/24", "ipv6Address": "fd00::1/64"}, "orchRefs": [{"nodeName": "n1"}]},
                "status": {"podCIDRs": ["10.1.0.0/24"]}}),
            ),
            (
                Kind::BgpPeer,
                json!({"metadata": meta("peer"), "spec": {"peerIP": "10.0.0.9",
                "nodeSelector": "rack == 'a'", "asNumber": 64513, "keepOriginalNextHop": true}}),
            ),
            (
                Kind::IpPool,
                json!({"metadata": meta("pool"), "spec": {"cidr": "10.0.0.0/16",
                "natOutgoing": true, "ipipMode": "Always", "vxlanMode": "", "disabled": false,
                "disableBGPExport": true, "nodeSelector": "all()", "blockSize": 26}}),
            ),
            (
                Kind::BgpConfiguration,
                json!({"metadata": meta("default"), "spec": {
                "logSeverityScreen": "Info", "nodeToNodeMeshEnabled": false, "asNumber": "1.10"}}),
            ),
            (
                Kind::BgpFilter,
                json!({"metadata": meta("f"), "spec": {"exportV4": [{}, {}],
                "importV6": [{}]}}),
            ),
            (
                Kind::ClusterInformation,
                json!({"metadata": meta("default"), "spec": {
                "clusterGUID": "abc", "clusterType": "k8s,bgp", "calicoVersion": "v3.27.0",
                "datastoreReady": true}}),
            ),
            (
                Kind::GlobalNetworkSet,
                json!({"metadata": meta("s"), "spec": {"nets":
                (0..20).map(|index| format!("10.{index}.0.0/16")).collect::<Vec<_>>()}}),
            ),
            (
                Kind::IpReservation,
                json!({"metadata": meta("r"), "spec": {"reservedCIDRs":
                ["10.9.0.0/24"]}}),
            ),
            (
                Kind::Profile,
                json!({"metadata": meta("prof"), "spec": {"labelsToApply":
                {"z": "1", "a": "2"}, "ingress": []}}),
            ),
            (
                Kind::Tier,
                json!({"metadata": meta("security"), "spec": {"order": 100}}),
            ),
            (
                Kind::WorkloadEndpoint,
                json!({"metadata": workload, "spec": {"orchestrator": "k8s",
                "workload": "", "pod": "pod", "node": "node1", "ipNetworks": ["10.1.0.5/32"],
                "interfaceName": "cali1", "profiles": ["kns.prod"], "ipNATs": [
                {"internalIP": "10.1.0.5", "externalIP": "172.16.0.5"}]}}),
            ),
        ]
    }

    #[test]
    fn a_summary_prints_every_column_as_the_whole_resource_does() {
        use crate::output::{CellContext, ColumnSet, NamespaceColumn, TableColumns, headings_for};
        for (kind, mut value) in stored_examples() {
            value["apiVersion"] = API_VERSION.into();
            value["kind"] = kind.as_str().into();
            let bytes = serde_json::to_vec(&value).unwrap();
            let headings: Vec<String> = headings_for(kind).into_iter().map(String::from).collect();
            let columns =
                TableColumns::new(kind, ColumnSet::Custom(&headings), NamespaceColumn::Hide)
                    .unwrap();
            let spec_fields = columns.spec_fields().expect("every column is listed");
            let whole = decode("k", &bytes, 7).unwrap();
            for labels in [false, true] {
                let summary = decode_summary(kind, "k", &bytes, 7, &spec_fields, labels).unwrap();
                let context = CellContext::default();
                assert_eq!(
                    columns.row(&summary, &context),
                    columns.row(&whole, &context),
                    "{kind}"
                );
                assert_eq!(summary.metadata.name, whole.metadata.name, "{kind}");
                assert_eq!(summary.metadata.namespace, whole.metadata.namespace);
                assert_eq!(summary.metadata.resource_version.as_deref(), Some("7"));
                if labels {
                    assert_eq!(summary.metadata.labels, whole.metadata.labels);
                } else {
                    assert!(summary.metadata.labels.is_empty());
                }
            }
        }
    }

    #[test]
    fn a_summary_refuses_what_a_whole_read_refuses() {
        assert!(decode_summary(Kind::Node, "k", b"{\"kind\": \"Node\"", 1, &[], false).is_err());
        assert!(decode_summary(Kind::Node, "k", b"{}", 1, &[], false).is_err());
    }

    #[test]
    fn a_document_read_is_the_whole_read_with_its_spec_and_status_as_text() {
        let stored = [
            r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"n1","selfLink":"/x","labels":{"a":"b"}},"spec":{"bgp":{"ipv4Address":"10.0.0.1/24"}},"status":{"podCIDRs":["10.1.0.0/24"]}}"#,
            r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"n2"},"spec":null}"#,
            r#"{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"default.p"},"spec":{"tier":"default","order":1}}"#,
        ];
        for value in stored {
            let whole = decode("k", value.as_bytes(), 9).unwrap();
            let (resource, body) = decode_document("k", value.as_bytes(), 9).unwrap();
            assert_eq!(resource.metadata, whole.metadata, "{value}");
            assert_eq!(
                (resource.kind, &resource.api_version),
                (whole.kind, &whole.api_version)
            );
            let parse = |text: &Option<Box<str>>| {
                text.as_deref().map_or(serde_json::Value::Null, |text| {
                    serde_json::from_str(text).unwrap()
                })
            };
            assert_eq!(parse(&body.spec), whole.spec, "{value}");
            assert_eq!(parse(&body.status), whole.status, "{value}");
        }
        // The policy's own name came back from its tiered one.
        let (policy, _) = decode_document("k", stored[2].as_bytes(), 9).unwrap();
        assert_eq!(policy.metadata.name, "p");
        assert!(decode_document("k", b"{\"kind\": \"Node\"}", 1).is_err());
        assert!(decode_document("k", b"{\"apiVersion\": \"v\", \"kind\": \"Node\"", 1).is_err());
    }

    #[test]
    fn each_release_line_has_its_policy_layout() {
        let layout = |text: &str| PolicyLayout::of(Some(&text.parse().unwrap()));
        assert_eq!(layout("v3.28.5"), PolicyLayout::Untiered);
        assert_eq!(layout("v3.29.0"), PolicyLayout::Tiered);
        assert_eq!(layout("v3.31.7"), PolicyLayout::Tiered);
        assert_eq!(layout("v3.32.0-0.dev"), PolicyLayout::Named);
        assert_eq!(PolicyLayout::of(None), PolicyLayout::Tiered);
        let key = ResourceKey::new(Kind::GlobalNetworkPolicy, None, "allow-dns");
        let root = "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/";
        assert_eq!(
            key_paths(&key, PolicyLayout::Named),
            [
                format!("{root}allow-dns"),
                format!("{root}default.allow-dns")
            ]
        );
        assert_eq!(
            key_paths(&key, PolicyLayout::Tiered),
            [
                format!("{root}default.allow-dns"),
                format!("{root}allow-dns")
            ]
        );
        let tiered = ResourceKey::new(Kind::GlobalNetworkPolicy, None, "security.block");
        assert_eq!(key_paths(&tiered, PolicyLayout::Named).len(), 1);
        let staged = ResourceKey::new(Kind::StagedNetworkPolicy, Some("ns".into()), "p");
        assert!(has_two_layouts(&staged));
    }

    #[test]
    fn a_v3_32_value_keeps_the_name_and_the_annotation() {
        let policy = Resource::new(Kind::GlobalNetworkPolicy, "allow-dns");
        let stored: serde_json::Value =
            serde_json::from_slice(&encode_in(&policy, PolicyLayout::Named)).unwrap();
        assert_eq!(stored["metadata"]["name"], "allow-dns");
        assert_eq!(
            stored["metadata"]["annotations"][METADATA_ANNOTATION],
            r#"{"name":"allow-dns"}"#
        );
        let old: serde_json::Value =
            serde_json::from_slice(&encode_in(&policy, PolicyLayout::Untiered)).unwrap();
        assert_eq!(old["metadata"]["name"], "allow-dns");
        assert!(old["metadata"].get("annotations").is_none());
    }

    #[test]
    fn prefix_end_increments_the_last_byte() {
        assert_eq!(prefix_end("/a/"), b"/a0".to_vec());
    }

    #[test]
    fn stray_keys_are_not_resources() {
        assert!(key_matches_kind(
            Kind::Node,
            "/calico/resources/v3/projectcalico.org/nodes/n1"
        ));
        assert!(!key_matches_kind(
            Kind::Node,
            "/calico/resources/v3/projectcalico.org/nodes/a/b"
        ));
        assert!(key_matches_kind(
            Kind::NetworkSet,
            "/calico/resources/v3/projectcalico.org/networksets/ns/a"
        ));
    }
}
