//! The shape of a decode target, and the normalisation upstream's reader applies by it before the
//! JSON decode: scalars read where the type has a string become text, and field names match
//! case-insensitively when asked (encoding/json's rule, an exact match preferred).
//!
//! A shape is derived from the type's JSON Schema (schemars), which netctl already generates and
//! checks in for every resource kind, so the shape cannot drift from the types: a property of type
//! `string` (or a string enum) is a string target (a null there is the empty string, and a null
//! for a field of a struct is the field left out, as in Go); an `anyOf` of several types (number-or-string
//! values, which upstream decodes with their own `UnmarshalJSON`) is not. This module does not decode.

use std::borrow::Cow;
use std::collections::HashMap;

use schemars::JsonSchema;
use serde_json::{Map, Number, Value};

use super::node::{Node, NodeValue};
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
enum Shape {
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
    nodes: Vec<Shape>,
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
            nodes: vec![Shape::Any],
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
            nodes: vec![Shape::Any],
            by_reference: HashMap::new(),
        };
        let root = builder.node(schema);
        builder.nodes[ROOT] = root;
        Shapes {
            nodes: builder.nodes,
        }
    }

    /// Normalises `node` in place by this shape (see the module documentation): renames, nulls
    /// of known fields dropped, text where the type has a string, whole floats made integers.
    pub fn normalize(&self, node: &mut Node<'_>, names: FieldNames) -> Result<(), Problem> {
        self.walk(ROOT, node, names, None)
    }

    fn walk(
        &self,
        id: usize,
        node: &mut Node<'_>,
        names: FieldNames,
        path: Option<&PathLink<'_>>,
    ) -> Result<(), Problem> {
        match (&self.nodes[id], &mut node.value) {
            (Shape::Reference(target), _) => self.walk(*target, node, names, path),
            (Shape::Text, value @ (NodeValue::Bool(_) | NodeValue::Number(_))) => {
                *value = NodeValue::String(Cow::Owned(scalar_text(value)));
                Ok(())
            }
            (Shape::Text, value @ NodeValue::Null) => {
                // A null list item or map value read into a string is Go's zero value.
                *value = NodeValue::String(Cow::Borrowed(""));
                Ok(())
            }
            (Shape::Struct { fields, rest }, NodeValue::Mapping(entries)) => {
                rename_fields(entries, fields, names, path)?;
                // encoding/json leaves a field alone for a null (`spec: ~` is no spec), so a null
                // is the same as an absent field.
                entries.retain(|(key, value)| {
                    !(value.is_null() && fields.iter().any(|(name, _)| name == key))
                });
                for (key, item) in entries.iter_mut() {
                    let child = fields
                        .iter()
                        .find(|(name, _)| name == key)
                        .map(|(_, child)| *child)
                        .or(*rest);
                    let link = PathLink::key(path, key);
                    match child {
                        Some(child) => self.walk(child, item, names, Some(&link))?,
                        None => canonical_node_numbers(item),
                    }
                }
                Ok(())
            }
            (Shape::Map(child), NodeValue::Mapping(entries)) => {
                for (key, item) in entries.iter_mut() {
                    let link = PathLink::key(path, key);
                    self.walk(*child, item, names, Some(&link))?;
                }
                Ok(())
            }
            (Shape::Sequence(child), NodeValue::Sequence(items)) => {
                for (index, item) in items.iter_mut().enumerate() {
                    let link = PathLink::index(path, index);
                    self.walk(*child, item, names, Some(&link))?;
                }
                Ok(())
            }
            _ => {
                canonical_node_numbers(node);
                Ok(())
            }
        }
    }
}

/// Where a node is, as a chain of links on the stack: the path is written out only for a problem.
struct PathLink<'a> {
    parent: Option<&'a PathLink<'a>>,
    key: Option<&'a str>,
    index: usize,
}

impl<'a> PathLink<'a> {
    fn key(parent: Option<&'a PathLink<'a>>, key: &'a str) -> PathLink<'a> {
        PathLink {
            parent,
            key: Some(key),
            index: 0,
        }
    }

    fn index(parent: Option<&'a PathLink<'a>>, index: usize) -> PathLink<'a> {
        PathLink {
            parent,
            key: None,
            index,
        }
    }
}

/// `spec.ingress[0].ports`, from the links up to `link` and then `key`.
fn path_text(link: Option<&PathLink<'_>>, key: &str) -> String {
    fn write(link: Option<&PathLink<'_>>, path: &mut String) {
        let Some(link) = link else {
            return;
        };
        write(link.parent, path);
        match link.key {
            Some(key) => push_key(path, key),
            None => path.push_str(&format!("[{}]", link.index)),
        }
    }
    let mut path = String::new();
    write(link, &mut path);
    push_key(&mut path, key);
    path
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// The text sigs.k8s.io/yaml gives a boolean or number decoded into a string field.
fn scalar_text(value: &NodeValue<'_>) -> String {
    match value {
        NodeValue::Bool(flag) => flag.to_string(),
        NodeValue::Number(number) if number.is_f64() => {
            go_float_text(number.as_f64().unwrap_or_default())
        }
        NodeValue::Number(number) => number.to_string(),
        _ => String::new(),
    }
}

/// Renames keys that match a field only ignoring case to the field's name, and refuses two keys
/// that set the same field (upstream would keep one of them silently). Nothing is renamed when
/// two keys set one field.
fn rename_fields(
    entries: &mut [(Cow<'_, str>, Node<'_>)],
    fields: &[(String, usize)],
    names: FieldNames,
    path: Option<&PathLink<'_>>,
) -> Result<(), Problem> {
    if names == FieldNames::Exact {
        return Ok(());
    }
    let field_of = |key: &str| -> Option<&str> {
        if fields.iter().any(|(name, _)| name == key) {
            return None;
        }
        fields
            .iter()
            .find(|(name, _)| fold_equal(name, key))
            .map(|(name, _)| name.as_str())
    };
    if !entries.iter().any(|(key, _)| field_of(key).is_some()) {
        return Ok(());
    }
    // Each key's field, in order: the first key of a field keeps it, a later one is refused
    // (naming another key renamed to that field, or the field itself).
    for (position, (key, _)) in entries.iter().enumerate() {
        let field = field_of(key).unwrap_or(key);
        let taken = entries[..position]
            .iter()
            .any(|(other, _)| field_of(other).unwrap_or(other) == field);
        if taken {
            let first = entries
                .iter()
                .find(|(other, _)| other != key && field_of(other) == Some(field))
                .map_or_else(|| field.to_string(), |(other, _)| other.to_string());
            return Err(Problem {
                path: path_text(path, key),
                kind: YamlErrorKind::DuplicateField {
                    first,
                    second: key.to_string(),
                    field: field.to_string(),
                },
            });
        }
    }
    for (key, _) in entries.iter_mut() {
        if let Some(field) = field_of(key) {
            *key = Cow::Owned(field.to_string());
        }
    }
    Ok(())
}

/// Whole floats become integers, as Go's JSON encoder writes them (`1e3` is sent as `1000`), so a
/// YAML 1.1 float read where an integer field is expected decodes as upstream's does.
pub fn canonical_numbers(value: &mut Value) {
    match value {
        Value::Number(number) => canonical_number(number),
        Value::Array(items) => items.iter_mut().for_each(canonical_numbers),
        Value::Object(map) => map.values_mut().for_each(canonical_numbers),
        _ => {}
    }
}

/// [`canonical_numbers`] of a node.
fn canonical_node_numbers(node: &mut Node<'_>) {
    match &mut node.value {
        NodeValue::Number(number) => canonical_number(number),
        NodeValue::Sequence(items) => items.iter_mut().for_each(canonical_node_numbers),
        NodeValue::Mapping(entries) => entries
            .iter_mut()
            .for_each(|(_, item)| canonical_node_numbers(item)),
        _ => {}
    }
}

fn canonical_number(number: &mut Number) {
    if !number.is_f64() {
        return;
    }
    let float = number.as_f64().unwrap_or_default();
    if float.fract() == 0.0 {
        if float >= i64::MIN as f64 && float < i64::MAX as f64 {
            *number = Number::from(float as i64);
        } else if float >= 0.0 && float < u64::MAX as f64 {
            *number = Number::from(float as u64);
        }
    }
}

struct Builder<'a> {
    definitions: Option<&'a Map<String, Value>>,
    nodes: Vec<Shape>,
    by_reference: HashMap<String, usize>,
}

impl Builder<'_> {
    fn add(&mut self, node: Shape) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn node(&mut self, schema: &Value) -> Shape {
        let Some(object) = schema.as_object() else {
            return Shape::Any;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return Shape::Reference(self.reference(reference));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                let kept: Vec<&Value> = branches.iter().filter(|branch| !is_null(branch)).collect();
                if kept.len() == 1 {
                    return self.node(kept[0]);
                }
                if kept.iter().all(|branch| is_string_like(branch)) {
                    return Shape::Text;
                }
                return Shape::Any;
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
            return Shape::Text;
        }
        match single_type(object) {
            Some("object") => {
                let additional = object.get("additionalProperties");
                let rest = match additional {
                    Some(Value::Bool(false)) => None,
                    Some(Value::Bool(true)) | None => Some(self.add(Shape::Any)),
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
                        Shape::Struct { fields, rest }
                    }
                    None => match rest {
                        Some(rest) => Shape::Map(rest),
                        None => Shape::Any,
                    },
                }
            }
            Some("array") => {
                let item = object
                    .get("items")
                    .map_or(Shape::Any, |items| self.node(items));
                Shape::Sequence(self.add(item))
            }
            _ => Shape::Any,
        }
    }

    /// The node index of a `$defs` entry, built once (recursive definitions refer to the index
    /// reserved before their body is built).
    fn reference(&mut self, reference: &str) -> usize {
        if let Some(id) = self.by_reference.get(reference) {
            return *id;
        }
        let id = self.add(Shape::Any);
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
