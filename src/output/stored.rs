//! A spec or status printed from the JSON text the datastore stored, parsed once.
//!
//! A listed resource printed as a document carries its spec and status as [`StoredJson`]: the
//! datastore parses the stored text once, as it decodes the metadata, into a tape of tokens whose
//! strings are ranges of that text (those that held escapes are kept unescaped beside it), and the
//! printer writes the tape as JSON or YAML — no second parse, no `serde_json::Value`, and no
//! escaping pass over a string that had no escapes when stored (JSON forbids every character its
//! writer would escape in a string written without escapes). Its output is byte for byte what the
//! same value printed through a `Value` would be: JSON in the stored key order, YAML with every
//! mapping's keys sorted, a repeated key keeping its first place and its last value (what an
//! order-preserving `Value` map does), numbers through the same `serde_json::Number`, and strings
//! quoted by the same YAML rules (`crate::yaml::emit`). `tests.rs` holds the two paths side by side
//! on tricky values. The envelope (kind, apiVersion, metadata) and the List around the items are
//! `document.rs`'s.

use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::resource::Resource;
use crate::yaml::emit;

use super::OutputError;

/// A copy of `resource` with the spec and status decoded from their stored text, for the outputs
/// that read them as values (tables, named documents).
pub fn decoded(
    resource: &Resource,
    spec: Option<&StoredJson>,
    status: Option<&StoredJson>,
) -> Resource {
    let value = |stored: Option<&StoredJson>| stored.map(StoredJson::to_value).unwrap_or_default();
    let mut whole = resource.clone();
    whole.spec = value(spec);
    whole.status = value(status);
    whole
}

/// One JSON value parsed from stored text, as a tape (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredJson {
    /// The stored text the strings are ranges of (shared by a resource's spec and status).
    text: Arc<str>,
    tokens: Vec<Token>,
    /// The strings that held escapes, unescaped.
    escaped: Vec<Box<str>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Null,
    Bool(bool),
    Number(Number),
    /// A string, or inside an object a key.
    Text(Text),
    /// A collection, and the index of the token after its last one. An object's tokens are its
    /// keys and values in turn.
    Array {
        end: usize,
    },
    Object {
        end: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Text {
    /// Bytes `start..end` of the text, which held no escapes.
    Raw { start: usize, end: usize },
    /// The nth unescaped string.
    Escaped(usize),
}

impl StoredJson {
    /// Parses stored JSON text (one value, nothing after it but whitespace).
    pub fn parse(text: &str) -> Result<StoredJson, serde_json::Error> {
        let text: Arc<str> = Arc::from(text);
        let mut deserializer = serde_json::Deserializer::from_str(&text);
        let tape = StoredJson::read(&text, &mut deserializer)?;
        deserializer.end()?;
        Ok(tape.into_json(text.clone()))
    }

    /// The value a deserializer of `text` (positioned at it) reads next, as a tape whose strings
    /// are ranges of `text`: for a datastore that parses the rest of a stored document itself.
    pub fn read<'de, D: Deserializer<'de>>(
        text: &'de str,
        deserializer: D,
    ) -> Result<Tape, D::Error> {
        let mut tape = Tape::default();
        Builder {
            text,
            tape: &mut tape,
        }
        .deserialize(deserializer)?;
        Ok(tape)
    }

    fn text(&self, text: Text) -> &str {
        match text {
            Text::Raw { start, end } => &self.text[start..end],
            Text::Escaped(index) => &self.escaped[index],
        }
    }

    /// The end of the value whose first token is at `at`.
    fn end_of(&self, at: usize) -> usize {
        match self.tokens[at] {
            Token::Array { end } | Token::Object { end } => end,
            _ => at + 1,
        }
    }

    /// The items of the array at `at`: each item's first token.
    fn items(&self, at: usize) -> Vec<usize> {
        let mut items = Vec::new();
        let mut next = at + 1;
        while next < self.end_of(at) {
            items.push(next);
            next = self.end_of(next);
        }
        items
    }

    /// The entries of the object at `at`: each key and its value's first token, a repeated key in
    /// its first place with its last value.
    fn entries(&self, at: usize) -> Vec<(&str, usize)> {
        let mut entries: Vec<(&str, usize)> = Vec::new();
        let mut next = at + 1;
        while next < self.end_of(at) {
            let Token::Text(key) = self.tokens[next] else {
                break;
            };
            entries.push((self.text(key), next + 1));
            next = self.end_of(next + 1);
        }
        keep_last_of_repeated_keys(&mut entries);
        entries
    }

    /// The value as JSON.
    pub fn to_value(&self) -> Value {
        self.value_at(0)
    }

    fn value_at(&self, at: usize) -> Value {
        match &self.tokens[at] {
            Token::Null => Value::Null,
            Token::Bool(flag) => Value::Bool(*flag),
            Token::Number(number) => Value::Number(number.clone()),
            Token::Text(text) => Value::String(self.text(*text).to_string()),
            Token::Array { .. } => Value::Array(
                self.items(at)
                    .into_iter()
                    .map(|item| self.value_at(item))
                    .collect(),
            ),
            Token::Object { .. } => Value::Object(
                self.entries(at)
                    .into_iter()
                    .map(|(key, value)| (key.to_string(), self.value_at(value)))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    /// Writes the value as serde_json's pretty printer does (two-space steps), the lines after the
    /// first indented by `level` steps more: where an entry of a document at that depth goes.
    pub fn write_json<W: ?Sized + Write>(&self, out: &mut W, level: usize) -> io::Result<()> {
        self.write_json_at(out, 0, level)
    }

    fn write_json_at<W: ?Sized + Write>(
        &self,
        out: &mut W,
        at: usize,
        level: usize,
    ) -> io::Result<()> {
        match &self.tokens[at] {
            Token::Null => out.write_all(b"null"),
            Token::Bool(true) => out.write_all(b"true"),
            Token::Bool(false) => out.write_all(b"false"),
            Token::Number(number) => write!(out, "{number}"),
            Token::Text(text) => self.write_json_string(out, *text),
            Token::Array { .. } => {
                let items = self.items(at);
                if items.is_empty() {
                    return out.write_all(b"[]");
                }
                out.write_all(b"[")?;
                for (index, item) in items.into_iter().enumerate() {
                    if index > 0 {
                        out.write_all(b",")?;
                    }
                    new_line(out, level + 1)?;
                    self.write_json_at(out, item, level + 1)?;
                }
                new_line(out, level)?;
                out.write_all(b"]")
            }
            Token::Object { .. } => {
                let entries = self.entries(at);
                if entries.is_empty() {
                    return out.write_all(b"{}");
                }
                out.write_all(b"{")?;
                for (index, (key, value)) in entries.into_iter().enumerate() {
                    if index > 0 {
                        out.write_all(b",")?;
                    }
                    new_line(out, level + 1)?;
                    serde_json::to_writer(&mut *out, key).map_err(io::Error::from)?;
                    out.write_all(b": ")?;
                    self.write_json_at(out, value, level + 1)?;
                }
                new_line(out, level)?;
                out.write_all(b"}")
            }
        }
    }

    /// A string: written as stored when it held no escapes (nothing in it needs one), escaped by
    /// serde_json otherwise.
    fn write_json_string<W: ?Sized + Write>(&self, out: &mut W, text: Text) -> io::Result<()> {
        match text {
            Text::Raw { start, end } => {
                out.write_all(b"\"")?;
                out.write_all(self.text[start..end].as_bytes())?;
                out.write_all(b"\"")
            }
            Text::Escaped(index) => {
                serde_json::to_writer(&mut *out, &*self.escaped[index]).map_err(io::Error::from)
            }
        }
    }

    /// Appends the value as a YAML entry `key: value` of a block mapping whose keys sit at
    /// indentation `width` (the caller wrote the line's indentation), nested mappings' keys
    /// sorted: `emit::write_entry` with `KeyOrder::Sorted`, for this tape.
    pub fn write_yaml_entry(&self, out: &mut String, key: &str, width: usize) {
        self.write_yaml_entry_at(out, 0, key, width);
    }

    fn write_yaml_entry_at(&self, out: &mut String, at: usize, key: &str, width: usize) {
        emit::write_key(out, key);
        out.push(':');
        match &self.tokens[at] {
            Token::Object { end } if *end > at + 1 => {
                out.push('\n');
                emit::indent(out, width + 2);
                self.write_yaml_mapping(out, at, width + 2);
            }
            Token::Array { end } if *end > at + 1 => {
                out.push('\n');
                emit::indent(out, width);
                self.write_yaml_sequence(out, at, width);
            }
            _ => {
                out.push(' ');
                self.write_yaml_inline(out, at, width + 2);
                out.push('\n');
            }
        }
    }

    /// A scalar or an empty collection after `key: ` or `- `.
    fn write_yaml_inline(&self, out: &mut String, at: usize, block: usize) {
        match &self.tokens[at] {
            Token::Null => out.push_str("null"),
            Token::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
            Token::Number(number) => {
                use std::fmt::Write as _;
                let _ = write!(out, "{number}");
            }
            Token::Text(text) => emit::write_string(out, self.text(*text), block),
            Token::Array { .. } => out.push_str("[]"),
            Token::Object { .. } => out.push_str("{}"),
        }
    }

    /// A mapping whose first key is written at the current position, keys sorted.
    fn write_yaml_mapping(&self, out: &mut String, at: usize, width: usize) {
        let mut entries = self.entries(at);
        if !entries.is_sorted_by(|left, right| left.0 <= right.0) {
            entries.sort_unstable_by(|left, right| left.0.cmp(right.0));
        }
        for (index, (key, value)) in entries.into_iter().enumerate() {
            if index > 0 {
                emit::indent(out, width);
            }
            self.write_yaml_entry_at(out, value, key, width);
        }
    }

    /// A sequence whose first dash is written at the current position.
    fn write_yaml_sequence(&self, out: &mut String, at: usize, width: usize) {
        for (index, item) in self.items(at).into_iter().enumerate() {
            if index > 0 {
                emit::indent(out, width);
            }
            out.push_str("- ");
            match &self.tokens[item] {
                Token::Object { end } if *end > item + 1 => {
                    self.write_yaml_mapping(out, item, width + 2)
                }
                Token::Array { end } if *end > item + 1 => {
                    self.write_yaml_sequence(out, item, width + 2)
                }
                _ => {
                    self.write_yaml_inline(out, item, width + 2);
                    out.push('\n');
                }
            }
        }
    }
}

/// Serializes as the `Value` of the same text does.
impl serde::Serialize for StoredJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

/// A line break and the indentation of `level` two-space steps, in one write.
pub(super) fn new_line<W: ?Sized + Write>(out: &mut W, level: usize) -> io::Result<()> {
    const SPACES: &[u8; 65] = b"\n                                                                ";
    let width = 1 + 2 * level;
    if width <= SPACES.len() {
        return out.write_all(&SPACES[..width]);
    }
    out.write_all(b"\n")?;
    (0..level).try_for_each(|_| out.write_all(b"  "))
}

/// What an order-preserving map does with a repeated key: the first place, the last value.
/// Stored resources have none (every writer emits a key once), so the check is the common case:
/// pairwise for the few keys a mapping usually has, through a sorted index for many.
fn keep_last_of_repeated_keys(entries: &mut Vec<(&str, usize)>) {
    const PAIRWISE_UP_TO: usize = 16;
    let repeated = if entries.len() <= PAIRWISE_UP_TO {
        entries
            .iter()
            .enumerate()
            .any(|(index, (key, _))| entries[..index].iter().any(|(other, _)| other == key))
    } else {
        let mut keys: Vec<&str> = entries.iter().map(|(key, _)| *key).collect();
        keys.sort_unstable();
        keys.windows(2).any(|pair| pair[0] == pair[1])
    };
    if !repeated {
        return;
    }
    let mut kept: Vec<(&str, usize)> = Vec::with_capacity(entries.len());
    for (key, value) in entries.drain(..) {
        match kept.iter_mut().find(|(known, _)| *known == key) {
            Some(place) => place.1 = value,
            None => kept.push((key, value)),
        }
    }
    *entries = kept;
}

/// The tokens of a value being read; [`Tape::into_json`] joins them to their text.
#[derive(Debug, Default)]
pub struct Tape {
    tokens: Vec<Token>,
    escaped: Vec<Box<str>>,
}

impl Tape {
    /// Whether the value read was `null` (a stored spec of `null` is no spec).
    pub fn is_null(&self) -> bool {
        matches!(self.tokens.as_slice(), [Token::Null])
    }

    /// The value, its strings ranges of `text` (the text it was read from).
    pub fn into_json(self, text: Arc<str>) -> StoredJson {
        StoredJson {
            text,
            tokens: self.tokens,
            escaped: self.escaped,
        }
    }
}

/// Reads one value onto a tape; strings borrowed from `text` become ranges of it.
struct Builder<'de, 'tape> {
    text: &'de str,
    tape: &'tape mut Tape,
}

impl<'de> Builder<'de, '_> {
    fn reborrow(&mut self) -> Builder<'de, '_> {
        Builder {
            text: self.text,
            tape: self.tape,
        }
    }

    fn push_text(&mut self, text: &str, borrowed: bool) {
        let base = self.text.as_ptr() as usize;
        let start = (text.as_ptr() as usize).wrapping_sub(base);
        let token = if borrowed && start <= self.text.len() && start + text.len() <= self.text.len()
        {
            Text::Raw {
                start,
                end: start + text.len(),
            }
        } else {
            self.tape.escaped.push(text.into());
            Text::Escaped(self.tape.escaped.len() - 1)
        };
        self.tape.tokens.push(Token::Text(token));
    }
}

impl<'de> DeserializeSeed<'de> for Builder<'de, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Builder<'de, '_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, flag: bool) -> Result<(), E> {
        self.tape.tokens.push(Token::Bool(flag));
        Ok(())
    }

    fn visit_i64<E>(self, number: i64) -> Result<(), E> {
        self.tape.tokens.push(Token::Number(number.into()));
        Ok(())
    }

    fn visit_u64<E>(self, number: u64) -> Result<(), E> {
        self.tape.tokens.push(Token::Number(number.into()));
        Ok(())
    }

    fn visit_f64<E>(self, number: f64) -> Result<(), E> {
        // As `Value`: a float JSON cannot hold is null (serde_json never parses one).
        let token = Number::from_f64(number).map_or(Token::Null, Token::Number);
        self.tape.tokens.push(token);
        Ok(())
    }

    fn visit_borrowed_str<E>(mut self, text: &'de str) -> Result<(), E> {
        self.push_text(text, true);
        Ok(())
    }

    fn visit_str<E>(mut self, text: &str) -> Result<(), E> {
        self.push_text(text, false);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.tape.tokens.push(Token::Null);
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.tape.tokens.push(Token::Null);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut sequence: A) -> Result<(), A::Error> {
        let at = self.tape.tokens.len();
        self.tape.tokens.push(Token::Array { end: 0 });
        while sequence.next_element_seed(self.reborrow())?.is_some() {}
        self.tape.tokens[at] = Token::Array {
            end: self.tape.tokens.len(),
        };
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let at = self.tape.tokens.len();
        self.tape.tokens.push(Token::Object { end: 0 });
        while map.next_key_seed(KeyBuilder(self.reborrow()))?.is_some() {
            map.next_value_seed(self.reborrow())?;
        }
        self.tape.tokens[at] = Token::Object {
            end: self.tape.tokens.len(),
        };
        Ok(())
    }
}

/// A map key onto the tape (a string: JSON's keys are).
struct KeyBuilder<'de, 'tape>(Builder<'de, 'tape>);

impl<'de> DeserializeSeed<'de> for KeyBuilder<'de, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self.0)
    }
}

/// Prints a resource's stored spec and status parsed from text, for callers that hold text.
pub(super) fn parse_parts(
    resource: &Resource,
    spec: Option<&str>,
    status: Option<&str>,
    format: &'static str,
) -> Result<(Option<StoredJson>, Option<StoredJson>), OutputError> {
    let parse = |text: Option<&str>| {
        text.map(StoredJson::parse)
            .transpose()
            .map_err(|source| OutputError::Encode {
                what: resource.key().to_string(),
                format,
                source: Box::new(source),
            })
    };
    Ok((parse(spec)?, parse(status)?))
}
