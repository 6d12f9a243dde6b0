//! `datastore.restore`: a backup (`datastore/backup.rs`) put back into the datastore it was taken
//! of — every resource as the backup holds it, ClusterInformation's identity, and with
//! `--include-ipam` the IPAM objects.
//!
//! The backup is checked before anything is written: its digest must be the one the plan was made
//! with, its datastore type the datastore's, and every record must read. The resources are then
//! written as `apply` writes documents (`resource/apply.rs`): created when missing, updated when
//! different, left alone when equal, in batches, and on a failure or Ctrl-C undone within one
//! request timeout or named in recovery files; the dry run is that write's dry run, the
//! difference against the datastore resource by resource. What the datastore cannot take back is
//! said and skipped: on Kubernetes, Profiles (they are Namespaces and ServiceAccounts) and
//! WorkloadEndpoints (they are Pods). Resources created since the backup are left as they are.
//!
//! ClusterInformation is read-only to `apply`; the restore writes its `clusterGUID`,
//! `calicoVersion` and `clusterType` back when they differ, keeping `datastoreReady` (the lock) as it
//! is now. IPAM objects move under live allocations, so they are compared always and written only
//! with `--include-ipam`: missing ones created, different ones updated, each a compare-and-swap;
//! they are never undone (putting an address back could hand it to two pods) — a second run
//! finishes what a stopped one left.

use std::collections::BTreeSet;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::IpamActionError;
use crate::datastore::backup::{self, IpamObject, Reader, Record};
use crate::datastore::ipam::{self as ipam_store, IpamStore};
use crate::datastore::{Datastore, DatastoreType, StoreError};
use crate::exec::RunMode;
use crate::exec::actions::resource::apply::{DocumentWrite, write_documents};
use crate::exec::actions::{Outcome, StepError};
use crate::exec::interrupt::Interrupt;
use crate::ipam::{AllocationBlock, BlockEncoding, Stored};
use crate::plan::action::{DatastoreRestore, ResourceDocuments};
use crate::release::ApiRelease;
use crate::resource::{Kind, Resource, ResourceKey};

/// The sha256 of a file, hex, read a block at a time.
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// What the backup holds, read and checked before anything is written.
struct Contents {
    documents: Vec<Resource>,
    cluster_information: Option<Resource>,
    ipam: Vec<IpamObject>,
    skipped: Vec<String>,
}

/// Restores the backup `request` names (see the module documentation).
pub async fn restore(
    store: &dyn Datastore,
    request: &DatastoreRestore,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
    release: &ApiRelease,
) -> Result<Outcome, StepError> {
    let contents = read(store.kind(), request)?;
    let mut transcript = Vec::new();
    for skipped in &contents.skipped {
        transcript.push(format!("  {skipped}"));
    }
    let written = apply_documents(
        store,
        contents.documents,
        &request.file,
        (mode, interrupt, release),
        &mut transcript,
    )
    .await?;
    let mut summary = vec![written];
    if let Some(information) = &contents.cluster_information {
        let line = cluster_information(store, information, mode).await?;
        transcript.push(line.clone());
        summary.push(line);
    }
    if let Some(ipam) = store.ipam() {
        let encoding = BlockEncoding::for_release(
            crate::plan::release::cluster_release(store)
                .await
                .map_err(IpamActionError::from)?
                .as_ref(),
        );
        let write = request.include_ipam && mode == RunMode::Execute;
        let line = restore_ipam(ipam, &contents.ipam, encoding, write, interrupt).await?;
        let line = match (request.include_ipam, mode) {
            (false, _) => format!("{line} (IPAM is not restored without --include-ipam)"),
            _ => line,
        };
        transcript.push(line.clone());
        summary.push(line);
    }
    Ok(Outcome {
        summary: summary.join("; "),
        transcript,
        output: None,
    })
}

/// How a step writes: its mode, the signal it stops on, the release it validates for.
pub(super) type Writing<'a> = (RunMode, Option<&'a Interrupt>, &'a ApiRelease);

/// Writes `documents` (read from `file`) as `apply` writes them, undone on a failure or a signal;
/// adds the account to `transcript` and returns the summary line.
pub(super) async fn apply_documents(
    store: &dyn Datastore,
    documents: Vec<Resource>,
    file: &str,
    (mode, interrupt, release): Writing<'_>,
    transcript: &mut Vec<String>,
) -> Result<String, StepError> {
    let documents = ResourceDocuments {
        documents,
        file: Some(file.to_string()),
        validated_for: None,
    };
    let written = write_documents(
        store,
        &documents,
        DocumentWrite::Apply,
        mode,
        interrupt,
        release,
    )
    .await?;
    match written.transcript.is_empty() {
        true => transcript.push(written.summary.clone()),
        false => transcript.extend(written.transcript),
    }
    Ok(written.summary)
}

/// A stored resource as a document to write: without what the datastore sets itself.
pub(super) fn as_document(mut resource: Resource) -> Resource {
    resource.metadata.uid = None;
    resource.metadata.creation_timestamp = None;
    resource.metadata.resource_version = None;
    resource.metadata.other.clear();
    resource
}

/// Reads the whole backup, refusing it before any write when it is not the one planned, is of
/// another datastore type, or does not read.
fn read(datastore: DatastoreType, request: &DatastoreRestore) -> Result<Contents, IpamActionError> {
    let path = Path::new(&request.file);
    let refused = |reason: String| IpamActionError::Refused { reason };
    let digest = file_digest(path).map_err(|error| {
        refused(format!(
            "cannot read the backup `{}`: {error}",
            request.file
        ))
    })?;
    if digest != request.sha256 {
        return Err(refused(format!(
            "the backup `{}` changed since the plan was made (sha256 {}, planned {})",
            request.file, digest, request.sha256
        )));
    }
    let mut reader = Reader::open(path).map_err(|error| refused(error.to_string()))?;
    if reader.header.datastore_type != datastore {
        return Err(refused(format!(
            "the backup `{}` is of a `{}` datastore and this one is `{datastore}`: a backup goes back into the datastore type it was taken of (to move between datastores use `netctl datastore migrate export` and `import`)",
            request.file, reader.header.datastore_type
        )));
    }
    let mut contents = Contents {
        documents: Vec::new(),
        cluster_information: None,
        ipam: Vec::new(),
        skipped: Vec::new(),
    };
    let mut not_writable = std::collections::BTreeMap::<Kind, usize>::new();
    // `upgrade rollback` puts back only the kinds the undone steps wrote.
    let wanted = |kind: Kind| {
        request.kinds.is_empty()
            || request
                .kinds
                .iter()
                .any(|wanted| *wanted == kind.to_string())
    };
    while let Some(record) = reader
        .next_record()
        .map_err(|error| refused(error.to_string()))?
    {
        match record {
            Record::Resource(resource) if !wanted(resource.kind) => {}
            Record::Resource(resource) if resource.kind == Kind::ClusterInformation => {
                contents.cluster_information = Some(*resource);
            }
            Record::Resource(resource)
                if datastore == DatastoreType::Kubernetes
                    && matches!(resource.kind, Kind::Profile | Kind::WorkloadEndpoint) =>
            {
                *not_writable.entry(resource.kind).or_default() += 1;
            }
            Record::Resource(resource) => contents.documents.push(as_document(*resource)),
            Record::Ipam(record) => {
                let object = backup::object(&record).map_err(|reason| {
                    refused(format!(
                        "the backup `{}` holds an IPAM object that does not read: `{}`: {reason}",
                        request.file, record.key
                    ))
                })?;
                contents.ipam.push(object);
            }
        }
    }
    for (kind, count) in not_writable {
        contents.skipped.push(format!(
            "{count} {kind}(s) in the backup are not restored: on Kubernetes they are derived ({})",
            match kind {
                Kind::Profile => "from Namespaces and ServiceAccounts",
                _ => "from Pods",
            }
        ));
    }
    Ok(contents)
}

/// Writes ClusterInformation's identity back when it differs; `datastoreReady` stays as it is.
async fn cluster_information(
    store: &dyn Datastore,
    backed_up: &Resource,
    mode: RunMode,
) -> Result<String, IpamActionError> {
    const FIELDS: [&str; 3] = ["clusterGUID", "calicoVersion", "clusterType"];
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let mut current = match store.get(&key).await {
        Ok(current) => current,
        Err(StoreError::NotFound(_)) => {
            return Ok("ClusterInformation `default` does not exist: not restored (the node agent creates it)".into());
        }
        Err(error) => return Err(error.into()),
    };
    let differing: Vec<&str> = FIELDS
        .into_iter()
        .filter(|field| current.spec.get(field) != backed_up.spec.get(field))
        .collect();
    if differing.is_empty() {
        return Ok("ClusterInformation `default` unchanged".into());
    }
    let described = differing
        .iter()
        .map(|field| {
            format!(
                "{field} {} -> {}",
                current.spec.get(field).unwrap_or(&serde_json::Value::Null),
                backed_up
                    .spec
                    .get(field)
                    .unwrap_or(&serde_json::Value::Null)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    if mode == RunMode::DryRun {
        return Ok(format!(
            "would restore ClusterInformation `default`: {described}"
        ));
    }
    for field in differing {
        match backed_up.spec.get(field) {
            Some(value) => current.spec[field] = value.clone(),
            None => {
                if let Some(spec) = current.spec.as_object_mut() {
                    spec.remove(field);
                }
            }
        }
    }
    store.update(&current).await?;
    Ok(format!(
        "restored ClusterInformation `default`: {described}"
    ))
}

/// Compares (and with `write`, restores) the backup's IPAM objects; one line says what differs or
/// what was written.
pub(super) async fn restore_ipam(
    ipam: &dyn IpamStore,
    objects: &[IpamObject],
    encoding: BlockEncoding,
    write: bool,
    interrupt: Option<&Interrupt>,
) -> Result<String, IpamActionError> {
    let mut affinities = BTreeSet::new();
    ipam_store::for_each_affinity(ipam, |item| {
        if let Ok(stored) = item {
            if let Some(record) = backup::record(&IpamObject::Affinity(stored.value)) {
                affinities.insert(record.key);
            }
        }
        Ok::<(), IpamActionError>(())
    })
    .await?;
    let (mut created, mut updated, mut unchanged) = (0, 0, 0);
    for object in objects {
        if write && let Some(signal) = interrupt.and_then(Interrupt::received) {
            return Err(IpamActionError::Interrupted {
                done: format!("IPAM: {created} created, {updated} updated before it stopped"),
                signal: signal.describe(),
            });
        }
        let change = match object {
            IpamObject::Block(AllocationBlock { cidr: None, .. }) => Change::None,
            IpamObject::Block(
                block @ AllocationBlock {
                    cidr: Some(cidr), ..
                },
            ) => match ipam.get_block(cidr).await? {
                None => {
                    if write {
                        ipam.create_block(block, encoding).await?;
                    }
                    Change::Create
                }
                Some(stored) if stored.value == *block => Change::None,
                Some(stored) => {
                    if write {
                        let next = Stored::new(block.clone(), stored.revision, stored.uid);
                        ipam.update_block(&next, encoding).await?;
                    }
                    Change::Update
                }
            },
            IpamObject::Handle(handle) => match ipam.get_handle(&handle.id).await? {
                None => {
                    if write {
                        ipam.create_handle(handle).await?;
                    }
                    Change::Create
                }
                Some(stored) if stored.value == *handle => Change::None,
                Some(stored) => {
                    if write {
                        let next = Stored::new(handle.clone(), stored.revision, stored.uid);
                        ipam.update_handle(&next).await?;
                    }
                    Change::Update
                }
            },
            IpamObject::Affinity(affinity) => {
                let key = backup::record(object).map(|record| record.key);
                match key.is_some_and(|key| affinities.contains(&key)) {
                    true => Change::None,
                    false => {
                        if write {
                            ipam.create_affinity(affinity).await?;
                        }
                        Change::Create
                    }
                }
            }
            IpamObject::Config(config) => match ipam.get_config().await? {
                None => {
                    if write {
                        ipam.put_config(config, None).await?;
                    }
                    Change::Create
                }
                Some(stored) if stored.value == *config => Change::None,
                Some(stored) => {
                    if write {
                        ipam.put_config(config, Some(&stored.revision)).await?;
                    }
                    Change::Update
                }
            },
        };
        match change {
            Change::Create => created += 1,
            Change::Update => updated += 1,
            Change::None => unchanged += 1,
        }
    }
    let verb = if write { "" } else { "would be " };
    Ok(format!(
        "IPAM: {} object(s) in the backup, {created} {verb}created, {updated} {verb}updated, {unchanged} unchanged",
        objects.len()
    ))
}

enum Change {
    Create,
    Update,
    None,
}
