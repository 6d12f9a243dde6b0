//! Keys, stored values and the three reads (whole, document, summary) against upstream's layout.

use super::*;

/// A resource as it was encoded before the encoding borrowed it: a copy, changed, serialized.
fn encoded_through_a_copy(resource: &Resource) -> Vec<u8> {
    let mut stored = resource.clone();
    stored.api_version = API_VERSION.to_string();
    stored.metadata.resource_version = None;
    serde_json::to_vec(&stored).unwrap()
}

#[test]
fn a_resource_is_encoded_as_a_changed_copy_of_it_would_be() {
    let mut endpoint = Resource::new(Kind::HostEndpoint, "h1");
    endpoint.api_version = "projectcalico.org/v3".into();
    endpoint.metadata.uid = Some("u1".into());
    endpoint.metadata.resource_version = Some("42".into());
    endpoint.metadata.creation_timestamp = Some("2026-01-01T00:00:00Z".into());
    endpoint.metadata.labels.insert("zone".into(), "a".into());
    endpoint
        .metadata
        .annotations
        .insert("note".into(), "x".into());
    endpoint
        .metadata
        .other
        .insert("generation".into(), serde_json::json!(3));
    endpoint.spec = serde_json::json!({"node": "n1", "expectedIPs": ["10.0.0.1"]});
    endpoint.status = serde_json::json!({"seen": true});
    assert_eq!(encode(&endpoint), encoded_through_a_copy(&endpoint));
    let mut bare = Resource::new(Kind::GlobalNetworkSet, "s1");
    bare.spec = serde_json::Value::Null;
    bare.metadata.namespace = Some("ignored".into());
    assert_eq!(encode(&bare), encoded_through_a_copy(&bare));
    // `selfLink` is never stored.
    let mut linked = endpoint.clone();
    linked
        .metadata
        .other
        .insert("selfLink".into(), serde_json::json!("/x"));
    assert_eq!(encode(&linked), encoded_through_a_copy(&endpoint));
}

#[test]
fn a_created_resource_gets_a_uid_and_timestamp_only_where_it_has_none() {
    let created = Created {
        uid: "new-uid",
        creation_timestamp: "2026-11-25T00:00:00Z",
    };
    let fresh = Resource::new(Kind::HostEndpoint, "h1");
    let stored: Resource = serde_json::from_slice(&encode_created(&fresh, created)).unwrap();
    assert_eq!(stored.metadata.uid.as_deref(), Some("new-uid"));
    assert_eq!(
        stored.metadata.creation_timestamp.as_deref(),
        Some("2026-11-25T00:00:00Z")
    );
    let mut kept = fresh.clone();
    kept.metadata.uid = Some("u1".into());
    let stored: Resource = serde_json::from_slice(&encode_created(&kept, created)).unwrap();
    assert_eq!(stored.metadata.uid.as_deref(), Some("u1"));
    let mut policy = Resource::new(Kind::GlobalNetworkPolicy, "p1");
    policy.spec = serde_json::json!({"tier": "default"});
    let stored: Resource = serde_json::from_slice(&encode_created(&policy, created)).unwrap();
    assert_eq!(stored.metadata.uid.as_deref(), Some("new-uid"));
    assert_eq!(stored.metadata.name, "default.p1");
}

#[test]
fn keys_follow_the_upstream_layout() {
    let node = ResourceKey::new(Kind::Node, None, "node1");
    assert_eq!(
        key_path(&node),
        "/calico/resources/v3/projectcalico.org/nodes/node1"
    );
    let policy = ResourceKey::new(Kind::NetworkPolicy, Some("prod".into()), "my-policy");
    assert_eq!(
        key_path(&policy),
        "/calico/resources/v3/projectcalico.org/networkpolicies/prod/default.my-policy"
    );
    let tiered = ResourceKey::new(Kind::GlobalNetworkPolicy, None, "security.block");
    assert_eq!(
        key_path(&tiered),
        "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/security.block"
    );
}

#[test]
fn policy_names_round_trip_through_storage() {
    let mut policy = Resource::new(Kind::GlobalNetworkPolicy, "allow-all-upgrade");
    policy.metadata.resource_version = Some("12".into());
    let bytes = encode(&policy);
    let stored: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(stored["metadata"]["name"], "default.allow-all-upgrade");
    assert!(stored["metadata"].get("resourceVersion").is_none());
    let back = decode("k", &bytes, 42).unwrap();
    assert_eq!(back.metadata.name, "allow-all-upgrade");
    assert_eq!(back.metadata.resource_version.as_deref(), Some("42"));
    assert!(back.metadata.annotations.is_empty());
}

#[test]
fn upstream_policy_without_annotation_loses_default_prefix() {
    let text = br#"{"apiVersion":"projectcalico.org/v3","kind":"GlobalNetworkPolicy","metadata":{"name":"default.p"},"spec":{}}"#;
    assert_eq!(decode("k", text, 1).unwrap().metadata.name, "p");
}

/// One stored resource per kind with every field a table column reads, and more beside.
fn stored_examples() -> Vec<(Kind, serde_json::Value)> {
    use serde_json::json;
    let meta = |name: &str| {
        json!({"name": name, "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z",
               "labels": {"a": "b"}, "annotations": {"note": "x"}, "generation": 3})
    };
    let mut namespaced = meta("default.p1");
    namespaced["namespace"] = json!("prod");
    let mut tiered = meta("security.p2");
    tiered["annotations"][METADATA_ANNOTATION] = json!(r#"{"name":"security.p2"}"#);
    let mut workload = meta("node1-k8s-pod-eth0");
    workload["namespace"] = json!("prod");
    vec![
        (
            Kind::HostEndpoint,
            json!({"metadata": meta("h1"), "spec": {"node": "n1",
            "interfaceName": "*", "expectedIPs": ["10.0.0.1", "fd00::1"],
            "profiles": ["p1", "p2"], "ports": [{"name": "ssh", "port": 22}]}}),
        ),
        (
            Kind::GlobalNetworkPolicy,
            json!({"metadata": tiered, "spec": {"tier": "security",
            "order": 1000000, "selector": "all()", "ingress": [{"action": "Allow"}]}}),
        ),
        (
            Kind::GlobalNetworkPolicy,
            json!({"metadata": meta("default.p3"),
            "spec": {"order": 1.5, "selector": "has(a)"}}),
        ),
        (
            Kind::NetworkPolicy,
            json!({"metadata": namespaced, "spec": {"order": 10,
            "selector": "role == 'db'", "egress": []}}),
        ),
        (
            Kind::Node,
            json!({"metadata": meta("n1"), "spec": {"bgp": {"ipv4Address":
            "10.0.0.1/24", "ipv6Address": "fd00::1/64"}, "orchRefs": [{"nodeName": "n1"}]},
            "status": {"podCIDRs": ["10.1.0.0/24"]}}),
        ),
        (
            Kind::BgpPeer,
            json!({"metadata": meta("peer"), "spec": {"peerIP": "10.0.0.9",
            "nodeSelector": "rack == 'a'", "asNumber": 64513, "keepOriginalNextHop": true}}),
        ),
        (
            Kind::IpPool,
            json!({"metadata": meta("pool"), "spec": {"cidr": "10.0.0.0/16",
            "natOutgoing": true, "ipipMode": "Always", "vxlanMode": "", "disabled": false,
            "disableBGPExport": true, "nodeSelector": "all()", "blockSize": 26}}),
        ),
        (
            Kind::BgpConfiguration,
            json!({"metadata": meta("default"), "spec": {
            "logSeverityScreen": "Info", "nodeToNodeMeshEnabled": false, "asNumber": "1.10"}}),
        ),
        (
            Kind::BgpFilter,
            json!({"metadata": meta("f"), "spec": {"exportV4": [{}, {}],
            "importV6": [{}]}}),
        ),
        (
            Kind::ClusterInformation,
            json!({"metadata": meta("default"), "spec": {
            "clusterGUID": "abc", "clusterType": "k8s,bgp", "calicoVersion": "v3.27.0",
            "datastoreReady": true}}),
        ),
        (
            Kind::GlobalNetworkSet,
            json!({"metadata": meta("s"), "spec": {"nets":
            (0..20).map(|index| format!("10.{index}.0.0/16")).collect::<Vec<_>>()}}),
        ),
        (
            Kind::IpReservation,
            json!({"metadata": meta("r"), "spec": {"reservedCIDRs":
            ["10.9.0.0/24"]}}),
        ),
        (
            Kind::Profile,
            json!({"metadata": meta("prof"), "spec": {"labelsToApply":
            {"z": "1", "a": "2"}, "ingress": []}}),
        ),
        (
            Kind::Tier,
            json!({"metadata": meta("security"), "spec": {"order": 100}}),
        ),
        (
            Kind::WorkloadEndpoint,
            json!({"metadata": workload, "spec": {"orchestrator": "k8s",
            "workload": "", "pod": "pod", "node": "node1", "ipNetworks": ["10.1.0.5/32"],
            "interfaceName": "cali1", "profiles": ["kns.prod"], "ipNATs": [
            {"internalIP": "10.1.0.5", "externalIP": "172.16.0.5"}]}}),
        ),
    ]
}

#[test]
fn a_summary_prints_every_column_as_the_whole_resource_does() {
    use crate::output::{CellContext, ColumnSet, NamespaceColumn, TableColumns, headings_for};
    for (kind, mut value) in stored_examples() {
        value["apiVersion"] = API_VERSION.into();
        value["kind"] = kind.as_str().into();
        let bytes = serde_json::to_vec(&value).unwrap();
        let headings: Vec<String> = headings_for(kind).into_iter().map(String::from).collect();
        let columns =
            TableColumns::new(kind, ColumnSet::Custom(&headings), NamespaceColumn::Hide).unwrap();
        let spec_fields = columns.spec_fields().expect("every column is listed");
        let whole = decode("k", &bytes, 7).unwrap();
        for labels in [false, true] {
            let summary = decode_summary(kind, "k", &bytes, 7, &spec_fields, labels).unwrap();
            let context = CellContext::default();
            assert_eq!(
                columns.row(&summary, &context),
                columns.row(&whole, &context),
                "{kind}"
            );
            assert_eq!(summary.metadata.name, whole.metadata.name, "{kind}");
            assert_eq!(summary.metadata.namespace, whole.metadata.namespace);
            assert_eq!(summary.metadata.resource_version.as_deref(), Some("7"));
            if labels {
                assert_eq!(summary.metadata.labels, whole.metadata.labels);
            } else {
                assert!(summary.metadata.labels.is_empty());
            }
        }
    }
}

#[test]
fn a_summary_refuses_what_a_whole_read_refuses() {
    assert!(decode_summary(Kind::Node, "k", b"{\"kind\": \"Node\"", 1, &[], false).is_err());
    assert!(decode_summary(Kind::Node, "k", b"{}", 1, &[], false).is_err());
}

#[test]
fn a_document_read_is_the_whole_read_with_its_spec_and_status_as_text() {
    let stored = [
        r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"n1","selfLink":"/x","labels":{"a":"b"}},"spec":{"bgp":{"ipv4Address":"10.0.0.1/24"}},"status":{"podCIDRs":["10.1.0.0/24"]}}"#,
        r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"n2"},"spec":null}"#,
        r#"{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"default.p"},"spec":{"tier":"default","order":1}}"#,
    ];
    for value in stored {
        let whole = decode("k", value.as_bytes(), 9).unwrap();
        let (resource, body) = decode_document("k", value.as_bytes(), 9).unwrap();
        assert_eq!(resource.metadata, whole.metadata, "{value}");
        assert_eq!(
            (resource.kind, &resource.api_version),
            (whole.kind, &whole.api_version)
        );
        let parse = |stored: &Option<crate::output::StoredJson>| {
            stored
                .as_ref()
                .map_or(serde_json::Value::Null, crate::output::StoredJson::to_value)
        };
        assert_eq!(parse(&body.spec), whole.spec, "{value}");
        assert_eq!(parse(&body.status), whole.status, "{value}");
    }
    // The policy's own name came back from its tiered one.
    let (policy, _) = decode_document("k", stored[2].as_bytes(), 9).unwrap();
    assert_eq!(policy.metadata.name, "p");
    assert!(decode_document("k", b"{\"kind\": \"Node\"}", 1).is_err());
    assert!(decode_document("k", b"{\"apiVersion\": \"v\", \"kind\": \"Node\"", 1).is_err());
}

#[test]
fn each_release_line_has_its_policy_layout() {
    let layout = |text: &str| PolicyLayout::of(Some(&text.parse().unwrap()));
    assert_eq!(layout("v3.28.5"), PolicyLayout::Untiered);
    assert_eq!(layout("v3.29.0"), PolicyLayout::Tiered);
    assert_eq!(layout("v3.31.7"), PolicyLayout::Tiered);
    assert_eq!(layout("v3.32.0-0.dev"), PolicyLayout::Named);
    assert_eq!(PolicyLayout::of(None), PolicyLayout::Tiered);
    let key = ResourceKey::new(Kind::GlobalNetworkPolicy, None, "allow-dns");
    let root = "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/";
    assert_eq!(
        key_paths(&key, PolicyLayout::Named),
        [
            format!("{root}allow-dns"),
            format!("{root}default.allow-dns")
        ]
    );
    assert_eq!(
        key_paths(&key, PolicyLayout::Tiered),
        [
            format!("{root}default.allow-dns"),
            format!("{root}allow-dns")
        ]
    );
    let tiered = ResourceKey::new(Kind::GlobalNetworkPolicy, None, "security.block");
    assert_eq!(key_paths(&tiered, PolicyLayout::Named).len(), 1);
    let staged = ResourceKey::new(Kind::StagedNetworkPolicy, Some("ns".into()), "p");
    assert!(has_two_layouts(&staged));
}

#[test]
fn a_v3_32_value_keeps_the_name_and_the_annotation() {
    let policy = Resource::new(Kind::GlobalNetworkPolicy, "allow-dns");
    let stored: serde_json::Value =
        serde_json::from_slice(&encode_in(&policy, PolicyLayout::Named)).unwrap();
    assert_eq!(stored["metadata"]["name"], "allow-dns");
    assert_eq!(
        stored["metadata"]["annotations"][METADATA_ANNOTATION],
        r#"{"name":"allow-dns"}"#
    );
    let old: serde_json::Value =
        serde_json::from_slice(&encode_in(&policy, PolicyLayout::Untiered)).unwrap();
    assert_eq!(old["metadata"]["name"], "allow-dns");
    assert!(old["metadata"].get("annotations").is_none());
}

#[test]
fn prefix_end_increments_the_last_byte() {
    assert_eq!(prefix_end("/a/"), b"/a0".to_vec());
}

#[test]
fn stray_keys_are_not_resources() {
    assert!(key_matches_kind(
        Kind::Node,
        "/calico/resources/v3/projectcalico.org/nodes/n1"
    ));
    assert!(!key_matches_kind(
        Kind::Node,
        "/calico/resources/v3/projectcalico.org/nodes/a/b"
    ));
    assert!(key_matches_kind(
        Kind::NetworkSet,
        "/calico/resources/v3/projectcalico.org/networksets/ns/a"
    ));
}
