//! Facts: what the planner knows about the cluster, where each value came from, and how to discover
//! what a resource datastore can tell.
//!
//! Every fact has a value and an origin (`discovered`, `flag` or `default`), and every fact can be set
//! from the command line (`--from`, `--datastore-type`, `--install-method`, `--set name=value`) so a plan
//! can be made offline. A saved plan records its facts; the executor re-discovers them to refuse a stale
//! plan. [`discover_facts`] reads `projectcalico.org/v3` resources through the
//! [`Datastore`](crate::datastore::Datastore) trait; `cluster_facts.rs` reads the Kubernetes objects
//! of the install when a cluster is configured. Neither writes anything.
//!
//! Each fact is defined once, in the list below: its name, type, default, `--set` parser, type
//! check, where discovery finds it and whether plans show it while unset. The [`Facts`] struct,
//! its plan format, [`FACTS`] and [`FACT_NAMES`] are made from that list (`define.rs`), and
//! `--set`, the type check, discovery, the plan's facts table, templates and completion read them.

mod define;
mod discovery;
mod rules;
mod values;

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Release;
use crate::config::DatastoreType;
use crate::datastore::StoreError;
use crate::errors::Hint;
pub use crate::vocabulary::InstallMethod;
use define::define_facts;
pub use define::{Discovery, FactDefinition, FactValue, Shown, Stale};
pub use discovery::{ClusterFacts, DiscoveredFacts, discover_facts};
pub use values::{DeploymentFact, HostEndpointFact, ManifestFlavor, OwnerReferenceFact};

/// Where a fact's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FactOrigin {
    /// Read from the datastore.
    Discovered,
    /// Given on the command line.
    Flag,
    /// Nobody said otherwise.
    Default,
}

impl fmt::Display for FactOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FactOrigin::Discovered => "discovered",
            FactOrigin::Flag => "flag",
            FactOrigin::Default => "default",
        })
    }
}

/// One fact: its value and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact<T> {
    pub value: T,
    pub origin: FactOrigin,
}

impl<T> Fact<T> {
    pub fn new(value: T, origin: FactOrigin) -> Fact<T> {
        Fact { value, origin }
    }

    pub(super) fn default_value(value: T) -> Fact<T> {
        Fact::new(value, FactOrigin::Default)
    }
}

/// The label automatic host endpoints carry, and its value (`docs/upgrade-procedures.md`,
/// "Automatic host endpoints").
pub const AUTO_HOST_ENDPOINT_LABEL: (&str, &str) =
    ("projectcalico.org/created-by", "calico-kube-controllers");

/// The default manifest location; `--set manifest_base_url=file:///mirror` serves air-gapped sites.
pub const DEFAULT_MANIFEST_BASE_URL: &str =
    "https://raw.githubusercontent.com/projectcalico/calico";

define_facts! {
    /// The version installed now (`from`).
    installed_version: Release {
        default: Release::UNKNOWN,
        parse: rules::release,
        check: rules::any,
        discovered: Datastore(|found: &DiscoveredFacts| found.installed_version.clone()),
        stale: Always,
        shown: Always,
        values: [],
    }
    /// Where the resources are stored.
    datastore_type: DatastoreType {
        default: DatastoreType::Kubernetes,
        parse: rules::word,
        check: rules::any,
        discovered: Datastore(|found: &DiscoveredFacts| found.datastore_type),
        stale: WhenDiscovered,
        shown: Always,
        values: ["kubernetes", "etcdv3"],
    }
    /// How the network was installed: the operator, its Helm chart, or a manifest.
    install_method: InstallMethod {
        default: InstallMethod::Operator,
        parse: rules::word,
        check: rules::any,
        discovered: Cluster(|found: &DiscoveredFacts| found.cluster.as_ref()?.install_method),
        stale: WhenDiscovered,
        shown: Always,
        values: ["operator", "helm", "manifest"],
    }
    /// Where the operator and the Helm release live (from v3.23 the user creates it).
    operator_namespace: String {
        default: "tigera-operator".to_string(),
        parse: rules::text,
        check: rules::namespace,
        discovered: Cluster(|found: &DiscoveredFacts| found.cluster.as_ref()?.operator_namespace.clone()),
        stale: WhenDiscovered,
        shown: Always,
        values: [],
    }
    /// Where the network's pods run: `calico-system` under the operator, `kube-system` for
    /// manifests.
    system_namespace: String {
        default: String::new(),
        parse: rules::text,
        check: rules::namespace,
        discovered: Never,
        stale: Never,
        shown: Always,
        values: [],
    }
    /// The Helm release name.
    helm_release: String {
        default: "calico".to_string(),
        parse: rules::text,
        check: rules::helm_release,
        discovered: Cluster(|found: &DiscoveredFacts| found.cluster.as_ref()?.helm_release.clone()),
        stale: WhenDiscovered,
        shown: Always,
        values: [],
    }
    /// Where the Helm release's secrets live: before v3.23 the chart required `default`, apart
    /// from the operator. Left out of plans while unset (installs that are not Helm's).
    helm_release_namespace: String {
        default: String::new(),
        parse: rules::required_text,
        check: rules::optional_namespace,
        discovered: Cluster(|found: &DiscoveredFacts| {
            found.cluster.as_ref()?.helm_release_namespace.clone()
        }),
        stale: WhenDiscovered,
        shown: WhenSet,
        values: [],
    }
    /// Which single manifest a manifest install came from.
    manifest_flavor: ManifestFlavor {
        default: ManifestFlavor::Calico,
        parse: rules::word,
        check: rules::any,
        discovered: Cluster(|found: &DiscoveredFacts| found.cluster.as_ref()?.manifest_flavor),
        stale: WhenDiscovered,
        shown: Always,
        values: ["calico", "canal", "policy-only"],
    }
    /// Where manifests are downloaded from.
    manifest_base_url: String {
        default: DEFAULT_MANIFEST_BASE_URL.to_string(),
        parse: rules::base_url,
        check: rules::manifest_url,
        discovered: Never,
        stale: Never,
        shown: Always,
        values: [],
    }
    /// Host endpoints with `interfaceName: "*"` (not the automatic ones), with node and labels.
    all_interfaces_host_endpoints: Vec<HostEndpointFact> {
        default: Vec::new(),
        parse: rules::host_endpoints,
        check: rules::host_endpoint_names,
        discovered: Datastore(|found: &DiscoveredFacts| found.all_interfaces_host_endpoints.clone()),
        stale: WhenDiscovered,
        shown: Always,
        values: [],
    }
    /// OwnerReferences from Kubernetes objects to `projectcalico.org/v3` owners, in removal order.
    owner_references: Vec<OwnerReferenceFact> {
        default: Vec::new(),
        parse: rules::owner_references,
        check: rules::reference_names,
        discovered: Cluster(|found: &DiscoveredFacts| {
            Some(found.cluster.as_ref()?.owner_references.clone())
        }),
        stale: WhenDiscovered,
        shown: Always,
        values: [],
    }
    /// Application layer policy (Istio with the policy sidecar) is on.
    alp_enabled: bool {
        default: false,
        parse: rules::word,
        check: rules::any,
        discovered: Datastore(|found: &DiscoveredFacts| found.alp_enabled),
        stale: WhenDiscovered,
        shown: Always,
        values: ["true", "false"],
    }
    /// The full service-mesh version string, for the injector configmap name
    /// (`docs/upgrade-procedures.md`, "Application layer policy").
    mesh_version: String {
        default: String::new(),
        parse: rules::text,
        check: rules::optional_version,
        discovered: Never,
        stale: Never,
        shown: Always,
        values: [],
    }
    /// The Deployments of the services in the mesh, rolled after the injector configmap
    /// (`docs/upgrade-procedures.md`, "Application layer policy").
    service_deployments: Vec<DeploymentFact> {
        default: Vec::new(),
        parse: rules::deployments,
        check: rules::deployment_names,
        discovered: Cluster(|found: &DiscoveredFacts| {
            Some(found.cluster.as_ref()?.service_deployments.clone())
        }),
        stale: Never,
        shown: Always,
        values: [],
    }
    /// The API group of the Kubernetes datastore's Calico resources: of the datastore itself, or,
    /// for an etcd install, of its cluster (where `datastore-migration` imports to). Chosen as a
    /// connection chooses it (`datastore/kube/api_group.rs`): `calicoAPIGroup` / `CALICO_API_GROUP`,
    /// else what the API server serves (`projectcalico.org/v3` when only v3.32's native CRDs are),
    /// else `crd.projectcalico.org/v1`. Left out of plans while unknown (no cluster).
    calico_api_group: String {
        default: String::new(),
        parse: rules::api_group,
        check: rules::optional_api_group,
        discovered: Datastore(|found: &DiscoveredFacts| {
            found.calico_api_group.map(|group| group.api_version().to_string())
        }),
        stale: Never,
        shown: WhenSet,
        values: ["crd.projectcalico.org/v1", "projectcalico.org/v3"],
    }
    /// The etcd endpoints netctl is configured with (`etcdEndpoints`), comma-separated: what an
    /// etcd manifest's `etcd_endpoints` must say. Left out of plans while unset, so plans for the
    /// Kubernetes datastore do not list it.
    etcd_endpoints: String {
        default: String::new(),
        parse: rules::url_list,
        check: rules::endpoint_urls,
        discovered: Configuration(|found: &DiscoveredFacts| found.etcd_endpoints.clone()),
        stale: Never,
        shown: WhenSet,
        values: [],
    }
}

/// Facts given on the command line, applied over discovered ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FactOverrides {
    pub from: Option<Release>,
    pub datastore_type: Option<DatastoreType>,
    pub install_method: Option<InstallMethod>,
    /// `--set name=value`, in command-line order (a later one wins).
    pub set: Vec<(String, String)>,
}

/// Why the facts could not be established.
#[derive(Debug, thiserror::Error)]
pub enum FactError {
    #[error("the installed version is unknown")]
    MissingInstalledVersion,
    #[error("the install method is unknown")]
    MissingInstallMethod,
    #[error("unknown fact `{name}`")]
    UnknownFact { name: String, known: String },
    #[error("invalid value `{value}` for fact `{name}`: {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: String,
    },
    #[error("`--set` expects `name=value`, got `{0}`")]
    MalformedSet(String),
    #[error("could not read `{what}` from the datastore")]
    Discovery {
        what: String,
        // Boxed: a `StoreError` is large and most fact errors carry none.
        #[source]
        source: Box<StoreError>,
    },
    #[error("ClusterInformation `default` has an invalid `spec.calicoVersion` `{0}`")]
    InvalidClusterVersion(String),
    #[error("could not read {what} from the Kubernetes API")]
    ClusterDiscovery {
        what: String,
        // Boxed: a `kube::Error` is large and most fact errors carry none.
        #[source]
        source: Box<kube::Error>,
    },
}

impl Hint for FactError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            FactError::MissingInstalledVersion => "pass `--from vX.Y.Z`, or connect to the datastore so netctl can read ClusterInformation `default`".to_string(),
            FactError::MissingInstallMethod => {
                "pass `--install-method operator|helm|manifest`".to_string()
            }
            FactError::UnknownFact { known, .. } => format!("known facts are {known}"),
            FactError::ClusterDiscovery { .. } => "give the facts with `--install-method` and `--set owner_references=[...]`, or pass `--offline`".to_string(),
            FactError::Discovery { source, .. } => return source.hint(),
            _ => return None,
        })
    }
}

/// Per object, the highest index first: removing a reference shifts the ones after it, so removals
/// must run from the end of the list.
pub(crate) fn sort_for_removal(references: &mut [OwnerReferenceFact]) {
    references.sort_by(|a, b| {
        (
            &a.api_version,
            &a.kind,
            &a.namespace,
            &a.name,
            std::cmp::Reverse(a.index),
        )
            .cmp(&(
                &b.api_version,
                &b.kind,
                &b.namespace,
                &b.name,
                std::cmp::Reverse(b.index),
            ))
    });
}

impl Facts {
    /// Combines discovered facts with command-line overrides (a flag beats discovery beats default).
    pub fn assemble(
        discovered: &DiscoveredFacts,
        overrides: &FactOverrides,
    ) -> Result<Facts, FactError> {
        let mut facts = Facts::discovered_or_default(discovered);
        let flag = FactOrigin::Flag;
        if let Some(version) = &overrides.from {
            facts.installed_version = Fact::new(version.clone(), flag);
        }
        if let Some(datastore) = overrides.datastore_type {
            facts.datastore_type = Fact::new(datastore, flag);
        }
        if let Some(method) = overrides.install_method {
            facts.install_method = Fact::new(method, flag);
        }
        for (name, value) in &overrides.set {
            facts.set(name, value)?;
        }
        // Required facts that have neither a flag nor a discovered value.
        if facts.installed_version.value == Release::UNKNOWN {
            return Err(FactError::MissingInstalledVersion);
        }
        if facts.install_method.origin == FactOrigin::Default {
            // The operator and its Helm chart run on the Kubernetes datastore only: on etcd the
            // install is the single manifest (`docs/upgrade-procedures.md`, "Single manifest, etcd
            // datastore"), with no cluster needed to tell.
            if facts.datastore_type.value != DatastoreType::EtcdV3 {
                return Err(FactError::MissingInstallMethod);
            }
            facts.install_method.value = InstallMethod::Manifest;
        }
        if facts.system_namespace.origin == FactOrigin::Default {
            facts.system_namespace.value = match facts.install_method.value {
                InstallMethod::Operator | InstallMethod::Helm => "calico-system",
                InstallMethod::Manifest => "kube-system",
            }
            .to_string();
        }
        // Charts before v3.23 required the release in `default`; only Helm installs have one.
        if facts.helm_release_namespace.origin == FactOrigin::Default
            && facts.install_method.value == InstallMethod::Helm
        {
            facts.helm_release_namespace.value = "default".to_string();
        }
        facts.check_types()?;
        Ok(facts)
    }

    /// Checks every fact against its type before any template sees it: namespaces are DNS-1123
    /// labels, names DNS-1123 subdomains (a Helm release at most 53 characters, as Helm's rule),
    /// label keys and values as Kubernetes has them, versions semver, endpoints URLs. A value that
    /// could change what a rendered selector, path or command means is refused here, whether it was
    /// given with `--set` or discovered.
    pub fn check_types(&self) -> Result<(), FactError> {
        FACTS.iter().try_for_each(|fact| (fact.check)(self))
    }

    /// Sets one fact from its command-line text (`--set name=value`).
    ///
    /// Lists are comma-separated (`a,b`) or JSON (`[...]`); `owner_references` takes JSON objects.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), FactError> {
        let Some(fact) = FACTS.iter().find(|fact| fact.name == name) else {
            return Err(FactError::UnknownFact {
                name: name.to_string(),
                known: FACT_NAMES
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        (fact.set)(self, text).map_err(|reason| FactError::InvalidValue {
            name: name.to_string(),
            value: text.to_string(),
            reason,
        })
    }

    /// The facts as plain values, for templates and `when` conditions (`facts.alp_enabled`): every
    /// fact, those plans leave out while unset included.
    pub fn values(&self) -> serde_json::Map<String, serde_json::Value> {
        FACTS
            .iter()
            .map(|fact| (fact.name.to_string(), (fact.value)(self).0))
            .collect()
    }

    /// The facts a plan shows, in order: name, value and origin (the plan's facts table).
    pub fn shown(&self) -> Vec<(&'static str, serde_json::Value, FactOrigin)> {
        FACTS
            .iter()
            .filter(|fact| (fact.is_shown)(self))
            .map(|fact| {
                let (value, origin) = (fact.value)(self);
                (fact.name, value, origin)
            })
            .collect()
    }
}

/// Parses `--set name=value`.
pub fn parse_set(text: &str) -> Result<(String, String), FactError> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(FactError::MalformedSet(text.to_string())),
    }
}

pub use super::release::ReleaseError;

#[cfg(test)]
mod tests;
