//! Hints for errors at the edge: `main` prints an error chain, then the first hint any typed error in
//! the chain offers. Typed errors stay in their modules (`ConfigError`, `StoreError`, ...); this file
//! only knows how to ask them for advice.

use crate::cli::KubernetesNotAvailable;
use crate::cli::UpgradeApplyError;
use crate::config::ConfigError;
use crate::datastore::StoreError;
use crate::exec::ExecError;
use crate::exec::lock::LockError;

/// The advice for the first error in the chain that has some.
pub fn hint_for(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| {
        if let Some(config) = cause.downcast_ref::<ConfigError>() {
            return config.hint();
        }
        if let Some(store) = cause.downcast_ref::<StoreError>() {
            return store.hint().map(str::to_string);
        }
        if let Some(exec) = cause.downcast_ref::<ExecError>() {
            return exec.hint();
        }
        if let Some(lock) = cause.downcast_ref::<LockError>() {
            return lock.hint();
        }
        if let Some(upgrade) = cause.downcast_ref::<UpgradeApplyError>() {
            return upgrade.hint();
        }
        if let Some(kubernetes) = cause.downcast_ref::<KubernetesNotAvailable>() {
            return Some(kubernetes.hint().to_string());
        }
        None
    })
}
