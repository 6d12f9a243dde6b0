//! Why no plan could be made ([`PlanError`]), with the runbook and step at fault, and what to do
//! about it ([`PlanError::hint`]). Raised by resolution (`resolve.rs`) and reported by lint.

use super::catalog::CatalogError;
use super::{ActionError, Phase, Release};
use crate::errors::Hint;
use crate::runbook::template::TemplateError;

/// Why no plan could be made. Messages name the runbook and step at fault.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("invalid target version")]
    InvalidTarget(#[source] super::ReleaseError),
    #[error("`--to` is required for the `upgrade` procedure")]
    MissingTarget,
    #[error("netctl has no runbooks for target `{to}`")]
    UnknownTarget { to: String, known: String },
    #[error("`{to}` names a release line and the catalog knows no latest patch for it")]
    NeedsPatch { to: String },
    #[error("`{to}` is newer than `{latest}`, the newest release of its line netctl knows")]
    BeyondLatest { to: Release, latest: Release },
    #[error("`{to}` is not newer than the installed `{from}`; netctl plans upgrades only")]
    NotAnUpgrade { from: Release, to: Release },
    #[error(
        "upgrading from `{from}` to `{to}` is not supported: {line} may only be upgraded from versions matching `{requirement}`"
    )]
    Unsupported {
        from: String,
        to: String,
        line: String,
        requirement: String,
        hint: String,
    },
    #[error("unknown procedure `{name}`")]
    UnknownProcedure { name: String, known: String },
    #[error(
        "the procedure `{procedure}` does not apply to this install: {}",
        .runbooks.join("; ")
    )]
    ProcedureDoesNotApply {
        procedure: String,
        /// Per runbook of the procedure: the `appliesTo` requirements that fail, each with the
        /// value found, and the runbook's `why`.
        runbooks: Vec<String>,
    },
    #[error(
        "netctl does not plan `{procedure}`, the move of the Kubernetes datastore from the `crd.projectcalico.org/v1` CRDs to the native `projectcalico.org/v3` CRDs: from v3.32 upstream's kube-controllers performs it (its migration controller, with the datastore locked while it copies), and a second writer would race it"
    )]
    CrdMigrationByKubeControllers { procedure: String },
    #[error(
        "no runbook performs the upgrade of a `{install_method}` install on the `{datastore_type}` datastore"
    )]
    NoUpgradeRunbook {
        install_method: String,
        datastore_type: String,
    },
    #[error("runbook `{runbook}` names unknown version edge `{edge}`")]
    UnknownEdge { runbook: String, edge: String },
    // The cause is the source, printed after this by the error chain, not repeated here.
    #[error("runbook `{runbook}`{}", step_suffix(.step))]
    Template {
        runbook: String,
        step: Option<String>,
        #[source]
        source: TemplateError,
    },
    #[error("runbook `{runbook}` step `{step}`")]
    Action {
        runbook: String,
        step: String,
        #[source]
        source: ActionError,
    },
    #[error("runbook `{runbook}` step `{step}`: `foreach` must give a list, got `{found}`")]
    ForeachNotList {
        runbook: String,
        step: String,
        found: String,
    },
    #[error("runbook `{runbook}` step `{step}`: file `{file}` is not beside the runbooks")]
    MissingFile {
        runbook: String,
        step: String,
        file: String,
    },
    #[error("runbook `{runbook}` step `{step}`: file `{file}` holds no valid resources: {message}")]
    InvalidDocuments {
        runbook: String,
        step: String,
        file: String,
        message: String,
    },
    #[error("runbook `{runbook}` has two steps with id `{step}`")]
    DuplicateStep { runbook: String, step: String },
    #[error(
        "runbook `{runbook}` step `{step}` writes a secret on a command line (`{option}`), which plans do not keep"
    )]
    SecretOnCommandLine {
        runbook: String,
        step: String,
        option: String,
    },
    #[error("runbook `{runbook}` step `{step}` needs `{need}`, which does not exist")]
    DanglingNeed {
        runbook: String,
        step: String,
        need: String,
    },
    #[error("step `{step}` ({phase}) needs `{need}`, which runs later ({need_phase})")]
    NeedsLaterPhase {
        step: String,
        phase: Phase,
        need: String,
        need_phase: Phase,
    },
    #[error("steps form a cycle: {}", .cycle.join(" → "))]
    Cycle { cycle: Vec<String> },
    #[error(
        "a manifest overlay was given, but no step of this plan downloads a manifest to apply it to"
    )]
    OverlayUnused { install_method: String },
}

impl Hint for PlanError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            PlanError::Catalog(error) => return error.hint(),
            PlanError::MissingTarget => "name the target release, e.g. `--to v3.29.2`".to_string(),
            PlanError::UnknownTarget { known, .. } => format!("known targets are {known}"),
            PlanError::NeedsPatch { to } => format!("give the patch release, e.g. `--to {to}.0`"),
            PlanError::Unsupported { hint, .. } => hint.clone(),
            PlanError::BeyondLatest { latest, .. } => format!(
                "plan for `--to {latest}`, or use a netctl whose runbooks know the newer release"
            ),
            PlanError::UnknownProcedure { known, .. } => format!("known procedures are {known}"),
            PlanError::ProcedureDoesNotApply { .. } => {
                "check the facts the requirements read (`--from`, `--install-method`, `--datastore-type`); `netctl upgrade plan` without `--to` lists what applies to this cluster".to_string()
            }
            PlanError::CrdMigrationByKubeControllers { .. } => "upstream's way, at v3.32: (1) apply the release's `manifests/v3_projectcalico_org.yaml` (the v3 CRDs) and `manifests/migration.projectcalico.org_datastoremigrations.yaml`; (2) create the DatastoreMigration `v1-to-v3` (`apiVersion: migration.projectcalico.org/v1beta1`, `spec.type: APIServerToCRDs`): kube-controllers locks the datastore (new pods get no network), unregisters the `v3.projectcalico.org` APIService, copies every resource and unlocks at phase `Converged` (`kubectl get datastoremigrations`); (3) on a manifest install set `CALICO_API_GROUP=projectcalico.org/v3` on calico-node and calico-typha (the operator does it itself); the phase turns `Complete` after their rollout; (4) delete the DatastoreMigration: at `Complete` that removes the v1 CRDs, before it rolls the move back. Take a backup first: `netctl datastore backup`".to_string(),
            PlanError::NoUpgradeRunbook { .. } => {
                "check `--install-method` and `--datastore-type`".to_string()
            }
            PlanError::UnknownEdge { .. } => "edges are defined in `releases.yaml`".to_string(),
            PlanError::OverlayUnused { install_method } => format!(
                "overlays are for manifest installs (`install_method` is `{install_method}`); drop `--manifest-overlay`"
            ),
            PlanError::SecretOnCommandLine { .. } => "let the program read it from its environment: it inherits netctl's, so export the variable before `netctl upgrade apply` (a step's `env` value under a secret-looking name is taken from there too, and the plan keeps only its name)".to_string(),
            _ => return None,
        })
    }
}

fn step_suffix(step: &Option<String>) -> String {
    match step {
        Some(step) => format!(" step `{step}`"),
        None => String::new(),
    }
}
