//! IPAM fixtures for the `ipam` tests, written from upstream's formats: the same scenario stored in
//! real etcd (keys and JSON as `libcalico-go/lib/backend/model` writes them, v3.31's `null`
//! attributes or v3.32's left-out ones) and in the strict Kubernetes test server (the
//! `crd.projectcalico.org/v1` objects upstream's k8s backend writes, Kubernetes Nodes and Pods).
//!
//! A [`Scenario`] says what the cluster holds: pools, blocks with their allocations, handles, nodes
//! with tunnel addresses, workload endpoints (Pods on Kubernetes), ClusterInformation.

#![allow(dead_code)]

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::{EtcdServer, KubeApiServer, Netctl, Run};

pub const RESOURCES: &str = "/calico/resources/v3/projectcalico.org/";
pub const CLUSTER_INFORMATION: &str =
    "/calico/resources/v3/projectcalico.org/clusterinformations/default";
pub const GUID: &str = "4f0cde3c2f2a4f4e9c0f2b6f3c8f6d10";

/// One allocation of a block.
#[derive(Debug, Clone)]
pub struct Allocation {
    pub ordinal: usize,
    pub handle: Option<String>,
    pub owner: BTreeMap<String, String>,
    pub sequence: u64,
}

/// One block.
#[derive(Debug, Clone)]
pub struct Block {
    pub cidr: String,
    pub size: usize,
    pub affinity: Option<String>,
    pub allocations: Vec<Allocation>,
    /// Each allocation its own attribute (the CNI plugin's way), or all sharing the first (one
    /// `AutoAssign` of several addresses).
    pub shared_attribute: bool,
}

impl Block {
    pub fn new(cidr: &str, size: usize, affinity: Option<&str>) -> Block {
        Block {
            cidr: cidr.to_string(),
            size,
            affinity: affinity.map(str::to_string),
            allocations: Vec::new(),
            shared_attribute: false,
        }
    }

    pub fn allocate(
        mut self,
        ordinal: usize,
        handle: Option<&str>,
        owner: &[(&str, &str)],
    ) -> Block {
        let sequence = 1_754_042_400_000_000_000 + self.allocations.len() as u64;
        self.allocations.push(Allocation {
            ordinal,
            handle: handle.map(str::to_string),
            owner: owner
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
            sequence,
        });
        self
    }

    fn attributes(&self) -> Vec<&Allocation> {
        match self.shared_attribute {
            true => self.allocations.iter().take(1).collect(),
            false => self.allocations.iter().collect(),
        }
    }

    fn index_of(&self, position: usize) -> usize {
        if self.shared_attribute { 0 } else { position }
    }

    /// The etcd value, as v3.31 (`nulls = true`) or v3.32 writes it.
    pub fn etcd_json(&self, nulls: bool) -> String {
        let mut allocations = vec![Value::Null; self.size];
        let mut sequences = serde_json::Map::new();
        for (position, allocation) in self.allocations.iter().enumerate() {
            allocations[allocation.ordinal] = json!(self.index_of(position));
            sequences.insert(allocation.ordinal.to_string(), json!(allocation.sequence));
        }
        let unallocated: Vec<usize> = (0..self.size)
            .filter(|ordinal| allocations[*ordinal].is_null())
            .collect();
        let attributes: Vec<Value> = self
            .attributes()
            .into_iter()
            .map(|allocation| {
                let mut attribute = serde_json::Map::new();
                match (&allocation.handle, nulls) {
                    (Some(handle), _) => {
                        attribute.insert("handle_id".into(), json!(handle));
                    }
                    (None, true) => {
                        attribute.insert("handle_id".into(), Value::Null);
                    }
                    (None, false) => {}
                }
                match (allocation.owner.is_empty(), nulls) {
                    (false, _) => {
                        attribute.insert("secondary".into(), json!(allocation.owner));
                    }
                    (true, true) => {
                        attribute.insert("secondary".into(), Value::Null);
                    }
                    (true, false) => {}
                }
                Value::Object(attribute)
            })
            .collect();
        let sequence = 1_754_042_400_000_000_000 + self.allocations.len() as u64;
        format!(
            r#"{{"cidr":"{}","affinity":{},"allocations":{},"unallocated":{},"attributes":{},"sequenceNumber":{sequence},"sequenceNumberForAllocation":{},"deleted":false}}"#,
            self.cidr,
            self.affinity
                .as_ref()
                .map_or("null".to_string(), |affinity| format!("\"{affinity}\"")),
            json!(allocations),
            json!(unallocated),
            json!(attributes),
            Value::Object(sequences),
        )
    }

    pub fn etcd_key(&self) -> String {
        let version = if self.cidr.contains(':') { 6 } else { 4 };
        format!(
            "/calico/ipam/v2/assignment/ipv{version}/block/{}",
            self.cidr.replace('/', "-")
        )
    }

    /// The IPAMBlock object upstream's k8s backend writes.
    pub fn object(&self) -> Value {
        let etcd: Value = serde_json::from_str(&self.etcd_json(false)).unwrap();
        let mut spec = etcd.as_object().unwrap().clone();
        if spec["affinity"].is_null() {
            spec.remove("affinity");
        }
        spec.insert("strictAffinity".into(), json!(false));
        json!({
            "apiVersion": "crd.projectcalico.org/v1",
            "kind": "IPAMBlock",
            "metadata": {"name": self.cidr.replace(['.', ':', '/'], "-")},
            "spec": spec,
        })
    }
}

/// One handle and its counts.
#[derive(Debug, Clone)]
pub struct Handle {
    pub id: String,
    pub blocks: BTreeMap<String, i64>,
}

impl Handle {
    pub fn new(id: &str, blocks: &[(&str, i64)]) -> Handle {
        Handle {
            id: id.to_string(),
            blocks: blocks
                .iter()
                .map(|(block, count)| (block.to_string(), *count))
                .collect(),
        }
    }
}

/// A workload endpoint (a Pod on Kubernetes).
#[derive(Debug, Clone)]
pub struct Workload {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    pub addresses: Vec<String>,
}

/// A node and its tunnel addresses (spec field → address).
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub ipv4_ipip: Option<String>,
    pub ipv4_vxlan: Option<String>,
    pub ipv6_vxlan: Option<String>,
}

impl Node {
    pub fn new(name: &str) -> Node {
        Node {
            name: name.into(),
            ipv4_ipip: None,
            ipv4_vxlan: None,
            ipv6_vxlan: None,
        }
    }
}

/// A pool.
#[derive(Debug, Clone)]
pub struct Pool {
    pub name: String,
    pub cidr: String,
    pub block_size: u8,
    pub disabled: bool,
}

impl Pool {
    pub fn new(name: &str, cidr: &str, block_size: u8) -> Pool {
        Pool {
            name: name.into(),
            cidr: cidr.into(),
            block_size,
            disabled: false,
        }
    }
}

/// What a cluster holds.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    pub pools: Vec<Pool>,
    pub blocks: Vec<Block>,
    pub handles: Vec<Handle>,
    pub nodes: Vec<Node>,
    pub workloads: Vec<Workload>,
    pub calico_version: String,
    pub datastore_ready: bool,
}

impl Scenario {
    pub fn new() -> Scenario {
        Scenario {
            calico_version: "v3.31.3".into(),
            datastore_ready: true,
            ..Scenario::default()
        }
    }

    /// Stores the scenario in etcd; blocks as v3.31 writes them.
    pub fn seed_etcd(&self, etcd: &EtcdServer) {
        etcd.put(
            CLUSTER_INFORMATION,
            cluster_information(&self.calico_version, self.datastore_ready).to_string(),
        );
        for pool in &self.pools {
            etcd.put(
                &format!("{RESOURCES}ippools/{}", pool.name),
                json!({"kind": "IPPool", "apiVersion": "projectcalico.org/v3",
                    "metadata": {"name": pool.name, "uid": format!("uid-{}", pool.name), "creationTimestamp": "2026-08-01T10:00:00Z"},
                    "spec": {"cidr": pool.cidr, "blockSize": pool.block_size, "ipipMode": "Never", "vxlanMode": "Always",
                        "natOutgoing": true, "disabled": pool.disabled, "nodeSelector": "all()", "allowedUses": ["Workload", "Tunnel"]}})
                .to_string(),
            );
        }
        for block in &self.blocks {
            etcd.put(&block.etcd_key(), block.etcd_json(true));
        }
        for handle in &self.handles {
            etcd.put(
                &format!("/calico/ipam/v2/handle/{}", handle.id),
                json!({"block": handle.blocks, "deleted": false}).to_string(),
            );
        }
        for node in &self.nodes {
            let mut spec = json!({"bgp": {"ipv4Address": "192.168.0.1/24"}});
            if let Some(address) = &node.ipv4_ipip {
                spec["bgp"]["ipv4IPIPTunnelAddr"] = json!(address);
            }
            if let Some(address) = &node.ipv4_vxlan {
                spec["ipv4VXLANTunnelAddr"] = json!(address);
            }
            if let Some(address) = &node.ipv6_vxlan {
                spec["ipv6VXLANTunnelAddr"] = json!(address);
            }
            etcd.put(
                &format!("{RESOURCES}nodes/{}", node.name),
                json!({"kind": "Node", "apiVersion": "projectcalico.org/v3",
                    "metadata": {"name": node.name, "uid": format!("uid-{}", node.name)}, "spec": spec})
                .to_string(),
            );
        }
        for workload in &self.workloads {
            // Upstream doubles the dashes of each part of a WorkloadEndpoint name.
            let name = format!(
                "{}-k8s-{}-eth0",
                workload.node.replace('-', "--"),
                workload.pod.replace('-', "--")
            );
            let networks: Vec<String> = workload
                .addresses
                .iter()
                .map(|address| {
                    format!("{address}/{}", if address.contains(':') { 128 } else { 32 })
                })
                .collect();
            etcd.put(
                &format!("{RESOURCES}workloadendpoints/{}/{name}", workload.namespace),
                json!({"kind": "WorkloadEndpoint", "apiVersion": "projectcalico.org/v3",
                    "metadata": {"name": name, "namespace": workload.namespace},
                    "spec": {"orchestrator": "k8s", "node": workload.node, "pod": workload.pod,
                        "endpoint": "eth0", "containerID": "abc", "ipNetworks": networks,
                        "profiles": [format!("kns.{}", workload.namespace)], "interfaceName": "cali0123456789a"}})
                .to_string(),
            );
        }
    }

    /// Stores the scenario in the Kubernetes test server, as upstream's k8s backend writes it.
    pub fn seed_kube(&self, server: &KubeApiServer) {
        server.put(json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "ClusterInformation",
            "metadata": {"name": "default"},
            "spec": {"clusterGUID": GUID, "clusterType": "k8s,kdd,bgp", "calicoVersion": self.calico_version,
                "datastoreReady": self.datastore_ready}}));
        for pool in &self.pools {
            server.put(
                json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
                "metadata": {"name": pool.name},
                "spec": {"cidr": pool.cidr, "blockSize": pool.block_size, "vxlanMode": "Always",
                    "natOutgoing": true, "disabled": pool.disabled, "nodeSelector": "all()"}}),
            );
        }
        for block in &self.blocks {
            server.put(block.object());
        }
        for handle in &self.handles {
            server.put(
                json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMHandle",
                "metadata": {"name": handle.id.to_lowercase()},
                "spec": {"handleID": handle.id, "block": handle.blocks, "deleted": false}}),
            );
        }
        for node in &self.nodes {
            let mut annotations = json!({"projectcalico.org/IPv4Address": "192.168.0.1/24"});
            if let Some(address) = &node.ipv4_ipip {
                annotations["projectcalico.org/IPv4IPIPTunnelAddr"] = json!(address);
            }
            if let Some(address) = &node.ipv4_vxlan {
                annotations["projectcalico.org/IPv4VXLANTunnelAddr"] = json!(address);
            }
            if let Some(address) = &node.ipv6_vxlan {
                annotations["projectcalico.org/IPv6VXLANTunnelAddr"] = json!(address);
            }
            server.put(json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": node.name, "annotations": annotations}}));
        }
        for workload in &self.workloads {
            let ips: Vec<Value> = workload
                .addresses
                .iter()
                .map(|ip| json!({"ip": ip}))
                .collect();
            server.put(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": workload.pod, "namespace": workload.namespace},
                "spec": {"nodeName": workload.node, "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Running", "podIP": workload.addresses[0], "podIPs": ips}}));
        }
    }
}

pub fn cluster_information(version: &str, ready: bool) -> Value {
    json!({"kind": "ClusterInformation", "apiVersion": "projectcalico.org/v3",
        "metadata": {"name": "default", "uid": "8a0ce1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "creationTimestamp": "2026-08-01T10:00:00Z"},
        "spec": {"clusterGUID": GUID, "clusterType": "k8s,bgp", "calicoVersion": version, "datastoreReady": ready}})
}

/// netctl against etcd.
pub fn etcd_netctl(etcd: &EtcdServer, args: &[&str]) -> Run {
    let mut command = Netctl::new();
    command.config_file(&etcd.netctl_config_yaml()).args(args);
    command.run()
}

/// netctl against the Kubernetes test server.
pub fn kube_netctl(server: &KubeApiServer, args: &[&str]) -> Run {
    let mut command = Netctl::new();
    command
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", server.kubeconfig_path())
        .args(args);
    command.run()
}

/// Upstream's TestIPAM scenario (`calicoctl/tests/fv/ipam_test.go`) after its allocations: 5 IPv4
/// addresses of pool `ipam-test-v4` in one /26 block, 7 IPv6 addresses of `ipam-test-v6` in one
/// /122 block, 11 addresses of the block-size-29 pool `ipam-test-v4-b29` (one full block, three of
/// the next). The attributes are one `AutoAssign`'s: no handle, `note: reserved by ipam_test.go`.
pub fn test_ipam_scenario() -> Scenario {
    let note = [("note", "reserved by ipam_test.go")];
    let mut scenario = Scenario::new();
    scenario.pools = vec![
        Pool::new("ipam-test-v4", "10.65.0.0/16", 26),
        Pool::new("ipam-test-v6", "fd5f:abcd:64::/48", 122),
        Pool::new("ipam-test-v4-b29", "10.66.0.0/16", 29),
    ];
    let mut v4 = Block::new("10.65.79.0/26", 64, Some("host:test-host"));
    for ordinal in 0..5 {
        v4 = v4.allocate(ordinal, None, &note);
    }
    v4.shared_attribute = true;
    let mut v6 = Block::new(
        "fd5f:abcd:64:4f2c:ec1b:27b9:1989:77c0/122",
        64,
        Some("host:test-host"),
    );
    for ordinal in 0..7 {
        v6 = v6.allocate(ordinal, None, &note);
    }
    v6.shared_attribute = true;
    let mut full = Block::new("10.66.137.224/29", 8, Some("host:test-host"));
    for ordinal in 0..8 {
        full = full.allocate(ordinal, None, &[]);
    }
    full.shared_attribute = true;
    let mut partial = Block::new("10.66.137.232/29", 8, Some("host:test-host"));
    for ordinal in 0..3 {
        partial = partial.allocate(ordinal, None, &[]);
    }
    partial.shared_attribute = true;
    scenario.blocks = vec![v4, v6, full, partial];
    scenario
}

/// A cluster with exactly three problems (the issue's "Done when", after upstream's
/// TestIPAMCleanup): `10.66.12.1` leaked (its pod is gone), `10.66.12.9` in use by pod `db-0`
/// without an allocation, and handle `leaked-handle` that no block names. `10.66.12.0` is web-0's,
/// `10.66.12.2` node-1's IPIP tunnel address.
pub fn three_problems_scenario() -> Scenario {
    let mut scenario = Scenario::new();
    scenario.pools = vec![Pool::new("default-ipv4-ippool", "10.66.0.0/16", 26)];
    let pod = |name: &str| {
        vec![
            ("namespace".to_string(), "default".to_string()),
            ("node".to_string(), "node-1".to_string()),
            ("pod".to_string(), name.to_string()),
            (
                "timestamp".to_string(),
                "2026-08-01 10:00:00.000000001 +0000 UTC".to_string(),
            ),
        ]
    };
    let owner = |pairs: Vec<(String, String)>| -> Vec<(String, String)> { pairs };
    let web = owner(pod("web-0"));
    let gone = owner(pod("gone-0"));
    fn as_refs(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
        pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
    let block = Block::new("10.66.12.0/26", 64, Some("host:node-1"))
        .allocate(0, Some("k8s-pod-network.web0"), &as_refs(&web))
        .allocate(1, Some("k8s-pod-network.gone0"), &as_refs(&gone))
        .allocate(
            2,
            Some("ipip-tunnel-addr-node-1"),
            &[("node", "node-1"), ("type", "ipipTunnelAddress")],
        );
    scenario.blocks = vec![block];
    scenario.handles = vec![
        Handle::new("k8s-pod-network.web0", &[("10.66.12.0/26", 1)]),
        Handle::new("k8s-pod-network.gone0", &[("10.66.12.0/26", 1)]),
        Handle::new("ipip-tunnel-addr-node-1", &[("10.66.12.0/26", 1)]),
        Handle::new("leaked-handle", &[("10.65.79.0/26", 1)]),
    ];
    let mut node = Node::new("node-1");
    node.ipv4_ipip = Some("10.66.12.2".into());
    scenario.nodes = vec![node];
    scenario.workloads = vec![
        Workload {
            namespace: "default".into(),
            pod: "web-0".into(),
            node: "node-1".into(),
            addresses: vec!["10.66.12.0".into()],
        },
        Workload {
            namespace: "default".into(),
            pod: "db-0".into(),
            node: "node-1".into(),
            addresses: vec!["10.66.12.9".into()],
        },
    ];
    scenario
}
