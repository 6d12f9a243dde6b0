//! `netctl upgrade history` and `netctl upgrade status RUN` of a run that is no longer the
//! checkpoint's: both read the state directory's journal (`exec::history`), newest run first, as
//! `helm history` lists a release's revisions. stdout is data (a table, or `-o json`); nothing is
//! written and no datastore is needed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::Context;
use super::upgrade_apply::{StatusFormat, state_dir, write_step_lines};
use crate::exec::checkpoint::{CheckpointStore, StepState};
use crate::exec::history::{self, History, RunHistory, StepHistory};
use crate::output::TableWriter;
use crate::plan::Plan;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  netctl upgrade history
  netctl upgrade history -o json | jq '.[] | select(.result == \"failed\")'
  netctl upgrade status 3f2a9c10          # one run of the list, step by step
  netctl upgrade history --state-dir /var/lib/netctl/upgrade
Runs are read from the journal of the state directory, newest first; a rollback is shown with the
run it went back from. RESULT is one of succeeded, failed, rolled back, waiting at a gate,
verification failed, interrupted, stopped at the end of its window, unfinished (running, or killed).")]
pub struct HistoryArgs {
    /// The state directory whose runs to list [default: as for `upgrade apply`]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = StatusFormat::Text)]
    output: StatusFormat,
}

/// Reads the journal, warning about lines that could not be read.
fn read(context: &Context, directory: &Path) -> anyhow::Result<History> {
    let history = History::read(directory)?;
    if !history.unreadable_lines.is_empty() {
        context.printer.warn(format!(
            "{} journal line(s) could not be read and are left out (line {}; a last line cut short by a kill is harmless)",
            history.unreadable_lines.len(),
            history
                .unreadable_lines
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(history)
}

pub fn history(context: &Context, args: HistoryArgs) -> anyhow::Result<ExitCode> {
    let directory = state_dir(context, args.state_dir)?;
    let history = read(context, &directory)?;
    let mut stdout = context.printer.stdout();
    match args.output {
        StatusFormat::Json => {
            let runs: Vec<serde_json::Value> = history
                .listed()
                .map(|run| {
                    let mut value = serde_json::to_value(run).unwrap_or_default();
                    value["state_dir"] = serde_json::json!(directory.display().to_string());
                    value
                })
                .collect();
            writeln!(stdout, "{}", serde_json::to_string_pretty(&runs)?)?;
        }
        StatusFormat::Text => {
            if history.listed().next().is_none() {
                context.printer.say(format!(
                    "no upgrade runs recorded in `{}`",
                    directory.display()
                ));
                return Ok(ExitCode::SUCCESS);
            }
            let headings = [
                "RUN",
                "STARTED",
                "BY",
                "FROM → TO",
                "PROCEDURE",
                "RESULT",
                "DURATION",
                "STEPS RUN/SKIPPED/FAILED",
            ];
            let mut table = TableWriter::trimmed(&mut stdout, headings.map(String::from).to_vec());
            for run in history.listed() {
                table.push_row(vec![
                    history::short_id(&run.run_id).to_string(),
                    run.started.clone(),
                    format!("{}@{}", run.user, run.host),
                    releases(run),
                    run.procedure.clone().unwrap_or_else(|| "-".to_string()),
                    run.result.to_string(),
                    history::short_duration(Duration::from_secs(run.duration_seconds)),
                    format!(
                        "{}/{}/{}{}",
                        run.counts.run,
                        run.counts.skipped,
                        run.counts.failed,
                        run.plan_steps
                            .map(|steps| format!(" of {steps}"))
                            .unwrap_or_default()
                    ),
                ])?;
            }
            table.finish()?;
            writeln!(stdout, "state directory: {}", directory.display())?;
        }
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `v3.26.4 → v3.29.2`, or `-` when the journal does not say.
fn releases(run: &RunHistory) -> String {
    match (&run.from, &run.to) {
        (Some(from), Some(to)) => format!("{from} → {to}"),
        _ => "-".to_string(),
    }
}

/// `upgrade status RUN` for a run of the journal that is not the checkpoint's: its steps in plan
/// order (the plan is stored under its digest in the state directory), each as the journal left it.
pub fn status_of_run(
    context: &Context,
    directory: &Path,
    given: &str,
    output: StatusFormat,
) -> anyhow::Result<ExitCode> {
    let history = read(context, directory)?;
    let run = history.find(given)?;
    let plan = CheckpointStore::new(directory.to_path_buf(), None).stored_plan(&run.plan_digest);
    let steps = steps_in_plan_order(run, plan.as_ref());
    let mut stdout = context.printer.stdout();
    match output {
        StatusFormat::Json => {
            let value = serde_json::json!({
                "run": run,
                "steps": steps,
                "plan": plan.as_ref().map(|plan| serde_json::json!({
                    "digest": plan.digest,
                    "procedure": plan.procedure,
                    "from": plan.from,
                    "to": plan.to,
                    "steps": plan.steps.len(),
                })),
                "source": "journal",
                "state_dir": directory.display().to_string(),
            });
            writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
        }
        StatusFormat::Text => print_run(&mut stdout, run, &steps, plan.as_ref(), directory)?,
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The plan's steps with what the journal says of each (`pending` when the run never reached it);
/// without the plan, the steps the journal names.
fn steps_in_plan_order(run: &RunHistory, plan: Option<&Plan>) -> Vec<StepHistory> {
    let Some(plan) = plan else {
        return run.steps.clone();
    };
    plan.steps
        .iter()
        .map(|planned| {
            run.steps
                .iter()
                .find(|step| step.id == planned.id)
                .cloned()
                .unwrap_or_else(|| {
                    let action = Some(planned.action.name().to_string());
                    StepHistory::new(&planned.id, action, StepState::Pending)
                })
        })
        .collect()
}

fn print_run(
    out: &mut dyn Write,
    run: &RunHistory,
    steps: &[StepHistory],
    plan: Option<&Plan>,
    directory: &Path,
) -> std::io::Result<()> {
    writeln!(
        out,
        "run:      {} — {} (from the journal)",
        run.run_id, run.result
    )?;
    if let Some(rollback) = &run.rollback {
        writeln!(
            out,
            "rollback: run {} — {}",
            rollback.run_id, rollback.result
        )?;
    }
    if let Some(target) = &run.rolls_back {
        writeln!(out, "rolls back: run {target}")?;
    }
    let total = plan.map(|plan| plan.steps.len()).or(run.plan_steps);
    writeln!(
        out,
        "plan:     {} ({} {}{})",
        run.plan_digest,
        run.procedure.as_deref().unwrap_or("-"),
        releases(run),
        total
            .map(|steps| format!(", {steps} steps"))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "started:  {} by {}@{}",
        run.started, run.user, run.host
    )?;
    writeln!(
        out,
        "ended:    {} ({}, {} process(es))",
        run.finished,
        history::short_duration(Duration::from_secs(run.duration_seconds)),
        run.processes
    )?;
    writeln!(
        out,
        "steps:    {} run, {} skipped, {} failed{}",
        run.counts.run,
        run.counts.skipped,
        run.counts.failed,
        total
            .map(|steps| format!(" of {steps}"))
            .unwrap_or_default()
    )?;
    if plan.is_none() {
        writeln!(
            out,
            "          (the plan is no longer stored in `{}`: only the steps the run reached are listed)",
            directory.display()
        )?;
    }
    let rows = steps.iter().map(|step| {
        let detail = step.error.as_deref().or(step.summary.as_deref());
        (step.state, step.id.as_str(), detail)
    });
    write_step_lines(out, rows)?;
    writeln!(out, "state directory: {}", directory.display())
}
