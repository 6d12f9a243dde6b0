//! `kube.restore-owner-reference`: re-adds an OwnerReference to a `projectcalico.org/v3` owner with
//! the UID the owner has when the step runs (`docs/upgrade-procedures.md`, "OwnerReferences to
//! `projectcalico.org/v3` owners").
//!
//! The upgrade gives every `projectcalico.org/v3` resource a new UID, so a plan can carry everything
//! about the reference except that UID. This action reads it through the datastore (on the Kubernetes
//! datastore that is the converted UID of the custom resource; this file never converts UIDs itself),
//! reads the owned object, and sends a JSON patch guarded by `test` operations:
//!
//! - the reference (same owner kind and name) is there with the new UID and the recorded flags: nothing
//!   is sent, so a resumed run can repeat the step;
//! - it is there with another UID (the old one, or flags that differ): that entry is replaced, guarded by
//!   a `test` of the entry as read;
//! - it is not there: it is appended, guarded by a `test` of the list as read (or, when the object has
//!   no list, of its `resourceVersion`: JSON patch cannot test that a member is absent).
//!
//! A concurrent change makes a `test` fail, so the patch never lands on a list netctl did not read. The
//! same reading is the step's postcondition ([`holds`]). Secrets are never read or shown here beyond
//! their metadata.

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::requests::object_path;
use super::{ApiAccess, cluster, without_cluster};
use super::{KubeActionError, object_api, request_error};
use crate::datastore::{Datastore, StoreError};
use crate::errors::Hint;
use crate::exec::actions::{Context, Held, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::action::KubeRestoreOwnerReference;
use crate::resource::{API_VERSION, ResourceKey};

/// `kube.restore-owner-reference`; as a postcondition, the reference is there with the owner's
/// current UID.
impl Perform for KubeRestoreOwnerReference {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        match cluster(context, action) {
            Ok(client) => Ok(restore(client, context.store(action)?, self, mode).await?),
            Err(_) => without_cluster(action, mode, describe(self)),
        }
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        let client = cluster(context, action)?;
        Ok(holds(client, context.store(action)?, self).await?)
    }

    /// It reads the object and the owner each time and sends nothing when the reference is there.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        Some(vec![ApiAccess::object(&self.object, &["get", "patch"])])
    }
}

/// Why an OwnerReference could not be restored.
#[derive(Debug, thiserror::Error)]
pub enum OwnerReferenceError {
    #[error("the owner {owner} of {object} does not exist, so its reference cannot be restored")]
    OwnerMissing { owner: String, object: String },
    #[error("cannot read the owner {owner} of {object} through the datastore")]
    ReadOwner {
        owner: String,
        object: String,
        // Boxed: a `StoreError` is large and the other variants carry none.
        #[source]
        source: Box<StoreError>,
    },
    #[error("the owner {owner} has no UID in the datastore")]
    OwnerWithoutUid { owner: String },
    #[error("{object} does not exist, so its reference to {owner} cannot be restored")]
    ObjectMissing { object: String, owner: String },
    #[error(transparent)]
    Kube(#[from] KubeActionError),
}

impl Hint for OwnerReferenceError {
    fn hint(&self) -> Option<String> {
        match self {
            OwnerReferenceError::OwnerMissing { owner, object } => Some(format!(
                "the upgrade should have kept {owner}: check with `netctl get {}`; once it exists, resume; to leave {object} without this owner, resume with `--skip` and this step's id",
                owner.replace('`', "")
            )),
            OwnerReferenceError::ObjectMissing { .. } => Some(
                "the object was deleted (garbage collected, or by hand); if that is expected, resume with `--skip` and this step's id".to_string(),
            ),
            OwnerReferenceError::ReadOwner { source, .. } => source.hint(),
            OwnerReferenceError::Kube(error) => error.hint(),
            OwnerReferenceError::OwnerWithoutUid { .. } => None,
        }
    }
}

/// `Tier `security``, as messages name the owner.
fn owner_text(restore: &KubeRestoreOwnerReference) -> String {
    format!("{} `{}`", restore.owner.kind, restore.owner.name)
}

/// The owner's UID now, read through the datastore. A namespaced owner lives in the owned object's
/// namespace (Kubernetes refuses references across namespaces).
async fn owner_uid(
    store: &dyn Datastore,
    restore: &KubeRestoreOwnerReference,
) -> Result<String, OwnerReferenceError> {
    let kind = restore.owner.kind;
    let namespace = kind
        .is_namespaced()
        .then(|| restore.object.namespace.clone())
        .flatten();
    let key = ResourceKey::new(kind, namespace, restore.owner.name.clone());
    let owner = match store.get(&key).await {
        Ok(owner) => owner,
        Err(StoreError::NotFound(_)) => {
            return Err(OwnerReferenceError::OwnerMissing {
                owner: owner_text(restore),
                object: restore.object.to_string(),
            });
        }
        Err(source) => {
            return Err(OwnerReferenceError::ReadOwner {
                owner: owner_text(restore),
                object: restore.object.to_string(),
                source: Box::new(source),
            });
        }
    };
    owner
        .metadata
        .uid
        .filter(|uid| !uid.is_empty())
        .ok_or_else(|| OwnerReferenceError::OwnerWithoutUid {
            owner: owner_text(restore),
        })
}

/// The reference as it should be: the recorded owner and flags with the UID read now.
pub fn wanted_reference(restore: &KubeRestoreOwnerReference, uid: &str) -> Value {
    let mut reference = json!({
        "apiVersion": API_VERSION,
        "kind": restore.owner.kind.as_str(),
        "name": restore.owner.name,
        "uid": uid,
    });
    if let Some(controller) = restore.controller {
        reference["controller"] = json!(controller);
    }
    if let Some(block) = restore.block_owner_deletion {
        reference["blockOwnerDeletion"] = json!(block);
    }
    reference
}

/// The JSON patch that makes `object` (as read) carry `wanted`, or `None` when it already does. Pure,
/// so every case is tested without a cluster.
pub fn patch_for(object: &Value, wanted: &Value) -> Option<Value> {
    let same_owner = |reference: &Value| {
        reference["apiVersion"] == wanted["apiVersion"]
            && reference["kind"] == wanted["kind"]
            && reference["name"] == wanted["name"]
    };
    let references = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .filter(|references| !references.is_empty());
    match references {
        Some(references) => match references.iter().position(same_owner) {
            Some(index) if references[index] == *wanted => None,
            Some(index) => Some(json!([
                {"op": "test", "path": format!("/metadata/ownerReferences/{index}"), "value": references[index]},
                {"op": "replace", "path": format!("/metadata/ownerReferences/{index}"), "value": wanted},
            ])),
            None => Some(json!([
                {"op": "test", "path": "/metadata/ownerReferences", "value": references},
                {"op": "add", "path": "/metadata/ownerReferences/-", "value": wanted},
            ])),
        },
        None => Some(json!([
            {"op": "test", "path": "/metadata/resourceVersion",
             "value": object.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null)},
            {"op": "add", "path": "/metadata/ownerReferences", "value": [wanted]},
        ])),
    }
}

/// What the step does, without a cluster to ask (a dry-run without a kubeconfig).
pub fn describe(restore: &KubeRestoreOwnerReference) -> Vec<String> {
    vec![format!(
        "would read the UID of {} through the datastore, GET {} and PATCH it (application/json-patch+json, guarded by `test` operations) to carry {}, unless it already does",
        owner_text(restore),
        object_path(&restore.object),
        wanted_reference(restore, "<the UID read then>")
    )]
}

/// The owned object as JSON, and the current state of the restore: the patch to send, if any.
async fn read(
    client: &kube::Client,
    restore: &KubeRestoreOwnerReference,
    uid: &str,
) -> Result<(kube::Api<kube::core::DynamicObject>, Option<Value>), OwnerReferenceError> {
    let object = &restore.object;
    let api = object_api(client, object).await?;
    let current = match api.get_opt(&object.name).await {
        Ok(Some(current)) => current,
        Ok(None) => {
            return Err(OwnerReferenceError::ObjectMissing {
                object: object.to_string(),
                owner: owner_text(restore),
            });
        }
        Err(error) => return Err(request_error(format!("read of {object}"), error).into()),
    };
    let value = serde_json::to_value(&current).map_err(|error| KubeActionError::JsonPatch {
        object: object.to_string(),
        detail: error.to_string(),
    })?;
    Ok((api, patch_for(&value, &wanted_reference(restore, uid))))
}

/// Sends `patch` as an RFC 6902 JSON patch, so the API server evaluates the `test` operations against
/// the object as it is when the request arrives.
///
/// kube's typed JSON patch needs its `jsonpatch` feature, which brings a second major version of the
/// `json-patch` crate; the request is built as a merge patch (whose body is any JSON) and its content
/// type changed to `application/json-patch+json`.
async fn send_json_patch(
    client: &kube::Client,
    api: &kube::Api<kube::core::DynamicObject>,
    restore: &KubeRestoreOwnerReference,
    patch: &Value,
    mode: RunMode,
) -> Result<kube::core::DynamicObject, OwnerReferenceError> {
    let object = &restore.object;
    let what = || format!("patch of {object}");
    let params = PatchParams {
        dry_run: mode == RunMode::DryRun,
        ..PatchParams::default()
    };
    let mut request = kube::core::Request::new(api.resource_url())
        .patch(&object.name, &params, &Patch::Merge(patch))
        .map_err(|error| request_error(what(), kube::Error::BuildRequest(error)))?;
    request.headers_mut().insert(
        "content-type",
        JSON_PATCH.parse().map_err(|_| KubeActionError::JsonPatch {
            object: object.to_string(),
            detail: "invalid content type".to_string(),
        })?,
    );
    client
        .request(request)
        .await
        .map_err(|error| request_error(what(), error).into())
}

const JSON_PATCH: &str = "application/json-patch+json";

/// `kube.restore-owner-reference`. In dry-run the patch is sent with `dryRun=All`.
pub async fn restore(
    client: &kube::Client,
    store: &dyn Datastore,
    restore: &KubeRestoreOwnerReference,
    mode: RunMode,
) -> Result<Outcome, OwnerReferenceError> {
    let object = &restore.object;
    let owner = owner_text(restore);
    let uid = owner_uid(store, restore).await?;
    let (api, patch) = read(client, restore, &uid).await?;
    let read_line = format!("read the UID of {owner} through the datastore: `{uid}`");
    // In a dry-run the UID is the one the owner has now; the step reads it again when it runs, after
    // the upgrade gave the owner its new one.
    let dry_read_line = format!(
        "would read the UID of {owner} through the datastore when the step runs: `{uid}` now"
    );
    let Some(patch) = patch else {
        let summary = format!("{object} already refers to {owner} with UID `{uid}`");
        let transcript = match mode {
            RunMode::DryRun => vec![
                dry_read_line,
                format!("{summary}: as things stand, nothing would be sent"),
            ],
            RunMode::Execute => vec![read_line, format!("{summary}: nothing sent")],
        };
        return Ok(Outcome {
            summary: format!("{summary}; nothing sent"),
            transcript,
            output: Some(json!({ "object": object.to_string(), "ownerUid": uid })),
        });
    };
    let request = format!(
        "PATCH {} ({JSON_PATCH}, {} bytes): {patch}",
        object_path(object),
        serde_json::to_vec(&patch)
            .map(|bytes| bytes.len())
            .unwrap_or(0)
    );
    let written = send_json_patch(client, &api, restore, &patch, mode).await?;
    if mode == RunMode::DryRun {
        return Ok(Outcome {
            summary: format!("would {request}"),
            transcript: vec![
                dry_read_line,
                format!("would {request}"),
                format!("  server dry-run accepted the patch of {object}"),
            ],
            output: None,
        });
    }
    let summary = format!("restored the OwnerReference of {object} to {owner} with UID `{uid}`");
    Ok(Outcome {
        summary: summary.clone(),
        transcript: vec![read_line, request, summary],
        output: Some(json!({
            "object": object.to_string(),
            "ownerUid": uid,
            "resourceVersion": written.metadata.resource_version,
        })),
    })
}

/// The postcondition: the object carries the reference with the owner's UID now and the recorded
/// flags. Reads only.
pub async fn holds(
    client: &kube::Client,
    store: &dyn Datastore,
    restore: &KubeRestoreOwnerReference,
) -> Result<bool, OwnerReferenceError> {
    let uid = owner_uid(store, restore).await?;
    let (_, patch) = read(client, restore, &uid).await?;
    Ok(patch.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::action::{KubeObject, OwnerResource};
    use crate::resource::Kind;

    fn restore(controller: Option<bool>) -> KubeRestoreOwnerReference {
        KubeRestoreOwnerReference {
            object: KubeObject {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "settings".into(),
                namespace: Some("apps".into()),
            },
            owner: OwnerResource {
                api_version: API_VERSION.into(),
                kind: Kind::Tier,
                name: "security".into(),
            },
            controller,
            block_owner_deletion: None,
        }
    }

    fn object(references: Option<Value>) -> Value {
        let mut object = json!({"metadata": {"name": "settings", "resourceVersion": "7"}});
        if let Some(references) = references {
            object["metadata"]["ownerReferences"] = references;
        }
        object
    }

    fn apply(object: &Value, patch: &Value) -> Value {
        let mut patched = object.clone();
        let operations: json_patch::Patch = serde_json::from_value(patch.clone()).unwrap();
        json_patch::patch(&mut patched, &operations).unwrap();
        patched
    }

    #[test]
    fn a_missing_reference_is_added_and_then_nothing_is_sent() {
        let wanted = wanted_reference(&restore(Some(true)), "new");
        assert_eq!(
            wanted,
            json!({"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "security",
                   "uid": "new", "controller": true})
        );
        // No list at all: the add is guarded by the resourceVersion read.
        let bare = object(None);
        let patch = patch_for(&bare, &wanted).unwrap();
        assert_eq!(
            patch[0],
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"})
        );
        let patched = apply(&bare, &patch);
        assert_eq!(patched["metadata"]["ownerReferences"], json!([wanted]));
        assert_eq!(patch_for(&patched, &wanted), None, "idempotent");

        // Another owner's reference stays; ours is appended, guarded by the list read.
        let other =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d"});
        let listed = object(Some(json!([other])));
        let patch = patch_for(&listed, &wanted).unwrap();
        assert_eq!(patch[0]["path"], "/metadata/ownerReferences");
        let patched = apply(&listed, &patch);
        assert_eq!(
            patched["metadata"]["ownerReferences"],
            json!([other, wanted])
        );
        assert_eq!(patch_for(&patched, &wanted), None);
    }

    #[test]
    fn a_reference_with_a_stale_uid_or_other_flags_is_replaced_in_place() {
        let wanted = wanted_reference(&restore(None), "new");
        let other =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d"});
        let stale = json!({"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "security", "uid": "old"});
        let current = object(Some(json!([other, stale])));
        let patch = patch_for(&current, &wanted).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "test", "path": "/metadata/ownerReferences/1", "value": stale},
                   {"op": "replace", "path": "/metadata/ownerReferences/1", "value": wanted}])
        );
        let patched = apply(&current, &patch);
        assert_eq!(
            patched["metadata"]["ownerReferences"],
            json!([other, wanted])
        );

        // The right UID but a flag the record does not have: replaced too.
        let flagged = object(Some(
            json!([{"apiVersion": "projectcalico.org/v3", "kind": "Tier",
                                          "name": "security", "uid": "new", "controller": true}]),
        ));
        assert!(patch_for(&flagged, &wanted).is_some());
    }

    #[test]
    fn the_test_operations_fail_when_the_object_changed_since_it_was_read() {
        let wanted = wanted_reference(&restore(None), "new");
        let stale = json!({"apiVersion": "projectcalico.org/v3", "kind": "Tier", "name": "security", "uid": "old"});
        let read = object(Some(json!([stale])));
        let patch = patch_for(&read, &wanted).unwrap();
        let mut changed = object(Some(
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "c"}]),
        ));
        let operations: json_patch::Patch = serde_json::from_value(patch).unwrap();
        assert!(json_patch::patch(&mut changed, &operations).is_err());
    }
}
