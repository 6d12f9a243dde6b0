//! [`Coordination`] for the Kubernetes datastore: leases as `coordination.k8s.io/v1` Leases, keys
//! (the upgrade lock, the checkpoint mirror) as ConfigMaps, all in [`COORDINATION_NAMESPACE`].
//!
//! Kubernetes does not delete objects when a Lease expires, so expiry is enforced by the readers:
//! a Lease whose `renewTime + leaseDurationSeconds` has passed is expired, and a ConfigMap attached
//! to an expired or missing Lease (label [`LEASE_LABEL`]) is treated as absent and removed when met.
//! A key's revision is the ConfigMap's `resourceVersion`; conditional deletes carry it as a
//! precondition. Values are kept as `binaryData`, so they stay opaque bytes.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

use super::{KubeStore, errors};
use crate::datastore::StoreError;
use crate::datastore::coordination::{Blob, Coordination, CreateOutcome, LeaseId, NETCTL_ROOT};

/// Where netctl keeps its Leases and ConfigMaps: present in every cluster.
pub const COORDINATION_NAMESPACE: &str = "kube-system";

/// The label that attaches a ConfigMap to a Lease (its id in hexadecimal).
pub const LEASE_LABEL: &str = "netctl.projectcalico.org/lease";

/// The data key of a ConfigMap that holds a value.
const VALUE_KEY: &str = "value";

fn lease_name(lease: LeaseId) -> String {
    format!("netctl-lease-{lease}")
}

/// The ConfigMap name of a coordination key: `/calico/netctl/upgrade/lock` → `netctl-upgrade-lock`.
pub fn config_map_name(key: &str) -> String {
    let relative = key.strip_prefix(NETCTL_ROOT).unwrap_or(key);
    let words: Vec<String> = relative
        .split(|character: char| !character.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| word.to_ascii_lowercase())
        .collect();
    format!("netctl-{}", words.join("-"))
}

fn lease_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
    )
}

fn revision_of(resource_version: Option<&str>) -> i64 {
    resource_version
        .and_then(|version| version.parse().ok())
        .unwrap_or_default()
}

fn now_micros() -> String {
    humantime::format_rfc3339_micros(SystemTime::now()).to_string()
}

impl KubeStore {
    fn leases(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.api.client.clone(),
            COORDINATION_NAMESPACE,
            &lease_resource(),
        )
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.api.client.clone(), COORDINATION_NAMESPACE)
    }

    /// The time a Lease has left, or `None` when it is expired or gone.
    async fn lease_remaining(&self, lease: LeaseId) -> Result<Option<Duration>, StoreError> {
        let name = lease_name(lease);
        let found = self
            .call(
                self.request("get", "leases.coordination.k8s.io", None, None),
                self.leases().get_opt(&name),
            )
            .await?;
        let Some(found) = found else {
            return Ok(None);
        };
        let spec = &found.data["spec"];
        let duration = Duration::from_secs(spec["leaseDurationSeconds"].as_u64().unwrap_or(0));
        let renewed = spec["renewTime"]
            .as_str()
            .and_then(|time| humantime::parse_rfc3339_weak(time).ok());
        let Some(renewed) = renewed else {
            return Ok(None);
        };
        let elapsed = SystemTime::now()
            .duration_since(renewed)
            .unwrap_or_default();
        Ok(duration.checked_sub(elapsed).filter(|left| !left.is_zero()))
    }

    /// Reads a ConfigMap, treating one attached to an expired Lease as absent (and removing it).
    async fn read_key(&self, key: &str) -> Result<Option<(Blob, String)>, StoreError> {
        let name = config_map_name(key);
        let found = self
            .call(
                self.request("get", "configmaps", None, None),
                self.config_maps().get_opt(&name),
            )
            .await?;
        let Some(found) = found else {
            return Ok(None);
        };
        let lease = found
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(LEASE_LABEL))
            .and_then(|id| i64::from_str_radix(id, 16).ok())
            .map(LeaseId);
        let version = found.metadata.resource_version.clone().unwrap_or_default();
        if let Some(lease) = lease
            && self.lease_remaining(lease).await?.is_none()
        {
            self.delete_at(&name, &version).await?;
            return Ok(None);
        }
        let value = found
            .binary_data
            .as_ref()
            .and_then(|data| data.get(VALUE_KEY))
            .map(|bytes| bytes.0.clone())
            .unwrap_or_default();
        Ok(Some((
            Blob {
                value,
                revision: revision_of(Some(&version)),
                lease,
            },
            version,
        )))
    }

    /// Deletes a ConfigMap if it is still at `version`. Returns whether it was deleted.
    async fn delete_at(&self, name: &str, version: &str) -> Result<bool, StoreError> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: Some(version.to_string()),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        match self
            .call(
                self.request("delete", "configmaps", None, None),
                self.config_maps().delete(name, &params),
            )
            .await
        {
            Ok(_) => Ok(true),
            // Gone, or changed since (its precondition failed): not deleted by this call.
            Err(error) if matches!(errors::status_of(&error), Some((404 | 409, _))) => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn config_map(key: &str, value: &[u8], lease: Option<LeaseId>) -> ConfigMap {
        let mut labels = BTreeMap::new();
        labels.insert(
            "app.kubernetes.io/managed-by".to_string(),
            "netctl".to_string(),
        );
        if let Some(lease) = lease {
            labels.insert(LEASE_LABEL.to_string(), lease.to_string());
        }
        let mut config_map = ConfigMap::default();
        config_map.metadata.name = Some(config_map_name(key));
        config_map.metadata.namespace = Some(COORDINATION_NAMESPACE.to_string());
        config_map.metadata.labels = Some(labels);
        config_map.metadata.annotations = Some(BTreeMap::from([(
            "netctl.projectcalico.org/key".to_string(),
            key.to_string(),
        )]));
        config_map.binary_data = Some(BTreeMap::from([(
            VALUE_KEY.to_string(),
            ByteString(value.to_vec()),
        )]));
        config_map
    }
}

#[async_trait]
impl Coordination for KubeStore {
    async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, StoreError> {
        // A positive id, so its hexadecimal form is a valid label value and object name.
        let id = LeaseId((uuid::Uuid::new_v4().as_u128() as i64) & i64::MAX);
        let now = now_micros();
        let lease: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": lease_name(id), "namespace": COORDINATION_NAMESPACE,
                         "labels": {"app.kubernetes.io/managed-by": "netctl"}},
            "spec": {"holderIdentity": "netctl", "leaseDurationSeconds": ttl.as_secs().max(1),
                     "acquireTime": now, "renewTime": now},
        }))
        .map_err(|source| StoreError::InvalidData {
            location: "a Lease built by netctl".into(),
            source,
        })?;
        self.call(
            self.request("create", "leases.coordination.k8s.io", None, None),
            self.leases().create(&PostParams::default(), &lease),
        )
        .await?;
        Ok(id)
    }

    async fn keep_lease_alive(&self, lease: LeaseId) -> Result<Option<Duration>, StoreError> {
        if self.lease_remaining(lease).await?.is_none() {
            return Ok(None);
        }
        let name = lease_name(lease);
        let patch = json!({"spec": {"renewTime": now_micros()}});
        let renewed = self
            .call(
                self.request("update", "leases.coordination.k8s.io", None, None),
                self.leases().patch(
                    &name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                ),
            )
            .await?;
        let seconds = renewed.data["spec"]["leaseDurationSeconds"]
            .as_u64()
            .unwrap_or(0);
        Ok(Some(Duration::from_secs(seconds)).filter(|ttl| !ttl.is_zero()))
    }

    async fn revoke_lease(&self, lease: LeaseId) -> Result<(), StoreError> {
        let selector = format!("{LEASE_LABEL}={lease}");
        let attached = self
            .call(
                self.request("list", "configmaps", None, None),
                self.config_maps()
                    .list(&ListParams::default().labels(&selector)),
            )
            .await?;
        for config_map in attached.items {
            if let (Some(name), Some(version)) = (
                config_map.metadata.name,
                config_map.metadata.resource_version,
            ) {
                self.delete_at(&name, &version).await?;
            }
        }
        match self
            .call(
                self.request("delete", "leases.coordination.k8s.io", None, None),
                self.leases()
                    .delete(&lease_name(lease), &DeleteParams::default()),
            )
            .await
        {
            // Gone already: what revoking wanted.
            Ok(_) => Ok(()),
            Err(error) if matches!(errors::status_of(&error), Some((404, _))) => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn create_leased(
        &self,
        key: &str,
        value: &[u8],
        lease: LeaseId,
    ) -> Result<CreateOutcome, StoreError> {
        // Reading first removes a key left by an expired lease, so the create can succeed.
        if let Some((blob, _)) = self.read_key(key).await? {
            return Ok(CreateOutcome::Exists(blob));
        }
        let config_map = Self::config_map(key, value, Some(lease));
        let created = self
            .call(
                self.request("create", "configmaps", None, None),
                self.config_maps()
                    .create(&PostParams::default(), &config_map),
            )
            .await;
        match created {
            Ok(_) => Ok(CreateOutcome::Created),
            Err(error) if matches!(errors::status_of(&error), Some((409, "AlreadyExists"))) => {
                match self.read_key(key).await? {
                    Some((blob, _)) => Ok(CreateOutcome::Exists(blob)),
                    None => Err(StoreError::failed(
                        "a lock write",
                        errors::KubeError::ChangedWhileWritten {
                            key: key.to_string(),
                        },
                    )),
                }
            }
            Err(error) => Err(error),
        }
    }

    async fn put_blob(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let mut config_map = Self::config_map(key, value, None);
        let name = config_map_name(key);
        let existing = self
            .call(
                self.request("get", "configmaps", None, None),
                self.config_maps().get_opt(&name),
            )
            .await?;
        match existing {
            Some(existing) => {
                config_map.metadata.resource_version = existing.metadata.resource_version;
                self.call(
                    self.request("update", "configmaps", None, None),
                    self.config_maps()
                        .replace(&name, &PostParams::default(), &config_map),
                )
                .await?;
            }
            None => {
                self.call(
                    self.request("create", "configmaps", None, None),
                    self.config_maps()
                        .create(&PostParams::default(), &config_map),
                )
                .await?;
            }
        }
        Ok(())
    }

    async fn get_blob(&self, key: &str) -> Result<Option<Blob>, StoreError> {
        Ok(self.read_key(key).await?.map(|(blob, _)| blob))
    }

    async fn delete_blob_at(&self, key: &str, revision: i64) -> Result<bool, StoreError> {
        match self.read_key(key).await? {
            Some((blob, version)) if blob.revision == revision => {
                self.delete_at(&config_map_name(key), &version).await
            }
            _ => Ok(false),
        }
    }

    async fn delete_blob(&self, key: &str) -> Result<(), StoreError> {
        match self
            .call(
                self.request("delete", "configmaps", None, None),
                self.config_maps()
                    .delete(&config_map_name(key), &DeleteParams::default()),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if matches!(errors::status_of(&error), Some((404, _))) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_config_map_names() {
        assert_eq!(
            config_map_name("/calico/netctl/upgrade/lock"),
            "netctl-upgrade-lock"
        );
        assert_eq!(
            config_map_name("/calico/netctl/upgrade/checkpoint"),
            "netctl-upgrade-checkpoint"
        );
    }
}
