//! What commands print. [`Printer`] is the one way every command writes: data on stdout, talk on
//! stderr. For `netctl get` there are the resource printers: tables (`ps`, `wide`,
//! `custom-columns`), documents (`yaml`, `json`) and `name` — all streaming, so a list of any length
//! prints with bounded memory as pages arrive; [`TableWriter`] also lays out the other commands'
//! tables.
//!
//! [`OutputFormat`] is what `-o` parses into; [`ResourcePrinter`] takes resources one at a time and writes
//! them in that format to any `Write` (stdout in the CLI: stdout is data). Shapes follow upstream
//! (`calicoctl/calicoctl/commands/common/printer.go`): a list prints one table or one List
//! document; a get by name prints one table per object and, for documents, the object alone or an
//! array of several. Per-kind columns
//! live in `columns.rs`, table layout in `table.rs`, document encoding in `document.rs`. This module
//! reads nothing from a datastore: values a printer needs from elsewhere (the global AS number) are
//! passed in.

use crate::errors::Hint;

mod boxed;
mod columns;
mod document;
pub mod go_template;
pub mod phases;
mod printer;
pub mod progress;
mod stored;
mod table;

#[cfg(test)]
mod tests;

use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use crate::resource::{Kind, Resource};

pub use boxed::write_boxed;
pub use columns::{
    CellContext, ColumnSet, DEFAULT_AS_NUMBER, GlobalAsNumber, NamespaceColumn, TableColumns,
    headings_for, sort_tiers_by_order,
};
pub use document::{DocumentFormat, ListDocumentWriter, NamedDocumentWriter, sort_keys};
pub use phases::PhaseClock;
pub use printer::{Capture, Interaction, LogLevel, Printer, Stdout, Verbosity};
pub use stored::{StoredJson, Tape as StoredTape, decoded as decoded_stored};
pub use table::{DEFAULT_CHUNK_ROWS, TableStyle, TableWriter};

/// `bytes` as people read sizes (`512 B`, `1.5 GiB`).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}

/// What `-o/--output` selects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The default table.
    #[default]
    Ps,
    /// The table with more columns.
    Wide,
    Yaml,
    Json,
    /// `kind/name` per line, lower-case kind (see [`name_line`]).
    Name,
    /// A table with the listed headings, in order.
    CustomColumns(Vec<String>),
}

impl OutputFormat {
    /// Whether the global AS number must be read before printing `kind` in this format.
    pub fn needs_global_as_number(&self, kind: Kind) -> bool {
        let set = match self {
            OutputFormat::Ps => ColumnSet::Ps,
            OutputFormat::Wide => ColumnSet::Wide,
            OutputFormat::CustomColumns(headings) => ColumnSet::Custom(headings),
            OutputFormat::Yaml | OutputFormat::Json | OutputFormat::Name => return false,
        };
        TableColumns::new(kind, set, NamespaceColumn::Hide)
            .is_ok_and(|columns| columns.needs_global_as_number())
    }
}

/// Parses `ps`, `wide`, `yaml` (or `yml`), `json`, `name` and `custom-columns=A,B`.
impl FromStr for OutputFormat {
    type Err = OutputFormatError;

    fn from_str(text: &str) -> Result<OutputFormat, OutputFormatError> {
        match text {
            "ps" => Ok(OutputFormat::Ps),
            "wide" => Ok(OutputFormat::Wide),
            "yaml" | "yml" => Ok(OutputFormat::Yaml),
            "json" => Ok(OutputFormat::Json),
            "name" => Ok(OutputFormat::Name),
            "custom-columns" => Err(OutputFormatError::NoColumns),
            _ => match text.strip_prefix("custom-columns=") {
                Some(list) => {
                    // Blank entries (`A,,B`, a trailing comma) are skipped rather than reported as
                    // an unknown empty heading.
                    let headings: Vec<String> = list
                        .split(',')
                        .map(str::trim)
                        .filter(|heading| !heading.is_empty())
                        .map(str::to_string)
                        .collect();
                    if headings.is_empty() {
                        Err(OutputFormatError::NoColumns)
                    } else {
                        Ok(OutputFormat::CustomColumns(headings))
                    }
                }
                None => Err(OutputFormatError::Unrecognized(text.to_string())),
            },
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputFormat::Ps => formatter.write_str("ps"),
            OutputFormat::Wide => formatter.write_str("wide"),
            OutputFormat::Yaml => formatter.write_str("yaml"),
            OutputFormat::Json => formatter.write_str("json"),
            OutputFormat::Name => formatter.write_str("name"),
            OutputFormat::CustomColumns(headings) => {
                write!(formatter, "custom-columns={}", headings.join(","))
            }
        }
    }
}

/// A `-o` value that is not a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputFormatError {
    #[error("unrecognized output format `{0}`")]
    Unrecognized(String),
    #[error("need to specify at least one column")]
    NoColumns,
}

impl Hint for OutputFormatError {
    fn hint(&self) -> Option<String> {
        let advice = match self {
            OutputFormatError::Unrecognized(_) => {
                "use one of ps, wide, yaml, json, name or custom-columns=HEADING,..."
            }
            OutputFormatError::NoColumns => {
                "list headings after the `=`, e.g. `custom-columns=NAME,NODE`"
            }
        };
        Some(advice.into())
    }
}

/// Why printing failed.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A custom-columns heading the kind does not have.
    #[error("unknown heading `{heading}` for {kind}, valid values are: {valid}")]
    UnknownHeading {
        kind: Kind,
        heading: String,
        valid: String,
    },
    /// Writing failed (a closed pipe included; `main` treats that one as success).
    #[error("could not write the output")]
    Write(#[from] io::Error),
    /// A resource could not be encoded; a bug, since resources come from valid JSON.
    #[error("could not encode {what} as {format}")]
    Encode {
        what: String,
        format: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// How the results of a get are shaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A list (`get <kind>`), pinned to a datastore revision (`metadata.resourceVersion` of the List
    /// document; empty prints `metadata: {}`).
    List { revision: String },
    /// A get by name: each result printed on its own (one table per object, as upstream).
    Named,
}

/// Everything a [`ResourcePrinter`] needs besides the resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintOptions {
    pub format: OutputFormat,
    /// Whether `-n`/`-A` was given, which adds NAMESPACE to `ps`/`wide` tables of namespaced kinds.
    pub namespace_column: NamespaceColumn,
    pub cells: CellContext,
    /// Rows per table chunk (see `table.rs` for the alignment trade-off).
    pub chunk_rows: usize,
}

impl Default for PrintOptions {
    fn default() -> PrintOptions {
        PrintOptions {
            format: OutputFormat::Ps,
            namespace_column: NamespaceColumn::Hide,
            cells: CellContext::default(),
            chunk_rows: DEFAULT_CHUNK_ROWS,
        }
    }
}

/// `-o name` output for one resource: `<kind>/<name>`, with the kind lower-cased (`hostendpoint/h1`,
/// `ippool/pool1`), like kubectl's `<kind>/<name>`. Every such kind is also an accepted kind name on
/// the command line, so the output can be fed back to netctl. The namespace is not included (again
/// as kubectl); use `-o custom-columns=NAMESPACE,NAME` to get it.
pub fn name_line(resource: &Resource) -> String {
    format!(
        "{}/{}",
        resource.kind.as_str().to_ascii_lowercase(),
        resource.metadata.name
    )
}

/// Prints resources of one kind as they arrive.
pub struct ResourcePrinter<W: Write> {
    kind: Kind,
    cells: CellContext,
    state: State<W>,
}

enum State<W: Write> {
    /// One table for the whole list.
    ListTable {
        table: TableWriter<W>,
        columns: TableColumns,
    },
    /// One table per object, as upstream prints gets by name.
    NamedTables {
        out: W,
        columns: TableColumns,
        chunk_rows: usize,
    },
    Names(W),
    ListDocument(ListDocumentWriter<W>),
    NamedDocuments(NamedDocumentWriter<W>),
}

impl<W: Write> ResourcePrinter<W> {
    /// Prepares to print `kind`; for a list document this writes the envelope's head already.
    pub fn new(
        out: W,
        kind: Kind,
        shape: Shape,
        options: &PrintOptions,
    ) -> Result<ResourcePrinter<W>, OutputError> {
        let table_columns = |set| TableColumns::new(kind, set, options.namespace_column);
        let set = match &options.format {
            OutputFormat::Ps => Some(ColumnSet::Ps),
            OutputFormat::Wide => Some(ColumnSet::Wide),
            OutputFormat::CustomColumns(headings) => Some(ColumnSet::Custom(headings)),
            OutputFormat::Yaml | OutputFormat::Json | OutputFormat::Name => None,
        };
        let document = match options.format {
            OutputFormat::Json => Some(DocumentFormat::Json),
            OutputFormat::Yaml => Some(DocumentFormat::Yaml),
            _ => None,
        };
        let state = match (set, document, shape) {
            (Some(set), _, Shape::List { .. }) => {
                let columns = table_columns(set)?;
                let headings = columns.headings().into_iter().map(String::from).collect();
                State::ListTable {
                    table: TableWriter::with_chunk_rows(out, headings, options.chunk_rows),
                    columns,
                }
            }
            (Some(set), _, Shape::Named) => State::NamedTables {
                out,
                columns: table_columns(set)?,
                chunk_rows: options.chunk_rows,
            },
            (None, Some(format), Shape::List { revision }) => {
                State::ListDocument(ListDocumentWriter::begin(out, format, kind, &revision)?)
            }
            (None, Some(format), Shape::Named) => {
                State::NamedDocuments(NamedDocumentWriter::new(out, format))
            }
            (None, None, _) => State::Names(out),
        };
        Ok(ResourcePrinter {
            kind,
            cells: options.cells,
            state,
        })
    }

    /// The kind being printed.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Prints (or, for a table, queues into the current chunk) one resource.
    pub fn print(&mut self, resource: &Resource) -> Result<(), OutputError> {
        match &mut self.state {
            State::ListTable { table, columns } => {
                table.push_row(columns.row(resource, &self.cells))?;
            }
            State::NamedTables {
                out,
                columns,
                chunk_rows,
            } => {
                let headings = columns.headings().into_iter().map(String::from).collect();
                let mut table = TableWriter::with_chunk_rows(&mut *out, headings, *chunk_rows);
                table.push_row(columns.row(resource, &self.cells))?;
                table.finish()?;
            }
            State::Names(out) => writeln!(out, "{}", name_line(resource))?,
            State::ListDocument(writer) => writer.push(resource)?,
            State::NamedDocuments(writer) => writer.push(resource)?,
        }
        Ok(())
    }

    /// [`print`](Self::print) for a listed resource whose spec and status come as their stored
    /// JSON text (`resource`'s own are not read): [`print_parsed`](Self::print_parsed) once the
    /// text is parsed.
    pub fn print_stored(
        &mut self,
        resource: &Resource,
        spec: Option<&str>,
        status: Option<&str>,
    ) -> Result<(), OutputError> {
        let format = match &self.state {
            State::ListDocument(writer) => writer.format_name(),
            _ => "JSON",
        };
        let (spec, status) = stored::parse_parts(resource, spec, status, format)?;
        self.print_parsed(resource, spec.as_ref(), status.as_ref())
    }

    /// [`print`](Self::print) for a listed resource whose spec and status come parsed from their
    /// stored text (`resource`'s own are not read). A list document writes them from the tape;
    /// any other output decodes them into a copy of the resource first.
    pub fn print_parsed(
        &mut self,
        resource: &Resource,
        spec: Option<&StoredJson>,
        status: Option<&StoredJson>,
    ) -> Result<(), OutputError> {
        if let State::ListDocument(writer) = &mut self.state {
            return writer.push_stored(resource, spec, status);
        }
        let whole = stored::decoded(resource, spec, status);
        self.print(&whole)
    }

    /// Writes whatever is still pending (buffered rows, closing brackets) and hands the writer back.
    pub fn finish(self) -> Result<W, OutputError> {
        match self.state {
            State::ListTable { table, .. } => Ok(table.finish()?),
            State::NamedTables { mut out, .. } | State::Names(mut out) => {
                out.flush()?;
                Ok(out)
            }
            State::ListDocument(writer) => writer.finish(),
            State::NamedDocuments(writer) => writer.finish(),
        }
    }
}
