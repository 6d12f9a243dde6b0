//! `netctl upgrade rollback` (issue 30, item 2) on the manifest path against the strict Kubernetes
//! test server: the rollback plan is shown first and waits at its confirmation, the undo of the
//! manifest step re-applies the DaemonSet spec saved before it server-side, and `upgrade history`
//! tells a failed, a rolled-back and a succeeded run apart. The operator path's refusal past an
//! irreversible step and the Helm path's `helm rollback` are in `operator.rs` and `helm.rs`.

use serde_json::{Value, json};

use super::common::*;
use super::manifest_kubernetes::kubernetes_manifest_cluster;
use crate::exec_common::text;
use crate::support::KubeApiServer;

/// The DaemonSet's pod template, as the rollback must put it back.
fn node_template(kube: &KubeApiServer) -> Value {
    kube.get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .expect("DaemonSet calico-node")["spec"]["template"]
        .clone()
}

fn node_image(kube: &KubeApiServer) -> String {
    node_template(kube)["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// One upgrade v3.25.2 → v3.29.0 to its end: killed after the manifest step (the test server's
/// DaemonSet controller rolls the node agents), then resumed.
fn upgrade_to_the_end(kube: &KubeApiServer, operator: &Operator, mirror: &std::path::Path) {
    set_kube_version(kube, "v3.25.2");
    let (plan_file, _) = plan(operator, "v3.29.0", &["--no-manifest-edits"]);
    let apply = Apply::plan(&plan_file)
        .mirror(mirror)
        .yes()
        .discard_checkpoint();
    apply_killed_at(operator, &apply, "manifest-upgrade/apply-manifest:after");
    set_kube_version(kube, "v3.29.0");
    resume_to_the_end(operator, mirror);
}

#[test]
fn a_rollback_after_the_manifest_step_puts_the_previous_daemonset_spec_back() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    kube.run_daemon_set("kube-system", "calico-node", &["node-0", "node-1"]);
    let before = node_template(&kube);
    assert_eq!(node_image(&kube), "docker.io/calico/node:v3.25.2");

    // A first run fails: the manifest is not in its mirror.
    let empty = operator.home().join("empty-mirror");
    std::fs::create_dir_all(&empty).unwrap();
    let (plan_file, _) = plan(&operator, "v3.29.0", &["--no-manifest-edits"]);
    let failed = operator.apply(&Apply::plan(&plan_file).mirror(&empty).yes());
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));

    // The second completes, and the node agents run v3.29.0.
    upgrade_to_the_end(&kube, &operator, &mirror);
    assert_eq!(node_image(&kube), "docker.io/calico/node:v3.29.0");
    assert_ne!(node_template(&kube), before);

    // The dry run shows the rollback plan and what its undo would send, and changes nothing.
    let rehearsed = operator.run(&["upgrade", "rollback", "--dry-run"], &[]);
    assert_success(&rehearsed, "rollback --dry-run");
    let shown = text(&rehearsed.stdout);
    assert!(shown.contains("undo/confirm"), "{shown}");
    assert!(
        shown.contains("undo/manifest-upgrade/apply-manifest")
            && shown.contains("Re-apply the objects as they were live before the upgrade"),
        "{shown}"
    );
    assert!(shown.contains("previous-manifest.yaml"), "{shown}");
    assert_eq!(node_image(&kube), "docker.io/calico/node:v3.29.0");

    // Without a terminal and `--yes`, the rollback stops at its confirmation (exit 3) before any
    // write; the approval continues it as any gate.
    let asked = operator.run(&["upgrade", "rollback"], &[]);
    let stderr = text(&asked.stderr);
    assert_eq!(asked.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("undo/confirm"), "{stderr}");
    assert_eq!(node_image(&kube), "docker.io/calico/node:v3.29.0");
    let approved = operator.apply(&Apply::resume().approve("undo/confirm"));
    assert_success(&approved, "resume --approve undo/confirm");
    assert_eq!(
        node_template(&kube),
        before,
        "the DaemonSet's pod template is as it was before the upgrade"
    );
    // The rollback waited for the node agents to roll back and verified them at v3.25.2.
    assert_eq!(
        pod_images(&kube, "kube-system"),
        [
            "node-0 docker.io/calico/node:v3.25.2",
            "node-1 docker.io/calico/node:v3.25.2"
        ]
    );
    let resumed = text(&approved.stderr);
    assert!(
        resumed.contains("undo/manifest-upgrade/wait-node-agents: succeeded")
            && resumed.contains("undo/verify: succeeded"),
        "{resumed}"
    );
    let status = status_json(&operator);
    assert_eq!(status["plan"]["procedure"], "rollback", "{status}");
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );

    // A rollback of a rollback is refused; an upgrade afterwards succeeds again.
    let again = operator.run(&["upgrade", "rollback", "--yes"], &[]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("is itself a rollback"),
        "{}",
        text(&again.stderr)
    );
    upgrade_to_the_end(&kube, &operator, &mirror);

    // History: newest first — succeeded, rolled back (with its rollback), failed.
    let listed = operator.run(&["upgrade", "history", "-o", "json"], &[]);
    assert_success(&listed, "upgrade history");
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let results: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["result"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["succeeded", "rolled-back", "failed"], "{runs:#}");
    assert_eq!(runs[1]["rollback"]["result"], "succeeded", "{runs:#}");
    assert_eq!(runs[1]["rollback"]["run_id"], runs[1]["by"], "{runs:#}");
    assert_eq!(
        runs[2]["step"], "manifest-upgrade/download-manifest",
        "{runs:#}"
    );
    let table = operator.run(&["upgrade", "history"], &[]);
    let table = text(&table.stdout);
    assert!(table.contains("rolled back (by run "), "{table}");
    assert_eq!(json!(runs.as_array().unwrap().len()), json!(3), "{table}");
}

/// The etcd manifest path (v3.13 → v3.27) rolled back after its manifest step, against real etcd:
/// the DaemonSet's template is re-applied, the temporary policy the run made is deleted by its
/// declared undo, and the host endpoint the run labelled comes back from the run's backup.
#[test]
fn a_rollback_on_etcd_puts_datastore_writes_back_from_the_backup() {
    let (etcd, kube) = etcd_manifest_cluster();
    kube.run_daemon_set("kube-system", "calico-node", &["node-0", "node-1"]);
    let before = node_template(&kube);
    let endpoint = format!("{ROOT}/hostendpoints/node-a-all");
    let endpoint_before: Value = serde_json::from_str(&etcd.get(&endpoint).unwrap()).unwrap();
    let (operator, mirror, plan_file) = etcd_manifest_plan(&etcd, &kube);
    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "etcd-upgrade/apply-manifest:after");
    let policy = format!("{ROOT}/globalnetworkpolicies/allow-all-upgrade");
    assert!(etcd.get(&policy).is_some(), "the run made its policy");
    let labelled: Value = serde_json::from_str(&etcd.get(&endpoint).unwrap()).unwrap();
    assert_eq!(
        labelled["metadata"]["labels"]["host-endpoint-upgrade"], "",
        "{labelled}"
    );
    assert_ne!(node_template(&kube), before);

    let rolled = operator.run(&["upgrade", "rollback", "--yes"], &[]);
    assert_success(&rolled, "upgrade rollback");
    let shown = text(&rolled.stdout);
    for step in [
        "undo/etcd-upgrade/apply-manifest",
        "undo/hostendpoint-preparation/apply-allow-all-upgrade",
        "undo/datastore",
    ] {
        assert!(shown.contains(step), "{step} in {shown}");
    }
    assert!(
        shown.contains("Put back from the run's backup what steps `hostendpoint-preparation/label-all-interfaces-heps[0]` wrote")
            || shown.contains("Put back from the run's backup what steps `hostendpoint-preparation/label-all-interfaces-heps`"),
        "{shown}"
    );
    assert_eq!(
        node_template(&kube),
        before,
        "the DaemonSet's template is back"
    );
    assert_eq!(etcd.get(&policy), None, "the policy the run made is gone");
    let endpoint_after: Value = serde_json::from_str(&etcd.get(&endpoint).unwrap()).unwrap();
    assert_eq!(
        endpoint_after["metadata"]["labels"], endpoint_before["metadata"]["labels"],
        "{endpoint_after}"
    );
    assert_eq!(endpoint_after["spec"], endpoint_before["spec"]);
}

/// Issue 30, item 2's gaps on the manifest path: the undo deletes what the new manifest added
/// (its CRD stays), and each run keeps its own `previous-manifest.yaml` (`files/runs/<run id>/`),
/// so the rollback of a second run in the same state directory goes back to what that run
/// replaced — v3.29.0 —, not to the first run's v3.25.2.
#[test]
fn a_rollback_deletes_what_the_upgrade_added_and_uses_its_own_runs_previous_manifest() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    kube.run_daemon_set("kube-system", "calico-node", &["node-0", "node-1"]);
    upgrade_to_the_end(&kube, &operator, &mirror);
    assert_eq!(node_image(&kube), "docker.io/calico/node:v3.29.0");

    // v3.30.7's manifest adds a ConfigMap and a CRD that were not live before.
    let added = "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-added\n  namespace: kube-system\ndata:\n  new: \"yes\"\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: stagedthings.crd.projectcalico.org\nspec:\n  group: crd.projectcalico.org\n  names: {kind: StagedThing, plural: stagedthings, singular: stagedthing, listKind: StagedThingList}\n  scope: Cluster\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";
    let manifest = format!("{}{added}", manifest_for("v3.30.7", "kubernetes"));
    let mirror = super::common::mirror(&operator, "v3.30.7", "calico.yaml", &manifest);
    let (plan_file, _) = plan(&operator, "v3.30.7", &["--no-manifest-edits"]);
    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    set_kube_version(&kube, "v3.30.7");
    resume_to_the_end(&operator, &mirror);
    assert_eq!(node_image(&kube), "docker.io/calico/node:v3.30.7");
    assert!(
        kube.get("v1", "configmaps", "kube-system", "calico-added")
            .is_some()
    );

    // Each run saved its own copy; the second run's header lists what it created.
    let history = operator.run(&["upgrade", "history", "-o", "json"], &[]);
    let runs: Value = serde_json::from_slice(&history.stdout).unwrap();
    let (second, first) = (
        runs[0]["run_id"].as_str().unwrap(),
        runs[1]["run_id"].as_str().unwrap(),
    );
    let saved = |run: &str| {
        let path = operator
            .home()
            .join(format!("state/files/runs/{run}/previous-manifest.yaml"));
        std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("no {}", path.display()))
    };
    assert!(saved(first).contains("docker.io/calico/node:v3.25.2"));
    let second_copy = saved(second);
    assert!(
        second_copy.contains("docker.io/calico/node:v3.29.0"),
        "{second_copy}"
    );
    assert!(
        second_copy.contains("#   v1 ConfigMap kube-system/calico-added\n")
            && second_copy.contains(
                "#   apiextensions.k8s.io/v1 CustomResourceDefinition stagedthings.crd.projectcalico.org\n"
            ),
        "{second_copy}"
    );

    let rolled = operator.run(&["upgrade", "rollback", "--yes"], &[]);
    assert_success(&rolled, "upgrade rollback");
    assert!(
        text(&rolled.stdout).contains(&format!("-f runs/{second}/previous-manifest.yaml")),
        "{}",
        text(&rolled.stdout)
    );
    assert_eq!(
        node_image(&kube),
        "docker.io/calico/node:v3.29.0",
        "back to what run 2 replaced"
    );
    assert_eq!(
        pod_images(&kube, "kube-system"),
        [
            "node-0 docker.io/calico/node:v3.29.0",
            "node-1 docker.io/calico/node:v3.29.0"
        ]
    );
    assert!(
        kube.get("v1", "configmaps", "kube-system", "calico-added")
            .is_none(),
        "the object the upgrade created is deleted"
    );
    assert!(
        kube.get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            "stagedthings.crd.projectcalico.org"
        )
        .is_some(),
        "a CRD the upgrade created stays"
    );
    let journal = std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap();
    assert!(
        journal.contains("deleted 1 object(s) it lists as not live before"),
        "{journal}"
    );
}
