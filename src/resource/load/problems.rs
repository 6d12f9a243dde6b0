//! The loader's problems as the bounded lister lists them (`crate::listing`): the headline of
//! [`LoadError::Problems`], and what each problem counts as when it is not shown — an invalid
//! resource as the mistakes of its fields, anything else as its message.

use super::LoadError;
use crate::listing::{self, Limit, Listed, Problem, ProblemKind};

impl Listed for LoadError {
    fn listed(&self, limit: &Limit) -> Option<String> {
        let LoadError::Problems(problems) = self else {
            return None;
        };
        let noun = match problems.len() {
            1 => "problem",
            _ => "problems",
        };
        let headline = format!(
            "found {} {noun} in the input:",
            listing::thousands(problems.len())
        );
        Some(listing::render(&headline, problems, limit))
    }
}

/// A problem of the input counts as its fields' mistakes (an invalid resource) or its message.
impl Problem for LoadError {
    fn entry(&self) -> String {
        self.to_string()
    }

    fn kinds(&self) -> Vec<ProblemKind> {
        match self {
            LoadError::Invalid { error, .. } => error
                .errors
                .iter()
                .map(|field| ProblemKind::field(&field.path, &field.reason))
                .collect(),
            LoadError::Document { reason, .. } => vec![ProblemKind::message(reason)],
            LoadError::Read { path, source } => vec![ProblemKind::message(&format!(
                "cannot read `{}`: {source}",
                path.display()
            ))],
            LoadError::StandardInputAsPath | LoadError::Empty => {
                vec![ProblemKind::message(&self.to_string())]
            }
            LoadError::Problems(problems) => problems.iter().flat_map(Problem::kinds).collect(),
        }
    }
}
