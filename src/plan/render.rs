//! Printing plans: a readable text tree, stable JSON, a Markdown change-ticket checklist, and the DAG
//! as Graphviz `dot` or Mermaid.
//!
//! Every format shows the same content — phase, step, the exact action with its rendered arguments,
//! why the step is included, and marks for points of no return (irreversible) and human gates
//! (`pause`). Output is deterministic so it can be snapshot-tested and diffed. This module only
//! formats; it never changes a plan.

use std::fmt::Write as _;

use super::action::Action;
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

/// `(name, value, origin)` of every fact the plan shows, values as compact JSON unless plain strings.
fn fact_rows(plan: &Plan) -> Vec<(String, String, String)> {
    plan.facts
        .shown()
        .into_iter()
        .map(|(name, value, origin)| {
            let value = match value {
                serde_json::Value::String(text) if text.is_empty() => "\"\"".to_string(),
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            };
            (name.to_string(), value, origin.to_string())
        })
        .collect()
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
    if let Some(canary) = &plan.canary {
        let _ = writeln!(out, "{}", canary.line());
    }
    let mut number = 0;
    for (phase, steps) in phases(plan) {
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
            let _ = writeln!(out, "{rail}     run:    {}", step.action);
            if let Some(verify) = &step.verify {
                let _ = writeln!(out, "{rail}     verify: {verify}");
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
            if let Some(undo) = &step.undo {
                let _ = writeln!(out, "{rail}     undo:   {}", undo_line(undo));
            }
            match &step.span {
                Some(crate::vocabulary::SpanEdge::Opens(name)) => {
                    let _ = writeln!(
                        out,
                        "{rail}     span:   opens `{name}` (never cut: a maintenance window holds it whole)"
                    );
                }
                Some(crate::vocabulary::SpanEdge::Closes(name)) => {
                    let _ = writeln!(out, "{rail}     span:   closes `{name}`");
                }
                None => {}
            }
            let _ = writeln!(out, "{rail}     why:    {}", step.reason);
        }
    }
    for (heading, body) in sections(plan) {
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

/// The phases that have steps, in the order they run, each with its steps.
fn phases(plan: &Plan) -> impl Iterator<Item = (Phase, Vec<&PlannedStep>)> {
    Phase::ALL.into_iter().filter_map(|phase| {
        let steps: Vec<&PlannedStep> = plan.steps_in(phase).collect();
        (!steps.is_empty()).then_some((phase, steps))
    })
}

/// What follows the steps: the hand edits looked for, then the manifest overlays.
fn sections(plan: &Plan) -> Vec<(String, String)> {
    let mut sections = discovery_sections(plan);
    sections.extend(overlay_sections(plan));
    sections
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
    if let Some(canary) = &plan.canary {
        let _ = writeln!(out, "\n**{}**", canary.line());
    }
    let mut number = 0;
    for (phase, steps) in phases(plan) {
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
                step.action.to_string().replace('`', "'")
            );
            if let Some(verify) = &step.verify {
                let _ = writeln!(
                    out,
                    "  Verify: `{}`  ",
                    verify.to_string().replace('`', "'")
                );
            }
            if let Some(advice) = &step.rollback {
                let _ = writeln!(out, "  Rollback before: {}  ", advice.before);
                let _ = writeln!(out, "  Rollback after: {}  ", advice.after);
            }
            if let Some(undo) = &step.undo {
                let _ = writeln!(
                    out,
                    "  Undo (`netctl upgrade rollback`): {}  ",
                    undo_line(undo)
                );
            }
            let _ = writeln!(out, "  Why: {}", step.reason);
        }
    }
    for (heading, body) in sections(plan) {
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
    for (phase, steps) in phases(plan) {
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
    for (phase, steps) in phases(plan) {
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

/// What `upgrade rollback` runs to undo a step, in one line.
fn undo_line(undo: &super::PlannedUndo) -> String {
    match (&undo.action, undo.from_backup) {
        (Some(action), _) => format!("{} ({action})", undo.description),
        (None, true) => format!("{} (from the run's backup)", undo.description),
        (None, false) => undo.description.clone(),
    }
}
