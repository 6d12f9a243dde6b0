//! etcd's half of batched writes and reads (`datastore/batch.rs` says what a batch means).
//!
//! A batch of writes is one transaction: a guard per write (a create's key has version 0, an
//! update's or delete's key is at the mod revision the caller read), the writes when every guard
//! holds, and a read of every key when one does not — so a refused batch says, in the same answer,
//! which writes were refused and what is stored there now. etcd applies a transaction whole or not
//! at all, and every key it writes gets the transaction's revision.
//!
//! When a copy of the transaction may have applied although its answer was lost (see
//! `endpoints::Delivery`), a refused copy sent again may be refused because of our own first copy.
//! Then one write of the batch stands witness for all of it (the transaction applied whole or not
//! at all): its key's history says whether the change after the revision we read was ours, as for
//! single writes in `mod.rs`. When nobody can tell, every write is [`WriteOutcome::Unknown`].
//!
//! Reads of many keys go by key range: keys are sorted and grouped by their list prefix (one kind,
//! one namespace), and each group of many keys is read as the range from its first to its last key,
//! in pages; keys that stand alone in their group are read as point reads, many in one read-only
//! transaction.

use std::collections::HashMap;

use etcd_client::{Compare, CompareOp, GetOptions, KeyValue, Txn, TxnOp, TxnOpResponse};

use super::endpoints::Delivery;
use super::{
    EtcdStore, Succession, conversion, key_path, list_prefix, now_rfc3339, parse_revision,
};
use crate::datastore::{BatchOutcome, StoreError, Write, WriteOutcome};
use crate::resource::{Resource, ResourceKey};

/// Keys per range read: a group with more is read as several ranges.
const RANGE_KEYS: usize = 512;

/// Entries per page of a range read. Only keys netctl asked for are decoded; the others in the
/// range are skipped.
const RANGE_PAGE: i64 = 1024;

/// A group of fewer keys than this is read with point reads (many to a transaction).
const POINT_READ_GROUP: usize = 8;

/// Point reads per read-only transaction (etcd's default `--max-txn-ops`).
const POINT_READS_PER_TRANSACTION: usize = 128;

/// One write of a batch as etcd sees it.
struct Guarded {
    path: String,
    /// What a put writes (`None`: a delete).
    value: Option<Vec<u8>>,
    /// `None`: the key must not exist; `Some(revision)`: it must be at that mod revision.
    expected: Option<i64>,
}

impl Guarded {
    fn from_write(write: &Write) -> Result<Guarded, StoreError> {
        Ok(match write {
            Write::Create(resource) => {
                let uid = uuid::Uuid::new_v4().to_string();
                let creation_timestamp = now_rfc3339();
                let created = conversion::Created {
                    uid: &uid,
                    creation_timestamp: &creation_timestamp,
                };
                Guarded {
                    path: key_path(&resource.key()),
                    value: Some(conversion::encode_created(resource, created)),
                    expected: None,
                }
            }
            Write::Update(resource) => {
                let revision = StoreError::expected_version(resource)?;
                Guarded {
                    path: key_path(&resource.key()),
                    value: Some(conversion::encode(resource)),
                    expected: Some(parse_revision(revision)?),
                }
            }
            Write::Delete { key, revision } => Guarded {
                path: key_path(key),
                value: None,
                expected: Some(parse_revision(revision)?),
            },
        })
    }

    fn compare(&self) -> Compare {
        match self.expected {
            None => Compare::version(self.path.as_str(), CompareOp::Equal, 0),
            Some(revision) => Compare::mod_revision(self.path.as_str(), CompareOp::Equal, revision),
        }
    }

    fn operation(&self) -> TxnOp {
        match &self.value {
            Some(value) => TxnOp::put(self.path.as_str(), value.clone(), None),
            None => TxnOp::delete(self.path.as_str(), None),
        }
    }

    /// Whether the guard holds for what is stored now (`current`).
    fn holds(&self, current: Option<&KeyValue>) -> bool {
        match (self.expected, current) {
            (None, current) => current.is_none(),
            (Some(revision), Some(current)) => current.mod_revision() == revision,
            (Some(_), None) => false,
        }
    }
}

/// What a lost answer hid.
enum Fate {
    /// Our transaction applied, at this revision.
    Ours(i64),
    /// It did not: the refusal is real.
    NotOurs,
    Unknown(StoreError),
}

impl EtcdStore {
    /// Sends `writes` as one transaction (see the module documentation).
    pub(super) async fn write_transaction(&self, writes: &[Write]) -> BatchOutcome {
        let count = writes.len();
        if count == 0 {
            return BatchOutcome::done(Vec::new());
        }
        let guarded = match writes
            .iter()
            .map(Guarded::from_write)
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(guarded) => guarded,
            Err(error) => return BatchOutcome::failed(count, error),
        };
        let txn = Txn::new()
            .when(guarded.iter().map(Guarded::compare).collect::<Vec<_>>())
            .and_then(guarded.iter().map(Guarded::operation).collect::<Vec<_>>())
            .or_else(
                guarded
                    .iter()
                    .map(|write| TxnOp::get(write.path.as_str(), None))
                    .collect::<Vec<_>>(),
            );
        let operation = match count {
            1 => "a write".to_string(),
            count => format!("a batch of {count} writes"),
        };
        let mut delivery = Delivery::default();
        let result = self
            .pool
            .run(&operation, &mut delivery, |mut connection| {
                let txn = txn.clone();
                async move { connection.kv.txn(txn).await }
            })
            .await;
        let response = match result {
            Ok(response) => response,
            Err(error) if delivery.maybe_applied() => {
                return BatchOutcome::unknown(count, batch_unknown(writes, error));
            }
            Err(error) => return BatchOutcome::failed(count, error),
        };
        if response.succeeded() {
            let revision = super::header_revision(&response).to_string();
            return applied(count, revision);
        }
        let current = super::reads(&response);
        let every_guard_failed = guarded
            .iter()
            .zip(&current)
            .all(|(write, current)| !write.holds(current.as_ref()));
        if delivery.maybe_applied() && every_guard_failed {
            // Had our first copy applied, every guard would fail now, as it does.
            match self.fate(&guarded, &current).await {
                Fate::Ours(revision) => return applied(count, revision.to_string()),
                Fate::NotOurs => {}
                Fate::Unknown(error) => {
                    return BatchOutcome::unknown(count, batch_unknown(writes, error));
                }
            }
        }
        BatchOutcome::done(
            writes
                .iter()
                .zip(&guarded)
                .zip(current)
                .map(|((write, guarded), current)| refusal(write, guarded, current))
                .collect(),
        )
    }

    /// Whether our own lost copy is what the guards failed on: one write stands witness for the
    /// transaction (a put if there is one, since its value is ours to recognise).
    async fn fate(&self, guarded: &[Guarded], current: &[Option<KeyValue>]) -> Fate {
        let witness = guarded
            .iter()
            .position(|write| write.value.is_some())
            .unwrap_or(0);
        let (write, current) = (&guarded[witness], current[witness].as_ref());
        let path = write.path.as_str();
        match (write.expected, &write.value) {
            // A create: the key exists; its first version shows whose create it was.
            (None, Some(value)) => {
                let Some(current) = current else {
                    return Fate::NotOurs;
                };
                if current.value() == value.as_slice() {
                    return Fate::Ours(current.mod_revision());
                }
                match self.read_at(path, current.create_revision()).await {
                    Ok(Some(first)) if first.value() == value.as_slice() => {
                        Fate::Ours(first.mod_revision())
                    }
                    Ok(_) => Fate::NotOurs,
                    Err(error) => Fate::Unknown(error),
                }
            }
            (Some(revision), value) => {
                if let (Some(current), Some(value)) = (current, value)
                    && current.value() == value.as_slice()
                {
                    return Fate::Ours(current.mod_revision());
                }
                match self.succession(path, revision, value.as_deref()).await {
                    // A delete's witness carries no revision of the batch; deletes need none.
                    Ok(Succession::Ours(written)) if value.is_some() => {
                        Fate::Ours(written.mod_revision())
                    }
                    Ok(Succession::Ours(_)) => Fate::Ours(0),
                    Ok(Succession::Other) => Fate::NotOurs,
                    Ok(Succession::Forgotten) => Fate::Unknown(StoreError::failed(
                        "a read of the key's history",
                        super::errors::EtcdError::Compacted,
                    )),
                    Err(error) => Fate::Unknown(error),
                }
            }
            (None, None) => Fate::NotOurs,
        }
    }

    /// Reads what is stored under each key (see the module documentation).
    pub(super) async fn read_keys(
        &self,
        keys: &[ResourceKey],
    ) -> Result<Vec<Option<Resource>>, StoreError> {
        let mut found: Vec<Option<Resource>> = vec![None; keys.len()];
        let mut sorted: Vec<(String, String, usize)> = keys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                let prefix = list_prefix(key.kind, key.namespace.as_deref());
                (prefix, key_path(key), index)
            })
            .collect();
        sorted.sort_by(|a, b| a.1.cmp(&b.1));
        let mut points: Vec<(String, usize)> = Vec::new();
        let mut start = 0;
        while start < sorted.len() {
            let prefix = &sorted[start].0;
            let end = start
                + sorted[start..]
                    .iter()
                    .take_while(|(other, _, _)| other == prefix)
                    .count();
            let group = &sorted[start..end];
            if group.len() < POINT_READ_GROUP {
                points.extend(group.iter().map(|(_, path, index)| (path.clone(), *index)));
            } else {
                for chunk in group.chunks(RANGE_KEYS) {
                    self.read_range(chunk, &mut found).await?;
                }
            }
            start = end;
        }
        for chunk in points.chunks(POINT_READS_PER_TRANSACTION) {
            self.read_points(chunk, &mut found).await?;
        }
        Ok(found)
    }

    /// Reads the range from the first to the last key of `chunk` (sorted, one list prefix), page
    /// by page, and keeps the keys asked for.
    async fn read_range(
        &self,
        chunk: &[(String, String, usize)],
        found: &mut [Option<Resource>],
    ) -> Result<(), StoreError> {
        let mut wanted: HashMap<&str, Vec<usize>> = HashMap::with_capacity(chunk.len());
        for (_, path, index) in chunk {
            wanted.entry(path.as_str()).or_default().push(*index);
        }
        let (first, last) = (&chunk[0].1, &chunk[chunk.len() - 1].1);
        let mut end = last.as_bytes().to_vec();
        end.push(0);
        let mut start = first.as_bytes().to_vec();
        let mut pinned: Option<i64> = None;
        loop {
            let mut options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(RANGE_PAGE);
            if let Some(revision) = pinned {
                options = options.with_revision(revision);
            }
            let response = self
                .request("a read of the resources to write", |mut connection| {
                    let (start, options) = (start.clone(), options.clone());
                    async move { connection.kv.get(start, Some(options)).await }
                })
                .await?;
            pinned.get_or_insert_with(|| {
                response
                    .header()
                    .map(|header| header.revision())
                    .unwrap_or_default()
            });
            for entry in response.kvs() {
                let path = String::from_utf8_lossy(entry.key());
                if let Some(indices) = wanted.get(path.as_ref()) {
                    let resource = conversion::decode(&path, entry.value(), entry.mod_revision())?;
                    if let [rest @ .., last] = indices.as_slice() {
                        for index in rest {
                            found[*index] = Some(resource.clone());
                        }
                        found[*last] = Some(resource);
                    }
                }
            }
            match (response.more(), response.kvs().last()) {
                (true, Some(last)) => {
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => return Ok(()),
            }
        }
    }

    /// Reads each key of `chunk` with a point read, all in one read-only transaction.
    async fn read_points(
        &self,
        chunk: &[(String, usize)],
        found: &mut [Option<Resource>],
    ) -> Result<(), StoreError> {
        let txn = Txn::new().and_then(
            chunk
                .iter()
                .map(|(path, _)| TxnOp::get(path.as_str(), None))
                .collect::<Vec<_>>(),
        );
        let response = self
            .request("a read of the resources to write", |mut connection| {
                let txn = txn.clone();
                async move { connection.kv.txn(txn).await }
            })
            .await?;
        for ((path, index), op) in chunk.iter().zip(response.op_responses()) {
            if let TxnOpResponse::Get(get) = op
                && let Some(entry) = get.kvs().first()
            {
                found[*index] = Some(conversion::decode(
                    path,
                    entry.value(),
                    entry.mod_revision(),
                )?);
            }
        }
        Ok(())
    }
}

/// Every write of `count` applied at `revision`.
fn applied(count: usize, revision: String) -> BatchOutcome {
    BatchOutcome::done(
        (0..count)
            .map(|_| WriteOutcome::Applied {
                revision: revision.clone(),
            })
            .collect(),
    )
}

/// The outcome of one write of a refused transaction, from what is stored there now.
fn refusal(write: &Write, guarded: &Guarded, current: Option<KeyValue>) -> WriteOutcome {
    if guarded.holds(current.as_ref()) {
        return WriteOutcome::NotApplied;
    }
    let key = write.key();
    let decoded = current.as_ref().and_then(|current| {
        conversion::decode(&guarded.path, current.value(), current.mod_revision())
            .ok()
            .map(Box::new)
    });
    let error = match (guarded.expected, &current) {
        (None, _) => StoreError::AlreadyExists(key),
        (Some(_), None) => StoreError::NotFound(key),
        (Some(expected), Some(current)) => StoreError::Conflict {
            key,
            expected: expected.to_string(),
            current: current.mod_revision().to_string(),
        },
    };
    WriteOutcome::Refused {
        error,
        current: decoded,
    }
}

/// The error of a batch whose answer was lost: it names the batch by its first resource.
fn batch_unknown(writes: &[Write], source: StoreError) -> StoreError {
    let first = writes[0].key();
    let key = match writes.len() {
        1 => first.to_string(),
        count => format!("{first} and {} other resource(s)", count - 1),
    };
    StoreError::OutcomeUnknown {
        operation: "batch of writes",
        key,
        source: Box::new(source),
    }
}
