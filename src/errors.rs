//! Hints for errors at the edge: `main` prints an error chain, then the first hint any typed error in
//! the chain offers. Typed errors stay in their modules (`ConfigError`, `StoreError`, ...); this file
//! only knows how to ask them for advice.

use crate::cli::KubernetesNotAvailable;
use crate::config::ConfigError;
use crate::datastore::StoreError;
use crate::node::NodeError;

/// The advice for the first error in the chain that has some.
pub fn hint_for(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| {
        if let Some(config) = cause.downcast_ref::<ConfigError>() {
            return config.hint();
        }
        if let Some(store) = cause.downcast_ref::<StoreError>() {
            return store.hint().map(str::to_string);
        }
        if let Some(node) = cause.downcast_ref::<NodeError>() {
            return node.hint();
        }
        if let Some(kubernetes) = cause.downcast_ref::<KubernetesNotAvailable>() {
            return Some(kubernetes.hint().to_string());
        }
        None
    })
}
