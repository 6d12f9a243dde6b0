//! Templating: minijinja over each string value of a parsed runbook, never over the raw file.
//!
//! Rendering happens after YAML parsing, per string, so a rendered value can never inject YAML
//! structure. A string that is exactly one `{{ expression }}` evaluates to the expression's value
//! (a list stays a list, `true` stays a boolean); any other string renders to a string. Undefined
//! variables are errors (strict mode). `require(value, message)` fails the render when a value is
//! empty, for facts a runbook cannot do without; `release_at_least(version, minimum)` compares two
//! releases (`v3.32.1`, `v3.32`) as semver does, for what a release line first publishes. This
//! module knows nothing of actions or plans.

use minijinja::value::{Serde, Value};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};

/// Why a template failed; `template` is the string as written in the runbook. A `require` that
/// refuses is the runbook's own words to the operator: said as they are, without the template
/// (which is for the runbook's author, and stays in the value).
#[derive(Debug, thiserror::Error)]
#[error("{}", match .required {
    true => .message.clone(),
    false => format!("template `{}` failed: {}", .template, .message),
})]
pub struct TemplateError {
    pub template: String,
    pub message: String,
    /// The message is a `require`'s.
    pub required: bool,
}

/// The source a `require` that refuses gives its error, so that its message is told apart.
#[derive(Debug, thiserror::Error)]
#[error("required")]
struct Required;

fn template_error(template: &str, error: &minijinja::Error) -> TemplateError {
    let required = std::error::Error::source(error).is_some_and(|source| source.is::<Required>());
    let message = match (required, error.detail()) {
        (true, Some(detail)) => detail.to_string(),
        (false, Some(detail)) => format!("{}: {detail}", error.kind()),
        (_, None) => error.kind().to_string(),
    };
    TemplateError {
        template: template.to_string(),
        message,
        required,
    }
}

/// The functions netctl adds to the templates (lint knows them as names that are not variables).
pub const FUNCTIONS: &[&str] = &["require", "release_at_least"];

/// The template engine with netctl's settings.
pub struct Templates {
    environment: Environment<'static>,
}

impl Default for Templates {
    fn default() -> Self {
        Templates::new()
    }
}

impl Templates {
    pub fn new() -> Templates {
        let mut environment = Environment::new();
        environment.set_undefined_behavior(UndefinedBehavior::Strict);
        environment.add_function("require", require);
        environment.add_function("release_at_least", release_at_least);
        Templates { environment }
    }

    /// Renders one value: strings are templates, maps and lists are walked, others are kept.
    pub fn render_value(
        &self,
        value: &serde_json::Value,
        context: &Value,
    ) -> Result<serde_json::Value, TemplateError> {
        match value {
            serde_json::Value::String(text) => self.render_string(text, context),
            serde_json::Value::Array(items) => items
                .iter()
                .map(|item| self.render_value(item, context))
                .collect::<Result<Vec<_>, _>>()
                .map(serde_json::Value::Array),
            serde_json::Value::Object(map) => {
                let mut rendered = serde_json::Map::new();
                for (key, item) in map {
                    rendered.insert(key.clone(), self.render_value(item, context)?);
                }
                Ok(serde_json::Value::Object(rendered))
            }
            other => Ok(other.clone()),
        }
    }

    /// Renders one string; a lone `{{ expression }}` keeps the expression's type.
    pub fn render_string(
        &self,
        text: &str,
        context: &Value,
    ) -> Result<serde_json::Value, TemplateError> {
        if !text.contains("{{") && !text.contains("{%") && !text.contains("{#") {
            return Ok(serde_json::Value::String(text.to_string()));
        }
        if let Some(expression) = single_expression(text) {
            let value = self
                .evaluate(expression, context)
                .map_err(|error| TemplateError {
                    template: text.to_string(),
                    ..error
                })?;
            return serde_json::to_value(&value).map_err(|error| TemplateError {
                template: text.to_string(),
                message: format!("value cannot be represented as data: {error}"),
                required: false,
            });
        }
        self.environment
            .render_str(text, context.clone())
            .map(serde_json::Value::String)
            .map_err(|error| template_error(text, &error))
    }

    /// Evaluates an expression (`when:` conditions, `foreach:` lists).
    pub fn evaluate(&self, expression: &str, context: &Value) -> Result<Value, TemplateError> {
        let compiled = self
            .environment
            .compile_expression(expression)
            .map_err(|error| template_error(expression, &error))?;
        let value = compiled
            .eval(context.clone())
            .map_err(|error| template_error(expression, &error))?;
        if value.is_undefined() {
            return Err(TemplateError {
                template: expression.to_string(),
                message: "undefined value".to_string(),
                required: false,
            });
        }
        Ok(value)
    }

    /// Evaluates a condition to true or false.
    pub fn condition(&self, expression: &str, context: &Value) -> Result<bool, TemplateError> {
        Ok(self.evaluate(expression, context)?.is_true())
    }

    /// The variables a template string or expression reads, as dotted paths (`facts.alp_enabled`),
    /// without rendering it. Syntax errors are returned.
    pub fn variables(&self, text: &str, is_expression: bool) -> Result<Vec<String>, TemplateError> {
        let variables = if is_expression {
            self.environment
                .compile_expression(text)
                .map_err(|error| template_error(text, &error))?
                .undeclared_variables(true)
        } else {
            self.environment
                .template_from_str(text)
                .map_err(|error| template_error(text, &error))?
                .undeclared_variables(true)
        };
        let mut variables: Vec<String> = variables.into_iter().collect();
        variables.sort();
        Ok(variables)
    }
}

/// Builds a template context from any serialisable value.
pub fn context_from<T: serde::Serialize>(value: &T) -> Value {
    Value::from(Serde(value))
}

/// `{{ expr }}` with nothing around it, and no second `{{` inside.
fn single_expression(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    if inner.contains("{{") || inner.contains("}}") {
        return None;
    }
    Some(inner.trim())
}

/// `require(value, message)`: the value, unless it is undefined, none or empty.
fn require(value: Value, message: String) -> Result<Value, minijinja::Error> {
    let empty = value.is_undefined()
        || value.is_none()
        || value.len() == Some(0)
        || value.as_str() == Some("");
    if empty {
        Err(minijinja::Error::new(ErrorKind::InvalidOperation, message).with_source(Required))
    } else {
        Ok(value)
    }
}

/// `release_at_least(version, minimum)`: whether release `version` is `minimum` or newer (`v3.32`
/// stands for `v3.32.0`); a text that is not a release fails the render.
fn release_at_least(version: String, minimum: String) -> Result<bool, minijinja::Error> {
    let parse = |text: &str| {
        text.parse::<crate::release::Release>().map_err(|error| {
            minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("release_at_least: `{text}` is not a release: {error}"),
            )
        })
    };
    Ok(parse(&version)? >= parse(&minimum)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Value {
        context_from(&serde_json::json!({
            "release_tag": "v3.29.2",
            "facts": {"heps": ["a", "b"], "alp_enabled": false, "mesh_version": ""},
        }))
    }

    #[test]
    fn strings_render_and_lone_expressions_keep_their_type() {
        let templates = Templates::new();
        let rendered = templates
            .render_value(
                &serde_json::json!({"url": "x/{{ release_tag }}/y", "items": "{{ facts.heps }}", "n": 3}),
                &context(),
            )
            .unwrap();
        assert_eq!(
            rendered,
            serde_json::json!({"url": "x/v3.29.2/y", "items": ["a", "b"], "n": 3})
        );
    }

    #[test]
    fn a_value_cannot_inject_structure() {
        let templates = Templates::new();
        let context = context_from(&serde_json::json!({"name": "x\nkind: Evil"}));
        let rendered = templates
            .render_value(&serde_json::json!({"name": "n-{{ name }}"}), &context)
            .unwrap();
        assert_eq!(rendered, serde_json::json!({"name": "n-x\nkind: Evil"}));
    }

    #[test]
    fn undefined_variables_are_errors() {
        let templates = Templates::new();
        let error = templates
            .render_string("{{ facts.colour }}", &context())
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("template `{{ facts.colour }}` failed: undefined value"),
            "{error}"
        );
        assert!(
            templates
                .render_string("a {{ nothing }}", &context())
                .is_err()
        );
        assert!(
            templates
                .condition("facts.colour == 1", &context())
                .is_err()
        );
    }

    #[test]
    fn require_refuses_empty_values() {
        let templates = Templates::new();
        let error = templates
            .render_string(
                "{{ require(facts.mesh_version, 'set mesh_version') }}",
                &context(),
            )
            .unwrap_err();
        // The runbook's words to the operator, without the template around them.
        assert_eq!(error.to_string(), "set mesh_version");
        assert!(error.required);
        let error = templates
            .render_string("{{ facts.nothing.deeper }}", &context())
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("template `{{ facts.nothing.deeper }}` failed: ")
        );
    }

    #[test]
    fn releases_compare_as_semver_and_a_non_release_fails_the_render() {
        let templates = Templates::new();
        let at_least = |version: &str, minimum: &str| {
            templates.render_string(
                &format!("{{{{ release_at_least('{version}', '{minimum}') }}}}"),
                &context(),
            )
        };
        for (version, minimum, expected) in [
            ("v3.32.1", "v3.32", true),
            ("v3.32.0", "v3.32", true),
            ("v3.31.4", "v3.32", false),
            // Not as text: `v3.9` is older than `v3.32`.
            ("v3.9.0", "v3.32", false),
            ("v3.100.0", "v3.32", true),
        ] {
            assert_eq!(
                at_least(version, minimum).unwrap(),
                serde_json::json!(expected),
                "{version} >= {minimum}"
            );
        }
        let error = at_least("latest", "v3.32").unwrap_err();
        assert!(
            error.to_string().contains("`latest` is not a release"),
            "{error}"
        );
    }

    #[test]
    fn variables_are_listed_without_rendering() {
        let templates = Templates::new();
        assert_eq!(
            templates
                .variables("{{ facts.alp_enabled }}-{{ item }}", false)
                .unwrap(),
            vec!["facts.alp_enabled".to_string(), "item".to_string()]
        );
        assert_eq!(
            templates
                .variables("facts.heps | length > 0", true)
                .unwrap(),
            vec!["facts.heps".to_string()]
        );
    }
}
