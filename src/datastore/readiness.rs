//! Whether the datastore is locked: ClusterInformation `default` `spec.datastoreReady` false, as
//! upstream's `datastore migrate lock` leaves it (`calicoctl/calicoctl/commands/datastore/migrate/
//! lock.go`), and who locked it and when when netctl did (two annotations netctl writes beside
//! the flag; upstream components ignore them).
//!
//! While the datastore is locked the CNI plugin refuses to network new pods ("Calico is currently
//! not ready to process requests"), kube-controllers' IPAM garbage collection stops, and Felix
//! restarts and waits. A lock forgotten after a migration or an IPAM clean-up is an outage for every
//! new pod, so commands that show the cluster's state say so loudly ([`LockState::warning`]).

use super::{Datastore, StoreError};
use crate::resource::{Kind, Resource, ResourceKey};

/// The annotation netctl writes on ClusterInformation when it locks: who (`user@host`).
pub const LOCKED_BY_ANNOTATION: &str = "netctl.projectcalico.org/locked-by";

/// The annotation netctl writes on ClusterInformation when it locks: when (RFC 3339).
pub const LOCKED_AT_ANNOTATION: &str = "netctl.projectcalico.org/locked-at";

/// What stops while the datastore is locked, for messages.
pub const WHILE_LOCKED: &str = "new pods get no network (the CNI plugin refuses them), kube-controllers stops IPAM garbage collection, and the node agents restart and wait";

/// The lock state of a datastore.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockState {
    pub locked: bool,
    /// `user@host`, when netctl locked it.
    pub by: Option<String>,
    /// When, when netctl locked it.
    pub since: Option<String>,
}

impl LockState {
    /// The state ClusterInformation `default` records.
    pub fn of(information: &Resource) -> LockState {
        let annotation = |name: &str| information.metadata.annotations.get(name).cloned();
        let locked = information.spec["datastoreReady"] == serde_json::Value::Bool(false);
        LockState {
            locked,
            by: annotation(LOCKED_BY_ANNOTATION).filter(|_| locked),
            since: annotation(LOCKED_AT_ANNOTATION).filter(|_| locked),
        }
    }

    /// Who locked it and when, as far as known: ` (by ops@bastion since 2026-08-20T10:00:00Z)`.
    pub fn holder(&self) -> String {
        match (&self.by, &self.since) {
            (Some(by), Some(since)) => format!(" (by {by} since {since})"),
            (Some(by), None) => format!(" (by {by})"),
            (None, Some(since)) => format!(" (since {since})"),
            (None, None) => String::new(),
        }
    }

    /// The warning commands print while the datastore is locked; `None` when it is not.
    pub fn warning(&self) -> Option<String> {
        self.locked.then(|| {
            format!(
                "the datastore is LOCKED{} (ClusterInformation `default` has datastoreReady: false): {WHILE_LOCKED}; unlock it with `netctl datastore migrate unlock` once the migration or IPAM clean-up is done",
                self.holder()
            )
        })
    }
}

/// Reads the lock state; a missing ClusterInformation is an unlocked datastore (nothing has
/// initialised it, so nothing locked it either).
pub async fn lock_state(store: &dyn Datastore) -> Result<LockState, StoreError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    match store.get(&key).await {
        Ok(information) => Ok(LockState::of(&information)),
        Err(StoreError::NotFound(_)) => Ok(LockState::default()),
        Err(error) => Err(error),
    }
}

/// Warns through `printer` when the datastore is locked (a read that fails says nothing: the
/// command's own reads report the datastore's trouble).
pub async fn warn_if_locked(store: &dyn Datastore, printer: &crate::output::Printer) {
    if let Ok(state) = lock_state(store).await {
        if let Some(warning) = state.warning() {
            printer.warn(warning);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_who_locked_and_what_stops() {
        let mut information = Resource::new(Kind::ClusterInformation, "default");
        information.spec = serde_json::json!({"datastoreReady": true});
        assert_eq!(LockState::of(&information).warning(), None);
        information.spec = serde_json::json!({"datastoreReady": false});
        information
            .metadata
            .annotations
            .insert(LOCKED_BY_ANNOTATION.into(), "ops@bastion".into());
        information
            .metadata
            .annotations
            .insert(LOCKED_AT_ANNOTATION.into(), "2026-08-20T10:00:00Z".into());
        let warning = LockState::of(&information).warning().unwrap();
        assert!(
            warning
                .starts_with("the datastore is LOCKED (by ops@bastion since 2026-08-20T10:00:00Z)"),
            "{warning}"
        );
        assert!(warning.contains("new pods get no network"), "{warning}");
        // Upstream's lock (no annotations) warns as loudly.
        information.metadata.annotations.clear();
        assert!(
            LockState::of(&information)
                .warning()
                .unwrap()
                .starts_with("the datastore is LOCKED (ClusterInformation")
        );
    }
}
