//! The executor's `kube.*` actions through `netctl upgrade apply` against the in-process API server
//! (`support::kube_api`), with etcd as the datastore (lock, checkpoint, facts) and `KUBECONFIG`
//! naming the cluster: server-side apply with force (CRDs first), merge and JSON patches,
//! annotations, node labels, listing by selector (read in dry-run too, names shown before a gate),
//! delete by selector after a server-side dry-run, and waiting for a DaemonSet to roll out — plus the failures users meet: a field-manager conflict without force,
//! 403, a rollout that never finishes, an unreachable API, and no cluster at all. `--dry-run` sends
//! writes with `dryRun=All` and changes nothing.

use std::time::Duration;

use crate::exec_common::*;
use crate::support::snapshot::netctl_snapshot;
use crate::support::{EtcdServer, KubeApiServer};
use serde_json::json;

const NAMESPACE: &str = "calico-system";

/// What a chart installed before the upgrade: the node agent DaemonSet owned by `helm`, a config
/// map, a node, and pods of the old agent and of something else.
fn seed_cluster(kube: &KubeApiServer) {
    kube.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}));
    kube.apply_as(
        "helm",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "calico-node", "namespace": NAMESPACE},
            "spec": {"selector": {"matchLabels": {"k8s-app": "calico-node"}},
                     "template": {"metadata": {"labels": {"k8s-app": "calico-node"}},
                                  "spec": {"containers": [{"name": "calico-node", "image": "calico/node:v3.26.4"}]}}}}),
    );
    kube.put(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "calico-config", "namespace": NAMESPACE}, "data": {"mtu": "1440"}}));
    kube.put(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    for (name, app) in [
        ("old-1", "old-agent"),
        ("old-2", "old-agent"),
        ("keep", "other"),
    ] {
        kube.put(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"k8s-app": app}},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}));
    }
}

const MANIFEST: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: calico-node, namespace: calico-system}
spec:
  selector: {matchLabels: {k8s-app: calico-node}}
  template:
    metadata: {labels: {k8s-app: calico-node}}
    spec:
      containers: [{name: calico-node, image: 'calico/node:v3.29.2'}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ippools.crd.projectcalico.org}
spec: {group: crd.projectcalico.org}
";

fn apply_step(force: bool) -> netctl::plan::PlannedStep {
    step(
        "upgrade/apply-manifest",
        "Apply the manifest",
        action(
            "kube.apply",
            json!({"source": {"inline": MANIFEST}, "server_side": true, "force_conflicts": force}),
        ),
    )
}

fn object(api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> serde_json::Value {
    let mut object = json!({"api_version": api_version, "kind": kind, "name": name});
    if let Some(namespace) = namespace {
        object["namespace"] = json!(namespace);
    }
    object
}

fn wait_step(timeout: &str) -> netctl::plan::PlannedStep {
    step(
        "upgrade/wait-node-agents",
        "Wait for the node agents",
        action(
            "kube.wait-rollout",
            json!({"namespace": NAMESPACE, "kind": "DaemonSet", "name": "calico-node", "ready": "2/2", "timeout": timeout}),
        ),
    )
}

fn full_plan() -> netctl::plan::Plan {
    plan(vec![
        apply_step(true),
        step(
            "upgrade/patch-config",
            "Raise the MTU",
            action(
                "kube.patch",
                json!({"object": object("v1", "ConfigMap", "calico-config", Some(NAMESPACE)),
                       "patch": {"data": {"mtu": "1450"}}}),
            ),
        ),
        step(
            "upgrade/json-patch-config",
            "Add a key with a JSON patch",
            action(
                "kube.patch",
                json!({"object": object("v1", "ConfigMap", "calico-config", Some(NAMESPACE)),
                       "type": "json",
                       "patch": [{"op": "add", "path": "/data/mode", "value": "vxlan"}]}),
            ),
        ),
        step(
            "upgrade/annotate",
            "Annotate the DaemonSet",
            action(
                "kube.annotate",
                json!({"object": object("apps/v1", "DaemonSet", "calico-node", Some(NAMESPACE)),
                       "values": {"netctl/upgraded-to": "v3.29.2"}}),
            ),
        ),
        step(
            "upgrade/label-node",
            "Label the node",
            action(
                "kube.label",
                json!({"object": object("v1", "Node", "node1", None),
                       "values": {"projectcalico.org/upgraded": "true"}}),
            ),
        ),
        step(
            "upgrade/delete-old-agents",
            "Delete the old agent pods",
            action(
                "kube.delete",
                json!({"api_version": "v1", "kind": "Pod", "namespace": NAMESPACE, "selector": {"k8s-app": "old-agent"}}),
            ),
        ),
        wait_step("30s"),
    ])
}

fn ready_pod(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"k8s-app": "calico-node"}},
        "spec": {"containers": [{"name": "calico-node"}, {"name": "bird"}]}})
}

/// What the DaemonSet controller and the kubelet do after the apply: schedule two pods, start them,
/// and report the DaemonSet rolled out — in steps, so the wait sees progress.
fn roll_out(kube: &KubeApiServer) {
    for name in ["calico-node-a", "calico-node-b"] {
        kube.put(ready_pod(name));
        kube.set_status("v1", "pods", NAMESPACE, name, json!({"phase": "Pending"}));
    }
    let generation = kube
        .get("apps/v1", "daemonsets", NAMESPACE, "calico-node")
        .unwrap()["metadata"]["generation"]
        .clone();
    kube.set_status(
        "apps/v1",
        "daemonsets",
        NAMESPACE,
        "calico-node",
        json!({"observedGeneration": generation, "desiredNumberScheduled": 2,
               "updatedNumberScheduled": 1, "numberAvailable": 1}),
    );
    std::thread::sleep(Duration::from_millis(1200));
    for name in ["calico-node-a", "calico-node-b"] {
        kube.set_status(
            "v1",
            "pods",
            NAMESPACE,
            name,
            json!({"phase": "Running", "containerStatuses": [{"name": "calico-node", "ready": true}, {"name": "bird", "ready": true}]}),
        );
    }
    kube.set_status(
        "apps/v1",
        "daemonsets",
        NAMESPACE,
        "calico-node",
        json!({"observedGeneration": generation, "desiredNumberScheduled": 2,
               "updatedNumberScheduled": 2, "numberAvailable": 2}),
    );
}

/// An operator whose config file names the etcd datastore and, with `kubeconfig`, the cluster.
fn operator_for(etcd: &EtcdServer, kubeconfig: Option<&std::path::Path>) -> Operator {
    let mut operator = Operator::new(etcd);
    if let Some(path) = kubeconfig {
        let config = format!(
            "{}  kubeconfig: {}\n",
            operator.config(),
            serde_json::to_string(&path.display().to_string()).unwrap()
        );
        operator.netctl.config_file(&config);
    }
    operator
}

fn run_plan(
    operator: &Operator,
    plan: &netctl::plan::Plan,
    extra: &[&str],
) -> std::process::Output {
    let plan_file = operator.write_plan(plan);
    let mut args = vec!["upgrade", "apply", "--plan", plan_file.to_str().unwrap()];
    args.extend(extra);
    operator.run(&args, &[])
}

#[test]
fn every_kube_action_runs_against_the_cluster() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    seed_cluster(&kube);
    let operator = operator_for(&etcd, Some(&kube.kubeconfig_path()));

    let output = std::thread::scope(|scope| {
        let run = scope.spawn(|| run_plan(&operator, &full_plan(), &[]));
        // Roll out once the manifest is applied (the image changes).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            let image = kube
                .get("apps/v1", "daemonsets", NAMESPACE, "calico-node")
                .map(|ds| ds["spec"]["template"]["spec"]["containers"][0]["image"].clone());
            if image == Some(json!("calico/node:v3.29.2")) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        roll_out(&kube);
        run.join().unwrap()
    });
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");

    // kube.apply: server-side, as `netctl`, forcing over helm's ownership; the CRD went first.
    let requests = kube.requests();
    let applies: Vec<&String> = requests
        .iter()
        .filter(|request| request.starts_with("PATCH") && request.contains("fieldManager=netctl"))
        .collect();
    assert_eq!(applies.len(), 2, "{requests:#?}");
    assert!(
        applies[0].contains("/customresourcedefinitions/"),
        "{applies:?}"
    );
    assert!(applies[1].contains("force=true"), "{applies:?}");
    let owners = kube.owners("apps/v1", "daemonsets", NAMESPACE, "calico-node");
    assert_eq!(
        owners[".spec.template.spec.containers"], "netctl",
        "{owners:?}"
    );
    // kube.patch (merge, then JSON) and kube.annotate / kube.label.
    let config = kube
        .get("v1", "configmaps", NAMESPACE, "calico-config")
        .unwrap();
    assert_eq!(config["data"], json!({"mtu": "1450", "mode": "vxlan"}));
    let daemon_set = kube
        .get("apps/v1", "daemonsets", NAMESPACE, "calico-node")
        .unwrap();
    assert_eq!(
        daemon_set["metadata"]["annotations"]["netctl/upgraded-to"],
        "v3.29.2"
    );
    let node = kube.get("v1", "nodes", "", "node1").unwrap();
    assert_eq!(
        node["metadata"]["labels"]["projectcalico.org/upgraded"],
        "true"
    );
    // kube.delete: listed with a server-side dry-run first, then deleted; other pods kept.
    let deletes: Vec<&String> = requests
        .iter()
        .filter(|request| request.starts_with("DELETE /api/v1/namespaces/calico-system/pods"))
        .collect();
    assert_eq!(deletes.len(), 2, "{deletes:?}");
    assert!(deletes[0].contains("dryRun=All"), "{deletes:?}");
    assert!(!deletes[1].contains("dryRun"), "{deletes:?}");
    assert_eq!(
        kube.names("v1", "pods"),
        [
            "calico-system/calico-node-a",
            "calico-system/calico-node-b",
            "calico-system/keep"
        ]
    );
    // kube.wait-rollout reported the counts as they changed.
    assert!(
        stderr.contains("waiting for DaemonSet calico-system/calico-node: DaemonSet calico-node: 1/2 updated, 1/2 available; 0/2 pods running and ready"),
        "{stderr}"
    );
}

#[test]
fn dry_run_asks_the_server_and_changes_nothing() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    seed_cluster(&kube);
    let operator = operator_for(&etcd, Some(&kube.kubeconfig_path()));
    let before = kube
        .get("apps/v1", "daemonsets", NAMESPACE, "calico-node")
        .unwrap();
    let pods_before = kube.names("v1", "pods");

    let output = run_plan(&operator, &full_plan(), &["--dry-run"]);
    let transcript = text(&output.stdout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(
        kube.get("apps/v1", "daemonsets", NAMESPACE, "calico-node")
            .unwrap(),
        before
    );
    assert_eq!(kube.names("v1", "pods"), pods_before);
    assert_eq!(
        kube.get("v1", "configmaps", NAMESPACE, "calico-config")
            .unwrap()["data"],
        json!({"mtu": "1440"})
    );
    // Every write went to the server as a dry-run; the descriptions are still there. (The
    // pre-flight's access reviews are questions, not writes: the server keeps nothing.)
    let writes: Vec<String> = kube
        .requests()
        .into_iter()
        .filter(|request| !request.starts_with("GET") && !is_access_review(request))
        .collect();
    assert!(!writes.is_empty());
    assert!(
        writes.iter().all(|request| request.contains("dryRun=All")),
        "{writes:#?}"
    );
    for expected in [
        "PATCH /apis/apps/v1/namespaces/calico-system/daemonsets/calico-node?fieldManager=netctl&force=true (application/apply-patch+yaml)",
        "server dry-run accepted DaemonSet calico-system/calico-node",
        "server dry-run accepted the patch of ConfigMap calico-system/calico-config",
        "server dry-run: 2 pods would be deleted: old-1, old-2",
        "now: DaemonSet calico-node:",
    ] {
        assert!(
            transcript.contains(expected),
            "missing `{expected}` in:\n{transcript}"
        );
    }
}

#[test]
fn a_listing_reads_in_dry_run_and_shows_its_names_before_a_gate() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    seed_cluster(&kube);
    let operator = operator_for(&etcd, Some(&kube.kubeconfig_path()));
    let mut list = step(
        "upgrade/list-old-agents",
        "List the old agents",
        action(
            "kube.list",
            json!({"api_version": "v1", "kind": "Pod", "namespace": NAMESPACE,
                   "selector": {"k8s-app": "old-agent"}}),
        ),
    );
    list.register = Some("old_agents".into());
    let mut gate = step(
        "upgrade/confirm",
        "Confirm",
        action("pause", json!({"message": "delete them?"})),
    );
    gate.needs = vec![list.id.clone()];
    let plan = plan(vec![list, gate]);

    // A dry-run reads: it shows what the real run would find now.
    let output = run_plan(&operator, &plan, &["--dry-run"]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let transcript = text(&output.stdout);
    for expected in [
        "would GET /api/v1/namespaces/calico-system/pods?labelSelector=k8s-app=old-agent",
        "  2 pods found: old-1, old-2",
    ] {
        assert!(
            transcript.contains(expected),
            "missing `{expected}` in:\n{transcript}"
        );
    }
    assert!(
        kube.requests()
            .iter()
            .all(|request| request.starts_with("GET") || is_access_review(request)),
        "{:?}",
        kube.requests()
    );

    // Unattended, the run stops at the gate with the names shown above it and registered.
    let output = run_plan(&operator, &plan, &[]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    let listing = stderr
        .find("found 2 pods in `calico-system` matching `k8s-app=old-agent`: old-1, old-2")
        .unwrap_or_else(|| panic!("the names are shown: {stderr}"));
    let gate = stderr.find("delete them?").expect("the gate's message");
    assert!(listing < gate, "{stderr}");
    let status = operator.run(&["upgrade", "status", "-o", "json"], &[]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        status["checkpoint"]["outputs"]["old_agents"],
        json!(["old-1", "old-2"])
    );
}

#[test]
fn a_field_owned_by_another_manager_is_a_conflict_without_force() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    seed_cluster(&kube);
    let operator = operator_for(&etcd, Some(&kube.kubeconfig_path()));
    let output = run_plan(&operator, &plan(vec![apply_step(false)]), &[]);
    netctl_snapshot!(&output);
    let image = &kube
        .get("apps/v1", "daemonsets", NAMESPACE, "calico-node")
        .unwrap()["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(image, "calico/node:v3.26.4");
}

#[test]
fn a_forbidden_request_names_the_object_and_advises_rbac() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    seed_cluster(&kube);
    kube.forbid(Some("PATCH"), "/api/v1/namespaces/calico-system/configmaps");
    let operator = operator_for(&etcd, Some(&kube.kubeconfig_path()));
    let patch = step(
        "upgrade/patch-config",
        "Raise the MTU",
        action(
            "kube.patch",
            json!({"object": object("v1", "ConfigMap", "calico-config", Some(NAMESPACE)),
                   "patch": {"data": {"mtu": "1450"}}}),
        ),
    );
    let output = run_plan(&operator, &plan(vec![patch]), &[]);
    netctl_snapshot!(&output);
}

#[test]
fn a_rollout_that_never_finishes_times_out_with_the_last_counts() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    seed_cluster(&kube);
    let operator = operator_for(&etcd, Some(&kube.kubeconfig_path()));
    let output = run_plan(&operator, &plan(vec![wait_step("1s")]), &[]);
    netctl_snapshot!(&output);
}

#[test]
fn an_unreachable_or_missing_cluster_is_reported() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let path = kube.directory().join("unreachable");
    std::fs::write(
        &path,
        kube.kubeconfig_yaml()
            .replace(&kube.url(), &format!("http://{address}")),
    )
    .unwrap();
    let unreachable = operator_for(&etcd, Some(&path));
    // The step's own error, once the operator passed the pre-flight that would have said so first.
    let output = run_plan(
        &unreachable,
        &plan(vec![apply_step(true)]),
        &["--skip-preflight", "cluster"],
    );
    netctl_snapshot!(&output);

    // No kubeconfig at all: refused before anything is sent.
    let output = run_plan(
        &operator_for(&etcd, None),
        &plan(vec![apply_step(true)]),
        &["--discard-checkpoint", "--skip-preflight", "cluster"],
    );
    netctl_snapshot!(&output);
}

/// A SelfSubjectAccessReview the pre-flight asks (a dry run runs it too): a question the server
/// answers without keeping anything.
fn is_access_review(request: &str) -> bool {
    request.starts_with("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
}
