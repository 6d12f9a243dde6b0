//! Lint checks across the whole runbook set: every `needs` names a step that exists and runs no
//! later, the steps form no cycle, and an irreversible step comes after a human gate — the rules
//! resolution enforces, found here with file and line before anyone plans.

use std::collections::HashMap;

use petgraph::graph::{DiGraph, NodeIndex};

use super::finding::{Finding, Severity};
use crate::plan::Phase;
use crate::plan::resolve::find_cycle;
use crate::runbook::RunbookSet;

/// Cross-runbook checks: dangling `needs`, needs on a later phase, cycles, ungated irreversible steps.
pub(super) fn check_graph(set: &RunbookSet, findings: &mut Vec<Finding>) {
    let mut graph: DiGraph<(usize, usize), ()> = DiGraph::new();
    let mut nodes: HashMap<(String, String), NodeIndex> = HashMap::new();
    for (runbook_index, loaded) in set.runbooks.iter().enumerate() {
        for (step_index, step) in loaded.runbook.spec.steps.iter().enumerate() {
            let key = (loaded.runbook.metadata.name.clone(), step.id.clone());
            nodes
                .entry(key)
                .or_insert_with(|| graph.add_node((runbook_index, step_index)));
        }
    }
    let phase_of =
        |(runbook, _): (usize, usize)| -> Phase { set.runbooks[runbook].runbook.spec.phase };
    let id_of = |(runbook, step): (usize, usize)| -> String {
        let loaded = &set.runbooks[runbook];
        format!(
            "{}/{}",
            loaded.runbook.metadata.name, loaded.runbook.spec.steps[step].id
        )
    };
    for loaded in &set.runbooks {
        let name = &loaded.runbook.metadata.name;
        for step in &loaded.runbook.spec.steps {
            let Some(&node) = nodes.get(&(name.clone(), step.id.clone())) else {
                continue;
            };
            for need in &step.needs {
                let key = match need.split_once('/') {
                    Some((runbook, id)) => (runbook.to_string(), id.to_string()),
                    None => (name.clone(), need.clone()),
                };
                let line = loaded.line_of_step(&step.id).max(1);
                match nodes.get(&key) {
                    None => findings.push(Finding {
                        file: loaded.source.clone(),
                        line,
                        column: 1,
                        severity: Severity::Error,
                        code: "dangling-need",
                        message: format!(
                            "step `{}` needs `{need}`, which no runbook defines",
                            step.id
                        ),
                    }),
                    Some(&target) => {
                        if phase_of(graph[target]) > loaded.runbook.spec.phase {
                            findings.push(Finding {
                                file: loaded.source.clone(),
                                line,
                                column: 1,
                                severity: Severity::Error,
                                code: "needs-later-phase",
                                message: format!(
                                    "step `{}` ({}) needs `{need}`, which runs in the later phase {}",
                                    step.id,
                                    loaded.runbook.spec.phase,
                                    phase_of(graph[target])
                                ),
                            });
                        }
                        graph.update_edge(target, node, ());
                    }
                }
            }
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        let first = graph[cycle[0]];
        let loaded = &set.runbooks[first.0];
        findings.push(Finding {
            file: loaded.source.clone(),
            line: loaded
                .line_of_step(&loaded.runbook.spec.steps[first.1].id)
                .max(1),
            column: 1,
            severity: Severity::Error,
            code: "cycle",
            message: format!(
                "steps form a cycle: {}",
                cycle
                    .iter()
                    .map(|&node| id_of(graph[node]))
                    .collect::<Vec<_>>()
                    .join(" → ")
            ),
        });
        // Gate analysis below needs a DAG.
        return;
    }
    for node in graph.node_indices() {
        let (runbook, step_index) = graph[node];
        let loaded = &set.runbooks[runbook];
        let step = &loaded.runbook.spec.steps[step_index];
        if !step.irreversible {
            continue;
        }
        // An error at the step's line.
        let at_step = |code, message| Finding {
            file: loaded.source.clone(),
            line: loaded.line_of_step(&step.id).max(1),
            column: 1,
            severity: Severity::Error,
            code,
            message,
        };
        let advised = step.rollback.as_ref().is_some_and(|advice| {
            !advice.before.trim().is_empty() && !advice.after.trim().is_empty()
        });
        if !advised {
            findings.push(at_step(
                "irreversible-without-rollback",
                format!(
                    "irreversible step `{}` has no rollback advice; add `rollback: {{before: ..., after: ...}}` saying how to go back before and after it",
                    step.id
                ),
            ));
        }
        let mut stack: Vec<NodeIndex> = graph
            .neighbors_directed(node, petgraph::Direction::Incoming)
            .collect();
        let mut seen = Vec::new();
        let mut gated = false;
        while let Some(current) = stack.pop() {
            if seen.contains(&current) {
                continue;
            }
            seen.push(current);
            let (r, s) = graph[current];
            if set.runbooks[r].runbook.spec.steps[s].action == "pause" {
                gated = true;
                break;
            }
            stack.extend(graph.neighbors_directed(current, petgraph::Direction::Incoming));
        }
        if !gated {
            findings.push(at_step(
                "ungated-irreversible",
                format!(
                    "irreversible step `{}` has no human gate before it; add a `pause` step to its `needs`",
                    step.id
                ),
            ));
        }
    }
}
