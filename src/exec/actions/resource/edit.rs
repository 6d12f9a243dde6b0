//! `resource.label` and `resource.patch`: read a stored resource, change it, validate it and write it
//! back on the revision that was read, re-reading on a conflict (upstream tries five times).
//!
//! Label follows upstream's `--overwrite` rules and messages; a `labels` map is set in one write,
//! refused whole when a key has another value. Patch is an RFC 7386 merge patch or an RFC 6902 JSON
//! patch of the stored document. In dry-run the change is computed on what is stored and shown, and
//! nothing is written. Creating, replacing and deleting are in `mod.rs`.

use crate::datastore::{Datastore, StoreError};
use crate::plan::action::{PatchType, ResourceLabel, ResourcePatch};
use crate::release::ApiRelease;
use crate::resource::strategic_merge::strategic_merge;
use crate::resource::{Resource, ResourceKey};

use super::{
    CONFLICT_ATTEMPTS, CONFLICT_PAUSE, ResourceActionError, prepare_for_write, store_error,
    target_key, writable,
};
use super::{ExistingPolicy, Outcome, RunMode, WriteSemantics};
use super::{diff, store_rules};
use crate::exec::actions::{Context, Held, Perform, Performed};
use crate::plan::Action;

/// Reads, changes and conditionally updates one resource, re-reading on conflict.
async fn read_modify_write(
    store: &dyn Datastore,
    key: &ResourceKey,
    mode: RunMode,
    release: &ApiRelease,
    mut change: impl FnMut(&mut Resource) -> Result<Option<String>, ResourceActionError>,
) -> Result<(Resource, Resource, Option<String>), ResourceActionError> {
    writable(key)?;
    let mut attempt = 1;
    loop {
        let stored = store.get(key).await.map_err(store_error("read", key))?;
        let mut resource = stored.clone();
        let note = change(&mut resource)?;
        prepare_for_write(&mut resource, release)?;
        store_rules::check_writes(store, std::slice::from_ref(&resource)).await?;
        if mode == RunMode::DryRun {
            return Ok((stored, resource, note));
        }
        match store.update(&resource).await {
            Ok(written) => return Ok((stored, written, note)),
            Err(StoreError::Conflict { .. }) if attempt < CONFLICT_ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(CONFLICT_PAUSE).await;
            }
            Err(source @ StoreError::Conflict { .. }) => {
                return Err(ResourceActionError::GaveUp {
                    key: key.clone(),
                    source: Box::new(source),
                });
            }
            Err(source) => return Err(store_error("update", key)(source)),
        }
    }
}

/// Sets or removes a label; removing a label that is not there fails (as `netctl label`).
pub async fn label(
    store: &dyn Datastore,
    request: &ResourceLabel,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    label_with(store, request, WriteSemantics::default(), mode, release).await
}

/// Sets or removes a label. Removing a label that is not there fails, unless `semantics` says a
/// missing target counts as done (upgrade plans: a removal that ran before an interruption is not
/// an error when the step runs again).
pub async fn label_with(
    store: &dyn Datastore,
    request: &ResourceLabel,
    semantics: WriteSemantics,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    let key = target_key(request.kind, request.namespace.as_deref(), &request.name);
    let kind_text = request.kind.as_str().to_ascii_lowercase();
    if let Some(wanted) = &request.labels {
        return label_all(store, request, wanted, &key, &kind_text, mode, release).await;
    }
    if request.remove && semantics.delete_missing == ExistingPolicy::Skip {
        let stored = store.get(&key).await.map_err(store_error("read", &key))?;
        if !stored.metadata.labels.contains_key(&request.key) {
            let (label, name) = (&request.key, &request.name);
            return Ok(Outcome::line(match mode {
                // A rehearsed earlier step of the plan may add it; the real run removes it then.
                RunMode::DryRun => format!(
                    "would remove label {label} from {kind_text} {name} (absent now: nothing to do unless an earlier step adds it)"
                ),
                RunMode::Execute => {
                    format!("label {label} is already absent from {kind_text} {name}")
                }
            }));
        }
    }
    let (stored, resource, message) = read_modify_write(store, &key, mode, release, |resource| {
        let labels = &mut resource.metadata.labels;
        let existing = labels.get(&request.key).cloned();
        let message = if request.remove {
            if existing.is_none() {
                return Err(ResourceActionError::LabelMissing {
                    kind: kind_text.clone(),
                    name: request.name.clone(),
                    key: request.key.clone(),
                });
            }
            labels.remove(&request.key);
            format!(
                "removed label {} from {} {}",
                request.key, kind_text, request.name
            )
        } else {
            let value = request.value.clone().unwrap_or_default();
            match existing {
                // Setting the value it already has is an update, not a conflict (as upstream).
                Some(current) if current != value && !request.overwrite => {
                    return Err(ResourceActionError::LabelPresent {
                        kind: kind_text.clone(),
                        name: request.name.clone(),
                        key: request.key.clone(),
                    });
                }
                Some(_) => {
                    labels.insert(request.key.clone(), value);
                    format!(
                        "updated label {} on {} {}",
                        request.key, kind_text, request.name
                    )
                }
                None => {
                    labels.insert(request.key.clone(), value);
                    format!(
                        "set label {} on {} {}",
                        request.key, kind_text, request.name
                    )
                }
            }
        };
        Ok(Some(message))
    })
    .await?;
    let message = message.unwrap_or_default();
    let mut outcome = Outcome::default();
    let would = if mode == RunMode::DryRun {
        "would "
    } else {
        ""
    };
    outcome.transcript.extend(diff::update_lines(
        &format!("{would}update {key} ({message})"),
        &stored,
        &resource,
    ));
    outcome.summary = format!("Successfully {message}");
    Ok(outcome)
}

/// `resource.label` with `labels`: every key is checked before anything is written, so a key that
/// already has another value (without `overwrite`) leaves the resource as it was.
async fn label_all(
    store: &dyn Datastore,
    request: &ResourceLabel,
    wanted: &std::collections::BTreeMap<String, String>,
    key: &ResourceKey,
    kind_text: &str,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    let mut unchanged = false;
    let (stored, resource, _) = read_modify_write(store, key, mode, release, |resource| {
        let labels = &mut resource.metadata.labels;
        for (label, value) in wanted {
            match labels.get(label) {
                Some(current) if current != value && !request.overwrite => {
                    return Err(ResourceActionError::LabelConflict {
                        kind: kind_text.to_string(),
                        name: request.name.clone(),
                        key: label.clone(),
                        current: current.clone(),
                        wanted: value.clone(),
                    });
                }
                _ => {}
            }
        }
        unchanged = wanted
            .iter()
            .all(|(label, value)| labels.get(label) == Some(value));
        labels.extend(wanted.clone());
        Ok(None)
    })
    .await?;
    let would = if mode == RunMode::DryRun {
        "would "
    } else {
        ""
    };
    let listed = wanted
        .iter()
        .map(|(label, value)| format!("{label}={value}"))
        .collect::<Vec<_>>()
        .join(", ");
    let summary = match (wanted.is_empty(), unchanged) {
        (true, _) => format!("{kind_text} {} has no labels to set", request.name),
        (false, true) => format!(
            "{kind_text} {} already has the labels {listed}",
            request.name
        ),
        (false, false) => format!("set labels {listed} on {kind_text} {}", request.name),
    };
    let mut outcome = Outcome {
        summary: summary.clone(),
        ..Outcome::default()
    };
    outcome.transcript.extend(diff::update_lines(
        &format!("{would}update {key} ({summary})"),
        &stored,
        &resource,
    ));
    Ok(outcome)
}

/// Whether the labels `request` sets (or removes) are as it leaves them: its postcondition. A
/// resource that is gone has no label to remove, and lacks the ones to set.
pub async fn label_holds(
    store: &dyn Datastore,
    request: &ResourceLabel,
) -> Result<bool, ResourceActionError> {
    let key = target_key(request.kind, request.namespace.as_deref(), &request.name);
    let labels = match store.get(&key).await {
        Ok(resource) => resource.metadata.labels,
        Err(StoreError::NotFound(_)) => return Ok(request.remove),
        Err(error) => return Err(store_error("read", &key)(error)),
    };
    Ok(match (&request.labels, request.remove) {
        (Some(wanted), _) => wanted
            .iter()
            .all(|(label, value)| labels.get(label) == Some(value)),
        (None, true) => !labels.contains_key(&request.key),
        (None, false) => {
            labels.get(&request.key).map(String::as_str)
                == Some(request.value.as_deref().unwrap_or_default())
        }
    })
}

pub async fn patch(
    store: &dyn Datastore,
    request: &ResourcePatch,
    mode: RunMode,
    release: &ApiRelease,
) -> Result<Outcome, ResourceActionError> {
    let key = target_key(request.kind, request.namespace.as_deref(), &request.name);
    let (stored, resource, _) = read_modify_write(store, &key, mode, release, |resource| {
        let failed = |reason: String| ResourceActionError::Patch {
            key: key.clone(),
            patch_type: request.patch_type,
            reason,
        };
        let revision = resource.metadata.resource_version.clone();
        let mut document =
            serde_json::to_value(&*resource).map_err(|error| failed(error.to_string()))?;
        match request.patch_type {
            PatchType::Merge => json_patch::merge(&mut document, &request.patch),
            PatchType::Strategic => {
                document = strategic_merge(&document, &request.patch)
                    .map_err(|error| failed(error.to_string()))?;
            }
            PatchType::Json => {
                let operations: json_patch::Patch =
                    serde_json::from_value(request.patch.clone())
                        .map_err(|error| failed(format!("not a JSON patch: {error}")))?;
                json_patch::patch(&mut document, &operations)
                    .map_err(|error| failed(error.to_string()))?;
            }
        }
        let mut patched: Resource = serde_json::from_value(document)
            .map_err(|error| failed(format!("the result is not a resource: {error}")))?;
        if patched.key() != resource.key() {
            return Err(ResourceActionError::PatchChangesIdentity { key: key.clone() });
        }
        // The update is conditional on the revision that was read, whatever the patch said.
        patched.metadata.resource_version = revision;
        *resource = patched;
        Ok(None)
    })
    .await?;
    let would = if mode == RunMode::DryRun {
        "would "
    } else {
        ""
    };
    let mut outcome = Outcome {
        summary: format!("Successfully patched 1 '{}' resource", request.kind),
        ..Outcome::default()
    };
    outcome.transcript.extend(diff::update_lines(
        &format!("{would}update {key} ({} patch)", request.patch_type),
        &stored,
        &resource,
    ));
    Ok(outcome)
}

/// `resource.label`; as a postcondition, the resource has the labels.
impl Perform for ResourceLabel {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let release = context.release(store).await;
        Ok(label_with(store, self, context.semantics, mode, &release).await?)
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        Ok(label_holds(context.store(action)?, self).await?)
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

/// `resource.patch`.
impl Perform for ResourcePatch {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let release = context.release(store).await;
        Ok(patch(store, self, mode, &release).await?)
    }

    /// A merge patch (strategic or not) leaves the same document however often it is applied (a
    /// strategic merge's lists merge as sets or by key); a JSON patch may not (`add` to a list).
    fn is_idempotent(&self, _: &Action) -> bool {
        self.patch_type != PatchType::Json
    }
}
