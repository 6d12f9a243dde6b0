//! The one YAML reading and writing of netctl, upstream's: every input (resource documents,
//! NetAPIConfig, runbooks and the documents inside them, the release catalog, manifests, overlays)
//! is read here, and every YAML netctl prints is written here.
//!
//! Reading is what upstream's tools do (sigs.k8s.io/yaml over go-yaml v2, then encoding/json):
//!
//! 1. parse (saphyr-parser's events, which keep each scalar's style and line) and resolve plain
//!    scalars by YAML 1.1 as go-yaml v2 does (`yes`/`on`/`off` are booleans, `0400` is 256, `~` is
//!    null; see [`resolve`]); quoted scalars stay strings. Duplicate keys are refused with their
//!    line (upstream's strict decoding), a byte order mark is allowed, aliases and nesting are
//!    bounded ([`read`]);
//! 2. for a typed target, normalise by the target's shape ([`shape`], derived from the type's JSON
//!    Schema): a boolean or number read where the type has a string becomes its text
//!    (`true` → `"true"`, `123` → `"123"`), and field names match case-insensitively when the
//!    caller asks for encoding/json's rule (resources, NetAPIConfig: an exact match is preferred);
//! 3. decode with serde, strictly, naming the field's path and line on failure.
//!
//! Untyped documents (manifests, overlays) keep their YAML 1.1 types exactly as kubectl would send
//! them: `defaultMode: 0400` is the number 256.
//!
//! Writing ([`emit`]) quotes every string a YAML 1.1 reader would take for something else (`no`,
//! `on`, `0400`, `1e3`, `~`, `2024-01-01`, `190:20:30` ...), so kubectl, PyYAML and go-yaml v2 read
//! back the same strings.
//!
//! This module does no I/O and knows no resource kind.

pub mod emit;
pub mod read;
pub mod resolve;
pub mod shape;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use emit::to_string;
pub use shape::{FieldNames, Shapes};

/// One document of a stream: its value, the line of every node, and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub value: Value,
    pub lines: Lines,
    pub line: usize,
}

/// Where each node of a document was written, mirroring the document's structure.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    /// The 1-based line of the node; for a mapping's value, of its key (where the field is named).
    pub line: usize,
    /// The 1-based column, likewise.
    pub column: usize,
    /// Where the node's value itself starts (for a mapping's value, after its key).
    pub value_line: usize,
    pub value_column: usize,
    /// For a plain scalar that YAML 1.1 read as something other than a string (a boolean, a
    /// number, a null, a timestamp), the text as written: `Off` for a `false`.
    pub source: Option<Box<str>>,
    children: Children,
}

#[derive(Debug, Clone, PartialEq)]
enum Children {
    None,
    Mapping(Vec<(String, Lines)>),
    Sequence(Vec<Lines>),
}

impl Lines {
    pub fn leaf(line: usize, column: usize, source: Option<Box<str>>) -> Lines {
        Lines {
            line,
            column,
            value_line: line,
            value_column: column,
            source,
            children: Children::None,
        }
    }

    fn mapping(line: usize, column: usize, entries: Vec<(String, Lines)>) -> Lines {
        Lines::collection(line, column, Children::Mapping(entries))
    }

    fn sequence(line: usize, column: usize, items: Vec<Lines>) -> Lines {
        Lines::collection(line, column, Children::Sequence(items))
    }

    /// A mapping or sequence starting at `line` and `column`.
    fn collection(line: usize, column: usize, children: Children) -> Lines {
        Lines {
            line,
            column,
            value_line: line,
            value_column: column,
            source: None,
            children,
        }
    }

    fn into_entries(self) -> Vec<(String, Lines)> {
        match self.children {
            Children::Mapping(entries) => entries,
            _ => Vec::new(),
        }
    }

    fn into_items(self) -> Vec<Lines> {
        match self.children {
            Children::Sequence(items) => items,
            _ => Vec::new(),
        }
    }

    /// The node of a mapping entry: the exact key, or else one equal ignoring case (the document
    /// may spell a field name differently from the type).
    pub fn key(&self, key: &str) -> Option<&Lines> {
        let Children::Mapping(entries) = &self.children else {
            return None;
        };
        entries
            .iter()
            .find(|(name, _)| name == key)
            .or_else(|| entries.iter().find(|(name, _)| fold_equal(name, key)))
            .map(|(_, lines)| lines)
    }

    /// The node of a sequence item.
    pub fn index(&self, index: usize) -> Option<&Lines> {
        match &self.children {
            Children::Sequence(items) => items.get(index),
            _ => None,
        }
    }

    /// Where to point for a problem with the field at `path`: at its name for an unknown or
    /// repeated field, at its value otherwise.
    pub fn position(&self, path: &str, reason: &str) -> (usize, usize) {
        let node = self.find(path);
        let about_the_name = [
            "unknown field",
            "unknown top-level field",
            "both set the field",
        ]
        .iter()
        .any(|phrase| reason.contains(phrase));
        if about_the_name {
            (node.line, node.column)
        } else {
            (node.value_line, node.value_column)
        }
    }

    /// The deepest node a field path reaches, in either spelling netctl uses: serde's
    /// (`spec.ingress[0].destination.ports`) or validation's (`metadata.labels[app]`). Keys may
    /// contain dots (`projectcalico.org/tier`): the longest key that fits is taken.
    pub fn find(&self, path: &str) -> &Lines {
        let mut node = self;
        let mut rest = path;
        loop {
            rest = rest.strip_prefix('.').unwrap_or(rest);
            if rest.is_empty() {
                return node;
            }
            if let Some(inner) = rest.strip_prefix('[') {
                let Some(end) = inner.find(']') else {
                    return node;
                };
                let part = &inner[..end];
                let next = match (&node.children, part.parse::<usize>()) {
                    (Children::Sequence(_), Ok(index)) => node.index(index),
                    _ => node.key(part),
                };
                match next {
                    Some(next) => node = next,
                    None => return node,
                }
                rest = &inner[end + 1..];
                continue;
            }
            let Children::Mapping(entries) = &node.children else {
                return node;
            };
            let fits = |name: &str| {
                rest.len() >= name.len()
                    && rest.is_char_boundary(name.len())
                    && fold_equal(&rest[..name.len()], name)
                    && matches!(rest[name.len()..].chars().next(), None | Some('.' | '['))
            };
            let Some((name, next)) = entries
                .iter()
                .filter(|(name, _)| fits(name))
                .max_by_key(|(name, _)| name.len())
            else {
                return node;
            };
            node = next;
            rest = &rest[name.len()..];
        }
    }
}

/// Field names equal under encoding/json's rule (simple case folding, which for the names netctl
/// knows is ASCII case plus the Kelvin sign and the long s).
pub fn fold_equal(left: &str, right: &str) -> bool {
    let fold = |c: char| match c {
        '\u{212a}' => 'k',
        '\u{17f}' => 's',
        other => other.to_ascii_lowercase(),
    };
    left.chars().map(fold).eq(right.chars().map(fold))
}

/// Why YAML could not be read or decoded: the document (1-based), the line, and what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("document {document}, line {line}: {}", describe(kind))]
pub struct YamlError {
    pub document: usize,
    pub line: usize,
    /// The 1-based column (1 when only the line is known).
    pub column: usize,
    pub kind: YamlErrorKind,
}

fn describe(kind: &YamlErrorKind) -> String {
    match kind {
        YamlErrorKind::Syntax(message) => format!("invalid YAML: {message}"),
        other => other.to_string(),
    }
}

impl YamlError {
    /// What was wrong, without where (`invalid YAML: ...` for a syntax error).
    pub fn reason(&self) -> String {
        describe(&self.kind)
    }
}

/// What was wrong, without where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum YamlErrorKind {
    /// The parser's message (callers say "invalid YAML" where it helps).
    #[error("{0}")]
    Syntax(String),
    #[error("duplicate key `{0}`")]
    DuplicateKey(String),
    #[error("`{first}` and `{second}` both set the field `{field}`")]
    DuplicateField {
        first: String,
        second: String,
        field: String,
    },
    #[error("a list or mapping cannot be a key")]
    ComplexKey,
    #[error("{0} cannot be a key")]
    BadKey(String),
    #[error("an alias (`*name`) refers to no anchor")]
    UnknownAlias,
    #[error(
        "aliases expand to too many nodes (an alias bomb?): refused as upstream's reader refuses \
         excessive aliasing"
    )]
    TooManyAliases,
    #[error("collections nest deeper than {} levels", read::MAX_DEPTH)]
    TooDeep,
    #[error("a merge key (`<<`) must name a mapping or a list of mappings")]
    BadMerge,
    #[error("`{text}` is not a valid `!!{tag}`")]
    TagMismatch { text: String, tag: String },
    #[error("`{0}` cannot be represented in JSON (infinite, not a number, or beyond 64 bits)")]
    NotJson(String),
    #[error("{0} is not supported")]
    Unsupported(String),
    #[error("the stream holds {0} documents where one is expected")]
    NotOneDocument(usize),
    /// A typed decode failed at a field.
    #[error("field `{path}`: {reason}")]
    Field { path: String, reason: String },
}

/// Reads every document of a stream (YAML 1.1 as upstream; see the module documentation). Empty
/// documents are kept as `null`.
pub fn read_documents(text: &str) -> Result<Vec<Document>, YamlError> {
    read::read_stream(text)
}

/// Reads the documents of a stream one at a time, each handed out as soon as it ends (see
/// [`read::Documents`]): a caller that keeps only what it needs of each reads a stream of any
/// length in the memory of one document.
pub fn stream(text: &str) -> read::Documents<'_> {
    read::Documents::new(text)
}

/// As [`stream`], for the part of a longer stream that starts on line `first_line` (1-based) of it:
/// every line reported is the line in the whole stream.
pub fn stream_from(text: &str, first_line: usize) -> read::Documents<'_> {
    read::Documents::starting_at_line(text, first_line)
}

/// Reads every document of a stream as untyped values, dropping empty ones: what kubectl sends
/// for a manifest.
pub fn read_values(text: &str) -> Result<Vec<Value>, YamlError> {
    Ok(read_documents(text)?
        .into_iter()
        .map(|document| {
            let mut value = document.value;
            shape::canonical_numbers(&mut value);
            value
        })
        .filter(|value| !value.is_null())
        .collect())
}

/// Reads exactly one document (an empty stream is one `null` document).
pub fn read_one(text: &str) -> Result<Document, YamlError> {
    let mut documents = read_documents(text)?;
    match documents.len() {
        0 => Ok(Document {
            value: Value::Null,
            lines: Lines::leaf(1, 1, None),
            line: 1,
        }),
        1 => Ok(documents.remove(0)),
        count => Err(YamlError {
            document: 2,
            line: documents[1].line,
            column: 1,
            kind: YamlErrorKind::NotOneDocument(count),
        }),
    }
}

/// Reads one document into `T` with YAML 1.1 values and no other normalisation (for types without
/// a JSON Schema, and for reading YAML back in tests).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    from_str_shaped(text, &Shapes::any(), FieldNames::Exact)
}

/// Reads one document into `T`, with YAML 1.1 values, strings where `shapes` has them, field
/// names matched by `names`, and the field's path and line on failure.
pub fn from_str_shaped<T: DeserializeOwned>(
    text: &str,
    shapes: &Shapes,
    names: FieldNames,
) -> Result<T, YamlError> {
    let document = read_one(text)?;
    decode_document(document, 1, shapes, names)
}

/// Decodes one read document into `T` (see [`from_str_shaped`]).
pub fn decode_document<T: DeserializeOwned>(
    document: Document,
    index: usize,
    shapes: &Shapes,
    names: FieldNames,
) -> Result<T, YamlError> {
    let Document {
        mut value, lines, ..
    } = document;
    let at = |path: &str, kind: YamlErrorKind| {
        let (line, column) = lines.position(path, &kind.to_string());
        YamlError {
            document: index,
            line,
            column,
            kind,
        }
    };
    shapes
        .normalize(&mut value, names)
        .map_err(|problem| at(&problem.path, problem.kind))?;
    decode_value(value).map_err(|(path, reason)| {
        let reason = explain_yaml_1_1(&reason, lines.find(&path));
        let (line, column) = lines.position(&path, &reason);
        YamlError {
            document: index,
            line,
            column,
            kind: YamlErrorKind::Field { path, reason },
        }
    })
}

/// Decodes a JSON value strictly, returning the field path and the reason on failure.
pub fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let path = if path == "." { String::new() } else { path };
        (path, error.inner().to_string())
    })
}

/// Adds to a reason what YAML 1.1 made of a plain scalar, when that is why a value is wrong: an
/// unquoted `Off` is the boolean false, `0400` the number 256.
pub fn explain_yaml_1_1(reason: &str, lines: &Lines) -> String {
    if reason.starts_with("unknown field") {
        return reason.to_string();
    }
    match &lines.source {
        Some(source) => format!(
            "{reason} (written `{source}` without quotes, which YAML 1.1 reads as {}; quote it to keep the text)",
            describe_source(source)
        ),
        None => reason.to_string(),
    }
}

fn describe_source(source: &str) -> String {
    match resolve::resolve_plain(source) {
        resolve::Scalar::Bool(flag) => format!("the boolean {flag}"),
        resolve::Scalar::Null => "null".to_string(),
        resolve::Scalar::Timestamp => "a timestamp".to_string(),
        resolve::Scalar::Integer(number) => format!("the number {number}"),
        resolve::Scalar::Unsigned(number) => format!("the number {number}"),
        resolve::Scalar::Float(number) => format!("the number {}", resolve::go_float_text(number)),
        resolve::Scalar::BigInteger | resolve::Scalar::String => "another type".to_string(),
    }
}

#[cfg(test)]
mod tests;
