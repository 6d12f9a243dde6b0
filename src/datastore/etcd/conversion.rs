//! Conversion between [`Resource`] and etcd keys and values, in upstream's layout.
//!
//! Keys are `/calico/resources/v3/projectcalico.org/<plural>[/<namespace>]/<name>` and values are the JSON
//! of the whole resource without `resourceVersion`; on read, `resourceVersion` is the key's mod revision
//! (`reference/calicoctl.md` §3.1–3.3). Policies are stored under their tiered name (`default.<name>`) with
//! the name the user gave kept in the `projectcalico.org/metadata` annotation, as upstream v3.29 does
//! (§3.5), so data written by either tool reads back in the other.

use crate::datastore::StoreError;
use crate::resource::{API_VERSION, Kind, Resource, ResourceKey};

/// Every key netctl reads or writes lives under this prefix.
pub const RESOURCE_ROOT: &str = "/calico/resources/v3/projectcalico.org/";

/// The annotation in which upstream keeps a policy's original name.
const METADATA_ANNOTATION: &str = "projectcalico.org/metadata";

/// Name prefixes that upstream leaves untiered (§3.5).
const UNTIERED_PREFIXES: [&str; 3] = ["knp.default.", "kanp.adminnetworkpolicy.", "ossg."];

fn is_policy(kind: Kind) -> bool {
    matches!(kind, Kind::NetworkPolicy | Kind::GlobalNetworkPolicy)
}

/// The name a policy is stored under: `default.<name>` for a default-tier name without a tier prefix.
pub fn stored_name(kind: Kind, name: &str) -> String {
    if is_policy(kind)
        && !name.contains('.')
        && !UNTIERED_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
    {
        format!("default.{name}")
    } else {
        name.to_string()
    }
}

/// The etcd key of one resource.
pub fn key_path(key: &ResourceKey) -> String {
    let name = stored_name(key.kind, &key.name);
    match (&key.namespace, key.kind.is_namespaced()) {
        (Some(namespace), true) => {
            format!("{RESOURCE_ROOT}{}/{namespace}/{name}", key.kind.plural())
        }
        _ => format!("{RESOURCE_ROOT}{}/{name}", key.kind.plural()),
    }
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

/// Serializes a resource for storage: apiVersion and kind set, resourceVersion cleared, policy names
/// tiered with the original kept in the metadata annotation.
pub fn encode(resource: &Resource) -> Vec<u8> {
    let mut stored = resource.clone();
    stored.api_version = API_VERSION.to_string();
    stored.metadata.resource_version = None;
    stored.metadata.other.remove("selfLink");
    if is_policy(stored.kind) {
        let original = stored.metadata.name.clone();
        stored.metadata.name = stored_name(stored.kind, &original);
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
