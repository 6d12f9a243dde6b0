//! The one step loop: attempt, back off, journal, outcome. Every step netctl runs for real goes
//! through [`run_step`] — each step of `upgrade apply` and the one step of `create`, `apply`,
//! `delete`, `label`, `patch` and `node run` — so retries, their backoff and the journal entries are
//! the same everywhere.
//!
//! What differs between an upgrade run and a one-step command is behind [`StepRun`]: an upgrade
//! writes its checkpoint before and after each attempt, shows progress and fires the test crash hook;
//! a one-step command only performs. The loop itself knows no checkpoint, no progress and no
//! datastore. Dry runs never come here (see `dry_run.rs`).

use std::time::{Duration, Instant};

use super::actions::{Outcome, StepError};
use super::error::ExecError;
use super::journal::{Journal, JournalEvent};
use crate::errors::error_chain;
use crate::plan::PlannedStep;

/// One attempt at a step, as the hooks are told about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// How many attempts the step may take in all.
    pub of: u32,
    /// How long the action took.
    pub elapsed: Duration,
}

/// What a run does around the attempts of a step. The loop calls, in order: `before` and `perform`
/// for each attempt, then `succeeded`, or `failed` (and, when another attempt follows, waits).
/// Only `perform` must be written; the others do nothing unless a run keeps books.
pub(super) trait StepRun {
    /// Where journal entries go, when the run keeps a journal.
    fn journal(&mut self) -> Option<&mut Journal> {
        None
    }

    /// Before an attempt (an upgrade marks the step running in its checkpoint).
    async fn before(&mut self, _step: &PlannedStep) -> Result<(), ExecError> {
        Ok(())
    }

    /// Performs the step's action once.
    async fn perform(&mut self, step: &PlannedStep) -> Result<Outcome, StepError>;

    /// After a successful attempt; may add to the outcome's summary before it is journaled.
    async fn succeeded(
        &mut self,
        _step: &PlannedStep,
        _attempt: Attempt,
        _outcome: &mut Outcome,
    ) -> Result<(), ExecError> {
        Ok(())
    }

    /// After a failed attempt: `retry_after` is the pause before the next one, `None` after the
    /// last.
    async fn failed(
        &mut self,
        _step: &PlannedStep,
        _attempt: Attempt,
        _error: &StepError,
        _retry_after: Option<Duration>,
    ) -> Result<(), ExecError> {
        Ok(())
    }
}

/// Runs `step` with its retries: the outcome of the first attempt that succeeds, or
/// [`ExecError::StepFailed`] with the last attempt's error.
pub(super) async fn run_step(
    step: &PlannedStep,
    run: &mut impl StepRun,
) -> Result<Outcome, ExecError> {
    let attempts = step.retry.as_ref().map_or(1, |retry| retry.attempts.max(1));
    let base_delay = step
        .retry
        .as_ref()
        .map_or(Duration::ZERO, |retry| retry.delay.0);
    let mut number = 0;
    loop {
        number += 1;
        run.before(step).await?;
        journal(run, step, JournalEvent::Started, |entry| {
            entry.attempt = Some(number);
            entry.summary = Some(step.action.to_string());
        })?;
        let started = Instant::now();
        let result = run.perform(step).await;
        let attempt = Attempt {
            number,
            of: attempts,
            elapsed: started.elapsed(),
        };
        let duration_ms = Some(attempt.elapsed.as_millis());
        match result {
            Ok(mut outcome) => {
                run.succeeded(step, attempt, &mut outcome).await?;
                journal(run, step, JournalEvent::Succeeded, |entry| {
                    entry.attempt = Some(number);
                    entry.duration_ms = duration_ms;
                    entry.summary = Some(outcome.summary.clone());
                })?;
                return Ok(outcome);
            }
            Err(error) if number < attempts => {
                let delay = backoff(base_delay, number);
                journal(run, step, JournalEvent::Retrying, |entry| {
                    entry.attempt = Some(number);
                    entry.duration_ms = duration_ms;
                    entry.error = Some(error_chain(&error));
                })?;
                run.failed(step, attempt, &error, Some(delay)).await?;
                tokio::time::sleep(delay).await;
            }
            Err(error) => {
                run.failed(step, attempt, &error, None).await?;
                journal(run, step, JournalEvent::Failed, |entry| {
                    entry.attempt = Some(number);
                    entry.duration_ms = duration_ms;
                    entry.error = Some(error_chain(&error));
                })?;
                return Err(ExecError::StepFailed {
                    step: step.id.clone(),
                    attempts: number,
                    source: Box::new(error),
                });
            }
        }
    }
}

/// Appends one entry about `step` to the run's journal, if it keeps one.
fn journal(
    run: &mut impl StepRun,
    step: &PlannedStep,
    event: JournalEvent,
    fill: impl FnOnce(&mut super::journal::JournalEntry),
) -> Result<(), ExecError> {
    let Some(journal) = run.journal() else {
        return Ok(());
    };
    let mut entry = journal.entry(event);
    entry.step = Some(step.id.clone());
    entry.action = Some(step.action.name().to_string());
    fill(&mut entry);
    journal.record(&entry)?;
    Ok(())
}

/// The delay before attempt `attempt + 1`: the step's delay, doubled per failed attempt, at most
/// ten minutes.
pub(super) fn backoff(base: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    base.saturating_mul(factor).min(Duration::from_secs(600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_by_doubling_up_to_a_cap() {
        let base = Duration::from_secs(5);
        assert_eq!(backoff(base, 1), Duration::from_secs(5));
        assert_eq!(backoff(base, 3), Duration::from_secs(20));
        assert_eq!(backoff(base, 30), Duration::from_secs(600));
    }
}
