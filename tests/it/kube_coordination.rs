//! `upgrade apply` on the `kubernetes` datastore, end to end against the in-process API server: facts
//! discovered from the Calico CRDs, the upgrade lock as a ConfigMap attached to a
//! `coordination.k8s.io/v1` Lease (released at the end), the checkpoint mirrored into a ConfigMap,
//! a lock left by an expired Lease treated as gone, and a plan made offline from a runbook directory
//! whose `kube.*` steps run against the same cluster.

use crate::support::{KubeApiServer, Netctl};
use netctl::datastore::DatastoreType;
use netctl::plan::{
    Action, DiscoveredFacts, FactOverrides, Facts, InstallMethod, Phase, Plan, PlannedStep, Release,
};
use serde_json::json;

const CALICO: &str = "crd.projectcalico.org/v1";

fn seed(kube: &KubeApiServer) {
    kube.put(json!({"apiVersion": CALICO, "kind": "ClusterInformation",
        "metadata": {"name": "default"},
        "spec": {"calicoVersion": "v3.26.4", "datastoreReady": true}}));
    kube.put(json!({"apiVersion": CALICO, "kind": "HostEndpoint",
        "metadata": {"name": "h1"},
        "spec": {"node": "n1", "interfaceName": "eth0", "expectedIPs": ["10.0.0.1"]}}));
    // A healthy node: the pre-flight checks that every node is Ready before anything is written.
    kube.put(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
}

fn plan() -> Plan {
    let facts = Facts::assemble(
        &DiscoveredFacts {
            installed_version: Some(Release::new(3, 26, 4)),
            datastore_type: Some(DatastoreType::Kubernetes),
            all_interfaces_host_endpoints: Some(vec![]),
            ..DiscoveredFacts::default()
        },
        &FactOverrides {
            install_method: Some(InstallMethod::Manifest),
            ..FactOverrides::default()
        },
    )
    .expect("facts");
    let step = |id: &str, action: Action| PlannedStep {
        id: id.to_string(),
        runbook: "pre".to_string(),
        phase: Phase::PreUpgrade,
        description: id.to_string(),
        needs: vec![],
        action,
        verify: None,
        irreversible: false,
        requires: None,
        rollback: None,
        undo: None,
        retry: None,
        register: None,
        reason: "test".to_string(),
        span: None,
    };
    Plan::new(
        "upgrade",
        Release::new(3, 26, 4),
        Release::new(3, 29, 2),
        facts,
        vec![
            step(
                "pre/label-h1",
                Action::from_parts(
                    "resource.label",
                    json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": "yes"}),
                )
                .unwrap(),
            ),
            step(
                "pre/label-node",
                Action::from_parts(
                    "kube.label",
                    json!({"object": {"api_version": "v1", "kind": "Node", "name": "n1"},
                           "values": {"projectcalico.org/upgrading": "true"}}),
                )
                .unwrap(),
            ),
        ],
    )
}

fn run(kube: &KubeApiServer, netctl: &Netctl) -> std::process::Output {
    let plan_file = netctl.write_file("plan.json", serde_json::to_vec_pretty(&plan()).unwrap());
    let state = netctl.home().join("state");
    let mut command = netctl.command();
    command
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .env("USER", "ops")
        .args(["upgrade", "apply", "--plan"])
        .arg(&plan_file)
        .arg("--state-dir")
        .arg(&state);
    command.output().unwrap()
}

#[test]
fn an_upgrade_runs_with_a_lease_lock_and_a_mirrored_checkpoint() {
    let kube = KubeApiServer::start();
    seed(&kube);
    let netctl = Netctl::new();
    let output = run(&kube, &netctl);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");

    let h1 = kube.get(CALICO, "hostendpoints", "", "h1").unwrap();
    let meta: serde_json::Value = serde_json::from_str(
        h1["metadata"]["annotations"]["projectcalico.org/metadata"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["labels"]["upgrade"], "yes");
    let node = kube.get("v1", "nodes", "", "n1").unwrap();
    assert_eq!(
        node["metadata"]["labels"]["projectcalico.org/upgrading"],
        "true"
    );

    let requests = kube.requests();
    assert!(
        requests.iter().any(|request| request
            .starts_with("POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases")),
        "{requests:#?}"
    );
    assert!(
        requests
            .iter()
            .any(|request| request.starts_with("POST /api/v1/namespaces/kube-system/configmaps")),
        "{requests:#?}"
    );
    // The lock and its lease are gone; the checkpoint mirror stays: its head, and beside it the plan
    // and the run's log segment and snapshot it names.
    assert_eq!(
        kube.names("coordination.k8s.io/v1", "leases"),
        Vec::<String>::new()
    );
    let config_maps = kube.names("v1", "configmaps");
    assert_eq!(config_maps.len(), 4, "{config_maps:?}");
    assert_eq!(config_maps[0], "kube-system/netctl-upgrade-checkpoint");
    for (config_map, (prefix, suffix)) in config_maps[1..].iter().zip([
        ("kube-system/netctl-upgrade-plans-", "-0"),
        ("kube-system/netctl-upgrade-runs-", "-log-1-0"),
        ("kube-system/netctl-upgrade-runs-", "-snapshots-1-0"),
    ]) {
        assert!(
            config_map.starts_with(prefix) && config_map.ends_with(suffix),
            "{config_maps:?}"
        );
    }
    let checkpoint = kube
        .get(
            "v1",
            "configmaps",
            "kube-system",
            "netctl-upgrade-checkpoint",
        )
        .unwrap();
    assert!(
        checkpoint["binaryData"]["value"].is_string(),
        "{checkpoint}"
    );
}

#[test]
fn a_lock_left_by_an_expired_lease_does_not_block() {
    let kube = KubeApiServer::start();
    seed(&kube);
    kube.put(
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "netctl-lease-abc", "namespace": "kube-system"},
        "spec": {"holderIdentity": "netctl", "leaseDurationSeconds": 60,
                 "renewTime": "2026-01-01T00:00:00.000000Z"}}),
    );
    kube.put(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "netctl-upgrade-lock", "namespace": "kube-system",
                     "labels": {"netctl.projectcalico.org/lease": "abc"}},
        "binaryData": {"value": "e30="}}));
    let netctl = Netctl::new();
    let output = run(&kube, &netctl);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        kube.get("v1", "configmaps", "kube-system", "netctl-upgrade-lock")
            .is_none()
    );
}

/// A runbook set with one upgrade runbook that uses the `kube.*` actions (no rollout wait: the
/// rollout is covered in `tests/it/kube_actions.rs`).
const RUNBOOK: &str = "apiVersion: netctl.projectcalico.org/v1
kind: Runbook
metadata: {name: kube-steps, description: kube actions from a runbook}
spec:
  appliesTo:
    installMethods: [manifest]
    datastoreTypes: [kubernetes]
  phase: upgrade
  steps:
    - id: apply
      description: apply a config map
      action: kube.apply
      with:
        server_side: true
        source:
          inline: |
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: settings, namespace: calico-system}
            data: {mtu: '1440'}
    - id: patch
      needs: [apply]
      description: raise the MTU
      action: kube.patch
      with:
        object: {api_version: v1, kind: ConfigMap, name: settings, namespace: calico-system}
        patch: {data: {mtu: '1450'}}
    - id: label-node
      needs: [apply]
      description: label the node
      action: kube.label
      with:
        object: {api_version: v1, kind: Node, name: n1}
        values: {projectcalico.org/upgraded: 'true'}
";

#[test]
fn a_plan_made_from_runbooks_offline_runs_on_the_kubernetes_datastore() {
    let kube = KubeApiServer::start();
    seed(&kube);
    kube.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "calico-system"}}),
    );
    let netctl = Netctl::new();
    netctl.write_file("runbooks/kube-steps.yaml", RUNBOOK);
    netctl.write_file(
        "runbooks/releases.yaml",
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/runbooks/releases.yaml"
        ))
        .unwrap(),
    );
    let plan_file = netctl.home().join("plan.json");
    let output = netctl
        .command()
        .args(["upgrade", "plan", "--offline", "--runbooks"])
        .arg(netctl.home().join("runbooks"))
        .args([
            "--from",
            "v3.26.4",
            "--to",
            "v3.29.2",
            "--datastore-type",
            "kubernetes",
        ])
        .args(["--install-method", "manifest", "--out"])
        .arg(&plan_file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let output = netctl
        .command()
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .env("USER", "ops")
        .args(["upgrade", "apply", "--plan"])
        .arg(&plan_file)
        .arg("--state-dir")
        .arg(netctl.home().join("state"))
        // No node agent runs in this cluster: the verification finds none, and the finding is
        // accepted (the point here is the coordination objects).
        .args(["--approve", "verify/cluster"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let settings = kube
        .get("v1", "configmaps", "calico-system", "settings")
        .unwrap();
    assert_eq!(settings["data"]["mtu"], "1450");
    let node = kube.get("v1", "nodes", "", "n1").unwrap();
    assert_eq!(
        node["metadata"]["labels"]["projectcalico.org/upgraded"],
        "true"
    );
}

#[test]
fn upgrade_plan_discovers_facts_from_the_kubernetes_datastore() {
    let kube = KubeApiServer::start();
    seed(&kube);
    kube.put(json!({"apiVersion": CALICO, "kind": "HostEndpoint",
        "metadata": {"name": "n1-star"}, "spec": {"node": "n1", "interfaceName": "*"}}));
    let netctl = Netctl::new();
    let plan_file = netctl.home().join("plan.json");
    let output = netctl
        .command()
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .args([
            "upgrade",
            "plan",
            "--to",
            "v3.29.2",
            "--install-method",
            "manifest",
            "--out",
        ])
        .arg(&plan_file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let plan: Plan = serde_json::from_str(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    let facts = serde_json::to_value(&plan.facts).unwrap();
    assert_eq!(facts["installed_version"]["value"], "v3.26.4", "{facts:#}");
    assert_eq!(facts["datastore_type"]["value"], "kubernetes", "{facts:#}");
    assert_eq!(
        facts["all_interfaces_host_endpoints"]["value"],
        json!([{"name": "n1-star", "node": "n1", "labels": {}}]),
        "{facts:#}"
    );
}
