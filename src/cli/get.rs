//! `netctl get KIND [NAME...]`: reads resources and prints them. A list is streamed page by page from
//! the datastore to the printer, so memory stays flat however many resources there are.

use std::io::Write;
use std::process::ExitCode;

use super::Context;
use crate::datastore::{self, ListOptions, StoreError};
use crate::resource::{Kind, Resource, ResourceKey};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl get nodes\n  netctl get hostendpoints -o wide\n  netctl get ippool default-ipv4-ippool -o yaml\n  netctl get networkpolicies -A"
)]
pub struct GetArgs {
    /// Resource kind: a name, plural or short name (e.g. `nodes`, `hep`, `gnp`)
    kind: String,
    /// Names to get; all resources of the kind when none is given
    names: Vec<String>,
    /// Output format: ps, wide, yaml, json, name
    #[arg(short, long, default_value = "ps")]
    output: String,
    /// Namespace (namespaced kinds only); `default` when not given
    #[arg(short, long)]
    namespace: Option<String>,
    /// List across all namespaces (namespaced kinds only)
    #[arg(short = 'A', long)]
    all_namespaces: bool,
}

pub async fn run(context: &Context, args: GetArgs) -> anyhow::Result<ExitCode> {
    let kind: Kind = args.kind.parse()?;
    let namespace = if kind.is_namespaced() {
        if args.all_namespaces {
            None
        } else {
            Some(args.namespace.clone().unwrap_or_else(|| "default".into()))
        }
    } else {
        if args.namespace.is_some() || args.all_namespaces {
            anyhow::bail!("`{kind}` is not namespaced: leave out `-n`/`-A`");
        }
        None
    };
    let store = context.datastore().await?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.names.is_empty() {
        writeln!(out, "NAME")?;
        datastore::for_each(
            store.as_ref(),
            &ListOptions::new(kind).in_namespace(namespace),
            |resource: Resource| -> anyhow::Result<()> {
                writeln!(out, "{}", resource.metadata.name)?;
                Ok(())
            },
        )
        .await?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut missing = Vec::new();
    for name in &args.names {
        match store
            .get(&ResourceKey::new(kind, namespace.clone(), name))
            .await
        {
            Ok(resource) => writeln!(out, "NAME\n{}\n", resource.metadata.name)?,
            Err(StoreError::NotFound(key)) => missing.push(key),
            Err(error) => return Err(error.into()),
        }
    }
    if let Some(first) = missing.first() {
        return Err(StoreError::NotFound(first.clone()).into());
    }
    Ok(ExitCode::SUCCESS)
}
