//! The checkpoint: where a run stands, kept so that a crash loses at most the step in progress, at a
//! cost per step that does not grow with the plan.
//!
//! A run's books are three things. The plan, stored once under its digest (content-addressed: the
//! same plan is never written twice). A snapshot of the run: every step's record (state, attempts,
//! times, summary, digests), registered outputs, why the run stopped, and a sequence number. And a
//! log of the transitions since that snapshot: a step started, succeeded, failed, was skipped; the
//! run stopped at a gate or completed. Each transition is one appended record, so a step costs the
//! same in a plan of ten steps and of twenty thousand. Now and then — once the log holds twice as many
//! records as the plan has steps, and at least [`COMPACT_AFTER`] — the state is written as a new
//! snapshot and the log starts over, so reading stays bounded and the snapshot's cost spreads
//! evenly over the transitions that led to it. Every run start and every resume writes a snapshot.
//!
//! The state directory holds them as files (`local.rs`: `plans/<hex>.json`, `checkpoint.json`,
//! `checkpoint.log`, each written owner-only); the datastore mirror holds the same three as keys
//! (`mirror.rs`), so `--resume` and `upgrade status` work from another machine at any plan size. This
//! module keeps the books and loads them; what to do with a checkpoint is the executor's decision.

mod local;
mod mirror;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Environment;
use crate::datastore::StoreError;
use crate::datastore::coordination::Coordination;
use crate::errors::Hint;
use crate::plan::Plan;

use super::lock::Holder;

pub use local::{create_private_directory, write_atomically};

/// The version of the checkpoint format; bumped on any incompatible change. Version 2 keeps the plan
/// apart from the snapshot and appends transitions to a log.
pub const CHECKPOINT_FORMAT_VERSION: u32 = 2;

/// The file name of the snapshot inside the state directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";

/// The file name of the transition log inside the state directory.
pub const CHECKPOINT_LOG_FILE: &str = "checkpoint.log";

/// The directory, inside the state directory, where plans are stored under their digests.
pub const PLANS_DIR: &str = "plans";

/// The file name of the journal inside the state directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// The file, inside the state directory, naming the program a running step started (see
/// `actions::process::ChildRecord`).
pub const CHILD_FILE: &str = "running-program.json";

/// The directory, inside the state directory, where `fetch` steps keep what they downloaded.
pub const FILES_DIR: &str = "files";

/// The fewest transitions after which the log is folded into a new snapshot.
pub const COMPACT_AFTER: usize = 2048;

/// The state directory used when `--state-dir` is not given: `$XDG_STATE_HOME/netctl`, else
/// `~/.local/state/netctl`.
pub fn default_state_dir(environment: &Environment) -> Option<PathBuf> {
    let base = match environment.exact("XDG_STATE_HOME") {
        // The XDG spec says a relative path is invalid and must be ignored.
        Some(state) if Path::new(state).is_absolute() => PathBuf::from(state),
        _ => PathBuf::from(environment.exact("HOME").filter(|home| !home.is_empty())?)
            .join(".local")
            .join("state"),
    };
    Some(base.join("netctl"))
}

/// Where one step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    Pending,
    /// Started and not known to have finished (the run was interrupted if no process holds the lock).
    Running,
    Succeeded,
    Failed,
    Skipped,
}

impl StepState {
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Running => "running",
            StepState::Succeeded => "succeeded",
            StepState::Failed => "failed",
            StepState::Skipped => "skipped",
        }
    }

    /// Whether the step needs no more work.
    pub fn is_done(self) -> bool {
        matches!(self, StepState::Succeeded | StepState::Skipped)
    }
}

/// The record of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub id: String,
    pub state: StepState,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The last failure, as shown to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A one-line account of what the step did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// For `fetch` steps: the sha256 of what was downloaded, so a resume — on this machine or
    /// another — uses exactly those bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_digest: Option<String>,
    /// For `fetch` steps with a manifest overlay: the sha256 of the overlaid manifest written to the
    /// step's `file` (without an overlay, `file` holds the download itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_digest: Option<String>,
    /// For `kube.apply` of a file: the sha256 of the file as it was applied — the file a `fetch`
    /// wrote, or that file as the operator edited it while the run was stopped at a gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_digest: Option<String>,
    /// For a step that repeats one action over many items (`resource.label-each`): how many of its
    /// items, in plan order, are done. Recorded after each batch, so a resume goes on from there
    /// and re-checks only the batch that was in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_done: Option<usize>,
}

/// The most characters a step's summary or error keeps: both are one-line accounts, and a
/// transition must stay far below the datastore's request limit whatever a step printed (a gate's
/// message can be megabytes).
pub const MOST_TEXT_CHARS: usize = 4096;

/// `text` cut to [`MOST_TEXT_CHARS`] characters, marked where it was cut.
fn bounded(text: &mut String) {
    if let Some((cut, _)) = text.char_indices().nth(MOST_TEXT_CHARS) {
        let dropped = text[cut..].chars().count();
        text.truncate(cut);
        text.push_str(&format!(" … ({dropped} more characters)"));
    }
}

impl StepRecord {
    /// Cuts the summary and the error to [`MOST_TEXT_CHARS`].
    fn bound_text(&mut self) {
        for text in [&mut self.summary, &mut self.error].into_iter().flatten() {
            bounded(text);
        }
    }

    fn pending(id: &str) -> StepRecord {
        StepRecord {
            id: id.to_string(),
            state: StepState::Pending,
            attempts: 0,
            started_at: None,
            finished_at: None,
            error: None,
            summary: None,
            download_digest: None,
            file_digest: None,
            applied_digest: None,
            items_done: None,
        }
    }
}

/// Why a run is not (yet) running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum RunState {
    /// A process is working on it, or one was killed.
    InProgress,
    /// Stopped by a signal (Ctrl-C, SIGTERM) where it was; the step in progress, if any, stays
    /// `running` for the resume to judge.
    Interrupted { signal: String },
    /// Stopped cleanly before a step that needs a human's confirmation.
    WaitingAtGate { step: String },
    /// A step failed after all its attempts.
    Failed { step: String },
    /// Stopped at a safe point before `step`: the maintenance window ends (`--deadline`,
    /// `--window`).
    StoppedAtDeadline { step: String },
    /// A completed step's postcondition no longer holds; `--repair` runs those steps again.
    Drifted { steps: Vec<String> },
    /// Every step succeeded or was skipped.
    Completed,
}

/// Where a run stands (the plan is kept apart, under [`Checkpoint::plan_digest`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub format_version: u32,
    /// A fresh id per run (not per process): resumes keep it.
    pub run_id: String,
    pub plan_digest: String,
    /// Bumped on every transition; of two copies of one run, the higher is newer.
    pub sequence: u64,
    pub started_at: String,
    pub updated_at: String,
    pub started_by: Holder,
    pub run: RunState,
    pub steps: Vec<StepRecord>,
    /// Outputs of steps that declared `register`, by that name.
    #[serde(default)]
    pub outputs: BTreeMap<String, serde_json::Value>,
}

impl Checkpoint {
    /// A checkpoint for a new run of `plan`, every step pending.
    pub fn new(plan: &Plan, holder: &Holder) -> Checkpoint {
        let now = super::clock::now_rfc3339();
        Checkpoint {
            format_version: CHECKPOINT_FORMAT_VERSION,
            run_id: uuid::Uuid::new_v4().to_string(),
            plan_digest: plan.digest.clone(),
            sequence: 0,
            started_at: now.clone(),
            updated_at: now,
            started_by: holder.clone(),
            run: RunState::InProgress,
            steps: plan
                .steps
                .iter()
                .map(|step| StepRecord::pending(&step.id))
                .collect(),
            outputs: BTreeMap::new(),
        }
    }

    pub fn step(&self, index: usize) -> &StepRecord {
        &self.steps[index]
    }

    pub fn step_mut(&mut self, index: usize) -> &mut StepRecord {
        &mut self.steps[index]
    }

    /// How many steps need no more work.
    pub fn done_count(&self) -> usize {
        self.steps
            .iter()
            .filter(|step| step.state.is_done())
            .count()
    }

    /// Applies one logged transition (one of another run, or one the snapshot already holds, is
    /// passed over).
    fn apply(&mut self, transition: Transition, location: &str) -> Result<(), CheckpointError> {
        if transition.run_id != self.run_id || transition.sequence <= self.sequence {
            return Ok(());
        }
        if let Some(step) = transition.step {
            let count = self.steps.len();
            let slot =
                self.steps
                    .get_mut(step.index)
                    .ok_or_else(|| CheckpointError::Inconsistent {
                        location: location.to_string(),
                        problem: format!(
                            "a transition names step {} of a plan with {count} steps",
                            step.index + 1
                        ),
                    })?;
            *slot = step.record;
        }
        if let Some(run) = transition.run {
            self.run = run;
        }
        if let Some(output) = transition.output {
            self.outputs.insert(output.name, output.value);
        }
        self.sequence = transition.sequence;
        self.updated_at = transition.at;
        Ok(())
    }
}

/// A checkpoint with its plan: everything `--resume` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedRun {
    pub plan: Plan,
    pub checkpoint: Checkpoint,
}

/// What changed since the last transition: a step's record, the run's state, a registered output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    step: Option<usize>,
    run: bool,
    output: Option<String>,
}

impl Change {
    /// The record of step `index` changed.
    pub fn step(index: usize) -> Change {
        Change {
            step: Some(index),
            ..Change::default()
        }
    }

    /// The run's state changed.
    pub fn run() -> Change {
        Change {
            run: true,
            ..Change::default()
        }
    }

    /// And the run's state changed.
    pub fn and_run(mut self) -> Change {
        self.run = true;
        self
    }

    /// And the output registered under `name` was set.
    pub fn and_output(mut self, name: &str) -> Change {
        self.output = Some(name.to_string());
        self
    }
}

/// One logged transition: the new record of a step, the run's new state, a new output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Transition {
    run_id: String,
    sequence: u64,
    at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<StepTransition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<RunState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<OutputTransition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StepTransition {
    index: usize,
    record: StepRecord,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OutputTransition {
    name: String,
    value: serde_json::Value,
}

impl Transition {
    /// The transition `change` makes of `checkpoint` (already bumped to its new sequence).
    fn of(checkpoint: &Checkpoint, change: &Change) -> Transition {
        Transition {
            run_id: checkpoint.run_id.clone(),
            sequence: checkpoint.sequence,
            at: checkpoint.updated_at.clone(),
            step: change.step.map(|index| StepTransition {
                index,
                record: checkpoint.steps[index].clone(),
            }),
            run: change.run.then(|| checkpoint.run.clone()),
            output: change.output.as_ref().and_then(|name| {
                Some(OutputTransition {
                    name: name.clone(),
                    value: checkpoint.outputs.get(name)?.clone(),
                })
            }),
        }
    }
}

/// Why a checkpoint could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot create the state directory `{}`", path.display())]
    CreateDirectory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{location}` is not a valid checkpoint")]
    Invalid {
        location: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("`{location}` is truncated: it ends in the middle of a value")]
    Truncated { location: String },
    #[error(
        "`{location}` begins with a UTF-8 byte order mark, which netctl never writes: the file was edited or replaced"
    )]
    ByteOrderMark { location: String },
    #[error("`{location}` does not fit its run: {problem}")]
    Inconsistent { location: String, problem: String },
    #[error(
        "the checkpoint `{location}` has format version {found}, this netctl reads version {CHECKPOINT_FORMAT_VERSION}"
    )]
    UnsupportedVersion { location: String, found: u32 },
    #[error("the plan `{digest}` of the checkpoint is missing from `{}`", directory.display())]
    PlanMissing { digest: String, directory: PathBuf },
    #[error("the stored plan `{location}` does not match its digest `{digest}`")]
    PlanDigest { location: String, digest: String },
    #[error("cannot mirror the checkpoint into the datastore")]
    Mirror {
        #[source]
        source: StoreError,
    },
    #[error("cannot read the checkpoint mirrored in the datastore")]
    MirrorRead {
        #[source]
        source: Box<CheckpointError>,
    },
    #[error("the local checkpoint in `{}` is damaged", directory.display())]
    DamagedLocal {
        directory: PathBuf,
        #[source]
        source: Box<CheckpointError>,
        /// The datastore's copy, when it holds a readable one.
        mirrored: Option<Box<SavedRun>>,
    },
}

impl CheckpointError {
    /// Whether the error is about what a file holds (not about reaching it).
    fn is_damage(&self) -> bool {
        matches!(
            self,
            CheckpointError::Invalid { .. }
                | CheckpointError::Truncated { .. }
                | CheckpointError::ByteOrderMark { .. }
                | CheckpointError::Inconsistent { .. }
                | CheckpointError::PlanMissing { .. }
                | CheckpointError::PlanDigest { .. }
        )
    }
}

impl Hint for CheckpointError {
    fn hint(&self) -> Option<String> {
        match self {
            CheckpointError::DamagedLocal {
                directory,
                mirrored: Some(mirrored),
                ..
            } => Some(format!(
                "the datastore holds a readable copy of run `{}` ({} of {} steps done, updated {}): move `{}` aside and run the command again to use that copy",
                mirrored.checkpoint.run_id,
                mirrored.checkpoint.done_count(),
                mirrored.checkpoint.steps.len(),
                mirrored.checkpoint.updated_at,
                directory.join(CHECKPOINT_FILE).display()
            )),
            CheckpointError::DamagedLocal {
                directory,
                mirrored: None,
                ..
            } => Some(format!(
                "the datastore holds no copy of this run; `netctl upgrade status` shows what the journal `{}` recorded, and `--discard-checkpoint` starts over",
                directory.join(JOURNAL_FILE).display()
            )),
            CheckpointError::UnsupportedVersion { .. } => Some(
                "finish or discard that run with the netctl release that started it".to_string(),
            ),
            CheckpointError::Mirror { source } => source.hint(),
            _ => None,
        }
    }
}

/// Parses JSON that netctl wrote, telling a truncated file and a byte order mark from other damage.
fn parse_json<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    location: &str,
) -> Result<T, CheckpointError> {
    if bytes.starts_with("\u{feff}".as_bytes()) {
        return Err(CheckpointError::ByteOrderMark {
            location: location.to_string(),
        });
    }
    serde_json::from_slice(bytes).map_err(|source| {
        if source.is_eof() {
            CheckpointError::Truncated {
                location: location.to_string(),
            }
        } else {
            CheckpointError::Invalid {
                location: location.to_string(),
                source,
            }
        }
    })
}

/// Checks the format version of a snapshot or mirror head before anything else is read: `Ok(true)`
/// for this format, `Ok(false)` for a completed run of an earlier one (history, nothing to
/// continue), an error for an unfinished run of another format.
fn check_format(bytes: &[u8], location: &str) -> Result<bool, CheckpointError> {
    #[derive(Deserialize)]
    struct VersionOnly {
        format_version: u32,
        #[serde(default)]
        run: Option<serde_json::Value>,
    }
    let version: VersionOnly = parse_json(bytes, location)?;
    if version.format_version == CHECKPOINT_FORMAT_VERSION {
        return Ok(true);
    }
    let completed = version
        .run
        .is_some_and(|run| run["state"] == serde_json::json!("completed"));
    if version.format_version < CHECKPOINT_FORMAT_VERSION && completed {
        return Ok(false);
    }
    Err(CheckpointError::UnsupportedVersion {
        location: location.to_string(),
        found: version.format_version,
    })
}

/// Parses a snapshot of this format (see [`check_format`]).
fn parse_snapshot(bytes: &[u8], location: &str) -> Result<Option<Checkpoint>, CheckpointError> {
    match check_format(bytes, location)? {
        true => parse_json(bytes, location).map(Some),
        false => Ok(None),
    }
}

/// Parses a stored plan and checks it against the digest it is stored under.
fn parse_plan(bytes: &[u8], location: &str, digest: &str) -> Result<Plan, CheckpointError> {
    let plan: Plan = parse_json(bytes, location)?;
    if plan.digest != digest || !plan.digest_is_valid() {
        return Err(CheckpointError::PlanDigest {
            location: location.to_string(),
            digest: digest.to_string(),
        });
    }
    Ok(plan)
}

/// When the log is folded into a new snapshot: after twice as many transitions as the plan has
/// steps (at least [`COMPACT_AFTER`]), so a snapshot's cost, which grows with the plan, is spread
/// over as many transitions.
fn compact_after(steps: usize) -> usize {
    (2 * steps).max(COMPACT_AFTER)
}

/// Where a run's books are kept: the state directory, and optionally a datastore mirror.
pub struct CheckpointStore {
    local: local::LocalBooks,
    mirror: Option<mirror::MirrorBooks>,
    /// Transitions since the last snapshot.
    since_snapshot: usize,
}

impl CheckpointStore {
    pub fn new(directory: PathBuf, coordination: Option<Arc<dyn Coordination>>) -> CheckpointStore {
        CheckpointStore {
            local: local::LocalBooks::new(directory),
            mirror: coordination.map(mirror::MirrorBooks::new),
            since_snapshot: 0,
        }
    }

    pub fn directory(&self) -> &Path {
        self.local.directory()
    }

    /// Creates the state directory (owner-only: it holds plans and outputs) if it is missing.
    pub fn ensure_directory(&self) -> Result<(), CheckpointError> {
        self.local.ensure_directory()
    }

    /// Begins keeping the books of `checkpoint` (a new run, or one resumed here): stores the plan
    /// where it is not stored yet and writes a snapshot, locally and then in the mirror.
    pub async fn begin(
        &mut self,
        plan: &Plan,
        checkpoint: &mut Checkpoint,
    ) -> Result<(), CheckpointError> {
        checkpoint.sequence += 1;
        checkpoint.updated_at = super::clock::now_rfc3339();
        self.local.store_plan(plan)?;
        self.local.write_snapshot(checkpoint)?;
        if let Some(mirror) = &mut self.mirror {
            mirror.begin(plan, checkpoint).await?;
        }
        self.since_snapshot = 0;
        Ok(())
    }

    /// Records one transition: appended to the local log, then to the mirror's; folded into a new
    /// snapshot when the log has grown long enough.
    pub async fn record(
        &mut self,
        checkpoint: &mut Checkpoint,
        change: Change,
    ) -> Result<(), CheckpointError> {
        checkpoint.sequence += 1;
        checkpoint.updated_at = super::clock::now_rfc3339();
        if let Some(index) = change.step {
            checkpoint.steps[index].bound_text();
        }
        let transition = Transition::of(checkpoint, &change);
        let line = serde_json::to_vec(&transition).map_err(|source| CheckpointError::Invalid {
            location: self.local.log_path().display().to_string(),
            source,
        })?;
        self.local.append(&line)?;
        if let Some(mirror) = &mut self.mirror {
            mirror.append(checkpoint, line).await?;
        }
        self.since_snapshot += 1;
        if self.since_snapshot >= compact_after(checkpoint.steps.len()) {
            self.compact(checkpoint).await?;
        }
        Ok(())
    }

    /// Writes the state as a new snapshot and starts the logs over.
    async fn compact(&mut self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        self.local.write_snapshot(checkpoint)?;
        if let Some(mirror) = &mut self.mirror {
            mirror.snapshot(checkpoint).await?;
        }
        self.since_snapshot = 0;
        Ok(())
    }

    /// Reads the local books, if there are any.
    pub fn load_local(&self) -> Result<Option<SavedRun>, CheckpointError> {
        self.local.load()
    }

    /// The plan an earlier run of this state directory used, when it is still stored there.
    pub fn stored_plan(&self, digest: &str) -> Option<Plan> {
        self.local.stored_plan(digest)
    }

    /// Reads the mirrored books, if there is a mirror and it holds a run.
    pub async fn load_mirror(&self) -> Result<Option<SavedRun>, CheckpointError> {
        match &self.mirror {
            Some(mirror) => mirror.load().await,
            None => Ok(None),
        }
    }

    /// The newest run of the local books and the mirror.
    ///
    /// Copies of one run compare by sequence. Copies of different runs compare by `updated_at`:
    /// the local books of a machine that last ran an upgrade months ago must not shadow the run a
    /// colleague started yesterday. Damaged local books are refused, naming the mirror's copy when
    /// there is a readable one.
    pub async fn load_latest(&self) -> Result<Option<SavedRun>, CheckpointError> {
        let local = match self.load_local() {
            Ok(local) => local,
            Err(error) if error.is_damage() => {
                let mirrored = self.load_mirror().await.ok().flatten().map(Box::new);
                return Err(CheckpointError::DamagedLocal {
                    directory: self.directory().to_path_buf(),
                    source: Box::new(error),
                    mirrored,
                });
            }
            Err(error) => return Err(error),
        };
        let mirrored = self.load_mirror().await?;
        Ok(match (local, mirrored) {
            (Some(local), Some(mirrored)) => {
                let (ours, theirs) = (&local.checkpoint, &mirrored.checkpoint);
                let mirror_is_newer = if ours.run_id == theirs.run_id {
                    theirs.sequence > ours.sequence
                } else {
                    theirs.updated_at > ours.updated_at
                };
                Some(if mirror_is_newer { mirrored } else { local })
            }
            (local, mirrored) => local.or(mirrored),
        })
    }
}

#[cfg(test)]
mod tests;
