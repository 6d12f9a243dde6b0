//! `resource.*` actions: reads and conditional writes of `projectcalico.org/v3` resources through the
//! [`Datastore`] trait, with upstream's semantics.
//!
//! - create keeps only name, namespace, labels and annotations of the input metadata;
//! - apply creates, and on "already exists" updates with the stored metadata merged in (labels and
//!   annotations from the user; uid, creation time and revision from the store);
//! - replace updates (conditionally when the document carries a `resourceVersion`);
//! - an update without a revision from the user re-reads and retries on a conflict (upstream: 5 tries);
//! - label and patch change a stored resource (`resource_edit.rs`); wait polls until resources
//!   exist (`resource_wait.rs`).
//!
//! Every document about to be written goes through [`prepare_for_write`], the one place validation and
//! defaulting plug in. In dry-run every read still happens and the document that would be written is
//! returned for the transcript, but nothing is written.

use std::time::Duration;

use crate::datastore::{Datastore, ListOptions, StoreError};
use crate::plan::action::{PatchType, ResourceDocuments, ResourceList, ResourceTarget};
use crate::release::ApiRelease;
use crate::resource::{Kind, Resource, ResourceKey};

use super::store_rules;
use crate::datastore::DatastoreType;
use crate::resource::selector::Selector;

use super::{Outcome, RunMode};

/// How often an update is retried after a conflict when the user gave no revision (as upstream).
pub(super) const CONFLICT_ATTEMPTS: u32 = 5;

/// The pause between conflict retries; short, because the next read gets the new revision.
pub(super) const CONFLICT_PAUSE: Duration = Duration::from_millis(200);

/// What to do when a create finds the resource, or a delete does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExistingPolicy {
    /// Fail with "already exists" / "does not exist" (the plain commands).
    #[default]
    Fail,
    /// Count it as success (`--skip-exists`, `--skip-not-exists`, and resumable plan steps).
    Skip,
}

/// Per-command write semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteSemantics {
    pub create_existing: ExistingPolicy,
    pub delete_missing: ExistingPolicy,
}

/// Why a resource document may not be written (every problem `resource::validate` found in it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {key}: {reason}")]
pub struct InvalidDocument {
    pub key: String,
    pub reason: String,
}

/// The one gate every document passes before it is written (create, apply, replace, label, patch):
/// a namespaced kind without a namespace goes to `default` (as upstream), then the full client-side
/// validation and defaulting of `resource::validate_and_default_for` runs, for the release the
/// command follows (the cluster's; `--release`). Every error of the document is reported at once,
/// one field per line.
pub fn prepare_for_write(
    resource: &mut Resource,
    release: &ApiRelease,
) -> Result<(), InvalidDocument> {
    if resource.kind.is_namespaced() && resource.metadata.namespace.is_none() {
        resource.metadata.namespace = Some("default".to_string());
    }
    crate::resource::validate_and_default_for(resource, release).map_err(|invalid| {
        InvalidDocument {
            key: resource.key().to_string(),
            reason: format!(
                "{} problem(s):\n  {}",
                invalid.errors.len(),
                invalid
                    .errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n  ")
            ),
        }
    })
}

/// Validates and defaults every document before any is written, so a bad document later in a file
/// never leaves the earlier ones applied.
fn prepare_all(
    documents: &ResourceDocuments,
    release: &ApiRelease,
) -> Result<Vec<Resource>, InvalidDocument> {
    documents
        .documents
        .iter()
        .map(|document| {
            let mut resource = document.clone();
            prepare_for_write(&mut resource, release).map(|()| resource)
        })
        .collect()
}

/// Why a resource action failed.
#[derive(Debug, thiserror::Error)]
pub enum ResourceActionError {
    #[error(transparent)]
    Invalid(#[from] InvalidDocument),
    #[error(transparent)]
    Rule(#[from] store_rules::RuleViolation),
    #[error("cannot {operation} {key}")]
    Store {
        operation: &'static str,
        key: ResourceKey,
        // Boxed: a `StoreError` is large and the other variants carry none (clippy `result_large_err`).
        #[source]
        source: Box<StoreError>,
    },
    #[error("cannot remove label of {kind} {name}, key {key} does not exist")]
    LabelMissing {
        kind: String,
        name: String,
        key: String,
    },
    #[error(
        "failed to update label of {kind} {name}, key {key} is already present. please use '--overwrite' to set a new value."
    )]
    LabelPresent {
        kind: String,
        name: String,
        key: String,
    },
    #[error("{kind} {name} already has label `{key}` = `{current}`; not changing it to `{wanted}`")]
    LabelConflict {
        kind: String,
        name: String,
        key: String,
        current: String,
        wanted: String,
    },
    #[error("{what} did not appear within {timeout}: {last}")]
    WaitTimeout {
        what: String,
        timeout: String,
        last: String,
    },
    #[error("cannot apply the {patch_type} patch to {key}: {reason}")]
    Patch {
        key: ResourceKey,
        patch_type: PatchType,
        reason: String,
    },
    #[error("{reason}")]
    InvalidSelector { reason: String },
    #[error("the patch would change the identity of {key} (kind, name or namespace)")]
    PatchChangesIdentity { key: ResourceKey },
    #[error("{key} was still changing after {CONFLICT_ATTEMPTS} attempts")]
    GaveUp {
        key: ResourceKey,
        #[source]
        source: Box<StoreError>,
    },
    /// A write of a batch failed after earlier documents of it were written; those were put back.
    /// The failed write is the source, printed after this message, not in it.
    #[error(
        "a write failed, and the {restored} resource(s) of this batch written before it were put back as they were"
    )]
    RolledBack {
        #[source]
        source: Box<ResourceActionError>,
        restored: usize,
    },
    /// As `RolledBack`, but some earlier writes could not be undone.
    #[error("a write failed, and these resources of this batch written before it could not be put back: {}", left.join(", "))]
    PartlyWritten {
        #[source]
        source: Box<ResourceActionError>,
        left: Vec<String>,
    },
}

impl ResourceActionError {
    pub fn hint(&self) -> Option<String> {
        match self {
            ResourceActionError::Store { source, .. }
            | ResourceActionError::GaveUp { source, .. } => source.hint().map(str::to_string),
            ResourceActionError::LabelConflict { .. } => Some(
                "decide which value is right and set it on both sides, or set `overwrite: true` on the step".to_string(),
            ),
            ResourceActionError::RolledBack { source, .. } => source.hint(),
            ResourceActionError::PartlyWritten { source, .. } => Some(match source.hint() {
                Some(hint) => format!(
                    "{hint}; then run the same command again (apply and replace are safe to repeat)"
                ),
                None => "run the same command again once the datastore accepts writes (apply and replace are safe to repeat)".to_string(),
            }),
            ResourceActionError::WaitTimeout { .. } => Some(
                "check the component that creates them (its logs and configuration), then resume the run or raise `timeout`".to_string(),
            ),
            _ => None,
        }
    }
}

pub(super) fn store_error(
    operation: &'static str,
    key: &ResourceKey,
) -> impl Fn(StoreError) -> ResourceActionError {
    let key = key.clone();
    move |source| ResourceActionError::Store {
        operation,
        key: key.clone(),
        source: Box::new(source),
    }
}

/// The key of a target, with upstream's `default` namespace for namespaced kinds.
pub fn target_key(kind: Kind, namespace: Option<&str>, name: &str) -> ResourceKey {
    let namespace = match (kind.is_namespaced(), namespace) {
        (true, Some(namespace)) => Some(namespace.to_string()),
        (true, None) => Some("default".to_string()),
        (false, _) => None,
    };
    ResourceKey::new(kind, namespace, name)
}

pub(super) fn document_lines(resource: &Resource) -> Vec<String> {
    let mut shown = resource.clone();
    // A dry-run shows the document as the user would see it after the write, without the revision
    // it was read at (that changes on write anyway).
    shown.metadata.resource_version = None;
    let text = crate::yaml::to_string(&shown).unwrap_or_else(|error| format!("<{error}>"));
    text.lines().map(|line| format!("    {line}")).collect()
}

/// The metadata create keeps (upstream `prepareMetadataForCreate`).
fn metadata_for_create(resource: &mut Resource) {
    let metadata = &mut resource.metadata;
    metadata.uid = None;
    metadata.creation_timestamp = None;
    metadata.resource_version = None;
    metadata.other.clear();
}

/// The document to store when updating `stored` with the user's `input` (upstream
/// `mergeMetadataForUpdate`): labels and annotations from the user, the rest of the metadata from the
/// store, and the status as stored (the system owns it; a document's is dropped when it is loaded).
fn merge_for_update(input: &Resource, stored: &Resource) -> Resource {
    let mut merged = input.clone();
    let mut metadata = stored.metadata.clone();
    metadata.labels = input.metadata.labels.clone();
    metadata.annotations = input.metadata.annotations.clone();
    merged.metadata = metadata;
    merged.status = stored.status.clone();
    merged
}

pub async fn get(
    store: &dyn Datastore,
    target: &ResourceTarget,
) -> Result<Outcome, ResourceActionError> {
    let key = target_key(target.kind, target.namespace.as_deref(), &target.name);
    let resource = store.get(&key).await.map_err(store_error("read", &key))?;
    Ok(Outcome {
        summary: format!("read {key}"),
        transcript: vec![format!(
            "read {key} (revision {})",
            resource.metadata.resource_version.as_deref().unwrap_or("?")
        )],
        output: serde_json::to_value(&resource).ok(),
    })
}

/// A step's `selector`, parsed (none: every resource).
pub(super) fn parse_selector(text: Option<&str>) -> Result<Option<Selector>, ResourceActionError> {
    text.map(|text| {
        Selector::parse(text).map_err(|error| ResourceActionError::InvalidSelector {
            reason: error.to_string(),
        })
    })
    .transpose()
}

/// Hands every resource of `kind` (in `namespace`, or all) that `selector` selects to `visit`,
/// page by page.
pub(super) async fn for_each_selected(
    store: &dyn Datastore,
    kind: Kind,
    namespace: Option<&str>,
    selector: Option<&Selector>,
    mut visit: impl FnMut(Resource),
) -> Result<(), ResourceActionError> {
    let options = ListOptions::new(kind).in_namespace(namespace.map(str::to_string));
    crate::datastore::for_each(store, &options, |resource| -> Result<(), StoreError> {
        if selector.is_none_or(|selector| selector.matches(&resource.metadata.labels)) {
            visit(resource);
        }
        Ok(())
    })
    .await
    .map_err(store_error(
        "list",
        &ResourceKey::new(kind, namespace.map(str::to_string), "*"),
    ))
}

pub async fn list(
    store: &dyn Datastore,
    request: &ResourceList,
) -> Result<Outcome, ResourceActionError> {
    let selector = parse_selector(request.selector.as_deref())?;
    let mut names = Vec::new();
    for_each_selected(
        store,
        request.kind,
        request.namespace.as_deref(),
        selector.as_ref(),
        |resource| names.push(resource.key().to_string()),
    )
    .await?;
    Ok(Outcome {
        summary: format!("listed {} {}", names.len(), request.kind.plural()),
        transcript: vec![format!(
            "list {} ({} found)",
            request.kind.plural(),
            names.len()
        )],
        output: Some(serde_json::json!(names)),
    })
}

/// Before the documents of a create, apply or replace are written (and after they passed every
/// check, so a refused batch writes nothing), make sure ClusterInformation `default` and the built-in
/// tiers exist, as upstream calicoctl does. Best effort, as upstream: the documents' own write reports
/// any real problem with the datastore.
async fn initialize(store: &dyn Datastore, mode: RunMode) {
    if mode == RunMode::Execute {
        let _ = crate::datastore::initialize::ensure_initialized(store).await;
    }
}

/// What a create, apply or replace of one document did (or would do).
enum WriteKind {
    Created,
    Updated,
    Skipped,
}

/// One write of a batch, so a later failure can undo it: what was there before (`None`: it was
/// created) and the revision the write produced (the undo is conditional on it, so a change someone
/// made since is never overwritten).
struct Written {
    key: ResourceKey,
    revision: Option<String>,
    before: Option<Resource>,
}

/// A batch never stays half written: when a write fails after earlier ones succeeded (a datastore
/// failure; bad input is refused before the first write), the earlier ones are undone, newest first,
/// and the error says so. What cannot be undone is named.
async fn undo_on_failure(
    store: &dyn Datastore,
    written: Vec<Written>,
    error: ResourceActionError,
) -> ResourceActionError {
    if written.is_empty() {
        return error;
    }
    let mut left = Vec::new();
    let restored = written.len();
    for write in written.into_iter().rev() {
        let result = match write.before {
            None => store
                .delete(&write.key, write.revision.as_deref())
                .await
                .map(|_| ()),
            Some(mut before) => {
                before.metadata.resource_version = write.revision.clone();
                store.update(&before).await.map(|_| ())
            }
        };
        if let Err(undo_error) = result {
            left.push(format!("{} ({undo_error})", write.key));
        }
    }
    let source = Box::new(error);
    if left.is_empty() {
        ResourceActionError::RolledBack { source, restored }
    } else {
        ResourceActionError::PartlyWritten { source, left }
    }
}

pub async fn create(
    store: &dyn Datastore,
    documents: &ResourceDocuments,
    semantics: WriteSemantics,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    let mut outcome = Outcome::default();
    let mut counts = (0, 0);
    let prepared = prepare_all(documents, release)?;
    store_rules::check_writes(store, &prepared).await?;
    // Which documents exist already, all read before the first write: with `Fail`, one existing
    // resource refuses the whole batch with nothing written.
    let mut batch = Vec::with_capacity(prepared.len());
    for mut resource in prepared {
        metadata_for_create(&mut resource);
        let key = resource.key();
        let exists = match store.get(&key).await {
            Ok(_) => true,
            Err(StoreError::NotFound(_)) => false,
            Err(source) => return Err(store_error("read", &key)(source)),
        };
        if exists && semantics.create_existing == ExistingPolicy::Fail {
            return Err(store_error("create", &key)(StoreError::AlreadyExists(
                key.clone(),
            )));
        }
        batch.push((key, resource, exists));
    }
    initialize(store, mode).await;
    let mut written = Vec::new();
    for (key, resource, exists) in batch {
        let kind = match (mode, exists, semantics.create_existing) {
            (_, true, _) => WriteKind::Skipped,
            (RunMode::DryRun, false, _) => WriteKind::Created,
            (RunMode::Execute, false, policy) => match store.create(&resource).await {
                Ok(created) => {
                    written.push(Written {
                        key: key.clone(),
                        revision: created.metadata.resource_version,
                        before: None,
                    });
                    WriteKind::Created
                }
                // Someone created it between the read and the write.
                Err(StoreError::AlreadyExists(_)) if policy == ExistingPolicy::Skip => {
                    WriteKind::Skipped
                }
                Err(source) => {
                    let error = store_error("create", &key)(source);
                    return Err(undo_on_failure(store, written, error).await);
                }
            },
        };
        record_write(
            &mut outcome,
            &mut counts,
            kind,
            &key,
            &resource,
            mode,
            "create",
        );
    }
    outcome.summary = format!(
        "created {} resource(s), {} already existed",
        counts.0, counts.1
    );
    Ok(outcome)
}

fn record_write(
    outcome: &mut Outcome,
    counts: &mut (usize, usize),
    kind: WriteKind,
    key: &ResourceKey,
    resource: &Resource,
    mode: RunMode,
    verb: &str,
) {
    let would = if mode == RunMode::DryRun {
        "would "
    } else {
        ""
    };
    match kind {
        WriteKind::Created => {
            counts.0 += 1;
            outcome.transcript.push(format!("{would}create {key}:"));
            outcome.transcript.extend(document_lines(resource));
        }
        WriteKind::Updated => {
            counts.0 += 1;
            outcome
                .transcript
                .push(format!("{would}update {key} ({verb}):"));
            outcome.transcript.extend(document_lines(resource));
        }
        WriteKind::Skipped => {
            counts.1 += 1;
            outcome
                .transcript
                .push(format!("{key} already exists; skipped"));
        }
    }
}

/// Apply (`replace_only = false`) or replace (`true`) every document.
pub async fn apply(
    store: &dyn Datastore,
    documents: &ResourceDocuments,
    replace_only: bool,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    let verb = if replace_only { "replace" } else { "apply" };
    let mut outcome = Outcome::default();
    let mut counts = (0, 0);
    let prepared = prepare_all(documents, release)?;
    store_rules::check_writes(store, &prepared).await?;
    if replace_only {
        // Every resource a replace names must exist, all checked before the first write.
        for input in &prepared {
            let key = input.key();
            match store.get(&key).await {
                Ok(_) => {}
                Err(source) => return Err(store_error("replace", &key)(source)),
            }
        }
    }
    initialize(store, mode).await;
    let mut written = Vec::new();
    for input in prepared {
        let key = input.key();
        let mut attempt = 1;
        loop {
            let stored = match store.get(&key).await {
                Ok(stored) => Some(stored),
                Err(StoreError::NotFound(_)) => None,
                Err(source) => {
                    let error = store_error("read", &key)(source);
                    return Err(undo_on_failure(store, written, error).await);
                }
            };
            let before = stored.clone();
            let result = match stored {
                None if replace_only => Err(StoreError::NotFound(key.clone())),
                None => {
                    let mut created = input.clone();
                    metadata_for_create(&mut created);
                    if mode == RunMode::Execute {
                        match store.create(&created).await {
                            Ok(stored) => {
                                created.metadata.resource_version =
                                    stored.metadata.resource_version;
                                Ok((WriteKind::Created, created))
                            }
                            Err(error) => Err(error),
                        }
                    } else {
                        Ok((WriteKind::Created, created))
                    }
                }
                Some(stored) => {
                    let merged = match &input.metadata.resource_version {
                        // The user named a revision: a conditional update of exactly that revision.
                        Some(revision) => {
                            let mut merged = merge_for_update(&input, &stored);
                            merged.metadata.resource_version = Some(revision.clone());
                            merged
                        }
                        None => merge_for_update(&input, &stored),
                    };
                    if mode == RunMode::Execute {
                        store.update(&merged).await.map(|stored| {
                            let mut merged = merged;
                            merged.metadata.resource_version = stored.metadata.resource_version;
                            (WriteKind::Updated, merged)
                        })
                    } else {
                        Ok((WriteKind::Updated, merged))
                    }
                }
            };
            match result {
                Ok((kind, document)) => {
                    if mode == RunMode::Execute {
                        written.push(Written {
                            key: key.clone(),
                            revision: document.metadata.resource_version.clone(),
                            before,
                        });
                    }
                    record_write(&mut outcome, &mut counts, kind, &key, &document, mode, verb);
                    break;
                }
                Err(StoreError::Conflict { .. } | StoreError::AlreadyExists(_))
                    if input.metadata.resource_version.is_none() && attempt < CONFLICT_ATTEMPTS =>
                {
                    attempt += 1;
                    tokio::time::sleep(CONFLICT_PAUSE).await;
                }
                Err(source @ StoreError::Conflict { .. })
                    if input.metadata.resource_version.is_none() =>
                {
                    let error = ResourceActionError::GaveUp {
                        key,
                        source: Box::new(source),
                    };
                    return Err(undo_on_failure(store, written, error).await);
                }
                Err(source) => {
                    let error = store_error(verb_static(verb), &key)(source);
                    return Err(undo_on_failure(store, written, error).await);
                }
            }
        }
    }
    let past = if replace_only { "replaced" } else { "applied" };
    outcome.summary = format!("{past} {} resource(s)", counts.0);
    Ok(outcome)
}

fn verb_static(verb: &str) -> &'static str {
    match verb {
        "replace" => "replace",
        _ => "apply",
    }
}

pub async fn delete(
    store: &dyn Datastore,
    target: &ResourceTarget,
    semantics: WriteSemantics,
    mode: RunMode,
) -> Result<Outcome, ResourceActionError> {
    let key = target_key(target.kind, target.namespace.as_deref(), &target.name);
    let missing = |key: &ResourceKey| -> Result<Outcome, ResourceActionError> {
        match semantics.delete_missing {
            ExistingPolicy::Skip => Ok(Outcome {
                summary: format!("{key} does not exist; nothing to delete"),
                transcript: vec![format!("{key} does not exist; skipped")],
                output: None,
            }),
            ExistingPolicy::Fail => Err(store_error("delete", key)(StoreError::NotFound(
                key.clone(),
            ))),
        }
    };
    let stored = match store.get(&key).await {
        Ok(stored) => stored,
        Err(StoreError::NotFound(_)) => return missing(&key),
        Err(source) => return Err(store_error("read", &key)(source)),
    };
    store_rules::check_delete(store, &key).await?;
    // Only where netctl owns node deletion: on Kubernetes, Nodes belong to the cluster and the
    // datastore refuses to delete them, so nothing may be deleted on their behalf first.
    let dependents = if key.kind == Kind::Node && store.kind() == DatastoreType::EtcdV3 {
        store_rules::node_dependents(store, &key.name)
            .await
            .map_err(store_error("list the dependents of", &key))?
    } else {
        Vec::new()
    };
    if mode == RunMode::DryRun {
        let mut transcript: Vec<String> = dependents
            .iter()
            .map(|dependent| format!("would delete {dependent} (belongs to {key})"))
            .collect();
        transcript.push(format!(
            "would delete {key} (revision {})",
            stored.metadata.resource_version.as_deref().unwrap_or("?")
        ));
        return Ok(Outcome {
            summary: format!("would delete {key}"),
            transcript,
            output: None,
        });
    }
    let mut transcript = Vec::new();
    for dependent in &dependents {
        match store.delete(dependent, None).await {
            // Gone already (someone else cleaned up): the goal holds.
            Ok(_) | Err(StoreError::NotFound(_)) => {
                transcript.push(format!("delete {dependent} (belongs to {key})"));
            }
            Err(source) => return Err(store_error("delete", dependent)(source)),
        }
    }
    // Conditional on the revision read above: a node changed meanwhile is reported, not deleted.
    match store
        .delete(&key, stored.metadata.resource_version.as_deref())
        .await
    {
        Ok(_) => {
            transcript.push(format!("delete {key}"));
            let summary = match dependents.len() {
                0 => format!("deleted {key}"),
                count => format!("deleted {key} and {count} resource(s) that belonged to it"),
            };
            Ok(Outcome {
                summary,
                transcript,
                output: None,
            })
        }
        Err(StoreError::NotFound(_)) => missing(&key),
        Err(source) => Err(store_error("delete", &key)(source)),
    }
}

/// Whether a resource exists (the postcondition of `resource.get`).
pub async fn exists(
    store: &dyn Datastore,
    target: &ResourceTarget,
) -> Result<bool, ResourceActionError> {
    let key = target_key(target.kind, target.namespace.as_deref(), &target.name);
    match store.get(&key).await {
        Ok(_) => Ok(true),
        Err(StoreError::NotFound(_)) => Ok(false),
        Err(source) => Err(store_error("read", &key)(source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // The label and wait tests share this file's racing store.
    use super::super::resource_edit::label;
    use super::super::resource_wait::wait;
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
        let documents = ResourceDocuments {
            documents: vec![host_endpoint()],
            file: None,
        };
        apply(
            &store,
            &documents,
            false,
            RunMode::Execute,
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
            source: Box::new(failed),
            restored: 2,
        };
        let text = crate::errors::error_chain(&error);
        assert_eq!(
            text,
            "a write failed, and the 2 resource(s) of this batch written before it were put back as they were: cannot apply HostEndpoint(h1): datastore request failed: permission denied"
        );
    }
}
