//! Writes of many resources against a real etcd: batches of at most 128 conditional writes (one
//! transaction each), what is stored read in key ranges, documents identical to what is stored not
//! written, the summary in kubectl's words per kind, a conflict inside a batch costing one
//! resource, and `delete` all or nothing with per-target reasons. The failures of a write half way
//! (a role that forbids one key, etcd killed or hung, Ctrl-C and SIGTERM) are in
//! `batched_write_failures.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::support::snapshot::netctl_snapshot;
use crate::support::{self, EtcdServer, Netctl, Run, failed, ok};
use netctl::datastore::testing::TestStore;
use netctl::datastore::{Datastore, StoreError, Write, WriteOutcome};
use netctl::exec::RunMode;
use netctl::exec::actions::resource::apply::{DocumentWrite, write_documents};
use netctl::plan::action::ResourceDocuments;
use netctl::resource::{Kind, Resource, ResourceKey};

const ROOT: &str = "/calico/resources/v3/projectcalico.org/";
const HEPS: &str = "/calico/resources/v3/projectcalico.org/hostendpoints/";

/// Host endpoint documents `<prefix>-00000`, `<prefix>-00001`, ... for the indices in `range`,
/// labelled `batch: <prefix>` and `zone: <zone>`.
fn host_endpoints(prefix: &str, range: std::ops::Range<usize>, zone: &str) -> String {
    let mut text = String::new();
    for index in range {
        text.push_str(&format!(
            "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: {prefix}-{index:05}\n  labels:\n    batch: {prefix}\n    zone: {zone}\nspec:\n  node: node-{index:05}\n  interfaceName: eth0\n  expectedIPs: [10.{}.{}.{}]\n",
            index / 65536,
            index / 256 % 256,
            index % 256
        ));
    }
    text
}

/// `netctl <args> -f -` with `documents` on stdin.
fn with_documents(etcd: &EtcdServer, args: &[&str], documents: &str) -> Run {
    Netctl::etcd(etcd)
        .args(args)
        .args(["-f", "-"])
        .stdin(documents)
        .run()
}

/// The names of the stored host endpoints that start with `prefix`.
fn stored(etcd: &EtcdServer, prefix: &str) -> BTreeSet<String> {
    etcd.get_prefix(&format!("{HEPS}{prefix}"))
        .into_iter()
        .map(|(key, _)| key.trim_start_matches(HEPS).to_string())
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn writes_go_in_transactions_of_at_most_128() {
    let etcd = EtcdServer::start();
    // The first write initialises the datastore (ClusterInformation, tiers): not counted below.
    ok(with_documents(
        &etcd,
        &["apply"],
        &host_endpoints("init", 0..1, "a"),
    ));
    for (count, transactions) in [(127, 1), (128, 1), (129, 2)] {
        let prefix = format!("b{count}");
        let documents = host_endpoints(&prefix, 0..count, "a");
        let before = etcd.revision();
        let out = ok(with_documents(&etcd, &["apply"], &documents));
        assert_eq!(
            out,
            format!("Successfully applied {count} resource(s) (HostEndpoint: {count} created)\n")
        );
        // Every transaction that writes raises etcd's revision by one.
        assert_eq!(etcd.revision() - before, transactions, "{count} documents");
        assert_eq!(stored(&etcd, &prefix).len(), count);

        let before = etcd.revision();
        let out = ok(with_documents(&etcd, &["delete"], &documents));
        assert_eq!(
            out,
            format!("Successfully deleted {count} resource(s) (HostEndpoint: {count} deleted)\n")
        );
        assert_eq!(etcd.revision() - before, transactions, "{count} deletes");
        assert!(stored(&etcd, &prefix).is_empty());
    }
}

#[test]
fn identical_documents_are_not_written_and_the_summary_counts_each_kind() {
    let etcd = EtcdServer::start();
    let set = "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata: {name: nets}\nspec: {nets: [10.1.0.0/16]}\n";
    let documents = format!("{}{set}", host_endpoints("u", 0..3, "a"));
    let out = ok(with_documents(&etcd, &["apply"], &documents));
    assert_eq!(
        out,
        "Successfully applied 4 resource(s) (GlobalNetworkSet: 1 created; HostEndpoint: 3 created)\n"
    );

    let before = etcd.revision();
    let out = ok(with_documents(&etcd, &["apply"], &documents));
    assert_eq!(
        out,
        "Successfully applied 4 resource(s) (GlobalNetworkSet: 1 unchanged; HostEndpoint: 3 unchanged)\n"
    );
    assert_eq!(etcd.revision(), before, "nothing was written");
    netctl_snapshot!(with_documents(&etcd, &["replace"], &documents));
    assert_eq!(etcd.revision(), before, "nothing was written");

    // One document changed: one write, and the others keep their revisions.
    let untouched = etcd.mod_revision(&format!("{HEPS}u-00000"));
    let changed = format!(
        "{}{}{set}",
        host_endpoints("u", 0..1, "a"),
        host_endpoints("u", 1..3, "b")
    );
    let plan = ok(with_documents(&etcd, &["apply", "--dry-run"], &changed));
    assert!(
        plan.contains("HostEndpoint(u-00000) unchanged; would not be written")
            && plan.contains("would update HostEndpoint(u-00001) (apply):")
            && plan.ends_with(
                "would apply 4 resource(s) (GlobalNetworkSet: 1 unchanged; HostEndpoint: 2 configured, 1 unchanged)\n"
            ),
        "{plan}"
    );
    let out = ok(with_documents(&etcd, &["apply"], &changed));
    assert_eq!(
        out,
        "Successfully applied 4 resource(s) (GlobalNetworkSet: 1 unchanged; HostEndpoint: 2 configured, 1 unchanged)\n"
    );
    assert_eq!(etcd.revision(), before + 1, "one transaction");
    assert_eq!(etcd.mod_revision(&format!("{HEPS}u-00000")), untouched);
    let zone: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{HEPS}u-00002")).unwrap()).unwrap();
    assert_eq!(zone["metadata"]["labels"]["zone"], "b");
}

/// The etcd backend's batch: one transaction; a refused guard names that write and what is
/// stored now, and leaves the others unapplied; reads of many keys find what is there, across
/// kinds and namespaces.
#[test]
fn a_batch_is_one_transaction_and_a_refused_guard_names_its_write() {
    let etcd = EtcdServer::start();
    runtime().block_on(async {
        let store = etcd.connect().await;
        let endpoint = |name: &str| {
            let mut resource = Resource::new(Kind::HostEndpoint, name);
            resource.spec = serde_json::json!({"node": "n1", "interfaceName": name});
            resource
        };
        let writes: Vec<Write> = ["a", "b", "c"]
            .iter()
            .map(|name| Write::Create(endpoint(name)))
            .collect();
        let before = etcd.revision();
        let outcome = store.write_batch(&writes).await;
        assert!(outcome.failure.is_none());
        let revision = (before + 1).to_string();
        for result in &outcome.outcomes {
            assert!(
                matches!(result, WriteOutcome::Applied { revision: r } if *r == revision),
                "{result:?}"
            );
        }

        // `b` was changed by someone else since revision `before + 1`.
        let stale = revision.clone();
        etcd.put(
            &format!("{HEPS}b"),
            r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"b"},"spec":{"node":"n2","interfaceName":"b"}}"#,
        );
        let updates: Vec<Write> = ["a", "b", "c"]
            .iter()
            .map(|name| {
                let mut resource = endpoint(name);
                resource.metadata.labels.insert("zone".into(), "z".into());
                resource.metadata.resource_version = Some(stale.clone());
                Write::Update(resource)
            })
            .collect();
        let before = etcd.revision();
        let outcome = store.write_batch(&updates).await;
        assert!(outcome.failure.is_none());
        assert!(matches!(outcome.outcomes[0], WriteOutcome::NotApplied));
        assert!(matches!(outcome.outcomes[2], WriteOutcome::NotApplied));
        match &outcome.outcomes[1] {
            WriteOutcome::Refused {
                error: StoreError::Conflict { .. },
                current: Some(current),
            } => assert_eq!(current.spec["node"], "n2"),
            other => panic!("expected a conflict with the stored resource, got {other:?}"),
        }
        assert_eq!(etcd.revision(), before, "nothing of the batch applied");

        // Deletes at the wrong revision are refused; a create of an existing key too.
        let outcome = store
            .write_batch(&[
                Write::Delete {
                    key: ResourceKey::new(Kind::HostEndpoint, None, "a"),
                    revision: "1".into(),
                },
                Write::Create(endpoint("c")),
            ])
            .await;
        assert!(matches!(
            outcome.outcomes[0],
            WriteOutcome::Refused {
                error: StoreError::Conflict { .. },
                ..
            }
        ));
        assert!(matches!(
            outcome.outcomes[1],
            WriteOutcome::Refused {
                error: StoreError::AlreadyExists(_),
                ..
            }
        ));

        // Reads: a range of many keys in one kind, single keys in others, missing ones.
        let many: Vec<Write> = (0..20)
            .map(|index| Write::Create(endpoint(&format!("m{index:02}"))))
            .collect();
        assert!(store.write_batch(&many).await.failure.is_none());
        let mut policy = Resource::new(Kind::NetworkPolicy, "p");
        policy.metadata.namespace = Some("prod".into());
        policy.spec = serde_json::json!({"selector": "all()"});
        store.create(&policy).await.unwrap();
        let mut keys: Vec<ResourceKey> = (0..25)
            .map(|index| ResourceKey::new(Kind::HostEndpoint, None, format!("m{index:02}")))
            .collect();
        keys.push(ResourceKey::new(Kind::NetworkPolicy, Some("prod".into()), "p"));
        keys.push(ResourceKey::new(Kind::NetworkPolicy, Some("test".into()), "p"));
        keys.push(ResourceKey::new(Kind::HostEndpoint, None, "b"));
        let found = store.read_many(&keys).await.unwrap();
        for (key, found) in keys.iter().zip(&found) {
            let expected = match key.kind {
                Kind::NetworkPolicy => key.namespace.as_deref() == Some("prod"),
                _ => key.name == "b" || key.name.as_str() < "m20",
            };
            assert_eq!(found.is_some(), expected, "{key}");
            if let Some(found) = found {
                assert_eq!(found.key(), *key);
            }
        }
        assert!(store.batch_limits().writes <= 128);
    });
}

#[test]
fn a_conflict_inside_a_batch_costs_one_resource_not_the_batch() {
    let etcd = EtcdServer::start();
    ok(with_documents(
        &etcd,
        &["apply"],
        &host_endpoints("c", 0..200, "a"),
    ));
    let documents: Vec<Resource> = netctl::resource::Loader::unvalidated()
        .load_text(&host_endpoints("c", 0..200, "b"), "test")
        .expect("documents parse")
        .into_iter()
        .map(|loaded| loaded.resource)
        .collect();
    runtime().block_on(async {
        // Another writer changes one resource after netctl read it and before its first batch.
        let store = TestStore::over(Arc::new(etcd.connect().await));
        support::another_writer_before_the_first_batch(
            &store,
            &etcd,
            &format!("{HEPS}c-00050"),
            |value| {
                value["metadata"]["labels"]["owner"] = "someone-else".into();
                value["metadata"]["annotations"] = serde_json::json!({"note": "theirs"});
            },
        );
        let before = etcd.revision();
        let documents = ResourceDocuments {
            documents: documents.clone(),
            file: None,
            validated_for: None,
        };
        let outcome = write_documents(
            &store,
            &documents,
            DocumentWrite::Apply,
            RunMode::Execute,
            None,
            &netctl::release::ApiRelease::newest(),
        )
        .await
        .unwrap();
        assert_eq!(
            outcome.summary,
            "applied 200 resource(s) (HostEndpoint: 200 configured)"
        );
        // The other writer's put, the refused first batch (no revision), then two transactions.
        assert_eq!(etcd.revision() - before, 3);
    });
    let victim: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{HEPS}c-00050")).unwrap()).unwrap();
    // Apply's merge on what was stored then: the document's labels and annotations win, as they
    // would have a moment earlier.
    assert_eq!(victim["metadata"]["labels"]["zone"], "b");
    assert!(victim["metadata"]["labels"].get("owner").is_none());
    for name in ["c-00000", "c-00127", "c-00199"] {
        let value: serde_json::Value =
            serde_json::from_str(&etcd.get(&format!("{HEPS}{name}")).unwrap()).unwrap();
        assert_eq!(value["metadata"]["labels"]["zone"], "b", "{name}");
    }

    // With the revision named in the document, a conflict refuses the command before it writes.
    let stale = "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {name: c-00001, resourceVersion: '2'}\nspec: {node: n, interfaceName: eth0}\n";
    let before = etcd.revision();
    netctl_snapshot!(with_documents(&etcd, &["apply"], stale));
    assert_eq!(etcd.revision(), before);
}

#[test]
fn delete_checks_every_target_first_and_deletes_all_or_none() {
    let etcd = EtcdServer::start();
    ok(with_documents(
        &etcd,
        &["apply"],
        &host_endpoints("d", 0..1000, "a"),
    ));
    let before = etcd.revision();

    // Named targets: each one that cannot be deleted is named; nothing is deleted.
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args([
                "delete",
                "hep",
                "d-00000",
                "missing-1",
                "d-00001",
                "missing-2",
            ])
            .run()
    );
    assert_eq!(etcd.revision(), before);

    // Many missing targets: the first twenty are named, the rest counted by kind (the bounded
    // lister).
    let mut missing = host_endpoints("d", 0..10, "a");
    missing.push_str(&host_endpoints("absent", 0..25, "a"));
    netctl_snapshot!(with_documents(&etcd, &["delete"], &missing));
    assert_eq!(etcd.revision(), before);

    // A file whose 700th document names a resource that is not there deletes nothing.
    let mut documents = host_endpoints("d", 0..699, "a");
    documents.push_str(&host_endpoints("gone", 0..1, "a"));
    documents.push_str(&host_endpoints("d", 699..1000, "a"));
    netctl_snapshot!(with_documents(&etcd, &["delete"], &documents));
    assert_eq!(etcd.revision(), before);
    assert_eq!(stored(&etcd, "d-").len(), 1000);

    // A stale resourceVersion: refused, nothing deleted; the current one deletes.
    let revision = etcd.mod_revision(&format!("{HEPS}d-00002")).unwrap();
    let conditional = |version: i64| {
        format!(
            "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {{name: d-00002, resourceVersion: '{version}'}}\nspec: {{node: n, interfaceName: eth0}}\n---\n{}",
            host_endpoints("d", 3..4, "a").trim_start_matches("---\n")
        )
    };
    let stderr = failed(with_documents(
        &etcd,
        &["delete"],
        &conditional(revision - 1),
    ));
    assert!(
        stderr.contains(&format!(
            "nothing was deleted: update conflict: HostEndpoint(d-00002) was changed by someone else (stored revision {revision}, expected {})",
            revision - 1
        )),
        "{stderr}"
    );
    assert_eq!(etcd.revision(), before);
    let out = ok(with_documents(&etcd, &["delete"], &conditional(revision)));
    assert_eq!(
        out,
        "Successfully deleted 2 resource(s) (HostEndpoint: 2 deleted)\n"
    );

    // With --skip-not-exists the missing ones count as done; the rest go in one go.
    let out = ok(Netctl::etcd(&etcd)
        .args([
            "delete",
            "hep",
            "d-00000",
            "missing-1",
            "d-00001",
            "--skip-not-exists",
        ])
        .run());
    assert_eq!(
        out,
        "Successfully deleted 3 resource(s) (HostEndpoint: 2 deleted, 1 already gone)\n"
    );
    let out = ok(Netctl::etcd(&etcd)
        .args(["delete", "hep", "missing-1", "--skip-not-exists"])
        .run());
    assert_eq!(
        out,
        "Successfully deleted nothing: HostEndpoint(missing-1) does not exist\n"
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["delete", "hep", "d-00005", "d-00006", "--dry-run"])
            .run()
    );
    assert_eq!(stored(&etcd, "d-").len(), 996);
}

#[test]
fn cluster_information_is_read_only_for_every_command() {
    let etcd = EtcdServer::start();
    // The first write initialises the datastore: netctl's own write of ClusterInformation.
    ok(with_documents(
        &etcd,
        &["apply"],
        &host_endpoints("r", 0..1, "a"),
    ));
    let key = format!("{ROOT}clusterinformations/default");
    let before = etcd
        .get(&key)
        .expect("initialisation wrote ClusterInformation");
    let information = "apiVersion: projectcalico.org/v3\nkind: ClusterInformation\nmetadata: {name: default}\nspec: {calicoVersion: v9.9.9}\n";
    let refusals: Vec<Run> = vec![
        with_documents(&etcd, &["apply"], information),
        with_documents(&etcd, &["create"], information),
        with_documents(&etcd, &["replace"], information),
        with_documents(&etcd, &["delete"], information),
        Netctl::etcd(&etcd)
            .args(["delete", "clusterinformation", "default"])
            .run(),
        Netctl::etcd(&etcd)
            .args(["label", "clusterinformation", "default", "x=y"])
            .run(),
        Netctl::etcd(&etcd)
            .args([
                "patch",
                "clusterinformation",
                "default",
                "-p",
                r#"{"spec":{"calicoVersion":"v9.9.9"}}"#,
            ])
            .run(),
    ];
    for run in refusals {
        netctl_snapshot!(run);
    }
    assert_eq!(etcd.get(&key).unwrap(), before);
}
