//! Runbook files (format v1): their types, loading from the embedded set or a directory, and where
//! errors are in the file.
//!
//! A runbook is a reviewed YAML file (`apiVersion: netctl.projectcalico.org/v1`, `kind: Runbook`) that
//! names the versions it applies to, a phase and a list of steps. The Rust types here are the format:
//! unknown fields are refused and `schemas/runbook.schema.json` is generated from them. Values stay
//! templated strings until [`template`] renders them per value; turning a rendered step into a typed
//! [`Action`](crate::plan::Action) is the planner's job. This module does not decide which runbooks
//! apply (see `plan::resolve`) and performs no action.

pub mod embedded;

pub mod template;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::DatastoreType;
use crate::errors::Hint;
use crate::vocabulary::{InstallMethod, Phase, RUNBOOK_ACTIONS, RetryPolicy};

/// The `apiVersion` of runbook and catalog files.
pub const RUNBOOK_API_VERSION: &str = "netctl.projectcalico.org/v1";

/// The file that holds the release catalog inside a runbook directory.
pub const CATALOG_FILE: &str = "releases.yaml";

/// The procedure every upgrade plan runs unless another is named.
pub const UPGRADE_PROCEDURE: &str = "upgrade";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RunbookApiVersion {
    #[serde(rename = "netctl.projectcalico.org/v1")]
    V1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RunbookKind {
    Runbook,
}

/// One runbook file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "netctl runbook (v1)")]
pub struct Runbook {
    pub api_version: RunbookApiVersion,
    pub kind: RunbookKind,
    pub metadata: RunbookMetadata,
    pub spec: RunbookSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunbookMetadata {
    /// Unique among runbooks; step ids in plans are `<name>/<step id>`.
    #[schemars(regex(pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"))]
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunbookSpec {
    /// The procedure this runbook belongs to; `upgrade` unless named (e.g. `auto-host-endpoints`).
    #[serde(default = "default_procedure")]
    pub procedure: String,
    /// When the runbook is part of a plan at all.
    #[serde(default)]
    pub applies_to: AppliesTo,
    /// A minijinja expression over `facts`, `params` and the release context; the runbook is skipped
    /// when it is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    pub phase: Phase,
    /// Named parameters with defaults, available to templates as `params.<name>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Parameter>,
    pub steps: Vec<Step>,
}

fn default_procedure() -> String {
    UPGRADE_PROCEDURE.to_string()
}

/// Version, datastore and install-method requirements; every one given must hold.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppliesTo {
    /// A named version edge of the release catalog (`releases.yaml`), e.g. `helm-ownership`: the
    /// installed version is on the old side and the target on the new side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    /// A semver requirement on the installed version, e.g. `<3.14.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// A semver requirement on the target version, e.g. `>=3.14.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Install methods this runbook is for; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_methods: Vec<InstallMethod>,
    /// Datastore types this runbook is for; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datastore_types: Vec<DatastoreType>,
    /// Why the runbook is limited so, in one sentence: a procedure other than `upgrade` whose
    /// runbooks all fall outside their requirements is refused, and the refusal quotes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Parameter {
    /// Any YAML value; strings in it are templates too.
    pub default: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One step. Every string below `with`, `foreach` and `verify.with` is a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// Unique in the runbook.
    #[schemars(regex(pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"))]
    pub id: String,
    pub description: String,
    /// Steps that must finish first: `<id>` in this runbook or `<runbook>/<id>` in another. A
    /// dependency on a step or runbook that is not in the plan is satisfied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// The action name, e.g. `resource.label` (see `docs/runbooks.md`).
    #[schemars(schema_with = "action_name_schema")]
    pub action: String,
    /// The action's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<serde_json::Map<String, serde_json::Value>>,
    /// Repeat the step for each item of a list (`{{ facts.all_interfaces_host_endpoints }}`); the item
    /// is `item` in templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreach: Option<String>,
    /// With `foreach`: one item at a time, in the list's order. A later step of the same runbook
    /// that `needs` this one and repeats over the same list (the same `foreach` text) goes with it
    /// item by item: its item n needs only item n of this step, and item n+1 of this step waits for
    /// item n of it (restart A, wait for A, restart B, wait for B).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub serial: bool,
    /// A minijinja expression; the step is skipped when it is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Keep the step's output under this name in the run's journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register: Option<String>,
    /// A postcondition, re-checked when a run resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// A point of no return; it must come after a `pause` step (a human gate).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub irreversible: bool,
    /// What must hold before the step runs; checked by the pre-flight and again when the step
    /// starts, never assumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<Requirement>,
    /// What to do if the operator regrets the change, before and after this step runs (templates).
    /// Required on irreversible steps (lint `irreversible-without-rollback`); shown in the plan and
    /// at the step's gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackAdvice>,
    /// The step's way back, which `netctl upgrade rollback` runs (see [`Undo`]). A step that writes
    /// and has none, or is `irreversible`, stops a rollback that would go past it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<Undo>,
    /// This step opens or closes a span the run must not be cut inside (`{opens: NAME}`,
    /// `{closes: NAME}`), e.g. a datastore lock … unlock: a maintenance window counts the span as
    /// one piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<crate::vocabulary::SpanEdge>,
}

/// How to go back, in words for the operator: `before` the step (everything up to here can still be
/// undone, and how) and `after` it (what is left once the point of no return is passed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollbackAdvice {
    pub before: String,
    pub after: String,
}

/// A step's way back: an action (templates, rendered with the step's), or `fromBackup: true` — the
/// datastore kinds the step writes put back as the run's backup (taken before its first write)
/// holds them, by `datastore.restore`. Exactly one of the two (lint `undo-shape`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Undo {
    /// What going back does, shown in the rollback plan (a template).
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_action_name_schema")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_backup: bool,
}

fn optional_action_name_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    action_name_schema(generator)
}

/// A step's precondition on the cluster (a template, rendered into the plan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Requirement {
    /// Every node agent (calico-node) runs this version, e.g. `{{ release_tag }}`: upstream's
    /// caution for automatic host endpoints, which cut off traffic to nodes whose agents are older.
    pub node_agents: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Verify {
    #[schemars(schema_with = "action_name_schema")]
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Action names as a schema enum, so editors complete and check them. The field stays a string in
/// Rust: an unknown name is a lint finding with its line, not a parse failure of the whole file.
fn action_name_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": RUNBOOK_ACTIONS,
    })
}

/// A runbook with where it came from and its position in the set (for stable ordering).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedRunbook {
    /// File name as shown in messages, e.g. `runbooks/helm-upgrade.yaml` or `<embedded>/helm-upgrade.yaml`.
    pub source: String,
    pub text: String,
    pub runbook: Runbook,
}

impl LoadedRunbook {
    /// The 1-based line of `id: <step>` in the file, for lint messages (0 when not found).
    pub fn line_of_step(&self, step: &str) -> usize {
        line_of(&self.text, |line| {
            let trimmed = line.trim_start().trim_start_matches("- ").trim();
            trimmed == format!("id: {step}")
                || trimmed == format!("id: \"{step}\"")
                || trimmed == format!("id: '{step}'")
        })
    }

    /// The 1-based line of the first line that starts (after indentation) with `key:`.
    pub fn line_of_key(&self, key: &str) -> usize {
        let prefix = format!("{key}:");
        line_of(&self.text, |line| line.trim_start().starts_with(&prefix))
    }
}

fn line_of(text: &str, predicate: impl Fn(&str) -> bool) -> usize {
    text.lines()
        .position(predicate)
        .map(|index| index + 1)
        .unwrap_or(0)
}

/// Runbooks, the files beside them (e.g. `allow-all-upgrade.yaml`) and the release catalog text.
#[derive(Debug, Clone, Default)]
pub struct RunbookSet {
    /// In file-name order; plans break ties by this order.
    pub runbooks: Vec<LoadedRunbook>,
    /// Other files by name, for `file:` arguments.
    pub files: BTreeMap<String, String>,
    /// Where the set came from, for messages.
    pub origin: String,
}

/// Where a file failed to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Why runbooks could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RunbookError {
    #[error("{location}: invalid runbook: {message}")]
    Invalid {
        location: SourceLocation,
        message: String,
    },
    #[error("cannot read `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("runbook `{name}` is defined twice: in `{first}` and `{second}`")]
    DuplicateName {
        name: String,
        first: String,
        second: String,
    },
    #[error("`{path}` holds no runbooks")]
    Empty { path: PathBuf },
}

impl Hint for RunbookError {
    fn hint(&self) -> Option<String> {
        match self {
            RunbookError::Empty { .. } => Some(format!(
                "runbook files end in `.yaml` and start with `apiVersion: {RUNBOOK_API_VERSION}`"
            )),
            _ => None,
        }
    }
}

/// Whether a YAML text declares itself a runbook (`kind: Runbook` at the top level), so other YAML
/// files beside runbooks are assets. The `apiVersion` is left to parsing, which names a wrong one.
pub fn looks_like_runbook(text: &str) -> bool {
    text.lines().any(|line| line.trim_end() == "kind: Runbook")
}

/// Parses one runbook file; errors carry `file:line:col`.
pub fn parse_runbook(source: &str, text: &str) -> Result<LoadedRunbook, RunbookError> {
    static SHAPES: std::sync::LazyLock<crate::yaml::Shapes> =
        std::sync::LazyLock::new(crate::yaml::Shapes::of::<Runbook>);
    let runbook: Runbook =
        crate::yaml::from_str_shaped(text, &SHAPES, crate::yaml::FieldNames::Exact).map_err(
            |error| RunbookError::Invalid {
                location: SourceLocation {
                    file: source.to_string(),
                    line: error.line,
                    column: error.column,
                },
                message: error.reason(),
            },
        )?;
    Ok(LoadedRunbook {
        source: source.to_string(),
        text: text.to_string(),
        runbook,
    })
}

impl RunbookSet {
    /// The runbooks built into the binary.
    pub fn embedded() -> Result<RunbookSet, RunbookError> {
        let files = embedded::FILES
            .iter()
            .map(|(name, text)| (name.to_string(), text.to_string()));
        RunbookSet::from_files("<embedded>", files)
    }

    /// Every `*.yaml` file of a directory (not recursive): runbooks, the catalog and asset files.
    pub fn from_directory(directory: &Path) -> Result<RunbookSet, RunbookError> {
        let read_error = |source| RunbookError::Read {
            path: directory.to_path_buf(),
            source,
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(directory).map_err(read_error)? {
            let entry = entry.map_err(read_error)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".yaml") || name.ends_with(".yml") {
                names.push(name);
            }
        }
        names.sort();
        let mut files = Vec::new();
        for name in names {
            let path = directory.join(&name);
            let text = std::fs::read_to_string(&path)
                .map_err(|source| RunbookError::Read { path, source })?;
            files.push((name, text));
        }
        let set = RunbookSet::from_files(&directory.display().to_string(), files)?;
        if set.runbooks.is_empty() {
            return Err(RunbookError::Empty {
                path: directory.to_path_buf(),
            });
        }
        Ok(set)
    }

    /// Builds a set from `(file name, text)` pairs; runbooks are told apart by their header.
    pub fn from_files(
        origin: &str,
        files: impl IntoIterator<Item = (String, String)>,
    ) -> Result<RunbookSet, RunbookError> {
        let mut files: Vec<(String, String)> = files.into_iter().collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let mut set = RunbookSet {
            origin: origin.to_string(),
            ..RunbookSet::default()
        };
        for (name, text) in files {
            if looks_like_runbook(&text) {
                let loaded = parse_runbook(&format!("{origin}/{name}"), &text)?;
                if let Some(first) = set
                    .runbooks
                    .iter()
                    .find(|other| other.runbook.metadata.name == loaded.runbook.metadata.name)
                {
                    return Err(RunbookError::DuplicateName {
                        name: loaded.runbook.metadata.name.clone(),
                        first: first.source.clone(),
                        second: loaded.source,
                    });
                }
                set.runbooks.push(loaded);
            } else {
                set.files.insert(name, text);
            }
        }
        Ok(set)
    }

    /// Loads `--runbooks DIR` when given, the embedded set otherwise.
    pub fn load(directory: Option<&Path>) -> Result<RunbookSet, RunbookError> {
        match directory {
            Some(directory) => RunbookSet::from_directory(directory),
            None => RunbookSet::embedded(),
        }
    }

    /// The release catalog text, if the set has one.
    pub fn catalog_text(&self) -> Option<&str> {
        self.files.get(CATALOG_FILE).map(String::as_str)
    }

    /// Names of the procedures the set defines, sorted.
    pub fn procedures(&self) -> Vec<String> {
        let mut procedures: Vec<String> = self
            .runbooks
            .iter()
            .map(|loaded| loaded.runbook.spec.procedure.clone())
            .collect();
        procedures.sort();
        procedures.dedup();
        procedures
    }
}

/// The JSON Schema of runbook files, as committed in `schemas/runbook.schema.json`.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(Runbook);
    serde_json::to_value(&schema).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "apiVersion: netctl.projectcalico.org/v1\nkind: Runbook\nmetadata:\n  name: x\n  description: d\nspec:\n  phase: upgrade\n  steps:\n    - id: gate\n      description: wait\n      action: pause\n      with: { message: go }\n";

    #[test]
    fn a_minimal_runbook_loads() {
        let loaded = parse_runbook("x.yaml", MINIMAL).unwrap();
        assert_eq!(loaded.runbook.spec.procedure, "upgrade");
        assert_eq!(loaded.line_of_step("gate"), 9);
    }

    #[test]
    fn unknown_fields_are_refused_with_their_location() {
        let text = MINIMAL.replace("      action: pause", "      acton: pause");
        let error = parse_runbook("x.yaml", &text).unwrap_err().to_string();
        assert!(
            error.starts_with("x.yaml:11:7: invalid runbook: "),
            "{error}"
        );
        assert!(error.contains("unknown field `acton`"), "{error}");
    }

    /// Every runbook file names the schema for editors.
    #[test]
    fn shipped_runbooks_reference_the_schema_and_load() {
        let set = RunbookSet::embedded().unwrap();
        assert!(!set.runbooks.is_empty());
        for loaded in &set.runbooks {
            assert!(
                loaded.text.starts_with(
                    "# yaml-language-server: $schema=../schemas/runbook.schema.json\n"
                ),
                "{}",
                loaded.source
            );
        }
    }
}
