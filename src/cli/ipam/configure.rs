//! `netctl ipam configure`: change the allocator's configuration — StrictAffinity,
//! MaxBlocksPerHost (v3.30+), KubeVirtVMAddressPersistence (v3.32+) — as upstream's `ipam
//! configure` does, on what the allocator reads (`/calico/ipam/v2/config` on etcd, `ipamconfigs`
//! `default` on Kubernetes). The change is the `ipam.configure` action.

use std::process::ExitCode;

use super::Context;
use crate::cli::journaled::{JournalArgs, run_journaled};
use crate::exec::actions::ipam::configure::check_change;
use crate::ipam::config::ConfigChange;
use crate::plan::action::IpamConfigure;
use crate::plan::{Action, Plan};

pub const EXAMPLES: &str = "\
Examples:
  netctl ipam configure --strictaffinity=true
  netctl ipam configure --max-blocks-per-host 4 --dry-run
  netctl ipam configure --kubevirt-ip-persistence Disabled
On etcd this changes `/calico/ipam/v2/config` (what the allocator reads), not the IPAMConfiguration
resource `default` (`netctl get ipamconfigurations`), which is a different object there.";

#[derive(Debug, clap::Args)]
pub struct ConfigureArgs {
    /// Whether borrowing addresses from other nodes' blocks is refused
    #[arg(long = "strictaffinity", value_name = "true|false")]
    strict_affinity: Option<bool>,
    /// The most blocks one node may hold (0: no limit); v3.30+
    #[arg(long, value_name = "NUMBER", allow_negative_numbers = true)]
    max_blocks_per_host: Option<i64>,
    /// Whether KubeVirt VMs keep their addresses across restarts and migrations; v3.32+
    #[arg(long = "kubevirt-ip-persistence", value_name = "Enabled|Disabled")]
    kubevirt_ip_persistence: Option<String>,
    #[command(flatten)]
    journal: JournalArgs,
}

pub async fn run(context: &Context, args: ConfigureArgs) -> anyhow::Result<ExitCode> {
    let change = ConfigChange {
        strict_affinity: args.strict_affinity,
        max_blocks_per_host: args.max_blocks_per_host,
        kubevirt_ip_persistence: args.kubevirt_ip_persistence,
    };
    // What needs no datastore is refused before connecting.
    check_change(&change, None)?;
    let store = context.datastore().await?;
    let plan = Plan::single(
        "ipam-configure",
        "change the IPAM configuration",
        Action::IpamConfigure(IpamConfigure { change }),
    );
    run_journaled(context, store, &plan, &args.journal, None).await?;
    Ok(ExitCode::SUCCESS)
}
