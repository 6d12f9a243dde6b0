//! The Kubernetes datastore on either Calico API group, through the binary against the in-process
//! API server (`support::kube_api`) serving `crd.projectcalico.org/v1`, v3.32's native
//! `projectcalico.org/v3` CRDs, or both: the group chosen as upstream chooses it (discovery, or
//! `calicoAPIGroup` / `CALICO_API_GROUP` / `NET_CALICO_API_GROUP` over it), every resource command
//! and the derived kinds on a server that serves only `projectcalico.org/v3` (each body checked
//! against that group's CRD schema), v3.32's names of default-tier policy custom resources, what
//! `config view` and `config check` say, and the warning when both groups hold objects.

use crate::support::{self, CalicoGroups, KubeApiServer, Netctl, Run, failed, ok};
use serde_json::{Value, json};

const V1: &str = "crd.projectcalico.org/v1";
const V3: &str = "projectcalico.org/v3";

const DOCUMENTS: &str = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: allow-all-upgrade
  labels: {team: net}
  annotations: {owner: platform}
spec:
  selector: has(host-endpoint-upgrade)
  types: [Ingress, Egress]
  ingress: [{action: Allow}]
  egress: [{action: Allow}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: allow-dns, namespace: prod}
spec:
  selector: all()
  egress: [{action: Allow, protocol: UDP, destination: {ports: [53]}}]
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0, labels: {zone: a}}
spec: {node: node1, interfaceName: eth0, expectedIPs: [10.0.0.1]}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.10.0.0/16, blockSize: 26, ipipMode: Never, vxlanMode: Always, natOutgoing: true}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100}
";

fn netctl(server: &KubeApiServer) -> Netctl {
    let mut command = Netctl::new();
    command
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", server.kubeconfig_path());
    command
}

fn run(server: &KubeApiServer, args: &[&str], input: Option<&str>) -> Run {
    let mut command = netctl(server);
    command.args(args);
    if let Some(input) = input {
        command.stdin(input);
    }
    command.run()
}

/// Requests that reached `crd.projectcalico.org/v1`.
fn v1_requests(server: &KubeApiServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|request| request.contains("/apis/crd.projectcalico.org/"))
        .collect()
}

fn seed_version(server: &KubeApiServer, api_version: &str, version: &str) {
    server.put(json!({
        "apiVersion": api_version, "kind": "ClusterInformation",
        "metadata": {"name": "default"},
        "spec": {"calicoVersion": version, "datastoreReady": true, "clusterType": "k8s,kdd"}
    }));
}

#[test]
fn every_resource_command_works_on_a_server_serving_only_the_native_v3_crds() {
    let server = KubeApiServer::start_serving(CalicoGroups::V3);
    seed_version(&server, V3, "v3.32.1");
    let out = ok(run(&server, &["apply", "-f", "-"], Some(DOCUMENTS)));
    assert_eq!(
        out,
        "Successfully applied 5 resource(s) (GlobalNetworkPolicy: 1 created; HostEndpoint: 1 created; IPPool: 1 created; NetworkPolicy: 1 created; Tier: 1 created)\n"
    );

    // Each object is the resource itself: the v3 name (no `default.` prefix), every label and
    // annotation on the object, no metadata annotation.
    let policy = server
        .get(V3, "globalnetworkpolicies", "", "allow-all-upgrade")
        .expect("stored under its own name");
    assert_eq!(policy["apiVersion"], V3);
    assert_eq!(policy["metadata"]["labels"], json!({"team": "net"}));
    assert_eq!(
        policy["metadata"]["annotations"],
        json!({"owner": "platform"})
    );
    assert_eq!(
        server.names(V3, "networkpolicies"),
        ["prod/allow-dns".to_string()]
    );
    assert!(server.get(V3, "hostendpoints", "", "node1-eth0").is_some());
    assert_eq!(
        server.get(V3, "ippools", "", "pool-a").unwrap()["spec"]["cidr"],
        "10.10.0.0/16"
    );
    // The datastore's initialisation made the built-in tiers there too.
    let mut tiers = server.names(V3, "tiers");
    tiers.sort();
    assert_eq!(tiers, ["adminnetworkpolicy", "default", "security"]);

    // The UID is the object's own: no conversion under v3.
    let yaml = ok(run(
        &server,
        &["get", "gnp", "allow-all-upgrade", "-o", "yaml"],
        None,
    ));
    let uid = policy["metadata"]["uid"].as_str().unwrap();
    assert!(yaml.contains(&format!("uid: {uid}\n")), "{yaml}");
    assert!(yaml.contains("owner: platform"), "{yaml}");
    assert!(!yaml.contains("managedFields"), "{yaml}");
    let table = ok(run(&server, &["get", "hostendpoints", "-o", "wide"], None));
    assert!(table.contains("node1-eth0"), "{table}");

    // create, replace, label, patch, delete.
    let set = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: blocked}
spec: {nets: [192.0.2.0/24]}
";
    ok(run(&server, &["create", "-f", "-"], Some(set)));
    let error = failed(run(&server, &["create", "-f", "-"], Some(set)));
    assert!(error.contains("already exists"), "{error}");
    ok(run(
        &server,
        &["replace", "-f", "-"],
        Some(&set.replace("192.0.2.0/24", "198.51.100.0/24")),
    ));
    assert_eq!(
        server.get(V3, "globalnetworksets", "", "blocked").unwrap()["spec"]["nets"],
        json!(["198.51.100.0/24"])
    );
    ok(run(
        &server,
        &["label", "hostendpoint", "node1-eth0", "rack=r1"],
        None,
    ));
    assert_eq!(
        server.get(V3, "hostendpoints", "", "node1-eth0").unwrap()["metadata"]["labels"],
        json!({"zone": "a", "rack": "r1"})
    );
    ok(run(
        &server,
        &[
            "patch",
            "ippool",
            "pool-a",
            "-p",
            r#"{"spec":{"natOutgoing":false}}"#,
        ],
        None,
    ));
    // `false` is left out, as upstream's `natOutgoing,omitempty` leaves it out.
    let spec = &server.get(V3, "ippools", "", "pool-a").unwrap()["spec"];
    assert_eq!(spec.get("natOutgoing"), None, "{spec}");
    assert_eq!(spec["cidr"], "10.10.0.0/16", "{spec}");
    ok(run(
        &server,
        &["delete", "globalnetworkpolicy", "allow-all-upgrade"],
        None,
    ));
    assert!(
        server
            .get(V3, "globalnetworkpolicies", "", "allow-all-upgrade")
            .is_none()
    );
    ok(run(
        &server,
        &["delete", "networkpolicy", "allow-dns", "-n", "prod"],
        None,
    ));
    assert!(server.names(V3, "networkpolicies").is_empty());

    // Nothing was asked of the v1 group, which this server does not serve.
    assert_eq!(v1_requests(&server), Vec::<String>::new());
}

#[test]
fn a_body_the_v3_schema_refuses_is_refused_as_the_server_says() {
    // What the strict server checks under v3: metadata and spec required, the spec's fields and
    // their types. netctl's own validation refuses a bad document before it is sent, so the body
    // is sent here the way a client that does not validate would.
    let server = KubeApiServer::start_serving(CalicoGroups::V3);
    let body = json!({"apiVersion": V3, "kind": "IPPool", "metadata": {"name": "bad"},
                      "spec": {"cidr": "10.0.0.0/16", "blockSize": "26", "bogus": 1}});
    let response = server.raw_request(
        "POST",
        "/apis/projectcalico.org/v3/ippools",
        &body.to_string(),
    );
    assert!(response.starts_with("HTTP/1.1 422"), "{response}");
    assert!(
        response.contains(r#"spec.blockSize: Invalid value: \"string\": spec.blockSize in body must be of type integer"#),
        "{response}"
    );
    let no_spec = json!({"apiVersion": V3, "kind": "Tier", "metadata": {"name": "t"}});
    let response = server.raw_request(
        "POST",
        "/apis/projectcalico.org/v3/tiers",
        &no_spec.to_string(),
    );
    assert!(response.starts_with("HTTP/1.1 422"), "{response}");
    assert!(response.contains("spec: Required value"), "{response}");
    // An unknown spec field is pruned with a warning, as a real server does.
    let pruned = json!({"apiVersion": V3, "kind": "GlobalNetworkSet", "metadata": {"name": "s"},
                        "spec": {"nets": ["192.0.2.0/24"], "bogus": true}});
    let response = server.raw_request(
        "POST",
        "/apis/projectcalico.org/v3/globalnetworksets",
        &pruned.to_string(),
    );
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    assert!(
        response.contains(r#"unknown field \"spec.bogus\""#),
        "{response}"
    );
    assert_eq!(
        server.get(V3, "globalnetworksets", "", "s").unwrap()["spec"],
        json!({"nets": ["192.0.2.0/24"]})
    );
}

#[test]
fn the_derived_kinds_read_the_same_on_a_v3_server() {
    let server = KubeApiServer::start_serving(CalicoGroups::V3);
    server.put(json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node1", "labels": {"kubernetes.io/hostname": "node1"},
                     "annotations": {"projectcalico.org/IPv4Address": "10.0.0.1/24"}},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}));
    server.put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}));
    server.put(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"},
                     "annotations": {"cni.projectcalico.org/podIP": "10.10.0.5/32"}},
        "spec": {"nodeName": "node1", "containers": [{"name": "web", "image": "nginx"}]},
        "status": {"podIP": "10.10.0.5", "phase": "Running"}}));
    let nodes = ok(run(&server, &["get", "nodes", "-o", "wide"], None));
    assert!(nodes.contains("node1"), "{nodes}");
    assert!(nodes.contains("10.0.0.1/24"), "{nodes}");
    let profiles = ok(run(&server, &["get", "profiles"], None));
    assert!(profiles.contains("kns.prod"), "{profiles}");
    let endpoints = ok(run(
        &server,
        &["get", "workloadendpoints", "-n", "prod"],
        None,
    ));
    assert!(
        endpoints.contains("prod        web        node1   10.10.0.5/32"),
        "{endpoints}"
    );
    assert_eq!(v1_requests(&server), Vec::<String>::new());
}

#[test]
fn node_status_asks_calico_node_through_the_v3_group() {
    use support::calico_node::{Behaviour, CalicoNodeStandIn, KUBE_V3_PATH};
    let server = KubeApiServer::start_serving(CalicoGroups::V3);
    server.put(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}));
    let stand_in = CalicoNodeStandIn::on_kube_path(
        server.url(),
        KUBE_V3_PATH,
        Behaviour::for_nodes(&["node-1"], std::time::Duration::from_millis(300)),
    );
    let out = ok(run(&server, &["node", "status", "--node", "node-1"], None));
    assert!(
        out.starts_with("Node node-1: status reported by calico-node at "),
        "{out}"
    );
    assert_eq!(stand_in.seen().len(), 1);
    // The temporary object is gone again.
    assert!(server.names(V3, "caliconodestatuses").is_empty());
    assert_eq!(v1_requests(&server), Vec::<String>::new());
}

#[test]
fn v3_32_names_default_tier_policy_custom_resources_by_their_own_name_under_v1_too() {
    let server = KubeApiServer::start();
    seed_version(&server, V1, "v3.32.1");
    let policy = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-all}
spec: {selector: all()}
";
    ok(run(&server, &["create", "-f", "-"], Some(policy)));
    assert_eq!(
        server.names(V1, "globalnetworkpolicies"),
        ["allow-all".to_string()]
    );

    // One written by v3.31 (`default.<name>`) is found, updated where it is, and refused as a
    // duplicate; a delete removes it.
    server.put(json!({"apiVersion": V1, "kind": "GlobalNetworkPolicy",
        "metadata": {"name": "default.legacy",
                     "annotations": {"projectcalico.org/metadata": "{\"name\":\"legacy\"}"}},
        "spec": {"tier": "default", "selector": "all()"}}));
    let yaml = ok(run(&server, &["get", "gnp", "legacy", "-o", "yaml"], None));
    assert!(yaml.contains("name: legacy\n"), "{yaml}");
    ok(run(&server, &["label", "gnp", "legacy", "moved=no"], None));
    assert_eq!(
        server
            .get(V1, "globalnetworkpolicies", "", "default.legacy")
            .unwrap()["metadata"]["annotations"]["projectcalico.org/metadata"]
            .as_str()
            .map(|text| text.contains("\"moved\":\"no\"")),
        Some(true)
    );
    let error = failed(run(
        &server,
        &["create", "-f", "-"],
        Some(&policy.replace("allow-all", "legacy")),
    ));
    assert!(error.contains("already exists"), "{error}");
    // Both names at once (kube-controllers renaming it): a delete removes both.
    server.put(json!({"apiVersion": V1, "kind": "GlobalNetworkPolicy",
        "metadata": {"name": "legacy",
                     "annotations": {"projectcalico.org/metadata": "{\"name\":\"legacy\"}"}},
        "spec": {"tier": "default", "selector": "all()"}}));
    ok(run(&server, &["delete", "gnp", "legacy"], None));
    assert_eq!(
        server.names(V1, "globalnetworkpolicies"),
        ["allow-all".to_string()]
    );

    // Before v3.32 a new one is `default.<name>`, as upstream names it.
    let older = KubeApiServer::start();
    seed_version(&older, V1, "v3.31.4");
    ok(run(&older, &["create", "-f", "-"], Some(policy)));
    assert_eq!(
        older.names(V1, "globalnetworkpolicies"),
        ["default.allow-all".to_string()]
    );
}

#[test]
fn the_configured_group_wins_over_discovery_and_config_says_why() {
    let server = KubeApiServer::start_serving(CalicoGroups::Both);
    seed_version(&server, V1, "v3.32.0");
    seed_version(&server, V3, "v3.32.1");

    // Discovered: both served, so v1 as upstream (and `config check` fails: the v3 CRDs hold
    // objects of their own, see the last test).
    let check = run(&server, &["config", "check"], None);
    assert_eq!(check.code, Some(1), "{check:?}");
    assert!(check.stdout.contains("API group: crd.projectcalico.org/v1 (discovered: the API server serves both, so crd.projectcalico.org/v1 as upstream"), "{check:?}");
    let version = ok(run(
        &server,
        &["get", "clusterinformation", "default", "-o", "yaml"],
        None,
    ));
    assert!(version.contains("calicoVersion: v3.32.0"), "{version}");

    // Configured by the environment, with the `NET_` prefix winning.
    let mut command = netctl(&server);
    command
        .env("CALICO_API_GROUP", V1)
        .env("NET_CALICO_API_GROUP", V3)
        .args(["get", "clusterinformation", "default", "-o", "yaml"]);
    let version = ok(command.run());
    assert!(version.contains("calicoVersion: v3.32.1"), "{version}");
    let mut command = netctl(&server);
    command
        .env("NET_CALICO_API_GROUP", V3)
        .args(["config", "check"]);
    let check = command.run();
    assert!(
        check
            .stdout
            .contains("API group: projectcalico.org/v3 (configured by `NET_CALICO_API_GROUP`)"),
        "{check:?}"
    );

    // Configured in the file: `config view` shows it with its origin.
    let mut command = Netctl::new();
    let kubeconfig = server.kubeconfig_path();
    command.config_file(&format!(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  datastoreType: kubernetes\n  kubeconfig: {}\n  calicoAPIGroup: projectcalico.org/v3\n",
        kubeconfig.display()
    ));
    command.args(["config", "view"]);
    let view = ok(command.run());
    assert!(
        view.lines().any(|line| line.starts_with("calicoAPIGroup")
            && line.contains("projectcalico.org/v3")
            && line.contains("file `")),
        "{view}"
    );

    // Not configured: `config view` says it is discovered on connect.
    let view = ok(run(&server, &["config", "view"], None));
    assert!(
        view.lines()
            .any(|line| line.starts_with("calicoAPIGroup")
                && line.contains("(discovered on connect)")),
        "{view}"
    );

    // A value that is neither group is refused before anything is contacted.
    let mut command = netctl(&server);
    command
        .env("NET_CALICO_API_GROUP", "projectcalico.org")
        .args(["get", "ippools"]);
    let error = failed(command.run());
    assert!(
        error
            .contains("invalid Calico API group `projectcalico.org` (from `NET_CALICO_API_GROUP`)"),
        "{error}"
    );
}

#[test]
fn a_v3_only_server_is_discovered_and_config_check_says_so() {
    let server = KubeApiServer::start_serving(CalicoGroups::V3);
    let out = ok(run(&server, &["config", "check"], None));
    assert!(
        out.contains("API group: projectcalico.org/v3 (discovered: the API server serves projectcalico.org/v3 and not crd.projectcalico.org/v1, v3.32's native CRDs)"),
        "{out}"
    );
    // Configured to the group the server lacks: the error says so and how to fix it.
    let mut command = netctl(&server);
    command.env("CALICO_API_GROUP", V1).args(["get", "ippools"]);
    let error = failed(command.run());
    assert!(
        error.contains("does not serve `clusterinformations.crd.projectcalico.org`"),
        "{error}"
    );
    assert!(error.contains("NET_CALICO_API_GROUP"), "{error}");
}

#[test]
fn both_groups_holding_objects_are_warned_about_and_the_group_read_is_named() {
    let server = KubeApiServer::start_serving(CalicoGroups::Both);
    seed_version(&server, V1, "v3.32.1");
    // rancher/rke2-charts#1205: the v3 CRDs installed beside the v1 ones, objects in both.
    server.put(
        json!({"apiVersion": V3, "kind": "IPPool", "metadata": {"name": "new-pool"},
                      "spec": {"cidr": "10.20.0.0/16"}}),
    );
    server.put(
        json!({"apiVersion": V3, "kind": "IPAMBlock", "metadata": {"name": "10-20-0-0-26"},
                      "spec": {"cidr": "10.20.0.0/26", "allocations": [], "attributes": [],
                               "unallocated": [], "strictAffinity": false}}),
    );
    let output = netctl(&server).args(["get", "ippools"]).output();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("warning: both crd.projectcalico.org/v1 and projectcalico.org/v3 are served by CRDs; netctl reads crd.projectcalico.org/v1 (as upstream's components do unless CALICO_API_GROUP is set) and does not see the IPPool, IPAMBlock objects in projectcalico.org/v3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: check which group calico-node reads"),
        "{stderr}"
    );
    // `config check` fails on it.
    let check = run(&server, &["config", "check"], None);
    assert_eq!(check.code, Some(1), "{check:?}");
    assert!(
        check.stdout.contains("API group: error: both crd.projectcalico.org/v1 and projectcalico.org/v3 are served by CRDs"),
        "{check:?}"
    );

    // The Calico API server presenting v3 over the v1 CRDs is the normal case: no warning.
    let normal = KubeApiServer::start();
    normal.serve_calico_api_server();
    seed_version(&normal, V1, "v3.31.4");
    let output = netctl(&normal).args(["get", "ippools"]).output();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains("warning"), "{stderr}");
    let out = ok(run(&normal, &["config", "check"], None));
    assert!(
        out.contains("API group: crd.projectcalico.org/v1 (discovered: the API server serves both"),
        "{out}"
    );
}

#[test]
fn upgrade_discovery_reads_the_native_v3_group() {
    let server = KubeApiServer::start_serving(CalicoGroups::V3);
    seed_version(&server, V3, "v3.32.0");
    server.put(
        json!({"apiVersion": V3, "kind": "FelixConfiguration", "metadata": {"name": "default"},
                      "spec": {"policySyncPathPrefix": "/var/run/nodeagent"}}),
    );
    server.put(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "tigera-operator", "namespace": "tigera-operator"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"k8s-app": "tigera-operator"}},
                 "template": {"metadata": {"labels": {"k8s-app": "tigera-operator"}},
                              "spec": {"containers": [{"name": "tigera-operator",
                                                       "image": "quay.io/tigera/operator:v1.40.0"}]}}}}));
    let mut command = netctl(&server);
    command.args([
        "upgrade",
        "plan",
        "-o",
        "json",
        "--to",
        "v3.32.1",
        "--set",
        "mesh_version=1.15.7",
    ]);
    let output = command.output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    for (fact, value) in [
        ("installed_version", json!("v3.32.0")),
        ("install_method", json!("operator")),
        ("alp_enabled", json!(true)),
    ] {
        assert_eq!(plan["facts"][fact]["value"], value, "{fact}");
        assert_eq!(plan["facts"][fact]["origin"], "discovered", "{fact}");
    }
    assert_eq!(v1_requests(&server), Vec::<String>::new());
}
