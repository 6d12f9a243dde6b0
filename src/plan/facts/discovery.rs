//! Discovery: what a resource datastore tells the planner (the datastore type, the installed
//! version from ClusterInformation `default`, the all-interfaces host endpoints with their nodes and
//! labels, whether application layer policy is on), and the shape of what the Kubernetes objects
//! of the install tell (read by `cluster_facts.rs`). Reads only; which fact each answer sets is the
//! fact list's business (`facts/mod.rs`).

use super::{
    AUTO_HOST_ENDPOINT_LABEL, DeploymentFact, FactError, HostEndpointFact, InstallMethod,
    ManifestFlavor, OwnerReferenceFact,
};
use crate::config::{CalicoApiGroup, DatastoreType};
use crate::datastore::{self, Datastore, Detail, ListOptions, StoreError};
use crate::plan::Release;
use crate::resource::{Kind, ResourceKey};

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
    /// The API group of the Kubernetes datastore's Calico resources: the datastore's own, or for
    /// an etcd datastore its cluster's (the caller with a cluster sets it).
    pub calico_api_group: Option<CalicoApiGroup>,
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
        calico_api_group: store.calico_api_group(),
    })
}
