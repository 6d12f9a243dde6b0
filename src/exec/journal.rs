//! The journal: an append-only JSON-lines record of every step — who, when, what, result, how long.
//!
//! It lives beside the checkpoint and is never rewritten, so it is the audit trail of a maintenance
//! window across crashes and resumes. Entries carry a one-line summary of the action, never resource
//! documents or command output; the plans it describes hold no secrets (one rule, `redaction.rs`),
//! and etcd credentials never reach the executor at all.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::lock::Holder;

/// What happened to a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum JournalEvent {
    RunStarted,
    RunResumed,
    /// A pre-flight check passed with `--skip-preflight`; `summary` names it.
    PreflightSkipped,
    /// The datastore backed up before the run's first write; `summary` names the file.
    BackupTaken,
    /// No backup before the first write (`--no-backup`).
    BackupSkipped,
    Started,
    Succeeded,
    Failed,
    /// A failed attempt that will be retried.
    Retrying,
    /// An interrupted step whose postcondition already held, so it was not run again.
    Recovered,
    /// A completed step whose postcondition no longer holds.
    Drift,
    /// A drifted step set to run again (`--repair`).
    Repairing,
    Approved,
    StoppedAtGate,
    /// On resume, a completed download found changed or missing in the state directory: kept as
    /// the operator edited it, or downloaded again.
    Restored,
    /// Stopped by a signal (SIGINT, SIGTERM).
    Cancelled,
    RunCompleted,
}

/// One line of the journal.
#[derive(Debug, Clone, Serialize)]
pub struct JournalEntry {
    pub time: String,
    pub run_id: String,
    pub plan_digest: String,
    pub user: String,
    pub host: String,
    pub pid: u32,
    pub event: JournalEvent,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why the journal could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the journal `{}`", path.display())]
pub struct JournalError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// An open journal file.
pub struct Journal {
    path: PathBuf,
    file: File,
    run_id: String,
    plan_digest: String,
    holder: Holder,
}

impl Journal {
    /// Opens (creating if needed) the journal at `path` for appending.
    pub fn open(
        path: &Path,
        run_id: &str,
        plan_digest: &str,
        holder: &Holder,
    ) -> Result<Journal, JournalError> {
        let error = |source| JournalError {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(error)?;
        // Owner-only like the rest of the state directory, also when an older release made it.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(error)?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            run_id: run_id.to_string(),
            plan_digest: plan_digest.to_string(),
            holder: holder.clone(),
        })
    }

    /// A new entry for this run, to be completed by the caller.
    pub fn entry(&self, event: JournalEvent) -> JournalEntry {
        JournalEntry {
            time: super::clock::now_rfc3339(),
            run_id: self.run_id.clone(),
            plan_digest: self.plan_digest.clone(),
            user: self.holder.user.clone(),
            host: self.holder.host.clone(),
            pid: self.holder.pid,
            event,
            step: None,
            action: None,
            attempt: None,
            duration_ms: None,
            summary: None,
            error: None,
        }
    }

    /// Appends one line and flushes it to disk (the journal must survive the crash it documents).
    pub fn record(&mut self, entry: &JournalEntry) -> Result<(), JournalError> {
        let error = |source| JournalError {
            path: self.path.clone(),
            source,
        };
        let mut line =
            serde_json::to_vec(entry).map_err(|source| error(std::io::Error::other(source)))?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(error)?;
        self.file.sync_data().map_err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_one_appended_line() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("journal.jsonl");
        let holder = Holder {
            user: "ops".into(),
            host: "h".into(),
            pid: 1,
            started: "t".into(),
        };
        for _ in 0..2 {
            let mut journal = Journal::open(&path, "run", "sha256:x", &holder).unwrap();
            let mut entry = journal.entry(JournalEvent::Started);
            entry.step = Some("a/b".into());
            journal.record(&entry).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["event"], "started");
        assert_eq!(first["user"], "ops");
    }
}
