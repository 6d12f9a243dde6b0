//! `netctl ipam split N (--cidr C | --name P)`: a pool replaced by N equal children (a power of
//! two), as upstream's `ipam split` does; refused before anything is written when the datastore is
//! not locked, N is not a power of two, the pool is too small (or its children would be smaller
//! than its blocks), or there is no such pool. The split itself is the `ipam.split` action.

use std::process::ExitCode;

use super::Context;
use crate::cli::journaled::{JournalArgs, run_journaled};
use crate::datastore::StoreError;
use crate::datastore::ipam_check::read_pools;
use crate::datastore::readiness::lock_state;
use crate::ipam::Cidr;
use crate::ipam::split::{child_name, split};
use crate::plan::action::{IpamSplit, SplitChild};
use crate::plan::{Action, Plan};
use crate::resource::{Kind, ResourceKey};

pub const EXAMPLES: &str = "\
Examples:
  netctl datastore migrate lock
  netctl ipam split 2 --cidr 172.0.0.0/8 --dry-run
  netctl ipam split 4 --name default-ipv4-ippool
  netctl datastore migrate unlock
The pool's blocks and block affinities are kept (they now lie in the new pools). On etcd the
split is one transaction; on Kubernetes a failure part way is undone.";

#[derive(Debug, clap::Args)]
pub struct SplitArgs {
    /// How many pools to split into: a power of two (2, 4, 8, ...)
    #[arg(value_name = "NUMBER")]
    parts: u64,
    /// The CIDR of the pool to split
    #[arg(
        long,
        value_name = "CIDR",
        required_unless_present = "name",
        conflicts_with = "name"
    )]
    cidr: Option<String>,
    /// The name of the pool to split
    #[arg(long, value_name = "POOL")]
    name: Option<String>,
    #[command(flatten)]
    journal: JournalArgs,
}

pub async fn run(context: &Context, args: SplitArgs) -> anyhow::Result<ExitCode> {
    let wanted_cidr = match &args.cidr {
        Some(text) => Some(Cidr::parse(text)?),
        None => None,
    };
    if args.parts < 2 || !args.parts.is_power_of_two() {
        return Err(crate::ipam::split::SplitError::NotAPowerOfTwo(args.parts).into());
    }
    let store = context.datastore().await?;
    if !lock_state(store.as_ref()).await?.locked {
        return Err(crate::exec::actions::ipam::IpamActionError::NotLocked {
            what: "`ipam split`",
        }
        .into());
    }
    let (pools, _) = read_pools(store.as_ref()).await?;
    let pool = pools
        .iter()
        .find(|pool| match (&args.name, wanted_cidr) {
            (Some(name), _) => &pool.name == name,
            (None, Some(cidr)) => pool.cidr == cidr,
            (None, None) => false,
        })
        .ok_or_else(|| {
            let named = match (&args.name, &args.cidr) {
                (Some(name), _) => format!("named `{name}`"),
                (None, Some(cidr)) => format!("with CIDR `{cidr}`"),
                (None, None) => String::new(),
            };
            anyhow::anyhow!("there is no IP pool {named} (see `netctl get ippools`)")
        })?;
    let children = split(pool.cidr, args.parts, Some(pool.block_size))?;
    let key = ResourceKey::new(Kind::IpPool, None, &pool.name);
    let stored = store.get(&key).await?;
    let mut planned = Vec::new();
    for (index, cidr) in children.iter().enumerate() {
        let name = child_name(&pool.name, index);
        match store
            .get(&ResourceKey::new(Kind::IpPool, None, &name))
            .await
        {
            Ok(_) => anyhow::bail!(
                "IP pool `{name}` already exists: refusing to split `{}`",
                pool.name
            ),
            Err(StoreError::NotFound(_)) => {}
            Err(error) => return Err(error.into()),
        }
        planned.push(SplitChild {
            name,
            cidr: cidr.to_string(),
        });
    }
    let request = IpamSplit {
        pool: pool.name.clone(),
        revision: stored.metadata.resource_version.unwrap_or_default(),
        children: planned,
    };
    let plan = Plan::single(
        "ipam-split",
        format!("split IP pool `{}`", pool.name),
        Action::IpamSplit(request),
    );
    run_journaled(context, store, &plan, &args.journal, None).await?;
    Ok(ExitCode::SUCCESS)
}
