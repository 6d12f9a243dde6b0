//! `-o json` and `-o yaml`: resources as documents, written one at a time.
//!
//! Shapes follow upstream (`calicoctl/calicoctl/commands/common/printer.go`): a list prints one
//! List object (`kind: <Kind>List`, `items`, `metadata.resourceVersion`); named gets print the
//! object itself when
//! there is exactly one result and an array otherwise. Both writers stream: a list writes its
//! envelope around items as they come, and the named writer holds at most the first item (it cannot
//! know whether to print an object or an array until a second one arrives or the results end).
//!
//! Key order mirrors upstream's encoders. JSON keeps struct order (`kind`, `apiVersion`, `metadata`,
//! then `spec` as stored), indented by two spaces. YAML is produced from JSON with every mapping's keys
//! sorted, as go-yaml-wrapper does, so a List's keys come out `apiVersion`, `items`, `kind`,
//! `metadata` — which is what lets the list stream: only `apiVersion` precedes the items. Items are
//! written straight from the resource (JSON through an indenting formatter, YAML through the
//! emitter's sorted-key walk), never through a copied, re-sorted value; a listed item's spec and
//! status from the tape the datastore parsed them into once (`stored.rs`). Strings any
//! YAML reader would take for another type are quoted (`'40'`, `'no'`, `'2024-01-01'`; kubectl writes
//! `"40"`): the same values for YAML 1.1 and 1.2 readers, not always the same bytes. An empty list prints `items: []` (upstream's may print `null`). Encoding is
//! here; choosing a writer for a command is `mod.rs`'s job.

use std::io::{self, Write};

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::ser::Formatter;
use serde_json::{Map, Value};

use crate::resource::{API_VERSION, Kind, Resource};
use crate::yaml::emit::{self, KeyOrder};

use super::OutputError;
use super::stored::{self, StoredJson};

/// The two document formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentFormat {
    Json,
    Yaml,
}

impl DocumentFormat {
    fn name(self) -> &'static str {
        match self {
            DocumentFormat::Json => "JSON",
            DocumentFormat::Yaml => "YAML",
        }
    }
}

/// A resource in upstream's JSON key order: `kind`, `apiVersion`, `metadata`, `spec`, `status`;
/// the spec and status from the resource's values or, for a listed document, from the stored
/// text ([`StoredJson`]).
struct JsonDocument<'a, Body: Serialize> {
    resource: &'a Resource,
    spec: Option<Body>,
    status: Option<Body>,
}

impl<'a> JsonDocument<'a, &'a Value> {
    fn of(resource: &'a Resource) -> JsonDocument<'a, &'a Value> {
        JsonDocument {
            resource,
            spec: (!resource.spec.is_null()).then_some(&resource.spec),
            status: (!resource.status.is_null()).then_some(&resource.status),
        }
    }
}

impl<Body: Serialize> Serialize for JsonDocument<'_, Body> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let resource = self.resource;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", &resource.kind)?;
        map.serialize_entry("apiVersion", &resource.api_version)?;
        map.serialize_entry("metadata", &resource.metadata)?;
        if let Some(spec) = &self.spec {
            map.serialize_entry("spec", spec)?;
        }
        if let Some(status) = &self.status {
            map.serialize_entry("status", status)?;
        }
        map.end()
    }
}

/// serde_json's pretty layout (two-space steps) with every line after the first indented by
/// `level` steps more: a document written where an array entry goes, with no copy to re-indent.
struct IndentedFormatter {
    level: usize,
    has_value: bool,
}

impl IndentedFormatter {
    fn new_line<W: ?Sized + Write>(&self, out: &mut W) -> io::Result<()> {
        stored::new_line(out, self.level)
    }
}

impl Formatter for IndentedFormatter {
    fn begin_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        out.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.new_line(out)?;
        }
        out.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        if !first {
            out.write_all(b",")?;
        }
        self.new_line(out)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        out.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.new_line(out)?;
        }
        out.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        if !first {
            out.write_all(b",")?;
        }
        self.new_line(out)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        out.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes a resource as pretty JSON, the lines after the first indented by `level` two-space
/// steps (the first line's indentation, and the line break after the last, are the caller's).
fn write_json<W: Write, Body: Serialize>(
    out: &mut W,
    document: &JsonDocument<'_, Body>,
    level: usize,
) -> Result<(), OutputError> {
    let formatter = IndentedFormatter {
        level,
        has_value: false,
    };
    let mut serializer = serde_json::Serializer::with_formatter(out, formatter);
    document
        .serialize(&mut serializer)
        .map_err(|error| match error.is_io() {
            true => OutputError::Write(error.into()),
            false => OutputError::Encode {
                what: document.resource.key().to_string(),
                format: DocumentFormat::Json.name(),
                source: Box::new(error),
            },
        })
}

/// Appends a resource as a YAML document with every mapping's keys sorted (`apiVersion`, `kind`,
/// `metadata`, `spec`, `status` at the top), as go-yaml writes it.
fn write_yaml(out: &mut String, resource: &Resource) -> Result<(), OutputError> {
    write_yaml_head(out, resource)?;
    if !resource.spec.is_null() {
        emit::write_entry(out, "spec", &resource.spec, 0, KeyOrder::Sorted);
    }
    if !resource.status.is_null() {
        emit::write_entry(out, "status", &resource.status, 0, KeyOrder::Sorted);
    }
    Ok(())
}

/// [`write_json`] for a listed resource whose spec and status come parsed from their stored text:
/// the envelope through serde (into `scratch`), reopened for the spec and status written from their
/// tapes.
fn write_stored_json<W: Write>(
    out: &mut W,
    scratch: &mut Vec<u8>,
    resource: &Resource,
    spec: Option<&StoredJson>,
    status: Option<&StoredJson>,
    level: usize,
) -> Result<(), OutputError> {
    scratch.clear();
    let envelope: JsonDocument<'_, &Value> = JsonDocument {
        resource,
        spec: None,
        status: None,
    };
    write_json(scratch, &envelope, level)?;
    // The envelope ends with its closing brace on a line of its own (metadata is always there).
    let closing = 2 + 2 * level;
    out.write_all(&scratch[..scratch.len().saturating_sub(closing)])?;
    for (key, part) in [(&b"\"spec\": "[..], spec), (&b"\"status\": "[..], status)] {
        if let Some(part) = part {
            out.write_all(b",")?;
            stored::new_line(out, level + 1)?;
            out.write_all(key)?;
            part.write_json(out, level + 1)?;
        }
    }
    stored::new_line(out, level)?;
    out.write_all(b"}")?;
    Ok(())
}

/// [`write_yaml`] for a listed resource whose spec and status come parsed from stored text.
fn write_stored_yaml(
    out: &mut String,
    resource: &Resource,
    spec: Option<&StoredJson>,
    status: Option<&StoredJson>,
) -> Result<(), OutputError> {
    write_yaml_head(out, resource)?;
    if let Some(spec) = spec {
        spec.write_yaml_entry(out, "spec", 0);
    }
    if let Some(status) = status {
        status.write_yaml_entry(out, "status", 0);
    }
    Ok(())
}

/// A YAML document's `apiVersion`, `kind` and `metadata` entries.
fn write_yaml_head(out: &mut String, resource: &Resource) -> Result<(), OutputError> {
    let metadata =
        serde_json::to_value(&resource.metadata).map_err(|source| OutputError::Encode {
            what: resource.key().to_string(),
            format: DocumentFormat::Yaml.name(),
            source: Box::new(source),
        })?;
    emit::write_string_entry(out, "apiVersion", &resource.api_version, 0);
    emit::write_string_entry(out, "kind", resource.kind.as_str(), 0);
    emit::write_entry(out, "metadata", &metadata, 0, KeyOrder::Sorted);
    Ok(())
}

/// The same value with the keys of every mapping sorted (what go-yaml does with JSON input).
pub fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|left, right| left.0.cmp(&right.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, sort_keys(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

/// One resource as text in the format: pretty JSON without a trailing newline, or YAML with one.
fn encode(resource: &Resource, format: DocumentFormat) -> Result<String, OutputError> {
    match format {
        DocumentFormat::Json => {
            let mut bytes = Vec::new();
            write_json(&mut bytes, &JsonDocument::of(resource), 0)?;
            // serde_json writes UTF-8.
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
        DocumentFormat::Yaml => {
            let mut text = String::new();
            write_yaml(&mut text, resource)?;
            Ok(text)
        }
    }
}

fn encode_value(value: &Value, format: DocumentFormat, what: &str) -> Result<String, OutputError> {
    let encoded = match format {
        DocumentFormat::Json => serde_json::to_string_pretty(value)
            .map_err(|source| Box::new(source) as Box<dyn std::error::Error + Send + Sync>),
        DocumentFormat::Yaml => Ok(crate::yaml::emit::value_to_string(&sort_keys(
            value.clone(),
        ))),
    };
    encoded.map_err(|source| OutputError::Encode {
        what: what.to_string(),
        format: format.name(),
        source,
    })
}

/// Prefixes every line of `text` with `indent` (JSON strings hold no raw newlines, so this is safe).
fn indent(text: &str, indent: &str) -> String {
    text.lines()
        .map(|line| format!("{indent}{line}\n"))
        .collect()
}

/// A YAML document as an entry of a block sequence: `- ` before the first line, two spaces before
/// the rest (block scalars stay valid: their indentation is relative to the shifted parent).
fn yaml_sequence_entry(text: &str) -> String {
    let mut entry = String::new();
    push_yaml_sequence_entry(&mut entry, text);
    entry
}

/// [`yaml_sequence_entry`], appended to `entry`.
fn push_yaml_sequence_entry(entry: &mut String, text: &str) {
    for (index, line) in text.lines().enumerate() {
        entry.push_str(if index == 0 { "- " } else { "  " });
        entry.push_str(line);
        entry.push('\n');
    }
}

/// Streams a List object: envelope first, items as they come, the rest at the end.
pub struct ListDocumentWriter<W: Write> {
    out: W,
    format: DocumentFormat,
    kind: Kind,
    revision: String,
    items: usize,
    /// One item's YAML, then the same as a sequence entry: reused, so an item allocates nothing.
    document: String,
    entry: String,
    /// One stored item's JSON envelope, reused likewise.
    scratch: Vec<u8>,
}

impl<W: Write> ListDocumentWriter<W> {
    /// Writes what precedes the items. `revision` is the list's resource version (empty when the
    /// datastore gave none, which prints `metadata: {}` as upstream's `omitempty` does).
    pub fn begin(
        mut out: W,
        format: DocumentFormat,
        kind: Kind,
        revision: &str,
    ) -> Result<ListDocumentWriter<W>, OutputError> {
        match format {
            DocumentFormat::Json => {
                let head = serde_json::json!({
                    "kind": format!("{kind}List"),
                    "apiVersion": API_VERSION,
                    "metadata": list_metadata(revision),
                });
                let text = encode_value(&head, format, &format!("{kind}List"))?;
                // Reopen the envelope's closing brace to append `items`.
                let open = text.strip_suffix("\n}").unwrap_or(&text);
                write!(out, "{open},\n  \"items\": [")?;
            }
            DocumentFormat::Yaml => {
                let head = serde_json::json!({ "apiVersion": API_VERSION });
                out.write_all(encode_value(&head, format, &format!("{kind}List"))?.as_bytes())?;
            }
        }
        Ok(ListDocumentWriter {
            out,
            format,
            kind,
            revision: revision.to_string(),
            items: 0,
            document: String::new(),
            entry: String::new(),
            scratch: Vec::new(),
        })
    }

    pub fn push(&mut self, resource: &Resource) -> Result<(), OutputError> {
        match self.format {
            DocumentFormat::Json => {
                self.begin_json_item()?;
                write_json(&mut self.out, &JsonDocument::of(resource), 2)?;
            }
            DocumentFormat::Yaml => {
                self.document.clear();
                write_yaml(&mut self.document, resource)?;
                self.write_yaml_item()?;
            }
        }
        self.items += 1;
        Ok(())
    }

    /// [`push`](Self::push) for a resource whose spec and status come parsed from their stored
    /// JSON text (the resource's own are not read): the same output, without decoding them into
    /// values.
    pub fn push_stored(
        &mut self,
        resource: &Resource,
        spec: Option<&StoredJson>,
        status: Option<&StoredJson>,
    ) -> Result<(), OutputError> {
        match self.format {
            DocumentFormat::Json => {
                self.begin_json_item()?;
                write_stored_json(&mut self.out, &mut self.scratch, resource, spec, status, 2)?;
            }
            DocumentFormat::Yaml => {
                self.document.clear();
                write_stored_yaml(&mut self.document, resource, spec, status)?;
                self.write_yaml_item()?;
            }
        }
        self.items += 1;
        Ok(())
    }

    /// The name of this writer's format, for errors.
    pub fn format_name(&self) -> &'static str {
        self.format.name()
    }

    /// What separates a JSON item from the envelope or the item before it.
    fn begin_json_item(&mut self) -> io::Result<()> {
        self.out.write_all(if self.items == 0 {
            b"\n    "
        } else {
            b",\n    "
        })
    }

    /// Writes the YAML document in `self.document` as the next entry of `items`.
    fn write_yaml_item(&mut self) -> io::Result<()> {
        if self.items == 0 {
            self.out.write_all(b"items:\n")?;
        }
        self.entry.clear();
        push_yaml_sequence_entry(&mut self.entry, &self.document);
        self.out.write_all(self.entry.as_bytes())
    }

    pub fn finish(mut self) -> Result<W, OutputError> {
        let list_kind = format!("{}List", self.kind);
        match self.format {
            DocumentFormat::Json => {
                if self.items == 0 {
                    self.out.write_all(b"]\n}\n")?;
                } else {
                    self.out.write_all(b"\n  ]\n}\n")?;
                }
            }
            DocumentFormat::Yaml => {
                if self.items == 0 {
                    self.out.write_all(b"items: []\n")?;
                }
                let tail = serde_json::json!({
                    "kind": list_kind,
                    "metadata": list_metadata(&self.revision),
                });
                self.out
                    .write_all(encode_value(&tail, self.format, &list_kind)?.as_bytes())?;
            }
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn list_metadata(revision: &str) -> Value {
    if revision.is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::json!({ "resourceVersion": revision })
    }
}

/// Streams the results of a get by name: one object alone, several as an array.
pub struct NamedDocumentWriter<W: Write> {
    out: W,
    format: DocumentFormat,
    /// The first result, encoded, until a second shows whether to print an array.
    first: Option<String>,
    items: usize,
}

impl<W: Write> NamedDocumentWriter<W> {
    pub fn new(out: W, format: DocumentFormat) -> NamedDocumentWriter<W> {
        NamedDocumentWriter {
            out,
            format,
            first: None,
            items: 0,
        }
    }

    pub fn push(&mut self, resource: &Resource) -> Result<(), OutputError> {
        let text = encode(resource, self.format)?;
        self.items += 1;
        if self.items == 1 {
            self.first = Some(text);
            return Ok(());
        }
        if let Some(first) = self.first.take() {
            if self.format == DocumentFormat::Json {
                self.out.write_all(b"[\n")?;
            }
            self.write_entry(&first, true)?;
        }
        self.write_entry(&text, false)
    }

    fn write_entry(&mut self, text: &str, first: bool) -> Result<(), OutputError> {
        match self.format {
            DocumentFormat::Json => {
                if !first {
                    self.out.write_all(b",\n")?;
                }
                let indented = indent(text, "  ");
                self.out
                    .write_all(indented.trim_end_matches('\n').as_bytes())?;
            }
            DocumentFormat::Yaml => self.out.write_all(yaml_sequence_entry(text).as_bytes())?,
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<W, OutputError> {
        match (self.items, self.format) {
            (0, _) => self.out.write_all(b"[]\n")?,
            (1, format) => {
                let first = self.first.take().unwrap_or_default();
                self.out.write_all(first.as_bytes())?;
                if format == DocumentFormat::Json {
                    self.out.write_all(b"\n")?;
                }
            }
            (_, DocumentFormat::Json) => self.out.write_all(b"\n]\n")?,
            (_, DocumentFormat::Yaml) => {}
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One resource as the writers encode it, for the comparison in `tests.rs`.
#[cfg(test)]
pub(super) fn encode_for_tests(resource: &Resource, format: DocumentFormat) -> String {
    encode(resource, format).expect("encodes")
}
