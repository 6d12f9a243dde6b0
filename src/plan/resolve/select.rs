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
/// the `upgrade` phase is refused: nothing would change the release. Another procedure whose
/// runbooks all fall outside their `appliesTo` is refused, naming for each what fails and its
/// `why`.
pub(super) fn select<'set>(
    set: &'set RunbookSet,
    templates: &Templates,
    selection: &Selection<'_>,
) -> Result<Vec<Selected<'set>>, PlanError> {
    let mut selected = Vec::new();
    // The runbooks of the procedure that fall outside their `appliesTo`, each with what fails.
    let mut refusals = Vec::new();
    let mut any_applies = false;
    for (index, loaded) in set.runbooks.iter().enumerate() {
        let spec = &loaded.runbook.spec;
        if spec.procedure != selection.procedure {
            continue;
        }
        let reason = match applies(selection, loaded)? {
            Applies::Yes(reason) => reason,
            Applies::No(refusal) => {
                refusals.push(refusal);
                continue;
            }
        };
        any_applies = true;
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
    // A false `when` means nothing to do, a plan still; a procedure none of whose runbooks is for
    // this install would plan only the baseline and the verification, so it is refused.
    if selection.procedure != UPGRADE_PROCEDURE && !any_applies && !refusals.is_empty() {
        return Err(PlanError::ProcedureDoesNotApply {
            procedure: selection.procedure.to_string(),
            runbooks: refusals,
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

/// What a runbook's `appliesTo` requirements say of this plan.
enum Applies {
    /// Every requirement holds: why the runbook applies.
    Yes(String),
    /// What does not hold: `runbook `NAME` applies to …`, each requirement with the value found,
    /// then the runbook's `why`.
    No(String),
}

/// Whether a runbook's `appliesTo` requirements hold, each one checked so a refusal names every
/// one that fails.
fn applies(selection: &Selection<'_>, loaded: &LoadedRunbook) -> Result<Applies, PlanError> {
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
    let mut unmet = Vec::new();
    if let Some(edge_name) = &applies.edge {
        let edge = catalog
            .edge(edge_name)
            .ok_or_else(|| PlanError::UnknownEdge {
                runbook: name.clone(),
                edge: edge_name.clone(),
            })?;
        if catalog.crosses(edge, from, to) {
            reasons.push(format!(
                "crosses `{}` ({} → {}): {}",
                edge.name, edge.from, edge.to, edge.description
            ));
        } else {
            unmet.push(format!(
                "upgrades across `{}` (`{}` → `{}`) (this plan: `{from}` → `{to}`)",
                edge.name, edge.from, edge.to
            ));
        }
    }
    let place = format!("runbook `{name}`");
    if let Some(text) = &applies.from {
        if catalog::matches(&catalog::requirement(text, &place)?, from) {
            reasons.push(format!("installed `{from}` matches `{text}`"));
        } else {
            unmet.push(format!(
                "installed versions `{text}` (this install: `{from}`)"
            ));
        }
    }
    if let Some(text) = &applies.to {
        if catalog::matches(&catalog::requirement(text, &place)?, to) {
            reasons.push(format!("target `{to}` matches `{text}`"));
        } else {
            unmet.push(format!("target versions `{text}` (this plan: `{to}`)"));
        }
    }
    let install_method = facts.install_method.value;
    if !applies.install_methods.is_empty() {
        if applies.install_methods.contains(&install_method) {
            reasons.push(format!("install method `{install_method}`"));
        } else {
            unmet.push(format!(
                "install methods {} (this install: `{install_method}`)",
                listed(&applies.install_methods)
            ));
        }
    }
    let datastore_type = facts.datastore_type.value;
    if !applies.datastore_types.is_empty() {
        if applies.datastore_types.contains(&datastore_type) {
            reasons.push(format!("datastore `{datastore_type}`"));
        } else {
            unmet.push(format!(
                "datastores {} (this install: `{datastore_type}`)",
                listed(&applies.datastore_types)
            ));
        }
    }
    if !unmet.is_empty() {
        let mut refusal = format!("runbook `{name}` applies to {}", unmet.join(" and "));
        if let Some(why) = &applies.why {
            refusal.push_str(": ");
            refusal.push_str(why.trim_end_matches('.'));
        }
        return Ok(Applies::No(refusal));
    }
    if reasons.is_empty() {
        reasons.push("every path".to_string());
    }
    Ok(Applies::Yes(reasons.join("; ")))
}

/// `` `a`, `b` `` for a requirement's values.
fn listed(values: &[impl std::fmt::Display]) -> String {
    values
        .iter()
        .map(|value| format!("`{value}`"))
        .collect::<Vec<_>>()
        .join(", ")
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
        procedure_runbook(UPGRADE_PROCEDURE, name, phase, applies_to, extra)
    }

    fn procedure_runbook(
        procedure: &str,
        name: &str,
        phase: &str,
        applies_to: &str,
        extra: &str,
    ) -> String {
        format!(
            "apiVersion: netctl.projectcalico.org/v1\nkind: Runbook\nmetadata:\n  name: {name}\n  description: test\n\
             spec:\n  procedure: {procedure}\n  phase: {phase}\n  appliesTo: {applies_to}\n{extra}  \
             steps:\n    - id: pause\n      description: wait\n      action: pause\n"
        )
    }

    fn chosen(runbooks: &[String], from: &str) -> Result<Vec<(String, String)>, PlanError> {
        chosen_for(UPGRADE_PROCEDURE, runbooks, from)
    }

    /// The runbooks of `procedure` chosen for an operator install of `from` on the Kubernetes
    /// datastore (an upgrade to v3.29.7; another procedure runs against `from`, as planning does).
    fn chosen_for(
        procedure: &str,
        runbooks: &[String],
        from: &str,
    ) -> Result<Vec<(String, String)>, PlanError> {
        let set = runbook_set(runbooks, CATALOG);
        let catalog = Catalog::parse(CATALOG).unwrap();
        let from: Release = from.parse().unwrap();
        let to: Release = if procedure == UPGRADE_PROCEDURE {
            "v3.29.7".parse().unwrap()
        } else {
            from.clone()
        };
        let facts = facts(&from);
        let base = super::super::base_context(&from, &to, &facts);
        let selection = Selection {
            catalog: &catalog,
            procedure,
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

    #[test]
    fn a_procedure_whose_runbooks_all_fall_outside_their_requirements_is_refused_naming_each() {
        let runbooks = [
            procedure_runbook(
                "move",
                "move-etcd",
                "upgrade",
                "{installMethods: [manifest, helm], datastoreTypes: [etcdv3], why: only an etcd install has data to move.}",
                "",
            ),
            procedure_runbook(
                "move",
                "move-new",
                "upgrade",
                "{from: \">=3.30.0\", edge: helm-ownership}",
                "",
            ),
            runbook("upgrade", "upgrade", "{installMethods: [manifest]}", ""),
        ];
        let refused = chosen_for("move", &runbooks, "v3.20.0").unwrap_err();
        assert!(
            matches!(&refused, PlanError::ProcedureDoesNotApply { runbooks, .. } if runbooks.len() == 2),
            "{refused:?}"
        );
        assert_eq!(
            refused.to_string(),
            "the procedure `move` does not apply to this install: \
             runbook `move-etcd` applies to install methods `manifest`, `helm` (this install: `operator`) \
             and datastores `etcdv3` (this install: `kubernetes`): only an etcd install has data to move; \
             runbook `move-new` applies to upgrades across `helm-ownership` (`<3.23.0` → `>=3.23.0`) \
             (this plan: `v3.20.0` → `v3.20.0`) and installed versions `>=3.30.0` (this install: `v3.20.0`)"
        );
        // The `upgrade` procedure keeps its own refusal, which names no runbook.
        assert!(matches!(
            chosen(&runbooks, "v3.20.0"),
            Err(PlanError::NoUpgradeRunbook { .. })
        ));
    }

    #[test]
    fn a_procedure_with_a_runbook_for_this_install_is_planned_even_when_its_condition_is_false() {
        let outside = procedure_runbook(
            "move",
            "outside",
            "upgrade",
            "{datastoreTypes: [etcdv3]}",
            "",
        );
        let conditioned = procedure_runbook(
            "move",
            "conditioned",
            "upgrade",
            "{installMethods: [operator]}",
            "  when: \"params.go\"\n  params:\n    go:\n      default: false\n",
        );
        let nothing_to_do = chosen_for("move", &[outside.clone(), conditioned], "v3.20.0");
        assert_eq!(nothing_to_do.unwrap(), []);
        let applying = procedure_runbook("move", "applying", "upgrade", "{}", "");
        assert_eq!(
            chosen_for("move", &[outside, applying], "v3.20.0").unwrap(),
            [("applying".to_string(), "every path".to_string())]
        );
    }
}
