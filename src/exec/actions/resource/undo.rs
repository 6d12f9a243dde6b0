//! Putting back what a create, apply, replace or delete wrote when it stopped half way (a failed
//! write, Ctrl-C, SIGTERM), within one deadline, and naming what could not be put back.
//!
//! The undo runs newest first in batches, each write guarded by the revision the command wrote
//! (created: deleted at that revision; changed: the earlier version written back at it; deleted:
//! created again), so a change someone made since is never overwritten. It has one deadline for
//! all of it — one request timeout — so a datastore that is gone or hung ends the command within
//! about twice the request timeout instead of one timeout per resource. A second Ctrl-C or SIGTERM
//! ends it at once.
//!
//! What is not put back — not reached, refused because someone changed it since, or sent in a batch
//! whose answer was lost (the command's own or the undo's: such a batch may land later, which is
//! why it counts as "may") — is written to recovery files: the resources the command created, ready
//! for `netctl delete --skip-not-exists -f`, and the earlier versions of those it changed or
//! deleted, ready for `netctl apply -f`. Each document says why it is there. The error says "may".

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tokio::time::Instant;

use crate::datastore::{Datastore, Write, WriteOutcome, batch};
use crate::exec::interrupt::Interrupt;
use crate::resource::{Resource, ResourceKey};

use super::write::{Change, Done, Ledger, Planned, Stop};
use super::{RecoveryFiles, ResourceActionError, Stopped, UndoReport};

/// Why a resource is in a recovery file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    /// Written, and not undone (the undo did not get to it).
    Written,
    /// Its batch's answer was lost: written or not, nobody knows.
    MaybeWritten,
    /// The undo's answer was lost: undone or not, nobody knows.
    MaybeUndone,
    /// Someone changed it after the command wrote it; left as they made it.
    ChangedSince,
}

impl Left {
    fn comment(self) -> &'static str {
        match self {
            Left::Written => "written by the command, not put back",
            Left::MaybeWritten => "may have been written (the answer to its batch was lost)",
            Left::MaybeUndone => "may have been put back already (the answer to the undo was lost)",
            Left::ChangedSince => {
                "changed by someone else after the command wrote it; left as they made it"
            }
        }
    }
}

/// One resource the undo could not put back for sure.
struct Remaining {
    key: ResourceKey,
    change: Change,
    why: Left,
    /// What the command wrote, for a create (for the `created` file).
    written: Option<Resource>,
    /// What was there before, for a change or a delete (for the `previous` file).
    before: Option<Resource>,
}

/// Undoes `ledger` after `stop` and returns the error that ends the command: the cause, with what
/// was put back or what may be left (see the module documentation). `written` gives the document a
/// create wrote, by the index of the command's document.
pub(super) async fn undo(
    store: &dyn Datastore,
    interrupt: Option<&Interrupt>,
    ledger: Ledger,
    stop: Stop,
    written: &dyn Fn(usize) -> Option<Resource>,
) -> ResourceActionError {
    // With no endpoint left to send to, the undo cannot succeed: say so at once.
    let unreachable = matches!(
        &stop,
        Stop::Failed(ResourceActionError::Batch { source, .. }) if source.no_endpoint_left()
    );
    let (stopped, source) = match stop {
        Stop::Failed(error) if ledger.is_empty() => return error,
        Stop::Signal(signal) if ledger.is_empty() => {
            return ResourceActionError::Interrupted { signal };
        }
        Stop::Failed(error) => (Stopped::Failed, Some(Box::new(error))),
        Stop::Signal(signal) => (Stopped::Signal(signal), None),
    };
    let Ledger { done, unknown } = ledger;
    let deadline = Instant::now() + store.request_timeout();
    let (restored, why, mut remaining) = match unreachable {
        true => {
            let why = "was not tried: no datastore endpoint is left to send it to".to_string();
            let left = done
                .into_iter()
                .rev()
                .map(|done| left(done, Left::Written, written));
            (0, Some(why), left.collect())
        }
        false => put_back(store, interrupt, done, deadline, written).await,
    };
    remaining.extend(
        unknown
            .into_iter()
            .map(|planned| maybe_written(planned, written)),
    );
    if remaining.is_empty() {
        return ResourceActionError::RolledBack {
            stop: stopped,
            restored,
            source,
        };
    }
    let report = UndoReport {
        left: remaining.len(),
        why: why.unwrap_or_else(|| {
            "could not tell what became of the batch whose answer was lost".to_string()
        }),
        files: write_recovery_files(&remaining).map_err(|error| error.to_string()),
    };
    ResourceActionError::NotUndone {
        stop: stopped,
        report: Box::new(report),
        source,
    }
}

/// Puts back `done`, newest first, until the deadline. Returns how many were put back, why it
/// stopped early (if it did) and what remains.
async fn put_back(
    store: &dyn Datastore,
    interrupt: Option<&Interrupt>,
    mut done: Vec<Done>,
    deadline: Instant,
    written: &dyn Fn(usize) -> Option<Resource>,
) -> (usize, Option<String>, Vec<Remaining>) {
    let limits = store.batch_limits();
    let timeout = humantime::format_duration(store.request_timeout());
    let mut restored = 0;
    let mut remaining = Vec::new();
    let mut again: Vec<Done> = Vec::new();
    let stopped_why = loop {
        // Newest first: the ledger's end, and what a refused transaction did not apply.
        let mut batch: Vec<Done> = std::mem::take(&mut again);
        while batch.len() < limits.writes.max(1) {
            match done.pop() {
                Some(next) => batch.push(next),
                None => break,
            }
        }
        if batch.is_empty() {
            break None;
        }
        let writes: Vec<Write> = batch.iter().map(undo_write).collect();
        let ranges = batch::batches(&writes, limits);
        let cut = ranges.first().map_or(batch.len(), |range| range.end);
        // A batch over the byte limit: the rest waits for the next round.
        let rest = batch.split_off(cut);
        again = rest;
        let writes = &writes[..cut];
        if interrupt.is_some_and(Interrupt::insisted) {
            remaining.extend(
                batch
                    .into_iter()
                    .map(|done| left(done, Left::Written, written)),
            );
            break Some("was stopped by a second signal".to_string());
        }
        let outcome = match tokio::time::timeout_at(deadline, store.write_batch(writes)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                // Sent and not answered: it may still land.
                remaining.extend(
                    batch
                        .into_iter()
                        .map(|done| left(done, Left::MaybeUndone, written)),
                );
                break Some(format!("did not finish within its deadline of {timeout}"));
            }
        };
        for (done, result) in batch.into_iter().zip(outcome.outcomes) {
            match result {
                WriteOutcome::Applied { .. } => restored += 1,
                WriteOutcome::Refused { .. } => {
                    remaining.push(left(done, Left::ChangedSince, written));
                }
                WriteOutcome::NotApplied if outcome.failure.is_none() => again.push(done),
                WriteOutcome::NotApplied => remaining.push(left(done, Left::Written, written)),
                WriteOutcome::Unknown => remaining.push(left(done, Left::MaybeUndone, written)),
            }
        }
        if let Some(failure) = outcome.failure {
            break Some(format!("failed: {}", crate::errors::error_chain(&failure)));
        }
    };
    // What the undo never got to.
    remaining.extend(
        again
            .into_iter()
            .chain(done.into_iter().rev())
            .map(|done| left(done, Left::Written, written)),
    );
    (restored, stopped_why, remaining)
}

/// The write that undoes `done`, guarded on the revision the command wrote.
fn undo_write(done: &Done) -> Write {
    match (done.change, &done.before) {
        (Change::Created, _) | (_, None) => Write::Delete {
            key: done.key.clone(),
            revision: done.revision.clone(),
        },
        (Change::Configured, Some(before)) => {
            let mut restored = Resource::clone(before);
            restored.metadata.resource_version = Some(done.revision.clone());
            Write::Update(restored)
        }
        (Change::Deleted, Some(before)) => Write::Create(Resource::clone(before)),
    }
}

fn left(done: Done, why: Left, written: &dyn Fn(usize) -> Option<Resource>) -> Remaining {
    Remaining {
        written: match done.change {
            Change::Created => done.document.and_then(written),
            _ => None,
        },
        key: done.key,
        change: done.change,
        why,
        before: done.before.map(|before| *before),
    }
}

fn maybe_written(planned: Planned, written: &dyn Fn(usize) -> Option<Resource>) -> Remaining {
    let key = planned.write.key();
    let document = planned.document;
    Remaining {
        written: match planned.write {
            Write::Create(resource) => Some(resource),
            _ if planned.change == Change::Created => document.and_then(written),
            _ => None,
        },
        key,
        change: planned.change,
        why: Left::MaybeWritten,
        before: planned.before,
    }
}

/// Writes the recovery files beside the command (the working directory), or in the system's
/// temporary directory when that is not writable.
fn write_recovery_files(remaining: &[Remaining]) -> std::io::Result<RecoveryFiles> {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace([':', '-'], "");
    let base = format!("netctl-recovery-{stamp}-{}", std::process::id());
    let created: Vec<(Left, Resource)> = remaining
        .iter()
        .filter(|item| item.change == Change::Created)
        .map(|item| (item.why, document_of(item.written.as_ref(), &item.key)))
        .collect();
    let previous: Vec<(Left, Resource)> = remaining
        .iter()
        .filter(|item| item.change != Change::Created)
        .map(|item| (item.why, document_of(item.before.as_ref(), &item.key)))
        .collect();
    let mut files = RecoveryFiles::default();
    if !created.is_empty() {
        let header = "resources the command created (or may have): `netctl delete --skip-not-exists -f FILE` removes them, `netctl apply -f FILE` keeps them";
        files.created = Some(write_beside(
            &format!("{base}-created.yaml"),
            header,
            &created,
        )?);
    }
    if !previous.is_empty() {
        let header = "resources as they were before the command changed or deleted them: `netctl apply -f FILE` puts them back";
        files.previous = Some(write_beside(
            &format!("{base}-previous.yaml"),
            header,
            &previous,
        )?);
    }
    Ok(files)
}

/// A resource as a document for a recovery file: without its revision (the file is applied or
/// deleted unconditionally), or just its kind and name when nothing more is known.
fn document_of(resource: Option<&Resource>, key: &ResourceKey) -> Resource {
    let mut document = match resource {
        Some(resource) => resource.clone(),
        None => {
            let mut bare = Resource::new(key.kind, key.name.clone());
            bare.metadata.namespace = key.namespace.clone();
            bare
        }
    };
    document.metadata.resource_version = None;
    document.status = serde_json::Value::Null;
    document
}

fn write_beside(
    name: &str,
    header: &str,
    documents: &[(Left, Resource)],
) -> std::io::Result<PathBuf> {
    let here = std::env::current_dir().unwrap_or_default().join(name);
    match write_file(&here, header, documents) {
        Ok(()) => Ok(here),
        Err(_) => {
            let elsewhere = std::env::temp_dir().join(name);
            write_file(&elsewhere, header, documents).map(|()| elsewhere)
        }
    }
}

fn write_file(path: &Path, header: &str, documents: &[(Left, Resource)]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "# netctl recovery file: {header}")?;
    for (why, document) in documents {
        let text = crate::yaml::to_string(document).map_err(std::io::Error::other)?;
        writeln!(out, "---\n# {}", why.comment())?;
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    out.get_ref().sync_all()
}
