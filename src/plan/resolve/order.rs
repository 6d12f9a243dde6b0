//! Stage 4 of planning: the order. The instances and their `needs` form one DAG (petgraph): a need
//! names `<step>` of the same runbook or `<runbook>/<step>`, and means every instance of that step
//! (all the items of a `foreach`), except that a step going with a `serial` step over the same list
//! needs only its own item, and item n+1 of a serial step waits for item n and the steps going
//! with it. A need on a step that is not in the plan (a runbook not chosen, a condition false) is
//! satisfied; one on a step that exists nowhere, or on a later phase, is refused, and so is a cycle
//! (reported with its path). The DAG is ordered topologically with a stable tie-break — phase,
//! then runbook file order, then step order, then item order — so the same inputs always give the
//! same plan (and digest).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use petgraph::graph::{DiGraph, NodeIndex};

use super::PlanError;
use super::instantiate::{Instance, OrderKey};
use crate::plan::PlannedStep;
use crate::runbook::RunbookSet;

/// Resolves `needs`, builds the DAG, refuses cycles and orders the steps.
pub(super) fn order(
    set: &RunbookSet,
    instances: Vec<Instance>,
) -> Result<Vec<PlannedStep>, PlanError> {
    // Which instances each (runbook, step id) expanded to.
    let mut by_step: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for (index, instance) in instances.iter().enumerate() {
        by_step
            .entry((instance.runbook.clone(), instance.step_id.clone()))
            .or_default()
            .push(index);
    }
    let mut graph: DiGraph<usize, ()> = DiGraph::new();
    let nodes: Vec<NodeIndex> = (0..instances.len()).map(|i| graph.add_node(i)).collect();
    let mut needs: Vec<Vec<usize>> = vec![Vec::new(); instances.len()];
    // What each instance already needs: one step may need every item of a `foreach`.
    let mut seen: Vec<HashSet<usize>> = vec![HashSet::new(); instances.len()];
    for (index, instance) in instances.iter().enumerate() {
        for need in &instance.needs {
            let (runbook, step) = match need.split_once('/') {
                Some((runbook, step)) => (runbook.to_string(), step.to_string()),
                None => (instance.runbook.clone(), need.clone()),
            };
            let exists = set.runbooks.iter().any(|loaded| {
                loaded.runbook.metadata.name == runbook
                    && loaded.runbook.spec.steps.iter().any(|s| s.id == step)
            });
            if !exists {
                return Err(PlanError::DanglingNeed {
                    runbook: instance.runbook.clone(),
                    step: instance.step_id.clone(),
                    need: need.clone(),
                });
            }
            // A need on a step that is not in this plan (skipped runbook or condition) is satisfied.
            let targets = by_step
                .get(&(runbook, step))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let targets: Vec<usize> = match goes_with_serial(&instances, index, targets) {
                Some(same_item) => same_item.into_iter().collect(),
                None => targets.to_vec(),
            };
            for target in targets {
                let target_phase = instances[target].key.0;
                if target_phase > instance.key.0 {
                    return Err(PlanError::NeedsLaterPhase {
                        step: instance.planned.id.clone(),
                        phase: instance.key.0,
                        need: instances[target].planned.id.clone(),
                        need_phase: target_phase,
                    });
                }
                if seen[index].insert(target) {
                    needs[index].push(target);
                    graph.add_edge(nodes[target], nodes[index], ());
                }
            }
        }
    }
    for (index, need) in serial_needs(&instances, &by_step) {
        if seen[index].insert(need) {
            needs[index].push(need);
            graph.add_edge(nodes[need], nodes[index], ());
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        return Err(PlanError::Cycle {
            cycle: cycle
                .into_iter()
                .map(|node| instances[graph[node]].planned.id.clone())
                .collect(),
        });
    }

    // Kahn's algorithm with a min-heap on the stable key: the smallest ready step always goes next,
    // which also keeps phases in order (a step never needs a later phase, checked above).
    let mut waiting: Vec<usize> = needs.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<(OrderKey, usize)>> = instances
        .iter()
        .enumerate()
        .filter(|(index, _)| waiting[*index] == 0)
        .map(|(index, instance)| Reverse((instance.key, index)))
        .collect();
    let mut dependants: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (index, list) in needs.iter().enumerate() {
        for &need in list {
            dependants.entry(need).or_default().push(index);
        }
    }
    let mut ordered = Vec::with_capacity(instances.len());
    while let Some(Reverse((_, index))) = ready.pop() {
        ordered.push(index);
        for &dependant in dependants.get(&index).map(Vec::as_slice).unwrap_or(&[]) {
            waiting[dependant] -= 1;
            if waiting[dependant] == 0 {
                ready.push(Reverse((instances[dependant].key, dependant)));
            }
        }
    }
    let ids: Vec<String> = instances.iter().map(|i| i.planned.id.clone()).collect();
    let mut slots: Vec<Option<Instance>> = instances.into_iter().map(Some).collect();
    Ok(ordered
        .into_iter()
        .filter_map(|index| {
            let mut instance = slots[index].take()?;
            let mut need_ids: Vec<(usize, String)> = needs[index]
                .iter()
                .map(|&need| (need, ids[need].clone()))
                .collect();
            need_ids.sort();
            instance.planned.needs = need_ids.into_iter().map(|(_, id)| id).collect();
            Some(instance.planned)
        })
        .collect())
}

/// When instance `index` needs a `serial` step (`targets`, its items) of its own runbook over the
/// same `foreach` list, it goes with that step item by item: `Some` of the one item it needs (none
/// when the lists differ in length, which they cannot for the same text). `None` otherwise: it needs
/// every item, as any step needing a `foreach` step.
fn goes_with_serial(
    instances: &[Instance],
    index: usize,
    targets: &[usize],
) -> Option<Option<usize>> {
    let instance = &instances[index];
    let first = &instances[*targets.first()?];
    let pairs = first.serial
        && first.runbook == instance.runbook
        && instance.item.is_some()
        && instance.foreach.is_some()
        && first.foreach == instance.foreach;
    pairs.then(|| {
        targets
            .iter()
            .copied()
            .find(|&target| instances[target].item == instance.item)
    })
}

/// The order `serial` steps add, as (instance, the instance it needs): item n+1 of a serial step
/// needs item n, and needs item n of each step going with it (see [`goes_with_serial`]), so one
/// item's action and the steps after it finish before the next item starts.
fn serial_needs(
    instances: &[Instance],
    by_step: &HashMap<(String, String), Vec<usize>>,
) -> Vec<(usize, usize)> {
    let mut extra = Vec::new();
    for items in by_step.values() {
        let serial = items
            .iter()
            .all(|&item| instances[item].serial && instances[item].item.is_some());
        if !serial {
            continue;
        }
        let mut items = items.clone();
        items.sort_by_key(|&item| instances[item].item);
        let first = &instances[items[0]];
        // The steps going with this one: they need it and repeat over the same list.
        let followers: Vec<usize> = instances
            .iter()
            .enumerate()
            .filter(|(_, other)| {
                other.runbook == first.runbook
                    && other.foreach == first.foreach
                    && other.item.is_some()
                    && other.needs.iter().any(|need| {
                        need == &first.step_id
                            || need == &format!("{}/{}", first.runbook, first.step_id)
                    })
            })
            .map(|(index, _)| index)
            .collect();
        for pair in items.windows(2) {
            let (previous, next) = (pair[0], pair[1]);
            extra.push((next, previous));
            let previous_item = instances[previous].item;
            for &follower in &followers {
                if instances[follower].item == previous_item {
                    extra.push((next, follower));
                }
            }
        }
    }
    extra
}

/// One cycle of the graph as a closed path (first node repeated at the end), or `None`.
pub(crate) fn find_cycle<N>(graph: &DiGraph<N, ()>) -> Option<Vec<NodeIndex>> {
    for component in petgraph::algo::tarjan_scc(graph) {
        let self_loop = component.len() == 1 && graph.contains_edge(component[0], component[0]);
        if component.len() < 2 && !self_loop {
            continue;
        }
        // Walk inside the component from its smallest node until a node repeats.
        let start = *component.iter().min()?;
        let mut path = vec![start];
        let mut current = start;
        loop {
            let mut next: Vec<NodeIndex> = graph
                .neighbors(current)
                .filter(|node| component.contains(node))
                .collect();
            next.sort();
            let node = *next.first()?;
            if let Some(position) = path.iter().position(|&seen| seen == node) {
                let mut cycle = path[position..].to_vec();
                cycle.push(node);
                return Some(cycle);
            }
            path.push(node);
            current = node;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Phase;
    use crate::plan::resolve::test_support::runbook_set;

    /// A runbook `name` with steps of these ids (all pauses), for the need checks.
    fn runbook(name: &str, steps: &[&str]) -> String {
        let steps: String = steps
            .iter()
            .map(|id| format!("    - id: {id}\n      description: x\n      action: pause\n"))
            .collect();
        format!(
            "apiVersion: netctl.projectcalico.org/v1\nkind: Runbook\nmetadata:\n  name: {name}\n  description: test\n\
             spec:\n  phase: pre-upgrade\n  steps:\n{steps}"
        )
    }

    fn instance(runbook: &str, step: &str, key: OrderKey, needs: &[&str]) -> Instance {
        let id = match key.3 {
            0 => format!("{runbook}/{step}"),
            item => format!("{runbook}/{step}[{item}]"),
        };
        let planned: PlannedStep = serde_json::from_value(serde_json::json!({
            "id": id,
            "runbook": runbook,
            "phase": key.0,
            "description": "x",
            "action": "pause",
            "with": {"message": "x"},
            "reason": "x",
        }))
        .unwrap();
        Instance {
            key,
            runbook: runbook.into(),
            step_id: step.into(),
            needs: needs.iter().map(|need| need.to_string()).collect(),
            foreach: None,
            item: None,
            serial: false,
            planned,
        }
    }

    fn ordered(steps: Vec<PlannedStep>) -> Vec<(String, Vec<String>)> {
        steps
            .into_iter()
            .map(|step| (step.id, step.needs))
            .collect()
    }

    const PRE: Phase = Phase::PreUpgrade;

    #[test]
    fn needs_come_first_and_the_rest_keeps_phase_runbook_and_step_order() {
        let set = runbook_set(
            &[runbook("a", &["one", "two"]), runbook("b", &["three"])],
            "",
        );
        let instances = vec![
            instance("b", "three", (Phase::Upgrade, 1, 0, 0), &[]),
            instance("a", "one", (PRE, 0, 0, 0), &["b/three"]),
            instance("a", "two", (PRE, 0, 1, 0), &[]),
        ];
        let error = order(&set, instances).unwrap_err();
        assert!(
            matches!(error, PlanError::NeedsLaterPhase { .. }),
            "{error}"
        );

        let instances = vec![
            instance("a", "one", (PRE, 0, 0, 0), &["two"]),
            instance("a", "two", (PRE, 0, 1, 0), &[]),
            instance("b", "three", (PRE, 1, 0, 0), &["absent/none"]),
        ];
        assert!(matches!(
            order(&set, instances),
            Err(PlanError::DanglingNeed { .. })
        ));

        let instances = vec![
            instance("b", "three", (PRE, 1, 0, 0), &["a/one"]),
            instance("a", "one", (PRE, 0, 0, 0), &["two"]),
            instance("a", "two", (PRE, 0, 1, 0), &[]),
        ];
        assert_eq!(
            ordered(order(&set, instances).unwrap()),
            [
                ("a/two".to_string(), vec![]),
                ("a/one".to_string(), vec!["a/two".to_string()]),
                ("b/three".to_string(), vec!["a/one".to_string()]),
            ]
        );
    }

    #[test]
    fn a_cycle_is_refused_with_its_path() {
        let set = runbook_set(&[runbook("a", &["one", "two"])], "");
        let instances = vec![
            instance("a", "one", (PRE, 0, 0, 0), &["two"]),
            instance("a", "two", (PRE, 0, 1, 0), &["one"]),
        ];
        let Err(PlanError::Cycle { cycle }) = order(&set, instances) else {
            panic!("a cycle");
        };
        assert_eq!(cycle, ["a/one", "a/two", "a/one"]);
    }

    #[test]
    fn a_step_going_with_a_serial_step_follows_it_item_by_item() {
        let set = runbook_set(&[runbook("a", &["restart", "wait"])], "");
        let mut instances = Vec::new();
        for item in 0..2 {
            let mut restart = instance("a", "restart", (PRE, 0, 0, item), &[]);
            restart.serial = true;
            let mut wait = instance("a", "wait", (PRE, 0, 1, item), &["restart"]);
            for each in [&mut restart, &mut wait] {
                each.foreach = Some("{{ facts.nodes }}".into());
                each.item = Some(item);
                each.planned.id = format!("{}[{item}]", each.planned.id.trim_end_matches("[1]"));
            }
            instances.extend([restart, wait]);
        }
        let ids: Vec<(String, Vec<String>)> = ordered(order(&set, instances).unwrap());
        assert_eq!(
            ids,
            [
                ("a/restart[0]".to_string(), vec![]),
                ("a/wait[0]".to_string(), vec!["a/restart[0]".to_string()]),
                (
                    "a/restart[1]".to_string(),
                    vec!["a/restart[0]".to_string(), "a/wait[0]".to_string()]
                ),
                ("a/wait[1]".to_string(), vec!["a/restart[1]".to_string()]),
            ]
        );
    }
}
