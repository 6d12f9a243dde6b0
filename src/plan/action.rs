//! The closed set of actions a plan step can take, fully rendered and typed.
//!
//! A runbook names an action (`action: resource.label`) and gives its arguments as a `with:` map of
//! templated strings; after rendering, the planner converts that pair into one [`Action`] value here, so
//! unknown actions and bad arguments are refused at plan time with the step id, never half way through
//! a maintenance window. The executor matches on [`Action`] exhaustively (dry-run is total). This module
//! only describes actions; it performs none of them.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::node::{ContainerCommand, HostPreparation, LocatedEngine};
use crate::resource::{API_VERSION, Kind, Resource};
pub use crate::vocabulary::HumanDuration;

/// One fully rendered action. Serialised as `{action: <name>, with: {...}}`, the same shape as a runbook
/// step, so a saved plan reads like the runbook it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "with")]
pub enum Action {
    /// Read one resource (used as a postcondition: the resource exists).
    #[serde(rename = "resource.get")]
    ResourceGet(ResourceTarget),
    /// List resources of a kind, optionally filtered by a label selector.
    #[serde(rename = "resource.list")]
    ResourceList(ResourceList),
    #[serde(rename = "resource.create")]
    ResourceCreate(ResourceDocuments),
    #[serde(rename = "resource.apply")]
    ResourceApply(ResourceDocuments),
    #[serde(rename = "resource.replace")]
    ResourceReplace(ResourceDocuments),
    /// Delete resources, all or none.
    #[serde(rename = "resource.delete")]
    ResourceDelete(ResourceDeletion),
    #[serde(rename = "resource.label")]
    ResourceLabel(ResourceLabel),
    /// One label set on (or removed from) many resources of a kind: what the planner makes of a
    /// `foreach` step of `resource.label` whose items differ only in the resource's name. Not
    /// written in runbooks; the executor labels the resources in batched transactions and records
    /// after each batch how many are done (per-item resume).
    #[serde(rename = "resource.label-each")]
    ResourceLabelEach(ResourceLabelEach),
    #[serde(rename = "resource.patch")]
    ResourcePatch(ResourcePatch),
    /// Wait until named resources exist (and match a selector), or until a selector matches any.
    #[serde(rename = "resource.wait")]
    ResourceWait(ResourceWait),
    /// Apply a Kubernetes manifest (server-side apply when asked).
    #[serde(rename = "kube.apply")]
    KubeApply(KubeApply),
    #[serde(rename = "kube.patch")]
    KubePatch(KubePatch),
    #[serde(rename = "kube.annotate")]
    KubeAnnotate(KubeMetadataChange),
    #[serde(rename = "kube.label")]
    KubeLabel(KubeMetadataChange),
    /// List Kubernetes objects of one kind by namespace and label selector; reads only (also a
    /// postcondition: some object matches).
    #[serde(rename = "kube.list")]
    KubeList(KubeList),
    /// Delete Kubernetes objects of one kind selected by labels.
    #[serde(rename = "kube.delete")]
    KubeDelete(KubeDelete),
    /// Wait until a workload has rolled out and shows the expected readiness.
    #[serde(rename = "kube.wait-rollout")]
    KubeWaitRollout(KubeWaitRollout),
    /// Add back an OwnerReference to a `projectcalico.org/v3` owner, with the UID the owner has when
    /// the step runs (the upgrade changes it, so a plan cannot carry it).
    #[serde(rename = "kube.restore-owner-reference")]
    KubeRestoreOwnerReference(KubeRestoreOwnerReference),
    /// Restart a workload's pods the way `kubectl rollout restart` does.
    #[serde(rename = "kube.restart")]
    KubeRestart(KubeRestart),
    /// Download a URL to a file (`file://` URLs and a local mirror directory serve air-gapped sites).
    #[serde(rename = "fetch")]
    Fetch(Fetch),
    /// Run `helm` with exactly these arguments.
    #[serde(rename = "helm")]
    Helm(Helm),
    /// Run a program with exactly this argv (no shell unless the argv names one); never run in dry-run.
    #[serde(rename = "exec")]
    Exec(Exec),
    /// Assert a fact about the cluster, e.g. the Cluster Version after the upgrade.
    #[serde(rename = "check")]
    Check(Check),
    /// A human gate: stop and wait for the operator to confirm.
    #[serde(rename = "pause")]
    Pause(Pause),
    /// Start the node agent container. Built by `netctl node run` only: not a runbook action, and
    /// never read back from a plan file (its private files are not written into one).
    #[serde(rename = "node.run")]
    NodeRun(NodeRun),
    /// Ask nodes' calico-node for their BGP status: one temporary CalicoNodeStatus per node,
    /// created, waited on until filled in (bounded), and deleted again, also after a timeout or a
    /// signal. Built by `netctl node status --node/--all` only: not a runbook action.
    #[serde(rename = "node.status")]
    NodeStatus(NodeStatusQuery),
}

impl Action {
    /// Every action name a runbook may use, in documentation order.
    pub const NAMES: [&'static str; 23] = crate::vocabulary::RUNBOOK_ACTIONS;

    /// The name this action has in runbooks and plans, e.g. `resource.label`.
    pub fn name(&self) -> &'static str {
        match self {
            Action::ResourceGet(_) => "resource.get",
            Action::ResourceList(_) => "resource.list",
            Action::ResourceCreate(_) => "resource.create",
            Action::ResourceApply(_) => "resource.apply",
            Action::ResourceReplace(_) => "resource.replace",
            Action::ResourceDelete(_) => "resource.delete",
            Action::ResourceLabel(_) => "resource.label",
            Action::ResourceLabelEach(_) => "resource.label-each",
            Action::ResourcePatch(_) => "resource.patch",
            Action::ResourceWait(_) => "resource.wait",
            Action::KubeApply(_) => "kube.apply",
            Action::KubePatch(_) => "kube.patch",
            Action::KubeAnnotate(_) => "kube.annotate",
            Action::KubeLabel(_) => "kube.label",
            Action::KubeList(_) => "kube.list",
            Action::KubeDelete(_) => "kube.delete",
            Action::KubeWaitRollout(_) => "kube.wait-rollout",
            Action::KubeRestoreOwnerReference(_) => "kube.restore-owner-reference",
            Action::KubeRestart(_) => "kube.restart",
            Action::Fetch(_) => "fetch",
            Action::Helm(_) => "helm",
            Action::Exec(_) => "exec",
            Action::Check(_) => "check",
            Action::Pause(_) => "pause",
            Action::NodeRun(_) => "node.run",
            Action::NodeStatus(_) => "node.status",
        }
    }

    /// Whether the action writes resources of the datastore in batches (create, apply, replace,
    /// delete): those stop between two batches on a signal and undo what they wrote.
    pub fn writes_many_resources(&self) -> bool {
        matches!(
            self,
            Action::ResourceCreate(_)
                | Action::ResourceApply(_)
                | Action::ResourceReplace(_)
                | Action::ResourceDelete(_)
        )
    }

    /// Whether the action catches Ctrl-C and SIGTERM to stop at a safe point and undo (one-step
    /// commands): the batched resource writes, and `node.status`, which deletes what it created.
    pub fn stops_on_signal(&self) -> bool {
        self.writes_many_resources() || matches!(self, Action::NodeStatus(_))
    }

    /// Replaces the secrets of a program's command line and environment by the one rule
    /// (`redaction.rs`): what a plan keeps, shows and stores holds none.
    pub fn redact_secrets(&mut self) {
        match self {
            Action::Exec(exec) => {
                exec.command = crate::redaction::redact_argv(&exec.command);
                exec.env = crate::redaction::redact_env(&exec.env);
            }
            Action::Helm(helm) => helm.args = crate::redaction::redact_argv(&helm.args),
            _ => {}
        }
    }

    /// The option of a program's command line that carries a secret (`--password`, `token=`).
    pub fn secret_on_command_line(&self) -> Option<String> {
        match self {
            Action::Exec(exec) => crate::redaction::secret_in_argv(&exec.command),
            Action::Helm(helm) => crate::redaction::secret_in_argv(&helm.args),
            _ => None,
        }
    }

    /// The environment variables a program takes from netctl's own environment: those whose
    /// values the plan does not keep.
    pub fn inherited_secrets(&self) -> impl Iterator<Item = &str> {
        let env = match self {
            Action::Exec(exec) => Some(&exec.env),
            _ => None,
        };
        env.into_iter()
            .flatten()
            .filter(|(_, value)| *value == crate::redaction::REDACTED)
            .map(|(name, _)| name.as_str())
    }

    /// Whether the action changes nothing (reads, checks, waits and human gates).
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            Action::ResourceGet(_)
                | Action::ResourceList(_)
                | Action::ResourceWait(_)
                | Action::KubeList(_)
                | Action::KubeWaitRollout(_)
                | Action::Check(_)
                | Action::Pause(_)
        )
    }

    /// Builds an action from its runbook name and rendered `with:` arguments.
    ///
    /// The arguments must already be rendered; files named by `resource.*` actions must already have
    /// been loaded into `documents` by the caller (see `runbook::instantiate`).
    pub fn from_parts(name: &str, with: serde_json::Value) -> Result<Action, ActionError> {
        if !Action::NAMES.contains(&name) {
            return Err(ActionError::Unknown {
                name: name.to_string(),
            });
        }
        let mut with = match with {
            serde_json::Value::Null => serde_json::Value::Object(serde_json::Map::new()),
            other => other,
        };
        // Documents written in a runbook are read as a file's documents are (text in string
        // fields, names matched ignoring case), not by serde's exact rules.
        let writes_documents = matches!(
            name,
            "resource.create" | "resource.apply" | "resource.replace"
        );
        if let (true, Some(documents)) = (
            writes_documents,
            with.get_mut("documents")
                .and_then(|value| value.as_array_mut()),
        ) {
            for (index, document) in documents.iter_mut().enumerate() {
                let resource =
                    crate::resource::resource_from_value(document.take()).map_err(|reason| {
                        ActionError::Invalid {
                            name: name.to_string(),
                            reason: format!("document {}: {reason}", index + 1),
                        }
                    })?;
                *document = serde_json::to_value(&resource).unwrap_or_default();
            }
        }
        let tagged = serde_json::json!({ "action": name, "with": with });
        let action: Action =
            serde_json::from_value(tagged).map_err(|source| ActionError::InvalidArguments {
                name: name.to_string(),
                source,
            })?;
        action.validate()?;
        Ok(action)
    }

    /// Checks the rules serde cannot express (exactly one of two fields, non-empty argv).
    fn validate(&self) -> Result<(), ActionError> {
        let invalid = |reason: &str| ActionError::Invalid {
            name: self.name().to_string(),
            reason: reason.to_string(),
        };
        match self {
            Action::Check(check) if !super::facts::FACT_NAMES.contains(&check.fact.as_str()) => {
                Err(invalid(&format!(
                    "unknown fact `{}`; known facts are {}",
                    check.fact,
                    super::facts::FACT_NAMES.join(", ")
                )))
            }
            Action::Check(check) => match (&check.equals, &check.matches) {
                (Some(_), None) => Ok(()),
                (None, Some(pattern)) => regex::Regex::new(pattern)
                    .map(|_| ())
                    .map_err(|error| invalid(&format!("`matches` is not a valid regex: {error}"))),
                _ => Err(invalid("give exactly one of `equals` and `matches`")),
            },
            Action::Exec(exec) if exec.command.is_empty() => {
                Err(invalid("`command` must name a program"))
            }
            Action::Helm(helm) if helm.args.is_empty() => Err(invalid("`args` must not be empty")),
            Action::ResourceLabel(label) if label.labels.is_some() => {
                if !label.key.is_empty() || label.value.is_some() || label.remove {
                    Err(invalid(
                        "give either `labels` or one `key` with `value`/`remove`, not both",
                    ))
                } else {
                    Ok(())
                }
            }
            Action::ResourceLabel(label) if label.key.is_empty() => Err(invalid(
                "give a `key` (with `value` or `remove: true`) or `labels`",
            )),
            Action::ResourceLabel(label) if label.value.is_some() && label.remove => Err(invalid(
                "a label cannot be both set (`value`) and removed (`remove: true`)",
            )),
            Action::ResourceLabel(label) if label.value.is_none() && !label.remove => {
                Err(invalid("give a `value` (may be empty) or `remove: true`"))
            }
            Action::ResourceLabelEach(each) if each.names.is_empty() => {
                Err(invalid("`names` must name at least one resource"))
            }
            Action::ResourceLabelEach(each) => {
                Action::ResourceLabel(each.label(each.names.first())).validate()
            }
            Action::KubeWaitRollout(wait) if wait.name.is_none() && wait.selector.is_none() => {
                Err(invalid("give a `name` or a `selector`"))
            }
            Action::KubeRestoreOwnerReference(restore)
                if restore.owner.api_version != API_VERSION =>
            {
                Err(invalid(&format!(
                    "`owner.api_version` must be `{API_VERSION}`: only the owners whose UIDs the upgrade changes are restored (got `{}`)",
                    restore.owner.api_version
                )))
            }
            Action::Fetch(Fetch {
                sha256: Some(digest),
                ..
            }) if !is_sha256_digest(digest) => Err(invalid(&format!(
                "`sha256` must be `sha256:` and 64 lowercase hex digits (got `{digest}`)"
            ))),
            Action::Fetch(fetch) => fetch
                .overlay
                .iter()
                .enumerate()
                .try_for_each(|(index, document)| {
                    super::overlay::check_document(document, "overlay", index + 1)
                })
                .map_err(|error| invalid(&error.to_string())),
            Action::ResourceWait(wait) if wait.names.is_empty() && wait.selector.is_none() => {
                Err(invalid("give `names`, a `selector`, or both"))
            }
            Action::ResourceWait(wait) => match &wait.selector {
                Some(selector) => crate::resource::selector::Selector::parse(selector)
                    .map(|_| ())
                    .map_err(|error| invalid(&format!("`selector` is not valid: {error}"))),
                None => Ok(()),
            },
            Action::KubeRestart(restart)
                if !["Deployment", "DaemonSet", "StatefulSet"].contains(&restart.kind.as_str()) =>
            {
                Err(invalid(&format!(
                    "`kind` must be `Deployment`, `DaemonSet` or `StatefulSet`, got `{}`",
                    restart.kind
                )))
            }
            // An empty `selector` is refused when it is read (`LabelSelector::new`): deleting every
            // object of a kind is never planned.
            _ => Ok(()),
        }
    }
}

/// Why a runbook step's action could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("unknown action `{name}`")]
    Unknown { name: String },
    #[error("invalid arguments for action `{name}`")]
    InvalidArguments {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid arguments for action `{name}`: {reason}")]
    Invalid { name: String, reason: String },
}

/// One resource by kind and name (and namespace for namespaced kinds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceTarget {
    pub kind: Kind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Resources to delete, all or none: a runbook names one (`kind`, `name`, `namespace`), a command
/// may name several (`targets`). A `resourceVersion` makes a delete conditional on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "DeletionArguments", into = "DeletionArguments")]
pub struct ResourceDeletion {
    pub targets: Vec<DeletionTarget>,
}

impl ResourceDeletion {
    /// One resource, unconditionally.
    pub fn one(kind: Kind, name: impl Into<String>, namespace: Option<String>) -> ResourceDeletion {
        ResourceDeletion {
            targets: vec![DeletionTarget {
                kind,
                name: name.into(),
                namespace,
                resource_version: None,
            }],
        }
    }
}

/// One resource to delete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeletionTarget {
    pub kind: Kind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Delete only while the stored revision is this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// How a deletion is written: one target's fields inline (as runbooks and plans always had it), or
/// `targets`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DeletionArguments {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<Kind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    targets: Vec<DeletionTarget>,
}

impl TryFrom<DeletionArguments> for ResourceDeletion {
    type Error = String;

    fn try_from(arguments: DeletionArguments) -> Result<ResourceDeletion, String> {
        let DeletionArguments {
            kind,
            name,
            namespace,
            resource_version,
            targets,
        } = arguments;
        match (kind, name, targets.is_empty()) {
            (Some(kind), Some(name), true) => Ok(ResourceDeletion {
                targets: vec![DeletionTarget {
                    kind,
                    name,
                    namespace,
                    resource_version,
                }],
            }),
            (None, None, false) if namespace.is_none() && resource_version.is_none() => {
                Ok(ResourceDeletion { targets })
            }
            _ => Err(
                "give `kind` and `name` (and `namespace` for a namespaced kind), or `targets`"
                    .into(),
            ),
        }
    }
}

impl From<ResourceDeletion> for DeletionArguments {
    fn from(deletion: ResourceDeletion) -> DeletionArguments {
        match <[DeletionTarget; 1]>::try_from(deletion.targets) {
            Ok([one]) => DeletionArguments {
                kind: Some(one.kind),
                name: Some(one.name),
                namespace: one.namespace,
                resource_version: one.resource_version,
                targets: Vec::new(),
            },
            Err(targets) => DeletionArguments {
                targets,
                ..DeletionArguments::default()
            },
        }
    }
}

/// Resources of one kind, optionally in one namespace and filtered by a selector expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceList {
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// Resource documents to create, apply or replace. A runbook may name a `file` beside it; the planner
/// loads and renders it, so a plan always carries the documents themselves and `file` only says where
/// they came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceDocuments {
    #[serde(default)]
    pub documents: Vec<Resource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The release the command that loaded the documents already validated and defaulted them
    /// for: the write does not do it again for the same release. Never part of a stored plan.
    #[serde(skip)]
    pub validated_for: Option<crate::release::Release>,
}

/// Set (`value`, which may be empty) or remove (`remove: true`) one label, or set several at once
/// (`labels`, all or none: without `overwrite` a key that has another value refuses the whole write).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceLabel {
    pub kind: Kind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Several labels at once, instead of `key`/`value` (may be empty: then only the resource's
    /// existence is checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default)]
    pub overwrite: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remove: bool,
}

/// One label change on many resources of a kind (see [`Action::ResourceLabelEach`]): the same
/// `key` and `value` (or `remove`) for every name, in the order of the `foreach` items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceLabelEach {
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default)]
    pub overwrite: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remove: bool,
    pub names: Vec<String>,
}

impl ResourceLabelEach {
    /// The one-resource label request for `name` (an empty name when `None`).
    pub fn label(&self, name: Option<&String>) -> ResourceLabel {
        ResourceLabel {
            kind: self.kind,
            name: name.cloned().unwrap_or_default(),
            namespace: self.namespace.clone(),
            key: self.key.clone(),
            labels: None,
            value: self.value.clone(),
            overwrite: self.overwrite,
            remove: self.remove,
        }
    }

    /// The requests of `labels` as one, when they differ only in the resource's name and each sets
    /// or removes one `key` (a `labels` map may differ per item: those stay one step each).
    pub fn fold(labels: &[&ResourceLabel]) -> Option<ResourceLabelEach> {
        let first = labels.first()?;
        if first.labels.is_some() {
            return None;
        }
        let each = ResourceLabelEach {
            kind: first.kind,
            namespace: first.namespace.clone(),
            key: first.key.clone(),
            value: first.value.clone(),
            overwrite: first.overwrite,
            remove: first.remove,
            names: labels.iter().map(|label| label.name.clone()).collect(),
        };
        let alike = labels
            .iter()
            .all(|label| **label == each.label(Some(&label.name)));
        alike.then_some(each)
    }

    /// The first [`NAMES_SHOWN`] names and how many more, e.g. `h1, h2, h3, h4, h5 and 9995 more`:
    /// how plans show a long list of items in one line.
    pub fn names_shown(&self) -> String {
        compact_list(&self.names)
    }
}

/// How many items a plan shows of a long list before `and N more`.
pub const NAMES_SHOWN: usize = 5;

/// The first [`NAMES_SHOWN`] of `items` and how many more.
pub fn compact_list(items: &[String]) -> String {
    let shown = items[..items.len().min(NAMES_SHOWN)].join(", ");
    match items.len().saturating_sub(NAMES_SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// The two patch formats: RFC 7386 merge patch and RFC 6902 JSON patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    #[default]
    Merge,
    Json,
}

impl fmt::Display for PatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PatchType::Merge => "merge",
            PatchType::Json => "json",
        })
    }
}

/// Wait until every resource in `names` exists (and matches `selector` when one is given), or, with
/// a `selector` alone, until at least one resource of the kind matches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceWait {
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A selector in the resource selector language, e.g.
    /// `projectcalico.org/created-by == 'calico-kube-controllers'`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    #[serde(default = "default_resource_wait_timeout")]
    pub timeout: HumanDuration,
}

fn default_resource_wait_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(300))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourcePatch {
    pub kind: Kind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The patch document (an object for merge, an array of operations for json).
    pub patch: serde_json::Value,
    #[serde(default, rename = "type")]
    pub patch_type: PatchType,
}

/// Where a Kubernetes manifest comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum ManifestSource {
    /// Fetched at run time (through the mirror directory when one is configured).
    Url(String),
    /// A local file, usually one an earlier `fetch` step wrote.
    File(String),
    /// YAML text carried in the plan.
    Inline(String),
}

/// The field manager netctl uses for server-side apply unless a runbook names another.
pub const DEFAULT_FIELD_MANAGER: &str = "netctl";

fn default_field_manager() -> String {
    DEFAULT_FIELD_MANAGER.to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeApply {
    pub source: ManifestSource,
    #[serde(default)]
    pub server_side: bool,
    /// Take ownership of fields other managers own (`--force-conflicts`); only with `server_side`.
    #[serde(default)]
    pub force_conflicts: bool,
    #[serde(default = "default_field_manager")]
    pub field_manager: String,
    /// Before the first write, save the manifest's objects as they are live (without what the API
    /// server sets; never a Secret) to this file of the run's state directory, to go back with. A
    /// file already there is kept: it was saved before an earlier attempt changed anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_previous: Option<String>,
}

/// One Kubernetes object: `apiVersion`/`kind` as in its manifest, e.g. `apps/v1` `Deployment`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeObject {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl fmt::Display for KubeObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {}/{}", self.kind, namespace, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubePatch {
    pub object: KubeObject,
    pub patch: serde_json::Value,
    #[serde(default, rename = "type")]
    pub patch_type: PatchType,
}

/// Set or remove annotations (for `kube.annotate`) or labels (for `kube.label`); a `null` value
/// removes the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeMetadataChange {
    pub object: KubeObject,
    pub values: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub overwrite: bool,
}

/// Kubernetes objects of one kind, in one namespace (namespaced kinds; the kubeconfig's namespace
/// when absent, as for `kube.delete`) and matching a label selector when one is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeList {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The labels every listed object has, e.g. `{name: calico, owner: helm, status: deployed}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeDelete {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The labels every deleted object has, e.g. `{name: calico, owner: helm}`.
    pub selector: LabelSelector,
}

/// A Kubernetes label selector made of equality requirements only, written as a map
/// (`{name: calico, owner: helm}`) and rendered as `name=calico,owner=helm`. Each key must be a
/// qualified name and each value a label value, so no value — a fact pasted in by a template, say —
/// can add a requirement, an operator or a set (`x in (a),owner` is refused, not widened): the
/// selector's meaning is its structure. At least one label: an empty selector would match
/// everything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct LabelSelector(BTreeMap<String, String>);

impl LabelSelector {
    /// A selector requiring these labels; refused when a key or value could not be a label's.
    pub fn new(labels: BTreeMap<String, String>) -> Result<LabelSelector, String> {
        use crate::resource::validate::syntax::{check_label_value, check_qualified_name};
        if labels.is_empty() {
            return Err(
                "a label selector needs at least one label (an empty one matches every object)"
                    .to_string(),
            );
        }
        for (key, value) in &labels {
            check_qualified_name(key).map_err(|reason| format!("label `{key}`: {reason}"))?;
            check_label_value(value)
                .map_err(|reason| format!("value `{value}` of label `{key}`: {reason}"))?;
        }
        Ok(LabelSelector(labels))
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let requirements: Vec<String> = self
            .0
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        f.write_str(&requirements.join(","))
    }
}

impl<'de> Deserialize<'de> for LabelSelector {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Labels(BTreeMap<String, String>),
            Text(String),
        }
        match Written::deserialize(deserializer)? {
            Written::Labels(labels) => LabelSelector::new(labels).map_err(serde::de::Error::custom),
            Written::Text(text) => Err(serde::de::Error::custom(format!(
                "write the selector as labels (`{{name: value, ...}}`), not as the text `{text}`"
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeWaitRollout {
    pub namespace: String,
    /// `DaemonSet`, `Deployment` or `Pod`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Containers ready per pod, as `kubectl get pods` shows it, e.g. `2/2` (or `1/2` where expected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    #[serde(default = "default_rollout_timeout")]
    pub timeout: HumanDuration,
}

/// Re-add the OwnerReference from `object` to a `projectcalico.org/v3` resource. Everything but the
/// owner's UID is known when planning (from the `owner_references` fact); the UID is read through the
/// datastore when the step runs, so it is the one the upgrade gave the owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeRestoreOwnerReference {
    /// The owned object.
    pub object: KubeObject,
    pub owner: OwnerResource,
    /// The reference's `controller` flag as it was recorded (absent: not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// The reference's `blockOwnerDeletion` flag as it was recorded (absent: not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// The owner of a restored reference: a `projectcalico.org/v3` resource by kind and name. A namespaced
/// owner (a NetworkPolicy) is in the owned object's namespace, as Kubernetes requires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerResource {
    pub api_version: String,
    pub kind: Kind,
    pub name: String,
}

/// `kubectl rollout restart`: set the pod template's `kubectl.kubernetes.io/restartedAt` annotation.
///
/// The value is the time the run started (the checkpoint's `started_at`), not the time of the
/// request: a restart done before a crash is found done on resume (the annotation already has the
/// value) and is not repeated, while a new run restarts again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeRestart {
    pub namespace: String,
    /// `Deployment` (default), `DaemonSet` or `StatefulSet`, in `apps/v1`.
    #[serde(default = "default_restart_kind")]
    pub kind: String,
    pub name: String,
}

fn default_restart_kind() -> String {
    "Deployment".to_string()
}

fn default_rollout_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(600))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fetch {
    /// `https://`, `http://` or `file://`.
    pub url: String,
    /// Where to write the download, relative to the run's state directory.
    pub file: String,
    /// Manifest overlay documents applied to the download before it is written to `file` (the
    /// original is kept beside it as `<file>.original`); see [`super::overlay`]. Nested lists are
    /// flattened and `null` items dropped, so a runbook can list its own documents and add the
    /// user's with `- "{{ manifest_overlay }}"`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "flattened_documents"
    )]
    pub overlay: Vec<serde_json::Value>,
    /// The sha256 (`sha256:<hex>`) the download must have: the digest of the manifest reviewed at
    /// plan time (`upgrade plan` pins it when it reads the manifest for the overlay diff), so a file
    /// changed at its URL since the review is refused instead of applied. `None`: not pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The same manifest of the installed release. `upgrade plan` compares it with the objects it
    /// created in the cluster and the new manifest to find the operator's hand edits (see
    /// [`super::edit_discovery`]); the run itself never reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits_from: Option<String>,
}

/// Whether `digest` is written as netctl writes digests: `sha256:` and 64 lowercase hex digits.
pub fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn flattened_documents<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<serde_json::Value>, D::Error> {
    fn flatten(value: serde_json::Value, into: &mut Vec<serde_json::Value>) {
        match value {
            serde_json::Value::Array(items) => {
                items.into_iter().for_each(|item| flatten(item, into))
            }
            serde_json::Value::Null => {}
            other => into.push(other),
        }
    }
    let mut documents = Vec::new();
    flatten(
        serde_json::Value::deserialize(deserializer)?,
        &mut documents,
    );
    Ok(documents)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Helm {
    /// Arguments after `helm`, exactly.
    pub args: Vec<String>,
    #[serde(default = "default_command_timeout")]
    pub timeout: HumanDuration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exec {
    /// The argv; the first element is the program.
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default = "default_command_timeout")]
    pub timeout: HumanDuration,
}

fn default_command_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(60))
}

/// Assert a fact: its value equals `equals`, or its text matches the regex `matches`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub fact: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pause {
    pub message: String,
}

/// The node agent container to start: the exact engine command (with the private files it reads),
/// the engine, whether to prepare the host, and how long to wait for the agent's start line.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRun {
    pub command: ContainerCommand,
    pub engine: LocatedEngine,
    pub host: HostPreparation,
    pub startup_timeout: Duration,
}

/// For the plan's digest only: the command line and the private files' paths, never their
/// contents (inline certificates, credentials).
impl Serialize for NodeRun {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let private_files: Vec<String> = self
            .command
            .private_files
            .iter()
            .map(|file| file.path.display().to_string())
            .collect();
        serde_json::json!({
            "engine": self.engine.path.display().to_string(),
            "arguments": self.command.arguments,
            "private_files": private_files,
            "prepare_host": self.host == HostPreparation::Prepare,
            "startup_timeout": HumanDuration(self.startup_timeout),
        })
        .serialize(serializer)
    }
}

/// The nodes `node.status` asks, each through its own temporary CalicoNodeStatus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeStatusQuery {
    /// The query's id: part of each object's name and the value of its
    /// `netctl.projectcalico.org/node-status` label.
    pub id: String,
    pub nodes: Vec<NodeStatusTarget>,
    /// How long to wait for every node to answer.
    pub timeout: HumanDuration,
}

/// One node and the name of the object that asks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeStatusTarget {
    pub node: String,
    pub object: String,
}

impl<'de> Deserialize<'de> for NodeRun {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "`node.run` is made by `netctl node run` and is not read from plans",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_its_variant() {
        assert_eq!(
            Action::from_parts("pause", serde_json::json!({"message": "go?"}))
                .unwrap()
                .name(),
            "pause"
        );
        let label = Action::from_parts(
            "resource.label",
            serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "k", "value": ""}),
        )
        .unwrap();
        let text = serde_json::to_string(&label).unwrap();
        assert_eq!(
            text,
            r#"{"action":"resource.label","with":{"kind":"HostEndpoint","name":"h1","key":"k","value":"","overwrite":false}}"#
        );
        assert_eq!(serde_json::from_str::<Action>(&text).unwrap(), label);
    }

    #[test]
    fn unknown_actions_and_fields_are_refused() {
        assert_eq!(
            Action::from_parts("shell", serde_json::json!({}))
                .unwrap_err()
                .to_string(),
            "unknown action `shell`"
        );
        let error = Action::from_parts(
            "pause",
            serde_json::json!({"message": "x", "colour": "red"}),
        )
        .unwrap_err();
        assert!(matches!(error, ActionError::InvalidArguments { .. }));
        let error =
            Action::from_parts("check", serde_json::json!({"fact": "alp_enabled"})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid arguments for action `check`: give exactly one of `equals` and `matches`"
        );
    }

    #[test]
    fn an_owner_reference_is_restored_only_to_a_known_v3_owner() {
        let with = |api_version: &str, kind: &str| {
            serde_json::json!({
                "object": {"api_version": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n"},
                "owner": {"api_version": api_version, "kind": kind, "name": "t"},
                "controller": true,
                "block_owner_deletion": null
            })
        };
        let action = Action::from_parts(
            "kube.restore-owner-reference",
            with("projectcalico.org/v3", "Tier"),
        )
        .unwrap();
        assert!(matches!(
            action,
            Action::KubeRestoreOwnerReference(KubeRestoreOwnerReference {
                controller: Some(true),
                block_owner_deletion: None,
                ..
            })
        ));
        let error = Action::from_parts("kube.restore-owner-reference", with("apps/v1", "Tier"))
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`owner.api_version` must be `projectcalico.org/v3`"),
            "{error}"
        );
        assert!(
            Action::from_parts(
                "kube.restore-owner-reference",
                with("projectcalico.org/v3", "Deployment")
            )
            .is_err()
        );
    }

    #[test]
    fn waits_restarts_and_label_maps_are_checked_at_plan_time() {
        let invalid = |name: &str, with: serde_json::Value| {
            Action::from_parts(name, with).unwrap_err().to_string()
        };
        assert_eq!(
            invalid("resource.wait", serde_json::json!({"kind": "HostEndpoint"})),
            "invalid arguments for action `resource.wait`: give `names`, a `selector`, or both"
        );
        assert!(
            invalid(
                "resource.wait",
                serde_json::json!({"kind": "HostEndpoint", "selector": "a =="})
            )
            .starts_with("invalid arguments for action `resource.wait`: `selector` is not valid")
        );
        assert_eq!(
            invalid(
                "kube.restart",
                serde_json::json!({"namespace": "n", "kind": "Pod", "name": "p"})
            ),
            "invalid arguments for action `kube.restart`: `kind` must be `Deployment`, `DaemonSet` or `StatefulSet`, got `Pod`"
        );
        assert_eq!(
            invalid(
                "resource.label",
                serde_json::json!({"kind": "Node", "name": "n", "key": "k", "value": "v", "labels": {}})
            ),
            "invalid arguments for action `resource.label`: give either `labels` or one `key` with `value`/`remove`, not both"
        );
        let restart = Action::from_parts(
            "kube.restart",
            serde_json::json!({"namespace": "n", "name": "d"}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&restart).unwrap(),
            serde_json::json!({"action": "kube.restart",
                               "with": {"namespace": "n", "kind": "Deployment", "name": "d"}})
        );
    }

    #[test]
    fn durations_read_and_print_the_human_way() {
        let exec: Exec =
            serde_json::from_value(serde_json::json!({"command": ["true"], "timeout": "2m"}))
                .unwrap();
        assert_eq!(exec.timeout.0, Duration::from_secs(120));
        assert_eq!(
            serde_json::to_value(exec.timeout).unwrap(),
            serde_json::json!("2m")
        );
    }

    #[test]
    fn documents_written_in_a_runbook_are_read_as_a_files_documents() {
        let with = serde_json::json!({"documents": [{
            "apiVersion": "projectcalico.org/v3", "kind": "Tier",
            "metadata": {"name": "t", "labels": {"reflector": true}},
            "spec": {"Order": 5}
        }]});
        let Action::ResourceApply(documents) = Action::from_parts("resource.apply", with).unwrap()
        else {
            panic!("not a resource.apply");
        };
        let tier = &documents.documents[0];
        assert_eq!(tier.metadata.labels["reflector"], "true");
        assert_eq!(tier.spec["order"], 5);
    }
}
