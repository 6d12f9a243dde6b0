//! The helpers every scenario shares: the operator's sandboxed netctl and its `upgrade apply`
//! command lines, the installs a scenario starts from, rollouts played as the controllers would,
//! kills at a step and resumes, and transcript snapshots.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::exec_common::{filters, text};
use crate::support::{EtcdServer, KubeApiServer, Netctl};

pub(crate) const ROOT: &str = "/calico/resources/v3/projectcalico.org";
pub(crate) const MANIFEST_HOST: &str = "raw.githubusercontent.com/projectcalico/calico";

/// A sandboxed netctl with a config file, `USER=ops` and the state directory `$HOME/state`.
pub(crate) struct Operator {
    pub(crate) netctl: Netctl,
}

impl Operator {
    pub(crate) fn with_config(config: &str) -> Operator {
        let mut netctl = Netctl::new();
        netctl.config_file(config).env("USER", "ops");
        Operator { netctl }
    }

    pub(crate) fn home(&self) -> &std::path::Path {
        self.netctl.home()
    }

    /// `netctl <args>`, with the state directory added to `upgrade apply|status|verify|rollback|history`.
    pub(crate) fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut command = self.netctl.command();
        command.args(args);
        if args.first() == Some(&"upgrade")
            && matches!(
                args.get(1),
                Some(&"apply" | &"status" | &"verify" | &"rollback" | &"history")
            )
        {
            command.arg("--state-dir").arg(self.home().join("state"));
        }
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("run netctl")
    }

    /// `netctl upgrade apply ...` as `apply` says.
    pub(crate) fn apply(&self, apply: &Apply) -> std::process::Output {
        self.run(&apply.args(), &[])
    }
}

/// The arguments of one `upgrade apply`, written the way an operator types them:
/// `Apply::plan(&plan_file).mirror(&mirror).yes()`.
#[derive(Debug, Clone)]
pub(crate) struct Apply {
    args: Vec<String>,
}

impl Apply {
    /// `upgrade apply --plan FILE`
    pub(crate) fn plan(file: impl AsRef<std::path::Path>) -> Apply {
        Apply {
            args: vec!["--plan".into(), file.as_ref().display().to_string()],
        }
    }

    /// `upgrade apply --resume`
    pub(crate) fn resume() -> Apply {
        Apply {
            args: vec!["--resume".into()],
        }
    }

    /// `--mirror-dir DIR`
    pub(crate) fn mirror(self, directory: impl AsRef<std::path::Path>) -> Apply {
        self.with(&["--mirror-dir", &directory.as_ref().display().to_string()])
    }

    /// `--yes`
    pub(crate) fn yes(self) -> Apply {
        self.with(&["--yes"])
    }

    /// `--dry-run`
    pub(crate) fn dry_run(self) -> Apply {
        self.with(&["--dry-run"])
    }

    /// `--discard-checkpoint`
    pub(crate) fn discard_checkpoint(self) -> Apply {
        self.with(&["--discard-checkpoint"])
    }

    /// `--approve STEP`
    pub(crate) fn approve(self, step: &str) -> Apply {
        self.with(&["--approve", step])
    }

    pub(crate) fn with(mut self, args: &[&str]) -> Apply {
        self.args.extend(args.iter().map(|arg| arg.to_string()));
        self
    }

    /// The whole command line after `netctl`.
    pub(crate) fn args(&self) -> Vec<&str> {
        ["upgrade", "apply"]
            .into_iter()
            .chain(self.args.iter().map(String::as_str))
            .collect()
    }
}

pub(crate) fn kubeconfig_line(kube: &KubeApiServer) -> String {
    format!(
        "  kubeconfig: {}\n",
        serde_json::to_string(&kube.kubeconfig_path().display().to_string()).unwrap()
    )
}

/// An operator whose netctl uses `etcd` as the datastore and `kube` as the cluster.
pub(crate) fn operator_for(etcd: &EtcdServer, kube: &KubeApiServer) -> Operator {
    Operator::with_config(&format!(
        "{}{}",
        etcd.netctl_config_yaml(),
        kubeconfig_line(kube)
    ))
}

/// An operator whose netctl uses `kube` as the Kubernetes datastore and cluster, configured by
/// environment (so the `netctl` that `exec` steps start finds the same cluster), with `$HOME/bin`
/// first on `PATH` holding a `netctl` link to the binary under test.
pub(crate) fn kubernetes_operator(kube: &KubeApiServer) -> Operator {
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
pub(crate) fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The `upgrade status -o json` value.
pub(crate) fn status_json(operator: &Operator) -> Value {
    let output = operator.run(&["upgrade", "status", "-o", "json"], &[]);
    assert_success(&output, "upgrade status");
    serde_json::from_slice(&output.stdout).expect("status JSON")
}

/// Writes `text` as the mirrored `manifests/<file>` of `tag`, returns the mirror directory.
pub(crate) fn mirror(operator: &Operator, tag: &str, file: &str, text: &str) -> PathBuf {
    operator.netctl.write_file(
        &format!("mirror/{MANIFEST_HOST}/{tag}/manifests/{file}"),
        text,
    );
    operator.home().join("mirror")
}

/// The workloads of a manifest install in `kube-system`, at `version`, with the etcd datastore.
pub(crate) fn manifest_workloads(version: &str) -> String {
    manifest_for(version, "etcdv3")
}

/// `calico-etcd.yaml` as released: `etcd_endpoints` is upstream's placeholder until set.
pub(crate) fn released_etcd_manifest(version: &str) -> String {
    manifest_workloads(version).replace(
        "etcd_endpoints: \"http://127.0.0.1:2379\"",
        "etcd_endpoints: \"http://<ETCD_IP>:<ETCD_PORT>\"",
    )
}

/// The workloads of a manifest install in `kube-system`, at `version`, for `datastore`.
pub(crate) fn manifest_for(version: &str, datastore: &str) -> String {
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
pub(crate) fn install(kube: &KubeApiServer, manifest: &str) {
    for document in manifest.split("\n---\n") {
        let object: Value = netctl::yaml::from_str(document).expect("manifest document");
        kube.put(object);
    }
}

/// Plays the controllers and kubelet: the workload's latest spec is observed and fully rolled out,
/// and its pods run with `ready` of `total` containers ready.
pub(crate) fn roll_out(kube: &KubeApiServer, plural: &str, name: &str, ready: usize, total: usize) {
    roll_out_in(kube, "kube-system", plural, name, ready, total)
}

pub(crate) fn roll_out_in(
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
    // The pod template's containers (name, image), as the controller creates them.
    let template = &object["spec"]["template"]["spec"]["containers"];
    let container = |index: usize| {
        let name = template[index]["name"]
            .as_str()
            .map_or_else(|| format!("c{index}"), str::to_string);
        let image = template[index]["image"].as_str().unwrap_or("x").to_string();
        json!({"name": name, "image": image})
    };
    let all_ready = ready == total;
    for index in 0..pods {
        let statuses: Vec<Value> = (0..total)
            .map(|c| json!({"name": container(c)["name"], "ready": c < ready}))
            .collect();
        kube.put(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{name}-{index}"), "namespace": namespace,
                         "labels": object["spec"]["selector"]["matchLabels"].clone()},
            "spec": {"nodeName": format!("node-{index}"),
                     "containers": (0..total).map(container).collect::<Vec<_>>()},
            "status": {"phase": "Running", "containerStatuses": statuses,
                       "conditions": [{"type": "Ready", "status": if all_ready { "True" } else { "False" }}]}
        }));
    }
}

/// The id of the lock a killed run left behind.
pub(crate) fn stale_lock_id(operator: &Operator) -> String {
    let status = status_json(operator);
    status["lock"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a killed run leaves its lock: {status}"))
        .to_string()
}

/// Runs `upgrade apply` killed at `kill_point`, asserts the kill, and removes the dead run's lock.
pub(crate) fn apply_killed_at(operator: &Operator, apply: &Apply, kill_point: &str) {
    let crashed = operator.run(&apply.args(), &[("NETCTL_TEST_CRASH_AFTER", kill_point)]);
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
pub(crate) fn resume_to_the_end(operator: &Operator, mirror: impl AsRef<std::path::Path>) {
    let resumed = operator.apply(&Apply::resume().mirror(mirror).yes());
    assert_success(&resumed, "resume");
}

pub(crate) fn assert_success(output: &std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// `upgrade plan --to <to> --out plan.json` with discovery; returns the plan file and its JSON.
pub(crate) fn plan(operator: &Operator, to: &str, extra: &[&str]) -> (PathBuf, Value) {
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

pub(crate) fn step_ids(plan: &Value) -> Vec<String> {
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["id"].as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn set_etcd_version(etcd: &EtcdServer, version: &str) {
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        format!(
            r#"{{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{{"name":"default","uid":"c1","creationTimestamp":"2026-01-01T00:00:00Z"}},"spec":{{"calicoVersion":"{version}","clusterType":"k8s,bgp","datastoreReady":true}}}}"#
        ),
    );
}

/// Every stored object of the types the scenarios touch, as JSON text.
pub(crate) fn cluster_objects(kube: &KubeApiServer) -> Vec<String> {
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
pub(crate) fn dry_run_snapshot(
    operator: &Operator,
    etcd: Option<&EtcdServer>,
    kube: Option<&KubeApiServer>,
    plan_file: &std::path::Path,
    mirror: &std::path::Path,
    name: &str,
) {
    let before = etcd.map(|etcd| etcd.dump_prefix_bytes("/calico/"));
    let objects_before = kube.map(cluster_objects);
    let output = operator.apply(&Apply::plan(plan_file).mirror(mirror).dry_run());
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
    // The dry-runs talk to etcd and the API server on the ports this run got.
    let mut settings = snapshot_settings(operator);
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings.bind(|| insta::assert_snapshot!(format!("upgrade_e2e__{name}"), text(&output.stdout)));
}

pub(crate) fn set_kube_version(kube: &KubeApiServer, version: &str) {
    kube.put(json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "ClusterInformation",
        "metadata": {"name": "default"},
        "spec": {"calicoVersion": version, "clusterType": "k8s,bgp,kdd", "datastoreReady": true}
    }));
}

/// How the transcripts are snapshotted: as `upgrade_e2e__<name>` beside the other tests'
/// snapshots, with the run's home, digests, hosts, pids and times masked.
pub(crate) fn snapshot_settings(operator: &Operator) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    for (pattern, replacement) in filters(operator.home()) {
        settings.add_filter(&pattern, replacement);
    }
    settings
}

/// Snapshots `value` as `upgrade_e2e__<name>` (see [`snapshot_settings`]).
pub(crate) fn snapshot(operator: &Operator, name: &str, value: &str) {
    snapshot_settings(operator)
        .bind(|| insta::assert_snapshot!(format!("upgrade_e2e__{name}"), value));
}

pub(crate) fn operator_deployment(image: &str) -> Value {
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

/// The objects of the install, without netctl's own coordination objects (the lock a refused run
/// took and released).
pub(crate) fn install_objects(kube: &KubeApiServer) -> Vec<String> {
    cluster_objects(kube)
        .into_iter()
        .filter(|object| !object.contains(r#""name":"netctl-"#))
        .collect()
}

/// The etcd datastore with a manifest install at v3.13 and one all-interfaces host endpoint.
pub(crate) fn etcd_manifest_cluster() -> (EtcdServer, KubeApiServer) {
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

/// Puts one calico-node pod per `(node, version)` into `namespace`, as the DaemonSet controller
/// would (label `k8s-app=calico-node`, container `calico-node` of image `calico/node:<version>`):
/// what the `node-agents` pre-flight reads. Replaces pods of the same node.
pub(crate) fn node_agent_pods(kube: &KubeApiServer, namespace: &str, agents: &[(&str, &str)]) {
    for (node, version) in agents {
        kube.put(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("calico-node-{node}"), "namespace": namespace,
                         "labels": {"k8s-app": "calico-node"}},
            "spec": {"nodeName": node,
                     "containers": [{"name": "calico-node", "image": format!("docker.io/calico/node:{version}")}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "calico-node", "ready": true}]}
        }));
    }
}

/// Plays the operator's status reporting: TigeraStatus `calico` (and `apiserver`) Available, as
/// the operator writes them once its components run (`operator.tigera.io/v1`).
pub(crate) fn operator_reports_available(kube: &KubeApiServer) {
    for component in ["calico", "apiserver"] {
        kube.put(json!({
            "apiVersion": "operator.tigera.io/v1", "kind": "TigeraStatus",
            "metadata": {"name": component},
            "spec": {},
            "status": {"conditions": [
                {"type": "Available", "status": "True", "reason": "AllObjectsAvailable",
                 "message": "All objects available", "lastTransitionTime": "2026-11-27T10:00:00Z"},
                {"type": "Progressing", "status": "False", "reason": "AllObjectsAvailable",
                 "message": "All objects available", "lastTransitionTime": "2026-11-27T10:00:00Z"},
                {"type": "Degraded", "status": "False", "reason": "AllObjectsAvailable",
                 "message": "All objects available", "lastTransitionTime": "2026-11-27T10:00:00Z"}
            ]}
        }));
    }
}

/// Plays the operator rolling the node agents: DaemonSet `calico-node` in `namespace` gets the
/// `calico/node` image of `version` (the operator's part, not netctl's), then rolls out.
pub(crate) fn operator_rolls_node_agents(kube: &KubeApiServer, namespace: &str, version: &str) {
    let mut node = kube
        .get("apps/v1", "daemonsets", namespace, "calico-node")
        .expect("DaemonSet calico-node");
    node["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!(format!("docker.io/calico/node:{version}"));
    kube.put(node);
    roll_out_in(kube, namespace, "daemonsets", "calico-node", 2, 2);
    operator_reports_available(kube);
}

/// The etcd manifest path to v3.27.0, planned: the operator, the mirror serving `calico-etcd.yaml`
/// (and the plan's overlay review), and the saved plan.
pub(crate) fn etcd_manifest_plan(
    etcd: &EtcdServer,
    kube: &KubeApiServer,
) -> (Operator, PathBuf, PathBuf) {
    let operator = operator_for(etcd, kube);
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
    (operator, mirror, plan_file)
}

/// `<node> <image>` of every pod in `namespace` (its first container's image), sorted: what a
/// rollout left on each node.
pub(crate) fn pod_images(kube: &KubeApiServer, namespace: &str) -> Vec<String> {
    let mut images: Vec<String> = kube
        .names("v1", "pods")
        .iter()
        .filter_map(|name| {
            let (pod_namespace, name) = name.split_once('/')?;
            let pod = kube.get("v1", "pods", pod_namespace, name)?;
            (pod_namespace == namespace).then(|| {
                format!(
                    "{} {}",
                    pod["spec"]["nodeName"].as_str().unwrap_or_default(),
                    pod["spec"]["containers"][0]["image"]
                        .as_str()
                        .unwrap_or_default()
                )
            })
        })
        .collect();
    images.sort();
    images
}
