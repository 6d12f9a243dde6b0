//! `netctl datastore migrate lock|unlock` (upstream's command path; `netctl datastore lock|unlock`
//! is the short form): ClusterInformation `datastoreReady` false / true, as a one-step plan with
//! `--dry-run` and the journal; `netctl datastore backup` (reads only: the file of
//! `datastore/backup.rs`) and `netctl datastore restore` (the one-step plan `datastore.restore`).
//!
//! While the datastore is locked new pods get no network, kube-controllers stops its IPAM garbage
//! collection and the node agents restart and wait; `ipam release --from-report` and `ipam split`
//! need it locked, and `version`, `get nodes`, `upgrade plan`, `upgrade status` and the upgrade's
//! pre-flight warn while it is (an upgrade refuses to start).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;

use super::Context;
use super::journaled::{JournalArgs, operator, run_journaled};
use crate::datastore::backup;
use crate::exec::actions::ipam::restore::file_digest;
use crate::plan::action::{DatastoreLock, DatastoreRestore};
use crate::plan::{Action, Plan};

pub const EXAMPLES: &str = "\
Examples:
  netctl datastore backup -o calico-backup.jsonl
  netctl datastore restore -f calico-backup.jsonl --dry-run
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

const BACKUP_EXAMPLES: &str = "\
Examples:
  netctl datastore backup -o calico-backup.jsonl
  netctl datastore backup > calico-backup.jsonl
Every resource of every kind as stored (WorkloadEndpoints and Profiles too), ClusterInformation and
the IPAM objects (blocks, affinities, handles, configuration; keyed by etcd path as upstream's
migration export keys them), on etcd and on Kubernetes; nothing is locked and nothing renamed. One
JSON value a line, read back by `netctl datastore restore`. `upgrade apply` takes one into its state
directory before its first write.";

const RESTORE_EXAMPLES: &str = "\
Examples:
  netctl datastore restore -f calico-backup.jsonl --dry-run
  netctl datastore restore -f calico-backup.jsonl
  netctl datastore restore -f calico-backup.jsonl --include-ipam
Resources are written as `apply` writes them: created when missing, updated when different, undone on
a failure or Ctrl-C; resources created since the backup are left alone. The dry run shows the
difference resource by resource. IPAM objects are compared always and written only with
--include-ipam, because live allocations move (never undone: a second run finishes the rest). On
Kubernetes, Profiles and WorkloadEndpoints are derived from Namespaces and Pods and not restored.";

#[derive(Debug, Subcommand)]
pub enum DatastoreCommand {
    /// Write a backup of the whole datastore (resources, ClusterInformation, IPAM)
    #[command(after_help = BACKUP_EXAMPLES)]
    Backup(BackupArgs),
    /// Put a backup back into the datastore it was taken of
    #[command(after_help = RESTORE_EXAMPLES)]
    Restore(RestoreArgs),
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

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// Write the backup to FILE (owner-only, complete or absent) instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The backup, as `netctl datastore backup` wrote it
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: PathBuf,
    /// Restore the IPAM objects too (blocks, affinities, handles, configuration)
    #[arg(long)]
    pub include_ipam: bool,
    #[command(flatten)]
    pub journal: JournalArgs,
}

pub async fn run(context: &Context, command: DatastoreCommand) -> anyhow::Result<ExitCode> {
    let (lock, args) = match command {
        DatastoreCommand::Backup(args) => return take_backup(context, args).await,
        DatastoreCommand::Restore(args) => return restore(context, args).await,
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

async fn take_backup(context: &Context, args: BackupArgs) -> anyhow::Result<ExitCode> {
    let store = context.datastore().await?;
    let taken_at = crate::exec::now_rfc3339();
    let counts = match &args.output {
        Some(path) => backup::write_file(store.as_ref(), &taken_at, path).await?,
        None => {
            let mut stdout = std::io::BufWriter::new(context.printer.stdout());
            let counts =
                backup::write(store.as_ref(), &taken_at, &mut stdout, &PathBuf::from("-")).await?;
            stdout.flush()?;
            counts
        }
    };
    let place = match &args.output {
        Some(path) => format!(" to `{}`", path.display()),
        None => String::new(),
    };
    context.printer.say(format!(
        "Backed up {} resource(s) and {} IPAM object(s){place}.",
        counts.resources, counts.ipam
    ));
    Ok(ExitCode::SUCCESS)
}

async fn restore(context: &Context, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let file = args.filename.display().to_string();
    let sha256 =
        file_digest(&args.filename).with_context(|| format!("cannot read the backup `{file}`"))?;
    // Refused here, before connecting, when the file is no whole backup.
    backup::check(&args.filename)?;
    let store = context.datastore().await?;
    let request = DatastoreRestore {
        file,
        sha256,
        include_ipam: args.include_ipam,
        kinds: Vec::new(),
    };
    let plan = Plan::single(
        "datastore-restore",
        "restore the datastore from a backup",
        Action::DatastoreRestore(request),
    );
    run_journaled(context, store, &plan, &args.journal, None).await?;
    Ok(ExitCode::SUCCESS)
}
