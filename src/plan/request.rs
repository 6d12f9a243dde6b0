//! A plan asked for in plain values: [`UpgradeRequest`] is what `upgrade plan`, `upgrade apply --to`
//! and `runbook render` want, and [`UpgradeRequest::plan`] is the one way it becomes a [`Plan`].
//!
//! The command line only maps its flags into a request (as cargo's `commands/` hand an options value
//! to `ops/`); loading the runbooks, discovering facts, reading the manifest overlays, resolving and
//! the plan-time review of each overlay happen here, in that order. Facts are discovered from the
//! sources the caller hands in ([`FactSources`]), and manifests are read through a
//! [`ManifestReader`], so this file opens no connection and knows no URL scheme. It does not print or
//! save the plan.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::InstallMethod;
use super::canary::{self, Canary, CanaryError, CanaryRequest};
use super::catalog::{Catalog, CatalogError};
use super::cluster_facts::read_live_objects;
use super::edit_discovery;
use super::facts::{DiscoveredFacts, FactError, FactOrigin, FactOverrides, Facts};
use super::overlay::{self, OverlayError};
use super::resolve::{ManifestEdits, PlanError, PlanRequest, plan_upgrade_with};
use super::targets::{Installed, UpgradeOptions};
use super::{ManifestDiscovery, Plan, Release, discover_cluster_facts, discover_facts};
use crate::config::{CalicoApiGroup, DatastoreType, Sourced};
use crate::datastore::Datastore;
use crate::datastore::kube::{ClusterGroup, KubeStore};
use crate::errors::Hint;
use crate::runbook::{RunbookError, RunbookSet};

/// An upgrade (or other procedure) to plan.
#[derive(Debug, Clone, Default)]
pub struct UpgradeRequest {
    /// `upgrade`, or another procedure of the runbooks, e.g. `auto-host-endpoints`.
    pub procedure: String,
    /// The target release as the user wrote it (`v3.29.2` or `v3.29`).
    pub to: Option<String>,
    /// Facts given on the command line; they win over discovered ones.
    pub overrides: FactOverrides,
    /// What netctl's own configuration says that facts are made of.
    pub configured: Configured,
    /// A runbook directory instead of the built-in runbooks.
    pub runbooks: Option<PathBuf>,
    pub manifest_edits: ManifestEditRequest,
    /// Whether overlays may read their manifest from the network for the plan-time review.
    pub manifest_reading: ManifestReading,
    /// `--canary N` / `--canary-selector SELECTOR` (see `plan/canary.rs`).
    pub canary: Option<CanaryRequest>,
}

/// What netctl's configuration says that facts are made of (not read from the cluster).
#[derive(Debug, Clone, Default)]
pub struct Configured {
    /// The static etcd endpoints (fact `etcd_endpoints`).
    pub etcd_endpoints: Option<String>,
    /// `calicoAPIGroup` / `CALICO_API_GROUP`: the group of the cluster's Kubernetes datastore
    /// (fact `calico_api_group`), which otherwise discovery chooses.
    pub api_group: Option<Sourced<CalicoApiGroup>>,
}

/// What the user says about hand edits of an installed manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ManifestEditRequest {
    /// Nothing said: manifest runbooks keep a human gate for the edits.
    #[default]
    Unstated,
    /// The installed manifest has no hand edits.
    None,
    /// Overlay files to carry onto the new manifest.
    Overlay(Vec<PathBuf>),
}

/// Where the manifests an overlay is reviewed against may be read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ManifestReading {
    /// Local sources (a mirror, `file://`) and the network.
    #[default]
    Anywhere,
    /// Local sources only (`--offline`).
    LocalOnly,
}

/// What facts can be discovered from; each may be absent (flags and defaults stand in).
#[derive(Clone, Copy, Default)]
pub struct FactSources<'a> {
    pub datastore: Option<&'a dyn Datastore>,
    pub cluster: Option<&'a kube::Client>,
}

/// Reads the manifest at a URL for the plan-time review of an overlay.
#[async_trait::async_trait]
pub trait ManifestReader: Send + Sync {
    /// The bytes at `url`, or why they cannot be read (shown in the plan).
    async fn read(&self, url: &str) -> Result<Vec<u8>, String>;
    /// Whether `url` is read without the network (a mirror copy, a `file://` URL).
    fn is_local(&self, url: &str) -> bool;
}

/// Why no plan could be made.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Runbooks(#[from] RunbookError),
    #[error(transparent)]
    Facts(#[from] FactError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("cannot read the manifest overlay `{}`", path.display())]
    ReadOverlay {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Overlay(#[from] OverlayError),
    #[error(
        "`--from {given}` contradicts the installed version `{discovered}` that ClusterInformation `default` reports"
    )]
    FromContradictsDatastore { given: Release, discovered: Release },
    #[error(transparent)]
    Canary(#[from] CanaryError),
    #[error("step `{step}` cannot apply the manifest overlay")]
    Review {
        step: String,
        #[source]
        source: OverlayError,
    },
}

impl Hint for RequestError {
    fn hint(&self) -> Option<String> {
        match self {
            RequestError::Runbooks(error) => error.hint(),
            RequestError::Facts(error) => error.hint(),
            RequestError::Plan(error) => error.hint(),
            RequestError::Overlay(error) => error.hint(),
            RequestError::Canary(error) => error.hint(),
            RequestError::FromContradictsDatastore { discovered, .. } => Some(format!(
                "leave out `--from` (the datastore says `{discovered}`); a plan for another version would leave out the steps the installed one needs"
            )),
            RequestError::ReadOverlay { .. } | RequestError::Review { .. } => None,
        }
    }
}

/// How long discovery waits for the cluster's list of API groups.
const CLUSTER_GROUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the plan-time review waits for a manifest.
const REVIEW_READ_TIMEOUT: Duration = Duration::from_secs(30);

impl UpgradeRequest {
    /// What the sources tell, before the overrides; a `--from` that contradicts it is refused.
    pub async fn discovered(
        &self,
        sources: FactSources<'_>,
    ) -> Result<DiscoveredFacts, RequestError> {
        let mut discovered = match sources.datastore {
            Some(store) => discover_facts(store).await?,
            None => DiscoveredFacts::default(),
        };
        // A `--from` is for what cannot be discovered; one that disagrees with the datastore would
        // silently drop the steps the real version needs (the v3.14 host-endpoint preparation, say)
        // and the run
        // would later be refused as "the cluster changed".
        if let (Some(given), Some(found)) = (&self.overrides.from, &discovered.installed_version)
            && given != found
        {
            return Err(RequestError::FromContradictsDatastore {
                given: given.clone(),
                discovered: found.clone(),
            });
        }
        discovered.etcd_endpoints = self.configured.etcd_endpoints.clone();
        if let Some(client) = sources.cluster {
            discovered.cluster = Some(discover_cluster_facts(client).await?);
            // An etcd install's cluster: the group its Kubernetes datastore would use (where
            // `datastore-migration` imports to). A Kubernetes datastore told its own above.
            if discovered.calico_api_group.is_none() {
                discovered.calico_api_group = Some(self.cluster_api_group(client).await?);
            }
        }
        Ok(discovered)
    }

    /// The group a connection to `client`'s Kubernetes datastore would choose: the configured
    /// one, else from the groups the API server serves (`datastore/kube/api_group.rs`).
    async fn cluster_api_group(&self, client: &kube::Client) -> Result<CalicoApiGroup, FactError> {
        let configured = ClusterGroup::Configured(self.configured.api_group.as_ref());
        let store = KubeStore::for_cluster(
            client.clone(),
            "the cluster of the kubeconfig".to_string(),
            CLUSTER_GROUP_TIMEOUT,
            configured,
        )
        .await
        .map_err(|source| FactError::Discovery {
            what: "the API groups the cluster serves".to_string(),
            source: Box::new(source),
        })?;
        Ok(store.api_group().group)
    }

    /// The facts: what the sources tell, with the request's overrides over it.
    pub async fn facts(&self, sources: FactSources<'_>) -> Result<Facts, RequestError> {
        let discovered = self.discovered(sources).await?;
        Ok(Facts::assemble(&discovered, &self.overrides)?)
    }

    /// "What can I upgrade to": the installed release, the newer release lines of the catalog and
    /// the runs to each, and the advice of `docs/upgrade-procedures.md` (`upgrade plan` without
    /// `--to`).
    pub async fn survey(&self, sources: FactSources<'_>) -> Result<UpgradeOptions, RequestError> {
        let runbooks = RunbookSet::load(self.runbooks.as_deref())?;
        let text = runbooks
            .catalog_text()
            .ok_or(PlanError::Catalog(CatalogError::Missing))?;
        let catalog = Catalog::parse(text).map_err(PlanError::from)?;
        let discovered = self.discovered(sources).await?;
        let cluster = discovered.cluster.clone().unwrap_or_default();
        let (version, origin) = match (&self.overrides.from, &discovered.installed_version) {
            (Some(version), _) => (version.clone(), FactOrigin::Flag),
            (None, Some(version)) => (version.clone(), FactOrigin::Discovered),
            (None, None) => return Err(FactError::MissingInstalledVersion.into()),
        };
        let datastore_type = self
            .overrides
            .datastore_type
            .or(discovered.datastore_type)
            .unwrap_or(DatastoreType::Kubernetes);
        // As `Facts::assemble`: on etcd the install is the single manifest.
        let install_method = self
            .overrides
            .install_method
            .or(cluster.install_method)
            .or((datastore_type == DatastoreType::EtcdV3).then_some(InstallMethod::Manifest));
        let installed = Installed {
            version,
            origin: origin.to_string(),
            datastore_type,
            install_method,
            all_interfaces_host_endpoints: discovered
                .all_interfaces_host_endpoints
                .as_ref()
                .map(Vec::len),
        };
        Ok(UpgradeOptions::survey(&catalog, &installed))
    }

    /// Loads the runbooks, discovers the facts, resolves the plan and reviews every manifest overlay
    /// against the manifest it will be applied to.
    pub async fn plan(
        &self,
        sources: FactSources<'_>,
        manifests: &dyn ManifestReader,
    ) -> Result<Plan, RequestError> {
        let runbooks = RunbookSet::load(self.runbooks.as_deref())?;
        let edits = read_edits(&self.manifest_edits)?;
        let facts = self.facts(sources).await?;
        let request = PlanRequest {
            procedure: self.procedure.clone(),
            to: self.to.clone(),
            facts,
        };
        let mut plan = plan_upgrade_with(&runbooks, &request, &edits)?;
        // Unless told there are none, the hand edits are looked for in the cluster; what is found
        // goes ahead of the user's own overlay (whose documents apply last, so they win), and the
        // plan is resolved again so the runbooks see it.
        if edits != ManifestEdits::None {
            let found =
                discover_edits(&plan, sources.cluster, manifests, self.manifest_reading).await;
            if !found.is_empty() {
                let complete = found
                    .iter()
                    .all(|record| record.unavailable.is_none() && record.notes.is_empty());
                let combined = if found.iter().any(ManifestDiscovery::found_anything) {
                    let mut documents: Vec<serde_json::Value> = found
                        .iter()
                        .flat_map(|record| record.overlay.iter().cloned())
                        .collect();
                    documents.extend(edits.documents().iter().cloned());
                    Some(ManifestEdits::Discovered(documents))
                } else if complete && edits == ManifestEdits::Unstated {
                    // Every object compared and none edited: nothing to carry, no gate.
                    Some(ManifestEdits::None)
                } else {
                    None
                };
                if let Some(combined) = combined {
                    plan = plan_upgrade_with(&runbooks, &request, &combined)?;
                }
                plan.set_manifest_discovery(found);
            }
        }
        review_overlays(&mut plan, manifests, self.manifest_reading).await?;
        if let Some(requested) = &self.canary {
            let mechanism = canary::mechanism(plan.facts.install_method.value)?;
            let client = sources.cluster.ok_or(CanaryError::NoCluster)?;
            let (all, selected) = canary::read_nodes(client, requested).await?;
            let nodes = canary::choose(requested, &all, &selected)?;
            let (count, selector) = match requested {
                CanaryRequest::Count(count) => (Some(*count), None),
                CanaryRequest::Selector(selector) => (None, Some(selector.clone())),
            };
            let chosen = Canary {
                count,
                selector,
                nodes,
                of_nodes: all.len(),
                mechanism: mechanism.to_string(),
            };
            canary::insert(&mut plan, chosen)?;
        }
        Ok(plan)
    }
}

/// Reads a manifest for the plan: local sources only with `--offline`, and never waiting on an
/// unreachable server for long.
async fn read_manifest(
    url: &str,
    manifests: &dyn ManifestReader,
    reading: ManifestReading,
) -> Result<Vec<u8>, String> {
    if reading == ManifestReading::LocalOnly && !manifests.is_local(url) {
        return Err(
            "not read with `--offline`; pass `--mirror-dir` to read a local copy".to_string(),
        );
    }
    match tokio::time::timeout(REVIEW_READ_TIMEOUT, manifests.read(url)).await {
        Ok(read) => read,
        Err(_) => Err(format!(
            "no answer within {}s",
            REVIEW_READ_TIMEOUT.as_secs()
        )),
    }
}

/// Edit discovery for every `fetch` step that names the installed release's manifest
/// (`edits_from`). One that cannot run says why in its record; it never refuses the plan (the
/// edits gate stays).
async fn discover_edits(
    plan: &Plan,
    cluster: Option<&kube::Client>,
    manifests: &dyn ManifestReader,
    reading: ManifestReading,
) -> Vec<ManifestDiscovery> {
    let mut records = Vec::new();
    for (step, url, installed_url) in plan.edit_sources() {
        let mut record = ManifestDiscovery {
            step: step.to_string(),
            installed_url: installed_url.to_string(),
            edits: Vec::new(),
            overlay: Vec::new(),
            undecided: Vec::new(),
            notes: Vec::new(),
            live: Vec::new(),
            unavailable: None,
        };
        match discover_one(url, installed_url, cluster, manifests, reading).await {
            Ok(found) => {
                record.edits = found.edits;
                record.overlay = found.overlay;
                record.undecided = found.undecided;
                record.notes = found.notes;
                record.live = found.live;
            }
            Err(reason) => record.unavailable = Some(reason),
        }
        records.push(record);
    }
    records
}

async fn discover_one(
    url: &str,
    installed_url: &str,
    cluster: Option<&kube::Client>,
    manifests: &dyn ManifestReader,
    reading: ManifestReading,
) -> Result<edit_discovery::Discovery, String> {
    let Some(client) = cluster else {
        return Err("no Kubernetes cluster to read the live objects from".to_string());
    };
    let objects = |what: &str, bytes: Vec<u8>| {
        let text = String::from_utf8(bytes).map_err(|error| format!("{what}: {error}"))?;
        edit_discovery::manifest_objects(&text).map_err(|error| format!("{what}: {error}"))
    };
    let installed = read_manifest(installed_url, manifests, reading)
        .await
        .map_err(|reason| {
            format!("the installed release's manifest `{installed_url}`: {reason}")
        })?;
    let released = objects("the installed release's manifest", installed)?;
    let new = read_manifest(url, manifests, reading)
        .await
        .map_err(|reason| format!("the new manifest `{url}`: {reason}"))?;
    let new = objects("the new manifest", new)?;
    let live = read_live_objects(client, &released)
        .await
        .map_err(|error| crate::errors::error_chain(&error))?;
    Ok(edit_discovery::discover(&released, &live, &new))
}

/// Reads the overlay files; any that cannot be read or parsed refuses the plan.
fn read_edits(request: &ManifestEditRequest) -> Result<ManifestEdits, RequestError> {
    let paths = match request {
        ManifestEditRequest::Unstated => return Ok(ManifestEdits::Unstated),
        ManifestEditRequest::None => return Ok(ManifestEdits::None),
        ManifestEditRequest::Overlay(paths) => paths,
    };
    let mut documents = Vec::new();
    for path in paths {
        documents.extend(read_overlay(path)?);
    }
    Ok(ManifestEdits::Overlay(documents))
}

fn read_overlay(path: &Path) -> Result<Vec<serde_json::Value>, RequestError> {
    let text = std::fs::read_to_string(path).map_err(|source| RequestError::ReadOverlay {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(overlay::parse_overlay(&text, &path.display().to_string())?)
}

/// The plan-time review of every manifest overlay: each download is read and the overlay applied to
/// it. A download that cannot be read is noted in the plan; an overlay that does not fit the manifest
/// refuses the plan.
async fn review_overlays(
    plan: &mut Plan,
    manifests: &dyn ManifestReader,
    reading: ManifestReading,
) -> Result<(), RequestError> {
    let mut previews = Vec::new();
    for (step, url, overlay) in plan.overlay_downloads() {
        let bytes = read_manifest(url, manifests, reading).await;
        let preview = overlay::preview(step, url, overlay, bytes.as_deref().map_err(Clone::clone))
            .map_err(|source| RequestError::Review {
                step: step.to_string(),
                source,
            })?;
        previews.push(preview);
    }
    if !previews.is_empty() {
        plan.set_manifest_previews(previews);
    }
    Ok(())
}
