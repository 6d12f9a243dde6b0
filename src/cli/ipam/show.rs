//! `netctl ipam show`: address use per pool (and block), one address, the borrowed addresses, or
//! the allocator's configuration — upstream's views (`calicoctl/calicoctl/commands/ipam/show.go`)
//! and, beyond upstream, each as JSON or YAML with `-o`.
//!
//! Blocks are streamed a page at a time into the domain's [`Utilization`]; a damaged block is
//! named with its key on stderr, the rest is shown, and the command then fails. Counts are exact
//! integers where upstream's `%.5g` prints `1.0486e+06`.

use std::io::Write;
use std::net::IpAddr;
use std::process::ExitCode;

use clap::ValueEnum;
use serde::Serialize;

use super::{Context, ipam_of};
use crate::datastore::Datastore;
use crate::datastore::ipam::{IpamStore, for_each_block};
use crate::datastore::ipam_check::read_pools;
use crate::ipam::usage::{self, BorrowedAddress, Utilization, count, count_with_share};
use crate::ipam::{AllocationBlock, Cidr, IpamConfig};
use crate::output::write_boxed;

pub const EXAMPLES: &str = "\
Examples:
  netctl ipam show
  netctl ipam show --show-blocks
  netctl ipam show --ip 10.65.79.2
  netctl ipam show --show-borrowed
  netctl ipam show --show-configuration
  netctl ipam show --show-blocks -o json | jq '.pools[].blocks[] | select(.inUse > 60)'
Counts are exact integers (upstream prints `1.0486e+06` for a /12 pool). On etcd,
--show-configuration shows `/calico/ipam/v2/config`, which the allocator reads; the
IPAMConfiguration resource (`netctl get ipamconfigurations`) is a different object there.";

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Say whether this address is in use, and by what
    #[arg(long, value_name = "ADDRESS", group = "view")]
    ip: Option<String>,
    /// Also show a row per block
    #[arg(long, group = "view")]
    show_blocks: bool,
    /// Show addresses allocated to another node than their block's
    #[arg(long, group = "view")]
    show_borrowed: bool,
    /// Show the allocator's configuration
    #[arg(long, group = "view")]
    show_configuration: bool,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = ShowFormat::Table)]
    output: ShowFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    Table,
    Json,
    Yaml,
}

pub async fn run(context: &Context, args: ShowArgs) -> anyhow::Result<ExitCode> {
    // An address is checked before anything connects.
    let address = match &args.ip {
        Some(text) => Some(text.parse::<IpAddr>().map_err(|_| {
            anyhow::anyhow!("invalid IP address `{text}`: give one IPv4 or IPv6 address")
        })?),
        None => None,
    };
    let store = context.datastore().await?;
    let ipam = ipam_of(store.as_ref())?;
    let mut out = context.printer.stdout();
    let damaged = match (address, args.show_borrowed, args.show_configuration) {
        (Some(address), _, _) => {
            show_address(store.as_ref(), ipam, address, args.output, &mut out).await?
        }
        (None, true, _) => show_borrowed(context, ipam, args.output, &mut out).await?,
        (None, false, true) => {
            show_configuration(context, store.kind(), ipam, args.output, &mut out).await?;
            0
        }
        (None, false, false) => {
            show_usage(
                context,
                store.as_ref(),
                ipam,
                args.show_blocks,
                args.output,
                &mut out,
            )
            .await?
        }
    };
    out.flush()?;
    if damaged > 0 {
        anyhow::bail!(
            "{damaged} IPAM block(s) could not be read (named above); the figures leave them out"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Reports a damaged block on stderr.
fn say_damaged(context: &Context, key: &str, reason: &str) {
    context
        .printer
        .warn(format!("IPAM block `{key}` is damaged: {reason}"));
}

fn write_document<T: Serialize>(
    out: &mut dyn Write,
    format: ShowFormat,
    value: &T,
) -> anyhow::Result<()> {
    match format {
        ShowFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, value)?;
            writeln!(out)?;
        }
        _ => out.write_all(crate::yaml::emit::to_string(value)?.as_bytes())?,
    }
    Ok(())
}

#[derive(Serialize)]
struct UsageDocument {
    pools: Vec<usage::PoolUsage>,
}

async fn show_usage(
    context: &Context,
    store: &dyn Datastore,
    ipam: &dyn IpamStore,
    show_blocks: bool,
    format: ShowFormat,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    let (pools, skipped) = read_pools(store).await?;
    for problem in skipped {
        context.printer.warn(problem);
    }
    let mut utilization = Utilization::default();
    for pool in &pools {
        utilization.add_pool(&pool.name, pool.cidr);
    }
    let mut damaged = 0;
    for_each_block(ipam, |block| {
        match block {
            Ok(block) => utilization.add_block(&block.value),
            Err(bad) => {
                damaged += 1;
                say_damaged(context, &bad.key, &bad.reason);
            }
        }
        Ok::<(), anyhow::Error>(())
    })
    .await?;
    let mut pools = utilization.pools();
    if format != ShowFormat::Table {
        if !show_blocks {
            for pool in &mut pools {
                pool.blocks.clear();
            }
        }
        write_document(out, format, &UsageDocument { pools })?;
        return Ok(damaged);
    }
    let row = |kind: &str, cidr: &str, in_use: u128, capacity: u128| {
        vec![
            kind.to_string(),
            cidr.to_string(),
            count(capacity),
            count_with_share(in_use, capacity),
            count_with_share(capacity - in_use.min(capacity), capacity),
        ]
    };
    let mut rows = Vec::new();
    for pool in &pools {
        // Upstream prints no pool row for the blocks of no pool.
        if let (Some(cidr), Some(capacity)) = (&pool.cidr, pool.capacity) {
            rows.push(row("IP Pool", cidr, pool.in_use, capacity));
        }
        if show_blocks {
            for block in &pool.blocks {
                rows.push(row("Block", &block.cidr, block.in_use, block.capacity));
            }
        }
    }
    write_boxed(
        out,
        &["GROUPING", "CIDR", "IPS TOTAL", "IPS IN USE", "IPS FREE"],
        &rows,
    )?;
    Ok(damaged)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AddressDocument {
    ip: String,
    in_use: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    block: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    handle: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    active_owner_attributes: Option<std::collections::BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alternate_owner_attributes: Option<std::collections::BTreeMap<String, String>>,
}

/// The block an address lies in: the block of each pool holding it (by the pool's block size),
/// else any stored block holding it (a pool deleted since).
async fn block_of(
    store: &dyn Datastore,
    ipam: &dyn IpamStore,
    address: IpAddr,
) -> anyhow::Result<(Option<AllocationBlock>, usize)> {
    let (pools, _) = read_pools(store).await?;
    for pool in pools.iter().filter(|pool| pool.cidr.contains(address)) {
        if let Some(cidr) = Cidr::new(address, pool.block_size) {
            if let Some(block) = ipam.get_block(&cidr).await? {
                return Ok((Some(block.value), 0));
            }
        }
    }
    let (mut found, mut damaged) = (None, 0);
    for_each_block(ipam, |block| {
        match block {
            Ok(block) if block.value.cidr.is_some_and(|cidr| cidr.contains(address)) => {
                found = Some(block.value);
            }
            Ok(_) => {}
            Err(_) => damaged += 1,
        }
        Ok::<(), anyhow::Error>(())
    })
    .await?;
    Ok((found, damaged))
}

async fn show_address(
    store: &dyn Datastore,
    ipam: &dyn IpamStore,
    address: IpAddr,
    format: ShowFormat,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    let (block, damaged) = block_of(store, ipam, address).await?;
    let allocation = block
        .as_ref()
        .and_then(|block| block.allocation_of(address));
    let attribute = allocation.and_then(|allocation| allocation.attribute);
    if format != ShowFormat::Table {
        let document = AddressDocument {
            ip: address.to_string(),
            in_use: allocation.is_some(),
            block: allocation
                .and(block.as_ref())
                .and_then(|block| block.cidr.map(|cidr| cidr.to_string())),
            handle: attribute.and_then(|a| a.handle_id.clone()),
            active_owner_attributes: attribute.and_then(|a| a.active_owner.clone()),
            alternate_owner_attributes: attribute.and_then(|a| a.alternate_owner.clone()),
        };
        write_document(out, format, &document)?;
        return Ok(damaged);
    }
    if allocation.is_none() {
        writeln!(out, "{address} is not assigned")?;
        return Ok(damaged);
    }
    writeln!(out, "IP {address} is in use")?;
    match attribute.and_then(|a| a.handle_id.as_deref()) {
        Some(handle) => writeln!(out, "Handle ID: {handle}")?,
        None => writeln!(out, "Handle ID: <none>")?,
    }
    let attributes = |title: &str,
                      map: Option<&std::collections::BTreeMap<String, String>>,
                      out: &mut dyn Write|
     -> std::io::Result<bool> {
        let Some(map) = map.filter(|map| !map.is_empty()) else {
            return Ok(false);
        };
        writeln!(out, "{title}:")?;
        for (key, value) in map {
            writeln!(out, "  {key}: {value}")?;
        }
        Ok(true)
    };
    if !attributes(
        "Active Owner Attributes",
        attribute.and_then(|a| a.active_owner.as_ref()),
        out,
    )? {
        writeln!(out, "No Active Owner attributes defined")?;
    }
    attributes(
        "Alternate Owner Attributes",
        attribute.and_then(|a| a.alternate_owner.as_ref()),
        out,
    )?;
    Ok(damaged)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BorrowedDocument {
    borrowed: Vec<BorrowedAddress>,
    without_node: usize,
}

async fn show_borrowed(
    context: &Context,
    ipam: &dyn IpamStore,
    format: ShowFormat,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    let (mut borrowed, mut without_node, mut damaged) = (Vec::new(), 0, 0);
    for_each_block(ipam, |block| {
        match block {
            Ok(block) => {
                let (found, unclassified) = usage::borrowed(&block.value);
                borrowed.extend(found);
                without_node += unclassified;
            }
            Err(bad) => {
                damaged += 1;
                say_damaged(context, &bad.key, &bad.reason);
            }
        }
        Ok::<(), anyhow::Error>(())
    })
    .await?;
    if format != ShowFormat::Table {
        write_document(
            out,
            format,
            &BorrowedDocument {
                borrowed,
                without_node,
            },
        )?;
        return Ok(damaged);
    }
    let rows: Vec<Vec<String>> = borrowed
        .into_iter()
        .map(|entry| {
            vec![
                entry.ip,
                entry.borrowing_node,
                entry.block,
                entry.block_owner,
                entry.allocation_type,
                entry.allocated_to,
            ]
        })
        .collect();
    write_boxed(
        out,
        &[
            "IP",
            "BORROWING-NODE",
            "BLOCK",
            "BLOCK OWNER",
            "TYPE",
            "ALLOCATED-TO",
        ],
        &rows,
    )?;
    if without_node > 0 {
        writeln!(
            out,
            "\nNote: found {without_node} IP allocations without an explicit node association. Unable to determine if they are borrowed."
        )?;
    }
    Ok(damaged)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigurationDocument {
    strict_affinity: bool,
    auto_allocate_blocks: bool,
    max_blocks_per_host: i64,
    #[serde(
        rename = "kubeVirtVMAddressPersistence",
        skip_serializing_if = "Option::is_none"
    )]
    kubevirt_vm_address_persistence: Option<String>,
    /// Whether these values are stored, or the allocator's defaults.
    stored: bool,
    location: String,
}

async fn show_configuration(
    context: &Context,
    datastore: crate::datastore::DatastoreType,
    ipam: &dyn IpamStore,
    format: ShowFormat,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let stored = ipam.get_config().await?;
    if datastore == crate::datastore::DatastoreType::EtcdV3 {
        context.printer.say(format!(
            "Note: {}.",
            crate::ipam::config::ETCD_RESOURCE_CAVEAT
        ));
    }
    if stored.is_none() {
        context.printer.say(format!(
            "`{}` is not stored: these are the allocator's defaults, which it writes on first use (netctl writes nothing here)",
            ipam.config_location()
        ));
    }
    let config = stored
        .as_ref()
        .map_or_else(IpamConfig::default, |stored| stored.value.clone());
    if format != ShowFormat::Table {
        let document = ConfigurationDocument {
            strict_affinity: config.strict_affinity,
            auto_allocate_blocks: config.auto_allocate_blocks,
            max_blocks_per_host: config.max_blocks_per_host,
            kubevirt_vm_address_persistence: config.kubevirt_vm_address_persistence.clone(),
            stored: stored.is_some(),
            location: ipam.config_location(),
        };
        return write_document(out, format, &document);
    }
    let rows = vec![
        vec![
            "StrictAffinity".to_string(),
            config.strict_affinity.to_string(),
        ],
        vec![
            "AutoAllocateBlocks".to_string(),
            config.auto_allocate_blocks.to_string(),
        ],
        vec![
            "MaxBlocksPerHost".to_string(),
            config.max_blocks_per_host.to_string(),
        ],
        vec![
            "KubeVirtVMAddressPersistence".to_string(),
            config
                .kubevirt_vm_address_persistence
                .unwrap_or_else(|| "<unset> (Enabled)".to_string()),
        ],
    ];
    write_boxed(out, &["PROPERTY", "VALUE"], &rows)?;
    Ok(())
}
