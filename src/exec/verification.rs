//! What a run says when its verification fails (issue 30, item 1): the gate's message, with every
//! check's verdict and evidence, and the way back — the rollback advice of the steps that ran,
//! newest first — and how to go on. The checks themselves are `actions/verify/`'s.

use super::actions::verify::VerificationFailed;
use super::checkpoint::Checkpoint;
use crate::plan::{Plan, PlannedStep};

/// The message the run stops with at its failed verification `step`.
pub(super) fn gate_message(
    plan: &Plan,
    checkpoint: &Checkpoint,
    step: &PlannedStep,
    failed: &VerificationFailed,
) -> String {
    let mut lines = vec![format!(
        "verification failed at `{}`: {}",
        step.id, failed.meaning
    )];
    lines.extend(
        failed
            .report
            .lines()
            .into_iter()
            .map(|line| format!("  {line}")),
    );
    let advice: Vec<String> = plan
        .steps
        .iter()
        .zip(&checkpoint.steps)
        .rev()
        .filter(|(_, record)| record.state.is_done())
        .filter_map(|(step, _)| {
            let advice = step.rollback.as_ref()?;
            Some(format!("  after `{}`: {}", step.id, advice.after))
        })
        .collect();
    match advice.is_empty() {
        true => lines.push(
            "to go back: no step that ran declares how (`rollback:` in its runbook); undo its changes by hand".to_string(),
        ),
        false => {
            lines.push("to go back, newest step first:".to_string());
            lines.extend(advice);
        }
    }
    lines.push(format!(
        "to go on: fix what failed, then `netctl upgrade apply --resume` verifies again; `netctl upgrade apply --resume --approve {}` accepts the findings and completes the run",
        step.id
    ));
    lines.join("\n")
}
