//! `netctl runbook lint`: static checks a reviewer would otherwise do by eye.
//!
//! Findings carry `file:line:col` and a code: schema errors, template syntax and undefined variables,
//! unknown actions and bad arguments (each step is rendered against sample facts and converted into
//! an action), duplicate ids, dangling `needs`, cycles, version requirements that can never match,
//! an `appliesTo.why` with no requirement to explain, irreversible steps without a preceding human
//! gate, and command hygiene in `exec`/`helm` argv (bare `--dry-run`, `helm` without
//! `--namespace`/`--version`, an object name written twice, shell syntax in an argv that runs no
//! shell), and spans a run must not be cut inside that are left open or hold a gate
//! (`lint/spans.rs`). Lint never contacts a cluster.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

mod context;
mod finding;
mod graph;
mod spans;

use context::{candidates, is_known_variable, sample_context};
pub use finding::{Finding, Severity};

use super::catalog::{self, Catalog};
use super::resolve::{PlanError, render_action};
use super::{Action, Release};
use crate::runbook::template::{Templates, context_from};
use crate::runbook::{CATALOG_FILE, LoadedRunbook, RunbookError, RunbookSet, Step, parse_runbook};

/// Lints files and directories (a directory means every runbook in it; the files beside a runbook
/// are its assets and catalog). Several paths are linted together, so `needs` may cross them.
pub fn lint_paths(paths: &[PathBuf]) -> Result<Vec<Finding>, RunbookError> {
    let mut files: Vec<(String, String)> = Vec::new();
    let mut assets: BTreeMap<String, String> = BTreeMap::new();
    for path in paths {
        let (directory, explicit) = if path.is_dir() {
            (path.clone(), None)
        } else {
            let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
            (parent, Some(path.clone()))
        };
        let listing = if directory.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            directory.clone()
        };
        let entries = std::fs::read_dir(&listing).map_err(|source| RunbookError::Read {
            path: listing.clone(),
            source,
        })?;
        let mut names: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                path.extension()
                    .is_some_and(|extension| extension == "yaml" || extension == "yml")
            })
            .collect();
        names.sort();
        for file in names {
            let text = std::fs::read_to_string(&file).map_err(|source| RunbookError::Read {
                path: file.clone(),
                source,
            })?;
            let name = file
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let is_target = match &explicit {
                Some(explicit) => *explicit == file,
                None => crate::runbook::looks_like_runbook(&text),
            };
            if is_target {
                files.push((file.display().to_string(), text));
            } else if !crate::runbook::looks_like_runbook(&text) {
                assets.entry(name).or_insert(text);
            }
        }
    }
    Ok(lint_files(files, assets))
}

/// Lints the built-in runbooks.
pub fn lint_embedded() -> Vec<Finding> {
    let mut files = Vec::new();
    let mut assets = BTreeMap::new();
    for (name, text) in crate::runbook::embedded::FILES {
        if crate::runbook::looks_like_runbook(text) {
            files.push((format!("runbooks/{name}"), text.to_string()));
        } else {
            assets.insert(name.to_string(), text.to_string());
        }
    }
    lint_files(files, assets)
}

/// Lints runbook texts `(shown path, text)` with `assets` (file name → text) beside them.
pub fn lint_files(files: Vec<(String, String)>, assets: BTreeMap<String, String>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut set = RunbookSet {
        files: assets,
        origin: "lint".to_string(),
        ..RunbookSet::default()
    };
    for (source, text) in files {
        match parse_runbook(&source, &text) {
            Ok(loaded) => {
                if let Some(first) = set
                    .runbooks
                    .iter()
                    .find(|other| other.runbook.metadata.name == loaded.runbook.metadata.name)
                {
                    findings.push(Finding {
                        file: loaded.source.clone(),
                        line: loaded.line_of_key("name"),
                        column: 3,
                        severity: Severity::Error,
                        code: "duplicate-runbook",
                        message: format!(
                            "runbook `{}` is already defined in `{}`",
                            loaded.runbook.metadata.name, first.source
                        ),
                    });
                    continue;
                }
                set.runbooks.push(loaded);
            }
            Err(RunbookError::Invalid { location, message }) => findings.push(Finding {
                file: location.file,
                line: location.line,
                column: location.column,
                severity: Severity::Error,
                code: "schema",
                message,
            }),
            Err(other) => findings.push(Finding {
                file: source,
                line: 1,
                column: 1,
                severity: Severity::Error,
                code: "schema",
                message: other.to_string(),
            }),
        }
    }
    let catalog = set.files.get(CATALOG_FILE).map(|text| Catalog::parse(text));
    let catalog = match catalog {
        Some(Ok(catalog)) => Some(catalog),
        Some(Err(error)) => {
            findings.push(Finding {
                file: CATALOG_FILE.to_string(),
                line: 1,
                column: 1,
                severity: Severity::Error,
                code: "catalog",
                message: error.to_string(),
            });
            None
        }
        None => None,
    };
    let templates = Templates::new();
    for loaded in &set.runbooks {
        let mut linter = RunbookLinter {
            set: &set,
            loaded,
            templates: &templates,
            findings: &mut findings,
        };
        linter.check_requirements(catalog.as_ref());
        linter.check_steps();
        spans::check_spans(loaded, &mut findings);
    }
    graph::check_graph(&set, &mut findings);
    findings.sort();
    findings.dedup();
    findings
}

struct RunbookLinter<'a> {
    set: &'a RunbookSet,
    loaded: &'a LoadedRunbook,
    templates: &'a Templates,
    findings: &'a mut Vec<Finding>,
}

impl RunbookLinter<'_> {
    fn report(&mut self, line: usize, severity: Severity, code: &'static str, message: String) {
        self.findings.push(Finding {
            file: self.loaded.source.clone(),
            line: line.max(1),
            column: 1,
            severity,
            code,
            message,
        });
    }

    fn step_line(&self, step: &Step) -> usize {
        self.loaded.line_of_step(&step.id)
    }

    /// Invalid requirements, requirements no version satisfies, `from`/`to` pairs no upgrade
    /// satisfies, unknown edges and requirements no catalog target reaches.
    fn check_requirements(&mut self, catalog: Option<&Catalog>) {
        let applies = self.loaded.runbook.spec.applies_to.clone();
        let requires_nothing = applies.edge.is_none()
            && applies.from.is_none()
            && applies.to.is_none()
            && applies.install_methods.is_empty()
            && applies.datastore_types.is_empty();
        if applies.why.is_some() && requires_nothing {
            self.report(
                self.loaded.line_of_key("why"),
                Severity::Warning,
                "why-without-requirement",
                "`appliesTo.why` explains a limit the runbook does not have: `appliesTo` names no edge, version, install method or datastore".to_string(),
            );
        }
        let mut parsed = Vec::new();
        for (key, text) in [("from", &applies.from), ("to", &applies.to)] {
            let Some(text) = text else { continue };
            let line = self.loaded.line_of_key(key);
            match semver::VersionReq::parse(text) {
                Err(error) => self.report(
                    line,
                    Severity::Error,
                    "requirement",
                    format!("invalid version requirement `{text}` in `appliesTo.{key}`: {error}"),
                ),
                Ok(requirement) => {
                    if candidates(&requirement)
                        .iter()
                        .all(|version| !catalog::matches(&requirement, version))
                    {
                        self.report(
                            line,
                            Severity::Error,
                            "requirement",
                            format!(
                                "`appliesTo.{key}` requirement `{text}` can never match a release"
                            ),
                        );
                    }
                    parsed.push((key, text.clone(), requirement));
                }
            }
        }
        if let [(_, from_text, from), (_, to_text, to)] = parsed.as_slice() {
            let lowest_from = candidates(from)
                .into_iter()
                .filter(|version| catalog::matches(from, version))
                .min();
            let highest_to = candidates(to)
                .into_iter()
                .filter(|version| catalog::matches(to, version))
                .max();
            if let (Some(lowest_from), Some(highest_to)) = (lowest_from, highest_to)
                && lowest_from >= highest_to
            {
                self.report(
                    self.loaded.line_of_key("to"),
                    Severity::Error,
                    "requirement",
                    format!(
                        "no upgrade goes from `{from_text}` to `{to_text}`: every matching target is older than every matching installed version"
                    ),
                );
            }
        }
        let Some(catalog) = catalog else { return };
        if let Some(edge) = &applies.edge
            && catalog.edge(edge).is_none()
        {
            self.report(
                self.loaded.line_of_key("edge"),
                Severity::Error,
                "unknown-edge",
                format!(
                    "unknown version edge `{edge}`; `{CATALOG_FILE}` defines none by that name"
                ),
            );
        }
        if let Some((_, text, to)) = parsed.iter().find(|(key, _, _)| *key == "to") {
            let reachable = catalog.spec.targets.iter().any(|target| {
                let Ok(line) = target.release.parse::<Release>() else {
                    return false;
                };
                let newest = Release::new(line.0.major, line.0.minor, 999);
                [line, newest]
                    .iter()
                    .chain(target.latest.iter())
                    .any(|version| catalog::matches(to, version))
            });
            if !reachable && self.loaded.runbook.spec.procedure == crate::runbook::UPGRADE_PROCEDURE
            {
                self.report(
                    self.loaded.line_of_key("to"),
                    Severity::Warning,
                    "unreachable",
                    format!(
                        "`appliesTo.to` requirement `{text}` matches none of the catalog's targets ({})",
                        catalog.target_names()
                    ),
                );
            }
        }
    }

    fn check_steps(&mut self) {
        let runbook = &self.loaded.runbook;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for step in &runbook.spec.steps {
            if let Some(first) = seen.insert(step.id.as_str(), self.step_line(step)) {
                let line = self
                    .loaded
                    .text
                    .lines()
                    .enumerate()
                    .filter(|(_, text)| {
                        text.trim_start().trim_start_matches("- ").trim()
                            == format!("id: {}", step.id)
                    })
                    .map(|(index, _)| index + 1)
                    .nth(1)
                    .unwrap_or(first);
                self.report(
                    line,
                    Severity::Error,
                    "duplicate-id",
                    format!(
                        "step id `{}` is used twice (first on line {first})",
                        step.id
                    ),
                );
            }
        }
        let params: Vec<String> = runbook.spec.params.keys().cloned().collect();
        if let Some(condition) = &runbook.spec.when {
            self.check_template(
                self.loaded.line_of_key("when"),
                condition,
                true,
                &params,
                false,
            );
        }
        for parameter in runbook.spec.params.values() {
            self.check_value(
                self.loaded.line_of_key("params"),
                &parameter.default,
                &[],
                false,
            );
        }
        for step in &runbook.spec.steps {
            let line = self.step_line(step);
            let has_item = step.foreach.is_some();
            self.check_template(line, &step.description, false, &params, has_item);
            if let Some(condition) = &step.when {
                self.check_template(line, condition, true, &params, false);
            }
            if let Some(foreach) = &step.foreach {
                self.check_template(line, foreach, false, &params, false);
            }
            if step.serial && !has_item {
                self.report(
                    line,
                    Severity::Error,
                    "invalid-arguments",
                    format!(
                        "step `{}`: `serial` needs `foreach` (it runs the items one at a time)",
                        step.id
                    ),
                );
            }
            if let Some(with) = &step.with {
                self.check_value(line, &Json::Object(with.clone()), &params, has_item);
            }
            if let Some(verify) = &step.verify
                && let Some(with) = &verify.with
            {
                self.check_value(line, &Json::Object(with.clone()), &params, has_item);
            }
            if let Some(undo) = &step.undo {
                self.check_template(line, &undo.description, false, &params, has_item);
                if let Some(with) = &undo.with {
                    self.check_value(line, &Json::Object(with.clone()), &params, has_item);
                }
                self.check_undo(step, line);
            }
            let undo_action = step.undo.as_ref().and_then(|undo| undo.action.as_ref());
            for name in std::iter::once(&step.action)
                .chain(step.verify.as_ref().map(|v| &v.action))
                .chain(undo_action)
            {
                if !Action::NAMES.contains(&name.as_str()) {
                    self.report(
                        line,
                        Severity::Error,
                        "unknown-action",
                        format!(
                            "step `{}`: unknown action `{name}`; known actions are {}",
                            step.id,
                            Action::NAMES.join(", ")
                        ),
                    );
                }
            }
            self.check_hygiene(step, line);
            self.check_rendering(step, line);
        }
    }

    fn check_value(&mut self, line: usize, value: &Json, params: &[String], has_item: bool) {
        match value {
            Json::String(text) => self.check_template(line, text, false, params, has_item),
            Json::Array(items) => {
                for item in items {
                    self.check_value(line, item, params, has_item);
                }
            }
            Json::Object(map) => {
                for item in map.values() {
                    self.check_value(line, item, params, has_item);
                }
            }
            _ => {}
        }
    }

    /// Syntax, and every variable read is one the context provides.
    fn check_template(
        &mut self,
        line: usize,
        text: &str,
        is_expression: bool,
        params: &[String],
        has_item: bool,
    ) {
        if !is_expression && !text.contains("{{") && !text.contains("{%") {
            return;
        }
        let variables = match self.templates.variables(text, is_expression) {
            Ok(variables) => variables,
            Err(error) => {
                self.report(line, Severity::Error, "template-syntax", error.to_string());
                return;
            }
        };
        for variable in variables {
            if !is_known_variable(&variable, params, has_item) {
                let hint = if variable == "item" || variable.starts_with("item.") {
                    " (`item` exists only in steps with `foreach`)".to_string()
                } else {
                    String::new()
                };
                self.report(
                    line,
                    Severity::Error,
                    "undefined-variable",
                    format!("template `{text}` reads undefined variable `{variable}`{hint}"),
                );
            }
        }
    }

    /// Renders the step with sample facts and converts it into an action: bad `with` fields,
    /// missing files and type errors show up here.
    fn check_rendering(&mut self, step: &Step, line: usize) {
        if !Action::NAMES.contains(&step.action.as_str()) {
            return;
        }
        let context = sample_context(self.loaded, self.templates);
        let item = match &step.foreach {
            None => None,
            Some(foreach) => match self
                .templates
                .render_string(foreach, &context_from(&context))
            {
                Ok(Json::Array(items)) => items.into_iter().next(),
                Ok(other) => {
                    self.report(
                        line,
                        Severity::Error,
                        "invalid-arguments",
                        format!(
                            "step `{}`: `foreach` must give a list, got `{other}`",
                            step.id
                        ),
                    );
                    return;
                }
                // Undefined variables were reported statically.
                Err(_) => return,
            },
        };
        let mut context = context;
        if let Some(item) = item {
            context.insert("item".into(), item);
        }
        let context = context_from(&context);
        let results = std::iter::once(render_action(
            self.set,
            self.templates,
            self.loaded,
            step,
            &step.action,
            step.with.as_ref(),
            &context,
        ))
        .chain(
            step.undo
                .iter()
                .filter_map(|undo| {
                    undo.action
                        .as_ref()
                        .map(|action| (action, undo.with.as_ref()))
                })
                .filter(|(action, _)| Action::NAMES.contains(&action.as_str()))
                .map(|(action, with)| {
                    render_action(
                        self.set,
                        self.templates,
                        self.loaded,
                        step,
                        action,
                        with,
                        &context,
                    )
                }),
        )
        .chain(
            step.verify
                .iter()
                .filter(|verify| Action::NAMES.contains(&verify.action.as_str()))
                .map(|verify| {
                    render_action(
                        self.set,
                        self.templates,
                        self.loaded,
                        step,
                        &verify.action,
                        verify.with.as_ref(),
                        &context,
                    )
                }),
        );
        for result in results {
            match result {
                Ok(_) | Err(PlanError::Template { .. }) => {}
                Err(PlanError::Action { source, .. }) => {
                    let mut message = format!("step `{}`: {source}", step.id);
                    if let Some(cause) = std::error::Error::source(&source) {
                        message = format!("{message}: {cause}");
                    }
                    self.report(line, Severity::Error, "invalid-arguments", message);
                }
                Err(other) => self.report(
                    line,
                    Severity::Error,
                    "invalid-arguments",
                    other.to_string(),
                ),
            }
        }
    }

    /// An `undo:` is an action or `fromBackup`, not both, `with` only beside an action; an
    /// irreversible step has none (it is a point of no return because it has no way back).
    fn check_undo(&mut self, step: &Step, line: usize) {
        let Some(undo) = &step.undo else { return };
        let problem = match (&undo.action, undo.from_backup, &undo.with) {
            (Some(_), true, _) => Some("has both `action` and `fromBackup`; give one"),
            (None, _, Some(_)) => Some("has `with` but no `action`"),
            _ if step.irreversible => Some(
                "belongs to an irreversible step: a step with a way back is not a point of no return (drop `irreversible`, keep the `pause` before it)",
            ),
            _ => None,
        };
        if let Some(problem) = problem {
            self.report(
                line,
                Severity::Error,
                "undo-shape",
                format!("step `{}`: its `undo` {problem}", step.id),
            );
        }
    }

    fn check_hygiene(&mut self, step: &Step, line: usize) {
        let Some(with) = &step.with else { return };
        let words = |key: &str| -> Vec<String> {
            with.get(key)
                .and_then(Json::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|item| match item {
                            Json::String(text) => text.clone(),
                            other => other.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let argv = match step.action.as_str() {
            "exec" => words("command"),
            "helm" => {
                let mut argv = vec!["helm".to_string()];
                argv.extend(words("args"));
                argv
            }
            _ => return,
        };
        let id = &step.id;
        let mut problems = Vec::new();
        if step.action == "exec" && argv.iter().any(|word| word == "--dry-run") {
            problems.push(
                "bare `--dry-run` is deprecated in kubectl; write `--dry-run=client` or `--dry-run=server` (or leave previews to `netctl upgrade apply --dry-run`)".to_string(),
            );
        }
        if argv
            .iter()
            .any(|word| ["|", "&&", ";", ">", "<", "||"].contains(&word.as_str()))
        {
            problems.push(
                "shell syntax in an argv: `exec` runs no shell; split the step or name a shell explicitly".to_string(),
            );
        }
        let program = argv
            .first()
            .map(|word| word.rsplit('/').next().unwrap_or(word).to_string());
        if program.as_deref() == Some("helm") {
            let subcommand = argv
                .iter()
                .skip(1)
                .find(|word| !word.starts_with('-'))
                .cloned()
                .unwrap_or_default();
            let releases = [
                "install",
                "upgrade",
                "uninstall",
                "rollback",
                "status",
                "get",
                "history",
                "template",
            ];
            if releases.contains(&subcommand.as_str()) {
                let has_namespace = argv.iter().any(|word| {
                    word == "--namespace" || word == "-n" || word.starts_with("--namespace=")
                });
                if !has_namespace {
                    problems.push(format!(
                        "`helm {subcommand}` without `--namespace`: the result depends on the current kube context"
                    ));
                }
            }
            if ["install", "upgrade", "template"].contains(&subcommand.as_str())
                && !argv
                    .iter()
                    .any(|word| word == "--version" || word.starts_with("--version="))
            {
                problems.push(format!(
                    "`helm {subcommand}` without `--version`: the chart version depends on the repository cache"
                ));
            }
        }
        for pair in argv.windows(2) {
            if pair[0] == pair[1] && !pair[0].starts_with('-') {
                problems.push(format!(
                    "`{}` is written twice in a row; an object name given twice is a second object (`kubectl patch clusterrolebinding x x`)",
                    pair[0]
                ));
            }
        }
        for problem in problems {
            self.report(
                line,
                Severity::Error,
                "command-hygiene",
                format!("step `{id}`: {problem}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_runbooks_lint_clean() {
        let findings = lint_embedded();
        assert!(
            findings.is_empty(),
            "{}",
            findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
