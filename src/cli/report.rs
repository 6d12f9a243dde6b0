//! What `main` prints for an error that ends a command: the error with its causes (`a: b: c`, see
//! `errors::error_chain`), and the advice of the first error in that chain that offers some.
//!
//! Advice comes only from typed errors' [`Hint`] implementations, never from the text of a message.
//! Typed errors stay in their modules; this file only knows which ones can be asked.

use std::path::Path;

use super::UpgradeApplyError;
use super::get_forms::{GoTemplateError, JsonPathError, TargetError};
use super::modeline::ModelineError;
use super::node_status::NodeStatusCommandError;
use super::runbook::LintFailed;
use super::upgrade_rollback::UpgradeRollbackError;
use super::upgrade_verify::UpgradeVerifyError;
use crate::config::ConfigError;
use crate::datastore::StoreError;
use crate::datastore::backup::BackupError;
use crate::datastore::connect::ConnectError;
use crate::datastore::etcd::EtcdError;
use crate::datastore::ipam::IpamError;
use crate::datastore::kube::KubeError;
use crate::datastore::migration::MigrationError;
use crate::datastore::migration::crds::CrdManifestError;
use crate::datastore::snapshot::SnapshotError;
use crate::diagnose::DiagnoseError;
use crate::errors::{Hint, error_chain, error_chain_with};
use crate::exec::ExecError;
use crate::exec::actions::StepError;
use crate::exec::actions::ipam::IpamActionError;
use crate::exec::actions::resource::ResourceActionError;
use crate::exec::history::HistoryError;
use crate::exec::lock::LockError;
use crate::ipam::report::ReportError;
use crate::ipam::split::SplitError;
use crate::listing::{Limit, Listed};
use crate::node::NodeError;
use crate::node::checksystem::CheckSystemError;
use crate::node::status::LocalStatusError;
use crate::output::OutputFormatError;
use crate::output::Printer;
use crate::plan::catalog::CatalogError;
use crate::plan::overlay::OverlayError;
use crate::plan::release::VersionCheckError;
use crate::plan::request::RequestError;
use crate::plan::rollback::RollbackRefused;
use crate::plan::{FactError, PlanError, PlanFileError};
use crate::release::ReleaseFlagError;
use crate::resource::LoadError;
use crate::resource::UnknownKind;
use crate::resource::selector::SelectorError;
use crate::runbook::RunbookError;

/// The message and the advice to print for an error that ends a command. A list of problems in
/// the chain is listed as the printer's limit says (`--all-errors`; with `--errors-file` it is
/// written to the file whole and counted on screen).
pub fn report(error: &anyhow::Error, printer: &Printer) -> (String, Option<String>) {
    let limit = match printer.listing() {
        Limit::WrittenTo(path) => match write_errors_file(&path, error) {
            Ok(true) => Limit::WrittenTo(path),
            Ok(false) => Limit::Bounded,
            Err(failure) => {
                printer.warn(format!(
                    "cannot write the errors file `{}` ({failure}); listing them here",
                    path.display()
                ));
                Limit::All
            }
        },
        other => other,
    };
    let message = match limit {
        Limit::Bounded => error_chain(error.as_ref()),
        limit => error_chain_with(error.as_ref(), |cause| listing(cause)?.listed(&limit)),
    };
    (message, hint_for(error))
}

/// Writes the error that ends a command to `path` (`--errors-file`) with every problem of its
/// listings; `Ok(false)` when it lists none (the file is left alone: a command that lists its
/// findings itself, `runbook lint`, wrote them there).
fn write_errors_file(path: &Path, error: &anyhow::Error) -> std::io::Result<bool> {
    if !error.chain().any(|cause| every_problem(cause).is_some()) {
        return Ok(false);
    }
    let text = error_chain_with(error.as_ref(), every_problem);
    std::fs::write(path, text + "\n")?;
    Ok(true)
}

/// `cause` with every problem it lists, when it lists some.
fn every_problem(cause: &(dyn std::error::Error + 'static)) -> Option<String> {
    listing(cause)?.listed(&Limit::All)
}

/// `cause` as an error that lists problems, when it is one. The one list of them: an error type
/// that implements [`Listed`] belongs here.
fn listing<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Listed> {
    macro_rules! listing {
        ($($error:ty),* $(,)?) => {
            $(
                if let Some(error) = cause.downcast_ref::<$error>() {
                    return Some(error);
                }
            )*
        };
    }
    listing!(LoadError, StepError, ResourceActionError);
    None
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
        LocalStatusError,
        CheckSystemError,
        NodeStatusCommandError,
        DiagnoseError,
        StepError,
        ExecError,
        LockError,
        HistoryError,
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
        GoTemplateError,
        TargetError,
        ReleaseFlagError,
        ModelineError,
        IpamActionError,
        IpamError,
        BackupError,
        SnapshotError,
        MigrationError,
        CrdManifestError,
        ReportError,
        SplitError,
        UpgradeVerifyError,
        UpgradeRollbackError,
        RollbackRefused,
    );
    None
}
