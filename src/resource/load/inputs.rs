//! The inputs of a load: a file, every `.yaml`/`.yml`/`.json` file of a directory (any case, in
//! sorted order, descending into sub-directories when asked), or text the caller read (standard
//! input). Each is handed on as its origin and text, one file at a time; what the text holds is the
//! rest of the loader's business.

use std::path::{Path, PathBuf};

use super::LoadError;

/// One input of a load.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file or a directory (its `.yaml`, `.yml` and `.json` files; their sub-directories' too
    /// when the loader is recursive).
    Path(PathBuf),
    /// Text already read by the caller, e.g. standard input with origin `<stdin>`.
    Text { origin: String, text: String },
}

/// Hands `read` the origin and text of each file of `input`, in order. Stops at the first file
/// that cannot be read, or whose text `read` refuses.
pub(super) fn each_text(
    input: &Input,
    recursive: bool,
    read: &mut dyn FnMut(&str, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    match input {
        Input::Path(path) => each_path_text(path, recursive, read),
        Input::Text { origin, text } => read(origin, text),
    }
}

/// Reads a file, or the files of a directory, one at a time. An empty directory gives nothing:
/// whether that is an error (upstream's "no resources specified", unless `--skip-empty`) is the
/// loader's option.
fn each_path_text(
    path: &Path,
    recursive: bool,
    read: &mut dyn FnMut(&str, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    if path == Path::new("-") {
        return Err(LoadError::StandardInputAsPath);
    }
    let read_error = |source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_dir() {
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        let origin = path.display().to_string();
        return read(&origin, &text);
    }
    let mut files = Vec::new();
    collect_files(path, recursive, &mut files)?;
    files.sort();
    for each in files {
        each_path_text(&each, false, read)?;
    }
    Ok(())
}

fn collect_files(
    directory: &Path,
    recursive: bool,
    files: &mut Vec<PathBuf>,
) -> Result<(), LoadError> {
    let read_error = |source| LoadError::Read {
        path: directory.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(directory).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let path = entry.path();
        // `is_dir` follows symbolic links, as upstream's directory walk does.
        if path.is_dir() {
            if recursive {
                collect_files(&path, recursive, files)?;
            }
        } else if has_manifest_extension(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn has_manifest_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| {
            ["yaml", "yml", "json"]
                .iter()
                .any(|known| extension.eq_ignore_ascii_case(known))
        })
}
