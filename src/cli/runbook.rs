//! `netctl runbook lint|render|list`: reviewing runbook files without a cluster.
//!
//! `lint` reports findings as `file:line:col: severity[code]: message` and fails on any error;
//! `render` prints the fully rendered steps a plan would run (stable YAML, for diffs in reviews);
//! `list` shows the runbooks of the set. The work is in `runbook::lint` and `plan::resolve`.

use std::io::Write as _;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::upgrade::FactArgs;
use crate::plan::{PlanRequest, plan_upgrade};
use crate::runbook::lint::{self, Severity};
use crate::runbook::{RunbookSet, UPGRADE_PROCEDURE};

#[derive(Debug, Clone, Subcommand)]
pub enum RunbookCommand {
    /// Check runbook files for errors (default: the built-in runbooks).
    Lint(LintArgs),
    /// Print the fully rendered steps for an upgrade path.
    Render(RenderArgs),
    /// List the runbooks.
    List(ListArgs),
}

impl RunbookCommand {
    pub fn run(&self) -> anyhow::Result<()> {
        match self {
            RunbookCommand::Lint(args) => args.run(),
            RunbookCommand::Render(args) => args.run(),
            RunbookCommand::List(args) => args.run(),
        }
    }
}

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
#[error("{errors} error(s) in runbooks\nhint: each finding above names the file, line and check")]
pub struct LintFailed {
    pub errors: usize,
}

impl LintArgs {
    pub fn run(&self) -> anyhow::Result<()> {
        let findings = if self.paths.is_empty() {
            lint::lint_embedded()
        } else {
            lint::lint_paths(&self.paths)?
        };
        let mut stdout = std::io::stdout().lock();
        for finding in &findings {
            writeln!(stdout, "{finding}")?;
        }
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
    /// The target release.
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    #[arg(long, default_value = UPGRADE_PROCEDURE)]
    pub procedure: String,
    #[command(flatten)]
    pub facts: FactArgs,
}

impl RenderArgs {
    /// Renders offline: every fact comes from flags or defaults.
    pub fn run(&self) -> anyhow::Result<()> {
        let runbooks = RunbookSet::load(self.facts.runbooks.as_deref())?;
        let facts = crate::plan::Facts::assemble(
            &crate::plan::DiscoveredFacts::default(),
            &self.facts.overrides()?,
        )?;
        let plan = plan_upgrade(
            &runbooks,
            &PlanRequest {
                procedure: self.procedure.clone(),
                to: self.to.clone(),
                facts,
            },
        )?;
        let text = crate::yaml::to_string(&plan.steps)?;
        std::io::stdout().lock().write_all(text.as_bytes())?;
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
    pub fn run(&self) -> anyhow::Result<()> {
        let set = RunbookSet::load(self.runbooks.as_deref())?;
        let mut rows = vec![[
            "NAME".to_string(),
            "PROCEDURE".to_string(),
            "PHASE".to_string(),
            "APPLIES TO".to_string(),
            "STEPS".to_string(),
            "DESCRIPTION".to_string(),
        ]];
        for loaded in &set.runbooks {
            let spec = &loaded.runbook.spec;
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
            if !applies.install_methods.is_empty() {
                let methods: Vec<String> = applies
                    .install_methods
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                conditions.push(methods.join("|"));
            }
            if !applies.datastore_types.is_empty() {
                let types: Vec<String> = applies
                    .datastore_types
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                conditions.push(types.join("|"));
            }
            if spec.when.is_some() {
                conditions.push("when …".to_string());
            }
            if conditions.is_empty() {
                conditions.push("all".to_string());
            }
            rows.push([
                loaded.runbook.metadata.name.clone(),
                spec.procedure.clone(),
                spec.phase.to_string(),
                conditions.join(", "),
                spec.steps.len().to_string(),
                loaded.runbook.metadata.description.clone(),
            ]);
        }
        let mut widths = [0usize; 6];
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut stdout = std::io::stdout().lock();
        for row in rows {
            let mut line = String::new();
            for (index, cell) in row.iter().enumerate() {
                if index + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:width$}  ", width = widths[index]));
                }
            }
            writeln!(stdout, "{}", line.trim_end())?;
        }
        Ok(())
    }
}
