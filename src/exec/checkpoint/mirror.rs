//! The run's books in the datastore, laid out as in the state directory so `--resume` and
//! `upgrade status` work from another machine whatever the plan's size.
//!
//! Keys (all under `/calico/netctl/upgrade/`, values gzip-compressed JSON):
//!
//! | key | holds | written |
//! |---|---|---|
//! | `checkpoint` | the head: run id, the plan's digest and chunk count, the current snapshot's sequence and chunk count (plain JSON) | when a run begins or is resumed, and at each compaction |
//! | `plans/<hex>/<n>` | the plan, in chunks of at most [`CHUNK_BYTES`] | once per plan |
//! | `runs/<run>/snapshots/<sequence>/<n>` | a snapshot, in chunks | with the head |
//! | `runs/<run>/log/<sequence>/<n>` | segment `n` of the transitions since snapshot `<sequence>`, at most [`SEGMENT_RECORDS`] each | on every transition (the current segment is rewritten) |
//!
//! Chunks keep every value under etcd's default request limit (1.5 MiB) and a ConfigMap's (1 MiB).
//! The head moves to a new snapshot only after all of it is written, and the keys it no longer names
//! are deleted after it moved, so a reader always finds a whole snapshot. A transition rewrites one
//! segment of at most [`SEGMENT_RECORDS`] records: its cost does not grow with the plan. A reader
//! replays the segments from 0 until one is missing.

use std::io::{Read, Write};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    CHECKPOINT_FORMAT_VERSION, Checkpoint, CheckpointError, SavedRun, check_format, local,
    parse_json, parse_plan, parse_snapshot,
};
use crate::datastore::coordination::{Coordination, UPGRADE_CHECKPOINT_KEY};
use crate::plan::Plan;

/// Where the mirror's keys live.
const PREFIX: &str = "/calico/netctl/upgrade/";

/// The most one value holds: well under etcd's 1.5 MiB request limit and a ConfigMap's 1 MiB.
pub const CHUNK_BYTES: usize = 512 * 1024;

/// Transitions per log segment: a transition rewrites at most this many.
pub const SEGMENT_RECORDS: usize = 32;

/// The most segments a reader follows after one snapshot (far above what compaction allows).
const MOST_SEGMENTS: usize = 1 << 20;

/// What the head key holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Head {
    format_version: u32,
    run_id: String,
    plan: PlanPointer,
    snapshot: SnapshotPointer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PlanPointer {
    digest: String,
    chunks: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SnapshotPointer {
    sequence: u64,
    chunks: usize,
}

fn plan_chunk_key(digest: &str, chunk: usize) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    format!("{PREFIX}plans/{hex}/{chunk}")
}

fn snapshot_chunk_key(run_id: &str, sequence: u64, chunk: usize) -> String {
    format!("{PREFIX}runs/{run_id}/snapshots/{sequence}/{chunk}")
}

fn segment_key(run_id: &str, sequence: u64, segment: usize) -> String {
    format!("{PREFIX}runs/{run_id}/log/{sequence}/{segment}")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 8),
        flate2::Compression::fast(),
    );
    // Writing into a vector cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

fn gunzip(bytes: &[u8], key: &str) -> Result<Vec<u8>, CheckpointError> {
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut json)
        .map_err(|source| CheckpointError::Read {
            path: key.into(),
            source,
        })?;
    Ok(json)
}

/// The mirror of one run's books, as this process writes it.
pub(super) struct MirrorBooks {
    coordination: Arc<dyn Coordination>,
    /// What the head says now (after [`MirrorBooks::begin`]).
    head: Option<Head>,
    /// The current log segment: its number and the records in it.
    segment: usize,
    records: Vec<Vec<u8>>,
}

impl MirrorBooks {
    pub fn new(coordination: Arc<dyn Coordination>) -> MirrorBooks {
        MirrorBooks {
            coordination,
            head: None,
            segment: 0,
            records: Vec::new(),
        }
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), CheckpointError> {
        self.coordination
            .put_blob(key, value)
            .await
            .map_err(|source| CheckpointError::Mirror { source })
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, CheckpointError> {
        self.coordination
            .get_blob(key)
            .await
            .map(|blob| blob.map(|blob| blob.value))
            .map_err(|source| CheckpointError::Mirror { source })
    }

    /// Deletes keys nobody reads any more; a failure leaves garbage, not damage, so it is ignored.
    async fn forget(&self, keys: impl IntoIterator<Item = String>) {
        for key in keys {
            let _ = self.coordination.delete_blob(&key).await;
        }
    }

    /// Writes `bytes` compressed, in chunks under the keys `key(n)`; returns how many.
    async fn put_chunks(
        &self,
        bytes: &[u8],
        key: impl Fn(usize) -> String,
    ) -> Result<usize, CheckpointError> {
        let compressed = gzip(bytes);
        let mut count = 0;
        for (chunk, part) in compressed.chunks(CHUNK_BYTES).enumerate() {
            self.put(&key(chunk), part).await?;
            count += 1;
        }
        Ok(count)
    }

    /// Reads `count` chunks written by [`MirrorBooks::put_chunks`] and decompresses them.
    async fn get_chunks(
        &self,
        count: usize,
        key: impl Fn(usize) -> String,
    ) -> Result<Vec<u8>, CheckpointError> {
        let mut compressed = Vec::new();
        for chunk in 0..count {
            let key = key(chunk);
            let part = self
                .get(&key)
                .await?
                .ok_or_else(|| CheckpointError::Inconsistent {
                    location: key.clone(),
                    problem: format!("chunk {} of {count} is missing", chunk + 1),
                })?;
            compressed.extend_from_slice(&part);
        }
        gunzip(&compressed, &key(0))
    }

    async fn read_head(&self) -> Result<Option<Head>, CheckpointError> {
        let Some(bytes) = self.get(UPGRADE_CHECKPOINT_KEY).await? else {
            return Ok(None);
        };
        // Before this format the key held the whole checkpoint, gzip-compressed.
        let json = match bytes.starts_with(&[0x1f, 0x8b]) {
            true => gunzip(&bytes, UPGRADE_CHECKPOINT_KEY)?,
            false => bytes,
        };
        match check_format(&json, UPGRADE_CHECKPOINT_KEY)? {
            true => parse_json(&json, UPGRADE_CHECKPOINT_KEY).map(Some),
            false => Ok(None),
        }
    }

    /// Begins mirroring `checkpoint`: stores the plan unless the mirror has it, writes a snapshot,
    /// and removes what an earlier run left.
    pub async fn begin(
        &mut self,
        plan: &Plan,
        checkpoint: &Checkpoint,
    ) -> Result<(), CheckpointError> {
        let previous = self.read_head().await.ok().flatten();
        let plan_chunks = match &previous {
            Some(head) if head.plan.digest == plan.digest => head.plan.chunks,
            _ => {
                let bytes =
                    serde_json::to_vec(plan).map_err(|source| CheckpointError::Invalid {
                        location: plan_chunk_key(&plan.digest, 0),
                        source,
                    })?;
                self.put_chunks(&bytes, |chunk| plan_chunk_key(&plan.digest, chunk))
                    .await?
            }
        };
        self.head = previous;
        self.write_snapshot(
            checkpoint,
            PlanPointer {
                digest: plan.digest.clone(),
                chunks: plan_chunks,
            },
        )
        .await
    }

    /// Writes a new snapshot (compaction), moves the head to it and starts a new log.
    pub async fn snapshot(&mut self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        let plan = match &self.head {
            Some(head) => head.plan.clone(),
            None => return Err(not_begun()),
        };
        self.write_snapshot(checkpoint, plan).await
    }

    async fn write_snapshot(
        &mut self,
        checkpoint: &Checkpoint,
        plan: PlanPointer,
    ) -> Result<(), CheckpointError> {
        let bytes = serde_json::to_vec(checkpoint).map_err(|source| CheckpointError::Invalid {
            location: UPGRADE_CHECKPOINT_KEY.to_string(),
            source,
        })?;
        let (run_id, sequence) = (checkpoint.run_id.as_str(), checkpoint.sequence);
        let chunks = self
            .put_chunks(&bytes, |chunk| snapshot_chunk_key(run_id, sequence, chunk))
            .await?;
        let head = Head {
            format_version: CHECKPOINT_FORMAT_VERSION,
            run_id: run_id.to_string(),
            plan,
            snapshot: SnapshotPointer { sequence, chunks },
        };
        let value = serde_json::to_vec(&head).map_err(|source| CheckpointError::Invalid {
            location: UPGRADE_CHECKPOINT_KEY.to_string(),
            source,
        })?;
        self.put(UPGRADE_CHECKPOINT_KEY, &value).await?;
        let previous = self.head.replace(head);
        let segments = std::mem::take(&mut self.segment) + usize::from(!self.records.is_empty());
        self.records.clear();
        if let Some(previous) = previous {
            self.forget_run(&previous, segments, checkpoint).await;
        }
        Ok(())
    }

    /// Deletes the keys of `previous` that the new head no longer names: its snapshot, its log
    /// (`segments` when this process wrote it; found by reading when another did), and its plan
    /// when the new run has another.
    async fn forget_run(&self, previous: &Head, segments: usize, checkpoint: &Checkpoint) {
        let (run_id, sequence) = (&previous.run_id, previous.snapshot.sequence);
        if *run_id == checkpoint.run_id && sequence == checkpoint.sequence {
            return;
        }
        let mut keys: Vec<String> = (0..previous.snapshot.chunks)
            .map(|chunk| snapshot_chunk_key(run_id, sequence, chunk))
            .collect();
        let mut segment = 0;
        loop {
            let key = segment_key(run_id, sequence, segment);
            let known = segment < segments;
            if !known && !matches!(self.get(&key).await, Ok(Some(_))) {
                break;
            }
            keys.push(key);
            segment += 1;
        }
        if previous.plan.digest != checkpoint.plan_digest {
            keys.extend(
                (0..previous.plan.chunks).map(|chunk| plan_chunk_key(&previous.plan.digest, chunk)),
            );
        }
        self.forget(keys).await;
    }

    /// Appends one transition to the current segment and rewrites it.
    pub async fn append(
        &mut self,
        checkpoint: &Checkpoint,
        line: Vec<u8>,
    ) -> Result<(), CheckpointError> {
        let sequence = match &self.head {
            Some(head) => head.snapshot.sequence,
            None => return Err(not_begun()),
        };
        if self.records.len() == SEGMENT_RECORDS {
            self.records.clear();
            self.segment += 1;
        }
        self.records.push(line);
        let mut bytes = Vec::new();
        for record in &self.records {
            bytes.extend_from_slice(record);
            bytes.push(b'\n');
        }
        let key = segment_key(&checkpoint.run_id, sequence, self.segment);
        self.put(&key, &gzip(&bytes)).await
    }

    /// Reads the mirrored books: the head, the plan, the snapshot and the logged transitions.
    pub async fn load(&self) -> Result<Option<SavedRun>, CheckpointError> {
        let Some(head) = self.read_head().await? else {
            return Ok(None);
        };
        let plan_key = plan_chunk_key(&head.plan.digest, 0);
        let plan_bytes = self
            .get_chunks(head.plan.chunks, |chunk| {
                plan_chunk_key(&head.plan.digest, chunk)
            })
            .await?;
        let plan = parse_plan(&plan_bytes, &plan_key, &head.plan.digest)?;
        let (run_id, sequence) = (head.run_id.as_str(), head.snapshot.sequence);
        let snapshot_key = snapshot_chunk_key(run_id, sequence, 0);
        let bytes = self
            .get_chunks(head.snapshot.chunks, |chunk| {
                snapshot_chunk_key(run_id, sequence, chunk)
            })
            .await?;
        let checkpoint = parse_snapshot(&bytes, &snapshot_key)?;
        let Some(mut checkpoint) = checkpoint.filter(|checkpoint| {
            checkpoint.run_id == head.run_id
                && checkpoint.plan_digest == plan.digest
                && checkpoint.steps.len() == plan.steps.len()
        }) else {
            return Err(CheckpointError::Inconsistent {
                location: snapshot_key,
                problem: "it belongs to another run or plan than the head names".to_string(),
            });
        };
        for segment in 0..MOST_SEGMENTS {
            let key = segment_key(run_id, sequence, segment);
            let Some(compressed) = self.get(&key).await? else {
                break;
            };
            let bytes = gunzip(&compressed, &key)?;
            local::replay(&mut checkpoint, &bytes, &key)?;
        }
        Ok(Some(SavedRun { plan, checkpoint }))
    }
}

fn not_begun() -> CheckpointError {
    CheckpointError::Write {
        path: UPGRADE_CHECKPOINT_KEY.into(),
        source: std::io::Error::other("the mirror of the run's books was not begun"),
    }
}
