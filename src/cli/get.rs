//! `netctl get KIND [NAME...]`: reads resources and prints them.
//!
//! A list is streamed page by page from the datastore into the printer, so memory stays bounded by a
//! page however many resources there are; `-l` filters with the selector language as pages arrive. A get
//! by name prints what it found and then reports every name that does not exist (exit 1), as upstream.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap_complete::engine::ArgValueCompleter;

use super::args::{FileArgs, ReleaseArg, namespace_scope};
use super::get_forms::{GetPrinter, Presentation, Targets, parse_targets, table_output};
use super::modeline::{ModelineError, ModelineWriter, modeline};
use super::{Context, completion};
use crate::datastore::{Datastore, Detail, ListOptions, Pages, StoreError};
use crate::listing::Limit;
use crate::output::{
    CellContext, ColumnSet, DEFAULT_AS_NUMBER, GlobalAsNumber, NamespaceColumn, OutputFormat,
    PhaseClock, PrintOptions, Shape, TableColumns, sort_tiers_by_order,
};
use crate::plan::release::api_release;
use crate::resource::selector::Selector;
use crate::resource::spec::numorstring::{self, AsNumber};
use crate::resource::{Kind, Resource, ResourceKey};

const EXAMPLES: &str = "\
Examples:
  netctl get nodes
  netctl get hep,gnp                               # several kinds; `get hep/node1-eth0` by KIND/NAME
  netctl get hostendpoints -o wide                 # INTERFACE shows all-interfaces endpoints (`*`)
  netctl get hep -l 'has(host-endpoint-upgrade)'   # filter by the selector language
  netctl get ippool default-ipv4-ippool -o yaml
  netctl get networkpolicies -A -o custom-columns=NAMESPACE,NAME,ORDER
  netctl get gnp -o json | jq '.items[].metadata.name'
  netctl get hep -o jsonpath='{range .items[*]}{.metadata.name}{\"\\n\"}{end}'
  netctl get hep -o go-template='{{range .items}}{{.metadata.name}} {{.spec.node}}{{\"\\n\"}}{{end}}'
  netctl get ippool default-ipv4-ippool -o go-template='{{.spec.cidr}}'
  netctl get gnp -o go-template-file=names.tmpl   # Go template syntax, as kubectl and calicoctl
  netctl get hep --show-labels --no-headers
  netctl get -f policies.yaml -o yaml              # what the datastore holds for each document
  netctl get gnp allow-all-upgrade -o yaml --export > policy.yaml   # ready to create elsewhere";

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct GetArgs {
    /// Resource kind: a name, plural or short name (e.g. `nodes`, `hep`, `gnp`); several as
    /// `hep,gnp`; or KIND/NAME arguments (`hep/node1-eth0 gnp/allow-all`)
    #[arg(
        required_unless_present = "files",
        conflicts_with = "files",
        add = ArgValueCompleter::new(completion::complete_kind)
    )]
    kind: Option<String>,
    /// Names to get; all resources of the kind when none is given
    #[arg(add = ArgValueCompleter::new(completion::complete_resource_name))]
    names: Vec<String>,
    /// Get the resources named in these files (a file, a directory of `.yaml`/`.yml`/`.json` files,
    /// or `-` for standard input) instead of KIND and NAMEs; repeatable
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-")]
    files: Vec<PathBuf>,
    /// With `-f DIR`: also read its sub-directories
    #[arg(short = 'R', long, requires = "files", conflicts_with = "kind")]
    recursive: bool,
    /// With `-f`: an empty file or directory is not an error
    #[arg(long, requires = "files", conflicts_with = "kind")]
    skip_empty: bool,
    /// Leave out what belongs to this cluster's copy (namespace, uid, resourceVersion,
    /// creationTimestamp, deletion fields), so the output can be created elsewhere; with NAMEs or `-f`
    #[arg(long)]
    export: bool,
    /// Output format: ps, wide, yaml, json, name, custom-columns=HEADING,..., jsonpath=TEMPLATE,
    /// go-template=TEMPLATE, go-template-file=FILE
    #[arg(short, long, default_value = "ps", add = ArgValueCompleter::new(completion::complete_output_format))]
    output: String,
    /// The template (or, with `-o go-template-file`, its file) when `-o` names only the format,
    /// as kubectl takes it: `-o go-template --template '{{.metadata.name}}'`
    #[arg(long, value_name = "TEMPLATE")]
    template: Option<String>,
    /// With `-o yaml` and one resource: start with a `# yaml-language-server: $schema=` line naming
    /// the kind's JSON Schema under BASE (a directory or URL; without one, the schemas installed
    /// beside netctl), for editors
    #[arg(
        long,
        value_name = "BASE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    schema_modeline: Option<String>,
    /// Tables without their heading line
    #[arg(long)]
    no_headers: bool,
    /// Tables with a LABELS column
    #[arg(long)]
    show_labels: bool,
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
    let (format, presentation) = Presentation::parse(
        &args.output,
        args.template.as_deref(),
        args.no_headers,
        args.show_labels,
    )?;
    let Some(first) = &args.kind else {
        return run_from_files(context, &args, format, &presentation).await;
    };
    let targets = parse_targets(first, &args.names)?;
    if let Some(release) = args.release.chosen()? {
        let kinds: Vec<Kind> = match &targets {
            Targets::Kinds { kinds, .. } => kinds.clone(),
            Targets::Named(pairs) => pairs.iter().map(|(kind, _)| *kind).collect(),
        };
        for kind in kinds {
            if let Some(refused) = crate::resource::availability::check_kind(kind, &release) {
                anyhow::bail!("{}", refused.reason);
            }
        }
    }
    let keep = label_filter(&args)?;
    if let Some(empty) = args.names.iter().find(|name| name.is_empty()) {
        anyhow::bail!("resource name may not be empty{empty}");
    }
    let (kinds, names) = match &targets {
        Targets::Kinds { kinds, names } => (kinds.clone(), names.clone()),
        Targets::Named(pairs) => (pairs.iter().map(|(kind, _)| *kind).collect(), Vec::new()),
    };
    let by_name = !names.is_empty() || matches!(targets, Targets::Named(_));
    if by_name && args.all_namespaces {
        anyhow::bail!("cannot use `--all-namespaces` when getting resources by name");
    }
    if args.export && !by_name {
        // As upstream (`calicoctl/calicoctl/commands/common/resources.go`): an export is of named
        // resources.
        anyhow::bail!("`--export` needs resource names (or `-f`)");
    }
    let mut namespaces = Vec::new();
    for kind in &kinds {
        namespaces.push(namespace_scope(
            *kind,
            args.namespace.as_deref(),
            args.all_namespaces,
        )?);
    }

    let single = match &targets {
        Targets::Named(pairs) if pairs.len() == 1 => Some(pairs[0].0),
        Targets::Kinds { kinds, names } if kinds.len() == 1 && names.len() == 1 => Some(kinds[0]),
        _ => None,
    };
    check_schema_modeline(&args, &format, &presentation, single)?;

    let mut clock = PhaseClock::new(&context.printer);
    let store = context.datastore().await?;
    clock.mark("connect");
    // A forgotten lock stops every new pod: `get nodes` is where operators look first.
    if kinds.contains(&Kind::Node) {
        crate::datastore::readiness::warn_if_locked(store.as_ref(), &context.printer).await;
    }
    if kinds.contains(&Kind::IpamConfiguration)
        && store.kind() == crate::datastore::DatastoreType::EtcdV3
    {
        context
            .printer
            .warn(crate::ipam::config::ETCD_RESOURCE_CAVEAT);
    }
    let modeline = schema_modeline(&args, single, store.as_ref()).await?;
    let needs_as_number = kinds
        .iter()
        .any(|kind| format.needs_global_as_number(*kind));
    let cells = CellContext {
        global_as_number: if needs_as_number {
            global_as_number(store.as_ref()).await
        } else {
            GlobalAsNumber::Known(DEFAULT_AS_NUMBER)
        },
    };
    let namespace_column = |kind: Kind| {
        if kind.is_namespaced() && (args.namespace.is_some() || args.all_namespaces) {
            NamespaceColumn::Show
        } else {
            NamespaceColumn::Hide
        }
    };
    let mut buffer = Vec::new();
    let mut out = match presentation.template {
        Some(_) => Box::new(&mut buffer) as Box<dyn Write>,
        None => table_output(context.printer.stdout(), &presentation),
    };
    if modeline.is_some() {
        out = Box::new(ModelineWriter::new(out, modeline));
    }

    let code = if by_name {
        let keys: Vec<ResourceKey> = match &targets {
            Targets::Named(pairs) => pairs
                .iter()
                .zip(&namespaces)
                .map(|((kind, name), namespace)| ResourceKey::new(*kind, namespace.clone(), name))
                .collect(),
            Targets::Kinds { .. } => kinds
                .iter()
                .zip(&namespaces)
                .flat_map(|(kind, namespace)| {
                    names
                        .iter()
                        .map(|name| ResourceKey::new(*kind, namespace.clone(), name))
                })
                .collect(),
        };
        let options = PrintOptions {
            format,
            namespace_column: namespace_column(kinds[0]),
            cells,
            ..PrintOptions::default()
        };
        let named = Named {
            keep: &keep,
            export: args.export,
            presentation: &presentation,
            listing: context.printer.listing(),
        };
        get_named(store.as_ref(), keys, &mut out, &options, named).await
    } else {
        for (index, (kind, namespace)) in kinds.iter().zip(namespaces).enumerate() {
            let options = PrintOptions {
                format: format.clone(),
                namespace_column: namespace_column(*kind),
                cells,
                ..PrintOptions::default()
            };
            if index > 0 && options.format == OutputFormat::Yaml {
                out.write_all(b"---\n")?;
            }
            let detail = list_detail(
                *kind,
                &options.format,
                args.selector.is_some() || args.show_labels,
            );
            let list_options = ListOptions::new(*kind)
                .in_namespace(namespace)
                .with_detail(detail);
            let printed = list(
                Arc::clone(&store),
                list_options,
                &mut out,
                &options,
                &presentation,
                &keep,
                &mut clock,
            )
            .await?;
            if printed == 0 && *kind == Kind::Node && args.selector.is_none() {
                // The spec's reading of an empty node list (`README.md`, "Check the configuration").
                context.printer.say(
                    "note: no nodes: either no node has registered yet, or this is not the datastore the cluster uses (see `netctl config view`)",
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    };
    out.flush()?;
    drop(out);
    if let Some(template) = &presentation.template {
        render_template(context, template, &buffer)?;
    }
    code
}

/// `-o jsonpath=` and `-o go-template=`: the template applied to each JSON document the printer
/// wrote.
fn render_template(
    context: &Context,
    template: &super::get_forms::Template,
    json: &[u8],
) -> anyhow::Result<()> {
    let mut stdout = context.printer.stdout();
    for document in serde_json::Deserializer::from_slice(json).into_iter::<serde_json::Value>() {
        let document = document.context("cannot read back the JSON output for the template")?;
        stdout.write_all(template.render(&document)?.as_bytes())?;
    }
    stdout.flush()?;
    Ok(())
}

/// `get -f FILE`: the resources the documents name, read from the datastore.
async fn run_from_files(
    context: &Context,
    args: &GetArgs,
    format: OutputFormat,
    presentation: &Presentation,
) -> anyhow::Result<ExitCode> {
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
    let (keys, store) = match args.release.chosen()? {
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
    let single = match keys.as_slice() {
        [key] => Some(key.kind),
        _ => None,
    };
    check_schema_modeline(args, &format, presentation, single)?;
    let modeline = schema_modeline(args, single, store.as_ref()).await?;
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
    let mut buffer = Vec::new();
    let mut out = match presentation.template {
        Some(_) => Box::new(&mut buffer) as Box<dyn Write>,
        None => table_output(context.printer.stdout(), presentation),
    };
    if modeline.is_some() {
        out = Box::new(ModelineWriter::new(out, modeline));
    }
    let named = Named {
        keep: &keep,
        export: args.export,
        presentation,
        listing: context.printer.listing(),
    };
    let code = get_named(store.as_ref(), keys, &mut out, &options, named).await;
    out.flush()?;
    drop(out);
    if let Some(template) = &presentation.template {
        render_template(context, template, &buffer)?;
    }
    code
}

/// Refuses `--schema-modeline` where no one document of a kind is printed (checked before
/// connecting where the arguments tell).
fn check_schema_modeline(
    args: &GetArgs,
    format: &OutputFormat,
    presentation: &Presentation,
    single: Option<Kind>,
) -> Result<(), ModelineError> {
    if args.schema_modeline.is_none() {
        return Ok(());
    }
    if *format != OutputFormat::Yaml || presentation.template.is_some() {
        return Err(ModelineError::YamlOnly);
    }
    if single.is_none() {
        return Err(ModelineError::SeveralDocuments);
    }
    Ok(())
}

/// `--schema-modeline`: the line for the one resource of kind `single`, by the rules of `--release`
/// or else of the cluster's release.
async fn schema_modeline(
    args: &GetArgs,
    single: Option<Kind>,
    store: &dyn Datastore,
) -> anyhow::Result<Option<String>> {
    let (Some(base), Some(kind)) = (&args.schema_modeline, single) else {
        return Ok(None);
    };
    let release = api_release(store, args.release.chosen()?.as_ref()).await;
    Ok(Some(modeline(base, kind, &release.release)?))
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
    named: Named<'_>,
) -> anyhow::Result<ExitCode> {
    let Named {
        keep,
        export,
        presentation,
        listing,
    } = named;
    let per_kind = matches!(
        options.format,
        OutputFormat::Ps | OutputFormat::Wide | OutputFormat::CustomColumns(_)
    );
    let Some(first) = keys.first() else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut printer = GetPrinter::new(out, first.kind, Shape::Named, options, presentation)?;
    let mut missing = Vec::new();
    for key in keys {
        match store.get(&key).await {
            Ok(mut resource) if keep(&resource) => {
                if export {
                    strip_for_export(&mut resource);
                }
                if per_kind && printer.kind() != resource.kind {
                    let out = printer.finish()?;
                    printer =
                        GetPrinter::new(out, resource.kind, Shape::Named, options, presentation)?;
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
            anyhow::bail!(
                "resources do not exist: {}",
                crate::listing::inline(&names, &listing)
            )
        }
    }
}

/// How a get by name filters and shows what it found.
struct Named<'a> {
    keep: &'a dyn Fn(&Resource) -> bool,
    export: bool,
    presentation: &'a Presentation,
    /// How many missing names the error names (`--all-errors`).
    listing: Limit,
}

/// What `--export` leaves out: the fields that belong to this datastore's copy of the resource
/// (upstream `calicoctl/calicoctl/commands/common/resources.go`).
fn strip_for_export(resource: &mut Resource) {
    let metadata = &mut resource.metadata;
    metadata.namespace = None;
    metadata.uid = None;
    metadata.resource_version = None;
    metadata.creation_timestamp = None;
    metadata.other.remove("deletionTimestamp");
    metadata.other.remove("deletionGracePeriodSeconds");
}

/// How much of each listed resource the output reads: a table its columns' fields (and the labels
/// for `-l`), `-o name` only names, documents everything (the spec and status as stored text, which
/// they are printed from without being decoded).
fn list_detail(kind: Kind, format: &OutputFormat, selector: bool) -> Detail {
    let set = match format {
        OutputFormat::Ps => ColumnSet::Ps,
        OutputFormat::Wide => ColumnSet::Wide,
        OutputFormat::CustomColumns(headings) => ColumnSet::Custom(headings),
        OutputFormat::Name => ColumnSet::Custom(&[]),
        // Tiers are collected and sorted before printing, so they are decoded whole.
        OutputFormat::Yaml | OutputFormat::Json if kind == Kind::Tier => return Detail::Full,
        OutputFormat::Yaml | OutputFormat::Json => return Detail::Document,
    };
    let Ok(columns) = TableColumns::new(kind, set, NamespaceColumn::Show) else {
        return Detail::Full;
    };
    let Some(mut spec_fields) = columns.spec_fields() else {
        return Detail::Full;
    };
    if kind == Kind::Tier {
        // Tiers are sorted by order whatever the columns.
        spec_fields.push("order");
    }
    Detail::Summary {
        spec_fields,
        labels: selector,
    }
}

/// Streams a list into the printer, page by page: the next page is read while this one prints,
/// and stdout is written in large blocks rather than a line at a time. Returns how many resources
/// it printed.
async fn list<W: Write>(
    store: Arc<dyn Datastore>,
    list_options: ListOptions,
    out: W,
    options: &PrintOptions,
    presentation: &Presentation,
    keep: impl Fn(&Resource) -> bool,
    clock: &mut PhaseClock,
) -> anyhow::Result<usize> {
    let kind = list_options.kind;
    let mut pages = Pages::new(store, list_options);
    let Some(first) = pages.next().await? else {
        anyhow::bail!("a list returned no first page");
    };
    clock.mark("first page read and decoded");
    let shape = Shape::List {
        revision: first.revision.clone(),
    };
    let out = BufWriter::with_capacity(OUTPUT_BUFFER_BYTES, out);
    let mut printer = GetPrinter::new(out, kind, shape, options, presentation)?;
    let mut page = Some(first);
    let mut printed = 0;
    if kind == Kind::Tier {
        // Tiers print in policy-evaluation order; there are few of them, so holding them all is fine.
        let mut tiers = Vec::new();
        while let Some(current) = page {
            tiers.extend(current.items.into_iter().filter(|tier| keep(tier)));
            page = pages.next().await?;
        }
        sort_tiers_by_order(&mut tiers);
        for tier in &tiers {
            printer.print(tier)?;
        }
        printed = tiers.len();
    } else {
        while let Some(current) = page {
            let stored = current.bodies.len() == current.items.len();
            for (index, resource) in current.items.iter().enumerate() {
                if !keep(resource) {
                    continue;
                }
                match current.bodies.get(index) {
                    Some(body) if stored => printer.print_stored(resource, body)?,
                    _ => printer.print(resource)?,
                }
                printed += 1;
            }
            page = pages.next().await?;
        }
    }
    printer
        .finish()?
        .into_inner()
        .map_err(|error| error.into_error())?
        .flush()?;
    clock.mark("the other pages read, decoded and printed");
    Ok(printed)
}

/// The block size of a list's output: one write(2) per 64 KiB instead of one per line.
const OUTPUT_BUFFER_BYTES: usize = 64 << 10;

/// The cluster-wide AS number from BGPConfiguration `default`, for nodes without their own
/// (upstream `calicoctl/calicoctl/resourcemgr/node.go`, `commands/common/printer.go`). Not found
/// means the default; other failures show as unknown.
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
