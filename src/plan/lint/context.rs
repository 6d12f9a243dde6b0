//! What lint renders a runbook's steps against: sample facts with a value for every field, the
//! variables a template may name, and the versions around a requirement's bounds that decide
//! whether it can ever match.

use serde_json::{Value as Json, json};

use crate::plan::Release;
use crate::plan::facts::FACT_NAMES;
use crate::plan::resolve::CONTEXT_VARIABLES;
use crate::runbook::LoadedRunbook;
use crate::runbook::template::{Templates, context_from};

/// Whether a dotted variable path is provided by the template context.
pub(super) fn is_known_variable(variable: &str, params: &[String], has_item: bool) -> bool {
    let within = |root: &str| variable == root || variable.starts_with(&format!("{root}."));
    if has_item && within("item") {
        return true;
    }
    if variable == "facts"
        || FACT_NAMES
            .iter()
            .any(|fact| within(&format!("facts.{fact}")))
    {
        return true;
    }
    if variable == "params"
        || params
            .iter()
            .any(|param| within(&format!("params.{param}")))
    {
        return true;
    }
    if variable == "namespaces" {
        return true;
    }
    // Functions and tests that minijinja reports as undeclared names.
    if crate::runbook::template::FUNCTIONS.contains(&variable) {
        return true;
    }
    if [
        "range",
        "none",
        "true",
        "false",
        "namespace",
        "dict",
        "debug",
    ]
    .contains(&variable)
    {
        return true;
    }
    CONTEXT_VARIABLES.iter().any(|known| within(known))
}

/// Facts with a value for every field, so every `foreach` has an item and every `require` passes.
pub(super) fn sample_context(
    loaded: &LoadedRunbook,
    templates: &Templates,
) -> serde_json::Map<String, Json> {
    let from = Release::new(3, 20, 0);
    let to = Release::new(3, 29, 7);
    let discovered = crate::plan::DiscoveredFacts::default();
    let overrides = crate::plan::FactOverrides {
        from: Some(from.clone()),
        install_method: Some(crate::plan::InstallMethod::Operator),
        set: vec![
            (
                "all_interfaces_host_endpoints".into(),
                json!([{"name": "sample-hep", "node": "sample-node", "labels": {"role": "sample"}}])
                    .to_string(),
            ),
            ("service_deployments".into(), "sample/sample".into()),
            (
                "owner_references".into(),
                json!([{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "sample",
                        "name": "sample", "ownerKind": "NetworkPolicy", "ownerName": "sample", "index": 0}])
                .to_string(),
            ),
            ("alp_enabled".into(), "true".into()),
            ("mesh_version".into(), "1.20.0".into()),
            ("etcd_endpoints".into(), "https://10.0.0.1:2379".into()),
            ("helm_release_namespace".into(), "default".into()),
        ],
        ..crate::plan::FactOverrides::default()
    };
    let mut context = match crate::plan::Facts::assemble(&discovered, &overrides) {
        Ok(facts) => crate::plan::resolve::base_context(&from, &to, &facts),
        Err(_) => serde_json::Map::new(),
    };
    let base = context_from(&context);
    let mut params = serde_json::Map::new();
    for (name, parameter) in &loaded.runbook.spec.params {
        let value = templates
            .render_value(&parameter.default, &base)
            .unwrap_or_else(|_| parameter.default.clone());
        params.insert(name.clone(), value);
    }
    context.insert("params".into(), Json::Object(params));
    context
}

/// Versions around every bound of a requirement: enough to decide whether anything matches.
pub(super) fn candidates(requirement: &semver::VersionReq) -> Vec<Release> {
    let mut versions = vec![Release::new(0, 0, 0), Release::new(999, 0, 0)];
    for comparator in &requirement.comparators {
        let major = comparator.major;
        let minor = comparator.minor.unwrap_or(0);
        let patch = comparator.patch.unwrap_or(0);
        versions.push(Release::new(major, minor, patch));
        versions.push(Release::new(major, minor, patch + 1));
        versions.push(Release::new(major, minor + 1, 0));
        versions.push(Release::new(major + 1, 0, 0));
        if patch > 0 {
            versions.push(Release::new(major, minor, patch - 1));
        }
        if minor > 0 {
            versions.push(Release::new(major, minor - 1, 999));
        }
        if major > 0 {
            versions.push(Release::new(major - 1, 999, 999));
        }
    }
    versions.sort();
    versions.dedup();
    versions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::catalog;

    #[test]
    fn requirement_candidates_find_impossible_ranges() {
        let never = semver::VersionReq::parse(">=3.30.0, <3.14.0").unwrap();
        assert!(
            candidates(&never)
                .iter()
                .all(|v| !catalog::matches(&never, v))
        );
        let some = semver::VersionReq::parse(">=3.14.0, <3.15.0").unwrap();
        assert!(candidates(&some).iter().any(|v| catalog::matches(&some, v)));
    }
}
