//! `resource.label-each`: one label set on (or removed from) many resources, a batch at a time.
//!
//! [`label_batch`] handles one batch of names (at most the datastore's batch limit, 128 on etcd):
//! it reads them together (`read_many`), decides each on what is stored — a resource that already
//! is as the step leaves it is not written, which is how an interrupted batch is re-checked rather
//! than applied again — validates the changed ones, and writes them as one guarded transaction,
//! each update conditional on the revision it read. A refused guard (someone changed that resource
//! in between) re-reads and re-decides only that resource; the others of its transaction, not
//! applied, are sent again as they are. [`label_all`] runs every batch without books (dry-runs,
//! postconditions aside); an upgrade run drives the batches itself (`exec/execute.rs`) and records
//! after each how many items are done, for per-item resume. The batches' undo on failure is not
//! here: each batch is whole, and the step's items before it stay done (a plan step moves
//! forward; its resume continues).

use crate::datastore::{Datastore, StoreError, Write, WriteOutcome};
use crate::plan::action::ResourceLabelEach;
use crate::release::ApiRelease;
use crate::resource::{Resource, ResourceKey};

use super::{
    CONFLICT_ATTEMPTS, CONFLICT_PAUSE, ResourceActionError, prepare_for_write, store_error,
    target_key, writable,
};
use super::{ExistingPolicy, Outcome, RunMode, WriteSemantics, diff, store_rules};
use crate::exec::actions::{Context, Held, Perform, Performed};
use crate::plan::Action;

/// What the batches of a label step did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LabelTally {
    /// Resources written.
    pub changed: usize,
    /// Resources already as the step leaves them (not written).
    pub unchanged: usize,
}

impl LabelTally {
    pub fn add(&mut self, other: LabelTally) {
        self.changed += other.changed;
        self.unchanged += other.unchanged;
    }

    /// One line about `each` after this tally, e.g. `set label k on 3 HostEndpoint(s); 2 already
    /// had it`.
    pub fn summary(&self, each: &ResourceLabelEach, mode: RunMode) -> String {
        let would = match mode {
            RunMode::DryRun => "would ",
            RunMode::Execute => "",
        };
        let (verb, already) = match each.remove {
            true => ("remove label", "already without it"),
            false => ("set label", "already had it"),
        };
        let preposition = if each.remove { "from" } else { "on" };
        let mut summary = format!(
            "{would}{verb} {} {preposition} {} {}(s); {} {already}",
            each.key, self.changed, each.kind, self.unchanged
        );
        if mode == RunMode::DryRun {
            // Each step of a dry run sees the datastore as it is, not as earlier steps leave it.
            summary.push_str(" (as stored now; an earlier step may change that)");
        }
        summary
    }
}

/// How many names one batch holds against `store`: its batch limit of writes.
pub fn batch_size(store: &dyn Datastore) -> usize {
    store.batch_limits().writes.max(1)
}

/// Labels every name of `each`, a batch at a time, without books.
pub async fn label_all(
    store: &dyn Datastore,
    each: &ResourceLabelEach,
    semantics: WriteSemantics,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    let mut tally = LabelTally::default();
    let mut transcript = Vec::new();
    for names in each.names.chunks(batch_size(store)) {
        let batch = label_batch(store, each, names, semantics, mode, release).await?;
        tally.add(batch.tally);
        transcript.extend(batch.transcript);
    }
    let summary = tally.summary(each, mode);
    transcript.push(summary.clone());
    Ok(Outcome {
        summary,
        transcript,
        output: None,
    })
}

/// What one batch did.
#[derive(Debug, Default)]
pub struct BatchDone {
    pub tally: LabelTally,
    /// In dry-run, each document as it would be written.
    pub transcript: Vec<String>,
}

/// What one resource of a batch needs.
enum Decision {
    /// Already as the step leaves it.
    Unchanged,
    /// The resource with the label changed, to be written on the revision it was read at.
    Write(Box<Resource>),
}

/// Labels the resources `names` of `each` (at most one batch: see [`batch_size`]): one read of
/// them all, then one guarded transaction of those that change; a refused guard re-reads that
/// resource alone.
pub async fn label_batch(
    store: &dyn Datastore,
    each: &ResourceLabelEach,
    names: &[String],
    semantics: WriteSemantics,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<BatchDone, ResourceActionError> {
    let mut done = BatchDone::default();
    let keys: Vec<ResourceKey> = names
        .iter()
        .map(|name| target_key(each.kind, each.namespace.as_deref(), name))
        .collect();
    let Some(first) = keys.first() else {
        return Ok(done);
    };
    writable(first)?;
    let stored = store
        .read_many(&keys)
        .await
        .map_err(|error| batch_read_error(&keys, error))?;
    let mut pending: Vec<Resource> = Vec::new();
    // A dry run shows each write as a diff against what is stored, so it keeps what it read.
    let mut before: Vec<Resource> = Vec::new();
    for ((key, name), stored) in keys.iter().zip(names).zip(stored) {
        let stored =
            stored.ok_or_else(|| store_error("read", key)(StoreError::NotFound(key.clone())))?;
        let kept = (mode == RunMode::DryRun).then(|| stored.clone());
        match decide(each, name, stored, semantics, release)? {
            Decision::Unchanged => done.tally.unchanged += 1,
            Decision::Write(resource) => {
                pending.push(*resource);
                before.extend(kept);
            }
        }
    }
    store_rules::check_writes(store, &pending).await?;
    if mode == RunMode::DryRun {
        for (stored, resource) in before.iter().zip(&pending) {
            let header = format!("would update {} (label {})", resource.key(), each.key);
            done.transcript
                .extend(diff::update_lines(&header, stored, resource));
        }
        done.tally.changed = pending.len();
        return Ok(done);
    }
    let mut attempt = 1;
    while !pending.is_empty() {
        let writes: Vec<Write> = pending.drain(..).map(Write::Update).collect();
        let outcome = store.write_batch(&writes).await;
        let mut refused: Vec<ResourceKey> = Vec::new();
        for (write, result) in writes.into_iter().zip(outcome.outcomes) {
            let Write::Update(resource) = write else {
                continue;
            };
            match result {
                WriteOutcome::Applied { .. } => done.tally.changed += 1,
                WriteOutcome::NotApplied => pending.push(resource),
                WriteOutcome::Refused {
                    error: StoreError::Conflict { .. },
                    current,
                } => match current {
                    // Re-decided on what is stored now; only this resource is read again.
                    Some(current) => {
                        match decide(each, &resource.metadata.name, *current, semantics, release)? {
                            Decision::Unchanged => done.tally.unchanged += 1,
                            Decision::Write(changed) => pending.push(*changed),
                        }
                    }
                    None => refused.push(resource.key()),
                },
                WriteOutcome::Refused { error, .. } => {
                    return Err(store_error("update", &resource.key())(error));
                }
                // The answer was lost: what is stored now says whether it took effect.
                WriteOutcome::Unknown => refused.push(resource.key()),
            }
        }
        for key in refused {
            let current = store.get(&key).await.map_err(store_error("read", &key))?;
            match decide(each, &key.name, current, semantics, release)? {
                Decision::Unchanged => done.tally.changed += 1,
                Decision::Write(changed) => pending.push(*changed),
            }
        }
        if let Some(failure) = outcome.failure
            && !pending.is_empty()
            && !matches!(failure, StoreError::Conflict { .. })
        {
            let key = pending[0].key();
            return Err(store_error("update", &key)(failure));
        }
        if pending.is_empty() {
            break;
        }
        if attempt >= CONFLICT_ATTEMPTS {
            let key = pending[0].key();
            return Err(ResourceActionError::GaveUp {
                key: key.clone(),
                source: Box::new(StoreError::Conflict {
                    key,
                    expected: pending[0]
                        .metadata
                        .resource_version
                        .clone()
                        .unwrap_or_default(),
                    current: String::new(),
                }),
            });
        }
        attempt += 1;
        tokio::time::sleep(CONFLICT_PAUSE).await;
    }
    Ok(done)
}

/// Whether the label of `each` is as the step leaves it on every resource: its postcondition. A
/// resource that is gone has no label to remove, and lacks the one to set.
pub async fn label_all_hold(
    store: &dyn Datastore,
    each: &ResourceLabelEach,
) -> Result<bool, ResourceActionError> {
    for names in each.names.chunks(batch_size(store)) {
        let keys: Vec<ResourceKey> = names
            .iter()
            .map(|name| target_key(each.kind, each.namespace.as_deref(), name))
            .collect();
        let stored = store
            .read_many(&keys)
            .await
            .map_err(|error| batch_read_error(&keys, error))?;
        let holds = stored.iter().all(|resource| match resource {
            None => each.remove,
            Some(resource) => label_holds(each, resource),
        });
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

fn label_holds(each: &ResourceLabelEach, resource: &Resource) -> bool {
    let current = resource.metadata.labels.get(&each.key);
    match each.remove {
        true => current.is_none(),
        false => current.map(String::as_str) == Some(each.value.as_deref().unwrap_or_default()),
    }
}

/// What `stored` needs: nothing when its label is already as wanted, else the changed resource
/// (validated for `release`). Without `overwrite`, another value refuses the step; removing a label
/// that is not there is done in an upgrade plan (`semantics`), refused otherwise.
fn decide(
    each: &ResourceLabelEach,
    name: &str,
    mut stored: Resource,
    semantics: WriteSemantics,
    release: &ApiRelease,
) -> Result<Decision, ResourceActionError> {
    if label_holds(each, &stored) {
        let absent = each.remove && !stored.metadata.labels.contains_key(&each.key);
        // A removal of a label that was never there fails outside upgrade plans (as `netctl label`).
        if absent && semantics.delete_missing != ExistingPolicy::Skip {
            return Err(ResourceActionError::LabelMissing {
                kind: each.kind.as_str().to_ascii_lowercase(),
                name: name.to_string(),
                key: each.key.clone(),
            });
        }
        return Ok(Decision::Unchanged);
    }
    let labels = &mut stored.metadata.labels;
    if each.remove {
        labels.remove(&each.key);
    } else {
        if labels.contains_key(&each.key) && !each.overwrite {
            return Err(ResourceActionError::LabelPresent {
                kind: each.kind.as_str().to_ascii_lowercase(),
                name: name.to_string(),
                key: each.key.clone(),
            });
        }
        labels.insert(each.key.clone(), each.value.clone().unwrap_or_default());
    }
    prepare_for_write(&mut stored, release)?;
    Ok(Decision::Write(Box::new(stored)))
}

/// The error of a batch's read, named by its first resource (a batch is never empty).
fn batch_read_error(keys: &[ResourceKey], error: StoreError) -> ResourceActionError {
    store_error("read", &keys[0])(error)
}

/// `resource.label-each`; as a postcondition, every resource has the label.
impl Perform for ResourceLabelEach {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let release = context.release(store).await;
        Ok(label_all(store, self, context.semantics, mode, &release).await?)
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        Ok(label_all_hold(context.store(action)?, self).await?)
    }

    /// Each batch re-reads its resources and writes only those not yet labelled.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}
