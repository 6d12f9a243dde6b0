//! `netctl runbook lint|render|list`: reviewing runbook files without a cluster.
//!
//! `lint` reports findings as `file:line:col: severity[code]: message` and fails on any error;
//! `render` prints the fully rendered steps a plan would run (stable YAML, for diffs in reviews);
//! `list` shows the runbooks of the set. The work is in `plan::lint` and `plan::request`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::Context;
use super::args::{ManifestEditArgs, TargetArgs};
use crate::errors::Hint;
use crate::exec::actions::fetch::ManifestDownloads;
use crate::output::{Printer, TableWriter};
use crate::plan::lint::{self, Severity};
use crate::plan::request::FactSources;
use crate::runbook::RunbookSet;

#[derive(Debug, Clone, Subcommand)]
pub enum RunbookCommand {
    /// Check runbook files for errors (default: the built-in runbooks).
    Lint(LintArgs),
    /// Print the fully rendered steps for an upgrade path.
    Render(RenderArgs),
    /// List the runbooks.
    List(ListArgs),
}

pub async fn run(context: &Context, command: RunbookCommand) -> anyhow::Result<ExitCode> {
    let printer = &context.printer;
    match command {
        RunbookCommand::Lint(args) => args.run(printer)?,
        RunbookCommand::Render(args) => args.run(printer).await?,
        RunbookCommand::List(args) => args.run(printer)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The group's help.
pub const EXAMPLES: &str = "\
Examples:
  netctl runbook list
  netctl runbook lint runbooks/
  netctl runbook render --from v3.22.0 --to v3.29.2 --install-method helm";

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  netctl runbook lint                      # the runbooks built into netctl
  netctl runbook lint runbooks/ my-site/   # files under review
Exit status 1 when any finding is an error; each finding names file:line:col and the check.")]
pub struct LintArgs {
    /// Runbook files or directories; the files beside each are its assets and catalog.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// `runbook lint` found errors; the findings were printed.
#[derive(Debug, thiserror::Error)]
#[error("{errors} error(s) in runbooks")]
pub struct LintFailed {
    pub errors: usize,
}

impl Hint for LintFailed {
    fn hint(&self) -> Option<String> {
        Some("each finding names the file, line and check".into())
    }
}

impl LintArgs {
    pub fn run(&self, printer: &Printer) -> anyhow::Result<()> {
        let findings = if self.paths.is_empty() {
            lint::lint_embedded()
        } else {
            lint::lint_paths(&self.paths)?
        };
        // Past twenty findings the rest are counted by check (`--all-errors` lists them, and
        // `--errors-file` has them all).
        printer.list_lines(&findings)?;
        let errors = findings
            .iter()
            .filter(|finding| finding.severity == Severity::Error)
            .count();
        if errors > 0 {
            return Err(LintFailed { errors }.into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  netctl runbook render --from v3.22.0 --to v3.29.2 --install-method helm
  # review a change to the runbooks: render both versions for the same edge and diff them
  netctl runbook render --from v3.26.0 --to v3.29.2 --install-method operator --runbooks old/ > before.txt
  netctl runbook render --from v3.26.0 --to v3.29.2 --install-method operator --runbooks runbooks/ > after.txt
  diff before.txt after.txt")]
pub struct RenderArgs {
    #[command(flatten)]
    pub target: TargetArgs,
}

impl RenderArgs {
    /// Renders offline: every fact comes from flags or defaults.
    pub async fn run(&self, printer: &Printer) -> anyhow::Result<()> {
        let request =
            self.target
                .request(&ManifestEditArgs::default(), true, Default::default())?;
        let plan = request
            .plan(FactSources::default(), &ManifestDownloads { mirror: None })
            .await?;
        // Through JSON first, so enums print as plain maps (`source: {file: ..}`), not YAML tags.
        let text = crate::yaml::to_string(&serde_json::to_value(&plan.steps)?)?;
        printer.data(&text)?;
        Ok(())
    }
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Examples:\n  netctl runbook list\n  netctl runbook list --runbooks ./runbooks"
)]
pub struct ListArgs {
    /// Use the runbooks of this directory instead of the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub runbooks: Option<PathBuf>,
}

impl ListArgs {
    pub fn run(&self, printer: &Printer) -> anyhow::Result<()> {
        let set = RunbookSet::load(self.runbooks.as_deref())?;
        let headings = [
            "NAME",
            "PROCEDURE",
            "PHASE",
            "APPLIES TO",
            "STEPS",
            "DESCRIPTION",
        ];
        let mut table = TableWriter::trimmed(printer.stdout(), headings.map(String::from).to_vec());
        for loaded in &set.runbooks {
            let spec = &loaded.runbook.spec;
            table.push_row(vec![
                loaded.runbook.metadata.name.clone(),
                spec.procedure.clone(),
                spec.phase.to_string(),
                applies_to(&loaded.runbook.spec),
                spec.steps.len().to_string(),
                loaded.runbook.metadata.description.clone(),
            ])?;
        }
        table.finish()?.flush()?;
        Ok(())
    }
}

/// When a runbook is part of a plan, in a few words (`edge helm-ownership, helm`, `all`).
fn applies_to(spec: &crate::runbook::RunbookSpec) -> String {
    let applies = &spec.applies_to;
    let mut conditions = Vec::new();
    if let Some(edge) = &applies.edge {
        conditions.push(format!("edge {edge}"));
    }
    if let Some(from) = &applies.from {
        conditions.push(format!("from {from}"));
    }
    if let Some(to) = &applies.to {
        conditions.push(format!("to {to}"));
    }
    let either = |values: Vec<String>| (!values.is_empty()).then(|| values.join("|"));
    conditions.extend(either(
        applies
            .install_methods
            .iter()
            .map(ToString::to_string)
            .collect(),
    ));
    conditions.extend(either(
        applies
            .datastore_types
            .iter()
            .map(ToString::to_string)
            .collect(),
    ));
    if spec.when.is_some() {
        conditions.push("when …".to_string());
    }
    if conditions.is_empty() {
        conditions.push("all".to_string());
    }
    conditions.join(", ")
}
