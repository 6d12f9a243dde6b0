//! `resource.create`, `resource.apply` and `resource.replace`: all of a command's documents or none.
//!
//! First every document is checked (validation and defaulting, read-only kinds, two documents for
//! one resource, the rules that need the datastore); then what is stored is read, in key ranges,
//! and each document is decided: created, configured (updated on the revision read, with the
//! stored metadata merged in), or unchanged (identical to what is stored: not written). A create
//! that finds a resource, a replace that finds none, or a `resourceVersion` that is no longer the
//! stored one refuses the whole command here, before the first write. Then the writes go out in
//! batches (`write.rs`); a write refused because someone changed that resource meanwhile
//! is decided again on what is stored now. When the datastore fails half way or Ctrl-C / SIGTERM
//! arrives, what was written is undone (`undo.rs`).
//!
//! In dry-run the same checks and reads happen and the transcript shows each document that would
//! be written; in a real run no document is rendered for show.

use futures_util::StreamExt;

use crate::datastore::{Datastore, StoreError, Write};
use crate::exec::interrupt::Interrupt;
use crate::output::PhaseClock;
use crate::plan::action::ResourceDocuments;
use crate::release::ApiRelease;
use crate::resource::{Resource, ResourceKey};

use super::undo::undo;
use super::write::{Change, Decision, Planned, Settled, Tally, Writer, refused_too_often};
use super::{
    ExistingPolicy, ResourceActionError, initialize, merge_for_update, metadata_for_create,
    prepare_all, prepare_for_write, read_stored, store_error, update_changes_nothing,
};
use super::{Outcome, RunMode, diff, store_rules};
use crate::exec::actions::{Context, Perform, Performed};
use crate::plan::Action;

/// Which of the three document commands runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentWrite {
    /// With what to do about a resource that exists (`--skip-exists`).
    Create(ExistingPolicy),
    Apply,
    Replace,
}

impl DocumentWrite {
    fn verb(self) -> &'static str {
        match self {
            DocumentWrite::Create(_) => "create",
            DocumentWrite::Apply => "apply",
            DocumentWrite::Replace => "replace",
        }
    }

    fn past(self) -> &'static str {
        match self {
            DocumentWrite::Create(_) => "created",
            DocumentWrite::Apply => "applied",
            DocumentWrite::Replace => "replaced",
        }
    }
}

/// What a document comes to, once what is stored is known.
enum Decided {
    Create,
    /// Update what is stored (kept: the merge starts from it, and an undo puts it back).
    Update(Box<Resource>),
    Settle(Settled),
}

/// Creates, applies or replaces every document, or none (see the module documentation).
pub async fn write_documents(
    store: &dyn Datastore,
    documents: &ResourceDocuments,
    command: DocumentWrite,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    let mut clock = PhaseClock::off();
    write_documents_timed(
        store, documents, command, mode, interrupt, release, &mut clock,
    )
    .await
}

/// [`write_documents`], marking its phases on `clock`: preparing the documents, the rules that
/// read the datastore, reading what is stored and deciding, writing.
async fn write_documents_timed(
    store: &dyn Datastore,
    documents: &ResourceDocuments,
    command: DocumentWrite,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
    release: &ApiRelease,
    clock: &mut PhaseClock,
) -> Result<Outcome, ResourceActionError> {
    let prepared = prepare_all(documents, release)?;
    clock.mark("prepare the documents for writing");
    store_rules::check_writes(store, &prepared).await?;
    clock.mark("check the rules that read the datastore");
    let decided = decide_all(store, &prepared, command).await?;
    clock.mark("read what is stored and compare");
    initialize(store, mode).await;
    if mode == RunMode::DryRun {
        return Ok(rehearse(command, &prepared, decided));
    }
    let mut writer = Writer::new(store, interrupt, command.verb());
    for (resource, decided) in prepared.iter().zip(&decided) {
        if let Decided::Settle(settled) = decided {
            writer.tally.settled(resource.kind, *settled);
        }
    }
    // Each write copies its document when the writer takes it: one batch at a time.
    let planned = prepared
        .iter()
        .zip(decided)
        .enumerate()
        .filter_map(|(index, (resource, decided))| planned_write(resource, decided, index));
    let result = writer
        .run(planned, |planned, error, current| {
            decide_again(command, planned, error, current)
        })
        .await;
    clock.mark("write");
    match result {
        Ok(()) => Ok(Outcome {
            summary: summary(command, &writer.tally, RunMode::Execute),
            transcript: Vec::new(),
            output: None,
        }),
        Err(stop) => {
            let written = |index: usize| written_document(documents, index, release);
            Err(undo(store, interrupt, writer.ledger, stop, &written).await)
        }
    }
}

/// Reads what is stored for every document (in key ranges, a few out at once: [`read_stored`]) and
/// decides each; a document the command cannot write refuses the command before anything is
/// written.
async fn decide_all(
    store: &dyn Datastore,
    prepared: &[Resource],
    command: DocumentWrite,
) -> Result<Vec<Decided>, ResourceActionError> {
    let mut decided = Vec::with_capacity(prepared.len());
    let mut reads = std::pin::pin!(read_stored(store, prepared, Resource::key));
    while let Some((chunk, keys, stored)) = reads.next().await {
        let stored = stored.map_err(|source| store_error("read", &keys[0])(source))?;
        for ((resource, key), stored) in chunk.iter().zip(keys).zip(stored) {
            decided.push(decide(command, resource, key, stored)?);
        }
    }
    Ok(decided)
}

fn decide(
    command: DocumentWrite,
    resource: &Resource,
    key: ResourceKey,
    stored: Option<Resource>,
) -> Result<Decided, ResourceActionError> {
    let verb = command.verb();
    let Some(stored) = stored else {
        return match command {
            DocumentWrite::Replace => {
                Err(store_error(verb, &key)(StoreError::NotFound(key.clone())))
            }
            _ => Ok(Decided::Create),
        };
    };
    if let DocumentWrite::Create(policy) = command {
        return match policy {
            ExistingPolicy::Fail => Err(store_error(verb, &key)(StoreError::AlreadyExists(
                key.clone(),
            ))),
            ExistingPolicy::Skip => Ok(Decided::Settle(Settled::AlreadyExisted)),
        };
    }
    // A revision named in the document must still be the stored one: known now, refused now.
    if let Some(expected) = &resource.metadata.resource_version
        && stored.metadata.resource_version.as_ref() != Some(expected)
    {
        let conflict = StoreError::Conflict {
            current: stored.metadata.resource_version.clone().unwrap_or_default(),
            expected: expected.clone(),
            key: key.clone(),
        };
        return Err(store_error(verb, &key)(conflict));
    }
    match update_changes_nothing(resource, &stored) {
        true => Ok(Decided::Settle(Settled::Unchanged)),
        false => Ok(Decided::Update(Box::new(stored))),
    }
}

/// The write a decided document takes (none when it settled).
fn planned_write(resource: &Resource, decided: Decided, index: usize) -> Option<Planned> {
    let pinned = resource.metadata.resource_version.is_some();
    let planned = match decided {
        Decided::Settle(_) => return None,
        Decided::Create => {
            let mut created = resource.clone();
            metadata_for_create(&mut created);
            Planned::new(Write::Create(created), Change::Created, None)
        }
        Decided::Update(stored) => {
            let merged = merge_for_update(resource, &stored);
            Planned::new(Write::Update(merged), Change::Configured, Some(*stored)).pinned(pinned)
        }
    };
    Some(planned.with_document(index))
}

/// A write refused because the resource changed since it was read: decided again on `current`
/// (what is stored now). The written document stands in for the user's: it carries their labels,
/// annotations and spec.
fn decide_again(
    command: DocumentWrite,
    planned: Planned,
    error: StoreError,
    current: Option<Resource>,
) -> Result<Decision, ResourceActionError> {
    let key = planned.write.key();
    let verb = command.verb();
    if planned.pinned {
        return Err(store_error(verb, &key)(error));
    }
    if refused_too_often(&planned) {
        return Err(ResourceActionError::GaveUp {
            key,
            source: Box::new(error),
        });
    }
    let (Write::Create(input) | Write::Update(input)) = &planned.write else {
        return Err(store_error(verb, &key)(error));
    };
    let next = match (current, command) {
        (Some(_), DocumentWrite::Create(ExistingPolicy::Fail)) => {
            return Err(store_error(verb, &key)(error));
        }
        (Some(_), DocumentWrite::Create(ExistingPolicy::Skip)) => {
            return Ok(Decision::Settle(key.kind, Settled::AlreadyExisted));
        }
        (None, DocumentWrite::Replace) => return Err(store_error(verb, &key)(error)),
        (None, _) => {
            let mut created = input.clone();
            metadata_for_create(&mut created);
            Planned::new(Write::Create(created), Change::Created, None)
        }
        (Some(current), _) => {
            if update_changes_nothing(input, &current) {
                return Ok(Decision::Settle(key.kind, Settled::Unchanged));
            }
            let merged = merge_for_update(input, &current);
            Planned::new(Write::Update(merged), Change::Configured, Some(current))
        }
    };
    let mut next = next;
    next.refusals = planned.refusals;
    next.document = planned.document;
    Ok(Decision::Retry(Box::new(next)))
}

/// The dry run: what each document would come to, the documents as they would be written.
fn rehearse(command: DocumentWrite, prepared: &[Resource], decided: Vec<Decided>) -> Outcome {
    let mut tally = Tally::default();
    let mut transcript = Vec::new();
    for (resource, decided) in prepared.iter().zip(decided) {
        let key = resource.key();
        match decided {
            Decided::Create => {
                let mut created = resource.clone();
                metadata_for_create(&mut created);
                tally.changed(key.kind, Change::Created);
                transcript.extend(diff::create_lines(&format!("would create {key}"), &created));
            }
            Decided::Update(stored) => {
                let merged = merge_for_update(resource, &stored);
                tally.changed(key.kind, Change::Configured);
                transcript.extend(diff::update_lines(
                    &format!("would update {key} ({})", command.verb()),
                    &stored,
                    &merged,
                ));
            }
            Decided::Settle(settled) => {
                tally.settled(key.kind, settled);
                transcript.push(match settled {
                    Settled::AlreadyExisted => {
                        format!("{} {key} already exists; skipped", diff::UNCHANGED)
                    }
                    _ => format!("{} {key} unchanged; would not be written", diff::UNCHANGED),
                });
            }
        }
    }
    let summary = summary(command, &tally, RunMode::DryRun);
    transcript.push(summary.clone());
    Outcome {
        summary,
        transcript,
        output: None,
    }
}

/// `applied 3 resource(s) (HostEndpoint: 2 created, 1 unchanged)`, or in a dry run `would apply
/// ...`.
fn summary(command: DocumentWrite, tally: &Tally, mode: RunMode) -> String {
    let done = match mode {
        RunMode::DryRun => format!("would {}", command.verb()),
        RunMode::Execute => command.past().to_string(),
    };
    match tally.total() {
        0 => format!("{done} 0 resource(s)"),
        total => format!("{done} {total} resource(s) ({})", tally.describe()),
    }
}

/// The document a create of document `index` wrote, for a recovery file (as prepared again: the
/// command's own copy was consumed by the write).
fn written_document(
    documents: &ResourceDocuments,
    index: usize,
    release: &ApiRelease,
) -> Option<Resource> {
    let mut resource = documents.documents.get(index)?.clone();
    prepare_for_write(&mut resource, release).ok()?;
    metadata_for_create(&mut resource);
    Some(resource)
}

/// `resource.create`, `resource.apply` and `resource.replace`.
impl Perform for ResourceDocuments {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let command = match action {
            Action::ResourceCreate(_) => DocumentWrite::Create(context.semantics.create_existing),
            Action::ResourceReplace(_) => DocumentWrite::Replace,
            _ => DocumentWrite::Apply,
        };
        let store = context.store(action)?;
        let release = context.release(store).await;
        let interrupt = context.interrupt.as_ref();
        let mut clock = PhaseClock::new(context.progress.printer());
        clock.mark("read the release");
        Ok(
            write_documents_timed(store, self, command, mode, interrupt, &release, &mut clock)
                .await?,
        )
    }

    /// A second create fails (or, with skip, hides that the first one ran); apply and replace
    /// write what the documents say again.
    fn is_idempotent(&self, action: &Action) -> bool {
        !matches!(action, Action::ResourceCreate(_))
    }
}
