//! What a [`TestStore`](super::TestStore) hook sees and answers: the [`Call`] about to be served
//! and the [`Cue`] that says what becomes of it (served, delayed, refused, or served with its
//! answer lost).

use std::time::Duration;

use crate::datastore::StoreError;
use crate::resource::{Kind, ResourceKey};

/// The operations of the `Datastore` trait, as hooks and counters name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    Check,
    Get,
    /// One page of a list (`list_page` or `fetch_page`).
    List,
    /// The decoding of a page `fetch_page` handed out, when the caller decodes it.
    Decode,
    Create,
    Update,
    Delete,
    ReadMany,
    WriteBatch,
}

impl Operation {
    pub const ALL: [Operation; 9] = [
        Operation::Check,
        Operation::Get,
        Operation::List,
        Operation::Decode,
        Operation::Create,
        Operation::Update,
        Operation::Delete,
        Operation::ReadMany,
        Operation::WriteBatch,
    ];

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// One call to the store, as its hooks see it before it is served.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub operation: Operation,
    /// 1 for the first call of this operation on this store, 2 for the second, …
    pub number: usize,
    /// What the call reads or writes: the key of a get, create, update or delete; every key of a
    /// `read_many` or `write_batch`, in order; empty for checks and lists.
    pub keys: Vec<ResourceKey>,
    /// The kind listed (lists and decodes).
    pub kind: Option<Kind>,
    /// [`Operation::List`]: the continue token the page was asked with (`None`: the first page).
    /// [`Operation::Decode`]: the continue token of the page being decoded (`None`: the last page).
    pub continue_token: Option<String>,
}

/// What a hook makes of a call: [`Cue::pass`] serves it as the store would. Cues of several
/// hooks on one call add up: the delays are summed, the first failure wins.
#[derive(Debug, Default)]
#[must_use]
pub struct Cue {
    pub(super) delay: Duration,
    pub(super) failure: Option<Failure>,
}

#[derive(Debug)]
pub(super) enum Failure {
    /// Refused before anything happened.
    Before(StoreError),
    /// Served, and then the answer lost: the caller gets the error although the write applied
    /// (a batch's writes are all [`crate::datastore::WriteOutcome::Unknown`]).
    AnswerLost(StoreError),
}

impl Cue {
    /// Serve the call as the store would.
    pub fn pass() -> Cue {
        Cue::default()
    }

    /// Serve the call after `delay` (a slow datastore; the call counts as in flight meanwhile).
    pub fn delay(delay: Duration) -> Cue {
        Cue {
            delay,
            failure: None,
        }
    }

    /// Refuse the call with `error`; nothing is read or written. A `write_batch` answers every
    /// write as not applied, with `error` as the batch's failure.
    pub fn fail(error: StoreError) -> Cue {
        Cue {
            delay: Duration::ZERO,
            failure: Some(Failure::Before(error)),
        }
    }

    /// Serve the call, then lose its answer: the write is applied and the caller gets `error`
    /// (as when a connection drops after etcd committed).
    pub fn lose_answer(error: StoreError) -> Cue {
        Cue {
            delay: Duration::ZERO,
            failure: Some(Failure::AnswerLost(error)),
        }
    }

    /// The same cue, after `delay` more.
    pub fn after(mut self, delay: Duration) -> Cue {
        self.delay += delay;
        self
    }

    pub(super) fn and(mut self, other: Cue) -> Cue {
        self.delay += other.delay;
        if self.failure.is_none() {
            self.failure = other.failure;
        }
        self
    }
}
