//! Datastore initialisation before a write, as upstream's `EnsureInitialized`
//! (`libcalico-go/lib/clientv3/client.go`).
//!
//! calicoctl makes sure, before `create`, `apply` and `replace`, that ClusterInformation `default`
//! exists with a cluster GUID and `datastoreReady: true`, and that the built-in tiers `default` and
//! `adminnetworkpolicy` exist. netctl does the same, so a policy written into a fresh datastore lands
//! next to the tier it belongs to, and tools that read the GUID find one. The version is never
//! written: the node agent owns `calicoVersion`.
//!
//! Like upstream, this is best effort: a caller that may not create these resources still gets its
//! own write attempted, and the write's own errors are the ones reported.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Datastore, DatastoreType, StoreError};
use crate::resource::{Kind, Resource, ResourceKey};

/// The built-in tiers: name, order and default action (upstream's `EnsureInitialized`).
const BUILT_IN_TIERS: [(&str, f64, &str); 2] = [
    ("default", 1_000_000.0, "Deny"),
    ("adminnetworkpolicy", 1_000.0, "Pass"),
];

/// How often a ClusterInformation write that raced another writer is retried.
const ATTEMPTS: usize = 3;

/// What initialisation changed, for logs and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Initialized {
    /// `created` or `updated` for ClusterInformation `default`, when it was written.
    pub cluster_information: Option<&'static str>,
    /// Built-in tiers that were created.
    pub tiers: Vec<&'static str>,
}

/// Creates or completes ClusterInformation `default` and creates the missing built-in tiers.
///
/// Errors are returned for the caller to decide; upstream's callers ignore them.
pub async fn ensure_initialized(store: &dyn Datastore) -> Result<Initialized, StoreError> {
    let mut initialized = Initialized {
        cluster_information: ensure_cluster_information(store).await?,
        tiers: Vec::new(),
    };
    for (name, order, default_action) in BUILT_IN_TIERS {
        let key = ResourceKey::new(Kind::Tier, None, name);
        match store.get(&key).await {
            Ok(_) => continue,
            Err(StoreError::NotFound(_)) => {}
            Err(error) => return Err(error),
        }
        let mut tier = Resource::new(Kind::Tier, name);
        tier.spec = json!({"order": order, "defaultAction": default_action});
        match store.create(&tier).await {
            Ok(_) => initialized.tiers.push(name),
            Err(StoreError::AlreadyExists(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(initialized)
}

async fn ensure_cluster_information(
    store: &dyn Datastore,
) -> Result<Option<&'static str>, StoreError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = match store.get(&key).await {
            Err(StoreError::NotFound(_)) => {
                let mut information = Resource::new(Kind::ClusterInformation, "default");
                information.spec = completed(&Value::Null, store.kind());
                store.create(&information).await.map(|_| Some("created"))
            }
            Err(error) => return Err(error),
            Ok(mut information) => {
                let spec = completed(&information.spec, store.kind());
                if spec == information.spec {
                    return Ok(None);
                }
                information.spec = spec;
                store.update(&information).await.map(|_| Some("updated"))
            }
        };
        match result {
            Err(StoreError::AlreadyExists(_) | StoreError::Conflict { .. })
                if attempt < ATTEMPTS =>
            {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            other => return other,
        }
    }
}

/// The ClusterInformation spec with what initialisation guarantees filled in: a GUID (32 hex digits)
/// when there is none, `datastoreReady: true` when it is unset (an explicit `false` is kept), and on
/// the Kubernetes datastore `kdd` among the cluster types.
fn completed(spec: &Value, datastore: DatastoreType) -> Value {
    let mut spec = spec.as_object().cloned().unwrap_or_default();
    let guid = spec.get("clusterGUID").and_then(Value::as_str);
    if guid.is_none_or(str::is_empty) {
        let guid = uuid::Uuid::new_v4().simple().to_string();
        spec.insert("clusterGUID".to_string(), Value::String(guid));
    }
    if spec.get("datastoreReady").is_none_or(Value::is_null) {
        spec.insert("datastoreReady".to_string(), Value::Bool(true));
    }
    if datastore == DatastoreType::Kubernetes {
        let types = spec
            .get("clusterType")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !types.split(',').any(|kind| kind == "kdd") {
            let types = if types.is_empty() {
                "kdd".to_string()
            } else {
                format!("{types},kdd")
            };
            spec.insert("clusterType".to_string(), Value::String(types));
        }
    }
    Value::Object(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_spec_gets_a_guid_and_readiness() {
        let spec = completed(&Value::Null, DatastoreType::EtcdV3);
        let guid = spec["clusterGUID"].as_str().unwrap();
        assert_eq!(guid.len(), 32);
        assert!(guid.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(spec["datastoreReady"], true);
        assert!(spec.get("clusterType").is_none());
        assert!(
            spec.get("calicoVersion").is_none(),
            "the node agent owns it"
        );
    }

    #[test]
    fn present_values_are_kept_and_kdd_is_appended_once() {
        let spec = json!({
            "clusterGUID": "abc",
            "datastoreReady": false,
            "clusterType": "k8s,bgp",
            "calicoVersion": "v3.29.2",
        });
        let kubernetes = completed(&spec, DatastoreType::Kubernetes);
        assert_eq!(kubernetes["clusterGUID"], "abc");
        assert_eq!(kubernetes["datastoreReady"], false);
        assert_eq!(kubernetes["clusterType"], "k8s,bgp,kdd");
        assert_eq!(kubernetes["calicoVersion"], "v3.29.2");
        assert_eq!(
            completed(&kubernetes, DatastoreType::Kubernetes),
            kubernetes
        );
        assert_eq!(completed(&spec, DatastoreType::EtcdV3), spec);
    }
}
