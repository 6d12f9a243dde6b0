//! Policies of the default tier under either of their two keys (`default.<name>` of v3.29–v3.31,
//! `<name>` of ≤ v3.28 and v3.32+): a get, update or delete by name finds the policy under
//! whichever key holds it, a write uses the layout of the cluster's release (ClusterInformation
//! `calicoVersion`, read at each write since an upgrade changes it), and one policy never ends up
//! under two keys: a create is refused when either key exists, an update found under the other key
//! moves it in the same transaction, and a delete removes both when both exist (as they do, for a
//! moment, while upstream's v3.32 kube-controllers moves old keys).
//!
//! Every other resource, and a policy name with a tier prefix, has one key and goes through the
//! plain paths in `etcd/mod.rs`. Key and value formats are `conversion.rs`.

use etcd_client::{Compare, CompareOp, DeleteOptions, KeyValue, Txn, TxnOp};

use super::conversion::{self, PolicyLayout, RESOURCE_ROOT};
use super::endpoints::Delivery;
use super::{
    EtcdStore, StoreError, conflict_or_missing, header_revision, now_rfc3339, parse_revision,
    unknown_outcome,
};
use crate::release::Release;
use crate::resource::{Resource, ResourceKey};

/// How often a delete reads both keys again when they change under it.
const DELETE_ATTEMPTS: usize = 3;

/// The keys of one policy, the one the cluster's layout writes first, with what each holds now.
struct Located {
    layout: PolicyLayout,
    paths: Vec<String>,
    found: Vec<Option<KeyValue>>,
}

impl Located {
    /// The first key (in layout order) that holds the policy.
    fn first(&self) -> Option<(&String, &KeyValue)> {
        self.paths
            .iter()
            .zip(&self.found)
            .find_map(|(path, found)| found.as_ref().map(|kv| (path, kv)))
    }

    /// Guards that hold only while every key is as it was read.
    fn unchanged(&self) -> Vec<Compare> {
        self.paths
            .iter()
            .zip(&self.found)
            .map(|(path, found)| match found {
                Some(kv) => {
                    Compare::mod_revision(path.as_str(), CompareOp::Equal, kv.mod_revision())
                }
                None => Compare::version(path.as_str(), CompareOp::Equal, 0),
            })
            .collect()
    }
}

impl EtcdStore {
    /// The policy layout of the cluster's release; the v3.29–v3.31 one when it is not known.
    pub(super) async fn policy_layout(&self) -> PolicyLayout {
        let path = format!("{RESOURCE_ROOT}clusterinformations/default");
        let response = self
            .request("a read of ClusterInformation", |mut connection| {
                let path = path.clone();
                async move { connection.kv.get(path, None).await }
            })
            .await;
        let release = response.ok().and_then(|response| {
            let value: serde_json::Value =
                serde_json::from_slice(response.kvs().first()?.value()).ok()?;
            let text = value.get("spec")?.get("calicoVersion")?.as_str()?;
            Release::parse_with_precision(text)
                .ok()
                .map(|(release, _)| release)
        });
        PolicyLayout::of(release.as_ref())
    }

    /// Both keys of a policy, read in one transaction so they are seen at one revision.
    async fn locate(&self, key: &ResourceKey) -> Result<Located, StoreError> {
        let layout = self.policy_layout().await;
        let paths = conversion::key_paths(key, layout);
        let reads: Vec<TxnOp> = paths
            .iter()
            .map(|path| TxnOp::get(path.as_str(), None))
            .collect();
        let response = self
            .request("get", |mut connection| {
                let txn = Txn::new().and_then(reads.clone());
                async move { connection.kv.txn(txn).await }
            })
            .await?;
        let found = super::reads(&response);
        Ok(Located {
            layout,
            paths,
            found,
        })
    }

    pub(super) async fn get_policy(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        let located = self.locate(key).await?;
        let (path, found) = located
            .first()
            .ok_or_else(|| StoreError::NotFound(key.clone()))?;
        conversion::decode(path, found.value(), found.mod_revision())
    }

    /// Creates the policy under the layout's key, only if neither key exists.
    pub(super) async fn create_policy(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let key = resource.key();
        let layout = self.policy_layout().await;
        let paths = conversion::key_paths(&key, layout);
        let mut stored = resource.clone();
        if stored.metadata.uid.is_none() {
            stored.metadata.uid = Some(uuid::Uuid::new_v4().to_string());
        }
        if stored.metadata.creation_timestamp.is_none() {
            stored.metadata.creation_timestamp = Some(now_rfc3339());
        }
        let value = conversion::encode_in(&stored, layout);
        let absent: Vec<Compare> = paths
            .iter()
            .map(|path| Compare::version(path.as_str(), CompareOp::Equal, 0))
            .collect();
        let txn = Txn::new()
            .when(absent)
            .and_then([TxnOp::put(paths[0].as_str(), value.clone(), None)])
            .or_else([TxnOp::get(paths[0].as_str(), None)]);
        let mut delivery = Delivery::default();
        let response = self.write("create", &key, txn, &mut delivery).await?;
        let revision = match (response.succeeded(), super::found(&response)) {
            (true, _) => header_revision(&response),
            // An earlier copy of this create applied: the key holds our bytes (a fresh uid).
            (false, Some(existing))
                if delivery.maybe_applied() && existing.value() == value.as_slice() =>
            {
                existing.mod_revision()
            }
            (false, _) => return Err(StoreError::AlreadyExists(key)),
        };
        stored.metadata.resource_version = Some(revision.to_string());
        Ok(stored)
    }

    /// Updates the policy at the expected revision under the layout's key; found under the other
    /// key, it is moved (that key deleted in the same transaction).
    pub(super) async fn update_policy(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let key = resource.key();
        let expected = StoreError::expected_version(resource)?;
        let revision = parse_revision(expected)?;
        let located = self.locate(&key).await?;
        let holds_expected = located
            .found
            .iter()
            .flatten()
            .any(|kv| kv.mod_revision() == revision);
        if !holds_expected {
            let current = located.first().map(|(_, kv)| kv.clone());
            return Err(conflict_or_missing(key, expected, current.as_ref()));
        }
        let value = conversion::encode_in(resource, located.layout);
        let target = located.paths[0].as_str();
        let mut writes = vec![TxnOp::put(target, value.clone(), None)];
        for (path, found) in located.paths.iter().zip(&located.found).skip(1) {
            if found.is_some() {
                writes.push(TxnOp::delete(path.as_str(), None));
            }
        }
        let txn = Txn::new()
            .when(located.unchanged())
            .and_then(writes)
            .or_else([TxnOp::get(target, None)]);
        let mut delivery = Delivery::default();
        let response = self.write("update", &key, txn, &mut delivery).await?;
        let written = match (response.succeeded(), super::found(&response)) {
            (true, _) => header_revision(&response),
            (false, Some(current))
                if delivery.maybe_applied() && current.value() == value.as_slice() =>
            {
                current.mod_revision()
            }
            (false, current) if delivery.maybe_applied() => {
                let source = conflict_or_missing(key.clone(), expected, current.as_ref());
                return Err(unknown_outcome("update", &key, source));
            }
            (false, current) => return Err(conflict_or_missing(key, expected, current.as_ref())),
        };
        let mut stored = resource.clone();
        stored.metadata.resource_version = Some(written.to_string());
        Ok(stored)
    }

    /// Deletes the policy under whichever key holds it (both, when both do), at the expected
    /// revision of the copy it was read from when one is given.
    pub(super) async fn delete_policy(
        &self,
        key: &ResourceKey,
        resource_version: Option<&str>,
    ) -> Result<Resource, StoreError> {
        let expected = resource_version.map(parse_revision).transpose()?;
        let mut attempt = 1;
        loop {
            let located = self.locate(key).await?;
            let Some((first_path, first)) = located.first() else {
                return Err(StoreError::NotFound(key.clone()));
            };
            let chosen = match expected {
                None => Some((first_path.clone(), first.clone())),
                Some(revision) => {
                    located
                        .paths
                        .iter()
                        .zip(&located.found)
                        .find_map(|(path, found)| {
                            found
                                .as_ref()
                                .filter(|kv| kv.mod_revision() == revision)
                                .map(|kv| (path.clone(), kv.clone()))
                        })
                }
            };
            let Some((path, previous)) = chosen else {
                return Err(conflict_or_missing(
                    key.clone(),
                    resource_version.unwrap_or_default(),
                    Some(first),
                ));
            };
            let deletes: Vec<TxnOp> = located
                .paths
                .iter()
                .zip(&located.found)
                .filter(|(_, found)| found.is_some())
                .map(|(path, _)| {
                    TxnOp::delete(path.as_str(), Some(DeleteOptions::new().with_prev_key()))
                })
                .collect();
            let txn = Txn::new().when(located.unchanged()).and_then(deletes);
            let mut delivery = Delivery::default();
            let response = self.write("delete", key, txn, &mut delivery).await?;
            if response.succeeded() {
                return conversion::decode(&path, previous.value(), previous.mod_revision());
            }
            // An earlier copy may have deleted it; what is there now decides.
            let now = self.locate(key).await?;
            if delivery.maybe_applied() && now.first().is_none() {
                return conversion::decode(&path, previous.value(), previous.mod_revision());
            }
            match (expected, now.first()) {
                (_, None) => return Err(StoreError::NotFound(key.clone())),
                // Conditional: the copy read has changed since.
                (Some(_), Some((_, current)))
                    if current.mod_revision() != previous.mod_revision() =>
                {
                    return Err(conflict_or_missing(
                        key.clone(),
                        resource_version.unwrap_or_default(),
                        Some(current),
                    ));
                }
                _ if attempt < DELETE_ATTEMPTS => attempt += 1,
                (_, Some((_, current))) => {
                    return Err(conflict_or_missing(
                        key.clone(),
                        &previous.mod_revision().to_string(),
                        Some(current),
                    ));
                }
            }
        }
    }
}
