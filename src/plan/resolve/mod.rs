//! Resolution: from the installed version, the target, and the facts, to one ordered plan, in four
//! stages, one module each:
//!
//! 1. [`target`]: the release catalog turns `--to` into the full target release and decides whether
//!    the path is supported (naming the route when not).
//! 2. [`select`]: the runbooks of the procedure whose `appliesTo` requirements and `when` conditions
//!    hold are chosen, each with its template context (`params`) and why it applies. A procedure
//!    other than `upgrade` whose runbooks all fail their `appliesTo` is refused, naming what fails.
//! 3. [`instantiate`]: each step is rendered per string value (`foreach` items expanded, or folded
//!    into one batched label step by [`fold`]), its `file:` loaded and its `action`/`with` converted
//!    into a typed [`Action`].
//! 4. [`order`]: the steps and their `needs` form one DAG (petgraph); a cycle is reported with its
//!    path. The DAG is ordered topologically with a stable tie-break — phase, then runbook file
//!    order, then step order — so the same inputs always give the same plan (and digest).
//!
//! This module holds the request, the template context every runbook shares, and the pipeline.

mod fold;
mod instantiate;
mod order;
mod refused;
mod select;
mod target;

use serde_json::{Value as Json, json};

use super::catalog::{Catalog, CatalogError};
pub use super::error::PlanError;
use super::facts::Facts;
use super::{Action, Plan, Release};
use crate::runbook::template::{TemplateError, Templates};
use crate::runbook::{LoadedRunbook, RunbookSet, UPGRADE_PROCEDURE};

pub(crate) use instantiate::render_action;
pub(crate) use order::find_cycle;

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
    refused::check(&request.procedure)?;
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
        target::resolve_target(&catalog, &from, request.to.as_deref())?
    } else {
        // Other procedures change no version; they run against what is installed.
        from.clone()
    };

    let templates = Templates::new();
    let mut base = base_context(&from, &to, &request.facts);
    manifest_context(&mut base, edits);
    let selection = select::Selection {
        catalog: &catalog,
        procedure: &request.procedure,
        from: &from,
        to: &to,
        facts: &request.facts,
        base: &base,
    };
    let mut instances = Vec::new();
    for selected in select::select(set, &templates, &selection)? {
        instantiate::instantiate(set, &templates, &selected, &mut instances)?;
    }
    let steps =
        crate::plan::verification::around(order::order(set, instances)?, &to, &request.facts);
    Ok(Plan::new(
        request.procedure.clone(),
        from,
        to,
        request.facts.clone(),
        steps,
    ))
}

pub(super) fn template_error(
    loaded: &LoadedRunbook,
    step: Option<&str>,
    source: TemplateError,
) -> PlanError {
    PlanError::Template {
        runbook: loaded.runbook.metadata.name.clone(),
        step: step.map(str::to_string),
        source,
    }
}

#[cfg(test)]
pub(super) mod test_support {
    //! What the stages' tests share: a runbook set from texts and facts for an offline plan.

    use crate::plan::Release;
    use crate::plan::facts::{DiscoveredFacts, FactOverrides, Facts, InstallMethod};
    use crate::runbook::RunbookSet;

    /// A release catalog of two targets and one version edge, for the stages' tests.
    pub const CATALOG: &str = "\
apiVersion: netctl.projectcalico.org/v1
kind: ReleaseCatalog
spec:
  targets:
    - release: v3.20
      upgradeFrom: \">=3.0.0\"
    - release: v3.29
      latest: v3.29.7
      upgradeFrom: \">=3.15.0\"
  edges:
    - name: helm-ownership
      from: \"<3.23.0\"
      to: \">=3.23.0\"
      description: the chart moves
";

    /// A set of `runbooks` (in this order) and, unless empty, the release `catalog`.
    pub fn runbook_set(runbooks: &[String], catalog: &str) -> RunbookSet {
        let mut files: Vec<(String, String)> = runbooks
            .iter()
            .enumerate()
            .map(|(index, text)| (format!("{index:02}.yaml"), text.clone()))
            .collect();
        if !catalog.is_empty() {
            files.push(("releases.yaml".to_string(), catalog.to_string()));
        }
        RunbookSet::from_files("<test>", files).expect("test runbooks parse")
    }

    /// The facts of an operator install of `from`, nothing discovered.
    pub fn facts(from: &Release) -> Facts {
        let overrides = FactOverrides {
            from: Some(from.clone()),
            install_method: Some(InstallMethod::Operator),
            ..FactOverrides::default()
        };
        Facts::assemble(&DiscoveredFacts::default(), &overrides).expect("test facts assemble")
    }
}
