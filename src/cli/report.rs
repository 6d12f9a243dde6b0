//! What `main` prints for an error that ends a command: the error with its causes (`a: b: c`, see
//! `errors::error_chain`), and the advice of the first error in that chain that offers some.
//!
//! Advice comes only from typed errors' [`Hint`] implementations, never from the text of a message.
//! Typed errors stay in their modules; this file only knows which ones can be asked.

use super::UpgradeApplyError;
use super::get_forms::{JsonPathError, TargetError};
use super::modeline::ModelineError;
use super::runbook::LintFailed;
use crate::config::ConfigError;
use crate::datastore::StoreError;
use crate::datastore::connect::ConnectError;
use crate::datastore::etcd::EtcdError;
use crate::datastore::kube::KubeError;
use crate::errors::{Hint, error_chain};
use crate::exec::ExecError;
use crate::exec::actions::StepError;
use crate::exec::lock::LockError;
use crate::node::NodeError;
use crate::output::OutputFormatError;
use crate::plan::catalog::CatalogError;
use crate::plan::overlay::OverlayError;
use crate::plan::release::VersionCheckError;
use crate::plan::request::RequestError;
use crate::plan::{FactError, PlanError, PlanFileError};
use crate::release::ReleaseFlagError;
use crate::resource::UnknownKind;
use crate::resource::selector::SelectorError;
use crate::runbook::RunbookError;

/// The message and the advice to print for an error that ends a command.
pub fn report(error: &anyhow::Error) -> (String, Option<String>) {
    (error_chain(error.as_ref()), hint_for(error))
}

/// The advice of the first error in the chain, outermost first, that offers some.
pub fn hint_for(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| advising(cause)?.hint())
}

/// `cause` as an error with advice, when it is one of the types that offer some. The one list
/// of them: an error type with a [`Hint`] belongs here.
fn advising<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Hint> {
    macro_rules! advising {
        ($($error:ty),* $(,)?) => {
            $(
                if let Some(error) = cause.downcast_ref::<$error>() {
                    return Some(error);
                }
            )*
        };
    }
    advising!(
        ConfigError,
        ConnectError,
        StoreError,
        EtcdError,
        KubeError,
        NodeError,
        StepError,
        ExecError,
        LockError,
        UpgradeApplyError,
        VersionCheckError,
        RequestError,
        PlanError,
        PlanFileError,
        FactError,
        OverlayError,
        CatalogError,
        RunbookError,
        OutputFormatError,
        LintFailed,
        UnknownKind,
        SelectorError,
        JsonPathError,
        TargetError,
        ReleaseFlagError,
        ModelineError,
    );
    None
}
