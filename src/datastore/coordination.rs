//! Coordination between netctl runs: leases, a create-if-absent lock key, and small blobs.
//!
//! The executor needs two things a resource store does not offer: a lock that dies with its holder
//! (a lease with a time to live, kept alive while the run lasts) and a place to mirror the checkpoint so
//! a run can be resumed from another machine. Keys live under [`NETCTL_ROOT`]: inside `/calico/`, so an
//! etcd role granted that prefix covers them, and outside `/calico/resources/`, so upstream components
//! never read them. This module defines the contract only; `etcd::coordination` implements it. It knows
//! nothing about plans, checkpoints or lock holders — values are opaque bytes.

use std::time::Duration;

use async_trait::async_trait;

use super::StoreError;

/// Where netctl keeps its own coordination keys in etcd.
pub const NETCTL_ROOT: &str = "/calico/netctl/";

/// The key of the upgrade lock (one upgrade per cluster at a time).
pub const UPGRADE_LOCK_KEY: &str = "/calico/netctl/upgrade/lock";

/// The key of the mirrored upgrade checkpoint's head (the plan, snapshots and log segments it names
/// are beside it; see `exec::checkpoint`).
pub const UPGRADE_CHECKPOINT_KEY: &str = "/calico/netctl/upgrade/checkpoint";

/// A granted lease; keys written with it disappear when it expires or is revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseId(pub i64);

impl std::fmt::Display for LeaseId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:x}", self.0)
    }
}

/// A stored blob with the revision it was last written at and the lease it is attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    pub value: Vec<u8>,
    pub revision: i64,
    pub lease: Option<LeaseId>,
}

/// What a lock-style create returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The key did not exist and now holds our value.
    Created,
    /// The key already existed; here is what it holds.
    Exists(Blob),
}

/// Leases and opaque keys for locks and checkpoint mirrors.
#[async_trait]
pub trait Coordination: Send + Sync {
    /// Grants a lease that expires after `ttl` unless kept alive.
    async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, StoreError>;

    /// Renews a lease. Returns the time to live it has now, or `None` when it has already expired.
    async fn keep_lease_alive(&self, lease: LeaseId) -> Result<Option<Duration>, StoreError>;

    /// Revokes a lease, deleting every key attached to it. Revoking an expired lease is not an error.
    async fn revoke_lease(&self, lease: LeaseId) -> Result<(), StoreError>;

    /// Writes `value` at `key`, attached to `lease`, only if `key` does not exist.
    async fn create_leased(
        &self,
        key: &str,
        value: &[u8],
        lease: LeaseId,
    ) -> Result<CreateOutcome, StoreError>;

    /// Writes `value` at `key` unconditionally (no lease).
    async fn put_blob(&self, key: &str, value: &[u8]) -> Result<(), StoreError>;

    /// Reads `key`.
    async fn get_blob(&self, key: &str) -> Result<Option<Blob>, StoreError>;

    /// Deletes `key` only if it was last written at `revision`. Returns whether it was deleted.
    async fn delete_blob_at(&self, key: &str, revision: i64) -> Result<bool, StoreError>;

    /// Deletes `key` whatever it holds; a missing key is not an error.
    async fn delete_blob(&self, key: &str) -> Result<(), StoreError>;
}
