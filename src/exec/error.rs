//! Why a run could not start, stopped, or failed ([`ExecError`]), and what to do about it
//! ([`ExecError::hint`]): the advice names the `upgrade apply` flag that continues the run.
//!
//! Errors of the actions themselves are `actions::StepError`; a failed step wraps one. This file
//! runs nothing.

use std::path::PathBuf;

use super::actions::StepError;
use super::checkpoint::CheckpointError;
use super::crash_hook::InvalidCrashHook;
use super::journal::JournalError;
use super::lock::LockError;
use crate::errors::Hint;
use crate::plan::FactError;

/// Why a run could not start, stopped, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("the plan's digest `{digest}` does not match its content")]
    InvalidPlanDigest { digest: String },
    #[error(
        "the saved plan is stale: fact `{fact}` was `{planned}` when the plan was made and is `{now}` now"
    )]
    StalePlan {
        fact: &'static str,
        planned: String,
        now: String,
    },
    #[error(
        "the saved plan is stale: {object} changed in the cluster since the plan found the manifest's hand edits in it (`{planned}` then, `{now}` now)"
    )]
    EditedSincePlan {
        object: String,
        planned: String,
        now: String,
    },
    #[error("cannot re-read the cluster's facts to check the plan")]
    Facts(#[source] FactError),
    #[error("cannot re-read {what} from the Kubernetes API to check the plan's facts")]
    ClusterUnreadable {
        what: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "the saved plan discovered fact `{fact}` from the Kubernetes cluster, and no cluster is configured to check it again"
    )]
    ClusterFactsUnchecked { fact: &'static str },
    #[error("there is no checkpoint to resume in `{}` or in the datastore", directory.display())]
    NoCheckpoint { directory: PathBuf },
    #[error("the checkpoint belongs to plan `{checkpoint}`, not to the given plan `{given}`")]
    DifferentPlan { checkpoint: String, given: String },
    #[error(
        "an unfinished run of plan `{digest}` (run `{run_id}`, started {started}) is in the checkpoint"
    )]
    UnfinishedRun {
        run_id: String,
        digest: String,
        started: String,
    },
    #[error("the run in the checkpoint completed at {finished}; there is nothing to resume")]
    AlreadyCompleted { finished: String },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Preflight(#[from] super::preflight::PreflightFailed),
    #[error(
        "step `{step}` did not start: it requires every node agent to run `{version}`: {problem}"
    )]
    NodeAgentsBehind {
        step: String,
        version: String,
        problem: String,
    },
    #[error("step `{step}` needs a person's confirmation: {message}")]
    StoppedAtGate { step: String, message: String },
    #[error(
        "the maintenance window ends {deadline}: {reason}; nothing was started (the run would begin at step `{step}`)"
    )]
    WindowTooShort {
        step: String,
        deadline: String,
        reason: String,
    },
    #[error(
        "the maintenance window ends {deadline}: {reason}; the run stopped before step `{step}`"
    )]
    StoppedAtDeadline {
        step: String,
        deadline: String,
        reason: String,
    },
    #[error("step `{step}` was not confirmed; the run stopped before it")]
    Declined { step: String },
    #[error(
        "step `{step}` was interrupted and cannot safely run again: it is not idempotent and has no `verify` to tell whether it took effect"
    )]
    Interrupted { step: String },
    #[error("step `{step}` failed after {attempts} attempt(s)")]
    StepFailed {
        step: String,
        attempts: u32,
        // Boxed: step errors are large and most executor errors carry none.
        #[source]
        source: Box<StepError>,
    },
    #[error("`{program}` (pid {pid}) of interrupted step `{step}` is still running")]
    OrphanRunning {
        step: String,
        pid: u32,
        program: String,
    },
    #[error("cannot restore what completed step `{step}` downloaded")]
    Restore {
        step: String,
        #[source]
        source: Box<StepError>,
    },
    #[error("`{flag}` names step `{step}`, which is not in the plan")]
    UnknownStep { flag: &'static str, step: String },
    #[error(transparent)]
    InvalidCrashHook(#[from] InvalidCrashHook),
    #[error("interrupted by {signal}; the run stopped where it was")]
    Cancelled { signal: &'static str },
    /// The backup taken before the run's first write failed: nothing was written.
    #[error("cannot take the backup before the first write; nothing was written")]
    Backup(#[source] crate::datastore::backup::BackupError),
    /// The etcd snapshot beside that backup failed: nothing was written.
    #[error(
        "cannot take the etcd snapshot beside the backup before the first write; nothing was written"
    )]
    Snapshot(#[source] crate::datastore::snapshot::SnapshotError),
    #[error("cannot write the transcript")]
    Output(#[source] std::io::Error),
    #[error("cannot ask for confirmation on the terminal")]
    Prompt(#[source] std::io::Error),
    #[error("the plan has {count} steps; a one-step run takes exactly one")]
    NotSingleStep { count: usize },
    #[error("`{action}` needs a datastore, and this run has none")]
    NoDatastore { action: &'static str },
    #[error(
        "step `{step}` takes `{variable}` from netctl's environment (plans keep no secrets), and it is not set"
    )]
    SecretNotInEnvironment { step: String, variable: String },
    #[error(
        "the postcondition of completed step `{step}` no longer holds: {what}{}",
        others_suffix(others)
    )]
    Drift {
        step: String,
        what: String,
        /// The other completed steps whose postconditions no longer hold.
        others: Vec<String>,
    },
}

fn others_suffix(others: &[String]) -> String {
    match others.len() {
        0 => String::new(),
        // Steps, named through the bounded lister: a plan has few, but a folded one may not.
        count => format!(
            " (and of {count} more: {})",
            crate::listing::inline(others, &crate::listing::Limit::Bounded)
        ),
    }
}

impl ExecError {
    /// The exit code of a run that stopped where it can be resumed later (`main` and the
    /// notification hooks both ask here, so they agree); `None` for a failure.
    pub fn stopped_code(&self) -> Option<u8> {
        match self {
            ExecError::StoppedAtGate { .. } => Some(crate::exit_code::STOPPED_AT_GATE),
            ExecError::StoppedAtDeadline { .. } => Some(crate::exit_code::STOPPED_AT_DEADLINE),
            _ => None,
        }
    }

    /// The step at fault, when one is.
    pub fn step(&self) -> Option<&str> {
        match self {
            ExecError::NodeAgentsBehind { step, .. }
            | ExecError::StoppedAtGate { step, .. }
            | ExecError::StoppedAtDeadline { step, .. }
            | ExecError::WindowTooShort { step, .. }
            | ExecError::Declined { step }
            | ExecError::Interrupted { step }
            | ExecError::StepFailed { step, .. }
            | ExecError::OrphanRunning { step, .. }
            | ExecError::Restore { step, .. }
            | ExecError::SecretNotInEnvironment { step, .. }
            | ExecError::Drift { step, .. } => Some(step),
            _ => None,
        }
    }
}

impl Hint for ExecError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            ExecError::InvalidPlanDigest { .. } => {
                "the plan file was edited or damaged; make a new one with `netctl upgrade plan --out FILE`".to_string()
            }
            ExecError::StalePlan { .. } | ExecError::EditedSincePlan { .. } => {
                "the cluster changed since the plan was made; make a new plan with `netctl upgrade plan` and review it".to_string()
            }
            ExecError::ClusterUnreadable { .. } => {
                "the plan took facts from the cluster and they are read again before it runs; check the kubeconfig and that it may list them, or make a new plan".to_string()
            }
            ExecError::ClusterFactsUnchecked { .. } => {
                "configure the cluster the plan was made for (KUBECONFIG, or `kubeconfig` in the config file), or make a new plan".to_string()
            }
            ExecError::NoCheckpoint { .. } => {
                "pass the same `--state-dir` as the interrupted run, or start a run without `--resume`".to_string()
            }
            ExecError::DifferentPlan { .. } => {
                "resume without `--plan` to continue the checkpoint's own plan, or pass `--discard-checkpoint` to start the new plan".to_string()
            }
            ExecError::UnfinishedRun { .. } => {
                "continue it with `netctl upgrade apply --resume`, see it with `netctl upgrade status`, or start over with `--discard-checkpoint`".to_string()
            }
            ExecError::StoppedAtGate { step, .. }
                if step == crate::plan::verification::VERIFY_STEP =>
            {
                format!(
                    "fix what failed and `netctl upgrade apply --resume` verifies again; `--resume --approve {step}` accepts the findings; the message above says how to go back"
                )
            }
            ExecError::StoppedAtGate { step, .. } => format!(
                "after checking, continue with `netctl upgrade apply --resume --approve {step}` (or `--resume --yes` to approve every gate)"
            ),
            ExecError::WindowTooShort { .. } => {
                "run it in a longer window (`--window DURATION` or a later `--deadline TIME`); `netctl upgrade plan --window DURATION` shows each segment's estimate".to_string()
            }
            ExecError::StoppedAtDeadline { .. } => {
                "nothing is half done: `netctl upgrade apply --resume` continues from this step in the next window".to_string()
            }
            ExecError::Declined { step } => format!(
                "when ready, continue with `netctl upgrade apply --resume --approve {step}`"
            ),
            ExecError::Interrupted { step } => format!(
                "check by hand whether it took effect, then `netctl upgrade apply --resume --rerun {step}` to run it again or `--skip {step}` if it did"
            ),
            ExecError::StepFailed { step, source, .. } => match source.as_ref() {
                StepError::KubernetesUnavailable { .. } => format!(
                    "do this step by hand (`--dry-run` shows the exact request), then `netctl upgrade apply --resume --skip {step}`"
                ),
                other => {
                    let resume = "`netctl upgrade apply --resume` continues from this step";
                    match other.hint() {
                        Some(advice) => format!("{advice}; then {resume}"),
                        None => format!("fix the cause, then {resume}"),
                    }
                }
            },
            ExecError::Restore { source, .. } => return source.hint(),
            ExecError::Backup(error) => {
                let cause = error.hint().map(|hint| format!("{hint}; ")).unwrap_or_default();
                format!("{cause}or run without it with `--no-backup` (journaled)")
            }
            ExecError::Snapshot(error) => {
                let cause = error.hint().map(|hint| format!("{hint}; ")).unwrap_or_default();
                format!("{cause}or run without a backup with `--no-backup` (journaled)")
            }
            ExecError::Cancelled { .. } => {
                "`netctl upgrade status` shows where it stopped; `netctl upgrade apply --resume` continues".to_string()
            }
            ExecError::OrphanRunning { pid, .. } => format!(
                "the run that started it was killed, but the program was not; wait for it to end (or stop it: `kill {pid}`), then resume"
            ),
            ExecError::Lock(error) => return error.hint(),
            ExecError::SecretNotInEnvironment { variable, .. } => format!(
                "export `{variable}` in the shell that runs `netctl upgrade apply`; the program inherits it"
            ),
            ExecError::Preflight(failed) => return failed.hint(),
            ExecError::NodeAgentsBehind { version, .. } => format!(
                "finish rolling the node agents to `{version}` (`kubectl -n NAMESPACE rollout status daemonset/calico-node`), then `netctl upgrade apply --resume`; nothing of this step was written"
            ),
            ExecError::Drift { .. } => "find out who changed it and why; then `netctl upgrade apply --resume --repair` runs those steps again (journaled), or restore it by hand and resume".to_string(),
            ExecError::Checkpoint(error) => return error.hint(),
            _ => return None,
        })
    }
}
