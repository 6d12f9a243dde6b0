//! `netctl version`: the client version, the newest release line netctl knows and the git commit
//! it was built from (`build.rs`), and, when a datastore is configured, the Cluster Version and
//! Cluster Type from ClusterInformation `default` (upstream layout,
//! `calicoctl/calicoctl/commands/version.go`), with a warning when the cluster runs a newer line
//! than netctl knows or one more than a minor
//! release older. `--poll DURATION` keeps reading ClusterInformation at that interval and prints
//! the cluster lines again each time they change (upstream's `version --poll`), until Ctrl-C.

use std::process::ExitCode;
use std::time::Duration;

use super::Context;
use super::args::parse_duration;
use crate::datastore::{Datastore, StoreError};
use crate::release::{Release, newest_known};
use crate::resource::{Kind, ResourceKey};

/// The commit netctl was built from, or `unknown` (see `build.rs`).
pub const GIT_COMMIT: &str = env!("NETCTL_GIT_COMMIT");

const EXAMPLES: &str = "\
Read-only: reads ClusterInformation `default`, changes nothing.

Examples:
  netctl version
  netctl version --client
  netctl version --poll 10s     # print the cluster lines again whenever they change (Ctrl-C stops)";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct VersionArgs {
    /// Print only the client version; do not contact the datastore
    #[arg(long, conflicts_with = "poll")]
    client: bool,
    /// Keep reading the cluster version at this interval (e.g. 1s, 10m) and print it again each
    /// time it changes, until Ctrl-C; `0` reads once
    #[arg(long, value_name = "DURATION", value_parser = parse_poll)]
    poll: Option<Duration>,
}

/// `--poll`: a duration as elsewhere, and `0` (no unit) as upstream's "do not poll".
fn parse_poll(text: &str) -> Result<Duration, String> {
    match text.trim() {
        "0" => Ok(Duration::ZERO),
        _ => parse_duration(text),
    }
}

/// Labels are padded so every value starts in the same column, as upstream prints them.
fn line(label: &str, value: &str) -> String {
    format!("{:<19}{value}", format!("{label}:"))
}

pub async fn run(context: &Context, args: VersionArgs) -> anyhow::Result<ExitCode> {
    let printer = &context.printer;
    printer.data_line(&line("Client Version", env!("CARGO_PKG_VERSION")))?;
    printer.data_line(&line("Release Line", &newest_known().line()))?;
    printer.data_line(&line("Git commit", GIT_COMMIT))?;
    if args.client {
        return Ok(ExitCode::SUCCESS);
    }
    let store = context.datastore().await?;
    crate::datastore::readiness::warn_if_locked(store.as_ref(), &context.printer).await;
    let interval = args.poll.filter(|interval| !interval.is_zero());
    let Some(interval) = interval else {
        let cluster = cluster_lines(store.as_ref()).await.map_err(|error| {
            anyhow::Error::new(error).context("cannot read the cluster version")
        })?;
        show(context, &cluster, None)?;
        return Ok(ExitCode::SUCCESS);
    };
    // As upstream: each line is printed when it differs from the last one printed; a failed read
    // is said on stderr and forgets what was shown, so the lines come again once it reads.
    let mut shown: Option<ClusterLines> = None;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        match cluster_lines(store.as_ref()).await {
            Ok(cluster) => {
                show(context, &cluster, shown.as_ref())?;
                shown = Some(cluster);
            }
            Err(error) => {
                printer.warn(format!(
                    "cannot read the cluster version: {}",
                    crate::errors::error_chain(&error)
                ));
                shown = None;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = &mut interrupted => return Ok(ExitCode::SUCCESS),
        }
    }
}

/// What ClusterInformation `default` says: the Cluster Version and Cluster Type lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClusterLines {
    version: String,
    cluster_type: String,
}

async fn cluster_lines(store: &dyn Datastore) -> Result<ClusterLines, StoreError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    match store.get(&key).await {
        Ok(info) => {
            let field = |name: &str| {
                info.spec
                    .get(name)
                    .and_then(|value| value.as_str())
                    .filter(|value| !value.is_empty())
                    .unwrap_or("unknown")
                    .to_string()
            };
            Ok(ClusterLines {
                version: field("calicoVersion"),
                cluster_type: field("clusterType"),
            })
        }
        Err(StoreError::NotFound(_)) => Ok(ClusterLines {
            version: "unknown".to_string(),
            cluster_type: "unknown".to_string(),
        }),
        Err(error) => Err(error),
    }
}

/// Prints the lines of `cluster` that differ from `before` (all of them without one), and the
/// release warning when the version line is printed.
fn show(
    context: &Context,
    cluster: &ClusterLines,
    before: Option<&ClusterLines>,
) -> anyhow::Result<()> {
    let printer = &context.printer;
    let version_changed = before.is_none_or(|before| before.version != cluster.version);
    if version_changed {
        printer.data_line(&line("Cluster Version", &cluster.version))?;
    }
    if before.is_none_or(|before| before.cluster_type != cluster.cluster_type) {
        printer.data_line(&line("Cluster Type", &cluster.cluster_type))?;
    }
    if version_changed
        && let Ok((release, _)) = Release::parse_with_precision(&cluster.version)
        && let Some(warning) = mismatch(&release, &newest_known())
    {
        printer.warn(warning);
    }
    Ok(())
}

/// The warning for a cluster on a newer line than netctl knows, or more than one minor release
/// older (upstream's calicoctl wants its own exact release and has no such rule; one line behind is
/// the normal state during an upgrade).
fn mismatch(cluster: &Release, newest: &Release) -> Option<String> {
    let ahead = cluster.minors_ahead_of(newest);
    if ahead > 0 {
        return Some(format!(
            "the cluster runs {cluster}, newer than {}, the newest release line this netctl knows: use a netctl that knows {} (writes are refused)",
            newest.line(),
            cluster.line()
        ));
    }
    (ahead < -1).then(|| {
        format!(
            "the cluster runs {cluster}, {} minor releases older than {}, the newest line this netctl knows; netctl validates for the cluster's release, and `netctl upgrade plan --to {}` shows the way up",
            -ahead,
            newest.line(),
            newest.line()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_line_or_one_two_minors_older_is_warned_about() {
        let newest = Release::new(3, 32, 1);
        assert!(
            mismatch(&Release::new(3, 33, 0), &newest)
                .unwrap()
                .contains("newer than v3.32")
        );
        assert!(mismatch(&Release::new(3, 32, 0), &newest).is_none());
        assert!(mismatch(&Release::new(3, 31, 7), &newest).is_none());
        assert!(
            mismatch(&Release::new(3, 30, 7), &newest)
                .unwrap()
                .contains("2 minor releases older than v3.32")
        );
    }
}
