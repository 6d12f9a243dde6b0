//! Label selectors: the expression language policies, pools and peers use to pick endpoints and
//! nodes, e.g. `role == "db" && !has(quarantine)`.
//!
//! [`Selector`] is a validated newtype: holding one means the text parsed. It evaluates against a set of
//! labels ([`Selector::matches`]), prints in upstream's canonical form (`Display`, used for comparisons
//! and in messages) and reports where `global()` appears, which the policy validator needs. The grammar,
//! meaning and canonical form follow upstream (`libcalico-go/lib/selector/`:
//! `tokenizer/tokenizer.go`, `parser/parser.go`, `parser/ast.go`); the tokenizer and parser live in
//! submodules. This module does not decide where a selector may be used; validators do.

use crate::errors::Hint;

mod kubectl;
mod parser;
mod tokenizer;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use kubectl::kubectl_equivalent;
pub use parser::MAX_NESTING;
pub use tokenizer::MAX_LABEL_LENGTH;

/// A parsed, valid label selector.
///
/// Two selectors are equal when their canonical forms are, so `a=="b"` equals `a == "b"`. The text the
/// user wrote is kept and is what serialises, so reading and writing a resource never rewrites its
/// selectors.
#[derive(Debug, Clone)]
pub struct Selector {
    expression: Expression,
    source: String,
}

impl Selector {
    /// Parses selector text. The empty (or blank) selector is `all()`.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        match parser::parse(text) {
            Ok(expression) => Ok(Selector {
                expression,
                source: text.to_string(),
            }),
            Err(error) => Err(SelectorError {
                selector: text.to_string(),
                column: text[..error.offset].chars().count(),
                kind: error.kind,
            }),
        }
    }

    /// The selector that matches everything.
    pub fn all() -> Selector {
        Selector {
            expression: Expression::All,
            source: String::new(),
        }
    }

    /// The text as written (which may differ from the canonical form `to_string()` gives).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The parsed expression, for callers that need to walk it.
    pub fn expression(&self) -> &Expression {
        &self.expression
    }

    /// Whether the selector matches a resource with these labels.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.expression.evaluate(labels)
    }

    /// Like [`Selector::matches`], for any source of labels (for example one that falls back to
    /// inherited labels).
    pub fn matches_labels<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        self.expression.evaluate(labels)
    }

    /// Whether `global()` appears anywhere in the selector.
    pub fn uses_global(&self) -> bool {
        self.global_usage() != GlobalUsage::Absent
    }

    /// How `global()` is used; upstream allows it only alone, and only in an EntityRule
    /// `namespaceSelector` (`libcalico-go/lib/validator/v3/validator.go`).
    pub fn global_usage(&self) -> GlobalUsage {
        if self.expression == Expression::Global {
            GlobalUsage::Alone
        } else if self.expression.contains_global() {
            GlobalUsage::Combined
        } else {
            GlobalUsage::Absent
        }
    }
}

/// Where `global()` appears in a selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalUsage {
    /// Not at all.
    Absent,
    /// The whole selector is `global()` (possibly in parentheses).
    Alone,
    /// Together with something else: under `&&`, `||` or `!`. Upstream rejects this everywhere (it
    /// compares the text with `global()`), so a negation counts as combined too.
    Combined,
}

impl Default for Selector {
    fn default() -> Selector {
        Selector::all()
    }
}

impl PartialEq for Selector {
    fn eq(&self, other: &Selector) -> bool {
        self.expression == other.expression
    }
}

impl Eq for Selector {}

impl std::hash::Hash for Selector {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.expression.hash(state);
    }
}

impl FromStr for Selector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Selector, SelectorError> {
        Selector::parse(text)
    }
}

/// The canonical form (upstream's `String()` in `libcalico-go/lib/selector/parser/ast.go`).
impl fmt::Display for Selector {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expression.fmt(formatter)
    }
}

impl Serialize for Selector {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

impl<'de> Deserialize<'de> for Selector {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Selector, D::Error> {
        let text = String::deserialize(deserializer)?;
        Selector::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Something a selector can look labels up in.
pub trait Labels {
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// A selector expression tree, normalised as the parser produces it (see `parser.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expression {
    /// `all()`: matches everything.
    All,
    /// `global()`: matches everything; meaningful only in an EntityRule `namespaceSelector`.
    Global,
    /// `has(label)`.
    Has(String),
    /// `label == "value"`: present and equal.
    Equals { label: String, value: String },
    /// `label != "value"`: absent or different.
    NotEquals { label: String, value: String },
    /// `label contains "value"`: present and containing the value.
    Contains { label: String, value: String },
    /// `label starts with "value"`: present with that prefix.
    StartsWith { label: String, value: String },
    /// `label ends with "value"`: present with that suffix.
    EndsWith { label: String, value: String },
    /// `label in {...}`: present and one of the values.
    In {
        label: String,
        values: BTreeSet<String>,
    },
    /// `label not in {...}`: absent or none of the values.
    NotIn {
        label: String,
        values: BTreeSet<String>,
    },
    /// `!operation`.
    Not(Box<Expression>),
    /// Two or more operands joined by `&&`.
    And(Vec<Expression>),
    /// Two or more operands joined by `||`.
    Or(Vec<Expression>),
}

impl Expression {
    /// The negation of this expression; negating a negation gives back the original.
    pub fn negated(self) -> Expression {
        match self {
            Expression::Not(inner) => *inner,
            other => Expression::Not(Box::new(other)),
        }
    }

    /// Evaluates the expression against a set of labels
    /// (`libcalico-go/lib/selector/parser/ast.go`).
    pub fn evaluate<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        match self {
            Expression::All | Expression::Global => true,
            Expression::Has(label) => labels.label(label).is_some(),
            Expression::Equals { label, value } => labels.label(label) == Some(value.as_str()),
            Expression::NotEquals { label, value } => labels.label(label) != Some(value.as_str()),
            Expression::Contains { label, value } => labels
                .label(label)
                .is_some_and(|found| found.contains(value.as_str())),
            Expression::StartsWith { label, value } => labels
                .label(label)
                .is_some_and(|found| found.starts_with(value.as_str())),
            Expression::EndsWith { label, value } => labels
                .label(label)
                .is_some_and(|found| found.ends_with(value.as_str())),
            Expression::In { label, values } => labels
                .label(label)
                .is_some_and(|found| values.contains(found)),
            Expression::NotIn { label, values } => labels
                .label(label)
                .is_none_or(|found| !values.contains(found)),
            Expression::Not(inner) => !inner.evaluate(labels),
            Expression::And(operands) => operands.iter().all(|operand| operand.evaluate(labels)),
            Expression::Or(operands) => operands.iter().any(|operand| operand.evaluate(labels)),
        }
    }

    fn contains_global(&self) -> bool {
        match self {
            Expression::Global => true,
            Expression::Not(inner) => inner.contains_global(),
            Expression::And(operands) | Expression::Or(operands) => {
                operands.iter().any(Expression::contains_global)
            }
            _ => false,
        }
    }
}

/// Upstream's canonical form: single spaces around binary operators, every `&&`/`||` group in
/// parentheses, `!` without a space, strings in double quotes unless they contain one, sets sorted.
impl fmt::Display for Expression {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let comparison = |formatter: &mut fmt::Formatter<'_>, label: &str, operator, value| {
            write!(formatter, "{label} {operator} {}", quote(value))
        };
        match self {
            Expression::All => formatter.write_str("all()"),
            Expression::Global => formatter.write_str("global()"),
            Expression::Has(label) => write!(formatter, "has({label})"),
            Expression::Equals { label, value } => comparison(formatter, label, "==", value),
            Expression::NotEquals { label, value } => comparison(formatter, label, "!=", value),
            Expression::Contains { label, value } => {
                comparison(formatter, label, "contains", value)
            }
            Expression::StartsWith { label, value } => {
                comparison(formatter, label, "starts with", value)
            }
            Expression::EndsWith { label, value } => {
                comparison(formatter, label, "ends with", value)
            }
            Expression::In { label, values } => write_set(formatter, label, "in", values),
            Expression::NotIn { label, values } => write_set(formatter, label, "not in", values),
            Expression::Not(inner) => write!(formatter, "!{inner}"),
            Expression::And(operands) => write_group(formatter, operands, " && "),
            Expression::Or(operands) => write_group(formatter, operands, " || "),
        }
    }
}

fn write_set(
    formatter: &mut fmt::Formatter<'_>,
    label: &str,
    operator: &str,
    values: &BTreeSet<String>,
) -> fmt::Result {
    write!(formatter, "{label} {operator} {{")?;
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            formatter.write_str(", ")?;
        }
        formatter.write_str(&quote(value))?;
    }
    formatter.write_str("}")
}

fn write_group(
    formatter: &mut fmt::Formatter<'_>,
    operands: &[Expression],
    separator: &str,
) -> fmt::Result {
    formatter.write_str("(")?;
    for (index, operand) in operands.iter().enumerate() {
        if index > 0 {
            formatter.write_str(separator)?;
        }
        write!(formatter, "{operand}")?;
    }
    formatter.write_str(")")
}

/// A string literal as the canonical form writes it. Literals have no escapes, so a value holding a
/// double quote goes in single quotes (a parsed value never holds both kinds).
fn quote(value: &str) -> String {
    if value.contains('"') {
        format!("'{value}'")
    } else {
        format!("\"{value}\"")
    }
}

/// Selector text that does not parse, with the 0-based column (in characters) of the mistake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid selector `{selector}`: {kind} at column {column}")]
pub struct SelectorError {
    selector: String,
    column: usize,
    kind: SelectorErrorKind,
}

impl SelectorError {
    /// The text that failed to parse.
    pub fn selector(&self) -> &str {
        &self.selector
    }

    /// 0-based column of the mistake, counted in characters.
    pub fn column(&self) -> usize {
        self.column
    }

    /// What was wrong.
    pub fn kind(&self) -> &SelectorErrorKind {
        &self.kind
    }

    /// The selector line holding the mistake with a caret under it, each line indented two spaces:
    ///
    /// ```text
    ///   a == "b" && %
    ///               ^
    /// ```
    ///
    /// Tabs before the column are repeated in the caret line so the caret lines up in a terminal.
    pub fn caret_diagram(&self) -> String {
        let mut line_start = 0;
        let mut column_in_line = self.column;
        for (index, character) in self.selector.chars().enumerate().take(self.column) {
            if character == '\n' {
                line_start = index + 1;
                column_in_line = self.column - line_start;
            }
        }
        let line: String = self
            .selector
            .chars()
            .skip(line_start)
            .take_while(|character| *character != '\n')
            .collect();
        let padding: String = line
            .chars()
            .take(column_in_line)
            .map(|character| if character == '\t' { '\t' } else { ' ' })
            .chain(std::iter::repeat_n(
                ' ',
                column_in_line.saturating_sub(line.chars().count()),
            ))
            .collect();
        format!("  {line}\n  {padding}^")
    }

    /// The message followed by the caret diagram, for printing to a terminal.
    pub fn render_with_caret(&self) -> String {
        format!("{self}\n{}", self.caret_diagram())
    }
}

impl Hint for SelectorError {
    /// The selector a kubectl user meant, when the text reads as kubectl's `key=value,...` form.
    fn hint(&self) -> Option<String> {
        let suggestion = kubectl_equivalent(&self.selector)?;
        Some(format!(
            "selectors compare with `==` and quote values: did you mean `{suggestion}`?"
        ))
    }
}

/// The ways selector text can be wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorErrorKind {
    #[error("unexpected characters")]
    UnexpectedCharacters,
    #[error("expected `==`")]
    ExpectedDoubleEquals,
    #[error("expected `&&`")]
    ExpectedDoubleAmpersand,
    #[error("expected `||`")]
    ExpectedDoublePipe,
    #[error("unterminated string")]
    UnterminatedString,
    #[error("label is longer than {MAX_LABEL_LENGTH} characters")]
    LabelTooLong,
    #[error("expected `{expected}`")]
    MalformedFunction { expected: &'static str },
    #[error(
        "expected an operator (`==`, `!=`, `in`, `not in`, `contains`, `starts with`, `ends with`) after label `{label}`"
    )]
    ExpectedOperator { label: String },
    #[error("expected a quoted string, found {found}")]
    ExpectedString { found: String },
    #[error("expected a set literal such as `{{\"a\", \"b\"}}`, found {found}")]
    ExpectedSetLiteral { found: String },
    #[error("expected `}}`, found {found}")]
    ExpectedClosingBrace { found: String },
    #[error("expected `)`, found {found}")]
    ExpectedClosingParenthesis { found: String },
    #[error("expected a label, `has(..)`, `all()`, `global()`, `!` or `(`, found {found}")]
    ExpectedOperation { found: String },
    #[error("expected `&&`, `||` or the end of the selector, found {found}")]
    ExpectedConjunction { found: String },
    #[error("parentheses nest deeper than {limit} levels")]
    TooDeep { limit: usize },
}
