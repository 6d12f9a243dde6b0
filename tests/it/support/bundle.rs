//! Reading a diagnostics bundle back: every file of a `.tar.gz` and its `index.json`, for the
//! `node diags` and `cluster diags` tests.

use std::io::Read;
use std::path::Path;

/// Every regular file of a `.tar.gz`, sorted by path.
pub fn unpack(archive: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(archive).expect("open the archive");
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut files = Vec::new();
    for entry in tar.entries().expect("a tar archive") {
        let mut entry = entry.expect("an archive entry");
        if entry.header().entry_type().is_file() {
            let name = entry.path().expect("a path").to_string_lossy().into_owned();
            let mut content = Vec::new();
            entry.read_to_end(&mut content).expect("read an entry");
            files.push((name, content));
        }
    }
    files.sort();
    files
}

/// The index entry whose `source` is `source` (the test fails without one).
pub fn entry<'a>(index: &'a serde_json::Value, source: &str) -> &'a serde_json::Value {
    index["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|entry| entry["source"] == source)
        .unwrap_or_else(|| panic!("no index entry for `{source}`: {index:#}"))
}
