//! `fetch`: download a URL into the run's state directory, so later steps (and a resume) use exactly
//! those bytes.
//!
//! `file://` URLs read a local file; with a mirror directory, any URL is served from
//! `<mirror>/<host>/<path>` instead of the network (air-gapped sites); `http(s)://` goes through reqwest
//! with rustls. The file is written atomically and its sha256 becomes the step's output. When the file
//! is already there with the recorded digest (a resumed run), nothing is downloaded again; when it
//! must be downloaded again (a resume on another machine), the bytes must have that digest.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Outcome, RunMode};
use crate::exec::checkpoint::write_atomically;
use crate::plan::action::Fetch;

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
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl FetchError {
    pub fn hint(&self) -> Option<String> {
        match self {
            FetchError::Changed { .. } => Some(
                "the run must use the bytes it started with; restore the original file (or the mirror), or start a new plan"
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

fn sha256(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Where a URL lives inside a mirror directory: `<mirror>/<host>/<path>`.
fn mirror_path(mirror: &Path, url: &str) -> Option<PathBuf> {
    let rest = url.split_once("://")?.1;
    let relative: PathBuf = rest
        .split('/')
        .filter(|part| !part.is_empty() && *part != "." && *part != "..")
        .collect();
    Some(mirror.join(relative))
}

pub(super) async fn read_bytes(
    url: &str,
    mirror: Option<&Path>,
) -> Result<(Vec<u8>, String), FetchError> {
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

pub async fn fetch(
    request: &Fetch,
    files_dir: &Path,
    mirror: Option<&Path>,
    recorded_digest: Option<&str>,
    mode: RunMode,
) -> Result<Outcome, FetchError> {
    let target = target_path(files_dir, &request.file)?;
    if mode == RunMode::DryRun {
        let source = match (request.url.starts_with("file://"), mirror) {
            (false, Some(mirror)) => mirror_path(mirror, &request.url)
                .map(|path| format!(" (from the mirror: {})", path.display()))
                .unwrap_or_default(),
            _ => String::new(),
        };
        return Ok(Outcome {
            summary: format!("would download {}", request.url),
            transcript: vec![format!(
                "would download {}{source} to {}",
                request.url,
                target.display()
            )],
            output: None,
        });
    }
    // A resumed run keeps the bytes it already has, so every later step sees the same manifest.
    if let (Some(recorded), Ok(existing)) = (recorded_digest, std::fs::read(&target)) {
        if sha256(&existing) == recorded {
            return Ok(Outcome {
                summary: format!("kept {} ({recorded})", target.display()),
                transcript: vec![],
                output: Some(
                    serde_json::json!({ "file": target, "sha256": recorded, "bytes": existing.len() }),
                ),
            });
        }
    }
    let (bytes, source) = read_bytes(&request.url, mirror).await?;
    let digest = sha256(&bytes);
    if let Some(recorded) = recorded_digest {
        if digest != recorded {
            return Err(FetchError::Changed {
                url: request.url.clone(),
                recorded: recorded.to_string(),
                found: digest,
            });
        }
    }
    let write = |source| FetchError::Write {
        path: target.clone(),
        source,
    };
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(write)?;
    }
    write_atomically(&target, &bytes).map_err(write)?;
    Ok(Outcome {
        summary: format!(
            "downloaded {} from {source} ({} bytes, {digest})",
            request.url,
            bytes.len()
        ),
        transcript: vec![],
        output: Some(serde_json::json!({ "file": target, "sha256": digest, "bytes": bytes.len() })),
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

    #[test]
    fn urls_map_into_the_mirror_by_host_and_path() {
        assert_eq!(
            mirror_path(Path::new("/m"), "https://example.com/a/../b.yaml").unwrap(),
            PathBuf::from("/m/example.com/a/b.yaml")
        );
    }
}
