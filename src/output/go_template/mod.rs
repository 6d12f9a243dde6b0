//! Go's `text/template` for `get -o go-template=TEMPLATE` and `-o go-template-file=FILE`, run as
//! kubectl runs it: over the JSON document `-o json` prints (one object, or the List of a listing),
//! decoded as kubectl decodes it (integers `int64`, other numbers `float64`), with missing keys
//! printing `<no value>` (kubectl's default `--allow-missing-template-keys`) and kubectl's
//! `exists` and `base64decode` functions beside Go's. calicoctl's `join` and `joinAndTruncate`
//! are there too; calicoctl ran templates over its Go types (`.ObjectMeta.Name`, the root a list
//! of objects), which a JSON document does not have, so such templates are written with the JSON
//! names (`.metadata.name`), as for kubectl.
//!
//! No crate was good enough: `gtmpl` (0.7, passively maintained) prints maps and lists in Rust's
//! debug form, ranges over maps unsorted, lacks `slice`, `break` and `continue`, compares with
//! `eq` only two operands and fails on `len` of a map and on fields of missing values — each of
//! which changes what a kubectl template prints. This module follows Go's `text/template`
//! (`lex.rs`, `parse.rs`, `exec.rs`) and `fmt` (`printf.rs`, `value.rs`); its tests compare
//! against what kubectl printed for the same object and template.

mod exec;
mod lex;
mod parse;
mod printf;
mod value;

use serde_json::Value;

/// The template's name in messages, as kubectl names it.
const NAME: &str = "output";

/// A template that cannot be parsed or executed; the text follows Go's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("template: {name}:{line}: {message}")]
    Parse {
        name: String,
        line: usize,
        message: String,
    },
    #[error("template: {name}:{line}: executing \"{name}\" at <{at}>: {message}")]
    Exec {
        name: String,
        line: usize,
        at: String,
        message: String,
    },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct GoTemplate {
    tree: parse::Tree,
}

impl GoTemplate {
    /// Parses `text` (every function it calls must exist).
    pub fn parse(text: &str) -> Result<GoTemplate, TemplateError> {
        let tokens = lex::lex(NAME, text)?;
        let tree = parse::parse(NAME, tokens, exec::FUNCTIONS)?;
        Ok(GoTemplate { tree })
    }

    /// The text the template makes of `data`.
    pub fn render(&self, data: &Value) -> Result<String, TemplateError> {
        let mut execution = exec::Exec::new(&self.tree, NAME, data);
        execution.run(data)?;
        Ok(execution.out)
    }
}

#[cfg(test)]
mod tests;
