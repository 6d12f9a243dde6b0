//! `pause`: a human gate, and the confirmation asked before irreversible steps.
//!
//! On a terminal the question is asked on stderr and answered on stdin. Without a terminal nobody can
//! answer, so the executor stops cleanly at the gate (with a checkpoint) and says how to continue;
//! this module only asks and describes, it never decides to stop.

use std::io::{BufRead, Write};

use super::{Context, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::action::Pause;

/// Whether a person can answer questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interaction {
    /// stdin and stderr are a terminal.
    Terminal,
    /// Scripts, CI, cron, pipes.
    Unattended,
}

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

/// Asks a yes/no question on the terminal; anything but `y`/`yes` is no.
pub fn ask(question: &str) -> std::io::Result<bool> {
    let mut stderr = std::io::stderr().lock();
    write!(stderr, "{question} [y/N] ")?;
    stderr.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
