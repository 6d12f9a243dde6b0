//! The etcd backend's storage contract, against a real etcd: upstream key layout and value format in
//! both directions (data written with `etcdctl` in upstream's format reads back; data netctl writes has
//! upstream's shape), conditional writes (create-if-absent, update and delete on the mod revision),
//! paged lists pinned to one revision, and RBAC token refresh during a long-lived connection.

use std::time::Duration;

use crate::support::{AuthSetup, EtcdServer};
use netctl::config::{EndpointSource, EtcdCredentials, EtcdEndpoint, EtcdSettings, Secret};
use netctl::datastore::etcd::{EtcdStore, Timeouts};
use netctl::datastore::{Datastore, ListOptions, StoreError};
use netctl::resource::{Kind, Resource, ResourceKey};

fn settings(etcd: &EtcdServer, credentials: Option<EtcdCredentials>) -> EtcdSettings {
    EtcdSettings {
        endpoints: EndpointSource::Static(vec![EtcdEndpoint::parse(&etcd.endpoint()).unwrap()]),
        credentials,
        tls: None,
        resolver: None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(etcd: &EtcdServer) -> EtcdStore {
    EtcdStore::connect(&settings(etcd, None), Timeouts::default())
        .await
        .unwrap()
}

#[test]
fn upstream_written_policy_reads_back_with_its_original_name() {
    let etcd = EtcdServer::start();
    // As upstream v3.29 stores a default-tier GlobalNetworkPolicy
    // (`libcalico-go/lib/backend/etcdv3/etcdv3.go`, `libcalico-go/lib/names/policy.go`).
    etcd.put(
        "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/default.allow-all-upgrade",
        r#"{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"default.allow-all-upgrade","uid":"2b8d3a5e-0000-4000-8000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"projectcalico.org/metadata":"{\"name\":\"allow-all-upgrade\"}"}},"spec":{"tier":"default","selector":"has(host-endpoint-upgrade)","types":["Ingress","Egress"]}}"#,
    );
    let revision = etcd
        .mod_revision("/calico/resources/v3/projectcalico.org/globalnetworkpolicies/default.allow-all-upgrade")
        .unwrap();
    runtime().block_on(async {
        let store = connect(&etcd).await;
        let key = ResourceKey::new(Kind::GlobalNetworkPolicy, None, "allow-all-upgrade");
        let policy = store.get(&key).await.unwrap();
        assert_eq!(policy.metadata.name, "allow-all-upgrade");
        assert_eq!(policy.metadata.resource_version, Some(revision.to_string()));
        assert!(policy.metadata.annotations.is_empty());
        assert_eq!(policy.spec["selector"], "has(host-endpoint-upgrade)");
    });
}

#[test]
fn netctl_writes_upstream_shaped_values() {
    let etcd = EtcdServer::start();
    let key = "/calico/resources/v3/projectcalico.org/networkpolicies/prod/default.deny-all";
    runtime().block_on(async {
        let store = connect(&etcd).await;
        let mut policy = Resource::new(Kind::NetworkPolicy, "deny-all");
        policy.metadata.namespace = Some("prod".into());
        policy.spec = serde_json::json!({"selector": "all()", "types": ["Ingress"]});
        let created = store.create(&policy).await.unwrap();
        assert_eq!(
            created.metadata.resource_version,
            etcd.mod_revision(key).map(|r| r.to_string())
        );
    });
    let stored: serde_json::Value = serde_json::from_str(&etcd.get(key).unwrap()).unwrap();
    assert_eq!(stored["apiVersion"], "projectcalico.org/v3");
    assert_eq!(stored["kind"], "NetworkPolicy");
    assert_eq!(stored["metadata"]["name"], "default.deny-all");
    assert_eq!(stored["metadata"]["namespace"], "prod");
    assert_eq!(
        stored["metadata"]["annotations"]["projectcalico.org/metadata"],
        r#"{"name":"deny-all"}"#
    );
    assert!(stored["metadata"].get("resourceVersion").is_none());
    assert_eq!(stored["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(
        stored["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
}

#[test]
fn writes_are_conditional() {
    let etcd = EtcdServer::start();
    runtime().block_on(async {
        let store = connect(&etcd).await;
        let node = Resource::new(Kind::Node, "node-a");
        let created = store.create(&node).await.unwrap();
        assert!(matches!(
            store.create(&node).await,
            Err(StoreError::AlreadyExists(_))
        ));

        // An update based on the created revision succeeds once; replaying it is a conflict.
        let mut changed = created.clone();
        changed.metadata.labels.insert("zone".into(), "a".into());
        let updated = store.update(&changed).await.unwrap();
        match store.update(&changed).await {
            Err(StoreError::Conflict {
                expected, current, ..
            }) => {
                assert_eq!(Some(expected), created.metadata.resource_version);
                assert_eq!(Some(current), updated.metadata.resource_version.clone());
            }
            other => panic!("expected a conflict, got {other:?}"),
        }

        // A delete on a stale revision is refused and leaves the resource in place.
        let key = node.key();
        let stale = created.metadata.resource_version.as_deref();
        assert!(matches!(
            store.delete(&key, stale).await,
            Err(StoreError::Conflict { .. })
        ));
        let deleted = store
            .delete(&key, updated.metadata.resource_version.as_deref())
            .await
            .unwrap();
        assert_eq!(deleted.metadata.labels["zone"], "a");
        assert!(matches!(
            store.get(&key).await,
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            store.delete(&key, None).await,
            Err(StoreError::NotFound(_))
        ));
        let ghost = Resource {
            metadata: netctl::resource::ObjectMeta {
                resource_version: Some("5".into()),
                ..created.metadata.clone()
            },
            ..created
        };
        assert!(matches!(
            store.update(&ghost).await,
            Err(StoreError::NotFound(_))
        ));
    });
}

#[test]
fn lists_are_paged_and_pinned_to_one_revision() {
    let etcd = EtcdServer::start();
    for index in 0..25 {
        etcd.put(
            &format!("/calico/resources/v3/projectcalico.org/hostendpoints/hep-{index:02}"),
            format!(
                r#"{{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{{"name":"hep-{index:02}"}},"spec":{{"node":"n","interfaceName":"*"}}}}"#
            ),
        );
    }
    // A key of another kind sharing a prefix, and a stray nested key, are not listed.
    etcd.put(
        "/calico/resources/v3/projectcalico.org/hostendpointsx/other",
        r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"other"}}"#,
    );
    runtime().block_on(async {
        let store = connect(&etcd).await;
        let options = ListOptions {
            page_size: 10,
            ..ListOptions::new(Kind::HostEndpoint)
        };
        let first = store.list_page(&options, None).await.unwrap();
        assert_eq!(first.items.len(), 10);
        // A write between pages does not show up: the list is one snapshot.
        etcd.put(
            "/calico/resources/v3/projectcalico.org/hostendpoints/hep-99",
            r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"hep-99"},"spec":{}}"#,
        );
        let mut names: Vec<String> = first.items.iter().map(|r| r.metadata.name.clone()).collect();
        let mut token = first.continue_token.clone();
        let mut pages = 1;
        while let Some(next) = token {
            let page = store.list_page(&options, Some(&next)).await.unwrap();
            assert_eq!(page.revision, first.revision);
            names.extend(page.items.iter().map(|r| r.metadata.name.clone()));
            token = page.continue_token;
            pages += 1;
        }
        // The first page is the size asked for; the next one takes all 15 left, which fit the
        // byte budget of a later page.
        assert_eq!(pages, 2);
        let expected: Vec<String> = (0..25).map(|i| format!("hep-{i:02}")).collect();
        assert_eq!(names, expected);
    });
}

#[test]
fn namespaced_lists_select_one_or_all_namespaces() {
    let etcd = EtcdServer::start();
    for (namespace, name) in [("a", "one"), ("b", "two"), ("ab", "three")] {
        etcd.put(
            &format!("/calico/resources/v3/projectcalico.org/networksets/{namespace}/{name}"),
            format!(
                r#"{{"apiVersion":"projectcalico.org/v3","kind":"NetworkSet","metadata":{{"name":"{name}","namespace":"{namespace}"}},"spec":{{}}}}"#
            ),
        );
    }
    runtime().block_on(async {
        let store = connect(&etcd).await;
        let names = |items: Vec<Resource>| -> Vec<String> {
            items.into_iter().map(|r| r.metadata.name).collect()
        };
        let one = store
            .list_page(
                &ListOptions::new(Kind::NetworkSet).in_namespace(Some("a".into())),
                None,
            )
            .await
            .unwrap();
        assert_eq!(names(one.items), ["one"]);
        let all = store
            .list_page(&ListOptions::new(Kind::NetworkSet), None)
            .await
            .unwrap();
        assert_eq!(names(all.items), ["one", "three", "two"]);
    });
}

#[test]
fn auth_tokens_are_refreshed_on_a_long_lived_connection() {
    let etcd = EtcdServer::builder()
        .auth(AuthSetup::default().token_ttl(Duration::from_secs(1)))
        .start();
    let credentials = EtcdCredentials {
        username: "netctl".into(),
        password: Secret::new("netctl-pw"),
    };
    runtime().block_on(async {
        let store = EtcdStore::connect(&settings(&etcd, Some(credentials)), Timeouts::default())
            .await
            .unwrap();
        store.check().await.unwrap();
        // Well past the token's lifetime: without refresh this fails with "invalid auth token".
        tokio::time::sleep(Duration::from_secs(3)).await;
        store
            .create(&Resource::new(Kind::Node, "after-expiry"))
            .await
            .unwrap();
    });
    assert!(
        etcd.get("/calico/resources/v3/projectcalico.org/nodes/after-expiry")
            .is_some()
    );
}
