//! `get -o yaml --schema-modeline[=BASE]`: the output starts with
//! `# yaml-language-server: $schema=BASE/<plural>.schema.json`, naming the JSON Schema of the one
//! resource printed (as its release line has it), so an editor checks the file while it is edited.
//!
//! It owns where the schema is said to be (BASE as given, or the schemas the install script put
//! beside the binary), when the line makes sense (one resource document, YAML), and the writer that
//! puts the line before the first byte of output. What the schemas contain is
//! `resource::spec::schema`'s; which resource is printed, and how, is `get`'s and the printers'.

use std::io::{self, Write};
use std::path::PathBuf;

use crate::errors::Hint;
use crate::release::{Release, known_lines, newest_known, oldest_known};
use crate::resource::Kind;
use crate::resource::spec::schema::kind_schema_path;

/// Where the install script puts the schemas, relative to the directory above the binary's.
const INSTALLED_SCHEMAS: &str = "share/netctl/schemas";

/// Why no modeline can be written.
#[derive(Debug, thiserror::Error)]
pub enum ModelineError {
    #[error("`--schema-modeline` needs `-o yaml`")]
    YamlOnly,
    #[error(
        "`--schema-modeline` needs exactly one resource: a list or several results are not one document of a kind"
    )]
    SeveralDocuments,
    #[error("no schemas are installed beside netctl (looked in `{}`)", .path.display())]
    NoInstalledSchemas { path: PathBuf },
}

impl Hint for ModelineError {
    fn hint(&self) -> Option<String> {
        let advice = match self {
            ModelineError::YamlOnly => "add `-o yaml`",
            ModelineError::SeveralDocuments => {
                "name one resource: `get KIND NAME`, `get KIND/NAME` or `-f` with one document"
            }
            ModelineError::NoInstalledSchemas { .. } => {
                "write them with `netctl schema --all DIR` and pass `--schema-modeline=DIR` (a directory or a URL)"
            }
        };
        Some(advice.into())
    }
}

/// The modeline for a document of `kind` of `release`'s line, the schema under `base` (a
/// directory or URL; empty: the installed schemas). A release outside the lines netctl knows takes
/// the nearest one.
pub fn modeline(base: &str, kind: Kind, release: &Release) -> Result<String, ModelineError> {
    let base = if base.is_empty() {
        installed_schemas()?
    } else {
        base.trim_end_matches('/').to_string()
    };
    let line = known_lines()
        .find(|known| known.line() == release.line())
        .unwrap_or_else(|| {
            if *release < oldest_known() {
                oldest_known()
            } else {
                newest_known()
            }
        });
    Ok(format!(
        "# yaml-language-server: $schema={base}/{}\n",
        kind_schema_path(kind, &line)
    ))
}

/// `<prefix>/share/netctl/schemas` for a binary in `<prefix>/bin`, when that directory exists.
fn installed_schemas() -> Result<String, ModelineError> {
    let binary = std::env::current_exe().unwrap_or_default();
    let path = binary
        .parent()
        .and_then(|bin| bin.parent())
        .map(|prefix| prefix.join(INSTALLED_SCHEMAS))
        .unwrap_or_else(|| PathBuf::from(INSTALLED_SCHEMAS));
    if path.is_dir() {
        Ok(path.to_string_lossy().into_owned())
    } else {
        Err(ModelineError::NoInstalledSchemas { path })
    }
}

/// Writes `line` before the first byte written through it, and nothing when nothing is written.
pub struct ModelineWriter<W: Write> {
    out: W,
    line: Option<String>,
}

impl<W: Write> ModelineWriter<W> {
    pub fn new(out: W, line: Option<String>) -> ModelineWriter<W> {
        ModelineWriter { out, line }
    }
}

impl<W: Write> Write for ModelineWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        if buffer.is_empty() {
            return Ok(0);
        }
        if let Some(line) = self.line.take() {
            self.out.write_all(line.as_bytes())?;
        }
        self.out.write(buffer)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_schema_of_the_release_line() {
        let newest = newest_known();
        assert_eq!(
            modeline("https://example.test/schemas/", Kind::HostEndpoint, &newest).unwrap(),
            "# yaml-language-server: $schema=https://example.test/schemas/hostendpoints.schema.json\n"
        );
        let older = Release::new(3, 29, 1);
        assert_eq!(
            modeline("/opt/schemas", Kind::GlobalNetworkPolicy, &older).unwrap(),
            "# yaml-language-server: $schema=/opt/schemas/v3.29/globalnetworkpolicies.schema.json\n"
        );
        let newer = Release::new(3, 99, 0);
        assert!(
            modeline("s", Kind::Node, &newer)
                .unwrap()
                .ends_with("=s/nodes.schema.json\n")
        );
    }

    #[test]
    fn nothing_written_means_no_line() {
        let mut empty = ModelineWriter::new(Vec::new(), Some("# line\n".into()));
        empty.flush().unwrap();
        assert!(empty.out.is_empty());
        let mut written = ModelineWriter::new(Vec::new(), Some("# line\n".into()));
        written.write_all(b"a: 1\n").unwrap();
        written.write_all(b"b: 2\n").unwrap();
        assert_eq!(written.out, b"# line\na: 1\nb: 2\n");
    }
}
