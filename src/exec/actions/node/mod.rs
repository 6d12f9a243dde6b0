//! The `node.*` actions. `node.run`: starts the node agent container, the one step of `netctl node
//! run` (this file); `node.status`: asks nodes for their BGP status (`status.rs`).
//!
//! In dry-run the transcript is the command and the files it reads, exactly as the real run would
//! use them (nothing is written, not even the private files). For real, `node::run::execute` checks
//! for root, prepares the host, writes the private files, replaces the old container and watches the
//! logs for the agent's start line; with `--init-system` the container's own exit is the outcome.

use super::{Context, Outcome, Perform, Performed, RunMode};

pub mod status;
use crate::node::run::{self, RunOutcome};
use crate::node::{NodeError, dry_run_text};
use crate::output::Printer;
use crate::plan::Action;
use crate::plan::action::NodeRun;

impl Perform for NodeRun {
    async fn perform(&self, _: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        Ok(start(self, mode, context.progress.printer()).await?)
    }

    /// It replaces the running container: safe, but not without effect.
    fn is_idempotent(&self, _: &Action) -> bool {
        false
    }
}

/// Starts (or in dry-run shows) the node container.
pub async fn start(
    request: &NodeRun,
    mode: RunMode,
    printer: &Printer,
) -> Result<Outcome, NodeError> {
    if mode == RunMode::DryRun {
        let transcript: Vec<String> = dry_run_text(&request.command)
            .lines()
            .map(str::to_string)
            .collect();
        return Ok(Outcome {
            summary: "would start the node container".to_string(),
            transcript,
            output: None,
        });
    }
    let outcome = run::execute(
        &request.command,
        &request.engine,
        request.host,
        request.startup_timeout,
        printer,
    )
    .await?;
    match outcome {
        RunOutcome::Started => Ok(Outcome::line("the node agent started".to_string())),
        RunOutcome::Stopped { code: Some(0) } => Ok(Outcome::line(
            "the node container stopped with exit code 0".to_string(),
        )),
        RunOutcome::Stopped { code: Some(code) } => Err(NodeError::ContainerFailed { code }),
        RunOutcome::Stopped { code: None } => Err(NodeError::ContainerKilled),
    }
}
