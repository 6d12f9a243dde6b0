//! The way back of a run, as a plan of its own (`netctl upgrade rollback`, issue 30 item 2).
//!
//! Each step of a plan may carry a [`PlannedUndo`] (a runbook step's `undo:`): an action that puts
//! back what the step changed, `fromBackup` (the kinds the step writes, as the run's backup taken
//! before its first write holds them), or nothing to undo (said in words). [`plan_rollback`] turns
//! the completed steps of a run, newest first, into the undo steps of a new plan under the
//! procedure `rollback`, which the one executor runs like any plan (lock, journal, dry run,
//! gates). A step that reads only needs no undo; a datastore write without `undo:` goes back from
//! the backup; any other step without one, and every `irreversible` step, is a point of no return:
//! a rollback that would go past it is refused, naming it, why, and what remains by hand.
//!
//! Pure: the caller reads the checkpoint, the backup's digest and the registered outputs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::action::{
    BASELINE_OUTPUT, Baseline, DatastoreRestore, Helm, ManifestSource, Pause, UpgradeVerify,
    VerifyScope, previous_file_of_run,
};
use super::{Action, Phase, Plan, PlannedStep};

/// The procedure name of a rollback plan.
pub const ROLLBACK_PROCEDURE: &str = "rollback";

/// The runbook name the undo steps carry (their ids are `undo/<step id>`).
pub const UNDO_RUNBOOK: &str = "undo";

/// The gate every rollback plan starts with.
pub const CONFIRM_STEP: &str = "undo/confirm";

/// A step's way back, rendered with the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedUndo {
    /// What going back does, in words.
    pub description: String,
    /// The action that goes back; `None` with `from_backup` false: nothing to undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// The kinds the step writes, put back from the run's backup (`datastore.restore`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_backup: bool,
}

/// What the rollback planner is told of the run it goes back from.
pub struct RunToRollBack<'a> {
    pub plan: &'a Plan,
    pub run_id: &'a str,
    /// The ids of the steps that completed (skipped and pending steps changed nothing).
    pub completed: &'a BTreeSet<String>,
    /// The run's registered outputs (a `helm` undo takes the revision recorded there).
    pub outputs: &'a BTreeMap<String, serde_json::Value>,
    /// The run's backup and its sha256, when it took one.
    pub backup: Option<(String, String)>,
    /// The facts as the cluster shows them now (the forward plan's describe the cluster before
    /// it): what the executor checks the rollback plan against before it starts.
    pub facts_now: super::Facts,
}

/// Why there is no rollback plan.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RollbackRefused {
    #[error(
        "cannot roll back past step `{step}`: {reason}; the steps after it can be rolled back with `--to {step}`{by_hand}"
    )]
    PointOfNoReturn {
        step: String,
        reason: String,
        /// What remains to do by hand (the step's rollback advice), with its leading separator.
        by_hand: String,
    },
    #[error(
        "step `{0}` is not a completed step of run `{1}`: `--to` names the step to go back to, which stays done"
    )]
    UnknownTarget(String, String),
    #[error("run `{0}` has no completed step after the one to go back to: nothing to roll back")]
    NothingToRollBack(String),
    #[error(
        "step `{step}` goes back from the run's backup, and run `{run}` took none (`--no-backup`)"
    )]
    NoBackup { step: String, run: String },
    #[error(
        "step `{step}` goes back to the Helm revision its run recorded as `{output}`, and the run has no such output"
    )]
    NoRevision { step: String, output: String },
}

impl crate::errors::Hint for RollbackRefused {
    fn hint(&self) -> Option<String> {
        match self {
            RollbackRefused::PointOfNoReturn { .. } => Some(
                "`netctl upgrade plan` shows which steps are irreversible and what each leaves to do by hand"
                    .to_string(),
            ),
            RollbackRefused::UnknownTarget(..) => {
                Some("`netctl upgrade status` lists the run's steps and their states".to_string())
            }
            RollbackRefused::NoBackup { .. } => Some(
                "put the datastore back by hand (`netctl datastore restore -f FILE` of a backup you took), then roll back with `--to` the step after it".to_string(),
            ),
            _ => None,
        }
    }
}

/// The actions that change nothing a rollback must put back.
fn reads_only(action: &Action) -> bool {
    matches!(
        action,
        Action::Pause(_)
            | Action::Check(_)
            | Action::ResourceGet(_)
            | Action::ResourceList(_)
            | Action::ResourceWait(_)
            | Action::KubeList(_)
            | Action::KubeWaitRollout(_)
            | Action::Fetch(_)
            | Action::NodeStatus(_)
            | Action::UpgradeBaseline(_)
            | Action::UpgradeVerify(_)
    )
}

/// The undo of a completed step: `Ok(None)` when there is nothing to undo.
fn undo_of(step: &PlannedStep) -> Result<Option<PlannedUndo>, RollbackRefused> {
    let refused = |reason: String| RollbackRefused::PointOfNoReturn {
        step: step.id.clone(),
        reason,
        by_hand: step
            .rollback
            .as_ref()
            .map(|advice| format!("; what remains by hand: {}", advice.after.trim()))
            .unwrap_or_default(),
    };
    if step.irreversible {
        return Err(refused(
            "it is irreversible (a point of no return)".to_string(),
        ));
    }
    if let Some(undo) = &step.undo {
        return Ok(Some(undo.clone()));
    }
    if reads_only(&step.action) {
        return Ok(None);
    }
    if !super::verification::written_kinds(&step.action).is_empty() {
        return Ok(Some(PlannedUndo {
            description: "Put back what it wrote from the run's backup".to_string(),
            action: None,
            from_backup: true,
        }));
    }
    Err(refused(format!(
        "its runbook declares no `undo:` for this `{}` step",
        step.action.name()
    )))
}

/// The rollback plan of `run`: the undo of each completed step after `to` (all when `None`),
/// newest first.
pub fn plan_rollback(run: &RunToRollBack<'_>, to: Option<&str>) -> Result<Plan, RollbackRefused> {
    let plan = run.plan;
    let start = match to {
        Some(target) => {
            let index = plan
                .steps
                .iter()
                .position(|step| step.id == target && run.completed.contains(&step.id))
                .ok_or_else(|| {
                    RollbackRefused::UnknownTarget(target.to_string(), run.run_id.to_string())
                })?;
            index + 1
        }
        None => 0,
    };
    let undone: Vec<&PlannedStep> = plan.steps[start..]
        .iter()
        .filter(|step| run.completed.contains(&step.id))
        .collect();
    let mut steps = Vec::new();
    let mut restore_kinds: BTreeSet<String> = BTreeSet::new();
    let mut restore_for: Vec<String> = Vec::new();
    for step in undone.iter().rev() {
        let Some(undo) = undo_of(step)? else {
            continue;
        };
        if undo.from_backup {
            restore_kinds.extend(
                super::verification::written_kinds(&step.action)
                    .into_iter()
                    .map(|kind| kind.to_string()),
            );
            restore_for.push(step.id.clone());
            continue;
        }
        let Some(action) = undo.action else {
            continue;
        };
        let action = with_run_file(
            with_recorded_revision(action, step, run.outputs)?,
            step,
            run.run_id,
        );
        steps.push(PlannedStep::new(
            format!("{UNDO_RUNBOOK}/{}", step.id),
            UNDO_RUNBOOK,
            Phase::Upgrade,
            action,
            undo.description,
            format!("completed step `{}` of run {}", step.id, run.run_id),
        ));
    }
    // The rollouts the run waited for are waited for again, the way back rolled them too.
    for step in undone
        .iter()
        .filter(|step| matches!(step.action, Action::KubeWaitRollout(_)))
    {
        steps.push(PlannedStep::new(
            format!("{UNDO_RUNBOOK}/{}", step.id),
            UNDO_RUNBOOK,
            Phase::Upgrade,
            step.action.clone(),
            format!("Wait again, for the way back: {}", step.description),
            format!("completed step `{}` of run {}", step.id, run.run_id),
        ));
    }
    if !restore_for.is_empty() {
        let (file, sha256) = run
            .backup
            .clone()
            .ok_or_else(|| RollbackRefused::NoBackup {
                step: restore_for[0].clone(),
                run: run.run_id.to_string(),
            })?;
        let oldest = restore_for.last().cloned().unwrap_or_default();
        steps.push(PlannedStep::new(
            format!("{UNDO_RUNBOOK}/datastore"),
            UNDO_RUNBOOK,
            Phase::Upgrade,
            Action::DatastoreRestore(DatastoreRestore {
                file,
                sha256,
                include_ipam: false,
                kinds: restore_kinds.into_iter().collect(),
            }),
            format!(
                "Put back from the run's backup what steps {} wrote",
                restore_for
                    .iter()
                    .rev()
                    .map(|id| format!("`{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!("datastore writes of run {} back to `{oldest}`", run.run_id),
        ));
    }
    if undone.is_empty() {
        return Err(RollbackRefused::NothingToRollBack(run.run_id.to_string()));
    }
    steps.push(verification(run, &undone));
    // The plan is shown, then a person says go (`--yes`, `--approve undo/confirm`, or the
    // terminal), as at any gate.
    let message = format!(
        "Roll back run {} ({} {} → {}): {} undo step(s) of {} completed step(s), newest first; the others changed nothing a rollback puts back. Continue?",
        run.run_id,
        plan.procedure,
        plan.from,
        plan.to,
        steps.len(),
        undone.len()
    );
    steps.insert(
        0,
        PlannedStep::new(
            CONFIRM_STEP,
            UNDO_RUNBOOK,
            Phase::Upgrade,
            Action::Pause(Pause { message }),
            format!("Confirm rolling back run {}", run.run_id),
            "every rollback is confirmed before its first write",
        ),
    );
    let mut rollback = Plan::new(
        ROLLBACK_PROCEDURE,
        plan.to.clone(),
        plan.from.clone(),
        run.facts_now.clone(),
        steps,
    );
    rollback.rolls_back = Some(run.run_id.to_string());
    rollback.digest = rollback.compute_digest();
    Ok(rollback)
}

/// The step a rollback ends with (`undo/verify`): the cluster verified as every upgrade plan's
/// last step verifies it, against the baseline the rolled-back run took before its first write —
/// the cluster the rollback returns to —, with the node agents at the run's source release when a
/// step that rolls them is undone (else at its target: `--to` kept that step). The kinds the run
/// wrote are excused as in its own verification (a restore leaves resources created since alone).
/// Without a recorded baseline the checks are absolute.
fn verification(run: &RunToRollBack<'_>, undone: &[&PlannedStep]) -> PlannedStep {
    let plan = run.plan;
    let forward = plan.steps.iter().find_map(|step| match &step.action {
        Action::UpgradeVerify(verify) if verify.nodes.is_empty() => Some(verify.clone()),
        _ => None,
    });
    let rolled_back = undone
        .iter()
        .any(|step| step.action.arguments().may_roll_workloads());
    let version = match rolled_back {
        true => plan.from.to_string(),
        false => plan.to.to_string(),
    };
    let baseline = run
        .outputs
        .get(BASELINE_OUTPUT)
        .and_then(|value| serde_json::from_value::<Baseline>(value.clone()).ok());
    let action = UpgradeVerify {
        version: version.clone(),
        scope: forward.as_ref().map_or(
            VerifyScope {
                operator: false,
                bgp_timeout: super::HumanDuration(std::time::Duration::from_secs(30)),
            },
            |verify| verify.scope.clone(),
        ),
        changed_by: forward.map(|verify| verify.changed_by).unwrap_or_default(),
        baseline_output: None,
        baseline: baseline.map(Box::new),
        nodes: Vec::new(),
    };
    PlannedStep::new(
        VERIFY_STEP,
        UNDO_RUNBOOK,
        Phase::Finish,
        Action::UpgradeVerify(action),
        format!(
            "Verify the cluster at {version} against the baseline run {} took before its first write",
            run.run_id
        ),
        "a rollback ends with its verification, as every plan (docs/executor.md, \"Rollback\")",
    )
}

/// The id of the rollback's verification.
pub const VERIFY_STEP: &str = "undo/verify";

/// An undo that re-applies a forward step's `save_previous` file reads the copy of the run it
/// goes back from (`runs/<run id>/<file>`), not the file of a later run in the same state
/// directory.
fn with_run_file(action: Action, step: &PlannedStep, run_id: &str) -> Action {
    let saved = match &step.action {
        Action::KubeApply(forward) => forward.save_previous.clone(),
        _ => None,
    };
    match (action, saved) {
        (Action::KubeApply(mut undo), Some(saved)) => {
            if let ManifestSource::File(file) = &undo.source
                && *file == saved
            {
                undo.source = ManifestSource::File(previous_file_of_run(&saved, run_id));
            }
            Action::KubeApply(undo)
        }
        (action, _) => action,
    }
}

/// A `helm` undo naming a registered output (`revision_from`) gets the revision recorded there
/// appended: `helm rollback RELEASE REVISION`.
fn with_recorded_revision(
    action: Action,
    step: &PlannedStep,
    outputs: &BTreeMap<String, serde_json::Value>,
) -> Result<Action, RollbackRefused> {
    let Action::Helm(helm) = action else {
        return Ok(action);
    };
    let Some(output) = &helm.revision_from else {
        return Ok(Action::Helm(helm));
    };
    let revision = outputs
        .get(output)
        .and_then(|value| value.get("revision_before"))
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| RollbackRefused::NoRevision {
            step: step.id.clone(),
            output: output.clone(),
        })?;
    let mut args = helm.args.clone();
    args.push(revision.to_string());
    Ok(Action::Helm(Helm {
        args,
        revision_from: None,
        ..helm
    }))
}

#[cfg(test)]
mod tests;
