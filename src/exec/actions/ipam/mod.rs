//! The IPAM family of actions and the datastore's own: `datastore.lock`, `datastore.unlock`
//! (`readiness.rs`), `datastore.restore` (`restore.rs`), `datastore.migration-verify`
//! (`migration_verify.rs`), `datastore.migrate-policy-names`
//! (`policy_names.rs`), `ipam.release` (`release.rs`), `ipam.split` (`split.rs`), `ipam.configure`
//! (`configure.rs`).
//!
//! Every IPAM write is a compare-and-swap on the object's revision (`IpamStore`); each action
//! decides everything it can before its first write and, in dry-run, reads what it needs and says
//! what it would write. A release stops between two blocks on Ctrl-C or SIGTERM and says what it
//! released; it is never undone (putting an address back could hand it to two pods) — its guards
//! make running it again safe, and the run finishes what is left. A split on etcd is one
//! transaction; on Kubernetes it is undone, newest write first, when a later write fails.

pub mod configure;
pub mod import;
mod import_crds;
mod migration;
mod migration_verify;
pub mod policy_names;
pub mod readiness;
pub mod release;
pub mod restore;
pub mod split;

use super::{Context, Outcome, Perform, Performed, RunMode};
use crate::datastore::ipam::{IpamError, IpamStore};
use crate::datastore::{Datastore, StoreError};
use crate::errors::Hint;
use crate::ipam::BlockEncoding;
use crate::plan::Action;
use crate::plan::action::{
    DatastoreImport, DatastoreLock, DatastoreMigratePolicyNames, DatastoreRestore, DatastoreTarget,
    IpamConfigure, IpamRelease, IpamSplit,
};

/// Why an IPAM or lock action failed.
#[derive(Debug, thiserror::Error)]
pub enum IpamActionError {
    #[error("the `{0}` datastore keeps no IPAM data")]
    NoIpam(crate::datastore::DatastoreType),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Ipam(#[from] IpamError),
    #[error("the datastore is not locked: {what} needs it locked")]
    NotLocked { what: &'static str },
    #[error(
        "the reports are all stale: none was taken at ClusterInformation revision `{current}` (they were taken at {taken})"
    )]
    Stale { current: String, taken: String },
    #[error(
        "the report was taken of cluster `{report}`, and this is cluster `{cluster}`: refusing to release"
    )]
    OtherCluster { report: String, cluster: String },
    #[error("IP pool `{pool}` does not exist")]
    NoSuchPool { pool: String },
    #[error(
        "IP pool `{pool}` changed since the split was planned (revision `{planned}`, now `{current}`)"
    )]
    PoolChanged {
        pool: String,
        planned: String,
        current: String,
    },
    #[error("{reason}")]
    Refused { reason: String },
    #[error(transparent)]
    Migration(#[from] crate::datastore::migration::MigrationError),
    #[error(transparent)]
    CrdManifest(Box<crate::datastore::migration::crds::CrdManifestError>),
    #[error("cannot install CustomResourceDefinition `{name}`")]
    InstallCrd {
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(transparent)]
    PolicyNames(#[from] policy_names::PolicyNameError),
    #[error("{done}; it stopped on {signal}")]
    Interrupted { done: String, signal: &'static str },
    #[error("{done}; then it failed")]
    Stopped {
        done: String,
        #[source]
        cause: Box<IpamActionError>,
    },
}

impl Hint for IpamActionError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            IpamActionError::Store(error) => return error.hint(),
            IpamActionError::Ipam(error) => return error.hint(),
            IpamActionError::PolicyNames(error) => return error.hint(),
            IpamActionError::CrdManifest(error) => return error.hint(),
            IpamActionError::Migration(error) => return error.hint(),
            IpamActionError::InstallCrd { .. } => {
                "installing CRDs needs `patch` on `customresourcedefinitions.apiextensions.k8s.io` (cluster-admin); nothing of the export was written yet, so run the import again once allowed".into()
            }
            IpamActionError::NotLocked { .. } => {
                "lock it first (`netctl datastore migrate lock`), or pass `--force`".into()
            }
            IpamActionError::Stale { .. } => {
                "make a new report while the datastore is locked (`netctl datastore migrate lock`, then `netctl ipam check -o FILE`) and release from it".into()
            }
            IpamActionError::OtherCluster { .. } => {
                "check the configuration (`netctl config view`): this report belongs to another cluster; `--force` does not override this".into()
            }
            IpamActionError::NoSuchPool { .. } => "list the pools with `netctl get ippools`".into(),
            IpamActionError::PoolChanged { .. } => "run the command again".into(),
            IpamActionError::Interrupted { .. } | IpamActionError::Stopped { .. } => {
                "run the same command again: what is done is skipped, the rest is done".into()
            }
            IpamActionError::NoIpam(_) | IpamActionError::Refused { .. } => return None,
        })
    }
}

/// The IPAM of a datastore.
fn ipam_of(store: &dyn Datastore) -> Result<&dyn IpamStore, IpamActionError> {
    store.ipam().ok_or(IpamActionError::NoIpam(store.kind()))
}

impl Perform for DatastoreLock {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let locked = matches!(action, Action::DatastoreLock(_));
        let target = migration::target(context, action, self.datastore).await?;
        let by = migration::by(&self.by);
        if mode == RunMode::DryRun
            && self.datastore == DatastoreTarget::Kubernetes
            && !import::crds_served(target.store()).await?
        {
            // The migration's target before its import installed the CRDs.
            return Ok(Outcome::line(format!(
                "would set datastoreReady: {} on ClusterInformation `default` of the Kubernetes datastore, once the import installed its CRDs",
                !locked
            )));
        }
        Ok(readiness::set(target.store(), locked, &by, mode).await?)
    }

    /// The flag is set (or cleared) whatever it was.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl Perform for IpamRelease {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let cluster = crate::plan::release::cluster_release(store)
            .await
            .map_err(IpamActionError::from)?;
        let encoding = BlockEncoding::for_release(cluster.as_ref());
        let interrupt = context.interrupt.as_ref();
        Ok(release::release(store, self, encoding, mode, interrupt).await?)
    }

    /// Its guards skip what is done.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl Perform for IpamSplit {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let release = context.release(store).await;
        let interrupt = context.interrupt.as_ref();
        Ok(split::split(store, self, &release, mode, interrupt).await?)
    }

    /// The second run finds the pool gone (changed) and refuses.
    fn is_idempotent(&self, _: &Action) -> bool {
        false
    }
}

impl Perform for IpamConfigure {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let cluster = crate::plan::release::cluster_release(store)
            .await
            .map_err(IpamActionError::from)?;
        Ok(configure::configure(store, &self.change, cluster.as_ref(), mode).await?)
    }

    /// The same change twice is the change once.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl Perform for DatastoreRestore {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let release = context.release(store).await;
        let interrupt = context.interrupt.as_ref();
        restore::restore(store, self, mode, interrupt, &release).await
    }

    /// What is restored already is unchanged the second time; the rest is written.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl Perform for DatastoreMigratePolicyNames {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let interrupt = context.interrupt.as_ref();
        Ok(policy_names::migrate(store, self, mode, interrupt).await?)
    }

    /// A moved policy is not misnamed any more: the second run finds nothing to move.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl Perform for DatastoreImport {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let target = migration::target(context, action, self.datastore).await?;
        let store = target.store();
        let release = context.release(store).await;
        let interrupt = context.interrupt.as_ref();
        let files = import_crds::Files {
            files_dir: &context.files_dir,
            mirror_dir: context.mirror_dir.as_deref(),
        };
        let target = import::Target {
            store,
            client: context.kubernetes.as_ref(),
            files,
        };
        import::import(&target, self, mode, interrupt, &release).await
    }

    /// Run again, it finishes what a stopped run left (see `import.rs`).
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}
