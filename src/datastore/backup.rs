//! A backup of a whole datastore — every resource of every kind as stored, ClusterInformation, and
//! the IPAM objects — written and read one record at a time, so memory stays flat as the datastore
//! grows. Both datastores; nothing is locked and nothing is renamed (that is the migration
//! export's business, `datastore migrate export`).
//!
//! The file is JSON Lines (one JSON value a line, so a truncated file is told from a whole one):
//!
//! ```text
//! {"netctlBackup":1,"datastoreType":"etcdv3","takenAt":"2026-11-27T18:00:00Z","netctlVersion":"0.1.0"}
//! {"resource":{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{...},"spec":{...}}}
//! {"ipam":{"Key":"/calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26","Value":{...}}}
//! {"end":{"resources":1,"ipam":1}}
//! ```
//!
//! Resources come kind by kind in `Kind::ALL` order, as the datastore lists them (metadata kept:
//! a restore leaves out what the datastore sets itself). IPAM records are keyed by their etcd path
//! with the value as upstream's `libcalico-go/lib/backend/model` JSON (`block.go`,
//! `block_affinity.go`, `ipam_handle.go`, `ipam_config.go`) — on both datastores, the way
//! upstream's `datastore migrate export` writes its IPAM part. CalicoNodeStatus objects (temporary
//! status requests) are left out; on Kubernetes so is the IPAMConfiguration kind, which is the
//! allocator's configuration already in the IPAM records.
//!
//! Restoring is a plan (`exec/actions/ipam/restore.rs`); this module writes and reads the file.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::etcd::ipam_encoding as encoding;
use super::ipam::{self as ipam_store, Damaged, IpamStore};
use super::{Datastore, DatastoreType, ListOptions, StoreError};
use crate::errors::Hint;
use crate::ipam::{AllocationBlock, BlockAffinity, BlockEncoding, IpamConfig, IpamHandle, Stored};
use crate::resource::{Kind, Resource};

/// The version of the file format this netctl writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a backup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    pub netctl_backup: u32,
    pub datastore_type: DatastoreType,
    pub taken_at: String,
    pub netctl_version: String,
}

/// One IPAM object as upstream's export keys it: its etcd path and its model JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpamRecord {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "Value")]
    pub value: Value,
}

/// What a backup holds, counted (its last line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    pub resources: u64,
    pub ipam: u64,
}

/// One line of a backup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Line {
    Resource(Box<Resource>),
    Ipam(IpamRecord),
    End(Counts),
}

/// One IPAM object read back from a backup.
#[derive(Debug, Clone, PartialEq)]
pub enum IpamObject {
    Block(AllocationBlock),
    Affinity(BlockAffinity),
    Handle(IpamHandle),
    Config(IpamConfig),
}

/// Why a backup could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Ipam(#[from] ipam_store::IpamError),
    #[error("IPAM object `{}` cannot be read: {}", .0.key, .0.reason)]
    Damaged(Damaged),
    #[error("cannot write the backup `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the backup `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a netctl backup: line {line}: {reason}", path.display())]
    Format {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("`{}` is incomplete: it ends without its closing count (the backup was cut short)", path.display())]
    Truncated { path: PathBuf },
}

impl Hint for BackupError {
    fn hint(&self) -> Option<String> {
        match self {
            BackupError::Store(error) => error.hint(),
            BackupError::Ipam(error) => error.hint(),
            BackupError::Format { .. } => Some(
                "a backup is written by `netctl datastore backup`; a migration export is imported with `netctl datastore migrate import`".into(),
            ),
            BackupError::Truncated { .. } => {
                Some("take the backup again (`netctl datastore backup -o FILE`)".into())
            }
            _ => None,
        }
    }
}

/// The kinds a backup of a `datastore` holds, in order.
pub fn kinds(datastore: DatastoreType) -> impl Iterator<Item = Kind> {
    Kind::ALL.into_iter().filter(move |kind| match kind {
        Kind::CalicoNodeStatus => false,
        Kind::IpamConfiguration => datastore != DatastoreType::Kubernetes,
        _ => true,
    })
}

/// Writes a backup of `store` to `out`, a record at a time. `taken_at` is RFC 3339.
pub async fn write(
    store: &dyn Datastore,
    taken_at: &str,
    out: &mut dyn Write,
    path: &Path,
) -> Result<Counts, BackupError> {
    let failed = |source| BackupError::Write {
        path: path.to_path_buf(),
        source,
    };
    let header = Header {
        netctl_backup: FORMAT_VERSION,
        datastore_type: store.kind(),
        taken_at: taken_at.to_string(),
        netctl_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    write_line(out, &header).map_err(failed)?;
    let mut counts = Counts::default();
    for kind in kinds(store.kind()) {
        let result = super::for_each(store, &ListOptions::new(kind), |resource| {
            counts.resources += 1;
            write_line(out, &Line::Resource(Box::new(resource))).map_err(failed)
        })
        .await;
        match result {
            // A kind this datastore (or its release) does not serve holds nothing to back up.
            Err(BackupError::Store(error)) if error.is_not_served() => {}
            other => other?,
        }
    }
    if let Some(ipam) = store.ipam() {
        counts.ipam = write_ipam(ipam, out, path).await?;
    }
    write_line(out, &Line::End(counts)).map_err(failed)?;
    out.flush().map_err(failed)?;
    Ok(counts)
}

/// Writes a backup of `store` to the file `path` (owner-only; written beside it and renamed, so
/// `path` is either the whole backup or absent).
pub async fn write_file(
    store: &dyn Datastore,
    taken_at: &str,
    path: &Path,
) -> Result<Counts, BackupError> {
    let failed = |source| BackupError::Write {
        path: path.to_path_buf(),
        source,
    };
    let partial = path.with_extension("partial");
    let file = owner_only(&partial).map_err(failed)?;
    let mut out = std::io::BufWriter::new(file);
    let counts = match write(store, taken_at, &mut out, path).await {
        Ok(counts) => counts,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
    };
    let file = out
        .into_inner()
        .map_err(|error| failed(error.into_error()))?;
    file.sync_all().map_err(failed)?;
    std::fs::rename(&partial, path).map_err(failed)?;
    Ok(counts)
}

pub(crate) fn owner_only(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Visits every block affinity, block and handle of `ipam`, in that order and page by page, each
/// as an [`IpamObject`] or damaged; stops at the first error of `visit`.
pub async fn for_each_ipam_object<E: From<StoreError>>(
    ipam: &dyn IpamStore,
    mut visit: impl FnMut(Result<IpamObject, Damaged>) -> Result<(), E>,
) -> Result<(), E> {
    ipam_store::for_each_affinity(ipam, |item| {
        visit(item.map(|stored| IpamObject::Affinity(stored.value)))
    })
    .await?;
    ipam_store::for_each_block(ipam, |item| {
        visit(item.map(|stored| IpamObject::Block(stored.value)))
    })
    .await?;
    ipam_store::for_each_handle(ipam, |item| {
        visit(item.map(|stored| IpamObject::Handle(stored.value)))
    })
    .await
}

async fn write_ipam(
    ipam: &dyn IpamStore,
    out: &mut dyn Write,
    path: &Path,
) -> Result<u64, BackupError> {
    let mut count = 0;
    let mut put = |record: IpamRecord| -> Result<(), BackupError> {
        count += 1;
        write_line(out, &Line::Ipam(record)).map_err(|source| BackupError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    ipam_store::for_each_affinity(ipam, |item: Result<Stored<BlockAffinity>, Damaged>| {
        put(keyed(&IpamObject::Affinity(
            item.map_err(BackupError::Damaged)?.value,
        )))
    })
    .await?;
    ipam_store::for_each_block(ipam, |item: Result<Stored<AllocationBlock>, Damaged>| {
        let block = IpamObject::Block(item.map_err(BackupError::Damaged)?.value);
        let record = record(&block).ok_or_else(|| {
            BackupError::Damaged(Damaged {
                key: "an IPAM block".into(),
                reason: "it has no CIDR".into(),
            })
        })?;
        put(record)
    })
    .await?;
    ipam_store::for_each_handle(ipam, |item: Result<Stored<IpamHandle>, Damaged>| {
        put(keyed(&IpamObject::Handle(
            item.map_err(BackupError::Damaged)?.value,
        )))
    })
    .await?;
    if let Some(config) = ipam.get_config().await? {
        put(keyed(&IpamObject::Config(config.value)))?;
    }
    Ok(count)
}

/// An IPAM object as upstream's export keys it (a block without a CIDR has no key: `None`).
pub fn record(object: &IpamObject) -> Option<IpamRecord> {
    let (key, value) = match object {
        // A block's value is built as JSON already: no round trip through its bytes.
        IpamObject::Block(block) => {
            return Some(IpamRecord {
                key: encoding::block_key(block.cidr.as_ref()?),
                value: encoding::block_value(block, BlockEncoding::OmitEmpty),
            });
        }
        IpamObject::Affinity(affinity) => (
            encoding::affinity_key(affinity.affinity_type, &affinity.node, &affinity.cidr),
            encoding::encode_affinity(affinity),
        ),
        IpamObject::Handle(handle) => (
            encoding::handle_key(&handle.id),
            encoding::encode_handle(handle),
        ),
        IpamObject::Config(config) => (
            encoding::CONFIG_KEY.to_string(),
            encoding::encode_config(config),
        ),
    };
    Some(IpamRecord {
        key,
        value: serde_json::from_slice(&value).unwrap_or(Value::Null),
    })
}

/// The IPAM object an upstream-keyed record holds.
pub fn object(record: &IpamRecord) -> Result<IpamObject, String> {
    let value = serde_json::to_vec(&record.value).unwrap_or_default();
    let key = record.key.as_str();
    if key == encoding::CONFIG_KEY {
        return encoding::decode_config(&value).map(IpamObject::Config);
    }
    if encoding::block_cidr_of_key(key).is_some() {
        let mut block = encoding::decode_block(&value)?;
        if let Some(cidr) = encoding::block_cidr_of_key(key) {
            block.cidr = Some(cidr);
        }
        return Ok(IpamObject::Block(block));
    }
    if encoding::affinity_of_key(key).is_some() {
        return encoding::decode_affinity(key, &value).map(IpamObject::Affinity);
    }
    if encoding::handle_id_of_key(key).is_some() {
        return encoding::decode_handle(key, &value).map(IpamObject::Handle);
    }
    Err(format!("`{key}` is no IPAM key netctl knows"))
}

/// The record of an object that always has a key (not a block).
fn keyed(object: &IpamObject) -> IpamRecord {
    record(object).unwrap_or(IpamRecord {
        key: String::new(),
        value: Value::Null,
    })
}

fn write_line(out: &mut dyn Write, value: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

/// A backup read a record at a time.
pub struct Reader {
    path: PathBuf,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    number: usize,
    pub header: Header,
    counts: Counts,
    ended: bool,
}

/// Reads a whole backup through (a record at a time) and says what it holds, or why it is no
/// whole backup.
pub fn check(path: &Path) -> Result<(Header, Counts), BackupError> {
    let mut reader = Reader::open(path)?;
    while reader.next_record()?.is_some() {}
    Ok((reader.header.clone(), reader.counts))
}

/// One record of a backup.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Resource(Box<Resource>),
    Ipam(IpamRecord),
}

impl Reader {
    /// Opens a backup and reads its first line.
    pub fn open(path: &Path) -> Result<Reader, BackupError> {
        let file = std::fs::File::open(path).map_err(|source| BackupError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = Reader {
            path: path.to_path_buf(),
            lines: std::io::BufReader::new(file).lines(),
            number: 0,
            header: Header {
                netctl_backup: 0,
                datastore_type: DatastoreType::EtcdV3,
                taken_at: String::new(),
                netctl_version: String::new(),
            },
            counts: Counts::default(),
            ended: false,
        };
        let first = reader
            .next_line()?
            .ok_or_else(|| reader.format("the file is empty"))?;
        let header: Header = serde_json::from_str(&first)
            .map_err(|error| reader.format(&format!("no backup header ({error})")))?;
        if header.netctl_backup != FORMAT_VERSION {
            return Err(reader.format(&format!(
                "format version {} (this netctl reads version {FORMAT_VERSION})",
                header.netctl_backup
            )));
        }
        reader.header = header;
        Ok(reader)
    }

    fn format(&self, reason: &str) -> BackupError {
        BackupError::Format {
            path: self.path.clone(),
            line: self.number,
            reason: reason.to_string(),
        }
    }

    fn next_line(&mut self) -> Result<Option<String>, BackupError> {
        match self.lines.next() {
            None => Ok(None),
            Some(Ok(line)) => {
                self.number += 1;
                Ok(Some(line))
            }
            Some(Err(source)) => Err(BackupError::Read {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// The next record; `None` after the closing count, which must agree with what was read.
    pub fn next_record(&mut self) -> Result<Option<Record>, BackupError> {
        if self.ended {
            return Ok(None);
        }
        let Some(line) = self.next_line()? else {
            return Err(BackupError::Truncated {
                path: self.path.clone(),
            });
        };
        let parsed: Line = serde_json::from_str(&line)
            .map_err(|error| self.format(&format!("not a backup record ({error})")))?;
        match parsed {
            Line::Resource(resource) => {
                self.counts.resources += 1;
                Ok(Some(Record::Resource(resource)))
            }
            Line::Ipam(record) => {
                self.counts.ipam += 1;
                Ok(Some(Record::Ipam(record)))
            }
            Line::End(counts) => {
                if counts != self.counts {
                    return Err(self.format(&format!(
                        "the closing count says {} resource(s) and {} IPAM object(s), the file holds {} and {}",
                        counts.resources, counts.ipam, self.counts.resources, self.counts.ipam
                    )));
                }
                self.ended = true;
                Ok(None)
            }
        }
    }
}
