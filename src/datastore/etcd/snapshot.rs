//! [`Datastore::snapshot`](crate::datastore::Datastore::snapshot) on etcd: the maintenance API's
//! snapshot stream from one member, written chunk by chunk and checked as `etcdctl snapshot save`
//! checks it.
//!
//! etcd sends the database in chunks, each saying how many of the database's bytes remain after
//! it, then a last chunk of 32 bytes and the end of the stream: the sha256 of everything before it, which stays in the file (etcd's
//! restore checks it there). The writer hashes as it writes, holding back the last 32 bytes seen so
//! the closing checksum is told from the data without buffering the database. Opening the stream
//! goes through the endpoint pool (another member when one fails); every chunk must arrive within
//! the request timeout.

use std::io::Write;

use sha2::{Digest, Sha256};

use super::EtcdStore;
use crate::datastore::snapshot::{SnapshotError, SnapshotTaken};

/// The sha256 etcd appends to a snapshot.
const CHECKSUM_BYTES: usize = 32;

/// Hashes a stream but its last [`CHECKSUM_BYTES`].
#[derive(Default)]
struct Trailing {
    hasher: Sha256,
    /// The last bytes seen, at most [`CHECKSUM_BYTES`]: not hashed yet.
    held: Vec<u8>,
    total: u64,
}

impl Trailing {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.held.extend_from_slice(chunk);
        if self.held.len() > CHECKSUM_BYTES {
            let hashed = self.held.len() - CHECKSUM_BYTES;
            self.hasher.update(&self.held[..hashed]);
            self.held.drain(..hashed);
        }
    }

    /// The checksum sent and the one of the bytes before it (hex), or `None` when fewer than
    /// 32 bytes came.
    fn finish(self) -> Option<(String, String)> {
        (self.held.len() == CHECKSUM_BYTES).then(|| (hex(&self.held), hex(&self.hasher.finalize())))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl EtcdStore {
    /// Streams one member's snapshot into `out` and checks it.
    pub(super) async fn stream_snapshot(
        &self,
        out: &mut (dyn Write + Send),
    ) -> Result<SnapshotTaken, SnapshotError> {
        let member = self.current_endpoint();
        let mut stream = self
            .request("an etcd snapshot", |connection| {
                let mut client = connection.client.clone();
                async move { client.snapshot().await }
            })
            .await?;
        let limit = self.pool.timeouts().request;
        let mut trailing = Trailing::default();
        let mut announced: Option<u64> = None;
        loop {
            let message = tokio::time::timeout(limit, stream.message())
                .await
                .map_err(|_| SnapshotError::Stream {
                    member: member.clone(),
                    detail: format!("nothing arrived for {}s", limit.as_secs()),
                })?
                .map_err(|error| SnapshotError::Stream {
                    member: member.clone(),
                    detail: error.to_string(),
                })?;
            let Some(message) = message else {
                break;
            };
            let blob = message.blob();
            announced.get_or_insert(blob.len() as u64 + message.remaining_bytes());
            trailing.push(blob);
            out.write_all(blob).map_err(|source| SnapshotError::Write {
                path: Default::default(),
                source,
            })?;
        }
        // The size etcd announces is the database's; its checksum follows it.
        let received = trailing.total;
        let announced = announced.unwrap_or_default() + CHECKSUM_BYTES as u64;
        if received != announced || received <= CHECKSUM_BYTES as u64 {
            return Err(SnapshotError::Size {
                member,
                received,
                announced,
            });
        }
        let Some((sent, computed)) = trailing.finish() else {
            return Err(SnapshotError::Size {
                member,
                received,
                announced,
            });
        };
        if sent != computed {
            return Err(SnapshotError::Checksum {
                member,
                bytes: received - CHECKSUM_BYTES as u64,
                sent,
                received: computed,
            });
        }
        Ok(SnapshotTaken {
            bytes: received,
            sha256: sent,
            member,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_32_bytes_are_held_back_from_the_hash_whatever_the_chunks() {
        let data: Vec<u8> = (0..1000u32).map(|n| (n % 251) as u8).collect();
        let checksum = Sha256::digest(&data);
        let mut stream = data.clone();
        stream.extend_from_slice(&checksum);
        for chunk_size in [1, 7, 32, 33, 500, 2000] {
            let mut trailing = Trailing::default();
            for chunk in stream.chunks(chunk_size) {
                trailing.push(chunk);
            }
            let (sent, computed) = trailing.finish().unwrap();
            assert_eq!(sent, computed, "chunks of {chunk_size}");
            assert_eq!(sent, hex(&checksum));
        }
        let mut short = Trailing::default();
        short.push(&[1, 2, 3]);
        assert!(short.finish().is_none());
    }
}
