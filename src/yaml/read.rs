//! From YAML text to documents of [`Node`]s: parsing (saphyr-parser's events), YAML 1.1 resolution
//! of plain scalars, anchors and aliases (bounded), merge keys (`<<`), duplicate keys (refused) and
//! the line of every node.
//!
//! Keys are turned into strings as sigs.k8s.io/yaml does (`1` → `"1"`, `yes` → `"true"`); a key that
//! cannot be a JSON key (a null, a list, a mapping, a timestamp) is refused. Values JSON cannot
//! hold (`.inf`, `.nan`, integers beyond 64 bits) are refused with their line, as upstream's
//! conversion to JSON fails on them. This module knows nothing of any target type.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use saphyr_parser::{Event, Parser, ScalarStyle, Span, StrInput, Tag};
use serde_json::Number;

use super::node::{Node, NodeValue};
use super::resolve::{Scalar, go_float_text, is_timestamp, resolve_plain};
use super::{Document, YamlError, YamlErrorKind};

/// The deepest nesting of collections accepted. Real documents (CRD schemas included) nest a few
/// dozen levels; the bound keeps hostile input from exhausting the stack of later recursive steps.
pub const MAX_DEPTH: usize = 128;

/// The most nodes aliases may add to a stream beyond the nodes written: an "alias bomb" (a few
/// lines that expand to billions of nodes) is refused instead of exhausting memory.
pub const MAX_ALIAS_EXPANSION: usize = 1_000_000;

/// Whether aliases have added too many nodes, by go-yaml v2's rule (which upstream's readers use):
/// past 100 alias nodes and 1,000 nodes in all, the share of nodes that came from aliases may be at
/// most 99% up to 400,000 nodes, falling linearly to 10% at 4,000,000. A bomb is refused after a few
/// thousand nodes; documents that reuse anchors a little are read whole. Beyond that, at most
/// [`MAX_ALIAS_EXPANSION`] nodes from aliases.
fn excessive_aliasing(from_aliases: usize, written: usize) -> bool {
    let all = from_aliases + written;
    if from_aliases > MAX_ALIAS_EXPANSION {
        return true;
    }
    if from_aliases <= 100 || all <= 1_000 {
        return false;
    }
    let allowed = match all {
        0..=400_000 => 0.99,
        4_000_000.. => 0.10,
        _ => 0.10 + 0.89 * (1.0 - (all - 400_000) as f64 / 3_600_000.0),
    };
    from_aliases as f64 / all as f64 > allowed
}

/// A mapping with more entries than this looks its keys up in a set, not by scanning.
const SCANNED_KEYS: usize = 16;

/// A node under construction: a collection being filled, with its line. Its items (entries) are
/// the reader's pending ones from `start` on, moved into a vector of exactly their number when it
/// closes (no vector growing item by item).
enum Open<'input> {
    Sequence {
        start: usize,
        line: usize,
        column: usize,
        anchor: usize,
    },
    Mapping {
        start: usize,
        /// The keys of a long mapping, for refusing repeated ones.
        keys: Option<HashSet<Cow<'input, str>>>,
        /// Entries from merge (`<<`) keys, applied at the end where no explicit key is given.
        merged: Vec<(Cow<'input, str>, Node<'input>)>,
        /// The key read, waiting for its value, and where it was written.
        pending_key: Option<(Cow<'input, str>, usize, usize)>,
        pending_merge: bool,
        line: usize,
        column: usize,
        anchor: usize,
    },
}

impl<'input> Open<'input> {
    /// Whether a mapping already has `key` (written, not merged).
    fn has_key(
        entries: &[(Cow<'input, str>, Node<'input>)],
        keys: &Option<HashSet<Cow<'input, str>>>,
        key: &str,
    ) -> bool {
        match keys {
            Some(keys) => keys.contains(key),
            None => entries.iter().any(|(known, _)| known == key),
        }
    }
}

struct Reader<'input> {
    /// The items of the open sequences, innermost last.
    items: Vec<Node<'input>>,
    /// The entries of the open mappings, innermost last.
    entries: Vec<(Cow<'input, str>, Node<'input>)>,
    /// The document just finished, waiting to be handed out by [`Trees`].
    finished: Option<Tree<'input>>,
    /// How many documents have been finished (for the 1-based index in errors).
    count: usize,
    stack: Vec<Open<'input>>,
    /// Each anchor's node and its number of nodes.
    anchors: HashMap<usize, (Node<'input>, usize)>,
    document_line: usize,
    document_explicit: bool,
    root: Option<Node<'input>>,
    /// Nodes added by aliases, and nodes written in the text, for [`excessive_aliasing`].
    expanded: usize,
    written: usize,
    /// The column of the event being handled.
    column: usize,
    /// Lines of the whole stream before the text being read (see [`Trees::starting_at_line`]).
    line_offset: usize,
}

/// One document of a stream: its root node and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree<'input> {
    pub node: Node<'input>,
    pub line: usize,
}

/// The documents of a YAML stream as trees, read one at a time: each is handed out as soon as it
/// ends, so a caller that does not keep them reads a stream of any length in the memory of one
/// document. After an error the stream ends.
pub struct Trees<'input> {
    parser: Parser<'input, StrInput<'input>>,
    reader: Reader<'input>,
    failed: bool,
}

impl<'input> Trees<'input> {
    pub fn new(text: &'input str) -> Trees<'input> {
        Trees::starting_at_line(text, 1)
    }

    /// Reads `text` as the part of a longer stream that starts on line `first_line` (1-based) of
    /// it, so that every line reported (in documents and in errors) is the line of the stream.
    pub fn starting_at_line(text: &'input str, first_line: usize) -> Trees<'input> {
        let line_offset = first_line.saturating_sub(1);
        // A byte order mark is allowed at the start, as upstream's reader allows it.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        Trees {
            parser: Parser::new_from_str(text),
            reader: Reader {
                items: Vec::new(),
                entries: Vec::new(),
                finished: None,
                count: 0,
                stack: Vec::new(),
                anchors: HashMap::new(),
                document_line: first_line,
                document_explicit: false,
                root: None,
                expanded: 0,
                written: 0,
                column: 1,
                line_offset,
            },
            failed: false,
        }
    }
}

impl<'input> Iterator for Trees<'input> {
    type Item = Result<Tree<'input>, YamlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let reader = &mut self.reader;
        for event in self.parser.by_ref() {
            let (event, span) = match event {
                Ok(event) => event,
                Err(error) => {
                    self.failed = true;
                    return Some(Err(YamlError {
                        document: reader.count + 1,
                        line: error.marker().line() + reader.line_offset,
                        column: error.marker().col() + 1,
                        kind: YamlErrorKind::Syntax(error.info().to_string()),
                    }));
                }
            };
            reader.column = span.start.col() + 1;
            let column = reader.column;
            if let Err((line, kind)) = reader.event(event, span) {
                self.failed = true;
                return Some(Err(YamlError {
                    document: reader.count + 1,
                    line,
                    column,
                    kind,
                }));
            }
            if let Some(tree) = reader.finished.take() {
                return Some(Ok(tree));
            }
        }
        None
    }
}

/// The documents of a YAML stream as JSON values with their lines, one at a time (see [`Trees`]).
pub struct Documents<'input> {
    trees: Trees<'input>,
}

impl<'input> Documents<'input> {
    pub fn new(text: &'input str) -> Documents<'input> {
        Documents {
            trees: Trees::new(text),
        }
    }
}

impl Iterator for Documents<'_> {
    type Item = Result<Document, YamlError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.trees.next()?.map(|tree| Document {
            value: tree.node.to_value(),
            lines: tree.node.into_owned(),
            line: tree.line,
        }))
    }
}

/// Reads every document of a YAML stream. Empty documents are kept as `null` (callers skip them).
pub fn read_stream(text: &str) -> Result<Vec<Document>, YamlError> {
    Documents::new(text).collect()
}

type Failure = (usize, YamlErrorKind);

impl<'input> Reader<'input> {
    fn event(&mut self, event: Event<'input>, span: Span) -> Result<(), Failure> {
        let line = span.start.line() + self.line_offset;
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
            Event::DocumentStart(explicit) => {
                self.document_line = line;
                self.document_explicit = explicit;
                self.anchors.clear();
                self.expanded = 0;
                self.written = 0;
                self.root = None;
            }
            Event::DocumentEnd => {
                let node = self
                    .root
                    .take()
                    .unwrap_or_else(|| Node::new(self.document_line, 1, NodeValue::Null));
                // An implicit document starts at its first node, not at the parser's position.
                let start = if self.document_explicit {
                    self.document_line
                } else {
                    node.line
                };
                self.count += 1;
                self.finished = Some(Tree { node, line: start });
            }
            Event::Alias(id) => {
                let (node, nodes) = self
                    .anchors
                    .get(&id)
                    .ok_or((line, YamlErrorKind::UnknownAlias))?;
                // Counted before anything is copied: a refused alias costs nothing.
                self.expanded += nodes;
                if excessive_aliasing(self.expanded, self.written) {
                    return Err((line, YamlErrorKind::TooManyAliases));
                }
                let node = node.clone();
                self.push_node(node, line, true)?;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let is_merge_key = style == ScalarStyle::Plain && text == "<<" && tag.is_none();
                let (value, source) = scalar_value(text, style, tag.as_deref(), line)?;
                let mut node = Node::new(line, self.column, value);
                node.source = source;
                self.written += 1;
                if anchor != 0 {
                    self.anchors.insert(anchor, (node.clone(), 1));
                }
                self.push_scalar(node, line, is_merge_key)?;
            }
            Event::SequenceStart(anchor, _) => {
                self.open(line)?;
                self.written += 1;
                self.stack.push(Open::Sequence {
                    start: self.items.len(),
                    line,
                    column: self.column,
                    anchor,
                });
            }
            Event::MappingStart(anchor, _) => {
                self.open(line)?;
                self.written += 1;
                self.stack.push(Open::Mapping {
                    start: self.entries.len(),
                    keys: None,
                    merged: Vec::new(),
                    pending_key: None,
                    pending_merge: false,
                    line,
                    column: self.column,
                    anchor,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(open) = self.stack.pop() else {
                    return Ok(());
                };
                let (node, anchor) = self.close(open);
                if anchor != 0 {
                    let nodes = count_nodes(&node);
                    self.anchors.insert(anchor, (node.clone(), nodes));
                }
                self.push_node(node, line, false)?;
            }
        }
        Ok(())
    }

    /// A collection starts: it must be a value, never a key, and not too deep.
    fn open(&mut self, line: usize) -> Result<(), Failure> {
        if let Some(Open::Mapping {
            pending_key: None,
            pending_merge: false,
            ..
        }) = self.stack.last()
        {
            return Err((line, YamlErrorKind::ComplexKey));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err((line, YamlErrorKind::TooDeep));
        }
        Ok(())
    }

    fn push_scalar(
        &mut self,
        node: Node<'input>,
        line: usize,
        is_merge_key: bool,
    ) -> Result<(), Failure> {
        let column = self.column;
        if let Some(Open::Mapping {
            start,
            pending_key,
            pending_merge,
            keys,
            ..
        }) = self.stack.last_mut()
        {
            if pending_key.is_none() && !*pending_merge {
                if is_merge_key {
                    *pending_merge = true;
                    return Ok(());
                }
                let key = key_text(node, line)?;
                // Explicit keys may override merged ones (`<<`), never each other.
                if Open::has_key(&self.entries[*start..], keys, &key) {
                    return Err((line, YamlErrorKind::DuplicateKey(key.into_owned())));
                }
                *pending_key = Some((key, line, column));
                return Ok(());
            }
        }
        self.push_node(node, line, false)
    }

    /// A finished node: into the open collection, or the document's root.
    fn push_node(
        &mut self,
        node: Node<'input>,
        line: usize,
        from_alias: bool,
    ) -> Result<(), Failure> {
        let column = self.column;
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Open::Sequence { .. }) => self.items.push(node),
            Some(Open::Mapping {
                start,
                keys,
                merged,
                pending_key,
                pending_merge,
                ..
            }) => {
                if *pending_merge {
                    *pending_merge = false;
                    return merge_into(merged, node, line);
                }
                let entries = &mut self.entries;
                match pending_key.take() {
                    Some((key, key_line, key_column)) => {
                        // A field is where its name is written.
                        let mut node = node;
                        (node.line, node.column) = (key_line, key_column);
                        if let Some(keys) = keys {
                            keys.insert(key.clone());
                        } else if entries.len() - *start >= SCANNED_KEYS {
                            let mut set: HashSet<Cow<'input, str>> = entries[*start..]
                                .iter()
                                .map(|(known, _)| known.clone())
                                .collect();
                            set.insert(key.clone());
                            *keys = Some(set);
                        }
                        entries.push((key, node));
                    }
                    None if from_alias => {
                        // An alias used as a key: it must be a scalar.
                        let key = key_text(node, line)?;
                        if Open::has_key(&entries[*start..], keys, &key) {
                            return Err((line, YamlErrorKind::DuplicateKey(key.into_owned())));
                        }
                        *pending_key = Some((key, line, column));
                    }
                    None => return Err((line, YamlErrorKind::ComplexKey)),
                }
            }
        }
        Ok(())
    }

    /// A collection ends: its pending items (entries, then those merged in) become its node.
    fn close(&mut self, open: Open<'input>) -> (Node<'input>, usize) {
        match open {
            Open::Sequence {
                start,
                line,
                column,
                anchor,
            } => {
                let items: Vec<Node<'input>> = self.items.drain(start..).collect();
                (Node::new(line, column, NodeValue::Sequence(items)), anchor)
            }
            Open::Mapping {
                start,
                keys,
                merged,
                line,
                column,
                anchor,
                ..
            } => {
                for (key, node) in merged {
                    if !Open::has_key(&self.entries[start..], &keys, &key) {
                        self.entries.push((key, node));
                    }
                }
                let entries: Vec<(Cow<'input, str>, Node<'input>)> =
                    self.entries.drain(start..).collect();
                (Node::new(line, column, NodeValue::Mapping(entries)), anchor)
            }
        }
    }
}

/// Adds the entries of a merge value (`<< : *base` or `<< : [*a, *b]`) to the pending merges.
/// Earlier sources win over later ones, as in YAML's merge key definition.
fn merge_into<'input>(
    merged: &mut Vec<(Cow<'input, str>, Node<'input>)>,
    node: Node<'input>,
    line: usize,
) -> Result<(), Failure> {
    let mut add = |entries: Vec<(Cow<'input, str>, Node<'input>)>| {
        for (key, node) in entries {
            if !merged.iter().any(|(known, _)| *known == key) {
                merged.push((key, node));
            }
        }
    };
    match node.value {
        NodeValue::Mapping(entries) => add(entries),
        NodeValue::Sequence(items) => {
            for item in items {
                let NodeValue::Mapping(entries) = item.value else {
                    return Err((line, YamlErrorKind::BadMerge));
                };
                add(entries);
            }
        }
        _ => return Err((line, YamlErrorKind::BadMerge)),
    }
    Ok(())
}

fn count_nodes(node: &Node<'_>) -> usize {
    match &node.value {
        NodeValue::Sequence(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        NodeValue::Mapping(entries) => {
            1 + entries
                .iter()
                .map(|(_, node)| count_nodes(node))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// A key as JSON text, as sigs.k8s.io/yaml converts keys.
fn key_text(node: Node<'_>, line: usize) -> Result<Cow<'_, str>, Failure> {
    match node.value {
        NodeValue::String(text) => Ok(text),
        NodeValue::Bool(flag) => Ok(Cow::Owned(flag.to_string())),
        NodeValue::Number(number) => Ok(Cow::Owned(match number.as_f64() {
            Some(float) if number.is_f64() => go_float_text(float),
            _ => number.to_string(),
        })),
        NodeValue::Null => Err((line, YamlErrorKind::BadKey("a null".to_string()))),
        NodeValue::Sequence(_) | NodeValue::Mapping(_) => Err((line, YamlErrorKind::ComplexKey)),
    }
}

/// The value of a scalar, and for a plain scalar read as something other than a string, the text
/// as written (so that messages can say what YAML 1.1 made of it).
#[allow(clippy::type_complexity)]
fn scalar_value<'input>(
    text: Cow<'input, str>,
    style: ScalarStyle,
    tag: Option<&Tag>,
    line: usize,
) -> Result<(NodeValue<'input>, Option<Cow<'input, str>>), Failure> {
    let core_tag = tag
        .filter(|tag| tag.is_yaml_core_schema() || tag.handle == "!!")
        .map(|tag| tag.suffix.as_str());
    let plain = style == ScalarStyle::Plain;
    let scalar = match (core_tag, tag) {
        // A local tag (`!foo`) or an unknown one: go-yaml v2 keeps the text.
        (None, Some(_)) => Scalar::String,
        (None, None) if plain => resolve_plain(&text),
        (None, None) => Scalar::String,
        (Some("str"), _) => Scalar::String,
        (Some("binary"), _) => {
            return Err((
                line,
                YamlErrorKind::Unsupported("a `!!binary` value".to_string()),
            ));
        }
        (Some("timestamp"), _) if is_timestamp(&text) => Scalar::Timestamp,
        (Some("timestamp"), _) => return Err((line, mismatch(&text, "timestamp"))),
        (Some(wanted @ ("int" | "float" | "bool" | "null")), _) => {
            let resolved = resolve_plain(&text);
            let matches = matches!(
                (wanted, &resolved),
                (
                    "int",
                    Scalar::Integer(_) | Scalar::Unsigned(_) | Scalar::BigInteger
                ) | ("float", Scalar::Float(_))
                    | ("bool", Scalar::Bool(_))
                    | ("null", Scalar::Null)
            );
            match (wanted, resolved) {
                (_, resolved) if matches => resolved,
                ("float", Scalar::Integer(value)) => Scalar::Float(value as f64),
                ("float", Scalar::Unsigned(value)) => Scalar::Float(value as f64),
                _ => return Err((line, mismatch(&text, wanted))),
            }
        }
        // Collection tags on a scalar, and anything else of the core schema: keep the text.
        (Some(_), _) => Scalar::String,
    };
    let value = match scalar {
        Scalar::String => return Ok((NodeValue::String(text), None)),
        Scalar::Null => NodeValue::Null,
        Scalar::Bool(flag) => NodeValue::Bool(flag),
        Scalar::Integer(number) => NodeValue::Number(number.into()),
        Scalar::Unsigned(number) => NodeValue::Number(number.into()),
        Scalar::Float(number) => match Number::from_f64(number) {
            Some(number) => NodeValue::Number(number),
            None => return Err((line, YamlErrorKind::NotJson(text.into_owned()))),
        },
        // go-yaml v2 keeps a timestamp's text when decoding into an untyped value.
        Scalar::Timestamp => return Ok((NodeValue::String(text), None)),
        Scalar::BigInteger => return Err((line, YamlErrorKind::NotJson(text.into_owned()))),
    };
    Ok((value, Some(text)))
}

fn mismatch(text: &str, wanted: &str) -> YamlErrorKind {
    YamlErrorKind::TagMismatch {
        text: text.to_string(),
        tag: wanted.to_string(),
    }
}
