//! `datastore.lock` and `datastore.unlock`: ClusterInformation `default` `spec.datastoreReady`
//! false and true, as upstream's `datastore migrate lock|unlock` set it, with who locked it and when
//! recorded beside the flag (`datastore/readiness.rs`) so every later warning can name them.
//!
//! Locking first makes sure ClusterInformation exists (upstream's `EnsureInitialized`); the write
//! is an update guarded by the resourceVersion read, tried again when the node agent wrote in
//! between. Locking a locked datastore (or unlocking an unlocked one) writes nothing.

use crate::datastore::readiness::{
    LOCKED_AT_ANNOTATION, LOCKED_BY_ANNOTATION, LockState, WHILE_LOCKED,
};
use crate::datastore::{Datastore, StoreError};
use crate::exec::RunMode;
use crate::exec::actions::Outcome;
use crate::resource::{Kind, ResourceKey};

use super::IpamActionError;

/// How often a write that raced another writer of ClusterInformation is tried.
const ATTEMPTS: usize = 3;

/// Locks (`lock`) or unlocks the datastore; `by` is who asks.
pub async fn set(
    store: &dyn Datastore,
    lock: bool,
    by: &str,
    mode: RunMode,
) -> Result<Outcome, IpamActionError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let verb = if lock { "lock" } else { "unlock" };
    if lock && mode == RunMode::Execute {
        crate::datastore::initialize::ensure_initialized(store).await?;
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut information = match store.get(&key).await {
            Ok(information) => information,
            Err(StoreError::NotFound(_)) if mode == RunMode::DryRun && lock => {
                return Ok(lines(vec![
                    "would create ClusterInformation `default` (as upstream's lock does) with datastoreReady: false".into(),
                    format!("while it is locked, {WHILE_LOCKED}"),
                ]));
            }
            Err(error) => return Err(error.into()),
        };
        let state = LockState::of(&information);
        if state.locked == lock {
            let already = match lock {
                true => format!("The datastore is already locked{}.", state.holder()),
                false => "The datastore is not locked.".to_string(),
            };
            return Ok(lines(vec![already]));
        }
        let annotations = &mut information.metadata.annotations;
        match lock {
            true => {
                annotations.insert(LOCKED_BY_ANNOTATION.into(), by.to_string());
                annotations.insert(
                    LOCKED_AT_ANNOTATION.into(),
                    crate::exec::clock::now_rfc3339(),
                );
            }
            false => {
                annotations.remove(LOCKED_BY_ANNOTATION);
                annotations.remove(LOCKED_AT_ANNOTATION);
            }
        }
        if !information.spec.is_object() {
            information.spec = serde_json::json!({});
        }
        information.spec["datastoreReady"] = serde_json::Value::Bool(!lock);
        if mode == RunMode::DryRun {
            let mut transcript = vec![format!(
                "would {verb} the datastore: ClusterInformation `default` datastoreReady: {} (revision {})",
                !lock,
                information
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap_or("?")
            )];
            if lock {
                transcript.push(format!("while it is locked, {WHILE_LOCKED}"));
            }
            return Ok(lines(transcript));
        }
        match store.update(&information).await {
            Ok(_) => break,
            Err(StoreError::Conflict { .. }) if attempt < ATTEMPTS => continue,
            Err(error) => return Err(error.into()),
        }
    }
    Ok(match lock {
        true => Outcome {
            summary: format!("locked the datastore (as {by})"),
            transcript: vec![
                "Datastore locked.".to_string(),
                format!("While it is locked, {WHILE_LOCKED}."),
                "Unlock it with `netctl datastore migrate unlock` as soon as the migration or IPAM clean-up is done.".to_string(),
            ],
            output: None,
        },
        false => Outcome {
            summary: format!("unlocked the datastore (as {by})"),
            transcript: vec![
                "Datastore unlocked.".to_string(),
                "New pods are networked again; the node agents resume once they see it.".to_string(),
            ],
            output: None,
        },
    })
}

fn lines(transcript: Vec<String>) -> Outcome {
    Outcome {
        summary: transcript.first().cloned().unwrap_or_default(),
        transcript,
        output: None,
    }
}
