//! `resource.delete`: every target of a command, or none.
//!
//! Every target is checked before anything is deleted: read-only kinds are refused, the tier rules
//! are checked, and what is stored is read (in key ranges). A target that does not exist (unless
//! missing ones count as done: `--skip-not-exists`, and upgrade steps) or whose stored revision is not
//! the `resourceVersion` its document names refuses the whole command, each such target named.
//! Deleting a Node on etcd takes what belongs to it along, as upstream does. Then the deletes go out
//! in batches (`write.rs`), each guarded by the revision read; one changed meanwhile is
//! deleted at its new revision unless the user named one, one deleted meanwhile counts as done.
//! When the datastore fails half way or Ctrl-C / SIGTERM arrives, what was deleted is created again
//! (`undo.rs`).

use std::collections::BTreeSet;

use futures_util::StreamExt;

use crate::datastore::{Datastore, DatastoreType, StoreError, Write};
use crate::exec::interrupt::Interrupt;
use crate::plan::action::ResourceDeletion;
use crate::resource::{Kind, Resource, ResourceKey};

use super::undo::undo;
use super::write::{Change, Decision, Planned, Settled, Tally, Writer, refused_too_often};
use super::{
    ExistingPolicy, ResourceActionError, Undeletable, WriteSemantics, read_stored, store_error,
    target_key, writable,
};
use super::{Outcome, RunMode, store_rules};
use crate::exec::actions::{Context, Perform, Performed};
use crate::plan::Action;

/// One resource to delete, as read.
struct Target {
    key: ResourceKey,
    /// The revision the user named, if any.
    pinned: Option<String>,
    /// Set for a resource deleted because the Node it belongs to is.
    belongs_to: Option<String>,
}

/// Deletes every target of `deletion`, or none (see the module documentation).
pub async fn delete(
    store: &dyn Datastore,
    deletion: &ResourceDeletion,
    semantics: WriteSemantics,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
) -> Result<Outcome, ResourceActionError> {
    let mut targets: Vec<Target> = Vec::with_capacity(deletion.targets.len());
    let mut seen = BTreeSet::new();
    for target in &deletion.targets {
        let key = target_key(target.kind, target.namespace.as_deref(), &target.name);
        writable(&key)?;
        if seen.insert(key.clone()) {
            targets.push(Target {
                key,
                pinned: target.resource_version.clone(),
                belongs_to: None,
            });
        }
    }
    for target in &targets {
        store_rules::check_delete(store, &target.key).await?;
    }
    // Only where netctl owns node deletion: on Kubernetes, Nodes belong to the cluster and the
    // datastore refuses to delete them, so nothing may be deleted on their behalf first.
    let nodes: BTreeSet<String> = targets
        .iter()
        .filter(|target| target.key.kind == Kind::Node)
        .map(|target| target.key.name.clone())
        .collect();
    if store.kind() == DatastoreType::EtcdV3 && !nodes.is_empty() {
        let dependents = store_rules::node_dependents(store, &nodes)
            .await
            .map_err(store_error("list the dependents of", &targets[0].key))?;
        // What belongs to a node goes before it.
        let mut all: Vec<Target> = dependents
            .into_iter()
            .filter(|(key, _)| seen.insert(key.clone()))
            .map(|(key, node)| Target {
                key,
                pinned: None,
                belongs_to: Some(node),
            })
            .collect();
        all.append(&mut targets);
        targets = all;
    }

    let (found, tally) = read_targets(store, &targets, semantics).await?;
    if mode == RunMode::DryRun {
        return Ok(rehearse(&targets, &found, tally, semantics));
    }
    let mut writer = Writer::new(store, interrupt, "delete");
    writer.tally = tally;
    let planned = targets.iter().zip(found).filter_map(|(target, stored)| {
        let stored = stored?;
        let revision = stored.metadata.resource_version.clone().unwrap_or_default();
        let write = Write::Delete {
            key: target.key.clone(),
            revision,
        };
        Some(Planned::new(write, Change::Deleted, Some(stored)).pinned(target.pinned.is_some()))
    });
    let result = writer.run(planned, decide_again).await;
    match result {
        Ok(()) => Ok(Outcome {
            summary: summary(&targets, &writer.tally, false),
            transcript: Vec::new(),
            output: None,
        }),
        Err(stop) => Err(undo(store, interrupt, writer.ledger, stop, &|_| None).await),
    }
}

/// Reads every target; refuses the command, naming each, when one is missing (unless that counts
/// as done) or not at the revision its document names.
async fn read_targets(
    store: &dyn Datastore,
    targets: &[Target],
    semantics: WriteSemantics,
) -> Result<(Vec<Option<Resource>>, Tally), ResourceActionError> {
    let mut found = Vec::with_capacity(targets.len());
    let mut problems = Vec::new();
    let mut tally = Tally::default();
    let mut reads = std::pin::pin!(read_stored(store, targets, |target: &Target| {
        target.key.clone()
    }));
    while let Some((chunk, keys, stored)) = reads.next().await {
        let stored = stored.map_err(store_error("read", &keys[0]))?;
        for (target, stored) in chunk.iter().zip(stored) {
            match (&stored, &target.pinned) {
                (None, _) if semantics.delete_missing == ExistingPolicy::Skip => {
                    tally.settled(target.key.kind, Settled::AlreadyGone);
                }
                (None, _) => problems.push(Undeletable(StoreError::NotFound(target.key.clone()))),
                (Some(stored), Some(expected))
                    if stored.metadata.resource_version.as_ref() != Some(expected) =>
                {
                    problems.push(Undeletable(StoreError::Conflict {
                        key: target.key.clone(),
                        expected: expected.clone(),
                        current: stored.metadata.resource_version.clone().unwrap_or_default(),
                    }));
                }
                _ => {}
            }
            found.push(stored);
        }
    }
    if !problems.is_empty() {
        return Err(ResourceActionError::NotDeletable { problems });
    }
    Ok((found, tally))
}

/// A delete refused because the resource changed or went since it was read.
fn decide_again(
    planned: Planned,
    error: StoreError,
    current: Option<Resource>,
) -> Result<Decision, ResourceActionError> {
    let key = planned.write.key();
    let Some(current) = current else {
        // Gone already (someone else deleted it): the goal holds.
        return Ok(Decision::Settle(key.kind, Settled::AlreadyGone));
    };
    if planned.pinned {
        return Err(store_error("delete", &key)(error));
    }
    if refused_too_often(&planned) {
        return Err(ResourceActionError::GaveUp {
            key,
            source: Box::new(error),
        });
    }
    let revision = current
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let mut next = Planned::new(
        Write::Delete { key, revision },
        Change::Deleted,
        Some(current),
    );
    next.refusals = planned.refusals;
    Ok(Decision::Retry(Box::new(next)))
}

/// The dry run: what each target would come to.
fn rehearse(
    targets: &[Target],
    found: &[Option<Resource>],
    mut tally: Tally,
    semantics: WriteSemantics,
) -> Outcome {
    let mut transcript = Vec::new();
    for (target, stored) in targets.iter().zip(found) {
        let key = &target.key;
        let Some(stored) = stored else {
            transcript.push(match semantics.delete_missing {
                // In an upgrade plan a rehearsed earlier step may create it; the real run deletes it then.
                ExistingPolicy::Skip => format!(
                    "{key} does not exist now: nothing to delete unless an earlier step creates it"
                ),
                _ => format!("{key} does not exist; skipped"),
            });
            continue;
        };
        tally.changed(key.kind, Change::Deleted);
        let revision = stored.metadata.resource_version.as_deref().unwrap_or("?");
        transcript.push(match &target.belongs_to {
            Some(node) => format!("- would delete {key} (belongs to Node({node}))"),
            None => format!("- would delete {key} (revision {revision})"),
        });
    }
    let summary = summary(targets, &tally, true);
    Outcome {
        summary,
        transcript,
        output: None,
    }
}

/// `deleted HostEndpoint(h1)`, `deleted Node(n1) and 3 resource(s) that belonged to it`, or for
/// several targets `deleted 3 resource(s) (HostEndpoint: 2 deleted, 1 already gone)`; `would ...`
/// in a dry run.
fn summary(targets: &[Target], tally: &Tally, dry_run: bool) -> String {
    let deleted = if dry_run { "would delete" } else { "deleted" };
    let named: Vec<&Target> = targets.iter().filter(|t| t.belongs_to.is_none()).collect();
    let dependents = targets.len() - named.len();
    match (named.as_slice(), dependents) {
        ([one], _) if tally.deleted() == 0 => {
            format!("{deleted} nothing: {} does not exist", one.key)
        }
        ([one], 0) => format!("{deleted} {}", one.key),
        ([one], count) => {
            format!(
                "{deleted} {} and {count} resource(s) that belonged to it",
                one.key
            )
        }
        _ => format!(
            "{deleted} {} resource(s) ({})",
            tally.total(),
            tally.describe()
        ),
    }
}

/// `resource.delete`.
impl Perform for ResourceDeletion {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let interrupt = context.interrupt.as_ref();
        Ok(delete(store, self, context.semantics, mode, interrupt).await?)
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}
