//! Hints for errors at the edge: `main` prints an error chain, then the first hint any typed error in
//! the chain offers. Typed errors stay in their modules (`ConfigError`, `StoreError`, ...); this file
//! only knows how to ask them for advice.

use crate::cli::ClusterTooNew;
use crate::cli::UpgradeApplyError;
use crate::config::ConfigError;
use crate::datastore::StoreError;
use crate::exec::ExecError;
use crate::exec::actions::StepError;
use crate::exec::lock::LockError;
use crate::node::NodeError;

/// The message and the advice to print for an error that ends a command.
///
/// Advice comes from two places: typed errors that offer a `hint()` method (asked through
/// [`hint_for`]), and errors whose message ends in a `hint: ...` line. Both are printed the same way,
/// on their own line under the error.
pub fn report(error: &anyhow::Error) -> (String, Option<String>) {
    let text = format!("{error:#}");
    let mut hints: Vec<String> = Vec::new();
    let mut message_lines = Vec::new();
    for line in text.lines() {
        match line.trim_start().strip_prefix("hint: ") {
            Some(hint) => hints.push(hint.to_string()),
            None => message_lines.push(line),
        }
    }
    if let Some(hint) = hint_for(error)
        && !hints.contains(&hint)
    {
        hints.push(hint);
    }
    let hint = (!hints.is_empty()).then(|| hints.join("\n        "));
    (message_lines.join("\n"), hint)
}

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
        if let Some(step) = cause.downcast_ref::<StepError>() {
            return step.hint();
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
        if let Some(too_new) = cause.downcast_ref::<ClusterTooNew>() {
            return Some(too_new.hint().to_string());
        }
        None
    })
}
