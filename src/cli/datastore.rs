//! `netctl datastore migrate lock|unlock` (upstream's command path; `netctl datastore lock|unlock`
//! is the short form): ClusterInformation `datastoreReady` false / true, as a one-step plan with
//! `--dry-run` and the journal.
//!
//! While the datastore is locked new pods get no network, kube-controllers stops its IPAM garbage
//! collection and the node agents restart and wait; `ipam release --from-report` and `ipam split`
//! need it locked, and `version`, `get nodes`, `upgrade plan`, `upgrade status` and the upgrade's
//! pre-flight warn while it is (an upgrade refuses to start).

use std::process::ExitCode;

use clap::Subcommand;

use super::Context;
use super::journaled::{JournalArgs, operator, run_journaled};
use crate::plan::action::DatastoreLock;
use crate::plan::{Action, Plan};

pub const EXAMPLES: &str = "\
Examples:
  netctl datastore migrate lock
  netctl ipam check -o report.json && netctl ipam release --from-report report.json
  netctl datastore migrate unlock
  netctl datastore lock --dry-run";

const LOCK_EXAMPLES: &str = "\
Examples:
  netctl datastore migrate lock
  netctl datastore migrate lock --dry-run
While locked, new pods get no network (the CNI plugin refuses them), kube-controllers stops IPAM
garbage collection, and the node agents restart and wait: unlock as soon as you are done. Who locked
it and when is recorded on ClusterInformation and in the journal.";

const UNLOCK_EXAMPLES: &str = "\
Examples:
  netctl datastore migrate unlock
  netctl datastore unlock --dry-run";

#[derive(Debug, Subcommand)]
pub enum DatastoreCommand {
    /// Datastore migration: lock and unlock
    #[command(subcommand, after_help = EXAMPLES)]
    Migrate(MigrateCommand),
    /// Lock the datastore (the same as `datastore migrate lock`)
    #[command(after_help = LOCK_EXAMPLES)]
    Lock(JournalArgs),
    /// Unlock the datastore (the same as `datastore migrate unlock`)
    #[command(after_help = UNLOCK_EXAMPLES)]
    Unlock(JournalArgs),
}

#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// Lock the datastore: ClusterInformation datastoreReady false (stops networking new pods)
    #[command(after_help = LOCK_EXAMPLES)]
    Lock(JournalArgs),
    /// Unlock the datastore: ClusterInformation datastoreReady true
    #[command(after_help = UNLOCK_EXAMPLES)]
    Unlock(JournalArgs),
}

pub async fn run(context: &Context, command: DatastoreCommand) -> anyhow::Result<ExitCode> {
    let (lock, args) = match command {
        DatastoreCommand::Migrate(MigrateCommand::Lock(args)) | DatastoreCommand::Lock(args) => {
            (true, args)
        }
        DatastoreCommand::Migrate(MigrateCommand::Unlock(args))
        | DatastoreCommand::Unlock(args) => (false, args),
    };
    let store = context.datastore().await?;
    let request = DatastoreLock { by: operator() };
    let (procedure, action, description) = match lock {
        true => (
            "datastore-lock",
            Action::DatastoreLock(request),
            "lock the datastore",
        ),
        false => (
            "datastore-unlock",
            Action::DatastoreUnlock(request),
            "unlock the datastore",
        ),
    };
    let plan = Plan::single(procedure, description, action);
    run_journaled(context, store, &plan, &args, None).await?;
    Ok(ExitCode::SUCCESS)
}
