//! Printing plans: a readable text tree, stable JSON, a Markdown change-ticket checklist, and the DAG
//! as Graphviz `dot` or Mermaid.
//!
//! Every format shows the same content — phase, step, the exact action with its rendered arguments,
//! why the step is included, and marks for points of no return (irreversible) and human gates
//! (`pause`). Output is deterministic so it can be snapshot-tested and diffed. This module only
//! formats; it never changes a plan.

use std::fmt::Write as _;

use super::action::{Action, ManifestSource};
use super::{ManifestPreview, Phase, Plan, PlannedStep};

/// The formats `upgrade plan -o` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    Text,
    Json,
    Markdown,
    Dot,
    Mermaid,
}

impl PlanFormat {
    pub const NAMES: [&'static str; 5] = ["text", "json", "markdown", "dot", "mermaid"];
}

impl std::str::FromStr for PlanFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "text" => Ok(PlanFormat::Text),
            "json" => Ok(PlanFormat::Json),
            "markdown" | "md" => Ok(PlanFormat::Markdown),
            "dot" => Ok(PlanFormat::Dot),
            "mermaid" => Ok(PlanFormat::Mermaid),
            other => Err(other.to_string()),
        }
    }
}

/// Renders a plan in the given format (always ending with a newline).
pub fn render(plan: &Plan, format: PlanFormat) -> String {
    match format {
        PlanFormat::Text => text(plan),
        PlanFormat::Json => json(plan),
        PlanFormat::Markdown => markdown(plan),
        PlanFormat::Dot => dot(plan),
        PlanFormat::Mermaid => mermaid(plan),
    }
}

/// The plan as pretty JSON: the same document `--out` saves.
pub fn json(plan: &Plan) -> String {
    let mut text = serde_json::to_string_pretty(plan).unwrap_or_default();
    text.push('\n');
    text
}

const GATE_MARK: &str = "⏸";
const IRREVERSIBLE_MARK: &str = "⚠";

fn marks(step: &PlannedStep) -> String {
    let mut marks = String::new();
    if matches!(step.action, Action::Pause(_)) {
        marks.push_str(GATE_MARK);
        marks.push(' ');
    }
    if step.irreversible {
        marks.push_str(IRREVERSIBLE_MARK);
        marks.push(' ');
    }
    marks
}

fn title(plan: &Plan) -> String {
    let facts = &plan.facts;
    if plan.from == plan.to {
        format!(
            "procedure `{}` on {} ({} install, {} datastore)",
            plan.procedure, plan.from, facts.install_method.value, facts.datastore_type.value
        )
    } else {
        format!(
            "{} {} → {} ({} install, {} datastore)",
            plan.procedure,
            plan.from,
            plan.to,
            facts.install_method.value,
            facts.datastore_type.value
        )
    }
}

/// `(name, value, origin)` of every fact, values as compact JSON unless plain strings.
fn fact_rows(plan: &Plan) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    if let Ok(serde_json::Value::Object(facts)) = serde_json::to_value(&plan.facts) {
        for (name, fact) in facts {
            let value = match fact.get("value") {
                Some(serde_json::Value::String(text)) if text.is_empty() => "\"\"".to_string(),
                Some(serde_json::Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let origin = fact
                .get("origin")
                .and_then(|origin| origin.as_str())
                .unwrap_or_default()
                .to_string();
            rows.push((name, value, origin));
        }
    }
    rows
}

/// The readable tree.
pub fn text(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "plan: {}", title(plan));
    let _ = writeln!(out, "digest: {}", plan.digest);
    let _ = writeln!(out, "facts:");
    let rows = fact_rows(plan);
    let width = rows.iter().map(|row| row.0.len()).max().unwrap_or(0);
    for (name, value, origin) in rows {
        let _ = writeln!(out, "  {name:width$}  {value}  ({origin})");
    }
    let mut number = 0;
    for phase in Phase::ALL {
        let steps: Vec<&PlannedStep> = plan.steps_in(phase).collect();
        if steps.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{phase}");
        for (position, step) in steps.iter().enumerate() {
            number += 1;
            let last = position + 1 == steps.len();
            let (branch, rail) = if last {
                ("└─", "  ")
            } else {
                ("├─", "│ ")
            };
            let _ = writeln!(out, "{branch} {number}. {}{}", marks(step), step.id);
            let _ = writeln!(out, "{rail}     {}", step.description);
            let _ = writeln!(out, "{rail}     run:    {}", describe(&step.action));
            if let Some(verify) = &step.verify {
                let _ = writeln!(out, "{rail}     verify: {}", describe(verify));
            }
            if let Some(retry) = &step.retry {
                let _ = writeln!(
                    out,
                    "{rail}     retry:  {} attempts, {} apart",
                    retry.attempts, retry.delay
                );
            }
            if !step.needs.is_empty() {
                let _ = writeln!(out, "{rail}     needs:  {}", step.needs.join(", "));
            }
            if let Some(requirement) = &step.requires {
                let _ = writeln!(
                    out,
                    "{rail}     requires: every node agent at {} (checked before the run and when the step starts)",
                    requirement.node_agents
                );
            }
            if let Some(advice) = &step.rollback {
                let _ = writeln!(out, "{rail}     rollback before: {}", advice.before);
                let _ = writeln!(out, "{rail}     rollback after:  {}", advice.after);
            }
            let _ = writeln!(out, "{rail}     why:    {}", step.reason);
        }
    }
    for (heading, body) in discovery_sections(plan)
        .into_iter()
        .chain(overlay_sections(plan))
    {
        let _ = writeln!(out, "\n{heading}");
        for line in body.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let gates = plan
        .steps
        .iter()
        .filter(|step| matches!(step.action, Action::Pause(_)))
        .count();
    let irreversible = plan.steps.iter().filter(|step| step.irreversible).count();
    let _ = writeln!(
        out,
        "\n{} steps, {gates} human gates ({GATE_MARK}), {irreversible} irreversible ({IRREVERSIBLE_MARK})",
        plan.steps.len()
    );
    out
}

/// One `(heading, body)` per `fetch` step whose hand edits were looked for in the cluster: the
/// edits carried (as the overlay documents made of them), the fields left undecided, what was not
/// compared, or why discovery could not run. Bodies end with a newline.
fn discovery_sections(plan: &Plan) -> Vec<(String, String)> {
    plan.manifest_discovery
        .iter()
        .map(|record| {
            let heading = format!(
                "hand edits of the installed manifest, for `{}` (compares {} with the live objects and the new manifest):",
                record.step, record.installed_url
            );
            let mut body = String::new();
            if let Some(reason) = &record.unavailable {
                let _ = writeln!(
                    body,
                    "not looked for: {reason}"
                );
            }
            if record.unavailable.is_none() && !record.found_anything() {
                let _ = writeln!(
                    body,
                    "none: the {} live object(s) match the installed release's manifest",
                    record.live.len()
                );
            }
            for edit in &record.edits {
                let _ = writeln!(body, "~ {edit}");
            }
            if !record.overlay.is_empty() {
                let _ = writeln!(
                    body,
                    "carried into `upgrade.yaml` as this overlay (ahead of any `--manifest-overlay`; the diff follows):"
                );
                for line in super::overlay::overlay_yaml(&record.overlay).lines() {
                    let _ = writeln!(body, "  {line}");
                }
            }
            for field in &record.undecided {
                let _ = writeln!(
                    body,
                    "? {} {}: undecided, not carried: {} as released, {} live, {} in the new manifest; make the edit you want in `upgrade.yaml` at the gate",
                    field.object, field.field, field.released, field.live, field.new
                );
            }
            for note in &record.notes {
                let _ = writeln!(body, "note: {note}");
            }
            (heading, body)
        })
        .collect()
}

/// One `(heading, body)` per `fetch` step with a manifest overlay: the plan-time diff when the
/// manifest could be read, else the reason and the overlay as given. Bodies end with a newline.
fn overlay_sections(plan: &Plan) -> Vec<(String, String)> {
    plan.overlay_downloads()
        .map(|(step, url, overlay)| {
            let preview = plan
                .manifest_previews
                .iter()
                .find(|preview| preview.step == step);
            let heading = format!("manifest overlay of `{step}` ({url}):");
            let body = match preview {
                Some(ManifestPreview {
                    diff: Some(diff), ..
                }) if diff.is_empty() => {
                    "the overlay changes nothing: the manifest already says what it sets\n".into()
                }
                Some(ManifestPreview {
                    diff: Some(diff), ..
                }) => diff.clone(),
                Some(ManifestPreview {
                    unavailable: Some(reason),
                    ..
                }) => format!(
                    "the manifest could not be read at plan time ({reason}); the diff is shown by `upgrade apply --dry-run`; the overlay as given:\n{}",
                    super::overlay::overlay_yaml(overlay)
                ),
                _ => format!(
                    "the manifest was not read at plan time; the overlay as given:\n{}",
                    super::overlay::overlay_yaml(overlay)
                ),
            };
            (heading, body)
        })
        .collect()
}

/// A maintenance checklist for a change ticket.
pub fn markdown(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Change: {}\n", title(plan));
    let _ = writeln!(out, "Plan digest: `{}`\n", plan.digest);
    let _ = writeln!(out, "| Fact | Value | Origin |\n|---|---|---|");
    for (name, value, origin) in fact_rows(plan) {
        let _ = writeln!(
            out,
            "| `{name}` | `{}` | {origin} |",
            value.replace('|', "\\|")
        );
    }
    let mut number = 0;
    for phase in Phase::ALL {
        let steps: Vec<&PlannedStep> = plan.steps_in(phase).collect();
        if steps.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n## Phase: {phase}\n");
        for step in steps {
            number += 1;
            let mut flags = String::new();
            if matches!(step.action, Action::Pause(_)) {
                flags.push_str(" — **human gate**");
            }
            if step.irreversible {
                flags.push_str(" — **irreversible: point of no return**");
            }
            let _ = writeln!(
                out,
                "- [ ] {number}. **{}**{flags}  \n  `{}`  \n  Run: `{}`  ",
                step.description,
                step.id,
                describe(&step.action).replace('`', "'")
            );
            if let Some(verify) = &step.verify {
                let _ = writeln!(out, "  Verify: `{}`  ", describe(verify).replace('`', "'"));
            }
            if let Some(advice) = &step.rollback {
                let _ = writeln!(out, "  Rollback before: {}  ", advice.before);
                let _ = writeln!(out, "  Rollback after: {}  ", advice.after);
            }
            let _ = writeln!(out, "  Why: {}", step.reason);
        }
    }
    for (heading, body) in discovery_sections(plan)
        .into_iter()
        .chain(overlay_sections(plan))
    {
        let fence = if body.starts_with("---") || body.starts_with('@') {
            "diff"
        } else {
            ""
        };
        let _ = writeln!(out, "\n## {heading}\n\n```{fence}\n{body}```");
    }
    let _ = writeln!(
        out,
        "\n## Sign-off\n\n- [ ] Plan reviewed\n- [ ] Maintenance window confirmed\n- [ ] Upgrade completed and verified"
    );
    out
}

fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The DAG in Graphviz: one cluster per phase, one edge per `needs`.
pub fn dot(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph plan {{");
    let _ = writeln!(out, "  label=\"{}\";", quoted(&title(plan)));
    let _ = writeln!(
        out,
        "  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];"
    );
    for phase in Phase::ALL {
        let steps: Vec<&PlannedStep> = plan.steps_in(phase).collect();
        if steps.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "  subgraph \"cluster_{phase}\" {{\n    label=\"{phase}\";"
        );
        for step in steps {
            let style = if step.irreversible {
                ", color=red, penwidth=2"
            } else if matches!(step.action, Action::Pause(_)) {
                ", shape=octagon"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    \"{}\" [label=\"{}{}\\n{}\"{style}];",
                quoted(&step.id),
                quoted(&marks(step)),
                quoted(&step.id),
                step.action.name()
            );
        }
        let _ = writeln!(out, "  }}");
    }
    for step in &plan.steps {
        for need in &step.needs {
            let _ = writeln!(out, "  \"{}\" -> \"{}\";", quoted(need), quoted(&step.id));
        }
    }
    let _ = writeln!(out, "}}");
    out
}

/// The DAG in Mermaid (renders in GitHub and GitLab change tickets).
pub fn mermaid(plan: &Plan) -> String {
    let index: std::collections::HashMap<&str, usize> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(number, step)| (step.id.as_str(), number))
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "flowchart TD");
    for phase in Phase::ALL {
        let steps: Vec<&PlannedStep> = plan.steps_in(phase).collect();
        if steps.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "  subgraph {}[\"{phase}\"]",
            phase.as_str().replace('-', "_")
        );
        for step in steps {
            let number = index.get(step.id.as_str()).copied().unwrap_or(0);
            let label = format!("{}{}<br/>{}", marks(step), step.id, step.action.name())
                .replace('"', "#quot;");
            let shape = if matches!(step.action, Action::Pause(_)) {
                format!("{{{{\"{label}\"}}}}")
            } else {
                format!("[\"{label}\"]")
            };
            let _ = writeln!(out, "    s{number}{shape}");
        }
        let _ = writeln!(out, "  end");
    }
    for (number, step) in plan.steps.iter().enumerate() {
        for need in &step.needs {
            if let Some(from) = index.get(need.as_str()) {
                let _ = writeln!(out, "  s{from} --> s{number}");
            }
        }
    }
    for (number, step) in plan.steps.iter().enumerate() {
        if step.irreversible {
            let _ = writeln!(out, "  style s{number} stroke:#d00,stroke-width:3px");
        }
    }
    out
}

/// Shell-style quoting for showing argv (display only; nothing is run through a shell).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn argv(words: &[String]) -> String {
    words
        .iter()
        .map(|word| shell_word(word))
        .collect::<Vec<_>>()
        .join(" ")
}

fn namespaced(namespace: &Option<String>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

/// One line that says exactly what an action does, with every rendered argument.
pub fn describe(action: &Action) -> String {
    let name = action.name();
    match action {
        Action::ResourceGet(target) => format!(
            "{name} {} {}",
            target.kind,
            namespaced(&target.namespace, &target.name)
        ),
        Action::ResourceDelete(deletion) => {
            let targets: Vec<String> = deletion
                .targets
                .iter()
                .map(|target| {
                    format!(
                        "{} {}",
                        target.kind,
                        namespaced(&target.namespace, &target.name)
                    )
                })
                .collect();
            format!("{name} {}", targets.join(", "))
        }
        Action::ResourceList(list) => {
            let mut text = format!("{name} {}", list.kind);
            if let Some(namespace) = &list.namespace {
                let _ = write!(text, " -n {namespace}");
            }
            if let Some(selector) = &list.selector {
                let _ = write!(text, " -l {}", shell_word(selector));
            }
            text
        }
        Action::ResourceCreate(documents)
        | Action::ResourceApply(documents)
        | Action::ResourceReplace(documents) => {
            let names: Vec<String> = documents
                .documents
                .iter()
                .map(|resource| resource.key().to_string())
                .collect();
            let mut text = format!("{name} {}", names.join(", "));
            if let Some(file) = &documents.file {
                let _ = write!(text, " (from {file})");
            }
            text
        }
        Action::ResourceLabel(label) => {
            let target = format!(
                "{name} {} {}",
                label.kind,
                namespaced(&label.namespace, &label.name)
            );
            match &label.value {
                _ if label.labels.is_some() => {
                    let labels = label
                        .labels
                        .iter()
                        .flatten()
                        .map(|(key, value)| shell_word(&format!("{key}={value}")));
                    let mut text = target;
                    for label in labels {
                        let _ = write!(text, " {label}");
                    }
                    if label.overwrite {
                        text.push_str(" --overwrite");
                    }
                    text
                }
                _ if label.remove => format!("{target} {} --remove", label.key),
                Some(value) => format!(
                    "{target} {}={}{}",
                    label.key,
                    shell_word(value),
                    if label.overwrite { " --overwrite" } else { "" }
                ),
                None => target,
            }
        }
        Action::ResourceLabelEach(each) => {
            let change = match &each.value {
                _ if each.remove => format!("{} --remove", each.key),
                Some(value) => format!(
                    "{}={}{}",
                    each.key,
                    shell_word(value),
                    if each.overwrite { " --overwrite" } else { "" }
                ),
                None => each.key.clone(),
            };
            let namespace = match &each.namespace {
                Some(namespace) => format!(" -n {namespace}"),
                None => String::new(),
            };
            format!(
                "{name} {} {change}{namespace} on {} resource(s): {}",
                each.kind,
                each.names.len(),
                each.names_shown()
            )
        }
        Action::ResourcePatch(patch) => format!(
            "{name} {} {} --type={} {}",
            patch.kind,
            namespaced(&patch.namespace, &patch.name),
            patch.patch_type,
            shell_word(&patch.patch.to_string())
        ),
        Action::KubeApply(apply) => {
            let mut text = name.to_string();
            if apply.server_side {
                let _ = write!(
                    text,
                    " --server-side --field-manager={}",
                    apply.field_manager
                );
            }
            if apply.force_conflicts {
                text.push_str(" --force-conflicts");
            }
            match &apply.source {
                ManifestSource::Url(url) => {
                    let _ = write!(text, " -f {url}");
                }
                ManifestSource::File(file) => {
                    let _ = write!(text, " -f {file}");
                }
                ManifestSource::Inline(inline) => {
                    let _ = write!(text, " (inline manifest, {} bytes)", inline.len());
                }
            }
            if let Some(previous) = &apply.save_previous {
                let _ = write!(text, " (saving the live objects to {previous} first)");
            }
            text
        }
        Action::KubePatch(patch) => format!(
            "{name} {} {} --type={} {}",
            patch.object.api_version,
            patch.object,
            patch.patch_type,
            shell_word(&patch.patch.to_string())
        ),
        Action::KubeAnnotate(change) | Action::KubeLabel(change) => {
            let values: Vec<String> = change
                .values
                .iter()
                .map(|(key, value)| match value {
                    Some(value) => shell_word(&format!("{key}={value}")),
                    None => format!("{key}-"),
                })
                .collect();
            format!(
                "{name} {} {} {}{}",
                change.object.api_version,
                change.object,
                values.join(" "),
                if change.overwrite { " --overwrite" } else { "" }
            )
        }
        Action::KubeList(list) => {
            let mut text = format!("{name} {} {}", list.api_version, list.kind);
            if let Some(namespace) = &list.namespace {
                let _ = write!(text, " -n {namespace}");
            }
            if let Some(selector) = &list.selector {
                let _ = write!(text, " -l {}", shell_word(&selector.to_string()));
            }
            text
        }
        Action::KubeDelete(delete) => {
            let mut text = format!("{name} {} {}", delete.api_version, delete.kind);
            if let Some(namespace) = &delete.namespace {
                let _ = write!(text, " -n {namespace}");
            }
            let _ = write!(text, " -l {}", shell_word(&delete.selector.to_string()));
            text
        }
        Action::KubeWaitRollout(wait) => {
            let mut text = format!("{name} {} -n {}", wait.kind, wait.namespace);
            if let Some(object) = &wait.name {
                let _ = write!(text, " {object}");
            }
            if let Some(selector) = &wait.selector {
                let _ = write!(text, " -l {}", shell_word(selector));
            }
            if let Some(ready) = &wait.ready {
                let _ = write!(text, " ready={ready}");
            }
            let _ = write!(text, " timeout={}", wait.timeout);
            text
        }
        Action::KubeRestoreOwnerReference(restore) => {
            let mut text = format!(
                "{name} {} {} owner={} {}/{} uid=<read when the step runs>",
                restore.object.api_version,
                restore.object,
                restore.owner.api_version,
                restore.owner.kind,
                restore.owner.name
            );
            if let Some(controller) = restore.controller {
                let _ = write!(text, " controller={controller}");
            }
            if let Some(block) = restore.block_owner_deletion {
                let _ = write!(text, " blockOwnerDeletion={block}");
            }
            text
        }
        Action::Fetch(fetch) => {
            let mut text = format!("{name} {} -> {}", fetch.url, fetch.file);
            // Whether the run refuses a file changed at the URL since the review.
            match &fetch.sha256 {
                Some(digest) => {
                    let _ = write!(text, " (pinned to the reviewed {digest})");
                }
                None => text.push_str(
                    " (not pinned: not read at plan time; the run uses whatever the URL serves then)",
                ),
            }
            if !fetch.overlay.is_empty() {
                let _ = write!(
                    text,
                    " with the manifest overlay ({} document(s), shown below)",
                    fetch.overlay.len()
                );
            }
            text
        }
        Action::ResourceWait(wait) => {
            let mut text = format!("{name} {}", wait.kind);
            if let Some(namespace) = &wait.namespace {
                let _ = write!(text, " -n {namespace}");
            }
            for object in &wait.names {
                let _ = write!(text, " {object}");
            }
            if let Some(selector) = &wait.selector {
                let _ = write!(text, " -l {}", shell_word(selector));
            }
            let _ = write!(text, " timeout={}", wait.timeout);
            text
        }
        Action::KubeRestart(restart) => format!(
            "{name} {} -n {} {}",
            restart.kind, restart.namespace, restart.name
        ),
        Action::Helm(helm) => format!("helm {} (timeout {})", argv(&helm.args), helm.timeout),
        Action::Exec(exec) => {
            let env: Vec<String> = exec
                .env
                .iter()
                .map(|(key, value)| shell_word(&format!("{key}={value}")))
                .collect();
            let mut text = name.to_string();
            if !env.is_empty() {
                let _ = write!(text, " env {}", env.join(" "));
            }
            let _ = write!(text, " {} (timeout {})", argv(&exec.command), exec.timeout);
            text
        }
        Action::Check(check) => match (&check.equals, &check.matches) {
            (Some(value), _) => format!("{name} {} == {value}", check.fact),
            (None, Some(pattern)) => format!("{name} {} =~ {}", check.fact, shell_word(pattern)),
            (None, None) => format!("{name} {}", check.fact),
        },
        Action::Pause(pause) => format!("{name} \"{}\"", pause.message),
        Action::NodeRun(request) => format!("{name}: {}", request.command.shell_line()),
        Action::NodeStatus(query) => {
            let nodes: Vec<&str> = query
                .nodes
                .iter()
                .map(|target| target.node.as_str())
                .collect();
            format!("{name} {} (timeout {})", nodes.join(","), query.timeout)
        }
    }
}
