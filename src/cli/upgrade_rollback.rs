//! `netctl upgrade rollback [--to STEP]`: the way back of the last run in the state directory, run
//! instead of printed. The rollback plan (`plan/rollback.rs`: each completed step's `undo`, newest
//! first, behind one confirmation gate) is shown first, then run by the one executor as a run of
//! its own — lock, journal (`rolls_back` names the run it goes back from), dry run, gates, resume
//! with `upgrade apply --resume`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;

use super::Context;
use super::args::{WindowArgs, parse_duration};
use super::upgrade_apply::{HookArgs, ProgressChoice, state_dir, terminal_modes};
use crate::exec::actions::ipam::restore::file_digest;
use crate::exec::checkpoint::{CheckpointStore, RunState, StepState};
use crate::exec::lock::Holder;
use crate::exec::{
    ApplyOptions, BackupChoice, Confirmation, CrashPoint, Executor, RunMode, StartMode, backup_path,
};
use crate::plan::rollback::{CONFIRM_STEP, ROLLBACK_PROCEDURE, RunToRollBack, plan_rollback};
use crate::plan::{FactOverrides, Facts, discover_cluster_facts, discover_facts};

pub const EXAMPLES: &str = "\
Examples:
  netctl upgrade rollback --dry-run                  # the rollback plan and what each undo would do
  netctl upgrade rollback                            # asks once on a terminal, then runs it
  netctl upgrade rollback --yes                      # unattended
  netctl upgrade rollback --to manifest-upgrade/apply-manifest   # undo only the steps after it
  netctl upgrade apply --resume                      # continue an interrupted rollback
Each completed step of the last run is undone, newest first, by its runbook's `undo:` (a manifest
apply re-applies the objects saved before it server-side; `helm upgrade` is `helm rollback` to the
revision recorded before it; datastore writes come back from the run's backup); steps that only
read need none. A rollback that would go past an irreversible step, or a step without a way back,
is refused before anything is written, naming the step and what remains by hand.
Exit status: 0 rolled back (or the dry run printed); 1 failed or refused; 3 stopped at the
confirmation without a terminal to ask on (`netctl upgrade apply --resume --approve undo/confirm`);
64 on bad usage.";

#[derive(Debug, clap::Args)]
pub struct RollbackArgs {
    /// Go back to just after this completed step (it stays done); without it, to before the run
    #[arg(long, value_name = "STEP")]
    to: Option<String>,
    /// The state directory of the run to roll back [default: as for `upgrade apply`]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Show the rollback plan and what each undo would do; change nothing
    #[arg(long)]
    dry_run: bool,
    /// Confirm the rollback without asking
    #[arg(short, long)]
    yes: bool,
    /// How long the lock outlives a crashed rollback
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    lock_ttl: Duration,
    /// Progress display: a bar on a terminal, plain lines otherwise
    #[arg(long, value_enum, default_value_t = ProgressChoice::Auto)]
    progress: ProgressChoice,
    #[command(flatten)]
    hooks: HookArgs,
    #[command(flatten)]
    window: WindowArgs,
}

/// Why there is nothing to roll back.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeRollbackError {
    #[error("no upgrade run is recorded in `{}`", .0.display())]
    NoRun(PathBuf),
    #[error("the last run in the state directory, `{run}`, is itself a rollback (of run `{of}`)")]
    AlreadyRollback { run: String, of: String },
}

impl crate::errors::Hint for UpgradeRollbackError {
    fn hint(&self) -> Option<String> {
        match self {
            UpgradeRollbackError::NoRun(_) => Some(
                "pass the `--state-dir` the run was made with; `netctl upgrade history` lists the runs of a state directory".to_string(),
            ),
            UpgradeRollbackError::AlreadyRollback { .. } => Some(
                "an unfinished rollback continues with `netctl upgrade apply --resume`; to go forward again, plan the upgrade anew".to_string(),
            ),
        }
    }
}

/// The facts as discovery reads them now, the install method as the run had it; the run's own
/// when discovery does not answer (the executor's stale-plan check then says why).
async fn facts_now(
    store: &dyn crate::datastore::Datastore,
    cluster: Option<&kube::Client>,
    forward: &Facts,
) -> Facts {
    let Ok(mut discovered) = discover_facts(store).await else {
        return forward.clone();
    };
    if let Some(client) = cluster {
        discovered.cluster = discover_cluster_facts(client).await.ok();
    }
    let overrides = FactOverrides {
        install_method: Some(forward.install_method.value),
        ..FactOverrides::default()
    };
    Facts::assemble(&discovered, &overrides).unwrap_or_else(|_| forward.clone())
}

pub async fn rollback(context: &Context, args: RollbackArgs) -> anyhow::Result<ExitCode> {
    let directory = state_dir(context, args.state_dir.clone())?;
    let (datastore, coordination) = context.coordinated_datastore().await?;
    let cluster = context.kubernetes_client().await?;
    let saved = CheckpointStore::new(directory.clone(), Some(coordination.clone()))
        .load_latest()
        .await?
        .ok_or_else(|| UpgradeRollbackError::NoRun(directory.clone()))?;
    let (plan, checkpoint) = (&saved.plan, &saved.checkpoint);
    if plan.procedure == ROLLBACK_PROCEDURE {
        return Err(UpgradeRollbackError::AlreadyRollback {
            run: checkpoint.run_id.clone(),
            of: plan.rolls_back.clone().unwrap_or_default(),
        }
        .into());
    }
    // A step that failed or was cut short may have changed something: its undo runs too (every
    // undo puts back a recorded state, so it is harmless where the step did nothing).
    let completed: BTreeSet<String> = checkpoint
        .steps
        .iter()
        .filter(|record| {
            matches!(
                record.state,
                StepState::Succeeded | StepState::Failed | StepState::Running
            )
        })
        .map(|record| record.id.clone())
        .collect();
    let backup_file = backup_path(&directory, &checkpoint.run_id);
    let backup = match backup_file.exists() {
        true => Some((
            backup_file.display().to_string(),
            file_digest(&backup_file)
                .with_context(|| format!("cannot read the backup `{}`", backup_file.display()))?,
        )),
        false => None,
    };
    let outputs: BTreeMap<String, serde_json::Value> = checkpoint.outputs.clone();
    let facts_now = facts_now(datastore.as_ref(), cluster.as_ref(), &plan.facts).await;
    let run = RunToRollBack {
        plan,
        run_id: &checkpoint.run_id,
        completed: &completed,
        outputs: &outputs,
        backup,
        facts_now,
    };
    let rollback = plan_rollback(&run, args.to.as_deref())?;
    context.printer.say(format!(
        "rollback of run {} ({} {} → {}): {} steps ({})",
        checkpoint.run_id,
        plan.procedure,
        plan.from,
        plan.to,
        rollback.steps.len(),
        rollback.digest
    ));
    let mut stdout = context.printer.stdout();
    write!(stdout, "{}", crate::plan::render::text(&rollback))?;
    writeln!(stdout)?;
    let (interaction, progress) = terminal_modes(&context.printer, args.progress);
    let options = ApplyOptions {
        mode: match args.dry_run {
            true => RunMode::DryRun,
            false => RunMode::Execute,
        },
        // The run rolled back is kept in the journal; an unfinished one is replaced here.
        start: match checkpoint.run {
            RunState::Completed => StartMode::New,
            _ => StartMode::Discard,
        },
        confirmation: match args.yes {
            true => Confirmation::AssumeYes,
            false => Confirmation::Ask,
        },
        interaction,
        progress,
        approved: BTreeSet::new(),
        rerun: BTreeSet::new(),
        skip: BTreeSet::new(),
        state_dir: directory,
        mirror_dir: None,
        lock_ttl: args.lock_ttl,
        crash_point: CrashPoint::from_environment(&context.environment)?,
        repair: false,
        environment: context.environment.clone(),
        skip_preflight: BTreeSet::new(),
        etcd_quota_bytes: None,
        progress_interval: Duration::from_secs(30),
        hooks: args.hooks.into(),
        window: args.window.window(),
        backup: BackupChoice::Take,
    };
    let executor = Executor::new(datastore, Some(coordination), Holder::current())
        .with_kubernetes(cluster)
        .with_printer(context.printer.clone());
    let report = executor
        .apply(Some(rollback), &options, &mut stdout)
        .await?;
    stdout.flush().context("cannot write the transcript")?;
    if options.mode == RunMode::Execute {
        context.printer.say(format!(
            "run {} rolled back by run {} ({} steps; `{CONFIRM_STEP}` included)",
            checkpoint.run_id, report.run_id, report.steps
        ));
    }
    Ok(ExitCode::SUCCESS)
}
