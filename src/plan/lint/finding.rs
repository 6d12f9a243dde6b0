//! One lint finding: `file:line:col: severity[code]: message`, the form `netctl runbook lint`
//! prints and editors understand.

use std::fmt;

use crate::listing::{Problem, ProblemKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub severity: Severity,
    /// A stable short name, e.g. `undefined-variable`.
    pub code: &'static str,
    pub message: String,
}

/// A finding as the bounded lister lists it: its line, counted by severity and check.
impl Problem for Finding {
    fn entry(&self) -> String {
        self.to_string()
    }

    fn kinds(&self) -> Vec<ProblemKind> {
        vec![ProblemKind::named(&format!(
            "{}[{}]",
            self.severity, self.code
        ))]
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}[{}]: {}",
            self.file, self.line, self.column, self.severity, self.code, self.message
        )
    }
}
