//! End-to-end upgrades: `upgrade plan` and `upgrade apply` of the shipped runbooks against a real etcd
//! and the in-process Kubernetes API test server, with the manifests served from a mirror directory
//! (`--mirror-dir`, layout `<host>/<path>`), each run killed with SIGKILL in the middle and resumed.
//!
//! The test plays the cluster's other actors: it reports rollouts (`set_status` and ready pods) as the
//! controllers and kubelet would, and bumps ClusterInformation `calicoVersion` as the upgraded node
//! agents would, between the kill after the apply step and `--resume`. Nothing here talks to a real
//! cluster or the network.
//!
//! Paths: etcd + manifest (v3.13 → v3.27, all-interfaces host endpoint), Kubernetes + manifest
//! (`calico.yaml` v3.25 → v3.29, and `canal.yaml`), operator (v3.26 → v3.29 across the OwnerReference
//! UID change), Helm across the ownership edge (v3.20 → v3.27) and after it (v3.24 → v3.27), plus
//! dry-run transcript snapshots (etcd and operator) that leave etcd and the API server unchanged.
//! There is no real Helm here: a stand-in `helm` first on `PATH` records its argv, so the Helm
//! scenarios prove the exact commands netctl runs, not what Helm does with them. `exec` steps that run
//! `netctl` or `kubectl` run the real programs (`netctl` is linked into `$HOME/bin`).

mod exec_common;
mod support;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use exec_common::{filters, text};
use serde_json::{Value, json};
use support::{EtcdServer, KubeApiServer, Netctl};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";
const MANIFEST_HOST: &str = "raw.githubusercontent.com/projectcalico/calico";

/// A sandboxed netctl with a config file, `USER=ops` and the state directory `$HOME/state`.
struct Operator {
    netctl: Netctl,
}

impl Operator {
    fn with_config(config: &str) -> Operator {
        let mut netctl = Netctl::new();
        netctl.config_file(config).env("USER", "ops");
        Operator { netctl }
    }

    fn home(&self) -> &std::path::Path {
        self.netctl.home()
    }

    /// `netctl <args>`, with the state directory added to `upgrade apply|status`.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut command = self.netctl.command();
        command.args(args);
        if args.first() == Some(&"upgrade") && matches!(args.get(1), Some(&"apply" | &"status")) {
            command.arg("--state-dir").arg(self.home().join("state"));
        }
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("run netctl")
    }
}

fn kubeconfig_line(kube: &KubeApiServer) -> String {
    format!(
        "  kubeconfig: {}\n",
        serde_json::to_string(&kube.kubeconfig_path().display().to_string()).unwrap()
    )
}

/// An operator whose netctl uses `etcd` as the datastore and `kube` as the cluster.
fn operator_for(etcd: &EtcdServer, kube: &KubeApiServer) -> Operator {
    Operator::with_config(&format!(
        "{}{}",
        etcd.netctl_config_yaml(),
        kubeconfig_line(kube)
    ))
}

/// An operator whose netctl uses `kube` as the Kubernetes datastore and cluster, configured by
/// environment (so the `netctl` that `exec` steps start finds the same cluster), with `$HOME/bin`
/// first on `PATH` holding a `netctl` link to the binary under test.
fn kubernetes_operator(kube: &KubeApiServer) -> Operator {
    let mut netctl = Netctl::new();
    let bin = netctl.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(Netctl::program(), bin.join("netctl")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    netctl
        .env("PATH", path)
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .env("USER", "ops");
    Operator { netctl }
}

/// The `upgrade status -o json` value.
fn status_json(operator: &Operator) -> Value {
    let output = operator.run(&["upgrade", "status", "-o", "json"], &[]);
    assert_success(&output, "upgrade status");
    serde_json::from_slice(&output.stdout).expect("status JSON")
}

/// Writes `text` as the mirrored `manifests/<file>` of `tag`, returns the mirror directory.
fn mirror(operator: &Operator, tag: &str, file: &str, text: &str) -> PathBuf {
    operator.netctl.write_file(
        &format!("mirror/{MANIFEST_HOST}/{tag}/manifests/{file}"),
        text,
    );
    operator.home().join("mirror")
}

/// The workloads of a manifest install in `kube-system`, at `version`, with the etcd datastore.
fn manifest_workloads(version: &str) -> String {
    manifest_for(version, "etcdv3")
}

/// The workloads of a manifest install in `kube-system`, at `version`, for `datastore`.
fn manifest_for(version: &str, datastore: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: calico-config
  namespace: kube-system
data:
  etcd_endpoints: "http://127.0.0.1:2379"
  calico_backend: bird
  veth_mtu: "0"
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: calico-node
  namespace: kube-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: calico-node
  namespace: kube-system
  labels:
    k8s-app: calico-node
spec:
  selector:
    matchLabels:
      k8s-app: calico-node
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  template:
    metadata:
      labels:
        k8s-app: calico-node
    spec:
      hostNetwork: true
      serviceAccountName: calico-node
      containers:
        - name: calico-node
          image: docker.io/calico/node:{version}
          env:
            - name: DATASTORE_TYPE
              value: {datastore}
            - name: ETCD_ENDPOINTS
              valueFrom:
                configMapKeyRef:
                  name: calico-config
                  key: etcd_endpoints
        - name: bird-exporter
          image: docker.io/calico/node:{version}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: calico-kube-controllers
  namespace: kube-system
  labels:
    k8s-app: calico-kube-controllers
spec:
  replicas: 1
  selector:
    matchLabels:
      k8s-app: calico-kube-controllers
  template:
    metadata:
      labels:
        k8s-app: calico-kube-controllers
    spec:
      containers:
        - name: calico-kube-controllers
          image: docker.io/calico/kube-controllers:{version}
"#
    )
}

/// Stores the objects of a YAML stream as they are (the install made before the upgrade).
fn install(kube: &KubeApiServer, manifest: &str) {
    for document in manifest.split("\n---\n") {
        let object: Value = serde_yaml::from_str(document).expect("manifest document");
        kube.put(object);
    }
}

/// Plays the controllers and kubelet: the workload's latest spec is observed and fully rolled out,
/// and its pods run with `ready` of `total` containers ready.
fn roll_out(kube: &KubeApiServer, plural: &str, name: &str, ready: usize, total: usize) {
    roll_out_in(kube, "kube-system", plural, name, ready, total)
}

fn roll_out_in(
    kube: &KubeApiServer,
    namespace: &str,
    plural: &str,
    name: &str,
    ready: usize,
    total: usize,
) {
    let object = kube
        .get("apps/v1", plural, namespace, name)
        .unwrap_or_else(|| panic!("no {plural} `{name}`"));
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(1);
    let status = if plural == "daemonsets" {
        json!({"observedGeneration": generation, "desiredNumberScheduled": 2,
               "updatedNumberScheduled": 2, "numberAvailable": 2})
    } else {
        json!({"observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
               "availableReplicas": 1, "readyReplicas": 1})
    };
    kube.set_status("apps/v1", plural, namespace, name, status);
    let pods = if plural == "daemonsets" { 2 } else { 1 };
    for index in 0..pods {
        let statuses: Vec<Value> = (0..total)
            .map(|container| json!({"name": format!("c{container}"), "ready": container < ready}))
            .collect();
        kube.put(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{name}-{index}"), "namespace": namespace,
                         "labels": object["spec"]["selector"]["matchLabels"].clone()},
            "spec": {"containers": (0..total).map(|c| json!({"name": format!("c{c}"), "image": "x"})).collect::<Vec<_>>()},
            "status": {"phase": "Running", "containerStatuses": statuses}
        }));
    }
}

/// The id of the lock a killed run left behind.
fn stale_lock_id(operator: &Operator) -> String {
    let status = status_json(operator);
    status["lock"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a killed run leaves its lock: {status}"))
        .to_string()
}

/// Runs `upgrade apply` killed at `kill_point`, asserts the kill, and removes the dead run's lock.
fn apply_killed_at(operator: &Operator, args: &[&str], kill_point: &str) {
    let crashed = operator.run(args, &[("NETCTL_TEST_CRASH_AFTER", kill_point)]);
    assert_eq!(
        crashed.status.signal(),
        Some(9),
        "the run was not killed at {kill_point}: {}",
        text(&crashed.stderr)
    );
    let lock_id = stale_lock_id(operator);
    let unlocked = operator.run(&["upgrade", "unlock", &lock_id], &[]);
    assert!(unlocked.status.success(), "{}", text(&unlocked.stderr));
}

fn assert_success(output: &std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// `upgrade plan --to <to> --out plan.json` with discovery; returns the plan file and its JSON.
fn plan(operator: &Operator, to: &str, extra: &[&str]) -> (PathBuf, Value) {
    let file = operator.home().join("plan.json");
    let mut args = vec![
        "upgrade",
        "plan",
        "--to",
        to,
        "-o",
        "json",
        "--out",
        file.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = operator.run(&args, &[]);
    assert_success(&output, "upgrade plan");
    let plan: Value = serde_json::from_slice(&output.stdout).expect("plan JSON");
    (file, plan)
}

fn step_ids(plan: &Value) -> Vec<String> {
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["id"].as_str().unwrap().to_string())
        .collect()
}

fn etcd_json(etcd: &EtcdServer, key: &str) -> Option<Value> {
    etcd.get(key)
        .map(|text| serde_json::from_str(&text).expect("stored JSON"))
}

fn set_etcd_version(etcd: &EtcdServer, version: &str) {
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        format!(
            r#"{{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{{"name":"default","uid":"c1","creationTimestamp":"2026-01-01T00:00:00Z"}},"spec":{{"calicoVersion":"{version}","clusterType":"k8s,bgp","datastoreReady":true}}}}"#
        ),
    );
}

/// The etcd datastore with a manifest install at v3.13 and one all-interfaces host endpoint.
fn etcd_manifest_cluster() -> (EtcdServer, KubeApiServer) {
    let etcd = EtcdServer::start();
    set_etcd_version(&etcd, "v3.13.2");
    etcd.put(
        &format!("{ROOT}/hostendpoints/node-a-all"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"node-a-all","uid":"h1","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"role":"edge"}},"spec":{"node":"node-a","interfaceName":"*"}}"#,
    );
    etcd.put(
        &format!("{ROOT}/hostendpoints/node-a-eth0"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"node-a-eth0","uid":"h2","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"node":"node-a","interfaceName":"eth0","expectedIPs":["10.0.0.1"]}}"#,
    );
    let kube = KubeApiServer::start();
    install(&kube, &manifest_workloads("v3.13.2"));
    (etcd, kube)
}

#[test]
fn etcd_manifest_install_from_v3_13_to_v3_27_with_an_all_interfaces_host_endpoint() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &manifest_workloads("v3.27.0"),
    );
    let (plan_file, plan) = plan(&operator, "v3.27.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(
        plan["facts"]["all_interfaces_host_endpoints"]["value"],
        json!([{"name": "node-a-all", "node": "node-a", "labels": {"role": "edge"}}])
    );
    let ids = step_ids(&plan);
    assert!(
        ids.contains(&"etcd-upgrade/apply-manifest".to_string()),
        "{ids:?}"
    );

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    apply_killed_at(&operator, &apply, "etcd-upgrade/apply-manifest:after");

    // The pre-upgrade phase ran: the label and the temporary policy exist.
    let endpoint = etcd_json(&etcd, &format!("{ROOT}/hostendpoints/node-a-all")).unwrap();
    assert_eq!(
        endpoint["metadata"]["labels"],
        json!({"role": "edge", "host-endpoint-upgrade": ""})
    );
    let untouched = etcd_json(&etcd, &format!("{ROOT}/hostendpoints/node-a-eth0")).unwrap();
    assert!(untouched["metadata"]["labels"].is_null(), "{untouched}");
    let policy = etcd_json(
        &etcd,
        &format!("{ROOT}/globalnetworkpolicies/default.allow-all-upgrade"),
    )
    .expect("allow-all-upgrade exists after pre-upgrade");
    assert_eq!(
        policy["spec"]["selector"],
        json!("has(host-endpoint-upgrade)")
    );
    // The manifest was server-side applied by netctl.
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        node["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.27.0"
    );
    let owners = kube.owners("apps/v1", "daemonsets", "kube-system", "calico-node");
    assert!(
        owners.values().any(|manager| manager == "netctl"),
        "{owners:?}"
    );
    let controllers = kube
        .get(
            "apps/v1",
            "deployments",
            "kube-system",
            "calico-kube-controllers",
        )
        .unwrap();
    assert_eq!(
        controllers["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/kube-controllers:v3.27.0"
    );

    // The cluster does its part: the workloads roll out (calico-node 1/2 ready, as with etcd) and
    // the new node agents report their version.
    roll_out(&kube, "daemonsets", "calico-node", 1, 2);
    roll_out(&kube, "deployments", "calico-kube-controllers", 1, 1);
    set_etcd_version(&etcd, "v3.27.0");

    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert_success(&resumed, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert!(status["lock"].is_null(), "{status}");

    // The finish phase removed the temporary policy and the label.
    assert!(
        etcd.get(&format!(
            "{ROOT}/globalnetworkpolicies/default.allow-all-upgrade"
        ))
        .is_none()
    );
    let endpoint = etcd_json(&etcd, &format!("{ROOT}/hostendpoints/node-a-all")).unwrap();
    assert_eq!(endpoint["metadata"]["labels"], json!({"role": "edge"}));
}

/// Every stored object of the types the scenarios touch, as JSON text.
fn cluster_objects(kube: &KubeApiServer) -> Vec<String> {
    [
        ("v1", "namespaces"),
        ("v1", "serviceaccounts"),
        ("v1", "configmaps"),
        ("v1", "secrets"),
        ("apps/v1", "daemonsets"),
        ("apps/v1", "deployments"),
        ("apiextensions.k8s.io/v1", "customresourcedefinitions"),
        ("crd.projectcalico.org/v1", "clusterinformations"),
        ("crd.projectcalico.org/v1", "tiers"),
    ]
    .iter()
    .flat_map(|(api_version, plural)| {
        kube.names(api_version, plural)
            .into_iter()
            .map(move |name| {
                let (namespace, name) = name.split_once('/').unwrap_or(("", &name));
                kube.get(api_version, plural, namespace, name)
                    .unwrap()
                    .to_string()
            })
    })
    .collect()
}

/// `upgrade apply --dry-run` of `plan_file`: asserts that etcd (when there is one) stays
/// byte-identical and no object on the API server changes, and snapshots the transcript (stdout) as
/// `name`.
fn dry_run_snapshot(
    operator: &Operator,
    etcd: Option<&EtcdServer>,
    kube: &KubeApiServer,
    plan_file: &std::path::Path,
    mirror: &std::path::Path,
    name: &str,
) {
    let before = etcd.map(|etcd| etcd.dump_prefix_bytes("/calico/"));
    let objects_before = cluster_objects(kube);
    let output = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
    );
    assert_success(&output, "dry-run");
    assert_eq!(
        before,
        etcd.map(|etcd| etcd.dump_prefix_bytes("/calico/")),
        "a dry-run leaves etcd byte-identical"
    );
    assert_eq!(
        objects_before,
        cluster_objects(kube),
        "a dry-run changes no object"
    );
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in filters(operator.home()) {
        settings.add_filter(&pattern, replacement);
    }
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings.bind(|| insta::assert_snapshot!(name, text(&output.stdout)));
}

#[test]
fn etcd_manifest_dry_run_transcript() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &manifest_workloads("v3.27.0"),
    );
    let (plan_file, _) = plan(&operator, "v3.27.0", &[]);
    dry_run_snapshot(
        &operator,
        Some(&etcd),
        &kube,
        &plan_file,
        &mirror,
        "etcd_manifest_v3_13_to_v3_27_dry_run",
    );
}

fn set_kube_version(kube: &KubeApiServer, version: &str) {
    kube.put(json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "ClusterInformation",
        "metadata": {"name": "default"},
        "spec": {"calicoVersion": version, "clusterType": "k8s,bgp,kdd", "datastoreReady": true}
    }));
}

#[test]
fn kubernetes_manifest_install_from_v3_25_to_v3_29() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    install(&kube, &manifest_for("v3.25.2", "kubernetes"));
    let operator = kubernetes_operator(&kube);
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "calico.yaml",
        &manifest_for("v3.29.0", "kubernetes"),
    );
    let (plan_file, plan) = plan(&operator, "v3.29.0", &[]);
    assert_eq!(plan["facts"]["datastore_type"]["value"], "kubernetes");
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(plan["facts"]["manifest_flavor"]["value"], "calico");

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        node["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.29.0"
    );
    let owners = kube.owners("apps/v1", "daemonsets", "kube-system", "calico-node");
    assert!(
        owners.values().any(|manager| manager == "netctl"),
        "{owners:?}"
    );
    // Until the node agents report the new version, the run cannot finish.
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");

    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert_success(&resumed, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert!(status["lock"].is_null(), "{status}");
    let steps: Vec<(String, String)> = status["checkpoint"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            (
                step["id"].as_str().unwrap().to_string(),
                step["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        steps.len() == 6 && steps.iter().all(|(_, state)| state == "succeeded"),
        "{steps:?}"
    );
}

fn operator_deployment(image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "tigera-operator", "namespace": "tigera-operator",
                     "labels": {"k8s-app": "tigera-operator"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"name": "tigera-operator"}},
                 "template": {"metadata": {"labels": {"name": "tigera-operator"}},
                              "spec": {"serviceAccountName": "tigera-operator",
                                       "containers": [{"name": "tigera-operator", "image": image}]}}}
    })
}

/// The operator manifest of a release: its namespace, service account and Deployment.
fn operator_manifest(image: &str) -> String {
    let deployment = serde_yaml::to_string(&operator_deployment(image)).unwrap();
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
    let mut node = serde_yaml::from_str::<Value>(
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
                                          "name": "security", "uid": old_uid}]},
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
                "ownerKind": "Tier", "ownerName": "security", "index": 0}])
    );

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
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

    // The upgrade: the Tier comes back with a new UID, the operator and node agents roll out and
    // report the new version.
    let deleted = operator.run(&["delete", "tier", "security"], &[]);
    assert_success(&deleted, "delete tier");
    kube.put(tier("new"));
    // The UID of the v3 resource, as netctl (and the OwnerReference) names it.
    let new_uid = v3_tier_uid(&operator);
    assert_ne!(old_uid, new_uid);
    roll_out_in(
        &kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    roll_out_in(&kube, "calico-system", "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");

    // Unattended, the run stops at the gate that asks for the reference back, having read the new
    // UID for the operator.
    let resume = [
        "upgrade",
        "apply",
        "--resume",
        "--mirror-dir",
        mirror.to_str().unwrap(),
    ];
    let stopped = operator.run(&resume, &[]);
    assert_eq!(stopped.status.code(), Some(1), "{}", text(&stopped.stderr));
    let status = status_json(&operator);
    assert!(
        status["checkpoint"]["outputs"]
            .to_string()
            .contains(&new_uid),
        "the new UID was read: {status}"
    );
    // The operator re-adds the reference with the new UID and approves the rest.
    let mut settings = kube
        .get("v1", "configmaps", "apps", "tier-settings")
        .unwrap();
    settings["metadata"]["ownerReferences"] = json!([{"apiVersion": "projectcalico.org/v3",
        "kind": "Tier", "name": "security", "uid": new_uid}]);
    kube.put(settings);
    let mut finish = resume.to_vec();
    finish.push("--yes");
    let finished = operator.run(&finish, &[]);
    assert_success(&finished, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    let settings = kube
        .get("v1", "configmaps", "apps", "tier-settings")
        .unwrap();
    assert_eq!(
        settings["metadata"]["ownerReferences"][0]["uid"],
        json!(new_uid)
    );
    assert_eq!(settings["data"]["mode"], "strict", "the ConfigMap survived");
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
        &kube,
        &plan_file,
        &mirror,
        "operator_v3_26_to_v3_29_dry_run",
    );
}

/// Puts a `helm` stand-in first on `PATH` that appends its argv (one argument a line, then `--`) to
/// `$HOME/helm-argv` and succeeds. There is no real Helm here: the test proves netctl runs exactly
/// the command the plan shows, not what Helm does with it.
fn install_helm_stand_in(operator: &Operator) -> PathBuf {
    let script = operator.home().join("bin").join("helm");
    std::fs::write(
        &script,
        "#!/bin/sh\nprintf '%s\\n' \"$@\" -- >> \"$HOME/helm-argv\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    operator.home().join("helm-argv")
}

/// A Helm install of v3.20: the release `calico` in `default` (two revisions), the operator and its
/// objects in `tigera-operator`, and secrets that must survive the migration.
fn helm_cluster() -> KubeApiServer {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.20.1");
    let helm =
        json!({"meta.helm.sh/release-name": "calico", "meta.helm.sh/release-namespace": "default"});
    let labels = json!({"app.kubernetes.io/managed-by": "Helm"});
    let metadata = |name: &str, namespace: Option<&str>| {
        let mut metadata = json!({"name": name, "annotations": helm, "labels": labels});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        metadata
    };
    kube.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tigera-operator"}}),
    );
    let mut deployment = operator_deployment("quay.io/tigera/operator:v1.20.4");
    deployment["metadata"]["annotations"] = helm.clone();
    kube.put(deployment);
    kube.put(json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": metadata("tigera-operator", Some("tigera-operator"))}));
    kube.put(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": metadata("tigera-operator", None), "rules": []}),
    );
    kube.put(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": metadata("tigera-operator", None),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tigera-operator"},
                    "subjects": [{"kind": "ServiceAccount", "name": "tigera-operator", "namespace": "tigera-operator"}]}));
    kube.put(
        json!({"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
                    "metadata": metadata("tigera-operator", None), "spec": {"privileged": false}}),
    );
    kube.put(
        json!({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
                    "metadata": metadata("default", None), "spec": {"variant": "Calico"}}),
    );
    kube.put(
        json!({"apiVersion": "operator.tigera.io/v1", "kind": "APIServer",
                    "metadata": metadata("default", None), "spec": {}}),
    );
    for (name, release) in [
        ("sh.helm.release.v1.calico.v1", "calico"),
        ("sh.helm.release.v1.calico.v2", "calico"),
        ("sh.helm.release.v1.ingress.v1", "ingress"),
    ] {
        kube.put(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                        "metadata": {"name": name, "namespace": "default",
                                     "labels": {"owner": "helm", "name": release, "status": "deployed"}},
                        "data": {}}));
    }
    kube.put(json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "app-credentials", "namespace": "default"}, "data": {}}));
    kube
}

const OPERATOR_CRDS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: installations.operator.tigera.io
spec:
  group: operator.tigera.io
  names:
    kind: Installation
    listKind: InstallationList
    plural: installations
    singular: installation
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

#[test]
fn helm_install_from_v3_20_to_v3_27_moves_the_release_into_the_operator_namespace() {
    let kube = helm_cluster();
    let operator = kubernetes_operator(&kube);
    let helm_argv = install_helm_stand_in(&operator);
    let mirror = mirror(&operator, "v3.27.0", "operator-crds.yaml", OPERATOR_CRDS);
    let (plan_file, plan) = plan(&operator, "v3.27.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "helm");
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(plan["facts"]["helm_release"]["value"], "calico");
    assert_eq!(
        plan["facts"]["operator_namespace"]["value"],
        "tigera-operator"
    );

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    apply_killed_at(
        &operator,
        &apply,
        "helm-ownership-migration/install-chart:after",
    );

    // Every object of the old chart now names the release in the operator namespace.
    for (api_version, plural, namespace, name) in [
        ("operator.tigera.io/v1", "installations", "", "default"),
        ("operator.tigera.io/v1", "apiservers", "", "default"),
        (
            "policy/v1beta1",
            "podsecuritypolicies",
            "",
            "tigera-operator",
        ),
        (
            "apps/v1",
            "deployments",
            "tigera-operator",
            "tigera-operator",
        ),
        (
            "v1",
            "serviceaccounts",
            "tigera-operator",
            "tigera-operator",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "clusterroles",
            "",
            "tigera-operator",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "clusterrolebindings",
            "",
            "tigera-operator",
        ),
    ] {
        let object = kube.get(api_version, plural, namespace, name).unwrap();
        assert_eq!(
            object["metadata"]["annotations"],
            json!({"meta.helm.sh/release-name": "calico", "meta.helm.sh/release-namespace": "tigera-operator"}),
            "{plural} {name}"
        );
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "Helm"
        );
    }
    // The CRDs were server-side applied before the chart.
    let crd = kube
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            "installations.operator.tigera.io",
        )
        .expect("the operator CRDs were applied");
    assert_eq!(crd["spec"]["group"], "operator.tigera.io");
    let owners = kube.owners(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "",
        "installations.operator.tigera.io",
    );
    assert!(
        owners.values().any(|manager| manager == "netctl"),
        "{owners:?}"
    );
    // Helm ran once, with exactly the plan's argv.
    assert_eq!(
        std::fs::read_to_string(&helm_argv).expect("helm ran"),
        "install\ncalico\nprojectcalico/tigera-operator\n--version\nv3.27.0\n--namespace\ntigera-operator\n--\n"
    );

    roll_out_in(
        &kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    set_kube_version(&kube, "v3.27.0");

    // `helm install` was killed after it ran, and is not idempotent: a plain resume refuses to
    // repeat it and says how to go on.
    let resume = [
        "upgrade",
        "apply",
        "--resume",
        "--mirror-dir",
        mirror.to_str().unwrap(),
    ];
    let refused = operator.run(&resume, &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains(
            "step `helm-ownership-migration/install-chart` was interrupted and cannot safely run again"
        ),
        "{}",
        text(&refused.stderr)
    );
    // The operator sees that the release was installed and skips the step; unattended, the run
    // then stops at the gate before the old release's secrets are deleted.
    let mut skip = resume.to_vec();
    skip.extend(["--skip", "helm-ownership-migration/install-chart"]);
    let stopped = operator.run(&skip, &[]);
    assert_eq!(stopped.status.code(), Some(1), "{}", text(&stopped.stderr));
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["step"],
        "helm-ownership-migration/confirm-delete-old-release",
        "stderr: {}\nsteps: {}",
        text(&stopped.stderr),
        status["checkpoint"]["steps"]
    );
    assert_eq!(
        kube.names("v1", "secrets").len(),
        4,
        "nothing deleted before the gate"
    );

    let mut finish = resume.to_vec();
    finish.push("--yes");
    let finished = operator.run(&finish, &[]);
    assert_success(&finished, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert_eq!(
        kube.names("v1", "secrets"),
        [
            "default/app-credentials",
            "default/sh.helm.release.v1.ingress.v1"
        ],
        "only the old release's secrets are deleted"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv)
            .unwrap()
            .matches("install")
            .count(),
        1,
        "helm install ran exactly once across the kill"
    );
}

#[test]
fn helm_install_from_v3_24_to_v3_27_upgrades_the_release_in_place() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.24.5");
    kube.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tigera-operator"}}),
    );
    let mut deployment = operator_deployment("quay.io/tigera/operator:v1.28.5");
    deployment["metadata"]["annotations"] = json!({"meta.helm.sh/release-name": "calico",
                                                   "meta.helm.sh/release-namespace": "tigera-operator"});
    kube.put(deployment);
    kube.put(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                    "metadata": {"name": "sh.helm.release.v1.calico.v1", "namespace": "tigera-operator",
                                 "labels": {"owner": "helm", "name": "calico", "status": "deployed"}},
                    "data": {}}));
    let operator = kubernetes_operator(&kube);
    let helm_argv = install_helm_stand_in(&operator);
    let mirror = mirror(&operator, "v3.27.0", "operator-crds.yaml", OPERATOR_CRDS);
    let (plan_file, plan) = plan(&operator, "v3.27.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "helm");
    assert_eq!(
        plan["facts"]["operator_namespace"]["value"],
        "tigera-operator"
    );
    assert!(
        !step_ids(&plan)
            .iter()
            .any(|id| id.starts_with("helm-ownership-migration/")),
        "the release already lives with the operator: {:?}",
        step_ids(&plan)
    );

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    // Killed after the CRDs and before Helm ran: Helm has not been called yet.
    apply_killed_at(&operator, &apply, "helm-upgrade/apply-operator-crds:after");
    assert!(!helm_argv.exists(), "helm ran before the kill point");
    assert!(
        kube.get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            "installations.operator.tigera.io",
        )
        .is_some()
    );
    roll_out_in(
        &kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    set_kube_version(&kube, "v3.27.0");

    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert_success(&resumed, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv).expect("helm ran"),
        "repo\nupdate\nprojectcalico\n--\n\
         upgrade\ncalico\nprojectcalico/tigera-operator\n--version\nv3.27.0\n--namespace\ntigera-operator\n--\n"
    );
    assert_eq!(
        kube.names("v1", "secrets"),
        ["tigera-operator/sh.helm.release.v1.calico.v1"],
        "no release secret is deleted on this path"
    );
}

/// The node-agent DaemonSet of `canal.yaml` (Kubernetes datastore): named `canal`, with the policy
/// agent and flannel side by side.
fn canal_manifest(version: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: canal-config
  namespace: kube-system
data:
  canal_iface: ""
  masquerade: "true"
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: canal
  namespace: kube-system
  labels:
    k8s-app: canal
spec:
  selector:
    matchLabels:
      k8s-app: canal
  template:
    metadata:
      labels:
        k8s-app: canal
    spec:
      hostNetwork: true
      containers:
        - name: calico-node
          image: docker.io/calico/node:{version}
          env:
            - name: DATASTORE_TYPE
              value: kubernetes
        - name: kube-flannel
          image: docker.io/flannel/flannel:v0.24.4
"#
    )
}

#[test]
fn kubernetes_canal_manifest_install_waits_for_the_canal_daemon_set() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    install(&kube, &canal_manifest("v3.25.2"));
    let operator = kubernetes_operator(&kube);
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "canal.yaml",
        &canal_manifest("v3.29.0"),
    );
    let (plan_file, plan) = plan(&operator, "v3.29.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    assert_eq!(plan["facts"]["manifest_flavor"]["value"], "canal");
    assert_eq!(plan["facts"]["manifest_flavor"]["origin"], "discovered");

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    let canal = kube
        .get("apps/v1", "daemonsets", "kube-system", "canal")
        .unwrap();
    assert_eq!(
        canal["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.29.0"
    );
    assert!(
        kube.get("apps/v1", "daemonsets", "kube-system", "calico-node")
            .is_none(),
        "canal.yaml has no calico-node DaemonSet"
    );
    roll_out(&kube, "daemonsets", "canal", 2, 2);
    set_kube_version(&kube, "v3.29.0");
    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert_success(&resumed, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
}
