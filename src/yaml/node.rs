//! The document the reader builds: every node with its value (as JSON has them: null, boolean,
//! number, string, sequence, mapping with string keys in written order) and where it was written.
//! Strings borrow from the text where they hold no escapes, and mappings are plain vectors, so a
//! document costs a few allocations, not one per key. Typed decoding reads it directly
//! (`decode.rs`); [`Node::to_value`] gives a `serde_json::Value` to those that want one.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use super::fold_equal;

/// One node of a document and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<'text> {
    /// The 1-based line of the node; for a mapping's value, of its key (where the field is named).
    pub line: usize,
    /// The 1-based column, likewise.
    pub column: usize,
    /// Where the node's value itself starts (for a mapping's value, after its key).
    pub value_line: usize,
    pub value_column: usize,
    /// For a plain scalar that YAML 1.1 read as something other than a string (a boolean, a
    /// number, a null), the text as written: `Off` for a `false`.
    pub source: Option<Cow<'text, str>>,
    pub value: NodeValue<'text>,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue<'text> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'text, str>),
    Sequence(Vec<Node<'text>>),
    /// Entries in written order, each key once.
    Mapping(Vec<(Cow<'text, str>, Node<'text>)>),
}

impl<'text> Node<'text> {
    /// A node at `line` and `column`.
    pub fn new(line: usize, column: usize, value: NodeValue<'text>) -> Node<'text> {
        Node {
            line,
            column,
            value_line: line,
            value_column: column,
            source: None,
            value,
        }
    }

    /// The node as a JSON value.
    pub fn to_value(&self) -> Value {
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(flag) => Value::Bool(*flag),
            NodeValue::Number(number) => Value::Number(number.clone()),
            NodeValue::String(text) => Value::String(text.to_string()),
            NodeValue::Sequence(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            NodeValue::Mapping(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, node)| (key.to_string(), node.to_value()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    /// A JSON value as a node (every position line 1, column 1): what JSON documents that
    /// reach netctl as values are read through.
    pub fn from_value(value: Value) -> Node<'static> {
        let value = match value {
            Value::Null => NodeValue::Null,
            Value::Bool(flag) => NodeValue::Bool(flag),
            Value::Number(number) => NodeValue::Number(number),
            Value::String(text) => NodeValue::String(Cow::Owned(text)),
            Value::Array(items) => {
                NodeValue::Sequence(items.into_iter().map(Node::from_value).collect())
            }
            Value::Object(map) => NodeValue::Mapping(
                map.into_iter()
                    .map(|(key, value)| (Cow::Owned(key), Node::from_value(value)))
                    .collect(),
            ),
        };
        Node::new(1, 1, value)
    }

    /// The node with every string it borrows copied, so it outlives the text.
    pub fn into_owned(self) -> Node<'static> {
        let value = match self.value {
            NodeValue::Null => NodeValue::Null,
            NodeValue::Bool(flag) => NodeValue::Bool(flag),
            NodeValue::Number(number) => NodeValue::Number(number),
            NodeValue::String(text) => NodeValue::String(Cow::Owned(text.into_owned())),
            NodeValue::Sequence(items) => {
                NodeValue::Sequence(items.into_iter().map(Node::into_owned).collect())
            }
            NodeValue::Mapping(entries) => NodeValue::Mapping(
                entries
                    .into_iter()
                    .map(|(key, node)| (Cow::Owned(key.into_owned()), node.into_owned()))
                    .collect(),
            ),
        };
        Node {
            line: self.line,
            column: self.column,
            value_line: self.value_line,
            value_column: self.value_column,
            source: self.source.map(|source| Cow::Owned(source.into_owned())),
            value,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, NodeValue::Null)
    }

    /// The entries of a mapping (none for anything else).
    pub fn entries(&self) -> &[(Cow<'text, str>, Node<'text>)] {
        match &self.value {
            NodeValue::Mapping(entries) => entries,
            _ => &[],
        }
    }

    /// The node of a mapping entry: the exact key, or else one equal ignoring case (the document
    /// may spell a field name differently from the type).
    pub fn key(&self, key: &str) -> Option<&Node<'text>> {
        let entries = self.entries();
        entries
            .iter()
            .find(|(name, _)| name == key)
            .or_else(|| entries.iter().find(|(name, _)| fold_equal(name, key)))
            .map(|(_, node)| node)
    }

    /// The node of a sequence item.
    pub fn index(&self, index: usize) -> Option<&Node<'text>> {
        match &self.value {
            NodeValue::Sequence(items) => items.get(index),
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
    pub fn find(&self, path: &str) -> &Node<'text> {
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
                let next = match (&node.value, part.parse::<usize>()) {
                    (NodeValue::Sequence(_), Ok(index)) => node.index(index),
                    _ => node.key(part),
                };
                match next {
                    Some(next) => node = next,
                    None => return node,
                }
                rest = &inner[end + 1..];
                continue;
            }
            let NodeValue::Mapping(entries) = &node.value else {
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

    /// How the node is named in messages: `a string`, `a mapping`, ...
    pub fn describe(&self) -> &'static str {
        match self.value {
            NodeValue::Null => "nothing",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Number(_) => "a number",
            NodeValue::String(_) => "a string",
            NodeValue::Sequence(_) => "a list",
            NodeValue::Mapping(_) => "a mapping",
        }
    }

    /// The string a node holds, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::String(text) => Some(text),
            _ => None,
        }
    }
}
