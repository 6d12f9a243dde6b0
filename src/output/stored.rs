//! A spec or status printed from the JSON text the datastore stored, without building a
//! `serde_json::Value` for it.
//!
//! A listed resource printed as a document goes through [`StoredTree`]: the stored text parsed
//! into a tree whose strings borrow from that text where they hold no escapes, whose mappings are
//! plain vectors of entries (no hash index, no key copied), and which is thrown away once written.
//! Its output is byte for byte what the same value printed through a `Value` would be: JSON in the
//! stored key order, YAML with every mapping's keys sorted, a repeated key keeping its first place
//! and its last value (what an order-preserving `Value` map does), numbers through the same
//! `serde_json::Number`, and strings quoted by the same YAML rules (`crate::yaml::emit`).
//! `tests.rs` holds the two paths side by side on tricky values. The envelope (kind, apiVersion,
//! metadata) and the List around the items are `document.rs`'s.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Number;

use crate::resource::Resource;
use crate::yaml::emit;

use super::OutputError;

/// A copy of `resource` with the spec and status decoded from their stored text, for the outputs
/// that read them as values (tables, named documents).
pub fn decoded(
    resource: &Resource,
    spec: Option<&str>,
    status: Option<&str>,
) -> Result<Resource, OutputError> {
    let decode = |text: Option<&str>| {
        text.map(serde_json::from_str)
            .transpose()
            .map(Option::unwrap_or_default)
            .map_err(|source| OutputError::Encode {
                what: resource.key().to_string(),
                format: "JSON",
                source: Box::new(source),
            })
    };
    let mut whole = resource.clone();
    whole.spec = decode(spec)?;
    whole.status = decode(status)?;
    Ok(whole)
}

/// One JSON value parsed from stored text `'text`.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredTree<'text> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'text, str>),
    Array(Vec<StoredTree<'text>>),
    /// Entries in stored order, each key once.
    Object(Vec<(Cow<'text, str>, StoredTree<'text>)>),
}

impl<'text> StoredTree<'text> {
    /// Parses stored JSON text (one value, nothing after it but whitespace).
    pub fn parse(text: &'text str) -> Result<StoredTree<'text>, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let tree = StoredTree::deserialize(&mut deserializer)?;
        deserializer.end()?;
        Ok(tree)
    }

    /// Appends the value as a YAML entry `key: value` of a block mapping whose keys sit at
    /// indentation `width` (the caller wrote the line's indentation), nested mappings' keys
    /// sorted: `emit::write_entry` with `KeyOrder::Sorted`, for this tree.
    pub fn write_yaml_entry(&self, out: &mut String, key: &str, width: usize) {
        emit::write_key(out, key);
        out.push(':');
        match self {
            StoredTree::Object(entries) if !entries.is_empty() => {
                out.push('\n');
                emit::indent(out, width + 2);
                write_yaml_mapping(out, entries, width + 2);
            }
            StoredTree::Array(items) if !items.is_empty() => {
                out.push('\n');
                emit::indent(out, width);
                write_yaml_sequence(out, items, width);
            }
            other => {
                out.push(' ');
                other.write_yaml_inline(out, width + 2);
                out.push('\n');
            }
        }
    }

    /// A scalar or an empty collection after `key: ` or `- `.
    fn write_yaml_inline(&self, out: &mut String, block: usize) {
        match self {
            StoredTree::Null => out.push_str("null"),
            StoredTree::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
            StoredTree::Number(number) => {
                use std::fmt::Write as _;
                let _ = write!(out, "{number}");
            }
            StoredTree::String(text) => emit::write_string(out, text, block),
            StoredTree::Array(_) => out.push_str("[]"),
            StoredTree::Object(_) => out.push_str("{}"),
        }
    }
}

/// A mapping whose first key is written at the current position, keys sorted.
fn write_yaml_mapping(out: &mut String, entries: &[(Cow<'_, str>, StoredTree<'_>)], width: usize) {
    let write = |out: &mut String, index: usize, key: &str, value: &StoredTree<'_>| {
        if index > 0 {
            emit::indent(out, width);
        }
        value.write_yaml_entry(out, key, width);
    };
    if entries.is_sorted_by(|left, right| left.0 <= right.0) {
        for (index, (key, value)) in entries.iter().enumerate() {
            write(out, index, key, value);
        }
    } else {
        let mut sorted: Vec<&(Cow<'_, str>, StoredTree<'_>)> = entries.iter().collect();
        sorted.sort_unstable_by(|left, right| left.0.cmp(&right.0));
        for (index, (key, value)) in sorted.into_iter().enumerate() {
            write(out, index, key, value);
        }
    }
}

/// A sequence whose first dash is written at the current position.
fn write_yaml_sequence(out: &mut String, items: &[StoredTree<'_>], width: usize) {
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            emit::indent(out, width);
        }
        out.push_str("- ");
        match item {
            StoredTree::Object(entries) if !entries.is_empty() => {
                write_yaml_mapping(out, entries, width + 2)
            }
            StoredTree::Array(inner) if !inner.is_empty() => {
                write_yaml_sequence(out, inner, width + 2)
            }
            other => {
                other.write_yaml_inline(out, width + 2);
                out.push('\n');
            }
        }
    }
}

/// Serializes as the `Value` of the same text does (`serde_json::Value`'s own impl, arm by arm).
impl Serialize for StoredTree<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StoredTree::Null => serializer.serialize_unit(),
            StoredTree::Bool(flag) => serializer.serialize_bool(*flag),
            StoredTree::Number(number) => number.serialize(serializer),
            StoredTree::String(text) => serializer.serialize_str(text),
            StoredTree::Array(items) => {
                let mut sequence = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    sequence.serialize_element(item)?;
                }
                sequence.end()
            }
            StoredTree::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key.as_ref(), value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for StoredTree<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StoredTree<'de>, D::Error> {
        deserializer.deserialize_any(TreeVisitor)
    }
}

/// A map key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        deserializer
            .deserialize_str(TreeVisitor)
            .and_then(|tree| match tree {
                StoredTree::String(text) => Ok(Key(text)),
                _ => Err(serde::de::Error::custom("a map key that is not a string")),
            })
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = StoredTree<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, flag: bool) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::Bool(flag))
    }

    fn visit_i64<E>(self, number: i64) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::Number(number.into()))
    }

    fn visit_u64<E>(self, number: u64) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::Number(number.into()))
    }

    fn visit_f64<E>(self, number: f64) -> Result<StoredTree<'de>, E> {
        // As `Value`: a float JSON cannot hold is null (serde_json never parses one).
        Ok(Number::from_f64(number).map_or(StoredTree::Null, StoredTree::Number))
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::String(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::String(Cow::Owned(text.to_string())))
    }

    fn visit_string<E>(self, text: String) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::String(Cow::Owned(text)))
    }

    fn visit_unit<E>(self) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::Null)
    }

    fn visit_none<E>(self) -> Result<StoredTree<'de>, E> {
        Ok(StoredTree::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<StoredTree<'de>, A::Error> {
        let mut items = Vec::with_capacity(sequence.size_hint().unwrap_or(0));
        while let Some(item) = sequence.next_element()? {
            items.push(item);
        }
        Ok(StoredTree::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StoredTree<'de>, A::Error> {
        let mut entries: Vec<(Cow<'de, str>, StoredTree<'de>)> = Vec::new();
        while let Some((Key(key), value)) = map.next_entry::<Key<'de>, StoredTree<'de>>()? {
            entries.push((key, value));
        }
        keep_last_of_repeated_keys(&mut entries);
        Ok(StoredTree::Object(entries))
    }
}

/// What an order-preserving map does with a repeated key: the first place, the last value.
/// Stored resources have none (every writer emits a key once), so the check is the common case:
/// pairwise for the few keys a mapping usually has, through a sorted index for many.
fn keep_last_of_repeated_keys<'text>(entries: &mut Vec<(Cow<'text, str>, StoredTree<'text>)>) {
    const PAIRWISE_UP_TO: usize = 16;
    let repeated = if entries.len() <= PAIRWISE_UP_TO {
        entries
            .iter()
            .enumerate()
            .any(|(index, (key, _))| entries[..index].iter().any(|(other, _)| other == key))
    } else {
        let mut keys: Vec<&str> = entries.iter().map(|(key, _)| key.as_ref()).collect();
        keys.sort_unstable();
        keys.windows(2).any(|pair| pair[0] == pair[1])
    };
    if !repeated {
        return;
    }
    let mut kept: Vec<(Cow<'text, str>, StoredTree<'text>)> = Vec::with_capacity(entries.len());
    let mut places: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (key, value) in entries.drain(..) {
        match places.get(key.as_ref()) {
            Some(&place) => kept[place].1 = value,
            None => {
                places.insert(key.to_string(), kept.len());
                kept.push((key, value));
            }
        }
    }
    *entries = kept;
}
