//! `resource.*` actions: reads and conditional writes of `projectcalico.org/v3` resources through the
//! [`Datastore`] trait, with upstream's semantics. This file holds what they share: the gate every
//! document passes, the errors, keys, metadata rules, reads; the writes are beside it.
//!
//! - create keeps only name, namespace, labels and annotations of the input metadata;
//! - apply creates, and on "already exists" updates with the stored metadata merged in (labels and
//!   annotations from the user; uid, creation time and revision from the store);
//! - replace updates (conditionally when the document carries a `resourceVersion`);
//! - an update without a revision from the user re-reads and retries on a conflict (upstream: 5 tries);
//! - create, apply and replace (`apply.rs`) and delete (`delete.rs`) check every
//!   document, read what is stored, then write in batches (`write.rs`) and undo a
//!   half-written command (`undo.rs`);
//! - label and patch change a stored resource (`edit.rs`); wait polls until resources
//!   exist (`wait.rs`);
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

use super::{Context, Held, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;

pub mod apply;
pub mod delete;
pub mod diff;
pub mod edit;
pub mod label_each;
pub mod store_rules;
mod undo;
pub mod wait;
mod write;

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

/// What an undo that could not finish left behind (see `undo.rs`).
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
    Rule(#[from] store_rules::RuleViolation),
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

/// `resource.get`: reads one resource; as a postcondition, the resource exists.
impl Perform for ResourceTarget {
    async fn perform(&self, action: &Action, context: &Context<'_>, _: RunMode) -> Performed {
        Ok(get(context.store(action)?, self).await?)
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        Ok(exists(context.store(action)?, self).await?)
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

/// `resource.list`: lists names; as a postcondition, at least one resource is listed.
impl Perform for ResourceList {
    async fn perform(&self, action: &Action, context: &Context<'_>, _: RunMode) -> Performed {
        Ok(list(context.store(action)?, self).await?)
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        let outcome = list(context.store(action)?, self).await?;
        Ok(outcome
            .output
            .and_then(|names| names.as_array().map(|names| !names.is_empty()))
            .unwrap_or(false))
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
