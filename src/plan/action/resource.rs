//! The arguments of the `resource.*` actions — reads and writes of `projectcalico.org/v3`
//! resources through the datastore — with their checks and their one-line descriptions, written
//! as the matching `netctl` command line (`resource.label HostEndpoint h1 upgrade=yes`).
//!
//! What the actions do is `exec/actions/resource/`'s; this file only says what they are asked.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Arguments, HumanDuration, PatchType, namespace_flag, namespaced};
use crate::redaction::shell_quote;
use crate::resource::{Kind, Resource, ResourceKey};

/// One resource by kind and name (and namespace for namespaced kinds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceTarget {
    pub kind: Kind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl Arguments for ResourceTarget {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = namespaced(&self.namespace, &self.name);
        write!(out, "{name} {} {target}", self.kind)
    }
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

impl Arguments for ResourceDeletion {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let targets: Vec<String> = self
            .targets
            .iter()
            .map(|target| {
                let shown = namespaced(&target.namespace, &target.name);
                format!("{} {shown}", target.kind)
            })
            .collect();
        write!(out, "{name} {}", targets.join(", "))
    }

    fn writes_resources_in_batches(&self) -> bool {
        true
    }

    fn written_resources(&self) -> Option<Vec<ResourceKey>> {
        let key = |target: &DeletionTarget| {
            ResourceKey::new(target.kind, target.namespace.clone(), &target.name)
        };
        Some(self.targets.iter().map(key).collect())
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

impl Arguments for ResourceList {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let namespace = namespace_flag(&self.namespace);
        write!(out, "{name} {}{namespace}", self.kind)?;
        selector_flag(out, self.selector.as_deref())
    }
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

impl Arguments for ResourceDocuments {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self
            .documents
            .iter()
            .map(|resource| resource.key().to_string())
            .collect();
        write!(out, "{name} {}", keys.join(", "))?;
        match &self.file {
            Some(file) => write!(out, " (from {file})"),
            None => Ok(()),
        }
    }

    fn writes_resources_in_batches(&self) -> bool {
        true
    }

    fn written_resources(&self) -> Option<Vec<ResourceKey>> {
        Some(self.documents.iter().map(Resource::key).collect())
    }
}

/// Reads the documents written in a runbook step of `resource.create`, `resource.apply` or
/// `resource.replace` as a file's documents are read (text in string fields, names matched
/// ignoring case), not by serde's exact rules. Other actions' arguments are left as they are.
pub(super) fn read_written_documents(
    name: &str,
    with: &mut serde_json::Value,
) -> Result<(), String> {
    if !matches!(
        name,
        "resource.create" | "resource.apply" | "resource.replace"
    ) {
        return Ok(());
    }
    let Some(documents) = with
        .get_mut("documents")
        .and_then(|value| value.as_array_mut())
    else {
        return Ok(());
    };
    for (index, document) in documents.iter_mut().enumerate() {
        let resource = crate::resource::resource_from_value(document.take())
            .map_err(|reason| format!("document {}: {reason}", index + 1))?;
        *document = serde_json::to_value(&resource).unwrap_or_default();
    }
    Ok(())
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

impl Arguments for ResourceLabel {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = namespaced(&self.namespace, &self.name);
        write!(out, "{name} {} {target}", self.kind)?;
        match &self.labels {
            Some(labels) => {
                for (key, value) in labels {
                    write!(out, " {}", shell_quote(&format!("{key}={value}")))?;
                }
                out.write_str(overwrite_flag(self.overwrite))
            }
            // Not a valid request (refused by `check`): nothing to show but the target.
            None if self.value.is_none() && !self.remove => Ok(()),
            None => write_label_change(
                out,
                &self.key,
                self.value.as_deref(),
                self.remove,
                self.overwrite,
            ),
        }
    }

    fn check(&self) -> Result<(), String> {
        let reason = match self {
            label if label.labels.is_some() => {
                if label.key.is_empty() && label.value.is_none() && !label.remove {
                    return Ok(());
                }
                "give either `labels` or one `key` with `value`/`remove`, not both"
            }
            label if label.key.is_empty() => {
                "give a `key` (with `value` or `remove: true`) or `labels`"
            }
            label if label.value.is_some() && label.remove => {
                "a label cannot be both set (`value`) and removed (`remove: true`)"
            }
            label if label.value.is_none() && !label.remove => {
                "give a `value` (may be empty) or `remove: true`"
            }
            _ => return Ok(()),
        };
        Err(reason.to_string())
    }

    fn written_resources(&self) -> Option<Vec<ResourceKey>> {
        let key = ResourceKey::new(self.kind, self.namespace.clone(), &self.name);
        Some(vec![key])
    }
}

/// One label change on many resources of a kind (see [`super::Action::ResourceLabelEach`]): the
/// same `key` and `value` (or `remove`) for every name, in the order of the `foreach` items.
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

impl Arguments for ResourceLabelEach {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} {}", self.kind)?;
        write_label_change(
            out,
            &self.key,
            self.value.as_deref(),
            self.remove,
            self.overwrite,
        )?;
        write!(
            out,
            "{} on {} resource(s): {}",
            namespace_flag(&self.namespace),
            self.names.len(),
            self.names_shown()
        )
    }

    fn check(&self) -> Result<(), String> {
        if self.names.is_empty() {
            return Err("`names` must name at least one resource".to_string());
        }
        self.label(self.names.first()).check()
    }

    fn written_resources(&self) -> Option<Vec<ResourceKey>> {
        let key = |name: &String| ResourceKey::new(self.kind, self.namespace.clone(), name);
        Some(self.names.iter().map(key).collect())
    }
}

/// ` KEY=VALUE [--overwrite]`, ` KEY --remove`, or ` KEY` alone: one label's change as `netctl
/// label` takes it.
fn write_label_change(
    out: &mut fmt::Formatter<'_>,
    key: &str,
    value: Option<&str>,
    remove: bool,
    overwrite: bool,
) -> fmt::Result {
    match value {
        _ if remove => write!(out, " {key} --remove"),
        Some(value) => write!(
            out,
            " {key}={}{}",
            shell_quote(value),
            overwrite_flag(overwrite)
        ),
        None => write!(out, " {key}"),
    }
}

fn overwrite_flag(overwrite: bool) -> &'static str {
    if overwrite { " --overwrite" } else { "" }
}

/// ` -l SELECTOR` when there is one.
pub(super) fn selector_flag(out: &mut fmt::Formatter<'_>, selector: Option<&str>) -> fmt::Result {
    match selector {
        Some(selector) => write!(out, " -l {}", shell_quote(selector)),
        None => Ok(()),
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

impl Arguments for ResourceWait {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let namespace = namespace_flag(&self.namespace);
        write!(out, "{name} {}{namespace}", self.kind)?;
        for object in &self.names {
            write!(out, " {object}")?;
        }
        selector_flag(out, self.selector.as_deref())?;
        write!(out, " timeout={}", self.timeout)
    }

    fn check(&self) -> Result<(), String> {
        match &self.selector {
            None if self.names.is_empty() => Err("give `names`, a `selector`, or both".to_string()),
            None => Ok(()),
            Some(selector) => crate::resource::selector::Selector::parse(selector)
                .map(|_| ())
                .map_err(|error| format!("`selector` is not valid: {error}")),
        }
    }
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

impl Arguments for ResourcePatch {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "{name} {} {} --type={} {}",
            self.kind,
            namespaced(&self.namespace, &self.name),
            self.patch_type,
            shell_quote(&self.patch.to_string())
        )
    }

    fn written_resources(&self) -> Option<Vec<ResourceKey>> {
        let key = ResourceKey::new(self.kind, self.namespace.clone(), &self.name);
        Some(vec![key])
    }
}
