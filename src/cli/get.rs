//! `netctl get KIND [NAME...]`: reads resources and prints them.
//!
//! A list is streamed page by page from the datastore into the printer, so memory stays bounded by a
//! page however many resources there are; `-l` filters with the selector language as pages arrive. A get
//! by name prints what it found and then reports every name that does not exist (exit 1), as upstream.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use super::args::{FileArgs, ReleaseArg, namespace_scope};
use crate::datastore::{Datastore, ListOptions, StoreError};
use crate::output::{
    CellContext, DEFAULT_AS_NUMBER, GlobalAsNumber, NamespaceColumn, OutputFormat, PrintOptions,
    ResourcePrinter, Shape, sort_tiers_by_order,
};
use crate::plan::release::api_release;
use crate::resource::selector::Selector;
use crate::resource::spec::numorstring::{self, AsNumber};
use crate::resource::{Kind, Resource, ResourceKey};

const EXAMPLES: &str = "\
Examples:
  netctl get nodes
  netctl get hostendpoints -o wide                 # INTERFACE shows all-interfaces endpoints (`*`)
  netctl get hep -l 'has(host-endpoint-upgrade)'   # filter by the selector language
  netctl get ippool default-ipv4-ippool -o yaml
  netctl get networkpolicies -A -o custom-columns=NAMESPACE,NAME,ORDER
  netctl get gnp -o json | jq '.items[].metadata.name'
  netctl get -f policies.yaml -o yaml              # what the datastore holds for each document
  netctl get gnp allow-all-upgrade -o yaml --export > policy.yaml   # ready to create elsewhere";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct GetArgs {
    /// Resource kind: a name, plural or short name (e.g. `nodes`, `hep`, `gnp`)
    #[arg(required_unless_present = "files", conflicts_with = "files")]
    kind: Option<String>,
    /// Names to get; all resources of the kind when none is given
    names: Vec<String>,
    /// Get the resources named in these files (a file, a directory of `.yaml`/`.yml`/`.json` files,
    /// or `-` for standard input) instead of KIND and NAMEs; repeatable
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-")]
    files: Vec<PathBuf>,
    /// With `-f DIR`: also read its sub-directories
    #[arg(short = 'R', long, requires = "files")]
    recursive: bool,
    /// With `-f`: an empty file or directory is not an error
    #[arg(long, requires = "files")]
    skip_empty: bool,
    /// Leave out what belongs to this cluster's copy (namespace, uid, resourceVersion,
    /// creationTimestamp, deletion fields), so the output can be created elsewhere; with NAMEs or `-f`
    #[arg(long)]
    export: bool,
    /// Output format: ps, wide, yaml, json, name, custom-columns=HEADING,...
    #[arg(short, long, default_value = "ps")]
    output: String,
    /// Namespace (namespaced kinds only); `default` when not given
    #[arg(short, long)]
    namespace: Option<String>,
    /// List across all namespaces (namespaced kinds only)
    #[arg(short = 'A', long, visible_short_alias = 'a')]
    all_namespaces: bool,
    /// Only resources whose labels match this selector, e.g. `has(role) && zone == "a"`
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    selector: Option<String>,
    /// A kind the release lacks is refused, and `-f` documents are read by its rules
    #[command(flatten)]
    release: ReleaseArg,
}

pub async fn run(context: &Context, args: GetArgs) -> anyhow::Result<ExitCode> {
    let Some(kind) = &args.kind else {
        return run_from_files(context, &args).await;
    };
    let kind: Kind = kind.parse()?;
    if let Some(release) = args.release.chosen()?
        && let Some(refused) = crate::resource::availability::check_kind(kind, &release)
    {
        anyhow::bail!("{}", refused.reason);
    }
    let format: OutputFormat = args.output.parse()?;
    let keep = label_filter(&args)?;
    let namespace = namespace_scope(kind, args.namespace.as_deref(), args.all_namespaces)?;
    if !args.names.is_empty() && args.all_namespaces {
        anyhow::bail!("cannot use `--all-namespaces` when getting resources by name");
    }
    if let Some(empty) = args.names.iter().find(|name| name.is_empty()) {
        anyhow::bail!("resource name may not be empty{empty}");
    }
    if args.export && args.names.is_empty() {
        // As upstream (`reference/calicoctl.md` §1.3): an export is of named resources.
        anyhow::bail!("`--export` needs resource names (or `-f`)");
    }

    let store = context.datastore().await?;
    let cells = CellContext {
        global_as_number: if format.needs_global_as_number(kind) {
            global_as_number(store.as_ref()).await
        } else {
            GlobalAsNumber::Known(DEFAULT_AS_NUMBER)
        },
    };
    let options = PrintOptions {
        format,
        namespace_column: if kind.is_namespaced()
            && (args.namespace.is_some() || args.all_namespaces)
        {
            NamespaceColumn::Show
        } else {
            NamespaceColumn::Hide
        },
        cells,
        ..PrintOptions::default()
    };
    let stdout = context.printer.stdout();

    if args.names.is_empty() {
        list(store.as_ref(), kind, namespace, stdout, &options, keep).await?;
        return Ok(ExitCode::SUCCESS);
    }

    let keys = args
        .names
        .iter()
        .map(|name| ResourceKey::new(kind, namespace.clone(), name))
        .collect();
    get_named(store.as_ref(), keys, stdout, &options, keep, args.export).await
}

/// `get -f FILE`: the resources the documents name, read from the datastore.
async fn run_from_files(context: &Context, args: &GetArgs) -> anyhow::Result<ExitCode> {
    let format: OutputFormat = args.output.parse()?;
    if args.all_namespaces {
        anyhow::bail!(
            "cannot use `--all-namespaces` with `-f`: the documents name their resources"
        );
    }
    let keep = label_filter(args)?;
    let files = FileArgs {
        files: args.files.clone(),
        recursive: args.recursive,
        skip_empty: args.skip_empty,
        namespace: args.namespace.clone(),
    };
    // The documents are read by the rules of `--release`, else of the cluster's release.
    let chosen = args.release.chosen()?;
    let (keys, store) = match chosen {
        Some(release) => {
            let keys: Vec<ResourceKey> = files.read(&release)?.iter().map(Resource::key).collect();
            if keys.is_empty() {
                return Ok(ExitCode::SUCCESS);
            }
            (keys, context.datastore().await?)
        }
        None => {
            let store = context.datastore().await?;
            let release = api_release(store.as_ref(), None).await;
            let keys: Vec<ResourceKey> = files.read(&release)?.iter().map(Resource::key).collect();
            (keys, store)
        }
    };
    if keys.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let needs_as_number = keys
        .iter()
        .any(|key| format.needs_global_as_number(key.kind));
    let options = PrintOptions {
        format,
        namespace_column: NamespaceColumn::Hide,
        cells: CellContext {
            global_as_number: if needs_as_number {
                global_as_number(store.as_ref()).await
            } else {
                GlobalAsNumber::Known(DEFAULT_AS_NUMBER)
            },
        },
        ..PrintOptions::default()
    };
    let stdout = context.printer.stdout();
    get_named(store.as_ref(), keys, stdout, &options, keep, args.export).await
}

/// `-l`: which resources a get keeps (every one without a selector).
fn label_filter(args: &GetArgs) -> anyhow::Result<impl Fn(&Resource) -> bool + use<>> {
    let selector = args
        .selector
        .as_deref()
        .map(Selector::parse)
        .transpose()
        .context("invalid `--selector`")?;
    Ok(move |resource: &Resource| {
        selector
            .as_ref()
            .is_none_or(|selector| selector.matches(&resource.metadata.labels))
    })
}

/// Gets resources one by one, printing each found one, then reports every one that does not exist.
///
/// Tables are one per object (as upstream prints gets by name), so the kinds may differ; documents
/// and names go through one printer, which ignores the kind.
async fn get_named<W: Write>(
    store: &dyn Datastore,
    keys: Vec<ResourceKey>,
    out: W,
    options: &PrintOptions,
    keep: impl Fn(&Resource) -> bool,
    export: bool,
) -> anyhow::Result<ExitCode> {
    let per_kind = matches!(
        options.format,
        OutputFormat::Ps | OutputFormat::Wide | OutputFormat::CustomColumns(_)
    );
    let Some(first) = keys.first() else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut printer = ResourcePrinter::new(out, first.kind, Shape::Named, options)?;
    let mut missing = Vec::new();
    for key in keys {
        match store.get(&key).await {
            Ok(mut resource) if keep(&resource) => {
                if export {
                    strip_for_export(&mut resource);
                }
                if per_kind && printer.kind() != resource.kind {
                    let out = printer.finish()?;
                    printer = ResourcePrinter::new(out, resource.kind, Shape::Named, options)?;
                }
                printer.print(&resource)?;
            }
            Ok(_) => {}
            Err(StoreError::NotFound(key)) => missing.push(key),
            Err(error) => return Err(error.into()),
        }
    }
    printer.finish()?.flush()?;
    match missing.as_slice() {
        [] => Ok(ExitCode::SUCCESS),
        [key] => Err(StoreError::NotFound(key.clone()).into()),
        keys => {
            let names: Vec<String> = keys.iter().map(ToString::to_string).collect();
            anyhow::bail!("resources do not exist: {}", names.join(", "))
        }
    }
}

/// What `--export` leaves out: the fields that belong to this datastore's copy of the resource
/// (`reference/calicoctl.md` §1.3).
fn strip_for_export(resource: &mut Resource) {
    let metadata = &mut resource.metadata;
    metadata.namespace = None;
    metadata.uid = None;
    metadata.resource_version = None;
    metadata.creation_timestamp = None;
    metadata.other.remove("deletionTimestamp");
    metadata.other.remove("deletionGracePeriodSeconds");
}

/// Streams a list into the printer, page by page.
async fn list<W: Write>(
    store: &dyn Datastore,
    kind: Kind,
    namespace: Option<String>,
    out: W,
    options: &PrintOptions,
    keep: impl Fn(&Resource) -> bool,
) -> anyhow::Result<()> {
    let list_options = ListOptions::new(kind).in_namespace(namespace);
    let mut page = store.list_page(&list_options, None).await?;
    let shape = Shape::List {
        revision: page.revision.clone(),
    };
    let mut printer = ResourcePrinter::new(out, kind, shape, options)?;
    if kind == Kind::Tier {
        // Tiers print in policy-evaluation order; there are few of them, so holding them all is fine.
        let mut tiers = Vec::new();
        loop {
            tiers.extend(page.items.into_iter().filter(|tier| keep(tier)));
            let Some(token) = page.continue_token else {
                break;
            };
            page = store.list_page(&list_options, Some(&token)).await?;
        }
        sort_tiers_by_order(&mut tiers);
        for tier in &tiers {
            printer.print(tier)?;
        }
    } else {
        loop {
            for resource in page.items.iter().filter(|resource| keep(resource)) {
                printer.print(resource)?;
            }
            let Some(token) = page.continue_token else {
                break;
            };
            page = store.list_page(&list_options, Some(&token)).await?;
        }
    }
    printer.finish()?.flush()?;
    Ok(())
}

/// The cluster-wide AS number from BGPConfiguration `default`, for nodes without their own
/// (`reference/calicoctl.md` §8.2). Not found means the default; other failures show as unknown.
async fn global_as_number(store: &dyn Datastore) -> GlobalAsNumber {
    let key = ResourceKey::new(Kind::BgpConfiguration, None, "default");
    match store.get(&key).await {
        Ok(configuration) => match configuration.spec.get("asNumber") {
            None | Some(serde_json::Value::Null) => GlobalAsNumber::Known(DEFAULT_AS_NUMBER),
            Some(value) => parse_as_number(value)
                .map(GlobalAsNumber::Known)
                .unwrap_or(GlobalAsNumber::Unreadable),
        },
        Err(StoreError::NotFound(_)) => GlobalAsNumber::Known(DEFAULT_AS_NUMBER),
        Err(_) => GlobalAsNumber::Unreadable,
    }
}

/// A stored AS number, plain (`64512`) or dotted (`1.10`).
fn parse_as_number(value: &serde_json::Value) -> Option<u32> {
    let value: AsNumber = serde_json::from_value(value.clone()).ok()?;
    numorstring::parse_as_number(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_numbers_parse_plain_and_dotted() {
        assert_eq!(parse_as_number(&serde_json::json!(64512)), Some(64512));
        assert_eq!(parse_as_number(&serde_json::json!("1.10")), Some(65546));
        assert_eq!(parse_as_number(&serde_json::json!("x")), None);
    }

    #[test]
    fn namespace_rules_follow_upstream() {
        assert_eq!(
            namespace_scope(Kind::NetworkPolicy, None, false)
                .unwrap()
                .as_deref(),
            Some("default")
        );
        assert_eq!(
            namespace_scope(Kind::NetworkPolicy, None, true).unwrap(),
            None
        );
        assert!(namespace_scope(Kind::NetworkPolicy, Some("a"), true).is_err());
        assert!(namespace_scope(Kind::Node, Some("a"), false).is_err());
    }
}
