//! `kube.patch`, `kube.annotate` and `kube.label`: changes to one Kubernetes object — a JSON merge
//! or strategic merge patch, or a JSON patch applied to the object read and written back at that
//! revision; labels and annotations as a merge patch of `metadata`, refused without `overwrite` when
//! a key already has another value.

use kube::api::{Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::requests::{describe_metadata, describe_patch};
use super::{
    ApiAccess, KubeActionError, cluster, described, done, object_api, request_error, with_lines,
    without_cluster,
};
use crate::exec::actions::{Context, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::action::{KubeMetadataChange, KubePatch, PatchType};

impl Perform for KubePatch {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        match cluster(context, action) {
            Ok(client) => Ok(patch(client, self, mode).await?),
            Err(_) => without_cluster(action, mode, describe_patch(self)),
        }
    }

    /// A merge patch (strategic or not) leaves the same object however often it is sent (a
    /// strategic merge's lists merge as sets or by key); a JSON patch may not.
    fn is_idempotent(&self, _: &Action) -> bool {
        self.patch_type != PatchType::Json
    }

    /// A JSON patch is applied to the object read and written back whole.
    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let verbs: &[&'static str] = match self.patch_type {
            PatchType::Merge | PatchType::Strategic => &["patch"],
            PatchType::Json => &["get", "update"],
        };
        Some(vec![ApiAccess::object(&self.object, verbs)])
    }
}

/// `kube.annotate` and `kube.label`.
impl Perform for KubeMetadataChange {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let field = match action {
            Action::KubeAnnotate(_) => "annotations",
            _ => "labels",
        };
        match cluster(context, action) {
            Ok(client) => Ok(change_metadata(client, self, field, mode).await?),
            Err(_) => without_cluster(action, mode, describe_metadata(self, field)),
        }
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        Some(vec![ApiAccess::object(&self.object, &["get", "patch"])])
    }
}

/// `kube.patch`: a JSON merge or strategic merge patch, or a JSON patch applied to the object read and written back
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
        // The API server applies a strategic merge with the object's own patch strategies
        // (built-in types only; custom resources refuse it with 415, as `kubectl patch` sees).
        PatchType::Merge | PatchType::Strategic => {
            let params = PatchParams {
                dry_run,
                ..PatchParams::default()
            };
            let body = match patch.patch_type {
                PatchType::Strategic => Patch::Strategic(&patch.patch),
                _ => Patch::Merge(&patch.patch),
            };
            api.patch(&object.name, &params, &body)
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
