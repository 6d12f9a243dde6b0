//! Lint of the spans a run must not be cut inside (`span: {opens: NAME}` … `span: {closes: NAME}`,
//! e.g. a datastore lock … unlock): within a runbook, in the order its steps are written, each span
//! opened is closed later and each one closed was opened before, no human gate stands between the
//! two ends (the run would stop there with the span open while a person decides), and no `foreach`
//! step opens or closes one (each item would).

use std::collections::BTreeMap;

use super::finding::{Finding, Severity};
use crate::runbook::LoadedRunbook;
use crate::vocabulary::SpanEdge;

/// The span findings of one runbook.
pub(super) fn check_spans(loaded: &LoadedRunbook, findings: &mut Vec<Finding>) {
    let mut report = |step: &str, code: &'static str, message: String| {
        findings.push(Finding {
            file: loaded.source.clone(),
            line: loaded.line_of_step(step).max(1),
            column: 1,
            severity: Severity::Error,
            code,
            message,
        });
    };
    // Span name → the step that opened it, while it is open.
    let mut open: BTreeMap<&str, &str> = BTreeMap::new();
    for step in &loaded.runbook.spec.steps {
        let gate = step.action == "pause" || step.irreversible;
        if gate && let Some((name, opener)) = open.iter().next() {
            report(
                &step.id,
                "gate-inside-span",
                format!(
                    "step `{}` is a human gate inside span `{name}` (opened by `{opener}`): the run would stop there with the span open; move the gate before `{opener}` or after the step that closes it",
                    step.id
                ),
            );
        }
        let Some(edge) = &step.span else { continue };
        if step.foreach.is_some() {
            report(
                &step.id,
                "span-foreach",
                format!(
                    "step `{}` repeats with `foreach` and so would open or close its span once per item; put the span on a step of its own",
                    step.id
                ),
            );
        }
        match edge {
            SpanEdge::Opens(name) => {
                if let Some(first) = open.insert(name, &step.id) {
                    report(
                        &step.id,
                        "span-unclosed",
                        format!(
                            "step `{}` opens span `{name}`, which `{first}` opened and nothing closed yet",
                            step.id
                        ),
                    );
                }
            }
            SpanEdge::Closes(name) => {
                if open.remove(name.as_str()).is_none() {
                    report(
                        &step.id,
                        "span-unopened",
                        format!(
                            "step `{}` closes span `{name}`, which no earlier step of the runbook opens (`span: {{opens: {name}}}`)",
                            step.id
                        ),
                    );
                }
            }
        }
    }
    for (name, opener) in open {
        report(
            opener,
            "span-unclosed",
            format!(
                "step `{opener}` opens span `{name}` and no later step of the runbook closes it (`span: {{closes: {name}}}`)"
            ),
        );
    }
}
