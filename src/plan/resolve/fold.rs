//! Folding a `foreach` of `resource.label` into one batched step: when every item sets or removes
//! the same label and differs only in the resource's name, the items become one
//! [`Action::ResourceLabelEach`] step carrying the names, which the executor labels in batched
//! transactions with per-item progress (one step instead of one step, one write and two checkpoint
//! transitions per item). When `name` is exactly `{{ item.name }}` and nothing else of the step
//! reads `item` but a plain `{{ item.name }}`, only the first item is rendered and the others give
//! their names: the same step, digest for digest, as rendering each.
//!
//! This module decides only whether and how items fold; rendering them is
//! [`super::instantiate`]'s business.

use serde_json::Value as Json;

use super::instantiate::Instance;
use crate::plan::Action;
use crate::plan::action::{ResourceLabel, ResourceLabelEach, compact_list};
use crate::runbook::Step;
use crate::runbook::template::Templates;

/// The instances of a `foreach` step of `resource.label` as one step of
/// [`Action::ResourceLabelEach`], when every item sets or removes the same label and differs only
/// in the resource's name (its `verify` likewise): the executor then labels them in batched
/// transactions with per-item progress, instead of one step, one write and two checkpoint
/// transitions per item. `None` when they do not fold (they stay one step each).
pub(super) fn fold_label_steps(expanded: &[Instance], id: &str, reason: &str) -> Option<Instance> {
    let first = expanded.first()?;
    let labels: Option<Vec<&ResourceLabel>> = expanded
        .iter()
        .map(|instance| match &instance.planned.action {
            Action::ResourceLabel(label) => Some(label),
            _ => None,
        })
        .collect();
    let action = ResourceLabelEach::fold(&labels?)?;
    let verify = match &first.planned.verify {
        None => None,
        Some(_) => {
            let verifies: Option<Vec<&ResourceLabel>> = expanded
                .iter()
                .map(|instance| match &instance.planned.verify {
                    Some(Action::ResourceLabel(label)) => Some(label),
                    _ => None,
                })
                .collect();
            Some(Action::ResourceLabelEach(ResourceLabelEach::fold(
                &verifies?,
            )?))
        }
    };
    if expanded
        .iter()
        .any(|instance| instance.planned.verify.is_some() != verify.is_some())
    {
        return None;
    }
    Some(folded_instance(first, action, verify, id, reason))
}

/// The folded step of [`fold_label_steps`] when only the first item was rendered
/// ([`names_if_only_the_name_varies`]): its label with every item's name. The same step as
/// rendering every item and folding them gives.
pub(super) fn fold_by_name(
    first: &Instance,
    names: Vec<String>,
    id: &str,
    reason: &str,
) -> Option<Instance> {
    let each = |action: &Action| match action {
        Action::ResourceLabel(label) if label.labels.is_none() => Some(ResourceLabelEach {
            kind: label.kind,
            namespace: label.namespace.clone(),
            key: label.key.clone(),
            value: label.value.clone(),
            overwrite: label.overwrite,
            remove: label.remove,
            names: names.clone(),
        }),
        _ => None,
    };
    let action = each(&first.planned.action)?;
    let verify = match &first.planned.verify {
        None => None,
        Some(verify) => Some(Action::ResourceLabelEach(each(verify)?)),
    };
    Some(folded_instance(first, action, verify, id, reason))
}

/// The items of a `foreach` step of `resource.label` by name, when the name is all an item can
/// change: `name` (of `with` and of the `verify` label) is exactly `{{ item.name }}`, no other
/// argument reads `item`, the description, requirement and rollback advice read only
/// `{{ item.name }}`, and every item has a string `name`. Then rendering the first item and
/// taking the others' names gives what rendering each would. `None` otherwise: each item is
/// rendered (and folded when they turn out alike).
pub(super) fn names_if_only_the_name_varies(
    templates: &Templates,
    step: &Step,
    items: &[Option<Json>],
) -> Option<Vec<String>> {
    if step.action != "resource.label" || !label_varies_only_by_name(templates, step.with.as_ref())
    {
        return None;
    }
    if let Some(verify) = &step.verify {
        if verify.action != "resource.label"
            || !label_varies_only_by_name(templates, verify.with.as_ref())
        {
            return None;
        }
    }
    let mut texts = vec![step.description.as_str()];
    texts.extend(
        step.requires
            .as_ref()
            .map(|requirement| requirement.node_agents.as_str()),
    );
    if let Some(advice) = &step.rollback {
        texts.extend([advice.before.as_str(), advice.after.as_str()]);
    }
    if !texts
        .iter()
        .all(|text| reads_only_the_item_name(templates, text))
    {
        return None;
    }
    items
        .iter()
        .map(|item| Some(item.as_ref()?.get("name")?.as_str()?.to_string()))
        .collect()
}

/// `with` of a one-key label whose `name` is exactly `{{ item.name }}` and whose other arguments
/// do not read `item`.
fn label_varies_only_by_name(
    templates: &Templates,
    with: Option<&serde_json::Map<String, Json>>,
) -> bool {
    let Some(with) = with else {
        return false;
    };
    let name_is_item_name = with
        .get("name")
        .and_then(Json::as_str)
        .and_then(|text| text.trim().strip_prefix("{{")?.strip_suffix("}}"))
        .is_some_and(|expression| expression.trim() == "item.name");
    name_is_item_name
        && !with.contains_key("labels")
        && with
            .iter()
            .filter(|(key, _)| key.as_str() != "name")
            .all(|(_, value)| !reads_item(templates, value))
}

/// Whether any template in `value` reads `item` (a template that does not parse counts as
/// reading it: the per-item rendering reports it).
fn reads_item(templates: &Templates, value: &Json) -> bool {
    match value {
        Json::String(text) => templates.variables(text, false).map_or(true, |variables| {
            variables
                .iter()
                .any(|variable| variable == "item" || variable.starts_with("item."))
        }),
        Json::Array(values) => values.iter().any(|value| reads_item(templates, value)),
        Json::Object(map) => map.values().any(|value| reads_item(templates, value)),
        _ => false,
    }
}

/// Whether `text` reads `item` only as a plain `{{ item.name }}` (no filter, no other field).
fn reads_only_the_item_name(templates: &Templates, text: &str) -> bool {
    static ITEM_NAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\{\{\s*item\.name\s*\}\}").expect("a valid pattern")
    });
    !reads_item(
        templates,
        &Json::String(ITEM_NAME.replace_all(text, "").into_owned()),
    )
}

/// One step for all the items of a folded `foreach`: the first item's step with the batched
/// `action` and `verify`, its description extended by the other items' names.
fn folded_instance(
    first: &Instance,
    action: ResourceLabelEach,
    verify: Option<Action>,
    id: &str,
    reason: &str,
) -> Instance {
    let count = action.names.len();
    let description = match count {
        1 => first.planned.description.clone(),
        _ => format!(
            "{}; the same for {} more: {}",
            first.planned.description,
            count - 1,
            compact_list(&action.names[1..])
        ),
    };
    let mut planned = first.planned.clone();
    planned.id = id.to_string();
    planned.description = description;
    planned.reason = format!("{reason}; {count} item(s): {}", action.names_shown());
    planned.action = Action::ResourceLabelEach(action);
    planned.verify = verify;
    Instance {
        key: first.key,
        runbook: first.runbook.clone(),
        step_id: first.step_id.clone(),
        needs: first.needs.clone(),
        foreach: None,
        item: None,
        serial: false,
        planned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Phase, PlannedStep};
    use crate::resource::Kind;

    fn with(text: &str) -> serde_json::Map<String, Json> {
        serde_json::from_str(text).unwrap()
    }

    fn label(name: &str, value: &str) -> Instance {
        Instance {
            key: (Phase::PreUpgrade, 0, 0, 0),
            runbook: "book".into(),
            step_id: "mark".into(),
            needs: vec!["list".into()],
            foreach: Some("{{ facts.x }}".into()),
            item: Some(0),
            serial: false,
            planned: PlannedStep::new(
                format!("book/mark[{name}]"),
                "book",
                Phase::PreUpgrade,
                Action::ResourceLabel(ResourceLabel {
                    kind: Kind::HostEndpoint,
                    name: name.into(),
                    namespace: None,
                    key: "marked".into(),
                    value: Some(value.into()),
                    labels: None,
                    overwrite: true,
                    remove: false,
                }),
                format!("Label {name}"),
                format!("why; item `{name}`"),
            ),
        }
    }

    #[test]
    fn only_a_name_of_exactly_the_item_name_lets_the_other_items_be_names() {
        let templates = Templates::new();
        let by_name = with(r#"{"kind": "HostEndpoint", "name": "{{ item.name }}", "key": "k"}"#);
        assert!(label_varies_only_by_name(&templates, Some(&by_name)));
        let filtered = with(r#"{"kind": "HostEndpoint", "name": "{{ item.name | upper }}"}"#);
        assert!(!label_varies_only_by_name(&templates, Some(&filtered)));
        let value_reads_item = with(
            r#"{"kind": "HostEndpoint", "name": "{{ item.name }}", "value": "{{ item.node }}"}"#,
        );
        assert!(!label_varies_only_by_name(
            &templates,
            Some(&value_reads_item)
        ));
        assert!(reads_only_the_item_name(
            &templates,
            "Label {{ item.name }} now"
        ));
        assert!(!reads_only_the_item_name(
            &templates,
            "Label {{ item.node }}"
        ));
        assert!(!reads_only_the_item_name(&templates, "Label {{ item.name"));
    }

    #[test]
    fn labels_alike_but_for_the_name_fold_into_one_step_with_every_name() {
        let expanded = [label("h1", "v"), label("h2", "v")];
        let folded = fold_label_steps(&expanded, "book/mark", "why").unwrap();
        assert_eq!(folded.planned.id, "book/mark");
        assert_eq!(
            folded.planned.description,
            "Label h1; the same for 1 more: h2"
        );
        assert_eq!(folded.needs, ["list"]);
        let Action::ResourceLabelEach(each) = &folded.planned.action else {
            panic!("a batched label");
        };
        assert_eq!(each.names, ["h1", "h2"]);
    }

    #[test]
    fn labels_that_differ_in_more_than_the_name_stay_steps_of_their_own() {
        let expanded = [label("h1", "v"), label("h2", "w")];
        assert!(fold_label_steps(&expanded, "book/mark", "why").is_none());
    }
}
