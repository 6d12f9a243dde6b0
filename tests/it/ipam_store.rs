//! The `IpamStore` of both backends through the library: every write a compare-and-swap (a stale
//! revision is a conflict, nothing written), creates refused over existing objects, listings in
//! pages, and on Kubernetes both API groups — `crd.projectcalico.org/v1` and v3.32's native
//! `projectcalico.org/v3` — against the strict test server, which validates each object against
//! upstream's CRD schema of its group.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::kube_api::CalicoGroups;
use crate::support::{EtcdServer, KubeApiServer};
use netctl::config::{EndpointSource, EtcdEndpoint, EtcdSettings, KubernetesSettings};
use netctl::datastore::etcd::{EtcdStore, Timeouts};
use netctl::datastore::ipam::{
    IpamError, IpamStore, for_each_affinity, for_each_block, for_each_handle,
};
use netctl::datastore::kube::KubeStore;
use netctl::datastore::kube::ipam_encoding::ApiGroup;
use netctl::datastore::{Datastore, StoreError};
use netctl::ipam::{
    AffinityType, AllocationBlock, BlockAffinity, BlockEncoding, Cidr, IpamConfig, IpamHandle,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn etcd_store(etcd: &EtcdServer) -> EtcdStore {
    let settings = EtcdSettings {
        endpoints: EndpointSource::Static(vec![EtcdEndpoint::parse(&etcd.endpoint()).unwrap()]),
        credentials: None,
        tls: None,
        resolver: None,
    };
    EtcdStore::connect(&settings, Timeouts::default())
        .await
        .unwrap()
}

async fn kube_store(server: &KubeApiServer, group: ApiGroup) -> KubeStore {
    let settings = KubernetesSettings::from_kubeconfig(server.kubeconfig_path(), None);
    KubeStore::connect(&settings, Duration::from_secs(10))
        .await
        .unwrap()
        .with_ipam_group(group)
}

fn owner(node: &str, pod: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("node".to_string(), node.to_string()),
        ("pod".to_string(), pod.to_string()),
        ("namespace".to_string(), "default".to_string()),
    ])
}

/// The same round trip on any IPAM store.
async fn round_trip(ipam: &dyn IpamStore) {
    let cidr = Cidr::parse("10.80.0.0/26").unwrap();
    let mut block = AllocationBlock::empty(cidr, Some("host:node-1".into()));
    block.allocate(
        "10.80.0.1".parse().unwrap(),
        Some("h1"),
        owner("node-1", "a"),
    );
    let created = ipam
        .create_block(&block, BlockEncoding::OmitEmpty)
        .await
        .unwrap();
    assert!(matches!(
        ipam.create_block(&block, BlockEncoding::OmitEmpty).await,
        Err(IpamError::AlreadyExists { .. })
    ));
    let read = ipam.get_block(&cidr).await.unwrap().unwrap();
    assert_eq!(read.value, block);
    assert_eq!(read.revision, created.revision);

    // A compare-and-swap: the first update wins, the second (same revision) is a conflict.
    let mut first = read.clone();
    first.value.allocate(
        "10.80.0.2".parse().unwrap(),
        Some("h2"),
        owner("node-1", "b"),
    );
    ipam.update_block(&first, BlockEncoding::OmitEmpty)
        .await
        .unwrap();
    let mut second = read.clone();
    second.value.allocate(
        "10.80.0.3".parse().unwrap(),
        Some("h3"),
        owner("node-1", "c"),
    );
    let refused = ipam
        .update_block(&second, BlockEncoding::OmitEmpty)
        .await
        .unwrap_err();
    assert!(refused.is_conflict(), "{refused}");
    assert_eq!(
        ipam.get_block(&cidr)
            .await
            .unwrap()
            .unwrap()
            .value
            .allocated_count(),
        2
    );
    assert!(ipam.delete_block(&read).await.unwrap_err().is_conflict());

    // Handles: created, counted down by a guarded update, deleted on their revision only.
    let handle = ipam
        .create_handle(&IpamHandle::new("TestIPAMCleanup", [(cidr.to_string(), 2)]))
        .await
        .unwrap();
    let mut fewer = handle.clone();
    fewer.value.release_from(&cidr.to_string(), 1).unwrap();
    let fewer = ipam.update_handle(&fewer).await.unwrap();
    assert!(ipam.delete_handle(&handle).await.unwrap_err().is_conflict());
    assert_eq!(
        ipam.get_handle("TestIPAMCleanup")
            .await
            .unwrap()
            .unwrap()
            .value
            .total(),
        1
    );
    ipam.delete_handle(&fewer).await.unwrap();
    assert!(ipam.get_handle("TestIPAMCleanup").await.unwrap().is_none());

    let affinity = BlockAffinity {
        cidr,
        node: "node-1".into(),
        affinity_type: AffinityType::Host,
        state: "confirmed".into(),
        deleted: false,
    };
    ipam.create_affinity(&affinity).await.unwrap();
    let virtual_affinity = BlockAffinity {
        affinity_type: AffinityType::Virtual,
        node: "vm-host".into(),
        ..affinity.clone()
    };
    ipam.create_affinity(&virtual_affinity).await.unwrap();

    // The allocator's configuration: created when absent, then only on its revision.
    assert!(ipam.get_config().await.unwrap().is_none());
    let config = ipam.put_config(&IpamConfig::default(), None).await.unwrap();
    let strict = IpamConfig {
        strict_affinity: true,
        ..IpamConfig::default()
    };
    ipam.put_config(&strict, Some(&config.revision))
        .await
        .unwrap();
    assert!(
        ipam.put_config(&strict, Some(&config.revision))
            .await
            .unwrap_err()
            .is_conflict()
    );
    assert!(
        ipam.get_config()
            .await
            .unwrap()
            .unwrap()
            .value
            .strict_affinity
    );

    // Listings, page by page.
    for index in 1..30u32 {
        let cidr = Cidr::new(std::net::Ipv4Addr::new(10, 81, index as u8, 0).into(), 26).unwrap();
        ipam.create_block(
            &AllocationBlock::empty(cidr, None),
            BlockEncoding::OmitEmpty,
        )
        .await
        .unwrap();
    }
    let mut blocks = 0;
    for_each_block(ipam, |block| {
        block.unwrap();
        blocks += 1;
        Ok::<(), StoreError>(())
    })
    .await
    .unwrap();
    assert_eq!(blocks, 30);
    let mut affinities = Vec::new();
    for_each_affinity(ipam, |found| {
        affinities.push(found.unwrap().value);
        Ok::<(), StoreError>(())
    })
    .await
    .unwrap();
    affinities.sort_by(|a, b| a.node.cmp(&b.node));
    assert_eq!(affinities, [affinity, virtual_affinity]);
    let mut handles = 0;
    for_each_handle(ipam, |_| {
        handles += 1;
        Ok::<(), StoreError>(())
    })
    .await
    .unwrap();
    assert_eq!(handles, 0);
}

#[test]
fn etcd_ipam_is_compare_and_swap() {
    let etcd = EtcdServer::start();
    runtime().block_on(async {
        let store = etcd_store(&etcd).await;
        round_trip(store.ipam().unwrap()).await;
    });
    // Upstream's keys.
    assert!(
        etcd.get("/calico/ipam/v2/host/node-1/ipv4/block/10.80.0.0-26")
            .is_some()
    );
    assert!(
        etcd.get("/calico/ipam/v2/virtual/vm-host/ipv4/block/10.80.0.0-26")
            .is_some()
    );
    assert_eq!(
        etcd.get("/calico/ipam/v2/config").unwrap(),
        r#"{"strict_affinity":true,"auto_allocate_blocks":true}"#
    );
}

#[test]
fn kubernetes_ipam_is_compare_and_swap_in_both_api_groups() {
    for (group, api_version, config_plural, config_kind) in [
        (
            ApiGroup::CrdV1,
            "crd.projectcalico.org/v1",
            "ipamconfigs",
            "IPAMConfig",
        ),
        (
            ApiGroup::ProjectcalicoV3,
            "projectcalico.org/v3",
            "ipamconfigurations",
            "IPAMConfiguration",
        ),
    ] {
        // A server with that group's CRDs only: the store discovers the group as upstream does.
        let server = KubeApiServer::start_serving(match group {
            ApiGroup::CrdV1 => CalicoGroups::V1,
            ApiGroup::ProjectcalicoV3 => CalicoGroups::V3,
        });
        runtime().block_on(async {
            let store = kube_store(&server, group).await;
            round_trip(store.ipam().unwrap()).await;
        });
        let block = server
            .get(api_version, "ipamblocks", "", "10-80-0-0-26")
            .unwrap();
        assert_eq!(block["spec"]["allocations"][2], 1, "{api_version}: {block}");
        let config = server
            .get(api_version, config_plural, "", "default")
            .unwrap();
        assert_eq!(config["kind"], config_kind);
        let affinity = server
            .get(api_version, "blockaffinities", "", "vm-host-10-80-0-0-26")
            .unwrap();
        assert_eq!(affinity["spec"]["type"], "virtual");
        assert_eq!(
            affinity["metadata"]["labels"]["projectcalico.org/affinity-type"],
            "virtual"
        );
        match group {
            ApiGroup::CrdV1 => assert_eq!(affinity["spec"]["deleted"], "false"),
            ApiGroup::ProjectcalicoV3 => assert_eq!(affinity["spec"]["deleted"], false),
        }
        // Nothing of the other group was written.
        let other = match group {
            ApiGroup::CrdV1 => "projectcalico.org/v3",
            ApiGroup::ProjectcalicoV3 => "crd.projectcalico.org/v1",
        };
        assert!(server.names(other, "ipamblocks").is_empty());
    }
}
