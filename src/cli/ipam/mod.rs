//! `netctl ipam`: the IP address management of the cluster — `show`, `check`, `release`, `split`
//! and `configure`, on etcd and on Kubernetes alike.
//!
//! Each subcommand turns its flags into a request: the reads (`show`, `check`) stream the IPAM
//! objects through the datastore's `IpamStore` into the domain work of [`crate::ipam`]; the writes
//! (`release`, `split`, `configure`) are one-step plans run by the one executor, with `--dry-run`,
//! the journal and Ctrl-C handling as every other write.

mod check;
mod configure;
mod release;
mod show;
mod split;

use std::process::ExitCode;

use clap::Subcommand;

use super::Context;
use crate::datastore::Datastore;
use crate::datastore::ipam::IpamStore;

pub const EXAMPLES: &str = "\
Examples:
  netctl ipam show
  netctl ipam show --show-blocks
  netctl ipam show --ip 10.65.79.2
  netctl ipam check --show-problem-ips -o report.json
  netctl datastore migrate lock && netctl ipam check -o report.json
  netctl ipam release --from-report report.json --dry-run
  netctl ipam split 2 --name default-ipv4-ippool
  netctl ipam configure --strictaffinity=true";

#[derive(Debug, Subcommand)]
pub enum IpamCommand {
    /// Show address use per pool and block, one address, borrowed addresses or the allocator's configuration
    #[command(after_help = show::EXAMPLES)]
    Show(show::ShowArgs),
    /// Check IPAM against what uses addresses: leaked addresses and handles, addresses without an allocation
    #[command(after_help = check::EXAMPLES)]
    Check(check::CheckArgs),
    /// Release addresses, or what `ipam check` reports call leaked (addresses and handles)
    #[command(after_help = release::EXAMPLES)]
    Release(release::ReleaseArgs),
    /// Split an IP pool into 2^k equal pools (needs the datastore locked)
    #[command(after_help = split::EXAMPLES)]
    Split(split::SplitArgs),
    /// Change the allocator's configuration (strict affinity, blocks per host, KubeVirt addresses)
    #[command(after_help = configure::EXAMPLES)]
    Configure(configure::ConfigureArgs),
}

pub async fn run(context: &Context, command: IpamCommand) -> anyhow::Result<ExitCode> {
    match command {
        IpamCommand::Show(args) => show::run(context, args).await,
        IpamCommand::Check(args) => check::run(context, args).await,
        IpamCommand::Release(args) => release::run(context, args).await,
        IpamCommand::Split(args) => split::run(context, args).await,
        IpamCommand::Configure(args) => configure::run(context, args).await,
    }
}

/// The IPAM of a datastore; every backend netctl connects to has one.
fn ipam_of(store: &dyn Datastore) -> anyhow::Result<&dyn IpamStore> {
    store
        .ipam()
        .ok_or_else(|| anyhow::anyhow!("the `{}` datastore keeps no IPAM data", store.kind()))
}
