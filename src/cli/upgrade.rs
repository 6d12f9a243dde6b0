//! `netctl upgrade`: the command family, and `upgrade plan` itself.
//!
//! `upgrade plan` only translates: its flags become an [`UpgradeRequest`] (facts by flag over what
//! the configured datastore and cluster show, manifest edits, the runbook set), `plan::request`
//! makes the plan, `plan::render` writes it, and `--out` saves it. `apply`, `status` and `unlock`
//! are in `upgrade_apply.rs`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::Context;
use super::args::{ManifestEditArgs, TargetArgs};
use super::upgrade_apply;
use crate::exec::actions::fetch::ManifestDownloads;
use crate::exec::history::History;
use crate::exec::{estimate, preflight, window};
use crate::exit_code;
use crate::plan::Plan;
use crate::plan::PlanError;
use crate::plan::render::{self, PlanFormat};
use crate::plan::request::{FactSources, RequestError, UpgradeRequest};
use crate::plan::targets;
use crate::runbook::UPGRADE_PROCEDURE;

#[derive(Debug, clap::Subcommand)]
pub enum UpgradeCommand {
    /// Show the steps an upgrade would take (and save them with `--out`); without `--to`, what the
    /// installed release can be upgraded to
    Plan(Box<PlanArgs>),
    /// Run an upgrade plan, with dry-run, checkpoint, resume and a lock
    Apply(Box<upgrade_apply::ApplyArgs>),
    /// Show where the last upgrade run stands (or an earlier one), and who holds the lock
    Status(upgrade_apply::StatusArgs),
    /// List the upgrade runs of the state directory, newest first: who, when, from → to, result
    History(super::upgrade_history::HistoryArgs),
    /// Remove a stuck upgrade lock by its id (see `upgrade status`)
    Unlock(upgrade_apply::UnlockArgs),
    /// Verify the cluster as every plan's last step does: node agents, BGP sessions, IPAM, resources
    #[command(after_help = super::upgrade_verify::EXAMPLES)]
    Verify(super::upgrade_verify::VerifyArgs),
    /// Undo the last run's completed steps, newest first, as a plan of its own (shown first)
    #[command(after_help = super::upgrade_rollback::EXAMPLES)]
    Rollback(super::upgrade_rollback::RollbackArgs),
}

/// Output formats of `upgrade plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanOutput {
    /// A readable tree (default).
    Text,
    /// The plan document, stable and machine-readable.
    Json,
    /// A maintenance checklist for a change ticket.
    Markdown,
    /// The step graph for Graphviz.
    Dot,
    /// The step graph for Mermaid.
    Mermaid,
}

impl From<PlanOutput> for PlanFormat {
    fn from(output: PlanOutput) -> PlanFormat {
        match output {
            PlanOutput::Text => PlanFormat::Text,
            PlanOutput::Json => PlanFormat::Json,
            PlanOutput::Markdown => PlanFormat::Markdown,
            PlanOutput::Dot => PlanFormat::Dot,
            PlanOutput::Mermaid => PlanFormat::Mermaid,
        }
    }
}

/// The group's help: the usual sequence, from plan to a stuck lock.
pub const EXAMPLES: &str = "\
Examples:
  netctl upgrade plan --to v3.29.2 --out plan.json      # review the steps, then run exactly them
  netctl upgrade apply --plan plan.json --dry-run
  netctl upgrade apply --plan plan.json
  netctl upgrade status                                 # where the last run stands, who holds the lock
  netctl upgrade history                                # every run: who, when, from → to, result
  netctl upgrade apply --resume                         # continue after a failure or a gate
  netctl upgrade verify                                 # the last run's verification, again
  netctl upgrade unlock LOCK-ID                         # only when the holder is gone for good";

/// `netctl upgrade plan`
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  netctl upgrade plan                                  # what can I upgrade to? lines, paths, advice
  netctl upgrade plan --to v3.29.2                     # facts read from the configured datastore
  netctl upgrade plan --to v3.29.2 -o markdown > change-ticket.md
  netctl upgrade plan --to v3.29.2 --manifest-overlay my-edits.yaml --out plan.json
      # my-edits.yaml: the hand edits of a manifest install, shown as a diff in the plan:
      #   apiVersion: apps/v1
      #   kind: DaemonSet
      #   metadata: {name: calico-node, namespace: kube-system}
      #   spec:
      #     template:
      #       spec:
      #         containers:
      #         - name: calico-node            # merged by name; so is env
      #           env:
      #           - {name: IP_AUTODETECTION_METHOD, value: interface=eth0}
  netctl upgrade plan --to v3.29.2 --no-manifest-edits  # the manifest was never edited: no gate
  netctl upgrade plan --to v3.27.0 --from v3.20.1 --install-method helm --offline
  netctl upgrade plan --to v3.29.2 --out plan.json     # then: netctl upgrade apply --plan plan.json
  netctl upgrade plan --procedure auto-host-endpoints -o mermaid
  netctl upgrade plan --procedure datastore-migration   # etcd -> Kubernetes datastore (manifest installs)
  netctl upgrade plan --to v3.29.2 --detailed-exitcode >/dev/null; echo $?   # in CI: 0, 1 or 2
  netctl upgrade plan --to v3.29.2 --window 2h          # does each segment fit a 2-hour window?
  netctl upgrade plan --to v3.29.2 --canary 1 --out plan.json   # one node first, a gate, the rest
  netctl upgrade plan --to v3.29.2 --canary-selector 'topology.kubernetes.io/zone=zone-a'

Canary node rollout (`--canary N`, `--canary-selector SELECTOR`), by install method:
  manifest  the DaemonSet is applied with `updateStrategy: OnDelete`; the canaries' pods are
            deleted and replaced node by node, verified (node agent Ready at the target, BGP
            sessions as before), then the gate `canary/approve` (`upgrade apply --resume --approve
            canary/approve`), then the rest node by node, then the DaemonSet's own strategy back
  operator  refused: the operator rolls calico-node from `Installation.spec.nodeUpdateStrategy`,
            which cannot name nodes; set its `rollingUpdate.maxUnavailable` to 1 instead
  helm      refused: the chart's `installation` values reach the same strategy
            (`--set installation.nodeUpdateStrategy.rollingUpdate.maxUnavailable=1`)

Exit codes with `--detailed-exitcode` (Terraform's):
  0   nothing to do: the cluster runs the target already (without `--to`: no newer release;
      `--procedure NAME`: none of its steps would change anything as things stand now)
  1   an error (64 on bad usage)
  2   an upgrade or a fix-up step is pending (without `--to`: a newer release exists)")]
pub struct PlanArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: PlanOutput,
    /// Also save the plan (JSON, with its facts and digest) for `upgrade apply --plan`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Do not contact the datastore: every fact comes from flags and defaults.
    #[arg(long)]
    pub offline: bool,
    #[command(flatten)]
    pub manifest: ManifestEditArgs,
    /// Read manifests for the overlay diff from this directory (`<host>/<path>`), as `upgrade apply`
    #[arg(long, value_name = "DIR")]
    pub mirror_dir: Option<PathBuf>,
    /// The etcd members' `--quota-backend-bytes`, for the pre-flight (etcd before 3.6 does not report it; default 2 GiB)
    #[arg(long, value_name = "BYTES")]
    pub etcd_quota_bytes: Option<u64>,
    /// Exit 0 when there is nothing to do, 2 when steps are pending, 1 on an error (for CI)
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Whose journal the time estimates learn from [default: as for `upgrade apply`]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub window: super::args::WindowArgs,
    #[command(flatten)]
    pub canary: super::args::CanaryArgs,
}

pub async fn run(context: &Context, command: UpgradeCommand) -> anyhow::Result<ExitCode> {
    match command {
        UpgradeCommand::Plan(args) => plan(context, *args).await,
        UpgradeCommand::Apply(args) => upgrade_apply::apply(context, *args).await,
        UpgradeCommand::Status(args) => upgrade_apply::status(context, args).await,
        UpgradeCommand::History(args) => super::upgrade_history::history(context, args),
        UpgradeCommand::Unlock(args) => upgrade_apply::unlock(context, args).await,
        UpgradeCommand::Verify(args) => super::upgrade_verify::verify(context, args).await,
        UpgradeCommand::Rollback(args) => super::upgrade_rollback::rollback(context, args).await,
    }
}

/// `upgrade plan`: plans, saves to `--out`, prints to stdout.
async fn plan(context: &Context, args: PlanArgs) -> anyhow::Result<ExitCode> {
    let mut request =
        args.target
            .request(&args.manifest, args.offline, context.configured_facts())?;
    request.canary = args.canary.request();
    let store = context.datastore_for_facts(args.offline).await?;
    if let Some(store) = &store {
        crate::datastore::readiness::warn_if_locked(store.as_ref(), &context.printer).await;
    }
    let cluster = match args.offline {
        true => None,
        false => context.kubernetes_client().await?,
    };
    let sources = FactSources {
        datastore: store.as_deref(),
        cluster: cluster.as_ref(),
    };
    if request.procedure == UPGRADE_PROCEDURE && request.to.is_none() {
        return survey(context, &args, &request, sources).await;
    }
    let manifests = ManifestDownloads {
        mirror: args.mirror_dir.clone(),
    };
    let plan = match request.plan(sources, &manifests).await {
        Ok(plan) => plan,
        // Asked "is anything pending?", a cluster at the target is the answer "no", not an error.
        Err(RequestError::Plan(PlanError::NotAnUpgrade { from, to }))
            if args.detailed_exitcode && from == to =>
        {
            context.printer.say(format!(
                "nothing to do: the cluster runs {from}, the target"
            ));
            return Ok(ExitCode::from(exit_code::SUCCESS));
        }
        Err(error) => return Err(error.into()),
    };
    // What `upgrade apply` would check before its first write, as things stand now (stderr: talk).
    if let Some(store) = &store {
        let steps: Vec<_> = plan.steps.iter().collect();
        let options = preflight::PreflightOptions {
            etcd_quota_bytes: args.etcd_quota_bytes,
            listing: context.printer.listing(),
            ..Default::default()
        };
        let report = preflight::preflight(store.as_ref(), cluster.as_ref(), &steps, &options).await;
        for line in report.lines() {
            match line.contains(": FAILED: ") {
                true => context.printer.warn(format!(
                    "{line} (`upgrade apply` would stop here before writing anything)"
                )),
                false => context.printer.say(line),
            }
        }
    }
    if let Some(path) = &args.out {
        save_plan(&plan, path)?;
        context.printer.say(format!(
            "saved plan {} to `{}`",
            plan.digest,
            path.display()
        ));
    }
    let mut shown = render::render(&plan, args.output.into());
    // The datastore writes against what is stored now, as the dry run shows them: a preview after
    // the plan's text, never in the plan (its digest, `--out`) — it is stale the moment data changes.
    if let (PlanOutput::Text, Some(store)) = (args.output, &store) {
        let executor =
            crate::exec::Executor::new(store.clone(), None, crate::exec::lock::Holder::current())
                .with_kubernetes(cluster.clone())
                .with_printer(context.printer.clone());
        shown.push_str(&executor.preview_writes(&plan).await?.text());
    }
    // How long each segment between gates should take, from this cluster's earlier runs: also
    // a preview, never part of the plan.
    if args.output == PlanOutput::Text {
        shown.push_str(&estimates(context, &args, &plan, store.as_ref()).await);
    }
    context.printer.data(&shown)?;
    // An upgrade is pending while it has steps; a fix-up procedure only while one of its steps
    // would do something to the cluster as it is now (issue 30 item 5).
    let pending = match (&store, args.detailed_exitcode, request.procedure.as_str()) {
        (Some(store), true, procedure) if procedure != UPGRADE_PROCEDURE => {
            let executor = crate::exec::Executor::new(
                store.clone(),
                None,
                crate::exec::lock::Holder::current(),
            )
            .with_kubernetes(cluster.clone());
            let pending = executor.pending_steps(&plan).await?;
            if pending.is_empty() && !plan.steps.is_empty() {
                context.printer.say(format!(
                    "nothing to do: every step of `{procedure}` would change nothing as things stand now"
                ));
            }
            !pending.is_empty()
        }
        _ => !plan.steps.is_empty(),
    };
    Ok(detailed(args.detailed_exitcode, pending))
}

/// The plan's time estimates per segment (and whether each fits `--deadline`/`--window`), learnt
/// from the earlier runs of this cluster in the state directory's journal.
async fn estimates(
    context: &Context,
    args: &PlanArgs,
    plan: &Plan,
    store: Option<&std::sync::Arc<dyn crate::datastore::Datastore>>,
) -> String {
    let directory = args
        .state_dir
        .clone()
        .or_else(|| crate::exec::checkpoint::default_state_dir(&context.environment));
    let history = directory
        .as_deref()
        .and_then(|directory| History::read(directory).ok())
        .unwrap_or_default();
    let cluster = match store {
        Some(store) => {
            crate::exec::Executor::new(store.clone(), None, crate::exec::lock::Holder::current())
                .cluster_id()
                .await
        }
        None => None,
    };
    let runs = history.runs_of(cluster.as_deref());
    let basis = match (&directory, runs) {
        (Some(directory), 0) => format!(
            "from the step kinds; no earlier run of this cluster in `{}`",
            directory.display()
        ),
        (Some(directory), runs) => format!(
            "from the step kinds and {runs} earlier run(s) of this cluster in `{}`",
            directory.display()
        ),
        (None, _) => "from the step kinds".to_string(),
    };
    let estimates = estimate::estimate_steps(plan, &history, cluster.as_deref());
    window::describe(
        plan,
        &estimates,
        &basis,
        args.window.window().as_ref(),
        std::time::SystemTime::now(),
    )
}

/// The exit code of a plan that was made: with `--detailed-exitcode`, Terraform's 2 when something
/// is pending and 0 when nothing is; success otherwise.
fn detailed(asked: bool, pending: bool) -> ExitCode {
    ExitCode::from(match (asked, pending) {
        (true, true) => exit_code::PENDING,
        _ => exit_code::SUCCESS,
    })
}

/// `upgrade plan` without `--to`: what the installed release can be upgraded to (as `kubeadm
/// upgrade plan`).
async fn survey(
    context: &Context,
    args: &PlanArgs,
    request: &UpgradeRequest,
    sources: FactSources<'_>,
) -> anyhow::Result<ExitCode> {
    let text = match args.output {
        PlanOutput::Text => None,
        PlanOutput::Json => Some(()),
        other => anyhow::bail!(
            "`-o {}` draws a plan, and without `--to` there is none: name the target, e.g. `--to v3.29`",
            other
                .to_possible_value()
                .map(|value| value.get_name().to_string())
                .unwrap_or_default()
        ),
    };
    if args.out.is_some() {
        anyhow::bail!("`--out` saves a plan, and without `--to` there is none: name the target");
    }
    let options = request.survey(sources).await?;
    match text {
        None => context.printer.data(&targets::text(&options))?,
        Some(()) => context
            .printer
            .data(&format!("{}\n", serde_json::to_string_pretty(&options)?))?,
    }
    let pending = options.lines.iter().any(|line| !line.runs.is_empty());
    Ok(detailed(args.detailed_exitcode, pending))
}

/// Writes a plan atomically (temporary file, fsync, rename) so a crash never leaves half a plan.
pub fn save_plan(plan: &Plan, path: &std::path::Path) -> anyhow::Result<()> {
    let text = render::json(plan);
    let temporary = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    };
    write().with_context(|| format!("cannot save the plan to `{}`", path.display()))
}
