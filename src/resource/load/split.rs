//! Cutting a file's text into documents: a JSON stream (concatenated values) when the text is
//! JSON, a YAML stream otherwise (YAML reads JSON too, so JSON documents between `---` lines are a
//! YAML stream). Each document comes with the line it starts on and, for YAML, the line of every
//! field. A document that cannot be read ends the documents. What a document holds is
//! `document.rs`'s business.

use std::sync::LazyLock;

use regex::Regex;

use super::{LoadError, Location};
use crate::yaml::{self, Node};

static PARSER_LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r" at line \d+ column \d+").expect("the parser location pattern is a valid regex")
});

/// A document read, and the line it starts on when known.
pub(super) struct Document<'text> {
    pub node: Node<'text>,
    pub line: Option<usize>,
    /// Whether the nodes know their lines (YAML; a JSON document is read whole, without them).
    pub positioned: bool,
}

/// Splits `text` into documents, read one at a time: a JSON stream (concatenated values) when the
/// text is JSON, a YAML stream otherwise. The documents end after the first one that cannot be read.
pub(super) fn split_documents<'text>(
    text: &'text str,
    origin: &'text str,
) -> Box<dyn Iterator<Item = Result<Document<'text>, LoadError>> + 'text> {
    // JSON documents separated by `---` lines (as upstream's splitter allows) are a YAML stream:
    // YAML reads JSON.
    if looks_like_json(text) && !has_document_separator(text) {
        Box::new(split_json(text, origin))
    } else {
        Box::new(split_yaml(text, origin))
    }
}

/// Whether a line is a YAML document separator (`---`, optionally followed by a space and more).
pub(super) fn has_document_separator(text: &str) -> bool {
    text.lines()
        .any(|line| line.trim_end() == "---" || line.starts_with("--- "))
}

/// Whether text is JSON rather than YAML. A YAML flow collection (`[{kind: Tier, ...}]`) starts
/// with the same brackets, so look past them: JSON's first key or value is quoted (or a number or
/// a closing bracket), YAML's is usually a bare word.
pub(super) fn looks_like_json(text: &str) -> bool {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return false;
    }
    let first_token = trimmed
        .chars()
        .find(|c| !(c.is_whitespace() || *c == '{' || *c == '['));
    match first_token {
        None => true,
        Some(c) => c == '"' || c == '-' || c == '}' || c == ']' || c.is_ascii_digit(),
    }
}

fn split_json<'text>(
    text: &'text str,
    origin: &'text str,
) -> impl Iterator<Item = Result<Document<'text>, LoadError>> + 'text {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    let mut count = 0;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        // The next value starts after the previous one and any whitespace.
        let offset = stream.byte_offset();
        let start = text[offset..]
            .find(|c: char| !c.is_whitespace())
            .map(|skipped| offset + skipped);
        let document = stream.next()?;
        count += 1;
        let document = match document {
            Ok(document) => document,
            Err(error) => {
                failed = true;
                return Some(Err(LoadError::Document {
                    location: Location {
                        origin: origin.to_string(),
                        document: count,
                        item: None,
                        line: Some(error.line()),
                        document_line: None,
                    },
                    reason: format!(
                        "invalid JSON: {}",
                        PARSER_LOCATION.replace_all(&error.to_string(), "")
                    ),
                }));
            }
        };
        let line = start.map(|start| line_of_offset(text, start));
        Some(Ok(Document {
            node: Node::from_value(document),
            line,
            positioned: false,
        }))
    })
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

fn split_yaml<'text>(
    text: &'text str,
    origin: &'text str,
) -> impl Iterator<Item = Result<Document<'text>, LoadError>> + 'text {
    split_yaml_from(text, origin, 1)
}

/// As [`split_yaml`], for the part of a stream that starts on line `first_line` of it.
pub(super) fn split_yaml_from<'text>(
    text: &'text str,
    origin: &'text str,
    first_line: usize,
) -> impl Iterator<Item = Result<Document<'text>, LoadError>> + 'text {
    yaml::trees_from(text, first_line).map(move |tree| match tree {
        Ok(tree) => Ok(Document {
            node: tree.node,
            line: Some(tree.line),
            positioned: true,
        }),
        Err(error) => Err(LoadError::Document {
            location: Location {
                origin: origin.to_string(),
                document: error.document,
                item: None,
                line: Some(error.line),
                document_line: None,
            },
            reason: error.reason(),
        }),
    })
}
