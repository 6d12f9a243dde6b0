//! `datastore.import`: a migration export (`datastore/migration/`, netctl's or upstream's) written
//! into the Kubernetes datastore.
//!
//! Everything is checked before the first write: the file's digest is the planned one and it
//! reads (three parts, known kinds, nodes with Kubernetes names), the datastore is Kubernetes, the
//! CRD manifest to install is the planned one and defines every kind the file holds (or, when the
//! plan installs none, the Calico CRDs are served), and the target holds no Calico data but this
//! file's. The target holds
//! this file's data only after an import of it stopped half way, which is recognised by
//! ClusterInformation already carrying the file's `clusterGUID` (written right after the lock,
//! before any resource); such an import is finished, so killed and run again, every resource is
//! there exactly once. Built-in tiers, Kubernetes nodes and a ClusterInformation alone do not
//! count as Calico data.
//!
//! Then, in order: the CRDs of the target's API group installed server-side and waited for
//! (`import_crds.rs`), the lock (`datastoreReady: false`, who and when, as `datastore migrate lock`),
//! `clusterGUID` and `calicoVersion` onto ClusterInformation, the resources as `apply` writes them
//! (created when missing; undone on a failure or a signal within a request timeout — a run that
//! stopped is finished by running again), Nodes onto the Kubernetes nodes of the same name (a node
//! Kubernetes does not have is skipped and named, as upstream does), and the IPAM objects (created
//! when missing, never undone, as `ipam.release`). The target stays locked: the components are
//! switched to it before `datastore migrate unlock`.
//!
//! Upstream writes ClusterInformation after the resources and cannot finish a stopped import (it
//! refuses the half-filled target); upstream also fails a file without IPAM objects after writing
//! everything else, where netctl imports it and says so.

use std::collections::HashSet;

use super::IpamActionError;
use super::import_crds::{self, Files};
use super::readiness;
use super::restore::{apply_documents, as_document, file_digest, restore_ipam};
use crate::datastore::backup::{IpamObject, for_each_ipam_object, record};
use crate::datastore::ipam as ipam_store;
use crate::datastore::kube::KubeError;
use crate::datastore::migration::file::{self as migration_file, MigrationFile};
use crate::datastore::migration::{KINDS, KUBERNETES_POLICY_PREFIX};
use crate::datastore::{Datastore, DatastoreType, ListOptions, StoreError};
use crate::exec::RunMode;
use crate::exec::actions::{Outcome, StepError};
use crate::exec::interrupt::Interrupt;
use crate::ipam::BlockEncoding;
use crate::plan::action::DatastoreImport;
use crate::release::ApiRelease;
use crate::resource::{Kind, Resource, ResourceKey};

/// Tiers every datastore has from its initialisation (and v3.32's Kubernetes-managed ones).
pub(super) const BUILT_IN_TIERS: [&str; 4] = [
    "default",
    "adminnetworkpolicy",
    "kube-admin",
    "kube-baseline",
];

/// How many foreign objects a refusal names.
const NAMED: usize = 5;

/// What the import writes into: the Kubernetes datastore, the client its CRDs are installed with,
/// and where a CRD manifest named by a path or a URL is read.
pub(super) struct Target<'a> {
    pub(super) store: &'a dyn Datastore,
    pub client: Option<&'a kube::Client>,
    pub files: Files<'a>,
}

/// Imports the export `request` names (see the module documentation).
pub(super) async fn import(
    target: &Target<'_>,
    request: &DatastoreImport,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
    release: &ApiRelease,
) -> Result<Outcome, StepError> {
    let store = target.store;
    let path = target.files.files_dir.join(&request.file);
    if mode == RunMode::DryRun && request.sha256.is_empty() && !path.exists() {
        // The export an earlier step of this run writes, which a dry run does not write.
        return Ok(Outcome {
            summary: format!(
                "would install the CRDs and import `{}` once the export step wrote it",
                path.display()
            ),
            transcript: Vec::new(),
            output: None,
        });
    }
    let mut file = read(request, &target.files)?;
    if store.kind() != DatastoreType::Kubernetes {
        return Err(refused(format!(
            "the datastore is `{}`: a migration export is imported into the Kubernetes datastore (point netctl at the cluster with `-c FILE` or NET_DATASTORE_TYPE=kubernetes)",
            store.kind()
        ))
        .into());
    }
    let crds = import_crds::read(store, request, &file, &target.files).await?;
    if crds.is_none() {
        check_crds(store, &file).await?;
    }
    let served = crds_served(store).await?;
    let resuming = match served {
        true => survey(store, &file).await?,
        false => false,
    };
    let mut transcript = Vec::new();
    if let Some(crds) = &crds {
        transcript.extend(import_crds::install(target.client, store, crds, mode).await?);
    }
    if !served && mode == RunMode::DryRun {
        // Nothing of Calico can be read before its CRDs exist: say what would follow them.
        return Ok(unserved_dry_run(&file, transcript));
    }
    if resuming {
        transcript.push(format!(
            "ClusterInformation already carries clusterGUID `{}`: finishing an import of this file that stopped half way",
            file.cluster_guid.as_deref().unwrap_or_default()
        ));
    }
    let lock = readiness::set(store, true, &super::migration::by(&request.by), mode).await?;
    transcript.extend(lock.transcript);
    transcript.push(cluster_information(store, &file, mode).await?);
    // The resources move into the documents: the file's copy is not needed past this point.
    let (documents, skipped) = documents(store, std::mem::take(&mut file.resources)).await?;
    for node in &skipped {
        transcript.push(format!(
            "Node `{node}` is not imported: Kubernetes has no node of that name (non-Kubernetes nodes do not exist in the Kubernetes datastore)"
        ));
    }
    let written = apply_documents(
        store,
        documents,
        &request.file,
        (mode, interrupt, release),
        &mut transcript,
    )
    .await?;
    let mut summary = vec![written];
    let ipam = store.ipam().ok_or(IpamActionError::NoIpam(store.kind()))?;
    let cluster = crate::plan::release::cluster_release(store)
        .await
        .map_err(IpamActionError::from)?;
    let encoding = BlockEncoding::for_release(cluster.as_ref());
    let write = mode == RunMode::Execute;
    let line = restore_ipam(ipam, &file.ipam, encoding, write, interrupt).await?;
    let line = line.replace("in the backup", "in the export");
    transcript.push(line.clone());
    summary.push(line);
    if mode == RunMode::Execute {
        transcript.push(
            "The Kubernetes datastore stays locked: switch the components to it, then run `netctl datastore migrate unlock`.".into(),
        );
    }
    Ok(Outcome {
        summary: summary.join("; "),
        transcript,
        output: None,
    })
}

fn refused(reason: String) -> IpamActionError {
    IpamActionError::Refused { reason }
}

/// Reads the export (a relative path: a file of the run's state directory), refusing it when it
/// is not the one planned or does not read.
fn read(request: &DatastoreImport, files: &Files<'_>) -> Result<MigrationFile, IpamActionError> {
    let path = files.files_dir.join(&request.file);
    let digest = file_digest(&path).map_err(|error| {
        refused(format!(
            "cannot read the migration export `{}`: {error}",
            path.display()
        ))
    })?;
    if !request.sha256.is_empty() && digest != request.sha256 {
        return Err(refused(format!(
            "the migration export `{}` changed since the plan was made (sha256 {digest}, planned {})",
            request.file, request.sha256
        )));
    }
    migration_file::read(&path).map_err(|error| refused(error.to_string()))
}

/// Without a CRD manifest to install, the Calico CRDs must be served (the plan names none when
/// they are installed otherwise, e.g. by the operator).
async fn check_crds(store: &dyn Datastore, file: &MigrationFile) -> Result<(), IpamActionError> {
    match store.list_page(&ListOptions::new(Kind::IpPool), None).await {
        Err(error) if error.is_not_served() => {
            let server = match error.backend_as::<KubeError>() {
                Some(KubeError::NotInstalled { server, .. }) => server.clone(),
                _ => "the cluster".to_string(),
            };
            let version = file.calico_version.as_deref().unwrap_or("vX.Y.Z");
            Err(refused(format!(
                "the Kubernetes API at {server} does not serve the Calico CRDs: import without `--skip-crds`: netctl installs the CRDs of the release the export came from ({version}), downloaded or from `--crds FILE`"
            )))
        }
        other => other.map(|_| ()).map_err(Into::into),
    }
}

/// Whether the Calico CRDs are served (none installed: the target is empty).
pub(super) async fn crds_served(store: &dyn Datastore) -> Result<bool, IpamActionError> {
    match store.list_page(&ListOptions::new(Kind::IpPool), None).await {
        Ok(_) => Ok(true),
        Err(error) if error.is_not_served() => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// The dry run into a cluster without the Calico CRDs: what would be written once they exist.
fn unserved_dry_run(file: &MigrationFile, mut transcript: Vec<String>) -> Outcome {
    transcript.push(
        "would lock the new datastore (ClusterInformation `default` with datastoreReady false)"
            .to_string(),
    );
    for resource in &file.resources {
        transcript.push(format!("would create {}", resource.key()));
    }
    let summary = format!(
        "{} resource(s) would be created; IPAM: {} object(s) in the export would be created",
        file.resources.len(),
        file.ipam.len()
    );
    transcript.push(summary.clone());
    Outcome {
        summary,
        transcript,
        output: None,
    }
}

/// Whether the target holds this file's data from an import that stopped; refuses when it holds
/// anything else.
pub(super) async fn survey(
    store: &dyn Datastore,
    file: &MigrationFile,
) -> Result<bool, IpamActionError> {
    let information = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let resuming = match store.get(&information).await {
        Ok(information) => {
            let guid = information.spec["clusterGUID"].as_str();
            guid.is_some() && guid == file.cluster_guid.as_deref()
        }
        Err(StoreError::NotFound(_)) => false,
        Err(error) => return Err(error.into()),
    };
    let in_file: HashSet<ResourceKey> = match resuming {
        true => file.resources.iter().map(Resource::key).collect(),
        false => HashSet::new(),
    };
    let mut foreign = Vec::new();
    let mut count = 0usize;
    for kind in KINDS.into_iter().filter(|kind| *kind != Kind::Node) {
        let result = crate::datastore::for_each(store, &ListOptions::new(kind), |resource| {
            let name = resource.metadata.name.as_str();
            let ignored = (kind == Kind::Tier && BUILT_IN_TIERS.contains(&name))
                || (kind == Kind::NetworkPolicy && name.starts_with(KUBERNETES_POLICY_PREFIX));
            if !ignored && !in_file.contains(&resource.key()) {
                count += 1;
                if foreign.len() < NAMED {
                    foreign.push(resource.key().to_string());
                }
            }
            Ok::<(), IpamActionError>(())
        })
        .await;
        match result {
            Err(IpamActionError::Store(error)) if error.is_not_served() => {}
            other => other?,
        }
    }
    let ipam = store.ipam().ok_or(IpamActionError::NoIpam(store.kind()))?;
    let ours: HashSet<String> = match resuming {
        true => file
            .ipam
            .iter()
            .filter_map(|object| record(object).map(|record| record.key))
            .collect(),
        false => HashSet::new(),
    };
    let mut visit = |item: Result<IpamObject, ipam_store::Damaged>| {
        let key = match item {
            Ok(object) => record(&object).map(|record| record.key),
            Err(damaged) => Some(format!("{} (damaged)", damaged.key)),
        };
        if let Some(key) = key
            && !ours.contains(&key)
        {
            count += 1;
            if foreign.len() < NAMED {
                foreign.push(format!("IPAM `{key}`"));
            }
        }
        Ok::<(), IpamActionError>(())
    };
    for_each_ipam_object(ipam, &mut visit).await?;
    if let Some(config) = ipam.get_config().await? {
        visit(Ok(IpamObject::Config(config.value)))?;
    }
    if foreign.is_empty() {
        return Ok(resuming);
    }
    let more = match count.saturating_sub(foreign.len()) {
        0 => String::new(),
        rest => format!(" and {rest} more"),
    };
    Err(refused(format!(
        "the Kubernetes datastore already holds Calico data that is not this export's: {}{more}; an import goes into an empty datastore (to start over, delete the Calico resources and IPAM objects, e.g. by deleting and reinstalling the Calico CRDs)",
        foreign.join(", ")
    )))
}

/// Writes the file's `clusterGUID` and `calicoVersion` onto ClusterInformation `default` (created
/// by the lock), as upstream's import does.
async fn cluster_information(
    store: &dyn Datastore,
    file: &MigrationFile,
    mode: RunMode,
) -> Result<String, IpamActionError> {
    let fields = [
        ("clusterGUID", file.cluster_guid.as_deref()),
        ("calicoVersion", file.calico_version.as_deref()),
    ];
    let described = fields
        .iter()
        .filter_map(|(field, value)| value.map(|value| format!("{field} {value}")))
        .collect::<Vec<_>>()
        .join(", ");
    if mode == RunMode::DryRun {
        return Ok(format!(
            "would copy {described} onto ClusterInformation `default`"
        ));
    }
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut information = store.get(&key).await?;
        let changed = fields.iter().any(|(field, value)| {
            value.is_some_and(|value| information.spec[*field].as_str() != Some(value))
        });
        if !changed {
            return Ok(format!("ClusterInformation `default` has {described}"));
        }
        for (field, value) in fields {
            if let Some(value) = value {
                information.spec[field] = value.into();
            }
        }
        match store.update(&information).await {
            Ok(_) => {
                return Ok(format!(
                    "copied {described} onto ClusterInformation `default`"
                ));
            }
            Err(StoreError::Conflict { .. }) if attempt < 3 => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

/// The documents to apply: every resource of the file but the Nodes Kubernetes does not have
/// (named in the second list); metadata the datastore sets left out.
async fn documents(
    store: &dyn Datastore,
    resources: Vec<Resource>,
) -> Result<(Vec<Resource>, Vec<String>), IpamActionError> {
    let mut documents = Vec::with_capacity(resources.len());
    let mut skipped = Vec::new();
    for resource in resources {
        if resource.kind == Kind::Node {
            match store.get(&resource.key()).await {
                Ok(_) => {}
                Err(StoreError::NotFound(_)) => {
                    skipped.push(resource.metadata.name.clone());
                    continue;
                }
                Err(error) => return Err(error.into()),
            }
        }
        let mut resource = as_document(resource);
        resource.status = serde_json::Value::Null;
        documents.push(resource);
    }
    Ok((documents, skipped))
}
