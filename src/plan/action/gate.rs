//! The arguments of `check` (assert a fact about the cluster) and `pause` (a human gate), with
//! their checks and one-line descriptions: the two actions that decide whether a run goes on.
//!
//! Evaluating a check and asking at a gate are `exec/actions/check.rs`'s and `pause.rs`'s.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Arguments;
use crate::plan::facts::FACT_NAMES;

/// Assert a fact: its value equals `equals`, or its text matches the regex `matches`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub fact: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pause {
    pub message: String,
}

impl Arguments for Check {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.equals, &self.matches) {
            (Some(value), _) => write!(out, "{name} {} == {value}", self.fact),
            (None, Some(pattern)) => write!(
                out,
                "{name} {} =~ {}",
                self.fact,
                crate::redaction::shell_quote(pattern)
            ),
            (None, None) => write!(out, "{name} {}", self.fact),
        }
    }

    fn check(&self) -> Result<(), String> {
        if !FACT_NAMES.contains(&self.fact.as_str()) {
            return Err(format!(
                "unknown fact `{}`; known facts are {}",
                self.fact,
                FACT_NAMES.join(", ")
            ));
        }
        match (&self.equals, &self.matches) {
            (Some(_), None) => Ok(()),
            (None, Some(pattern)) => regex::Regex::new(pattern)
                .map(|_| ())
                .map_err(|error| format!("`matches` is not a valid regex: {error}")),
            _ => Err("give exactly one of `equals` and `matches`".to_string()),
        }
    }
}

impl Arguments for Pause {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} \"{}\"", self.message)
    }
}
