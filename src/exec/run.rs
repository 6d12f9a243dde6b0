//! One upgrade run while it runs: its checkpoint (and where it is stored), its journal, its lock and
//! its progress display, and the records a run makes as it goes — a step skipped, a run stopped at a
//! gate, a run finished.
//!
//! Every change of a step's state is recorded in the checkpoint (one transition, see
//! `checkpoint.rs`) before anything else happens, so a crash loses at most the step in progress.
//! This file decides nothing about which step runs or whether it may (see `execute.rs`, `gate.rs`,
//! `resume.rs`); it keeps the books.

use std::path::PathBuf;
use std::time::Duration;

use super::ApplyOptions;
use super::checkpoint::{self, Change, Checkpoint, CheckpointStore, RunState, StepState};
use super::clock::now_rfc3339;
use super::error::ExecError;
use super::journal::{Journal, JournalEntry, JournalEvent};
use super::lock::RunLock;
use super::progress::Progress;
use crate::plan::PlannedStep;

/// The state of one `upgrade apply` while it runs.
pub(super) struct Run<'a> {
    pub options: &'a ApplyOptions,
    pub store: CheckpointStore,
    pub checkpoint: Checkpoint,
    pub journal: Journal,
    pub lock: Option<&'a RunLock>,
    pub progress: Progress,
    /// Steps the pre-flight found do not apply to this cluster, with why.
    pub skipped_steps: Vec<super::preflight::SkippedStep>,
    /// The run's notification hooks.
    pub notifier: std::sync::Arc<super::hooks::Notifier>,
    /// Each step's estimated time, when the run has a maintenance window.
    pub estimates: Vec<super::estimate::Estimate>,
}

impl Run<'_> {
    /// Where `fetch` steps keep their downloads.
    pub fn files_dir(&self) -> PathBuf {
        self.store.directory().join(checkpoint::FILES_DIR)
    }

    /// Where a started program's pid is recorded.
    pub fn child_file(&self) -> PathBuf {
        self.store.directory().join(checkpoint::CHILD_FILE)
    }

    /// Records a transition of the checkpoint (locally, and mirrored into the datastore).
    pub async fn save(&mut self, change: Change) -> Result<(), ExecError> {
        self.store.record(&mut self.checkpoint, change).await?;
        Ok(())
    }

    /// Appends a journal entry about `step` (or the run, with `None`).
    pub fn record(
        &mut self,
        event: JournalEvent,
        step: Option<&PlannedStep>,
        fill: impl FnOnce(&mut JournalEntry),
    ) -> Result<(), ExecError> {
        let mut entry = self.journal.entry(event);
        entry.step = step.map(|step| step.id.clone());
        fill(&mut entry);
        self.journal.record(&entry)?;
        Ok(())
    }

    /// Records step `index` as skipped: done by hand (`--skip`), or not applying to this cluster
    /// (the pre-flight's reason); `summary` says which.
    pub async fn skip(
        &mut self,
        index: usize,
        step: &PlannedStep,
        summary: &str,
    ) -> Result<(), ExecError> {
        let record = self.checkpoint.step_mut(index);
        record.state = StepState::Skipped;
        record.finished_at = Some(now_rfc3339());
        record.summary = Some(summary.to_string());
        self.save(Change::step(index)).await?;
        self.record(JournalEvent::Skipped, Some(step), |entry| {
            entry.action = Some(step.action.name().to_string());
            entry.summary = Some(summary.to_string());
        })?;
        let shown = match summary.strip_prefix("skipped by the pre-flight: ") {
            Some(reason) => format!("skipped ({reason})"),
            None => "skipped (--skip)".to_string(),
        };
        self.progress
            .step_finished(index + 1, &step.id, &shown, Duration::ZERO);
        Ok(())
    }

    /// Records that the run waits at `step` for a person's decision; `exit_code` is what netctl
    /// ends with (3 unattended, 1 when the person at the terminal said no).
    pub async fn stop_at(
        &mut self,
        step: &PlannedStep,
        message: &str,
        exit_code: u8,
    ) -> Result<(), ExecError> {
        self.checkpoint.run = RunState::WaitingAtGate {
            step: step.id.clone(),
        };
        self.save(Change::run()).await?;
        self.record(JournalEvent::StoppedAtGate, Some(step), |entry| {
            entry.summary = Some(message.to_string());
            entry.exit_code = Some(exit_code);
        })
    }

    /// Tells the `--on-gate` hook that `step` waits for a person (`exit_code` when the run stops
    /// there).
    pub async fn notify_gate(&self, step: &PlannedStep, message: &str, exit_code: Option<u8>) {
        let notice = super::hooks::Notice {
            step: Some(step.id.clone()),
            exit_code,
            result: exit_code.map(|_| "waiting-at-gate"),
            message: Some(message.to_string()),
        };
        self.notifier
            .notify(super::hooks::HookEvent::Gate, &notice)
            .await;
    }

    /// Records that the run stopped before `step` because its maintenance window ends.
    pub async fn stop_at_deadline(
        &mut self,
        step: &PlannedStep,
        reason: &str,
    ) -> Result<(), ExecError> {
        self.checkpoint.run = RunState::StoppedAtDeadline {
            step: step.id.clone(),
        };
        self.save(Change::run()).await?;
        self.record(JournalEvent::StoppedAtDeadline, Some(step), |entry| {
            entry.summary = Some(reason.to_string());
            entry.exit_code = Some(crate::exit_code::STOPPED_AT_DEADLINE);
        })
    }

    /// Records an interrupted step as done because its postcondition holds.
    pub async fn recover(&mut self, index: usize, step: &PlannedStep) -> Result<(), ExecError> {
        let record = self.checkpoint.step_mut(index);
        record.state = StepState::Succeeded;
        record.finished_at = Some(now_rfc3339());
        record.summary = Some("interrupted; its postcondition holds, so not run again".to_string());
        // Every item of a batched step holds: all of them are done.
        if let crate::plan::Action::ResourceLabelEach(each) = &step.action {
            record.items_done = Some(each.names.len());
        }
        self.save(Change::step(index)).await?;
        self.record(JournalEvent::Recovered, Some(step), |entry| {
            entry.action = Some(step.action.name().to_string());
            entry.summary = Some("postcondition holds; not run again".to_string());
        })?;
        self.progress.note(&format!(
            "step `{}` was interrupted; its postcondition holds, so it is not run again",
            step.id
        ));
        Ok(())
    }

    /// Marks completed step `index` to run again because its postcondition (`what`) no longer
    /// holds and the operator asked for `--repair`.
    pub async fn repair(
        &mut self,
        index: usize,
        step: &PlannedStep,
        what: &str,
    ) -> Result<(), ExecError> {
        let record = self.checkpoint.step_mut(index);
        record.state = StepState::Pending;
        record.finished_at = None;
        // Which items drifted is not known: every item is checked again.
        record.items_done = None;
        record.summary = Some(format!(
            "its postcondition ({what}) no longer held; run again by `--repair`"
        ));
        self.save(Change::step(index)).await?;
        self.record(JournalEvent::Repairing, Some(step), |entry| {
            entry.action = Some(step.action.name().to_string());
            entry.summary = Some(format!(
                "postcondition ({what}) no longer holds; running the step again (`--repair`)"
            ));
        })?;
        self.progress.note(&format!(
            "step `{}`: its postcondition ({what}) no longer holds; running it again (`--repair`)",
            step.id
        ));
        Ok(())
    }

    /// Records that every step is done.
    pub async fn complete(&mut self, steps: usize) -> Result<(), ExecError> {
        self.checkpoint.run = RunState::Completed;
        self.save(Change::run()).await?;
        self.record(JournalEvent::RunCompleted, None, |entry| {
            entry.summary = Some(format!("{steps} steps done"));
            entry.exit_code = Some(crate::exit_code::SUCCESS);
        })
    }
}
