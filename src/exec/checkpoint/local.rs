//! The run's books in the state directory: `plans/<hex>.json` (each plan once, under its digest),
//! `checkpoint.json` (the snapshot) and `checkpoint.log` (one JSON line per transition since it).
//!
//! Files are owner-only (0600) in an owner-only directory (0700): they hold plans and registered
//! outputs. The plan and the snapshot are replaced atomically (temporary file, fsync, rename, fsync of
//! the directory); each log line is appended and fsynced before the run goes on. A line cut short by a
//! kill is the transition that never completed: reading stops there and the next snapshot drops it;
//! damage anywhere else in the log is reported. Deciding what the books mean is `checkpoint.rs`'s.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{
    CHECKPOINT_FILE, CHECKPOINT_LOG_FILE, Checkpoint, CheckpointError, PLANS_DIR, SavedRun,
    Transition, parse_json, parse_plan, parse_snapshot,
};
use crate::plan::Plan;

/// Owner-only files: they hold plans and outputs.
const FILE_MODE: u32 = 0o600;
/// Owner-only directories.
const DIRECTORY_MODE: u32 = 0o700;

/// Creates `path` (and its parents) if missing, and makes it owner-only.
pub fn create_private_directory(path: &Path) -> std::io::Result<()> {
    fs::create_dir_all(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(DIRECTORY_MODE))
}

/// Replaces `path` with `bytes` so that a crash at any moment leaves either the old or the new file:
/// write an owner-only temporary file beside it, fsync it, rename it over `path`, fsync the directory
/// (so the rename itself survives a power cut).
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
            .mode(FILE_MODE)
            .open(&temporary)?;
        // `mode` applies only to a new file; a temporary file left by a crash keeps its own.
        file.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&temporary, path)?;
    File::open(directory)?.sync_all()
}

/// The books in one state directory.
pub(super) struct LocalBooks {
    directory: PathBuf,
    /// The log, open for appending once a run's books were begun here.
    log: Option<File>,
}

impl LocalBooks {
    pub fn new(directory: PathBuf) -> LocalBooks {
        LocalBooks {
            directory,
            log: None,
        }
    }

    pub fn directory(&self) -> &Path {
        &self.directory
    }

    fn snapshot_path(&self) -> PathBuf {
        self.directory.join(CHECKPOINT_FILE)
    }

    pub fn log_path(&self) -> PathBuf {
        self.directory.join(CHECKPOINT_LOG_FILE)
    }

    fn plan_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.directory.join(PLANS_DIR).join(format!("{hex}.json"))
    }

    pub fn ensure_directory(&self) -> Result<(), CheckpointError> {
        create_private_directory(&self.directory).map_err(|source| {
            CheckpointError::CreateDirectory {
                path: self.directory.clone(),
                source,
            }
        })
    }

    /// Stores `plan` under its digest unless a valid copy is there already.
    pub fn store_plan(&self, plan: &Plan) -> Result<(), CheckpointError> {
        let path = self.plan_path(&plan.digest);
        if let Ok(bytes) = fs::read(&path)
            && parse_plan(&bytes, "", &plan.digest).is_ok()
        {
            return Ok(());
        }
        let directory = self.directory.join(PLANS_DIR);
        create_private_directory(&directory).map_err(|source| {
            CheckpointError::CreateDirectory {
                path: directory,
                source,
            }
        })?;
        let bytes = serde_json::to_vec(plan).map_err(|source| CheckpointError::Invalid {
            location: path.display().to_string(),
            source,
        })?;
        write_atomically(&path, &bytes).map_err(|source| CheckpointError::Write { path, source })
    }

    /// Writes `checkpoint` as the snapshot and starts an empty log after it.
    pub fn write_snapshot(&mut self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        self.ensure_directory()?;
        let path = self.snapshot_path();
        let bytes =
            serde_json::to_vec_pretty(checkpoint).map_err(|source| CheckpointError::Invalid {
                location: path.display().to_string(),
                source,
            })?;
        write_atomically(&path, &bytes).map_err(|source| CheckpointError::Write {
            path: path.clone(),
            source,
        })?;
        // An empty log replaces the old one only after the snapshot holds everything it said; a
        // crash in between leaves transitions the snapshot already has, which reading passes over.
        let log = self.log_path();
        let write = |source| CheckpointError::Write {
            path: log.clone(),
            source,
        };
        write_atomically(&log, b"").map_err(write)?;
        self.log = Some(
            OpenOptions::new()
                .append(true)
                .mode(FILE_MODE)
                .open(&log)
                .map_err(write)?,
        );
        Ok(())
    }

    /// Appends one transition and flushes it to disk.
    pub fn append(&mut self, line: &[u8]) -> Result<(), CheckpointError> {
        let path = self.log_path();
        let write = |source| CheckpointError::Write {
            path: path.clone(),
            source,
        };
        let log = match &mut self.log {
            Some(log) => log,
            None => {
                return Err(write(std::io::Error::other(
                    "the run's books were not begun",
                )));
            }
        };
        let mut record = Vec::with_capacity(line.len() + 1);
        record.extend_from_slice(line);
        record.push(b'\n');
        log.write_all(&record).map_err(write)?;
        log.sync_data().map_err(write)
    }

    /// The plan stored under `digest`, when it is there and matches its digest (an earlier run's,
    /// for `upgrade status RUN`).
    pub fn stored_plan(&self, digest: &str) -> Option<Plan> {
        let path = self.plan_path(digest);
        let bytes = read_if_present(&path).ok()??;
        parse_plan(&bytes, &path.display().to_string(), digest).ok()
    }

    /// Reads the books: the snapshot, its plan, and the transitions logged since.
    pub fn load(&self) -> Result<Option<SavedRun>, CheckpointError> {
        let path = self.snapshot_path();
        let Some(bytes) = read_if_present(&path)? else {
            return Ok(None);
        };
        let Some(mut checkpoint) = parse_snapshot(&bytes, &path.display().to_string())? else {
            return Ok(None);
        };
        let plan_path = self.plan_path(&checkpoint.plan_digest);
        let Some(plan_bytes) = read_if_present(&plan_path)? else {
            return Err(CheckpointError::PlanMissing {
                digest: checkpoint.plan_digest.clone(),
                directory: self.directory.join(PLANS_DIR),
            });
        };
        let plan = parse_plan(
            &plan_bytes,
            &plan_path.display().to_string(),
            &checkpoint.plan_digest,
        )?;
        if plan.steps.len() != checkpoint.steps.len() {
            return Err(CheckpointError::Inconsistent {
                location: path.display().to_string(),
                problem: format!(
                    "it records {} steps and its plan has {}",
                    checkpoint.steps.len(),
                    plan.steps.len()
                ),
            });
        }
        let log = self.log_path();
        if let Some(bytes) = read_if_present(&log)? {
            replay(&mut checkpoint, &bytes, &log.display().to_string())?;
        }
        Ok(Some(SavedRun { plan, checkpoint }))
    }
}

fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>, CheckpointError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CheckpointError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Applies the logged transitions in `bytes` to `checkpoint`. A last line without its newline was
/// being written when the process died: that transition never completed and is passed over.
pub(super) fn replay(
    checkpoint: &mut Checkpoint,
    bytes: &[u8],
    location: &str,
) -> Result<(), CheckpointError> {
    let complete = match bytes.iter().rposition(|byte| *byte == b'\n') {
        Some(end) => &bytes[..=end],
        None => &[][..],
    };
    for (number, line) in complete.split(|byte| *byte == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let transition: Transition = parse_json(line, &format!("{location}, line {}", number + 1))?;
        checkpoint.apply(transition, location)?;
    }
    Ok(())
}
