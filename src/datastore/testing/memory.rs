//! The in-memory store behind a [`TestStore`](super::TestStore): every version of every resource
//! under etcd's rules of revisions. One revision counter for the whole store, starting at 1 (an
//! empty etcd's); every write (or transaction) moves it on by one and stamps what it wrote with the
//! new revision, which becomes the resource's `resourceVersion` (etcd's mod revision). A deleted
//! resource leaves a tombstone, so a list pinned to an older revision still sees it, as a paged
//! etcd list does. Nothing is ever compacted.

use std::collections::BTreeMap;

use crate::datastore::{StoreError, Write, WriteOutcome};
use crate::resource::{Kind, Resource, ResourceKey};

#[derive(Debug)]
pub(super) struct Memory {
    revision: u64,
    /// Each key's versions, oldest first: (mod revision, the resource or `None` once deleted).
    history: BTreeMap<ResourceKey, Vec<(u64, Option<Resource>)>>,
    created: u64,
}

impl Default for Memory {
    fn default() -> Memory {
        Memory {
            revision: 1,
            history: BTreeMap::new(),
            created: 0,
        }
    }
}

impl Memory {
    pub(super) fn revision(&self) -> u64 {
        self.revision
    }

    /// What is stored under `key` now.
    pub(super) fn current(&self, key: &ResourceKey) -> Option<&Resource> {
        self.at(key, self.revision)
    }

    /// What was stored under `key` at `revision`.
    fn at(&self, key: &ResourceKey, revision: u64) -> Option<&Resource> {
        self.history
            .get(key)?
            .iter()
            .rev()
            .find(|(written, _)| *written <= revision)?
            .1
            .as_ref()
    }

    /// The resources of `kind` (in `namespace` when it is given and the kind has namespaces) at
    /// `revision`, in key order.
    pub(super) fn listed_at(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        revision: u64,
    ) -> impl Iterator<Item = &Resource> {
        let namespace = namespace.filter(|_| kind.is_namespaced());
        self.history
            .keys()
            .filter(move |key| {
                key.kind == kind && namespace.is_none_or(|ns| key.namespace.as_deref() == Some(ns))
            })
            .filter_map(move |key| self.at(key, revision))
    }

    /// Stores `resource` as another client would, whatever is stored: a new revision, and the
    /// `uid` and `creationTimestamp` a create sets when they are missing.
    pub(super) fn put(&mut self, resource: &Resource) -> Resource {
        self.revision += 1;
        self.write(resource, true)
    }

    /// Stores `key`'s resource again at a new revision, unchanged: someone else wrote it.
    pub(super) fn touch(&mut self, key: &ResourceKey) -> Option<u64> {
        let stored = self.current(key)?.clone();
        self.revision += 1;
        self.write(&stored, false);
        Some(self.revision)
    }

    /// Removes `key`'s resource whatever its revision; what was stored.
    pub(super) fn remove(&mut self, key: &ResourceKey) -> Option<Resource> {
        let previous = self.current(key)?.clone();
        self.revision += 1;
        self.push(key.clone(), None);
        Some(previous)
    }

    /// Whether `write`'s guard holds for what is stored now; the refusal the backends give
    /// otherwise.
    pub(super) fn guard(&self, write: &Write) -> Result<(), StoreError> {
        let (key, expected) = match write {
            Write::Create(resource) => {
                let key = resource.key();
                return match self.current(&key) {
                    Some(_) => Err(StoreError::AlreadyExists(key)),
                    None => Ok(()),
                };
            }
            Write::Update(resource) => (
                resource.key(),
                resource.metadata.resource_version.as_deref().unwrap_or(""),
            ),
            Write::Delete { key, revision } => (key.clone(), revision.as_str()),
        };
        let revision = parse_revision(expected)?;
        match self.current(&key) {
            None => Err(StoreError::NotFound(key)),
            Some(stored) if stored_revision(stored) != revision => Err(StoreError::Conflict {
                key,
                expected: expected.to_string(),
                current: stored_revision(stored).to_string(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Applies writes whose guards hold, all at one new revision (one transaction); the outcome
    /// of each and, for a delete, what was stored.
    pub(super) fn apply(&mut self, writes: &[Write]) -> Vec<(WriteOutcome, Option<Resource>)> {
        self.revision += 1;
        let revision = self.revision.to_string();
        writes
            .iter()
            .map(|write| {
                let stored = match write {
                    Write::Create(resource) => Some(self.write(resource, true)),
                    Write::Update(resource) => Some(self.write(resource, false)),
                    Write::Delete { key, .. } => {
                        let previous = self.current(key).cloned();
                        self.push(key.clone(), None);
                        previous
                    }
                };
                let outcome = WriteOutcome::Applied {
                    revision: revision.clone(),
                };
                (outcome, stored)
            })
            .collect()
    }

    /// Writes `resource` at the current revision; a create fills in `uid` and
    /// `creationTimestamp` as the backends do.
    fn write(&mut self, resource: &Resource, create: bool) -> Resource {
        let mut stored = resource.clone();
        if create {
            self.created += 1;
            let metadata = &mut stored.metadata;
            if metadata.uid.is_none() {
                // A fixed pattern instead of a random uuid: tests may print what they stored.
                metadata.uid = Some(format!("00000000-0000-4000-8000-{:012x}", self.created));
            }
            if metadata.creation_timestamp.is_none() {
                metadata.creation_timestamp = Some(
                    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
                );
            }
        }
        stored.metadata.resource_version = Some(self.revision.to_string());
        self.push(stored.key(), Some(stored.clone()));
        stored
    }

    fn push(&mut self, key: ResourceKey, resource: Option<Resource>) {
        self.history
            .entry(key)
            .or_default()
            .push((self.revision, resource));
    }
}

/// A `resourceVersion` as a revision, refused as the etcd backend refuses it.
pub(super) fn parse_revision(text: &str) -> Result<u64, StoreError> {
    text.parse::<u64>()
        .ok()
        .filter(|revision| *revision > 0)
        .ok_or_else(|| StoreError::InvalidResourceVersion(text.to_string()))
}

fn stored_revision(resource: &Resource) -> u64 {
    resource
        .metadata
        .resource_version
        .as_deref()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0)
}
