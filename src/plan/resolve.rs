//! Resolution: from the installed version, the target, and the facts, to one ordered plan.
//!
//! 1. The release catalog decides whether the path is supported (and names the route when not).
//! 2. Runbooks of the procedure whose `appliesTo` requirements and `when` conditions hold are chosen.
//! 3. Each step is rendered per string value (foreach items expanded), its `file:` loaded and its
//!    `action`/`with` converted into a typed [`Action`].
//! 4. The steps and their `needs` form one DAG (petgraph); a cycle is reported with its path. The DAG
//!    is ordered topologically with a stable tie-break — phase, then runbook file order, then step
//!    order — so the same inputs always give the same plan (and digest).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::{Value as Json, json};

use super::action::{ResourceLabel, ResourceLabelEach, compact_list};
use super::catalog::{self, Catalog, CatalogError};
pub use super::error::PlanError;
use super::facts::Facts;
use super::{Action, Phase, Plan, PlannedStep, Release};
use crate::resource::Resource;
use crate::runbook::template::{TemplateError, Templates, context_from};
use crate::runbook::{LoadedRunbook, RunbookSet, Step, UPGRADE_PROCEDURE};

/// What to plan.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// `upgrade` or another procedure the runbooks define.
    pub procedure: String,
    /// The target as the user wrote it (`v3.29.2` or `v3.29`); required for `upgrade`.
    pub to: Option<String>,
    pub facts: Facts,
}

/// What the user says about hand edits of an installed manifest (`--manifest-overlay`,
/// `--no-manifest-edits`); runbooks read it as `manifest_edits` and `manifest_overlay`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ManifestEdits {
    /// Nothing said: manifest runbooks keep a human gate for the edits.
    #[default]
    Unstated,
    /// The installed manifest has no hand edits: the new one is applied as released.
    None,
    /// Overlay documents ([`super::overlay`]) to apply to the new manifest.
    Overlay(Vec<Json>),
    /// Hand edits found in the cluster ([`super::edit_discovery`]), then any overlay documents the
    /// user gave; manifest runbooks keep the edits gate for the review.
    Discovered(Vec<Json>),
}

impl ManifestEdits {
    /// The value of `manifest_edits` in templates.
    pub fn as_str(&self) -> &'static str {
        match self {
            ManifestEdits::Unstated => "unstated",
            ManifestEdits::None => "none",
            ManifestEdits::Overlay(_) => "overlay",
            ManifestEdits::Discovered(_) => "discovered",
        }
    }

    /// The overlay documents runbooks take up as `manifest_overlay`.
    pub fn documents(&self) -> &[Json] {
        match self {
            ManifestEdits::Overlay(documents) | ManifestEdits::Discovered(documents) => documents,
            _ => &[],
        }
    }
}

/// The variables templates may use, besides `facts.<name>`, `params.<name>` and (in `foreach` steps)
/// `item`.
pub const CONTEXT_VARIABLES: [&str; 8] = [
    "release_tag",
    "release_line",
    "from_version",
    "namespaces.operator",
    "namespaces.system",
    "manifest_base_url",
    "manifest_edits",
    "manifest_overlay",
];

/// The template context every runbook of a plan sees (before its own `params`).
pub fn base_context(from: &Release, to: &Release, facts: &Facts) -> serde_json::Map<String, Json> {
    let mut context = serde_json::Map::new();
    context.insert("release_tag".into(), json!(to.to_string()));
    context.insert("release_line".into(), json!(to.line()));
    context.insert("from_version".into(), json!(from.to_string()));
    context.insert(
        "namespaces".into(),
        json!({
            "operator": facts.operator_namespace.value,
            "system": facts.system_namespace.value,
        }),
    );
    context.insert(
        "manifest_base_url".into(),
        json!(facts.manifest_base_url.value),
    );
    context.insert("facts".into(), Json::Object(facts.values()));
    manifest_context(&mut context, &ManifestEdits::Unstated);
    context
}

fn manifest_context(context: &mut serde_json::Map<String, Json>, edits: &ManifestEdits) {
    context.insert("manifest_edits".into(), json!(edits.as_str()));
    context.insert(
        "manifest_overlay".into(),
        Json::Array(edits.documents().to_vec()),
    );
}

/// Plans `request` with the runbooks of `set`, nothing said about manifest edits.
pub fn plan_upgrade(set: &RunbookSet, request: &PlanRequest) -> Result<Plan, PlanError> {
    plan_upgrade_with(set, request, &ManifestEdits::Unstated)
}

/// Plans `request` with the runbooks of `set` and the user's manifest `edits`. An overlay no step
/// takes up is an error, never silently dropped.
pub fn plan_upgrade_with(
    set: &RunbookSet,
    request: &PlanRequest,
    edits: &ManifestEdits,
) -> Result<Plan, PlanError> {
    let plan = plan_steps(set, request, edits)?;
    let documents = edits.documents();
    let taken_up = plan.steps.iter().any(
        |step| matches!(&step.action, Action::Fetch(fetch) if fetch.overlay.ends_with(documents)),
    );
    if !documents.is_empty() && !taken_up {
        return Err(PlanError::OverlayUnused {
            install_method: request.facts.install_method.value.to_string(),
        });
    }
    Ok(plan)
}

fn plan_steps(
    set: &RunbookSet,
    request: &PlanRequest,
    edits: &ManifestEdits,
) -> Result<Plan, PlanError> {
    let catalog = Catalog::parse(set.catalog_text().ok_or(CatalogError::Missing)?)?;
    let from = request.facts.installed_version.value.clone();
    let procedures = set.procedures();
    if !procedures.contains(&request.procedure) {
        return Err(PlanError::UnknownProcedure {
            name: request.procedure.clone(),
            known: procedures
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let to = if request.procedure == UPGRADE_PROCEDURE {
        resolve_target(&catalog, &from, request.to.as_deref())?
    } else {
        // Other procedures change no version; they run against what is installed.
        from.clone()
    };

    let templates = Templates::new();
    let mut base = base_context(&from, &to, &request.facts);
    manifest_context(&mut base, edits);
    let mut instances: Vec<Instance> = Vec::new();
    let mut selected_upgrade_runbook = false;
    for (runbook_index, loaded) in set.runbooks.iter().enumerate() {
        let spec = &loaded.runbook.spec;
        if spec.procedure != request.procedure {
            continue;
        }
        let Some(reason) = runbook_reason(&catalog, loaded, &from, &to, &request.facts)? else {
            continue;
        };
        let context = runbook_context(&templates, loaded, &base)?;
        let reason = match &spec.when {
            Some(condition) => {
                let holds = templates
                    .condition(condition, &context_from(&context))
                    .map_err(|source| template_error(loaded, None, source))?;
                if !holds {
                    continue;
                }
                format!("{reason}; `{condition}`")
            }
            None => reason,
        };
        selected_upgrade_runbook |= spec.phase == Phase::Upgrade;
        instantiate(
            set,
            &templates,
            loaded,
            runbook_index,
            &context,
            &reason,
            &mut instances,
        )?;
    }
    if request.procedure == UPGRADE_PROCEDURE && !selected_upgrade_runbook {
        return Err(PlanError::NoUpgradeRunbook {
            install_method: request.facts.install_method.value.to_string(),
            datastore_type: request.facts.datastore_type.value.to_string(),
        });
    }
    let steps = super::verification::around(order(set, instances)?, &to, &request.facts);
    Ok(Plan::new(
        request.procedure.clone(),
        from,
        to,
        request.facts.clone(),
        steps,
    ))
}

/// Checks the path against the catalog and returns the full target release.
fn resolve_target(
    catalog: &Catalog,
    from: &Release,
    to: Option<&str>,
) -> Result<Release, PlanError> {
    let text = to.ok_or(PlanError::MissingTarget)?;
    let (mut to, precise) =
        Release::parse_with_precision(text).map_err(PlanError::InvalidTarget)?;
    let target = catalog
        .target(&to)
        .ok_or_else(|| PlanError::UnknownTarget {
            to: to.to_string(),
            known: catalog.target_names(),
        })?;
    if !precise {
        to = target.latest.clone().ok_or_else(|| PlanError::NeedsPatch {
            to: target.release.clone(),
        })?;
    }
    if let Some(latest) = target.latest.as_ref().filter(|latest| to > **latest) {
        return Err(PlanError::BeyondLatest {
            to,
            latest: latest.clone(),
        });
    }
    if to <= *from {
        return Err(PlanError::NotAnUpgrade {
            from: from.clone(),
            to,
        });
    }
    if !catalog.accepts(target, from) {
        let hint = match catalog.route(from, target) {
            Some(route) => format!(
                "upgrade to {} first, then to {}",
                route[0],
                route[1..].join(", then to ")
            ),
            None => format!(
                "no supported route from `{from}` is known; upgrade to a release {} accepts first",
                target.release
            ),
        };
        return Err(PlanError::Unsupported {
            from: from.to_string(),
            to: to.to_string(),
            line: target.release.clone(),
            requirement: target.upgrade_from.clone(),
            hint,
        });
    }
    Ok(to)
}

/// Why a runbook applies (`Some(reason)`), or `None` when its requirements do not hold.
fn runbook_reason(
    catalog: &Catalog,
    loaded: &LoadedRunbook,
    from: &Release,
    to: &Release,
    facts: &Facts,
) -> Result<Option<String>, PlanError> {
    let applies = &loaded.runbook.spec.applies_to;
    let name = &loaded.runbook.metadata.name;
    let mut reasons = Vec::new();
    if let Some(edge_name) = &applies.edge {
        let edge = catalog
            .edge(edge_name)
            .ok_or_else(|| PlanError::UnknownEdge {
                runbook: name.clone(),
                edge: edge_name.clone(),
            })?;
        if !catalog.crosses(edge, from, to) {
            return Ok(None);
        }
        reasons.push(format!(
            "crosses `{}` ({} → {}): {}",
            edge.name, edge.from, edge.to, edge.description
        ));
    }
    let place = format!("runbook `{name}`");
    if let Some(text) = &applies.from {
        if !catalog::matches(&catalog::requirement(text, &place)?, from) {
            return Ok(None);
        }
        reasons.push(format!("installed `{from}` matches `{text}`"));
    }
    if let Some(text) = &applies.to {
        if !catalog::matches(&catalog::requirement(text, &place)?, to) {
            return Ok(None);
        }
        reasons.push(format!("target `{to}` matches `{text}`"));
    }
    if !applies.install_methods.is_empty() {
        if !applies
            .install_methods
            .contains(&facts.install_method.value)
        {
            return Ok(None);
        }
        reasons.push(format!("install method `{}`", facts.install_method.value));
    }
    if !applies.datastore_types.is_empty() {
        if !applies
            .datastore_types
            .contains(&facts.datastore_type.value)
        {
            return Ok(None);
        }
        reasons.push(format!("datastore `{}`", facts.datastore_type.value));
    }
    if reasons.is_empty() {
        reasons.push("every path".to_string());
    }
    Ok(Some(reasons.join("; ")))
}

/// The base context plus the runbook's `params` (their defaults rendered against the base).
fn runbook_context(
    templates: &Templates,
    loaded: &LoadedRunbook,
    base: &serde_json::Map<String, Json>,
) -> Result<serde_json::Map<String, Json>, PlanError> {
    let base_value = context_from(base);
    let mut params = serde_json::Map::new();
    for (name, parameter) in &loaded.runbook.spec.params {
        let value = templates
            .render_value(&parameter.default, &base_value)
            .map_err(|source| template_error(loaded, None, source))?;
        params.insert(name.clone(), value);
    }
    let mut context = base.clone();
    context.insert("params".into(), Json::Object(params));
    Ok(context)
}

fn template_error(loaded: &LoadedRunbook, step: Option<&str>, source: TemplateError) -> PlanError {
    PlanError::Template {
        runbook: loaded.runbook.metadata.name.clone(),
        step: step.map(str::to_string),
        source,
    }
}

/// (phase, runbook order, step order, item order): the stable tie-break of the topological sort.
type OrderKey = (Phase, usize, usize, usize);

/// One expanded step before ordering.
#[derive(Debug)]
struct Instance {
    key: OrderKey,
    runbook: String,
    step_id: String,
    needs: Vec<String>,
    /// The `foreach` text and this instance's item, for `serial` steps and the steps going with them.
    foreach: Option<String>,
    item: Option<usize>,
    serial: bool,
    planned: PlannedStep,
}

/// Renders every step of one runbook (each `foreach` item separately) into instances.
fn instantiate(
    set: &RunbookSet,
    templates: &Templates,
    loaded: &LoadedRunbook,
    runbook_index: usize,
    context: &serde_json::Map<String, Json>,
    reason: &str,
    instances: &mut Vec<Instance>,
) -> Result<(), PlanError> {
    let runbook = &loaded.runbook;
    let name = &runbook.metadata.name;
    let mut seen = Vec::new();
    for (step_index, step) in runbook.spec.steps.iter().enumerate() {
        if seen.contains(&step.id) {
            return Err(PlanError::DuplicateStep {
                runbook: name.clone(),
                step: step.id.clone(),
            });
        }
        seen.push(step.id.clone());
        let step_context = context_from(context);
        let mut step_reason = reason.to_string();
        if let Some(condition) = &step.when {
            let holds = templates
                .condition(condition, &step_context)
                .map_err(|source| template_error(loaded, Some(&step.id), source))?;
            if !holds {
                continue;
            }
            step_reason = format!("{step_reason}; step condition `{condition}`");
        }
        let items: Vec<Option<Json>> = match &step.foreach {
            None => vec![None],
            Some(expression) => {
                let value = templates
                    .render_string(expression, &step_context)
                    .map_err(|source| template_error(loaded, Some(&step.id), source))?;
                match value {
                    Json::Array(items) => items.into_iter().map(Some).collect(),
                    other => {
                        return Err(PlanError::ForeachNotList {
                            runbook: name.clone(),
                            step: step.id.clone(),
                            found: other.to_string(),
                        });
                    }
                }
            }
        };
        let foreach = step.foreach.is_some();
        // A label that only the item's name changes is rendered for the first item alone; the
        // other items give their names (rendering every item made planning 10k host endpoints
        // take seconds).
        let mut names = (foreach && !step.serial)
            .then(|| names_if_only_the_name_varies(templates, step, &items))
            .flatten();
        let step_path = format!("{name}/{}", step.id);
        let mut folded = None;
        let mut expanded = Vec::new();
        for (item_index, item) in items.into_iter().enumerate() {
            let mut id = format!("{name}/{}", step.id);
            let mut item_reason = step_reason.clone();
            // The item is laid over the step's context, which is built once: copying the whole
            // context per item made planning quadratic in the number of items (the facts hold the
            // list being iterated).
            let item_context = match &item {
                Some(item) => {
                    id = format!("{id}[{item_index}]");
                    item_reason = format!("{item_reason}; item `{}`", describe_item(item));
                    minijinja::value::merge_maps([
                        step_context.clone(),
                        minijinja::context! { item => context_from(item) },
                    ])
                }
                None => step_context.clone(),
            };
            let action = render_action(
                set,
                templates,
                loaded,
                step,
                &step.action,
                step.with.as_ref(),
                &item_context,
            )?;
            let verify = match &step.verify {
                Some(verify) => Some(render_action(
                    set,
                    templates,
                    loaded,
                    step,
                    &verify.action,
                    verify.with.as_ref(),
                    &item_context,
                )?),
                None => None,
            };
            let description = templates
                .render_string(&step.description, &item_context)
                .map_err(|source| template_error(loaded, Some(&step.id), source))?;
            let description = match description {
                Json::String(text) => text,
                other => other.to_string(),
            };
            let requires = match &step.requires {
                Some(requirement) => {
                    let rendered = templates
                        .render_string(&requirement.node_agents, &item_context)
                        .map_err(|source| template_error(loaded, Some(&step.id), source))?;
                    Some(crate::runbook::Requirement {
                        node_agents: match rendered {
                            Json::String(text) => text,
                            other => other.to_string(),
                        },
                    })
                }
                None => None,
            };
            let render_text = |template: &str| {
                templates
                    .render_string(template, &item_context)
                    .map_err(|source| template_error(loaded, Some(&step.id), source))
                    .map(|rendered| match rendered {
                        Json::String(text) => text,
                        other => other.to_string(),
                    })
            };
            let rollback = match &step.rollback {
                Some(advice) => Some(crate::runbook::RollbackAdvice {
                    before: render_text(&advice.before)?,
                    after: render_text(&advice.after)?,
                }),
                None => None,
            };
            expanded.push(Instance {
                key: (runbook.spec.phase, runbook_index, step_index, item_index),
                runbook: name.clone(),
                step_id: step.id.clone(),
                needs: step.needs.clone(),
                foreach: step.foreach.clone(),
                item: item.is_some().then_some(item_index),
                serial: step.serial,
                planned: PlannedStep {
                    id,
                    runbook: name.clone(),
                    phase: runbook.spec.phase,
                    description,
                    needs: Vec::new(),
                    action,
                    verify,
                    irreversible: step.irreversible,
                    requires,
                    rollback,
                    retry: step.retry.clone(),
                    register: step.register.clone(),
                    reason: item_reason,
                },
            });
            // Rendered the first item: the others are their names.
            if let Some(names) = names.take() {
                folded = fold_by_name(&expanded[0], names, &step_path, &step_reason);
                if folded.is_some() {
                    break;
                }
            }
        }
        // A serial step's items stay steps of their own: the order is the point.
        if folded.is_none() && foreach && !step.serial {
            folded = fold_label_steps(&expanded, &step_path, &step_reason);
        }
        match folded {
            Some(folded) => instances.push(folded),
            None => instances.extend(expanded),
        }
    }
    Ok(())
}

/// The instances of a `foreach` step of `resource.label` as one step of
/// [`Action::ResourceLabelEach`], when every item sets or removes the same label and differs only
/// in the resource's name (its `verify` likewise): the executor then labels them in batched
/// transactions with per-item progress, instead of one step, one write and two checkpoint
/// transitions per item. `None` when they do not fold (they stay one step each).
fn fold_label_steps(expanded: &[Instance], id: &str, reason: &str) -> Option<Instance> {
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
fn fold_by_name(first: &Instance, names: Vec<String>, id: &str, reason: &str) -> Option<Instance> {
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
fn names_if_only_the_name_varies(
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
/// Resolves `needs`, builds the DAG, refuses cycles and orders the steps.
fn order(set: &RunbookSet, instances: Vec<Instance>) -> Result<Vec<PlannedStep>, PlanError> {
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
