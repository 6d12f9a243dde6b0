//! Procedures netctl refuses by design, before any runbook is read, each with the reason and the
//! way to do it instead: the move of a Kubernetes datastore from the `crd.projectcalico.org/v1`
//! CRDs to the native `projectcalico.org/v3` ones, which upstream's kube-controllers performs
//! (`kube-controllers/pkg/controllers/migration/`, projectcalico/calico#12012). A procedure whose
//! runbooks exist but are not for this install is refused by stage 2 ([`super::select`]) from
//! their `appliesTo`.

use super::super::PlanError;

/// The names a user may give the v1 → v3 CRD move (`--procedure`).
pub const CRD_MIGRATION_PROCEDURES: [&str; 3] =
    ["crd-v3-migration", "v3-crd-migration", "crd-migration"];

/// Refuses `procedure` when netctl does not plan it at all.
pub(super) fn check(procedure: &str) -> Result<(), PlanError> {
    if CRD_MIGRATION_PROCEDURES.contains(&procedure) {
        return Err(PlanError::CrdMigrationByKubeControllers {
            procedure: procedure.to_string(),
        });
    }
    Ok(())
}
