//! Facts: what the planner knows about the cluster, where each value came from, and how to discover
//! what a resource datastore can tell.
//!
//! Every fact has a value and an origin (`discovered`, `flag` or `default`), and every fact can be set
//! from the command line (`--from`, `--datastore-type`, `--install-method`, `--set name=value`) so a plan
//! can be made offline. A saved plan records its facts; the executor re-discovers them to refuse a stale
//! plan. [`discover_facts`] reads `projectcalico.org/v3` resources through the [`Datastore`] trait;
//! `cluster_facts.rs` reads the Kubernetes objects of the install when a cluster is configured.
//! Neither writes anything.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::Release;
use crate::config::DatastoreType;
use crate::datastore::{self, Datastore, Detail, ListOptions, StoreError};
use crate::errors::Hint;
use crate::resource::{Kind, ResourceKey};
pub use crate::vocabulary::InstallMethod;

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

    fn default_value(value: T) -> Fact<T> {
        Fact::new(value, FactOrigin::Default)
    }
}

/// Which single manifest a manifest install came from (seed §9.6/§9.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ManifestFlavor {
    /// Policy and networking: `calico.yaml` / `calico-etcd.yaml`.
    Calico,
    /// Policy with flannel networking: `canal.yaml` / `canal-etcd.yaml`.
    Canal,
    /// Policy only (advanced): `calico-policy-only.yaml`; Kubernetes datastore only.
    PolicyOnly,
}

impl FromStr for ManifestFlavor {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "calico" => Ok(ManifestFlavor::Calico),
            "canal" => Ok(ManifestFlavor::Canal),
            "policy-only" => Ok(ManifestFlavor::PolicyOnly),
            other => Err(other.to_string()),
        }
    }
}

/// One OwnerReference from a Kubernetes object to a `projectcalico.org/v3` owner.
///
/// `index` is the reference's position in the object's `metadata.ownerReferences`, so a JSON patch can
/// remove exactly it (guarded by a `test` of the owner's apiVersion). The rest is what re-adding it
/// after the upgrade needs besides the owner's new UID: the `controller` and `blockOwnerDeletion`
/// flags as the reference had them (absent when it did not set them), and the UID it pointed at, kept
/// so the record in the plan (and so in the checkpoint) says exactly what was removed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerReferenceFact {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub owner_kind: String,
    pub owner_name: String,
    pub index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl fmt::Display for OwnerReferenceFact {
    /// `ConfigMap apps/settings #0 → Tier security`, as refusals and `upgrade status` show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name)?,
            None => write!(f, "{} {}", self.kind, self.name)?,
        }
        write!(
            f,
            " #{} → {} {}",
            self.index, self.owner_kind, self.owner_name
        )?;
        if let Some(uid) = &self.owner_uid {
            write!(f, " (uid {uid})")?;
        }
        Ok(())
    }
}

/// One all-interfaces host endpoint (`interfaceName: "*"`): its name, its node and its labels, which
/// the migration to automatic host endpoints copies to the node (seed §9.9).
///
/// `--set all_interfaces_host_endpoints=a,b` gives names only (node and labels unknown, enough for
/// the pre-v3.14 preparation); the JSON form `[{"name": "a", "node": "n1", "labels": {..}}]` gives
/// everything. A plain string in a JSON list is a name as well.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostEndpointFact {
    pub name: String,
    /// `spec.node`; empty when only the name was given.
    pub node: String,
    pub labels: BTreeMap<String, String>,
}

impl HostEndpointFact {
    /// A host endpoint known by name only.
    pub fn named(name: impl Into<String>) -> HostEndpointFact {
        HostEndpointFact {
            name: name.into(),
            node: String::new(),
            labels: BTreeMap::new(),
        }
    }
}

impl<'de> Deserialize<'de> for HostEndpointFact {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Full {
            name: String,
            #[serde(default)]
            node: String,
            #[serde(default)]
            labels: BTreeMap<String, String>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Name(String),
            Full(Full),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Name(name) => HostEndpointFact::named(name),
            Either::Full(full) => HostEndpointFact {
                name: full.name,
                node: full.node,
                labels: full.labels,
            },
        })
    }
}

/// One Deployment of a service in the mesh, rolled when application layer policy is upgraded
/// (seed §9.8). `--set service_deployments=ns/name,ns/other` or a JSON list of
/// `{"namespace": .., "name": ..}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentFact {
    pub namespace: String,
    pub name: String,
}

/// The label automatic host endpoints carry, and its value (seed §2.2).
pub const AUTO_HOST_ENDPOINT_LABEL: (&str, &str) =
    ("projectcalico.org/created-by", "calico-kube-controllers");

/// The default manifest location; `--set manifest_base_url=file:///mirror` serves air-gapped sites.
pub const DEFAULT_MANIFEST_BASE_URL: &str =
    "https://raw.githubusercontent.com/projectcalico/calico";

/// Everything the planner decides on. Serialised in plans as `name: {value, origin}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    /// The version installed now (`from`).
    pub installed_version: Fact<Release>,
    pub datastore_type: Fact<DatastoreType>,
    pub install_method: Fact<InstallMethod>,
    /// Where the operator and the Helm release live (from v3.23 the user creates it).
    pub operator_namespace: Fact<String>,
    /// Where the network's pods run: `calico-system` under the operator, `kube-system` for manifests.
    pub system_namespace: Fact<String>,
    /// The Helm release name.
    pub helm_release: Fact<String>,
    /// Where the Helm release's secrets live: before v3.23 the chart required `default`, apart
    /// from the operator. Left out of plans while unset (installs that are not Helm's).
    #[serde(default = "unset_text", skip_serializing_if = "Fact::is_unset")]
    pub helm_release_namespace: Fact<String>,
    pub manifest_flavor: Fact<ManifestFlavor>,
    pub manifest_base_url: Fact<String>,
    /// Host endpoints with `interfaceName: "*"` (not the automatic ones), with node and labels.
    pub all_interfaces_host_endpoints: Fact<Vec<HostEndpointFact>>,
    pub owner_references: Fact<Vec<OwnerReferenceFact>>,
    /// Application layer policy (Istio with the policy sidecar) is on.
    pub alp_enabled: Fact<bool>,
    /// The full service-mesh version string, for the injector configmap name (seed §9.8).
    pub mesh_version: Fact<String>,
    /// The Deployments of the services in the mesh, rolled after the injector configmap (seed §9.8).
    pub service_deployments: Fact<Vec<DeploymentFact>>,
    /// The etcd endpoints netctl is configured with (`etcdEndpoints`), comma-separated: what an etcd
    /// manifest's `etcd_endpoints` must say. Left out of plans while unset, so plans for the
    /// Kubernetes datastore do not list it.
    #[serde(default = "unset_text", skip_serializing_if = "Fact::is_unset")]
    pub etcd_endpoints: Fact<String>,
}

fn unset_text() -> Fact<String> {
    Fact::default_value(String::new())
}

impl Fact<String> {
    fn is_unset(&self) -> bool {
        self.origin == FactOrigin::Default && self.value.is_empty()
    }
}

/// The names `--set` accepts, in the order plans list them.
pub const FACT_NAMES: [&str; 15] = [
    "installed_version",
    "datastore_type",
    "install_method",
    "operator_namespace",
    "system_namespace",
    "helm_release",
    "helm_release_namespace",
    "manifest_flavor",
    "manifest_base_url",
    "all_interfaces_host_endpoints",
    "owner_references",
    "alp_enabled",
    "mesh_version",
    "service_deployments",
    "etcd_endpoints",
];

/// What discovery could read from the datastore; `None` where it found nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiscoveredFacts {
    pub installed_version: Option<Release>,
    pub datastore_type: Option<DatastoreType>,
    pub all_interfaces_host_endpoints: Option<Vec<HostEndpointFact>>,
    /// FelixConfiguration `default` sets `policySyncPathPrefix` (what enabling ALP does).
    pub alp_enabled: Option<bool>,
    /// What the Kubernetes cluster tells, when one is configured (`plan::discover_cluster_facts`).
    pub cluster: Option<ClusterFacts>,
    /// The etcd endpoints of netctl's own configuration (not read from the datastore: the caller
    /// that loaded the configuration sets them).
    pub etcd_endpoints: Option<String>,
}

/// What the Kubernetes objects of the install tell; `None` where discovery found nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClusterFacts {
    pub install_method: Option<InstallMethod>,
    /// The namespace of the operator Deployment (from v3.23 also the Helm release's).
    pub operator_namespace: Option<String>,
    pub helm_release: Option<String>,
    /// The namespace of the Helm release's secrets (`owner=helm,name=<release>`).
    pub helm_release_namespace: Option<String>,
    pub manifest_flavor: Option<ManifestFlavor>,
    /// OwnerReferences to `projectcalico.org/v3` owners, in removal order.
    pub owner_references: Vec<OwnerReferenceFact>,
    /// Deployments whose pods get the mesh sidecar injected, sorted.
    pub service_deployments: Vec<DeploymentFact>,
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

/// Reads what a resource datastore can tell: the datastore type, the installed version
/// (ClusterInformation `default`, `spec.calicoVersion`) and the all-interfaces host endpoints with
/// their nodes and labels. Automatic host endpoints (labelled
/// `projectcalico.org/created-by: calico-kube-controllers`) are all-interfaces too, but they are what
/// the migration creates, not what it replaces, so they are left out.
///
/// A missing ClusterInformation leaves the version unknown (a fresh or foreign datastore); any other
/// datastore error is returned, because a plan made from half the facts would be wrong.
pub async fn discover_facts(store: &dyn Datastore) -> Result<DiscoveredFacts, FactError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let installed_version = match store.get(&key).await {
        Ok(resource) => match resource.spec.get("calicoVersion").and_then(|v| v.as_str()) {
            Some(text) if !text.is_empty() => Some(
                text.parse::<Release>()
                    .map_err(|_| FactError::InvalidClusterVersion(text.to_string()))?,
            ),
            _ => None,
        },
        Err(StoreError::NotFound(_)) => None,
        Err(source) => {
            return Err(FactError::Discovery {
                what: "ClusterInformation `default`".to_string(),
                source: Box::new(source),
            });
        }
    };

    let mut all_interfaces = Vec::new();
    // Only what the facts hold is decoded: the labels, `interfaceName` and `node` (the rest of a
    // host endpoint is most of it; planning 10k read them whole).
    let summary = Detail::Summary {
        spec_fields: vec!["interfaceName", "node"],
        labels: true,
    };
    datastore::for_each(
        store,
        &ListOptions::new(Kind::HostEndpoint).with_detail(summary),
        |resource| -> Result<(), StoreError> {
            let (label, value) = AUTO_HOST_ENDPOINT_LABEL;
            let automatic = resource.metadata.labels.get(label).map(String::as_str) == Some(value);
            if resource.spec.get("interfaceName").and_then(|v| v.as_str()) == Some("*")
                && !automatic
            {
                all_interfaces.push(HostEndpointFact {
                    node: resource
                        .spec
                        .get("node")
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_string(),
                    labels: resource.metadata.labels.into_iter().collect(),
                    name: resource.metadata.name,
                });
            }
            Ok(())
        },
    )
    .await
    .map_err(|source| FactError::Discovery {
        what: "host endpoints".to_string(),
        source: Box::new(source),
    })?;
    all_interfaces.sort();

    // Upstream's ALP enablement sets `policySyncPathPrefix` on FelixConfiguration `default`.
    let felix = ResourceKey::new(Kind::FelixConfiguration, None, "default");
    let alp_enabled = match store.get(&felix).await {
        Ok(resource) => resource
            .spec
            .get("policySyncPathPrefix")
            .and_then(|v| v.as_str())
            .is_some_and(|prefix| !prefix.is_empty()),
        Err(StoreError::NotFound(_)) => false,
        Err(source) => {
            return Err(FactError::Discovery {
                what: "FelixConfiguration `default`".to_string(),
                source: Box::new(source),
            });
        }
    };

    Ok(DiscoveredFacts {
        installed_version,
        datastore_type: Some(store.kind()),
        all_interfaces_host_endpoints: Some(all_interfaces),
        alp_enabled: Some(alp_enabled),
        cluster: None,
        etcd_endpoints: None,
    })
}

/// Per object, the highest index first: removing a reference shifts the ones after it, so removals
/// must run from the end of the list.
pub(super) fn sort_for_removal(references: &mut [OwnerReferenceFact]) {
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
        let flag = |value| Fact::new(value, FactOrigin::Flag);
        let found = |value| Fact::new(value, FactOrigin::Discovered);
        let installed_version = match (&overrides.from, &discovered.installed_version) {
            (Some(version), _) => flag(version.clone()),
            (None, Some(version)) => found(version.clone()),
            (None, None) => Fact::new(Release::UNKNOWN, FactOrigin::Default),
        };
        let datastore_type = match (overrides.datastore_type, discovered.datastore_type) {
            (Some(value), _) => Fact::new(value, FactOrigin::Flag),
            (None, Some(value)) => Fact::new(value, FactOrigin::Discovered),
            (None, None) => Fact::default_value(DatastoreType::Kubernetes),
        };
        let cluster = discovered.cluster.clone().unwrap_or_default();
        // A discovered value, or the default when discovery found nothing.
        fn either<T>(value: Option<T>, default: T) -> Fact<T> {
            match value {
                Some(value) => Fact::new(value, FactOrigin::Discovered),
                None => Fact::default_value(default),
            }
        }
        let install_method = match (overrides.install_method, cluster.install_method) {
            (Some(method), _) => Fact::new(method, FactOrigin::Flag),
            (None, Some(method)) => Fact::new(method, FactOrigin::Discovered),
            (None, None) => Fact::default_value(InstallMethod::Operator),
        };
        let mut facts = Facts {
            installed_version,
            datastore_type,
            install_method,
            operator_namespace: either(cluster.operator_namespace, "tigera-operator".to_string()),
            system_namespace: Fact::default_value(String::new()),
            helm_release: either(cluster.helm_release, "calico".to_string()),
            // Unset until the install method is known (below).
            helm_release_namespace: either(cluster.helm_release_namespace, String::new()),
            manifest_flavor: either(cluster.manifest_flavor, ManifestFlavor::Calico),
            manifest_base_url: Fact::default_value(DEFAULT_MANIFEST_BASE_URL.to_string()),
            all_interfaces_host_endpoints: either(
                discovered.all_interfaces_host_endpoints.clone(),
                Vec::new(),
            ),
            owner_references: match discovered.cluster {
                Some(_) => Fact::new(cluster.owner_references, FactOrigin::Discovered),
                None => Fact::default_value(Vec::new()),
            },
            alp_enabled: either(discovered.alp_enabled, false),
            mesh_version: Fact::default_value(String::new()),
            service_deployments: match discovered.cluster {
                Some(_) => Fact::new(cluster.service_deployments, FactOrigin::Discovered),
                None => Fact::default_value(Vec::new()),
            },
            etcd_endpoints: either(discovered.etcd_endpoints.clone(), String::new()),
        };
        for (name, value) in &overrides.set {
            facts.set(name, value)?;
        }
        // Required facts that have neither a flag nor a discovered value.
        if facts.installed_version.value == Release::UNKNOWN {
            return Err(FactError::MissingInstalledVersion);
        }
        if facts.install_method.origin == FactOrigin::Default {
            // The operator and its Helm chart run on the Kubernetes datastore only: on etcd the
            // install is the single manifest (seed §9.7), with no cluster needed to tell.
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
        use crate::resource::validate::syntax::{
            check_label_value, check_qualified_name, check_subdomain, is_dns_label,
        };
        let invalid = |name: &str, value: &str, reason: String| FactError::InvalidValue {
            name: name.to_string(),
            value: value.to_string(),
            reason,
        };
        let namespace = |name: &str, value: &str| {
            match is_dns_label(value) {
            true => Ok(()),
            false => Err(invalid(
                name,
                value,
                "a namespace is a DNS-1123 label: at most 63 lower case alphanumerics or `-`, starting and ending with an alphanumeric".to_string(),
            )),
        }
        };
        let object_name = |name: &str, value: &str| {
            check_subdomain(value).map_err(|reason| invalid(name, value, reason))
        };
        namespace("operator_namespace", &self.operator_namespace.value)?;
        namespace("system_namespace", &self.system_namespace.value)?;
        if !self.helm_release_namespace.value.is_empty() {
            namespace("helm_release_namespace", &self.helm_release_namespace.value)?;
        }
        let release = &self.helm_release.value;
        object_name("helm_release", release)?;
        if release.len() > 53 {
            return Err(invalid(
                "helm_release",
                release,
                "a Helm release name has at most 53 characters".to_string(),
            ));
        }
        check_url(
            "manifest_base_url",
            &self.manifest_base_url.value,
            &["https", "http", "file"],
        )?;
        if !self.etcd_endpoints.value.is_empty() {
            for endpoint in self.etcd_endpoints.value.split(',') {
                check_url("etcd_endpoints", endpoint, &["https", "http"])?;
            }
        }
        let mesh = &self.mesh_version.value;
        if !mesh.is_empty() && semver::Version::parse(mesh).is_err() {
            return Err(invalid(
                "mesh_version",
                mesh,
                "expected the full mesh version, e.g. `1.20.2`".to_string(),
            ));
        }
        for endpoint in &self.all_interfaces_host_endpoints.value {
            let fact = "all_interfaces_host_endpoints";
            object_name(fact, &endpoint.name)?;
            if !endpoint.node.is_empty() {
                object_name(fact, &endpoint.node)?;
            }
            for (key, value) in &endpoint.labels {
                check_qualified_name(key).map_err(|reason| invalid(fact, key, reason))?;
                check_label_value(value).map_err(|reason| invalid(fact, value, reason))?;
            }
        }
        for deployment in &self.service_deployments.value {
            namespace("service_deployments", &deployment.namespace)?;
            object_name("service_deployments", &deployment.name)?;
        }
        for reference in &self.owner_references.value {
            if let Some(value) = &reference.namespace {
                namespace("owner_references", value)?;
            }
            object_name("owner_references", &reference.name)?;
            object_name("owner_references", &reference.owner_name)?;
        }
        Ok(())
    }

    /// Sets one fact from its command-line text (`--set name=value`).
    ///
    /// Lists are comma-separated (`a,b`) or JSON (`[...]`); `owner_references` takes JSON objects.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), FactError> {
        let invalid = |reason: &str| FactError::InvalidValue {
            name: name.to_string(),
            value: text.to_string(),
            reason: reason.to_string(),
        };
        let flag = FactOrigin::Flag;
        match name {
            "installed_version" => {
                let version = text
                    .parse()
                    .map_err(|error: ReleaseError| invalid(&error.to_string()))?;
                self.installed_version = Fact::new(version, flag);
            }
            "datastore_type" => {
                let value = text
                    .parse()
                    .map_err(|_| invalid("expected `kubernetes` or `etcdv3`"))?;
                self.datastore_type = Fact::new(value, flag);
            }
            "install_method" => {
                let value = text
                    .parse()
                    .map_err(|_| invalid("expected `operator`, `helm` or `manifest`"))?;
                self.install_method = Fact::new(value, flag);
            }
            "operator_namespace" => self.operator_namespace = Fact::new(text.to_string(), flag),
            "system_namespace" => self.system_namespace = Fact::new(text.to_string(), flag),
            "helm_release" => self.helm_release = Fact::new(text.to_string(), flag),
            "helm_release_namespace" => {
                if text.trim().is_empty() {
                    return Err(invalid("expected a namespace"));
                }
                self.helm_release_namespace = Fact::new(text.trim().to_string(), flag);
            }
            "manifest_flavor" => {
                let value = text
                    .parse()
                    .map_err(|_| invalid("expected `calico`, `canal` or `policy-only`"))?;
                self.manifest_flavor = Fact::new(value, flag);
            }
            "manifest_base_url" => {
                self.manifest_base_url = Fact::new(text.trim_end_matches('/').to_string(), flag)
            }
            "all_interfaces_host_endpoints" => {
                let endpoints = if text.trim().starts_with('[') {
                    serde_json::from_str(text.trim()).map_err(|error| {
                        invalid(&format!(
                            "expected a JSON list of names or of {{name, node, labels}}: {error}"
                        ))
                    })?
                } else {
                    parse_list(text)
                        .map_err(|reason| invalid(&reason))?
                        .into_iter()
                        .map(HostEndpointFact::named)
                        .collect()
                };
                self.all_interfaces_host_endpoints = Fact::new(endpoints, flag);
            }
            "service_deployments" => {
                let deployments = if text.trim().starts_with('[') {
                    serde_json::from_str(text.trim()).map_err(|error| {
                        invalid(&format!(
                            "expected a JSON list of {{namespace, name}}: {error}"
                        ))
                    })?
                } else {
                    parse_list(text)
                        .map_err(|reason| invalid(&reason))?
                        .into_iter()
                        .map(|item| match item.split_once('/') {
                            Some((namespace, name))
                                if !namespace.is_empty()
                                    && !name.is_empty()
                                    && !name.contains('/') =>
                            {
                                Ok(DeploymentFact {
                                    namespace: namespace.to_string(),
                                    name: name.to_string(),
                                })
                            }
                            _ => Err(invalid(&format!(
                                "expected `namespace/name` items separated by commas, got `{item}`"
                            ))),
                        })
                        .collect::<Result<Vec<_>, _>>()?
                };
                self.service_deployments = Fact::new(deployments, flag);
            }
            "owner_references" => {
                let mut references: Vec<OwnerReferenceFact> = serde_json::from_str(text)
                    .map_err(|error| invalid(&format!("expected a JSON list: {error}")))?;
                sort_for_removal(&mut references);
                self.owner_references = Fact::new(references, flag);
            }
            "alp_enabled" => {
                let value = text
                    .parse()
                    .map_err(|_| invalid("expected `true` or `false`"))?;
                self.alp_enabled = Fact::new(value, flag);
            }
            "mesh_version" => self.mesh_version = Fact::new(text.to_string(), flag),
            "etcd_endpoints" => {
                let endpoints = parse_list(text).map_err(|reason| invalid(&reason))?;
                self.etcd_endpoints = Fact::new(endpoints.join(","), flag);
            }
            other => {
                return Err(FactError::UnknownFact {
                    name: other.to_string(),
                    known: FACT_NAMES.map(|name| format!("`{name}`")).join(", "),
                });
            }
        }
        Ok(())
    }

    /// The facts as plain values, for templates and `when` conditions (`facts.alp_enabled`).
    pub fn values(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut values = serde_json::Map::new();
        if let Ok(serde_json::Value::Object(all)) = serde_json::to_value(self) {
            for (name, fact) in all {
                if let serde_json::Value::Object(mut fact) = fact {
                    values.insert(name, fact.remove("value").unwrap_or_default());
                }
            }
        }
        // Facts left out of plans while unset still exist for templates.
        for name in ["etcd_endpoints", "helm_release_namespace"] {
            values
                .entry(name)
                .or_insert_with(|| serde_json::Value::String(String::new()));
        }
        values
    }
}

/// Checks that `value` is a URL with one of `schemes` and nothing a template could misread.
fn check_url(name: &str, value: &str, schemes: &[&str]) -> Result<(), FactError> {
    let invalid = |reason: String| FactError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        reason,
    };
    let url = url::Url::parse(value).map_err(|error| invalid(format!("not a URL: {error}")))?;
    if !schemes.contains(&url.scheme()) {
        return Err(invalid(format!(
            "expected a URL starting with {}",
            schemes
                .iter()
                .map(|scheme| format!("`{scheme}://`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if url.scheme() != "file" && url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("the URL names no host".to_string()));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(invalid(
            "a query, a fragment or credentials are not allowed".to_string(),
        ));
    }
    Ok(())
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

fn parse_list(text: &str) -> Result<Vec<String>, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('[') {
        return serde_json::from_str(trimmed)
            .map_err(|error| format!("expected a JSON list: {error}"));
    }
    Ok(trimmed
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect())
}

pub use super::release::ReleaseError;

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(set: &[(&str, &str)]) -> FactOverrides {
        FactOverrides {
            from: Some("v3.20.1".parse().unwrap()),
            install_method: Some(InstallMethod::Helm),
            set: set
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            ..FactOverrides::default()
        }
    }

    #[test]
    fn flags_beat_discovery_and_defaults_fill_the_rest() {
        let discovered = DiscoveredFacts {
            installed_version: Some("v3.19.0".parse().unwrap()),
            datastore_type: Some(DatastoreType::EtcdV3),
            all_interfaces_host_endpoints: Some(vec![HostEndpointFact::named("h1")]),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&discovered, &overrides(&[("alp_enabled", "true")])).unwrap();
        assert_eq!(facts.installed_version.value.to_string(), "v3.20.1");
        assert_eq!(facts.installed_version.origin, FactOrigin::Flag);
        assert_eq!(facts.datastore_type.origin, FactOrigin::Discovered);
        assert_eq!(facts.system_namespace.value, "calico-system");
        assert!(facts.alp_enabled.value);
        assert_eq!(
            facts.values()["all_interfaces_host_endpoints"],
            serde_json::json!([{"name": "h1", "node": "", "labels": {}}])
        );
    }

    #[test]
    fn etcd_endpoints_come_from_the_configuration_and_are_left_out_of_plans_while_unset() {
        let unset = Facts::assemble(&DiscoveredFacts::default(), &overrides(&[])).unwrap();
        let json = serde_json::to_value(&unset).unwrap();
        assert!(json.get("etcd_endpoints").is_none(), "{json}");
        assert_eq!(unset.values()["etcd_endpoints"], serde_json::json!(""));
        assert_eq!(serde_json::from_value::<Facts>(json).unwrap(), unset);

        let configured = DiscoveredFacts {
            etcd_endpoints: Some("https://10.0.0.1:2379".into()),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&configured, &overrides(&[])).unwrap();
        assert_eq!(facts.etcd_endpoints.origin, FactOrigin::Discovered);
        let json = serde_json::to_value(&facts).unwrap();
        assert_eq!(json["etcd_endpoints"]["value"], "https://10.0.0.1:2379");
        let flagged = Facts::assemble(
            &configured,
            &overrides(&[("etcd_endpoints", "https://a:2379, https://b:2379")]),
        )
        .unwrap();
        assert_eq!(
            flagged.etcd_endpoints.value,
            "https://a:2379,https://b:2379"
        );
        assert_eq!(flagged.etcd_endpoints.origin, FactOrigin::Flag);
    }

    #[test]
    fn the_helm_release_namespace_defaults_to_default_only_for_helm_installs() {
        let helm = Facts::assemble(&DiscoveredFacts::default(), &overrides(&[])).unwrap();
        assert_eq!(
            helm.helm_release_namespace,
            Fact::new("default".to_string(), FactOrigin::Default)
        );
        let json = serde_json::to_value(&helm).unwrap();
        assert_eq!(json["helm_release_namespace"]["value"], "default");

        let mut operator = overrides(&[]);
        operator.install_method = Some(InstallMethod::Operator);
        let facts = Facts::assemble(&DiscoveredFacts::default(), &operator).unwrap();
        let json = serde_json::to_value(&facts).unwrap();
        assert!(json.get("helm_release_namespace").is_none(), "{json}");
        assert_eq!(facts.values()["helm_release_namespace"], "");
        assert_eq!(serde_json::from_value::<Facts>(json).unwrap(), facts);

        let discovered = DiscoveredFacts {
            cluster: Some(ClusterFacts {
                install_method: Some(InstallMethod::Helm),
                helm_release: Some("calico".into()),
                helm_release_namespace: Some("ops".into()),
                ..ClusterFacts::default()
            }),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&discovered, &overrides(&[])).unwrap();
        assert_eq!(
            facts.helm_release_namespace,
            Fact::new("ops".to_string(), FactOrigin::Discovered)
        );
        let facts = Facts::assemble(
            &discovered,
            &overrides(&[("helm_release_namespace", "legacy")]),
        )
        .unwrap();
        assert_eq!(
            facts.helm_release_namespace,
            Fact::new("legacy".to_string(), FactOrigin::Flag)
        );
        assert!(
            Facts::assemble(&discovered, &overrides(&[("helm_release_namespace", " ")])).is_err()
        );
    }

    #[test]
    fn unknown_and_malformed_facts_are_refused() {
        let error = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("colour", "red")]),
        )
        .unwrap_err();
        assert_eq!(error.to_string(), "unknown fact `colour`");
        assert!(error.hint().unwrap().starts_with("known facts are"));
        let error = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("alp_enabled", "yes")]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid value `yes` for fact `alp_enabled`: expected `true` or `false`"
        );
        assert!(parse_set("novalue").is_err());
        assert_eq!(
            parse_set("a=b=c").unwrap(),
            ("a".to_string(), "b=c".to_string())
        );
    }

    #[test]
    fn owner_references_of_one_object_are_removed_from_the_end() {
        let references = r#"[
            {"apiVersion":"v1","kind":"ConfigMap","name":"b","ownerKind":"Tier","ownerName":"t","index":0},
            {"apiVersion":"v1","kind":"ConfigMap","name":"a","ownerKind":"Tier","ownerName":"t","index":0},
            {"apiVersion":"v1","kind":"ConfigMap","name":"a","ownerKind":"Tier","ownerName":"u","index":2}
        ]"#;
        let facts = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("owner_references", references)]),
        )
        .unwrap();
        let order: Vec<(&str, usize)> = facts
            .owner_references
            .value
            .iter()
            .map(|reference| (reference.name.as_str(), reference.index))
            .collect();
        assert_eq!(order, vec![("a", 2), ("a", 0), ("b", 0)]);
    }

    #[test]
    fn host_endpoints_and_service_deployments_are_given_as_lists_or_json() {
        let facts = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[
                ("all_interfaces_host_endpoints", "a,b"),
                ("service_deployments", "shop/cart, shop/front"),
            ]),
        )
        .unwrap();
        assert_eq!(
            facts.all_interfaces_host_endpoints.value,
            [HostEndpointFact::named("a"), HostEndpointFact::named("b")]
        );
        assert_eq!(
            facts.values()["service_deployments"],
            serde_json::json!([{"namespace": "shop", "name": "cart"}, {"namespace": "shop", "name": "front"}])
        );
        let facts = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[(
                "all_interfaces_host_endpoints",
                r#"["a", {"name": "b", "node": "n1", "labels": {"role": "edge"}}]"#,
            )]),
        )
        .unwrap();
        assert_eq!(facts.all_interfaces_host_endpoints.value[1].node, "n1");
        let error = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("service_deployments", "cart")]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid value `cart` for fact `service_deployments`: expected `namespace/name` items separated by commas, got `cart`"
        );
    }

    #[test]
    fn a_missing_install_method_asks_for_the_flag() {
        let mut overrides = overrides(&[]);
        overrides.install_method = None;
        let error = Facts::assemble(&DiscoveredFacts::default(), &overrides).unwrap_err();
        assert!(matches!(error, FactError::MissingInstallMethod));
    }

    #[test]
    fn an_etcd_datastore_without_a_cluster_is_a_manifest_install() {
        let mut overrides = overrides(&[]);
        overrides.install_method = None;
        let discovered = DiscoveredFacts {
            datastore_type: Some(DatastoreType::EtcdV3),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&discovered, &overrides).unwrap();
        assert_eq!(facts.install_method.value, InstallMethod::Manifest);
        assert_eq!(facts.install_method.origin, FactOrigin::Default);
        assert_eq!(facts.system_namespace.value, "kube-system");
    }
}

#[cfg(test)]
mod discovery_tests {
    //! Discovery against an in-memory datastore (paged, like the real backends); the lead's etcd
    //! tests cover the real store.

    use std::collections::BTreeMap;

    use async_trait::async_trait;

    use super::*;
    use crate::datastore::{Page, Plain};
    use crate::resource::Resource;

    struct MemoryStore {
        resources: BTreeMap<ResourceKey, Resource>,
        page_size: usize,
    }

    impl MemoryStore {
        fn new(resources: Vec<Resource>) -> MemoryStore {
            MemoryStore {
                resources: resources.into_iter().map(|r| (r.key(), r)).collect(),
                page_size: 2,
            }
        }
    }

    #[async_trait]
    impl Datastore for MemoryStore {
        fn kind(&self) -> DatastoreType {
            DatastoreType::EtcdV3
        }

        async fn check(&self) -> Result<(), StoreError> {
            Ok(())
        }

        async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
            self.resources
                .get(key)
                .cloned()
                .ok_or_else(|| StoreError::NotFound(key.clone()))
        }

        async fn list_page(
            &self,
            options: &ListOptions,
            continue_token: Option<&str>,
        ) -> Result<datastore::Page, StoreError> {
            let start: usize = continue_token.map_or(0, |token| token.parse().unwrap_or(0));
            let all: Vec<Resource> = self
                .resources
                .values()
                .filter(|resource| resource.kind == options.kind)
                .cloned()
                .collect();
            let end = (start + self.page_size).min(all.len());
            Ok(Page {
                items: all[start..end].to_vec(),
                bodies: Vec::new(),
                continue_token: (end < all.len()).then(|| end.to_string()),
                revision: "1".into(),
            })
        }

        async fn create(&self, _: &Resource) -> Result<Resource, StoreError> {
            Err(StoreError::failed("a write", Plain("read-only".into())))
        }

        async fn update(&self, _: &Resource) -> Result<Resource, StoreError> {
            Err(StoreError::failed("a write", Plain("read-only".into())))
        }

        async fn delete(&self, _: &ResourceKey, _: Option<&str>) -> Result<Resource, StoreError> {
            Err(StoreError::failed("a write", Plain("read-only".into())))
        }
    }

    fn host_endpoint(name: &str, interface: &str) -> Resource {
        let mut resource = Resource::new(Kind::HostEndpoint, name);
        resource.spec = serde_json::json!({"interfaceName": interface, "node": "n"});
        resource
    }

    fn names(endpoints: &Option<Vec<HostEndpointFact>>) -> Vec<String> {
        endpoints
            .iter()
            .flatten()
            .map(|endpoint| endpoint.name.clone())
            .collect()
    }

    #[tokio::test]
    async fn discovery_reads_the_version_and_all_interfaces_host_endpoints_across_pages() {
        let mut information = Resource::new(Kind::ClusterInformation, "default");
        information.spec = serde_json::json!({"calicoVersion": "v3.26.4", "datastoreReady": true});
        let mut labelled = host_endpoint("b-all", "*");
        labelled
            .metadata
            .labels
            .insert("role".into(), "edge".into());
        let mut automatic = host_endpoint("n-auto-hep", "*");
        automatic.metadata.labels.insert(
            "projectcalico.org/created-by".into(),
            "calico-kube-controllers".into(),
        );
        let store = MemoryStore::new(vec![
            information,
            host_endpoint("d-all", "*"),
            host_endpoint("a-eth0", "eth0"),
            labelled,
            host_endpoint("c-eth1", "eth1"),
            host_endpoint("e-all", "*"),
            automatic,
        ]);
        let discovered = discover_facts(&store).await.unwrap();
        assert_eq!(discovered.installed_version, Some(Release::new(3, 26, 4)));
        assert_eq!(discovered.datastore_type, Some(DatastoreType::EtcdV3));
        assert_eq!(
            names(&discovered.all_interfaces_host_endpoints),
            ["b-all", "d-all", "e-all"],
            "automatic host endpoints are not the ones to replace"
        );
        let first = &discovered.all_interfaces_host_endpoints.unwrap()[0];
        assert_eq!(first.node, "n");
        assert_eq!(first.labels["role"], "edge");
    }

    #[tokio::test]
    async fn a_missing_cluster_information_leaves_the_version_unknown() {
        let store = MemoryStore::new(vec![]);
        let discovered = discover_facts(&store).await.unwrap();
        assert_eq!(discovered.installed_version, None);
        let overrides = FactOverrides {
            install_method: Some(InstallMethod::Operator),
            ..FactOverrides::default()
        };
        let error = Facts::assemble(&discovered, &overrides).unwrap_err();
        assert!(matches!(error, FactError::MissingInstalledVersion));
    }
}
