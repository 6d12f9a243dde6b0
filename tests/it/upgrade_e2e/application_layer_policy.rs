//! Application layer policy on the Kubernetes manifest path: each service Deployment restarts once,
//! also across a resume.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::common::*;
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

/// The service Deployments of [`alp_cluster`] that the upgrade restarts, in the plan's order.
const SERVICES: [(&str, &str); 3] = [("default", "ext"), ("shop", "cart"), ("shop", "front")];

/// Runs `work` while a stand-in for the deployment controller and kubelet rolls out any service
/// Deployment whose spec is newer than observed, `delay` after it first sees it. Returns what
/// `work` returned and, per roll-out, the Deployment and how many requests the test server had
/// received when it was done (so a request after it has a higher index in `kube.requests()`).
fn with_deployment_controller<T>(
    kube: &KubeApiServer,
    delay: std::time::Duration,
    work: impl FnOnce() -> T,
) -> (T, Vec<(String, usize)>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let controller = scope.spawn(|| {
            let mut rolled_out = Vec::new();
            let mut seen: std::collections::HashMap<String, std::time::Instant> =
                std::collections::HashMap::new();
            while !done.load(Ordering::SeqCst) {
                for (namespace, name) in SERVICES {
                    let object = kube.get("apps/v1", "deployments", namespace, name).unwrap();
                    let key = format!("{namespace}/{name}");
                    if object["metadata"]["generation"] == object["status"]["observedGeneration"] {
                        seen.remove(&key);
                        continue;
                    }
                    let first_seen = *seen
                        .entry(key.clone())
                        .or_insert_with(std::time::Instant::now);
                    if first_seen.elapsed() >= delay {
                        roll_out_in(kube, namespace, "deployments", name, 1, 1);
                        rolled_out.push((key, kube.requests().len()));
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            rolled_out
        });
        let result = work();
        done.store(true, Ordering::SeqCst);
        (result, controller.join().unwrap())
    })
}

/// Index of the first restart (a PATCH of the Deployment) in the test server's request log.
fn first_restart(requests: &[String], namespace: &str, name: &str) -> usize {
    let path = format!("PATCH /apis/apps/v1/namespaces/{namespace}/deployments/{name}");
    requests
        .iter()
        .position(|request| request.starts_with(&path))
        .unwrap_or_else(|| panic!("{namespace}/{name} was never restarted: {requests:#?}"))
}

#[test]
fn alp_upgrade_restarts_service_deployments_one_at_a_time_and_resumes_at_the_right_item() {
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
    let service_steps: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| id.contains("-service-deployment["))
        .collect();
    assert_eq!(
        service_steps,
        [
            "alp-upgrade/restart-service-deployment[0]",
            "alp-upgrade/wait-service-deployment[0]",
            "alp-upgrade/restart-service-deployment[1]",
            "alp-upgrade/wait-service-deployment[1]",
            "alp-upgrade/restart-service-deployment[2]",
            "alp-upgrade/wait-service-deployment[2]",
        ],
        "restart, wait, next (seed 9.8)"
    );
    let step = |id: &str| {
        plan["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|step| step["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(
        step("alp-upgrade/restart-service-deployment[1]")["needs"],
        json!([
            "alp-upgrade/apply-injector-configmap",
            "alp-upgrade/restart-service-deployment[0]",
            "alp-upgrade/wait-service-deployment[0]"
        ])
    );
    assert_eq!(
        step("alp-upgrade/wait-service-deployment[1]")["needs"],
        json!(["alp-upgrade/restart-service-deployment[1]"]),
        "a wait needs its own restart only"
    );

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");

    // A roll-out takes its time; a restart of the next Deployment before it is done fails below.
    let delay = std::time::Duration::from_millis(700);
    // Killed right after the second restart, before the checkpoint recorded it.
    let resume = Apply::resume().mirror(&mirror).yes();
    let ((), first_roll_outs) = with_deployment_controller(&kube, delay, || {
        apply_killed_at(
            &operator,
            &resume,
            "alp-upgrade/restart-service-deployment[1]:after",
        )
    });
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
    let requests_before_resume = kube.requests().len();

    let (resumed, later_roll_outs) =
        with_deployment_controller(&kube, delay, || operator.apply(&resume));
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

    // One at a time: each Deployment is restarted only after the one before it rolled out.
    let requests = kube.requests();
    let roll_outs: Vec<(String, usize)> =
        first_roll_outs.into_iter().chain(later_roll_outs).collect();
    let rolled_out_at = |key: &str| {
        roll_outs
            .iter()
            .find(|(rolled, _)| rolled == key)
            .map(|(_, at)| *at)
            .unwrap_or_else(|| panic!("{key} never rolled out: {roll_outs:?}"))
    };
    for pair in SERVICES.windows(2) {
        let (before, (namespace, name)) = (pair[0], pair[1]);
        let before = format!("{}/{}", before.0, before.1);
        assert!(
            first_restart(&requests, namespace, name) >= rolled_out_at(&before),
            "{namespace}/{name} restarted before {before} rolled out: {roll_outs:?}\n{requests:#?}"
        );
    }
    // The resume continued at cart's restart (found done), then its wait, then front.
    assert!(
        first_restart(&requests, "shop", "front") > requests_before_resume,
        "front is restarted by the resume"
    );
    let journal =
        std::fs::read_to_string(operator.home().join("state/journal.jsonl")).expect("journal");
    let recovered = journal
        .lines()
        .filter(|line| line.contains("alp-upgrade/restart-service-deployment[1]"))
        .filter(|line| line.contains("Deployment shop/cart was already restarted by this run"))
        .count();
    assert_eq!(recovered, 1, "{journal}");
    assert!(
        !requests[requests_before_resume..]
            .iter()
            .any(|request| request
                .starts_with("PATCH /apis/apps/v1/namespaces/default/deployments/ext")),
        "the resume does not touch ext, finished before the kill"
    );
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
