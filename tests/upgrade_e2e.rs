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
//! (`calico.yaml` v3.25 → v3.29, and `canal.yaml`; with a manifest overlay whose diff the plan shows
//! and whose edits the cluster ends up with, overlays that are refused, a manifest changed since the
//! reviewed plan that is refused, and hand edits made at the edits gate kept across `--resume` and
//! applied), operator (v3.26 → v3.29
//! across the OwnerReference UID change), Helm across the ownership edge (v3.20 → v3.27) and after it
//! (v3.24 → v3.27), application layer policy on the Kubernetes manifest path (the test plays the
//! deployment controller while the service Deployments restart), and the `auto-host-endpoints`
//! procedure on etcd and Kubernetes (the test plays kube-controllers, creating the `-auto-hep`
//! endpoints once `autoCreate` is on), plus dry-run transcript snapshots (etcd, operator, Helm, ALP,
//! auto host endpoints) that leave etcd and the API server unchanged, and saved plans refused because a
//! cluster fact changed since they were made.
//! There is no real Helm here: a stand-in `helm` first on `PATH` records its argv (and, for
//! `install`, creates the release secret Helm would), so the Helm scenarios prove the exact commands
//! netctl runs, not what Helm does with them. `exec` steps that run
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

/// `sha256:<hex>`, as the checkpoint and plans write digests.
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
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

/// `calico-etcd.yaml` as released: `etcd_endpoints` is upstream's placeholder until set.
fn released_etcd_manifest(version: &str) -> String {
    manifest_workloads(version).replace(
        "etcd_endpoints: \"http://127.0.0.1:2379\"",
        "etcd_endpoints: \"http://<ETCD_IP>:<ETCD_PORT>\"",
    )
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
        let object: Value = netctl::yaml::from_str(document).expect("manifest document");
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

/// `upgrade apply --resume --yes` with the manifests from `mirror`, which must succeed.
fn resume_to_the_end(operator: &Operator, mirror: impl AsRef<std::path::Path>) {
    let mirror = mirror.as_ref().to_str().unwrap();
    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--mirror-dir",
            mirror,
            "--yes",
        ],
        &[],
    );
    assert_success(&resumed, "resume");
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
        &released_etcd_manifest("v3.27.0"),
    );
    // The mirror also serves the plan's overlay review (`etcd_endpoints`): no network.
    let (plan_file, plan) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap()],
    );
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    let diff = plan["manifest_previews"][0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("-  etcd_endpoints: http://<ETCD_IP>:<ETCD_PORT>"),
        "{diff}"
    );
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
    let endpoint = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-all"))
        .unwrap();
    assert_eq!(
        endpoint["metadata"]["labels"],
        json!({"role": "edge", "host-endpoint-upgrade": ""})
    );
    let untouched = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-eth0"))
        .unwrap();
    assert!(untouched["metadata"]["labels"].is_null(), "{untouched}");
    let policy = etcd
        .get_json(&format!(
            "{ROOT}/globalnetworkpolicies/default.allow-all-upgrade"
        ))
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
    // netctl's own etcd endpoints replaced the placeholder of the released manifest (seed 9.7).
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(
        config["data"]["etcd_endpoints"],
        json!(plan["facts"]["etcd_endpoints"]["value"])
    );
    assert!(
        config["data"]["etcd_endpoints"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{config}"
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

    resume_to_the_end(&operator, &mirror);
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
    let endpoint = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-all"))
        .unwrap();
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
    kube: Option<&KubeApiServer>,
    plan_file: &std::path::Path,
    mirror: &std::path::Path,
    name: &str,
) {
    let before = etcd.map(|etcd| etcd.dump_prefix_bytes("/calico/"));
    let objects_before = kube.map(cluster_objects);
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
        kube.map(cluster_objects),
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
        &released_etcd_manifest("v3.27.0"),
    );
    let (plan_file, _) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap()],
    );
    dry_run_snapshot(
        &operator,
        Some(&etcd),
        Some(&kube),
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

    resume_to_the_end(&operator, &mirror);
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

/// The hand edits of the `kubernetes_manifest_*` installs: an env var on the node container and a
/// ConfigMap value.
const MANIFEST_OVERLAY: &str = r#"# Our edits of calico.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: calico-node
  namespace: kube-system
spec:
  template:
    spec:
      containers:
        - name: calico-node
          env:
            - name: IP_AUTODETECTION_METHOD
              value: interface=eth0
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: calico-config
  namespace: kube-system
data:
  veth_mtu: "1440"
"#;

/// A Kubernetes-datastore manifest install at v3.25.2 with `calico.yaml` v3.29.0 in the mirror.
fn kubernetes_manifest_cluster() -> (KubeApiServer, Operator, PathBuf) {
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
    (kube, operator, mirror)
}

#[test]
fn kubernetes_manifest_install_with_an_overlay_shows_the_diff_and_carries_the_edits() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    operator.netctl.write_file("edits.yaml", MANIFEST_OVERLAY);
    let overlay = operator.home().join("edits.yaml");
    let plan_file = operator.home().join("plan.json");
    let args = [
        "upgrade",
        "plan",
        "--to",
        "v3.29.0",
        "--manifest-overlay",
        overlay.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--out",
        plan_file.to_str().unwrap(),
    ];
    let output = operator.run(&args, &[]);
    assert_success(&output, "upgrade plan");
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in filters(operator.home()) {
        settings.add_filter(&pattern, replacement);
    }
    settings
        .bind(|| insta::assert_snapshot!("kubernetes_manifest_overlay_plan", text(&output.stdout)));
    // The saved plan carries the overlay in its step and the reviewed diff, both under the digest.
    let saved: Value = serde_json::from_slice(&std::fs::read(&plan_file).unwrap()).unwrap();
    let ids = step_ids(&saved);
    assert!(
        !ids.contains(&"manifest-upgrade/reapply-local-changes".to_string()),
        "no edits gate once the edits are stated: {ids:?}"
    );
    assert_eq!(
        saved["steps"][0]["with"]["overlay"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let diff = saved["manifest_previews"][0]["diff"].as_str().unwrap();
    assert!(diff.contains("+  veth_mtu: '1440'"), "{diff}");
    assert!(
        diff.contains("+        - name: IP_AUTODETECTION_METHOD"),
        "{diff}"
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
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    // The cluster carries the new release and the edits.
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    let container = &node["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "docker.io/calico/node:v3.29.0");
    assert_eq!(
        container["env"],
        json!([
            {"name": "DATASTORE_TYPE", "value": "kubernetes"},
            {"name": "ETCD_ENDPOINTS", "valueFrom": {"configMapKeyRef": {"name": "calico-config", "key": "etcd_endpoints"}}},
            {"name": "IP_AUTODETECTION_METHOD", "value": "interface=eth0"}
        ])
    );
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(config["data"]["veth_mtu"], "1440");
    assert_eq!(config["data"]["calico_backend"], "bird");
    // The download is kept as released beside the overlaid manifest that was applied.
    let files = operator.home().join("state/files");
    assert_eq!(
        std::fs::read_to_string(files.join("upgrade.yaml.original")).unwrap(),
        manifest_for("v3.29.0", "kubernetes")
    );
    let applied = std::fs::read_to_string(files.join("upgrade.yaml")).unwrap();
    assert!(applied.contains("IP_AUTODETECTION_METHOD"), "{applied}");

    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");
    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(files.join("upgrade.yaml")).unwrap(),
        applied,
        "a resume keeps the overlaid manifest it applied"
    );
}

/// Regression: with neither `--manifest-overlay` nor `--no-manifest-edits` the plan keeps a gate
/// that asks for the hand edits to be made in `upgrade.yaml` in the state directory. An unattended
/// run stops there; the operator edits the file and resumes. The resume once found the file's digest
/// changed, downloaded it again and applied the release as published, edits silently lost.
#[test]
fn kubernetes_manifest_edits_made_at_the_gate_are_kept_on_resume_and_applied() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    let (plan_file, plan) = plan(&operator, "v3.29.0", &[]);
    let gate = "manifest-upgrade/reapply-local-changes";
    assert!(step_ids(&plan).contains(&gate.to_string()), "{plan}");
    let mirror = mirror.to_str().unwrap();
    let stopped = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--mirror-dir",
            mirror,
        ],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    assert_eq!(
        status_json(&operator)["checkpoint"]["run"],
        json!({"state": "waiting-at-gate", "step": gate})
    );

    // What the gate asks for: the same edits, made in the downloaded manifest.
    let file = operator.home().join("state/files/upgrade.yaml");
    let downloaded = std::fs::read_to_string(&file).unwrap();
    assert_eq!(downloaded, manifest_for("v3.29.0", "kubernetes"));
    let edited = downloaded.replace("veth_mtu: \"0\"", "veth_mtu: \"1440\"");
    assert_ne!(edited, downloaded);
    std::fs::write(&file, &edited).unwrap();

    let resume = [
        "upgrade",
        "apply",
        "--resume",
        "--mirror-dir",
        mirror,
        "--approve",
        gate,
    ];
    apply_killed_at(&operator, &resume, "manifest-upgrade/apply-manifest:after");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        edited,
        "the resume keeps the edited manifest"
    );
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(config["data"]["veth_mtu"], "1440", "the edits are applied");
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        node["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.29.0"
    );

    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");
    resume_to_the_end(&operator, mirror);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(config["data"]["veth_mtu"], "1440");

    // Reviewers see that the applied manifest is not the download: its digest is in the checkpoint
    // of the apply step, and the step's summary (and journal entry) says so.
    let status = status_json(&operator);
    let checkpoint = &status["checkpoint"];
    assert_eq!(checkpoint["run"]["state"], "completed", "{status}");
    let step = |id: &str| {
        checkpoint["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|step| step["id"] == id)
            .unwrap_or_else(|| panic!("no step `{id}`: {status}"))
            .clone()
    };
    let download = step("manifest-upgrade/download-manifest");
    let apply = step("manifest-upgrade/apply-manifest");
    let downloaded_digest = sha256(downloaded.as_bytes());
    let edited_digest = sha256(edited.as_bytes());
    assert_eq!(download["download_digest"], downloaded_digest.as_str());
    assert_eq!(apply["applied_digest"], edited_digest.as_str(), "{apply}");
    let summary = apply["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(
            "`upgrade.yaml` was edited after step `manifest-upgrade/download-manifest` wrote it ({downloaded_digest}); applied as edited ({edited_digest})"
        )),
        "{summary}"
    );
    let journal = std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap();
    let restored: Vec<Value> = journal
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["event"] == "restored")
        .collect();
    assert!(
        !restored.is_empty()
            && restored.iter().all(|entry| {
                entry["step"] == "manifest-upgrade/download-manifest"
                    && entry["summary"]
                        .as_str()
                        .unwrap()
                        .contains("as edited since the download")
            }),
        "{restored:?}"
    );
    let text_status = operator.run(&["upgrade", "status"], &[]);
    assert_success(&text_status, "upgrade status");
    assert!(
        text(&text_status.stdout).contains("applied as edited"),
        "{}",
        text(&text_status.stdout)
    );
}

/// `upgrade plan --manifest-overlay` pins the manifest it showed the diff of; when the file at the
/// URL changes before the maintenance window (a re-tagged release, an updated mirror), `apply`
/// refuses it, naming both digests, with nothing written or applied.
#[test]
fn a_manifest_changed_since_the_reviewed_plan_is_refused_with_nothing_written() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    operator.netctl.write_file("edits.yaml", MANIFEST_OVERLAY);
    let overlay = operator.home().join("edits.yaml");
    let plan_file = operator.home().join("plan.json");
    let planned = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.29.0",
            "--manifest-overlay",
            overlay.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--out",
            plan_file.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&planned, "upgrade plan");
    let saved: Value = serde_json::from_slice(&std::fs::read(&plan_file).unwrap()).unwrap();
    let reviewed = saved["manifest_previews"][0]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(saved["steps"][0]["with"]["sha256"], reviewed.as_str());
    assert!(
        text(&planned.stdout).contains(&format!("(pinned to the reviewed {reviewed})")),
        "{}",
        text(&planned.stdout)
    );

    // The mirror now serves another file under the same release tag.
    let retagged = manifest_for("v3.29.0", "kubernetes")
        .replace("calico_backend: bird", "calico_backend: vxlan");
    let mirror = self::mirror(&operator, "v3.29.0", "calico.yaml", &retagged);
    // The run's own checkpoint mirror (a ConfigMap) aside, nothing in the cluster may change.
    let workloads = |kube: &KubeApiServer| -> Vec<String> {
        cluster_objects(kube)
            .into_iter()
            .filter(|object| !object.contains(r#""app.kubernetes.io/managed-by":"netctl""#))
            .collect()
    };
    let objects_before = workloads(&kube);
    let output = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let message = text(&output.stderr);
    let served = sha256(retagged.as_bytes());
    assert!(
        message.contains(&format!(
            "`https://{MANIFEST_HOST}/v3.29.0/manifests/calico.yaml` serves a manifest with digest {served}, not the {reviewed} the plan was reviewed with"
        )),
        "{message}"
    );
    assert!(
        message.contains("run `netctl upgrade plan` again and review the new diff"),
        "{message}"
    );
    let files = operator.home().join("state/files");
    assert!(!files.join("upgrade.yaml").exists(), "nothing is written");
    assert!(
        !files.join("upgrade.yaml.original").exists(),
        "nothing is written"
    );
    assert_eq!(objects_before, workloads(&kube), "no object changes");

    // A dry-run from the mirror says the same before the window.
    let dry = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--dry-run",
            "--discard-checkpoint",
        ],
        &[],
    );
    assert!(
        text(&dry.stdout).contains("not the sha256:")
            || text(&dry.stderr).contains("not the sha256:"),
        "stdout:\n{}\nstderr:\n{}",
        text(&dry.stdout),
        text(&dry.stderr)
    );
}

/// Plans that do not read the manifest keep working and say that it is not pinned.
#[test]
fn a_plan_without_an_overlay_says_the_manifest_is_not_pinned() {
    let (_kube, operator, _mirror) = kubernetes_manifest_cluster();
    let output = operator.run(
        &["upgrade", "plan", "--to", "v3.29.0", "--no-manifest-edits"],
        &[],
    );
    assert_success(&output, "upgrade plan");
    assert!(
        text(&output.stdout).contains(
            "(not pinned: not read at plan time; the run uses whatever the URL serves then)"
        ),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn a_manifest_overlay_that_does_not_fit_is_refused_with_nothing_written() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    let objects_before = cluster_objects(&kube);
    operator.netctl.write_file(
        "missing.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-settings\n  namespace: kube-system\ndata:\n  veth_mtu: \"1440\"\n",
    );
    operator
        .netctl
        .write_file("broken.yaml", "apiVersion: v1\nkind: [ConfigMap\n");
    let plan_file = operator.home().join("plan.json");
    let mut refusals = String::new();
    for (file, command) in [
        ("missing.yaml", "plan"),
        ("missing.yaml", "apply"),
        ("broken.yaml", "plan"),
    ] {
        let overlay = operator.home().join(file);
        let mut args = vec![
            "upgrade",
            command,
            "--to",
            "v3.29.0",
            "--manifest-overlay",
            overlay.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ];
        if command == "plan" {
            args.extend(["--out", plan_file.to_str().unwrap()]);
        } else {
            args.push("--yes");
        }
        let output = operator.run(&args, &[]);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
        assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
        refusals.push_str(&format!(
            "$ netctl upgrade {command} --manifest-overlay {file} ...\n{}\n",
            text(&output.stderr)
        ));
    }
    assert!(!plan_file.exists(), "no plan is saved");
    assert!(
        !operator.home().join("state/files/upgrade.yaml").exists(),
        "nothing is downloaded"
    );
    assert_eq!(objects_before, cluster_objects(&kube), "no object changes");
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in filters(operator.home()) {
        settings.add_filter(&pattern, replacement);
    }
    settings.bind(|| insta::assert_snapshot!("manifest_overlay_refusals", refusals));
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
    roll_out_in(&kube, "calico-system", "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");

    // The owner is gone and not back yet: the restore fails, naming the owner, and nothing changes.
    let resume = [
        "upgrade",
        "apply",
        "--resume",
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    let failed = operator.run(&resume, &[]);
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
        status["checkpoint"]["plan"]["facts"]["owner_references"]["value"][0]["ownerUid"],
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

    // The upgrade brings the Tier back with a new UID.
    kube.put(tier("new"));
    // The UID of the v3 resource, as netctl (and the OwnerReference) names it.
    let new_uid = v3_tier_uid(&operator);
    assert_ne!(old_uid, new_uid);

    // A dry-run of the rest shows the exact request, with the UID it read.
    let mut rehearsal = resume.to_vec();
    rehearsal.push("--dry-run");
    let rehearsed = operator.run(&rehearsal, &[]);
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
    let finished = operator.run(&resume, &[]);
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

/// The objects of the install, without netctl's own coordination objects (the lock a refused run
/// took and released).
fn install_objects(kube: &KubeApiServer) -> Vec<String> {
    cluster_objects(kube)
        .into_iter()
        .filter(|object| !object.contains(r#""name":"netctl-"#))
        .collect()
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
        let refused = operator.run(
            &[
                "upgrade",
                "apply",
                "--plan",
                plan_file.to_str().unwrap(),
                "--yes",
            ],
            &[],
        );
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
    let refused = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: cannot re-read `secrets` from the Kubernetes API to check the plan's facts"
        ) && stderr.contains(
            "hint: the plan took facts from the cluster and they are read again before it runs"
        ) && !stderr.contains("--offline"),
        "{stderr}"
    );
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
    let refused = etcd_only.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: the saved plan discovered fact `install_method` from the Kubernetes cluster, and no cluster is configured to check it again"
        ) && stderr.contains("hint: configure the cluster the plan was made for"),
        "{stderr}"
    );
    assert_eq!(
        before,
        etcd.dump_prefix_bytes("/calico/"),
        "nothing written (the lock was taken and released)"
    );
}

/// Puts a `helm` stand-in first on `PATH` that appends its argv (one argument a line, then `--`) to
/// `$HOME/helm-argv` and succeeds. For `install` it also does what Helm leaves behind: it creates
/// the release secret `sh.helm.release.v1.<release>.v1` (labels `owner=helm`, `name`,
/// `status=deployed`) in the `--namespace` it was given, through the API server. There is no real
/// Helm here: the test proves netctl runs exactly the command the plan shows, not what Helm does
/// with it.
fn install_helm_stand_in(operator: &Operator, kube: &KubeApiServer) -> PathBuf {
    let curl = support::find_program("curl", "apt-get install curl");
    let script = operator.home().join("bin").join("helm");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
printf '%s\n' "$@" -- >> "$HOME/helm-argv"
[ "$1" = install ] || exit 0
release=$2
while [ $# -gt 0 ]; do
  [ "$1" = --namespace ] && namespace=$2
  shift
done
exec {curl} --silent --show-error --fail --output /dev/null -X POST \
  -H 'Content-Type: application/json' \
  --data "{{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"helm.sh/release.v1\",\"metadata\":{{\"name\":\"sh.helm.release.v1.$release.v1\",\"namespace\":\"$namespace\",\"labels\":{{\"owner\":\"helm\",\"name\":\"$release\",\"status\":\"deployed\",\"version\":\"1\"}}}}}}" \
  "{url}/api/v1/namespaces/$namespace/secrets"
"#,
            curl = curl.display(),
            url = kube.url()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    operator.home().join("helm-argv")
}

/// A Helm install of v3.20: the release `calico` in `release_namespace` (two revisions), the
/// operator and its objects in `tigera-operator`, and secrets beside the release that must survive
/// the migration.
fn helm_cluster(release_namespace: &str) -> KubeApiServer {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.20.1");
    let helm = json!({"meta.helm.sh/release-name": "calico",
                      "meta.helm.sh/release-namespace": release_namespace});
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
                        "metadata": {"name": name, "namespace": release_namespace,
                                     "labels": {"owner": "helm", "name": release, "status": "deployed"}},
                        "data": {}}));
    }
    kube.put(json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "app-credentials", "namespace": release_namespace}, "data": {}}));
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
    // The old release was installed into `kube-system`, not the `default` the old chart asked
    // for: discovery finds it there, and the listing and the deletion go there.
    let kube = helm_cluster("kube-system");
    let operator = kubernetes_operator(&kube);
    let helm_argv = install_helm_stand_in(&operator, &kube);
    let mirror = mirror(&operator, "v3.27.0", "operator-crds.yaml", OPERATOR_CRDS);
    let (plan_file, plan) = plan(&operator, "v3.27.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "helm");
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(plan["facts"]["helm_release"]["value"], "calico");
    assert_eq!(
        plan["facts"]["operator_namespace"]["value"],
        "tigera-operator"
    );
    assert_eq!(
        plan["facts"]["helm_release_namespace"],
        json!({"value": "kube-system", "origin": "discovered"})
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
    let resume = [
        "upgrade",
        "apply",
        "--resume",
        "--mirror-dir",
        mirror.to_str().unwrap(),
    ];
    // Killed as `helm install` is about to start: Helm never ran and its release secret is not
    // there, so the resume runs it. That run is killed right after Helm finished, before the
    // checkpoint records it.
    apply_killed_at(
        &operator,
        &apply,
        "helm-ownership-migration/install-chart:before",
    );
    assert!(!helm_argv.exists(), "helm ran before the kill point");
    apply_killed_at(
        &operator,
        &resume,
        "helm-ownership-migration/install-chart:after",
    );
    assert_eq!(
        status_json(&operator)["checkpoint"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|step| step["id"] == "helm-ownership-migration/install-chart")
            .map(|step| step["state"].clone()),
        Some(json!("running")),
        "the kill left the step unrecorded"
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

    // `helm install` was killed after it ran, and is not idempotent: the resume finds its
    // postcondition (the deployed release secret in the operator namespace) and does not run it
    // again. Unattended, the run then lists the old release's secrets and stops at the gate before
    // deleting them.
    let stopped = operator.run(&resume, &[]);
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let stderr = text(&stopped.stderr);
    assert!(
        stderr.contains(
            "step `helm-ownership-migration/install-chart` was interrupted; its postcondition holds, so it is not run again"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "found 2 secrets in `kube-system` matching `name=calico,owner=helm`: sh.helm.release.v1.calico.v1, sh.helm.release.v1.calico.v2"
        ),
        "the listing is shown before the gate: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv).expect("helm ran"),
        "install\ncalico\nprojectcalico/tigera-operator\n--version\nv3.27.0\n--namespace\ntigera-operator\n--\n",
        "helm install ran exactly once across the kills"
    );
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["step"], "helm-ownership-migration/confirm-delete-old-release",
        "stderr: {stderr}\nsteps: {}",
        status["checkpoint"]["steps"]
    );
    assert_eq!(
        status["checkpoint"]["outputs"]["old_release_secrets"],
        json!([
            "sh.helm.release.v1.calico.v1",
            "sh.helm.release.v1.calico.v2"
        ])
    );
    assert_eq!(
        kube.names("v1", "secrets"),
        [
            "kube-system/app-credentials",
            "kube-system/sh.helm.release.v1.calico.v1",
            "kube-system/sh.helm.release.v1.calico.v2",
            "kube-system/sh.helm.release.v1.ingress.v1",
            "tigera-operator/sh.helm.release.v1.calico.v1",
        ],
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
            "kube-system/app-credentials",
            "kube-system/sh.helm.release.v1.ingress.v1",
            "tigera-operator/sh.helm.release.v1.calico.v1",
        ],
        "only the old release's secrets are deleted; the new release keeps its own"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv)
            .unwrap()
            .matches("install")
            .count(),
        1,
        "helm install ran exactly once across the kills"
    );
}

/// The plan lists and deletes the old release where discovery found it; a saved plan is refused when
/// the release has moved since, naming the fact, before anything is changed.
#[test]
fn a_saved_helm_plan_is_refused_when_the_release_moved() {
    let kube = helm_cluster("kube-system");
    let operator = kubernetes_operator(&kube);
    let (plan_file, _) = plan(&operator, "v3.27.0", &[]);
    let mut deployment = kube
        .get(
            "apps/v1",
            "deployments",
            "tigera-operator",
            "tigera-operator",
        )
        .unwrap();
    deployment["metadata"]["annotations"]["meta.helm.sh/release-namespace"] = json!("default");
    kube.put(deployment);
    kube.put(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                    "metadata": {"name": "sh.helm.release.v1.calico.v3", "namespace": "default",
                                 "labels": {"owner": "helm", "name": "calico", "status": "deployed"}},
                    "data": {}}));
    let before = install_objects(&kube);
    let refused = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: the saved plan is stale: fact `helm_release_namespace` was `kube-system` when the plan was made and is `default` now"
        ),
        "{stderr}"
    );
    assert_eq!(before, install_objects(&kube), "nothing changed");
}

/// The migration's dry-run against the cluster: the listing of the old release's secrets is a real
/// read (it changes nothing), Helm is only shown, and the deletion is a server dry-run.
#[test]
fn helm_ownership_dry_run_transcript() {
    let kube = helm_cluster("kube-system");
    let operator = kubernetes_operator(&kube);
    let helm_argv = install_helm_stand_in(&operator, &kube);
    let mirror = mirror(&operator, "v3.27.0", "operator-crds.yaml", OPERATOR_CRDS);
    let (plan_file, _) = plan(&operator, "v3.27.0", &[]);
    dry_run_snapshot(
        &operator,
        None,
        Some(&kube),
        &plan_file,
        &mirror,
        "helm_v3_20_to_v3_27_dry_run",
    );
    assert!(!helm_argv.exists(), "a dry-run does not run helm");
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
    let helm_argv = install_helm_stand_in(&operator, &kube);
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

    resume_to_the_end(&operator, &mirror);
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
    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
}

/// A Deployment of a mesh service in `namespace`; `inject` is the pod template's
/// `sidecar.istio.io/inject` label, when it has one.
fn service_deployment(namespace: &str, name: &str, inject: Option<&str>) -> Value {
    let mut labels = json!({"app": name});
    if let Some(inject) = inject {
        labels["sidecar.istio.io/inject"] = json!(inject);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": name, "image": "shop/app:1"}]}}}
    })
}

/// The injector configmap of the mirror (seed 9.8).
const INJECTOR_CONFIGMAP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: istio-sidecar-injector
  namespace: istio-system
data:
  config: "policy: enabled"
"#;

/// A Kubernetes-datastore manifest install at v3.25 with application layer policy on and a mesh:
/// namespace `shop` labelled for injection (`cart`, `front`, and `legacy`, which opts out) and `ext`
/// in `default`, which opts in on its own.
fn alp_cluster() -> KubeApiServer {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    install(&kube, &manifest_for("v3.25.2", "kubernetes"));
    kube.put(json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration",
        "metadata": {"name": "default"},
        "spec": {"policySyncPathPrefix": "/var/run/nodeagent"}
    }));
    kube.put(json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}}));
    kube.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}}),
    );
    kube.put(service_deployment("shop", "cart", None));
    kube.put(service_deployment("shop", "front", None));
    kube.put(service_deployment("shop", "legacy", Some("false")));
    kube.put(service_deployment("default", "ext", Some("true")));
    kube
}

/// The mirror of an ALP upgrade to v3.29.0: `calico.yaml` and the injector configmap for 1.15.7.
fn alp_mirror(operator: &Operator) -> PathBuf {
    mirror(
        operator,
        "v3.29.0",
        "calico.yaml",
        &manifest_for("v3.29.0", "kubernetes"),
    );
    mirror(
        operator,
        "v3.29.0",
        "alp/istio-inject-configmap-1.15.7.yaml",
        INJECTOR_CONFIGMAP,
    )
}

/// A Deployment's generation and its pod template's `restartedAt` annotation.
fn restart_state(kube: &KubeApiServer, namespace: &str, name: &str) -> (i64, Option<String>) {
    let object = kube
        .get("apps/v1", "deployments", namespace, name)
        .unwrap_or_else(|| panic!("no deployment {namespace}/{name}"));
    (
        object["metadata"]["generation"].as_i64().unwrap_or(1),
        object["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
            .as_str()
            .map(str::to_string),
    )
}

#[test]
fn alp_upgrade_rolls_each_service_deployment_and_resumes_without_restarting_twice() {
    let kube = alp_cluster();
    let operator = kubernetes_operator(&kube);
    let mirror = alp_mirror(&operator);
    let (plan_file, plan) = plan(&operator, "v3.29.0", &["--set", "mesh_version=1.15.7"]);
    assert_eq!(plan["facts"]["alp_enabled"]["value"], true);
    assert_eq!(plan["facts"]["alp_enabled"]["origin"], "discovered");
    assert_eq!(
        plan["facts"]["service_deployments"],
        json!({"value": [{"namespace": "default", "name": "ext"},
                         {"namespace": "shop", "name": "cart"},
                         {"namespace": "shop", "name": "front"}],
               "origin": "discovered"}),
        "the injected namespace's Deployments and the one that opts in, not the one that opts out"
    );
    let ids = step_ids(&plan);
    for id in [
        "alp-upgrade/apply-injector-configmap",
        "alp-upgrade/restart-service-deployment[2]",
        "alp-upgrade/wait-service-deployment[2]",
    ] {
        assert!(ids.contains(&id.to_string()), "{id} in {ids:?}");
    }

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
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");

    // Killed right after the second restart, before the checkpoint recorded it.
    let resume = [
        "upgrade",
        "apply",
        "--resume",
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    apply_killed_at(
        &operator,
        &resume,
        "alp-upgrade/restart-service-deployment[1]:after",
    );
    let configmap = kube
        .get("v1", "configmaps", "istio-system", "istio-sidecar-injector")
        .expect("the injector configmap was applied");
    assert_eq!(configmap["data"]["config"], "policy: enabled");
    let started_at = status_json(&operator)["checkpoint"]["started_at"]
        .as_str()
        .unwrap()
        .to_string();
    let cart_after_kill = restart_state(&kube, "shop", "cart");
    assert_eq!(cart_after_kill, (2, Some(started_at.clone())));
    assert_eq!(restart_state(&kube, "default", "ext").0, 2);
    assert_eq!(
        restart_state(&kube, "shop", "front"),
        (1, None),
        "not restarted yet"
    );

    // The deployment controller and kubelet: roll out whatever has a newer spec than observed.
    let done = std::sync::atomic::AtomicBool::new(false);
    let resumed = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                for (namespace, name) in [("default", "ext"), ("shop", "cart"), ("shop", "front")] {
                    let object = kube.get("apps/v1", "deployments", namespace, name).unwrap();
                    if object["metadata"]["generation"] != object["status"]["observedGeneration"] {
                        roll_out_in(&kube, namespace, "deployments", name, 1, 1);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        let resumed = operator.run(&resume, &[]);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        resumed
    });
    assert_success(&resumed, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert_eq!(
        restart_state(&kube, "shop", "cart"),
        cart_after_kill,
        "the restart done before the kill is not repeated"
    );
    for (namespace, name) in [("default", "ext"), ("shop", "front")] {
        assert_eq!(
            restart_state(&kube, namespace, name),
            (2, Some(started_at.clone())),
            "{namespace}/{name} restarted once with the run's value"
        );
    }
    assert_eq!(restart_state(&kube, "shop", "legacy"), (1, None));
    let journal =
        std::fs::read_to_string(operator.home().join("state/journal.jsonl")).expect("journal");
    let recovered = journal
        .lines()
        .filter(|line| line.contains("alp-upgrade/restart-service-deployment[1]"))
        .filter(|line| line.contains("Deployment shop/cart was already restarted by this run"))
        .count();
    assert_eq!(recovered, 1, "{journal}");
}

#[test]
fn alp_upgrade_dry_run_transcript() {
    let kube = alp_cluster();
    let operator = kubernetes_operator(&kube);
    let mirror = alp_mirror(&operator);
    let (plan_file, _) = plan(&operator, "v3.29.0", &["--set", "mesh_version=1.15.7"]);
    dry_run_snapshot(
        &operator,
        None,
        Some(&kube),
        &plan_file,
        &mirror,
        "alp_kubernetes_manifest_v3_25_to_v3_29_dry_run",
    );
}

/// One Calico resource as etcd stores it.
fn calico_json(kind: &str, name: &str, labels: Value, spec: Value) -> String {
    json!({
        "apiVersion": "projectcalico.org/v3", "kind": kind,
        "metadata": {"name": name, "uid": format!("uid-{name}"),
                     "creationTimestamp": "2026-01-01T00:00:00Z", "labels": labels},
        "spec": spec
    })
    .to_string()
}

/// The etcd datastore at v3.29.2 with two nodes, one all-interfaces host endpoint each (`node-b`
/// already carries `zone=b`, which its host endpoint agrees with), a named-interface host endpoint,
/// and KubeControllersConfiguration `default` with automatic host endpoints off.
fn auto_host_endpoint_datastore(node_b_zone: &str) -> EtcdServer {
    let etcd = EtcdServer::start();
    set_etcd_version(&etcd, "v3.29.2");
    etcd.put(
        &format!("{ROOT}/nodes/node-a"),
        calico_json("Node", "node-a", json!({}), json!({})),
    );
    etcd.put(
        &format!("{ROOT}/nodes/node-b"),
        calico_json("Node", "node-b", json!({"zone": node_b_zone}), json!({})),
    );
    etcd.put(
        &format!("{ROOT}/hostendpoints/node-a-all"),
        calico_json(
            "HostEndpoint",
            "node-a-all",
            json!({"role": "edge", "zone": "a"}),
            json!({"node": "node-a", "interfaceName": "*"}),
        ),
    );
    etcd.put(
        &format!("{ROOT}/hostendpoints/node-b-all"),
        calico_json(
            "HostEndpoint",
            "node-b-all",
            json!({"role": "core", "zone": "b"}),
            json!({"node": "node-b", "interfaceName": "*"}),
        ),
    );
    etcd.put(
        &format!("{ROOT}/hostendpoints/node-a-eth0"),
        calico_json(
            "HostEndpoint",
            "node-a-eth0",
            json!({}),
            json!({"node": "node-a", "interfaceName": "eth0", "expectedIPs": ["10.0.0.1"]}),
        ),
    );
    etcd.put(
        &format!("{ROOT}/kubecontrollersconfigurations/default"),
        calico_json(
            "KubeControllersConfiguration",
            "default",
            json!({}),
            json!({"controllers": {"node": {"reconcilerPeriod": "5m", "syncLabels": "Enabled",
                                             "hostEndpoint": {"autoCreate": "Disabled"}}},
                   "healthChecks": "Enabled", "logSeverityScreen": "Info"}),
        ),
    );
    etcd
}

/// `upgrade plan --procedure auto-host-endpoints` against etcd; returns the plan file and its JSON.
fn auto_host_endpoint_plan(operator: &Operator) -> (PathBuf, Value) {
    let file = operator.home().join("plan.json");
    let output = operator.run(
        &[
            "upgrade",
            "plan",
            "--procedure",
            "auto-host-endpoints",
            "--install-method",
            "manifest",
            "-o",
            "json",
            "--out",
            file.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&output, "upgrade plan");
    (
        file,
        serde_json::from_slice(&output.stdout).expect("plan JSON"),
    )
}

/// Plays kube-controllers with `autoCreate: Enabled`: once KubeControllersConfiguration `default`
/// asks for it (and a little later, so netctl has to wait), creates `<node>-auto-hep` for every node
/// with the node's labels and the `created-by` label. Returns when done or `stop` is set.
fn play_kube_controllers(etcd: &EtcdServer, stop: &std::sync::atomic::AtomicBool) {
    let enabled = |etcd: &EtcdServer| {
        etcd.get_json(&format!("{ROOT}/kubecontrollersconfigurations/default"))
            .is_some_and(|config| {
                config["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
            })
    };
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        if enabled(etcd) {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            for node in ["node-a", "node-b"] {
                let stored = etcd.get_json(&format!("{ROOT}/nodes/{node}")).unwrap();
                let mut labels = stored["metadata"]["labels"].clone();
                if !labels.is_object() {
                    labels = json!({});
                }
                labels["projectcalico.org/created-by"] = json!("calico-kube-controllers");
                etcd.put(
                    &format!("{ROOT}/hostendpoints/{node}-auto-hep"),
                    calico_json(
                        "HostEndpoint",
                        &format!("{node}-auto-hep"),
                        labels,
                        json!({"node": node, "interfaceName": "*",
                               "profiles": ["projectcalico-default-allow"]}),
                    ),
                );
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn host_endpoint_names(etcd: &EtcdServer) -> Vec<String> {
    etcd.get_prefix(&format!("{ROOT}/hostendpoints/"))
        .into_iter()
        .map(|(key, _)| key.rsplit('/').next().unwrap().to_string())
        .collect()
}

#[test]
fn auto_host_endpoints_migration_on_etcd_waits_for_kube_controllers_and_resumes() {
    let etcd = auto_host_endpoint_datastore("b");
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let (plan_file, plan) = auto_host_endpoint_plan(&operator);
    assert_eq!(
        plan["facts"]["all_interfaces_host_endpoints"],
        json!({"value": [
                  {"name": "node-a-all", "node": "node-a", "labels": {"role": "edge", "zone": "a"}},
                  {"name": "node-b-all", "node": "node-b", "labels": {"role": "core", "zone": "b"}}],
               "origin": "discovered"})
    );

    // The dry-run first: it shows every request and changes nothing.
    let mirror = operator.home().join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    dry_run_snapshot(
        &operator,
        Some(&etcd),
        None,
        &plan_file,
        &mirror,
        "auto_host_endpoints_etcd_dry_run",
    );

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--yes",
    ];
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| play_kube_controllers(&etcd, &stop));

        apply_killed_at(
            &operator,
            &apply,
            "auto-host-endpoints/enable-auto-host-endpoints:after",
        );
        // Killed in the middle: the labels are on the nodes and the controllers are asked to
        // create the automatic host endpoints; nothing was deleted.
        let node_a = etcd.get_json(&format!("{ROOT}/nodes/node-a")).unwrap();
        assert_eq!(
            node_a["metadata"]["labels"],
            json!({"role": "edge", "zone": "a"})
        );
        assert!(
            host_endpoint_names(&etcd).contains(&"node-a-all".to_string()),
            "{:?}",
            host_endpoint_names(&etcd)
        );

        let resumed = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_success(&resumed, "resume");
        let stderr = text(&resumed.stderr);
        assert!(
            stderr.contains("waiting for hostendpoints `node-a-auto-hep`"),
            "the resumed run waited for kube-controllers: {stderr}"
        );
    });
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );

    assert_eq!(
        host_endpoint_names(&etcd),
        ["node-a-auto-hep", "node-a-eth0", "node-b-auto-hep"],
        "the old all-interfaces host endpoints are gone, the named one stays"
    );
    let node_b = etcd.get_json(&format!("{ROOT}/nodes/node-b")).unwrap();
    assert_eq!(
        node_b["metadata"]["labels"],
        json!({"role": "core", "zone": "b"})
    );
    let automatic = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-auto-hep"))
        .unwrap();
    assert_eq!(
        automatic["metadata"]["labels"],
        json!({"role": "edge", "zone": "a", "projectcalico.org/created-by": "calico-kube-controllers"})
    );
    let config = etcd
        .get_json(&format!("{ROOT}/kubecontrollersconfigurations/default"))
        .unwrap();
    let node_controller = &config["spec"]["controllers"]["node"];
    assert_eq!(
        node_controller["hostEndpoint"],
        json!({"autoCreate": "Enabled"})
    );
    assert_eq!(node_controller["syncLabels"], "Enabled", "the rest is kept");
}

#[test]
fn auto_host_endpoints_migration_refuses_to_overwrite_a_node_label() {
    // node-b says `zone=west`, its host endpoint `zone=b`: neither may silently win.
    let etcd = auto_host_endpoint_datastore("west");
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let (plan_file, _) = auto_host_endpoint_plan(&operator);
    let output = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("node node-b already has label `zone` = `west`; not changing it to `b`"),
        "{stderr}"
    );
    let node_b = etcd.get_json(&format!("{ROOT}/nodes/node-b")).unwrap();
    assert_eq!(
        node_b["metadata"]["labels"],
        json!({"zone": "west"}),
        "nothing of the refused write"
    );
    let config = etcd
        .get_json(&format!("{ROOT}/kubecontrollersconfigurations/default"))
        .unwrap();
    assert_eq!(
        config["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"], "Disabled",
        "the migration stopped before turning automatic host endpoints on"
    );
    assert_eq!(host_endpoint_names(&etcd).len(), 3);
}

/// The Kubernetes datastore at v3.29.2 with the same layout as [`auto_host_endpoint_datastore`]:
/// Kubernetes Nodes, host endpoints and KubeControllersConfiguration as Calico custom resources.
fn auto_host_endpoint_cluster() -> KubeApiServer {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.29.2");
    install(&kube, &manifest_for("v3.29.2", "kubernetes"));
    for (node, labels) in [
        ("node-a", json!({"kubernetes.io/hostname": "node-a"})),
        (
            "node-b",
            json!({"kubernetes.io/hostname": "node-b", "zone": "b"}),
        ),
    ] {
        kube.put(json!({"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": node, "labels": labels}}));
    }
    for (name, node, interface, labels) in [
        (
            "node-a-all",
            "node-a",
            "*",
            json!({"role": "edge", "zone": "a"}),
        ),
        (
            "node-b-all",
            "node-b",
            "*",
            json!({"role": "core", "zone": "b"}),
        ),
        ("node-a-eth0", "node-a", "eth0", json!({})),
    ] {
        let mut spec = json!({"node": node, "interfaceName": interface});
        if interface != "*" {
            spec["expectedIPs"] = json!(["10.0.0.1"]);
        }
        kube.put(
            json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "HostEndpoint",
                        "metadata": {"name": name, "labels": labels}, "spec": spec}),
        );
    }
    kube.put(json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "KubeControllersConfiguration",
        "metadata": {"name": "default"},
        "spec": {"controllers": {"node": {"reconcilerPeriod": "5m", "syncLabels": "Enabled",
                                          "hostEndpoint": {"autoCreate": "Disabled"}}},
                 "healthChecks": "Enabled", "logSeverityScreen": "Info"}
    }));
    kube
}

/// [`play_kube_controllers`] for the Kubernetes datastore.
fn play_kube_controllers_on(kube: &KubeApiServer, stop: &std::sync::atomic::AtomicBool) {
    const CALICO: &str = "crd.projectcalico.org/v1";
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let enabled = kube
            .get(CALICO, "kubecontrollersconfigurations", "", "default")
            .is_some_and(|config| {
                config["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
            });
        if enabled {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            for node in ["node-a", "node-b"] {
                let stored = kube.get("v1", "nodes", "", node).unwrap();
                let mut labels = stored["metadata"]["labels"].clone();
                labels["projectcalico.org/created-by"] = json!("calico-kube-controllers");
                kube.put(json!({"apiVersion": CALICO, "kind": "HostEndpoint",
                                "metadata": {"name": format!("{node}-auto-hep"), "labels": labels},
                                "spec": {"node": node, "interfaceName": "*",
                                         "profiles": ["projectcalico-default-allow"]}}));
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn auto_host_endpoints_migration_on_kubernetes_labels_the_kubernetes_nodes_and_resumes() {
    let kube = auto_host_endpoint_cluster();
    let operator = kubernetes_operator(&kube);
    let (plan_file, plan) = auto_host_endpoint_plan(&operator);
    assert_eq!(plan["facts"]["datastore_type"]["value"], "kubernetes");
    assert_eq!(
        plan["facts"]["all_interfaces_host_endpoints"]["value"],
        json!([{"name": "node-a-all", "node": "node-a", "labels": {"role": "edge", "zone": "a"}},
               {"name": "node-b-all", "node": "node-b", "labels": {"role": "core", "zone": "b"}}])
    );
    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--yes",
    ];
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| play_kube_controllers_on(&kube, &stop));
        apply_killed_at(
            &operator,
            &apply,
            "auto-host-endpoints/wait-for-auto-host-endpoint[0]:before",
        );
        let resumed = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_success(&resumed, "resume");
    });
    assert_eq!(
        status_json(&operator)["checkpoint"]["run"]["state"],
        "completed"
    );
    // The labels went onto the Kubernetes Nodes, next to the ones they had.
    let node_a = kube.get("v1", "nodes", "", "node-a").unwrap();
    assert_eq!(
        node_a["metadata"]["labels"],
        json!({"kubernetes.io/hostname": "node-a", "role": "edge", "zone": "a"})
    );
    let mut names = kube.names("crd.projectcalico.org/v1", "hostendpoints");
    names.sort();
    assert_eq!(
        names,
        ["node-a-auto-hep", "node-a-eth0", "node-b-auto-hep"],
        "the old all-interfaces host endpoints are gone"
    );
    let config = kube
        .get(
            "crd.projectcalico.org/v1",
            "kubecontrollersconfigurations",
            "",
            "default",
        )
        .unwrap();
    assert_eq!(
        config["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"],
        "Enabled"
    );
}
