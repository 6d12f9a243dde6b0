//! The arguments of `helm` and `exec` — run a program with exactly the argv the plan shows — with
//! their checks, their one-line descriptions (the command line, secrets redacted) and the one rule
//! for the secrets a plan keeps of them (`redaction.rs`).
//!
//! Running them is `exec/actions/process.rs`'s; this file only says what is asked.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Action, Arguments, HumanDuration};
use crate::redaction::{REDACTED, command_line, redact_argv, redact_env, secret_in_argv};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Helm {
    /// Arguments after `helm`, exactly.
    pub args: Vec<String>,
    #[serde(default = "default_command_timeout")]
    pub timeout: HumanDuration,
    /// Before running, record the release's deployed revision (`helm history RELEASE --namespace
    /// NS --max 1 -o json`) as `revision_before` in the step's output: what `helm rollback` goes back
    /// to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_revision: Option<HelmRelease>,
    /// In an `undo:`: append the `revision_before` of this registered output to `args` (the
    /// rollback plan does, from the run it goes back from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_from: Option<String>,
}

/// A Helm release by name and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelmRelease {
    pub release: String,
    pub namespace: String,
}

impl HelmRelease {
    /// `helm history` of the release, newest revision only, as JSON.
    pub fn history_argv(&self) -> Vec<String> {
        [
            "helm",
            "history",
            &self.release,
            "--namespace",
            &self.namespace,
            "--max",
            "1",
            "-o",
            "json",
        ]
        .map(str::to_string)
        .to_vec()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exec {
    /// The argv; the first element is the program.
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default = "default_command_timeout")]
    pub timeout: HumanDuration,
}

fn default_command_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(60))
}

impl Helm {
    /// The program's argv: `helm` and the arguments.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once("helm".to_string())
            .chain(self.args.iter().cloned())
            .collect()
    }
}

impl Arguments for Helm {
    fn describe(&self, _: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = command_line(&self.argv(), &BTreeMap::new());
        write!(out, "{line} (timeout {})", self.timeout)?;
        if let Some(release) = &self.record_revision {
            write!(
                out,
                ", recording the revision of release `{}` in `{}` first",
                release.release, release.namespace
            )?;
        }
        if let Some(output) = &self.revision_from {
            write!(out, ", to the revision recorded as `{output}`")?;
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        match self.args.is_empty() {
            true => Err("`args` must not be empty".to_string()),
            false => Ok(()),
        }
    }

    fn may_add_types(&self) -> bool {
        true
    }

    fn may_roll_workloads(&self) -> bool {
        true
    }
}

impl Arguments for Exec {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = command_line(&self.command, &self.env);
        write!(out, "{name} {line} (timeout {})", self.timeout)
    }

    fn check(&self) -> Result<(), String> {
        match self.command.is_empty() {
            true => Err("`command` must name a program".to_string()),
            false => Ok(()),
        }
    }

    fn may_roll_workloads(&self) -> bool {
        true
    }
}

impl Action {
    /// Replaces the secrets of a program's command line and environment by the one rule
    /// (`redaction.rs`): what a plan keeps, shows and stores holds none.
    pub fn redact_secrets(&mut self) {
        match self {
            Action::Exec(exec) => {
                exec.command = redact_argv(&exec.command);
                exec.env = redact_env(&exec.env);
            }
            Action::Helm(helm) => helm.args = redact_argv(&helm.args),
            _ => {}
        }
    }

    /// The option of a program's command line that carries a secret (`--password`, `token=`).
    pub fn secret_on_command_line(&self) -> Option<String> {
        match self {
            Action::Exec(exec) => secret_in_argv(&exec.command),
            Action::Helm(helm) => secret_in_argv(&helm.args),
            _ => None,
        }
    }

    /// The environment variables a program takes from netctl's own environment: those whose
    /// values the plan does not keep.
    pub fn inherited_secrets(&self) -> impl Iterator<Item = &str> {
        let env = match self {
            Action::Exec(exec) => Some(&exec.env),
            _ => None,
        };
        env.into_iter()
            .flatten()
            .filter(|(_, value)| *value == REDACTED)
            .map(|(name, _)| name.as_str())
    }
}
