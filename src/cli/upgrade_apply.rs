//! `netctl upgrade apply | status | unlock`: flags in, one executor call out.
//!
//! `apply` reads the plan (a saved `--plan` file, or the checkpoint's own plan with `--resume`),
//! resolves the state directory, terminal and test hooks into [`ApplyOptions`], and hands everything
//! to [`Executor::apply`]. `status` prints the checkpoint and the lock holder (stdout: it is data).
//! `unlock` removes a lock by its id. Planning (`--to`) goes through `plan::request`, as `upgrade plan`.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap_complete::engine::ArgValueCompleter;

use super::Context;
use super::args::{CanaryArgs, FactArgs, ManifestEditArgs, WindowArgs, parse_duration};
use crate::datastore::coordination::Coordination;
use crate::errors::Hint;
use crate::errors::error_chain;
use crate::exec::actions::fetch::ManifestDownloads;
use crate::exec::checkpoint::{
    self, CheckpointError, CheckpointStore, RunState, SavedRun, StepState,
};
use crate::exec::hooks::Hooks;
use crate::exec::lock::{self, Holder};
use crate::exec::preflight::Check;
use crate::exec::progress::ProgressMode;
use crate::exec::{
    ApplyOptions, BackupChoice, Confirmation, CrashPoint, Executor, RunMode, StartMode,
};
use crate::plan::Plan;
use crate::plan::request::FactSources;
use crate::runbook::UPGRADE_PROCEDURE;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  netctl upgrade apply --plan plan.json --dry-run
  netctl upgrade apply --plan plan.json
  netctl upgrade apply --to v3.29.2 --manifest-overlay my-edits.yaml --dry-run   # plans, then rehearses
  netctl upgrade apply --procedure auto-host-endpoints --dry-run
  netctl upgrade apply --procedure datastore-migration --dry-run   # then without --dry-run; --resume after a crash
  netctl upgrade apply --resume --approve pre-upgrade/confirm-window
  netctl upgrade apply --to v3.29.2 --canary 1 --no-manifest-edits   # one node, its gate, the rest
  netctl upgrade apply --resume --approve canary/approve   # the canaries look good: roll the rest
  netctl upgrade apply --resume --yes
  netctl upgrade apply --resume --repair   # a completed step's effect was undone by hand: redo it
  netctl upgrade apply --plan plan.json --window 2h   # start nothing that would not end within 2h
  netctl upgrade apply --resume --deadline 2026-03-08T04:00:00Z   # the next window
  netctl upgrade apply --plan plan.json --on-gate 'notify-send \"$NETCTL_STEP waits\"' \\
      --on-finish 'logger -t netctl \"run $NETCTL_RUN_ID ended: $NETCTL_RESULT ($NETCTL_EXIT_CODE)\"'
  netctl -q upgrade apply --plan plan.json --yes   # from cron: errors only, gates approved

Hooks run with `sh -c` and get NETCTL_EVENT (gate, failure, finish), NETCTL_STEP, NETCTL_STATE_DIR,
NETCTL_EXIT_CODE, NETCTL_RESULT, NETCTL_MESSAGE, NETCTL_RUN_ID, NETCTL_PLAN_DIGEST,
NETCTL_PROCEDURE, NETCTL_FROM and NETCTL_TO, and netctl's environment without its datastore
settings and secrets. A hook that fails is journaled and warned about; the run goes on.

Exit status: 0 when the run completed (or the dry-run was printed); 1 when it failed (the checkpoint
says where; `--resume` continues); 3 when it stopped at a gate without a terminal to ask on
(`--resume --approve STEP` continues); 4 when it stopped at a safe point because its window ends
(`--resume` continues); 64 on bad usage.
With `-q` there is no progress and no warning; a gate on a terminal still asks its question, and
without a terminal the run stops at the gate with exit 3 and its one `stopped:` line.")]
#[group(id = "source", required = true, multiple = true, args = ["to", "procedure", "plan", "resume"])]
pub struct ApplyArgs {
    /// Plan for this target release and run that plan (facts as for `upgrade plan`)
    #[arg(long, value_name = "VERSION", conflicts_with = "plan")]
    to: Option<String>,
    /// Plan this procedure of the runbooks and run it, e.g. `auto-host-endpoints` (as `upgrade plan
    /// --procedure`; the `upgrade` procedure needs `--to`)
    #[arg(long, value_name = "NAME", conflicts_with = "plan", add = ArgValueCompleter::new(super::completion::complete_procedure))]
    procedure: Option<String>,
    #[command(flatten)]
    facts: FactArgs,
    #[command(flatten)]
    manifest: ManifestEditArgs,
    /// Run exactly this saved plan (refused when it is stale or was edited)
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// Continue the run in the checkpoint (with `--plan`, it must be the same plan)
    #[arg(long)]
    resume: bool,
    /// Print what every step would do and change nothing
    #[arg(long)]
    dry_run: bool,
    /// Approve every gate and irreversible step without asking
    #[arg(short, long)]
    yes: bool,
    /// Approve this gate or irreversible step (repeatable)
    #[arg(long, value_name = "STEP")]
    approve: Vec<String>,
    /// On resume, run this interrupted step again even though it may have taken effect (repeatable)
    #[arg(long, value_name = "STEP")]
    rerun: Vec<String>,
    /// Mark this step as done without running it, e.g. after doing it by hand (repeatable)
    #[arg(long, value_name = "STEP")]
    skip: Vec<String>,
    /// On resume, run again the completed steps whose postcondition no longer holds (journaled)
    #[arg(long, requires = "resume")]
    repair: bool,
    /// Start a new run even though the checkpoint holds an unfinished one (it stays in the journal)
    #[arg(long, conflicts_with = "resume")]
    discard_checkpoint: bool,
    /// Where the checkpoint, journal and downloads are kept [default: $XDG_STATE_HOME/netctl, else ~/.local/state/netctl]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Serve downloads from this directory (`<host>/<path>`) instead of the network
    #[arg(long, value_name = "DIR")]
    mirror_dir: Option<PathBuf>,
    /// How long the lock outlives a crashed run
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    lock_ttl: Duration,
    /// Run although this pre-flight check fails (repeatable; journaled)
    #[arg(long, value_name = "CHECK", value_parser = preflight_check())]
    skip_preflight: Vec<Check>,
    /// The etcd members' `--quota-backend-bytes`, for the pre-flight (etcd before 3.6 does not report it; default 2 GiB)
    #[arg(long, value_name = "BYTES")]
    etcd_quota_bytes: Option<u64>,
    /// Do not back the datastore up into the state directory before the first write (journaled)
    #[arg(long)]
    no_backup: bool,
    /// Progress display: a bar on a terminal, plain lines otherwise
    #[arg(long, value_enum, default_value_t = ProgressChoice::Auto)]
    progress: ProgressChoice,
    /// Without a terminal, print a line at least this often while a step waits
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    progress_interval: Duration,
    #[command(flatten)]
    hooks: HookArgs,
    #[command(flatten)]
    window: WindowArgs,
    #[command(flatten)]
    canary: CanaryArgs,
}

/// `--on-gate`, `--on-failure`, `--on-finish`: notification hooks for runs nobody watches.
#[derive(Debug, Clone, clap::Args)]
pub struct HookArgs {
    /// Run this shell command when the run reaches a human gate (NETCTL_EVENT=gate, NETCTL_STEP, ...)
    #[arg(long, value_name = "CMD")]
    on_gate: Option<String>,
    /// Run this shell command when the run fails or is refused (NETCTL_EXIT_CODE=1, NETCTL_MESSAGE)
    #[arg(long, value_name = "CMD")]
    on_failure: Option<String>,
    /// Run this shell command whenever the run ends (NETCTL_EXIT_CODE, NETCTL_RESULT)
    #[arg(long, value_name = "CMD")]
    on_finish: Option<String>,
    /// How long a hook may run before it is killed (its failure never stops the run)
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    hook_timeout: Duration,
}

impl From<HookArgs> for Hooks {
    fn from(args: HookArgs) -> Hooks {
        Hooks {
            on_gate: args.on_gate,
            on_failure: args.on_failure,
            on_finish: args.on_finish,
            timeout: args.hook_timeout,
        }
    }
}

/// The pre-flight checks by the names `--skip-preflight` takes (`exec::preflight::Check`'s).
fn preflight_check() -> impl clap::builder::TypedValueParser<Value = Check> {
    use clap::builder::TypedValueParser as _;
    let names = Check::ALL.map(Check::name);
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<Check>())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressChoice {
    Auto,
    Bar,
    Plain,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl upgrade status\n  netctl upgrade status -o json | jq '.checkpoint.steps[] | select(.state != \"succeeded\")'\n  netctl upgrade status --state-dir /var/lib/netctl/upgrade\n  netctl upgrade status 3f2a9c10     # an earlier run, as `upgrade history` lists it"
)]
pub struct StatusArgs {
    /// An earlier run's id (or its first characters, as `upgrade history` shows them); without it,
    /// the checkpoint's run
    run: Option<String>,
    /// The state directory of the run [default: as for `upgrade apply`]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = StatusFormat::Text)]
    output: StatusFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl upgrade status            # shows who holds the lock and its id\n  netctl upgrade unlock 7f3c9a2e   # only when that holder is gone for good\nA lock whose holder crashed expires by itself when its lease runs out."
)]
pub struct UnlockArgs {
    /// The lock id, as `upgrade status` or the refusal message shows it
    lock_id: String,
}

/// Why `upgrade apply` could not start.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeApplyError {
    #[error(
        "no state directory: `--state-dir` was not given and neither XDG_STATE_HOME nor HOME is set"
    )]
    NoStateDirectory,
    #[error("cannot read the plan file `{}`", path.display())]
    ReadPlan {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the plan was made with {planned}, not `{asked}`: the canary is part of the plan (its nodes, gate and steps), so this is a stale plan for what is asked"
    )]
    OtherCanary { asked: String, planned: String },
    #[error("cannot use the plan file `{}`", path.display())]
    InvalidPlan {
        path: PathBuf,
        #[source]
        source: crate::plan::PlanFileError,
    },
}

impl Hint for UpgradeApplyError {
    fn hint(&self) -> Option<String> {
        match self {
            UpgradeApplyError::NoStateDirectory => Some("pass `--state-dir DIR`".to_string()),
            UpgradeApplyError::OtherCanary { .. } => Some(
                "resume without canary flags to go on with the plan's own canary, or finish the run (or roll it back) and plan again with the canary you want".to_string(),
            ),
            _ => None,
        }
    }
}

pub(super) fn state_dir(context: &Context, given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(directory) => Ok(directory),
        None => checkpoint::default_state_dir(&context.environment)
            .ok_or_else(|| UpgradeApplyError::NoStateDirectory.into()),
    }
}

fn read_plan(path: &Path) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(path).map_err(|source| UpgradeApplyError::ReadPlan {
        path: path.to_path_buf(),
        source,
    })?;
    let plan = Plan::parse(&text).map_err(|source| UpgradeApplyError::InvalidPlan {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(plan)
}

pub async fn apply(context: &Context, args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let saved_plan = args.plan.as_deref().map(read_plan).transpose()?;
    let (interaction, progress) = terminal_modes(&context.printer, args.progress);
    let options = ApplyOptions {
        mode: if args.dry_run {
            RunMode::DryRun
        } else {
            RunMode::Execute
        },
        start: match (args.resume, args.discard_checkpoint) {
            (true, _) => StartMode::Resume,
            (false, true) => StartMode::Discard,
            (false, false) => StartMode::New,
        },
        confirmation: if args.yes {
            Confirmation::AssumeYes
        } else {
            Confirmation::Ask
        },
        interaction,
        progress,
        approved: args.approve.into_iter().collect::<BTreeSet<_>>(),
        rerun: args.rerun.into_iter().collect(),
        skip: args.skip.into_iter().collect(),
        state_dir: state_dir(context, args.state_dir)?,
        mirror_dir: args.mirror_dir,
        lock_ttl: args.lock_ttl,
        crash_point: CrashPoint::from_environment(&context.environment)?,
        repair: args.repair,
        environment: context.environment.clone(),
        skip_preflight: args.skip_preflight.into_iter().collect(),
        etcd_quota_bytes: args.etcd_quota_bytes,
        progress_interval: args.progress_interval,
        hooks: args.hooks.into(),
        window: args.window.window(),
        backup: match args.no_backup {
            true => BackupChoice::Skip,
            false => BackupChoice::Take,
        },
    };
    let (datastore, coordination) = context.coordinated_datastore().await?;
    let cluster = context.kubernetes_client().await?;
    let plan = match (args.to.is_some() || args.procedure.is_some(), saved_plan) {
        (true, _) => {
            let mut request = args.facts.request(
                args.procedure.as_deref().unwrap_or(UPGRADE_PROCEDURE),
                args.to.clone(),
                &args.manifest,
                false,
                context.configured_facts(),
            )?;
            request.canary = args.canary.request();
            let sources = FactSources {
                datastore: Some(datastore.as_ref()),
                cluster: cluster.as_ref(),
            };
            let manifests = ManifestDownloads {
                mirror: options.mirror_dir.clone(),
            };
            let plan = request.plan(sources, &manifests).await?;
            context.printer.say(format!(
                "planned {} {} → {}: {} steps ({})",
                plan.procedure,
                plan.from,
                plan.to,
                plan.steps.len(),
                plan.digest
            ));
            Some(plan)
        }
        (false, saved) => saved,
    };
    // A saved plan, or the checkpoint's on `--resume`, keeps the canary it was made with: other
    // canary flags ask for another plan.
    if let Some(asked) = args.canary.request() {
        let run_plan = match (&plan, args.resume) {
            (Some(plan), _) => Some(plan.clone()),
            (None, true) => checkpoint::CheckpointStore::new(
                options.state_dir.clone(),
                Some(coordination.clone()),
            )
            .load_latest()
            .await?
            .map(|saved| saved.plan),
            (None, false) => None,
        };
        if let Some(run_plan) = run_plan
            && run_plan.canary.as_ref().map(|canary| canary.request()) != Some(asked.clone())
        {
            return Err(UpgradeApplyError::OtherCanary {
                asked: asked.to_string(),
                planned: run_plan
                    .canary
                    .as_ref()
                    .map(|canary| format!("`{}`", canary.request()))
                    .unwrap_or_else(|| "no canary".to_string()),
            }
            .into());
        }
    }
    let executor = Executor::new(datastore, Some(coordination), Holder::current())
        .with_kubernetes(cluster)
        .with_printer(context.printer.clone());
    let mut stdout = context.printer.stdout();
    let report = executor.apply(plan, &options, &mut stdout).await?;
    stdout.flush().context("cannot write the transcript")?;
    if options.mode == RunMode::Execute {
        let repaired = if report.repaired.is_empty() {
            String::new()
        } else {
            format!("; repaired {}", report.repaired.join(", "))
        };
        context.printer.say(format!(
            "upgrade run {} completed: {} steps{repaired}",
            report.run_id, report.steps
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether gates can ask on a terminal, and how progress is shown: `-q` silences progress
/// whatever `--progress` says (the printer draws no bar and says no line); a bar needs a terminal.
pub(super) fn terminal_modes(
    printer: &crate::output::Printer,
    progress: ProgressChoice,
) -> (crate::output::Interaction, ProgressMode) {
    let progress = match (progress, printer.can_draw_bars()) {
        _ if printer.is_quiet() => ProgressMode::Silent,
        (ProgressChoice::Bar, _) | (ProgressChoice::Auto, true) => ProgressMode::Bar,
        (ProgressChoice::Plain, _) | (ProgressChoice::Auto, false) => ProgressMode::Lines,
    };
    (printer.interaction(), progress)
}

pub async fn status(context: &Context, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let directory = state_dir(context, args.state_dir)?;
    // An earlier run is told by the journal; the checkpoint's own run by the checkpoint (below),
    // which also knows the lock and the mirror.
    if let Some(given) = &args.run {
        let current = CheckpointStore::new(directory.clone(), None)
            .load_local()
            .ok()
            .flatten()
            .map(|saved| saved.checkpoint.run_id);
        if !current.is_some_and(|run_id| run_id.starts_with(given.as_str())) {
            return super::upgrade_history::status_of_run(context, &directory, given, args.output);
        }
    }
    // The datastore is optional for status: without it, the local checkpoint is still worth showing.
    let coordination: Option<Arc<dyn Coordination>> = match context.coordinated_datastore().await {
        Ok((datastore, coordination)) => {
            crate::datastore::readiness::warn_if_locked(datastore.as_ref(), &context.printer).await;
            Some(coordination)
        }
        Err(error) => {
            context.printer.warn(format!(
                "showing the local checkpoint only; the datastore is not reachable: {}",
                error_chain(error.as_ref())
            ));
            None
        }
    };
    let store = CheckpointStore::new(directory.clone(), coordination.clone());
    let saved = match store.load_latest().await {
        Ok(saved) => saved,
        // Status only reads: a damaged local checkpoint is reported, and the datastore's copy shown.
        Err(CheckpointError::DamagedLocal {
            source, mirrored, ..
        }) if mirrored.is_some() => {
            context.printer.warn(format!(
                "showing the checkpoint mirrored in the datastore; the local one is damaged: {}",
                error_chain(source.as_ref())
            ));
            mirrored.map(|saved| *saved)
        }
        Err(error) => return Err(error.into()),
    };
    let held = match &coordination {
        Some(coordination) => lock::current(coordination.as_ref()).await?,
        None => None,
    };
    let holder_alive = held
        .as_ref()
        .and_then(|(record, _, _)| record.holder.is_alive_here());
    let mut stdout = context.printer.stdout();
    match args.output {
        StatusFormat::Json => {
            let value = serde_json::json!({
                "checkpoint": saved.as_ref().map(|saved| &saved.checkpoint),
                "plan": saved.as_ref().map(|saved| serde_json::json!({
                    "digest": saved.plan.digest,
                    "procedure": saved.plan.procedure,
                    "from": saved.plan.from,
                    "to": saved.plan.to,
                    "steps": saved.plan.steps.len(),
                    "facts": saved.plan.facts,
                })),
                "lock": held.as_ref().map(|(record, _, _)| record),
                "lock_holder_alive": holder_alive,
            });
            writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
        }
        StatusFormat::Text => {
            print_status(&mut stdout, saved.as_ref(), held.map(|h| h.0), &directory)?
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_status(
    out: &mut dyn Write,
    saved: Option<&SavedRun>,
    lock: Option<lock::LockRecord>,
    directory: &Path,
) -> std::io::Result<()> {
    match &lock {
        Some(record) => {
            let liveness = match record.holder.is_alive_here() {
                Some(true) => "; that process is running on this host".to_string(),
                Some(false) => format!(
                    "; that process is gone from this host, so the lock expires within {}s (or `netctl upgrade unlock {}`{})",
                    record.ttl_seconds,
                    record.id,
                    match &record.run_id {
                        Some(_) => "; `netctl upgrade apply --resume` of its run takes it over",
                        None => "",
                    }
                ),
                None => String::new(),
            };
            writeln!(
                out,
                "lock:     held by {} for `{}` (lock id {}){liveness}",
                record.holder, record.operation, record.id
            )?
        }
        None => writeln!(out, "lock:     not held")?,
    }
    let Some(SavedRun { plan, checkpoint }) = saved else {
        writeln!(
            out,
            "run:      none recorded in `{}` or in the datastore",
            directory.display()
        )?;
        return Ok(());
    };
    let state = match &checkpoint.run {
        RunState::InProgress if lock.is_some() => "in progress".to_string(),
        RunState::InProgress => {
            "interrupted (resume with `netctl upgrade apply --resume`)".to_string()
        }
        RunState::Interrupted { signal } => {
            format!("interrupted by {signal} (resume with `netctl upgrade apply --resume`)")
        }
        RunState::Drifted { steps } => format!(
            "stopped on resume: the postconditions of {} no longer hold (check, then `netctl upgrade apply --resume --repair` runs them again)",
            steps
                .iter()
                .map(|step| format!("`{step}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        RunState::WaitingAtGate { step } if step == crate::plan::verification::VERIFY_STEP => {
            format!(
                "stopped at `{step}`: the verification failed (below); fix what it found and `netctl upgrade apply --resume` verifies again, `--resume --approve {step}` accepts the findings (`netctl upgrade plan` shows each step's rollback advice)"
            )
        }
        RunState::WaitingAtGate { step } => format!(
            "waiting at gate `{step}` (continue with `netctl upgrade apply --resume --approve {step}`)"
        ),
        RunState::Failed { step } => {
            format!("failed at `{step}` (fix, then `netctl upgrade apply --resume`)")
        }
        RunState::StoppedAtDeadline { step } => format!(
            "stopped before `{step}`: the maintenance window ended (continue in the next one with `netctl upgrade apply --resume`)"
        ),
        RunState::Completed => "completed".to_string(),
    };
    writeln!(out, "run:      {} — {state}", checkpoint.run_id)?;
    writeln!(
        out,
        "plan:     {} ({} {} → {}, {} steps)",
        checkpoint.plan_digest,
        plan.procedure,
        plan.from,
        plan.to,
        plan.steps.len()
    )?;
    writeln!(
        out,
        "started:  {} by {}@{}",
        checkpoint.started_at, checkpoint.started_by.user, checkpoint.started_by.host
    )?;
    writeln!(out, "updated:  {}", checkpoint.updated_at)?;
    writeln!(
        out,
        "steps:    {} of {} done",
        checkpoint.done_count(),
        checkpoint.steps.len()
    )?;
    let rows = checkpoint.steps.iter().map(|record| {
        let detail = record.error.as_deref().or(record.summary.as_deref());
        (record.state, record.id.as_str(), detail)
    });
    write_step_lines(out, rows)?;
    // What the run detaches before the upgrade and restores after it, so an operator can see (and,
    // if everything else fails, re-add by hand) what was removed.
    let references = &plan.facts.owner_references.value;
    if !references.is_empty() {
        writeln!(
            out,
            "owner references recorded ({}), restored after the upgrade with the owners' new UIDs:",
            plan.facts.owner_references.origin
        )?;
        for reference in references {
            writeln!(out, "  {reference}")?;
        }
    }
    Ok(())
}

/// One line per step — state, id, its error or summary — with the ids in one column.
pub(super) fn write_step_lines<'a>(
    out: &mut dyn Write,
    rows: impl Iterator<Item = (StepState, &'a str, Option<&'a str>)> + Clone,
) -> std::io::Result<()> {
    let width = rows
        .clone()
        .map(|(_, id, _)| id.chars().count())
        .max()
        .unwrap_or(0);
    for (state, id, detail) in rows {
        let detail = detail.unwrap_or("");
        writeln!(out, "  {:<9}  {id:<width$}  {detail}", state.as_str())?;
    }
    Ok(())
}

pub async fn unlock(context: &Context, args: UnlockArgs) -> anyhow::Result<ExitCode> {
    let (_, coordination) = context.coordinated_datastore().await?;
    let record = lock::unlock(coordination.as_ref(), &args.lock_id).await?;
    context.printer.say(format!(
        "removed upgrade lock {} held by {} for `{}`",
        record.id, record.holder, record.operation
    ));
    Ok(ExitCode::SUCCESS)
}
