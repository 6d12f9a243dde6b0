//! `netctl cluster diags`: a cluster's diagnostics bundle through the Kubernetes API alone, as
//! upstream's `calicoctl/calicoctl/commands/cluster/diags.go` collects it with `kubectl`.
//!
//! The order: the server's version (a cluster that does not answer ends the command before
//! anything is written), the nodes and namespaces, then the Secrets of the Calico namespaces
//! (censored, and their values learned so that no other file can show them), then everything else
//! `--max-parallelism` items at a time: Calico resources of every served Calico and Tigera group
//! (`crd.projectcalico.org/v1` and the API server's `projectcalico.org/v3`, the operator's
//! `operator.tigera.io` with TigeraStatus), the objects of the Calico namespaces (`kube-system`
//! for manifest installs, `calico-system`, `tigera-operator`, and any other named `calico` or
//! `tigera`), events, webhooks, API services and network policies ([`objects`]); then the pod logs
//! of each Calico workload, `--max-logs` pods each, `--focus-nodes` first ([`pods`]); and each
//! chosen calico-node pod's dataplane dumps by exec ([`dataplane`]).
//!
//! Bounds: one item (a list, a log, an exec) may take `--item-timeout`; the whole collection
//! `--timeout`, after which no item starts, those running are cut and recorded so, and the bundle
//! is written with what was collected. Size is bounded by the bundle's limits. The index records
//! each item and why one was not collected (not served, forbidden, not found, failed, cut).

mod dataplane;
mod objects;
mod pods;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::Semaphore;

use super::DiagnoseError;
use super::bundle::{Archive, Bundle, BundleOptions, Entry, Status};
use super::scrub::Scrubber;
use crate::output::progress::Progress;

/// The namespaces always looked at: the operator's two and, for manifest installs, `kube-system`
/// (projectcalico/calico#12657). Others whose name holds `calico` or `tigera` are added.
pub const CALICO_NAMESPACES: [&str; 3] = ["kube-system", "calico-system", "tigera-operator"];

/// What `netctl cluster diags` was asked for.
#[derive(Debug, Clone)]
pub struct ClusterDiagsOptions {
    pub bundle: BundleOptions,
    /// Logs newer than this only (upstream's `--since`); all when `None`.
    pub since: Option<Duration>,
    /// Pods whose logs are collected, per workload (upstream's `--max-logs`).
    pub max_logs: usize,
    /// Nodes whose pods come first (upstream's `--focus-nodes`).
    pub focus_nodes: Vec<String>,
    /// Items at once (upstream's `--max-parallelism`).
    pub max_parallelism: usize,
    /// The whole collection.
    pub timeout: Duration,
    /// One item: a list, a log, an exec.
    pub item_timeout: Duration,
    /// Values to keep out of every file (netctl's own secrets; the Secrets' are added).
    pub secrets: Vec<String>,
    /// Said in the index: the command line, secrets redacted.
    pub command_line: Vec<String>,
}

/// What every part of the collection shares.
struct Collector {
    client: kube::Client,
    bundle: Bundle,
    options: ClusterDiagsOptions,
    deadline: Instant,
    permits: Semaphore,
    progress: Arc<Progress>,
}

/// How an item ended when it did not end well.
enum Cut {
    /// The item's own time limit.
    ItemTimeout,
    /// The collection's.
    Deadline,
}

impl Collector {
    /// Runs `work` as one item: after a permit, within the item's and the collection's time
    /// limits. `None` when it did not start (deadline passed) or was cut; both are recorded
    /// against `source`.
    async fn item<T>(&self, source: &str, work: impl std::future::Future<Output = T>) -> Option<T> {
        let _permit = self.permits.acquire().await.ok()?;
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            self.bundle.record(Entry::without_file(
                source,
                Status::Skipped,
                self.cut_reason(Cut::Deadline),
            ));
            self.progress.done(source);
            return None;
        }
        let (limit, cut) = match self.options.item_timeout < left {
            true => (self.options.item_timeout, Cut::ItemTimeout),
            false => (left, Cut::Deadline),
        };
        let result = tokio::time::timeout(limit, work).await;
        self.progress.done(source);
        match result {
            Ok(value) => Some(value),
            Err(_) => {
                self.bundle.record(Entry::without_file(
                    source,
                    Status::Failed,
                    self.cut_reason(cut),
                ));
                None
            }
        }
    }

    fn cut_reason(&self, cut: Cut) -> String {
        match cut {
            Cut::ItemTimeout => format!(
                "did not finish within {} (`--item-timeout`)",
                humantime::format_duration(self.options.item_timeout)
            ),
            Cut::Deadline => format!(
                "the collection reached its time limit ({}, `--timeout`)",
                humantime::format_duration(self.options.timeout)
            ),
        }
    }

    /// Records a failed API request.
    fn failed(&self, source: &str, error: &kube::Error) {
        let (status, reason) = describe(error);
        self.bundle
            .record(Entry::without_file(source, status, reason));
    }
}

/// How an API error is shown in the index: not served and not found are `missing`, the rest
/// `failed`, each with the server's message.
fn describe(error: &kube::Error) -> (Status, String) {
    match error {
        kube::Error::Api(status) if status.code == 404 => (
            Status::Missing,
            format!("not served or not found (404): {}", status.message),
        ),
        kube::Error::Api(status) if status.code == 403 => (
            Status::Failed,
            format!("forbidden (403): {}", status.message),
        ),
        kube::Error::Api(status) => (
            Status::Failed,
            format!("{} ({}): {}", status.reason, status.code, status.message),
        ),
        other => (Status::Failed, crate::errors::error_chain(other)),
    }
}

/// Collects the bundle from `client`'s cluster.
pub async fn collect(
    client: kube::Client,
    options: ClusterDiagsOptions,
    progress: Arc<Progress>,
) -> Result<Archive, DiagnoseError> {
    // A cluster that does not answer ends the command before anything is written.
    let version = client
        .apiserver_version()
        .await
        .map_err(|source| DiagnoseError::Cluster {
            what: "/version".to_string(),
            source,
        })?;
    let scrubber = Scrubber::new(options.secrets.iter().cloned());
    let bundle = Bundle::create(options.bundle.clone(), scrubber)?;
    let collector = Collector {
        client,
        bundle,
        deadline: Instant::now() + options.timeout,
        permits: Semaphore::new(options.max_parallelism.max(1)),
        options,
        progress,
    };
    collector.bundle.write(
        "cluster/version.json",
        "GET /version",
        format!(
            "{}\n",
            serde_json::to_string_pretty(&version).unwrap_or_default()
        )
        .as_bytes(),
        true,
    )?;
    let cluster = objects::cluster_basics(&collector).await?;
    let learned = objects::secrets(&collector, &cluster).await?;
    collector.bundle.set_scrubber(Scrubber::new(
        collector.options.secrets.iter().cloned().chain(learned),
    ));
    let workloads = objects::everything_else(&collector, &cluster).await?;
    let chosen = pods::logs(&collector, &cluster, &workloads).await?;
    dataplane::dumps(&collector, &chosen).await?;

    let options = &collector.options;
    let header = json!({
        "bundle": "cluster diags",
        "netctl": env!("CARGO_PKG_VERSION"),
        "created": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        "kubernetes": version.git_version,
        "namespaces": cluster.namespaces,
        "nodes": cluster.nodes.len(),
        "since": options.since.map(|since| humantime::format_duration(since).to_string()),
        "maxLogs": options.max_logs,
        "focusNodes": options.focus_nodes,
        "maxParallelism": options.max_parallelism,
        "timeout": humantime::format_duration(options.timeout).to_string(),
        "itemTimeout": humantime::format_duration(options.item_timeout).to_string(),
        "maxFileSize": options.bundle.max_file_size,
        "maxSize": options.bundle.max_size,
        "commandLine": options.command_line,
    });
    let Collector { bundle, .. } = collector;
    bundle.finish(header)
}

/// The nodes, in the order logs are looked for: `--focus-nodes` first, then the others as the
/// cluster lists them (upstream's order).
fn node_order(focus: &[String], listed: &[String]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for name in focus.iter().chain(listed) {
        if !name.is_empty() && !order.contains(name) {
            order.push(name.clone());
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn focus_nodes_come_first_then_the_others_in_listed_order() {
        let listed = ["a", "b", "c"].map(String::from);
        assert_eq!(
            node_order(&["c".to_string(), "x".to_string()], &listed),
            ["c", "x", "a", "b"]
        );
        assert_eq!(node_order(&[], &listed), ["a", "b", "c"]);
    }
}
