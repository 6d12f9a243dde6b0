//! Typed decoding straight from a read document: a serde `Deserializer` over a [`Node`] (normalised
//! by its target's shape first, `shape.rs`) that behaves as `serde_json::Value`'s does — the same
//! visits, and serde_json's errors with the same messages — so a document decodes into its type as
//! if it had been turned into a JSON value first, without building that value.
//!
//! Paths of failing fields come from `serde_path_to_error`, asked only once a decode has failed
//! (tracking them costs an allocation per key).

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use serde_json::Error;

use super::node::{Node, NodeValue};

/// Decodes `node` into `T`; on failure, the path of the field (`spec.ingress[0].action`, empty for
/// the node itself) and serde's reason.
pub fn decode_node<T: DeserializeOwned>(node: &Node<'_>) -> Result<T, (String, String)> {
    match T::deserialize(node) {
        Ok(decoded) => Ok(decoded),
        // Again, tracking the path this time: the same node fails the same way.
        Err(_) => match serde_path_to_error::deserialize::<_, T>(node) {
            Ok(decoded) => Ok(decoded),
            Err(error) => {
                let path = error.path().to_string();
                let path = if path == "." { String::new() } else { path };
                Err((path, error.inner().to_string()))
            }
        },
    }
}

impl Node<'_> {
    fn unexpected(&self) -> Unexpected<'_> {
        match &self.value {
            NodeValue::Null => Unexpected::Unit,
            NodeValue::Bool(flag) => Unexpected::Bool(*flag),
            NodeValue::Number(number) => match (number.as_u64(), number.as_i64()) {
                (Some(unsigned), _) => Unexpected::Unsigned(unsigned),
                (None, Some(signed)) => Unexpected::Signed(signed),
                (None, None) => Unexpected::Float(number.as_f64().unwrap_or_default()),
            },
            NodeValue::String(text) => Unexpected::Str(text),
            NodeValue::Sequence(_) => Unexpected::Seq,
            NodeValue::Mapping(_) => Unexpected::Map,
        }
    }

    fn invalid_type<E: de::Error>(&self, expected: &dyn de::Expected) -> E {
        E::invalid_type(self.unexpected(), expected)
    }
}

fn visit_sequence<'a, V: Visitor<'a>>(
    items: &'a [Node<'_>],
    visitor: V,
) -> Result<V::Value, Error> {
    let mut access = Items {
        items: items.iter(),
    };
    let sequence = visitor.visit_seq(&mut access)?;
    if access.items.len() == 0 {
        Ok(sequence)
    } else {
        Err(de::Error::invalid_length(
            items.len(),
            &"fewer elements in array",
        ))
    }
}

fn visit_mapping<'a, 'text, V: Visitor<'a>>(
    entries: &'a [(std::borrow::Cow<'text, str>, Node<'text>)],
    visitor: V,
) -> Result<V::Value, Error> {
    let mut access = Entries {
        entries: entries.iter(),
        value: None,
    };
    let mapping = visitor.visit_map(&mut access)?;
    if access.entries.len() == 0 {
        Ok(mapping)
    } else {
        Err(de::Error::invalid_length(
            entries.len(),
            &"fewer elements in map",
        ))
    }
}

macro_rules! numbers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
            match &self.value {
                NodeValue::Number(number) => de::Deserializer::deserialize_any(number, visitor),
                _ => Err(self.invalid_type(&visitor)),
            }
        }
    )*};
}

impl<'a, 'text> de::Deserializer<'a> for &'a Node<'text> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.value {
            NodeValue::Null => visitor.visit_unit(),
            NodeValue::Bool(flag) => visitor.visit_bool(*flag),
            NodeValue::Number(number) => de::Deserializer::deserialize_any(number, visitor),
            NodeValue::String(text) => visitor.visit_borrowed_str(text),
            NodeValue::Sequence(items) => visit_sequence(items, visitor),
            NodeValue::Mapping(entries) => visit_mapping(entries, visitor),
        }
    }

    numbers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            NodeValue::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let (variant, value) = match &self.value {
            NodeValue::Mapping(entries) => match entries.as_slice() {
                [(variant, value)] => (variant.as_ref(), Some(value)),
                _ => {
                    return Err(de::Error::invalid_value(
                        Unexpected::Map,
                        &"map with a single key",
                    ));
                }
            },
            NodeValue::String(variant) => (variant.as_ref(), None),
            _ => return Err(self.invalid_type(&"string or map")),
        };
        visitor.visit_enum(Variant { variant, value })
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            NodeValue::Bool(flag) => visitor.visit_bool(flag),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.value {
            NodeValue::String(text) => visitor.visit_borrowed_str(text),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.value {
            NodeValue::String(text) => visitor.visit_borrowed_str(text),
            NodeValue::Sequence(items) => visit_sequence(items, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            NodeValue::Null => visitor.visit_unit(),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.value {
            NodeValue::Sequence(items) => visit_sequence(items, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.value {
            NodeValue::Mapping(entries) => visit_mapping(entries, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match &self.value {
            NodeValue::Sequence(items) => visit_sequence(items, visitor),
            NodeValue::Mapping(entries) => visit_mapping(entries, visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

/// The items of a sequence, one at a time.
struct Items<'a, 'text> {
    items: std::slice::Iter<'a, Node<'text>>,
}

impl<'a> SeqAccess<'a> for Items<'a, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'a>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.items.next() {
            Some(item) => seed.deserialize(item).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of a mapping, one at a time.
struct Entries<'a, 'text> {
    entries: std::slice::Iter<'a, (std::borrow::Cow<'text, str>, Node<'text>)>,
    value: Option<&'a Node<'text>>,
}

impl<'a> MapAccess<'a> for Entries<'a, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(Key(key.as_ref())).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A mapping's key: text, or a number where the target wants one (as serde_json's keys, which are
/// parsed as JSON numbers).
struct Key<'de>(&'de str);

/// What serde_json says of a key that is not a number where one is wanted.
const NUMERIC_KEY: &str = "invalid value: expected key to be a number in quotes";

macro_rules! numeric_keys {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if !matches!(self.0.as_bytes().first(), Some(b'0'..=b'9' | b'-')) {
                return Err(de::Error::custom(NUMERIC_KEY));
            }
            let mut number = serde_json::Deserializer::from_str(self.0);
            let value = de::Deserializer::$method(&mut number, visitor)?;
            number.end().map_err(|_| de::Error::custom(NUMERIC_KEY))?;
            Ok(value)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Key<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    numeric_keys! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(de::Error::invalid_type(Unexpected::Str(self.0), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::value::BorrowedStrDeserializer::<Error>::new(self.0)
            .deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// An enum written as its variant's name, or as a mapping of that name to its content.
struct Variant<'a, 'text> {
    variant: &'a str,
    value: Option<&'a Node<'text>>,
}

impl<'a, 'text> EnumAccess<'a> for Variant<'a, 'text> {
    type Error = Error;
    type Variant = Content<'a, 'text>;

    fn variant_seed<V: DeserializeSeed<'a>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Error> {
        let variant = de::value::BorrowedStrDeserializer::<'a, Error>::new(self.variant);
        seed.deserialize(variant)
            .map(|variant| (variant, Content(self.value)))
    }
}

/// The content of an enum's variant, if written.
struct Content<'a, 'text>(Option<&'a Node<'text>>);

impl<'a> VariantAccess<'a> for Content<'a, '_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            Some(value) => de::Deserialize::deserialize(value),
            None => Ok(()),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, seed: T) -> Result<T::Value, Error> {
        match self.0 {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.0.map(|value| (value, &value.value)) {
            Some((_, NodeValue::Sequence(items))) if items.is_empty() => visitor.visit_unit(),
            Some((_, NodeValue::Sequence(items))) => visit_sequence(items, visitor),
            Some((value, _)) => Err(value.invalid_type(&"tuple variant")),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0.map(|value| (value, &value.value)) {
            Some((_, NodeValue::Mapping(entries))) => visit_mapping(entries, visitor),
            Some((value, _)) => Err(value.invalid_type(&"struct variant")),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    /// The same JSON decoded through a `Value` and through a node gives the same result, and the
    /// same error where it fails.
    fn both<T: DeserializeOwned + std::fmt::Debug + PartialEq>(json: &str) {
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        let node = Node::from_value(value.clone());
        let through_value: Result<T, String> =
            serde_json::from_value(value).map_err(|error| error.to_string());
        let through_node: Result<T, String> =
            T::deserialize(&node).map_err(|error| error.to_string());
        assert_eq!(through_node, through_value, "{json}");
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Spec {
        name: String,
        #[serde(default)]
        ports: Vec<u16>,
        #[serde(default)]
        ratio: Option<f64>,
        #[serde(default)]
        mode: Option<Mode>,
        #[serde(default)]
        either: Option<Either>,
        #[serde(default)]
        labels: std::collections::BTreeMap<String, String>,
        #[serde(default)]
        counts: std::collections::BTreeMap<u8, bool>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Mode {
        Plain,
        Weighted(u8),
        Pair(u8, u8),
        Named { weight: u8 },
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(i64),
        Text(String),
    }

    #[test]
    fn a_node_decodes_as_the_json_value_it_stands_for() {
        for json in [
            r#"{"name": "a", "ports": [1, 2], "ratio": 1.5, "labels": {"x": "y"}}"#,
            r#"{"name": "a", "mode": "Plain", "either": 5, "counts": {"3": true}}"#,
            r#"{"name": "a", "mode": {"Weighted": 3}, "either": "five"}"#,
            r#"{"name": "a", "mode": {"Pair": [1, 2]}}"#,
            r#"{"name": "a", "mode": {"Named": {"weight": 1}}}"#,
            r#"{"name": "a", "ratio": null, "mode": null}"#,
            r#"{"name": 5}"#,
            r#"{"name": "a", "ports": [70000]}"#,
            r#"{"name": "a", "ports": [-1]}"#,
            r#"{"name": "a", "ports": [1.5]}"#,
            r#"{"name": "a", "ports": "80"}"#,
            r#"{"name": "a", "prots": []}"#,
            r#"{"ports": []}"#,
            r#"{"name": "a", "mode": {"Plain": null, "Pair": [1, 2]}}"#,
            r#"{"name": "a", "mode": ["Plain"]}"#,
            r#"{"name": "a", "mode": "Weighted"}"#,
            r#"{"name": "a", "either": true}"#,
            r#"{"name": "a", "counts": {"x": true}}"#,
            r#"[1, 2]"#,
            r#"null"#,
        ] {
            both::<Spec>(json);
        }
        both::<Vec<serde_json::Value>>(r#"[1, -2, 3.5, "x", null, true, {"a": [1]}]"#);
        both::<(u8, String)>(r#"[1, "a", 3]"#);
    }

    #[test]
    fn a_failing_field_is_named_by_its_path() {
        let node = Node::from_value(serde_json::json!({"name": "a", "ports": [1, "x"]}));
        let (path, reason) = decode_node::<Spec>(&node).unwrap_err();
        assert_eq!(path, "ports[1]");
        assert_eq!(reason, "invalid type: string \"x\", expected u16");
    }
}
