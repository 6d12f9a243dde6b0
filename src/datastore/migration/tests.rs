//! The renaming and file checks of the migration, on upstream's cases
//! (`calicoctl/calicoctl/commands/datastore/migrate/migrateipam_test.go`, `export_test.go`).

use std::collections::BTreeMap;

use serde_json::json;

use super::file::parse;
use super::*;
use crate::ipam::{AffinityType, AllocationAttribute, Cidr};

fn names() -> NodeNames {
    NodeNames::from_pairs([("etcdNodeName".to_string(), "k8sNodeName".to_string())])
}

fn owner(node: &str) -> Option<BTreeMap<String, String>> {
    Some(BTreeMap::from([
        ("node".to_string(), node.to_string()),
        ("type".to_string(), "ipipTunnelAddress".to_string()),
    ]))
}

#[test]
fn a_block_affinity_and_handle_get_the_kubernetes_node_name() {
    let cidr: Cidr = "192.168.201.0/26".parse().unwrap();
    let mut block = AllocationBlock {
        cidr: Some(cidr),
        affinity: Some("host:etcdNodeName".into()),
        attributes: vec![AllocationAttribute {
            handle_id: Some("ipip-tunnel-addr-etcdNodeName".into()),
            active_owner: owner("etcdNodeName"),
            alternate_owner: owner("etcdNodeName"),
            released_at: None,
        }],
        ..AllocationBlock::default()
    };
    names().rename_block(&mut block);
    assert_eq!(block.affinity.as_deref(), Some("host:k8sNodeName"));
    let attributes = &block.attributes[0];
    assert_eq!(
        attributes.handle_id.as_deref(),
        Some("ipip-tunnel-addr-k8sNodeName")
    );
    assert_eq!(attributes.owner("node"), Some("k8sNodeName"));
    assert_eq!(attributes.alternate_owner, owner("k8sNodeName"));

    let mut affinity = BlockAffinity {
        cidr,
        node: "etcdNodeName".into(),
        affinity_type: AffinityType::Host,
        state: "confirmed".into(),
        deleted: false,
    };
    names().rename_affinity(&mut affinity);
    assert_eq!(affinity.node, "k8sNodeName");

    let mut handle = IpamHandle::new(
        "ipip-tunnel-addr-etcdNodeName",
        [("192.168.201.0/26".to_string(), 1)],
    );
    names().rename_handle(&mut handle);
    assert_eq!(handle.id, "ipip-tunnel-addr-k8sNodeName");
    let mut pod = IpamHandle::new("k8s-pod-network.abc", []);
    names().rename_handle(&mut pod);
    assert_eq!(pod.id, "k8s-pod-network.abc");
}

#[test]
fn the_same_name_changes_nothing() {
    let same = NodeNames::from_pairs([("etcdNodeName".to_string(), "etcdNodeName".to_string())]);
    let mut block = AllocationBlock {
        affinity: Some("host:etcdNodeName".into()),
        ..AllocationBlock::default()
    };
    same.rename_block(&mut block);
    assert_eq!(block.affinity.as_deref(), Some("host:etcdNodeName"));
    assert_eq!(same.renamed(), 0);
}

#[test]
fn node_configurations_host_endpoints_and_peers_are_renamed() {
    let mut felix = Resource::new(Kind::FelixConfiguration, "node.etcdNodeName");
    assert!(names().rename_resource(&mut felix));
    assert_eq!(felix.metadata.name, "node.k8sNodeName");
    let mut global = Resource::new(Kind::BgpConfiguration, "default");
    assert!(!names().rename_resource(&mut global));
    let mut endpoint = Resource::new(Kind::HostEndpoint, "eth0");
    endpoint.spec = json!({"node": "etcdNodeName", "interfaceName": "eth0"});
    assert!(names().rename_resource(&mut endpoint));
    assert_eq!(endpoint.spec["node"], "k8sNodeName");
    let mut peer = Resource::new(Kind::BgpPeer, "peer");
    peer.spec = json!({"node": "unknown", "peerIP": "10.0.0.1"});
    assert!(!names().rename_resource(&mut peer));
    let mut node = Resource::new(Kind::Node, "etcdNodeName");
    node.spec = json!({"orchRefs": [{"orchestrator": "k8s", "nodeName": "k8sNodeName"}]});
    assert_eq!(kubernetes_name(&node).as_deref(), Some("k8sNodeName"));
    assert!(names().rename_resource(&mut node));
    assert_eq!(node.metadata.name, "k8sNodeName");
}

#[test]
fn iptables_actions_take_the_v3_spelling() {
    let mut felix = Resource::new(Kind::FelixConfiguration, "default");
    felix.spec = json!({
        "defaultEndpointToHostAction": "DROP",
        "iptablesFilterAllowAction": "ACCEPT",
        "iptablesMangleAllowAction": "Return",
        "iptablesFilterDenyAction": "Drop",
    });
    convert_iptables_fields(&mut felix);
    assert_eq!(
        felix.spec,
        json!({
            "defaultEndpointToHostAction": "Drop",
            "iptablesFilterAllowAction": "Accept",
            "iptablesMangleAllowAction": "Return",
            "iptablesFilterDenyAction": "Drop",
        })
    );
}

const INFORMATION: &str = r#"{"kind": "ClusterInformation", "apiVersion": "projectcalico.org/v3", "metadata": {"name": "default"}, "spec": {"clusterGUID": "abc", "calicoVersion": "v3.32.1", "datastoreReady": false}}
"#;

fn refusal(text: &str) -> String {
    parse(text, "m.txt").unwrap_err().to_string()
}

#[test]
fn a_file_without_its_three_parts_is_refused() {
    assert!(
        refusal("apiVersion: projectcalico.org/v3\nitems: []\nkind: IPPoolList\n")
            .contains("has 1 part(s)")
    );
    let two = format!("---\n{SEPARATOR}{INFORMATION}");
    assert!(refusal(&two).contains("has 2 part(s)"));
}

#[test]
fn a_kind_an_export_does_not_hold_is_refused() {
    let text = format!(
        "apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {{name: p}}\nspec: {{}}\n{SEPARATOR}{INFORMATION}{SEPARATOR}{{}}\n"
    );
    assert!(refusal(&text).contains("kind `Profile` is not part of a migration export"));
}

#[test]
fn a_node_without_a_kubernetes_name_is_refused_by_name() {
    let text = format!(
        "apiVersion: projectcalico.org/v3\nitems:\n- apiVersion: projectcalico.org/v3\n  kind: Node\n  metadata: {{name: lonely}}\n  spec: {{orchRefs: [{{nodeName: x, orchestrator: openstack}}]}}\nkind: NodeList\nmetadata: {{}}\n---\n{SEPARATOR}{INFORMATION}{SEPARATOR}{{}}\n"
    );
    assert!(refusal(&text).contains("node `lonely` has no Kubernetes node name"));
}

#[test]
fn an_upstream_ipam_part_reads() {
    let text = format!(
        "---\n{SEPARATOR}{INFORMATION}{SEPARATOR}{}",
        r#"{
  "block_affinities": [
    {
      "Key": "/calico/ipam/v2/host/k8s-node-1/ipv4/block/192.168.201.0-26",
      "Value": {"state": "confirmed", "deleted": false},
      "TTL": 0
    }
  ],
  "handles": [
    {"Key": "/calico/ipam/v2/handle/ipip-tunnel-addr-k8s-node-1", "Value": {"block": {"192.168.201.0/26": 1}, "deleted": false}, "TTL": 0}
  ],
  "config": {"Key": "/calico/ipam/v2/config", "Value": {"auto_allocate_blocks": true}, "TTL": 0}
}
"#
    );
    let file = parse(&text, "m.txt").unwrap();
    assert_eq!(file.cluster_guid.as_deref(), Some("abc"));
    assert_eq!(file.calico_version.as_deref(), Some("v3.32.1"));
    assert_eq!(file.ipam.len(), 3);
    let unknown = text.replace("\"handles\"", "\"handels\"");
    assert!(refusal(&unknown).contains("third part is not upstream's IPAM JSON"));
}

/// Read one resource at a time (`items.rs`), a problem is still placed in the file as a whole
/// read would place it: its document, its item and its line.
#[test]
fn a_problem_in_a_list_item_names_its_document_item_and_line() {
    let text = format!(
        "apiVersion: projectcalico.org/v3\nitems: []\nkind: IPPoolList\n---\napiVersion: v1\nitems:\n- apiVersion: projectcalico.org/v3\n  kind: GlobalNetworkSet\n  metadata: {{name: a}}\n- apiVersion: projectcalico.org/v3\n  kind: Profile\n  metadata: {{name: p}}\nkind: List\n{SEPARATOR}{INFORMATION}{SEPARATOR}{{}}\n"
    );
    let said = refusal(&text);
    assert!(
        said.contains("`m.txt` document 2 (from line 10), item 2: kind `Profile`"),
        "{said}"
    );
    // An item of another kind than its typed List is refused as the List read whole says it.
    let typed = text
        .replace("apiVersion: v1\n", "apiVersion: projectcalico.org/v3\n")
        .replace("kind: List\n", "kind: GlobalNetworkSetList\n");
    let said = refusal(&typed);
    assert!(
        said.contains("document 2 (from line 5), item 2: a `GlobalNetworkSetList` may only hold `GlobalNetworkSet` items, found `Profile`"),
        "{said}"
    );
    let broken = text.replace("metadata: {name: p}", "metadata: {name: p");
    let said = refusal(&broken);
    // The parser stops where the List goes on (line 13), as it would reading the List whole.
    assert!(
        said.contains("`m.txt` document 2, item 2, line 13: invalid YAML"),
        "{said}"
    );
    let file = parse(&text.replace("Profile", "GlobalNetworkSet"), "m.txt").unwrap();
    assert_eq!(file.resources.len(), 2);
}
