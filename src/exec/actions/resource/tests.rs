//! The shared parts of the resource actions, and label and wait against a store that loses races
//! on cue.

use super::*;
// The label and wait tests share this file's racing store.
use super::edit::label;
use super::wait::wait;
use crate::datastore::testing::{Operation, TestStore};
use crate::exec::progress::Progress;
use crate::output::{Printer, Verbosity};
use crate::plan::action::{ResourceLabel, ResourceWait};

/// A store holding the host endpoint, whose next `conflicts` updates lose a race (someone else
/// writes it first and its revision moves on): the re-read-and-retry path, deterministically;
/// real etcd cannot be made to lose a race on cue.
fn racing_store(conflicts: usize) -> TestStore {
    let store = TestStore::with_resources([host_endpoint()]);
    store.race(Operation::Update, conflicts);
    store.race(Operation::WriteBatch, conflicts);
    store
}

fn stored_host_endpoint(store: &TestStore) -> Resource {
    store
        .stored(&ResourceKey::new(Kind::HostEndpoint, None, "h1"))
        .expect("the host endpoint is stored")
}

/// How many writes were sent, one at a time or in batches.
fn writes(store: &TestStore) -> usize {
    store.calls(Operation::Update) + store.calls(Operation::WriteBatch)
}

/// A valid host endpoint: every write is validated.
fn host_endpoint() -> Resource {
    let mut resource = Resource::new(Kind::HostEndpoint, "h1");
    resource.spec = serde_json::json!({"node": "n1", "interfaceName": "eth0"});
    resource
}

fn label_request() -> ResourceLabel {
    ResourceLabel {
        kind: Kind::HostEndpoint,
        name: "h1".into(),
        namespace: None,
        key: "upgrade".into(),
        labels: None,
        value: Some("yes".into()),
        overwrite: false,
        remove: false,
    }
}

#[tokio::test]
async fn a_conflicting_update_is_retried_after_reading_again() {
    let store = racing_store(2);
    label(
        &store,
        &label_request(),
        RunMode::Execute,
        &ApiRelease::newest(),
    )
    .await
    .unwrap();
    assert_eq!(writes(&store), 3);
    let stored = stored_host_endpoint(&store);
    assert_eq!(stored.metadata.labels["upgrade"], "yes");

    let store = racing_store(1);
    let mut changed = host_endpoint();
    changed.metadata.labels.insert("zone".into(), "b".into());
    let documents = ResourceDocuments {
        documents: vec![changed],
        file: None,
        validated_for: None,
    };
    super::apply::write_documents(
        &store,
        &documents,
        super::apply::DocumentWrite::Apply,
        RunMode::Execute,
        None,
        &ApiRelease::newest(),
    )
    .await
    .unwrap();
    assert_eq!(writes(&store), 2);
}

#[tokio::test]
async fn a_resource_that_keeps_changing_is_given_up_on() {
    let store = racing_store(usize::MAX);
    let error = label(
        &store,
        &label_request(),
        RunMode::Execute,
        &ApiRelease::newest(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, ResourceActionError::GaveUp { .. }));
    assert_eq!(writes(&store), CONFLICT_ATTEMPTS as usize);
    assert_eq!(
        error.to_string(),
        "HostEndpoint(h1) was still changing after 5 attempts"
    );
}

#[tokio::test]
async fn a_wait_reports_what_is_missing_and_gives_up_after_its_timeout() {
    let store = racing_store(0);
    let request = |selector: &str| ResourceWait {
        kind: Kind::HostEndpoint,
        names: vec!["h1".into()],
        namespace: None,
        selector: Some(selector.into()),
        timeout: crate::plan::HumanDuration(Duration::from_millis(600)),
    };
    // What the user sees, captured in process: outside a run a wait warns when its count
    // changes.
    let (printer, capture) = Printer::capture(Verbosity::DEFAULT);
    let progress = Progress::silent(&printer);
    let outcome = wait(&store, &request("all()"), RunMode::Execute, &progress)
        .await
        .unwrap();
    assert_eq!(
        outcome.summary,
        "hostendpoints `h1` matching `all()`: 1/1 present"
    );
    let error = wait(
        &store,
        &request("role == 'edge'"),
        RunMode::Execute,
        &progress,
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "hostendpoints `h1` matching `role == 'edge'` did not appear within 600ms: 0/1 present; not matching the selector: h1"
    );
    assert!(error.hint().is_some());
    assert_eq!(
        capture.stderr(),
        "warning: waiting for hostendpoints `h1` matching `role == 'edge'`: 0/1 present; not matching the selector: h1\n"
    );
    let (quiet, silent) = Printer::capture(Verbosity::QUIET);
    let progress = Progress::silent(&quiet);
    let request = request("role == 'edge'");
    assert!(
        wait(&store, &request, RunMode::Execute, &progress)
            .await
            .is_err()
    );
    assert_eq!(silent.stderr(), "", "`-q` silences the wait's warning");
}

#[tokio::test]
async fn several_labels_are_set_all_or_none() {
    let store = racing_store(0);
    let mut request = label_request();
    request.key = String::new();
    request.value = None;
    request.labels = Some([("a".to_string(), "1".to_string())].into());
    label(&store, &request, RunMode::Execute, &ApiRelease::newest())
        .await
        .unwrap();
    request.labels = Some(
        [
            ("b".to_string(), "2".to_string()),
            ("a".to_string(), "other".to_string()),
        ]
        .into(),
    );
    let error = label(&store, &request, RunMode::Execute, &ApiRelease::newest())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "hostendpoint h1 already has label `a` = `1`; not changing it to `other`"
    );
    let stored = stored_host_endpoint(&store);
    assert_eq!(
        stored.metadata.labels.keys().collect::<Vec<_>>(),
        ["a"],
        "nothing of the refused write"
    );
}

#[test]
fn an_update_takes_labels_from_the_user_and_the_rest_from_the_store() {
    let mut stored = Resource::new(Kind::HostEndpoint, "h1");
    stored.metadata.uid = Some("u1".into());
    stored.metadata.resource_version = Some("7".into());
    stored.metadata.labels.insert("old".into(), "x".into());
    let mut input = Resource::new(Kind::HostEndpoint, "h1");
    input.metadata.labels.insert("new".into(), "y".into());
    input.metadata.uid = Some("forged".into());
    let merged = merge_for_update(&input, &stored);
    assert_eq!(merged.metadata.uid.as_deref(), Some("u1"));
    assert_eq!(merged.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(merged.metadata.labels.keys().collect::<Vec<_>>(), ["new"]);
}

#[test]
fn an_update_changes_nothing_exactly_when_the_merged_document_is_the_stored_one() {
    let mut stored = host_endpoint();
    stored.metadata.uid = Some("u1".into());
    stored.metadata.resource_version = Some("7".into());
    stored.metadata.creation_timestamp = Some("2026-01-01T00:00:00Z".into());
    stored.metadata.labels.insert("zone".into(), "a".into());
    stored.status = serde_json::json!({"observed": 1});
    let mut same = host_endpoint();
    same.metadata.labels.insert("zone".into(), "a".into());
    let mut relabelled = same.clone();
    relabelled.metadata.labels.insert("zone".into(), "b".into());
    let mut annotated = same.clone();
    annotated
        .metadata
        .annotations
        .insert("note".into(), "x".into());
    let mut respecified = same.clone();
    respecified.spec["interfaceName"] = serde_json::json!("eth1");
    let mut other_version = same.clone();
    other_version.api_version = "projectcalico.org/v4".into();
    // Metadata the store owns and the status never make a document changed.
    let mut forged = same.clone();
    forged.metadata.uid = Some("forged".into());
    forged.status = serde_json::json!({"observed": 2});
    for (name, input, unchanged) in [
        ("same", &same, true),
        ("forged", &forged, true),
        ("relabelled", &relabelled, false),
        ("annotated", &annotated, false),
        ("respecified", &respecified, false),
        ("other version", &other_version, false),
    ] {
        assert_eq!(update_changes_nothing(input, &stored), unchanged, "{name}");
        assert_eq!(
            merge_for_update(input, &stored) == stored,
            unchanged,
            "{name}"
        );
    }
}

#[test]
fn writes_are_validated_and_defaulted_with_every_problem_reported() {
    let mut resource = Resource::new(Kind::NetworkPolicy, "p");
    prepare_for_write(&mut resource, &ApiRelease::newest()).unwrap();
    assert_eq!(resource.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(
        resource.spec["types"],
        serde_json::json!(["Ingress"]),
        "types are defaulted"
    );
    let mut nameless = Resource::new(Kind::HostEndpoint, "");
    assert!(prepare_for_write(&mut nameless, &ApiRelease::newest()).is_err());
    let mut foreign = Resource::new(Kind::HostEndpoint, "h");
    foreign.api_version = "v1".into();
    assert_eq!(
        prepare_for_write(&mut foreign, &ApiRelease::newest())
            .unwrap_err()
            .to_string(),
        "invalid HostEndpoint(h): 3 problem(s):\n  apiVersion = 'v1': must be `projectcalico.org/v3`\n  spec.node: no node has been specified\n  spec: no interface or expected IPs have been specified (set `interfaceName`, `expectedIPs` or both)"
    );
}

#[test]
fn a_rolled_back_batch_names_the_failed_write_once() {
    let failed = ResourceActionError::Store {
        operation: "apply",
        key: ResourceKey::new(Kind::HostEndpoint, None, "h1"),
        source: Box::new(StoreError::failed(
            "a guarded transaction",
            crate::datastore::Plain("permission denied".into()),
        )),
    };
    let error = ResourceActionError::RolledBack {
        stop: Stopped::Failed,
        source: Some(Box::new(failed)),
        restored: 2,
    };
    let text = crate::errors::error_chain(&error);
    assert_eq!(
        text,
        "a write failed, and the 2 resource(s) written before it were put back as they were: cannot apply HostEndpoint(h1): a guarded transaction failed: permission denied"
    );
}

#[tokio::test]
async fn what_is_stored_is_read_three_ranges_at_once_and_handed_out_in_order() {
    // A store of nothing whose reads take 50 ms each.
    let store = TestStore::new();
    store.delay(Operation::ReadMany, Duration::from_millis(50));
    let names: Vec<String> = (0..5000).map(|index| format!("h{index:04}")).collect();
    let key = |name: &String| ResourceKey::new(Kind::HostEndpoint, None, name.as_str());
    let mut reads = std::pin::pin!(read_stored(&store, &names, key));
    let mut seen = Vec::new();
    while let Some((chunk, keys, stored)) = reads.next().await {
        assert_eq!(chunk.len(), keys.len());
        assert_eq!(stored.unwrap().len(), keys.len());
        seen.extend(keys.into_iter().map(|key| key.name));
    }
    assert_eq!(seen, names);
    // Five chunks of at most 1024, three out at once.
    assert_eq!(store.max_in_flight(Operation::ReadMany), READS_IN_FLIGHT);
    assert_eq!(READS_IN_FLIGHT, 3);
}
