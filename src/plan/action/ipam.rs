//! The arguments of the IPAM and datastore actions: `datastore.lock`, `datastore.unlock`,
//! `datastore.restore`, `datastore.migrate-policy-names`, `datastore.migration-preflight`,
//! `datastore.export`, `datastore.import`, `datastore.migration-verify`, `ipam.release`, `ipam.split`,
//! `ipam.configure` (one family; `exec/actions/ipam/` performs them), with their one-line
//! descriptions.
//!
//! They are built by their commands (`netctl datastore migrate lock|unlock`, `netctl datastore
//! migrate-policy-names`, `netctl ipam release|split|configure`), fully decided before the executor
//! runs them: a release carries each address with the guards its report gave (sequence number,
//! handle) and each handle with the revision and UID it had; a split carries the children's names
//! and CIDRs and the pool's revision when the plan was made. Only `datastore.migrate-policy-names`
//! is also a runbook action (the `policy-names-v3` runbook on etcd); the others a runbook names not.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Arguments;
use crate::ipam::config::ConfigChange;

/// Which datastore a datastore action works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatastoreTarget {
    /// The one the run is connected to (`netctl`'s configuration).
    #[default]
    Configured,
    /// The Kubernetes datastore of the run's cluster (the kubeconfig), whatever the configured
    /// one is: the target of the etcd → Kubernetes migration (`datastore-migration` runbook).
    Kubernetes,
}

impl DatastoreTarget {
    fn is_configured(&self) -> bool {
        *self == DatastoreTarget::Configured
    }
}

/// `datastore.lock` / `datastore.unlock`: ClusterInformation `datastoreReady` false / true.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatastoreLock {
    /// Who asks (`user@host`), recorded on ClusterInformation while it is locked; empty in a
    /// runbook: the user and host running the step.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
    /// Which datastore (default: the configured one).
    #[serde(default, skip_serializing_if = "DatastoreTarget::is_configured")]
    pub datastore: DatastoreTarget,
}

/// `datastore.migration-preflight`: what the etcd → Kubernetes migration needs, checked before
/// its lock (reads only): every etcd node has a Kubernetes name, the cluster answers, the CRD
/// manifest is one of the target's API group, and the target holds no Calico data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatastoreMigrationPreflight {
    /// The URL of the CRD manifest the import will install (`https://`, `file://`; the mirror
    /// directory applies).
    pub crds: String,
}

/// `datastore.export`: the configured etcd datastore (locked) written as a migration export into
/// the run's state directory (the `datastore-migration` runbook).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatastoreExport {
    /// The file, relative to the run's state directory.
    pub file: String,
}

/// `datastore.migration-verify`: the export in the run's state directory compared with the
/// Kubernetes datastore of the run's cluster after the import (reads only; the
/// `datastore-migration` runbook's last step).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatastoreMigrationVerify {
    /// The export, relative to the run's state directory (the `datastore.export` step's file).
    pub file: String,
}

/// `datastore.restore`: a backup put back (`netctl datastore restore`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DatastoreRestore {
    /// The backup file, as `netctl datastore backup` writes it.
    pub file: String,
    /// Its sha256 when the plan was made: a changed file is refused.
    pub sha256: String,
    /// Restore the IPAM objects too (`--include-ipam`).
    #[serde(default)]
    pub include_ipam: bool,
    /// Only resources of these kinds (`upgrade rollback` putting back what the undone steps
    /// wrote); empty: every kind, and ClusterInformation's identity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
}

/// `datastore.migrate-policy-names`: the default-tier policies stored as `default.<name>` moved to
/// their own names (etcd).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatastoreMigratePolicyNames {
    /// Move them even when ClusterInformation does not say the cluster runs v3.32 or later
    /// (`--allow-version-mismatch`): older releases look for `default.<name>` and do not find a
    /// moved policy by its name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_version_mismatch: bool,
}

/// `datastore.import`: a migration export written into the Kubernetes datastore (`netctl
/// datastore migrate import`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DatastoreImport {
    /// The export, as `datastore migrate export` (netctl's or calicoctl's) writes it; a relative
    /// path is a file of the run's state directory (a `datastore.export` of the same run).
    pub file: String,
    /// Its sha256 when the plan was made: a changed file is refused. Empty: the file an earlier
    /// step of the run writes (not known when the plan is made).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    /// Who imports (`user@host`), recorded on ClusterInformation with the lock; empty in a
    /// runbook: the user and host running the step.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
    /// Which datastore receives it (default: the configured one, which must be Kubernetes).
    #[serde(default, skip_serializing_if = "DatastoreTarget::is_configured")]
    pub datastore: DatastoreTarget,
    /// The CRD manifest installed (server-side) before the first Calico write
    /// (`datastore/migration/crds.rs`): a URL (`https://`, `http://`, `file://`; the mirror
    /// directory applies) or a file of the run's state directory an earlier `fetch` wrote. `None`:
    /// the CRDs must be installed already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds: Option<String>,
    /// The sha256 (`sha256:<hex>`) the CRD manifest had when the plan read it; other bytes are
    /// refused. `None`: not pinned (a file a `fetch` of the same run wrote, which pins it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds_sha256: Option<String>,
}

/// `ipam.release`: addresses and handles to free, each guarded.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IpamRelease {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<AddressRelease>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handles: Vec<HandleRelease>,
    /// When releasing from reports: the cluster and ClusterInformation revision they were taken
    /// at, checked again when the step runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<ReportOrigin>,
    /// Release without the datastore locked (`--force`).
    #[serde(default)]
    pub unlocked_allowed: bool,
}

/// One address to free.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddressRelease {
    pub ip: String,
    /// Only while the allocation has this handle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Only while the allocation has this sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
}

/// One leaked handle to delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HandleRelease {
    pub id: String,
    /// Only while the handle has this revision...
    pub revision: String,
    /// ...and (Kubernetes) this UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// The cluster a report was taken of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReportOrigin {
    pub cluster_guid: String,
    pub cluster_information_revision: String,
}

/// `ipam.split`: a pool replaced by 2^k children.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IpamSplit {
    pub pool: String,
    /// The pool's resourceVersion when the plan was made.
    pub revision: String,
    pub children: Vec<SplitChild>,
}

/// One child pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitChild {
    pub name: String,
    pub cidr: String,
}

/// `ipam.configure`: the allocator's configuration changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpamConfigure {
    #[serde(flatten)]
    pub change: ConfigChange,
}

impl Arguments for DatastoreLock {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str(name)?;
        if self.datastore == DatastoreTarget::Kubernetes {
            out.write_str(" of the cluster's Kubernetes datastore")?;
        }
        match self.by.as_str() {
            "" => Ok(()),
            by => write!(out, " (as {by})"),
        }
    }
}

impl Arguments for DatastoreMigrationPreflight {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} --crds {}", self.crds)
    }
}

impl Arguments for DatastoreExport {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} -o {}", self.file)
    }
}

impl Arguments for DatastoreMigrationVerify {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} -f {} against the cluster's Kubernetes datastore",
            self.file
        )
    }
}

impl Arguments for DatastoreMigratePolicyNames {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str(name)?;
        if self.allow_version_mismatch {
            out.write_str(" --allow-version-mismatch")?;
        }
        Ok(())
    }

    /// It stops between two moves on Ctrl-C and SIGTERM (each move is whole).
    fn stops_on_signal(&self) -> bool {
        true
    }
}

impl Arguments for IpamRelease {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} {} address(es), {} handle(s)",
            self.addresses.len(),
            self.handles.len()
        )?;
        if let Some(taken) = &self.taken_at {
            write!(
                out,
                " from reports of cluster {} at revision {}",
                taken.cluster_guid, taken.cluster_information_revision
            )?;
        }
        Ok(())
    }

    /// It stops between two blocks on Ctrl-C and SIGTERM and says what it released.
    fn stops_on_signal(&self) -> bool {
        true
    }
}

impl Arguments for IpamSplit {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let children: Vec<String> = self
            .children
            .iter()
            .map(|child| format!("{} {}", child.name, child.cidr))
            .collect();
        write!(
            out,
            "{name} IPPool {} into {}",
            self.pool,
            children.join(", ")
        )
    }

    /// On Kubernetes it undoes its writes on Ctrl-C and SIGTERM.
    fn stops_on_signal(&self) -> bool {
        true
    }
}

impl Arguments for IpamConfigure {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let change = serde_json::to_string(&self.change).unwrap_or_default();
        write!(out, "{name} {change}")
    }
}

impl Arguments for DatastoreRestore {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digest = self.sha256.get(..12).unwrap_or(&self.sha256);
        write!(out, "{name} -f {} (sha256 {digest}…)", self.file)?;
        if self.include_ipam {
            out.write_str(" --include-ipam")?;
        }
        if !self.kinds.is_empty() {
            write!(out, " (only {})", self.kinds.join(", "))?;
        }
        Ok(())
    }

    /// It writes resources in batches and undoes them when stopped.
    fn stops_on_signal(&self) -> bool {
        true
    }
}

impl Arguments for DatastoreImport {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digest = self.sha256.get(..12).unwrap_or(&self.sha256);
        write!(out, "{name} -f {}", self.file)?;
        if !digest.is_empty() {
            write!(out, " (sha256 {digest}…)")?;
        }
        if self.datastore == DatastoreTarget::Kubernetes {
            out.write_str(" into the cluster's Kubernetes datastore")?;
        }
        match &self.crds {
            Some(crds) => write!(out, ", installing the CRDs of `{crds}`"),
            None => Ok(()),
        }
    }

    /// It stops between two writes on Ctrl-C and SIGTERM; a second run finishes.
    fn stops_on_signal(&self) -> bool {
        true
    }
}
