//! The executor: the one place plans run, for `netctl upgrade apply` and for every mutating command.
//!
//! [`Executor::apply`] runs a many-step plan under a lock (an etcd lease with the holder's identity),
//! writes a checkpoint after every step (atomically, mirrored into the datastore), appends to a
//! journal, shows progress, retries steps that declare `retry`, stops cleanly at human gates when no
//! one can answer, and resumes an interrupted run: completed steps' postconditions are re-checked and
//! drift reported, and a step caught mid-way is run again only if that is safe. [`Executor::run_one`]
//! runs a one-step plan (`Plan::single`) with the same actions and dry-run, without lock or checkpoint.
//!
//! In [`RunMode::DryRun`] the whole plan is walked and, for every step, exactly what would happen is
//! written to the transcript (stdout): documents, Kubernetes requests, command lines. Nothing is
//! written anywhere — no datastore write, no lock, no checkpoint, no journal, no download.
//!
//! This module does not plan (see `plan/`), parse flags (see `cli/`) or know etcd (see
//! `datastore::coordination`).

pub mod actions;
pub mod checkpoint;
pub mod journal;
pub mod lock;
pub mod progress;
mod single;
pub mod stale;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::config::Environment;
use crate::datastore::Datastore;
use crate::datastore::coordination::Coordination;
use crate::plan::facts::discover_cluster_facts;
use crate::plan::{Action, FactError, Facts, Plan, PlannedStep, discover_facts};

use actions::pause::{self, Interaction};
use actions::{ActionContext, Outcome, StepError, WriteSemantics};
use checkpoint::{Checkpoint, CheckpointError, CheckpointStore, RunState, StepState};
use journal::{Journal, JournalError, JournalEvent};
use lock::{Holder, LockError, RunLock};
use progress::{Progress, ProgressMode};

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

/// The environment variable of the crash hook, for tests only: `<step-id>:<before|after>` makes the
/// process kill itself with SIGKILL just before the step's action runs (after the checkpoint marked it
/// running) or just after it ran (before the checkpoint records it). Not a user feature.
pub const CRASH_HOOK_VARIABLE: &str = "NETCTL_TEST_CRASH_AFTER";

/// When the crash hook fires, relative to a step's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashWhen {
    Before,
    After,
}

/// A test-only kill point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashPoint {
    pub step: String,
    pub when: CrashWhen,
}

impl CrashPoint {
    /// Reads the hook from the environment (see [`CRASH_HOOK_VARIABLE`]).
    pub fn from_environment(environment: &Environment) -> Result<Option<CrashPoint>, ExecError> {
        let Some(value) = environment.exact(CRASH_HOOK_VARIABLE) else {
            return Ok(None);
        };
        let invalid = || ExecError::InvalidCrashHook {
            value: value.to_string(),
        };
        let (step, when) = value.rsplit_once(':').ok_or_else(invalid)?;
        let when = match when {
            "before" => CrashWhen::Before,
            "after" => CrashWhen::After,
            _ => return Err(invalid()),
        };
        Ok(Some(CrashPoint {
            step: step.to_string(),
            when,
        }))
    }

    fn fire_if(point: Option<&CrashPoint>, step: &str, when: CrashWhen) {
        if let Some(point) = point {
            if point.step == step && point.when == when {
                // SIGKILL, exactly what an operator's `kill -9` or the OOM killer does: no destructor,
                // no lease revocation, no final checkpoint. A system call, not the `kill` program,
                // which a minimal system lacks.
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
                std::process::abort();
            }
        }
    }
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
}

/// How a one-step plan runs.
#[derive(Debug, Clone, Default)]
pub struct RunOneOptions {
    pub semantics: WriteSemantics,
    /// Append to this journal when given.
    pub journal: Option<PathBuf>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub run_id: String,
    pub steps: usize,
    pub drift: Vec<String>,
}

/// Why a run could not start, stopped, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("the plan's digest `{digest}` does not match its content")]
    InvalidPlanDigest { digest: String },
    #[error(
        "the saved plan is stale: fact `{fact}` was `{planned}` when the plan was made and is `{now}` now"
    )]
    StalePlan {
        fact: &'static str,
        planned: String,
        now: String,
    },
    #[error("cannot re-read the cluster's facts to check the plan")]
    Facts(#[source] FactError),
    #[error("cannot re-read {what} from the Kubernetes API to check the plan's facts")]
    ClusterUnreadable {
        what: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "the saved plan discovered fact `{fact}` from the Kubernetes cluster, and no cluster is configured to check it again"
    )]
    ClusterFactsUnchecked { fact: &'static str },
    #[error("there is no checkpoint to resume in `{}` or in the datastore", directory.display())]
    NoCheckpoint { directory: PathBuf },
    #[error("the checkpoint belongs to plan `{checkpoint}`, not to the given plan `{given}`")]
    DifferentPlan { checkpoint: String, given: String },
    #[error(
        "an unfinished run of plan `{digest}` (run `{run_id}`, started {started}) is in the checkpoint"
    )]
    UnfinishedRun {
        run_id: String,
        digest: String,
        started: String,
    },
    #[error("the run in the checkpoint completed at {finished}; there is nothing to resume")]
    AlreadyCompleted { finished: String },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("step `{step}` needs a person's confirmation: {message}")]
    StoppedAtGate { step: String, message: String },
    #[error("step `{step}` was not confirmed; the run stopped before it")]
    Declined { step: String },
    #[error(
        "step `{step}` was interrupted and cannot safely run again: it is not idempotent and has no `verify` to tell whether it took effect"
    )]
    Interrupted { step: String },
    #[error("step `{step}` failed after {attempts} attempt(s)")]
    StepFailed {
        step: String,
        attempts: u32,
        // Boxed: step errors are large and most executor errors carry none.
        #[source]
        source: Box<StepError>,
    },
    #[error("`{program}` (pid {pid}) of interrupted step `{step}` is still running")]
    OrphanRunning {
        step: String,
        pid: u32,
        program: String,
    },
    #[error("cannot restore what completed step `{step}` downloaded")]
    Restore {
        step: String,
        #[source]
        source: Box<StepError>,
    },
    #[error("`{flag}` names step `{step}`, which is not in the plan")]
    UnknownStep { flag: &'static str, step: String },
    #[error("invalid `{CRASH_HOOK_VARIABLE}` value `{value}`: expected `<step-id>:<before|after>`")]
    InvalidCrashHook { value: String },
    #[error("interrupted; the run stopped where it was")]
    Cancelled,
    #[error("cannot write the transcript")]
    Output(#[source] std::io::Error),
    #[error("cannot ask for confirmation on the terminal")]
    Prompt(#[source] std::io::Error),
    #[error("the plan has {count} steps; a one-step run takes exactly one")]
    NotSingleStep { count: usize },
}

impl ExecError {
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            ExecError::InvalidPlanDigest { .. } => {
                "the plan file was edited or damaged; make a new one with `netctl upgrade plan --out FILE`".to_string()
            }
            ExecError::StalePlan { .. } => {
                "the cluster changed since the plan was made; make a new plan with `netctl upgrade plan` and review it".to_string()
            }
            ExecError::ClusterUnreadable { .. } => {
                "the plan took facts from the cluster and they are read again before it runs; check the kubeconfig and that it may list them, or make a new plan".to_string()
            }
            ExecError::ClusterFactsUnchecked { .. } => {
                "configure the cluster the plan was made for (KUBECONFIG, or `kubeconfig` in the config file), or make a new plan".to_string()
            }
            ExecError::NoCheckpoint { .. } => {
                "pass the same `--state-dir` as the interrupted run, or start a run without `--resume`".to_string()
            }
            ExecError::DifferentPlan { .. } => {
                "resume without `--plan` to continue the checkpoint's own plan, or pass `--discard-checkpoint` to start the new plan".to_string()
            }
            ExecError::UnfinishedRun { .. } => {
                "continue it with `netctl upgrade apply --resume`, see it with `netctl upgrade status`, or start over with `--discard-checkpoint`".to_string()
            }
            ExecError::StoppedAtGate { step, .. } => format!(
                "after checking, continue with `netctl upgrade apply --resume --approve {step}` (or `--resume --yes` to approve every gate)"
            ),
            ExecError::Declined { step } => format!(
                "when ready, continue with `netctl upgrade apply --resume --approve {step}`"
            ),
            ExecError::Interrupted { step } => format!(
                "check by hand whether it took effect, then `netctl upgrade apply --resume --rerun {step}` to run it again or `--skip {step}` if it did"
            ),
            ExecError::StepFailed { step, source, .. } => match source.as_ref() {
                StepError::KubernetesUnavailable { .. } => format!(
                    "do this step by hand (`--dry-run` shows the exact request), then `netctl upgrade apply --resume --skip {step}`"
                ),
                other => {
                    let resume = "`netctl upgrade apply --resume` continues from this step";
                    match other.hint() {
                        Some(advice) => format!("{advice}; then {resume}"),
                        None => format!("fix the cause, then {resume}"),
                    }
                }
            },
            ExecError::Restore { source, .. } => return source.hint(),
            ExecError::Cancelled => {
                "`netctl upgrade status` shows where it stopped; `netctl upgrade apply --resume` continues".to_string()
            }
            ExecError::OrphanRunning { pid, .. } => format!(
                "the run that started it was killed, but the program was not; wait for it to end (or stop it: `kill {pid}`), then resume"
            ),
            ExecError::Lock(error) => return error.hint(),
            ExecError::Checkpoint(CheckpointError::Mirror { source }) => {
                return source.hint().map(str::to_string);
            }
            ExecError::Checkpoint(CheckpointError::LocalOnly { host, .. }) => format!(
                "resume on `{host}` with the same `--state-dir`, or copy that directory here and pass it"
            ),
            _ => return None,
        })
    }
}

/// RFC 3339 time now, in seconds (what checkpoints, journals and lock records show).
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Runs plans.
pub struct Executor {
    datastore: Arc<dyn Datastore>,
    coordination: Option<Arc<dyn Coordination>>,
    holder: Holder,
    /// The Kubernetes API client for `kube.*` actions, when a cluster is configured.
    kubernetes: Option<kube::Client>,
}

/// The state of one `apply` while it runs.
struct Run<'a> {
    options: &'a ApplyOptions,
    store: CheckpointStore,
    checkpoint: Checkpoint,
    journal: Journal,
    lock: Option<&'a RunLock>,
    progress: Progress,
}

impl Executor {
    /// An executor over a datastore; `coordination` (the same etcd) enables the lock and the mirror.
    pub fn new(
        datastore: Arc<dyn Datastore>,
        coordination: Option<Arc<dyn Coordination>>,
        holder: Holder,
    ) -> Executor {
        Executor {
            datastore,
            coordination,
            holder,
            kubernetes: None,
        }
    }

    /// Gives `kube.*` actions a Kubernetes API client; without one they are only described.
    pub fn with_kubernetes(mut self, client: Option<kube::Client>) -> Executor {
        self.kubernetes = client;
        self
    }

    fn context<'a>(
        &'a self,
        plan_facts: &'a Facts,
        options_files: PathBuf,
        mirror: Option<PathBuf>,
        semantics: WriteSemantics,
        outputs: &'a std::collections::BTreeMap<String, serde_json::Value>,
        register: Option<&'a str>,
    ) -> ActionContext<'a> {
        ActionContext {
            datastore: self.datastore.as_ref(),
            facts: plan_facts,
            files_dir: options_files,
            mirror_dir: mirror,
            semantics,
            outputs,
            register,
            recorded_digest: None,
            child_tracking: None,
            kubernetes: self.kubernetes.clone(),
            run_started_at: None,
        }
    }

    /// The plan's facts with discoverable ones re-read now.
    async fn facts_now(&self, plan: &Plan) -> Result<Facts, ExecError> {
        let discovered = discover_facts(self.datastore.as_ref())
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
        let mut discovered = discover_facts(self.datastore.as_ref())
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
                            // Discovery's own hint is about planning (`--offline`, facts by flag), which
                            // does not apply to a saved plan.
                            FactError::ClusterDiscovery { what, source } => {
                                ExecError::ClusterUnreadable { what, source }
                            }
                            other => ExecError::Facts(other),
                        })?,
                );
        }
        match stale::first_stale_fact(&plan.facts, &discovered) {
            Some(stale) => Err(ExecError::StalePlan {
                fact: stale.fact,
                planned: stale.planned,
                now: stale.now,
            }),
            None => Ok(()),
        }
    }

    /// Runs (or dry-runs) an upgrade plan. `plan` may be `None` only with [`StartMode::Resume`], which
    /// then continues the checkpoint's own plan. The dry-run transcript goes to `transcript`.
    pub async fn apply(
        &self,
        plan: Option<Plan>,
        options: &ApplyOptions,
        transcript: &mut dyn Write,
    ) -> Result<RunReport, ExecError> {
        // The lock comes first: while another run is under way, who runs it is the answer that
        // matters, not what its checkpoint says. A dry-run takes no lock and writes nothing.
        let lock = match (&self.coordination, options.mode) {
            (Some(coordination), RunMode::Execute) => Some(
                RunLock::acquire(
                    coordination.clone(),
                    self.holder.clone(),
                    "upgrade apply",
                    options.lock_ttl,
                )
                .await?,
            ),
            _ => None,
        };
        let result = self
            .apply_locked(plan, options, transcript, lock.as_ref())
            .await;
        if let Some(lock) = lock {
            let released = lock.release().await;
            if let (Ok(_), Err(error)) = (&result, released) {
                crate::terminal::warn(format!(
                    "{error}; it expires by itself when its lease runs out"
                ));
            }
        }
        result
    }

    async fn apply_locked(
        &self,
        plan: Option<Plan>,
        options: &ApplyOptions,
        transcript: &mut dyn Write,
        lock: Option<&RunLock>,
    ) -> Result<RunReport, ExecError> {
        let store = CheckpointStore::new(options.state_dir.clone(), self.coordination.clone());
        let existing = match options.start {
            StartMode::Resume => Some(store.load_latest().await?),
            StartMode::New => Some(store.load_latest().await?),
            StartMode::Discard => None,
        }
        .flatten();

        let (plan, resume_from) = match (options.start, plan, existing) {
            (StartMode::Resume, _, None) => {
                return Err(ExecError::NoCheckpoint {
                    directory: options.state_dir.clone(),
                });
            }
            (StartMode::Resume, given, Some(checkpoint)) => {
                if let Some(given) = given {
                    if given.digest != checkpoint.plan_digest {
                        return Err(ExecError::DifferentPlan {
                            checkpoint: checkpoint.plan_digest,
                            given: given.digest,
                        });
                    }
                }
                if checkpoint.run == RunState::Completed {
                    return Err(ExecError::AlreadyCompleted {
                        finished: checkpoint.updated_at,
                    });
                }
                if !checkpoint.plan.digest_is_valid()
                    || checkpoint.plan.digest != checkpoint.plan_digest
                {
                    return Err(ExecError::InvalidPlanDigest {
                        digest: checkpoint.plan_digest,
                    });
                }
                (checkpoint.plan.clone(), Some(checkpoint))
            }
            (_, None, _) => {
                return Err(ExecError::NoCheckpoint {
                    directory: options.state_dir.clone(),
                });
            }
            (StartMode::New, Some(plan), Some(checkpoint))
                if checkpoint.run != RunState::Completed =>
            {
                let _ = plan;
                return Err(ExecError::UnfinishedRun {
                    run_id: checkpoint.run_id,
                    digest: checkpoint.plan_digest,
                    started: checkpoint.started_at,
                });
            }
            (_, Some(plan), _) => {
                self.check_plan(&plan).await?;
                (plan, None)
            }
        };
        for (flag, names) in [
            ("--approve", &options.approved),
            ("--rerun", &options.rerun),
            ("--skip", &options.skip),
        ] {
            if let Some(unknown) = names
                .iter()
                .find(|name| !plan.steps.iter().any(|step| &step.id == *name))
            {
                return Err(ExecError::UnknownStep {
                    flag,
                    step: unknown.clone(),
                });
            }
        }

        match options.mode {
            RunMode::DryRun => {
                self.dry_run(&plan, resume_from.as_ref(), options, transcript)
                    .await
            }
            RunMode::Execute => {
                self.execute_locked(plan, resume_from, options, store, lock)
                    .await
            }
        }
    }

    async fn dry_run(
        &self,
        plan: &Plan,
        checkpoint: Option<&Checkpoint>,
        options: &ApplyOptions,
        out: &mut dyn Write,
    ) -> Result<RunReport, ExecError> {
        let write =
            |out: &mut dyn Write, text: String| writeln!(out, "{text}").map_err(ExecError::Output);
        let total = plan.steps.len();
        write(
            out,
            format!(
                "dry run of plan {} ({} {} → {}, {total} steps); nothing will be changed",
                plan.digest, plan.procedure, plan.from, plan.to
            ),
        )?;
        write(
            out,
            "each step is shown against the datastore as it is now, without the effects of the steps before it".to_string(),
        )?;
        let facts = self.facts_now(plan).await?;
        let files = options.state_dir.join(checkpoint::FILES_DIR);
        let outputs = checkpoint.map(|c| c.outputs.clone()).unwrap_or_default();
        let mut problems = 0;
        // File → (URL, step) of the downloads earlier `fetch` steps of this dry-run would make.
        let mut would_download: std::collections::BTreeMap<String, (String, String)> =
            std::collections::BTreeMap::new();
        // File → the overlaid manifest of those downloads that have a manifest overlay (`None` until
        // the dry-run of the `fetch` could compute it from a local source).
        let mut would_overlay: std::collections::BTreeMap<String, Option<String>> =
            std::collections::BTreeMap::new();
        for (index, step) in plan.steps.iter().enumerate() {
            write(out, String::new())?;
            write(
                out,
                format!(
                    "[{}/{total}] {} ({}) — {}",
                    index + 1,
                    step.id,
                    step.action.name(),
                    step.description
                ),
            )?;
            if let Some(state) = checkpoint.map(|c| c.step(index).state) {
                if state.is_done() {
                    write(
                        out,
                        format!(
                            "  already {} in the checkpoint; would not run again",
                            state.as_str()
                        ),
                    )?;
                    continue;
                }
            }
            if step.irreversible {
                write(
                    out,
                    "  irreversible: would ask for confirmation first".to_string(),
                )?;
            }
            let context = self.context(
                &facts,
                files.clone(),
                options.mirror_dir.clone(),
                plan_semantics(),
                &outputs,
                step.register.as_deref(),
            );
            if let Action::Fetch(fetch) = &step.action {
                would_download.insert(fetch.file.clone(), (fetch.url.clone(), step.id.clone()));
                if !fetch.overlay.is_empty() {
                    would_overlay.insert(fetch.file.clone(), None);
                }
            }
            let action = match rehearse_download(
                &step.action,
                &files,
                options.mirror_dir.is_some(),
                &would_download,
                &would_overlay,
            ) {
                Some((action, line)) => {
                    write(out, format!("  {line}"))?;
                    std::borrow::Cow::Owned(action)
                }
                None => std::borrow::Cow::Borrowed(&step.action),
            };
            match actions::perform(&context, &action, RunMode::DryRun).await {
                Ok(outcome) => {
                    if let (Action::Fetch(fetch), Some(text)) = (
                        &step.action,
                        outcome
                            .output
                            .as_ref()
                            .and_then(|output| output.get("overlaid"))
                            .and_then(|text| text.as_str()),
                    ) {
                        would_overlay.insert(fetch.file.clone(), Some(text.to_string()));
                    }
                    for line in outcome.transcript {
                        write(out, format!("  {line}"))?;
                    }
                }
                Err(error) => {
                    problems += 1;
                    write(out, format!("  would fail as things stand now: {error}"))?;
                    write(
                        out,
                        "  (an earlier step of this plan may change that)".to_string(),
                    )?;
                }
            }
            if let Some(verify) = &step.verify {
                write(
                    out,
                    format!("  then would verify: {}", describe_action(verify)),
                )?;
            }
            if let Some(retry) = &step.retry {
                write(
                    out,
                    format!(
                        "  on failure: up to {} attempts, {} apart (doubling)",
                        retry.attempts, retry.delay
                    ),
                )?;
            }
        }
        if problems > 0 {
            crate::terminal::warn(format!(
                "{problems} step(s) would fail if run against the datastore as it is now (see the transcript)"
            ));
        }
        Ok(RunReport {
            run_id: String::new(),
            steps: total,
            drift: vec![],
        })
    }

    async fn execute_locked(
        &self,
        plan: Plan,
        resume_from: Option<Checkpoint>,
        options: &ApplyOptions,
        store: CheckpointStore,
        lock: Option<&RunLock>,
    ) -> Result<RunReport, ExecError> {
        store.ensure_directory()?;
        let resuming = resume_from.is_some();
        let checkpoint = match resume_from {
            Some(mut checkpoint) => {
                // Re-read after taking the lock: the run may have moved on since it was first read.
                if let Some(newer) = store.load_latest().await? {
                    if newer.run_id == checkpoint.run_id && newer.sequence > checkpoint.sequence {
                        checkpoint = newer;
                    }
                }
                checkpoint.run = RunState::InProgress;
                checkpoint
            }
            None => Checkpoint::new(&plan, &self.holder),
        };
        let journal = Journal::open(
            &store.directory().join(checkpoint::JOURNAL_FILE),
            &checkpoint.run_id,
            &checkpoint.plan_digest,
            &self.holder,
        )?;
        let progress = Progress::new(options.progress, plan.steps.len(), checkpoint.done_count());
        let mut run = Run {
            options,
            store,
            checkpoint,
            journal,
            lock,
            progress,
        };
        let mut entry = run.journal.entry(if resuming {
            JournalEvent::RunResumed
        } else {
            JournalEvent::RunStarted
        });
        entry.summary = Some(format!(
            "{} {} → {}, {} steps",
            plan.procedure,
            plan.from,
            plan.to,
            plan.steps.len()
        ));
        run.journal.record(&entry)?;
        run.store.save(&mut run.checkpoint).await?;

        // Ctrl-C stops the run where it is: the step in progress stays `running` in the checkpoint
        // (nobody knows whether it took effect; resume decides), its program is killed with it
        // (`kill_on_drop`), and the caller releases the lock at once instead of leaving it to expire.
        let result = tokio::select! {
            result = self.run_steps(&plan, &mut run, resuming) => result,
            _ = tokio::signal::ctrl_c() => Err(ExecError::Cancelled),
        };
        run.progress.finish();
        if matches!(result, Err(ExecError::Cancelled)) {
            let entry = run.journal.entry(JournalEvent::Cancelled);
            run.journal.record(&entry)?;
        }
        result
    }

    async fn run_steps(
        &self,
        plan: &Plan,
        run: &mut Run<'_>,
        resuming: bool,
    ) -> Result<RunReport, ExecError> {
        let mut drift = Vec::new();
        if resuming {
            drift = self.reconcile(plan, run).await?;
        }
        let total = plan.steps.len();
        for (index, step) in plan.steps.iter().enumerate() {
            if run.checkpoint.step(index).state.is_done() {
                continue;
            }
            if let Some(lock) = run.lock {
                lock.ensure_held()?;
            }
            let number = index + 1;
            if run.options.skip.contains(&step.id) {
                let record = run.checkpoint.step_mut(index);
                record.state = StepState::Skipped;
                record.finished_at = Some(now_rfc3339());
                record.summary = Some("skipped by `--skip`".to_string());
                run.store.save(&mut run.checkpoint).await?;
                let mut entry = run.journal.entry(JournalEvent::Succeeded);
                entry.step = Some(step.id.clone());
                entry.summary = Some("skipped by `--skip`".to_string());
                run.journal.record(&entry)?;
                run.progress
                    .step_finished(number, &step.id, "skipped (--skip)", Duration::ZERO);
                continue;
            }
            self.pass_gate(step, run).await?;
            self.run_step(plan, index, number, run).await?;
        }
        run.checkpoint.run = RunState::Completed;
        run.store.save(&mut run.checkpoint).await?;
        let mut entry = run.journal.entry(JournalEvent::RunCompleted);
        entry.summary = Some(format!("{total} steps done"));
        run.journal.record(&entry)?;
        Ok(RunReport {
            run_id: run.checkpoint.run_id.clone(),
            steps: total,
            drift,
        })
    }

    /// On resume: re-checks completed steps' postconditions, and decides about interrupted steps.
    async fn reconcile(&self, plan: &Plan, run: &mut Run<'_>) -> Result<Vec<String>, ExecError> {
        let child_file = run.store.directory().join(checkpoint::CHILD_FILE);
        if let Some(child) = actions::process::ChildRecord::read(&child_file) {
            if child.is_alive() {
                return Err(ExecError::OrphanRunning {
                    step: child.step,
                    pid: child.pid,
                    program: child.program,
                });
            }
            // The program ended after netctl died; its effect is judged by the step's postcondition.
            let _ = std::fs::remove_file(&child_file);
        }
        self.restore_downloads(plan, run).await?;
        let mut drift = Vec::new();
        let mut facts: Option<Facts> = None;
        for (index, step) in plan.steps.iter().enumerate() {
            let state = run.checkpoint.step(index).state;
            let Some(verify) = &step.verify else {
                if state == StepState::Running
                    && !actions::is_idempotent(&step.action)
                    && !run.options.rerun.contains(&step.id)
                    && !run.options.skip.contains(&step.id)
                {
                    return Err(ExecError::Interrupted {
                        step: step.id.clone(),
                    });
                }
                continue;
            };
            if !(state == StepState::Succeeded || state == StepState::Running) {
                continue;
            }
            if facts.is_none() {
                facts = Some(self.facts_now(plan).await?);
            }
            let facts_now = facts.as_ref().unwrap_or(&plan.facts);
            let files = run.store.directory().join(checkpoint::FILES_DIR);
            let outputs = run.checkpoint.outputs.clone();
            let context = self.context(
                facts_now,
                files,
                run.options.mirror_dir.clone(),
                plan_semantics(),
                &outputs,
                None,
            );
            let holds = actions::holds(&context, verify).await;
            match (state, holds) {
                (StepState::Succeeded, Ok(true)) => {}
                (StepState::Succeeded, Ok(false)) => {
                    let text = format!(
                        "drift: step `{}` completed earlier, but its postcondition ({}) no longer holds",
                        step.id,
                        describe_action(verify)
                    );
                    crate::terminal::warn(&text);
                    let mut entry = run.journal.entry(JournalEvent::Drift);
                    entry.step = Some(step.id.clone());
                    entry.summary = Some(text.clone());
                    run.journal.record(&entry)?;
                    drift.push(step.id.clone());
                }
                (StepState::Succeeded, Err(error)) => {
                    crate::terminal::warn(format!(
                        "cannot re-check the postcondition of step `{}`: {error}",
                        step.id
                    ));
                }
                // Interrupted, and its effect is already there: record it, do not run it again.
                (StepState::Running, Ok(true)) if !run.options.rerun.contains(&step.id) => {
                    let record = run.checkpoint.step_mut(index);
                    record.state = StepState::Succeeded;
                    record.finished_at = Some(now_rfc3339());
                    record.summary =
                        Some("interrupted; its postcondition holds, so not run again".to_string());
                    run.store.save(&mut run.checkpoint).await?;
                    let mut entry = run.journal.entry(JournalEvent::Recovered);
                    entry.step = Some(step.id.clone());
                    entry.action = Some(step.action.name().to_string());
                    entry.summary = Some("postcondition holds; not run again".to_string());
                    run.journal.record(&entry)?;
                    run.progress.note(&format!(
                        "step `{}` was interrupted; its postcondition holds, so it is not run again",
                        step.id
                    ));
                }
                // Interrupted and not (yet) in effect: running it again is the fix.
                (StepState::Running, Ok(_)) => {}
                // Cannot tell, and running it again is not safe unless the operator says so.
                (StepState::Running, Err(error))
                    if !actions::is_idempotent(&step.action)
                        && !run.options.rerun.contains(&step.id)
                        && !run.options.skip.contains(&step.id) =>
                {
                    crate::terminal::warn(format!(
                        "cannot check the postcondition of interrupted step `{}`: {error}",
                        step.id
                    ));
                    return Err(ExecError::Interrupted {
                        step: step.id.clone(),
                    });
                }
                _ => {}
            }
        }
        Ok(drift)
    }

    /// On resume, makes sure every completed download is in this machine's state directory with the
    /// digest the run recorded: a resume on another machine downloads it again and refuses other
    /// bytes, so every later step sees what the run started with.
    async fn restore_downloads(&self, plan: &Plan, run: &mut Run<'_>) -> Result<(), ExecError> {
        for (index, step) in plan.steps.iter().enumerate() {
            let record = run.checkpoint.step(index);
            let (Action::Fetch(_), StepState::Succeeded, Some(digest)) =
                (&step.action, record.state, record.download_digest.clone())
            else {
                continue;
            };
            let files = run.store.directory().join(checkpoint::FILES_DIR);
            let mut context = self.context(
                &plan.facts,
                files,
                run.options.mirror_dir.clone(),
                plan_semantics(),
                &run.checkpoint.outputs,
                None,
            );
            context.recorded_digest = Some(digest);
            let outcome = actions::perform(&context, &step.action, RunMode::Execute)
                .await
                .map_err(|source| ExecError::Restore {
                    step: step.id.clone(),
                    source: Box::new(source),
                })?;
            let flag = |key: &str| {
                outcome
                    .output
                    .as_ref()
                    .and_then(|output| output.get(key))
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false)
            };
            if flag("downloaded_again") || flag("made_again") || flag("edited") {
                run.progress
                    .note(&format!("step `{}`: {}", step.id, outcome.summary));
                let mut entry = run.journal.entry(JournalEvent::Restored);
                entry.step = Some(step.id.clone());
                entry.action = Some(step.action.name().to_string());
                entry.summary = Some(outcome.summary);
                run.journal.record(&entry)?;
            }
        }
        Ok(())
    }

    /// Stops before a gate or an irreversible step unless it is approved.
    async fn pass_gate(&self, step: &PlannedStep, run: &mut Run<'_>) -> Result<(), ExecError> {
        let message = match &step.action {
            Action::Pause(gate) => gate.message.clone(),
            _ if step.irreversible => {
                format!("`{}` is irreversible ({})", step.id, step.description)
            }
            _ => return Ok(()),
        };
        let approved = run.options.confirmation == Confirmation::AssumeYes
            || run.options.approved.contains(&step.id);
        let (approved, how) = match (approved, run.options.interaction) {
            (true, _) => (true, "approved on the command line"),
            (false, Interaction::Terminal) => {
                let question = format!("{message}\ncontinue with step `{}`?", step.id);
                // The question blocks this task, so the executor's own Ctrl-C handling cannot run
                // until it is answered; a watcher releases the lock and ends the process instead.
                // Nothing was started for this step: the checkpoint already says where the run is.
                // (The one place besides `main` that exits: there is no caller to return to.)
                let revocation = run.lock.map(RunLock::revocation);
                let watcher = tokio::spawn(async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        if let Some(revocation) = revocation {
                            revocation.await;
                        }
                        crate::terminal::error(
                            "interrupted at a question; nothing more was changed",
                            Some("`netctl upgrade apply --resume` asks again"),
                        );
                        std::process::exit(1);
                    }
                });
                let ask = || run.progress.suspend(|| pause::ask(&question));
                // A person may take minutes to answer; the lock's lease must be renewed meanwhile,
                // so the blocking read must not hold up a runtime worker.
                let answer = match tokio::runtime::Handle::current().runtime_flavor() {
                    tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(ask),
                    _ => ask(),
                }
                .map_err(ExecError::Prompt);
                watcher.abort();
                let answer = answer?;
                if !answer {
                    self.stop_at(step, run, &message).await?;
                    return Err(ExecError::Declined {
                        step: step.id.clone(),
                    });
                }
                (true, "confirmed on the terminal")
            }
            (false, Interaction::Unattended) => (false, ""),
        };
        if approved {
            let mut entry = run.journal.entry(JournalEvent::Approved);
            entry.step = Some(step.id.clone());
            entry.summary = Some(how.to_string());
            run.journal.record(&entry)?;
            return Ok(());
        }
        self.stop_at(step, run, &message).await?;
        Err(ExecError::StoppedAtGate {
            step: step.id.clone(),
            message,
        })
    }

    async fn stop_at(
        &self,
        step: &PlannedStep,
        run: &mut Run<'_>,
        message: &str,
    ) -> Result<(), ExecError> {
        run.checkpoint.run = RunState::WaitingAtGate {
            step: step.id.clone(),
        };
        run.store.save(&mut run.checkpoint).await?;
        let mut entry = run.journal.entry(JournalEvent::StoppedAtGate);
        entry.step = Some(step.id.clone());
        entry.summary = Some(message.to_string());
        run.journal.record(&entry)?;
        Ok(())
    }

    /// Runs one step with its retries, checkpointing before and after.
    async fn run_step(
        &self,
        plan: &Plan,
        index: usize,
        number: usize,
        run: &mut Run<'_>,
    ) -> Result<(), ExecError> {
        let step = &plan.steps[index];
        run.progress
            .step_started(number, &step.id, &step.description);
        let started = Instant::now();
        let attempts = step.retry.as_ref().map_or(1, |retry| retry.attempts.max(1));
        let base_delay = step
            .retry
            .as_ref()
            .map_or(Duration::ZERO, |retry| retry.delay.0);
        let mut attempt = 0;
        loop {
            attempt += 1;
            {
                let record = run.checkpoint.step_mut(index);
                record.state = StepState::Running;
                record.attempts += 1;
                record.started_at = Some(now_rfc3339());
                record.error = None;
            }
            run.store.save(&mut run.checkpoint).await?;
            let mut entry = run.journal.entry(JournalEvent::Started);
            entry.step = Some(step.id.clone());
            entry.action = Some(step.action.name().to_string());
            entry.attempt = Some(attempt);
            entry.summary = Some(describe_action(&step.action));
            run.journal.record(&entry)?;

            CrashPoint::fire_if(
                run.options.crash_point.as_ref(),
                &step.id,
                CrashWhen::Before,
            );
            let attempt_started = Instant::now();
            let result = self.perform_step(plan, step, run).await;
            CrashPoint::fire_if(run.options.crash_point.as_ref(), &step.id, CrashWhen::After);
            let elapsed = attempt_started.elapsed();

            match result {
                Ok(mut outcome) => {
                    if let Some(note) =
                        record_digests(plan, index, &mut run.checkpoint, outcome.output.as_ref())
                    {
                        outcome.summary = format!("{}; {note}", outcome.summary);
                    }
                    let record = run.checkpoint.step_mut(index);
                    record.state = StepState::Succeeded;
                    record.finished_at = Some(now_rfc3339());
                    record.summary = Some(outcome.summary.clone());
                    if let (Some(name), Some(output)) = (&step.register, outcome.output.clone()) {
                        run.checkpoint.outputs.insert(name.clone(), output);
                    }
                    run.store.save(&mut run.checkpoint).await?;
                    let mut entry = run.journal.entry(JournalEvent::Succeeded);
                    entry.step = Some(step.id.clone());
                    entry.action = Some(step.action.name().to_string());
                    entry.attempt = Some(attempt);
                    entry.duration_ms = Some(elapsed.as_millis());
                    entry.summary = Some(outcome.summary.clone());
                    run.journal.record(&entry)?;
                    run.progress
                        .step_finished(number, &step.id, "succeeded", started.elapsed());
                    // A listing is there to be read: its names go to stderr, so the gate that
                    // usually follows can ask about them.
                    if let Action::KubeList(_) = step.action {
                        run.progress.note(&format!("      {}", outcome.summary));
                    }
                    return Ok(());
                }
                Err(error) if attempt < attempts => {
                    let delay = backoff(base_delay, attempt);
                    let mut entry = run.journal.entry(JournalEvent::Retrying);
                    entry.step = Some(step.id.clone());
                    entry.action = Some(step.action.name().to_string());
                    entry.attempt = Some(attempt);
                    entry.duration_ms = Some(elapsed.as_millis());
                    entry.error = Some(format!("{error}"));
                    run.journal.record(&entry)?;
                    run.checkpoint.step_mut(index).error = Some(error.to_string());
                    run.progress.waiting(
                        &step.id,
                        &format!("failed: {error}"),
                        attempt + 1,
                        attempts,
                        delay,
                    );
                    tokio::time::sleep(delay).await;
                }
                Err(error) => {
                    let record = run.checkpoint.step_mut(index);
                    record.state = StepState::Failed;
                    record.finished_at = Some(now_rfc3339());
                    record.error = Some(error_chain(&error));
                    run.checkpoint.run = RunState::Failed {
                        step: step.id.clone(),
                    };
                    run.store.save(&mut run.checkpoint).await?;
                    let mut entry = run.journal.entry(JournalEvent::Failed);
                    entry.step = Some(step.id.clone());
                    entry.action = Some(step.action.name().to_string());
                    entry.attempt = Some(attempt);
                    entry.duration_ms = Some(elapsed.as_millis());
                    entry.error = Some(error_chain(&error));
                    run.journal.record(&entry)?;
                    run.progress
                        .step_finished(number, &step.id, "failed", started.elapsed());
                    return Err(ExecError::StepFailed {
                        step: step.id.clone(),
                        attempts: attempt,
                        source: Box::new(error),
                    });
                }
            }
        }
    }

    async fn perform_step(
        &self,
        plan: &Plan,
        step: &PlannedStep,
        run: &Run<'_>,
    ) -> Result<Outcome, StepError> {
        // `check` sees the cluster as it is now (the installed version changes during an upgrade).
        let facts = match &step.action {
            Action::Check(_) => match self.facts_now(plan).await {
                Ok(facts) => facts,
                Err(_) => plan.facts.clone(),
            },
            _ => plan.facts.clone(),
        };
        let mut context = self.context(
            &facts,
            run.store.directory().join(checkpoint::FILES_DIR),
            run.options.mirror_dir.clone(),
            plan_semantics(),
            &run.checkpoint.outputs,
            step.register.as_deref(),
        );
        context.recorded_digest = run
            .checkpoint
            .steps
            .iter()
            .find(|record| record.id == step.id)
            .and_then(|record| record.download_digest.clone());
        context.child_tracking = Some(actions::process::ChildTracking {
            file: run.store.directory().join(checkpoint::CHILD_FILE),
            step: step.id.clone(),
        });
        context.run_started_at = Some(run.checkpoint.started_at.clone());
        actions::perform(&context, &step.action, RunMode::Execute).await
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
        let outputs = std::collections::BTreeMap::new();
        let files = options
            .journal
            .as_ref()
            .and_then(|path| {
                path.parent()
                    .map(|parent| parent.join(checkpoint::FILES_DIR))
            })
            .unwrap_or_else(|| PathBuf::from("."));
        let context = self.context(
            &plan.facts,
            files,
            None,
            options.semantics,
            &outputs,
            step.register.as_deref(),
        );
        if mode == RunMode::DryRun {
            let outcome = actions::perform(&context, &step.action, RunMode::DryRun)
                .await
                .map_err(|source| ExecError::StepFailed {
                    step: step.id.clone(),
                    attempts: 1,
                    source: Box::new(source),
                })?;
            for line in &outcome.transcript {
                writeln!(transcript, "{line}").map_err(ExecError::Output)?;
            }
            return Ok(outcome);
        }
        let mut journal = match &options.journal {
            Some(path) => Some(Journal::open(
                path,
                &uuid::Uuid::new_v4().to_string(),
                &plan.digest,
                &self.holder,
            )?),
            None => None,
        };
        let attempts = step.retry.as_ref().map_or(1, |retry| retry.attempts.max(1));
        let base_delay = step
            .retry
            .as_ref()
            .map_or(Duration::ZERO, |retry| retry.delay.0);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let started = Instant::now();
            let result = actions::perform(&context, &step.action, RunMode::Execute).await;
            if let Some(journal) = journal.as_mut() {
                let mut entry = journal.entry(match &result {
                    Ok(_) => JournalEvent::Succeeded,
                    Err(_) => JournalEvent::Failed,
                });
                entry.step = Some(step.id.clone());
                entry.action = Some(step.action.name().to_string());
                entry.attempt = Some(attempt);
                entry.duration_ms = Some(started.elapsed().as_millis());
                match &result {
                    Ok(outcome) => entry.summary = Some(outcome.summary.clone()),
                    Err(error) => entry.error = Some(error_chain(error)),
                }
                journal.record(&entry)?;
            }
            match result {
                Ok(outcome) => return Ok(outcome),
                Err(_) if attempt < attempts => {
                    tokio::time::sleep(backoff(base_delay, attempt)).await;
                }
                Err(source) => {
                    return Err(ExecError::StepFailed {
                        step: step.id.clone(),
                        attempts: attempt,
                        source: Box::new(source),
                    });
                }
            }
        }
    }
}

/// Records in the checkpoint the digests a completed step leaves: for a `fetch`, of the download and
/// (with an overlay) of the manifest it wrote; for a `kube.apply` of a file, of the file as applied.
/// When that file is not what the `fetch` that wrote it left there (the operator edited it while the
/// run was stopped at a gate, as the manifest runbooks' gate asks), returns a note for the step's
/// summary and journal entry, so reviewers can see that hand edits were applied.
fn record_digests(
    plan: &Plan,
    index: usize,
    checkpoint: &mut Checkpoint,
    output: Option<&serde_json::Value>,
) -> Option<String> {
    let digest = |key: &str| {
        output
            .and_then(|output| output.get(key))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    match &plan.steps[index].action {
        Action::Fetch(_) => {
            let record = checkpoint.step_mut(index);
            record.download_digest = digest("sha256");
            record.file_digest = digest("overlaid_sha256");
            None
        }
        Action::KubeApply(crate::plan::action::KubeApply {
            source: crate::plan::action::ManifestSource::File(file),
            ..
        }) => {
            let applied = digest("source_sha256")?;
            checkpoint.step_mut(index).applied_digest = Some(applied.clone());
            // The last `fetch` before this step that wrote the file.
            let (fetch_index, fetch_step) = plan.steps[..index].iter().enumerate().rev().find(
                |(_, step)| matches!(&step.action, Action::Fetch(fetch) if fetch.file == *file),
            )?;
            let record = checkpoint.step(fetch_index);
            let written = record
                .file_digest
                .clone()
                .or_else(|| record.download_digest.clone())?;
            (written != applied).then(|| {
                format!(
                    "`{file}` was edited after step `{}` wrote it ({written}); applied as edited ({applied})",
                    fetch_step.id
                )
            })
        }
        _ => None,
    }
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

/// The delay before attempt `attempt + 1`: the step's delay, doubled per failed attempt, at most
/// ten minutes.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    base.saturating_mul(factor).min(Duration::from_secs(600))
}

/// An error with its causes, for checkpoints and journals (`a: b: c`).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

/// A one-line account of an action for progress, journals and `verify` lines (secrets redacted).
pub fn describe_action(action: &Action) -> String {
    match action {
        Action::ResourceGet(target) => format!(
            "{} exists",
            actions::resource::target_key(target.kind, target.namespace.as_deref(), &target.name)
        ),
        Action::ResourceList(list) => format!("{} listed", list.kind.plural()),
        Action::ResourceCreate(documents)
        | Action::ResourceApply(documents)
        | Action::ResourceReplace(documents) => {
            let keys: Vec<String> = documents
                .documents
                .iter()
                .map(|document| document.key().to_string())
                .collect();
            format!("{} {}", action.name(), keys.join(", "))
        }
        Action::ResourceDelete(target) => format!(
            "delete {}",
            actions::resource::target_key(target.kind, target.namespace.as_deref(), &target.name)
        ),
        Action::ResourceLabel(label) => match &label.value {
            Some(value) => format!("label {} {} {}={value}", label.kind, label.name, label.key),
            None => format!("label {} {} remove {}", label.kind, label.name, label.key),
        },
        Action::ResourcePatch(patch) => {
            format!(
                "{} patch of {} {}",
                patch.patch_type, patch.kind, patch.name
            )
        }
        Action::Exec(exec) => format!(
            "run {}",
            actions::process::display_command(&exec.command, &exec.env)
        ),
        Action::Helm(helm) => {
            let mut argv = vec!["helm".to_string()];
            argv.extend(helm.args.iter().cloned());
            format!(
                "run {}",
                actions::process::display_command(&argv, &Default::default())
            )
        }
        Action::Fetch(fetch) => format!("download {} to {}", fetch.url, fetch.file),
        Action::Check(check) => match (&check.equals, &check.matches) {
            (Some(expected), _) => format!("fact `{}` equals {expected}", check.fact),
            (None, Some(pattern)) => format!("fact `{}` matches `{pattern}`", check.fact),
            (None, None) => format!("fact `{}`", check.fact),
        },
        Action::Pause(gate) => format!("confirmation: {}", gate.message),
        Action::KubeRestoreOwnerReference(restore) => format!(
            "{} refers to {} `{}` with its current UID",
            restore.object, restore.owner.kind, restore.owner.name
        ),
        // Read both as a listing and as a `verify` (which holds when any matches).
        Action::KubeList(list) => {
            let mut text = format!("any {} {}", list.api_version, list.kind);
            if let Some(namespace) = &list.namespace {
                text.push_str(&format!(" in `{namespace}`"));
            }
            if let Some(selector) = &list.selector {
                text.push_str(&format!(" matching `{selector}`"));
            }
            text
        }
        other => other.name().to_string(),
    }
}

/// In a dry-run, a `kube.apply` of a file that an earlier `fetch` of the plan would download (and that
/// is not there yet) reads the download's source instead, so the rehearsal applies the real manifest
/// with `dryRun=All` rather than failing on a missing file. Only for local sources (a mirror
/// directory or a `file://` URL): a dry-run never goes to the network for this. A download with a
/// manifest overlay is rehearsed with the overlaid manifest the `fetch` dry-run computed, or not at
/// all when it could not. Returns the action to rehearse and a line saying so.
fn rehearse_download(
    action: &Action,
    files: &std::path::Path,
    mirror: bool,
    would_download: &std::collections::BTreeMap<String, (String, String)>,
    would_overlay: &std::collections::BTreeMap<String, Option<String>>,
) -> Option<(Action, String)> {
    let Action::KubeApply(apply) = action else {
        return None;
    };
    let crate::plan::action::ManifestSource::File(file) = &apply.source else {
        return None;
    };
    let (url, step) = would_download.get(file)?;
    if files.join(file).exists() || !(mirror || url.starts_with("file://")) {
        return None;
    }
    let mut rehearsed = apply.clone();
    if let Some(overlaid) = would_overlay.get(file) {
        rehearsed.source = crate::plan::action::ManifestSource::Inline(overlaid.clone()?);
        return Some((
            Action::KubeApply(rehearsed),
            format!(
                "(`{file}` is not downloaded yet: rehearsing with what step `{step}` would download, with its manifest overlay)"
            ),
        ));
    }
    rehearsed.source = crate::plan::action::ManifestSource::Url(url.clone());
    Some((
        Action::KubeApply(rehearsed),
        format!(
            "(`{file}` is not downloaded yet: rehearsing with what step `{step}` would download)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dry_run_rehearses_a_pending_download_only_from_a_local_source() {
        use crate::plan::action::{KubeApply, ManifestSource};
        let apply = Action::KubeApply(KubeApply {
            source: ManifestSource::File("upgrade.yaml".into()),
            server_side: true,
            force_conflicts: true,
            field_manager: "netctl".into(),
        });
        let files = tempfile::tempdir().unwrap();
        let https = std::collections::BTreeMap::from([(
            "upgrade.yaml".to_string(),
            (
                "https://example.org/calico.yaml".to_string(),
                "u/fetch".to_string(),
            ),
        )]);
        let none = std::collections::BTreeMap::new();
        // No mirror and a network URL: never downloaded by a dry-run.
        assert!(rehearse_download(&apply, files.path(), false, &https, &none).is_none());
        let (rehearsed, line) =
            rehearse_download(&apply, files.path(), true, &https, &none).unwrap();
        assert!(matches!(
            rehearsed,
            Action::KubeApply(KubeApply { source: ManifestSource::Url(ref url), .. })
                if url == "https://example.org/calico.yaml"
        ));
        assert!(line.contains("step `u/fetch`"), "{line}");
        // With a manifest overlay: the overlaid text the fetch dry-run computed, or no rehearsal.
        let overlaid = std::collections::BTreeMap::from([("upgrade.yaml".to_string(), None)]);
        assert!(rehearse_download(&apply, files.path(), true, &https, &overlaid).is_none());
        let overlaid = std::collections::BTreeMap::from([(
            "upgrade.yaml".to_string(),
            Some("kind: ConfigMap\n".to_string()),
        )]);
        let (rehearsed, line) =
            rehearse_download(&apply, files.path(), true, &https, &overlaid).unwrap();
        assert!(matches!(
            rehearsed,
            Action::KubeApply(KubeApply { source: ManifestSource::Inline(ref text), .. })
                if text == "kind: ConfigMap\n"
        ));
        assert!(line.contains("with its manifest overlay"), "{line}");
        // A file that is already there (an earlier run downloaded it) is what gets applied.
        std::fs::write(files.path().join("upgrade.yaml"), "").unwrap();
        assert!(rehearse_download(&apply, files.path(), true, &https, &none).is_none());
    }

    #[test]
    fn the_crash_hook_reads_step_and_moment() {
        let env = Environment::from_pairs([(CRASH_HOOK_VARIABLE, "pre/a[0]:after")]);
        assert_eq!(
            CrashPoint::from_environment(&env).unwrap(),
            Some(CrashPoint {
                step: "pre/a[0]".into(),
                when: CrashWhen::After
            })
        );
        let env = Environment::from_pairs([(CRASH_HOOK_VARIABLE, "x:never")]);
        assert!(CrashPoint::from_environment(&env).is_err());
    }

    #[test]
    fn retries_back_off_by_doubling_up_to_a_cap() {
        let base = Duration::from_secs(5);
        assert_eq!(backoff(base, 1), Duration::from_secs(5));
        assert_eq!(backoff(base, 3), Duration::from_secs(20));
        assert_eq!(backoff(base, 30), Duration::from_secs(600));
    }
}
