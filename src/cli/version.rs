//! `netctl version`: the client version, the newest release line netctl knows and the git commit
//! it was built from (`build.rs`), and, when a datastore is configured, the Cluster Version and
//! Cluster Type from ClusterInformation `default` (upstream layout, `reference/calicoctl.md` §7.1),
//! with a warning when the cluster runs a newer line than netctl knows or one more than a minor
//! release older.

use std::process::ExitCode;

use super::Context;
use crate::datastore::StoreError;
use crate::release::{Release, newest_known};
use crate::resource::{Kind, ResourceKey};

/// The commit netctl was built from, or `unknown` (see `build.rs`).
pub const GIT_COMMIT: &str = env!("NETCTL_GIT_COMMIT");

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  netctl version\n  netctl version --client")]
pub struct VersionArgs {
    /// Print only the client version; do not contact the datastore
    #[arg(long)]
    client: bool,
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
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let (version, cluster_type) = match store.get(&key).await {
        Ok(info) => {
            let field = |name: &str| {
                info.spec
                    .get(name)
                    .and_then(|value| value.as_str())
                    .filter(|value| !value.is_empty())
                    .unwrap_or("unknown")
                    .to_string()
            };
            (field("calicoVersion"), field("clusterType"))
        }
        Err(StoreError::NotFound(_)) => ("unknown".to_string(), "unknown".to_string()),
        Err(error) => {
            return Err(anyhow::Error::new(error).context("cannot read the cluster version"));
        }
    };
    printer.data_line(&line("Cluster Version", &version))?;
    printer.data_line(&line("Cluster Type", &cluster_type))?;
    if let Ok((cluster, _)) = Release::parse_with_precision(&version)
        && let Some(warning) = mismatch(&cluster, &newest_known())
    {
        printer.warn(warning);
    }
    Ok(ExitCode::SUCCESS)
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
