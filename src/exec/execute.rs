//! Running a plan for real, step after step through the one step loop (`step.rs`).
//!
//! An upgrade run ([`Executor::execute`]) opens the journal, writes the checkpoint, resumes what an
//! interrupted run left (`resume.rs`), and then for each step not yet done: checks the lock is still
//! held, honours `--skip`, passes the human gate (`gate.rs`), and runs the step — the checkpoint
//! marks it running before its action and records the outcome (digests of downloads and applied
//! files, registered outputs) after, progress shows it, and the test crash hook may fire around it.
//! SIGINT (Ctrl-C) and SIGTERM stop the run where it is. A one-step command
//! ([`Executor::execute_one`]) runs its step through the same loop with no checkpoint, lock or
//! progress, journaled when asked; while it writes resources, Ctrl-C and SIGTERM stop it between
//! two batches and undo (`interrupt.rs`).

use std::time::{Duration, Instant};

use super::actions::pause::Interaction;
use super::actions::resource::label_each;
use super::actions::{self, Context, Outcome, StepError};
use super::checkpoint::{self, Change, Checkpoint, CheckpointStore, RunState, StepState};
use super::clock::now_rfc3339;
use super::crash_hook::{CrashPoint, CrashWhen};
use super::error::ExecError;
use super::gate::{self, Gate};
use super::interrupt::Interrupt;
use super::journal::{Journal, JournalEvent};
use super::lock::RunLock;
use super::progress::Progress;
use super::run::Run;
use super::signal;
use super::step::{self, Attempt, StepRun};
use super::{ApplyOptions, Executor, RunMode, RunOneOptions, RunReport, Starting, plan_semantics};
use crate::errors::Hint;
use crate::errors::error_chain;
use crate::plan::action::ResourceLabelEach;
use crate::plan::release::api_release;
use crate::plan::{Action, Plan, PlannedStep};

impl Executor {
    /// Runs `plan` for real under `lock`, continuing `resume_from` when given.
    pub(super) async fn execute(
        &self,
        plan: Plan,
        resume_from: Option<Checkpoint>,
        options: &ApplyOptions,
        mut store: CheckpointStore,
        lock: Option<&RunLock>,
        starting: Starting,
    ) -> Result<RunReport, ExecError> {
        let Starting {
            skipped_steps,
            run_id,
            taken_over,
            notifier,
            estimates,
        } = starting;
        store.ensure_directory()?;
        let resuming = resume_from.is_some();
        let mut checkpoint = match resume_from {
            Some(mut checkpoint) => {
                // Re-read after taking the lock: the run may have moved on since it was first read.
                if let Some(newer) = store.load_latest().await?
                    && newer.checkpoint.run_id == checkpoint.run_id
                    && newer.checkpoint.sequence > checkpoint.sequence
                {
                    checkpoint = newer.checkpoint;
                }
                checkpoint.run = RunState::InProgress;
                checkpoint
            }
            None => {
                let mut checkpoint = Checkpoint::new(&plan, &self.holder);
                // The id the lock was taken for, so a resume of this run knows its own lock.
                if let Some(run_id) = run_id {
                    checkpoint.run_id = run_id;
                }
                checkpoint
            }
        };
        // The plan stored once, a snapshot, and an empty log after it: here and in the mirror.
        store.begin(&plan, &mut checkpoint).await?;
        let journal_path = store.directory().join(checkpoint::JOURNAL_FILE);
        let journal = Journal::open(
            &journal_path,
            &checkpoint.run_id,
            &checkpoint.plan_digest,
            &self.holder,
        )?;
        notifier.begun(&checkpoint.run_id, &journal_path);
        let progress = Progress::new(
            &self.printer,
            options.progress,
            plan.steps.len(),
            checkpoint.done_count(),
            options.progress_interval,
        );
        let mut run = Run {
            options,
            store,
            checkpoint,
            journal,
            lock,
            progress,
            skipped_steps,
            notifier,
            estimates,
        };
        let event = match resuming {
            true => JournalEvent::RunResumed,
            false => JournalEvent::RunStarted,
        };
        let cluster = self.cluster_id().await;
        run.record(event, None, |entry| {
            entry.summary = Some(format!(
                "{} {} → {}, {} steps",
                plan.procedure,
                plan.from,
                plan.to,
                plan.steps.len()
            ));
            entry.procedure = Some(plan.procedure.clone());
            entry.from = Some(plan.from.to_string());
            entry.to = Some(plan.to.to_string());
            entry.steps = Some(plan.steps.len());
            entry.cluster = cluster;
            entry.rolls_back = plan.rolls_back.clone();
        })?;
        if let Some(record) = &taken_over {
            let summary = format!(
                "took over the lock of this run from {} (lock id `{}`): its process is gone from this host",
                record.holder, record.id
            );
            run.progress.note(&summary);
            run.record(JournalEvent::LockTakenOver, None, |entry| {
                entry.summary = Some(summary.clone());
            })?;
        }
        for check in &options.skip_preflight {
            run.record(JournalEvent::PreflightSkipped, None, |entry| {
                entry.summary = Some(format!("pre-flight check `{check}` skipped"));
            })?;
        }
        if !resuming {
            self.back_up(&mut run, options).await?;
        }

        // SIGINT and SIGTERM stop the run where it is: the step in progress stays `running` in the
        // checkpoint (nobody knows whether it took effect; resume decides), its program is killed
        // with it (`kill_on_drop`), the run is recorded as interrupted, and the caller releases the
        // lock at once instead of leaving it to expire.
        let result = tokio::select! {
            result = self.run_steps(&plan, &mut run, resuming) => result,
            signal = signal::stop_requested() => Err(ExecError::Cancelled { signal }),
        };
        run.progress.finish();
        match &result {
            Err(ExecError::Cancelled { signal }) => {
                run.checkpoint.run = RunState::Interrupted {
                    signal: signal.to_string(),
                };
                run.save(Change::run()).await?;
                run.record(JournalEvent::Cancelled, None, |entry| {
                    entry.summary = Some(format!("stopped by {signal}"));
                    entry.exit_code = Some(crate::exit_code::FAILURE);
                })?;
            }
            // Recorded where they happen, with their own events.
            Ok(_)
            | Err(
                ExecError::StoppedAtGate { .. }
                | ExecError::Declined { .. }
                | ExecError::StoppedAtDeadline { .. },
            ) => {}
            // Every other end of this process's part of the run, so `upgrade history` knows how it
            // ended without guessing from the last step.
            Err(error) => {
                let step = error.step().map(str::to_string);
                run.record(JournalEvent::RunFailed, None, |entry| {
                    entry.step = step;
                    entry.error = Some(error_chain(error));
                    entry.exit_code = Some(crate::exit_code::FAILURE);
                })?;
            }
        }
        result
    }

    /// The cluster's identity (ClusterInformation `clusterGUID`), journaled with a run so time
    /// estimates learn from this cluster's runs only; `None` when it cannot be read.
    pub async fn cluster_id(&self) -> Option<String> {
        let store = self.datastore.as_deref()?;
        let key = crate::resource::ResourceKey::new(
            crate::resource::Kind::ClusterInformation,
            None,
            "default",
        );
        let information = store.get(&key).await.ok()?;
        information
            .spec
            .get("clusterGUID")
            .and_then(serde_json::Value::as_str)
            .filter(|guid| !guid.is_empty())
            .map(str::to_string)
    }

    /// The backup before a new run's first write (or the journaled `--no-backup`).
    async fn back_up(&self, run: &mut Run<'_>, options: &ApplyOptions) -> Result<(), ExecError> {
        let Some(datastore) = self.datastore.as_deref() else {
            return Ok(());
        };
        if options.backup == super::BackupChoice::Skip {
            return run.record(JournalEvent::BackupSkipped, None, |entry| {
                entry.summary = Some("no backup before the first write (--no-backup)".into());
            });
        }
        let path = super::backup_path(run.store.directory(), &run.checkpoint.run_id);
        if let Some(directory) = path.parent() {
            std::fs::create_dir_all(directory).map_err(|source| {
                ExecError::Backup(crate::datastore::backup::BackupError::Write {
                    path: path.clone(),
                    source,
                })
            })?;
        }
        let taken_at = super::clock::now_rfc3339();
        let counts = crate::datastore::backup::write_file(datastore, &taken_at, &path)
            .await
            .map_err(ExecError::Backup)?;
        // On etcd, the whole database too (the disaster-recovery copy), beside it.
        // An etcd user limited to `/calico/` may not take one (only root may): the backup file
        // stands alone then, and the journal says so.
        let snapshot = match crate::datastore::snapshot::save_beside(datastore, &path).await {
            Err(error) if error.is_not_permitted() => Err(()),
            Err(error) => return Err(ExecError::Snapshot(error)),
            Ok(saved) => Ok(saved),
        };
        let mut summary = format!(
            "backed up {} resource(s) and {} IPAM object(s) to {} (restore: netctl datastore restore -f {})",
            counts.resources,
            counts.ipam,
            path.display(),
            path.display()
        );
        if snapshot.is_err() {
            summary.push_str(
                "; no etcd snapshot: the etcd user may not take one (etcd lets only root)",
            );
        }
        if let Ok(Some((snapshot, _))) = snapshot {
            // Not its size (it varies with etcd's pages) nor the member: the line is for people.
            summary.push_str(&format!(
                "; etcd snapshot (sha256 checked) to {}",
                snapshot.display()
            ));
        }
        run.progress.note(&summary);
        run.record(JournalEvent::BackupTaken, None, |entry| {
            entry.summary = Some(summary);
        })
    }

    async fn run_steps(
        &self,
        plan: &Plan,
        run: &mut Run<'_>,
        resuming: bool,
    ) -> Result<RunReport, ExecError> {
        let repaired = match resuming {
            true => self.reconcile(plan, run).await?,
            false => Vec::new(),
        };
        for (index, step) in plan.steps.iter().enumerate() {
            if run.checkpoint.step(index).state.is_done() {
                continue;
            }
            if let Some(lock) = run.lock {
                lock.ensure_held()?;
            }
            if run.options.skip.contains(&step.id) {
                run.skip(index, step, "skipped by `--skip`").await?;
                continue;
            }
            if let Some(skipped) = run
                .skipped_steps
                .iter()
                .find(|skipped| skipped.id == step.id)
            {
                let summary = format!("skipped by the pre-flight: {}", skipped.reason);
                run.skip(index, step, &summary).await?;
                continue;
            }
            self.check_window(plan, run, index).await?;
            if let Some(requirement) = &step.requires
                && !run
                    .options
                    .skip_preflight
                    .contains(&super::preflight::Check::NodeAgents)
            {
                self.check_requirement(step, requirement).await?;
            }
            self.pass_gate(step, run).await?;
            run.progress
                .step_started(index + 1, &step.id, &step.description);
            let mut upgrade_step = UpgradeStep {
                executor: self,
                plan,
                index,
                started: Instant::now(),
                run: &mut *run,
            };
            if let Err(error) = step::run_step(step, &mut upgrade_step).await {
                self.after_failed_step(plan, run, index, step, error)
                    .await?;
            }
        }
        run.complete(plan.steps.len()).await?;
        Ok(RunReport {
            run_id: run.checkpoint.run_id.clone(),
            steps: plan.steps.len(),
            repaired,
        })
    }

    /// With a maintenance window: stops before step `index` when the deadline has come (outside a
    /// span), or when the segment or span that starts here would not finish in time.
    async fn check_window(
        &self,
        plan: &Plan,
        run: &mut Run<'_>,
        index: usize,
    ) -> Result<(), ExecError> {
        let Some(window) = &run.options.window else {
            return Ok(());
        };
        let checkpoint = &run.checkpoint;
        let done = |step: usize| checkpoint.step(step).state.is_done();
        let now = std::time::SystemTime::now();
        let verdict = super::window::check(plan, &run.estimates, window, index, false, &done, now);
        let super::window::Verdict::Stop { reason } = verdict else {
            return Ok(());
        };
        let step = &plan.steps[index];
        run.stop_at_deadline(step, &reason).await?;
        Err(ExecError::StoppedAtDeadline {
            step: step.id.clone(),
            deadline: window.deadline_text(),
            reason,
        })
    }

    /// Stops before a gate or an irreversible step unless it is approved. The `--on-gate` hook
    /// hears of a gate that waits for a person: before the question on a terminal, or once the run
    /// stopped in front of it.
    async fn pass_gate(&self, step: &PlannedStep, run: &mut Run<'_>) -> Result<(), ExecError> {
        let waits = gate::waits_for_person(step, run.options);
        if let Some(message) = &waits
            && run.options.interaction == Interaction::Terminal
        {
            run.notify_gate(step, message, None).await;
        }
        match gate::decide(step, run.options, run.lock, &run.progress)? {
            Gate::Open => Ok(()),
            Gate::Approved(how) => run.record(JournalEvent::Approved, Some(step), |entry| {
                entry.summary = Some(how.to_string());
            }),
            Gate::Declined { message } => {
                run.stop_at(step, &message, crate::exit_code::FAILURE)
                    .await?;
                Err(ExecError::Declined {
                    step: step.id.clone(),
                })
            }
            Gate::Closed { message } => stopped_at_gate(run, step, message).await,
        }
    }

    /// A failed verification stops the run at its step as a gate does: the checkpoint waits
    /// there, the journal says what failed with the evidence and the way back, and the run ends
    /// with [`ExecError::StoppedAtGate`] (exit 3) — unless the operator accepted the findings with
    /// `--approve STEP` (not `--yes`: a failed verification is never approved wholesale), which
    /// records the step as done and goes on. A resume verifies again. Any other error is handed
    /// back as it is.
    async fn after_failed_step(
        &self,
        plan: &Plan,
        run: &mut Run<'_>,
        index: usize,
        step: &PlannedStep,
        error: ExecError,
    ) -> Result<(), ExecError> {
        let failed = match &error {
            ExecError::StepFailed { source, .. } => match source.as_ref() {
                StepError::Verify(verify) => verify.failed().cloned(),
                _ => None,
            },
            _ => None,
        };
        let Some(failed) = failed else {
            return Err(error);
        };
        if run.options.approved.contains(&step.id) {
            let summary = format!(
                "verification failed and its findings were accepted with `--approve`: {}",
                crate::errors::error_chain(&error)
            );
            let record = run.checkpoint.step_mut(index);
            record.state = StepState::Succeeded;
            record.summary = Some(summary.clone());
            run.checkpoint.run = RunState::InProgress;
            run.save(Change::step(index).and_run()).await?;
            return run.record(JournalEvent::Approved, Some(step), |entry| {
                entry.summary = Some(summary);
            });
        }
        let message = super::verification::gate_message(plan, &run.checkpoint, step, &failed);
        let what = failed
            .report
            .failed()
            .map(|finding| format!("{}: {}", finding.check, finding.summary))
            .collect::<Vec<_>>()
            .join("; ");
        run.record(JournalEvent::VerificationFailed, Some(step), |entry| {
            entry.summary = Some(what);
        })?;
        stopped_at_gate(run, step, message).await
    }

    /// Checks a step's `requires` right before it starts (the pre-flight could not when an
    /// earlier step of the run rolls the node agents).
    async fn check_requirement(
        &self,
        step: &PlannedStep,
        requirement: &crate::runbook::Requirement,
    ) -> Result<(), ExecError> {
        let behind = |problem: String| ExecError::NodeAgentsBehind {
            step: step.id.clone(),
            version: requirement.node_agents.clone(),
            problem,
        };
        let Some(client) = &self.kubernetes else {
            return Err(behind(
                "no cluster is configured to read the calico-node pods from (`--skip-preflight node-agents` if they run outside Kubernetes and you checked them)".to_string(),
            ));
        };
        let limit = self.printer.listing();
        super::preflight::node_agents::check_version(client, &requirement.node_agents, &limit)
            .await
            .map(|_| ())
            .map_err(behind)
    }

    /// Runs the one step of a one-step plan for real.
    pub(super) async fn execute_one(
        &self,
        plan: &Plan,
        step: &PlannedStep,
        options: &RunOneOptions,
    ) -> Result<Outcome, ExecError> {
        let journal = match &options.journal {
            Some(path) => Some(Journal::open(
                path,
                &uuid::Uuid::new_v4().to_string(),
                &plan.digest,
                &self.holder,
            )?),
            None => None,
        };
        let mut one = OneStep {
            executor: self,
            plan,
            options,
            journal,
        };
        step::run_step(step, &mut one).await
    }
}

/// One step of an upgrade run, as the step loop sees it.
struct UpgradeStep<'a, 'run> {
    executor: &'a Executor,
    plan: &'a Plan,
    index: usize,
    /// When the step's first attempt began (progress shows the time of all attempts).
    started: Instant,
    run: &'a mut Run<'run>,
}

impl StepRun for UpgradeStep<'_, '_> {
    fn journal(&mut self) -> Option<&mut Journal> {
        Some(&mut self.run.journal)
    }

    async fn before(&mut self, _: &PlannedStep) -> Result<(), ExecError> {
        let record = self.run.checkpoint.step_mut(self.index);
        record.state = StepState::Running;
        record.attempts += 1;
        record.started_at = Some(now_rfc3339());
        record.error = None;
        self.run.save(Change::step(self.index)).await
    }

    async fn perform(&mut self, step: &PlannedStep) -> Result<Outcome, StepError> {
        let crash_point = self.run.options.crash_point.as_ref();
        CrashPoint::fire_if(crash_point, &step.id, CrashWhen::Before);
        let result = match &step.action {
            Action::ResourceLabelEach(each) => self.perform_batches(step, each).await,
            _ => self.perform_action(step).await,
        };
        CrashPoint::fire_if(crash_point, &step.id, CrashWhen::After);
        result
    }

    async fn succeeded(
        &mut self,
        step: &PlannedStep,
        _: Attempt,
        outcome: &mut Outcome,
    ) -> Result<(), ExecError> {
        let run = &mut *self.run;
        if let Some(note) = record_digests(
            self.plan,
            self.index,
            &mut run.checkpoint,
            outcome.output.as_ref(),
        ) {
            outcome.summary = format!("{}; {note}", outcome.summary);
        }
        let record = run.checkpoint.step_mut(self.index);
        record.state = StepState::Succeeded;
        record.finished_at = Some(now_rfc3339());
        record.summary = Some(outcome.summary.clone());
        let mut change = Change::step(self.index);
        if let (Some(name), Some(output)) = (&step.register, outcome.output.clone()) {
            run.checkpoint.outputs.insert(name.clone(), output);
            change = change.and_output(name);
        }
        run.save(change).await?;
        run.progress.step_finished(
            self.index + 1,
            &step.id,
            "succeeded",
            self.started.elapsed(),
        );
        // A listing is there to be read: its names go to stderr, so the gate that usually follows
        // can ask about them.
        if let Action::KubeList(_) = step.action {
            run.progress.note(&format!("      {}", outcome.summary));
        }
        Ok(())
    }

    async fn failed(
        &mut self,
        step: &PlannedStep,
        attempt: Attempt,
        error: &StepError,
        retry_after: Option<Duration>,
    ) -> Result<(), ExecError> {
        if let Some(delay) = retry_after {
            self.run.checkpoint.step_mut(self.index).error = Some(error.to_string());
            self.run.progress.waiting(
                &step.id,
                &format!("failed: {error}"),
                attempt.number + 1,
                attempt.of,
                delay,
            );
            return Ok(());
        }
        let record = self.run.checkpoint.step_mut(self.index);
        record.state = StepState::Failed;
        record.finished_at = Some(now_rfc3339());
        record.error = Some(error_chain(error));
        self.run.checkpoint.run = RunState::Failed {
            step: step.id.clone(),
        };
        self.run.save(Change::step(self.index).and_run()).await?;
        self.run
            .progress
            .step_finished(self.index + 1, &step.id, "failed", self.started.elapsed());
        Ok(())
    }
}

impl UpgradeStep<'_, '_> {
    /// Labels the items of a `resource.label-each` step a batch at a time, from the first item not
    /// yet done, recording after each batch how many are done: a crash loses at most the batch in
    /// flight, and a resume re-reads that batch and writes only what is not labelled yet. The test
    /// crash hook also fires around each batch (`<step-id>@<batch>`, batches counted from 1).
    async fn perform_batches(
        &mut self,
        step: &PlannedStep,
        each: &ResourceLabelEach,
    ) -> Result<Outcome, StepError> {
        let store = self
            .executor
            .datastore
            .as_deref()
            .ok_or(StepError::NoDatastore {
                action: step.action.name(),
            })?;
        let release = api_release(store, self.executor.release.as_ref()).await;
        let size = label_each::batch_size(store);
        let total = each.names.len();
        let before = self
            .run
            .checkpoint
            .step(self.index)
            .items_done
            .unwrap_or(0)
            .min(total);
        let crash_point = self.run.options.crash_point.clone();
        let mut done = before;
        let mut tally = label_each::LabelTally::default();
        while done < total {
            let end = (done + size).min(total);
            let point = format!("{}@{}", step.id, done / size + 1);
            CrashPoint::fire_if(crash_point.as_ref(), &point, CrashWhen::Before);
            let batch = label_each::label_batch(
                store,
                each,
                &each.names[done..end],
                plan_semantics(),
                RunMode::Execute,
                &release,
            )
            .await?;
            CrashPoint::fire_if(crash_point.as_ref(), &point, CrashWhen::After);
            tally.add(batch.tally);
            done = end;
            let record = self.run.checkpoint.step_mut(self.index);
            record.items_done = Some(done);
            record.summary = Some(format!("{done} of {total} items done"));
            self.run
                .save(Change::step(self.index))
                .await
                .map_err(|source| StepError::Progress {
                    hint: source.hint(),
                    source: Box::new(source),
                })?;
            self.run
                .progress
                .note(&format!("      {done} of {total} items done"));
        }
        let mut summary = tally.summary(each, RunMode::Execute);
        if before > 0 {
            summary.push_str(&format!(
                "; {before} item(s) were done before the run was interrupted"
            ));
        }
        Ok(Outcome {
            summary: summary.clone(),
            transcript: vec![summary],
            output: None,
        })
    }

    async fn perform_action(&self, step: &PlannedStep) -> Result<Outcome, StepError> {
        let plan = self.plan;
        // `check` sees the cluster as it is now (the installed version changes during an upgrade).
        let facts = match &step.action {
            Action::Check(_) => match self.executor.facts_now(plan).await {
                Ok(facts) => facts,
                Err(_) => plan.facts.clone(),
            },
            _ => plan.facts.clone(),
        };
        let run = &*self.run;
        let mut context = self.executor.context(
            &facts,
            run.files_dir(),
            run.options.mirror_dir.clone(),
            plan_semantics(),
            &run.checkpoint.outputs,
            step.register.as_deref(),
        );
        context.recorded_digest = run.checkpoint.step(self.index).download_digest.clone();
        context.child_tracking = Some(actions::process::ChildTracking {
            file: run.child_file(),
            step: step.id.clone(),
        });
        context.run_started_at = Some(run.checkpoint.started_at.clone());
        context.run_id = Some(run.checkpoint.run_id.clone());
        context.progress = run.progress.clone();
        actions::perform(&context, &step.action, RunMode::Execute).await
    }
}

/// The step of a one-step command, as the step loop sees it: it only performs (and journals, when
/// asked).
struct OneStep<'a> {
    executor: &'a Executor,
    plan: &'a Plan,
    options: &'a RunOneOptions,
    journal: Option<Journal>,
}

impl StepRun for OneStep<'_> {
    fn journal(&mut self) -> Option<&mut Journal> {
        self.journal.as_mut()
    }

    async fn perform(&mut self, step: &PlannedStep) -> Result<Outcome, StepError> {
        let outputs = Default::default();
        let mut context: Context<'_> = self.executor.context(
            &self.plan.facts,
            self.options.files_dir(),
            None,
            self.options.semantics,
            &outputs,
            step.register.as_deref(),
        );
        // Writes of many resources stop at a safe point on Ctrl-C or SIGTERM and undo; other
        // actions keep the default (the process ends at once).
        if step.action.stops_on_signal() {
            context.interrupt = Interrupt::listen().ok();
        }
        actions::perform(&context, &step.action, RunMode::Execute).await
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

/// The run stops in front of `step` for a person (exit 3): recorded, the `--on-gate` hook told.
async fn stopped_at_gate(
    run: &mut Run<'_>,
    step: &PlannedStep,
    message: String,
) -> Result<(), ExecError> {
    run.stop_at(step, &message, crate::exit_code::STOPPED_AT_GATE)
        .await?;
    run.notify_gate(step, &message, Some(crate::exit_code::STOPPED_AT_GATE))
        .await;
    Err(ExecError::StoppedAtGate {
        step: step.id.clone(),
        message,
    })
}
