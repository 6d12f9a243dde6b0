//! `resource.*` actions: reads and conditional writes of `projectcalico.org/v3` resources through the
//! [`Datastore`] trait, with upstream's semantics. This file holds what they share: the gate every
//! document passes, the errors, keys, metadata rules, reads; the writes are beside it.
//!
//! - create keeps only name, namespace, labels and annotations of the input metadata;
//! - apply creates, and on "already exists" updates with the stored metadata merged in (labels and
//!   annotations from the user; uid, creation time and revision from the store);
//! - replace updates (conditionally when the document carries a `resourceVersion`);
//! - an update without a revision from the user re-reads and retries on a conflict (upstream: 5 tries);
//! - create, apply and replace (`resource_apply.rs`) and delete (`resource_delete.rs`) check every
//!   document, read what is stored, then write in batches (`resource_write.rs`) and undo a
//!   half-written command (`resource_undo.rs`);
//! - label and patch change a stored resource (`resource_edit.rs`); wait polls until resources
//!   exist (`resource_wait.rs`);
//! - ClusterInformation is read-only for every one of them ([`writable`]): only netctl's own
//!   initialisation (`datastore::initialize`) writes it.
//!
//! Every document about to be written goes through [`prepare_for_write`], the one place validation and
//! defaulting plug in. In dry-run every read still happens and the document that would be written is
//! returned for the transcript, but nothing is written.

use std::path::PathBuf;
use std::time::Duration;

use futures_util::StreamExt;

use crate::datastore::{Datastore, Detail, ListOptions, StoreError};
use crate::errors::Hint;
use crate::exec::interrupt::StopSignal;
use crate::listing::{Limit, Listed, Problem, ProblemKind};
use crate::plan::action::{PatchType, ResourceDocuments, ResourceList, ResourceTarget};
use crate::release::ApiRelease;
use crate::resource::{Kind, Resource, ResourceKey};

use crate::resource::selector::Selector;

use super::{Outcome, RunMode};

/// Resources read per range read by a write command: what is stored for them is held until they
/// are written.
const READ_CHUNK: usize = 1024;

/// Range reads out at once while a write command decides (the reads are harmless; a refusal drops
/// the rest): etcd reads the next range while this one is decoded and decided.
const READS_IN_FLIGHT: usize = 3;

/// What is stored for each of `items` (whose keys `key` gives), read in chunks of
/// [`READ_CHUNK`] with [`READS_IN_FLIGHT`] out at once, handed out chunk by chunk in order: the
/// chunk, its keys, and what is stored for each key (or the read's error).
pub(super) fn read_stored<'a, T: Sync>(
    store: &'a dyn Datastore,
    items: &'a [T],
    key: impl Fn(&T) -> ResourceKey + Copy + 'a,
) -> impl futures_util::Stream<Item = StoredChunk<'a, T>> + 'a {
    futures_util::stream::iter(items.chunks(READ_CHUNK))
        .map(move |chunk| async move {
            let keys: Vec<ResourceKey> = chunk.iter().map(key).collect();
            let stored = store.read_many(&keys).await;
            (chunk, keys, stored)
        })
        .buffered(READS_IN_FLIGHT)
}

/// One chunk of [`read_stored`].
pub(super) type StoredChunk<'a, T> = (
    &'a [T],
    Vec<ResourceKey>,
    Result<Vec<Option<Resource>>, StoreError>,
);

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

/// Refuses every change of a kind only the system writes: ClusterInformation (its `calicoVersion`
/// is what the version guard and planning trust). netctl's own initialisation writes it through the
/// datastore directly, never through an action.
pub fn writable(key: &ResourceKey) -> Result<(), ResourceActionError> {
    match key.kind {
        Kind::ClusterInformation => Err(ResourceActionError::ReadOnly { key: key.clone() }),
        _ => Ok(()),
    }
}

/// Validates and defaults every document before any is written, so a bad document later in a file
/// never leaves the earlier ones applied; refuses read-only kinds and two documents naming one
/// resource (one batch cannot write a key twice, and the second would silently win). Documents the
/// command already validated for `release` are used as they are, not copied: each write makes its
/// own copy when it is sent, so ten thousand documents are held once.
pub(super) fn prepare_all<'a>(
    documents: &'a ResourceDocuments,
    release: &ApiRelease,
) -> Result<std::borrow::Cow<'a, [Resource]>, ResourceActionError> {
    // Documents a command has loaded were validated and defaulted for this release already.
    let validated = documents.validated_for.as_ref() == Some(&release.release);
    let mut prepared = match validated {
        true => std::borrow::Cow::Borrowed(documents.documents.as_slice()),
        false => std::borrow::Cow::Owned(documents.documents.clone()),
    };
    let mut seen = std::collections::HashMap::with_capacity(prepared.len());
    for index in 0..prepared.len() {
        if !validated {
            prepare_for_write(&mut prepared.to_mut()[index], release)?;
        }
        let key = prepared[index].key();
        writable(&key)?;
        if let Some(first) = seen.insert(key.clone(), index) {
            return Err(ResourceActionError::DuplicateDocument {
                key,
                first: first + 1,
                second: index + 1,
            });
        }
    }
    Ok(prepared)
}

/// How a multi-resource write stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// A write failed.
    Failed,
    /// Ctrl-C or SIGTERM, between two batches.
    Signal(StopSignal),
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::Failed => f.write_str("a write failed"),
            Stopped::Signal(signal) => {
                write!(f, "stopped by {} between two batches", signal.describe())
            }
        }
    }
}

/// What an undo that could not finish left behind (see `resource_undo.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoReport {
    /// How many resources may still be as the command left them.
    pub left: usize,
    /// Why the undo stopped, e.g. `its deadline of 10s passed`.
    pub why: String,
    /// The recovery files, or why none could be written.
    pub files: Result<RecoveryFiles, String>,
}

/// The files that list what an unfinished undo left: what to delete and what to put back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryFiles {
    /// Resources the command created (or may have): `netctl delete --skip-not-exists -f` removes them.
    pub created: Option<PathBuf>,
    /// The earlier versions of resources it changed or deleted: `netctl apply -f` puts them back.
    pub previous: Option<PathBuf>,
}

impl RecoveryFiles {
    fn named(&self) -> String {
        [&self.created, &self.previous]
            .into_iter()
            .flatten()
            .map(|path| format!("`{}`", path.display()))
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

/// Why a resource action failed.
#[derive(Debug, thiserror::Error)]
pub enum ResourceActionError {
    #[error(transparent)]
    Invalid(#[from] InvalidDocument),
    #[error(transparent)]
    Rule(#[from] super::store_rules::RuleViolation),
    #[error("cannot {operation} {key}")]
    Store {
        operation: &'static str,
        key: ResourceKey,
        // Boxed: a `StoreError` is large and the other variants carry none (clippy `result_large_err`).
        #[source]
        source: Box<StoreError>,
    },
    /// A batch of writes failed as a whole (one etcd transaction): the datastore's answer is the
    /// source.
    #[error("cannot {operation} {resources}")]
    Batch {
        operation: &'static str,
        resources: BatchName,
        #[source]
        source: Box<StoreError>,
    },
    #[error("{key} is read-only: the node agent maintains ClusterInformation")]
    ReadOnly { key: ResourceKey },
    #[error("documents {first} and {second} both name {key}")]
    DuplicateDocument {
        key: ResourceKey,
        first: usize,
        second: usize,
    },
    /// Targets of a delete that cannot be deleted, each with why (missing, or changed since the
    /// file was read); nothing was deleted. Listed by the bounded lister.
    #[error("{}", self.listed(&Limit::Bounded).unwrap_or_default())]
    NotDeletable { problems: Vec<Undeletable> },
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
    /// Ctrl-C or SIGTERM before the first write.
    #[error("stopped by {} before anything was written", signal.describe())]
    Interrupted { signal: StopSignal },
    /// The command stopped half way (a failed write, a signal); what it wrote before was put back.
    /// The failed write, if one, is the source, printed after this message, not in it.
    #[error("{stop}, and the {restored} resource(s) written before it were put back as they were")]
    RolledBack {
        stop: Stopped,
        restored: usize,
        #[source]
        source: Option<Box<ResourceActionError>>,
    },
    /// As `RolledBack`, but the undo could not finish: what may be left is in the recovery files.
    #[error(
        "{stop}, and {} resource(s) it wrote may still be as it left them: the undo {}{}",
        report.left,
        report.why,
        match &report.files {
            Ok(files) => format!("; they are listed in {}", files.named()),
            Err(reason) => format!("; no recovery file could be written ({reason})"),
        }
    )]
    NotUndone {
        stop: Stopped,
        report: Box<UndoReport>,
        #[source]
        source: Option<Box<ResourceActionError>>,
    },
}

impl Listed for ResourceActionError {
    fn listed(&self, limit: &Limit) -> Option<String> {
        let ResourceActionError::NotDeletable { problems } = self else {
            return None;
        };
        Some(match problems.as_slice() {
            [one] => format!("nothing was deleted: {}", one.0),
            many => {
                let headline = format!(
                    "nothing was deleted: {} targets cannot be deleted:",
                    crate::listing::thousands(many.len())
                );
                crate::listing::render(&headline, many, limit)
            }
        })
    }
}

/// Why one target of a delete cannot be deleted: it does not exist, or it changed since its
/// document was read (a [`StoreError::NotFound`] or [`StoreError::Conflict`]).
#[derive(Debug)]
pub struct Undeletable(pub StoreError);

impl Problem for Undeletable {
    fn entry(&self) -> String {
        self.0.to_string()
    }

    fn kinds(&self) -> Vec<ProblemKind> {
        vec![ProblemKind::named(match self.0 {
            StoreError::NotFound(_) => "does not exist",
            StoreError::Conflict { .. } => "changed since its document was read",
            _ => "cannot be deleted",
        })]
    }
}

impl Hint for ResourceActionError {
    fn hint(&self) -> Option<String> {
        match self {
            ResourceActionError::Store { source, .. }
            | ResourceActionError::Batch { source, .. }
            | ResourceActionError::GaveUp { source, .. } => source.hint(),
            ResourceActionError::LabelConflict { .. } => Some(
                "decide which value is right and set it on both sides, or set `overwrite: true` on the step".to_string(),
            ),
            ResourceActionError::ReadOnly { .. } => Some(
                "the node agent writes ClusterInformation; netctl writes it only when it initialises a datastore".to_string(),
            ),
            ResourceActionError::DuplicateDocument { .. } => Some(
                "keep one document per resource (the later one would silently replace the earlier)".to_string(),
            ),
            ResourceActionError::NotDeletable { .. } => Some(
                "check the names (`netctl get KIND`); `--skip-not-exists` deletes those that exist".to_string(),
            ),
            ResourceActionError::RolledBack { source, .. } => {
                source.as_ref().and_then(|source| source.hint())
            }
            ResourceActionError::NotUndone { report, source, .. } => {
                let first = source
                    .as_ref()
                    .and_then(|source| source.hint())
                    .map(|hint| format!("{hint}; then "))
                    .unwrap_or_default();
                let by_hand = match &report.files {
                    Ok(files) => {
                        let mut steps = Vec::new();
                        if let Some(created) = &files.created {
                            steps.push(format!(
                                "`netctl delete --skip-not-exists -f {}` removes what it created",
                                created.display()
                            ));
                        }
                        if let Some(previous) = &files.previous {
                            steps.push(format!(
                                "`netctl apply -f {}` puts back what it changed or deleted",
                                previous.display()
                            ));
                        }
                        steps.join(" and ")
                    }
                    Err(_) => "`netctl get` shows what is there".to_string(),
                };
                Some(format!(
                    "{first}once the datastore answers, run the same command again to finish it, or undo it by hand: {by_hand}"
                ))
            }
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
pub(super) fn metadata_for_create(resource: &mut Resource) {
    let metadata = &mut resource.metadata;
    metadata.uid = None;
    metadata.creation_timestamp = None;
    metadata.resource_version = None;
    metadata.other.clear();
}

/// The document to store when updating `stored` with the user's `input` (upstream
/// `mergeMetadataForUpdate`): labels and annotations from the user, the rest of the metadata from the
/// store, and the status as stored (the system owns it; a document's is dropped when it is loaded).
pub(super) fn merge_for_update(input: &Resource, stored: &Resource) -> Resource {
    let mut merged = input.clone();
    let mut metadata = stored.metadata.clone();
    metadata.labels = input.metadata.labels.clone();
    metadata.annotations = input.metadata.annotations.clone();
    merged.metadata = metadata;
    merged.status = stored.status.clone();
    merged
}

/// Whether updating `stored` with `input` would store what is stored already: the same as
/// `merge_for_update(input, stored) == *stored`, without building the merged document (an apply of
/// ten thousand unchanged documents compares each, and writes none).
pub(super) fn update_changes_nothing(input: &Resource, stored: &Resource) -> bool {
    input.api_version == stored.api_version
        && input.kind == stored.kind
        && input.metadata.labels == stored.metadata.labels
        && input.metadata.annotations == stored.metadata.annotations
        && input.spec == stored.spec
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
/// page by page, each with its kind, name and namespace, and its labels when a selector reads
/// them: nothing else is decoded (a listing step over 10k host endpoints decoded them whole).
pub(super) async fn for_each_selected(
    store: &dyn Datastore,
    kind: Kind,
    namespace: Option<&str>,
    selector: Option<&Selector>,
    mut visit: impl FnMut(Resource),
) -> Result<(), ResourceActionError> {
    let options = ListOptions::new(kind)
        .in_namespace(namespace.map(str::to_string))
        .with_detail(Detail::Summary {
            spec_fields: Vec::new(),
            labels: selector.is_some(),
        });
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
pub(super) async fn initialize(store: &dyn Datastore, mode: RunMode) {
    if mode == RunMode::Execute {
        let _ = crate::datastore::initialize::ensure_initialized(store).await;
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

/// The writes of a batch that failed, named for a message: the first and how many more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchName {
    pub first: Option<ResourceKey>,
    pub count: usize,
}

impl std::fmt::Display for BatchName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.first, self.count) {
            (None, _) => f.write_str("a batch of resources"),
            (Some(first), 1) => write!(f, "{first}"),
            (Some(first), count) => {
                write!(
                    f,
                    "{first} and {} other resource(s) of its batch",
                    count - 1
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // The label and wait tests share this file's racing store.
    use super::super::resource_edit::label;
    use super::super::resource_wait::wait;
    use crate::datastore::{DatastoreType, Page};
    use crate::exec::progress::Progress;
    use crate::output::{Printer, Verbosity};
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
        super::super::resource_apply::write_documents(
            &store,
            &documents,
            super::super::resource_apply::DocumentWrite::Apply,
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
        async fn read_many(
            &self,
            keys: &[ResourceKey],
        ) -> Result<Vec<Option<Resource>>, StoreError> {
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
}
