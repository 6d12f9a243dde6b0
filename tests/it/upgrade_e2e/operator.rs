//! Operator installs: v3.26 → v3.29 across the OwnerReference UID change, its dry-run, and saved
//! plans refused because a cluster fact changed or cannot be checked.

use serde_json::{Value, json};

use super::common::*;
use crate::exec_common::text;
use crate::support::KubeApiServer;
use crate::support::snapshot::netctl_snapshot;

/// The operator manifest of a release: its namespace, service account and Deployment.
fn operator_manifest(image: &str) -> String {
    let deployment = netctl::yaml::to_string(&operator_deployment(image)).unwrap();
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tigera-operator\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: tigera-operator\n  namespace: tigera-operator\n---\n{deployment}"
    )
}

/// The `metadata.uid` of Tier `security` as a `projectcalico.org/v3` resource.
fn v3_tier_uid(operator: &Operator) -> String {
    let output = operator.run(&["get", "tier", "security", "-o", "json"], &[]);
    assert_success(&output, "get tier");
    let tier: Value = serde_json::from_slice(&output.stdout).unwrap();
    tier["metadata"]["uid"].as_str().unwrap().to_string()
}

fn tier(uid_hint: &str) -> Value {
    json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "Tier",
        "metadata": {"name": "security", "labels": {"generation-hint": uid_hint}},
        "spec": {"order": 100}
    })
}

/// The Kubernetes datastore with an operator install at v3.26 and Tier `security`.
fn operator_cluster() -> KubeApiServer {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.26.1");
    kube.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tigera-operator"}}),
    );
    kube.put(operator_deployment("quay.io/tigera/operator:v1.32.3"));
    let mut node = netctl::yaml::from_str::<Value>(
        manifest_for("v3.26.1", "kubernetes")
            .split("\n---\n")
            .nth(2)
            .unwrap(),
    )
    .unwrap();
    node["metadata"]["namespace"] = json!("calico-system");
    kube.put(node);
    kube.put(tier("old"));
    kube
}

#[test]
fn operator_install_from_v3_26_to_v3_29_detaches_and_reattaches_an_owner_reference() {
    let kube = operator_cluster();
    let operator = kubernetes_operator(&kube);
    let old_uid = v3_tier_uid(&operator);
    kube.put(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "tier-settings", "namespace": "apps",
                     "ownerReferences": [{"apiVersion": "projectcalico.org/v3", "kind": "Tier",
                                          "name": "security", "uid": old_uid, "controller": true}]},
        "data": {"mode": "strict"}
    }));
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "tigera-operator.yaml",
        &operator_manifest("quay.io/tigera/operator:v1.36.0"),
    );
    let (plan_file, plan) = plan(&operator, "v3.29.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "operator");
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(
        plan["facts"]["owner_references"]["value"],
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "apps", "name": "tier-settings",
                "ownerKind": "Tier", "ownerName": "security", "index": 0, "ownerUid": old_uid,
                "controller": true}])
    );

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(
        &operator,
        &apply,
        "operator-upgrade/apply-operator-manifest:after",
    );
    // Detached before the upgrade, so a UID change cannot garbage-collect the ConfigMap.
    let settings = kube
        .get("v1", "configmaps", "apps", "tier-settings")
        .unwrap();
    assert!(
        settings["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{settings}"
    );
    let deployment = kube
        .get(
            "apps/v1",
            "deployments",
            "tigera-operator",
            "tigera-operator",
        )
        .unwrap();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "quay.io/tigera/operator:v1.36.0"
    );

    // The upgrade: the Tier is replaced (deleted here, back with a new UID below), the operator and
    // node agents roll out and report the new version.
    let deleted = operator.run(&["delete", "tier", "security"], &[]);
    assert_success(&deleted, "delete tier");
    roll_out_in(
        &kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    operator_rolls_node_agents(&kube, "calico-system", "v3.29.0");
    set_kube_version(&kube, "v3.29.0");

    // The owner is gone and not back yet: the restore fails, naming the owner, and nothing changes.
    let resume = Apply::resume().mirror(&mirror).yes();
    let failed = operator.apply(&resume);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    let stderr = text(&failed.stderr);
    assert!(
        stderr.contains(
            "the owner Tier `security` of ConfigMap apps/tier-settings does not exist, so its reference cannot be restored"
        ) && stderr.contains("hint:")
            && stderr.contains("netctl get Tier security"),
        "{stderr}"
    );
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"],
        json!({"state": "failed", "step": "ownerreferences-restore/restore-owner-reference[0]"}),
        "{status}"
    );
    // The checkpoint records what was removed (the plan's facts), with the old UID.
    assert_eq!(
        status["plan"]["facts"]["owner_references"]["value"][0]["ownerUid"],
        json!(old_uid)
    );
    let status_text = operator.run(&["upgrade", "status"], &[]);
    assert!(
        text(&status_text.stdout).contains(&format!(
            "ConfigMap apps/tier-settings #0 → Tier security (uid {old_uid})"
        )),
        "{}",
        text(&status_text.stdout)
    );

    // The upgrade brings the Tier back with a new UID (and as it was otherwise: the verification
    // compares its labels and spec with the baseline).
    kube.put(tier("old"));
    // The UID of the v3 resource, as netctl (and the OwnerReference) names it.
    let new_uid = v3_tier_uid(&operator);
    assert_ne!(old_uid, new_uid);

    // A dry-run of the rest shows the exact request, with the UID it read.
    let rehearsed = operator.apply(&resume.clone().dry_run());
    assert_success(&rehearsed, "dry-run of the resume");
    let transcript = text(&rehearsed.stdout);
    assert!(
        transcript.contains(&format!(
            "would read the UID of Tier `security` through the datastore when the step runs: `{new_uid}` now"
        )) && transcript.contains(
            "would PATCH /api/v1/namespaces/apps/configmaps/tier-settings (application/json-patch+json, "
        ) && transcript.contains(&format!(
            r#"{{"op":"add","path":"/metadata/ownerReferences","value":[{{"apiVersion":"projectcalico.org/v3","kind":"Tier","name":"security","uid":"{new_uid}","controller":true}}]}}"#
        )),
        "{transcript}"
    );
    assert!(
        kube.get("v1", "configmaps", "apps", "tier-settings")
            .unwrap()["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "a dry-run sends with dryRun=All"
    );

    // Someone re-added the reference by hand with the old UID: the restore replaces it. The run is
    // killed right after the patch, before the checkpoint records it; the resume finds the
    // postcondition holding and does not patch again.
    let mut settings = kube
        .get("v1", "configmaps", "apps", "tier-settings")
        .unwrap();
    settings["metadata"]["ownerReferences"] = json!([{"apiVersion": "projectcalico.org/v3",
        "kind": "Tier", "name": "security", "uid": old_uid}]);
    kube.put(settings);
    apply_killed_at(
        &operator,
        &resume,
        "ownerreferences-restore/restore-owner-reference[0]:after",
    );
    let patched = kube
        .get("v1", "configmaps", "apps", "tier-settings")
        .unwrap();
    let version = patched["metadata"]["resourceVersion"].clone();
    assert_eq!(
        patched["metadata"]["ownerReferences"],
        json!([{"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "security",
                "uid": new_uid, "controller": true}])
    );
    let finished = operator.apply(&resume);
    assert_success(&finished, "resume");
    assert!(
        text(&finished.stderr).contains("its postcondition holds, so it is not run again"),
        "{}",
        text(&finished.stderr)
    );
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    let settings = kube
        .get("v1", "configmaps", "apps", "tier-settings")
        .unwrap();
    assert_eq!(
        settings["metadata"]["ownerReferences"],
        json!([{"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "security",
                "uid": new_uid, "controller": true}]),
        "the reference is back with the new UID, once"
    );
    assert_eq!(
        settings["metadata"]["resourceVersion"], version,
        "the resume sent nothing"
    );
    assert_eq!(settings["data"]["mode"], "strict", "the ConfigMap survived");

    // The verification on this path reads the operator's TigeraStatus (issue 30, item 1).
    let verify = operator.run(&["upgrade", "verify"], &[]);
    assert_success(&verify, "upgrade verify");
    let report = text(&verify.stdout);
    assert!(
        report.contains("ok          tigera-status: all 2 TigeraStatus object(s) are Available"),
        "{report}"
    );

    // A rollback of the whole run would go past the OwnerReference's removal, a point of no
    // return: refused before anything is written, naming it and what remains by hand.
    let journal = std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap();
    let refused = operator.run(&["upgrade", "rollback", "--yes"], &[]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "cannot roll back past step `ownerreferences-remove/remove-owner-reference[0]`: it is irreversible (a point of no return); the steps after it can be rolled back with `--to ownerreferences-remove/remove-owner-reference[0]`; what remains by hand: The reference is recorded in the plan"
        ),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap(),
        journal,
        "a refused rollback journals nothing"
    );

    // Back to just after it: the operator's objects as they were live before the upgrade. The
    // rollback is killed after its re-apply, the operator rolls itself and the node agents back,
    // and the resume waits for both and verifies the cluster at v3.26.1 (issue 30, item 2).
    let back_to = [
        "upgrade",
        "rollback",
        "--yes",
        "--to",
        "ownerreferences-remove/remove-owner-reference[0]",
    ];
    let rolled = operator.run(
        &back_to,
        &[(
            "NETCTL_TEST_CRASH_AFTER",
            "undo/operator-upgrade/apply-operator-manifest:after",
        )],
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&rolled.status),
        Some(9),
        "{}",
        text(&rolled.stderr)
    );
    roll_out_in(
        &kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    operator_rolls_node_agents(&kube, "calico-system", "v3.26.1");
    let resumed = operator.apply(&Apply::resume().yes());
    assert_success(&resumed, "rollback resumed");
    assert!(
        text(&resumed.stderr).contains("[5/5] undo/verify: succeeded"),
        "{}",
        text(&resumed.stderr)
    );
    let shown = text(&rolled.stdout);
    assert!(
        shown.contains("undo/operator-upgrade/apply-operator-manifest"),
        "{shown}"
    );
    let deployment = kube
        .get(
            "apps/v1",
            "deployments",
            "tigera-operator",
            "tigera-operator",
        )
        .unwrap();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "quay.io/tigera/operator:v1.32.3"
    );
    let listed = operator.run(&["upgrade", "history", "-o", "json"], &[]);
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(runs[0]["result"], "rolled-back", "{runs:#}");
}

#[test]
fn operator_dry_run_transcript() {
    let kube = operator_cluster();
    let operator = kubernetes_operator(&kube);
    kube.put(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "tier-settings", "namespace": "apps",
                     "ownerReferences": [{"apiVersion": "projectcalico.org/v3", "kind": "Tier",
                                          "name": "security", "uid": v3_tier_uid(&operator)}]},
        "data": {"mode": "strict"}
    }));
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "tigera-operator.yaml",
        &operator_manifest("quay.io/tigera/operator:v1.36.0"),
    );
    let (plan_file, _) = plan(&operator, "v3.29.0", &[]);
    dry_run_snapshot(
        &operator,
        None,
        Some(&kube),
        &plan_file,
        &mirror,
        "operator_v3_26_to_v3_29_dry_run",
    );
}

/// A saved plan is checked against the cluster as it is when `apply` starts: each fact the plan
/// discovered from the cluster (or the datastore) that changed since is a refusal naming the fact, its
/// planned and its current value, and nothing is changed — no object, no checkpoint.
#[test]
fn a_saved_plan_is_refused_when_a_cluster_fact_changed() {
    type Change = fn(&KubeApiServer, &str);
    let cases: [(&str, Change, &str); 3] = [
        (
            "another object came to be owned by a v3 resource",
            |kube, uid| {
                kube.put(json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "tier-cache", "namespace": "apps",
                                 "ownerReferences": [{"apiVersion": "projectcalico.org/v3", "kind": "Tier",
                                                      "name": "security", "uid": uid}]},
                    "data": {}
                }));
            },
            "fact `owner_references` was `ConfigMap apps/tier-settings #0 → Tier security (uid {uid})` when the plan was made and is `ConfigMap apps/tier-cache #0 → Tier security (uid {uid}); ConfigMap apps/tier-settings #0 → Tier security (uid {uid})` now",
        ),
        (
            "the operator turned out to be a Helm release",
            |kube, _| {
                kube.put(json!({
                    "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                    "metadata": {"name": "sh.helm.release.v1.calico.v1", "namespace": "tigera-operator",
                                 "labels": {"owner": "helm", "name": "calico", "status": "deployed"}},
                    "data": {}
                }));
            },
            "fact `install_method` was `operator` when the plan was made and is `helm` now",
        ),
        (
            "application layer policy was enabled",
            |kube, _| {
                kube.put(json!({
                    "apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration",
                    "metadata": {"name": "default"},
                    "spec": {"policySyncPathPrefix": "/var/run/nodeagent"}
                }));
            },
            "fact `alp_enabled` was `false` when the plan was made and is `true` now",
        ),
    ];
    for (what, change, refusal) in cases {
        let kube = operator_cluster();
        let operator = kubernetes_operator(&kube);
        let uid = v3_tier_uid(&operator);
        kube.put(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "tier-settings", "namespace": "apps",
                         "ownerReferences": [{"apiVersion": "projectcalico.org/v3", "kind": "Tier",
                                              "name": "security", "uid": uid}]},
            "data": {"mode": "strict"}
        }));
        let (plan_file, _) = plan(&operator, "v3.29.0", &[]);
        change(&kube, &uid);
        let before = install_objects(&kube);
        let refused = operator.apply(&Apply::plan(&plan_file).yes());
        let stderr = text(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "error: the saved plan is stale: {}",
                refusal.replace("{uid}", &uid)
            )) && stderr.contains("hint: the cluster changed since the plan was made"),
            "{what}: {stderr}"
        );
        assert_eq!(before, install_objects(&kube), "{what}: nothing changed");
        let status = status_json(&operator);
        assert!(status["checkpoint"].is_null(), "{what}: no run: {status}");
    }
}

/// When the cluster the plan's facts came from refuses to be read again, `apply` says so with advice
/// for a saved plan (not discovery's planning advice about `--offline`), and changes nothing.
#[test]
fn a_saved_plan_is_refused_when_its_cluster_facts_cannot_be_read_again() {
    let kube = operator_cluster();
    let operator = kubernetes_operator(&kube);
    let (plan_file, _) = plan(&operator, "v3.29.0", &[]);
    kube.forbid(Some("GET"), "/api/v1/secrets");
    let before = install_objects(&kube);
    let refused = operator.apply(&Apply::plan(&plan_file).yes());
    netctl_snapshot!(&refused);
    assert_eq!(before, install_objects(&kube), "nothing changed");
    assert!(status_json(&operator)["checkpoint"].is_null());
}

/// A plan whose install method was discovered from the cluster cannot be checked without one: `apply`
/// on a machine configured for etcd only refuses it, naming the fact, and writes nothing.
#[test]
fn a_saved_plan_with_cluster_facts_is_refused_without_a_cluster() {
    let (etcd, kube) = etcd_manifest_cluster();
    let planner = operator_for(&etcd, &kube);
    let (plan_file, plan) = plan(&planner, "v3.27.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    let before = etcd.dump_prefix_bytes("/calico/");
    let etcd_only = Operator::with_config(&etcd.netctl_config_yaml());
    // The pre-flight says so first; passed by hand, the stale-plan check still refuses.
    let refused = etcd_only.apply(&Apply::plan(&plan_file).yes());
    netctl_snapshot!(&refused);
    let refused = etcd_only.apply(
        &Apply::plan(&plan_file)
            .yes()
            .with(&["--skip-preflight", "cluster"]),
    );
    netctl_snapshot!(&refused);
    assert_eq!(
        before,
        etcd.dump_prefix_bytes("/calico/"),
        "nothing written (the lock was taken and released)"
    );
}

/// `v1_crd_projectcalico_org.yaml` of v3.32: the projectcalico.org CRDs (one stands for all).
const PROJECTCALICO_CRDS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: tiers.crd.projectcalico.org
spec:
  group: crd.projectcalico.org
  names:
    kind: Tier
    listKind: TierList
    plural: tiers
    singular: tier
  scope: Cluster
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;

/// A new target line: v3.31 → v3.32 applies the CRDs of v3.32 from their new file before the
/// operator, gates on AdminNetworkPolicies first, and says what happens to policy keys after.
#[test]
fn operator_from_v3_31_to_v3_32_dry_run() {
    let kube = operator_cluster();
    set_kube_version(&kube, "v3.31.7");
    let operator = kubernetes_operator(&kube);
    mirror(
        &operator,
        "v3.32.1",
        "v1_crd_projectcalico_org.yaml",
        PROJECTCALICO_CRDS,
    );
    let mirror = mirror(
        &operator,
        "v3.32.1",
        "tigera-operator.yaml",
        &operator_manifest("quay.io/tigera/operator:v1.40.0"),
    );
    let (plan_file, plan) = plan(&operator, "v3.32", &[]);
    assert_eq!(plan["to"], "v3.32.1");
    let ids = step_ids(&plan);
    let position = |id: &str| ids.iter().position(|known| known == id).unwrap();
    assert!(
        position("admin-network-policies/confirm-no-admin-network-policies")
            < position("operator-crds/apply-crds")
    );
    assert!(
        position("operator-crds/apply-crds") < position("operator-upgrade/apply-operator-manifest")
    );
    assert!(
        position("operator-upgrade/wait-node-agents")
            < position("policy-names-v3/confirm-policy-names-moved")
    );
    dry_run_snapshot(
        &operator,
        None,
        Some(&kube),
        &plan_file,
        &mirror,
        "operator_v3_31_to_v3_32_dry_run",
    );
}
