//! Procedures netctl refuses by design, before any runbook is read, each with the reason and
//! the way to do it instead: the etcd → Kubernetes `datastore-migration` where there is no etcd
//! install to move (`docs/upgrade-procedures.md`, "Moving from etcd to the Kubernetes datastore"),
//! and the move of a Kubernetes datastore from the `crd.projectcalico.org/v1` CRDs to the native
//! `projectcalico.org/v3` ones, which upstream's kube-controllers performs
//! (`kube-controllers/pkg/controllers/migration/`, projectcalico/calico#12012).

use super::super::PlanError;
use crate::config::DatastoreType;
use crate::plan::facts::Facts;
use crate::vocabulary::InstallMethod;

/// The names a user may give the v1 → v3 CRD move (`--procedure`).
pub const CRD_MIGRATION_PROCEDURES: [&str; 3] =
    ["crd-v3-migration", "v3-crd-migration", "crd-migration"];

/// The procedure of the etcd → Kubernetes move (`runbooks/datastore-migration.yaml`).
const DATASTORE_MIGRATION: &str = "datastore-migration";

/// Refuses `procedure` when netctl does not plan it for these facts.
pub(super) fn check(procedure: &str, facts: &Facts) -> Result<(), PlanError> {
    if CRD_MIGRATION_PROCEDURES.contains(&procedure) {
        return Err(PlanError::CrdMigrationByKubeControllers {
            procedure: procedure.to_string(),
        });
    }
    if procedure != DATASTORE_MIGRATION {
        return Ok(());
    }
    let install_method = facts.install_method.value;
    let datastore_type = facts.datastore_type.value;
    let reason = match (install_method, datastore_type) {
        (InstallMethod::Operator | InstallMethod::Helm, _) => {
            "the operator runs Calico only on the Kubernetes datastore, so an operator install has no etcd datastore to move"
        }
        (InstallMethod::Manifest, DatastoreType::EtcdV3) => return Ok(()),
        (InstallMethod::Manifest, _) => {
            "the install already keeps its data in the Kubernetes datastore"
        }
    };
    Err(PlanError::ProcedureDoesNotApply {
        procedure: procedure.to_string(),
        install_method: install_method.as_str().to_string(),
        datastore_type: datastore_type.to_string(),
        reason,
    })
}
