//! How an upgrade run starts and how its end is told: what is decided before its books are opened
//! ([`Starting`]) — the maintenance window's verdict on the first segment, before anything is written
//! (`window.rs`), and the lock, which a resume takes over from its own run's killed process — and the
//! notification hooks told how the run ended ([`notify_end`]). The front (`mod.rs`) calls these in
//! order; what runs the steps is `execute.rs`.

use std::sync::Arc;

use super::error::ExecError;
use super::lock::{self, RunLock};
use super::{
    ApplyOptions, Executor, RunMode, RunReport, StartMode, checkpoint, estimate, history, hooks,
    preflight, window,
};
use crate::datastore::coordination::Coordination;
use crate::plan::Plan;
/// What a run starts with, decided before its books are opened.
pub(super) struct Starting {
    /// Steps the pre-flight found do not apply to this cluster, with why.
    pub skipped_steps: Vec<preflight::SkippedStep>,
    /// The id a new run takes (the lock was taken for it).
    pub run_id: Option<String>,
    /// The lock of this same run's gone process that a resume took over.
    pub taken_over: Option<lock::LockRecord>,
    /// Runs the hooks; told the plan and the journal as they become known.
    pub notifier: Arc<hooks::Notifier>,
    /// Each step's estimated time, when the run has a maintenance window.
    pub estimates: Vec<estimate::Estimate>,
}

/// Tells the hooks how the run ended (`--on-failure` for a failure, then `--on-finish` for any
/// end) with the exit code `main` will end with, and hands the result back.
pub(super) async fn notify_end(
    notifier: &hooks::Notifier,
    result: Result<RunReport, ExecError>,
) -> Result<RunReport, ExecError> {
    let notice = match &result {
        Ok(_) => hooks::Notice {
            exit_code: Some(crate::exit_code::SUCCESS),
            result: Some("succeeded"),
            ..hooks::Notice::default()
        },
        Err(error) => hooks::Notice {
            step: error.step().map(str::to_string),
            exit_code: Some(error.stopped_code().unwrap_or(crate::exit_code::FAILURE)),
            result: Some(match error {
                ExecError::StoppedAtGate { .. } => "waiting-at-gate",
                ExecError::StoppedAtDeadline { .. } => "stopped-at-deadline",
                ExecError::Cancelled { .. } => "interrupted",
                _ => "failed",
            }),
            message: Some(crate::errors::error_chain(error)),
        },
    };
    if notice.exit_code == Some(crate::exit_code::FAILURE) {
        notifier.notify(hooks::HookEvent::Failure, &notice).await;
    }
    notifier.notify(hooks::HookEvent::Finish, &notice).await;
    result
}

impl Executor {
    /// With a maintenance window: each step's estimate, and a refusal when the first segment the
    /// run would start (a new run's first step, or the first step a resume has left) would not
    /// finish in time. A dry run says what the run would do, on stderr.
    pub(super) async fn check_first_segment(
        &self,
        plan: Option<&Plan>,
        existing: Option<&checkpoint::SavedRun>,
        options: &ApplyOptions,
    ) -> Result<Vec<estimate::Estimate>, ExecError> {
        let Some(window) = &options.window else {
            return Ok(Vec::new());
        };
        let (plan, checkpoint) = match (existing, plan) {
            (Some(saved), _) if options.start == StartMode::Resume => {
                (&saved.plan, Some(&saved.checkpoint))
            }
            (_, Some(plan)) => (plan, None),
            // A resume that cannot read its checkpoint: it is refused for that once locked.
            (_, None) => return Ok(Vec::new()),
        };
        let history = history::History::read(&options.state_dir).unwrap_or_else(|error| {
            self.printer.warn(format!(
                "time estimates use the step kinds only: {}",
                crate::errors::error_chain(&error)
            ));
            history::History::default()
        });
        let cluster = self.cluster_id().await;
        let estimates = estimate::estimate_steps(plan, &history, cluster.as_deref());
        let done = |index: usize| {
            checkpoint.is_some_and(|checkpoint| checkpoint.step(index).state.is_done())
        };
        let Some(first) = (0..plan.steps.len()).find(|&index| !done(index)) else {
            return Ok(estimates);
        };
        let now = std::time::SystemTime::now();
        if let window::Verdict::Stop { reason } =
            window::check(plan, &estimates, window, first, true, &done, now)
        {
            let error = ExecError::WindowTooShort {
                step: plan.steps[first].id.clone(),
                deadline: window.deadline_text(),
                reason,
            };
            if options.mode == RunMode::DryRun {
                self.printer
                    .warn(format!("the run would be refused: {error}"));
                return Ok(estimates);
            }
            return Err(error);
        }
        Ok(estimates)
    }

    /// Takes the run lock. A resume whose own run holds it — from a process of this host that is
    /// gone, killed with SIGKILL before it could release it — takes it over at once instead of
    /// waiting for its lease to run out; the caller journals that (returned here).
    pub(super) async fn lock(
        &self,
        coordination: &Arc<dyn Coordination>,
        options: &ApplyOptions,
        run_id: Option<String>,
    ) -> Result<(RunLock, Option<lock::LockRecord>), ExecError> {
        let acquire = || {
            RunLock::acquire(
                coordination.clone(),
                self.holder.clone(),
                "upgrade apply",
                options.lock_ttl,
                run_id.clone(),
            )
        };
        match acquire().await {
            Ok(lock) => Ok((lock, None)),
            Err(lock::LockError::Held { record, .. })
                if options.start == StartMode::Resume
                    && run_id
                        .as_deref()
                        .is_some_and(|run_id| record.is_abandoned_by(run_id)) =>
            {
                lock::take_over(coordination.as_ref(), &record).await?;
                Ok((acquire().await?, Some(*record)))
            }
            Err(error) => Err(error.into()),
        }
    }
}
