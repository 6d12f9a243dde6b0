//! Many conditional writes at once: the batch half of the [`Datastore`] trait.
//!
//! A caller that writes many resources (`apply -f` of ten thousand documents, the undo of a
//! half-written file, a step that labels every host endpoint) hands the datastore a batch of
//! [`Write`]s, each guarded by the revision the caller read (a create by "must not exist"), and gets
//! back one [`WriteOutcome`] per write: applied (with the new revision), refused because its guard
//! failed (with the resource as stored now, when the backend read it), not applied (send it again),
//! or unknown (the answer was lost). A batch is at most [`BatchLimits`] big; the caller cuts its
//! writes into batches ([`batches`]) and decides between them what to send next, so a conflict
//! costs a retry of one resource and an interruption lands between batches.
//!
//! etcd applies a batch as one transaction: all of it or none of it. Backends without
//! multi-object transactions (Kubernetes) use [`write_one_by_one`]: the same outcomes, per object,
//! in order, stopping at the first failure that is not a guard. Callers treat both alike: what is
//! applied is recorded, what is refused is decided again, what is not applied is sent again.
//! Reading what exists ([`Datastore::read_many`]) is the other half: etcd reads key ranges, the
//! default reads one resource at a time.
//!
//! This module knows no kind, no command and no undo; those are the caller's.

use crate::errors::Hint;
use crate::resource::{Resource, ResourceKey};

use super::{Datastore, StoreError};

/// One conditional write of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create a resource that must not exist yet; `uid` and `creationTimestamp` are set when
    /// missing.
    Create(Resource),
    /// Replace a resource whose stored revision must equal its `metadata.resourceVersion`.
    Update(Resource),
    /// Delete a resource whose stored revision must equal `revision`.
    Delete { key: ResourceKey, revision: String },
}

impl Write {
    /// The resource this write is about.
    pub fn key(&self) -> ResourceKey {
        match self {
            Write::Create(resource) | Write::Update(resource) => resource.key(),
            Write::Delete { key, .. } => key.clone(),
        }
    }

    /// The name of the operation, for messages: `create`, `update` or `delete`.
    pub fn operation(&self) -> &'static str {
        match self {
            Write::Create(_) => "create",
            Write::Update(_) => "update",
            Write::Delete { .. } => "delete",
        }
    }

    /// Roughly how many bytes the write adds to a request (its resource's JSON, or its key).
    pub fn size(&self) -> usize {
        match self {
            Write::Create(resource) | Write::Update(resource) => {
                let metadata = &resource.metadata;
                let texts = |map: &std::collections::BTreeMap<String, String>| -> usize {
                    map.iter()
                        .map(|(key, value)| key.len() + value.len() + 6)
                        .sum()
                };
                // The envelope's fixed fields (kind, name, uid, timestamps) fit in 512 bytes.
                512 + json_size(&resource.spec)
                    + json_size(&resource.status)
                    + texts(&metadata.labels)
                    + texts(&metadata.annotations)
            }
            Write::Delete { key, .. } => key.name.len() + 128,
        }
    }
}

/// What became of one write of a batch.
#[derive(Debug)]
pub enum WriteOutcome {
    /// Applied at `revision`: the new `resourceVersion` of a created or updated resource, or the
    /// revision at which it was deleted.
    Applied { revision: String },
    /// Its guard did not hold: `AlreadyExists`, `Conflict` or `NotFound`. `current` is the resource
    /// as stored now when the backend read it together with the answer (etcd does); otherwise the
    /// caller reads it if it needs it.
    Refused {
        error: StoreError,
        current: Option<Box<Resource>>,
    },
    /// Not applied, and nothing speaks against it: another write of its transaction was refused,
    /// or the batch stopped before it. It may be sent again as it is.
    NotApplied,
    /// May or may not have been applied: the answer was lost and could not be checked (the
    /// batch's `failure` says why).
    Unknown,
}

impl WriteOutcome {
    pub fn is_applied(&self) -> bool {
        matches!(self, WriteOutcome::Applied { .. })
    }
}

/// The outcome of a batch: one [`WriteOutcome`] per write, in the order of the writes, and the
/// failure that stopped the batch, if one did (then no write after it was applied).
#[derive(Debug)]
pub struct BatchOutcome {
    pub outcomes: Vec<WriteOutcome>,
    pub failure: Option<StoreError>,
    /// The write the failure belongs to, when it belongs to one (a backend that writes one object
    /// at a time); `None` when it is the whole batch's (an etcd transaction).
    pub failed_write: Option<usize>,
}

impl BatchOutcome {
    /// A batch that ran to its end.
    pub fn done(outcomes: Vec<WriteOutcome>) -> BatchOutcome {
        BatchOutcome {
            outcomes,
            failure: None,
            failed_write: None,
        }
    }

    /// Every write of `count` not applied, because of `failure`.
    pub fn failed(count: usize, failure: StoreError) -> BatchOutcome {
        BatchOutcome {
            outcomes: (0..count).map(|_| WriteOutcome::NotApplied).collect(),
            failure: Some(failure),
            failed_write: None,
        }
    }

    /// Every write of `count` perhaps applied, perhaps not: the answer to `failure` was lost.
    pub fn unknown(count: usize, failure: StoreError) -> BatchOutcome {
        BatchOutcome {
            outcomes: (0..count).map(|_| WriteOutcome::Unknown).collect(),
            failure: Some(failure),
            failed_write: None,
        }
    }
}

/// How big one batch may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Writes per batch: etcd's default `--max-txn-ops` is 128 (for the guards, the writes and the
    /// reads of a refused transaction alike).
    pub writes: usize,
    /// Bytes of resources per batch, under etcd's default `--max-request-bytes` (1.5 MiB). A
    /// resource bigger than this travels alone.
    pub bytes: usize,
    /// Batches a caller may have out at once. One for a backend that writes object by object, in
    /// order (a later batch may depend on an earlier one); etcd takes two, and commits transactions
    /// that arrive together in one fsync (`EtcdStore::batch_limits`).
    pub in_flight: usize,
}

impl BatchLimits {
    /// What an etcd with default settings accepts in one transaction, with room to spare in bytes;
    /// one batch at a time.
    pub const DEFAULT: BatchLimits = BatchLimits {
        writes: 128,
        bytes: 1 << 20,
        in_flight: 1,
    };
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits::DEFAULT
    }
}

/// Cuts `writes` into consecutive batches within `limits`: the ranges of each batch, in order.
/// No batch is empty; a write bigger than the byte limit is a batch of its own.
pub fn batches(writes: &[Write], limits: BatchLimits) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (index, write) in writes.iter().enumerate() {
        let size = write.size();
        let count = index - start;
        if count > 0 && (count >= limits.writes.max(1) || bytes + size > limits.bytes) {
            ranges.push(start..index);
            start = index;
            bytes = 0;
        }
        bytes += size;
    }
    if start < writes.len() {
        ranges.push(start..writes.len());
    }
    ranges
}

/// The batch write of a backend without multi-object transactions: each write on its own, in
/// order, through the single-object calls. A refused guard does not stop the others; any other
/// failure stops the batch there (the write that failed is `Unknown` when its answer may have been
/// lost, else `NotApplied`; the rest are `NotApplied`).
pub async fn write_one_by_one<S: Datastore + ?Sized>(store: &S, writes: &[Write]) -> BatchOutcome {
    let mut outcomes = Vec::with_capacity(writes.len());
    let mut failure = None;
    let mut failed_write = None;
    for write in writes {
        if failure.is_some() {
            outcomes.push(WriteOutcome::NotApplied);
            continue;
        }
        let result = match write {
            Write::Create(resource) => store.create(resource).await.map(revision_of),
            Write::Update(resource) => store.update(resource).await.map(revision_of),
            Write::Delete { key, revision } => store
                .delete(key, Some(revision))
                .await
                .map(|_| String::new()),
        };
        outcomes.push(match result {
            Ok(revision) => WriteOutcome::Applied { revision },
            Err(
                error @ (StoreError::AlreadyExists(_)
                | StoreError::Conflict { .. }
                | StoreError::NotFound(_)),
            ) => WriteOutcome::Refused {
                error,
                current: None,
            },
            Err(error) => {
                let outcome = match may_have_applied(&error) {
                    true => WriteOutcome::Unknown,
                    false => WriteOutcome::NotApplied,
                };
                failure = Some(error);
                failed_write = Some(outcomes.len());
                outcome
            }
        });
    }
    BatchOutcome {
        outcomes,
        failure,
        failed_write,
    }
}

/// Reads each key on its own: the stored resource, or `None` where there is none.
pub async fn read_one_by_one<S: Datastore + ?Sized>(
    store: &S,
    keys: &[ResourceKey],
) -> Result<Vec<Option<Resource>>, StoreError> {
    let mut found = Vec::with_capacity(keys.len());
    for key in keys {
        found.push(match store.get(key).await {
            Ok(resource) => Some(resource),
            Err(StoreError::NotFound(_)) => None,
            Err(error) => return Err(error),
        });
    }
    Ok(found)
}

/// A batch the datastore refused again and again without saying which of its writes it refused
/// (a backend that breaks the batch contract): the writer gives up on it.
#[derive(Debug, thiserror::Error)]
#[error("the datastore refused the batch without saying which write")]
pub struct UnexplainedRefusal;

impl Hint for UnexplainedRefusal {
    fn hint(&self) -> Option<String> {
        None
    }
}

/// Whether a failed write may still have been applied: its answer was lost, or it timed out after
/// it was sent.
pub fn may_have_applied(error: &StoreError) -> bool {
    matches!(
        error,
        StoreError::OutcomeUnknown { .. } | StoreError::TimedOut(_)
    )
}

/// About the length of `value` as compact JSON, without writing it out.
fn json_size(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 12,
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|item| json_size(item) + 1).sum::<usize>(),
        Value::Object(fields) => {
            2 + fields
                .iter()
                .map(|(key, item)| key.len() + 4 + json_size(item))
                .sum::<usize>()
        }
    }
}

fn revision_of(resource: Resource) -> String {
    resource.metadata.resource_version.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Kind;

    fn delete(name: &str) -> Write {
        Write::Delete {
            key: ResourceKey::new(Kind::HostEndpoint, None, name),
            revision: "1".into(),
        }
    }

    fn create(name: &str, bytes: usize) -> Write {
        let mut resource = Resource::new(Kind::GlobalNetworkSet, name);
        resource.spec = serde_json::json!({ "padding": "x".repeat(bytes) });
        Write::Create(resource)
    }

    #[test]
    fn batches_hold_at_most_the_limit_of_writes() {
        let limits = BatchLimits::DEFAULT;
        // Batch sizes for 0, 1, 127, 128, 129 and 257 writes.
        for (count, expected) in [
            (0, vec![]),
            (1, vec![1]),
            (127, vec![127]),
            (128, vec![128]),
            (129, vec![128, 1]),
            (257, vec![128, 128, 1]),
        ] {
            let writes: Vec<Write> = (0..count).map(|i| delete(&format!("h{i}"))).collect();
            let sizes: Vec<usize> = batches(&writes, limits).iter().map(|r| r.len()).collect();
            assert_eq!(sizes, expected, "{count} writes");
        }
    }

    #[test]
    fn batches_hold_at_most_the_limit_of_bytes_and_a_big_write_goes_alone() {
        let limits = BatchLimits {
            writes: 128,
            bytes: 10_000,
            in_flight: 1,
        };
        let writes = vec![
            create("a", 6_000),
            create("b", 6_000),
            create("c", 30_000),
            create("d", 100),
        ];
        let sizes = |writes: &[Write]| -> Vec<usize> {
            batches(writes, limits).iter().map(|r| r.len()).collect()
        };
        assert_eq!(sizes(&writes), vec![1, 1, 1, 1]);
        let small: Vec<Write> = (0..10).map(|i| create(&format!("s{i}"), 500)).collect();
        assert_eq!(sizes(&small), vec![9, 1]);
    }
}
