//! `check`: assert a fact, e.g. that the installed version is the target after the upgrade.
//!
//! Facts are the plan's, with every fact that discovery can read re-read at the start of the run (the
//! executor does that), so a check sees the cluster as it is, not as it was when the plan was made.
//! A check changes nothing, so dry-run evaluates it too.

use super::{Context, Held, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::Facts;
use crate::plan::action::Check;

/// Why a check did not pass.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("unknown fact `{fact}`")]
    UnknownFact { fact: String },
    #[error("check failed: fact `{fact}` is `{actual}`, expected `{expected}`")]
    NotEqual {
        fact: String,
        actual: String,
        expected: String,
    },
    #[error("check failed: fact `{fact}` is `{actual}`, which does not match `{pattern}`")]
    NoMatch {
        fact: String,
        actual: String,
        pattern: String,
    },
    #[error("invalid pattern `{pattern}`")]
    Pattern {
        pattern: String,
        #[source]
        source: regex::Error,
    },
}

fn text_of(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A check changes nothing, so a dry-run evaluates it too; as a postcondition, it holds when the
/// fact has the value (another failure, an unknown fact, is an error).
impl Perform for Check {
    async fn perform(&self, _: &Action, context: &Context<'_>, _: RunMode) -> Performed {
        Ok(evaluate(self, context.facts)?)
    }

    async fn holds(&self, _: &Action, context: &Context<'_>) -> Held {
        match evaluate(self, context.facts) {
            Ok(_) => Ok(true),
            Err(CheckError::NotEqual { .. } | CheckError::NoMatch { .. }) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

/// Evaluates a check; `Ok` when it holds.
pub fn evaluate(check: &Check, facts: &Facts) -> Result<Outcome, CheckError> {
    let values = facts.values();
    let actual = values
        .get(&check.fact)
        .ok_or_else(|| CheckError::UnknownFact {
            fact: check.fact.clone(),
        })?;
    if let Some(expected) = &check.equals {
        // `v3.29.2` written as a string equals the release fact, which serialises as that string.
        if actual != expected && text_of(actual) != text_of(expected) {
            return Err(CheckError::NotEqual {
                fact: check.fact.clone(),
                actual: text_of(actual),
                expected: text_of(expected),
            });
        }
        return Ok(Outcome::line(format!(
            "fact `{}` is `{}` as expected",
            check.fact,
            text_of(actual)
        )));
    }
    let pattern = check.matches.clone().unwrap_or_default();
    let regex = regex::Regex::new(&pattern).map_err(|source| CheckError::Pattern {
        pattern: pattern.clone(),
        source,
    })?;
    let actual = text_of(actual);
    if !regex.is_match(&actual) {
        return Err(CheckError::NoMatch {
            fact: check.fact.clone(),
            actual,
            pattern,
        });
    }
    Ok(Outcome::line(format!(
        "fact `{}` is `{actual}`, which matches `{pattern}`",
        check.fact
    )))
}
