//! Stale-plan detection: does the cluster still show the facts a saved plan was made from?
//!
//! Only facts that discovery can read are compared. The installed version is compared whenever the
//! datastore reports one, whatever its origin in the plan: a plan written for v3.26 is wrong for a
//! cluster now running v3.28, even if `--from` said v3.26 at plan time. Other facts are compared only
//! when the plan itself discovered them; a fact the operator set by flag is the operator's call. That
//! covers what the datastore tells (datastore type, all-interfaces host endpoints, ALP) and what the
//! Kubernetes objects of the install tell (install method, operator namespace, Helm release and its
//! namespace, manifest flavour, OwnerReferences); the latter only when the caller re-read the cluster
//! ([`DiscoveredFacts::cluster`]), which it must do whenever [`needs_cluster`] says so.

use serde::Serialize;

use crate::plan::facts::{
    ClusterFacts, Discovery, FACTS, HostEndpointFact, OwnerReferenceFact, Stale,
};
use crate::plan::{DiscoveredFacts, Fact, FactOrigin, Facts};

/// The first fact that no longer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleFact {
    pub fact: &'static str,
    pub planned: String,
    pub now: String,
}

/// The first fact the plan discovered from the Kubernetes cluster, if any: checking such a plan
/// needs the cluster read again.
pub fn needs_cluster(planned: &Facts) -> Option<&'static str> {
    FACTS
        .iter()
        .filter(|fact| fact.discovery == Discovery::Cluster && fact.stale != Stale::Never)
        .find(|fact| fact.origin(planned) == FactOrigin::Discovered)
        .map(|fact| fact.name)
}

/// Compares a plan's facts with what discovery reads now.
pub fn first_stale_fact(planned: &Facts, now: &DiscoveredFacts) -> Option<StaleFact> {
    if let Some(version) = &now.installed_version {
        if *version != planned.installed_version.value {
            return Some(StaleFact {
                fact: "installed_version",
                planned: planned.installed_version.value.to_string(),
                now: version.to_string(),
            });
        }
    }
    if planned.datastore_type.origin == FactOrigin::Discovered {
        if let Some(datastore) = now.datastore_type {
            if datastore != planned.datastore_type.value {
                return Some(StaleFact {
                    fact: "datastore_type",
                    planned: planned.datastore_type.value.to_string(),
                    now: datastore.to_string(),
                });
            }
        }
    }
    if planned.all_interfaces_host_endpoints.origin == FactOrigin::Discovered {
        if let Some(endpoints) = &now.all_interfaces_host_endpoints {
            if *endpoints != planned.all_interfaces_host_endpoints.value {
                let (planned, now) =
                    host_endpoint_change(&planned.all_interfaces_host_endpoints.value, endpoints);
                return Some(StaleFact {
                    fact: "all_interfaces_host_endpoints",
                    planned,
                    now,
                });
            }
        }
    }
    if let Some(stale) = changed(
        "alp_enabled",
        &planned.alp_enabled,
        now.alp_enabled.as_ref(),
    ) {
        return Some(stale);
    }
    match &now.cluster {
        Some(cluster) => first_stale_cluster_fact(planned, cluster),
        None => None,
    }
}

/// The cluster facts: a value discovery no longer finds counts as changed (it reads `(none found)`).
fn first_stale_cluster_fact(planned: &Facts, now: &ClusterFacts) -> Option<StaleFact> {
    changed(
        "install_method",
        &planned.install_method,
        now.install_method.as_ref(),
    )
    .or_else(|| {
        changed(
            "operator_namespace",
            &planned.operator_namespace,
            now.operator_namespace.as_ref(),
        )
    })
    .or_else(|| {
        changed(
            "helm_release",
            &planned.helm_release,
            now.helm_release.as_ref(),
        )
    })
    .or_else(|| {
        changed(
            "helm_release_namespace",
            &planned.helm_release_namespace,
            now.helm_release_namespace.as_ref(),
        )
    })
    .or_else(|| {
        changed(
            "manifest_flavor",
            &planned.manifest_flavor,
            now.manifest_flavor.as_ref(),
        )
    })
    .or_else(|| {
        let planned = &planned.owner_references;
        (planned.origin == FactOrigin::Discovered && planned.value != now.owner_references).then(
            || StaleFact {
                fact: "owner_references",
                planned: references(&planned.value, &now.owner_references),
                now: references(&now.owner_references, &planned.value),
            },
        )
    })
}

/// A discovered fact whose value discovery now reports differently (or not at all).
fn changed<T: PartialEq + Serialize>(
    name: &'static str,
    planned: &Fact<T>,
    now: Option<&T>,
) -> Option<StaleFact> {
    if planned.origin != FactOrigin::Discovered || now == Some(&planned.value) {
        return None;
    }
    Some(StaleFact {
        fact: name,
        planned: plain(&planned.value),
        now: now.map_or_else(|| "(none found)".to_string(), plain),
    })
}

/// A value as users write it: strings without quotes, anything else as JSON.
fn plain<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// How many host endpoints a stale-plan message lists in full, and how many of the changed ones it
/// names when the lists are longer (a fleet's list would make a message of megabytes).
const HOST_ENDPOINTS_SHOWN: usize = 5;

/// The host endpoints as planned and as found now. Short lists are shown whole; longer ones as a
/// count and the entries that differ: those the plan had that are gone or changed, and those now
/// found that are new or changed, a few of each and how many more.
fn host_endpoint_change(
    planned: &[HostEndpointFact],
    now: &[HostEndpointFact],
) -> (String, String) {
    if planned.len().max(now.len()) <= HOST_ENDPOINTS_SHOWN {
        return (list(planned), list(now));
    }
    let not_in = |these: &[HostEndpointFact], those: &[HostEndpointFact]| {
        let those: std::collections::BTreeSet<&HostEndpointFact> = those.iter().collect();
        these
            .iter()
            .filter(|endpoint| !those.contains(endpoint))
            .map(entry)
            .collect::<Vec<_>>()
    };
    let describe = |all: &[HostEndpointFact], differing: Vec<String>, which: &str| {
        let count = all.len();
        if differing.is_empty() {
            return format!("{count} host endpoints");
        }
        let more = differing.len().saturating_sub(HOST_ENDPOINTS_SHOWN);
        let shown = differing
            .into_iter()
            .take(HOST_ENDPOINTS_SHOWN)
            .collect::<Vec<_>>()
            .join(", ");
        match more {
            0 => format!("{count} host endpoints, {which}: {shown}"),
            more => format!("{count} host endpoints, {which}: {shown} and {more} more"),
        }
    };
    (
        describe(planned, not_in(planned, now), "since gone or changed"),
        describe(now, not_in(now, planned), "new or changed"),
    )
}

/// The host endpoints by name, with their labels when they have any (a plan copies the labels, so a
/// label changed since planning makes the plan stale too).
fn list(endpoints: &[HostEndpointFact]) -> String {
    if endpoints.is_empty() {
        return "(none)".to_string();
    }
    endpoints.iter().map(entry).collect::<Vec<_>>().join(", ")
}

/// One host endpoint as a stale-plan message shows it: its name, and its labels when it has any.
fn entry(endpoint: &HostEndpointFact) -> String {
    let labels: Vec<String> = endpoint
        .labels
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    if labels.is_empty() {
        endpoint.name.clone()
    } else {
        format!("{} ({})", endpoint.name, labels.join(","))
    }
}

/// OwnerReferences one per entry (`ConfigMap apps/x #0 → Tier t (uid ...)`); as JSON when the short
/// form cannot show the difference from `other` (only a flag changed).
fn references(references: &[OwnerReferenceFact], other: &[OwnerReferenceFact]) -> String {
    let short = |references: &[OwnerReferenceFact]| {
        references
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    if references.is_empty() {
        return "(none)".to_string();
    }
    if short(references) == short(other) {
        return serde_json::to_string(references).unwrap_or_default();
    }
    short(references).join("; ")
}

/// The plan's facts with every discoverable value replaced by what discovery reads now; `check`
/// steps evaluate against these.
pub fn refresh(planned: &Facts, now: &DiscoveredFacts) -> Facts {
    let mut facts = planned.clone();
    if let Some(version) = &now.installed_version {
        facts.installed_version.value = version.clone();
        facts.installed_version.origin = FactOrigin::Discovered;
    }
    if let Some(datastore) = now.datastore_type {
        facts.datastore_type.value = datastore;
        facts.datastore_type.origin = FactOrigin::Discovered;
    }
    if let (FactOrigin::Discovered, Some(names)) = (
        planned.all_interfaces_host_endpoints.origin,
        &now.all_interfaces_host_endpoints,
    ) {
        facts.all_interfaces_host_endpoints.value = names.clone();
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::facts::{FactOverrides, InstallMethod};

    fn reference(name: &str, controller: Option<bool>) -> OwnerReferenceFact {
        OwnerReferenceFact {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("apps".into()),
            name: name.into(),
            owner_kind: "Tier".into(),
            owner_name: "security".into(),
            index: 0,
            owner_uid: Some("u1".into()),
            controller,
            block_owner_deletion: None,
        }
    }

    fn discovered(cluster: ClusterFacts) -> DiscoveredFacts {
        DiscoveredFacts {
            installed_version: Some("v3.26.1".parse().unwrap()),
            alp_enabled: Some(false),
            cluster: Some(cluster),
            ..DiscoveredFacts::default()
        }
    }

    fn endpoints(count: usize) -> Vec<HostEndpointFact> {
        (0..count)
            .map(|index| HostEndpointFact {
                name: format!("hep-{index:05}"),
                node: format!("node-{index}"),
                labels: [("zone".to_string(), "a".to_string())].into(),
            })
            .collect()
    }

    #[test]
    fn a_fleet_of_host_endpoints_is_summarised_by_what_changed() {
        let planned = endpoints(10_000);
        let mut now = planned.clone();
        now.remove(17);
        now[41].labels.insert("zone".into(), "b".into());
        now.extend((0..8).map(|index| HostEndpointFact::named(format!("new-{index}"))));
        let (then_text, now_text) = host_endpoint_change(&planned, &now);
        assert_eq!(
            then_text,
            "10000 host endpoints, since gone or changed: hep-00017 (zone=a), hep-00042 (zone=a)"
        );
        assert_eq!(
            now_text,
            "10007 host endpoints, new or changed: hep-00042 (zone=b), new-0, new-1, new-2, new-3 and 4 more"
        );
        // Short lists are shown whole, as before.
        let (then_text, now_text) = host_endpoint_change(&endpoints(2), &endpoints(3));
        assert_eq!(then_text, "hep-00000 (zone=a), hep-00001 (zone=a)");
        assert_eq!(
            now_text,
            "hep-00000 (zone=a), hep-00001 (zone=a), hep-00002 (zone=a)"
        );
    }

    fn operator_cluster() -> ClusterFacts {
        ClusterFacts {
            install_method: Some(InstallMethod::Operator),
            operator_namespace: Some("tigera-operator".into()),
            owner_references: vec![reference("a", None)],
            ..ClusterFacts::default()
        }
    }

    fn planned(discovered: &DiscoveredFacts, set: &[(&str, &str)]) -> Facts {
        let overrides = FactOverrides {
            set: set
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            ..FactOverrides::default()
        };
        Facts::assemble(discovered, &overrides).unwrap()
    }

    #[test]
    fn cluster_facts_the_plan_discovered_are_compared_by_name_and_value() {
        let plan = planned(&discovered(operator_cluster()), &[]);
        assert_eq!(needs_cluster(&plan), Some("install_method"));
        assert_eq!(
            first_stale_fact(&plan, &discovered(operator_cluster())),
            None
        );
        // Without the cluster re-read, only datastore facts are compared.
        let mut datastore_only = discovered(operator_cluster());
        datastore_only.cluster = None;
        assert_eq!(first_stale_fact(&plan, &datastore_only), None);

        let mut helm = operator_cluster();
        helm.install_method = Some(InstallMethod::Helm);
        helm.helm_release = Some("calico".into());
        assert_eq!(
            first_stale_fact(&plan, &discovered(helm)),
            Some(StaleFact {
                fact: "install_method",
                planned: "operator".into(),
                now: "helm".into()
            })
        );

        let mut moved = operator_cluster();
        moved.operator_namespace = None;
        moved.install_method = Some(InstallMethod::Operator);
        assert_eq!(
            first_stale_fact(&plan, &discovered(moved)).map(|stale| (stale.fact, stale.now)),
            Some(("operator_namespace", "(none found)".to_string()))
        );

        let mut more = operator_cluster();
        more.owner_references.push(reference("b", None));
        let stale = first_stale_fact(&plan, &discovered(more)).unwrap();
        assert_eq!(stale.fact, "owner_references");
        assert_eq!(
            stale.planned,
            "ConfigMap apps/a #0 → Tier security (uid u1)"
        );
        assert_eq!(
            stale.now,
            "ConfigMap apps/a #0 → Tier security (uid u1); ConfigMap apps/b #0 → Tier security (uid u1)"
        );

        // Only a flag changed: the values are shown in full.
        let mut flagged = operator_cluster();
        flagged.owner_references = vec![reference("a", Some(true))];
        let stale = first_stale_fact(&plan, &discovered(flagged)).unwrap();
        assert!(stale.now.contains(r#""controller":true"#), "{}", stale.now);

        let mut alp = discovered(operator_cluster());
        alp.alp_enabled = Some(true);
        assert_eq!(
            first_stale_fact(&plan, &alp).map(|stale| (stale.fact, stale.planned, stale.now)),
            Some(("alp_enabled", "false".into(), "true".into()))
        );
    }

    #[test]
    fn a_discovered_helm_release_namespace_is_compared() {
        let helm = || ClusterFacts {
            install_method: Some(InstallMethod::Helm),
            operator_namespace: Some("tigera-operator".into()),
            helm_release: Some("calico".into()),
            helm_release_namespace: Some("ops".into()),
            ..ClusterFacts::default()
        };
        let plan = planned(&discovered(helm()), &[]);
        assert_eq!(plan.helm_release_namespace.value, "ops");
        assert_eq!(plan.helm_release_namespace.origin, FactOrigin::Discovered);
        assert_eq!(first_stale_fact(&plan, &discovered(helm())), None);
        let mut moved = helm();
        moved.helm_release_namespace = Some("default".into());
        assert_eq!(
            first_stale_fact(&plan, &discovered(moved)),
            Some(StaleFact {
                fact: "helm_release_namespace",
                planned: "ops".into(),
                now: "default".into()
            })
        );
        // Set by flag, it is the operator's call; only the other cluster facts are compared.
        let flagged = planned(
            &discovered(helm()),
            &[("helm_release_namespace", "default")],
        );
        let mut moved = helm();
        moved.helm_release_namespace = Some("elsewhere".into());
        assert_eq!(first_stale_fact(&flagged, &discovered(moved)), None);
    }

    #[test]
    fn facts_set_by_flag_are_the_operators_call() {
        let plan = planned(
            &discovered(operator_cluster()),
            &[
                ("install_method", "operator"),
                ("operator_namespace", "tigera-operator"),
                ("owner_references", "[]"),
                ("alp_enabled", "false"),
            ],
        );
        assert_eq!(needs_cluster(&plan), None);
        let mut changed = operator_cluster();
        changed.install_method = Some(InstallMethod::Helm);
        changed.owner_references.push(reference("b", None));
        let mut now = discovered(changed);
        now.alp_enabled = Some(true);
        assert_eq!(first_stale_fact(&plan, &now), None);
    }
}
