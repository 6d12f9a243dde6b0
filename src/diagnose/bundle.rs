//! A diagnostics bundle being made: files collected into a private staging directory, each through
//! the [`Scrubber`] and within the size limits, an index of what was collected and what could not
//! be (with why), and at the end one `.tar.gz` written beside the staging directory under a
//! temporary name and renamed into place — so a failure or Ctrl-C half way leaves nothing behind
//! (the staging directory and the partial archive are removed when the [`Bundle`] is dropped).
//!
//! Every file and directory is private to the user running netctl (0600 / 0700): a bundle holds the
//! host's network configuration. Limits: one file stops at `max_file_size` (marked truncated in the
//! index), and once `max_size` bytes are written in all, files stop where they are and later ones
//! are skipped (said in the index), so a bundle never grows past its limit however much the node
//! logs.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::DiagnoseError;
use super::scrub::{ScrubWriter, Scrubber};

/// Where a bundle goes and how large it may grow.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// The directory the archive is written to (it must exist).
    pub dir: PathBuf,
    /// The archive's file name (`diags-20260101_120000.tar.gz`).
    pub archive: String,
    /// The directory at the top of the archive (`diagnostics`).
    pub top: String,
    /// The most one file may hold (bytes).
    pub max_file_size: u64,
    /// The most all files may hold together (bytes, before compression).
    pub max_size: u64,
}

/// How an item of the index ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Collected (maybe truncated at a limit).
    Collected,
    /// The program or file is not on this host.
    Missing,
    /// It ran or was asked for and failed; the reason says how.
    Failed,
    /// Not attempted: a limit was reached, or it does not apply.
    Skipped,
}

/// One line of the bundle's index: what was asked for, where it went, how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The file in the bundle (relative to its top directory), when one was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What was run or read: a command line, an API request, a path.
    pub source: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Entry {
    /// An entry with no file (missing, failed before output, skipped).
    pub fn without_file(
        source: impl Into<String>,
        status: Status,
        reason: impl Into<String>,
    ) -> Entry {
        Entry {
            file: None,
            source: source.into(),
            status,
            reason: Some(reason.into()),
            bytes: 0,
            truncated: false,
        }
    }
}

/// How many items ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub collected: usize,
    pub missing: usize,
    pub failed: usize,
    pub skipped: usize,
    pub truncated: usize,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} collected ({} truncated), {} missing, {} failed, {} skipped",
            self.collected, self.truncated, self.missing, self.failed, self.skipped
        )
    }
}

/// The archive a finished bundle became.
#[derive(Debug, Clone)]
pub struct Archive {
    pub path: PathBuf,
    pub bytes: u64,
    pub summary: Summary,
}

/// A bundle being collected (see the module comment).
pub struct Bundle {
    options: BundleOptions,
    staging: PathBuf,
    root: PathBuf,
    partial: PathBuf,
    scrubber: Mutex<Scrubber>,
    index: Mutex<Vec<Entry>>,
    written: Arc<AtomicU64>,
}

impl Bundle {
    /// Checks the destination and makes the staging directory. Refuses a directory that does not
    /// exist and an archive that already does.
    pub fn create(options: BundleOptions, scrubber: Scrubber) -> Result<Bundle, DiagnoseError> {
        match fs::metadata(&options.dir) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(DiagnoseError::NotADirectory {
                    dir: options.dir.clone(),
                });
            }
            Err(source) => {
                return Err(DiagnoseError::Directory {
                    dir: options.dir.clone(),
                    source,
                });
            }
        }
        let archive = options.dir.join(&options.archive);
        if archive.exists() {
            return Err(DiagnoseError::ArchiveExists { path: archive });
        }
        let staging = options.dir.join(format!(
            ".{}.staging-{}",
            options.archive,
            uuid::Uuid::new_v4()
        ));
        let root = staging.join(&options.top);
        fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&root)
            .map_err(|source| DiagnoseError::Write {
                path: root.clone(),
                source,
            })?;
        let partial = options.dir.join(format!(".{}.partial", options.archive));
        Ok(Bundle {
            options,
            staging,
            root,
            partial,
            scrubber: Mutex::new(scrubber),
            index: Mutex::new(Vec::new()),
            written: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Replaces the scrubber (a cluster bundle learns the Secrets' values before it reads logs).
    pub fn set_scrubber(&self, scrubber: Scrubber) {
        *self
            .scrubber
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = scrubber;
    }

    /// The scrubber in force.
    pub fn scrubber(&self) -> Scrubber {
        self.scrubber
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    /// Whether the size limit of the whole bundle is reached.
    pub fn is_full(&self) -> bool {
        self.written.load(Ordering::Relaxed) >= self.options.max_size
    }

    /// A new file at `relative` (inside the bundle's top directory), written through the
    /// scrubber; `for_objects` leaves out the secret-assignment rule (Kubernetes objects, censored
    /// field by field). `None` when the bundle is full.
    pub fn open(
        &self,
        relative: &str,
        for_objects: bool,
    ) -> Result<Option<BundleFile>, DiagnoseError> {
        if self.is_full() {
            return Ok(None);
        }
        let path = self.path_of(relative)?;
        if let Some(parent) = path.parent() {
            fs::DirBuilder::new()
                .mode(0o700)
                .recursive(true)
                .create(parent)
                .map_err(|source| DiagnoseError::Write {
                    path: parent.to_path_buf(),
                    source,
                })?;
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| DiagnoseError::Write {
                path: path.clone(),
                source,
            })?;
        let capped = CappedFile {
            file: BufWriter::new(file),
            file_limit: self.options.max_file_size,
            file_written: 0,
            total: Arc::clone(&self.written),
            total_limit: self.options.max_size,
            truncated: false,
        };
        let scrubber = match for_objects {
            true => self.scrubber().for_objects(),
            false => self.scrubber(),
        };
        Ok(Some(BundleFile {
            relative: relative.to_string(),
            path,
            writer: ScrubWriter::new(capped, scrubber),
        }))
    }

    /// Writes `content` to `relative` and records it as collected from `source` (or skipped when
    /// the bundle is full).
    pub fn write(
        &self,
        relative: &str,
        source: impl Into<String>,
        content: &[u8],
        for_objects: bool,
    ) -> Result<(), DiagnoseError> {
        let source = source.into();
        let Some(mut file) = self.open(relative, for_objects)? else {
            self.record(self.full_entry(source));
            return Ok(());
        };
        file.write_all(content)
            .map_err(|source| DiagnoseError::Write {
                path: file.path.clone(),
                source,
            })?;
        let written = file.finish()?;
        self.record(written.entry(source, Status::Collected, None));
        Ok(())
    }

    /// Removes a file that is not wanted after all (a failed list that read nothing, a JSON dump
    /// replaced by its text fallback); its bytes no longer count against the limit.
    pub fn discard(&self, written: &Written) {
        if let Ok(path) = self.path_of(&written.file) {
            let _ = fs::remove_file(path);
        }
        self.written.fetch_sub(written.bytes, Ordering::Relaxed);
    }

    /// The entry for an item not collected because the bundle is full.
    pub fn full_entry(&self, source: impl Into<String>) -> Entry {
        Entry::without_file(
            source,
            Status::Skipped,
            format!(
                "the bundle reached its size limit ({} bytes, `--max-size`)",
                self.options.max_size
            ),
        )
    }

    /// Adds an entry to the index (its reason scrubbed: it may quote a command's output).
    pub fn record(&self, mut entry: Entry) {
        if let Some(reason) = &entry.reason {
            entry.reason = Some(self.scrubber().scrub_text(reason));
        }
        self.index
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push(entry);
    }

    /// The index so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.index
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    fn path_of(&self, relative: &str) -> Result<PathBuf, DiagnoseError> {
        let path = Path::new(relative);
        let plain = path
            .components()
            .all(|component| matches!(component, Component::Normal(_)));
        if relative.is_empty() || !plain {
            return Err(DiagnoseError::BadBundlePath {
                path: relative.to_string(),
            });
        }
        Ok(self.root.join(path))
    }

    /// Writes `index.json` (with `header` at its top) and the archive; the staging directory goes.
    pub fn finish(self, header: serde_json::Value) -> Result<Archive, DiagnoseError> {
        let mut entries = self.entries();
        entries.sort_by(|a, b| (&a.file, &a.source).cmp(&(&b.file, &b.source)));
        let mut summary = Summary::default();
        for entry in &entries {
            match entry.status {
                Status::Collected => summary.collected += 1,
                Status::Missing => summary.missing += 1,
                Status::Failed => summary.failed += 1,
                Status::Skipped => summary.skipped += 1,
            }
            if entry.truncated {
                summary.truncated += 1;
            }
        }
        let mut index = match header {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        index.insert(
            "summary".into(),
            serde_json::to_value(summary).unwrap_or_default(),
        );
        index.insert(
            "entries".into(),
            serde_json::to_value(&entries).unwrap_or_default(),
        );
        let text = serde_json::to_string_pretty(&index).unwrap_or_default();
        let index_path = self.root.join("index.json");
        let mut writer =
            ScrubWriter::new(private_file(&index_path)?, self.scrubber().for_objects());
        writer
            .write_all(text.as_bytes())
            .and_then(|()| writer.write_all(b"\n"))
            .map_err(|source| DiagnoseError::Write {
                path: index_path.clone(),
                source,
            })?;
        writer.finish().map_err(|source| DiagnoseError::Write {
            path: index_path.clone(),
            source,
        })?;

        let archive_error = |source: io::Error| DiagnoseError::Archive {
            path: self.partial.clone(),
            source,
        };
        let file = private_file(&self.partial)?;
        let encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        let mut builder = tar::Builder::new(encoder);
        builder.follow_symlinks(false);
        builder
            .append_dir_all(&self.options.top, &self.root)
            .map_err(archive_error)?;
        let encoder = builder.into_inner().map_err(archive_error)?;
        let file = encoder.finish().map_err(archive_error)?;
        file.sync_all().map_err(archive_error)?;
        let bytes = file.metadata().map_err(archive_error)?.len();
        let path = self.options.dir.join(&self.options.archive);
        fs::rename(&self.partial, &path).map_err(|source| DiagnoseError::Archive {
            path: path.clone(),
            source,
        })?;
        let path = fs::canonicalize(&path).unwrap_or(path);
        Ok(Archive {
            path,
            bytes,
            summary,
        })
    }
}

impl Drop for Bundle {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.staging);
        let _ = fs::remove_file(&self.partial);
    }
}

fn private_file(path: &Path) -> Result<File, DiagnoseError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| DiagnoseError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// A file being written into the bundle: bytes go through the scrubber, then the limits.
pub struct BundleFile {
    relative: String,
    path: PathBuf,
    writer: ScrubWriter<CappedFile>,
}

/// What one file ended with.
#[derive(Debug, Clone)]
pub struct Written {
    pub file: String,
    pub bytes: u64,
    pub truncated: bool,
}

impl Written {
    /// The index entry for this file.
    pub fn entry(&self, source: String, status: Status, reason: Option<String>) -> Entry {
        let reason = match (reason, self.truncated) {
            (Some(reason), _) => Some(reason),
            (None, true) => {
                Some("cut at a size limit (`--max-file-size` or `--max-size`)".to_string())
            }
            (None, false) => None,
        };
        Entry {
            file: Some(self.file.clone()),
            source,
            status,
            reason,
            bytes: self.bytes,
            truncated: self.truncated,
        }
    }
}

impl BundleFile {
    /// Ends the file.
    pub fn finish(self) -> Result<Written, DiagnoseError> {
        let path = self.path;
        let capped = self
            .writer
            .finish()
            .map_err(|source| DiagnoseError::Write {
                path: path.clone(),
                source,
            })?;
        let (bytes, truncated) = (capped.file_written, capped.truncated);
        let mut file = capped.file;
        file.flush()
            .map_err(|source| DiagnoseError::Write { path, source })?;
        Ok(Written {
            file: self.relative,
            bytes,
            truncated,
        })
    }
}

impl Write for BundleFile {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        self.writer.write(buffer)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// A file that takes at most its own limit and what is left of the bundle's; the rest is counted
/// as accepted and dropped, so the writer before it goes on reading (and a command never blocks
/// on a full pipe).
struct CappedFile {
    file: BufWriter<File>,
    file_limit: u64,
    file_written: u64,
    total: Arc<AtomicU64>,
    total_limit: u64,
    truncated: bool,
}

impl Write for CappedFile {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let wanted = (buffer.len() as u64).min(self.file_limit.saturating_sub(self.file_written));
        // Reserve from the bundle's total; what is not granted is given back.
        let before = self.total.fetch_add(wanted, Ordering::Relaxed);
        let granted = wanted.min(self.total_limit.saturating_sub(before));
        if granted < wanted {
            self.total.fetch_sub(wanted - granted, Ordering::Relaxed);
        }
        if granted < buffer.len() as u64 {
            self.truncated = true;
        }
        self.file.write_all(&buffer[..granted as usize])?;
        self.file_written += granted;
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(dir: &Path, max_file_size: u64, max_size: u64) -> BundleOptions {
        BundleOptions {
            dir: dir.to_path_buf(),
            archive: "bundle.tar.gz".into(),
            top: "diagnostics".into(),
            max_file_size,
            max_size,
        }
    }

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("netctl-bundle-test-{}", uuid::Uuid::new_v4()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn read_archive(path: &Path) -> Vec<(String, Vec<u8>)> {
        let file = File::open(path).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
        let mut files = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            if entry.header().entry_type().is_file() {
                let name = entry.path().unwrap().to_string_lossy().into_owned();
                let mut content = Vec::new();
                io::Read::read_to_end(&mut entry, &mut content).unwrap();
                files.push((name, content));
            }
        }
        files.sort();
        files
    }

    #[test]
    fn files_go_through_the_scrubber_and_the_limits_and_the_index_says_what_happened() {
        let dir = scratch();
        let bundle = Bundle::create(
            options(&dir, 8, 12),
            Scrubber::new(["topsecret-value".to_string()]),
        )
        .unwrap();
        bundle
            .write("a", "echo a", b"topsecret-value\n", false)
            .unwrap();
        bundle
            .write("sub/b", "echo b", b"0123456789", false)
            .unwrap();
        bundle.write("c", "echo c", b"more", false).unwrap();
        bundle.record(Entry::without_file("nft", Status::Missing, "not installed"));
        let archive = bundle.finish(serde_json::json!({"kind": "test"})).unwrap();
        assert_eq!(archive.summary.collected, 2);
        assert_eq!(archive.summary.skipped, 1);
        assert_eq!(archive.summary.missing, 1);
        assert_eq!(archive.summary.truncated, 2);
        let files = read_archive(&archive.path);
        let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "diagnostics/a",
                "diagnostics/index.json",
                "diagnostics/sub/b"
            ]
        );
        assert_eq!(files[0].1, b"<redacte");
        assert_eq!(files[2].1, b"0123");
        let index: serde_json::Value = serde_json::from_slice(&files[1].1).unwrap();
        assert_eq!(index["kind"], "test");
        assert_eq!(index["summary"]["skipped"], 1);
        // Only the archive is left.
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["bundle.tar.gz"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_dropped_bundle_leaves_nothing_and_bad_paths_and_destinations_are_refused() {
        let dir = scratch();
        {
            let bundle = Bundle::create(options(&dir, 100, 100), Scrubber::default()).unwrap();
            bundle.write("x", "echo", b"x", false).unwrap();
            assert!(matches!(
                bundle.write("../escape", "echo", b"x", false),
                Err(DiagnoseError::BadBundlePath { .. })
            ));
        }
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        assert!(matches!(
            Bundle::create(options(&dir.join("missing"), 1, 1), Scrubber::default()),
            Err(DiagnoseError::Directory { .. })
        ));
        fs::write(dir.join("bundle.tar.gz"), b"old").unwrap();
        assert!(matches!(
            Bundle::create(options(&dir, 1, 1), Scrubber::default()),
            Err(DiagnoseError::ArchiveExists { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
