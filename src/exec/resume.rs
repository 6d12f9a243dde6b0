//! How a run begins and how an interrupted one resumes.
//!
//! [`begin`] decides from the start mode, the given plan and the latest checkpoint which plan runs
//! and whether a checkpoint is continued; an unfinished run is never silently replaced. On resume,
//! [`Executor::reconcile`] looks at what the interrupted run left: a program of a step that is still
//! running stops the resume; every completed download is restored on this machine with the digest
//! the run recorded; completed steps' postconditions are checked again (drift is reported, not
//! undone); and a step caught mid-way is recorded as done when its postcondition holds, run again
//! when that is safe, or left to the operator (`--rerun`, `--skip`).

use std::collections::HashMap;
use std::path::Path;

use super::actions::{self, process::ChildRecord};
use super::checkpoint::{Change, Checkpoint, RunState, SavedRun, StepState};
use super::error::ExecError;
use super::journal::JournalEvent;
use super::run::Run;
use super::{ApplyOptions, Executor, RunMode, StartMode, plan_semantics};
use crate::plan::{Action, Facts, Plan};
use crate::resource::{Kind, ResourceKey};

/// What a run starts from.
pub(super) enum Begin {
    /// A new run of this plan (its facts are to be checked first).
    New(Plan),
    /// The checkpoint's run continues, with the checkpoint's own plan.
    Resume(Plan, Box<Checkpoint>),
}

/// Decides how the run begins; `existing` is the latest saved run (none with `Discard`).
pub(super) fn begin(
    start: StartMode,
    given: Option<Plan>,
    existing: Option<SavedRun>,
    state_dir: &Path,
) -> Result<Begin, ExecError> {
    let no_checkpoint = || ExecError::NoCheckpoint {
        directory: state_dir.to_path_buf(),
    };
    match (start, given, existing) {
        (StartMode::Resume, _, None) => Err(no_checkpoint()),
        (StartMode::Resume, given, Some(SavedRun { plan, checkpoint })) => {
            if let Some(given) = given
                && given.digest != checkpoint.plan_digest
            {
                return Err(ExecError::DifferentPlan {
                    checkpoint: checkpoint.plan_digest,
                    given: given.digest,
                });
            }
            if checkpoint.run == RunState::Completed {
                return Err(ExecError::AlreadyCompleted {
                    finished: checkpoint.updated_at,
                });
            }
            // The stored plan was checked against its digest when it was read.
            Ok(Begin::Resume(plan, Box::new(checkpoint)))
        }
        (_, None, _) => Err(no_checkpoint()),
        (StartMode::New, Some(_), Some(SavedRun { checkpoint, .. }))
            if checkpoint.run != RunState::Completed =>
        {
            Err(ExecError::UnfinishedRun {
                run_id: checkpoint.run_id,
                digest: checkpoint.plan_digest,
                started: checkpoint.started_at,
            })
        }
        (_, Some(plan), _) => Ok(Begin::New(plan)),
    }
}

/// Refuses `--approve`, `--rerun` and `--skip` naming a step the plan does not have.
pub(super) fn check_step_flags(plan: &Plan, options: &ApplyOptions) -> Result<(), ExecError> {
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
    Ok(())
}

impl Executor {
    /// On resume: re-checks completed steps' postconditions, and decides about interrupted steps.
    /// A completed step whose postcondition no longer holds (drift) stops the resume, unless
    /// `--repair` asks to run it again; returns the steps that are run again.
    pub(super) async fn reconcile(
        &self,
        plan: &Plan,
        run: &mut Run<'_>,
    ) -> Result<Vec<String>, ExecError> {
        let child_file = run.child_file();
        if let Some(child) = ChildRecord::read(&child_file) {
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
        let undone = UndoneBy::started(plan, &run.checkpoint);
        let mut drift: Vec<(usize, String)> = Vec::new();
        let mut facts: Option<Facts> = None;
        for (index, step) in plan.steps.iter().enumerate() {
            let state = run.checkpoint.step(index).state;
            let may_run_again = actions::is_idempotent(&step.action)
                || run.options.rerun.contains(&step.id)
                || run.options.skip.contains(&step.id);
            let Some(verify) = &step.verify else {
                if state == StepState::Running && !may_run_again {
                    return Err(ExecError::Interrupted {
                        step: step.id.clone(),
                    });
                }
                continue;
            };
            if !(state == StepState::Succeeded || state == StepState::Running) {
                continue;
            }
            // A later step that started undid it on purpose (the finish phase removes what the
            // preparation put in place): its postcondition is not expected to hold.
            if state == StepState::Succeeded && undone.undoes(index, verify) {
                continue;
            }
            if facts.is_none() {
                facts = Some(self.facts_now(plan).await?);
            }
            let facts_now = facts.as_ref().unwrap_or(&plan.facts);
            let outputs = run.checkpoint.outputs.clone();
            let context = self.context(
                facts_now,
                run.files_dir(),
                run.options.mirror_dir.clone(),
                plan_semantics(),
                &outputs,
                None,
            );
            let holds = actions::holds(&context, verify).await;
            match (state, holds) {
                (StepState::Succeeded, Ok(true)) => {}
                (StepState::Succeeded, Ok(false)) => {
                    let what = verify.to_string();
                    run.record(JournalEvent::Drift, Some(step), |entry| {
                        entry.summary = Some(format!(
                            "completed earlier; its postcondition ({what}) no longer holds"
                        ));
                    })?;
                    drift.push((index, what));
                }
                (StepState::Succeeded, Err(error)) => {
                    self.printer.warn(format!(
                        "cannot re-check the postcondition of step `{}`: {error}",
                        step.id
                    ));
                }
                // Interrupted, and its effect is already there: record it, do not run it again.
                (StepState::Running, Ok(true)) if !run.options.rerun.contains(&step.id) => {
                    run.recover(index, step).await?;
                }
                // Interrupted and not (yet) in effect: running it again is the fix.
                (StepState::Running, Ok(_)) => {}
                // Cannot tell, and running it again is not safe unless the operator says so.
                (StepState::Running, Err(error)) if !may_run_again => {
                    self.printer.warn(format!(
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
        if drift.is_empty() {
            return Ok(Vec::new());
        }
        if !run.options.repair {
            let steps: Vec<String> = drift
                .iter()
                .map(|(index, _)| plan.steps[*index].id.clone())
                .collect();
            run.checkpoint.run = RunState::Drifted {
                steps: steps.clone(),
            };
            run.save(Change::run()).await?;
            let (first, what) = &drift[0];
            return Err(ExecError::Drift {
                step: plan.steps[*first].id.clone(),
                what: what.clone(),
                others: steps[1..].to_vec(),
            });
        }
        let mut repaired = Vec::new();
        for (index, what) in drift {
            let step = &plan.steps[index];
            run.repair(index, step, &what).await?;
            repaired.push(step.id.clone());
        }
        Ok(repaired)
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
            let mut context = self.context(
                &plan.facts,
                run.files_dir(),
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
                run.record(JournalEvent::Restored, Some(step), |entry| {
                    entry.action = Some(step.action.name().to_string());
                    entry.summary = Some(outcome.summary);
                })?;
            }
        }
        Ok(())
    }
}

/// Which objects later started steps changed, so that an earlier step's postcondition about them
/// is not expected to hold: built once per resume, so checking a step costs the same in any plan.
struct UndoneBy {
    /// The last started step that wrote each resource.
    objects: HashMap<ResourceKey, usize>,
    /// The last started step that wrote any resource of a kind.
    kinds: HashMap<Kind, usize>,
}

impl UndoneBy {
    fn started(plan: &Plan, checkpoint: &Checkpoint) -> UndoneBy {
        let mut undone = UndoneBy {
            objects: HashMap::new(),
            kinds: HashMap::new(),
        };
        for (index, step) in plan.steps.iter().enumerate() {
            // A step that started may have taken effect before the run stopped (`running`,
            // `failed`): what it wrote is not expected to be as an earlier step left it either.
            if checkpoint.step(index).state == StepState::Pending {
                continue;
            }
            for key in step.action.written_resources().unwrap_or_default() {
                undone.kinds.insert(key.kind, index);
                undone.objects.insert(key, index);
            }
        }
        undone
    }

    /// Whether a step after `index` changed what `verify` reads.
    fn undoes(&self, index: usize, verify: &Action) -> bool {
        let later = |found: Option<&usize>| found.is_some_and(|writer| *writer > index);
        match read(verify) {
            Some(Read::Objects(objects)) => {
                objects.iter().any(|object| later(self.objects.get(object)))
            }
            Some(Read::Kind(kind)) => later(self.kinds.get(&kind)),
            None => false,
        }
    }
}

/// What a postcondition reads.
enum Read {
    Objects(Vec<ResourceKey>),
    Kind(Kind),
}

fn read(verify: &Action) -> Option<Read> {
    Some(match verify {
        Action::ResourceGet(target) => {
            let key = ResourceKey::new(target.kind, target.namespace.clone(), &target.name);
            Read::Objects(vec![key])
        }
        // A label's postcondition reads what the label writes.
        Action::ResourceLabel(_) | Action::ResourceLabelEach(_) => {
            Read::Objects(verify.written_resources()?)
        }
        Action::ResourceList(list) => Read::Kind(list.kind),
        Action::ResourceWait(wait) => Read::Kind(wait.kind),
        _ => return None,
    })
}
