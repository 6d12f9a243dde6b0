//! `netctl diff -f FILE|DIR [-R]`: how resource files differ from what is stored, for CI and
//! configuration management (projectcalico/calico#3001).
//!
//! The files are read and validated as `apply` reads them, and `apply`'s own dry run compares them
//! with the datastore, so the lines are the dry run's (`+` would be created, `~` would change, with
//! the fields that change); this file only picks the differences out of that transcript
//! (`resource_diff::differences`) and turns them into kubectl diff's exit codes: 0 no difference, 1
//! differences, 2 an error (`Command::failure_code`). It writes nothing.

use std::io::Write as _;
use std::process::ExitCode;

use super::Context;
use super::args::FileArgs;
use crate::exec::actions::WriteSemantics;
use crate::exec::actions::resource::diff::{WriteCounts, differences};
use crate::exec::lock::Holder;
use crate::exec::{ExecError, Executor, RunMode, RunOneOptions};
use crate::exit_code;
use crate::plan::action::ResourceDocuments;
use crate::plan::release::api_release;
use crate::plan::{Action, Plan};

pub const AFTER_HELP: &str = "\
Examples:
  netctl diff -f policies/ -R
  netctl diff -f pool.yaml && echo in sync
  netctl diff -f - < hostendpoints.yaml
Lines as `apply --dry-run` prints them: `+` a resource that would be created (its document),
`~` one that would change (only the fields that change: `~ path: old → new`, `+ path: new`,
`- path: old`). Unchanged resources are counted on stderr, not shown.

Exit codes (kubectl diff's):
  0  no difference: every resource is stored as the files say
  1  differences found
  2  the diff failed (bad input, datastore error); 64 on bad usage";

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    #[command(flatten)]
    files: FileArgs,
}

pub async fn run(context: &Context, args: DiffArgs) -> anyhow::Result<ExitCode> {
    let store = context.datastore().await?;
    // Validated for the release the cluster runs, as `apply` would validate them.
    let release = api_release(store.as_ref(), None).await;
    let documents = args.files.load(&release)?;
    let action = Action::ResourceApply(ResourceDocuments {
        documents,
        file: None,
        validated_for: Some(release.release.clone()),
    });
    let plan = Plan::single("diff", "compare with what is stored", action);
    let executor = Executor::new(store, None, Holder::current());
    let options = RunOneOptions {
        semantics: WriteSemantics::default(),
        journal: None,
    };
    // The transcript is taken from the outcome, not printed as it goes: only its differences are.
    let outcome = match executor
        .run_one(&plan, RunMode::DryRun, &options, &mut std::io::sink())
        .await
    {
        Ok(outcome) => outcome,
        Err(ExecError::StepFailed { source, .. }) => return Err(anyhow::Error::new(*source)),
        Err(error) => return Err(error.into()),
    };
    let mut counts = WriteCounts::default();
    counts.add(&outcome.transcript);
    let mut stdout = context.printer.stdout();
    for line in differences(&outcome.transcript) {
        writeln!(stdout, "{line}")?;
    }
    stdout.flush()?;
    let changed = counts.created + counts.changed + counts.deleted;
    context.printer.say(format!(
        "{} to create, {} to change, {} unchanged",
        counts.created, counts.changed, counts.unchanged
    ));
    Ok(ExitCode::from(match changed {
        0 => exit_code::SUCCESS,
        _ => exit_code::DIFFERENCES,
    }))
}
