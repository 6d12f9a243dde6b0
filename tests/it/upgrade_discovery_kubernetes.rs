//! `netctl upgrade plan` discovering the install from a Kubernetes cluster (the in-process API test
//! server): the install method (operator Deployment, Helm release secrets, manifest DaemonSets), the
//! manifest flavour, OwnerReferences to `projectcalico.org/v3` owners across pages and namespaces, and
//! ALP from FelixConfiguration `default` — each with origin `discovered`, each beaten by a flag.

use crate::support::{EtcdServer, KubeApiServer, Netctl};
use serde_json::{Value, json};

fn seed_version(kube: &KubeApiServer, version: &str) {
    kube.put(json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "ClusterInformation",
        "metadata": {"name": "default"},
        "spec": {"calicoVersion": version, "datastoreReady": true}
    }));
}

fn deployment(namespace: &str, name: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"k8s-app": name}},
                 "template": {"metadata": {"labels": {"k8s-app": name}},
                              "spec": {"containers": [{"name": name, "image": "quay.io/tigera/operator:v1.32.0"}]}}}
    })
}

fn daemon_set(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"k8s-app": name}},
                 "template": {"metadata": {"labels": {"k8s-app": name}},
                              "spec": {"containers": [{"name": "calico-node", "image": "calico/node:v3.25.0"}]}}}
    })
}

fn plan_json(kube: &KubeApiServer, extra: &[&str]) -> Value {
    let mut netctl = Netctl::new();
    netctl
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .args(["upgrade", "plan", "-o", "json"])
        .args(extra);
    if !extra.contains(&"--to") {
        netctl.args(["--to", "v3.29.0"]);
    }
    let output = netctl.output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn fact(plan: &Value, name: &str) -> (Value, String) {
    (
        plan["facts"][name]["value"].clone(),
        plan["facts"][name]["origin"].as_str().unwrap().to_string(),
    )
}

fn discovered(value: Value) -> (Value, String) {
    (value, "discovered".to_string())
}

#[test]
fn an_operator_install_with_owner_references_and_alp_is_discovered() {
    let kube = KubeApiServer::start();
    seed_version(&kube, "v3.26.1");
    kube.put(deployment("tigera-operator", "tigera-operator", json!({})));
    kube.put(json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration",
        "metadata": {"name": "default"},
        "spec": {"policySyncPathPrefix": "/var/run/nodeagent"}
    }));
    // More ConfigMaps than one list page holds, so discovery must follow `continue`.
    for index in 0..260 {
        kube.put(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("filler-{index:03}"), "namespace": "default"}, "data": {}
        }));
    }
    let owner = |kind: &str, name: &str, api_version: &str| json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": "9f0c1d2e-1111-4000-8000-000000000001"});
    kube.put(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "zz-tier-settings", "namespace": "apps",
                     "ownerReferences": [owner("Deployment", "web", "apps/v1"),
                                         owner("Tier", "security", "projectcalico.org/v3"),
                                         // The flags are recorded, so the reference comes back with them.
                                         {"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "platform",
                                          "uid": "9f0c1d2e-1111-4000-8000-000000000002",
                                          "controller": true, "blockOwnerDeletion": false}]},
        "data": {}
    }));
    kube.put(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "pool-credentials", "namespace": "infra",
                     "ownerReferences": [owner("IPPool", "pool-a", "projectcalico.org/v3")]},
        "data": {}
    }));
    let mut owned = deployment("infra", "policy-auditor", json!({}));
    owned["metadata"]["ownerReferences"] = json!([owner(
        "GlobalNetworkPolicy",
        "audit",
        "projectcalico.org/v3"
    )]);
    kube.put(owned);

    // ALP on asks for the mesh version, which lives in no object netctl reads.
    let plan = plan_json(&kube, &["--set", "mesh_version=1.15.7"]);
    assert_eq!(
        fact(&plan, "installed_version"),
        discovered(json!("v3.26.1"))
    );
    assert_eq!(fact(&plan, "install_method"), discovered(json!("operator")));
    assert_eq!(
        fact(&plan, "operator_namespace"),
        discovered(json!("tigera-operator"))
    );
    assert_eq!(fact(&plan, "alp_enabled"), discovered(json!(true)));
    let references = plan["facts"]["owner_references"]["value"].clone();
    assert_eq!(plan["facts"]["owner_references"]["origin"], "discovered");
    assert_eq!(
        references,
        json!([
            {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "infra", "name": "policy-auditor",
             "ownerKind": "GlobalNetworkPolicy", "ownerName": "audit", "index": 0,
             "ownerUid": "9f0c1d2e-1111-4000-8000-000000000001"},
            {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "apps", "name": "zz-tier-settings",
             "ownerKind": "Tier", "ownerName": "platform", "index": 2,
             "ownerUid": "9f0c1d2e-1111-4000-8000-000000000002", "controller": true,
             "blockOwnerDeletion": false},
            {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "apps", "name": "zz-tier-settings",
             "ownerKind": "Tier", "ownerName": "security", "index": 1,
             "ownerUid": "9f0c1d2e-1111-4000-8000-000000000001"},
            {"apiVersion": "v1", "kind": "Secret", "namespace": "infra", "name": "pool-credentials",
             "ownerKind": "IPPool", "ownerName": "pool-a", "index": 0,
             "ownerUid": "9f0c1d2e-1111-4000-8000-000000000001"}
        ])
    );
    assert!(
        kube.requests()
            .iter()
            .any(|request| request.starts_with("GET /api/v1/configmaps?")
                && request.contains("continue=")),
        "configmaps were read in pages: {:?}",
        kube.requests()
    );
    let removals: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| {
            step["id"]
                .as_str()
                .unwrap()
                .starts_with("ownerreferences-remove/remove-owner-reference")
        })
        .map(|step| step["id"].as_str().unwrap())
        .collect();
    assert_eq!(removals.len(), 4, "one removal per reference: {removals:?}");
}

#[test]
fn a_helm_release_gives_the_method_release_and_namespace() {
    let kube = KubeApiServer::start();
    seed_version(&kube, "v3.20.2");
    // A chart before v3.23 keeps its release apart from the operator; this one is not in the
    // `default` the chart asked for, and a release of the same name elsewhere is not it.
    kube.put(deployment(
        "tigera-operator",
        "tigera-operator",
        json!({"meta.helm.sh/release-name": "calico-net", "meta.helm.sh/release-namespace": "kube-system"}),
    ));
    for namespace in ["kube-system", "default"] {
        kube.put(json!({
            "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": "sh.helm.release.v1.calico-net.v1", "namespace": namespace,
                         "labels": {"owner": "helm", "name": "calico-net", "status": "deployed", "version": "1"}},
            "data": {}
        }));
    }
    let plan = plan_json(&kube, &["--to", "v3.27.0"]);
    assert_eq!(fact(&plan, "install_method"), discovered(json!("helm")));
    assert_eq!(fact(&plan, "helm_release"), discovered(json!("calico-net")));
    assert_eq!(
        fact(&plan, "operator_namespace"),
        discovered(json!("tigera-operator"))
    );
    assert_eq!(
        fact(&plan, "helm_release_namespace"),
        discovered(json!("kube-system"))
    );
    let deletion = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["id"] == "helm-ownership-migration/delete-old-release-secrets")
        .expect("the old release is deleted");
    assert_eq!(deletion["with"]["namespace"], "kube-system");
    assert_eq!(fact(&plan, "alp_enabled"), discovered(json!(false)));
    assert_eq!(fact(&plan, "owner_references"), discovered(json!([])));

    // A flag beats discovery.
    let plan = plan_json(
        &kube,
        &[
            "--install-method",
            "operator",
            "--set",
            "helm_release=other",
            "--set",
            "helm_release_namespace=legacy",
        ],
    );
    assert_eq!(plan["facts"]["install_method"]["value"], "operator");
    assert_eq!(plan["facts"]["install_method"]["origin"], "flag");
    assert_eq!(plan["facts"]["helm_release"]["value"], "other");
    assert_eq!(plan["facts"]["helm_release"]["origin"], "flag");
    assert_eq!(plan["facts"]["helm_release_namespace"]["value"], "legacy");
    assert_eq!(plan["facts"]["helm_release_namespace"]["origin"], "flag");
}

#[test]
fn an_operator_deployment_without_its_release_secret_is_an_operator_install() {
    let kube = KubeApiServer::start();
    seed_version(&kube, "v3.26.1");
    kube.put(deployment(
        "tigera-operator",
        "tigera-operator",
        json!({"meta.helm.sh/release-name": "calico"}),
    ));
    // A release of something else in another namespace is not the network's.
    kube.put(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "sh.helm.release.v1.calico.v1", "namespace": "monitoring",
                     "labels": {"owner": "helm", "name": "calico"}},
        "data": {}
    }));
    let plan = plan_json(&kube, &[]);
    assert_eq!(fact(&plan, "install_method"), discovered(json!("operator")));
}

#[test]
fn a_canal_manifest_install_is_discovered_with_an_etcd_datastore() {
    let kube = KubeApiServer::start();
    // canal-etcd.yaml names its node agent `canal-node` (canal.yaml: `canal`), at every tag.
    kube.put(daemon_set("canal-node"));
    let etcd = EtcdServer::start();
    etcd.put(
        "/calico/resources/v3/projectcalico.org/clusterinformations/default",
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.25.0","datastoreReady":true}}"#,
    );
    let mut netctl = Netctl::new();
    let config = format!(
        "{}  kubeconfig: {}\n",
        etcd.netctl_config_yaml(),
        serde_json::to_string(&kube.kubeconfig_path().display().to_string()).unwrap()
    );
    netctl
        .config_file(&config)
        .args(["upgrade", "plan", "--to", "v3.29.0", "-o", "json"]);
    let output = netctl.output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        fact(&plan, "installed_version"),
        discovered(json!("v3.25.0"))
    );
    assert_eq!(fact(&plan, "datastore_type"), discovered(json!("etcdv3")));
    assert_eq!(fact(&plan, "install_method"), discovered(json!("manifest")));
    assert_eq!(fact(&plan, "manifest_flavor"), discovered(json!("canal")));
    assert_eq!(fact(&plan, "system_namespace").0, json!("kube-system"));
    // Planned with canal-etcd.yaml's own object names.
    let step = |id: &str| {
        plan["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|step| step["id"] == id)
            .unwrap_or_else(|| panic!("no step `{id}` in {plan}"))
            .clone()
    };
    let download = step("etcd-upgrade/download-manifest");
    assert!(
        download["with"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/v3.29.0/manifests/canal-etcd.yaml"),
        "{download}"
    );
    assert_eq!(
        download["with"]["overlay"][0]["metadata"]["name"],
        "canal-config"
    );
    assert_eq!(
        step("etcd-upgrade/wait-node-agents")["with"]["name"],
        "canal-node"
    );
}

#[test]
fn a_cluster_that_refuses_reads_is_an_error_with_a_hint() {
    let kube = KubeApiServer::start();
    seed_version(&kube, "v3.26.1");
    kube.forbid(Some("GET"), "/api/v1/secrets");
    let mut netctl = Netctl::new();
    netctl
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .args(["upgrade", "plan", "--to", "v3.29.0"]);
    let output = netctl.output();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("could not read `secrets` from the Kubernetes API")
            && stderr.contains("hint: give the facts with `--install-method`"),
        "{stderr}"
    );
}

#[test]
fn discovered_alp_without_a_mesh_version_asks_for_it_once() {
    let kube = KubeApiServer::start();
    seed_version(&kube, "v3.26.1");
    kube.put(deployment("tigera-operator", "tigera-operator", json!({})));
    kube.put(json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration",
        "metadata": {"name": "default"},
        "spec": {"policySyncPathPrefix": "/var/run/nodeagent"}
    }));
    let mut netctl = Netctl::new();
    netctl
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .args(["upgrade", "plan", "--to", "v3.29.0"]);
    let output = netctl.output();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Regression: the template error used to be printed twice (in the message and as its cause);
    // a `require`'s message is now said once, without the template quoting it again.
    assert_eq!(
        stderr
            .matches("application layer policy is on but the mesh version is unknown")
            .count(),
        1,
        "once, as the reason: {stderr}"
    );
    assert!(!stderr.contains("{{"), "{stderr}");
    assert!(
        stderr.starts_with("error: runbook `alp-upgrade` step "),
        "{stderr}"
    );
}
