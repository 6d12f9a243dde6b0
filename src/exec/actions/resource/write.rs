//! Sending the writes of a create, apply, replace or delete in batches, and keeping the books an
//! undo needs.
//!
//! The commands decide what to write (`apply.rs`, `delete.rs`) after reading
//! what is stored; the [`Writer`] sends those writes in batches of the datastore's size
//! ([`Datastore::write_batch`]: one etcd transaction each) and, per write, records what was applied
//! (the [`Ledger`] and the per-kind [`Tally`]), hands a refused write back to the command to decide
//! again on what is stored now (a conflict costs one resource, not the batch), sends again what a
//! refused transaction did not apply, and keeps what may have applied unseen. Up to the datastore's
//! number of batches are out at once (two on etcd, one elsewhere); before sending one it looks for
//! Ctrl-C or SIGTERM. It stops at the first failure or signal — sending nothing more, awaiting the
//! answers of the batches out — and says why ([`Stop`]); undoing is `undo.rs`'s.

use std::collections::{BTreeMap, VecDeque};

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesOrdered;

use crate::datastore::{BatchLimits, BatchOutcome, Datastore, StoreError, Write, WriteOutcome};
use crate::exec::interrupt::{Interrupt, StopSignal};
use crate::resource::{Kind, Resource, ResourceKey};

use super::{BatchName, CONFLICT_ATTEMPTS, ResourceActionError};

/// What a write changes, for the summary and for its undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Change {
    Created,
    Configured,
    Deleted,
}

/// How a document ended without a write of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settled {
    /// Identical to what is stored: not written.
    Unchanged,
    /// `create --skip-exists` (or a plan step) found it there.
    AlreadyExisted,
    /// A delete found it gone.
    AlreadyGone,
}

/// One write to send, with what deciding again and undoing need.
#[derive(Debug)]
pub(super) struct Planned {
    pub write: Write,
    pub change: Change,
    /// The resource as stored before an update or a delete: what an undo puts back.
    pub before: Option<Resource>,
    /// The user named the revision to write at: a refusal is final.
    pub pinned: bool,
    /// Index of the command's document this write comes from (for a recovery file).
    pub document: Option<usize>,
    /// How many times it has been refused so far.
    pub refusals: u32,
}

impl Planned {
    pub fn new(write: Write, change: Change, before: Option<Resource>) -> Planned {
        Planned {
            write,
            change,
            before,
            pinned: false,
            document: None,
            refusals: 0,
        }
    }

    pub fn pinned(mut self, pinned: bool) -> Planned {
        self.pinned = pinned;
        self
    }

    pub fn with_document(mut self, index: usize) -> Planned {
        self.document = Some(index);
        self
    }
}

/// A [`Planned`] write's books while its write is out in a batch (the writes are lent to the
/// datastore, not copied).
#[derive(Debug)]
struct Books {
    change: Change,
    before: Option<Resource>,
    pinned: bool,
    document: Option<usize>,
    refusals: u32,
}

impl Planned {
    fn into_parts(self) -> (Write, Books) {
        let books = Books {
            change: self.change,
            before: self.before,
            pinned: self.pinned,
            document: self.document,
            refusals: self.refusals,
        };
        (self.write, books)
    }

    fn from_parts(write: Write, books: Books) -> Planned {
        Planned {
            write,
            change: books.change,
            before: books.before,
            pinned: books.pinned,
            document: books.document,
            refusals: books.refusals,
        }
    }
}

/// What the command decides about a refused write.
pub(super) enum Decision {
    /// Send this instead (in a later batch).
    Retry(Box<Planned>),
    /// Nothing to write after all.
    Settle(Kind, Settled),
}

/// One applied write, as an undo needs it: what to restore and the revision its guard is on.
#[derive(Debug)]
pub(super) struct Done {
    pub key: ResourceKey,
    pub change: Change,
    /// The revision the write produced (an undo is conditional on it).
    pub revision: String,
    /// Boxed: the ledger of an apply of ten thousand new resources holds none, and an unboxed
    /// `None` still took a resource's size.
    pub before: Option<Box<Resource>>,
    pub document: Option<usize>,
}

/// What a command has written so far.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// Applied, in order.
    pub done: Vec<Done>,
    /// Sent, but the answer was lost: they may or may not have been applied.
    pub unknown: Vec<Planned>,
}

impl Ledger {
    pub fn is_empty(&self) -> bool {
        self.done.is_empty() && self.unknown.is_empty()
    }
}

/// Per kind, how many resources were created, configured, unchanged, ... (kubectl's words).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Tally(BTreeMap<Kind, [usize; 6]>);

/// The words of the tally's columns, in order.
const TALLY_WORDS: [&str; 6] = [
    "created",
    "configured",
    "unchanged",
    "already existed",
    "deleted",
    "already gone",
];

impl Tally {
    pub fn changed(&mut self, kind: Kind, change: Change) {
        let column = match change {
            Change::Created => 0,
            Change::Configured => 1,
            Change::Deleted => 4,
        };
        self.0.entry(kind).or_default()[column] += 1;
    }

    pub fn settled(&mut self, kind: Kind, settled: Settled) {
        let column = match settled {
            Settled::Unchanged => 2,
            Settled::AlreadyExisted => 3,
            Settled::AlreadyGone => 5,
        };
        self.0.entry(kind).or_default()[column] += 1;
    }

    /// How many resources were deleted.
    pub fn deleted(&self) -> usize {
        self.0.values().map(|counts| counts[4]).sum()
    }

    pub fn total(&self) -> usize {
        self.0.values().flatten().sum()
    }

    /// `HostEndpoint: 2 created, 1 unchanged; Tier: 1 configured` (kinds in order, no zeros).
    pub fn describe(&self) -> String {
        self.0
            .iter()
            .map(|(kind, counts)| {
                let parts: Vec<String> = counts
                    .iter()
                    .zip(TALLY_WORDS)
                    .filter(|(count, _)| **count > 0)
                    .map(|(count, word)| format!("{count} {word}"))
                    .collect();
                format!("{kind}: {}", parts.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Why the writes stopped before all were sent.
#[derive(Debug)]
pub(super) enum Stop {
    Failed(ResourceActionError),
    Signal(StopSignal),
}

/// After this many batches in a row in which etcd neither applied nor refused anything, the
/// writer gives up (a transaction refused without a refused write cannot happen; this bounds it).
const IDLE_BATCHES: u32 = 3;

/// Sends writes in batches (see the module documentation).
pub(super) struct Writer<'a> {
    store: &'a dyn Datastore,
    interrupt: Option<&'a Interrupt>,
    /// `apply`, `create`, `replace` or `delete`, for messages.
    verb: &'static str,
    pub ledger: Ledger,
    pub tally: Tally,
}

impl<'a> Writer<'a> {
    pub fn new(
        store: &'a dyn Datastore,
        interrupt: Option<&'a Interrupt>,
        verb: &'static str,
    ) -> Writer<'a> {
        Writer {
            store,
            interrupt,
            verb,
            ledger: Ledger::default(),
            tally: Tally::default(),
        }
    }

    /// Sends every write of `planned`; a refused one goes to `decide` with what is stored now
    /// (`None`: nothing is). Up to the datastore's [`BatchLimits::in_flight`] batches are out at
    /// once; answers are taken in the order the batches were sent. Returns when all are applied or
    /// settled, or at the first failure or signal — after the batches still out have answered, so
    /// the books hold every write that applied.
    pub async fn run(
        &mut self,
        planned: impl Iterator<Item = Planned>,
        mut decide: impl FnMut(
            Planned,
            StoreError,
            Option<Resource>,
        ) -> Result<Decision, ResourceActionError>,
    ) -> Result<(), Stop> {
        let limits = self.store.batch_limits();
        let mut source = planned.fuse();
        let mut again: VecDeque<Planned> = VecDeque::new();
        let mut out: FuturesOrdered<BoxFuture<'a, Answered>> = FuturesOrdered::new();
        let mut stop: Option<Stop> = None;
        let mut idle = 0;
        loop {
            while stop.is_none() && out.len() < limits.in_flight.max(1) {
                let batch = next_batch(&mut again, &mut source, limits);
                if batch.is_empty() {
                    break;
                }
                // The safe point: no batch is sent once a signal has come.
                if let Some(signal) = self.interrupt.and_then(Interrupt::received) {
                    stop = Some(Stop::Signal(signal));
                    break;
                }
                let (writes, books): (Vec<Write>, Vec<Books>) =
                    batch.into_iter().map(Planned::into_parts).unzip();
                let store = self.store;
                out.push_back(Box::pin(async move {
                    let outcome = store.write_batch(&writes).await;
                    Answered {
                        writes,
                        books,
                        outcome,
                    }
                }));
            }
            let Some(answered) = out.next().await else {
                return match stop {
                    Some(stop) => Err(stop),
                    None => Ok(()),
                };
            };
            let Answered {
                writes,
                books,
                outcome,
            } = answered;
            // The write the failure is about, or the whole batch (one transaction).
            let name = match outcome.failed_write.and_then(|index| writes.get(index)) {
                Some(failed) => BatchName {
                    first: Some(failed.key()),
                    count: 1,
                },
                None => BatchName {
                    first: Some(writes[0].key()),
                    count: writes.len(),
                },
            };
            let mut progress = false;
            let sent = writes.into_iter().zip(books);
            for ((write, books), result) in sent.zip(outcome.outcomes) {
                let planned = Planned::from_parts(write, books);
                match result {
                    WriteOutcome::Applied { revision } => {
                        progress = true;
                        let key = planned.write.key();
                        self.tally.changed(key.kind, planned.change);
                        self.ledger.done.push(Done {
                            key,
                            change: planned.change,
                            revision,
                            before: planned.before.map(Box::new),
                            document: planned.document,
                        });
                    }
                    // Once the run stops, a refused write is not decided again: it was not applied.
                    WriteOutcome::Refused { .. } if stop.is_some() => {}
                    WriteOutcome::Refused { error, current } => {
                        progress = true;
                        let current = match current {
                            Some(current) => Ok(Some(*current)),
                            None => self.read(&planned, &error).await,
                        };
                        let mut planned = planned;
                        planned.refusals += 1;
                        match current.and_then(|current| decide(planned, error, current)) {
                            Ok(Decision::Retry(next)) => again.push_back(*next),
                            Ok(Decision::Settle(kind, settled)) => {
                                self.tally.settled(kind, settled)
                            }
                            Err(error) => stop = Some(Stop::Failed(error)),
                        }
                    }
                    WriteOutcome::NotApplied => again.push_back(planned),
                    WriteOutcome::Unknown => self.ledger.unknown.push(planned),
                }
            }
            if let Some(failure) = outcome.failure {
                stop.get_or_insert(Stop::Failed(ResourceActionError::Batch {
                    operation: self.verb,
                    resources: name.clone(),
                    source: Box::new(failure),
                }));
            }
            idle = if progress { 0 } else { idle + 1 };
            if idle >= IDLE_BATCHES {
                stop.get_or_insert(Stop::Failed(ResourceActionError::Batch {
                    operation: self.verb,
                    resources: name,
                    source: Box::new(StoreError::failed(
                        "a batch of writes",
                        crate::datastore::batch::UnexplainedRefusal,
                    )),
                }));
            }
        }
    }

    /// What is stored now for a refused write whose answer did not say (one read of one object).
    async fn read(
        &self,
        planned: &Planned,
        error: &StoreError,
    ) -> Result<Option<Resource>, ResourceActionError> {
        if matches!(error, StoreError::NotFound(_)) {
            return Ok(None);
        }
        let key = planned.write.key();
        match self.store.get(&key).await {
            Ok(resource) => Ok(Some(resource)),
            Err(StoreError::NotFound(_)) => Ok(None),
            Err(source) => Err(ResourceActionError::Store {
                operation: "read",
                key,
                source: Box::new(source),
            }),
        }
    }
}

/// A batch's writes, lent to the datastore and handed back with its answer.
struct Answered {
    writes: Vec<Write>,
    books: Vec<Books>,
    outcome: BatchOutcome,
}

/// The next batch within `limits`: writes to send again first, then new ones (empty: nothing is
/// left to send).
fn next_batch(
    again: &mut VecDeque<Planned>,
    source: &mut impl Iterator<Item = Planned>,
    limits: BatchLimits,
) -> Vec<Planned> {
    let mut batch: Vec<Planned> = Vec::new();
    let mut bytes = 0;
    while batch.len() < limits.writes.max(1) {
        let Some(next) = again.pop_front().or_else(|| source.next()) else {
            break;
        };
        let size = next.write.size();
        if !batch.is_empty() && bytes + size > limits.bytes {
            again.push_front(next);
            break;
        }
        bytes += size;
        batch.push(next);
    }
    batch
}

/// Whether a resource was refused [`CONFLICT_ATTEMPTS`] times: someone keeps changing it, and
/// the command gives up on it (as upstream after five conflicts).
pub(super) fn refused_too_often(planned: &Planned) -> bool {
    planned.refusals >= CONFLICT_ATTEMPTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_names_each_kind_with_kubectl_words_and_no_zeros() {
        let mut tally = Tally::default();
        tally.changed(Kind::HostEndpoint, Change::Created);
        tally.changed(Kind::HostEndpoint, Change::Created);
        tally.settled(Kind::HostEndpoint, Settled::Unchanged);
        tally.changed(Kind::Tier, Change::Configured);
        assert_eq!(tally.total(), 4);
        assert_eq!(
            tally.describe(),
            "HostEndpoint: 2 created, 1 unchanged; Tier: 1 configured"
        );
    }
}
