//! The CRD install of `datastore.import`: the release's CRD manifest (`datastore/migration/crds.rs`
//! says which file and what it must define) read from its URL, the mirror directory or the run's
//! state directory, checked against the digest the plan pinned, and its CRDs of the target's group
//! applied server-side (field manager `netctl`, taking over conflicting fields, as `kubectl apply
//! --server-side --force-conflicts` would); then the import waits, bounded, until the API server
//! serves them. Nothing is sent in a dry run; what would be installed is said.
//!
//! The manifest is read and checked before the import's survey of the target, and installed after
//! it: a refused file or a target holding other Calico data leaves the cluster as it was.

use std::path::Path;
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use serde_json::Value;

use super::IpamActionError;
use crate::config::CalicoApiGroup;
use crate::datastore::migration::crds::{self as crd_manifest, CrdManifestError};
use crate::datastore::migration::file::MigrationFile;
use crate::datastore::{Datastore, ListOptions};
use crate::exec::RunMode;
use crate::exec::actions::fetch;
use crate::plan::action::DatastoreImport;
use crate::resource::Kind;

/// How long the import waits for installed CRDs to be served (a real API server establishes a
/// new CRD within seconds).
const SERVED_WITHIN: Duration = Duration::from_secs(60);

/// The CRDs to install, read and checked before anything is written.
pub(super) struct CrdInstall {
    origin: String,
    group: CalicoApiGroup,
    crds: Vec<Value>,
}

/// Where the files of the run and the mirror are.
pub(super) struct Files<'a> {
    pub files_dir: &'a Path,
    pub mirror_dir: Option<&'a Path>,
}

/// Reads and checks the CRD manifest `request` names, if any.
pub(super) async fn read(
    store: &dyn Datastore,
    request: &DatastoreImport,
    file: &MigrationFile,
    files: &Files<'_>,
) -> Result<Option<CrdInstall>, IpamActionError> {
    let Some(source) = &request.crds else {
        return Ok(None);
    };
    let refused = |reason: String| IpamActionError::Refused { reason };
    let is_url = ["https://", "http://", "file://"]
        .iter()
        .any(|scheme| source.starts_with(scheme));
    let (bytes, origin) = match is_url {
        true => {
            let (bytes, _) = fetch::read_bytes(source, files.mirror_dir)
                .await
                .map_err(|error| refused(format!("cannot read the CRD manifest: {error}")))?;
            (bytes, format!("`{source}`"))
        }
        false => {
            let path = fetch::target_path(files.files_dir, source)
                .map_err(|error| refused(error.to_string()))?;
            let bytes = std::fs::read(&path).map_err(|error| {
                refused(format!(
                    "cannot read the CRD manifest `{}`: {error}",
                    path.display()
                ))
            })?;
            (bytes, format!("`{}`", path.display()))
        }
    };
    let digest = fetch::sha256(&bytes);
    if let Some(planned) = &request.crds_sha256
        && *planned != digest
    {
        return Err(refused(format!(
            "the CRD manifest {origin} changed since the plan was made (sha256 {digest}, planned {planned}); make the plan again and review it"
        )));
    }
    let group = store.calico_api_group().unwrap_or(CalicoApiGroup::CrdV1);
    let text = String::from_utf8_lossy(&bytes);
    let needed = crd_manifest::needed_kinds(file, group);
    let crds = crd_manifest::group_crds(&text, &origin, group, &needed)?;
    Ok(Some(CrdInstall {
        origin,
        group,
        crds,
    }))
}

/// Applies the CRDs and waits until the Calico kinds are served; says what it did.
pub(super) async fn install(
    client: Option<&kube::Client>,
    store: &dyn Datastore,
    install: &CrdInstall,
    mode: RunMode,
) -> Result<Vec<String>, IpamActionError> {
    let names: Vec<&str> = install
        .crds
        .iter()
        .filter_map(|crd| crd["metadata"]["name"].as_str())
        .collect();
    let what = format!(
        "{} CRD(s) of `{}` from {}",
        names.len(),
        install.group.api_version(),
        install.origin
    );
    if mode == RunMode::DryRun {
        return Ok(vec![format!(
            "would install (server-side apply) {what}: {}",
            names.join(", ")
        )]);
    }
    let client = client.ok_or_else(|| IpamActionError::Refused {
        reason: "installing the CRDs needs the Kubernetes API client, and this run has none"
            .to_string(),
    })?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut params = PatchParams::apply(crate::plan::action::DEFAULT_FIELD_MANAGER);
    params.force = true;
    for (crd, name) in install.crds.iter().zip(&names) {
        api.patch(name, &params, &Patch::Apply(crd))
            .await
            .map_err(|source| IpamActionError::InstallCrd {
                name: name.to_string(),
                source: Box::new(source),
            })?;
    }
    let mut lines = vec![format!("installed {what}")];
    lines.push(served(store).await?);
    Ok(lines)
}

/// Waits until the datastore serves the Calico kinds (IPPools stand for all: the manifest defines
/// them together).
async fn served(store: &dyn Datastore) -> Result<String, IpamActionError> {
    let started = Instant::now();
    loop {
        match store.list_page(&ListOptions::new(Kind::IpPool), None).await {
            Ok(_) => {
                return Ok(format!(
                    "the API server serves them (after {} ms)",
                    started.elapsed().as_millis()
                ));
            }
            Err(error) if error.is_not_served() && started.elapsed() < SERVED_WITHIN => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

impl From<CrdManifestError> for IpamActionError {
    fn from(error: CrdManifestError) -> IpamActionError {
        IpamActionError::CrdManifest(Box::new(error))
    }
}
