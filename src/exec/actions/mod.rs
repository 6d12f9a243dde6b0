//! Performing one action: the exhaustive `match` over [`Action`] that makes dry-run total.
//!
//! [`perform`] is the only way the executor touches the world. Each family lives in its own file
//! (`resource`, `process`, `fetch`, `check`, `kube`, `owner_reference`, `pause`) and takes the
//! [`RunMode`]: in dry-run it does every read it needs (so the transcript shows the real document
//! that would be written) and nothing else. [`holds`] evaluates an action as a postcondition
//! (`verify`), and [`is_idempotent`] says whether an interrupted step may simply run again.

pub mod check;
pub mod describe;
pub mod fetch;
pub mod kube;
pub mod node;
pub mod node_status;
pub mod owner_reference;
pub mod pause;
pub mod process;
pub mod resource;
pub mod resource_apply;
pub mod resource_delete;
pub mod resource_diff;
pub mod resource_edit;
pub mod resource_label_each;
mod resource_undo;
pub mod resource_wait;
mod resource_write;
pub mod rollout;
pub mod store_rules;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::datastore::Datastore;
use crate::errors::Hint;
use crate::plan::action::PatchType;
use crate::plan::release::api_release;
use crate::plan::{Action, Facts};
use crate::release::ApiRelease;

pub use super::RunMode;
pub use resource::{ExistingPolicy, WriteSemantics};
use resource_apply::DocumentWrite;

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
    OwnerReference(#[from] owner_reference::OwnerReferenceError),
    #[error(transparent)]
    Node(#[from] crate::node::NodeError),
    #[error(transparent)]
    NodeStatus(#[from] Box<node_status::NodeStatusActionError>),
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
pub struct ActionContext<'a> {
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

/// Performs (or in dry-run describes) one action.
pub async fn perform(
    context: &ActionContext<'_>,
    action: &Action,
    mode: RunMode,
) -> Result<Outcome, StepError> {
    let store = || {
        context.datastore.ok_or(StepError::NoDatastore {
            action: action.name(),
        })
    };
    let kube_unavailable = || StepError::KubernetesUnavailable {
        action: action.name(),
    };
    // Without a cluster, a dry-run describes the request and a real run refuses before sending.
    let describe = |lines: Vec<String>| -> Result<Outcome, StepError> {
        match mode {
            RunMode::DryRun => Ok(Outcome {
                summary: lines.first().cloned().unwrap_or_default(),
                transcript: lines,
                output: None,
            }),
            RunMode::Execute => Err(kube_unavailable()),
        }
    };
    let files_dir = context.files_dir.as_path();
    let mirror_dir = context.mirror_dir.as_deref();
    let interrupt = context.interrupt.as_ref();
    Ok(match action {
        Action::ResourceGet(target) => resource::get(store()?, target).await?,
        Action::ResourceList(list) => resource::list(store()?, list).await?,
        Action::ResourceCreate(documents) => {
            let command = DocumentWrite::Create(context.semantics.create_existing);
            let release = api_release(store()?, context.release).await;
            resource_apply::write_documents(store()?, documents, command, mode, interrupt, &release)
                .await?
        }
        Action::ResourceApply(documents) => {
            let command = DocumentWrite::Apply;
            let release = api_release(store()?, context.release).await;
            resource_apply::write_documents(store()?, documents, command, mode, interrupt, &release)
                .await?
        }
        Action::ResourceReplace(documents) => {
            let command = DocumentWrite::Replace;
            let release = api_release(store()?, context.release).await;
            resource_apply::write_documents(store()?, documents, command, mode, interrupt, &release)
                .await?
        }
        Action::ResourceDelete(deletion) => {
            let semantics = context.semantics;
            resource_delete::delete(store()?, deletion, semantics, mode, interrupt).await?
        }
        Action::ResourceLabel(label) => {
            let release = api_release(store()?, context.release).await;
            resource_edit::label_with(store()?, label, context.semantics, mode, &release).await?
        }
        Action::ResourceLabelEach(each) => {
            let release = api_release(store()?, context.release).await;
            resource_label_each::label_all(store()?, each, context.semantics, mode, &release)
                .await?
        }
        Action::ResourcePatch(patch) => {
            let release = api_release(store()?, context.release).await;
            resource_edit::patch(store()?, patch, mode, &release).await?
        }
        Action::ResourceWait(wait) => {
            resource_wait::wait(store()?, wait, mode, &context.progress).await?
        }
        Action::KubeApply(apply) => match &context.kubernetes {
            Some(client) => kube::apply(client, apply, files_dir, mirror_dir, mode).await?,
            None => describe(kube::describe_apply(apply, files_dir))?,
        },
        Action::KubePatch(patch) => match &context.kubernetes {
            Some(client) => kube::patch(client, patch, mode).await?,
            None => describe(kube::describe_patch(patch))?,
        },
        Action::KubeAnnotate(change) => match &context.kubernetes {
            Some(client) => kube::change_metadata(client, change, "annotations", mode).await?,
            None => describe(kube::describe_metadata(change, "annotations"))?,
        },
        Action::KubeLabel(change) => match &context.kubernetes {
            Some(client) => kube::change_metadata(client, change, "labels", mode).await?,
            None => describe(kube::describe_metadata(change, "labels"))?,
        },
        Action::KubeList(list) => match &context.kubernetes {
            Some(client) => kube::list(client, list, mode).await?,
            None => describe(kube::describe_list(list))?,
        },
        Action::KubeDelete(delete) => match &context.kubernetes {
            Some(client) => kube::delete(client, delete, mode).await?,
            None => describe(kube::describe_delete(delete))?,
        },
        Action::KubeWaitRollout(wait) => match &context.kubernetes {
            Some(client) => rollout::wait_rollout(client, wait, mode, &context.progress).await?,
            None => describe(rollout::describe_wait(wait))?,
        },
        Action::KubeRestoreOwnerReference(restore) => match &context.kubernetes {
            Some(client) => owner_reference::restore(client, store()?, restore, mode).await?,
            None => describe(owner_reference::describe(restore))?,
        },
        Action::KubeRestart(restart) => {
            let restarted_at = context
                .run_started_at
                .clone()
                .unwrap_or_else(crate::exec::clock::now_rfc3339);
            match &context.kubernetes {
                Some(client) => rollout::restart(client, restart, &restarted_at, mode).await?,
                None => describe(rollout::describe_restart(restart, &restarted_at))?,
            }
        }
        Action::Fetch(request) => {
            fetch::fetch(
                request,
                &context.files_dir,
                context.mirror_dir.as_deref(),
                context.recorded_digest.as_deref(),
                mode,
            )
            .await?
        }
        Action::Helm(helm) => {
            let mut argv = vec!["helm".to_string()];
            argv.extend(helm.args.iter().cloned());
            process::run(
                &argv,
                &BTreeMap::new(),
                helm.timeout.0,
                mode,
                context.child_tracking.as_ref(),
            )
            .await?
        }
        Action::Exec(exec) => {
            process::run(
                &exec.command,
                &exec.env,
                exec.timeout.0,
                mode,
                context.child_tracking.as_ref(),
            )
            .await?
        }
        Action::Check(check) => check::evaluate(check, context.facts)?,
        Action::Pause(gate) => pause::describe(gate, mode),
        Action::NodeRun(request) => node::start(request, mode, context.progress.printer()).await?,
        Action::NodeStatus(query) => {
            node_status::ask(store()?, query, mode, interrupt, context.progress.printer())
                .await
                .map_err(Box::new)?
        }
    })
}

/// Whether a postcondition holds. Reads only.
pub async fn holds(context: &ActionContext<'_>, verify: &Action) -> Result<bool, StepError> {
    let store = || {
        context.datastore.ok_or(StepError::NoDatastore {
            action: verify.name(),
        })
    };
    match verify {
        Action::ResourceGet(target) => Ok(resource::exists(store()?, target).await?),
        Action::ResourceList(list) => {
            let outcome = resource::list(store()?, list).await?;
            Ok(outcome
                .output
                .and_then(|names| names.as_array().map(|names| !names.is_empty()))
                .unwrap_or(false))
        }
        Action::Check(check) => match check::evaluate(check, context.facts) {
            Ok(_) => Ok(true),
            Err(check::CheckError::NotEqual { .. } | check::CheckError::NoMatch { .. }) => {
                Ok(false)
            }
            Err(error) => Err(error.into()),
        },
        Action::Exec(exec) => {
            let (code, _, _) =
                process::run_status(&exec.command, &exec.env, exec.timeout.0, None).await?;
            Ok(code == Some(0))
        }
        Action::ResourceWait(wait) => Ok(resource_wait::waited_for(store()?, wait).await?),
        Action::ResourceLabel(label) => Ok(resource_edit::label_holds(store()?, label).await?),
        Action::ResourceLabelEach(each) => {
            Ok(resource_label_each::label_all_hold(store()?, each).await?)
        }
        Action::KubeList(list) => match &context.kubernetes {
            Some(client) => Ok(!kube::list_names(client, list).await?.names.is_empty()),
            None => Err(StepError::KubernetesUnavailable {
                action: verify.name(),
            }),
        },
        Action::KubeWaitRollout(wait) => match &context.kubernetes {
            Some(client) => Ok(rollout::rolled_out(client, wait).await?),
            None => Err(StepError::KubernetesUnavailable {
                action: verify.name(),
            }),
        },
        Action::KubeRestoreOwnerReference(restore) => match &context.kubernetes {
            Some(client) => Ok(owner_reference::holds(client, store()?, restore).await?),
            None => Err(StepError::KubernetesUnavailable {
                action: verify.name(),
            }),
        },
        other => Err(StepError::NotAPostcondition {
            action: other.name(),
        }),
    }
}

/// Whether running the action twice has the same effect as running it once, so an interrupted step
/// may run again without asking.
pub fn is_idempotent(action: &Action) -> bool {
    match action {
        Action::ResourceGet(_)
        | Action::ResourceList(_)
        | Action::ResourceApply(_)
        | Action::ResourceReplace(_)
        | Action::ResourceDelete(_)
        | Action::ResourceLabel(_)
        // Each batch re-reads its resources and writes only those not yet labelled.
        | Action::ResourceLabelEach(_)
        | Action::KubeApply(_)
        | Action::KubeAnnotate(_)
        | Action::KubeLabel(_)
        | Action::KubeList(_)
        | Action::KubeDelete(_)
        | Action::KubeWaitRollout(_)
        // It reads the object and the owner each time and sends nothing when the reference is there.
        | Action::KubeRestoreOwnerReference(_)
        | Action::ResourceWait(_)
        // Idempotent within a run: the value is the run's start time (see `ActionContext`).
        | Action::KubeRestart(_)
        | Action::Fetch(_)
        | Action::Check(_)
        | Action::Pause(_) => true,
        Action::ResourcePatch(patch) => patch.patch_type == PatchType::Merge,
        Action::KubePatch(patch) => patch.patch_type == PatchType::Merge,
        // A second create fails (or, with skip, hides that the first one ran); programs may do anything.
        Action::ResourceCreate(_) | Action::Helm(_) | Action::Exec(_) => false,
        // It replaces the running container: safe, but not without effect.
        Action::NodeRun(_) => false,
        // Each run asks with objects of its own and deletes them.
        Action::NodeStatus(_) => true,
    }
}
