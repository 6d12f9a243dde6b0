//! `netctl upgrade plan` discovering its facts from a real etcd datastore: the installed version from
//! ClusterInformation `default`, and the all-interfaces host endpoints (only `interfaceName: "*"`) that
//! pull in the section 9.2 preparation. A `--from` must agree with discovery.

use crate::support::{EtcdServer, Netctl};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";

fn seed(etcd: &EtcdServer) {
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.13.2","clusterType":"bgp","datastoreReady":true}}"#,
    );
    for (name, interface) in [
        ("node-a-all", "*"),
        ("node-a-eth0", "eth0"),
        ("node-b-all", "*"),
    ] {
        etcd.put(
            &format!("{ROOT}/hostendpoints/{name}"),
            format!(
                r#"{{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{{"name":"{name}"}},"spec":{{"node":"n","interfaceName":"{interface}"}}}}"#
            ),
        );
    }
}

fn plan_json(etcd: &EtcdServer, extra: &[&str]) -> serde_json::Value {
    let mut netctl = Netctl::new();
    netctl
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint())
        .args([
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "--install-method",
            "manifest",
            "-o",
            "json",
        ])
        .args(extra);
    let output = netctl.output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn facts_are_discovered_from_the_datastore() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let plan = plan_json(&etcd, &[]);
    assert_eq!(plan["facts"]["installed_version"]["value"], "v3.13.2");
    assert_eq!(plan["facts"]["installed_version"]["origin"], "discovered");
    assert_eq!(plan["facts"]["datastore_type"]["value"], "etcdv3");
    assert_eq!(
        plan["facts"]["all_interfaces_host_endpoints"]["value"],
        serde_json::json!([
            {"name": "node-a-all", "node": "n", "labels": {}},
            {"name": "node-b-all", "node": "n", "labels": {}}
        ])
    );
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.iter()
            .any(|id| id.starts_with("hostendpoint-preparation/")),
        "the 9.2 preparation is planned: {ids:?}"
    );
    // One batched label step over every discovered all-interfaces host endpoint.
    let labelled: Vec<&serde_json::Value> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["action"] == "resource.label-each" && step["phase"] == "pre-upgrade")
        .map(|step| &step["with"]["names"])
        .collect();
    assert_eq!(labelled, [&serde_json::json!(["node-a-all", "node-b-all"])]);
}

#[test]
fn a_from_that_agrees_with_discovery_is_a_flag() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    // One that contradicts the datastore is refused (tests/upgrade_e2e/maintenance_window.rs).
    let plan = plan_json(&etcd, &["--from", "v3.13.2"]);
    assert_eq!(plan["facts"]["installed_version"]["value"], "v3.13.2");
    assert_eq!(plan["facts"]["installed_version"]["origin"], "flag");
}
