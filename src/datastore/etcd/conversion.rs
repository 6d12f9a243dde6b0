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

use crate::datastore::StoreError;
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
    let mut stored = resource.clone();
    stored.api_version = API_VERSION.to_string();
    stored.metadata.resource_version = None;
    stored.metadata.other.remove("selfLink");
    if is_policy(stored.kind) && layout != PolicyLayout::Untiered {
        let original = stored.metadata.name.clone();
        stored.metadata.name = stored_name_in(stored.kind, &original, layout);
        stored.metadata.annotations.insert(
            METADATA_ANNOTATION.to_string(),
            serde_json::json!({ "name": original }).to_string(),
        );
    }
    // Serializing a Resource cannot fail: every field is a plain JSON value.
    serde_json::to_vec(&stored).unwrap_or_default()
}

/// Parses a stored value and sets `resourceVersion` to the key's mod revision.
pub fn decode(key: &str, value: &[u8], mod_revision: i64) -> Result<Resource, StoreError> {
    let mut resource: Resource =
        serde_json::from_slice(value).map_err(|source| StoreError::InvalidData {
            location: key.to_string(),
            source,
        })?;
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
    Ok(resource)
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

#[cfg(test)]
mod tests {
    use super::*;

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
