//! The etcd → Kubernetes migration as a runbook (`runbooks/datastore-migration.yaml`):
//! `datastore.export` (the locked etcd datastore written as a migration export into the run's
//! state directory) and the cluster's Kubernetes datastore as the datastore of `datastore.lock`,
//! `datastore.unlock` and `datastore.import` (`datastore: kubernetes`), while the run itself is
//! connected to etcd.
//!
//! The export is refused as `netctl datastore migrate export` refuses (not etcd, not locked, a
//! node without a Kubernetes name) before a byte is written; the file is whole or absent. A
//! resume keeps an export the run already wrote: the datastore has stayed locked since the lock
//! step, so it holds what the file holds.

use super::IpamActionError;
use crate::config::CalicoApiGroup;
use crate::datastore::Datastore;
use crate::datastore::kube::{ClusterGroup, KubeStore};
use crate::datastore::migration::file::MigrationFile;
use crate::datastore::migration::{MigrationError, NodeNames, crds, export};
use crate::exec::actions::{Context, Outcome, Perform, Performed, RunMode, StepError, fetch};
use crate::exec::lock::Holder;
use crate::plan::Action;
use crate::plan::action::{DatastoreExport, DatastoreMigrationPreflight, DatastoreTarget};

/// The datastore a datastore action with `datastore: target` works on: the configured one, or
/// the Kubernetes datastore of the run's cluster (connected here, the Calico CRDs served or not).
pub(super) enum Target<'a> {
    Configured(&'a dyn Datastore),
    Cluster(Box<KubeStore>),
}

impl Target<'_> {
    pub(super) fn store(&self) -> &dyn Datastore {
        match self {
            Target::Configured(store) => *store,
            Target::Cluster(store) => store.as_ref(),
        }
    }
}

pub(super) async fn target<'a>(
    context: &'a Context<'_>,
    action: &Action,
    datastore: DatastoreTarget,
) -> Result<Target<'a>, StepError> {
    let configured = context.store(action)?;
    match datastore {
        DatastoreTarget::Configured => Ok(Target::Configured(configured)),
        DatastoreTarget::Kubernetes => {
            let client = context
                .kubernetes
                .clone()
                .ok_or(StepError::KubernetesUnavailable {
                    action: action.name(),
                })?;
            // The group the plan was made for (`calico_api_group`): the CRDs it downloaded are
            // that group's. A plan made without a cluster leaves it to discovery.
            let group = match context.facts.calico_api_group.value.parse() {
                Ok(planned) => ClusterGroup::Planned(planned),
                Err(_) => ClusterGroup::Configured(None),
            };
            let store = KubeStore::for_cluster(
                client,
                "the cluster of the kubeconfig".to_string(),
                configured.request_timeout(),
                group,
            )
            .await
            .map_err(IpamActionError::from)?;
            Ok(Target::Cluster(Box::new(store)))
        }
    }
}

/// Who a lock or import is recorded as: the plan's `by`, else the user and host running it.
pub(super) fn by(given: &str) -> String {
    match given {
        "" => {
            let holder = Holder::current();
            format!("{}@{}", holder.user, holder.host)
        }
        given => given.to_string(),
    }
}

impl Perform for DatastoreExport {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        // A dry run's lock step locks nothing: it checks all but the lock.
        let names = match mode {
            RunMode::Execute => export::prepare(store).await,
            RunMode::DryRun => match store.kind() {
                crate::datastore::DatastoreType::EtcdV3 => NodeNames::read(store).await,
                other => Err(MigrationError::NotEtcd(other)),
            },
        }
        .map_err(IpamActionError::from)?;
        let path = fetch::target_path(&context.files_dir, &self.file)?;
        let shown = path.display().to_string();
        if mode == RunMode::DryRun {
            return Ok(Outcome::line(format!(
                "would export the etcd datastore, locked by then, to `{shown}` ({} node(s) renamed to their Kubernetes names)",
                names.renamed()
            )));
        }
        if path.exists() {
            return Ok(Outcome::line(format!(
                "kept `{shown}`, exported before an interruption (the datastore has stayed locked since)"
            )));
        }
        if let Some(parent) = path.parent() {
            crate::exec::checkpoint::create_private_directory(parent).map_err(|source| {
                IpamActionError::from(MigrationError::Write {
                    path: shown.clone(),
                    source,
                })
            })?;
        }
        let exported = export::export_to_file(
            export::Lister::OneByOne(store),
            &names,
            &path,
            &mut crate::output::PhaseClock::off(),
        )
        .await
        .map_err(IpamActionError::from)?;
        Ok(Outcome::line(format!(
            "exported {} resource(s) and {} IPAM object(s) to `{shown}`; renamed {} node(s) and {} host endpoint/BGP peer node reference(s)",
            exported.resources,
            exported.ipam,
            exported.renamed_nodes,
            exported.renamed_node_references
        )))
    }

    /// A resume keeps the whole export the run wrote (see the module documentation).
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl Perform for DatastoreMigrationPreflight {
    async fn perform(&self, action: &Action, context: &Context<'_>, _: RunMode) -> Performed {
        let source = context.store(action)?;
        let names = NodeNames::read(source)
            .await
            .map_err(IpamActionError::from)?;
        let mut lines = vec![format!(
            "every node has a Kubernetes name ({} renamed by the export)",
            names.renamed()
        )];
        let target = target(context, action, DatastoreTarget::Kubernetes).await?;
        let store = target.store();
        let group = store.calico_api_group().unwrap_or(CalicoApiGroup::CrdV1);
        let (bytes, _) = fetch::read_bytes(&self.crds, context.mirror_dir.as_deref()).await?;
        let text = String::from_utf8_lossy(&bytes);
        let needed = [
            "ClusterInformation",
            "IPPool",
            "IPAMBlock",
            "BlockAffinity",
            "IPAMHandle",
        ]
        .into_iter()
        .map(str::to_string)
        .collect();
        let origin = format!("`{}`", self.crds);
        let defined =
            crds::group_crds(&text, &origin, group, &needed).map_err(IpamActionError::from)?;
        lines.push(format!(
            "the cluster answers; {} CRD(s) of `{}` to install from {origin}",
            defined.len(),
            group.api_version()
        ));
        let empty = MigrationFile {
            resources: Vec::new(),
            cluster_guid: None,
            calico_version: None,
            ipam: Vec::new(),
        };
        if super::import::crds_served(store).await? {
            super::import::survey(store, &empty).await?;
            lines.push("the Kubernetes datastore holds no Calico data".to_string());
        } else {
            lines.push("the cluster serves no Calico CRDs yet: the target is empty".to_string());
        }
        Ok(Outcome {
            summary: lines.join("; "),
            transcript: lines,
            output: None,
        })
    }

    /// It reads only.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}
