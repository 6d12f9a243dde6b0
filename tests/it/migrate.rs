//! `netctl datastore migrate export | import`, the etcd → Kubernetes migration in upstream's file
//! format, against real etcd and the strict Kubernetes test server (both API groups): the export
//! is refused unlocked and for a node without a Kubernetes name; its file has upstream's three
//! parts, kind order and JSON keys, with nodes renamed (host endpoints and BGP peers too); a file
//! in upstream's format (written here after `calicoctl/tests/st/calicoctl/test_migrate.py` and
//! `migrateipam_test.go`) imports; a round trip reads back equal resource by resource and block by
//! block; bad files and a target holding Calico data are refused with nothing written; an import
//! killed with SIGKILL finishes when run again, every resource once.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::ipam_common::{GUID, RESOURCES, cluster_information, kube_netctl};
use crate::support::kube_api::{CALICO_GROUP, CALICO_V3_GROUP, RESOURCE_TYPES};
use crate::support::{
    CalicoGroups, EtcdServer, KubeApiServer, Netctl, Run, failed, ok, wait_for_exit,
};

/// Upstream's kind order (`allV3Resources` in `export.go`), as List kinds.
const LIST_KINDS: [&str; 17] = [
    "IPPoolList",
    "BGPPeerList",
    "TierList",
    "GlobalNetworkPolicyList",
    "StagedGlobalNetworkPolicyList",
    "GlobalNetworkSetList",
    "HostEndpointList",
    "KubeControllersConfigurationList",
    "NetworkPolicyList",
    "StagedNetworkPolicyList",
    "StagedKubernetesNetworkPolicyList",
    "NetworkSetList",
    "NodeList",
    "BGPConfigurationList",
    "FelixConfigurationList",
    "IPReservationList",
    "BGPFilterList",
];

/// The etcd side: upstream's test data (`calicoctl/tests/st/utils/data.py`) with the nodes named
/// as an etcd install names them and a Kubernetes name in their `k8s` orchestrator reference.
const RESOURCES_YAML: &str = "\
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: ippool-name2}
spec: {cidr: 'fed0:8001::/64', ipipMode: Never, vxlanMode: Never, blockSize: 123, allowedUses: [Workload, Tunnel], assignmentMode: Automatic, nodeSelector: all()}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: default-ipv4-ippool}
spec: {cidr: 10.66.0.0/16, blockSize: 26, ipipMode: Always, natOutgoing: true, nodeSelector: all()}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: bgppeer-name-123abc}
spec: {node: etcd-node-1, peerIP: 192.168.0.250, asNumber: 64514}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-dns}
spec: {selector: all(), types: [Egress], egress: [{action: Allow, protocol: UDP, destination: {ports: [53]}}]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: gns-1, labels: {role: external}}
spec: {nets: [10.0.0.0/8]}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: endpoint1, labels: {type: database}}
spec: {interfaceName: eth0, node: etcd-node-1, expectedIPs: [192.168.0.1]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: policy-1, namespace: default}
spec: {selector: app == 'web', types: [Ingress], ingress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: net-set2, namespace: test}
spec: {nets: [10.0.0.1/32, 11.0.0.0/16, 'feed:beef::1/128']}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: etcd-node-1}
spec:
  bgp: {ipv4Address: 192.168.0.1/24}
  orchRefs: [{nodeName: node-a, orchestrator: k8s}]
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {logSeverityScreen: Info, asNumber: 64512}
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: node.etcd-node-1}
spec: {logSeverityScreen: Debug, serviceLoadBalancerAggregation: Enabled}
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: node.etcd-node-1}
spec: {logSeverityScreen: Info, interfacePrefix: humperdink}
---
apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: ipreservation-name1}
spec: {reservedCIDRs: [10.0.1.0/24, 11.0.0.1/32]}
---
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: bgpfilter-name1}
spec: {exportV4: [{cidr: 10.0.0.0/16, matchOperator: Equal, action: Accept}]}
";

const BLOCK_KEY: &str = "/calico/ipam/v2/assignment/ipv4/block/10.66.12.0-26";

/// Stores the resources (through netctl), a `knp.default.` policy and a FelixConfiguration with
/// v1-spelled iptables actions (as old clusters hold them), and the IPAM of one node.
pub(crate) fn seed(etcd: &EtcdServer, handles: usize) {
    etcd.put(
        &format!("{RESOURCES}clusterinformations/default"),
        cluster_information("v3.32.1", true).to_string(),
    );
    let mut apply = Netctl::etcd(etcd);
    apply.args(["apply", "-f", "-"]).stdin(RESOURCES_YAML);
    ok(apply.run());
    etcd.put(
        &format!("{RESOURCES}networkpolicies/default/knp.default.deny-all"),
        json!({"kind": "NetworkPolicy", "apiVersion": "projectcalico.org/v3",
            "metadata": {"name": "knp.default.deny-all", "namespace": "default"},
            "spec": {"selector": "all()", "types": ["Ingress"], "tier": "default"}})
        .to_string(),
    );
    etcd.put(
        &format!("{RESOURCES}felixconfigurations/default"),
        json!({"kind": "FelixConfiguration", "apiVersion": "projectcalico.org/v3",
            "metadata": {"name": "default", "uid": "u-felix"},
            "spec": {"defaultEndpointToHostAction": "DROP", "iptablesFilterAllowAction": "ACCEPT"}})
        .to_string(),
    );
    etcd.put(
        "/calico/ipam/v2/host/etcd-node-1/ipv4/block/10.66.12.0-26",
        r#"{"state":"confirmed","deleted":false}"#,
    );
    let mut allocations = vec![Value::Null; 64];
    allocations[0] = json!(0);
    allocations[1] = json!(1);
    let unallocated: Vec<usize> = (2..64).collect();
    etcd.put(
        BLOCK_KEY,
        json!({"cidr": "10.66.12.0/26", "affinity": "host:etcd-node-1", "allocations": allocations,
            "unallocated": unallocated,
            "attributes": [
                {"handle_id": "ipip-tunnel-addr-etcd-node-1", "secondary": {"node": "etcd-node-1", "type": "ipipTunnelAddress"}},
                {"handle_id": "k8s-pod-network.0a1b2c", "secondary": {"namespace": "default", "node": "etcd-node-1", "pod": "web-0", "timestamp": "2026-08-01 10:00:00.000000001 +0000 UTC"}}
            ],
            "sequenceNumber": 7, "sequenceNumberForAllocation": {"0": 5, "1": 6}, "deleted": false})
        .to_string(),
    );
    etcd.put(
        "/calico/ipam/v2/handle/ipip-tunnel-addr-etcd-node-1",
        r#"{"block":{"10.66.12.0/26":1},"deleted":false}"#,
    );
    etcd.put(
        "/calico/ipam/v2/handle/k8s-pod-network.0a1b2c",
        r#"{"block":{"10.66.12.0/26":1},"deleted":false}"#,
    );
    for index in 0..handles {
        etcd.put(
            &format!("/calico/ipam/v2/handle/leaked-{index:05}"),
            r#"{"block":{"10.66.12.0/26":0},"deleted":false}"#,
        );
    }
    etcd.put("/calico/ipam/v2/config", r#"{"auto_allocate_blocks":true}"#);
}

fn etcd_netctl(etcd: &EtcdServer, args: &[&str]) -> Run {
    let mut command = Netctl::etcd(etcd);
    command.args(args);
    command.run()
}

/// The test server with the Kubernetes node the etcd node is called there.
pub(crate) fn kube_target(groups: CalicoGroups) -> KubeApiServer {
    let kube = KubeApiServer::start_serving(groups);
    kube.put(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}));
    kube
}

/// A CRD manifest laid out as the release's `manifests/crds.yaml` (and v3.32's
/// `manifests/v3_projectcalico_org.yaml`) are: one `apiextensions.k8s.io/v1`
/// CustomResourceDefinition per kind, named `<plural>.<group>`, with `names`, `scope` and one served
/// and stored version, for every Calico type of `group` the test server knows but those in
/// `leave_out`, and one CRD of another group (`policy.networking.k8s.io`, which upstream's files
/// carry too) that the import leaves alone. The schemas are left open
/// (`x-kubernetes-preserve-unknown-fields`): the test server checks objects against its own
/// schemas (`support/kube_crd.rs`).
pub(crate) fn crd_manifest_text(group: &str, leave_out: &[&str]) -> String {
    let mut text = String::from(
        "---\n# Source: crds/policy.networking.k8s.io_clusternetworkpolicies.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: clusternetworkpolicies.policy.networking.k8s.io\nspec:\n  group: policy.networking.k8s.io\n  names: {kind: ClusterNetworkPolicy, listKind: ClusterNetworkPolicyList, plural: clusternetworkpolicies, singular: clusternetworkpolicy}\n  scope: Cluster\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
    );
    let types = RESOURCE_TYPES
        .iter()
        .filter(|resource| resource.group == group && !leave_out.contains(&resource.kind));
    for resource in types {
        let (kind, plural, version) = (resource.kind, resource.plural, resource.version);
        let scope = if resource.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        };
        text.push_str(&format!(
            "---\n# Source: crds/{group}_{plural}.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{group}\nspec:\n  group: {group}\n  names:\n    kind: {kind}\n    listKind: {kind}List\n    plural: {plural}\n    singular: {singular}\n  scope: {scope}\n  versions:\n  - name: {version}\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n    served: true\n    storage: true\n",
            singular = kind.to_lowercase()
        ));
    }
    text
}

/// Writes the CRD manifest of `group` into the server's scratch directory; returns its path.
fn crds_manifest(kube: &KubeApiServer, group: &str) -> String {
    let path = kube.directory().join(format!("{group}-crds.yaml"));
    std::fs::write(&path, crd_manifest_text(group, &[])).unwrap();
    path.to_str().unwrap().to_string()
}

/// `datastore migrate import -f ARGS...` with the CRD manifest of the group the server serves
/// (`crd.projectcalico.org` when it serves neither).
fn import(kube: &KubeApiServer, args: &[&str]) -> Run {
    let group = match kube.serves(CALICO_V3_GROUP) && !kube.serves(CALICO_GROUP) {
        true => CALICO_V3_GROUP,
        false => CALICO_GROUP,
    };
    let crds = crds_manifest(kube, group);
    let mut command = Netctl::new();
    command
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .args(["datastore", "migrate", "import", "-f"])
        .args(args)
        .args(["--crds", &crds]);
    command.run()
}

/// Locks etcd and exports into `dir`/migration.txt; returns the path and what stderr said.
fn export(etcd: &EtcdServer, dir: &Path) -> (String, String) {
    ok(etcd_netctl(etcd, &["datastore", "migrate", "lock"]));
    let file = dir.join("migration.txt");
    let path = file.to_str().unwrap().to_string();
    let run = etcd_netctl(etcd, &["datastore", "migrate", "export", "-o", &path]);
    let stderr = run.stderr.clone();
    ok(run);
    (path, stderr)
}

/// etcd seeded with `handles` IPAM handles besides the node's, locked and exported into a new
/// scratch directory: the datastore, the directory (kept while the test runs) and the file.
fn seeded_export(handles: usize) -> (EtcdServer, tempfile::TempDir, String) {
    let etcd = EtcdServer::start();
    seed(&etcd, handles);
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = export(&etcd, dir.path());
    (etcd, dir, file)
}

/// The three parts of a migration file.
fn parts(text: &str) -> (Vec<Value>, Value, Value) {
    let parts: Vec<&str> = text.split("===\n").collect();
    assert_eq!(parts.len(), 3, "{text}");
    let lists = netctl::yaml::read_values(parts[0]).unwrap();
    (
        lists.into_iter().filter(|list| !list.is_null()).collect(),
        serde_json::from_str(parts[1]).unwrap(),
        serde_json::from_str(parts[2]).unwrap(),
    )
}

/// Every resource of the lists by `Kind/namespace/name`.
fn by_key(lists: &[Value]) -> BTreeMap<String, Value> {
    lists
        .iter()
        .flat_map(|list| list["items"].as_array().cloned().unwrap_or_default())
        .map(|item| {
            let key = format!(
                "{}/{}/{}",
                item["kind"].as_str().unwrap(),
                item["metadata"]["namespace"].as_str().unwrap_or(""),
                item["metadata"]["name"].as_str().unwrap()
            );
            (key, item)
        })
        .collect()
}

/// The IPAM part's entries by key.
fn ipam_by_key(ipam: &Value) -> BTreeMap<String, Value> {
    let mut entries = BTreeMap::new();
    for section in ["block_affinities", "blocks", "handles"] {
        for entry in ipam[section].as_array().cloned().unwrap_or_default() {
            entries.insert(
                entry["Key"].as_str().unwrap().to_string(),
                entry["Value"].clone(),
            );
        }
    }
    if !ipam["config"].is_null() {
        entries.insert(
            ipam["config"]["Key"].as_str().unwrap().to_string(),
            ipam["config"]["Value"].clone(),
        );
    }
    entries
}

/// Reads every imported resource and IPAM object back from the Kubernetes datastore (its backup
/// keys IPAM objects as the export does) and compares them with the file; the target is still
/// locked, as the import leaves it.
pub(crate) fn assert_reads_back_equal(kube: &KubeApiServer, file: &str, dir: &Path) {
    assert_reads_back(kube, file, dir, false);
}

/// As [`assert_reads_back_equal`], with ClusterInformation's `datastoreReady` as `ready`.
pub(crate) fn assert_reads_back(kube: &KubeApiServer, file: &str, dir: &Path, ready: bool) {
    let (lists, information, ipam) = parts(&std::fs::read_to_string(file).unwrap());
    for (key, item) in by_key(&lists) {
        let mut fields = key.split('/');
        let (kind, namespace, name) = (
            fields.next().unwrap(),
            fields.next().unwrap(),
            fields.next().unwrap(),
        );
        let mut args = vec!["get", kind, name, "-o", "json"];
        if !namespace.is_empty() {
            args.extend(["-n", namespace]);
        }
        let stored: Value = serde_json::from_str(&ok(kube_netctl(kube, &args))).unwrap();
        if kind == "Node" {
            // A Kubernetes node holds the Calico node's BGP address; its other fields are its own.
            assert_eq!(
                stored["spec"]["bgp"]["ipv4Address"], item["spec"]["bgp"]["ipv4Address"],
                "{key}"
            );
            continue;
        }
        // Every field of the file as it was; `apply`'s defaults may add fields the file lacks.
        for (field, value) in item["spec"].as_object().cloned().unwrap_or_default() {
            assert_eq!(stored["spec"][&field], value, "{key} spec.{field}");
        }
        assert_eq!(
            stored["metadata"]["labels"], item["metadata"]["labels"],
            "{key}"
        );
    }
    let backup = dir.join("read-back.jsonl");
    ok(kube_netctl(
        kube,
        &["datastore", "backup", "-o", backup.to_str().unwrap()],
    ));
    let mut stored_ipam = BTreeMap::new();
    let mut stored_information = Value::Null;
    for line in std::fs::read_to_string(&backup).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        if let Some(key) = record["ipam"]["Key"].as_str() {
            stored_ipam.insert(key.to_string(), record["ipam"]["Value"].clone());
        }
        if record["resource"]["kind"] == "ClusterInformation" {
            stored_information = record["resource"].clone();
        }
    }
    let expected = ipam_by_key(&ipam);
    assert_eq!(
        stored_ipam.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (key, value) in &expected {
        let stored = &stored_ipam[key];
        for field in value.as_object().unwrap().keys() {
            // `affinity_claim_time` and friends the source did not have stay absent or null.
            if value[field].is_null() {
                continue;
            }
            assert_eq!(stored[field], value[field], "{key} field {field}");
        }
    }
    assert_eq!(
        stored_information["spec"]["clusterGUID"],
        information["spec"]["clusterGUID"]
    );
    assert_eq!(
        stored_information["spec"]["calicoVersion"],
        information["spec"]["calicoVersion"]
    );
    assert_eq!(stored_information["spec"]["datastoreReady"], ready);
}

#[test]
fn an_export_is_refused_unlocked_and_for_a_node_without_a_kubernetes_name() {
    let etcd = EtcdServer::start();
    seed(&etcd, 0);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.txt");
    let path = file.to_str().unwrap();
    let refused = failed(etcd_netctl(
        &etcd,
        &["datastore", "migrate", "export", "-o", path],
    ));
    assert!(
        refused.contains("the datastore is not locked: the migration export needs it locked"),
        "{refused}"
    );
    assert!(
        refused.contains("netctl datastore migrate lock"),
        "{refused}"
    );
    ok(etcd_netctl(&etcd, &["datastore", "migrate", "lock"]));
    etcd.put(
        &format!("{RESOURCES}nodes/openstack-1"),
        json!({"kind": "Node", "apiVersion": "projectcalico.org/v3",
            "metadata": {"name": "openstack-1"},
            "spec": {"orchRefs": [{"nodeName": "openstack-1", "orchestrator": "openstack"}]}})
        .to_string(),
    );
    let refused = failed(etcd_netctl(
        &etcd,
        &["datastore", "migrate", "export", "-o", path],
    ));
    assert!(
        refused.contains("node `openstack-1` has no Kubernetes node name"),
        "{refused}"
    );
    assert!(refused.contains("orchRefs"), "{refused}");
    assert!(!file.exists());
    assert!(!file.with_extension("partial").exists());

    // A Kubernetes datastore is no source of a migration.
    let kube = kube_target(CalicoGroups::V1);
    let refused = failed(kube_netctl(&kube, &["datastore", "migrate", "export"]));
    assert!(
        refused.contains("a migration export reads an etcdv3 datastore"),
        "{refused}"
    );
}

/// The file is upstream's: its kind order and separators, cleaned metadata, ClusterInformation as
/// JSON, the IPAM keys; nodes renamed where upstream renames them and in host endpoints and BGP
/// peers; `knp.default.` policies, WorkloadEndpoints and Profiles left out, and said.
#[test]
fn the_export_is_upstreams_format_with_nodes_renamed() {
    let etcd = EtcdServer::start();
    seed(&etcd, 0);
    let dir = tempfile::tempdir().unwrap();
    let (file, stderr) = export(&etcd, dir.path());
    assert!(
        stderr.contains("beyond upstream") && stderr.contains("2 HostEndpoint(s) and BGPPeer(s)"),
        "{stderr}"
    );
    assert!(stderr.contains("knp.default.") && stderr.contains("WorkloadEndpoints"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text.matches("\n===\n").count() + usize::from(text.starts_with("===\n")),
        2
    );
    let (lists, information, ipam) = parts(&text);
    let kinds: Vec<&str> = lists
        .iter()
        .map(|list| list["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, LIST_KINDS);
    assert_eq!(text.matches("---\n").count(), LIST_KINDS.len());
    for list in &lists {
        assert_eq!(list["apiVersion"], "projectcalico.org/v3");
        assert!(list["items"].is_array(), "{list}");
        assert!(list["metadata"]["resourceVersion"].is_string(), "{list}");
    }
    let resources = by_key(&lists);
    let endpoint = &resources["HostEndpoint//endpoint1"];
    assert_eq!(endpoint["spec"]["node"], "node-a");
    assert_eq!(endpoint["metadata"]["creationTimestamp"], Value::Null);
    assert!(endpoint["metadata"].get("uid").is_none());
    assert!(endpoint["metadata"].get("resourceVersion").is_none());
    assert_eq!(
        resources["BGPPeer//bgppeer-name-123abc"]["spec"]["node"],
        "node-a"
    );
    assert!(resources.contains_key("Node//node-a"));
    assert!(resources.contains_key("BGPConfiguration//node.node-a"));
    assert!(resources.contains_key("FelixConfiguration//node.node-a"));
    let felix = &resources["FelixConfiguration//default"]["spec"];
    assert_eq!(felix["defaultEndpointToHostAction"], "Drop");
    assert_eq!(felix["iptablesFilterAllowAction"], "Accept");
    assert!(resources.contains_key("NetworkPolicy/default/policy-1"));
    assert!(!resources.keys().any(|key| key.contains("knp.default.")));
    assert!(
        !resources
            .keys()
            .any(|key| key.starts_with("WorkloadEndpoint")
                || key.starts_with("Profile")
                || key.starts_with("ClusterInformation"))
    );

    assert_eq!(information["kind"], "ClusterInformation");
    assert_eq!(information["spec"]["clusterGUID"], GUID);
    assert_eq!(information["spec"]["datastoreReady"], false);
    let first_keys: Vec<&str> = ["block_affinities", "blocks", "handles", "config"]
        .into_iter()
        .filter(|key| ipam.get(*key).is_some())
        .collect();
    assert_eq!(
        first_keys,
        ["block_affinities", "blocks", "handles", "config"]
    );
    assert_eq!(
        ipam["block_affinities"][0]["Key"],
        "/calico/ipam/v2/host/node-a/ipv4/block/10.66.12.0-26"
    );
    assert_eq!(ipam["block_affinities"][0]["TTL"], 0);
    let block = &ipam["blocks"][0];
    assert_eq!(block["Key"], BLOCK_KEY);
    assert_eq!(block["Value"]["affinity"], "host:node-a");
    assert_eq!(
        block["Value"]["attributes"][0]["handle_id"],
        "ipip-tunnel-addr-node-a"
    );
    assert_eq!(
        block["Value"]["attributes"][0]["secondary"]["node"],
        "node-a"
    );
    assert_eq!(
        block["Value"]["attributes"][1]["secondary"]["node"],
        "node-a"
    );
    assert_eq!(
        block["Value"]["attributes"][1]["handle_id"],
        "k8s-pod-network.0a1b2c"
    );
    let handles: Vec<&str> = ipam["handles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|handle| handle["Key"].as_str().unwrap())
        .collect();
    assert_eq!(
        handles,
        [
            "/calico/ipam/v2/handle/ipip-tunnel-addr-node-a",
            "/calico/ipam/v2/handle/k8s-pod-network.0a1b2c"
        ]
    );
    assert_eq!(ipam["config"]["Key"], "/calico/ipam/v2/config");
    assert_eq!(ipam["config"]["Value"]["auto_allocate_blocks"], true);
    // The export only reads: etcd still holds the etcd names.
    assert!(etcd.get(&format!("{RESOURCES}nodes/etcd-node-1")).is_some());
}

/// The requests that change something (access reviews only ask).
fn writes(kube: &KubeApiServer) -> Vec<String> {
    kube.requests()
        .into_iter()
        .filter(|request| {
            ["POST", "PUT", "PATCH", "DELETE"]
                .iter()
                .any(|method| request.starts_with(method))
                && !request.contains("selfsubjectaccessreviews")
        })
        .collect()
}

fn round_trip(groups: CalicoGroups) {
    let (_etcd, dir, file) = seeded_export(0);
    let kube = kube_target(groups);

    // The dry run writes nothing.
    let out = ok(import(&kube, &[&file, "--dry-run"]));
    assert!(
        out.contains("would create HostEndpoint(endpoint1)"),
        "{out}"
    );
    assert!(out.contains("would be created"), "{out}");
    assert!(writes(&kube).is_empty(), "{:?}", writes(&kube));

    let out = ok(import(&kube, &[&file]));
    assert!(out.contains("copied clusterGUID"), "{out}");
    assert!(out.contains("netctl datastore migrate unlock"), "{out}");
    assert_reads_back_equal(&kube, &file, dir.path());
    // The host endpoint is still attached to its (renamed) node.
    let endpoint = ok(kube_netctl(
        &kube,
        &["get", "hostendpoint", "endpoint1", "-o", "json"],
    ));
    assert!(endpoint.contains("\"node\": \"node-a\""), "{endpoint}");

    // Run again, it finds everything in place and writes nothing new.
    let out = ok(import(&kube, &[&file]));
    assert!(out.contains("finishing an import of this file"), "{out}");
    assert!(out.contains("0 created, 0 updated"), "{out}");
}

#[test]
fn a_round_trip_into_the_v1_group_reads_back_equal() {
    round_trip(CalicoGroups::V1);
}

#[test]
fn a_round_trip_into_the_native_v3_group_reads_back_equal() {
    round_trip(CalicoGroups::V3);
}

/// Into a cluster Calico was never installed on, the import installs the CRDs of the export's
/// release — the release's own file, read from its URL (here through `--mirror-dir`, as an
/// air-gapped site serves it) — server-side, before any Calico write, in the group the target
/// uses: `crd.projectcalico.org/v1`, or `projectcalico.org/v3` when CALICO_API_GROUP chooses it.
/// The test server serves the kinds once their CRDs exist; everything reads back equal.
#[test]
fn the_import_installs_the_crds_of_the_exports_release_into_an_empty_cluster() {
    let (_etcd, dir, file) = seeded_export(0);
    for (group, api_group, manifest) in [
        (CALICO_GROUP, "crd.projectcalico.org/v1", "crds.yaml"),
        (
            CALICO_V3_GROUP,
            "projectcalico.org/v3",
            "v3_projectcalico_org.yaml",
        ),
    ] {
        let kube = kube_target(CalicoGroups::None);
        let mirror = kube.directory().join("mirror");
        let release =
            mirror.join("raw.githubusercontent.com/projectcalico/calico/v3.32.1/manifests");
        std::fs::create_dir_all(&release).unwrap();
        std::fs::write(release.join(manifest), crd_manifest_text(group, &[])).unwrap();
        let run = |extra: &[&str]| {
            let mut command = Netctl::new();
            command
                .env("DATASTORE_TYPE", "kubernetes")
                .env("KUBECONFIG", kube.kubeconfig_path())
                .env("CALICO_API_GROUP", api_group)
                .args([
                    "datastore",
                    "migrate",
                    "import",
                    "-f",
                    &file,
                    "--mirror-dir",
                ])
                .arg(&mirror)
                .args(extra);
            command.run()
        };

        // The dry run says what it would install and sends nothing.
        let out = ok(run(&["--dry-run"]));
        assert!(
            out.contains(&format!(
                "would install (server-side apply) 22 CRD(s) of `{api_group}`"
            )),
            "{out}"
        );
        assert!(out.contains(manifest), "{out}");
        assert!(writes(&kube).is_empty(), "{:?}", writes(&kube));
        assert!(!kube.serves(group));

        let out = ok(run(&[]));
        assert!(
            out.contains(&format!("installed 22 CRD(s) of `{api_group}`")),
            "{out}"
        );
        assert!(out.contains("the API server serves them"), "{out}");
        let written = writes(&kube);
        let first_calico = written
            .iter()
            .position(|request| request.contains(&format!("/apis/{group}/")))
            .expect("Calico writes");
        let crds: Vec<&String> = written
            .iter()
            .filter(|request| request.contains("/customresourcedefinitions/"))
            .collect();
        assert_eq!(crds.len(), 22, "{written:?}");
        assert!(
            written[..first_calico]
                .iter()
                .filter(|request| request.contains("/customresourcedefinitions/"))
                .count()
                == 22,
            "{written:?}"
        );
        assert!(
            crds.iter().all(|request| request.starts_with("PATCH ")
                && request.contains("fieldManager=netctl")
                && request.contains("force=true")),
            "{crds:?}"
        );
        // Only the Calico group's CRDs: the other group's stays out.
        assert!(
            !written
                .iter()
                .any(|request| request.contains("clusternetworkpolicies"))
        );
        assert!(kube.serves(group));
        assert_reads_back_equal(&kube, &file, dir.path());
    }
}

/// A file that is no CRD manifest, or one that does not define a kind the export holds, is
/// refused with the reason and the fix before anything is written; without CRDs to install
/// (`--skip-crds`), a cluster that does not serve them is refused.
#[test]
fn a_crd_manifest_that_does_not_fit_the_export_is_refused_before_any_write() {
    let (_etcd, dir, file) = seeded_export(0);
    let kube = kube_target(CalicoGroups::None);
    let not_crds = dir.path().join("calico.yaml");
    std::fs::write(
        &not_crds,
        format!(
            "{}---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: calico-node, namespace: kube-system}}\nspec: {{}}\n",
            crd_manifest_text(CALICO_GROUP, &[])
        ),
    )
    .unwrap();
    let lacking = dir.path().join("old-crds.yaml");
    std::fs::write(
        &lacking,
        crd_manifest_text(CALICO_GROUP, &["HostEndpoint", "BGPFilter"]),
    )
    .unwrap();
    let cases = [
        (
            not_crds.to_str().unwrap(),
            "is not a CRD manifest: document 24 is `apps/v1` `DaemonSet`".to_string(),
        ),
        (
            lacking.to_str().unwrap(),
            "does not define `BGPFilter`, `HostEndpoint` in `crd.projectcalico.org/v1`, which the export holds".to_string(),
        ),
    ];
    for (crds, reason) in cases {
        let mut command = Netctl::new();
        command
            .env("DATASTORE_TYPE", "kubernetes")
            .env("KUBECONFIG", kube.kubeconfig_path())
            .args([
                "datastore",
                "migrate",
                "import",
                "-f",
                &file,
                "--crds",
                crds,
            ]);
        let refused = failed(command.run());
        assert!(refused.contains(&reason), "{refused}");
        assert!(
            refused.contains("hint: pass the release's CRD manifest"),
            "{refused}"
        );
        assert!(writes(&kube).is_empty(), "{:?}", writes(&kube));
    }
    let refused = failed(kube_netctl(
        &kube,
        &["datastore", "migrate", "import", "-f", &file, "--skip-crds"],
    ));
    assert!(
        refused.contains("does not serve the Calico CRDs"),
        "{refused}"
    );
    assert!(writes(&kube).is_empty(), "{:?}", writes(&kube));
}

/// A file as upstream's export prints it (`sigs.k8s.io/yaml` of each List, `json.MarshalIndent`
/// of ClusterInformation and of the IPAM struct), with upstream's test data: `node5` whose
/// Kubernetes name is `node4`, its BGP and Felix configurations already renamed, a tunnel handle
/// and its block as `migrateipam_test.go` has them after renaming.
const UPSTREAM_EXPORT: &str = r#"apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata:
    creationTimestamp: null
    name: ippool-name2
  spec:
    allowedUses:
    - Workload
    - Tunnel
    assignmentMode: Automatic
    blockSize: 123
    cidr: fed0:8001::/64
    ipipMode: Never
    nodeSelector: all()
    vxlanMode: Never
kind: IPPoolList
metadata:
  resourceVersion: "1043"
---
apiVersion: projectcalico.org/v3
items: []
kind: BGPPeerList
metadata:
  resourceVersion: "1043"
---
apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: HostEndpoint
  metadata:
    creationTimestamp: null
    labels:
      type: database
    name: endpoint1
  spec:
    interfaceName: eth0
    node: node4
    profiles:
    - prof1
    - prof2
kind: HostEndpointList
metadata:
  resourceVersion: "1043"
---
apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: NetworkSet
  metadata:
    creationTimestamp: null
    name: net-set2
    namespace: test
  spec:
    nets:
    - 10.0.0.1/32
    - 11.0.0.0/16
kind: NetworkSetList
metadata:
  resourceVersion: "1043"
---
apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: Node
  metadata:
    creationTimestamp: null
    name: node4
  spec:
    bgp:
      ipv4Address: 1.2.3.4/24
      ipv6Address: aa:bb:cc::ff/120
    orchRefs:
    - nodeName: node4
      orchestrator: k8s
  status: {}
kind: NodeList
metadata:
  resourceVersion: "1043"
---
apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata:
    creationTimestamp: null
    name: node.node4
  spec:
    logSeverityScreen: Debug
    serviceLoadBalancerAggregation: Enabled
kind: BGPConfigurationList
metadata:
  resourceVersion: "1043"
---
apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: FelixConfiguration
  metadata:
    creationTimestamp: null
    name: node.node4
  spec:
    defaultEndpointToHostAction: Accept
    interfacePrefix: humperdink
    ipipMTU: 1521
    iptablesFilterAllowAction: Return
    iptablesMangleAllowAction: Accept
    logSeverityScreen: Info
kind: FelixConfigurationList
metadata:
  resourceVersion: "1043"
---
apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: IPReservation
  metadata:
    creationTimestamp: null
    name: ipreservation-name1
  spec:
    reservedCIDRs:
    - 10.0.1.0/24
    - 11.0.0.1/32
kind: IPReservationList
metadata:
  resourceVersion: "1043"
---
===
{
  "kind": "ClusterInformation",
  "apiVersion": "projectcalico.org/v3",
  "metadata": {
    "name": "default",
    "uid": "4c1f0a52-3b3e-4d1e-9b0e-5b6f4f8d2a11",
    "resourceVersion": "1040",
    "creationTimestamp": "2026-08-01T10:00:00Z"
  },
  "spec": {
    "clusterGUID": "b2f41a6c9e8d4c3f8a7b6c5d4e3f2a10",
    "clusterType": "typha,kdd,k8s,operator,bgp",
    "calicoVersion": "v3.32.1",
    "datastoreReady": false
  }
}
===
{
  "block_affinities": [
    {
      "Key": "/calico/ipam/v2/host/node4/ipv4/block/192.168.201.0-26",
      "Value": {
        "state": "confirmed",
        "deleted": false
      },
      "TTL": 0
    }
  ],
  "blocks": [
    {
      "Key": "/calico/ipam/v2/assignment/ipv4/block/192.168.201.0-26",
      "Value": {
        "cidr": "192.168.201.0/26",
        "affinity": "host:node4",
        "allocations": [0, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null],
        "unallocated": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63],
        "attributes": [
          {
            "handle_id": "ipip-tunnel-addr-node4",
            "secondary": {
              "node": "node4",
              "type": "ipipTunnelAddress"
            },
            "alternateOwnerAttrs": {
              "node": "node4",
              "type": "ipipTunnelAddress"
            }
          }
        ],
        "sequenceNumber": 3,
        "sequenceNumberForAllocation": {
          "0": 2
        },
        "deleted": false
      },
      "TTL": 0
    }
  ],
  "handles": [
    {
      "Key": "/calico/ipam/v2/handle/ipip-tunnel-addr-node4",
      "Value": {
        "block": {
          "192.168.201.0/26": 1
        },
        "deleted": false
      },
      "TTL": 0
    }
  ],
  "config": {
    "Key": "/calico/ipam/v2/config",
    "Value": {
      "auto_allocate_blocks": true
    },
    "TTL": 0
  }
}
"#;

#[test]
fn a_file_in_upstreams_format_imports_into_both_api_groups() {
    for groups in [CalicoGroups::V1, CalicoGroups::V3] {
        let kube = KubeApiServer::start_serving(groups);
        kube.put(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node4"}}));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("upstream-migration.txt");
        std::fs::write(&file, UPSTREAM_EXPORT).unwrap();
        let path = file.to_str().unwrap();
        let out = ok(import(&kube, &[path]));
        assert!(
            out.contains("IPAM: 4 object(s) in the export, 4 created"),
            "{out}"
        );
        assert_reads_back_equal(&kube, path, dir.path());
        let information = ok(kube_netctl(
            &kube,
            &["get", "clusterinformation", "default", "-o", "json"],
        ));
        assert!(
            information.contains("b2f41a6c9e8d4c3f8a7b6c5d4e3f2a10"),
            "{information}"
        );
    }
}

/// Bad files and a target that holds Calico data are refused with the reason and the fix, and
/// nothing is written.
#[test]
fn bad_files_and_a_target_with_calico_data_are_refused_before_any_write() {
    let kube = kube_target(CalicoGroups::V1);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let two_parts = write("two.txt", UPSTREAM_EXPORT.rsplit_once("===\n").unwrap().0);
    let unknown = write(
        "unknown.txt",
        &UPSTREAM_EXPORT.replace("kind: IPReservationList", "kind: FrobnicatorList"),
    );
    let profile = write(
        "profile.txt",
        &UPSTREAM_EXPORT.replacen(
            "apiVersion: projectcalico.org/v3\nitems: []\nkind: BGPPeerList",
            "apiVersion: projectcalico.org/v3\nitems:\n- {apiVersion: projectcalico.org/v3, kind: Profile, metadata: {name: kns.default}, spec: {}}\nkind: ProfileList",
            1,
        ),
    );
    let nameless = write(
        "nameless.txt",
        &UPSTREAM_EXPORT.replace("orchestrator: k8s", "orchestrator: openstack"),
    );
    let cases = [
        (two_parts.as_str(), "has 2 part(s) separated by `===` lines"),
        (unknown.as_str(), "FrobnicatorList"),
        (
            profile.as_str(),
            "kind `Profile` is not part of a migration export",
        ),
        (
            nameless.as_str(),
            "node `node4` has no Kubernetes node name",
        ),
    ];
    for (path, reason) in cases {
        let refused = failed(import(&kube, &[path]));
        assert!(refused.contains(reason), "{path}: {refused}");
        assert!(refused.contains("hint:"), "{path}: {refused}");
    }

    // A target with Calico data of its own.
    kube.put(
        json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
        "metadata": {"name": "existing-pool"},
        "spec": {"cidr": "10.99.0.0/16", "blockSize": 26, "nodeSelector": "all()"}}),
    );
    let good = write("good.txt", UPSTREAM_EXPORT);
    let refused = failed(import(&kube, &[&good]));
    assert!(
        refused
            .contains("already holds Calico data that is not this export's: IPPool(existing-pool)"),
        "{refused}"
    );
    assert!(writes(&kube).is_empty(), "{:?}", writes(&kube));

    // Nor does an import go into etcd.
    let etcd = EtcdServer::start();
    let refused = failed(etcd_netctl(
        &etcd,
        &["datastore", "migrate", "import", "-f", &good],
    ));
    assert!(
        refused.contains("a migration export is imported into the Kubernetes datastore"),
        "{refused}"
    );
    assert!(etcd.dump_prefix_bytes("/calico/").is_empty());
}

/// A failed import is never reported as success, and run again it finishes; an import killed with
/// SIGKILL half way through its IPAM objects finishes when run again, every object once.
#[test]
fn a_stopped_or_killed_import_finishes_when_run_again() {
    let (_etcd, dir, file) = seeded_export(400);

    // Handles cannot be written: the import fails after the resources, and says so.
    let kube = kube_target(CalicoGroups::V1);
    kube.forbid(Some("POST"), "/apis/crd.projectcalico.org/v1/ipamhandles");
    let run = import(&kube, &[&file]);
    let refused = failed(run);
    assert!(!refused.contains("Successfully"), "{refused}");
    kube.allow_all();
    ok(import(&kube, &[&file]));
    assert_reads_back_equal(&kube, &file, dir.path());

    // SIGKILL once the first IPAM handle is written, then again.
    let kube = kube_target(CalicoGroups::V1);
    let mut command = Netctl::new();
    command
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", kube.kubeconfig_path())
        .args(["datastore", "migrate", "import", "-f", &file, "--crds"])
        .arg(crds_manifest(&kube, CALICO_GROUP));
    let mut child = command.spawn();
    let started = std::time::Instant::now();
    loop {
        let handles = kube
            .requests()
            .iter()
            .filter(|request| {
                request.starts_with("POST /apis/crd.projectcalico.org/v1/ipamhandles")
            })
            .count();
        if handles >= 20 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import ended before it could be killed"
        );
        assert!(started.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    let killed = wait_for_exit(child, Duration::from_secs(10));
    assert!(!killed.stdout.contains("IPAM: 402"), "{killed:?}");
    let stored = kube.names("crd.projectcalico.org/v1", "ipamhandles").len();
    assert!(stored > 0 && stored < 402, "{stored}");
    let out = ok(import(&kube, &[&file]));
    assert!(out.contains("finishing an import of this file"), "{out}");
    assert_eq!(
        kube.names("crd.projectcalico.org/v1", "ipamhandles").len(),
        402
    );
    assert_reads_back_equal(&kube, &file, dir.path());
}
