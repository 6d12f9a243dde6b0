//! Running the one-step plans of `ipam release|split|configure` and `datastore migrate
//! lock|unlock` through the one executor, with the journal: `--dry-run` prints what would be
//! written; a real run appends who ran what, when, and how it ended to `journal.jsonl` in the state
//! directory (`--state-dir`, else `$XDG_STATE_HOME/netctl`, else `~/.local/state/netctl`), the same
//! journal `upgrade apply` keeps, so a forgotten lock can be traced to its holder.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::Context;
use crate::datastore::Datastore;
use crate::exec::actions::Outcome;
use crate::exec::lock::Holder;
use crate::exec::{RunMode, RunOneOptions, checkpoint};
use crate::plan::Plan;
use crate::release::ApiRelease;

/// `--dry-run` and `--state-dir`, for the journaled writes.
#[derive(Debug, Clone, clap::Args)]
pub struct JournalArgs {
    /// Print what would be written and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Where the journal is kept [default: $XDG_STATE_HOME/netctl, else ~/.local/state/netctl]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl JournalArgs {
    pub fn mode(&self) -> RunMode {
        match self.dry_run {
            true => RunMode::DryRun,
            false => RunMode::Execute,
        }
    }
}

/// Who runs this command, as journals and the datastore lock record it: `user@host`.
pub fn operator() -> String {
    let holder = Holder::current();
    format!("{}@{}", holder.user, holder.host)
}

/// Runs `plan` (one step) and prints its account on stdout; returns the outcome.
pub async fn run_journaled(
    context: &Context,
    store: Arc<dyn Datastore>,
    plan: &Plan,
    journal: &JournalArgs,
    release: Option<ApiRelease>,
) -> anyhow::Result<Outcome> {
    let mode = journal.mode();
    let journal_path = match mode {
        RunMode::DryRun => None,
        RunMode::Execute => journal_file(context, journal.state_dir.clone()),
    };
    let options = RunOneOptions {
        semantics: Default::default(),
        journal: journal_path,
    };
    let mut stdout = context.printer.stdout();
    let outcome =
        super::write::run_one_step(context, store, plan, mode, &options, release, &mut stdout)
            .await?;
    if mode == RunMode::Execute {
        for line in &outcome.transcript {
            writeln!(stdout, "{line}")?;
        }
    }
    stdout.flush()?;
    Ok(outcome)
}

/// The journal file, its directory made owner-only when netctl creates it; `None` (said on
/// stderr) when there is no state directory.
fn journal_file(context: &Context, given: Option<PathBuf>) -> Option<PathBuf> {
    let directory = given.or_else(|| checkpoint::default_state_dir(&context.environment));
    let Some(directory) = directory else {
        context.printer.warn(
            "no state directory (no --state-dir, XDG_STATE_HOME or HOME): this change is not journaled",
        );
        return None;
    };
    if !directory.exists() {
        use std::os::unix::fs::DirBuilderExt;
        if let Err(error) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&directory)
        {
            context.printer.warn(format!(
                "cannot create the state directory `{}` ({error}): this change is not journaled",
                directory.display()
            ));
            return None;
        }
    }
    Some(directory.join(checkpoint::JOURNAL_FILE))
}
