//! Stage 2 of planning: which runbooks run. A runbook of the requested procedure is chosen when
//! its `appliesTo` requirements hold (a version edge the upgrade crosses, the installed and target
//! releases, the install method, the datastore) and its `when` condition is true against its own
//! template context (the plan's base context and its `params`, rendered). Each chosen runbook
//! carries why it was chosen, which every step of it repeats in its reason.
//!
//! This stage renders only `params` and `when`; the steps are [`super::instantiate`]'s business.

use serde_json::Value as Json;

use super::{PlanError, template_error};
use crate::plan::catalog::{self, Catalog};
use crate::plan::facts::Facts;
use crate::plan::{Phase, Release};
use crate::runbook::template::{Templates, context_from};
use crate::runbook::{LoadedRunbook, RunbookSet, UPGRADE_PROCEDURE};

/// A runbook chosen for the plan.
#[derive(Debug)]
pub(super) struct Selected<'set> {
    /// Its position in the set: the tie-break of the plan's order after the phase.
    pub index: usize,
    pub loaded: &'set LoadedRunbook,
    /// The base context plus the runbook's `params`.
    pub context: serde_json::Map<String, Json>,
    /// Why it applies: the edge, versions, install method and condition that hold.
    pub reason: String,
}

/// What the choice depends on besides the runbooks.
pub(super) struct Selection<'a> {
    pub catalog: &'a Catalog,
    pub procedure: &'a str,
    pub from: &'a Release,
    pub to: &'a Release,
    pub facts: &'a Facts,
    pub base: &'a serde_json::Map<String, Json>,
}

/// The runbooks of the procedure that apply, in the set's order. An upgrade without a runbook of
/// the `upgrade` phase is refused: nothing would change the release.
pub(super) fn select<'set>(
    set: &'set RunbookSet,
    templates: &Templates,
    selection: &Selection<'_>,
) -> Result<Vec<Selected<'set>>, PlanError> {
    let mut selected = Vec::new();
    for (index, loaded) in set.runbooks.iter().enumerate() {
        let spec = &loaded.runbook.spec;
        if spec.procedure != selection.procedure {
            continue;
        }
        let Some(reason) = runbook_reason(selection, loaded)? else {
            continue;
        };
        let context = runbook_context(templates, loaded, selection.base)?;
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
        selected.push(Selected {
            index,
            loaded,
            context,
            reason,
        });
    }
    let upgrades = selected
        .iter()
        .any(|chosen| chosen.loaded.runbook.spec.phase == Phase::Upgrade);
    if selection.procedure == UPGRADE_PROCEDURE && !upgrades {
        return Err(PlanError::NoUpgradeRunbook {
            install_method: selection.facts.install_method.value.to_string(),
            datastore_type: selection.facts.datastore_type.value.to_string(),
        });
    }
    Ok(selected)
}

/// Why a runbook applies (`Some(reason)`), or `None` when its requirements do not hold.
fn runbook_reason(
    selection: &Selection<'_>,
    loaded: &LoadedRunbook,
) -> Result<Option<String>, PlanError> {
    let Selection {
        catalog,
        from,
        to,
        facts,
        ..
    } = selection;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::resolve::test_support::{CATALOG, facts, runbook_set};

    fn runbook(name: &str, phase: &str, applies_to: &str, extra: &str) -> String {
        format!(
            "apiVersion: netctl.projectcalico.org/v1\nkind: Runbook\nmetadata:\n  name: {name}\n  description: test\n\
             spec:\n  procedure: upgrade\n  phase: {phase}\n  appliesTo: {applies_to}\n{extra}  \
             steps:\n    - id: pause\n      description: wait\n      action: pause\n"
        )
    }

    fn chosen(runbooks: &[String], from: &str) -> Result<Vec<(String, String)>, PlanError> {
        let set = runbook_set(runbooks, CATALOG);
        let catalog = Catalog::parse(CATALOG).unwrap();
        let from: Release = from.parse().unwrap();
        let to: Release = "v3.29.7".parse().unwrap();
        let facts = facts(&from);
        let base = super::super::base_context(&from, &to, &facts);
        let selection = Selection {
            catalog: &catalog,
            procedure: UPGRADE_PROCEDURE,
            from: &from,
            to: &to,
            facts: &facts,
            base: &base,
        };
        Ok(select(&set, &Templates::new(), &selection)?
            .into_iter()
            .map(|chosen| (chosen.loaded.runbook.metadata.name.clone(), chosen.reason))
            .collect())
    }

    #[test]
    fn a_runbook_is_chosen_when_its_edge_is_crossed_and_says_why() {
        let runbooks = [
            runbook("move", "pre-upgrade", "{edge: helm-ownership}", ""),
            runbook("upgrade", "upgrade", "{}", ""),
        ];
        let before_the_edge = chosen(&runbooks, "v3.20.0").unwrap();
        assert_eq!(before_the_edge[0].0, "move");
        assert!(before_the_edge[0].1.starts_with("crosses `helm-ownership`"));
        assert_eq!(before_the_edge[1], ("upgrade".into(), "every path".into()));
        let after_the_edge = chosen(&runbooks, "v3.24.0").unwrap();
        assert_eq!(after_the_edge.len(), 1, "{after_the_edge:?}");
    }

    #[test]
    fn a_when_condition_reads_the_runbook_params_and_is_named_in_the_reason() {
        let runbooks = [
            runbook(
                "upgrade",
                "upgrade",
                "{from: \">=3.20.0\"}",
                "  when: \"params.go\"\n  params:\n    go:\n      default: true\n",
            ),
            runbook(
                "skipped",
                "post-upgrade",
                "{}",
                "  when: \"params.go\"\n  params:\n    go:\n      default: false\n",
            ),
        ];
        let chosen = chosen(&runbooks, "v3.20.0").unwrap();
        assert_eq!(
            chosen,
            [(
                "upgrade".to_string(),
                "installed `v3.20.0` matches `>=3.20.0`; `params.go`".to_string()
            )]
        );
    }

    #[test]
    fn an_upgrade_without_a_runbook_of_the_upgrade_phase_is_refused() {
        let runbooks = [runbook("prepare", "pre-upgrade", "{}", "")];
        assert!(matches!(
            chosen(&runbooks, "v3.20.0"),
            Err(PlanError::NoUpgradeRunbook { .. })
        ));
        let unknown_edge = [runbook("upgrade", "upgrade", "{edge: nowhere}", "")];
        assert!(matches!(
            chosen(&unknown_edge, "v3.20.0"),
            Err(PlanError::UnknownEdge { .. })
        ));
    }
}
