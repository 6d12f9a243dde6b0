//! The journal: an append-only JSON-lines record of every step — who, when, what, result, how long.
//!
//! It lives beside the checkpoint and is never rewritten, so it is the audit trail of a maintenance
//! window across crashes and resumes, and the source of `upgrade history`, `upgrade status RUN` and
//! the time estimates of later runs (`history.rs`). Entries carry a one-line summary of the action,
//! never resource documents or command output; the plans it describes hold no secrets (one rule,
//! `redaction.rs`), and etcd credentials never reach the executor at all.
//!
//! The format is documented in `docs/executor.md` ("The journal"); fields are only ever added, so
//! every netctl reads every journal. A reader meets events of a newer netctl as `other`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::lock::Holder;

/// What happened to a step, or to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JournalEvent {
    /// A new run: carries `procedure`, `from`, `to`, `steps` and `cluster`; a rollback run also
    /// `rolls_back`, the run it goes back from.
    RunStarted,
    /// A process continues the run (`--resume`); carries what `run-started` does.
    RunResumed,
    /// `--resume` took over the lock of this same run from a process of this host that is gone
    /// (`summary` names it).
    LockTakenOver,
    /// A pre-flight check passed with `--skip-preflight`; `summary` names it.
    PreflightSkipped,
    /// The datastore backed up before the run's first write; `summary` names the file.
    BackupTaken,
    /// No backup before the first write (`--no-backup`).
    BackupSkipped,
    Started,
    Succeeded,
    Failed,
    /// A step not run: done by hand (`--skip`), or not applying to this cluster (the pre-flight's
    /// reason); `summary` says which.
    Skipped,
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
    /// The plan's verification found the cluster not as the run should leave it (`summary` names
    /// what); the run then stops at a gate. Written by the verification phase.
    VerificationFailed,
    /// The maintenance window ends (`--deadline`, `--window`): the run stopped at a safe point before
    /// `step`, or refused to start the segment from `step` that would not finish in time.
    StoppedAtDeadline,
    /// A notification hook (`--on-gate`, `--on-failure`, `--on-finish`) ran; `summary` names it.
    HookRan,
    /// A notification hook failed or timed out (`error`); the run goes on regardless.
    HookFailed,
    /// On resume, a completed download found changed or missing in the state directory: kept as
    /// the operator edited it, or downloaded again.
    Restored,
    /// Stopped by a signal (SIGINT, SIGTERM).
    Cancelled,
    /// The run (this process of it) ended with an error (`error`; `step` when a step was at fault).
    RunFailed,
    RunCompleted,
    /// An event this netctl does not know (written by a newer one).
    #[serde(other)]
    Other,
}

/// One line of the journal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JournalEntry {
    pub time: String,
    pub run_id: String,
    pub plan_digest: String,
    pub user: String,
    pub host: String,
    pub pid: u32,
    pub event: JournalEvent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u128>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// On `run-started`/`run-resumed`: the plan's procedure, from and to releases and step count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procedure: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
    /// On `run-started`/`run-resumed`: the cluster's ClusterInformation `clusterGUID`, so time
    /// estimates learn from this cluster's runs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// On a rollback run's `run-started`: the id of the run it goes back from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolls_back: Option<String>,
    /// On the entry that ends a process's part of a run (`run-completed`, `run-failed`,
    /// `stopped-at-gate`, `stopped-at-deadline`, `cancelled`): the exit code netctl ends with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
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
            procedure: None,
            from: None,
            to: None,
            steps: None,
            cluster: None,
            rolls_back: None,
            exit_code: None,
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
