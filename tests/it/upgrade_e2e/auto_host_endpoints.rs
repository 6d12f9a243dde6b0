//! The `auto-host-endpoints` procedure on etcd and Kubernetes, with the test playing
//! kube-controllers.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::common::*;
use crate::exec_common::text;
use crate::support::snapshot::netctl_snapshot;
use crate::support::{EtcdServer, KubeApiServer};

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
pub(crate) fn auto_host_endpoint_datastore(node_b_zone: &str) -> EtcdServer {
    let etcd = EtcdServer::start();
    set_etcd_version(&etcd, "v3.29.2");
    auto_host_endpoint_data(node_b_zone, &|key, value| etcd.put(key, value));
    etcd
}

/// The resources of [`auto_host_endpoint_datastore`], given to `put` (key, stored JSON), so an
/// etcd cluster can hold them too.
pub(crate) fn auto_host_endpoint_data(node_b_zone: &str, put: &dyn Fn(&str, String)) {
    put(
        &format!("{ROOT}/nodes/node-a"),
        calico_json("Node", "node-a", json!({}), json!({})),
    );
    put(
        &format!("{ROOT}/nodes/node-b"),
        calico_json("Node", "node-b", json!({"zone": node_b_zone}), json!({})),
    );
    put(
        &format!("{ROOT}/hostendpoints/node-a-all"),
        calico_json(
            "HostEndpoint",
            "node-a-all",
            json!({"role": "edge", "zone": "a"}),
            json!({"node": "node-a", "interfaceName": "*"}),
        ),
    );
    put(
        &format!("{ROOT}/hostendpoints/node-b-all"),
        calico_json(
            "HostEndpoint",
            "node-b-all",
            json!({"role": "core", "zone": "b"}),
            json!({"node": "node-b", "interfaceName": "*"}),
        ),
    );
    put(
        &format!("{ROOT}/hostendpoints/node-a-eth0"),
        calico_json(
            "HostEndpoint",
            "node-a-eth0",
            json!({}),
            json!({"node": "node-a", "interfaceName": "eth0", "expectedIPs": ["10.0.0.1"]}),
        ),
    );
    put(
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
}

/// `upgrade plan --procedure auto-host-endpoints` against etcd; returns the plan file and its JSON.
pub(crate) fn auto_host_endpoint_plan(operator: &Operator) -> (PathBuf, Value) {
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
pub(crate) fn play_kube_controllers(etcd: &EtcdServer, stop: &std::sync::atomic::AtomicBool) {
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

pub(crate) fn host_endpoint_names(etcd: &EtcdServer) -> Vec<String> {
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

    // The node agents run outside Kubernetes here (no cluster is configured): the operator checked
    // their version and says so.
    let apply = Apply::plan(&plan_file)
        .yes()
        .with(&["--skip-preflight", "node-agents"]);
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

        let resumed = operator.apply(
            &Apply::resume()
                .yes()
                .with(&["--skip-preflight", "node-agents"]),
        );
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_success(&resumed, "resume");
        netctl_snapshot!(&resumed);
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
    let output = operator.apply(
        &Apply::plan(&plan_file)
            .yes()
            .with(&["--skip-preflight", "node-agents"]),
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    netctl_snapshot!(&output);
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
                        "metadata": {"name": node, "labels": labels},
                        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}));
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
    node_agent_pods(
        &kube,
        "kube-system",
        &[("node-a", "v3.29.2"), ("node-b", "v3.29.2")],
    );
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
    let apply = Apply::plan(&plan_file).yes();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| play_kube_controllers_on(&kube, &stop));
        apply_killed_at(
            &operator,
            &apply,
            "auto-host-endpoints/wait-for-auto-host-endpoint[0]:before",
        );
        let resumed = operator.apply(&Apply::resume().yes());
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
