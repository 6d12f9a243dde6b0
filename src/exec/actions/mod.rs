//! Performing one action: the exhaustive dispatch over [`Action`] that makes dry-run total.
//!
//! [`perform`] is the only way the executor touches the world. It is generated from the one list
//! of actions (`vocabulary::action_table`): every action's arguments implement [`Perform`], beside
//! the other actions of their family — `resource/` (`resource.*`), `kube/` (`kube.*`), `fetch`,
//! `process` (`helm`, `exec`), `check`, `pause`, `node` (`node.run`, `node.status`) and `ipam`
//! (`ipam.*`, `datastore.lock|unlock`), `verify` (`upgrade.baseline`, `upgrade.verify`) — so an
//! action without an implementation does not compile. Each takes the [`RunMode`]: in dry-run it does every read it
//! needs (so the transcript shows the real document that would be written) and nothing else.
//! [`holds`] evaluates an action as a postcondition (`verify`), and [`is_idempotent`] says whether
//! an interrupted step may simply run again.

pub mod check;
pub mod fetch;
pub mod ipam;
pub mod kube;
pub mod node;
pub mod pause;
pub mod process;
pub mod resource;
pub mod verify;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::datastore::Datastore;
use crate::errors::Hint;
use crate::plan::release::api_release;
use crate::plan::{Action, Facts};
use crate::release::ApiRelease;

pub use super::RunMode;
pub use resource::{ExistingPolicy, WriteSemantics};

/// What an action did (or, in dry-run, would do).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// One line for progress and the journal.
    pub summary: String,
    /// The detailed account for the dry-run transcript: documents, requests, command lines.
    pub transcript: Vec<String>,
    /// What a step's `register` keeps.
    pub output: Option<serde_json::Value>,
}

impl Outcome {
    fn line(text: String) -> Outcome {
        Outcome {
            summary: text.clone(),
            transcript: vec![text],
            output: None,
        }
    }
}

/// Why an action failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Resource(#[from] resource::ResourceActionError),
    #[error(transparent)]
    Process(#[from] process::ProcessError),
    #[error(transparent)]
    Fetch(#[from] fetch::FetchError),
    #[error(transparent)]
    Check(#[from] check::CheckError),
    #[error(transparent)]
    Kube(#[from] kube::KubeActionError),
    #[error(transparent)]
    OwnerReference(#[from] kube::owner_reference::OwnerReferenceError),
    #[error(transparent)]
    Node(#[from] crate::node::NodeError),
    #[error(transparent)]
    NodeStatus(#[from] Box<node::status::NodeStatusActionError>),
    #[error(transparent)]
    Ipam(#[from] ipam::IpamActionError),
    #[error(transparent)]
    Verify(Box<verify::VerifyError>),
    #[error("`{action}` needs the Kubernetes API, and no cluster is configured")]
    KubernetesUnavailable { action: &'static str },
    #[error("`{action}` cannot be used as a postcondition (`verify`)")]
    NotAPostcondition { action: &'static str },
    #[error("`{action}` needs a datastore, and this run has none")]
    NoDatastore { action: &'static str },
    /// A step that records its progress item by item could not record it (the checkpoint). The
    /// executor's error comes boxed with its advice, so actions do not depend on the executor.
    #[error("cannot record the progress of the step")]
    Progress {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
        hint: Option<String>,
    },
}

/// A resource action's listing (a refused delete's targets) is the step's.
impl crate::listing::Listed for StepError {
    fn listed(&self, limit: &crate::listing::Limit) -> Option<String> {
        match self {
            StepError::Resource(error) => error.listed(limit),
            _ => None,
        }
    }
}

impl Hint for StepError {
    fn hint(&self) -> Option<String> {
        match self {
            StepError::Resource(error) => error.hint(),
            StepError::Process(error) => error.hint(),
            StepError::Fetch(error) => error.hint(),
            StepError::Kube(error) => error.hint(),
            StepError::OwnerReference(error) => error.hint(),
            StepError::Node(error) => error.hint(),
            StepError::NodeStatus(error) => error.hint(),
            StepError::Ipam(error) => error.hint(),
            StepError::Verify(error) => error.hint(),
            StepError::KubernetesUnavailable { .. } => Some(
                "point KUBECONFIG (or `kubeconfig` in the config file) at the cluster; `--dry-run` shows the exact request".to_string(),
            ),
            StepError::NotAPostcondition { .. } => Some(
                "use `resource.get`, `resource.list`, `resource.label`, `resource.wait`, `check`, `exec`, `kube.list`, `kube.wait-rollout` or `kube.restore-owner-reference` as `verify`".to_string(),
            ),
            StepError::Progress { hint, .. } => hint.clone(),
            StepError::Check(_) | StepError::NoDatastore { .. } => None,
        }
    }
}

/// What an action may use.
pub struct Context<'a> {
    /// `None` for a plan that touches no datastore (`node run`).
    pub datastore: Option<&'a dyn Datastore>,
    /// Facts as the cluster shows them now (discoverable ones re-read).
    pub facts: &'a Facts,
    /// Where `fetch` writes and `kube.apply` with a `file` source reads.
    pub files_dir: PathBuf,
    /// A local copy of download URLs for air-gapped sites.
    pub mirror_dir: Option<PathBuf>,
    pub semantics: WriteSemantics,
    /// Outputs registered by earlier steps.
    pub outputs: &'a BTreeMap<String, serde_json::Value>,
    /// The `register` name of the step being performed, if any.
    pub register: Option<&'a str>,
    /// For a `fetch` that ran before: the digest it recorded; the same bytes must come back.
    pub recorded_digest: Option<String>,
    /// Where to record a started program's pid (upgrade runs; not one-step commands or `verify`).
    pub child_tracking: Option<process::ChildTracking>,
    /// The Kubernetes API client for `kube.*` actions, when a cluster is configured.
    pub kubernetes: Option<::kube::Client>,
    /// When the run started (RFC 3339, kept across resumes): the `restartedAt` value of
    /// `kube.restart`, so a restart done before an interruption is not repeated. `None` outside an
    /// upgrade run (a dry-run), where the time now stands in.
    pub run_started_at: Option<String>,
    /// The run's id (upgrade runs): where a `kube.apply` keeps its `save_previous` copy
    /// (`files/runs/<run id>/`), so each run goes back with its own. `None` outside a run.
    pub run_id: Option<String>,
    /// The release resource documents are validated for when the command chose one (`--release`);
    /// otherwise the cluster's (ClusterInformation), read by the action.
    pub release: Option<&'a ApiRelease>,
    /// Ctrl-C and SIGTERM as the resource writes see them (one-step commands): they stop between
    /// two batches and undo. `None`: the run handles signals itself.
    pub interrupt: Option<crate::exec::interrupt::Interrupt>,
    /// Where waits report and the node run talks: the run's progress, or a silent one over the
    /// command's printer.
    pub progress: crate::exec::progress::Progress,
}

impl Context<'_> {
    /// The datastore, or why `action` cannot run without one.
    fn store(&self, action: &Action) -> Result<&dyn Datastore, StepError> {
        self.datastore.ok_or(StepError::NoDatastore {
            action: action.name(),
        })
    }

    /// The release resource documents are validated for: the command's choice, else the
    /// cluster's.
    async fn release(&self, store: &dyn Datastore) -> ApiRelease {
        api_release(store, self.release).await
    }
}

/// What [`Perform::perform`] gives back.
pub type Performed = Result<Outcome, StepError>;

/// What [`Perform::holds`] gives back: whether the postcondition holds.
pub type Held = Result<bool, StepError>;

/// What the executor does with the arguments of one kind of action. Every argument type of
/// `plan::action` implements it beside the other actions of its family; `action` is the action
/// the arguments belong to (two actions share one type: `resource.create`, `resource.apply` and
/// `resource.replace`; `kube.annotate` and `kube.label`).
pub(crate) trait Perform {
    /// Performs `action` (or, in dry-run, does its reads and says what it would write).
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed;

    /// Whether `action` holds as a postcondition (`verify`). Reads only.
    async fn holds(&self, action: &Action, _: &Context<'_>) -> Held {
        Err(StepError::NotAPostcondition {
            action: action.name(),
        })
    }

    /// Whether running `action` twice has the same effect as running it once, so an interrupted
    /// step may run again without asking.
    fn is_idempotent(&self, action: &Action) -> bool;

    /// What the action does to which Kubernetes types (for the pre-flight); `None` when that is
    /// known only when it runs (a manifest downloaded by then). Nothing for actions that do not
    /// talk to Kubernetes.
    fn kubernetes_access(&self) -> Option<Vec<kube::ApiAccess>> {
        Some(Vec::new())
    }
}

/// Dispatches [`perform`], [`holds`], [`is_idempotent`] and [`kubernetes_access`] to the arguments of every action of
/// `vocabulary::action_table`.
macro_rules! dispatch {
    ( $( $audience:ident { $( $(#[$doc:meta])* $variant:ident = $name:literal ($arguments:ident), )* } )* ) => {
        /// Performs (or in dry-run describes) one action.
        pub async fn perform(
            context: &Context<'_>,
            action: &Action,
            mode: RunMode,
        ) -> Result<Outcome, StepError> {
            match action {
                $( $( Action::$variant(arguments) => arguments.perform(action, context, mode).await, )* )*
            }
        }

        /// Whether a postcondition holds. Reads only.
        pub async fn holds(context: &Context<'_>, verify: &Action) -> Held {
            match verify {
                $( $( Action::$variant(arguments) => arguments.holds(verify, context).await, )* )*
            }
        }

        /// Whether running the action twice has the same effect as running it once, so an
        /// interrupted step may run again without asking.
        pub fn is_idempotent(action: &Action) -> bool {
            match action {
                $( $( Action::$variant(arguments) => arguments.is_idempotent(action), )* )*
            }
        }

        /// What the action does to which Kubernetes types; `None` when known only when it runs.
        pub fn kubernetes_access(action: &Action) -> Option<Vec<kube::ApiAccess>> {
            match action {
                $( $( Action::$variant(arguments) => arguments.kubernetes_access(), )* )*
            }
        }
    };
}
crate::vocabulary::action_table!(dispatch);
