//! Stage 3 of planning: the steps of each chosen runbook, rendered. A step whose `when` holds is
//! rendered once, or once per item of its `foreach` list (`item` laid over the step's context),
//! into an [`Instance`]: the [`PlannedStep`] with its typed action (a resource write's `file:`
//! loaded and rendered into documents), its `verify`, description, requirement, rollback
//! advice and `undo`, and what ordering needs to know (its key, `needs`, `foreach` and `serial`). The items of
//! a `resource.label` step that differ only in the resource's name become one batched step
//! ([`super::fold`]).
//!
//! This stage orders nothing: that is [`super::order`]'s business.

use serde_json::Value as Json;

use super::fold::{fold_by_name, fold_label_steps, names_if_only_the_name_varies};
use super::select::Selected;
use super::{PlanError, template_error};
use crate::plan::{Action, Phase, PlannedStep};
use crate::resource::Resource;
use crate::runbook::template::{TemplateError, Templates, context_from};
use crate::runbook::{LoadedRunbook, RollbackAdvice, RunbookSet, Step};

/// (phase, runbook order, step order, item order): the stable tie-break of the topological sort.
pub(super) type OrderKey = (Phase, usize, usize, usize);

/// One expanded step before ordering.
#[derive(Debug)]
pub(super) struct Instance {
    pub key: OrderKey,
    pub runbook: String,
    pub step_id: String,
    pub needs: Vec<String>,
    /// The `foreach` text and this instance's item, for `serial` steps and the steps going with
    /// them.
    pub foreach: Option<String>,
    pub item: Option<usize>,
    pub serial: bool,
    pub planned: PlannedStep,
}

/// Renders every step of one chosen runbook (each `foreach` item separately, unless the items
/// fold into one step) into instances.
pub(super) fn instantiate(
    set: &RunbookSet,
    templates: &Templates,
    selected: &Selected<'_>,
    instances: &mut Vec<Instance>,
) -> Result<(), PlanError> {
    let loaded = selected.loaded;
    let name = &loaded.runbook.metadata.name;
    let mut seen = Vec::new();
    for (step_index, step) in loaded.runbook.spec.steps.iter().enumerate() {
        if seen.contains(&step.id) {
            return Err(PlanError::DuplicateStep {
                runbook: name.clone(),
                step: step.id.clone(),
            });
        }
        seen.push(step.id.clone());
        let scope = StepScope {
            set,
            templates,
            loaded,
            step,
            context: context_from(&selected.context),
        };
        let Some(reason) = scope.reason(&selected.reason)? else {
            continue;
        };
        let key = (loaded.runbook.spec.phase, selected.index, step_index, 0);
        instances.extend(scope.instances(key, &reason)?);
    }
    Ok(())
}

/// One step of one runbook, with the context its templates see (before any `item`).
struct StepScope<'a> {
    set: &'a RunbookSet,
    templates: &'a Templates,
    loaded: &'a LoadedRunbook,
    step: &'a Step,
    context: minijinja::Value,
}

impl StepScope<'_> {
    fn error(&self, source: TemplateError) -> PlanError {
        template_error(self.loaded, Some(&self.step.id), source)
    }

    /// `<runbook>/<step>`.
    fn path(&self) -> String {
        format!("{}/{}", self.loaded.runbook.metadata.name, self.step.id)
    }

    /// The runbook's reason, extended by the step's condition; `None` when the condition is false.
    fn reason(&self, runbook_reason: &str) -> Result<Option<String>, PlanError> {
        let Some(condition) = &self.step.when else {
            return Ok(Some(runbook_reason.to_string()));
        };
        let holds = self
            .templates
            .condition(condition, &self.context)
            .map_err(|source| self.error(source))?;
        Ok(holds.then(|| format!("{runbook_reason}; step condition `{condition}`")))
    }

    /// The items of the step: `[None]` without `foreach`, else each item of the rendered list.
    fn items(&self) -> Result<Vec<Option<Json>>, PlanError> {
        let Some(expression) = &self.step.foreach else {
            return Ok(vec![None]);
        };
        let value = self
            .templates
            .render_string(expression, &self.context)
            .map_err(|source| self.error(source))?;
        match value {
            Json::Array(items) => Ok(items.into_iter().map(Some).collect()),
            other => Err(PlanError::ForeachNotList {
                runbook: self.loaded.runbook.metadata.name.clone(),
                step: self.step.id.clone(),
                found: other.to_string(),
            }),
        }
    }

    /// The instances of the step: one per item, or one folded step for them all.
    fn instances(&self, key: OrderKey, reason: &str) -> Result<Vec<Instance>, PlanError> {
        let items = self.items()?;
        let foreach = self.step.foreach.is_some();
        let folds = foreach && !self.step.serial;
        // A label that only the item's name changes is rendered for the first item alone; the
        // other items give their names (rendering every item made planning 10k host endpoints
        // take seconds).
        let mut names = folds
            .then(|| names_if_only_the_name_varies(self.templates, self.step, &items))
            .flatten();
        let path = self.path();
        let mut expanded = Vec::new();
        for (item_index, item) in items.into_iter().enumerate() {
            let (item_key, item_number) = match &item {
                Some(_) => ((key.0, key.1, key.2, item_index), Some(item_index)),
                None => (key, None),
            };
            expanded.push(self.instance(item_key, item_number, item.as_ref(), reason)?);
            // Rendered the first item: the others are their names.
            if let Some(names) = names.take() {
                if let Some(folded) = fold_by_name(&expanded[0], names, &path, reason) {
                    return Ok(vec![folded]);
                }
            }
        }
        // A serial step's items stay steps of their own: the order is the point.
        if folds {
            if let Some(folded) = fold_label_steps(&expanded, &path, reason) {
                return Ok(vec![folded]);
            }
        }
        Ok(expanded)
    }

    /// The step rendered for one item (or for none).
    fn instance(
        &self,
        key: OrderKey,
        item_index: Option<usize>,
        item: Option<&Json>,
        reason: &str,
    ) -> Result<Instance, PlanError> {
        let step = self.step;
        let mut id = self.path();
        let mut reason = reason.to_string();
        // The item is laid over the step's context, which is built once: copying the whole
        // context per item made planning quadratic in the number of items (the facts hold the
        // list being iterated).
        let context = match (item, item_index) {
            (Some(item), Some(index)) => {
                id = format!("{id}[{index}]");
                reason = format!("{reason}; item `{}`", describe_item(item));
                minijinja::value::merge_maps([
                    self.context.clone(),
                    minijinja::context! { item => context_from(item) },
                ])
            }
            _ => self.context.clone(),
        };
        let action = self.action(&step.action, step.with.as_ref(), &context)?;
        let verify = match &step.verify {
            Some(verify) => Some(self.action(&verify.action, verify.with.as_ref(), &context)?),
            None => None,
        };
        let description = self.text(&step.description, &context)?;
        let requires = match &step.requires {
            Some(requirement) => Some(crate::runbook::Requirement {
                node_agents: self.text(&requirement.node_agents, &context)?,
            }),
            None => None,
        };
        let rollback = match &step.rollback {
            Some(advice) => Some(RollbackAdvice {
                before: self.text(&advice.before, &context)?,
                after: self.text(&advice.after, &context)?,
            }),
            None => None,
        };
        let undo = match &step.undo {
            Some(undo) => Some(crate::plan::PlannedUndo {
                description: self.text(&undo.description, &context)?,
                action: match &undo.action {
                    Some(action) => Some(self.action(action, undo.with.as_ref(), &context)?),
                    None => None,
                },
                from_backup: undo.from_backup,
            }),
            None => None,
        };
        let runbook = self.loaded.runbook.metadata.name.clone();
        Ok(Instance {
            key,
            runbook: runbook.clone(),
            step_id: step.id.clone(),
            needs: step.needs.clone(),
            foreach: step.foreach.clone(),
            item: item_index.filter(|_| item.is_some()),
            serial: step.serial,
            planned: PlannedStep {
                id,
                runbook,
                phase: key.0,
                description,
                needs: Vec::new(),
                action,
                verify,
                irreversible: step.irreversible,
                requires,
                rollback,
                undo,
                retry: step.retry.clone(),
                register: step.register.clone(),
                reason,
                span: step.span.clone(),
            },
        })
    }

    /// A template rendered as text (a value that is not a string is shown as JSON).
    fn text(&self, template: &str, context: &minijinja::Value) -> Result<String, PlanError> {
        let rendered = self
            .templates
            .render_string(template, context)
            .map_err(|source| self.error(source))?;
        Ok(match rendered {
            Json::String(text) => text,
            other => other.to_string(),
        })
    }

    fn action(
        &self,
        action: &str,
        with: Option<&serde_json::Map<String, Json>>,
        context: &minijinja::Value,
    ) -> Result<Action, PlanError> {
        render_action(
            self.set,
            self.templates,
            self.loaded,
            self.step,
            action,
            with,
            context,
        )
    }
}

/// Renders `with` and builds the typed action; `file:` arguments of resource writes are loaded,
/// rendered per value and carried as documents.
pub(crate) fn render_action(
    set: &RunbookSet,
    templates: &Templates,
    loaded: &LoadedRunbook,
    step: &Step,
    action: &str,
    with: Option<&serde_json::Map<String, Json>>,
    context: &minijinja::Value,
) -> Result<Action, PlanError> {
    let runbook = &loaded.runbook.metadata.name;
    let with = match with {
        Some(with) => templates
            .render_value(&Json::Object(with.clone()), context)
            .map_err(|source| template_error(loaded, Some(&step.id), source))?,
        None => Json::Null,
    };
    let with = match (action, with) {
        ("resource.create" | "resource.apply" | "resource.replace", Json::Object(mut map))
            if map.contains_key("file") =>
        {
            let file = map
                .get("file")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string();
            let documents =
                load_documents(set, templates, &file, context).map_err(|error| match error {
                    DocumentsError::Missing => PlanError::MissingFile {
                        runbook: runbook.clone(),
                        step: step.id.clone(),
                        file: file.clone(),
                    },
                    DocumentsError::Template(source) => {
                        template_error(loaded, Some(&step.id), source)
                    }
                    DocumentsError::Invalid(message) => PlanError::InvalidDocuments {
                        runbook: runbook.clone(),
                        step: step.id.clone(),
                        file: file.clone(),
                        message,
                    },
                })?;
            map.insert("documents".into(), documents);
            Json::Object(map)
        }
        (_, with) => with,
    };
    let action = Action::from_parts(action, with).map_err(|source| PlanError::Action {
        runbook: runbook.clone(),
        step: step.id.clone(),
        source,
    })?;
    // A secret on a command line could neither be kept in the plan nor supplied at run time.
    if let Some(option) = action.secret_on_command_line() {
        return Err(PlanError::SecretOnCommandLine {
            runbook: runbook.clone(),
            step: step.id.clone(),
            option,
        });
    }
    Ok(action)
}

/// How a `foreach` item appears in a step's reason: strings as they are, objects by kind and name.
fn describe_item(item: &Json) -> String {
    match item {
        Json::String(text) => text.clone(),
        Json::Object(map) if map.contains_key("name") => {
            let text = |key: &str| map.get(key).and_then(Json::as_str).unwrap_or_default();
            let mut shown = text("name").to_string();
            if let Some(namespace) = map.get("namespace").and_then(Json::as_str) {
                shown = format!("{namespace}/{shown}");
            }
            match map.get("kind").and_then(Json::as_str) {
                Some(kind) => format!("{kind} {shown}"),
                None => shown,
            }
        }
        other => other.to_string(),
    }
}

enum DocumentsError {
    Missing,
    Template(TemplateError),
    Invalid(String),
}

/// Reads a multi-document YAML file beside the runbooks, renders each string, checks each document
/// is a resource, and returns them as a JSON list.
fn load_documents(
    set: &RunbookSet,
    templates: &Templates,
    file: &str,
    context: &minijinja::Value,
) -> Result<Json, DocumentsError> {
    let text = set.files.get(file).ok_or(DocumentsError::Missing)?;
    let mut documents = Vec::new();
    let values = crate::yaml::read_values(text)
        .map_err(|error| DocumentsError::Invalid(error.to_string()))?;
    for value in values {
        let rendered = templates
            .render_value(&value, context)
            .map_err(DocumentsError::Template)?;
        let resource: Resource = crate::resource::resource_from_value(rendered.clone())
            .map_err(DocumentsError::Invalid)?;
        documents.push(serde_json::to_value(&resource).unwrap_or(rendered));
    }
    if documents.is_empty() {
        return Err(DocumentsError::Invalid("the file is empty".to_string()));
    }
    Ok(Json::Array(documents))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::resolve::test_support::{facts, runbook_set};

    fn instances_of(steps: &str, files: &[(&str, &str)]) -> Result<Vec<Instance>, PlanError> {
        let runbook = format!(
            "apiVersion: netctl.projectcalico.org/v1\nkind: Runbook\nmetadata:\n  name: book\n  description: test\n\
             spec:\n  phase: pre-upgrade\n  params:\n    label:\n      default: marked\n  steps:\n{steps}"
        );
        let mut set = runbook_set(&[runbook], "");
        for (name, text) in files {
            set.files.insert(name.to_string(), text.to_string());
        }
        let from = "v3.20.0".parse().unwrap();
        let mut facts = facts(&from);
        facts
            .set("all_interfaces_host_endpoints", "h1,h2,h3")
            .unwrap();
        let mut context = super::super::base_context(&from, &"v3.29.7".parse().unwrap(), &facts);
        context.insert("params".into(), serde_json::json!({"label": "marked"}));
        let selected = Selected {
            index: 4,
            loaded: &set.runbooks[0],
            context,
            reason: "every path".into(),
        };
        let mut instances = Vec::new();
        instantiate(&set, &Templates::new(), &selected, &mut instances)?;
        Ok(instances)
    }

    #[test]
    fn each_item_of_a_foreach_is_a_step_with_its_item_in_the_id_and_reason() {
        let instances = instances_of(
            "    - id: show\n      description: Look at {{ item.name }}\n      foreach: \"{{ facts.all_interfaces_host_endpoints }}\"\n      serial: true\n      action: resource.get\n      with: {kind: HostEndpoint, name: \"{{ item.name }}\"}\n",
            &[],
        )
        .unwrap();
        let ids: Vec<&str> = instances.iter().map(|i| i.planned.id.as_str()).collect();
        assert_eq!(ids, ["book/show[0]", "book/show[1]", "book/show[2]"]);
        assert_eq!(instances[1].key, (Phase::PreUpgrade, 4, 0, 1));
        assert_eq!(instances[1].item, Some(1));
        assert_eq!(instances[1].planned.description, "Look at h2");
        assert_eq!(instances[1].planned.reason, "every path; item `h2`");
    }

    #[test]
    fn a_label_that_only_the_name_changes_is_one_batched_step() {
        let instances = instances_of(
            "    - id: mark\n      description: Label {{ item.name }}\n      foreach: \"{{ facts.all_interfaces_host_endpoints }}\"\n      action: resource.label\n      with: {kind: HostEndpoint, name: \"{{ item.name }}\", key: \"{{ params.label }}\", value: \"\"}\n",
            &[],
        )
        .unwrap();
        assert_eq!(instances.len(), 1);
        let Action::ResourceLabelEach(each) = &instances[0].planned.action else {
            panic!(
                "expected a batched label: {:?}",
                instances[0].planned.action
            );
        };
        assert_eq!(each.names, ["h1", "h2", "h3"]);
        assert_eq!(each.key, "marked");
        assert_eq!(instances[0].planned.id, "book/mark");
        assert_eq!(instances[0].item, None);
    }

    #[test]
    fn a_false_step_condition_skips_the_step_and_a_true_one_is_named() {
        let instances = instances_of(
            "    - id: never\n      description: no\n      when: \"false\"\n      action: pause\n      with: {message: wait}\n    - id: always\n      description: yes\n      when: \"params.label == 'marked'\"\n      action: pause\n      with: {message: wait}\n",
            &[],
        )
        .unwrap();
        assert_eq!(instances.len(), 1);
        assert_eq!(
            instances[0].planned.reason,
            "every path; step condition `params.label == 'marked'`"
        );
        assert_eq!(instances[0].key, (Phase::PreUpgrade, 4, 1, 0));
    }

    #[test]
    fn a_file_of_documents_is_rendered_into_the_write() {
        let file = "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata:\n  name: \"{{ params.label }}\"\nspec:\n  Order: 10\n";
        let instances = instances_of(
            "    - id: write\n      description: write\n      action: resource.apply\n      with: {file: policy.yaml}\n",
            &[("policy.yaml", file)],
        )
        .unwrap();
        let Action::ResourceApply(apply) = &instances[0].planned.action else {
            panic!("expected an apply");
        };
        let json = serde_json::to_value(apply).unwrap();
        assert_eq!(json["documents"][0]["metadata"]["name"], "marked");
        assert_eq!(json["documents"][0]["spec"]["order"], 10, "{json}");
        let missing = instances_of(
            "    - id: write\n      description: write\n      action: resource.apply\n      with: {file: absent.yaml}\n",
            &[],
        );
        assert!(matches!(missing, Err(PlanError::MissingFile { .. })));
    }

    #[test]
    fn steps_with_one_id_twice_and_foreach_over_no_list_are_refused() {
        let twice = instances_of(
            "    - id: same\n      description: a\n      action: pause\n      with: {message: wait}\n    - id: same\n      description: b\n      action: pause\n      with: {message: wait}\n",
            &[],
        );
        assert!(matches!(twice, Err(PlanError::DuplicateStep { .. })));
        let not_a_list = instances_of(
            "    - id: each\n      description: a\n      foreach: \"{{ params.label }}\"\n      action: pause\n      with: {message: wait}\n",
            &[],
        );
        assert!(matches!(not_a_list, Err(PlanError::ForeachNotList { .. })));
    }
}
