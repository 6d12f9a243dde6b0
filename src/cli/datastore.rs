//! `netctl datastore migrate lock|unlock` (upstream's command path; `netctl datastore lock|unlock`
//! is the short form): ClusterInformation `datastoreReady` false / true, as a one-step plan with
//! `--dry-run` and the journal; `netctl datastore migrate export` (reads only: the file of
//! `datastore/migration/`) and `netctl datastore migrate import` (the one-step plan
//! `datastore.import`); `netctl datastore backup` (reads only: the file of
//! `datastore/backup.rs`) and `netctl datastore restore` (the one-step plan `datastore.restore`).
//!
//! While the datastore is locked new pods get no network, kube-controllers stops its IPAM garbage
//! collection and the node agents restart and wait; `ipam release --from-report` and `ipam split`
//! need it locked, and `version`, `get nodes`, `upgrade plan`, `upgrade status` and the upgrade's
//! pre-flight warn while it is (an upgrade refuses to start).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Subcommand;

use super::Context;
use super::journaled::{JournalArgs, operator, run_journaled};
use super::migrate_import::{IMPORT_EXAMPLES, ImportArgs, import};
use crate::datastore::{backup, migration, snapshot};
use crate::exec::actions::ipam::restore::file_digest;
use crate::output::PhaseClock;
use crate::plan::action::{DatastoreLock, DatastoreMigratePolicyNames, DatastoreRestore};
use crate::plan::{Action, Plan};

pub const EXAMPLES: &str = "\
Examples:
  netctl datastore migrate lock
  netctl datastore migrate export -o calico-migration.txt
  netctl -c kubernetes.yaml datastore migrate import -f calico-migration.txt
  netctl datastore backup -o calico-backup.jsonl
  netctl datastore restore -f calico-backup.jsonl --dry-run
  netctl datastore migrate lock
  netctl ipam check -o report.json && netctl ipam release --from-report report.json
  netctl datastore migrate unlock
  netctl datastore lock --dry-run
  netctl datastore migrate-policy-names --dry-run";

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
  netctl datastore backup -o calico-backup.jsonl --no-snapshot
  netctl datastore backup > calico-backup.jsonl
Every resource of every kind as stored (WorkloadEndpoints and Profiles too), ClusterInformation and
the IPAM objects (blocks, affinities, handles, configuration; keyed by etcd path as upstream's
migration export keys them), on etcd and on Kubernetes; nothing is locked and nothing renamed. One
JSON value a line, read back by `netctl datastore restore`. `upgrade apply` takes one into its state
directory before its first write.
On etcd, `-o FILE` also saves an etcd snapshot through the maintenance API beside it,
FILE.etcd-snapshot.db (what `etcdctl snapshot save` writes; restore a whole cluster from it with
`etcdutl snapshot restore`), its size and closing sha256 checked; `--no-snapshot` skips it.";

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

const POLICY_NAMES_EXAMPLES: &str = "\
Examples:
  netctl datastore migrate-policy-names --dry-run
  netctl datastore migrate-policy-names
On an etcd datastore upgraded in place to v3.32 (OpenStack and other platforms without
kube-controllers), moves each default-tier policy still stored as `default.<name>` (as v3.29-v3.31
wrote it) to its own name, as v3.32 stores it; prints how many. Each move is one transaction, so a
policy is never under two names or none; safe to run again (the second run renames 0). Refused,
before anything is written, when another policy already holds a policy's own name (upstream keeps
that one and deletes the other), on the Kubernetes datastore (kube-controllers moves them there),
and on a cluster before v3.32 (`--allow-version-mismatch` overrides that).";

#[derive(Debug, Subcommand)]
pub enum DatastoreCommand {
    /// Write a backup of the whole datastore (resources, ClusterInformation, IPAM)
    #[command(after_help = BACKUP_EXAMPLES)]
    Backup(BackupArgs),
    /// Put a backup back into the datastore it was taken of
    #[command(after_help = RESTORE_EXAMPLES)]
    Restore(RestoreArgs),
    /// Datastore migration: lock, export, import, unlock
    #[command(subcommand, after_help = EXAMPLES)]
    Migrate(MigrateCommand),
    /// Rename default-tier policies stored as `default.<name>` to their own names (etcd, v3.32)
    #[command(after_help = POLICY_NAMES_EXAMPLES)]
    MigratePolicyNames(JournalArgs),
    /// Lock the datastore (the same as `datastore migrate lock`)
    #[command(after_help = LOCK_EXAMPLES)]
    Lock(JournalArgs),
    /// Unlock the datastore (the same as `datastore migrate unlock`)
    #[command(after_help = UNLOCK_EXAMPLES)]
    Unlock(JournalArgs),
}

const EXPORT_EXAMPLES: &str = "\
Examples:
  netctl datastore migrate lock
  netctl datastore migrate export -o calico-migration.txt
  netctl datastore migrate export > calico-migration.txt
Upstream's format (`calicoctl datastore migrate export`, which `calicoctl datastore migrate import`
reads too): the resources as YAML, one List per kind (IPPools, BGPPeers, Tiers,
GlobalNetworkPolicies, StagedGlobalNetworkPolicies, GlobalNetworkSets, HostEndpoints,
KubeControllersConfigurations, NetworkPolicies, StagedNetworkPolicies,
StagedKubernetesNetworkPolicies, NetworkSets, Nodes, BGPConfigurations, FelixConfigurations,
IPReservations, BGPFilters), `===`, ClusterInformation as JSON, `===`, the IPAM objects as JSON
keyed by etcd path. Only from an etcd datastore, and only while it is locked.
Left out: WorkloadEndpoints (Pods on Kubernetes), Profiles (Namespaces and ServiceAccounts), and
NetworkPolicies named `knp.default.*` (kube-controllers' copies of Kubernetes NetworkPolicies).
Nodes are renamed to their Kubernetes node names (their `k8s` orchestrator reference) where
upstream renames them: the Node, `node.<name>` FelixConfigurations and BGPConfigurations, block
affinities, blocks and tunnel-address handles. Beyond upstream, netctl also renames
HostEndpoint.spec.node and BGPPeer.spec.node: upstream leaves them at the etcd names, so after its
migration those host endpoints' policy no longer applies. A node without a Kubernetes name is
refused by name. The export reads a page at a time: memory stays flat however large the datastore.";

#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// Write the etcd datastore's contents in upstream's migration format
    #[command(after_help = EXPORT_EXAMPLES)]
    Export(ExportArgs),
    /// Import a migration export into the Kubernetes datastore
    #[command(after_help = IMPORT_EXAMPLES)]
    Import(ImportArgs),
    /// Lock the datastore: ClusterInformation datastoreReady false (stops networking new pods)
    #[command(after_help = LOCK_EXAMPLES)]
    Lock(JournalArgs),
    /// Unlock the datastore: ClusterInformation datastoreReady true
    #[command(after_help = UNLOCK_EXAMPLES)]
    Unlock(JournalArgs),
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Write the export to FILE (owner-only, complete or absent) instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// Write the backup to FILE (owner-only, complete or absent) instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// On etcd, do not save an etcd snapshot beside the backup file
    #[arg(long)]
    pub no_snapshot: bool,
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
        DatastoreCommand::MigratePolicyNames(args) => {
            return migrate_policy_names(context, args).await;
        }
        DatastoreCommand::Migrate(MigrateCommand::Export(args)) => {
            return export(context, args).await;
        }
        DatastoreCommand::Migrate(MigrateCommand::Import(args)) => {
            return import(context, args).await;
        }
        DatastoreCommand::Migrate(MigrateCommand::Lock(args)) | DatastoreCommand::Lock(args) => {
            (true, args)
        }
        DatastoreCommand::Migrate(MigrateCommand::Unlock(args))
        | DatastoreCommand::Unlock(args) => (false, args),
    };
    let store = context.datastore().await?;
    let request = DatastoreLock {
        by: operator(),
        datastore: Default::default(),
    };
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
    if args.no_snapshot || store.kind() != crate::datastore::DatastoreType::EtcdV3 {
        return Ok(ExitCode::SUCCESS);
    }
    let Some(path) = &args.output else {
        context.printer.say(
            "No etcd snapshot: the backup went to stdout (with `-o FILE` one is saved beside it).",
        );
        return Ok(ExitCode::SUCCESS);
    };
    let saved = match snapshot::save_beside(store.as_ref(), path).await {
        // etcd lets only root take snapshots: the backup file stands alone.
        Err(error) if error.is_not_permitted() => {
            context.printer.warn(format!(
                "no etcd snapshot beside the backup: the etcd user may not take one (etcd lets only root); pass `--no-snapshot` to not ask ({})",
                crate::errors::error_chain(&error)
            ));
            return Ok(ExitCode::SUCCESS);
        }
        saved => saved.with_context(|| format!("the backup `{}` is whole, but", path.display()))?,
    };
    if let Some((snapshot_path, taken)) = saved {
        context.printer.say(format!(
            "Saved an etcd snapshot of `{}` to `{}` ({} bytes, sha256 {} checked).",
            taken.member,
            snapshot_path.display(),
            taken.bytes,
            taken.sha256
        ));
    }
    Ok(ExitCode::SUCCESS)
}

async fn migrate_policy_names(context: &Context, args: JournalArgs) -> anyhow::Result<ExitCode> {
    let store = context.datastore().await?;
    let request = DatastoreMigratePolicyNames {
        allow_version_mismatch: context.global.allow_version_mismatch,
    };
    let plan = Plan::single(
        "datastore-migrate-policy-names",
        "rename default-tier policies stored as `default.<name>` to their own names",
        Action::DatastoreMigratePolicyNames(request),
    );
    run_journaled(context, store, &plan, &args, None).await?;
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

async fn export(context: &Context, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let mut clock = PhaseClock::new(&context.printer);
    let store = context.datastore().await?;
    // Refused here (not etcd, not locked, a node without a Kubernetes name) before a byte.
    let names = migration::export::prepare(store.as_ref()).await?;
    clock.mark("connect, check the lock, read the node names");
    let exported = match &args.output {
        Some(path) => {
            let lister = migration::export::Lister::Pipelined(Arc::clone(&store));
            migration::export::export_to_file(lister, &names, path, &mut clock).await?
        }
        None => {
            let mut stdout = std::io::BufWriter::new(context.printer.stdout());
            let exported = migration::export::export_pipelined(
                Arc::clone(&store),
                &names,
                &mut stdout,
                "-",
                &mut clock,
            )
            .await?;
            stdout.flush()?;
            exported
        }
    };
    let place = match &args.output {
        Some(path) => format!(" to `{}`", path.display()),
        None => String::new(),
    };
    context.printer.say(format!(
        "Exported {} resource(s) and {} IPAM object(s){place}.",
        exported.resources, exported.ipam
    ));
    context.printer.say(format!(
        "Renamed {} node(s) to their Kubernetes names, and (beyond upstream) the node of {} HostEndpoint(s) and BGPPeer(s) with them.",
        exported.renamed_nodes, exported.renamed_node_references
    ));
    context.printer.say(format!(
        "Left out: {}{}.",
        migration::LEFT_OUT,
        match exported.kubernetes_policies {
            0 => String::new(),
            count => format!(" ({count} `knp.default.*` NetworkPolicy(ies) here)"),
        }
    ));
    Ok(ExitCode::SUCCESS)
}
