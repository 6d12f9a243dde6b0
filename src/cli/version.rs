//! `netctl version`: the client version and, when a datastore is configured, the Cluster Version and
//! Cluster Type from ClusterInformation `default` (upstream layout, `reference/calicoctl.md` §7.1).

use std::process::ExitCode;

use super::Context;
use crate::datastore::StoreError;
use crate::resource::{Kind, ResourceKey};

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
    let printer = context.printer;
    printer.data_line(&line("Client Version", env!("CARGO_PKG_VERSION")))?;
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
    Ok(ExitCode::SUCCESS)
}
