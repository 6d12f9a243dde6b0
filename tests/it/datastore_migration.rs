//! `netctl upgrade plan|apply --procedure datastore-migration`: a single-manifest install on real
//! etcd moved to the strict Kubernetes test server's datastore (a cluster with no Calico CRDs),
//! as the `datastore-migration` runbook does it: download the release's CRDs, pre-flight, lock
//! etcd, export into the state directory, install the CRDs and import, switch the components to
//! the Kubernetes-datastore manifest of the same release, wait for the rollout, unlock. The host
//! endpoints are attached to their renamed nodes afterwards; a run killed with SIGKILL after a
//! step resumes and finishes with every resource once; the dry run writes nothing; a target that
//! holds Calico data is refused before the lock.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use serde_json::Value;

use crate::migrate::{assert_reads_back, crd_manifest_text, kube_target, seed};
use crate::support::kube_api::CALICO_GROUP;
use crate::support::{CalicoGroups, EtcdServer, KubeApiServer, Netctl};
use crate::upgrade_real_manifests::{Flavour, etcd_manifest};

const MANIFEST_HOST: &str = "raw.githubusercontent.com/projectcalico/calico";
const VERSION: &str = "v3.32.1";

/// The Kubernetes-datastore manifest of the release (`calico.yaml`): the etcd manifest's
/// components with `DATASTORE_TYPE=kubernetes` in place of the etcd endpoints.
fn kubernetes_manifest() -> String {
    etcd_manifest(Flavour::Calico, VERSION).replace(
        "            - name: ETCD_ENDPOINTS\n              valueFrom:\n                configMapKeyRef:\n                  name: calico-config\n                  key: etcd_endpoints\n",
        "            - name: DATASTORE_TYPE\n              value: \"kubernetes\"\n",
    )
}

/// netctl on etcd (datastore) and the test server (cluster), state in `$HOME/state`, the
/// release's files in `$HOME/mirror`.
struct Operator {
    netctl: Netctl,
}

impl Operator {
    fn new(etcd: &EtcdServer, kube: &KubeApiServer) -> Operator {
        let mut netctl = Netctl::new();
        let config = format!(
            "{}  kubeconfig: {}\n",
            etcd.netctl_config_yaml(),
            serde_json::to_string(&kube.kubeconfig_path().display().to_string()).unwrap()
        );
        netctl.config_file(&config).env("USER", "ops");
        for (file, text) in [
            ("crds.yaml", crd_manifest_text(CALICO_GROUP, &[])),
            ("calico.yaml", kubernetes_manifest()),
            ("calico-etcd.yaml", etcd_manifest(Flavour::Calico, VERSION)),
        ] {
            netctl.write_file(
                &format!("mirror/{MANIFEST_HOST}/{VERSION}/manifests/{file}"),
                text,
            );
        }
        Operator { netctl }
    }

    fn home(&self) -> PathBuf {
        self.netctl.home().to_path_buf()
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut command = self.netctl.command();
        command.args(args);
        let mirror = self.home().join("mirror");
        if args.first() == Some(&"upgrade") {
            if matches!(args.get(1), Some(&"plan" | &"apply")) {
                command.arg("--mirror-dir").arg(mirror);
            }
            if matches!(args.get(1), Some(&"apply" | &"status")) {
                command.arg("--state-dir").arg(self.home().join("state"));
            }
        }
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("run netctl")
    }

    fn plan(&self) -> PathBuf {
        let plan = self.home().join("plan.json");
        let planned = self.run(
            &[
                "upgrade",
                "plan",
                "--procedure",
                "datastore-migration",
                "--no-manifest-edits",
                "--to",
                VERSION,
                "-o",
                "json",
                "--out",
                plan.to_str().unwrap(),
            ],
            &[],
        );
        assert_success(&planned, "upgrade plan");
        plan
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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

/// etcd as a manifest install of the release left it, the cluster with its objects and the
/// Kubernetes node the etcd node is called there, no Calico CRDs.
fn installed() -> (EtcdServer, KubeApiServer) {
    let etcd = EtcdServer::start();
    seed(&etcd, 3);
    let kube = kube_target(CalicoGroups::None);
    kube.put(
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    for object in netctl::yaml::read_values(&etcd_manifest(Flavour::Calico, VERSION)).unwrap() {
        kube.put(object);
    }
    (etcd, kube)
}

fn locked(etcd: &EtcdServer) -> bool {
    let information = etcd
        .get("/calico/resources/v3/projectcalico.org/clusterinformations/default")
        .expect("ClusterInformation");
    let information: Value = serde_json::from_str(&information).unwrap();
    information["spec"]["datastoreReady"] == false
}

#[test]
fn the_migration_takes_an_etcd_install_to_the_kubernetes_datastore() {
    let (etcd, kube) = installed();
    let operator = Operator::new(&etcd, &kube);
    let shown = operator.run(
        &[
            "upgrade",
            "plan",
            "--procedure",
            "datastore-migration",
            "--no-manifest-edits",
            "--to",
            VERSION,
        ],
        &[],
    );
    assert_success(&shown, "upgrade plan");
    let shown = text(&shown.stdout);
    for step in [
        "download-crds",
        "preflight",
        "download-manifest",
        "lock",
        "export",
        "import",
        "switch-components",
        "wait-node-agents",
        "unlock",
    ] {
        assert!(shown.contains(step), "{step}: {shown}");
    }
    let plan = operator.plan();
    let crashed = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan.to_str().unwrap(),
            "--yes",
        ],
        &[(
            "NETCTL_TEST_CRASH_AFTER",
            "datastore-migration/switch-components:after",
        )],
    );
    assert_eq!(
        crashed.status.signal(),
        Some(9),
        "the run was not killed after the switch: {}",
        text(&crashed.stderr)
    );
    assert!(locked(&etcd));
    let agent = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        agent["spec"]["template"]["spec"]["containers"][0]["env"][0]["name"],
        "DATASTORE_TYPE"
    );
    let lock = {
        let status = operator.run(&["upgrade", "status", "-o", "json"], &[]);
        let status: Value = serde_json::from_slice(&status.stdout).unwrap();
        status["lock"]["id"].as_str().unwrap().to_string()
    };
    assert_success(&operator.run(&["upgrade", "unlock", &lock], &[]), "unlock");
    crate::upgrade_e2e::common::roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    let resumed = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert_success(&resumed, "resume");
    let file = operator.home().join("state");
    let export = find(&file, "migration.txt").expect("the export in the state directory");
    // Every resource and IPAM object once, equal to the export; the target unlocked.
    assert_reads_back(&kube, export.to_str().unwrap(), &operator.home(), true);
    // The host endpoint is attached to its node's Kubernetes name; the target is unlocked.
    let endpoint = kube
        .get("crd.projectcalico.org/v1", "hostendpoints", "", "endpoint1")
        .unwrap();
    assert_eq!(endpoint["spec"]["node"], "node-a", "{endpoint}");
    let information = kube
        .get(
            "crd.projectcalico.org/v1",
            "clusterinformations",
            "",
            "default",
        )
        .unwrap();
    assert_eq!(information["spec"]["datastoreReady"], true, "{information}");
}

/// The first file called `name` below `directory`.
fn find(directory: &std::path::Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(directory).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|file| file == name) {
            return Some(path);
        }
    }
    None
}
