//! `kube.apply`: server-side apply (or create-or-replace) of every object of a manifest — CRDs
//! first, then Namespaces, then the rest in manifest order — after saving the objects as they
//! are live when the step asks for it (`save_previous`), to go back with.

use std::path::Path;

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::requests::describe_apply;
use super::{
    ApiAccess, KubeActionError, cluster, described, done, object_api, request_error, with_lines,
    without_cluster,
};
use crate::exec::actions::{Context, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::action::{KubeApply, KubeObject, ManifestSource};

impl Perform for KubeApply {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let files_dir = context.files_dir.as_path();
        match cluster(context, action) {
            Ok(client) => {
                let places = Places {
                    files_dir,
                    mirror_dir: context.mirror_dir.as_deref(),
                    run_id: context.run_id.as_deref(),
                };
                Ok(apply(client, self, &places, mode).await?)
            }
            Err(_) => without_cluster(action, mode, describe_apply(self, files_dir)),
        }
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    /// Each object of an inline manifest; a file or URL is read only when the step runs.
    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let ManifestSource::Inline(text) = &self.source else {
            return None;
        };
        let documents = manifest_documents(text, "in the plan").ok()?;
        let verbs: &[&'static str] = match self.server_side {
            true => &["patch"],
            false => &["get", "create", "update"],
        };
        let objects = documents.iter().map(KubeObject::of_document);
        Some(
            objects
                .map(|object| ApiAccess::object(&object, verbs))
                .collect(),
        )
    }
}

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
        let object = KubeObject::of_document(document);
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
            None => not_live.push(object),
        }
    }
    let mut text = format!(
        "# The objects of the manifest as they were live before netctl applied it. To go back:\n#   {command}\n"
    );
    if !not_live.is_empty() {
        text.push_str(NOT_LIVE_HEADING);
        for object in &not_live {
            text.push_str(&format!("#   {} {object}\n", object.api_version));
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

/// The heading of the objects a `save_previous` file lists as not live before the apply; each
/// follows as `#   <apiVersion> <Kind> [<namespace>/]<name>`.
const NOT_LIVE_HEADING: &str =
    "# Not live before (created by the apply; delete them to go back):\n";

/// The objects a `save_previous` file's header lists as not live before the apply.
pub fn not_live_before(text: &str) -> Vec<KubeObject> {
    let mut lines = text
        .lines()
        .skip_while(|line| *line != NOT_LIVE_HEADING.trim_end());
    lines.next();
    lines
        .map_while(|line| line.strip_prefix("#   "))
        .filter_map(|entry| {
            let mut words = entry.split_whitespace();
            let (api_version, kind, place) = (words.next()?, words.next()?, words.next()?);
            let (namespace, name) = match place.split_once('/') {
                Some((namespace, name)) => (Some(namespace.to_string()), name),
                None => (None, place),
            };
            Some(KubeObject {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                name: name.to_string(),
                namespace,
            })
        })
        .collect()
}

/// Going back with a `save_previous` file (`delete_not_live_before`): the objects its header lists
/// as created by the forward apply are deleted — all but CustomResourceDefinitions, which stay
/// (deleting one deletes every object of its kind; the older release does not read them), said
/// so. Lines for the transcript.
async fn delete_not_live_before(
    client: &kube::Client,
    text: &str,
    dry_run: bool,
) -> Result<Vec<String>, KubeActionError> {
    let mut lines = Vec::new();
    for object in not_live_before(text) {
        if object.kind == "CustomResourceDefinition" {
            lines.push(format!(
                "  kept {object}: deleting a CRD deletes every object of its kind, and the older release does not read it"
            ));
            continue;
        }
        let api = object_api(client, &object).await?;
        let params = kube::api::DeleteParams {
            dry_run,
            ..Default::default()
        };
        match api.delete(&object.name, &params).await {
            Ok(_) if dry_run => lines.push(format!(
                "  server dry-run accepted the delete of {object} (not live before)"
            )),
            Ok(_) => lines.push(format!("  deleted {object} (not live before)")),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                lines.push(format!("  {object} (not live before) is already gone"))
            }
            Err(error) => return Err(request_error(format!("delete of {object}"), error)),
        }
    }
    Ok(lines)
}

/// Where an apply reads and writes its files: the downloaded files, the mirror, and the run.
pub struct Places<'a> {
    pub files_dir: &'a Path,
    pub mirror_dir: Option<&'a Path>,
    /// The run's id: its `save_previous` copy goes under `runs/<run id>/`.
    pub run_id: Option<&'a str>,
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
            let path = crate::exec::actions::fetch::target_path(files_dir, file)
                .map_err(KubeActionError::DownloadManifest)?;
            let text = std::fs::read_to_string(&path)
                .map_err(|source| KubeActionError::ReadManifest { path, source })?;
            Ok((text, format!("`{file}`")))
        }
        ManifestSource::Url(url) => {
            let (bytes, _) = crate::exec::actions::fetch::read_bytes(url, mirror_dir)
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

/// `kube.apply`: server-side apply (or create-or-replace) of every object of a manifest.
pub async fn apply(
    client: &kube::Client,
    apply: &KubeApply,
    places: &Places<'_>,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let (files_dir, mirror_dir) = (places.files_dir, places.mirror_dir);
    let description = describe_apply(apply, files_dir);
    let (text, origin) = manifest_text(&apply.source, files_dir, mirror_dir).await?;
    let mut documents = manifest_documents(&text, &origin)?;
    if let Some(held) = &apply.hold_daemon_set {
        super::canary::hold(&mut documents, held)?;
    }
    let dry_run = mode == RunMode::DryRun;
    let lines_before = match (&apply.save_previous, dry_run) {
        (Some(file), false) => {
            let file = match places.run_id {
                Some(run) => crate::plan::action::previous_file_of_run(file, run),
                None => file.clone(),
            };
            Some(save_previous(client, &documents, &files_dir.join(file), apply).await?)
        }
        _ => None,
    };
    let mut lines = Vec::new();
    let mut applied = Vec::new();
    for document in &documents {
        let object = KubeObject::of_document(document);
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
    let deleted = match apply.delete_not_live_before {
        true => delete_not_live_before(client, &text, dry_run).await?,
        false => Vec::new(),
    };
    lines.extend(deleted.iter().cloned());
    if dry_run {
        return Ok(with_lines(described(description), lines));
    }
    let mut output = json!({ "applied": applied });
    // What exactly was applied, for a file a `fetch` wrote (and an operator may have edited since):
    // the executor records it in the checkpoint and compares it with what the `fetch` wrote.
    if let ManifestSource::File(_) = &apply.source {
        output["source_sha256"] = json!(crate::exec::actions::fetch::sha256(text.as_bytes()));
    }
    let mut summary = format!("applied {} object(s) of {origin}", documents.len());
    let removed = deleted
        .iter()
        .filter(|line| line.starts_with("  deleted "))
        .count();
    if apply.delete_not_live_before {
        summary.push_str(&format!(
            "; deleted {removed} object(s) it lists as not live before"
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_objects_not_live_before_are_read_back_from_the_header() {
        let text = format!(
            "# The objects ...\n#   kubectl apply ...\n{NOT_LIVE_HEADING}#   apps/v1 Deployment kube-system/new-thing\n#   apiextensions.k8s.io/v1 CustomResourceDefinition tiers.crd.projectcalico.org\n# Secrets are not saved here (their data stays out of the state directory):\n#   Secret kube-system/s\n---\nkind: X\n"
        );
        let objects: Vec<String> = not_live_before(&text)
            .iter()
            .map(|object| format!("{} {object}", object.api_version))
            .collect();
        assert_eq!(
            objects,
            [
                "apps/v1 Deployment kube-system/new-thing",
                "apiextensions.k8s.io/v1 CustomResourceDefinition tiers.crd.projectcalico.org"
            ]
        );
        assert!(not_live_before("# nothing\n---\n").is_empty());
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
