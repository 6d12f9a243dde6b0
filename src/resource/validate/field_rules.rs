//! The rules written on the spec types themselves, read from each kind's JSON Schema: a string
//! field's allowed values (`#[schemars(extend("enum" = [...]))]` beside the field) and the fields
//! that hold Go durations (`format: duration`). Validation and the schemas editors get
//! (`netctl schema KIND`, `schemas/`) so come from one place.
//!
//! An allowed value `""` means upstream takes an empty string for unset (`omitempty`): it passes,
//! and messages do not list it. Which release has a value is `resource::availability`'s business
//! (`x-netctl-values`). This module decides nothing about a document by itself.

use serde_json::{Map, Value};

use crate::resource::Kind;
use crate::resource::kind::PerKind;
use crate::resource::spec::schema::document_schema_of;

/// The rules of one kind's spec, by field path (`spec.floatingIPs`; list items and map values as
/// `[]`: `spec.failsafeInboundHostPorts[].protocol`), in the order the spec declares its fields.
#[derive(Debug, Default)]
pub(crate) struct FieldRules {
    allowed: Vec<(String, Vec<String>)>,
    durations: Vec<String>,
}

impl FieldRules {
    /// The values a field allows, as its schema lists them, if it lists any.
    pub(crate) fn allowed(&self, path: &str) -> Option<&[String]> {
        let pattern = pattern_of(path);
        self.allowed
            .iter()
            .find(|(known, _)| *known == pattern)
            .map(|(_, values)| values.as_slice())
    }

    /// The spec's own fields (not nested ones) that list allowed values, in declaration order:
    /// `(field name, path)`.
    pub(crate) fn top_level_allowed(&self) -> impl Iterator<Item = (&str, &str)> {
        top_level(self.allowed.iter().map(|(path, _)| path.as_str()))
    }

    /// The spec's own fields that hold durations, in declaration order: `(field name, path)`.
    pub(crate) fn top_level_durations(&self) -> impl Iterator<Item = (&str, &str)> {
        top_level(self.durations.iter().map(String::as_str))
    }
}

fn top_level<'a>(paths: impl Iterator<Item = &'a str>) -> impl Iterator<Item = (&'a str, &'a str)> {
    paths.filter_map(|path| {
        let field = path.strip_prefix("spec.")?;
        (!field.contains(['.', '['])).then_some((field, path))
    })
}

/// `spec.ports[2].protocol` → `spec.ports[].protocol`.
fn pattern_of(path: &str) -> String {
    let mut pattern = String::with_capacity(path.len());
    let mut inside = false;
    for character in path.chars() {
        match character {
            '[' => {
                inside = true;
                pattern.push_str("[]");
            }
            ']' => inside = false,
            _ if inside => {}
            other => pattern.push(other),
        }
    }
    pattern
}

/// The rules of `kind`, read from its schema once.
pub(crate) fn field_rules(kind: Kind) -> &'static FieldRules {
    static RULES: PerKind<FieldRules> = PerKind::new();
    RULES.get(kind, |kind| {
        let schema = document_schema_of(kind);
        let mut collector = Collector {
            definitions: schema.get("$defs").and_then(Value::as_object),
            rules: FieldRules::default(),
            references: Vec::new(),
        };
        if let Some(spec) = schema.pointer("/properties/spec") {
            collector.walk(spec, &mut "spec".to_string());
        }
        collector.rules
    })
}

struct Collector<'a> {
    definitions: Option<&'a Map<String, Value>>,
    rules: FieldRules,
    /// The `$ref`s being walked, so that a recursive type is walked once.
    references: Vec<&'a str>,
}

impl<'a> Collector<'a> {
    fn walk(&mut self, schema: &'a Value, path: &mut String) {
        let Some(object) = schema.as_object() else {
            return;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            if self.references.contains(&reference) {
                return;
            }
            let target = reference
                .strip_prefix("#/$defs/")
                .and_then(|name| self.definitions?.get(name));
            if let Some(target) = target {
                self.references.push(reference);
                self.walk(target, path);
                self.references.pop();
            }
            return;
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            for branch in object
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.walk(branch, path);
            }
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            let values: Vec<String> = values
                .iter()
                .filter_map(|value| value.as_str().map(str::to_string))
                .collect();
            if !values.is_empty() {
                self.rules.allowed.push((path.clone(), values));
            }
        }
        if object.get("format").and_then(Value::as_str) == Some("duration") {
            self.rules.durations.push(path.clone());
        }
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                let length = path.len();
                path.push('.');
                path.push_str(name);
                self.walk(property, path);
                path.truncate(length);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = object.get(key).filter(|inner| inner.is_object()) {
                let length = path.len();
                path.push_str("[]");
                self.walk(inner, path);
                path.truncate(length);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_list_items_and_map_values_alike() {
        assert_eq!(
            pattern_of("spec.ports[2].protocol"),
            "spec.ports[].protocol"
        );
        assert_eq!(pattern_of("spec.a[x.y][0]"), "spec.a[][]");
    }

    #[test]
    fn felix_configuration_lists_its_allowed_values_and_durations_beside_its_fields() {
        let rules = field_rules(Kind::FelixConfiguration);
        assert_eq!(
            rules.allowed("spec.iptablesBackend").unwrap(),
            ["", "Legacy", "NFT", "Auto"]
        );
        assert_eq!(
            rules
                .allowed("spec.failsafeInboundHostPorts[3].protocol")
                .unwrap(),
            ["TCP", "UDP", "SCTP"]
        );
        let durations: Vec<&str> = rules
            .top_level_durations()
            .map(|(field, _)| field)
            .collect();
        assert!(durations.contains(&"reportingInterval"), "{durations:?}");
        assert!(!durations.contains(&"healthTimeoutOverrides"));
        assert!(rules.allowed("spec.logFilePath").is_none());
    }
}
