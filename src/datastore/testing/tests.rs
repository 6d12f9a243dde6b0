//! The test datastore's own tests: etcd's rules in memory, and every trick the hand-written
//! doubles it replaced played (a racing writer, slow reads counted in flight, pages decoded later
//! and failing on cue, another writer between a read and a batch).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;
use crate::datastore::{Plain, for_each};
use crate::errors::error_chain;

fn host_endpoint(name: &str) -> Resource {
    let mut resource = Resource::new(Kind::HostEndpoint, name);
    resource.spec = serde_json::json!({"node": "n1", "interfaceName": "eth0"});
    resource
}

fn key(name: &str) -> ResourceKey {
    ResourceKey::new(Kind::HostEndpoint, None, name)
}

fn revision_of(resource: &Resource) -> &str {
    resource.metadata.resource_version.as_deref().unwrap()
}

#[tokio::test]
async fn writes_are_conditional_on_revisions_as_in_etcd() {
    let store = TestStore::new();
    assert_eq!(store.revision(), 1, "an empty etcd is at revision 1");
    let created = store.create(&host_endpoint("h1")).await.unwrap();
    assert_eq!(revision_of(&created), "2");
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert!(matches!(
        store.create(&host_endpoint("h1")).await,
        Err(StoreError::AlreadyExists(_))
    ));

    let mut changed = created.clone();
    changed.metadata.labels.insert("zone".into(), "a".into());
    let updated = store.update(&changed).await.unwrap();
    assert_eq!(revision_of(&updated), "3");
    // The same update again holds the old revision: a conflict naming both.
    match store.update(&changed).await {
        Err(StoreError::Conflict {
            expected, current, ..
        }) => assert_eq!((expected.as_str(), current.as_str()), ("2", "3")),
        other => panic!("{other:?}"),
    }
    let mut unversioned = changed.clone();
    unversioned.metadata.resource_version = None;
    assert!(matches!(
        store.update(&unversioned).await,
        Err(StoreError::InvalidResourceVersion(_))
    ));
    assert!(matches!(
        store.update(&host_endpoint("missing")).await,
        Err(StoreError::InvalidResourceVersion(_))
    ));

    assert!(matches!(
        store.delete(&key("h1"), Some("2")).await,
        Err(StoreError::Conflict { .. })
    ));
    let deleted = store.delete(&key("h1"), Some("3")).await.unwrap();
    assert_eq!(deleted.metadata.labels["zone"], "a", "what was stored");
    assert!(matches!(
        store.get(&key("h1")).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete(&key("h1"), None).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.revision(), 4);
    assert_eq!(store.calls(Operation::Update), 4);
    assert_eq!(store.calls(Operation::Create), 2);
}

#[tokio::test]
async fn a_list_is_paged_and_pinned_to_the_revision_of_its_first_page() {
    let store = TestStore::with_resources((0..5).map(|index| host_endpoint(&format!("h{index}"))));
    let mut policy = Resource::new(Kind::NetworkPolicy, "p");
    policy.metadata.namespace = Some("prod".into());
    store.insert(policy.clone());
    policy.metadata.namespace = Some("test".into());
    store.insert(policy);

    let options = ListOptions {
        page_size: 2,
        ..ListOptions::new(Kind::HostEndpoint)
    };
    let first = store.list_page(&options, None).await.unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.revision, "8");
    // Another client deletes one not yet listed and creates one: the list does not see either.
    store.remove(&key("h3"));
    store.insert(host_endpoint("h5"));
    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|i| i.metadata.name.clone())
        .collect();
    let mut token = first.continue_token;
    while let Some(next) = token {
        let page = store.list_page(&options, Some(&next)).await.unwrap();
        assert_eq!(page.revision, "8");
        names.extend(page.items.iter().map(|item| item.metadata.name.clone()));
        token = page.continue_token;
    }
    assert_eq!(names, ["h0", "h1", "h2", "h3", "h4"]);
    assert_eq!(store.calls(Operation::List), 3);

    // A new list sees the store as it is now; a namespace narrows a namespaced kind.
    let mut now = Vec::new();
    for_each(&store, &ListOptions::new(Kind::HostEndpoint), |item| {
        now.push(item.metadata.name);
        Ok::<_, StoreError>(())
    })
    .await
    .unwrap();
    assert_eq!(now, ["h0", "h1", "h2", "h4", "h5"]);
    let prod = ListOptions::new(Kind::NetworkPolicy).in_namespace(Some("prod".into()));
    let page = store.list_page(&prod, None).await.unwrap();
    assert_eq!(page.items.len(), 1);
    let all = ListOptions::new(Kind::NetworkPolicy);
    assert_eq!(store.list_page(&all, None).await.unwrap().items.len(), 2);
    assert!(store.list_page(&options, Some("nonsense")).await.is_err());

    // A store may cap its pages below what the caller asks for.
    let capped = TestStore::with_resources([host_endpoint("a"), host_endpoint("b")]).page_size(1);
    let page = capped
        .list_page(&ListOptions::new(Kind::HostEndpoint), None)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.continue_token.is_some());
}

#[tokio::test]
async fn a_batch_is_one_transaction_all_or_nothing() {
    let store = TestStore::with_resources([host_endpoint("h1"), host_endpoint("h2")]);
    let h1 = store.stored(&key("h1")).unwrap();
    let writes = vec![
        Write::Create(host_endpoint("h3")),
        Write::Update(h1.clone()),
        Write::Delete {
            key: key("h2"),
            revision: "3".into(),
        },
    ];
    let outcome = store.write_batch(&writes).await;
    assert!(outcome.failure.is_none());
    let revisions: Vec<String> = outcome
        .outcomes
        .iter()
        .map(|outcome| match outcome {
            WriteOutcome::Applied { revision } => revision.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        revisions,
        ["4", "4", "4"],
        "one revision for the transaction"
    );
    assert!(store.stored(&key("h2")).is_none());

    // One stale guard refuses the whole transaction; the refusal carries what is stored now.
    let before = store.revision();
    let writes = vec![Write::Create(host_endpoint("h4")), Write::Update(h1)];
    let outcome = store.write_batch(&writes).await;
    assert!(matches!(outcome.outcomes[0], WriteOutcome::NotApplied));
    match &outcome.outcomes[1] {
        WriteOutcome::Refused {
            error: StoreError::Conflict { .. },
            current: Some(current),
        } => assert_eq!(revision_of(current), "4"),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.revision(), before);
    assert!(store.stored(&key("h4")).is_none());

    let found = store
        .read_many(&[key("h1"), key("h2"), key("h3")])
        .await
        .unwrap();
    let found: Vec<bool> = found.iter().map(Option::is_some).collect();
    assert_eq!(found, [true, false, true]);
    assert_eq!(store.keys_read(), 3);
}

#[tokio::test]
async fn without_transactions_a_batch_goes_one_object_at_a_time() {
    let store = TestStore::with_resources([host_endpoint("h1")])
        .datastore_type(DatastoreType::Kubernetes)
        .without_transactions();
    assert_eq!(store.kind(), DatastoreType::Kubernetes);
    let h1 = store.stored(&key("h1")).unwrap();
    let writes = vec![
        Write::Create(host_endpoint("h1")),
        Write::Update(h1),
        Write::Create(host_endpoint("h2")),
    ];
    let outcome = store.write_batch(&writes).await;
    assert!(matches!(outcome.outcomes[0], WriteOutcome::Refused { .. }));
    assert!(outcome.outcomes[1].is_applied());
    assert!(outcome.outcomes[2].is_applied());
    assert_eq!(store.calls(Operation::Create), 2);
    assert_eq!(store.calls(Operation::Update), 1);
    assert_eq!(store.calls(Operation::WriteBatch), 0);
    store.read_many(&[key("h1"), key("h2")]).await.unwrap();
    assert_eq!(store.calls(Operation::Get), 2);
}

/// The racing store of the label and apply tests: updates that lose a race on cue, counted.
#[tokio::test]
async fn a_race_makes_the_next_writes_conflict_for_real() {
    let store = TestStore::with_resources([host_endpoint("h1")]);
    store.race(Operation::Update, 2);
    let mut attempts = 0;
    let written = loop {
        attempts += 1;
        let mut stored = store.get(&key("h1")).await.unwrap();
        stored
            .metadata
            .labels
            .insert("upgrade".into(), "yes".into());
        match store.update(&stored).await {
            Ok(written) => break written,
            Err(StoreError::Conflict { .. }) => continue,
            Err(other) => panic!("{other}"),
        }
    };
    assert_eq!(attempts, 3);
    assert_eq!(store.calls(Operation::Update), 3);
    assert_eq!(written.metadata.labels["upgrade"], "yes");
    // Two racing writes and ours.
    assert_eq!(store.revision(), 2 + 3);

    let batch = TestStore::with_resources([host_endpoint("h1"), host_endpoint("h2")]);
    batch.race(Operation::WriteBatch, 1);
    let writes: Vec<Write> = batch
        .stored_of(Kind::HostEndpoint)
        .into_iter()
        .map(Write::Update)
        .collect();
    let refused = batch.write_batch(&writes).await;
    assert!(
        refused
            .outcomes
            .iter()
            .all(|outcome| matches!(outcome, WriteOutcome::Refused { .. }))
    );
    // Read again, the same writes go through.
    let writes: Vec<Write> = batch
        .stored_of(Kind::HostEndpoint)
        .into_iter()
        .map(Write::Update)
        .collect();
    let outcome = batch.write_batch(&writes).await;
    assert!(outcome.outcomes.iter().all(WriteOutcome::is_applied));
}

/// The slow reads of `read_stored`'s test: each `read_many` takes 50 ms, and the store counts how
/// many are out at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delays_hold_calls_in_flight_and_the_books_count_them() {
    let store = TestStore::new();
    store.delay(Operation::ReadMany, Duration::from_millis(50));
    let started = std::time::Instant::now();
    let reads = (0..3).map(|index| {
        let store = store.clone();
        async move { store.read_many(&[key(&format!("h{index}"))]).await }
    });
    for found in futures_util::future::join_all(reads).await {
        assert_eq!(found.unwrap(), [None]);
    }
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(store.max_in_flight(Operation::ReadMany), 3);
    assert_eq!(store.in_flight(Operation::ReadMany), 0);
    assert_eq!(store.calls(Operation::ReadMany), 3);
    assert_eq!(store.keys_read(), 3);
}

#[tokio::test]
async fn failures_come_on_cue_before_or_after_the_write() {
    let store = TestStore::new();
    store.fail_call(Operation::Create, 2, || {
        StoreError::failed("a create", Plain("refused".into()))
    });
    store.create(&host_endpoint("h1")).await.unwrap();
    let error = store.create(&host_endpoint("h2")).await.unwrap_err();
    assert_eq!(error_chain(&error), "a create failed: refused");
    assert!(store.stored(&key("h2")).is_none(), "nothing was written");
    store.create(&host_endpoint("h2")).await.unwrap();

    // An answer lost after the write: the caller sees the error, the store has the write.
    store.on(Operation::WriteBatch, |call, _| match call.number {
        1 => Cue::lose_answer(StoreError::failed(
            "a write",
            Plain("connection reset".into()),
        )),
        2 => Cue::fail(StoreError::failed("a write", Plain("no leader".into())))
            .after(Duration::from_millis(5)),
        _ => Cue::pass(),
    });
    let lost = store
        .write_batch(&[Write::Create(host_endpoint("h3"))])
        .await;
    assert!(matches!(lost.outcomes[0], WriteOutcome::Unknown));
    assert!(store.stored(&key("h3")).is_some());
    let failed = store
        .write_batch(&[Write::Create(host_endpoint("h4"))])
        .await;
    assert!(matches!(failed.outcomes[0], WriteOutcome::NotApplied));
    assert_eq!(
        error_chain(&failed.failure.unwrap()),
        "a write failed: no leader"
    );
    assert!(store.stored(&key("h4")).is_none());
    let log: Vec<(Operation, usize)> = store
        .log()
        .iter()
        .map(|call| (call.operation, call.number))
        .collect();
    assert_eq!(
        log,
        [
            (Operation::Create, 1),
            (Operation::Create, 2),
            (Operation::Create, 3),
            (Operation::WriteBatch, 1),
            (Operation::WriteBatch, 2)
        ]
    );
}

/// The paged store of `Pages`' tests (`pages.rs` uses these hooks to fail a page, wait for the
/// next page to be asked for, and panic while decoding): a page is handed out undecoded, and its
/// decoding is a call of its own that knows whether a page follows.
#[tokio::test]
async fn a_fetched_page_is_decoded_later_as_a_call_of_its_own() {
    let store = TestStore::with_resources([host_endpoint("h0"), host_endpoint("h1")]).page_size(1);
    store.fail_call(Operation::Decode, 2, || {
        StoreError::failed("a decoding", Plain("undecodable".into()))
    });
    let options = ListOptions::new(Kind::HostEndpoint);
    let first = store.fetch_page(&options, None).await.unwrap();
    let token = first.continue_token.clone().unwrap();
    let second = store.fetch_page(&options, Some(&token)).await.unwrap();
    assert!(second.continue_token.is_none());
    assert_eq!(store.calls(Operation::Decode), 0, "nothing decoded yet");
    assert_eq!(first.decode().unwrap().items[0].metadata.name, "h0");
    assert_eq!(
        error_chain(&second.decode().unwrap_err()),
        "a decoding failed: undecodable"
    );
    let decodes: Vec<Option<String>> = store
        .log()
        .into_iter()
        .filter(|call| call.operation == Operation::Decode)
        .map(|call| call.continue_token)
        .collect();
    assert_eq!(decodes, [Some(token), None]);
}

/// The interfering wrapper of the batched-write tests: in front of another datastore (real etcd
/// there), another client changes a resource between the read and the first batch.
#[tokio::test]
async fn in_front_of_another_store_hooks_and_books_work_the_same() {
    let inner = TestStore::with_resources([host_endpoint("h1"), host_endpoint("h2")]);
    let store = TestStore::over(Arc::new(inner.clone()));
    let done = Arc::new(AtomicBool::new(false));
    let interfering = inner.clone();
    let once = done.clone();
    store.on(Operation::WriteBatch, move |_, _| {
        if !once.swap(true, Ordering::SeqCst) {
            let mut theirs = interfering.stored(&key("h2")).unwrap();
            theirs
                .metadata
                .labels
                .insert("owner".into(), "someone-else".into());
            interfering.insert(theirs);
        }
        Cue::pass()
    });
    let read = store.read_many(&[key("h1"), key("h2")]).await.unwrap();
    let writes: Vec<Write> = read.into_iter().flatten().map(Write::Update).collect();
    let outcome = store.write_batch(&writes).await;
    assert!(matches!(outcome.outcomes[0], WriteOutcome::NotApplied));
    assert!(matches!(outcome.outcomes[1], WriteOutcome::Refused { .. }));
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(store.keys_read(), 2);
    assert_eq!(store.calls(Operation::WriteBatch), 1);
    assert_eq!(
        inner.calls(Operation::WriteBatch),
        1,
        "served by the store behind"
    );
    assert_eq!(store.kind(), DatastoreType::EtcdV3);
}

#[test]
#[should_panic(expected = "stands in front of another datastore")]
fn a_store_in_front_of_another_has_no_memory_of_its_own() {
    TestStore::over(Arc::new(TestStore::new())).revision();
}
