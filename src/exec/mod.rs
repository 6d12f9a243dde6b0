//! The executor: the one place plans run, for `netctl upgrade apply` and for every mutating command.
//!
//! [`Executor::apply`] runs a many-step plan under a lock (an etcd lease or a Kubernetes Lease with
//! the holder's identity), writes a checkpoint after every step (atomically, mirrored into the
//! datastore), appends to a journal, shows progress, retries steps that declare `retry`, stops
//! cleanly at human gates when no one can answer, and resumes an interrupted run.
//! [`Executor::run_one`] runs a one-step plan (`Plan::single`: `create`, `apply`, `label`, `node run`,
//! ...) through the same step loop and the same dry run, without lock or checkpoint.
//!
//! This file is the front: the modes and options of a run and the [`Executor`] that takes them. The
//! rooms behind it: `step.rs` (the one step loop: attempt, backoff, journal, outcome), `execute.rs`
//! (running a plan for real), `start.rs` (what a run decides before its books: the window's first
//! verdict, the lock and its takeover; the hooks told how it ended), `run.rs` (a run's books),
//! `dry_run.rs` (the one dry run),
//! `resume.rs` (how a run begins and resumes), `gate.rs` (human gates), `history.rs`,
//! `estimate.rs`, `window.rs` and `hooks.rs` (runs nobody watches), `error.rs`, `crash_hook.rs`
//! (for tests), and `actions/` (what a step does). It does not plan (see `plan/`), parse flags (see
//! `cli/`) or know etcd (see `datastore::coordination`).

pub mod actions;
pub mod checkpoint;
mod clock;
mod crash_hook;
mod dry_run;
mod error;
pub mod estimate;
mod execute;
mod gate;
pub mod history;
pub mod hooks;
pub mod interrupt;
pub mod journal;
pub mod lock;
pub mod preflight;
pub mod progress;
mod resume;
mod run;
mod signal;
pub mod stale;
mod start;
mod step;
mod verification;
pub mod window;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::Environment;
use crate::datastore::Datastore;
use crate::datastore::coordination::Coordination;
use crate::listing::Limit;
use crate::output::Printer;
use crate::plan::{FactError, Facts, Plan, discover_cluster_facts, discover_facts};
use crate::release::ApiRelease;

use actions::pause::Interaction;
use actions::{Context, Outcome, WriteSemantics};
use checkpoint::CheckpointStore;
use lock::{Holder, RunLock};
use progress::{Progress, ProgressMode};
use resume::Begin;
use start::{Starting, notify_end};

pub use clock::now_rfc3339;
pub use crash_hook::{CRASH_HOOK_VARIABLE, CrashPoint, CrashWhen, InvalidCrashHook};
pub use dry_run::{StepPreview, WritePreview};
pub use error::ExecError;

/// Whether to change anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Walk the plan and say what would happen; change nothing.
    DryRun,
    Execute,
}

/// Whether gates and irreversible steps ask first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    Ask,
    /// `--yes`: every gate and irreversible step is approved.
    AssumeYes,
}

/// How a run begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMode {
    /// A new run; refused while an unfinished run's checkpoint exists.
    New,
    /// Continue the run in the checkpoint.
    Resume,
    /// A new run even though an unfinished checkpoint exists (it is replaced; the journal keeps it).
    Discard,
}

/// How `upgrade apply` runs.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    pub mode: RunMode,
    pub start: StartMode,
    pub confirmation: Confirmation,
    pub interaction: Interaction,
    pub progress: ProgressMode,
    /// `--approve STEP`: gates approved in advance.
    pub approved: BTreeSet<String>,
    /// `--rerun STEP`: interrupted steps the operator says may run again.
    pub rerun: BTreeSet<String>,
    /// `--skip STEP`: steps the operator did by hand (or decided against).
    pub skip: BTreeSet<String>,
    pub state_dir: PathBuf,
    pub mirror_dir: Option<PathBuf>,
    pub lock_ttl: Duration,
    pub crash_point: Option<CrashPoint>,
    /// `--repair`: on resume, run again the completed steps whose postcondition no longer holds.
    pub repair: bool,
    /// netctl's own environment, which programs of `exec` steps inherit: where the secrets a plan
    /// keeps only by name come from.
    pub environment: Environment,
    /// `--skip-preflight CHECK`: pre-flight checks the operator passes (journaled).
    pub skip_preflight: BTreeSet<preflight::Check>,
    /// `--etcd-quota-bytes`: the etcd members' quota, for etcd that does not report it.
    pub etcd_quota_bytes: Option<u64>,
    /// Without a terminal, a wait prints a line at least this often (`--progress-interval`).
    pub progress_interval: Duration,
    /// `--on-gate`, `--on-failure`, `--on-finish`: commands told about the run (never in a dry run).
    pub hooks: hooks::Hooks,
    /// `--deadline`, `--window`: when the maintenance window ends.
    pub window: Option<window::Window>,
    /// Whether a new run backs the datastore up into the state directory before its first write
    /// (`--no-backup`: not, journaled).
    pub backup: BackupChoice,
}

/// Whether `upgrade apply` takes a backup before its first write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackupChoice {
    /// Into `<state dir>/backups/<run id>.jsonl` (`datastore/backup.rs`), before the first step of
    /// a new run (a resumed run has its backup from when it started).
    #[default]
    Take,
    /// `--no-backup`.
    Skip,
}

/// Where a run's backup goes in the state directory.
pub fn backup_path(state_dir: &std::path::Path, run_id: &str) -> PathBuf {
    state_dir.join("backups").join(format!("{run_id}.jsonl"))
}

impl ApplyOptions {
    /// What the pre-flight is told; it names nodes as `listing` says (the printer's limit).
    pub fn preflight_options(&self, listing: Limit) -> preflight::PreflightOptions {
        preflight::PreflightOptions {
            skip: self.skip_preflight.clone(),
            etcd_quota_bytes: self.etcd_quota_bytes,
            listing,
            own_lock: false,
        }
    }
}

/// How a one-step plan runs.
#[derive(Debug, Clone, Default)]
pub struct RunOneOptions {
    pub semantics: WriteSemantics,
    /// Append to this journal when given.
    pub journal: Option<PathBuf>,
}

impl RunOneOptions {
    /// Where a `fetch` would write: beside the journal, else the working directory.
    fn files_dir(&self) -> PathBuf {
        self.journal
            .as_ref()
            .and_then(|path| path.parent())
            .map(|parent| parent.join(checkpoint::FILES_DIR))
            .unwrap_or_else(|| PathBuf::from("."))
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub run_id: String,
    pub steps: usize,
    /// Completed steps run again by `--repair` because their postcondition no longer held.
    pub repaired: Vec<String>,
}

/// Runs plans.
pub struct Executor {
    /// The datastore resource actions work on; `None` for a plan that needs none (`node run`).
    datastore: Option<Arc<dyn Datastore>>,
    coordination: Option<Arc<dyn Coordination>>,
    holder: Holder,
    /// The Kubernetes API client for `kube.*` actions, when a cluster is configured.
    kubernetes: Option<kube::Client>,
    /// The release resource documents are validated for (`--release`); else the cluster's.
    release: Option<ApiRelease>,
    /// Where the run's progress, warnings, findings and questions go.
    printer: Printer,
}

impl Executor {
    /// An executor over a datastore; `coordination` (the same datastore) enables the lock and the
    /// checkpoint mirror.
    pub fn new(
        datastore: Arc<dyn Datastore>,
        coordination: Option<Arc<dyn Coordination>>,
        holder: Holder,
    ) -> Executor {
        Executor {
            datastore: Some(datastore),
            coordination,
            holder,
            kubernetes: None,
            release: None,
            printer: Printer::default(),
        }
    }

    /// An executor for plans that touch no datastore (`node run`); a resource action fails.
    pub fn without_datastore(holder: Holder) -> Executor {
        Executor {
            datastore: None,
            coordination: None,
            holder,
            kubernetes: None,
            release: None,
            printer: Printer::default(),
        }
    }

    /// Gives `kube.*` actions a Kubernetes API client; without one they are only described.
    pub fn with_kubernetes(mut self, client: Option<kube::Client>) -> Executor {
        self.kubernetes = client;
        self
    }

    /// Talks through `printer` (the command's): progress, warnings, pre-flight findings and the
    /// questions of gates. Without it, the process's streams at the default verbosity.
    pub fn with_printer(mut self, printer: Printer) -> Executor {
        self.printer = printer;
        self
    }

    /// Validates resource documents for `release` instead of the cluster's (`--release`).
    pub fn with_release(mut self, release: Option<ApiRelease>) -> Executor {
        self.release = release;
        self
    }

    fn context<'a>(
        &'a self,
        facts: &'a Facts,
        files_dir: PathBuf,
        mirror_dir: Option<PathBuf>,
        semantics: WriteSemantics,
        outputs: &'a BTreeMap<String, serde_json::Value>,
        register: Option<&'a str>,
    ) -> Context<'a> {
        Context {
            datastore: self.datastore.as_deref(),
            facts,
            files_dir,
            mirror_dir,
            semantics,
            outputs,
            register,
            recorded_digest: None,
            child_tracking: None,
            kubernetes: self.kubernetes.clone(),
            run_started_at: None,
            run_id: None,
            release: self.release.as_ref(),
            interrupt: None,
            // A run gives its steps its own progress; everything else talks without one.
            progress: Progress::silent(&self.printer),
        }
    }

    /// The datastore, for what only a plan with one needs (facts, the stale-plan check).
    fn datastore(&self, action: &'static str) -> Result<&dyn Datastore, ExecError> {
        self.datastore
            .as_deref()
            .ok_or(ExecError::NoDatastore { action })
    }

    /// The plan's facts with discoverable ones re-read now.
    async fn facts_now(&self, plan: &Plan) -> Result<Facts, ExecError> {
        let discovered = discover_facts(self.datastore("facts")?)
            .await
            .map_err(ExecError::Facts)?;
        Ok(stale::refresh(&plan.facts, &discovered))
    }

    /// Refuses a plan whose digest does not match or whose facts no longer hold.
    pub async fn check_plan(&self, plan: &Plan) -> Result<(), ExecError> {
        if !plan.digest_is_valid() {
            return Err(ExecError::InvalidPlanDigest {
                digest: plan.digest.clone(),
            });
        }
        let mut discovered = discover_facts(self.datastore("facts")?)
            .await
            .map_err(ExecError::Facts)?;
        // Facts the plan read from the cluster are read from it again; without a cluster they cannot
        // be checked, and a plan is not run on facts nobody checked.
        if let Some(fact) = stale::needs_cluster(&plan.facts) {
            let Some(client) = &self.kubernetes else {
                return Err(ExecError::ClusterFactsUnchecked { fact });
            };
            discovered.cluster =
                Some(
                    discover_cluster_facts(client)
                        .await
                        .map_err(|error| match error {
                            // Discovery's own hint is about planning (`--offline`, facts by flag),
                            // which does not apply to a saved plan.
                            FactError::ClusterDiscovery { what, source } => {
                                ExecError::ClusterUnreadable { what, source }
                            }
                            other => ExecError::Facts(other),
                        })?,
                );
        }
        if let Some(stale) = stale::first_stale_fact(&plan.facts, &discovered) {
            return Err(ExecError::StalePlan {
                fact: stale.fact,
                planned: stale.planned,
                now: stale.now,
            });
        }
        self.check_discovered_edits(plan).await
    }

    /// The objects the plan found the manifest's hand edits in are read again: one changed since
    /// (edited again, deleted, made) makes the discovered overlay wrong, so the plan is stale.
    async fn check_discovered_edits(&self, plan: &Plan) -> Result<(), ExecError> {
        let compared: Vec<&crate::plan::edit_discovery::LiveObject> = plan
            .manifest_discovery
            .iter()
            .flat_map(|record| &record.live)
            .collect();
        if compared.is_empty() {
            return Ok(());
        }
        let Some(client) = &self.kubernetes else {
            return Err(ExecError::ClusterFactsUnchecked {
                fact: "manifest_edits",
            });
        };
        let objects: Vec<serde_json::Value> = compared
            .iter()
            .map(|object| {
                serde_json::json!({"apiVersion": object.api_version, "kind": object.kind,
                    "metadata": {"name": object.name, "namespace": object.namespace}})
            })
            .collect();
        let live = crate::plan::read_live_objects(client, &objects)
            .await
            .map_err(|error| match error {
                FactError::ClusterDiscovery { what, source } => {
                    ExecError::ClusterUnreadable { what, source }
                }
                other => ExecError::Facts(other),
            })?;
        for (planned, now) in compared.iter().zip(&live) {
            let now = now.as_ref().map_or_else(
                || "absent".to_string(),
                crate::plan::edit_discovery::live_digest,
            );
            if now != planned.digest {
                return Err(ExecError::EditedSincePlan {
                    object: planned.label(),
                    planned: planned.digest.clone(),
                    now,
                });
            }
        }
        Ok(())
    }

    /// Runs (or dry-runs) an upgrade plan. `plan` may be `None` only with [`StartMode::Resume`], which
    /// then continues the checkpoint's own plan. The dry-run transcript goes to `transcript`.
    pub async fn apply(
        &self,
        plan: Option<Plan>,
        options: &ApplyOptions,
        transcript: &mut dyn Write,
    ) -> Result<RunReport, ExecError> {
        let notifier = Arc::new(hooks::Notifier::new(
            options.hooks.clone(),
            crate::config::environment_without_datastore_access(&options.environment),
            &options.state_dir,
            &self.holder,
            &self.printer,
        ));
        if let Some(plan) = &plan {
            notifier.plan(plan);
        }
        self.apply_notified(plan, options, transcript, notifier)
            .await
    }

    async fn apply_notified(
        &self,
        plan: Option<Plan>,
        options: &ApplyOptions,
        transcript: &mut dyn Write,
        notifier: Arc<hooks::Notifier>,
    ) -> Result<RunReport, ExecError> {
        // A run refused before it began is a failure the hooks hear of too.
        let refused = |error: ExecError| {
            let notifier = notifier.clone();
            async move {
                match options.mode {
                    RunMode::Execute => notify_end(&notifier, Err(error)).await,
                    RunMode::DryRun => Err(error),
                }
            }
        };
        // A new run's pre-flight comes before anything is written, the lock included; a resume's
        // runs once the checkpoint (and so the plan) is read, under the lock.
        let mut skipped_steps = Vec::new();
        if options.mode == RunMode::Execute
            && options.start != StartMode::Resume
            && let Some(plan) = &plan
        {
            skipped_steps = match self
                .preflight(
                    plan.steps.iter().collect(),
                    &options.preflight_options(self.printer.listing()),
                )
                .await
            {
                Ok(skipped) => skipped,
                Err(error) => return refused(error).await,
            };
        }
        // What a resume continues, read before anything is written (reads only); `None` when it
        // cannot be read, and then the resume reports why once it holds the lock.
        let existing = match (options.start, options.mode) {
            (StartMode::Resume, RunMode::Execute) => {
                CheckpointStore::new(options.state_dir.clone(), self.coordination.clone())
                    .load_latest()
                    .await
                    .ok()
                    .flatten()
            }
            _ => None,
        };
        // A window that cannot hold the first segment refuses the run before its first write.
        let estimates = match self
            .check_first_segment(plan.as_ref(), existing.as_ref(), options)
            .await
        {
            Ok(estimates) => estimates,
            Err(error) => return refused(error).await,
        };
        // The lock comes first: while another run is under way, who runs it is the answer that
        // matters, not what its checkpoint says. A dry-run takes no lock and writes nothing.
        let run_id = match (options.mode, options.start, &existing, &plan) {
            (RunMode::DryRun, _, _, _) => None,
            (_, StartMode::Resume, existing, _) => existing
                .as_ref()
                .map(|saved| saved.checkpoint.run_id.clone()),
            (_, _, _, Some(_)) => Some(uuid::Uuid::new_v4().to_string()),
            (_, _, _, None) => None,
        };
        let (lock, taken_over) = match (&self.coordination, options.mode) {
            (Some(coordination), RunMode::Execute) => {
                match self.lock(coordination, options, run_id.clone()).await {
                    Ok((lock, taken_over)) => (Some(lock), taken_over),
                    Err(error) => return refused(error).await,
                }
            }
            _ => (None, None),
        };
        let starting = Starting {
            skipped_steps,
            run_id,
            taken_over,
            notifier: notifier.clone(),
            estimates,
        };
        let result = self
            .apply_locked(plan, options, transcript, lock.as_ref(), starting)
            .await;
        if let Some(lock) = lock {
            let released = lock.release().await;
            if let (Ok(_), Err(error)) = (&result, released) {
                self.printer.warn(format!(
                    "{error}; it expires by itself when its lease runs out"
                ));
            }
        }
        // After the lock is released, so a hook may look at the run (`upgrade status`).
        match options.mode {
            RunMode::Execute => notify_end(&notifier, result).await,
            RunMode::DryRun => result,
        }
    }

    async fn apply_locked(
        &self,
        plan: Option<Plan>,
        options: &ApplyOptions,
        transcript: &mut dyn Write,
        lock: Option<&RunLock>,
        mut starting: Starting,
    ) -> Result<RunReport, ExecError> {
        let store = CheckpointStore::new(options.state_dir.clone(), self.coordination.clone());
        let existing = match options.start {
            StartMode::Resume | StartMode::New => store.load_latest().await?,
            StartMode::Discard => None,
        };
        let (plan, resume_from) =
            match resume::begin(options.start, plan, existing, &options.state_dir)? {
                Begin::Resume(plan, checkpoint) => (plan, Some(*checkpoint)),
                Begin::New(plan) => {
                    self.check_plan(&plan).await?;
                    (plan, None)
                }
            };
        starting.notifier.plan(&plan);
        resume::check_step_flags(&plan, options)?;
        if options.mode == RunMode::Execute {
            check_inherited_secrets(&plan, &options.environment)?;
        }
        if let (RunMode::Execute, Some(checkpoint)) = (options.mode, &resume_from) {
            let remaining = plan
                .steps
                .iter()
                .zip(&checkpoint.steps)
                .filter(|(_, record)| !record.state.is_done())
                .map(|(step, _)| step)
                .collect();
            let mut preflight_options = options.preflight_options(self.printer.listing());
            preflight_options.own_lock =
                plan.steps
                    .iter()
                    .zip(&checkpoint.steps)
                    .any(|(step, record)| {
                        // Running: killed after the lock was taken, before it was recorded.
                        matches!(
                            record.state,
                            checkpoint::StepState::Running | checkpoint::StepState::Succeeded
                        ) && matches!(&step.action, crate::plan::Action::DatastoreLock(lock)
                            if lock.datastore == crate::plan::action::DatastoreTarget::Configured)
                    });
            starting.skipped_steps = self.preflight(remaining, &preflight_options).await?;
        }
        match options.mode {
            RunMode::DryRun => {
                self.dry_run(&plan, resume_from.as_ref(), options, transcript)
                    .await
            }
            RunMode::Execute => {
                self.execute(plan, resume_from, options, store, lock, starting)
                    .await
            }
        }
    }

    /// The pre-flight of the steps a run is about to take; prints every finding, refuses on a
    /// failure, and returns the steps the run is to skip (their type is gone from the cluster).
    async fn preflight(
        &self,
        steps: Vec<&crate::plan::PlannedStep>,
        options: &preflight::PreflightOptions,
    ) -> Result<Vec<preflight::SkippedStep>, ExecError> {
        let Some(report) = self.preflight_report(steps, options).await else {
            return Ok(Vec::new());
        };
        if report.failures().next().is_some() {
            return Err(preflight::PreflightFailed { report }.into());
        }
        Ok(report.skipped_steps)
    }

    /// The pre-flight's checks (reads only), each finding printed; `None` without a datastore. A
    /// run refuses on a failure ([`Executor::preflight`]); a dry run reports it and goes on.
    async fn preflight_report(
        &self,
        steps: Vec<&crate::plan::PlannedStep>,
        options: &preflight::PreflightOptions,
    ) -> Option<preflight::PreflightReport> {
        let store = self.datastore.as_ref()?;
        let report =
            preflight::preflight(store.as_ref(), self.kubernetes.as_ref(), &steps, options).await;
        for line in report.lines() {
            self.printer.info(line);
        }
        Some(report)
    }

    /// Runs a one-step plan (see `Plan::single`). In dry-run the transcript goes to `transcript`.
    pub async fn run_one(
        &self,
        plan: &Plan,
        mode: RunMode,
        options: &RunOneOptions,
        transcript: &mut dyn Write,
    ) -> Result<Outcome, ExecError> {
        let [step] = plan.steps.as_slice() else {
            return Err(ExecError::NotSingleStep {
                count: plan.steps.len(),
            });
        };
        match mode {
            RunMode::DryRun => self.dry_run_one(plan, step, options, transcript).await,
            RunMode::Execute => self.execute_one(plan, step, options).await,
        }
    }
}

/// Refuses a run whose programs take a secret from netctl's environment when it is not set there:
/// the plan keeps only the variable's name (see `redaction.rs`).
fn check_inherited_secrets(plan: &Plan, environment: &Environment) -> Result<(), ExecError> {
    for step in &plan.steps {
        if let Some(variable) = step
            .action
            .inherited_secrets()
            .find(|name| environment.exact(name).is_none())
        {
            return Err(ExecError::SecretNotInEnvironment {
                step: step.id.clone(),
                variable: variable.to_string(),
            });
        }
    }
    Ok(())
}

/// Upgrade plans are resumable, so a delete that finds nothing counts as done (a re-run after a crash
/// must not fail on its own earlier effect). A create that finds its resource still fails: whether
/// that is our own earlier effect is what the step's `verify` decides on resume.
fn plan_semantics() -> WriteSemantics {
    WriteSemantics {
        create_existing: actions::ExistingPolicy::Fail,
        delete_missing: actions::ExistingPolicy::Skip,
    }
}
