//! Application layer policy on the Kubernetes manifest path: each service Deployment restarts once,
//! also across a resume.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::*;
use crate::support::KubeApiServer;

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

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");

    // Killed right after the second restart, before the checkpoint recorded it.
    let resume = Apply::resume().mirror(&mirror).yes();
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
        let resumed = operator.apply(&resume);
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
