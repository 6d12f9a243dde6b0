//! `kube.*` actions: requests to the Kubernetes API — server-side apply of manifests (CRDs first,
//! `apply.rs`), merge and JSON patches, annotations and labels of one object (`object.rs`),
//! listing and deleting by label selector (`selected.rs`; a list is a read, so also in a dry-run,
//! and a postcondition), restarts and rollout waits (`rollout.rs`) and restoring owner references
//! (`owner_reference.rs`), the canary node rollout (`canary.rs`: a DaemonSet held at
//! `OnDelete`, its pods replaced node by node, its strategy restored). This file holds what they share: the errors, discovery of a type's
//! API, and how an action goes without a cluster.
//!
//! Every action first describes the exact requests (method, path, content type, body size:
//! `requests.rs`), so a dry-run of a whole plan stays total even without a cluster. With a
//! cluster, a dry-run also sends the writes with `dryRun=All`, so the API server's admission,
//! validation and field-ownership checks are part of the rehearsal; reads are real. In execute
//! mode the writes are sent for real. Errors say which object and request failed, with the API
//! server's own message.

use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use serde_json::Value;

mod apply;
mod canary;
mod object;
pub mod owner_reference;
mod requests;
pub mod rollout;
mod selected;

pub use apply::manifest_documents;
pub use requests::{api_path, plural};
pub use selected::{Listed, list_names};

use super::{Context, Outcome, RunMode, StepError};
use crate::errors::Hint;
use crate::plan::Action;
use crate::plan::action::KubeObject;

/// Why a `kube.*` action failed.
#[derive(Debug, thiserror::Error)]
pub enum KubeActionError {
    #[error("cannot read the manifest `{}`", path.display())]
    ReadManifest {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot download the manifest")]
    DownloadManifest(#[source] super::fetch::FetchError),
    #[error("the manifest {origin} is not valid YAML")]
    ManifestSyntax {
        origin: String,
        #[source]
        source: crate::yaml::YamlError,
    },
    #[error("document {index} of the manifest {origin} has no {field}")]
    ManifestIncomplete {
        origin: String,
        index: usize,
        field: &'static str,
    },
    #[error("the Kubernetes API does not serve `{kind}` in `{api_version}`")]
    UnknownType { api_version: String, kind: String },
    #[error("{what} was refused by the Kubernetes API ({code} {reason}): {message}")]
    Refused {
        what: String,
        code: u16,
        reason: String,
        message: String,
    },
    #[error("{what} failed: the Kubernetes API could not be reached: {detail}")]
    Unreachable { what: String, detail: String },
    #[error("cannot apply the JSON patch to {object}: {detail}")]
    JsonPatch { object: String, detail: String },
    #[error("{object} already has {field} `{key}` = `{current}`; not changing it to `{wanted}`")]
    WouldOverwrite {
        object: String,
        field: &'static str,
        key: String,
        current: String,
        wanted: String,
    },
    #[error("{target} did not roll out within {timeout}: {last}")]
    RolloutTimeout {
        target: String,
        timeout: String,
        last: String,
    },
    #[error("invalid ready count `{0}`: expected `N/M`, e.g. `2/2`")]
    InvalidReadyCount(String),
    #[error("the manifest has no DaemonSet `{name}` to roll node by node (`--canary`)")]
    HeldDaemonSetMissing { name: String },
    #[error("the update strategy recorded on {object} cannot be read: {detail}")]
    DamagedStrategy { object: String, detail: String },
    #[error("cannot save the live objects to `{}` before applying", path.display())]
    SavePrevious {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Hint for KubeActionError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            KubeActionError::Refused { code: 409, message, .. } if message.contains("conflict with") => {
                "another field manager owns these fields: set `force_conflicts: true` on the step if netctl should take them over".into()
            }
            KubeActionError::Refused { code: 409, .. } => {
                "the object changed while netctl worked on it; run the step again".into()
            }
            KubeActionError::Refused { code: 403, .. } => {
                "ask a cluster administrator for RBAC access (see `kubectl auth can-i`)".into()
            }
            KubeActionError::Refused { code: 404, .. } => {
                "check the kind, namespace and name (and that the CRD of the kind is installed)".into()
            }
            KubeActionError::Unreachable { .. } => {
                "check that the cluster is up and that KUBECONFIG (or `--context`) names its API server".into()
            }
            KubeActionError::UnknownType { .. } => {
                "install the CRD that defines the kind first (apply CRDs in an earlier step)".into()
            }
            KubeActionError::WouldOverwrite { .. } => {
                "set `overwrite: true` on the step to replace existing values".into()
            }
            KubeActionError::RolloutTimeout { .. } => {
                "look at the pods (`kubectl get pods`, `kubectl describe`), then resume the run or raise `timeout`".into()
            }
            KubeActionError::HeldDaemonSetMissing { .. } => {
                "plan again without `--canary`, or check that `upgrade.yaml` still holds the node agent's DaemonSet".into()
            }
            KubeActionError::DamagedStrategy { .. } => {
                "set `spec.updateStrategy` by hand (`kubectl edit daemonset`), remove the annotation, then resume".into()
            }
            KubeActionError::SavePrevious { .. } => {
                "nothing was applied; check the state directory's permissions and free space, then resume the run".into()
            }
            _ => return None,
        })
    }
}

/// Turns a client error into one that names what was being done.
pub(super) fn request_error(what: String, error: kube::Error) -> KubeActionError {
    match error {
        kube::Error::Api(status) => KubeActionError::Refused {
            what,
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        },
        other => KubeActionError::Unreachable {
            what,
            detail: crate::errors::error_chain(&other),
        },
    }
}

/// The API resource (plural, scope) of `apiVersion`/`kind`, from the API server's discovery.
pub(crate) async fn resolve(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
) -> Result<(ApiResource, bool), KubeActionError> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    match kube::discovery::pinned_kind(client, &gvk).await {
        Ok((resource, capabilities)) => Ok((resource, capabilities.scope == Scope::Namespaced)),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(KubeActionError::UnknownType {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        }),
        Err(kube::Error::Discovery(_)) => Err(KubeActionError::UnknownType {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        }),
        Err(error) => Err(request_error(
            format!("discovery of `{kind}` in `{api_version}`"),
            error,
        )),
    }
}

/// The API of one type, for an object in `namespace` (namespaced types) or cluster-wide.
fn api_for(
    client: &kube::Client,
    resource: &ApiResource,
    namespaced: bool,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match (namespaced, namespace) {
        (true, Some(namespace)) => Api::namespaced_with(client.clone(), namespace, resource),
        (true, None) => Api::default_namespaced_with(client.clone(), resource),
        (false, _) => Api::all_with(client.clone(), resource),
    }
}

pub(super) async fn object_api(
    client: &kube::Client,
    object: &KubeObject,
) -> Result<Api<DynamicObject>, KubeActionError> {
    let (resource, namespaced) = resolve(client, &object.api_version, &object.kind).await?;
    Ok(api_for(
        client,
        &resource,
        namespaced,
        object.namespace.as_deref(),
    ))
}

/// What a dry-run with a cluster adds to a description: the server's verdict on each write.
pub(super) fn with_lines(mut outcome: Outcome, lines: Vec<String>) -> Outcome {
    outcome.transcript.extend(lines);
    outcome
}

pub(super) fn described(lines: Vec<String>) -> Outcome {
    Outcome {
        summary: lines.first().cloned().unwrap_or_default(),
        transcript: lines,
        output: None,
    }
}

pub(super) fn done(summary: String, output: Value) -> Outcome {
    Outcome {
        summary: summary.clone(),
        transcript: vec![summary],
        output: Some(output),
    }
}

/// One thing a `kube.*` action does to one Kubernetes type, and how (verbs): what the pre-flight
/// asks discovery and access reviews about (`exec/preflight/cluster_access.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiAccess {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    /// `None`: the whole collection (lists, deletes by selector).
    pub name: Option<String>,
    pub verbs: Vec<&'static str>,
}

impl ApiAccess {
    /// `verbs` on one object.
    fn object(object: &KubeObject, verbs: &[&'static str]) -> ApiAccess {
        ApiAccess {
            api_version: object.api_version.clone(),
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
            name: Some(object.name.clone()),
            verbs: verbs.to_vec(),
        }
    }

    /// `verbs` on a type in a namespace (or cluster-wide), or on one object of it by `name`.
    fn of_type(
        api_version: &str,
        kind: &str,
        namespace: Option<&String>,
        name: Option<&String>,
        verbs: &[&'static str],
    ) -> ApiAccess {
        ApiAccess {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.cloned(),
            name: name.cloned(),
            verbs: verbs.to_vec(),
        }
    }
}

/// The cluster `action` talks to, or why it cannot run.
fn cluster<'a>(context: &'a Context<'_>, action: &Action) -> Result<&'a kube::Client, StepError> {
    context
        .kubernetes
        .as_ref()
        .ok_or(StepError::KubernetesUnavailable {
            action: action.name(),
        })
}

/// Without a cluster, a dry-run describes the requests (`lines`) and a real run refuses before
/// sending anything.
fn without_cluster(
    action: &Action,
    mode: RunMode,
    lines: Vec<String>,
) -> Result<Outcome, StepError> {
    match mode {
        RunMode::DryRun => Ok(described(lines)),
        RunMode::Execute => Err(StepError::KubernetesUnavailable {
            action: action.name(),
        }),
    }
}
