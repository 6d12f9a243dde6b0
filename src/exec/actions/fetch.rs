//! `fetch`: download a URL into the run's state directory, so later steps (and a resume) use exactly
//! those bytes.
//!
//! `file://` URLs read a local file; with a mirror directory, any URL is served from
//! `<mirror>/<host>/<path>` instead of the network (air-gapped sites); `http(s)://` goes through reqwest
//! with rustls. The file is written atomically and its sha256 becomes the step's output. A `sha256`
//! in the step (the digest of the manifest reviewed at plan time) must match the download, or the
//! step fails before anything is written.
//!
//! A resume never overwrites a file the run already has: the manifest runbooks' gate asks the
//! operator to edit `file` while the run is stopped, and those edits are what the later
//! `kube.apply` must apply (the output says the file was `edited`). Only a missing file is
//! downloaded again (a resume on another machine, or a deleted file), and its bytes must have the
//! recorded digest.
//!
//! With a manifest overlay (see `plan::overlay`), the download is kept as `<file>.original` (its
//! digest is the recorded one) and `file` gets the overlaid manifest; an overlay that does not fit
//! the manifest fails the step before anything is written. A dry-run with a local source applies
//! the overlay for real and shows its diff.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Context, Outcome, Perform, Performed, RunMode};
use crate::errors::Hint;
use crate::exec::checkpoint::{create_private_directory, write_atomically};
use crate::plan::Action;
use crate::plan::action::Fetch;
use crate::plan::request::ManifestReader;

impl Perform for Fetch {
    async fn perform(&self, _: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let files_dir = context.files_dir.as_path();
        let mirror_dir = context.mirror_dir.as_deref();
        let recorded = context.recorded_digest.as_deref();
        Ok(fetch(self, files_dir, mirror_dir, recorded, mode).await?)
    }

    /// A resume keeps the file the run has; a missing one must come back with the recorded digest.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

/// Why a download failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("unsupported URL `{url}`: expected `https://`, `http://` or `file://`")]
    UnsupportedScheme { url: String },
    #[error("the target file `{file}` must be a relative path inside the state directory")]
    UnsafeTarget { file: String },
    #[error("cannot read `{}` for `{url}`", path.display())]
    ReadLocal {
        url: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot download `{url}`")]
    Download {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("cannot download `{url}`: the server answered {status}")]
    Status { url: String, status: u16 },
    #[error(
        "`{url}` now serves different bytes ({found}) than this run downloaded before ({recorded})"
    )]
    Changed {
        url: String,
        recorded: String,
        found: String,
    },
    #[error(
        "`{url}` serves a manifest with digest {found}, not the {expected} the plan was reviewed with"
    )]
    NotReviewed {
        url: String,
        expected: String,
        found: String,
    },
    #[error("cannot read the kept download `{}`", path.display())]
    ReadKept {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot apply the manifest overlay to `{url}`")]
    Overlay {
        url: String,
        #[source]
        source: crate::plan::overlay::OverlayError,
    },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Hint for FetchError {
    fn hint(&self) -> Option<String> {
        match self {
            FetchError::Changed { .. } => Some(
                "the run must use the bytes it started with; restore the original file (or the mirror), or start a new plan"
                    .to_string(),
            ),
            FetchError::NotReviewed { .. } => Some(
                "the file at the URL changed since the plan was made (a re-tagged release, an updated mirror); nothing was written or applied: run `netctl upgrade plan` again and review the new diff"
                    .to_string(),
            ),
            FetchError::ReadLocal { url, .. } if url.starts_with("file://") => {
                Some("check the path in the `file://` URL".to_string())
            }
            FetchError::ReadLocal { .. } => Some(
                "with `--mirror-dir`, every download is read from `<mirror>/<host>/<path>`; copy the file there"
                    .to_string(),
            ),
            FetchError::Download { .. } | FetchError::Status { .. } => Some(
                "for an air-gapped site, pass `--mirror-dir DIR` holding `<host>/<path>` copies of the files"
                    .to_string(),
            ),
            _ => None,
        }
    }
}

/// Where a fetch writes, refusing paths that would escape the files directory.
pub fn target_path(files_dir: &Path, file: &str) -> Result<PathBuf, FetchError> {
    let relative = Path::new(file);
    let safe = !file.is_empty()
        && relative.is_relative()
        && relative
            .components()
            .all(|part| matches!(part, std::path::Component::Normal(_)));
    if !safe {
        return Err(FetchError::UnsafeTarget {
            file: file.to_string(),
        });
    }
    Ok(files_dir.join(relative))
}

/// `sha256:<hex>` of `bytes`, as the checkpoint records downloads.
pub fn sha256(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Where a URL lives inside a mirror directory: `<mirror>/<host>/<path>`.
pub fn mirror_path(mirror: &Path, url: &str) -> Option<PathBuf> {
    let rest = url.split_once("://")?.1;
    let relative: PathBuf = rest
        .split('/')
        .filter(|part| !part.is_empty() && *part != "." && *part != "..")
        .collect();
    Some(mirror.join(relative))
}

pub async fn read_bytes(url: &str, mirror: Option<&Path>) -> Result<(Vec<u8>, String), FetchError> {
    let read_local = |path: PathBuf| {
        std::fs::read(&path).map_err(|source| FetchError::ReadLocal {
            url: url.to_string(),
            path: path.clone(),
            source,
        })
    };
    if let Some(path) = url.strip_prefix("file://") {
        return Ok((read_local(PathBuf::from(path))?, format!("file {path}")));
    }
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(FetchError::UnsupportedScheme {
            url: url.to_string(),
        });
    }
    if let Some(path) = mirror.and_then(|mirror| mirror_path(mirror, url)) {
        let shown = path.display().to_string();
        return Ok((read_local(path)?, format!("mirror {shown}")));
    }
    let download = |source| FetchError::Download {
        url: url.to_string(),
        source,
    };
    let response = reqwest::get(url).await.map_err(download)?;
    if !response.status().is_success() {
        return Err(FetchError::Status {
            url: url.to_string(),
            status: response.status().as_u16(),
        });
    }
    let bytes = response.bytes().await.map_err(download)?;
    Ok((bytes.to_vec(), "network".to_string()))
}

/// Reads manifests for the plan-time review of overlays the way a `fetch` step would: a mirror
/// copy, a `file://` URL, or the network.
pub struct ManifestDownloads {
    pub mirror: Option<PathBuf>,
}

#[async_trait::async_trait]
impl ManifestReader for ManifestDownloads {
    async fn read(&self, url: &str) -> Result<Vec<u8>, String> {
        read_bytes(url, self.mirror.as_deref())
            .await
            .map(|(bytes, _)| bytes)
            .map_err(|error| crate::errors::error_chain(&error))
    }

    fn is_local(&self, url: &str) -> bool {
        url.starts_with("file://") || self.mirror.is_some()
    }
}

/// Where the downloaded original is kept when an overlay changes what `file` holds.
pub fn original_path(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".original");
    target.with_file_name(name)
}

/// The manifest with the overlay applied.
fn overlaid(request: &Fetch, bytes: &[u8]) -> Result<crate::plan::overlay::Overlaid, FetchError> {
    let error = |source| FetchError::Overlay {
        url: request.url.clone(),
        source,
    };
    let text = std::str::from_utf8(bytes).map_err(|utf8| {
        error(crate::plan::overlay::OverlayError::ManifestSyntax {
            message: utf8.to_string(),
        })
    })?;
    crate::plan::overlay::apply_overlay(text, &request.overlay).map_err(error)
}

/// Refuses bytes other than the ones the plan was reviewed with, when the plan pinned them.
fn check_reviewed(request: &Fetch, bytes: &[u8]) -> Result<String, FetchError> {
    let digest = sha256(bytes);
    match &request.sha256 {
        Some(expected) if *expected != digest => Err(FetchError::NotReviewed {
            url: request.url.clone(),
            expected: expected.clone(),
            found: digest,
        }),
        _ => Ok(digest),
    }
}

/// Reads a file the run kept, `None` when it is not there.
fn read_kept(path: &Path) -> Result<Option<Vec<u8>>, FetchError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(FetchError::ReadKept {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The dry-run account of a fetch with an overlay: from a local source (a `file://` URL or the
/// mirror) the overlay is applied for real and its diff shown; the network is never used.
async fn describe_overlay(
    request: &Fetch,
    target: &Path,
    mirror: Option<&Path>,
) -> Result<(Vec<String>, Option<serde_json::Value>), FetchError> {
    let documents = request.overlay.len();
    let local = request.url.starts_with("file://") || mirror.is_some();
    if !local {
        return Ok((
            vec![format!(
                "then would apply the manifest overlay ({documents} document(s)) to it, keeping the download as {}",
                original_path(target).display()
            )],
            None,
        ));
    }
    let (bytes, _) = read_bytes(&request.url, mirror).await?;
    check_reviewed(request, &bytes)?;
    let result = overlaid(request, &bytes)?;
    let mut lines = vec![format!(
        "then would apply the manifest overlay ({documents} document(s)), changing {} object(s), keeping the download as {}:",
        result.changed.len(),
        original_path(target).display()
    )];
    lines.extend(
        crate::plan::overlay::unified_diff(&result.changed)
            .lines()
            .map(|line| format!("    {line}")),
    );
    Ok((lines, Some(serde_json::json!({ "overlaid": result.text }))))
}

pub async fn fetch(
    request: &Fetch,
    files_dir: &Path,
    mirror: Option<&Path>,
    recorded_digest: Option<&str>,
    mode: RunMode,
) -> Result<Outcome, FetchError> {
    let target = target_path(files_dir, &request.file)?;
    let with_overlay = !request.overlay.is_empty();
    // With an overlay, `file` holds the overlaid manifest and the download itself is kept beside it;
    // the recorded digest is the download's, so a resume can prove it has the same original.
    let original = if with_overlay {
        original_path(&target)
    } else {
        target.clone()
    };
    if mode == RunMode::DryRun {
        let source = match (request.url.starts_with("file://"), mirror) {
            (false, Some(mirror)) => mirror_path(mirror, &request.url)
                .map(|path| format!(" (from the mirror: {})", path.display()))
                .unwrap_or_default(),
            _ => String::new(),
        };
        let mut transcript = vec![format!(
            "would download {}{source} to {}",
            request.url,
            target.display()
        )];
        let mut output = None;
        if with_overlay {
            let (lines, overlaid) = describe_overlay(request, &target, mirror).await?;
            transcript.extend(lines);
            output = overlaid;
        }
        return Ok(Outcome {
            summary: format!("would download {}", request.url),
            transcript,
            output,
        });
    }
    if let Some(recorded) = recorded_digest {
        return restore(request, &target, &original, recorded, mirror).await;
    }
    let (bytes, source) = read_bytes(&request.url, mirror).await?;
    // Before anything is written: a manifest other than the reviewed one, or an overlay that does
    // not fit, leaves nothing behind.
    let digest = check_reviewed(request, &bytes)?;
    let overlaid = match with_overlay {
        true => Some(overlaid(request, &bytes)?),
        false => None,
    };
    write(&original, &bytes)?;
    let mut summary = format!(
        "downloaded {} from {source} ({} bytes, {digest})",
        request.url,
        bytes.len()
    );
    let mut written = bytes.as_slice();
    if let Some(result) = &overlaid {
        write(&target, result.text.as_bytes())?;
        written = result.text.as_bytes();
        let _ = std::fmt::Write::write_fmt(
            &mut summary,
            format_args!(
                "; manifest overlay changed {} object(s) in {}",
                result.changed.len(),
                target.display()
            ),
        );
    }
    let mut output = serde_json::json!({ "file": target, "sha256": digest, "bytes": bytes.len() });
    if overlaid.is_some() {
        output["original_file"] = serde_json::json!(original);
        output["overlaid_sha256"] = serde_json::json!(sha256(written));
    }
    Ok(Outcome {
        summary,
        transcript: vec![],
        output: Some(output),
    })
}

/// Writes a file of the run (atomically, creating its directory).
fn write(path: &Path, bytes: &[u8]) -> Result<(), FetchError> {
    let error = |source| FetchError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        // Owner-only, like the rest of the state directory.
        create_private_directory(parent).map_err(error)?;
    }
    write_atomically(path, bytes).map_err(error)
}

/// Downloads a file the run had downloaded before (a resume that misses it) and writes it to `path`:
/// the bytes must have the recorded digest. Returns them and where they came from.
async fn download_again(
    request: &Fetch,
    path: &Path,
    recorded: &str,
    mirror: Option<&Path>,
) -> Result<(Vec<u8>, String), FetchError> {
    let (bytes, source) = read_bytes(&request.url, mirror).await?;
    let digest = sha256(&bytes);
    if digest != recorded {
        return Err(FetchError::Changed {
            url: request.url.clone(),
            recorded: recorded.to_string(),
            found: digest,
        });
    }
    write(path, &bytes)?;
    Ok((bytes, source))
}

/// A resume of a completed fetch. What the run has is kept — `file` is never overwritten, since the
/// operator may have edited it while the run was stopped at a gate (as the manifest runbooks' gate
/// asks) — and only what is missing is made again: a missing download is downloaded again (the
/// recorded digest required), a missing overlaid `file` made again from the kept download. The
/// output says how `file` compares with what the fetch wrote (`edited`) and whether anything had to
/// be downloaded (`downloaded_again`) or made (`made_again`) again, so the executor can journal it.
async fn restore(
    request: &Fetch,
    target: &Path,
    original: &Path,
    recorded: &str,
    mirror: Option<&Path>,
) -> Result<Outcome, FetchError> {
    let shown = target.display();
    let mut output = serde_json::json!({ "file": target, "sha256": recorded });
    let mut notes = Vec::new();
    let mut downloaded_again = false;
    let mut made_again = false;
    // `file` as it is now, and whether it differs from what the fetch wrote.
    let (kept, edited) = if request.overlay.is_empty() {
        match read_kept(target)? {
            Some(kept) => {
                let edited = sha256(&kept) != recorded;
                (kept, edited)
            }
            None => {
                let (bytes, source) = download_again(request, target, recorded, mirror).await?;
                downloaded_again = true;
                notes.push(format!(
                    "downloaded {} again from {source}: {shown} was missing (same digest {recorded})",
                    request.url
                ));
                (bytes, false)
            }
        }
    } else {
        let download = match read_kept(original)? {
            Some(bytes) if sha256(&bytes) == recorded => bytes,
            missing_or_changed => {
                let (bytes, source) = download_again(request, original, recorded, mirror).await?;
                downloaded_again = true;
                let why = match missing_or_changed {
                    Some(_) => "had other bytes",
                    None => "was missing",
                };
                notes.push(format!(
                    "downloaded {} again from {source}: {} {why} (same digest {recorded})",
                    request.url,
                    original.display()
                ));
                bytes
            }
        };
        // The same download and overlay give the same bytes as when the step ran.
        let made = overlaid(request, &download)?.text.into_bytes();
        let made_digest = sha256(&made);
        output["original_file"] = serde_json::json!(original);
        output["overlaid_sha256"] = serde_json::json!(made_digest);
        match read_kept(target)? {
            Some(kept) => {
                let edited = kept != made;
                (kept, edited)
            }
            None => {
                write(target, &made)?;
                made_again = true;
                notes.push(format!(
                    "made {shown} again from the download and the overlay"
                ));
                (made, false)
            }
        }
    };
    let now = sha256(&kept);
    let summary = match edited {
        false if notes.is_empty() => format!("kept {shown} ({now})"),
        false => notes.join("; "),
        true => {
            let mut summary = format!(
                "kept {shown} as edited since the download (now {now}; the fetch wrote {})",
                output
                    .get("overlaid_sha256")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or(recorded)
            );
            for note in &notes {
                summary.push_str("; ");
                summary.push_str(note);
            }
            summary
        }
    };
    output["bytes"] = serde_json::json!(kept.len());
    output["file_sha256"] = serde_json::json!(now);
    output["edited"] = serde_json::json!(edited);
    output["downloaded_again"] = serde_json::json!(downloaded_again);
    output["made_again"] = serde_json::json!(made_again);
    Ok(Outcome {
        summary,
        transcript: vec![],
        output: Some(output),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_stay_inside_the_files_directory() {
        let files = Path::new("/state/files");
        assert_eq!(
            target_path(files, "v3.29/calico.yaml").unwrap(),
            PathBuf::from("/state/files/v3.29/calico.yaml")
        );
        assert!(target_path(files, "../checkpoint.json").is_err());
        assert!(target_path(files, "/etc/passwd").is_err());
    }

    const RELEASED: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-config\n  namespace: kube-system\ndata:\n  veth_mtu: \"0\"\n";

    fn overlay_fetch(url: String, data: serde_json::Value) -> Fetch {
        Fetch {
            url,
            file: "upgrade.yaml".into(),
            overlay: vec![serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "calico-config", "namespace": "kube-system"}, "data": data})],
            sha256: None,
            edits_from: None,
        }
    }

    #[tokio::test]
    async fn an_overlay_is_applied_before_the_manifest_is_written_and_kept_on_resume() {
        let source = tempfile::tempdir().unwrap();
        std::fs::write(source.path().join("calico.yaml"), RELEASED).unwrap();
        let url = format!("file://{}", source.path().join("calico.yaml").display());
        let files = tempfile::tempdir().unwrap();
        let request = overlay_fetch(url.clone(), serde_json::json!({"veth_mtu": "1440"}));

        let dry = fetch(&request, files.path(), None, None, RunMode::DryRun)
            .await
            .unwrap();
        assert!(
            dry.transcript
                .iter()
                .any(|line| line.contains("+  veth_mtu: '1440'")),
            "{:?}",
            dry.transcript
        );
        assert!(
            !files.path().join("upgrade.yaml").exists(),
            "a dry-run writes nothing"
        );

        let done = fetch(&request, files.path(), None, None, RunMode::Execute)
            .await
            .unwrap();
        let output = done.output.unwrap();
        assert_eq!(
            output["sha256"],
            serde_json::json!(sha256(RELEASED.as_bytes()))
        );
        assert_eq!(
            std::fs::read_to_string(files.path().join("upgrade.yaml.original")).unwrap(),
            RELEASED
        );
        let overlaid = std::fs::read_to_string(files.path().join("upgrade.yaml")).unwrap();
        assert!(overlaid.contains("veth_mtu: '1440'"), "{overlaid}");

        // A resume elsewhere (no overlaid file) makes the same bytes from the kept original.
        std::fs::remove_file(files.path().join("upgrade.yaml")).unwrap();
        let recorded = output["sha256"].as_str().unwrap();
        let resumed = fetch(
            &request,
            files.path(),
            None,
            Some(recorded),
            RunMode::Execute,
        )
        .await
        .unwrap();
        assert!(
            resumed.summary.contains("again from the download"),
            "{}",
            resumed.summary
        );
        assert_eq!(resumed.output.unwrap()["made_again"], true);
        assert_eq!(
            std::fs::read_to_string(files.path().join("upgrade.yaml")).unwrap(),
            overlaid
        );
    }

    #[tokio::test]
    async fn an_overlay_that_names_no_object_fails_and_writes_nothing() {
        let source = tempfile::tempdir().unwrap();
        std::fs::write(source.path().join("calico.yaml"), RELEASED).unwrap();
        let url = format!("file://{}", source.path().join("calico.yaml").display());
        let files = tempfile::tempdir().unwrap();
        let mut request = overlay_fetch(url, serde_json::json!({"x": "1"}));
        request.overlay[0]["metadata"]["name"] = serde_json::json!("calico-settings");
        let error = fetch(&request, files.path(), None, None, RunMode::Execute)
            .await
            .unwrap_err();
        assert!(matches!(error, FetchError::Overlay { .. }), "{error}");
        assert_eq!(std::fs::read_dir(files.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_pinned_manifest_with_other_bytes_is_refused_also_in_a_dry_run() {
        let source = tempfile::tempdir().unwrap();
        std::fs::write(source.path().join("calico.yaml"), RELEASED).unwrap();
        let url = format!("file://{}", source.path().join("calico.yaml").display());
        let files = tempfile::tempdir().unwrap();
        let mut request = overlay_fetch(url, serde_json::json!({"veth_mtu": "1440"}));
        request.sha256 = Some(sha256(b"the manifest that was reviewed"));
        for mode in [RunMode::DryRun, RunMode::Execute] {
            let error = fetch(&request, files.path(), None, None, mode)
                .await
                .unwrap_err();
            assert!(matches!(error, FetchError::NotReviewed { .. }), "{error}");
            assert!(error.hint().unwrap().contains("review the new diff"));
        }
        assert_eq!(std::fs::read_dir(files.path()).unwrap().count(), 0);
        request.sha256 = Some(sha256(RELEASED.as_bytes()));
        fetch(&request, files.path(), None, None, RunMode::Execute)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_resume_keeps_an_edited_file_and_says_so() {
        let source = tempfile::tempdir().unwrap();
        std::fs::write(source.path().join("calico.yaml"), RELEASED).unwrap();
        let url = format!("file://{}", source.path().join("calico.yaml").display());
        let files = tempfile::tempdir().unwrap();
        let request = Fetch {
            url,
            file: "upgrade.yaml".into(),
            overlay: vec![],
            sha256: None,
            edits_from: None,
        };
        let done = fetch(&request, files.path(), None, None, RunMode::Execute)
            .await
            .unwrap();
        let recorded = done.output.unwrap()["sha256"].as_str().unwrap().to_string();
        let edited = format!("{RELEASED}  typha_service_name: none\n");
        std::fs::write(files.path().join("upgrade.yaml"), &edited).unwrap();
        // The source changing too makes no difference: nothing is downloaded.
        std::fs::write(source.path().join("calico.yaml"), "other").unwrap();
        let resumed = fetch(
            &request,
            files.path(),
            None,
            Some(&recorded),
            RunMode::Execute,
        )
        .await
        .unwrap();
        let output = resumed.output.unwrap();
        assert_eq!(output["edited"], true);
        assert_eq!(output["downloaded_again"], false);
        assert_eq!(output["sha256"], recorded.as_str());
        assert_eq!(output["file_sha256"], sha256(edited.as_bytes()).as_str());
        assert_eq!(
            std::fs::read_to_string(files.path().join("upgrade.yaml")).unwrap(),
            edited
        );
    }

    #[test]
    fn urls_map_into_the_mirror_by_host_and_path() {
        assert_eq!(
            mirror_path(Path::new("/m"), "https://example.com/a/../b.yaml").unwrap(),
            PathBuf::from("/m/example.com/a/b.yaml")
        );
    }
}
