//! What `main` prints for an error that ends a command: the error with its causes (`a: b: c`, see
//! `errors::error_chain`), and the advice of the first error in that chain that offers some.
//!
//! Advice comes only from typed errors' `hint()` methods, never from the text of a message. Typed
//! errors stay in their modules; this file only knows which ones can be asked.

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
use crate::datastore::ipam::IpamError;
use crate::diagnose::DiagnoseError;
use crate::errors::error_chain;
use crate::exec::ExecError;
use crate::exec::actions::StepError;
use crate::exec::actions::ipam::IpamActionError;
use crate::exec::history::HistoryError;
use crate::exec::lock::LockError;
use crate::ipam::report::ReportError;
use crate::ipam::split::SplitError;
use crate::node::NodeError;
use crate::node::checksystem::CheckSystemError;
use crate::node::status::LocalStatusError;
use crate::output::OutputFormatError;
use crate::plan::catalog::CatalogError;
use crate::plan::overlay::OverlayError;
use crate::plan::release::VersionCheckError;
use crate::plan::request::RequestError;
use crate::plan::rollback::RollbackRefused;
use crate::plan::{FactError, PlanError, PlanFileError};
use crate::release::ReleaseFlagError;
use crate::resource::UnknownKind;
use crate::resource::selector::SelectorError;
use crate::runbook::RunbookError;

/// The message and the advice to print for an error that ends a command.
pub fn report(error: &anyhow::Error) -> (String, Option<String>) {
    (error_chain(error.as_ref()), hint_for(error))
}

/// The advice for the first error in the chain that has some.
pub fn hint_for(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| {
        macro_rules! ask {
            ($($error:ty),* $(,)?) => {
                $(
                    if let Some(error) = cause.downcast_ref::<$error>() {
                        return error.hint().advice();
                    }
                )*
            };
        }
        ask!(
            ConfigError,
            ConnectError,
            StoreError,
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
            ReportError,
            SplitError,
            UpgradeVerifyError,
            UpgradeRollbackError,
            RollbackRefused,
        );
        None
    })
}

/// The forms `hint()` methods answer in, as the one `report` prints.
trait Advice {
    fn advice(self) -> Option<String>;
}

impl Advice for Option<String> {
    fn advice(self) -> Option<String> {
        self
    }
}

impl Advice for Option<&'static str> {
    fn advice(self) -> Option<String> {
        self.map(str::to_string)
    }
}

impl Advice for String {
    fn advice(self) -> Option<String> {
        Some(self)
    }
}

impl Advice for &'static str {
    fn advice(self) -> Option<String> {
        Some(self.to_string())
    }
}
