//! The shared parts of the resource actions, and label and wait against a store that loses races
//! on cue.

use super::*;
// The label and wait tests share this file's racing store.
use super::edit::label;
use super::wait::wait;
use crate::datastore::{DatastoreType, Page};
use crate::plan::action::{ResourceLabel, ResourceWait};
use std::sync::Mutex;

/// A one-resource store whose next `conflicts` updates fail as if someone else wrote first (the
/// revision moves on each time), to prove the re-read-and-retry path deterministically; real
/// etcd cannot be made to lose a race on cue.
struct RacingStore {
    resource: Mutex<Resource>,
    conflicts: Mutex<u32>,
    updates: Mutex<u32>,
}

impl RacingStore {
    fn new(conflicts: u32) -> RacingStore {
        let mut resource = host_endpoint();
        resource.metadata.resource_version = Some("1".into());
        RacingStore {
            resource: Mutex::new(resource),
            conflicts: Mutex::new(conflicts),
            updates: Mutex::new(0),
        }
    }
}

#[async_trait::async_trait]
impl Datastore for RacingStore {
    fn kind(&self) -> DatastoreType {
        DatastoreType::EtcdV3
    }
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }
    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        // Only the host endpoint exists; the rest is what initialisation creates.
        if key.kind != Kind::HostEndpoint {
            return Err(StoreError::NotFound(key.clone()));
        }
        Ok(self.resource.lock().unwrap().clone())
    }
    async fn list_page(&self, _: &ListOptions, _: Option<&str>) -> Result<Page, StoreError> {
        unreachable!("not listed in these tests")
    }
    async fn create(&self, resource: &Resource) -> Result<Resource, StoreError> {
        if resource.kind != Kind::HostEndpoint {
            return Ok(resource.clone());
        }
        Err(StoreError::AlreadyExists(resource.key()))
    }
    async fn update(&self, resource: &Resource) -> Result<Resource, StoreError> {
        *self.updates.lock().unwrap() += 1;
        let mut stored = self.resource.lock().unwrap();
        let current: u64 = stored
            .metadata
            .resource_version
            .as_deref()
            .unwrap()
            .parse()
            .unwrap();
        let mut conflicts = self.conflicts.lock().unwrap();
        if *conflicts > 0 {
            *conflicts -= 1;
            // Another writer got there first.
            stored.metadata.resource_version = Some((current + 1).to_string());
            return Err(StoreError::Conflict {
                key: resource.key(),
                expected: resource
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default(),
                current: (current + 1).to_string(),
            });
        }
        assert_eq!(
            resource.metadata.resource_version.as_deref(),
            Some(current.to_string().as_str()),
            "an update is conditional on the revision just read"
        );
        let mut written = resource.clone();
        written.metadata.resource_version = Some((current + 1).to_string());
        *stored = written.clone();
        Ok(written)
    }
    async fn delete(&self, key: &ResourceKey, _: Option<&str>) -> Result<Resource, StoreError> {
        Err(StoreError::NotFound(key.clone()))
    }
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
    let store = RacingStore::new(2);
    label(
        &store,
        &label_request(),
        RunMode::Execute,
        &ApiRelease::newest(),
    )
    .await
    .unwrap();
    assert_eq!(*store.updates.lock().unwrap(), 3);
    let stored = store.resource.lock().unwrap().clone();
    assert_eq!(stored.metadata.labels["upgrade"], "yes");

    let store = RacingStore::new(1);
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
    assert_eq!(*store.updates.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_resource_that_keeps_changing_is_given_up_on() {
    let store = RacingStore::new(u32::MAX);
    let error = label(
        &store,
        &label_request(),
        RunMode::Execute,
        &ApiRelease::newest(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, ResourceActionError::GaveUp { .. }));
    assert_eq!(*store.updates.lock().unwrap(), CONFLICT_ATTEMPTS);
    assert_eq!(
        error.to_string(),
        "HostEndpoint(h1) was still changing after 5 attempts"
    );
}

#[tokio::test]
async fn a_wait_reports_what_is_missing_and_gives_up_after_its_timeout() {
    let store = RacingStore::new(0);
    let request = |selector: &str| ResourceWait {
        kind: Kind::HostEndpoint,
        names: vec!["h1".into()],
        namespace: None,
        selector: Some(selector.into()),
        timeout: crate::plan::HumanDuration(Duration::from_millis(600)),
    };
    let outcome = wait(&store, &request("all()"), RunMode::Execute)
        .await
        .unwrap();
    assert_eq!(
        outcome.summary,
        "hostendpoints `h1` matching `all()`: 1/1 present"
    );
    let error = wait(&store, &request("role == 'edge'"), RunMode::Execute)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "hostendpoints `h1` matching `role == 'edge'` did not appear within 600ms: 0/1 present; not matching the selector: h1"
    );
    assert!(error.hint().is_some());
}

#[tokio::test]
async fn several_labels_are_set_all_or_none() {
    let store = RacingStore::new(0);
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
    let stored = store.resource.lock().unwrap().clone();
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
        source: Box::new(StoreError::Other("permission denied".into())),
    };
    let error = ResourceActionError::RolledBack {
        stop: Stopped::Failed,
        source: Some(Box::new(failed)),
        restored: 2,
    };
    let text = crate::errors::error_chain(&error);
    assert_eq!(
        text,
        "a write failed, and the 2 resource(s) written before it were put back as they were: cannot apply HostEndpoint(h1): datastore request failed: permission denied"
    );
}

/// A store of nothing whose `read_many` takes 50 ms and counts how many are out at once.
#[derive(Default)]
struct SlowReads {
    out: Mutex<(usize, usize)>,
}

#[async_trait::async_trait]
impl Datastore for SlowReads {
    fn kind(&self) -> DatastoreType {
        DatastoreType::EtcdV3
    }
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }
    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        Err(StoreError::NotFound(key.clone()))
    }
    async fn list_page(&self, _: &ListOptions, _: Option<&str>) -> Result<Page, StoreError> {
        unreachable!("not listed")
    }
    async fn create(&self, _: &Resource) -> Result<Resource, StoreError> {
        unreachable!("nothing is written")
    }
    async fn update(&self, _: &Resource) -> Result<Resource, StoreError> {
        unreachable!("nothing is written")
    }
    async fn delete(&self, _: &ResourceKey, _: Option<&str>) -> Result<Resource, StoreError> {
        unreachable!("nothing is written")
    }
    async fn read_many(&self, keys: &[ResourceKey]) -> Result<Vec<Option<Resource>>, StoreError> {
        {
            let mut out = self.out.lock().unwrap();
            out.0 += 1;
            out.1 = out.1.max(out.0);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.out.lock().unwrap().0 -= 1;
        Ok(vec![None; keys.len()])
    }
}

#[tokio::test]
async fn what_is_stored_is_read_three_ranges_at_once_and_handed_out_in_order() {
    let store = SlowReads::default();
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
    assert_eq!(store.out.lock().unwrap().1, READS_IN_FLIGHT);
    assert_eq!(READS_IN_FLIGHT, 3);
}
