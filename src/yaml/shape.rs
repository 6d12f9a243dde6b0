//! The shape of a decode target, and the normalisation upstream's reader applies by it before the
//! JSON decode: scalars read where the type has a string become text, and field names match
//! case-insensitively when asked (encoding/json's rule, an exact match preferred).
//!
//! A shape is derived from the type's JSON Schema (schemars), which netctl already generates and
//! checks in for every resource kind, so the shape cannot drift from the types: a property of type
//! `string` (or a string enum) is a string target (a null there is the empty string, and a null
//! for a field of a struct is the field left out, as in Go); an `anyOf` of several types (number-or-string
//! values, which upstream decodes with their own `UnmarshalJSON`) is not. This module does not decode.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde_json::{Map, Number, Value};

use super::resolve::go_float_text;
use super::{YamlErrorKind, fold_equal};

/// How field names in a document are matched against the type's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldNames {
    /// As written only (netctl's own formats: runbooks, the release catalog).
    Exact,
    /// encoding/json's rule, as upstream decodes resources and its configuration: an exact match
    /// is preferred, otherwise a match ignoring case (`spec.Order` sets `order`).
    FoldCase,
}

#[derive(Debug, Clone)]
enum Node {
    /// Anything: no normalisation below (numbers are still made canonical).
    Any,
    /// A string: booleans and numbers become their text.
    Text,
    /// Fields by name; `rest` is the shape of other keys when the type keeps them.
    Struct {
        fields: Vec<(String, usize)>,
        rest: Option<usize>,
    },
    Map(usize),
    Sequence(usize),
    /// A `$ref` to a shared (possibly recursive) definition.
    Reference(usize),
}

/// The shape of a decode target (an arena of nodes; recursive types refer back by index).
#[derive(Debug, Clone)]
pub struct Shapes {
    nodes: Vec<Node>,
}

const ROOT: usize = 0;

/// A normalisation problem: the path of the field and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub path: String,
    pub kind: YamlErrorKind,
}

impl Shapes {
    /// No shape: values are kept as read (numbers made canonical).
    pub fn any() -> Shapes {
        Shapes {
            nodes: vec![Node::Any],
        }
    }

    /// The shape of `T` from its JSON Schema.
    pub fn of<T: JsonSchema>() -> Shapes {
        Shapes::from_schema(&schemars::schema_for!(T).to_value())
    }

    /// The shape a JSON Schema describes (`$ref`s into its `$defs` are followed).
    pub fn from_schema(schema: &Value) -> Shapes {
        let mut builder = Builder {
            definitions: schema.get("$defs").and_then(Value::as_object),
            nodes: vec![Node::Any],
            by_reference: HashMap::new(),
        };
        let root = builder.node(schema);
        builder.nodes[ROOT] = root;
        Shapes {
            nodes: builder.nodes,
        }
    }

    /// Normalises `value` in place by this shape (see the module documentation).
    pub fn normalize(&self, value: &mut Value, names: FieldNames) -> Result<(), Problem> {
        let mut path = String::new();
        self.walk(ROOT, value, names, &mut path)
    }

    fn walk(
        &self,
        id: usize,
        value: &mut Value,
        names: FieldNames,
        path: &mut String,
    ) -> Result<(), Problem> {
        match (&self.nodes[id], value) {
            (Node::Reference(target), value) => self.walk(*target, value, names, path),
            (Node::Text, value @ (Value::Bool(_) | Value::Number(_))) => {
                *value = Value::String(scalar_text(value));
                Ok(())
            }
            (Node::Text, value @ Value::Null) => {
                // A null list item or map value read into a string is Go's zero value.
                *value = Value::String(String::new());
                Ok(())
            }
            (Node::Struct { fields, rest }, Value::Object(map)) => {
                rename_fields(map, fields, names, path)?;
                // encoding/json leaves a field alone for a null (`spec: ~` is no spec), so a null
                // is the same as an absent field.
                map.retain(|key, value| {
                    !(value.is_null() && fields.iter().any(|(name, _)| name == key))
                });
                for (key, item) in map.iter_mut() {
                    let child = fields
                        .iter()
                        .find(|(name, _)| name == key)
                        .map(|(_, child)| *child)
                        .or(*rest);
                    let length = path.len();
                    push_key(path, key);
                    match child {
                        Some(child) => self.walk(child, item, names, path)?,
                        None => canonical_numbers(item),
                    }
                    path.truncate(length);
                }
                Ok(())
            }
            (Node::Map(child), Value::Object(map)) => {
                for (key, item) in map.iter_mut() {
                    let length = path.len();
                    push_key(path, key);
                    self.walk(*child, item, names, path)?;
                    path.truncate(length);
                }
                Ok(())
            }
            (Node::Sequence(child), Value::Array(items)) => {
                for (index, item) in items.iter_mut().enumerate() {
                    let length = path.len();
                    path.push_str(&format!("[{index}]"));
                    self.walk(*child, item, names, path)?;
                    path.truncate(length);
                }
                Ok(())
            }
            (_, value) => {
                canonical_numbers(value);
                Ok(())
            }
        }
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// The text sigs.k8s.io/yaml gives a boolean or number decoded into a string field.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) if number.is_f64() => {
            go_float_text(number.as_f64().unwrap_or_default())
        }
        Value::Number(number) => number.to_string(),
        other => other.to_string(),
    }
}

/// Renames keys that match a field only ignoring case to the field's name, and refuses two keys
/// that set the same field (upstream would keep one of them silently).
fn rename_fields(
    map: &mut Map<String, Value>,
    fields: &[(String, usize)],
    names: FieldNames,
    path: &str,
) -> Result<(), Problem> {
    if names == FieldNames::Exact {
        return Ok(());
    }
    let renames: Vec<(String, String)> = map
        .keys()
        .filter(|key| !fields.iter().any(|(name, _)| name == *key))
        .filter_map(|key| {
            fields
                .iter()
                .find(|(name, _)| fold_equal(name, key))
                .map(|(name, _)| (key.clone(), name.clone()))
        })
        .collect();
    if renames.is_empty() {
        return Ok(());
    }
    let old = std::mem::take(map);
    for (key, value) in old {
        let field = renames
            .iter()
            .find(|(from, _)| *from == key)
            .map(|(_, to)| to.clone())
            .unwrap_or_else(|| key.clone());
        if map.contains_key(&field) {
            let first = renames
                .iter()
                .find(|(from, to)| *to == field && *from != key)
                .map(|(from, _)| from.clone())
                .unwrap_or_else(|| field.clone());
            let mut at = path.to_string();
            push_key(&mut at, &key);
            return Err(Problem {
                path: at,
                kind: YamlErrorKind::DuplicateField {
                    first,
                    second: key,
                    field,
                },
            });
        }
        map.insert(field, value);
    }
    Ok(())
}

/// Whole floats become integers, as Go's JSON encoder writes them (`1e3` is sent as `1000`), so a
/// YAML 1.1 float read where an integer field is expected decodes as upstream's does.
pub fn canonical_numbers(value: &mut Value) {
    match value {
        Value::Number(number) if number.is_f64() => {
            let float = number.as_f64().unwrap_or_default();
            if float.fract() == 0.0 {
                if float >= i64::MIN as f64 && float < i64::MAX as f64 {
                    *number = Number::from(float as i64);
                } else if float >= 0.0 && float < u64::MAX as f64 {
                    *number = Number::from(float as u64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonical_numbers),
        Value::Object(map) => map.values_mut().for_each(canonical_numbers),
        _ => {}
    }
}

struct Builder<'a> {
    definitions: Option<&'a Map<String, Value>>,
    nodes: Vec<Node>,
    by_reference: HashMap<String, usize>,
}

impl Builder<'_> {
    fn add(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn node(&mut self, schema: &Value) -> Node {
        let Some(object) = schema.as_object() else {
            return Node::Any;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return Node::Reference(self.reference(reference));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                let kept: Vec<&Value> = branches.iter().filter(|branch| !is_null(branch)).collect();
                if kept.len() == 1 {
                    return self.node(kept[0]);
                }
                if kept.iter().all(|branch| is_string_like(branch)) {
                    return Node::Text;
                }
                return Node::Any;
            }
        }
        if let Some([single]) = object
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            return self.node(single);
        }
        if is_string_like(schema) {
            return Node::Text;
        }
        match single_type(object) {
            Some("object") => {
                let additional = object.get("additionalProperties");
                let rest = match additional {
                    Some(Value::Bool(false)) => None,
                    Some(Value::Bool(true)) | None => Some(self.add(Node::Any)),
                    Some(schema) => {
                        let node = self.node(schema);
                        Some(self.add(node))
                    }
                };
                match object.get("properties").and_then(Value::as_object) {
                    Some(properties) => {
                        let fields = properties
                            .iter()
                            .map(|(name, schema)| {
                                let node = self.node(schema);
                                (name.clone(), self.add(node))
                            })
                            .collect();
                        Node::Struct { fields, rest }
                    }
                    None => match rest {
                        Some(rest) => Node::Map(rest),
                        None => Node::Any,
                    },
                }
            }
            Some("array") => {
                let item = object
                    .get("items")
                    .map_or(Node::Any, |items| self.node(items));
                Node::Sequence(self.add(item))
            }
            _ => Node::Any,
        }
    }

    /// The node index of a `$defs` entry, built once (recursive definitions refer to the index
    /// reserved before their body is built).
    fn reference(&mut self, reference: &str) -> usize {
        if let Some(id) = self.by_reference.get(reference) {
            return *id;
        }
        let id = self.add(Node::Any);
        self.by_reference.insert(reference.to_string(), id);
        let definition = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| self.definitions?.get(name));
        if let Some(definition) = definition {
            let node = self.node(definition);
            self.nodes[id] = node;
        }
        id
    }
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

fn single_type(object: &Map<String, Value>) -> Option<&str> {
    match object.get("type")? {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => {
            let kept: Vec<&str> = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|kind| *kind != "null")
                .collect();
            match kept.as_slice() {
                [single] => Some(single),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A string type, a string constant, or an enum of strings: Go's string kinds. A string with
/// `format: duration` is Go's `metav1.Duration`, which decodes itself (a number is refused, not
/// turned into text).
fn is_string_like(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        return false;
    };
    if object.get("format").and_then(Value::as_str) == Some("duration") {
        return false;
    }
    if single_type(object) == Some("string") {
        return true;
    }
    if let Some(constant) = object.get("const") {
        return constant.is_string();
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .all(|value| value.is_string() || value.is_null());
    }
    false
}
