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
//! 2. for a typed target, normalise the document's [`Node`]s by the target's shape ([`shape`],
//!    derived from the type's JSON Schema): a boolean or number read where the type has a string
//!    becomes its text (`true` → `"true"`, `123` → `"123"`), and field names match
//!    case-insensitively when the caller asks for encoding/json's rule (resources, NetAPIConfig:
//!    an exact match is preferred);
//! 3. decode with serde straight from the nodes ([`decode`]), strictly, as from the JSON value they
//!    stand for, naming the field's path and line on failure.
//!
//! Untyped documents (manifests, overlays) keep their YAML 1.1 types exactly as kubectl would send
//! them: `defaultMode: 0400` is the number 256.
//!
//! Writing ([`emit`]) quotes every string a YAML 1.1 reader would take for something else (`no`,
//! `on`, `0400`, `1e3`, `~`, `2024-01-01`, `190:20:30` ...), so kubectl, PyYAML and go-yaml v2 read
//! back the same strings.
//!
//! This module does no I/O and knows no resource kind.

pub mod decode;
pub mod emit;
pub mod node;
pub mod read;
pub mod resolve;
pub mod shape;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use decode::decode_node;
pub use emit::to_string;
pub use node::{Node, NodeValue};
pub use read::{Tree, Trees};
pub use shape::{FieldNames, Shapes};

/// One document of a stream as a JSON value: its value, its nodes (where each was written), and
/// the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub value: Value,
    pub lines: Node<'static>,
    pub line: usize,
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

/// The documents of a stream as trees of [`Node`]s borrowing from `text`, one at a time, for the
/// part of a longer stream that starts on line `first_line` (1-based) of it: every line reported
/// is the line in the whole stream.
pub fn trees_from(text: &str, first_line: usize) -> Trees<'_> {
    Trees::starting_at_line(text, first_line)
}

/// Reads every document of a stream as untyped values, dropping empty ones: what kubectl sends
/// for a manifest.
pub fn read_values(text: &str) -> Result<Vec<Value>, YamlError> {
    Trees::new(text)
        .filter_map(|tree| match tree {
            Ok(tree) if tree.node.is_null() => None,
            Ok(tree) => {
                let mut value = tree.node.to_value();
                shape::canonical_numbers(&mut value);
                Some(Ok(value))
            }
            Err(error) => Some(Err(error)),
        })
        .collect()
}

/// Reads exactly one document (an empty stream is one `null` document).
fn read_one(text: &str) -> Result<Tree<'_>, YamlError> {
    let mut trees = Trees::new(text);
    let Some(first) = trees.next().transpose()? else {
        return Ok(Tree {
            node: Node::new(1, 1, NodeValue::Null),
            line: 1,
        });
    };
    let rest: Vec<Tree<'_>> = trees.collect::<Result<_, _>>()?;
    match rest.first() {
        None => Ok(first),
        Some(second) => Err(YamlError {
            document: 2,
            line: second.line,
            column: 1,
            kind: YamlErrorKind::NotOneDocument(rest.len() + 1),
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
    decode_tree(read_one(text)?.node, 1, shapes, names)
}

/// Decodes one document (the `index`th of its stream) into `T` (see [`from_str_shaped`]).
pub fn decode_tree<T: DeserializeOwned>(
    mut node: Node<'_>,
    index: usize,
    shapes: &Shapes,
    names: FieldNames,
) -> Result<T, YamlError> {
    shapes.normalize(&mut node, names).map_err(|problem| {
        let (line, column) = node.position(&problem.path, &problem.kind.to_string());
        YamlError {
            document: index,
            line,
            column,
            kind: problem.kind,
        }
    })?;
    decode_node(&node).map_err(|(path, reason)| {
        let reason = explain_yaml_1_1(&reason, node.find(&path));
        let (line, column) = node.position(&path, &reason);
        YamlError {
            document: index,
            line,
            column,
            kind: YamlErrorKind::Field { path, reason },
        }
    })
}

/// Adds to a reason what YAML 1.1 made of a plain scalar, when that is why a value is wrong: an
/// unquoted `Off` is the boolean false, `0400` the number 256.
pub fn explain_yaml_1_1(reason: &str, node: &Node<'_>) -> String {
    if reason.starts_with("unknown field") {
        return reason.to_string();
    }
    match &node.source {
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
