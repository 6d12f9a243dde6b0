//! `kube.*` actions: requests to the Kubernetes API — server-side apply of manifests (CRDs first),
//! merge and JSON patches, annotations and labels, listing by label selector (a read, so also in a
//! dry-run, and a postcondition) and delete by label selector. Restarts and rollout waits are in
//! `rollout.rs`.
//!
//! Every action first describes the exact requests (method, path, content type, body size), so a
//! dry-run of a whole plan stays total even without a cluster. With a cluster, a dry-run also sends
//! the writes with `dryRun=All`, so the API server's admission, validation and field-ownership checks
//! are part of the rehearsal; reads are real. In execute mode the writes are sent for real. Errors say
//! which object and request failed, with the API server's own message.

use std::path::Path;

use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use serde_json::{Value, json};

mod requests;

pub use requests::{
    api_path, describe_apply, describe_delete, describe_list, describe_metadata, describe_patch,
    plural,
};
pub(super) use requests::{body_size, object_path};
use requests::{collection, listing};

use super::{Outcome, RunMode};
use crate::errors::Hint;
use crate::plan::action::{
    KubeApply, KubeDelete, KubeList, KubeMetadataChange, KubeObject, KubePatch, ManifestSource,
    PatchType,
};

/// Objects per list request of `kube.list`, so a large namespace is read in pages.
const LIST_PAGE_SIZE: u32 = 250;

/// Saves the objects of `documents` as they are live to `path` (the `save_previous` of
/// `kube.apply`), unless an earlier attempt did: what `kubectl apply` of that file needs to go back.
/// Secrets are never written (their data must not land in the state directory); objects not live
/// yet are listed in the header, to be deleted when going back. Returns what the step's summary
/// says of it.
async fn save_previous(
    client: &kube::Client,
    documents: &[Value],
    path: &Path,
    apply: &KubeApply,
) -> Result<String, KubeActionError> {
    let command = format!(
        "kubectl apply --server-side --force-conflicts --field-manager={} -f {}",
        apply.field_manager,
        path.display()
    );
    if path.exists() {
        return Ok(format!(
            "kept `{}` saved before an earlier attempt (to go back: `{command}`)",
            path.display()
        ));
    }
    let mut saved = Vec::new();
    let mut not_live = Vec::new();
    let mut secrets = Vec::new();
    for document in documents {
        let object = document_object(document);
        if object.kind == "Secret" {
            secrets.push(object.to_string());
            continue;
        }
        let api = object_api(client, &object).await?;
        let live = api
            .get_opt(&object.name)
            .await
            .map_err(|error| request_error(format!("reading {object}"), error))?;
        match live {
            Some(live) => {
                let live = serde_json::to_value(&live).unwrap_or(Value::Null);
                saved.push(crate::plan::edit_discovery::without_server_fields(&live));
            }
            None => not_live.push(object.to_string()),
        }
    }
    let mut text = format!(
        "# The objects of the manifest as they were live before netctl applied it. To go back:\n#   {command}\n"
    );
    if !not_live.is_empty() {
        text.push_str("# Not live before (created by the apply; delete them to go back):\n");
        for object in &not_live {
            text.push_str(&format!("#   {object}\n"));
        }
    }
    if !secrets.is_empty() {
        text.push_str(
            "# Secrets are not saved here (their data stays out of the state directory):\n",
        );
        for object in &secrets {
            text.push_str(&format!("#   {object}\n"));
        }
    }
    for object in &saved {
        text.push_str("---\n");
        text.push_str(&crate::yaml::emit::value_to_string(object));
    }
    let error = |source| KubeActionError::SavePrevious {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        crate::exec::checkpoint::create_private_directory(parent).map_err(error)?;
    }
    crate::exec::checkpoint::write_atomically(path, text.as_bytes()).map_err(error)?;
    Ok(format!(
        "saved the {} object(s) as they were live to `{}` first (to go back: `{command}`)",
        saved.len(),
        path.display()
    ))
}

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

/// The manifest text and where it came from.
async fn manifest_text(
    source: &ManifestSource,
    files_dir: &Path,
    mirror_dir: Option<&Path>,
) -> Result<(String, String), KubeActionError> {
    match source {
        ManifestSource::Inline(text) => Ok((text.clone(), "the inline manifest".into())),
        ManifestSource::File(file) => {
            let path = super::fetch::target_path(files_dir, file)
                .map_err(KubeActionError::DownloadManifest)?;
            let text = std::fs::read_to_string(&path)
                .map_err(|source| KubeActionError::ReadManifest { path, source })?;
            Ok((text, format!("`{file}`")))
        }
        ManifestSource::Url(url) => {
            let (bytes, _) = super::fetch::read_bytes(url, mirror_dir)
                .await
                .map_err(KubeActionError::DownloadManifest)?;
            Ok((
                String::from_utf8_lossy(&bytes).into_owned(),
                format!("`{url}`"),
            ))
        }
    }
}

/// The documents of a manifest, CustomResourceDefinitions first (so the objects of a CRD the same
/// manifest defines can be applied), then Namespaces, then the rest in manifest order.
pub fn manifest_documents(text: &str, origin: &str) -> Result<Vec<Value>, KubeActionError> {
    let mut documents = Vec::new();
    // Read as kubectl reads a manifest (YAML 1.1: `defaultMode: 0400` is the number 256).
    let read =
        crate::yaml::read_documents(text).map_err(|source| KubeActionError::ManifestSyntax {
            origin: origin.to_string(),
            source,
        })?;
    for (position, document) in read.into_iter().enumerate() {
        let mut value = document.value;
        if value.is_null() {
            continue;
        }
        crate::yaml::shape::canonical_numbers(&mut value);
        let index = position + 1;
        for (pointer, field) in [
            ("/apiVersion", "apiVersion"),
            ("/kind", "kind"),
            ("/metadata/name", "metadata.name"),
        ] {
            if value.pointer(pointer).and_then(Value::as_str).is_none() {
                return Err(KubeActionError::ManifestIncomplete {
                    origin: origin.to_string(),
                    index,
                    field,
                });
            }
        }
        documents.push(value);
    }
    let rank = |document: &Value| match document["kind"].as_str() {
        Some("CustomResourceDefinition") => 0,
        Some("Namespace") => 1,
        _ => 2,
    };
    documents.sort_by_key(rank);
    Ok(documents)
}

fn document_object(document: &Value) -> KubeObject {
    let field = |pointer: &str| {
        document
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    KubeObject {
        api_version: field("/apiVersion").unwrap_or_default(),
        kind: field("/kind").unwrap_or_default(),
        name: field("/metadata/name").unwrap_or_default(),
        namespace: field("/metadata/namespace"),
    }
}

/// `kube.apply`: server-side apply (or create-or-replace) of every object of a manifest.
pub async fn apply(
    client: &kube::Client,
    apply: &KubeApply,
    files_dir: &Path,
    mirror_dir: Option<&Path>,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let description = describe_apply(apply, files_dir);
    let (text, origin) = manifest_text(&apply.source, files_dir, mirror_dir).await?;
    let documents = manifest_documents(&text, &origin)?;
    let dry_run = mode == RunMode::DryRun;
    let lines_before = match (&apply.save_previous, dry_run) {
        (Some(file), false) => {
            Some(save_previous(client, &documents, &files_dir.join(file), apply).await?)
        }
        _ => None,
    };
    let mut lines = Vec::new();
    let mut applied = Vec::new();
    for document in &documents {
        let object = document_object(document);
        let what = format!(
            "{} of {object}",
            if apply.server_side {
                "server-side apply"
            } else {
                "apply"
            }
        );
        let api = object_api(client, &object).await?;
        let result = if apply.server_side {
            let mut params = PatchParams::apply(&apply.field_manager);
            params.force = apply.force_conflicts;
            params.dry_run = dry_run;
            api.patch(&object.name, &params, &Patch::Apply(document))
                .await
        } else {
            create_or_replace(&api, &object.name, document, dry_run).await
        };
        let written = result.map_err(|error| request_error(what, error))?;
        let version = written
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        lines.push(if dry_run {
            format!("  server dry-run accepted {object}")
        } else {
            format!("  applied {object} (resourceVersion {version})")
        });
        applied.push(json!({ "object": object.to_string(), "resourceVersion": version }));
    }
    if dry_run {
        return Ok(with_lines(described(description), lines));
    }
    let mut output = json!({ "applied": applied });
    // What exactly was applied, for a file a `fetch` wrote (and an operator may have edited since):
    // the executor records it in the checkpoint and compares it with what the `fetch` wrote.
    if let ManifestSource::File(_) = &apply.source {
        output["source_sha256"] = json!(super::fetch::sha256(text.as_bytes()));
    }
    let mut summary = format!("applied {} object(s) of {origin}", documents.len());
    if let Some(saved) = lines_before {
        summary = format!("{summary}; {saved}");
    }
    let mut outcome = done(summary, output);
    outcome.transcript.extend(lines);
    Ok(outcome)
}

/// Create when absent, else replace at the revision read (client-side apply semantics without the
/// last-applied annotation: the manifest is the whole object).
async fn create_or_replace(
    api: &Api<DynamicObject>,
    name: &str,
    document: &Value,
    dry_run: bool,
) -> Result<DynamicObject, kube::Error> {
    let params = PostParams {
        dry_run,
        field_manager: Some(crate::plan::action::DEFAULT_FIELD_MANAGER.to_string()),
    };
    let mut object: DynamicObject =
        serde_json::from_value(document.clone()).map_err(kube::Error::SerdeError)?;
    match api.get_opt(name).await? {
        None => api.create(&params, &object).await,
        Some(current) => {
            object.metadata.resource_version = current.metadata.resource_version;
            api.replace(name, &params, &object).await
        }
    }
}

/// `kube.patch`: a JSON merge patch, or a JSON patch applied to the object read and written back
/// at that revision (so a concurrent change is a conflict, not lost).
pub async fn patch(
    client: &kube::Client,
    patch: &KubePatch,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let description = describe_patch(patch);
    let object = &patch.object;
    let what = format!("patch of {object}");
    let api = object_api(client, object).await?;
    let dry_run = mode == RunMode::DryRun;
    let written = match patch.patch_type {
        PatchType::Merge => {
            let params = PatchParams {
                dry_run,
                ..PatchParams::default()
            };
            api.patch(&object.name, &params, &Patch::Merge(&patch.patch))
                .await
                .map_err(|error| request_error(what, error))?
        }
        PatchType::Json => {
            let current = api
                .get(&object.name)
                .await
                .map_err(|error| request_error(what.clone(), error))?;
            let mut value =
                serde_json::to_value(&current).map_err(|error| KubeActionError::JsonPatch {
                    object: object.to_string(),
                    detail: error.to_string(),
                })?;
            let operations: json_patch::Patch = serde_json::from_value(patch.patch.clone())
                .map_err(|error| KubeActionError::JsonPatch {
                    object: object.to_string(),
                    detail: error.to_string(),
                })?;
            json_patch::patch(&mut value, &operations).map_err(|error| {
                KubeActionError::JsonPatch {
                    object: object.to_string(),
                    detail: error.to_string(),
                }
            })?;
            let updated: DynamicObject =
                serde_json::from_value(value).map_err(|error| KubeActionError::JsonPatch {
                    object: object.to_string(),
                    detail: error.to_string(),
                })?;
            let params = PostParams {
                dry_run,
                field_manager: None,
            };
            api.replace(&object.name, &params, &updated)
                .await
                .map_err(|error| request_error(what, error))?
        }
    };
    if dry_run {
        return Ok(with_lines(
            described(description),
            vec![format!("  server dry-run accepted the patch of {object}")],
        ));
    }
    Ok(done(
        format!("patched {object}"),
        json!({ "object": object.to_string(), "resourceVersion": written.metadata.resource_version }),
    ))
}

/// `kube.annotate` and `kube.label`: a merge patch of `metadata.<field>`; without `overwrite`, a key
/// that already has another value is refused before anything is written.
pub async fn change_metadata(
    client: &kube::Client,
    change: &KubeMetadataChange,
    field: &'static str,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let description = describe_metadata(change, field);
    let object = &change.object;
    let what = format!("change of the {field} of {object}");
    let api = object_api(client, object).await?;
    if !change.overwrite {
        let current = api
            .get(&object.name)
            .await
            .map_err(|error| request_error(what.clone(), error))?;
        let existing = match field {
            "labels" => current.metadata.labels.unwrap_or_default(),
            _ => current.metadata.annotations.unwrap_or_default(),
        };
        for (key, wanted) in &change.values {
            if let (Some(current), Some(wanted)) = (existing.get(key), wanted)
                && current != wanted
            {
                return Err(KubeActionError::WouldOverwrite {
                    object: object.to_string(),
                    field: if field == "labels" {
                        "label"
                    } else {
                        "annotation"
                    },
                    key: key.clone(),
                    current: current.clone(),
                    wanted: wanted.clone(),
                });
            }
        }
    }
    let values: serde_json::Map<String, Value> = change
        .values
        .iter()
        .map(|(key, value)| (key.clone(), json!(value)))
        .collect();
    let body = json!({ "metadata": { field: values } });
    let params = PatchParams {
        dry_run: mode == RunMode::DryRun,
        ..PatchParams::default()
    };
    api.patch(&object.name, &params, &Patch::Merge(&body))
        .await
        .map_err(|error| request_error(what, error))?;
    if mode == RunMode::DryRun {
        return Ok(with_lines(
            described(description),
            vec![format!("  server dry-run accepted the {field} of {object}")],
        ));
    }
    Ok(done(
        format!("set {} {field} on {object}", change.values.len()),
        json!({ "object": object.to_string() }),
    ))
}

/// What a `kube.list` found: the type's plural, what the list covered as messages say it, and the
/// names (sorted).
pub struct Listed {
    pub plural: String,
    pub covered: String,
    pub names: Vec<String>,
}

/// Reads the objects a `kube.list` covers, in pages, so a large namespace is read whole.
pub async fn list_names(client: &kube::Client, list: &KubeList) -> Result<Listed, KubeActionError> {
    let (resource, namespaced) = resolve(client, &list.api_version, &list.kind).await?;
    let api = api_for(client, &resource, namespaced, list.namespace.as_deref());
    let selector = list.selector.as_ref().map(ToString::to_string);
    let covered = collection(
        &resource.plural,
        list.namespace.as_deref(),
        selector.as_deref(),
    );
    let mut params = ListParams::default().limit(LIST_PAGE_SIZE);
    if let Some(selector) = &selector {
        params = params.labels(selector);
    }
    let mut names = Vec::new();
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|error| request_error(format!("list of {covered}"), error))?;
        names.extend(page.items.into_iter().filter_map(|item| item.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    names.sort();
    Ok(Listed {
        plural: resource.plural,
        covered,
        names,
    })
}

/// `kube.list`: reads the objects and returns their names (what `register` keeps). It changes
/// nothing, so a dry-run reads too and shows what the real run would find now.
pub async fn list(
    client: &kube::Client,
    list: &KubeList,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let listed = list_names(client, list).await?;
    let output = json!(listed.names);
    if mode == RunMode::DryRun {
        let line = format!("  {}", listing(&listed.names, &listed.plural, "found"));
        let mut outcome = with_lines(described(describe_list(list)), vec![line]);
        outcome.output = Some(output);
        return Ok(outcome);
    }
    let summary = format!(
        "found {} {}{}",
        listed.names.len(),
        listed.covered,
        if listed.names.is_empty() {
            String::new()
        } else {
            format!(": {}", listed.names.join(", "))
        }
    );
    Ok(done(summary, output))
}

/// `kube.delete`: lists what the selector matches with a server-side dry-run delete, then (in
/// execute mode) deletes exactly that collection.
pub async fn delete(
    client: &kube::Client,
    delete: &KubeDelete,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let description = describe_delete(delete);
    let (resource, namespaced) = resolve(client, &delete.api_version, &delete.kind).await?;
    let api = api_for(client, &resource, namespaced, delete.namespace.as_deref());
    let selector = delete.selector.to_string();
    let list = ListParams::default().labels(&selector);
    let where_ = collection(
        &resource.plural,
        delete.namespace.as_deref(),
        Some(&selector),
    );
    let rehearsal = api
        .delete_collection(&DeleteParams::default().dry_run(), &list)
        .await
        .map_err(|error| request_error(format!("server dry-run delete of {where_}"), error))?;
    // The API answers with the list of what it deleted, or a bare Status when that is not known.
    let names: Vec<String> = rehearsal
        .left()
        .map(|list| {
            list.items
                .iter()
                .filter_map(|item| item.metadata.name.clone())
                .collect()
        })
        .unwrap_or_default();
    let mut listing = vec![format!(
        "  server dry-run: {}",
        listing(&names, &resource.plural, "would be deleted")
    )];
    if mode == RunMode::DryRun {
        return Ok(with_lines(described(description), listing));
    }
    if !names.is_empty() {
        api.delete_collection(&DeleteParams::default(), &list)
            .await
            .map_err(|error| request_error(format!("delete of {where_}"), error))?;
    }
    let summary = format!("deleted {} {}", names.len(), where_);
    listing.insert(0, summary.clone());
    Ok(Outcome {
        summary,
        transcript: listing,
        output: Some(json!({ "deleted": names })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_kubernetes_api_layout() {
        assert_eq!(
            api_path(
                "apps/v1",
                "DaemonSet",
                Some("calico-system"),
                Some("calico-node")
            ),
            "/apis/apps/v1/namespaces/calico-system/daemonsets/calico-node"
        );
        assert_eq!(
            api_path("v1", "ConfigMap", Some("x"), None),
            "/api/v1/namespaces/x/configmaps"
        );
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
    }

    #[test]
    fn crds_and_namespaces_are_applied_first() {
        let manifest = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: a, namespace: x}\n---\n\
            apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n\
            apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: c}\n";
        let kinds: Vec<String> = manifest_documents(manifest, "m")
            .unwrap()
            .iter()
            .map(|document| document["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            kinds,
            ["CustomResourceDefinition", "Namespace", "DaemonSet"]
        );
        let error = manifest_documents("apiVersion: v1\nkind: ConfigMap\n", "m").unwrap_err();
        assert_eq!(
            error.to_string(),
            "document 1 of the manifest m has no metadata.name"
        );
    }
}
