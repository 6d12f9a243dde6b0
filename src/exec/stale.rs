//! Stale-plan detection: does the cluster still show the facts a saved plan was made from?
//!
//! Only facts that discovery can read are compared. The installed version is compared whenever the
//! datastore reports one, whatever its origin in the plan: a plan written for v3.26 is wrong for a
//! cluster now running v3.28, even if `--from` said v3.26 at plan time. Other facts are compared only
//! when the plan itself discovered them; a fact the operator set by flag is the operator's call.

use crate::plan::facts::HostEndpointFact;
use crate::plan::{DiscoveredFacts, FactOrigin, Facts};

/// The first fact that no longer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleFact {
    pub fact: &'static str,
    pub planned: String,
    pub now: String,
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
                return Some(StaleFact {
                    fact: "all_interfaces_host_endpoints",
                    planned: list(&planned.all_interfaces_host_endpoints.value),
                    now: list(endpoints),
                });
            }
        }
    }
    None
}

/// The host endpoints by name, with their labels when they have any (a plan copies the labels, so a
/// label changed since planning makes the plan stale too).
fn list(endpoints: &[HostEndpointFact]) -> String {
    if endpoints.is_empty() {
        return "(none)".to_string();
    }
    endpoints
        .iter()
        .map(|endpoint| {
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
        })
        .collect::<Vec<_>>()
        .join(", ")
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
