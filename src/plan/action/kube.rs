//! The arguments of the `kube.*` actions — requests to the Kubernetes API — with their checks and
//! their one-line descriptions, written like the matching `kubectl` command line (`kube.label v1
//! Namespace calico-system name=calico-system`).
//!
//! What the actions do, and the requests they send, are `exec/actions/kube/`'s; this file only says
//! what they are asked.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use super::resource::selector_flag;
use super::{Arguments, HumanDuration, PatchType, namespace_flag};
use crate::redaction::shell_quote;
use crate::resource::{API_VERSION, Kind};

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
    /// server sets; never a Secret) to this file of the run's state directory — under
    /// [`previous_file_of_run`], so every run keeps its own —, to go back with. A file already there
    /// is kept: it was saved before an earlier attempt of the run changed anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_previous: Option<String>,
    /// The canary rollout (`--canary`): this DaemonSet of the manifest is applied with
    /// `updateStrategy: OnDelete`, the manifest's own strategy kept on it as the annotation
    /// [`UPDATE_STRATEGY_ANNOTATION`], so no pod is replaced until `kube.replace-pods` deletes it
    /// and `kube.restore-update-strategy` puts the strategy back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_daemon_set: Option<String>,
    /// Going back with a file `save_previous` wrote: after applying it, delete the objects its
    /// header lists as not live before (the ones the forward apply created).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete_not_live_before: bool,
}

/// Where a run keeps the `save_previous` file `file` among the downloaded files:
/// `runs/<run id>/<file>`. A rollback of that run re-applies its own copy, however many runs the
/// state directory saw since.
pub fn previous_file_of_run(file: &str, run_id: &str) -> String {
    format!("runs/{run_id}/{file}")
}

/// Where the canary apply keeps a held DaemonSet's own update strategy (JSON; `{}` when the
/// manifest gave none): what `kube.restore-update-strategy` puts back.
pub const UPDATE_STRATEGY_ANNOTATION: &str = "netctl.projectcalico.org/update-strategy";

/// `kube.replace-pods`: a DaemonSet's pods replaced node by node — each deleted, then waited for
/// until the controller's new pod on that node is Ready with the pod template's images.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeReplacePods {
    pub namespace: String,
    pub daemon_set: String,
    /// The nodes, in this order; empty: every node whose pod is not at the template yet (the rest
    /// after the canaries), by node name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// How long each node's new pod may take to be Ready.
    #[serde(default = "default_rollout_timeout")]
    pub timeout: HumanDuration,
}

/// `kube.restore-update-strategy`: the strategy recorded in [`UPDATE_STRATEGY_ANNOTATION`] back
/// on the DaemonSet, the annotation removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeRestoreUpdateStrategy {
    pub namespace: String,
    pub daemon_set: String,
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

impl KubeObject {
    /// The object a manifest document is: its `apiVersion`, `kind`, `metadata.name` and
    /// `metadata.namespace` (empty where the document has none).
    pub fn of_document(document: &serde_json::Value) -> KubeObject {
        let field = |pointer: &str| {
            document
                .pointer(pointer)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        };
        KubeObject {
            api_version: field("/apiVersion").unwrap_or_default(),
            kind: field("/kind").unwrap_or_default(),
            name: field("/metadata/name").unwrap_or_default(),
            namespace: field("/metadata/namespace"),
        }
    }
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

impl Arguments for KubeApply {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str(name)?;
        if self.server_side {
            write!(out, " --server-side --field-manager={}", self.field_manager)?;
        }
        if self.force_conflicts {
            out.write_str(" --force-conflicts")?;
        }
        match &self.source {
            ManifestSource::Url(url) => write!(out, " -f {url}")?,
            ManifestSource::File(file) => write!(out, " -f {file}")?,
            ManifestSource::Inline(inline) => {
                write!(out, " (inline manifest, {} bytes)", inline.len())?
            }
        }
        if let Some(previous) = &self.save_previous {
            write!(out, " (saving the live objects to {previous} first)")?;
        }
        if let Some(held) = &self.hold_daemon_set {
            write!(
                out,
                " (DaemonSet {held} with updateStrategy OnDelete: its pods are replaced node by node by the canary steps)"
            )?;
        }
        match self.delete_not_live_before {
            true => {
                out.write_str(" (then deleting the objects its header lists as not live before)")
            }
            false => Ok(()),
        }
    }

    fn may_add_types(&self) -> bool {
        true
    }

    fn may_roll_workloads(&self) -> bool {
        true
    }
}

impl Arguments for KubePatch {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} {} {} --type={} {}",
            self.object.api_version,
            self.object,
            self.patch_type,
            shell_quote(&self.patch.to_string())
        )
    }
}

impl Arguments for KubeMetadataChange {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values: Vec<String> = self
            .values
            .iter()
            .map(|(key, value)| match value {
                Some(value) => shell_quote(&format!("{key}={value}")),
                None => format!("{key}-"),
            })
            .collect();
        write!(
            out,
            "{name} {} {} {}{}",
            self.object.api_version,
            self.object,
            values.join(" "),
            if self.overwrite { " --overwrite" } else { "" }
        )
    }
}

impl Arguments for KubeList {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} {} {}", self.api_version, self.kind)?;
        out.write_str(&namespace_flag(&self.namespace))?;
        let selector = self.selector.as_ref().map(ToString::to_string);
        selector_flag(out, selector.as_deref())
    }
}

impl Arguments for KubeDelete {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} {} {}", self.api_version, self.kind)?;
        out.write_str(&namespace_flag(&self.namespace))?;
        selector_flag(out, Some(&self.selector.to_string()))
    }

    // An empty `selector` is refused when it is read (`LabelSelector::new`): deleting every
    // object of a kind is never planned.
}

impl Arguments for KubeWaitRollout {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} {} -n {}", self.kind, self.namespace)?;
        if let Some(object) = &self.name {
            write!(out, " {object}")?;
        }
        selector_flag(out, self.selector.as_deref())?;
        if let Some(ready) = &self.ready {
            write!(out, " ready={ready}")?;
        }
        write!(out, " timeout={}", self.timeout)
    }

    fn check(&self) -> Result<(), String> {
        match self.name.is_none() && self.selector.is_none() {
            true => Err("give a `name` or a `selector`".to_string()),
            false => Ok(()),
        }
    }
}

impl Arguments for KubeRestoreOwnerReference {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} {} {} owner={} {}/{} uid=<read when the step runs>",
            self.object.api_version,
            self.object,
            self.owner.api_version,
            self.owner.kind,
            self.owner.name
        )?;
        if let Some(controller) = self.controller {
            write!(out, " controller={controller}")?;
        }
        match self.block_owner_deletion {
            Some(block) => write!(out, " blockOwnerDeletion={block}"),
            None => Ok(()),
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.owner.api_version == API_VERSION {
            return Ok(());
        }
        Err(format!(
            "`owner.api_version` must be `{API_VERSION}`: only the owners whose UIDs the upgrade changes are restored (got `{}`)",
            self.owner.api_version
        ))
    }
}

impl Arguments for KubeRestart {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} {} -n {} {}",
            self.kind, self.namespace, self.name
        )
    }

    fn may_roll_workloads(&self) -> bool {
        true
    }

    fn check(&self) -> Result<(), String> {
        if ["Deployment", "DaemonSet", "StatefulSet"].contains(&self.kind.as_str()) {
            return Ok(());
        }
        Err(format!(
            "`kind` must be `Deployment`, `DaemonSet` or `StatefulSet`, got `{}`",
            self.kind
        ))
    }
}

impl Arguments for KubeReplacePods {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} DaemonSet -n {} {} nodes={} timeout={}",
            self.namespace,
            self.daemon_set,
            match self.nodes.is_empty() {
                true => "<every node not at the pod template yet>".to_string(),
                false => self.nodes.join(","),
            },
            self.timeout
        )
    }

    fn may_roll_workloads(&self) -> bool {
        true
    }
}

impl Arguments for KubeRestoreUpdateStrategy {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} DaemonSet -n {} {} (from annotation {UPDATE_STRATEGY_ANNOTATION})",
            self.namespace, self.daemon_set
        )
    }

    fn may_roll_workloads(&self) -> bool {
        true
    }
}
