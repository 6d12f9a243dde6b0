//! The resource commands through the binary against the `kubernetes` datastore, served by the
//! in-process API server (`support::kube_api`): upstream-compatible custom resources (UIDs and owner
//! references converted), Nodes mapped onto Kubernetes Nodes (labels, kube-labels, WireGuard
//! addresses), Profiles derived from Namespaces and ServiceAccounts, WorkloadEndpoints derived from
//! Pods, list paging, and the
//! errors users meet — conflict, not found, forbidden, unreachable API, bad kubeconfig — and the
//! same commands printing the same thing (UIDs, revisions and times aside) on etcd and Kubernetes.

use crate::support::snapshot::netctl_snapshot;
use crate::support::{self, KubeApiServer, Netctl, Run, failed, ok};
use serde_json::json;

const CALICO: &str = "crd.projectcalico.org/v1";

const POLICY: &str = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: allow-all-upgrade
  labels: {team: net}
spec:
  selector: has(host-endpoint-upgrade)
  types: [Ingress, Egress]
  ingress: [{action: Log}, {action: Allow}]
  egress: [{action: Log}, {action: Allow}]
";

const HOST_ENDPOINTS: &str = "apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-all, labels: {zone: a}}
spec: {node: node1, interfaceName: '*'}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0}
spec: {node: node1, interfaceName: eth0, expectedIPs: [10.0.0.1]}
";

fn run(server: &KubeApiServer, args: &[&str], input: Option<&str>) -> Run {
    let mut command = Netctl::new();
    command
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", server.kubeconfig_path())
        .args(args);
    if let Some(input) = input {
        command.stdin(input);
    }
    command.run()
}

#[test]
fn apply_stores_upstream_custom_resources_and_reads_back() {
    let server = KubeApiServer::start();
    let out = ok(run(&server, &["apply", "-f", "-"], Some(POLICY)));
    assert_eq!(
        out,
        "Successfully applied 1 resource(s) (GlobalNetworkPolicy: 1 created)\n"
    );

    let stored = server
        .get(
            CALICO,
            "globalnetworkpolicies",
            "",
            "default.allow-all-upgrade",
        )
        .expect("stored under the tiered name");
    assert_eq!(stored["kind"], "GlobalNetworkPolicy");
    assert_eq!(stored["spec"]["selector"], "has(host-endpoint-upgrade)");
    // Only Calico labels on the custom resource itself; all of them in the metadata annotation.
    assert!(
        stored["metadata"]["labels"].get("team").is_none(),
        "{stored}"
    );
    let annotation: serde_json::Value = serde_json::from_str(
        stored["metadata"]["annotations"]["projectcalico.org/metadata"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(annotation["name"], "allow-all-upgrade");
    assert_eq!(annotation["labels"]["team"], "net");

    netctl_snapshot!(run(&server, &["get", "gnp", "-o", "wide"], None));
    let yaml = ok(run(
        &server,
        &["get", "gnp", "allow-all-upgrade", "-o", "yaml"],
        None,
    ));
    assert!(yaml.contains("name: allow-all-upgrade\n"), "{yaml}");
    assert!(yaml.contains("team: net"), "{yaml}");
    assert!(!yaml.contains("projectcalico.org/metadata"), "{yaml}");
    // The v3 UID is the bit-reversed form of the custom resource's, version and variant kept
    // (upstream `conversion.go` `ConvertUID`); the value is worked out by hand. The policy is the
    // fourth object: the write first created ClusterInformation and the two built-in tiers.
    let uid = stored["metadata"]["uid"].as_str().unwrap();
    assert_eq!(uid, "6f1e2a3b-0000-4000-8000-000000000004");
    assert!(
        yaml.contains("uid: f67854dc-0000-4000-8000-000000000020\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains(&format!(
            "uid: {}",
            netctl::datastore::kube::convert_uid(uid)
        )),
        "{yaml}"
    );

    // Applying the same again writes nothing; applying a change updates in place.
    let stored_again = || {
        server
            .get(
                CALICO,
                "globalnetworkpolicies",
                "",
                "default.allow-all-upgrade",
            )
            .unwrap()
    };
    let out = ok(run(&server, &["apply", "-f", "-"], Some(POLICY)));
    assert_eq!(
        out,
        "Successfully applied 1 resource(s) (GlobalNetworkPolicy: 1 unchanged)\n"
    );
    assert_eq!(stored_again(), stored);
    let changed = POLICY.replace("team: net", "team: edge");
    let out = ok(run(&server, &["apply", "-f", "-"], Some(&changed)));
    assert_eq!(
        out,
        "Successfully applied 1 resource(s) (GlobalNetworkPolicy: 1 configured)\n"
    );
    let again = stored_again();
    assert_eq!(again["metadata"]["uid"], stored["metadata"]["uid"]);
    assert_ne!(
        again["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
}

/// The Kubernetes API has no multi-object transactions: a file is written one object at a time
/// behind the same batch interface, with the same outcomes — created, configured, unchanged — and
/// a failure half way undone.
#[test]
fn many_documents_are_written_one_object_at_a_time_with_the_same_outcomes() {
    let server = KubeApiServer::start();
    let sets = |range: std::ops::Range<usize>, zone: &str| -> String {
        range
            .map(|index| {
                format!(
                    "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata: {{name: set-{index:03}, labels: {{zone: {zone}}}}}\nspec: {{nets: [10.{}.{}.0/24]}}\n",
                    index / 256,
                    index % 256
                )
            })
            .collect()
    };
    let out = ok(run(
        &server,
        &["apply", "-f", "-"],
        Some(&sets(0..150, "a")),
    ));
    assert_eq!(
        out,
        "Successfully applied 150 resource(s) (GlobalNetworkSet: 150 created)\n"
    );
    let mut changed = sets(0..140, "a");
    changed.push_str(&sets(140..150, "b"));
    let out = ok(run(&server, &["apply", "-f", "-"], Some(&changed)));
    assert_eq!(
        out,
        "Successfully applied 150 resource(s) (GlobalNetworkSet: 10 configured, 140 unchanged)\n"
    );
    // A WorkloadEndpoint cannot be created on Kubernetes: the 150 sets written before it (in
    // their own requests) are deleted again.
    put_pods(&server);
    let mut failing = sets(200..350, "c");
    failing.push_str(
        "---\napiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\nmetadata: {name: node--1-k8s-web--9-eth0, namespace: prod}\nspec: {node: node-1, orchestrator: k8s, workload: web-9, endpoint: eth0, pod: web-9, interfaceName: cali0}\n",
    );
    netctl_snapshot!(run(&server, &["apply", "-f", "-"], Some(&failing)));
    assert!(
        server
            .get(CALICO, "globalnetworksets", "", "set-200")
            .is_none()
    );
    assert!(
        server
            .get(CALICO, "globalnetworksets", "", "set-000")
            .is_some()
    );
}

#[test]
fn owner_references_read_back_as_v3_owners() {
    let server = KubeApiServer::start();
    // As upstream stores a resource owned by another Calico resource: the owner named by its custom
    // resource (netctl's own create drops owner references, as upstream `prepareMetadataForCreate`).
    let metadata = json!({"ownerReferences": [
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "Tier", "name": "security",
         "uid": "482c6a1e-593d-4df7-81c4-a2e691d5b3f7"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "operator",
         "uid": "6f1e2a3b-0000-4000-8000-0000000000ff"}]});
    server.put(json!({"apiVersion": CALICO, "kind": "GlobalNetworkSet",
        "metadata": {"name": "blocked",
            "annotations": {"projectcalico.org/metadata": metadata.to_string()}},
        "spec": {"nets": ["192.0.2.0/24"]}}));
    let json_text = ok(run(
        &server,
        &["get", "globalnetworkset", "blocked", "-o", "json"],
        None,
    ));
    let set: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    // Worked by hand in `conversion.rs`'s unit test: version (4d) and variant (81) bytes stay.
    assert_eq!(
        set["metadata"]["ownerReferences"],
        json!([
            {"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "security",
             "uid": "12345678-9abc-4def-8123-456789abcdef"},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "operator",
             "uid": "6f1e2a3b-0000-4000-8000-0000000000ff"}
        ])
    );
}

#[test]
fn create_replace_delete_label_and_patch() {
    let server = KubeApiServer::start();
    ok(run(&server, &["create", "-f", "-"], Some(HOST_ENDPOINTS)));
    assert_eq!(
        server.names(CALICO, "hostendpoints"),
        ["node1-all", "node1-eth0"]
    );
    netctl_snapshot!(run(&server, &["create", "-f", "-"], Some(HOST_ENDPOINTS)));

    ok(run(
        &server,
        &[
            "label",
            "hostendpoint",
            "node1-all",
            "host-endpoint-upgrade=",
        ],
        None,
    ));
    let selected = ok(run(
        &server,
        &[
            "get",
            "hep",
            "-l",
            "has(host-endpoint-upgrade)",
            "-o",
            "name",
        ],
        None,
    ));
    assert_eq!(selected, "hostendpoint/node1-all\n");

    ok(run(
        &server,
        &[
            "patch",
            "hep",
            "node1-eth0",
            "-p",
            r#"{"spec":{"expectedIPs":["10.0.0.2"]}}"#,
        ],
        None,
    ));
    let patched = server
        .get(CALICO, "hostendpoints", "", "node1-eth0")
        .unwrap();
    assert_eq!(patched["spec"]["expectedIPs"], json!(["10.0.0.2"]));

    ok(run(
        &server,
        &["delete", "hostendpoint", "node1-eth0"],
        None,
    ));
    assert_eq!(server.names(CALICO, "hostendpoints"), ["node1-all"]);
    netctl_snapshot!(run(&server, &["delete", "hep", "node1-eth0"], None));
    netctl_snapshot!(run(&server, &["get", "hep", "ghost"], None));
}

#[test]
fn namespaced_resources_live_in_their_namespace() {
    let server = KubeApiServer::start();
    let policy = "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: web}\nspec: {selector: all()}\n";
    ok(run(
        &server,
        &["apply", "-n", "prod", "-f", "-"],
        Some(policy),
    ));
    assert_eq!(
        server.names(CALICO, "networkpolicies"),
        ["prod/default.web"]
    );
    let listed = ok(run(
        &server,
        &["get", "networkpolicy", "-A", "-o", "name"],
        None,
    ));
    assert_eq!(listed, "networkpolicy/web\n");
    let none = ok(run(
        &server,
        &["get", "networkpolicy", "-n", "dev", "-o", "name"],
        None,
    ));
    assert_eq!(none, "");
}

#[test]
fn a_stale_resource_version_is_a_conflict() {
    let server = KubeApiServer::start();
    ok(run(&server, &["create", "-f", "-"], Some(HOST_ENDPOINTS)));
    let current = server
        .get(CALICO, "hostendpoints", "", "node1-all")
        .unwrap();
    // Someone else changes it after it was read at its first version.
    let first_version = current["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    ok(run(
        &server,
        &["label", "hep", "node1-all", "zone=b", "--overwrite"],
        None,
    ));
    let current = server
        .get(CALICO, "hostendpoints", "", "node1-all")
        .unwrap();
    let stale = "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {name: node1-all, resourceVersion: 'FIRST'}\nspec: {node: node1, interfaceName: eth9}\n"
        .replace("FIRST", &first_version);
    let current_version = current["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let stderr = failed(run(&server, &["replace", "-f", "-"], Some(&stale)));
    assert!(
        stderr.contains(&format!(
            "update conflict: HostEndpoint(node1-all) was changed by someone else (stored revision {current_version}, expected {first_version})"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: read the resource again and retry the change"),
        "{stderr}"
    );
    let unchanged = server
        .get(CALICO, "hostendpoints", "", "node1-all")
        .unwrap();
    assert_eq!(unchanged["spec"]["interfaceName"], "*");
}

#[test]
fn forbidden_requests_say_what_was_refused() {
    let server = KubeApiServer::start();
    server.forbid(None, "/apis/crd.projectcalico.org/v1/ippools");
    netctl_snapshot!(run(&server, &["get", "ippools"], None));
}

#[test]
fn an_unreachable_api_server_is_reported_with_its_address() {
    let server = KubeApiServer::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let kubeconfig = server
        .kubeconfig_yaml()
        .replace(&server.url(), &format!("http://{address}"));
    let path = server.directory().join("unreachable");
    std::fs::write(&path, kubeconfig).unwrap();
    let output = Netctl::new()
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", &path)
        .args(["get", "ippools"])
        .output();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot connect to the kubernetes datastore: the datastore is unavailable: `http://{address}` refused the connection"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: check that the cluster is up"),
        "{stderr}"
    );
}

#[test]
fn without_calico_crds_the_datastore_says_so() {
    let server = KubeApiServer::start();
    // A kubeconfig whose server path prefix leads nowhere: every request is a 404 without details.
    let kubeconfig = server
        .kubeconfig_yaml()
        .replace(&server.url(), &format!("{}/elsewhere", server.url()));
    let path = server.directory().join("elsewhere");
    std::fs::write(&path, kubeconfig).unwrap();
    let output = Netctl::new()
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", &path)
        .args(["get", "ippools"])
        .output();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("does not serve `clusterinformations.crd.projectcalico.org`"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: install the Calico CRDs"), "{stderr}");
}

#[test]
fn a_missing_kubeconfig_or_context_is_a_configuration_error() {
    let server = KubeApiServer::start();
    let output = Netctl::new()
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(["get", "ippools"])
        .output();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("kubeconfig `/nonexistent/kubeconfig` (from `KUBECONFIG`) does not exist"),
        "{stderr}"
    );

    netctl_snapshot!(run(
        &server,
        &["--context", "other", "get", "ippools"],
        None,
    ));

    // Without any kubeconfig, outside a pod.
    let output = Netctl::new()
        .env("DATASTORE_TYPE", "kubernetes")
        .args(["get", "ippools"])
        .output();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("netctl is not running in a pod"),
        "{stderr}"
    );
}

#[test]
fn the_context_flag_picks_the_kubeconfig_context() {
    let server = KubeApiServer::start();
    ok(run(&server, &["create", "-f", "-"], Some(HOST_ENDPOINTS)));
    // Current context points at a closed port; `--context good` at the server.
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: good\n  cluster: {{server: {url}}}\n- name: bad\n  cluster: {{server: 'http://127.0.0.1:9'}}\n\
         users:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: good\n  context: {{cluster: good, user: u}}\n- name: bad\n  context: {{cluster: bad, user: u}}\ncurrent-context: bad\n",
        url = server.url()
    );
    let path = server.directory().join("two-contexts");
    std::fs::write(&path, kubeconfig).unwrap();
    let output = Netctl::new()
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", &path)
        .args(["--context", "good", "get", "hep", "-o", "name"])
        .output();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "hostendpoint/node1-all\nhostendpoint/node1-eth0\n",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = Netctl::new()
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", &path)
        .env("K8S_CURRENT_CONTEXT", "good")
        .args(["get", "hep", "-o", "name"])
        .output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn lists_are_read_in_pages() {
    let server = KubeApiServer::start();
    for index in 0..5 {
        server.put(json!({
            "apiVersion": CALICO, "kind": "IPPool",
            "metadata": {"name": format!("pool-{index}")},
            "spec": {"cidr": format!("10.{index}.0.0/16")}
        }));
    }
    assert_eq!(
        list_pages(&server, netctl::resource::Kind::IpPool, 2),
        [
            vec!["pool-0", "pool-1"],
            vec!["pool-2", "pool-3"],
            vec!["pool-4"]
        ]
    );
    let lists: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|request| request.starts_with("GET /apis/crd.projectcalico.org/v1/ippools"))
        .collect();
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(
        lists[1].contains("limit=2") && lists[1].contains("continue="),
        "{lists:?}"
    );
    // Through the binary, upstream-written pools (no metadata annotation) read back.
    let names = ok(run(&server, &["get", "ippools", "-o", "name"], None));
    assert_eq!(names.lines().count(), 5, "{names}");
}

#[test]
fn nodes_are_kubernetes_nodes() {
    let server = KubeApiServer::start();
    server.put(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node1", "labels": {"kubernetes.io/os": "linux"},
            "annotations": {"projectcalico.org/IPv4Address": "10.0.0.1/24",
                            "projectcalico.org/ASNumber": "64512"}},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}
    }));
    let yaml = ok(run(&server, &["get", "node", "node1", "-o", "yaml"], None));
    assert!(yaml.contains("ipv4Address: 10.0.0.1/24"), "{yaml}");
    assert!(yaml.contains("asNumber: 64512"), "{yaml}");
    assert!(yaml.contains("orchestrator: k8s"), "{yaml}");

    let changed = yaml.replace("10.0.0.1/24", "10.0.0.7/24");
    ok(run(&server, &["apply", "-f", "-"], Some(&changed)));
    let node = server.get("v1", "nodes", "", "node1").unwrap();
    assert_eq!(
        node["metadata"]["annotations"]["projectcalico.org/IPv4Address"],
        "10.0.0.7/24"
    );
    assert_eq!(node["metadata"]["labels"]["kubernetes.io/os"], "linux");

    netctl_snapshot!(run(&server, &["delete", "node", "node1"], None));
}

#[test]
fn node_labels_and_wireguard_addresses_map_as_upstream() {
    let server = KubeApiServer::start();
    server.put(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node1", "labels": {"kubernetes.io/os": "linux"},
            "annotations": {"projectcalico.org/IPv4WireguardInterfaceAddr": "10.250.0.1",
                            "projectcalico.org/WireguardPublicKey": "x6NhvRBrSdfAKxs5VPtPTaJDgMknF3cGsMoR2WvBm2E="}}
    }));
    // A label set through netctl is the Calico Node's own: kept in `projectcalico.org/labels`, the
    // Kubernetes Node's labels untouched.
    ok(run(&server, &["label", "node", "node1", "rack=r1"], None));
    let node = server.get("v1", "nodes", "", "node1").unwrap();
    assert_eq!(
        node["metadata"]["labels"],
        json!({"kubernetes.io/os": "linux"})
    );
    let annotations = &node["metadata"]["annotations"];
    assert_eq!(annotations["projectcalico.org/labels"], r#"{"rack":"r1"}"#);
    assert!(
        annotations.get("projectcalico.org/kube-labels").is_none(),
        "{node}"
    );
    assert_eq!(
        annotations["projectcalico.org/WireguardPublicKey"],
        "x6NhvRBrSdfAKxs5VPtPTaJDgMknF3cGsMoR2WvBm2E="
    );

    // Read back: both kinds of label, and the Kubernetes ones recorded in `kube-labels`.
    let yaml = ok(run(&server, &["get", "node", "node1", "-o", "yaml"], None));
    assert!(
        yaml.contains("    projectcalico.org/kube-labels: '{\"kubernetes.io/os\":\"linux\"}'\n"),
        "{yaml}"
    );
    assert!(yaml.contains("    rack: r1\n"), "{yaml}");
    assert!(yaml.contains("    kubernetes.io/os: linux\n"), "{yaml}");
    assert!(
        yaml.contains("  wireguard:\n    interfaceIPv4Address: 10.250.0.1\n"),
        "{yaml}"
    );
    let selected = ok(run(
        &server,
        &[
            "get",
            "nodes",
            "-l",
            "rack == 'r1' && kubernetes.io/os == 'linux'",
            "-o",
            "name",
        ],
        None,
    ));
    assert_eq!(selected, "node/node1\n");

    // Writing back what was read changes nothing but what was edited.
    let changed = yaml.replace("10.250.0.1", "10.250.0.9");
    ok(run(&server, &["apply", "-f", "-"], Some(&changed)));
    let node = server.get("v1", "nodes", "", "node1").unwrap();
    let annotations = &node["metadata"]["annotations"];
    assert_eq!(
        annotations["projectcalico.org/IPv4WireguardInterfaceAddr"],
        "10.250.0.9"
    );
    assert_eq!(annotations["projectcalico.org/labels"], r#"{"rack":"r1"}"#);
    assert_eq!(
        node["metadata"]["labels"],
        json!({"kubernetes.io/os": "linux"})
    );

    // Removing the label removes the annotation.
    ok(run(
        &server,
        &["label", "node", "node1", "rack", "--remove"],
        None,
    ));
    let node = server.get("v1", "nodes", "", "node1").unwrap();
    assert!(
        node["metadata"]["annotations"]
            .get("projectcalico.org/labels")
            .is_none(),
        "{node}"
    );
}

#[test]
fn profiles_are_derived_from_namespaces_and_service_accounts() {
    let server = KubeApiServer::start();
    server.put(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "prod", "labels": {"team": "a"}}}));
    server.put(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "web", "namespace": "prod"}}));
    let names = ok(run(&server, &["get", "profiles", "-o", "name"], None));
    assert_eq!(
        names,
        "profile/projectcalico-default-allow\nprofile/kns.prod\nprofile/ksa.prod.web\n"
    );
    netctl_snapshot!(run(
        &server,
        &["get", "profile", "kns.prod", "-o", "yaml"],
        None,
    ));
    netctl_snapshot!(run(&server, &["delete", "profile", "kns.prod"], None));
}

/// Runs `args` against a datastore chosen by `env` and returns stdout, stderr and the exit code with
/// the values that differ between datastores by nature (UIDs, revisions, times) masked.
fn masked(env: &[(&str, String)], args: &[&str], input: Option<&str>) -> String {
    let mut command = Netctl::new();
    for (key, value) in env {
        command.env(key, value);
    }
    command.args(args);
    if let Some(input) = input {
        command.stdin(input);
    }
    let output = command.output();
    let text = format!(
        "exit {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let masks = [
        (r#"(uid"?: )"?[^\s",]+"?"#, "${1}[UID]"),
        (r#"(resourceVersion"?: )"?[^\s",]+"?"#, "${1}[RV]"),
        (r#"(creationTimestamp"?: )"?[^\s",]+"?"#, "${1}[TIME]"),
    ];
    masks.iter().fold(text, |text, (pattern, replacement)| {
        regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&text, *replacement)
            .into_owned()
    })
}

#[test]
fn the_same_commands_print_the_same_on_etcd_and_kubernetes() {
    let etcd = support::EtcdServer::start();
    let kube = KubeApiServer::start();
    let etcd_env = [
        ("DATASTORE_TYPE", "etcdv3".to_string()),
        ("ETCD_ENDPOINTS", etcd.endpoint()),
    ];
    let kube_env = [
        ("DATASTORE_TYPE", "kubernetes".to_string()),
        ("KUBECONFIG", kube.kubeconfig_path().display().to_string()),
    ];
    let steps: [(&[&str], Option<&str>); 14] = [
        (&["create", "-f", "-"], Some(HOST_ENDPOINTS)),
        (&["create", "-f", "-"], Some(HOST_ENDPOINTS)),
        (&["apply", "-f", "-"], Some(POLICY)),
        (&["label", "hep", "node1-all", "stage=upgrade"], None),
        (&["label", "hep", "node1-all", "zone=b"], None),
        (
            &[
                "patch",
                "hep",
                "node1-eth0",
                "-p",
                r#"{"spec":{"expectedIPs":["10.0.0.9"]}}"#,
            ],
            None,
        ),
        (&["get", "hep"], None),
        (&["get", "hep", "-o", "wide"], None),
        (&["get", "gnp", "-o", "yaml"], None),
        (&["get", "hep", "node1-all", "-o", "json"], None),
        (&["get", "hep", "-l", "zone == 'a'", "-o", "name"], None),
        (&["replace", "-f", "-"], Some(HOST_ENDPOINTS)),
        (&["delete", "hep", "node1-eth0"], None),
        (&["delete", "hep", "node1-eth0"], None),
    ];
    for (args, input) in steps {
        let on_etcd = masked(&etcd_env, args, input);
        let on_kube = masked(&kube_env, args, input);
        assert_eq!(on_etcd, on_kube, "`netctl {}` differs", args.join(" "));
    }
}

#[test]
fn bgp_filters_are_custom_resources_too() {
    let server = KubeApiServer::start();
    let filter = "apiVersion: projectcalico.org/v3\nkind: BGPFilter\nmetadata: {name: edge}\nspec: {exportV4: [{action: Reject, interface: '*.calico'}]}\n";
    ok(run(&server, &["apply", "-f", "-"], Some(filter)));
    let stored = server
        .get(CALICO, "bgpfilters", "", "edge")
        .expect("stored as a bgpfilters.crd.projectcalico.org object");
    assert_eq!(stored["kind"], "BGPFilter");
    assert_eq!(stored["spec"]["exportV4"][0]["interface"], "*.calico");
    assert_eq!(
        ok(run(&server, &["get", "bf", "-o", "name"], None)),
        "bgpfilter/edge\n"
    );
}

/// Pods as the kubelet and the Calico CNI plugin leave them: one with its IPs in the Calico
/// annotations, one with them only in its status, and the pods upstream shows differently or not
/// at all (host-networked, unscheduled, finished).
fn put_pods(server: &KubeApiServer) {
    server.put(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "prod", "labels": {"app": "web"},
            "annotations": {"cni.projectcalico.org/podIP": "10.244.1.5/32",
                "cni.projectcalico.org/podIPs": "10.244.1.5/32,fd00:10:244::5/128",
                "cni.projectcalico.org/containerID": "0123abcd",
                "cni.projectcalico.org/floatingIPs": "[\"192.0.2.10\"]"}},
        "spec": {"nodeName": "node-1", "serviceAccountName": "web",
            "containers": [{"name": "web", "image": "nginx",
                "ports": [{"containerPort": 8080, "name": "http"}, {"containerPort": 9000}]}]}}));
    server.put(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "db-0", "namespace": "dev", "labels": {"app": "db"}},
        "spec": {"nodeName": "node-2", "containers": [{"name": "db", "image": "postgres"}]},
        "status": {"phase": "Running", "podIP": "10.244.2.7", "podIPs": [{"ip": "10.244.2.7"}]}}));
    server.put(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "agent", "namespace": "prod"},
        "spec": {"nodeName": "node-1", "hostNetwork": true, "containers": [{"name": "a", "image": "a"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1"}}));
    server.put(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pending", "namespace": "prod"},
        "spec": {"containers": [{"name": "p", "image": "p"}]}}));
    server.put(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-1", "namespace": "prod", "labels": {"app": "job"},
            "annotations": {"cni.projectcalico.org/podIP": "10.244.1.9/32"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "j", "image": "j"}]},
        "status": {"phase": "Succeeded"}}));
}

/// stdout, stderr and exit code of one run, UIDs and times masked, for snapshots.
fn transcript(server: &KubeApiServer, args: &[&str]) -> String {
    let env = [
        ("DATASTORE_TYPE", "kubernetes".to_string()),
        ("KUBECONFIG", server.kubeconfig_path().display().to_string()),
    ];
    masked(&env, args, None)
}

#[test]
fn workload_endpoints_are_derived_from_pods() {
    let server = KubeApiServer::start();
    put_pods(&server);
    insta::assert_snapshot!(
        "workload_endpoints_table",
        transcript(&server, &["get", "workloadendpoints", "-n", "prod"])
    );
    insta::assert_snapshot!(
        "workload_endpoints_wide_all_namespaces",
        transcript(&server, &["get", "wep", "-A", "-o", "wide"])
    );
    insta::assert_snapshot!(
        "workload_endpoint_yaml",
        transcript(
            &server,
            &[
                "get",
                "wep",
                "-n",
                "prod",
                "node--1-k8s-web--0-eth0",
                "-o",
                "yaml"
            ]
        )
    );
    let json_text = ok(run(
        &server,
        &[
            "get",
            "wep",
            "-n",
            "dev",
            "node--2-k8s-db--0-eth0",
            "-o",
            "json",
        ],
        None,
    ));
    let endpoint: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    // IPs from the pod status when there is no Calico annotation; no service account, no label.
    assert_eq!(endpoint["spec"]["ipNetworks"], json!(["10.244.2.7/32"]));
    assert_eq!(endpoint["spec"]["profiles"], json!(["kns.dev"]));
    assert_eq!(
        endpoint["metadata"]["labels"]["projectcalico.org/namespace"],
        "dev"
    );
    // The pod's UID, unconverted, as upstream.
    let pod = server.get("v1", "pods", "dev", "db-0").unwrap();
    assert_eq!(endpoint["metadata"]["uid"], pod["metadata"]["uid"]);

    // The selector sees the labels netctl adds.
    let selected = ok(run(
        &server,
        &[
            "get",
            "wep",
            "-A",
            "-l",
            "projectcalico.org/orchestrator == 'k8s' && app in {'web', 'job'}",
            "-o",
            "name",
        ],
        None,
    ));
    assert_eq!(
        selected,
        "workloadendpoint/node--1-k8s-job--1-eth0\nworkloadendpoint/node--1-k8s-web--0-eth0\n"
    );

    // Host-networked pods have no endpoint; a name whose node is not the pod's is not the pod's
    // endpoint; a name that is not a Kubernetes endpoint name finds nothing.
    for name in ["node--1-k8s-agent-eth0", "node--2-k8s-web--0-eth0", "web-0"] {
        let stderr = failed(run(&server, &["get", "wep", "-n", "prod", name], None));
        assert!(
            stderr.contains(&format!(
                "resource does not exist: WorkloadEndpoint(prod/{name})"
            )),
            "{stderr}"
        );
    }
}

#[test]
fn workload_endpoint_lists_read_pods_in_pages() {
    let server = KubeApiServer::start();
    put_pods(&server);
    let pages = list_pages(&server, netctl::resource::Kind::WorkloadEndpoint, 2);
    // Pods in key order (dev/db-0, prod/agent | prod/job-1, prod/pending | prod/web-0); the
    // host-networked and unscheduled pods leave their pages short.
    assert_eq!(
        pages,
        [
            vec!["node--2-k8s-db--0-eth0"],
            vec!["node--1-k8s-job--1-eth0"],
            vec!["node--1-k8s-web--0-eth0"]
        ]
    );
    let lists: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|request| request.starts_with("GET /api/v1/pods"))
        .collect();
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(
        lists.iter().all(|request| request.contains("limit=2")),
        "{lists:?}"
    );
    assert!(lists[2].contains("continue="), "{lists:?}");
}

#[test]
fn workload_endpoints_are_written_through_their_pods() {
    let server = KubeApiServer::start();
    put_pods(&server);
    let before = server.get("v1", "pods", "prod", "web-0").unwrap();
    let yaml = ok(run(
        &server,
        &[
            "get",
            "wep",
            "-n",
            "prod",
            "node--1-k8s-web--0-eth0",
            "-o",
            "yaml",
        ],
        None,
    ));
    // Applying the endpoint as read changes nothing and writes nothing; applying a change is an
    // update, and creating one for a pod that does not exist a create: both refused.
    let out = ok(run(&server, &["apply", "-f", "-"], Some(&yaml)));
    assert_eq!(
        out,
        "Successfully applied 1 resource(s) (WorkloadEndpoint: 1 unchanged)\n"
    );
    let changed = yaml.replace("    app: web\n", "    app: web2\n");
    assert_ne!(changed, yaml);
    netctl_snapshot!(run(&server, &["apply", "-f", "-"], Some(&changed)));
    let other = yaml
        .replace("web--0", "web--9")
        .replace("pod: web-0", "pod: web-9");
    netctl_snapshot!(run(&server, &["create", "-f", "-"], Some(&other)));
    netctl_snapshot!(run(
        &server,
        &["delete", "wep", "-n", "prod", "node--1-k8s-web--0-eth0"],
        None,
    ));
    assert_eq!(server.get("v1", "pods", "prod", "web-0").unwrap(), before);
}

#[test]
fn workload_endpoints_print_the_same_on_etcd_and_kubernetes() {
    let etcd = support::EtcdServer::start();
    let kube = KubeApiServer::start();
    put_pods(&kube);
    let etcd_env = [
        ("DATASTORE_TYPE", "etcdv3".to_string()),
        ("ETCD_ENDPOINTS", etcd.endpoint()),
    ];
    let kube_env = [
        ("DATASTORE_TYPE", "kubernetes".to_string()),
        ("KUBECONFIG", kube.kubeconfig_path().display().to_string()),
    ];
    // What the Kubernetes datastore derives, written to etcd as upstream's CNI plugin would.
    let derived = ok(run(&kube, &["get", "wep", "-A", "-o", "yaml"], None));
    let stripped = regex::Regex::new(r"(?m)^\s+(uid|resourceVersion|creationTimestamp): .*\n")
        .unwrap()
        .replace_all(&derived, "")
        .into_owned();
    let created = masked(&etcd_env, &["create", "-f", "-"], Some(&stripped));
    assert!(created.starts_with("exit Some(0)"), "{created}");
    let steps: [&[&str]; 6] = [
        &["get", "wep", "-A"],
        &["get", "wep", "-A", "-o", "wide"],
        &["get", "wep", "-n", "prod", "-o", "yaml"],
        &[
            "get",
            "wep",
            "-n",
            "dev",
            "node--2-k8s-db--0-eth0",
            "-o",
            "json",
        ],
        &["get", "wep", "-A", "-l", "app == 'web'", "-o", "name"],
        &["get", "wep", "-n", "prod", "node--1-k8s-agent-eth0"],
    ];
    for args in steps {
        let on_etcd = masked(&etcd_env, args, None);
        let on_kube = masked(&kube_env, args, None);
        assert_eq!(on_etcd, on_kube, "`netctl {}` differs", args.join(" "));
    }
}

/// The names on each page of a listing through the library, `page_size` at a time.
fn list_pages(
    server: &KubeApiServer,
    kind: netctl::resource::Kind,
    page_size: usize,
) -> Vec<Vec<String>> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let environment = netctl::config::Environment::from_pairs([(
            "KUBECONFIG",
            server.kubeconfig_path().display().to_string(),
        )]);
        let config = netctl::config::load_with_default(
            None,
            std::path::Path::new("/nonexistent"),
            &environment,
        )
        .unwrap();
        let settings = config.kubernetes(None, None).unwrap();
        let store = netctl::datastore::kube::KubeStore::connect(
            &settings,
            std::time::Duration::from_secs(10),
        )
        .await
        .unwrap();
        let mut options = netctl::datastore::ListOptions::new(kind);
        options.page_size = page_size;
        let mut pages = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = netctl::datastore::Datastore::list_page(&store, &options, token.as_deref())
                .await
                .unwrap();
            pages.push(
                page.items
                    .iter()
                    .map(|item| item.metadata.name.clone())
                    .collect::<Vec<_>>(),
            );
            match page.continue_token {
                Some(next) => token = Some(next),
                None => break,
            }
        }
        pages
    })
}

#[test]
fn profile_lists_read_namespaces_and_service_accounts_in_pages() {
    let server = KubeApiServer::start();
    for namespace in ["a", "b", "c"] {
        server
            .put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}));
    }
    for (namespace, account) in [("a", "x"), ("b", "y"), ("c", "z")] {
        server.put(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": namespace}}));
    }
    let pages = list_pages(&server, netctl::resource::Kind::Profile, 2);
    assert_eq!(
        pages,
        [
            vec!["projectcalico-default-allow", "kns.a"],
            vec!["kns.b", "kns.c"],
            vec!["ksa.a.x", "ksa.b.y"],
            vec!["ksa.c.z"],
        ]
    );
    let requests: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|request| {
            request.starts_with("GET /api/v1/namespaces?")
                || request.starts_with("GET /api/v1/serviceaccounts?")
        })
        .collect();
    assert_eq!(requests.len(), 4, "{requests:?}");
    assert!(requests[0].contains("limit=1"), "{requests:?}");
    assert!(
        requests[1].contains("limit=2") && requests[1].contains("continue="),
        "{requests:?}"
    );
    assert!(
        requests[2].starts_with("GET /api/v1/serviceaccounts?")
            && !requests[2].contains("continue="),
        "{requests:?}"
    );
    assert!(requests[3].contains("continue="), "{requests:?}");
    // Through the binary, every page is printed.
    let names = ok(run(&server, &["get", "profiles", "-o", "name"], None));
    assert_eq!(names.lines().count(), 7, "{names}");
}

#[test]
fn a_node_status_comes_from_its_annotations_and_pod_cidrs_and_updates_keep_it() {
    let server = KubeApiServer::start();
    server.put(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node1",
            "annotations": {"projectcalico.org/WireguardPublicKey": "jlkVyQYooZYzI2wFfNhSZez5eWh44yfq1wKVjLvSXgY="}},
        "spec": {"podCIDRs": ["192.168.1.0/24"]}
    }));
    // Upstream `node.go`: the public keys from annotations, the pod CIDRs from the Node's spec.
    netctl_snapshot!(run(&server, &["get", "node", "node1", "-o", "yaml"], None));
    // A label and an apply of the document (its status edited, which netctl ignores) keep the key.
    ok(run(&server, &["label", "node", "node1", "zone=a"], None));
    let yaml = ok(run(&server, &["get", "node", "node1", "-o", "yaml"], None));
    let edited = yaml.replace("jlkVyQ", "forged");
    ok(run(&server, &["apply", "-f", "-"], Some(&edited)));
    let node = server.get("v1", "nodes", "", "node1").unwrap();
    assert_eq!(
        node["metadata"]["annotations"]["projectcalico.org/WireguardPublicKey"],
        "jlkVyQYooZYzI2wFfNhSZez5eWh44yfq1wKVjLvSXgY="
    );
}
