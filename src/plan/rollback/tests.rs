use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::*;
use crate::plan::Release;
use crate::plan::facts::{DiscoveredFacts, FactOverrides, Facts};
use crate::runbook::RollbackAdvice;

fn facts() -> Facts {
    Facts::assemble(
        &DiscoveredFacts::default(),
        &FactOverrides {
            from: Some(Release::new(3, 26, 4)),
            install_method: Some(crate::plan::InstallMethod::Manifest),
            ..FactOverrides::default()
        },
    )
    .expect("facts")
}

fn step(id: &str, action: &str, with: serde_json::Value) -> PlannedStep {
    let action = Action::from_parts(action, with).expect("action");
    PlannedStep::new(id, "r", Phase::Upgrade, action, id, "test")
}

fn undo(description: &str, action: Option<(&str, serde_json::Value)>) -> Option<PlannedUndo> {
    Some(PlannedUndo {
        description: description.to_string(),
        action: action.map(|(name, with)| Action::from_parts(name, with).unwrap()),
        from_backup: false,
    })
}

fn apply_manifest() -> PlannedStep {
    PlannedStep {
        undo: undo(
            "re-apply the previous manifest",
            Some((
                "kube.apply",
                json!({"source": {"file": "previous-manifest.yaml"}, "server_side": true}),
            )),
        ),
        ..step(
            "m/apply",
            "kube.apply",
            json!({"source": {"file": "upgrade.yaml"}, "server_side": true}),
        )
    }
}

fn label() -> PlannedStep {
    step(
        "h/label",
        "resource.label",
        json!({"kind": "HostEndpoint", "name": "a", "labels": {"x": "y"}}),
    )
}

fn plan(steps: Vec<PlannedStep>) -> Plan {
    Plan::new(
        "upgrade",
        Release::new(3, 26, 4),
        Release::new(3, 29, 2),
        facts(),
        steps,
    )
}

fn rollback(
    plan: &Plan,
    done: &[&str],
    outputs: BTreeMap<String, serde_json::Value>,
    backup: bool,
    to: Option<&str>,
) -> Result<Plan, RollbackRefused> {
    let completed: BTreeSet<String> = done.iter().map(|id| id.to_string()).collect();
    let run = RunToRollBack {
        plan,
        run_id: "run-1",
        completed: &completed,
        outputs: &outputs,
        backup: backup.then(|| ("/state/backups/run-1.jsonl".to_string(), "ab".repeat(32))),
        facts_now: facts(),
    };
    plan_rollback(&run, to)
}

fn ids(plan: &Plan) -> Vec<&str> {
    plan.steps.iter().map(|step| step.id.as_str()).collect()
}

#[test]
fn completed_steps_are_undone_newest_first_behind_one_confirmation() {
    let forward = plan(vec![
        step(
            "m/fetch",
            "fetch",
            json!({"url": "https://example.org/a.yaml", "file": "upgrade.yaml"}),
        ),
        label(),
        apply_manifest(),
        step("m/wait", "pause", json!({"message": "go?"})),
    ]);
    let back = rollback(
        &forward,
        &["m/fetch", "h/label", "m/apply", "m/wait"],
        BTreeMap::new(),
        true,
        None,
    )
    .unwrap();
    assert_eq!(
        ids(&back),
        [
            "undo/confirm",
            "undo/m/apply",
            "undo/datastore",
            "undo/verify"
        ]
    );
    assert_eq!(back.procedure, ROLLBACK_PROCEDURE);
    assert_eq!(back.rolls_back.as_deref(), Some("run-1"));
    assert_eq!(
        (back.from.to_string(), back.to.to_string()),
        ("v3.29.2".into(), "v3.26.4".into())
    );
    assert!(back.digest_is_valid());
    let Action::DatastoreRestore(restore) = &back.steps[2].action else {
        panic!("{:?}", back.steps[2].action)
    };
    assert_eq!(restore.kinds, ["HostEndpoint"]);
    assert_eq!(restore.file, "/state/backups/run-1.jsonl");
    assert!(!restore.include_ipam);
}

#[test]
fn only_completed_steps_after_the_target_are_undone() {
    let forward = plan(vec![label(), apply_manifest()]);
    let back = rollback(&forward, &["h/label"], BTreeMap::new(), true, None).unwrap();
    assert_eq!(
        ids(&back),
        ["undo/confirm", "undo/datastore", "undo/verify"]
    );
    let back = rollback(
        &forward,
        &["h/label", "m/apply"],
        BTreeMap::new(),
        false,
        Some("h/label"),
    )
    .unwrap();
    assert_eq!(
        ids(&back),
        ["undo/confirm", "undo/m/apply", "undo/verify"],
        "no backup needed"
    );
    assert_eq!(
        rollback(
            &forward,
            &["h/label"],
            BTreeMap::new(),
            true,
            Some("m/apply")
        ),
        Err(RollbackRefused::UnknownTarget(
            "m/apply".into(),
            "run-1".into()
        ))
    );
    assert_eq!(
        rollback(
            &forward,
            &["h/label", "m/apply"],
            BTreeMap::new(),
            true,
            Some("m/apply")
        ),
        Err(RollbackRefused::NothingToRollBack("run-1".into()))
    );
}

#[test]
fn an_irreversible_step_is_a_point_of_no_return_with_what_remains_by_hand() {
    let delete = PlannedStep {
        irreversible: true,
        rollback: Some(RollbackAdvice {
            before: "stop here".into(),
            after: "re-add it by hand".into(),
        }),
        ..step(
            "h/delete",
            "resource.delete",
            json!({"targets": [{"kind": "HostEndpoint", "name": "a"}]}),
        )
    };
    let forward = plan(vec![delete, apply_manifest()]);
    let refused = rollback(
        &forward,
        &["h/delete", "m/apply"],
        BTreeMap::new(),
        true,
        None,
    );
    let error = refused.unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot roll back past step `h/delete`: it is irreversible (a point of no return); the steps after it can be rolled back with `--to h/delete`; what remains by hand: re-add it by hand"
    );
    let back = rollback(
        &forward,
        &["h/delete", "m/apply"],
        BTreeMap::new(),
        true,
        Some("h/delete"),
    );
    assert_eq!(
        ids(&back.unwrap()),
        ["undo/confirm", "undo/m/apply", "undo/verify"]
    );
}

#[test]
fn a_writing_step_without_undo_stops_the_rollback_and_a_stated_nothing_does_not() {
    let patch = step(
        "k/patch",
        "kube.patch",
        json!({"object": {"api_version": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n"},
               "patch": {"data": {"a": "b"}}}),
    );
    let forward = plan(vec![patch.clone()]);
    let error = rollback(&forward, &["k/patch"], BTreeMap::new(), true, None).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("its runbook declares no `undo:` for this `kube.patch` step"),
        "{error}"
    );
    let forward = plan(vec![PlannedStep {
        undo: undo("nothing to undo", None),
        ..patch
    }]);
    let back = rollback(&forward, &["k/patch"], BTreeMap::new(), true, None).unwrap();
    assert_eq!(ids(&back), ["undo/confirm", "undo/verify"]);
}

#[test]
fn datastore_writes_need_the_runs_backup() {
    let forward = plan(vec![label()]);
    assert_eq!(
        rollback(&forward, &["h/label"], BTreeMap::new(), false, None),
        Err(RollbackRefused::NoBackup {
            step: "h/label".into(),
            run: "run-1".into()
        })
    );
}

#[test]
fn helm_rolls_back_to_the_revision_the_run_recorded() {
    let upgrade = PlannedStep {
        undo: undo(
            "helm rollback",
            Some((
                "helm",
                json!({"args": ["rollback", "calico", "--namespace", "tigera-operator"],
                       "revision_from": "upgrade_release"}),
            )),
        ),
        ..step(
            "h/upgrade",
            "helm",
            json!({"args": ["upgrade", "calico", "chart"]}),
        )
    };
    let forward = plan(vec![upgrade]);
    let outputs = BTreeMap::from([(
        "upgrade_release".to_string(),
        json!({"exit_code": 0, "revision_before": 4}),
    )]);
    let back = rollback(&forward, &["h/upgrade"], outputs, true, None).unwrap();
    let Action::Helm(helm) = &back.steps[1].action else {
        panic!()
    };
    assert_eq!(
        helm.args,
        ["rollback", "calico", "--namespace", "tigera-operator", "4"]
    );
    assert_eq!(helm.revision_from, None);
    assert_eq!(
        rollback(&forward, &["h/upgrade"], BTreeMap::new(), true, None),
        Err(RollbackRefused::NoRevision {
            step: "h/upgrade".into(),
            output: "upgrade_release".into()
        })
    );
}

/// Issue 30, item 2's gaps: the undo reads the run's own `save_previous` copy, the rollouts the run
/// waited for are waited for again, and the rollback ends with a verification against the run's
/// pre-run baseline at the release it goes back to.
#[test]
fn a_rollback_reads_its_runs_own_copy_waits_again_and_ends_with_its_verification() {
    let mut apply = apply_manifest();
    if let Action::KubeApply(forward) = &mut apply.action {
        forward.save_previous = Some("previous-manifest.yaml".into());
    }
    let wait = step(
        "m/wait-rollout",
        "kube.wait-rollout",
        json!({"namespace": "kube-system", "kind": "DaemonSet", "name": "calico-node"}),
    );
    let mut steps = crate::plan::verification::around(
        vec![label(), apply, wait],
        &Release::new(3, 29, 2),
        &facts(),
    );
    steps.iter_mut().for_each(|step| step.needs.clear());
    let forward = plan(steps);
    let baseline = json!({"taken_at": "2026-11-28T00:00:00Z", "bgp": {}, "resources": {}});
    let outputs = BTreeMap::from([(BASELINE_OUTPUT.to_string(), baseline)]);
    let done = ["verify/baseline", "h/label", "m/apply", "m/wait-rollout"];
    let back = rollback(&forward, &done, outputs.clone(), true, None).unwrap();
    assert_eq!(
        ids(&back),
        [
            "undo/confirm",
            "undo/m/apply",
            "undo/m/wait-rollout",
            "undo/datastore",
            "undo/verify"
        ]
    );
    let Action::KubeApply(undo) = &back.steps[1].action else {
        panic!("{:?}", back.steps[1].action)
    };
    assert_eq!(
        undo.source,
        ManifestSource::File("runs/run-1/previous-manifest.yaml".into())
    );
    let Action::UpgradeVerify(verify) = &back.steps[4].action else {
        panic!("{:?}", back.steps[4].action)
    };
    assert_eq!(verify.version, "v3.26.4", "the release rolled back to");
    assert_eq!(
        verify
            .baseline
            .as_ref()
            .map(|baseline| baseline.taken_at.as_str()),
        Some("2026-11-28T00:00:00Z"),
        "the baseline the run took before its first write"
    );
    assert_eq!(
        verify.changed_by.keys().collect::<Vec<_>>(),
        ["HostEndpoint"]
    );
    // Going back only to after the manifest step leaves the node agents at the target.
    let back = rollback(&forward, &done, outputs, true, Some("m/apply")).unwrap();
    let Some(Action::UpgradeVerify(verify)) = back.steps.last().map(|step| &step.action) else {
        panic!("{:?}", back.steps)
    };
    assert_eq!(verify.version, "v3.29.2");
}
