//! `create`, `apply`, `replace`, `delete`, `label`, `patch` and `validate`: the resource commands.
//!
//! Each translates its flags into one typed action, wraps it in a one-step plan (`Plan::single`) and
//! hands it to the same executor `upgrade apply` uses, so `--dry-run`, validation, conflict retries
//! and messages behave the same everywhere. Files are loaded and every document validated before
//! anything is written: one bad document anywhere means nothing is written. Writes are refused when
//! the cluster runs a release newer than any netctl knows (an older tool must not be used after an
//! upgrade: `docs/upgrade-procedures.md`, "Versions and advice"), unless
//! `--allow-version-mismatch`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap_complete::engine::ArgValueCompleter;

use super::args::{DryRunArg, FileArgs, ReleaseArg, namespace_scope};
use super::{Context, completion};
use crate::datastore::{Datastore, DatastoreType};
use crate::exec::actions::{ExistingPolicy, Outcome, WriteSemantics};
use crate::exec::lock::Holder;
use crate::exec::{ExecError, Executor, RunMode, RunOneOptions};
use crate::output::PhaseClock;
use crate::plan::action::{
    DeletionTarget, PatchType, ResourceDeletion, ResourceDocuments, ResourceLabel, ResourcePatch,
};
use crate::plan::release::{api_release, check_cluster_version};
use crate::plan::{Action, Plan};
use crate::release::ApiRelease;
use crate::resource::{Kind, Resource, ResourceKey};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl create -f pools.yaml\n  netctl create -f policies/ -R --skip-exists\n  cat hep.yaml | netctl create -f -"
)]
pub struct CreateArgs {
    #[command(flatten)]
    files: FileArgs,
    /// A resource that already exists counts as success
    #[arg(long)]
    skip_exists: bool,
    #[command(flatten)]
    dry_run: DryRunArg,
    #[command(flatten)]
    release: ReleaseArg,
}

/// `apply` and `replace`: documents and `--dry-run` (their examples are on the commands).
#[derive(Debug, clap::Args)]
pub struct DocumentArgs {
    #[command(flatten)]
    files: FileArgs,
    #[command(flatten)]
    dry_run: DryRunArg,
    #[command(flatten)]
    release: ReleaseArg,
}

pub const APPLY_EXAMPLES: &str = "Examples:\n  netctl apply -f allow-all-upgrade.yaml\n  netctl apply -f policies/ --dry-run\n  netctl apply -f peers.yaml --dry-run --release v3.31\n  netctl apply -f - < hostendpoints.yaml\nDocuments are validated for the release the cluster runs (ClusterInformation); with `--dry-run`,\n`--release` names another.";

pub const REPLACE_EXAMPLES: &str = "Examples:\n  netctl replace -f pool.yaml\n  netctl get ippool p1 -o yaml > p1.yaml && $EDITOR p1.yaml && netctl replace -f p1.yaml";

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl delete hostendpoint node1-eth0\n  netctl delete gnp allow-all-upgrade --skip-not-exists\n  netctl delete -f old-policies.yaml --dry-run\n  netctl delete -f policies/ -R --skip-not-exists"
)]
pub struct DeleteArgs {
    /// Resource kind (with NAMEs), e.g. `hostendpoint`, `gnp`
    #[arg(
        required_unless_present = "files",
        conflicts_with = "files",
        add = ArgValueCompleter::new(completion::complete_kind)
    )]
    kind: Option<String>,
    /// Names to delete
    #[arg(add = ArgValueCompleter::new(completion::complete_resource_name))]
    names: Vec<String>,
    /// Delete the resources named in these files instead (a file, a directory of
    /// `.yaml`/`.yml`/`.json` files, or `-` for standard input); repeatable
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-")]
    files: Vec<PathBuf>,
    /// With `-f DIR`: also read its sub-directories
    #[arg(short = 'R', long, requires = "files", conflicts_with = "kind")]
    recursive: bool,
    /// With `-f`: an empty file or directory is not an error
    #[arg(long, requires = "files", conflicts_with = "kind")]
    skip_empty: bool,
    /// Namespace (namespaced kinds only)
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// A resource that does not exist counts as success
    #[arg(short = 's', long)]
    skip_not_exists: bool,
    #[command(flatten)]
    dry_run: DryRunArg,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl label hostendpoint node1-all host-endpoint-upgrade=\n  netctl label node node1 zone=b --overwrite\n  netctl label hep node1-all host-endpoint-upgrade --remove"
)]
pub struct LabelArgs {
    /// Resource kind, e.g. `hostendpoint`, `node`
    #[arg(add = ArgValueCompleter::new(completion::complete_kind))]
    kind: String,
    /// Resource name
    #[arg(add = ArgValueCompleter::new(completion::complete_resource_name))]
    name: String,
    /// `key=value` to set (the value may be empty), or `key` with `--remove`
    label: String,
    /// Change the value of a label that is already set
    #[arg(long, conflicts_with = "remove")]
    overwrite: bool,
    /// Remove the label
    #[arg(long)]
    remove: bool,
    /// Namespace (namespaced kinds only)
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    #[command(flatten)]
    dry_run: DryRunArg,
}

#[derive(Debug, clap::Args)]
#[command(after_help = r#"Examples:
  netctl patch kubecontrollersconfiguration default -p '{"spec":{"controllers":{"node":{"hostEndpoint":{"autoCreate":"Enabled"}}}}}'
  netctl patch node node-0 -p '{"spec":{"bgp":{"routeReflectorClusterID":"244.0.0.1"}}}'
  netctl patch gnp allow-dns -p '{"metadata":{"labels":{"$patch":"replace","team":"net"}}}'
  netctl patch ippool pool1 --type merge -p '{"spec":{"disabled":true}}'
  netctl patch ippool pool1 --type json -p '[{"op":"replace","path":"/spec/disabled","value":true}]'

Patch types:
  strategic  (default, as calicoctl and kubectl) Kubernetes' strategic merge: objects merge key by
             key, `null` removes a key, lists are replaced whole except `metadata.finalizers`
             (merged as a set) and `metadata.ownerReferences` (merged by `uid`); `$patch:
             replace|delete`, `$retainKeys`, `$setElementOrder/` and `$deleteFromPrimitiveList/`
             as in Kubernetes
  merge      RFC 7386 JSON merge patch (the default before this release: the same result unless the
             patch changes those two lists or uses `$` directives)
  json       RFC 6902 JSON patch, a list of operations
The patched resource is validated before it is written."#)]
pub struct PatchArgs {
    /// Resource kind, e.g. `ippool`
    #[arg(add = ArgValueCompleter::new(completion::complete_kind))]
    kind: String,
    /// Resource name
    #[arg(add = ArgValueCompleter::new(completion::complete_resource_name))]
    name: String,
    /// The patch, as JSON
    #[arg(short = 'p', long = "patch", value_name = "JSON")]
    patch: String,
    /// `strategic` (Kubernetes' strategic merge patch), `merge` (RFC 7386 JSON merge patch) or
    /// `json` (RFC 6902 JSON patch)
    #[arg(short = 't', long = "type", value_enum, default_value_t = PatchTypeArg::Strategic)]
    patch_type: PatchTypeArg,
    /// Namespace (namespaced kinds only)
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    #[command(flatten)]
    dry_run: DryRunArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PatchTypeArg {
    Strategic,
    Merge,
    Json,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl validate -f policies/ -R\n  netctl validate -f - < hostendpoints.yaml\n  netctl validate -f peers.yaml --release v3.29\n  netctl -q validate -f hosts.yaml && echo valid\n  netctl validate -f hosts.yaml --all-errors\nNo datastore is needed; documents are validated for `--release`, else the newest release netctl\nknows. The exit status is 1 when any document is invalid; past 20 problems the rest are counted\nby kind (`--all-errors` lists every one, `--errors-file FILE` writes them to FILE)."
)]
pub struct ValidateArgs {
    #[command(flatten)]
    files: FileArgs,
    /// Print the documents as they would be stored (defaults applied), as YAML
    #[arg(long)]
    show_defaults: bool,
    #[command(flatten)]
    release: ReleaseArg,
}

/// Runs a one-step plan through the one executor, writing the dry run's transcript to `out`. A
/// one-step command has no run to resume: a failed step's own error (and its advice) is the
/// command's error.
pub(super) async fn run_one_step(
    context: &Context,
    store: Arc<dyn Datastore>,
    plan: &Plan,
    mode: RunMode,
    options: &RunOneOptions,
    release: Option<ApiRelease>,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<Outcome> {
    // The Kubernetes datastore's own cluster, for what a step writes beside the Calico resources
    // (the CRDs `datastore.import` installs).
    let kubernetes = match store.kind() {
        DatastoreType::Kubernetes => context.kubernetes_client().await?,
        DatastoreType::EtcdV3 => None,
    };
    let executor = Executor::new(store, None, Holder::current())
        .with_kubernetes(kubernetes)
        .with_release(release)
        .with_printer(context.printer.clone());
    match executor.run_one(plan, mode, options, out).await {
        Ok(outcome) => Ok(outcome),
        // A one-step command has no run to resume: report the action's own error and advice.
        Err(ExecError::StepFailed { source, .. }) => Err(anyhow::Error::new(*source)),
        Err(error) => Err(error.into()),
    }
}

/// Runs one action as a one-step plan and prints its result (the dry-run transcript, or the summary).
async fn run_step(
    context: &Context,
    store: Arc<dyn Datastore>,
    plan: &Plan,
    dry_run: DryRunArg,
    semantics: WriteSemantics,
    release: Option<ApiRelease>,
) -> anyhow::Result<()> {
    let mode = dry_run.mode();
    let options = RunOneOptions {
        semantics,
        journal: None,
    };
    let mut stdout = context.printer.stdout();
    let outcome = run_one_step(context, store, plan, mode, &options, release, &mut stdout).await?;
    drop(stdout);
    if mode == RunMode::Execute {
        // calicoctl's result line, on stdout where scripts read it; `-q` leaves it out.
        match outcome.summary.strip_prefix("Successfully ") {
            Some(_) => context.printer.summary(&outcome.summary)?,
            None => context
                .printer
                .summary(&format!("Successfully {}", outcome.summary))?,
        }
    }
    Ok(())
}

/// Connects and refuses writes to a cluster newer than netctl knows, unless allowed.
async fn writable_datastore(context: &Context) -> anyhow::Result<Arc<dyn Datastore>> {
    let store = context.datastore().await?;
    if !context.global.allow_version_mismatch {
        check_cluster_version(store.as_ref()).await?;
    }
    Ok(store)
}

fn describe(verb: &str, resources: &[Resource]) -> String {
    match resources {
        [one] => format!("{verb} {}", one.key()),
        many => format!("{verb} {} resources", many.len()),
    }
}

/// The three document commands differ only in the action and how existing resources are treated.
#[derive(Debug, Clone, Copy)]
enum DocumentCommand {
    /// With what a create does when a resource already exists (`--skip-exists`).
    Create(ExistingPolicy),
    Apply,
    Replace,
}

/// The release a write's documents are validated for: `--release` (only with `--dry-run`: a real
/// write follows the cluster), else the cluster's, else the newest netctl knows.
fn chosen_release(release: &ReleaseArg, dry_run: DryRunArg) -> anyhow::Result<Option<ApiRelease>> {
    let chosen = release.chosen()?;
    if chosen.is_some() && dry_run.mode() == RunMode::Execute {
        anyhow::bail!(
            "`--release` needs `--dry-run`: a write is validated for the release the cluster runs"
        );
    }
    Ok(chosen)
}

async fn write_documents(
    context: &Context,
    command: DocumentCommand,
    files: &FileArgs,
    dry_run: DryRunArg,
    release: &ReleaseArg,
) -> anyhow::Result<ExitCode> {
    let mut clock = PhaseClock::new(&context.printer);
    let chosen = chosen_release(release, dry_run)?;
    // With `--release`, bad documents are refused before connecting; otherwise the cluster's
    // release decides what is valid, so it is read first.
    let documents = match &chosen {
        Some(chosen) => Some((files.load(chosen)?, chosen.release.clone())),
        None => None,
    };
    let store = writable_datastore(context).await?;
    let (documents, validated_for) = match documents {
        Some(loaded) => loaded,
        None => {
            let release = api_release(store.as_ref(), None).await;
            clock.mark("connect and read the cluster's release");
            (files.load(&release)?, release.release)
        }
    };
    clock.mark("read and validate the documents");
    let (verb, build): (&str, fn(ResourceDocuments) -> Action) = match command {
        DocumentCommand::Create(_) => ("create", Action::ResourceCreate),
        DocumentCommand::Apply => ("apply", Action::ResourceApply),
        DocumentCommand::Replace => ("replace", Action::ResourceReplace),
    };
    let semantics = match command {
        DocumentCommand::Create(create_existing) => WriteSemantics {
            create_existing,
            ..WriteSemantics::default()
        },
        DocumentCommand::Apply | DocumentCommand::Replace => WriteSemantics::default(),
    };
    if store.kind() == crate::datastore::DatastoreType::EtcdV3
        && documents
            .iter()
            .any(|document| document.kind == Kind::IpamConfiguration)
    {
        context
            .printer
            .warn(crate::ipam::config::ETCD_RESOURCE_CAVEAT);
    }
    let description = describe(verb, &documents);
    // The step does not validate the documents again for the release they were loaded for.
    let action = build(ResourceDocuments {
        documents,
        file: None,
        validated_for: Some(validated_for),
    });
    let plan = Plan::single(verb, description, action);
    clock.mark("plan");
    run_step(context, store, &plan, dry_run, semantics, chosen).await?;
    clock.mark("the step (its phases above)");
    Ok(ExitCode::SUCCESS)
}

pub async fn create(context: &Context, args: CreateArgs) -> anyhow::Result<ExitCode> {
    let existing = match args.skip_exists {
        true => ExistingPolicy::Skip,
        false => ExistingPolicy::Fail,
    };
    let command = DocumentCommand::Create(existing);
    write_documents(context, command, &args.files, args.dry_run, &args.release).await
}

pub async fn apply(context: &Context, args: DocumentArgs) -> anyhow::Result<ExitCode> {
    let command = DocumentCommand::Apply;
    write_documents(context, command, &args.files, args.dry_run, &args.release).await
}

pub async fn replace(context: &Context, args: DocumentArgs) -> anyhow::Result<ExitCode> {
    let command = DocumentCommand::Replace;
    write_documents(context, command, &args.files, args.dry_run, &args.release).await
}

pub async fn delete(context: &Context, args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let targets: Vec<DeletionTarget> = match &args.kind {
        Some(kind) => {
            let kind: Kind = kind.parse()?;
            if args.names.is_empty() {
                anyhow::bail!("name the `{kind}` resources to delete");
            }
            let namespace = namespace_scope(kind, args.namespace.as_deref(), false)?;
            args.names
                .iter()
                .map(|name| DeletionTarget {
                    kind,
                    name: name.clone(),
                    namespace: namespace.clone(),
                    resource_version: None,
                })
                .collect()
        }
        None => {
            let files = FileArgs {
                files: args.files.clone(),
                recursive: args.recursive,
                skip_empty: args.skip_empty,
                namespace: args.namespace.clone(),
            };
            // Read by the rules of the cluster's release, as the documents were written; a
            // document's `resourceVersion` makes its delete conditional on it.
            let store = context.datastore().await?;
            let release = api_release(store.as_ref(), None).await;
            files
                .read(&release)?
                .into_iter()
                .map(|resource| DeletionTarget {
                    kind: resource.kind,
                    name: resource.metadata.name,
                    namespace: resource.metadata.namespace,
                    resource_version: resource.metadata.resource_version,
                })
                .collect()
        }
    };
    let store = writable_datastore(context).await?;
    let semantics = WriteSemantics {
        delete_missing: if args.skip_not_exists {
            ExistingPolicy::Skip
        } else {
            ExistingPolicy::Fail
        },
        ..WriteSemantics::default()
    };
    let description = match targets.as_slice() {
        [one] => format!(
            "delete {}",
            ResourceKey::new(one.kind, one.namespace.clone(), &one.name)
        ),
        many => format!("delete {} resources", many.len()),
    };
    let action = Action::ResourceDelete(ResourceDeletion { targets });
    let plan = Plan::single("delete", description, action);
    run_step(context, store, &plan, args.dry_run, semantics, None).await?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the one step of `label` or `patch`, which write with the default semantics.
async fn change(context: &Context, plan: &Plan, dry_run: DryRunArg) -> anyhow::Result<ExitCode> {
    let store = writable_datastore(context).await?;
    run_step(
        context,
        store,
        plan,
        dry_run,
        WriteSemantics::default(),
        None,
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

pub async fn label(context: &Context, args: LabelArgs) -> anyhow::Result<ExitCode> {
    let kind: Kind = args.kind.parse()?;
    let namespace = namespace_scope(kind, args.namespace.as_deref(), false)?;
    let (key, value) = match (args.remove, args.label.split_once('=')) {
        (true, None) => (args.label.clone(), None),
        (true, Some(_)) => {
            anyhow::bail!("with `--remove`, give only the label key, not `key=value`")
        }
        (false, Some((key, value))) if !value.contains('=') => {
            (key.to_string(), Some(value.to_string()))
        }
        (false, _) => anyhow::bail!(
            "invalid label `{}`: expected `key=value` (the value may be empty) or `key --remove`",
            args.label
        ),
    };
    if key.is_empty() {
        anyhow::bail!("invalid label `{}`: the key is empty", args.label);
    }
    let description = format!("label {kind}({}) {}", args.name, args.label);
    let action = Action::ResourceLabel(ResourceLabel {
        kind,
        name: args.name,
        namespace,
        key,
        labels: None,
        value,
        overwrite: args.overwrite,
        remove: args.remove,
    });
    let plan = Plan::single("label", description, action);
    change(context, &plan, args.dry_run).await
}

pub async fn patch(context: &Context, args: PatchArgs) -> anyhow::Result<ExitCode> {
    let kind: Kind = args.kind.parse()?;
    let namespace = namespace_scope(kind, args.namespace.as_deref(), false)?;
    let patch: serde_json::Value = serde_json::from_str(&args.patch)
        .with_context(|| format!("the patch is not valid JSON: `{}`", args.patch))?;
    let patch_type = match args.patch_type {
        PatchTypeArg::Merge | PatchTypeArg::Strategic if !patch.is_object() => {
            anyhow::bail!(
                "a {} patch must be a JSON object, e.g. '{{\"spec\":{{...}}}}' (a list of operations is `--type json`)",
                match args.patch_type {
                    PatchTypeArg::Merge => "merge",
                    _ => "strategic merge",
                }
            )
        }
        PatchTypeArg::Json if !patch.is_array() => {
            anyhow::bail!(
                "a JSON patch (`--type json`) must be an array of operations, e.g. '[{{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":1}}]'"
            )
        }
        PatchTypeArg::Strategic => PatchType::Strategic,
        PatchTypeArg::Merge => PatchType::Merge,
        PatchTypeArg::Json => PatchType::Json,
    };
    let description = format!("patch {kind}({})", args.name);
    let action = Action::ResourcePatch(ResourcePatch {
        kind,
        name: args.name,
        namespace,
        patch,
        patch_type,
    });
    let plan = Plan::single("patch", description, action);
    change(context, &plan, args.dry_run).await
}

pub fn validate(context: &Context, args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let release = args.release.chosen()?.unwrap_or_else(ApiRelease::newest);
    // One document at a time: only the problems (and, with `--show-defaults`, the text to print)
    // are kept, so a file of any length is validated in the memory of one document.
    let mut shown = String::new();
    let mut failure = None;
    // Without `--show-defaults` the defaulted specs are not kept at all.
    let loader = args.files.loader(&release).keep_specs(args.show_defaults);
    let count = args.files.each(loader, |resource| {
        if args.show_defaults && failure.is_none() {
            match crate::yaml::to_string(&resource) {
                Ok(text) => {
                    shown.push_str("---\n");
                    shown.push_str(&text);
                }
                Err(error) => failure = Some(error),
            }
        }
    })?;
    if let Some(error) = failure {
        return Err(error.into());
    }
    if args.show_defaults {
        context.printer.data(&shown)?;
    } else {
        context
            .printer
            .summary(&format!("Successfully validated {count} resource(s)"))?;
    }
    Ok(ExitCode::SUCCESS)
}
