//! `netctl node diags` and `netctl cluster diags`: flags in, options out, the collection run in
//! `crate::diagnose`, the archive's path on stdout and its size and counts on stderr. Both are
//! read-only; Ctrl-C stops them and leaves nothing behind.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use super::Context;
use super::args::parse_duration;
use crate::diagnose::bundle::{Archive, BundleOptions};
use crate::diagnose::cluster_diags::{self, ClusterDiagsOptions};
use crate::diagnose::node_diags::{self, NodeDiagsOptions};
use crate::diagnose::{DiagnoseError, secrets, timestamp_for_name};
use crate::output::human_size;
use crate::redaction::redact_argv;

pub const NODE_DIAGS_AFTER_HELP: &str = "\
Read-only: runs only programs that print state (ip, nft, iptables-save, ipset, ss, journalctl, the
container CLI's `ps`, `logs` and `exec ... ipset list`), starts no container and signals nothing.
Run it on the node, as root (without root the rule-set dumps fail and the index says so).

What is collected, under `diagnostics/` as upstream names it: date, hostname, routes (all tables),
rules, addresses, links, neighbours, nftables, iptables (legacy and nft), ipsets, sockets (`ss`, or
`netstat`), the calico-node journal, the log directory (`--log-dir`) as `logs/`, and the logs of
every container named `calico` through docker, podman, nerdctl or crictl (containerd and CRI-O
hosts), with `ipset list` inside the running calico-node container. A program that is missing or
fails is listed in `index.json` with why; it never stops the command. Passwords, tokens and
private keys (the etcd client key of the netctl configuration among them) are replaced with
`<redacted>` in every file.

The archive's path is printed on stdout; its size and what it holds on stderr.

Examples:
  sudo netctl node diags
  sudo netctl node diags --log-dir /var/log/calico --dir /tmp
  scp \"$(sudo netctl node diags)\" support@example.com:";

pub const CLUSTER_EXAMPLES: &str = "\
Examples:
  netctl cluster diags                              # the whole cluster's bundle (read-only)";

pub const CLUSTER_DIAGS_AFTER_HELP: &str = "\
Read-only: lists objects, reads pod logs and runs read-only programs in the calico-node
containers (iptables-save, nft list, ip, ipset list, calico-node -bpf ... dump, bpftool, cat of the
CNI logs). It writes nothing to the cluster and needs no kubectl: everything goes through the
Kubernetes API named by the configuration (kubeconfig, `--context`).

What is collected, into `calico-diagnostics-<time>/`:
  cluster/      the server version, nodes, namespaces, events, network policies, webhooks, API
                services, the Calico CRDs' names and versions
  calico/       every Calico and Tigera type served: crd.projectcalico.org/v1, projectcalico.org/v3,
                operator.tigera.io (Installation, TigeraStatus, ...)
  namespaces/   pods, services, configmaps, service accounts, workloads and censored Secrets of
                kube-system (manifest installs), calico-system, tigera-operator and any namespace
                named calico or tigera
  nodes/        per node: each chosen pod's container logs (and the previous instance's), and the
                calico-node dataplane dumps (iptables legacy and nft, nft, routes, rules, addresses,
                links, ipsets, conntrack, eBPF maps as JSON or text, CNI logs)
  index.json    every item: collected, missing, failed or skipped, and why
Secret values are censored (certificates kept, as upstream) and kept out of every other file, as
are netctl's own etcd password, keys and tokens.

Bounds: `--item-timeout` for one list, log or exec; `--timeout` for the whole collection, after
which the bundle is written with what was collected; `--max-file-size` and `--max-size`.

Examples:
  netctl cluster diags
  netctl cluster diags --since 2h --max-logs 2 --focus-nodes worker-3,worker-7
  netctl cluster diags --dir /tmp --timeout 5m --max-parallelism 4
  netctl --context prod cluster diags --max-size 200MiB";

/// `netctl cluster ...`.
#[derive(Debug, clap::Subcommand)]
pub enum ClusterCommand {
    /// Collect the cluster's diagnostics into a .tar.gz through the Kubernetes API (read-only)
    #[command(after_help = CLUSTER_DIAGS_AFTER_HELP)]
    Diags(ClusterDiagsArgs),
}

/// `netctl cluster diags`.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Diagnostics options")]
pub struct ClusterDiagsArgs {
    /// Where the archive `calico-diagnostics-<time>.tar.gz` is written
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Only logs newer than this (e.g. 30m, 2h); `0s`, the default, means all
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_since)]
    since: Duration,
    /// Pods whose logs are collected, per Calico workload (DaemonSet, Deployment, StatefulSet)
    #[arg(long, value_name = "N", default_value_t = 5)]
    max_logs: usize,
    /// Comma-separated nodes whose pods are taken first
    #[arg(
        long,
        value_name = "NODES",
        value_delimiter = ',',
        alias = "focus-node"
    )]
    focus_nodes: Vec<String>,
    /// Requests, logs and execs at once
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=256))]
    max_parallelism: u16,
    /// The whole collection; past it the bundle is written with what was collected
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    timeout: Duration,
    /// One list, log or exec
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration)]
    item_timeout: Duration,
    #[command(flatten)]
    limits: SizeLimits,
}

/// `--since`: a duration, with `0`/`0s` meaning all logs (as upstream and kubectl).
fn parse_since(text: &str) -> Result<Duration, String> {
    match text.trim() {
        "0" => Ok(Duration::ZERO),
        _ => parse_duration(text),
    }
}

pub async fn cluster(context: &Context, command: ClusterCommand) -> anyhow::Result<ExitCode> {
    let ClusterCommand::Diags(args) = command;
    let client = context
        .kubernetes_client()
        .await?
        .ok_or(DiagnoseError::NoCluster)?;
    let config = context.client_config().ok();
    let kubeconfig = context.kubeconfig_path();
    let stamp = timestamp_for_name(SystemTime::now());
    let options = ClusterDiagsOptions {
        bundle: BundleOptions {
            dir: args.dir,
            archive: format!("calico-diagnostics-{stamp}.tar.gz"),
            top: format!("calico-diagnostics-{stamp}"),
            max_file_size: args.limits.max_file_size,
            max_size: args.limits.max_size,
        },
        since: Some(args.since).filter(|since| !since.is_zero()),
        max_logs: args.max_logs,
        focus_nodes: args
            .focus_nodes
            .into_iter()
            .map(|node| node.trim().to_string())
            .filter(|node| !node.is_empty())
            .collect(),
        max_parallelism: usize::from(args.max_parallelism),
        timeout: args.timeout,
        item_timeout: args.item_timeout,
        secrets: secrets::known_secrets(config, kubeconfig.as_deref()),
        command_line: command_line(),
    };
    let progress = Arc::new(context.printer.progress("collecting", 1));
    let collection = cluster_diags::collect(client, options, Arc::clone(&progress));
    let archive = tokio::select! {
        result = collection => result,
        // Dropping the collection drops the bundle: the staging directory goes.
        _ = tokio::signal::ctrl_c() => Err(DiagnoseError::Interrupted),
    };
    progress.finish();
    report(context, archive?)
}

/// `netctl node diags`.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Diagnostics options")]
pub struct NodeDiagsArgs {
    /// The directory of the node agent's logs, copied into the bundle as `logs/`
    #[arg(long, value_name = "DIR", default_value = "/var/log/calico")]
    log_dir: PathBuf,
    /// Where the archive `diags-<time>.tar.gz` is written
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// How long one program may run before it is killed (and the index says so)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    command_timeout: Duration,
    #[command(flatten)]
    limits: SizeLimits,
}

/// The size limits both bundles take.
#[derive(Debug, Clone, clap::Args)]
pub struct SizeLimits {
    /// The most one file of the bundle may hold (e.g. 64MiB); the rest is cut and the index says so
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub max_file_size: u64,
    /// The most the bundle may hold before compression (e.g. 1GiB); later items are skipped
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = parse_size)]
    pub max_size: u64,
}

/// Parses `1024`, `64KiB`, `64MiB`, `1GiB` (also `KB`/`MB`/`GB` as powers of 1000, `K`/`M`/`G` as
/// powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size such as 64MiB or 1GiB"))?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => {
            return Err(format!(
                "`{text}`: unknown unit `{unit}` (use KiB, MiB or GiB)"
            ));
        }
    };
    let size = number
        .checked_mul(factor)
        .ok_or_else(|| format!("`{text}` is too large"))?;
    if size == 0 {
        return Err(format!("`{text}`: the size must be more than 0"));
    }
    Ok(size)
}

/// The command line as run, secrets redacted, for the bundle's index.
fn command_line() -> Vec<String> {
    redact_argv(&std::env::args().collect::<Vec<_>>())
}

pub async fn node(context: &Context, args: NodeDiagsArgs) -> anyhow::Result<ExitCode> {
    if !rustix::process::geteuid().is_root() {
        context.printer.warn(
            "not running as root: the iptables, nftables and ipset dumps need root and will be listed as failed",
        );
    }
    // The configuration is optional here (a node may have none); its secrets are kept out of the
    // bundle when there is one.
    let config = context.client_config().ok();
    let kubeconfig = context.kubeconfig_path();
    let options = NodeDiagsOptions {
        log_dir: args.log_dir,
        bundle: BundleOptions {
            dir: args.dir,
            archive: format!("diags-{}.tar.gz", timestamp_for_name(SystemTime::now())),
            top: "diagnostics".to_string(),
            max_file_size: args.limits.max_file_size,
            max_size: args.limits.max_size,
        },
        path: context
            .environment
            .exact("PATH")
            .unwrap_or("/usr/sbin:/usr/bin:/sbin:/bin")
            .into(),
        command_timeout: args.command_timeout,
        secrets: secrets::known_secrets(config, kubeconfig.as_deref()),
        command_line: command_line(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(context.printer.progress("collecting", node_diags::ITEMS));
    let collection = {
        let stop = Arc::clone(&stop);
        let progress = Arc::clone(&progress);
        tokio::task::spawn_blocking(move || {
            node_diags::collect(&options, stop, &|item| progress.done(item))
        })
    };
    tokio::pin!(collection);
    let archive = tokio::select! {
        result = &mut collection => result?,
        _ = tokio::signal::ctrl_c() => {
            // The program running is killed, the staging directory removed.
            stop.store(true, Ordering::Relaxed);
            let _ = collection.await;
            Err(DiagnoseError::Interrupted)
        }
    };
    progress.finish();
    report(context, archive?)
}

/// The archive's path on stdout, its size and counts on stderr.
pub fn report(context: &Context, archive: Archive) -> anyhow::Result<ExitCode> {
    context
        .printer
        .data_line(&archive.path.display().to_string())?;
    context.printer.say(format!(
        "wrote {} ({}): {}; `index.json` in the archive lists each item",
        archive.path.display(),
        human_size(archive.bytes),
        archive.summary
    ));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5XB").is_err());
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 << 30), "3.0 GiB");
    }
}
