//! `pause`: a human gate, and the confirmation asked before irreversible steps.
//!
//! On a terminal the question is asked by the command's printer (on stderr, answered on stdin).
//! Without a terminal nobody can answer, so the executor stops cleanly at the gate (with a
//! checkpoint) and says how to continue; this module only describes, it never decides to stop.

use super::{Context, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::action::Pause;

/// Whether a person can answer questions (the printer knows: it asks them).
pub use crate::output::Interaction;

/// The dry-run account of a gate (and the summary when it is passed).
pub fn describe(gate: &Pause, mode: RunMode) -> Outcome {
    let text = match mode {
        RunMode::DryRun => format!("would stop for confirmation: {}", gate.message),
        RunMode::Execute => format!("confirmed: {}", gate.message),
    };
    Outcome {
        summary: text.clone(),
        transcript: vec![text],
        output: None,
    }
}

/// The gate itself is the executor's (`exec/gate.rs`): by the time the step is performed, it was
/// passed.
impl Perform for Pause {
    async fn perform(&self, _: &Action, _: &Context<'_>, mode: RunMode) -> Performed {
        Ok(describe(self, mode))
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}
