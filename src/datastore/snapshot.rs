//! An etcd snapshot beside a backup: the member's whole database as etcd's maintenance API streams
//! it (what `etcdctl snapshot save` writes, and `etcdctl snapshot restore` / `etcdutl snapshot
//! restore` read), saved next to the backup file as `<backup>.etcd-snapshot.db`.
//!
//! The backup file (`backup.rs`) holds what netctl reads and can restore resource by resource; the
//! snapshot holds everything else in etcd too (other applications' keys, history up to the last
//! compaction) and is the disaster-recovery copy a whole cluster is rebuilt from. Streamed to disk a
//! chunk at a time (memory flat whatever the database size), written owner-only under a temporary
//! name and renamed, so the path holds a whole, checked snapshot or nothing: etcd ends the stream
//! with the sha256 of what it sent, and the size it announced must be what arrived
//! (`etcd/snapshot.rs` checks both). Only etcd has one ([`Datastore::snapshot`]).

use std::path::{Path, PathBuf};

use super::{Datastore, StoreError};
use crate::errors::Hint;

/// What a saved snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotTaken {
    /// The file's size, the trailing checksum included.
    pub bytes: u64,
    /// The sha256 etcd sent at the end of the stream (hex), checked against the bytes received.
    pub sha256: String,
    /// The member that sent it.
    pub member: String,
}

/// Why no snapshot was saved.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot take an etcd snapshot")]
    Store(#[from] StoreError),
    #[error("cannot write the etcd snapshot `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the etcd snapshot stream from `{member}` stopped: {detail}")]
    Stream { member: String, detail: String },
    #[error(
        "the etcd snapshot from `{member}` is damaged: its closing sha256 `{sent}` is not that of the {bytes} bytes received (`{received}`)"
    )]
    Checksum {
        member: String,
        bytes: u64,
        sent: String,
        received: String,
    },
    #[error(
        "the etcd snapshot from `{member}` was cut short: {received} bytes arrived of the {announced} announced"
    )]
    Size {
        member: String,
        received: u64,
        announced: u64,
    },
}

impl Hint for SnapshotError {
    fn hint(&self) -> Option<String> {
        match self {
            SnapshotError::Store(error) => error.hint(),
            SnapshotError::Checksum { .. }
            | SnapshotError::Size { .. }
            | SnapshotError::Stream { .. } => Some(
                "take the backup again; `--no-snapshot` skips the snapshot (the backup file alone restores resources and IPAM)".into(),
            ),
            SnapshotError::Write { .. } => Some(
                "free space beside the backup or write it elsewhere (`-o DIR/FILE`); `--no-snapshot` skips the snapshot".into(),
            ),
        }
    }
}

impl SnapshotError {
    /// Whether the etcd user may not take snapshots (etcd lets only `root` do it): then the
    /// backup stands alone, with a warning, instead of failing.
    pub fn is_not_permitted(&self) -> bool {
        matches!(
            self,
            SnapshotError::Store(StoreError::PermissionDenied { .. })
        )
    }
}

/// Where the snapshot of the backup at `backup` goes.
pub fn path_beside(backup: &Path) -> PathBuf {
    let mut name = backup.as_os_str().to_owned();
    name.push(".etcd-snapshot.db");
    PathBuf::from(name)
}

/// Saves the datastore's snapshot beside the backup at `backup`; `None` when the datastore has
/// none (Kubernetes). The file is whole and checked, or absent.
pub async fn save_beside(
    store: &dyn Datastore,
    backup: &Path,
) -> Result<Option<(PathBuf, SnapshotTaken)>, SnapshotError> {
    let path = path_beside(backup);
    let partial = {
        let mut name = path.as_os_str().to_owned();
        name.push(".partial");
        PathBuf::from(name)
    };
    let failed = |source| SnapshotError::Write {
        path: path.clone(),
        source,
    };
    let file = super::backup::owner_only(&partial).map_err(failed)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let taken = match store.snapshot(&mut out).await {
        None => {
            drop(out);
            let _ = std::fs::remove_file(&partial);
            return Ok(None);
        }
        Some(taken) => taken,
    };
    // The backend does not know the path its writes go to.
    let taken = taken.map_err(|error| match error {
        SnapshotError::Write { source, .. } => failed(source),
        other => other,
    });
    let finished = taken.and_then(|taken| {
        let file = out
            .into_inner()
            .map_err(|error| failed(error.into_error()))?;
        file.sync_all().map_err(failed)?;
        std::fs::rename(&partial, &path).map_err(failed)?;
        Ok(taken)
    });
    match finished {
        Ok(taken) => Ok(Some((path, taken))),
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            Err(error)
        }
    }
}
