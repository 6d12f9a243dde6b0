//! From YAML text to JSON values: parsing (saphyr-parser's events), YAML 1.1 resolution of plain
//! scalars, anchors and aliases (bounded), merge keys (`<<`), duplicate keys (refused) and the line
//! of every node.
//!
//! Keys are turned into strings as sigs.k8s.io/yaml does (`1` → `"1"`, `yes` → `"true"`); a key that
//! cannot be a JSON key (a null, a list, a mapping, a timestamp) is refused. Values JSON cannot
//! hold (`.inf`, `.nan`, integers beyond 64 bits) are refused with their line, as upstream's
//! conversion to JSON fails on them. This module knows nothing of any target type.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span, StrInput, Tag};
use serde_json::{Map, Number, Value};

use super::resolve::{Scalar, go_float_text, is_timestamp, resolve_plain};
use super::{Document, Lines, YamlError, YamlErrorKind};

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

/// A node under construction: a collection being filled, with its line.
enum Open {
    Sequence {
        items: Vec<Value>,
        lines: Vec<Lines>,
        line: usize,
        column: usize,
        anchor: usize,
    },
    Mapping {
        entries: Map<String, Value>,
        lines: Vec<(String, Lines)>,
        /// Keys from merge (`<<`) entries, applied at the end where no explicit key is given.
        merged: Vec<(String, Value, Lines)>,
        /// The key read, waiting for its value, and where it was written.
        pending_key: Option<(String, usize, usize)>,
        pending_merge: bool,
        line: usize,
        column: usize,
        anchor: usize,
    },
}

struct Reader {
    /// The document just finished, waiting to be handed out by [`Documents`].
    finished: Option<Document>,
    /// How many documents have been finished (for the 1-based index in errors).
    count: usize,
    stack: Vec<Open>,
    /// Each anchor's value, its lines and its number of nodes.
    anchors: HashMap<usize, (Value, Lines, usize)>,
    document_line: usize,
    document_explicit: bool,
    root: Option<(Value, Lines)>,
    /// Nodes added by aliases, and nodes written in the text, for [`excessive_aliasing`].
    expanded: usize,
    written: usize,
    /// The column of the event being handled.
    column: usize,
    /// Lines of the whole stream before the text being read (see [`Documents::starting_at_line`]).
    line_offset: usize,
}

/// The documents of a YAML stream, read one at a time: each is handed out as soon as it ends,
/// so a caller that does not keep them reads a stream of any length in the memory of one
/// document. After an error the stream ends.
pub struct Documents<'input> {
    parser: Parser<'input, StrInput<'input>>,
    reader: Reader,
    failed: bool,
}

impl<'input> Documents<'input> {
    pub fn new(text: &'input str) -> Documents<'input> {
        Documents::starting_at_line(text, 1)
    }

    /// Reads `text` as the part of a longer stream that starts on line `first_line` (1-based) of
    /// it, so that every line reported (in documents and in errors) is the line of the stream.
    pub fn starting_at_line(text: &'input str, first_line: usize) -> Documents<'input> {
        let line_offset = first_line.saturating_sub(1);
        // A byte order mark is allowed at the start, as upstream's reader allows it.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        Documents {
            parser: Parser::new_from_str(text),
            reader: Reader {
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

impl Iterator for Documents<'_> {
    type Item = Result<Document, YamlError>;

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
            if let Some(document) = reader.finished.take() {
                return Some(Ok(document));
            }
        }
        None
    }
}

/// Reads every document of a YAML stream. Empty documents are kept as `null` (callers skip them).
pub fn read_stream(text: &str) -> Result<Vec<Document>, YamlError> {
    Documents::new(text).collect()
}

type Failure = (usize, YamlErrorKind);

impl Reader {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Failure> {
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
                let (value, lines) = self
                    .root
                    .take()
                    .unwrap_or((Value::Null, Lines::leaf(self.document_line, 1, None)));
                // An implicit document starts at its first node, not at the parser's position.
                let start = if self.document_explicit {
                    self.document_line
                } else {
                    lines.line
                };
                self.count += 1;
                self.finished = Some(Document {
                    value,
                    lines,
                    line: start,
                });
            }
            Event::Alias(id) => {
                let (value, lines, nodes) = self
                    .anchors
                    .get(&id)
                    .ok_or((line, YamlErrorKind::UnknownAlias))?;
                // Counted before anything is copied: a refused alias costs nothing.
                self.expanded += nodes;
                if excessive_aliasing(self.expanded, self.written) {
                    return Err((line, YamlErrorKind::TooManyAliases));
                }
                let (value, lines) = (value.clone(), lines.clone());
                self.push_node(value, lines, line, true)?;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let (value, source) = scalar_value(&text, style, tag.as_deref(), line)?;
                let lines = Lines::leaf(line, self.column, source);
                self.written += 1;
                if anchor != 0 {
                    self.anchors
                        .insert(anchor, (value.clone(), lines.clone(), 1));
                }
                let is_merge_key = style == ScalarStyle::Plain && text == "<<" && tag.is_none();
                self.push_scalar(value, lines, line, is_merge_key)?;
            }
            Event::SequenceStart(anchor, _) => {
                self.open(line)?;
                self.written += 1;
                self.stack.push(Open::Sequence {
                    items: Vec::new(),
                    lines: Vec::new(),
                    line,
                    column: self.column,
                    anchor,
                });
            }
            Event::MappingStart(anchor, _) => {
                self.open(line)?;
                self.written += 1;
                self.stack.push(Open::Mapping {
                    entries: Map::new(),
                    lines: Vec::new(),
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
                let (value, lines, anchor) = close(open)?;
                if anchor != 0 {
                    let nodes = count_nodes(&value);
                    self.anchors
                        .insert(anchor, (value.clone(), lines.clone(), nodes));
                }
                self.push_node(value, lines, line, false)?;
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
        value: Value,
        lines: Lines,
        line: usize,
        is_merge_key: bool,
    ) -> Result<(), Failure> {
        if let Some(Open::Mapping {
            pending_key,
            pending_merge,
            entries,
            ..
        }) = self.stack.last_mut()
        {
            if pending_key.is_none() && !*pending_merge {
                if is_merge_key {
                    *pending_merge = true;
                    return Ok(());
                }
                let key = key_text(&value, line)?;
                // Explicit keys may override merged ones (`<<`), never each other.
                if entries.contains_key(&key) {
                    return Err((line, YamlErrorKind::DuplicateKey(key)));
                }
                *pending_key = Some((key, line, self.column));
                return Ok(());
            }
        }
        self.push_node(value, lines, line, false)
    }

    /// A finished value: into the open collection, or the document's root.
    fn push_node(
        &mut self,
        value: Value,
        lines: Lines,
        line: usize,
        from_alias: bool,
    ) -> Result<(), Failure> {
        match self.stack.last_mut() {
            None => self.root = Some((value, lines)),
            Some(Open::Sequence {
                items,
                lines: item_lines,
                ..
            }) => {
                items.push(value);
                item_lines.push(lines);
            }
            Some(Open::Mapping {
                entries,
                lines: entry_lines,
                merged,
                pending_key,
                pending_merge,
                ..
            }) => {
                if *pending_merge {
                    *pending_merge = false;
                    return merge_into(merged, value, lines, line);
                }
                match pending_key.take() {
                    Some((key, key_line, key_column)) => {
                        // A field is where its name is written.
                        let mut lines = lines;
                        (lines.line, lines.column) = (key_line, key_column);
                        entries.insert(key.clone(), value);
                        entry_lines.push((key, lines));
                    }
                    None if from_alias => {
                        // An alias used as a key: it must be a scalar.
                        let key = key_text(&value, line)?;
                        if entries.contains_key(&key) {
                            return Err((line, YamlErrorKind::DuplicateKey(key)));
                        }
                        *pending_key = Some((key, line, self.column));
                    }
                    None => return Err((line, YamlErrorKind::ComplexKey)),
                }
            }
        }
        Ok(())
    }
}

/// Adds the entries of a merge value (`<< : *base` or `<< : [*a, *b]`) to the pending merges.
/// Earlier sources win over later ones, as in YAML's merge key definition.
fn merge_into(
    merged: &mut Vec<(String, Value, Lines)>,
    value: Value,
    lines: Lines,
    line: usize,
) -> Result<(), Failure> {
    let mut add = |map: Map<String, Value>, lines: Lines| {
        let mut children = lines.into_entries();
        for (key, value) in map {
            let position = children.iter().position(|(name, _)| *name == key);
            let item_lines = position
                .map(|at| children.swap_remove(at).1)
                .unwrap_or_else(|| Lines::leaf(line, 1, None));
            if !merged.iter().any(|(known, ..)| *known == key) {
                merged.push((key, value, item_lines));
            }
        }
    };
    match value {
        Value::Object(map) => add(map, lines),
        Value::Array(items) => {
            let item_lines = lines.into_items();
            for (index, item) in items.into_iter().enumerate() {
                let Value::Object(map) = item else {
                    return Err((line, YamlErrorKind::BadMerge));
                };
                let lines = item_lines
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| Lines::leaf(line, 1, None));
                add(map, lines);
            }
        }
        _ => return Err((line, YamlErrorKind::BadMerge)),
    }
    Ok(())
}

fn close(open: Open) -> Result<(Value, Lines, usize), Failure> {
    match open {
        Open::Sequence {
            items,
            lines,
            line,
            column,
            anchor,
        } => Ok((
            Value::Array(items),
            Lines::sequence(line, column, lines),
            anchor,
        )),
        Open::Mapping {
            mut entries,
            mut lines,
            merged,
            line,
            column,
            anchor,
            ..
        } => {
            for (key, value, item_lines) in merged {
                if !entries.contains_key(&key) {
                    entries.insert(key.clone(), value);
                    lines.push((key, item_lines));
                }
            }
            Ok((
                Value::Object(entries),
                Lines::mapping(line, column, lines),
                anchor,
            ))
        }
    }
}

fn count_nodes(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(count_nodes).sum::<usize>(),
        _ => 1,
    }
}

/// A key as JSON text, as sigs.k8s.io/yaml converts keys.
fn key_text(value: &Value, line: usize) -> Result<String, Failure> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Bool(flag) => Ok(flag.to_string()),
        Value::Number(number) => Ok(match number.as_f64() {
            Some(float) if number.is_f64() => go_float_text(float),
            _ => number.to_string(),
        }),
        Value::Null => Err((line, YamlErrorKind::BadKey("a null".to_string()))),
        Value::Array(_) | Value::Object(_) => Err((line, YamlErrorKind::ComplexKey)),
    }
}

/// The value of a scalar, and for a plain scalar read as something other than a string, the text
/// as written (so that messages can say what YAML 1.1 made of it).
fn scalar_value(
    text: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
    line: usize,
) -> Result<(Value, Option<Box<str>>), Failure> {
    let core_tag = tag
        .filter(|tag| tag.is_yaml_core_schema() || tag.handle == "!!")
        .map(|tag| tag.suffix.as_str());
    let plain = style == ScalarStyle::Plain;
    let scalar = match (core_tag, tag) {
        // A local tag (`!foo`) or an unknown one: go-yaml v2 keeps the text.
        (None, Some(_)) => Scalar::String,
        (None, None) if plain => resolve_plain(text),
        (None, None) => Scalar::String,
        (Some("str"), _) => Scalar::String,
        (Some("binary"), _) => {
            return Err((
                line,
                YamlErrorKind::Unsupported("a `!!binary` value".to_string()),
            ));
        }
        (Some("timestamp"), _) if is_timestamp(text) => Scalar::Timestamp,
        (Some("timestamp"), _) => return Err((line, mismatch(text, "timestamp"))),
        (Some(wanted @ ("int" | "float" | "bool" | "null")), _) => {
            let resolved = resolve_plain(text);
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
                _ => return Err((line, mismatch(text, wanted))),
            }
        }
        // Collection tags on a scalar, and anything else of the core schema: keep the text.
        (Some(_), _) => Scalar::String,
    };
    let value = match scalar {
        Scalar::String => return Ok((Value::String(text.to_string()), None)),
        Scalar::Null => Value::Null,
        Scalar::Bool(flag) => Value::Bool(flag),
        Scalar::Integer(number) => Value::Number(number.into()),
        Scalar::Unsigned(number) => Value::Number(number.into()),
        Scalar::Float(number) => match Number::from_f64(number) {
            Some(number) => Value::Number(number),
            None => return Err((line, YamlErrorKind::NotJson(text.to_string()))),
        },
        // go-yaml v2 keeps a timestamp's text when decoding into an untyped value.
        Scalar::Timestamp => return Ok((Value::String(text.to_string()), None)),
        Scalar::BigInteger => return Err((line, YamlErrorKind::NotJson(text.to_string()))),
    };
    Ok((value, Some(text.into())))
}

fn mismatch(text: &str, wanted: &str) -> YamlErrorKind {
    YamlErrorKind::TagMismatch {
        text: text.to_string(),
        tag: wanted.to_string(),
    }
}
