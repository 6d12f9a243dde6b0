//! The checkpoint: where a run stands, written after every step so a crash loses at most one step.
//!
//! A checkpoint holds the whole plan (so `--resume` needs nothing else), its digest, every step's state
//! with attempts and timestamps, the outputs steps registered, and why the run stopped. It is written
//! atomically — a temporary file in the same directory, fsync, rename, fsync of the directory — so a
//! reader sees the old checkpoint or the new one, never half of each. Each write is also mirrored into
//! the datastore (see `datastore::coordination`) so another machine can resume: as gzip-compressed
//! compact JSON, because a plan for a large cluster is bigger than one etcd value or ConfigMap may be
//! (a thousand all-interfaces host endpoints make a 1.4 MB plan; compressed, 37 kB). A checkpoint too
//! large even so is kept locally only, the mirror says where, and the run warns. This module stores
//! and loads; deciding what to do with a checkpoint is the executor's job.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use crate::config::Environment;
use crate::datastore::StoreError;
use crate::datastore::coordination::{Coordination, UPGRADE_CHECKPOINT_KEY};
use crate::plan::Plan;

use super::lock::Holder;

/// The version of the checkpoint format; bumped on any incompatible change.
pub const CHECKPOINT_FORMAT_VERSION: u32 = 1;

/// The most a mirrored checkpoint may take: under etcd's default 1.5 MiB request limit and a
/// ConfigMap's 1 MiB.
pub const MIRROR_LIMIT: usize = 900 * 1024;

/// The file name of the checkpoint inside the state directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";

/// The file name of the journal inside the state directory.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// The file, inside the state directory, naming the program a running step started (see
/// `actions::process::ChildRecord`).
pub const CHILD_FILE: &str = "running-program.json";

/// The directory, inside the state directory, where `fetch` steps keep what they downloaded.
pub const FILES_DIR: &str = "files";

/// The state directory used when `--state-dir` is not given: `$XDG_STATE_HOME/netctl`, else
/// `~/.local/state/netctl`.
pub fn default_state_dir(environment: &Environment) -> Option<PathBuf> {
    let base = match environment.exact("XDG_STATE_HOME") {
        // The XDG spec says a relative path is invalid and must be ignored.
        Some(state) if Path::new(state).is_absolute() => PathBuf::from(state),
        _ => PathBuf::from(environment.exact("HOME").filter(|home| !home.is_empty())?)
            .join(".local")
            .join("state"),
    };
    Some(base.join("netctl"))
}

/// Where one step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    Pending,
    /// Started and not known to have finished (the run was interrupted if no process holds the lock).
    Running,
    Succeeded,
    Failed,
    Skipped,
}

impl StepState {
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::Running => "running",
            StepState::Succeeded => "succeeded",
            StepState::Failed => "failed",
            StepState::Skipped => "skipped",
        }
    }

    /// Whether the step needs no more work.
    pub fn is_done(self) -> bool {
        matches!(self, StepState::Succeeded | StepState::Skipped)
    }
}

/// The record of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub id: String,
    pub state: StepState,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The last failure, as shown to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A one-line account of what the step did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// For `fetch` steps: the sha256 of what was downloaded, so a resume — on this machine or
    /// another — uses exactly those bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_digest: Option<String>,
    /// For `fetch` steps with a manifest overlay: the sha256 of the overlaid manifest written to the
    /// step's `file` (without an overlay, `file` holds the download itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_digest: Option<String>,
    /// For `kube.apply` of a file: the sha256 of the file as it was applied — the file a `fetch`
    /// wrote, or that file as the operator edited it while the run was stopped at a gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_digest: Option<String>,
}

/// Why a run is not (yet) running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum RunState {
    /// A process is working on it, or one was interrupted.
    InProgress,
    /// Stopped cleanly before a step that needs a human's confirmation.
    WaitingAtGate { step: String },
    /// A step failed after all its attempts.
    Failed { step: String },
    /// Every step succeeded or was skipped.
    Completed,
}

/// Everything needed to continue a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub format_version: u32,
    /// A fresh id per run (not per process): resumes keep it.
    pub run_id: String,
    pub plan_digest: String,
    pub plan: Plan,
    /// Bumped on every write; of two copies of one run, the higher is newer.
    pub sequence: u64,
    pub started_at: String,
    pub updated_at: String,
    pub started_by: Holder,
    pub run: RunState,
    pub steps: Vec<StepRecord>,
    /// Outputs of steps that declared `register`, by that name.
    #[serde(default)]
    pub outputs: BTreeMap<String, serde_json::Value>,
}

impl Checkpoint {
    /// A checkpoint for a new run of `plan`, every step pending.
    pub fn new(plan: &Plan, holder: &Holder) -> Checkpoint {
        let now = super::clock::now_rfc3339();
        Checkpoint {
            format_version: CHECKPOINT_FORMAT_VERSION,
            run_id: uuid::Uuid::new_v4().to_string(),
            plan_digest: plan.digest.clone(),
            plan: plan.clone(),
            sequence: 0,
            started_at: now.clone(),
            updated_at: now,
            started_by: holder.clone(),
            run: RunState::InProgress,
            steps: plan
                .steps
                .iter()
                .map(|step| StepRecord {
                    id: step.id.clone(),
                    state: StepState::Pending,
                    attempts: 0,
                    started_at: None,
                    finished_at: None,
                    error: None,
                    summary: None,
                    download_digest: None,
                    file_digest: None,
                    applied_digest: None,
                })
                .collect(),
            outputs: BTreeMap::new(),
        }
    }

    pub fn step(&self, index: usize) -> &StepRecord {
        &self.steps[index]
    }

    pub fn step_mut(&mut self, index: usize) -> &mut StepRecord {
        &mut self.steps[index]
    }

    /// How many steps need no more work.
    pub fn done_count(&self) -> usize {
        self.steps
            .iter()
            .filter(|step| step.state.is_done())
            .count()
    }
}

/// Why a checkpoint could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot create the state directory `{}`", path.display())]
    CreateDirectory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the checkpoint `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the checkpoint `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the checkpoint `{location}` is not valid")]
    Invalid {
        location: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "the checkpoint `{location}` has format version {found}, this netctl reads version {CHECKPOINT_FORMAT_VERSION}"
    )]
    UnsupportedVersion { location: String, found: u32 },
    #[error("cannot mirror the checkpoint into the datastore")]
    Mirror {
        #[source]
        source: StoreError,
    },
    #[error(
        "the checkpoint of run `{run_id}` is only in the state directory on host `{host}`: it was too large ({bytes} bytes compressed) to mirror into the datastore"
    )]
    LocalOnly {
        run_id: String,
        host: String,
        bytes: usize,
    },
}

/// What the mirror holds in place of a checkpoint too large for it.
#[derive(Debug, Serialize, Deserialize)]
struct LocalOnlyMarker {
    local_only: LocalOnly,
}

#[derive(Debug, Serialize, Deserialize)]
struct LocalOnly {
    run_id: String,
    host: String,
    bytes: usize,
}

/// The mirror's form of a checkpoint: compact JSON, gzip-compressed.
fn compress(checkpoint: &Checkpoint) -> Result<Vec<u8>, CheckpointError> {
    let json = serde_json::to_vec(checkpoint).map_err(|source| CheckpointError::Invalid {
        location: UPGRADE_CHECKPOINT_KEY.to_string(),
        source,
    })?;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(json.len() / 8),
        flate2::Compression::fast(),
    );
    encoder
        .write_all(&json)
        .and_then(|()| encoder.finish())
        .map_err(|source| CheckpointError::Read {
            path: PathBuf::from(UPGRADE_CHECKPOINT_KEY),
            source,
        })
}

/// The JSON of a mirrored value: gzip (from this release) or plain JSON (mirrors written before).
fn decompress(bytes: &[u8]) -> Result<Vec<u8>, CheckpointError> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes.to_vec());
    }
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut json)
        .map_err(|source| CheckpointError::Read {
            path: PathBuf::from(UPGRADE_CHECKPOINT_KEY),
            source,
        })?;
    Ok(json)
}

/// Where checkpoints are kept: a directory, and optionally a datastore mirror.
#[derive(Clone)]
pub struct CheckpointStore {
    directory: PathBuf,
    mirror: Option<Arc<dyn Coordination>>,
    /// Whether this process already warned that the checkpoint is kept locally only.
    warned_local_only: Arc<AtomicBool>,
}

impl CheckpointStore {
    pub fn new(directory: PathBuf, mirror: Option<Arc<dyn Coordination>>) -> CheckpointStore {
        CheckpointStore {
            directory,
            mirror,
            warned_local_only: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn directory(&self) -> &Path {
        &self.directory
    }

    pub fn path(&self) -> PathBuf {
        self.directory.join(CHECKPOINT_FILE)
    }

    /// Creates the state directory (owner-only: it holds plans and outputs) if it is missing.
    pub fn ensure_directory(&self) -> Result<(), CheckpointError> {
        let create = |source| CheckpointError::CreateDirectory {
            path: self.directory.clone(),
            source,
        };
        fs::create_dir_all(&self.directory).map_err(create)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&self.directory, fs::Permissions::from_mode(0o700))
                .map_err(create)?;
        }
        Ok(())
    }

    /// Writes the checkpoint locally (atomically) and then to the mirror.
    pub async fn save(&self, checkpoint: &mut Checkpoint) -> Result<(), CheckpointError> {
        checkpoint.sequence += 1;
        checkpoint.updated_at = super::clock::now_rfc3339();
        let bytes =
            serde_json::to_vec_pretty(checkpoint).map_err(|source| CheckpointError::Invalid {
                location: self.path().display().to_string(),
                source,
            })?;
        self.ensure_directory()?;
        write_atomically(&self.path(), &bytes).map_err(|source| CheckpointError::Write {
            path: self.path(),
            source,
        })?;
        if let Some(mirror) = &self.mirror {
            let mut compressed = compress(checkpoint)?;
            if compressed.len() > MIRROR_LIMIT {
                // Another machine must not resume from an older copy: the mirror says where the
                // checkpoint is instead.
                let marker = LocalOnlyMarker {
                    local_only: LocalOnly {
                        run_id: checkpoint.run_id.clone(),
                        host: checkpoint.started_by.host.clone(),
                        bytes: compressed.len(),
                    },
                };
                if !self.warned_local_only.swap(true, Ordering::Relaxed) {
                    crate::terminal::warn(format!(
                        "the checkpoint is {} bytes compressed, more than the datastore may hold in one value ({MIRROR_LIMIT}); it is kept in `{}` only, so a resume must run on this machine",
                        compressed.len(),
                        self.directory.display()
                    ));
                }
                compressed = serde_json::to_vec(&marker).unwrap_or_default();
            }
            mirror
                .put_blob(UPGRADE_CHECKPOINT_KEY, &compressed)
                .await
                .map_err(|source| CheckpointError::Mirror { source })?;
        }
        Ok(())
    }

    /// Reads the local checkpoint, if there is one.
    pub fn load_local(&self) -> Result<Option<Checkpoint>, CheckpointError> {
        let path = self.path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CheckpointError::Read { path, source }),
        };
        parse(&bytes, &path.display().to_string()).map(Some)
    }

    /// Reads the mirrored checkpoint, if there is a mirror and it holds one.
    pub async fn load_mirror(&self) -> Result<Option<Checkpoint>, CheckpointError> {
        let Some(mirror) = &self.mirror else {
            return Ok(None);
        };
        let blob = mirror
            .get_blob(UPGRADE_CHECKPOINT_KEY)
            .await
            .map_err(|source| CheckpointError::Mirror { source })?;
        let Some(blob) = blob else {
            return Ok(None);
        };
        let json = decompress(&blob.value)?;
        if let Ok(marker) = serde_json::from_slice::<LocalOnlyMarker>(&json) {
            let LocalOnly {
                run_id,
                host,
                bytes,
            } = marker.local_only;
            return Err(CheckpointError::LocalOnly {
                run_id,
                host,
                bytes,
            });
        }
        parse(&json, UPGRADE_CHECKPOINT_KEY).map(Some)
    }

    /// The newest checkpoint of the local copy and the mirror.
    ///
    /// Copies of one run compare by sequence. Copies of different runs compare by `updated_at`:
    /// the local file of a machine that last ran an upgrade months ago must not shadow the run a
    /// colleague started yesterday.
    pub async fn load_latest(&self) -> Result<Option<Checkpoint>, CheckpointError> {
        let local = self.load_local()?;
        let mirrored = match self.load_mirror().await {
            // The mirror points at a checkpoint kept locally: this machine's, if it is here.
            Err(CheckpointError::LocalOnly { run_id, .. })
                if local.as_ref().is_some_and(|local| local.run_id == run_id) =>
            {
                None
            }
            other => other?,
        };
        Ok(match (local, mirrored) {
            (Some(local), Some(mirrored)) => {
                let mirror_is_newer = if local.run_id == mirrored.run_id {
                    mirrored.sequence > local.sequence
                } else {
                    mirrored.updated_at > local.updated_at
                };
                Some(if mirror_is_newer { mirrored } else { local })
            }
            (local, mirrored) => local.or(mirrored),
        })
    }
}

fn parse(bytes: &[u8], location: &str) -> Result<Checkpoint, CheckpointError> {
    #[derive(Deserialize)]
    struct VersionOnly {
        format_version: u32,
    }
    let invalid = |source| CheckpointError::Invalid {
        location: location.to_string(),
        source,
    };
    let version: VersionOnly = serde_json::from_slice(bytes).map_err(invalid)?;
    if version.format_version != CHECKPOINT_FORMAT_VERSION {
        return Err(CheckpointError::UnsupportedVersion {
            location: location.to_string(),
            found: version.format_version,
        });
    }
    serde_json::from_slice(bytes).map_err(invalid)
}

/// Replaces `path` with `bytes` so that a crash at any moment leaves either the old or the new file:
/// write a temporary file beside it, fsync it, rename it over `path`, fsync the directory (so the
/// rename itself survives a power cut).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let directory = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = directory.join(format!(".{file_name}.{}.tmp", std::process::id()));
    {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&temporary, path)?;
    File::open(directory)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_state_directory_follows_xdg() {
        let env = Environment::from_pairs([("XDG_STATE_HOME", "/s"), ("HOME", "/h")]);
        assert_eq!(default_state_dir(&env).unwrap(), PathBuf::from("/s/netctl"));
        let env = Environment::from_pairs([("XDG_STATE_HOME", "relative"), ("HOME", "/h")]);
        assert_eq!(
            default_state_dir(&env).unwrap(),
            PathBuf::from("/h/.local/state/netctl")
        );
        assert_eq!(default_state_dir(&Environment::default()), None);
    }

    #[test]
    fn mirrored_values_are_gzip_and_plain_json_from_earlier_releases_still_reads() {
        let plain = br#"{"format_version": 1}"#;
        assert_eq!(decompress(plain).unwrap(), plain);
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(plain).unwrap();
        let compressed = encoder.finish().unwrap();
        assert!(compressed.starts_with(&[0x1f, 0x8b]));
        assert_eq!(decompress(&compressed).unwrap(), plain);
        let broken = [0x1f, 0x8b, 0x08, 0x00];
        assert!(decompress(&broken).is_err());
    }

    #[test]
    fn an_atomic_write_replaces_the_whole_file() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("checkpoint.json");
        write_atomically(&path, b"first, and rather long").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        let leftovers: Vec<_> = fs::read_dir(directory.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }
}
