//! The resource model of `projectcalico.org/v3`: kinds, the resource envelope, keys — pure data, no I/O.
//!
//! A [`Resource`] is the envelope every kind shares (`apiVersion`, `kind`, `metadata`, `spec`). The spec
//! is carried as JSON so that the datastore, printers and the executor can move any kind around without
//! knowing it; typed specs, validation and defaulting per kind live beside this module and are applied
//! before anything is written. This module never imports `datastore/`.

pub mod availability;
mod kind;
pub mod load;
pub mod selector;
pub mod spec;
pub mod strategic_merge;
pub mod validate;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use kind::{API_VERSION, Kind, UnknownKind};
pub use load::{Input, LoadError, Loaded, Loader, Location, resource_from_value};
pub use validate::{FieldError, ValidationError, validate_and_default, validate_and_default_for};

/// Object metadata, as upstream's Kubernetes-style `ObjectMeta`.
///
/// Only the fields upstream keeps on create (`calicoctl/calicoctl/resourcemgr/resourcemgr.go`
/// `prepareMetadataForCreate`, `libcalico-go/lib/clientv3/resources.go`) are typed; anything
/// else a tool wrote is preserved in `other` so that a read-modify-write never drops data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// One resource of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub api_version: String,
    pub kind: Kind,
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The kind's spec as JSON. `Null` when a document has no spec (allowed for some kinds).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub spec: serde_json::Value,
    /// What the system reports (a Node's WireGuard public keys and pod CIDRs, the running
    /// configuration of KubeControllersConfiguration), kept as stored. Documents cannot set it: the
    /// loader drops it and an update keeps the stored one, so a read-modify-write never loses it.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub status: serde_json::Value,
}

impl Resource {
    /// A new resource with an empty spec.
    pub fn new(kind: Kind, name: impl Into<String>) -> Resource {
        Resource {
            api_version: API_VERSION.to_string(),
            kind,
            metadata: ObjectMeta {
                name: name.into(),
                ..ObjectMeta::default()
            },
            spec: serde_json::Value::Object(serde_json::Map::new()),
            status: serde_json::Value::Null,
        }
    }

    /// The key that identifies this resource in any datastore.
    pub fn key(&self) -> ResourceKey {
        ResourceKey {
            kind: self.kind,
            namespace: self.metadata.namespace.clone(),
            name: self.metadata.name.clone(),
        }
    }
}

/// What identifies one resource: kind, namespace (for namespaced kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ResourceKey {
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ResourceKey {
    pub fn new(kind: Kind, namespace: Option<String>, name: impl Into<String>) -> ResourceKey {
        ResourceKey {
            kind,
            namespace,
            name: name.into(),
        }
    }
}

/// Renders as upstream's identifier: `Kind(name)` or `Kind(namespace/name)`.
impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{}({}/{})", self.kind, namespace, self.name),
            None => write!(f, "{}({})", self.kind, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_renders_like_upstream() {
        let key = ResourceKey::new(Kind::NetworkPolicy, Some("prod".into()), "deny");
        assert_eq!(key.to_string(), "NetworkPolicy(prod/deny)");
        assert_eq!(
            ResourceKey::new(Kind::IpPool, None, "pool1").to_string(),
            "IPPool(pool1)"
        );
    }

    #[test]
    fn unknown_metadata_fields_survive_a_round_trip() {
        let text = r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"n1","generation":3},"spec":{}}"#;
        let resource: Resource = serde_json::from_str(text).unwrap();
        assert_eq!(resource.metadata.other["generation"], 3);
        assert_eq!(serde_json::to_string(&resource).unwrap(), text);
    }
}
