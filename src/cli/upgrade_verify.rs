//! `netctl upgrade verify`: the verification every upgrade plan ends with, on its own — against
//! the baseline the last run in the state directory recorded (its target version, install method
//! and the kinds its steps changed), or, without one, the absolute checks (every BGP session
//! established, no IPAM problem, node agents Ready at `--to` or the installed version). A one-step
//! plan (`upgrade.verify`) through the executor: `--dry-run` says what it would read.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use crate::exec::actions::StepError;
use crate::exec::actions::verify::VerifyError;
use crate::exec::checkpoint::CheckpointStore;
use crate::exec::lock::Holder;
use crate::exec::{ExecError, Executor, RunMode, RunOneOptions};
use crate::plan::action::{BASELINE_OUTPUT, HumanDuration, UpgradeVerify, VerifyScope};
use crate::plan::verification::VERIFY_STEP;
use crate::plan::{Action, InstallMethod, Plan, discover_cluster_facts, discover_facts};

pub const EXAMPLES: &str = "\
Examples:
  netctl upgrade verify                          # against the baseline of the last run
  netctl upgrade verify --state-dir /var/lib/netctl/upgrade
  netctl upgrade verify --to v3.29.2 -o json     # no run recorded: the absolute checks
  netctl upgrade verify --dry-run
Checks: node agents Ready at the target version (calico-node pods, a cluster is needed); BGP
sessions per BGP node, as `netctl node status --all` reads them (as many as in the baseline; without
one, all established); no IPAM problem `ipam check` did not find in the baseline (without one: none);
each kind's count and digest as in the baseline unless a step of the run writes that kind; for
operator and Helm installs, every TigeraStatus Available. Exit 0 when nothing failed, 1 otherwise
(the report is on stdout either way).";

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The state directory of the run whose baseline to compare with [default: as for `upgrade apply`]
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// The release the node agents must run [default: the run's target, else the installed release]
    #[arg(long, value_name = "VERSION")]
    to: Option<String>,
    /// Check without the recorded baseline
    #[arg(long)]
    no_baseline: bool,
    /// How long each BGP node has to report its sessions
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = super::args::parse_duration)]
    timeout: std::time::Duration,
    /// Say what would be read; create no status object
    #[arg(long)]
    dry_run: bool,
    /// Output format of the report
    #[arg(short, long, value_enum, default_value_t = VerifyFormat::Text)]
    output: VerifyFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VerifyFormat {
    Text,
    Json,
}

pub async fn verify(context: &Context, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let store = context.datastore().await?;
    let kubernetes = context.kubernetes_client().await?;
    let directory = super::upgrade_apply::state_dir(context, args.state_dir.clone())?;
    let saved = match args.no_baseline {
        true => None,
        false => CheckpointStore::new(directory, None).load_latest().await?,
    };
    let recorded = saved.as_ref().and_then(|saved| {
        let step = saved
            .plan
            .steps
            .iter()
            .find(|step| step.id == VERIFY_STEP)?;
        let Action::UpgradeVerify(verify) = &step.action else {
            return None;
        };
        let baseline = saved.checkpoint.outputs.get(BASELINE_OUTPUT)?;
        Some((
            verify.clone(),
            serde_json::from_value(baseline.clone()).ok()?,
        ))
    });
    let action = match recorded {
        Some((mut verify, baseline)) => {
            verify.baseline_output = None;
            verify.baseline = Some(Box::new(baseline));
            verify.scope.bgp_timeout = HumanDuration(args.timeout);
            if let Some(to) = &args.to {
                verify.version = to.clone();
            }
            verify
        }
        None => {
            let version = match &args.to {
                Some(to) => to.clone(),
                None => discover_facts(store.as_ref())
                    .await?
                    .installed_version
                    .map(|release| release.to_string())
                    .ok_or(UpgradeVerifyError::NoVersion)?,
            };
            let operator = match &kubernetes {
                Some(client) => matches!(
                    discover_cluster_facts(client).await?.install_method,
                    Some(InstallMethod::Operator | InstallMethod::Helm)
                ),
                None => false,
            };
            UpgradeVerify {
                version,
                scope: VerifyScope {
                    operator,
                    bgp_timeout: HumanDuration(args.timeout),
                },
                changed_by: Default::default(),
                baseline_output: None,
                baseline: None,
                nodes: Vec::new(),
            }
        }
    };
    let description = format!("verify the cluster at {}", action.version);
    let plan = Plan::single("upgrade verify", description, Action::UpgradeVerify(action));
    let mode = match args.dry_run {
        true => RunMode::DryRun,
        false => RunMode::Execute,
    };
    let executor = Executor::new(store, None, Holder::current())
        .with_kubernetes(kubernetes)
        .with_printer(context.printer.clone());
    let mut stdout = context.printer.stdout();
    let result = executor
        .run_one(&plan, mode, &RunOneOptions::default(), &mut stdout)
        .await;
    match result {
        Ok(outcome) => {
            match (args.output, outcome.output) {
                (VerifyFormat::Json, Some(report)) => {
                    writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?
                }
                _ if mode == RunMode::Execute => {
                    for line in &outcome.transcript {
                        writeln!(stdout, "{line}")?;
                    }
                }
                _ => {}
            }
            stdout.flush()?;
            if mode == RunMode::Execute {
                context.printer.say(outcome.summary);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            if let Some(report) = verification_report(&error) {
                match args.output {
                    VerifyFormat::Json => {
                        writeln!(stdout, "{}", serde_json::to_string_pretty(report)?)?
                    }
                    VerifyFormat::Text => {
                        for line in report.lines() {
                            writeln!(stdout, "{line}")?;
                        }
                    }
                }
                stdout.flush()?;
            }
            Err(error.into())
        }
    }
}

/// The report of a verification that failed.
fn verification_report(
    error: &ExecError,
) -> Option<&crate::exec::actions::verify::compare::Report> {
    let ExecError::StepFailed { source, .. } = error else {
        return None;
    };
    match source.as_ref() {
        StepError::Verify(verify) => VerifyError::failed(verify).map(|failed| &failed.report),
        _ => None,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UpgradeVerifyError {
    #[error(
        "no run is recorded and the installed release is unknown (ClusterInformation `default` has no `calicoVersion`)"
    )]
    NoVersion,
}

impl crate::errors::Hint for UpgradeVerifyError {
    fn hint(&self) -> Option<String> {
        match self {
            UpgradeVerifyError::NoVersion => {
                Some("name the release the node agents must run: `--to v3.29.2`".to_string())
            }
        }
    }
}
