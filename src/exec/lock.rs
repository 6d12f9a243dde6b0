//! The run lock: one upgrade per cluster at a time, and it dies with its holder.
//!
//! The lock is a key under `/calico/netctl/` written only if absent and attached to a lease. The
//! holding process renews the lease in the background; if it crashes, the lease runs out and the key
//! disappears with it, so nobody is left with Helm's "another operation is in progress" forever. The
//! key's value names the holder (user, host, pid, start time, lock id), so a refused operator knows whom
//! to ask. `netctl upgrade unlock LOCK_ID` removes a lock by hand; the id acts as a nonce, so a stale
//! command line cannot remove a newer lock. This module does not decide when to lock; the executor does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::datastore::StoreError;
use crate::datastore::coordination::{Coordination, CreateOutcome, LeaseId, UPGRADE_LOCK_KEY};
use crate::errors::Hint;

/// The lease time to live when none is given: long enough to ride out a short etcd leader election,
/// short enough that a crashed run does not block the maintenance window for long.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(60);

/// Who runs (or ran) an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub user: String,
    pub host: String,
    pub pid: u32,
    pub started: String,
}

impl Holder {
    /// This process, as the operating system names it: the user of its uid (through the system's
    /// user database, so directory users resolve too; the uid itself when it has no name), the
    /// host name, the pid. Never the environment: `$USER` is whatever the caller set.
    pub fn current() -> Holder {
        let uid = nix::unistd::getuid();
        let user = match nix::unistd::User::from_uid(uid) {
            Ok(Some(user)) => user.name,
            _ => format!("uid {uid}"),
        };
        Holder {
            user,
            host: this_host(),
            pid: std::process::id(),
            started: super::clock::now_rfc3339(),
        }
    }

    /// Whether the holder's process still runs, when it ran on this host (`None` elsewhere: a pid
    /// of another machine says nothing here). A recycled pid that now runs another program is not
    /// the holder.
    pub fn is_alive_here(&self) -> Option<bool> {
        if self.host != this_host() {
            return None;
        }
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.pid).ok()?)?;
        let exists = match rustix::process::test_kill_process(pid) {
            Ok(()) => true,
            // Another user's process: it exists.
            Err(rustix::io::Errno::PERM) => true,
            Err(_) => false,
        };
        if !exists {
            return Some(false);
        }
        let program = std::fs::read_link(format!("/proc/{}/exe", self.pid)).ok();
        Some(program.is_none_or(|program| {
            program
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("netctl"))
        }))
    }
}

/// The host name as the kernel reports it.
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}@{} (pid {}, since {})",
            self.user, self.host, self.pid, self.started
        )
    }
}

/// What the lock key holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRecord {
    /// The nonce `netctl upgrade unlock` takes.
    pub id: String,
    pub holder: Holder,
    pub operation: String,
    pub ttl_seconds: u64,
    /// The upgrade run the lock is held for, so a `--resume` of that same run can take over the
    /// lock of its own killed process (see [`take_over`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl LockRecord {
    /// Whether a resume of `run_id` may take this lock over: it is held for that run, by a process
    /// of this host that is gone (a SIGKILLed `upgrade apply` leaves its lease to run out).
    pub fn is_abandoned_by(&self, run_id: &str) -> bool {
        self.run_id.as_deref() == Some(run_id) && self.holder.is_alive_here() == Some(false)
    }
}

/// Why the lock could not be taken, kept or removed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another upgrade run holds the lock: {} runs `{}` (lock id `{}`){}", record.holder, record.operation, record.id, liveness(*alive))]
    Held {
        record: Box<LockRecord>,
        /// Whether the holder's process runs, when it ran on this host.
        alive: Option<bool>,
    },
    #[error("cannot take the upgrade lock")]
    Acquire {
        #[source]
        source: StoreError,
    },
    #[error("the upgrade lock was lost (the lease expired or was revoked)")]
    Lost,
    #[error("no upgrade lock is held")]
    NotHeld,
    #[error("the upgrade lock is `{found}`, not `{given}`")]
    WrongId { given: String, found: String },
    #[error("cannot remove the upgrade lock")]
    Remove {
        #[source]
        source: StoreError,
    },
    #[error("the lock key `{UPGRADE_LOCK_KEY}` holds something netctl did not write")]
    Unreadable,
}

impl Hint for LockError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            LockError::Held {
                record,
                alive: Some(false),
            } => format!(
                "the lock expires by itself within {}s{}; to remove it now: `netctl upgrade unlock {}`",
                record.ttl_seconds,
                match &record.run_id {
                    Some(_) => "; `netctl upgrade apply --resume` of its run takes it over at once",
                    None => "",
                },
                record.id
            ),
            LockError::Held { record, .. } => format!(
                "wait for that run to end; if it crashed, the lock expires by itself within {}s; to remove it by hand: `netctl upgrade unlock {}`",
                record.ttl_seconds, record.id
            ),
            LockError::Lost => {
                "another run may have started; check `netctl upgrade status`, then resume with `netctl upgrade apply --resume`".to_string()
            }
            LockError::WrongId { found, .. } => format!(
                "the lock was taken again since you looked; check `netctl upgrade status` before removing lock `{found}`"
            ),
            _ => return None,
        })
    }
}

/// How a refusal describes the holder's process, when it ran on this host.
fn liveness(alive: Option<bool>) -> &'static str {
    match alive {
        Some(true) => "; its process is running on this host",
        Some(false) => "; its process is gone from this host",
        None => "",
    }
}

/// Reads the lock record, if a lock is held.
pub async fn current(
    coordination: &dyn Coordination,
) -> Result<Option<(LockRecord, i64, Option<LeaseId>)>, LockError> {
    let blob = coordination
        .get_blob(UPGRADE_LOCK_KEY)
        .await
        .map_err(|source| LockError::Acquire { source })?;
    match blob {
        None => Ok(None),
        Some(blob) => {
            let record = serde_json::from_slice(&blob.value).map_err(|_| LockError::Unreadable)?;
            Ok(Some((record, blob.revision, blob.lease)))
        }
    }
}

/// A held lock. Renewed in the background until [`RunLock::release`]; dropping it without releasing
/// stops the renewal and lets the lease expire.
pub struct RunLock {
    coordination: Arc<dyn Coordination>,
    lease: LeaseId,
    record: LockRecord,
    lost: Arc<AtomicBool>,
    renewal: tokio::task::JoinHandle<()>,
}

impl RunLock {
    /// Takes the lock or reports who holds it.
    pub async fn acquire(
        coordination: Arc<dyn Coordination>,
        holder: Holder,
        operation: &str,
        ttl: Duration,
        run_id: Option<String>,
    ) -> Result<RunLock, LockError> {
        let acquire = |source| LockError::Acquire { source };
        let lease = coordination.grant_lease(ttl).await.map_err(acquire)?;
        let record = LockRecord {
            id: uuid::Uuid::new_v4().simple().to_string()[..12].to_string(),
            holder,
            operation: operation.to_string(),
            ttl_seconds: ttl.as_secs(),
            run_id,
        };
        let value = serde_json::to_vec(&record).map_err(|_| LockError::Unreadable)?;
        match coordination
            .create_leased(UPGRADE_LOCK_KEY, &value, lease)
            .await
        {
            Ok(CreateOutcome::Created) => {}
            Ok(CreateOutcome::Exists(blob)) => {
                let _ = coordination.revoke_lease(lease).await;
                let held: LockRecord =
                    serde_json::from_slice(&blob.value).map_err(|_| LockError::Unreadable)?;
                let alive = held.holder.is_alive_here();
                return Err(LockError::Held {
                    record: Box::new(held),
                    alive,
                });
            }
            Err(source) => {
                let _ = coordination.revoke_lease(lease).await;
                return Err(acquire(source));
            }
        }
        let lost = Arc::new(AtomicBool::new(false));
        let renewal = tokio::spawn(renew(coordination.clone(), lease, ttl, lost.clone()));
        Ok(RunLock {
            coordination,
            lease,
            record,
            lost,
            renewal,
        })
    }

    pub fn record(&self) -> &LockRecord {
        &self.record
    }

    /// Fails when the lease could not be renewed in time; the executor checks before every step.
    pub fn ensure_held(&self) -> Result<(), LockError> {
        if self.lost.load(Ordering::SeqCst) {
            Err(LockError::Lost)
        } else {
            Ok(())
        }
    }

    /// A future that revokes the lease, for a path that cannot return through the executor (an
    /// interrupt while a blocking question waits for its answer).
    pub fn revocation(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let coordination = self.coordination.clone();
        let lease = self.lease;
        async move {
            let _ = coordination.revoke_lease(lease).await;
        }
    }

    /// Stops renewing and revokes the lease, which deletes the lock key.
    pub async fn release(self) -> Result<(), LockError> {
        self.renewal.abort();
        self.coordination
            .revoke_lease(self.lease)
            .await
            .map_err(|source| LockError::Remove { source })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        self.renewal.abort();
    }
}

/// Renews the lease three times per time to live; one missed renewal is survivable, an expired lease
/// is not.
async fn renew(
    coordination: Arc<dyn Coordination>,
    lease: LeaseId,
    ttl: Duration,
    lost: Arc<AtomicBool>,
) {
    let period = (ttl / 3).max(Duration::from_millis(500));
    loop {
        tokio::time::sleep(period).await;
        match coordination.keep_lease_alive(lease).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                lost.store(true, Ordering::SeqCst);
                return;
            }
            // A transient failure: try again next period; the lease outlives two missed renewals.
            Err(_) => {}
        }
    }
}

/// Removes the lock `seen` when it is still the one held and still abandoned by its run's process
/// (see [`LockRecord::is_abandoned_by`]): a resume of that run takes it over instead of waiting for
/// its lease to run out. A lock taken again meanwhile is left alone (its holder is named).
pub async fn take_over(
    coordination: &dyn Coordination,
    seen: &LockRecord,
) -> Result<(), LockError> {
    match current(coordination).await? {
        Some((record, _, _)) if record.id != seen.id => {
            let alive = record.holder.is_alive_here();
            Err(LockError::Held {
                record: Box::new(record),
                alive,
            })
        }
        Some(_) => unlock(coordination, &seen.id).await.map(|_| ()),
        // Its lease ran out meanwhile: nothing to take over.
        None => Ok(()),
    }
}

/// Removes the lock whose id is `id` (`netctl upgrade unlock`). Refuses a different id.
pub async fn unlock(coordination: &dyn Coordination, id: &str) -> Result<LockRecord, LockError> {
    let Some((record, revision, lease)) = current(coordination).await? else {
        return Err(LockError::NotHeld);
    };
    if record.id != id {
        return Err(LockError::WrongId {
            given: id.to_string(),
            found: record.id,
        });
    }
    let remove = |source| LockError::Remove { source };
    if let Some(lease) = lease {
        coordination.revoke_lease(lease).await.map_err(remove)?;
    }
    // The key is gone with its lease; delete it anyway in case it was written without one.
    coordination
        .delete_blob_at(UPGRADE_LOCK_KEY, revision)
        .await
        .map_err(remove)?;
    Ok(record)
}
