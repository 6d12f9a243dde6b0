//! `create`, `apply`, `replace`, `delete`, `label`, `patch` and `validate`: the resource commands.
//!
//! Each translates its flags into one typed action, wraps it in a one-step plan (`Plan::single`) and
//! hands it to the same executor `upgrade apply` uses, so `--dry-run`, validation, conflict retries
//! and messages behave the same everywhere. Files are loaded and every document validated before
//! anything is written: one bad document anywhere means nothing is written. Writes are refused when
//! the cluster runs a release newer than any netctl knows (seed §7: an older tool must not be used after
//! an upgrade), unless `--allow-version-mismatch`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;

use super::Context;
use super::get::namespace_scope;
use crate::datastore::{Datastore, StoreError};
use crate::exec::actions::{ExistingPolicy, WriteSemantics};
use crate::exec::lock::Holder;
use crate::exec::{ExecError, Executor, RunMode, RunOneOptions};
use crate::plan::action::{
    PatchType, ResourceDocuments, ResourceLabel, ResourcePatch, ResourceTarget,
};
use crate::plan::catalog::Catalog;
use crate::plan::{Action, Plan, Release};
use crate::resource::{Input, Kind, Resource, ResourceKey, load_and_validate};
use crate::runbook::RunbookSet;

/// `-f FILE|DIR|-` and how to read it, shared by the commands that take documents.
#[derive(Debug, Clone, clap::Args)]
pub struct FileArgs {
    /// A file, a directory of `.yaml`/`.yml`/`.json` files, or `-` for standard input; repeatable
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE|DIR|-",
        required = true
    )]
    pub(super) files: Vec<PathBuf>,
    /// Also read the sub-directories of a directory
    #[arg(short = 'R', long)]
    pub(super) recursive: bool,
    /// An empty file or directory is not an error
    #[arg(long)]
    pub(super) skip_empty: bool,
    /// Namespace for namespaced resources that name none (`default` otherwise)
    #[arg(short = 'n', long)]
    pub(super) namespace: Option<String>,
}

impl FileArgs {
    /// Loads and validates every document of every input for writing: as [`FileArgs::read`], and
    /// ClusterInformation is refused.
    fn load(&self) -> anyhow::Result<Vec<Resource>> {
        let resources = self.read()?;
        if let Some(read_only) = resources
            .iter()
            .find(|r| r.kind == Kind::ClusterInformation)
        {
            anyhow::bail!(
                "{} is read-only: the node agent maintains ClusterInformation",
                read_only.key()
            );
        }
        Ok(resources)
    }

    /// Loads and validates every document of every input; all problems are reported together.
    pub(super) fn read(&self) -> anyhow::Result<Vec<Resource>> {
        let mut inputs = Vec::new();
        for path in &self.files {
            if path.as_os_str() == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .context("cannot read standard input")?;
                inputs.push(Input::Text {
                    origin: "<stdin>".into(),
                    text,
                });
            } else {
                inputs.push(Input::Path {
                    path: path.clone(),
                    recursive: self.recursive,
                });
            }
        }
        let loaded = load_and_validate(&inputs, self.namespace.as_deref())?;
        let resources: Vec<Resource> = loaded.into_iter().flat_map(|(_, items)| items).collect();
        if resources.is_empty() && !self.skip_empty {
            anyhow::bail!(
                "no resources specified in the input (pass `--skip-empty` if that is expected)"
            );
        }
        Ok(resources)
    }
}

/// `--dry-run`, shared by every writing command.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct DryRunArg {
    /// Print exactly what would be written and change nothing
    #[arg(long)]
    dry_run: bool,
}

impl DryRunArg {
    fn mode(self) -> RunMode {
        if self.dry_run {
            RunMode::DryRun
        } else {
            RunMode::Execute
        }
    }
}

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
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl apply -f allow-all-upgrade.yaml\n  netctl apply -f policies/ --dry-run\n  netctl apply -f - < hostendpoints.yaml"
)]
pub struct ApplyArgs {
    #[command(flatten)]
    files: FileArgs,
    #[command(flatten)]
    dry_run: DryRunArg,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl replace -f pool.yaml\n  netctl get ippool p1 -o yaml > p1.yaml && $EDITOR p1.yaml && netctl replace -f p1.yaml"
)]
pub struct ReplaceArgs {
    #[command(flatten)]
    files: FileArgs,
    #[command(flatten)]
    dry_run: DryRunArg,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl delete hostendpoint node1-eth0\n  netctl delete gnp allow-all-upgrade --skip-not-exists\n  netctl delete -f old-policies.yaml --dry-run"
)]
pub struct DeleteArgs {
    /// Resource kind (with NAMEs), e.g. `hostendpoint`, `gnp`
    #[arg(required_unless_present = "files", conflicts_with = "files")]
    kind: Option<String>,
    /// Names to delete
    names: Vec<String>,
    /// Delete the resources named in these files instead
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-")]
    files: Vec<PathBuf>,
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
    kind: String,
    /// Resource name
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
  netctl patch ippool pool1 --type json -p '[{"op":"replace","path":"/spec/disabled","value":true}]'
The patched resource is validated before it is written."#)]
pub struct PatchArgs {
    /// Resource kind, e.g. `ippool`
    kind: String,
    /// Resource name
    name: String,
    /// The patch, as JSON
    #[arg(short = 'p', long = "patch", value_name = "JSON")]
    patch: String,
    /// `merge` (RFC 7386 JSON merge patch) or `json` (RFC 6902 JSON patch)
    #[arg(short = 't', long = "type", value_enum, default_value_t = PatchTypeArg::Merge)]
    patch_type: PatchTypeArg,
    /// Namespace (namespaced kinds only)
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    #[command(flatten)]
    dry_run: DryRunArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PatchTypeArg {
    Merge,
    Json,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl validate -f policies/ -R\n  netctl validate -f - < hostendpoints.yaml\nNo datastore is needed; the exit status is 1 when any document is invalid."
)]
pub struct ValidateArgs {
    #[command(flatten)]
    files: FileArgs,
    /// Print the documents as they would be stored (defaults applied), as YAML
    #[arg(long)]
    show_defaults: bool,
}

/// Runs one action as a one-step plan and prints its result (the dry-run transcript, or the summary).
async fn run_step(
    context: &Context,
    store: Arc<dyn Datastore>,
    procedure: &str,
    description: String,
    action: Action,
    mode: RunMode,
    semantics: WriteSemantics,
) -> anyhow::Result<()> {
    let executor = Executor::new(store, None, Holder::current(&context.environment));
    let plan = Plan::single(procedure, description, action);
    let options = RunOneOptions {
        semantics,
        journal: None,
    };
    let mut stdout = std::io::stdout().lock();
    let outcome = match executor.run_one(&plan, mode, &options, &mut stdout).await {
        Ok(outcome) => outcome,
        // A one-step command has no run to resume: report the action's own error and advice.
        Err(ExecError::StepFailed { source, .. }) => return Err(anyhow::Error::new(*source)),
        Err(error) => return Err(error.into()),
    };
    if mode == RunMode::Execute {
        match outcome.summary.strip_prefix("Successfully ") {
            Some(_) => writeln!(stdout, "{}", outcome.summary)?,
            None => writeln!(stdout, "Successfully {}", outcome.summary)?,
        }
    }
    Ok(())
}

/// Connects and refuses writes to a cluster newer than netctl knows, unless allowed.
async fn writable_datastore(context: &Context) -> anyhow::Result<Arc<dyn Datastore>> {
    let store: Arc<dyn Datastore> = Arc::from(context.datastore().await?);
    if !context.global.allow_version_mismatch {
        check_cluster_version(store.as_ref()).await?;
    }
    Ok(store)
}

/// Why netctl will not write to this cluster.
#[derive(Debug, thiserror::Error)]
#[error("the cluster runs {cluster}, newer than the newest release this netctl knows ({newest})")]
pub struct ClusterTooNew {
    pub cluster: String,
    pub newest: String,
}

impl ClusterTooNew {
    pub fn hint(&self) -> &'static str {
        "use the netctl release that matches the cluster; `--allow-version-mismatch` overrides this check"
    }
}

async fn check_cluster_version(store: &dyn Datastore) -> anyhow::Result<()> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let info = match store.get(&key).await {
        Ok(info) => info,
        // Upstream skips the check when ClusterInformation is missing (reference §7.2).
        Err(StoreError::NotFound(_)) => return Ok(()),
        Err(error) => {
            return Err(anyhow::Error::new(error).context(
                "cannot read ClusterInformation `default` to check the cluster version (use `--allow-version-mismatch` to skip)",
            ));
        }
    };
    let Some(text) = info.spec.get("calicoVersion").and_then(|v| v.as_str()) else {
        return Ok(());
    };
    let Ok((cluster, _)) = Release::parse_with_precision(text) else {
        return Ok(());
    };
    let set = RunbookSet::embedded()?;
    let catalog = Catalog::parse(set.catalog_text().unwrap_or_default())?;
    let newest = catalog
        .spec
        .targets
        .iter()
        .filter_map(|target| Release::parse_with_precision(&target.release).ok())
        .map(|(release, _)| release)
        .max();
    if let Some(newest) = newest
        && (cluster.0.major, cluster.0.minor) > (newest.0.major, newest.0.minor)
    {
        return Err(ClusterTooNew {
            cluster: text.to_string(),
            newest: newest.line(),
        }
        .into());
    }
    Ok(())
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
    Create,
    Apply,
    Replace,
}

async fn write_documents(
    context: &Context,
    command: DocumentCommand,
    files: &FileArgs,
    dry_run: DryRunArg,
    semantics: WriteSemantics,
) -> anyhow::Result<ExitCode> {
    let documents = files.load()?;
    let store = writable_datastore(context).await?;
    let (verb, build): (&str, fn(ResourceDocuments) -> Action) = match command {
        DocumentCommand::Create => ("create", Action::ResourceCreate),
        DocumentCommand::Apply => ("apply", Action::ResourceApply),
        DocumentCommand::Replace => ("replace", Action::ResourceReplace),
    };
    let description = describe(verb, &documents);
    let action = build(ResourceDocuments {
        documents,
        file: None,
    });
    run_step(
        context,
        store,
        verb,
        description,
        action,
        dry_run.mode(),
        semantics,
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

pub async fn create(context: &Context, args: CreateArgs) -> anyhow::Result<ExitCode> {
    let semantics = WriteSemantics {
        create_existing: if args.skip_exists {
            ExistingPolicy::Skip
        } else {
            ExistingPolicy::Fail
        },
        ..WriteSemantics::default()
    };
    write_documents(
        context,
        DocumentCommand::Create,
        &args.files,
        args.dry_run,
        semantics,
    )
    .await
}

pub async fn apply(context: &Context, args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let semantics = WriteSemantics::default();
    write_documents(
        context,
        DocumentCommand::Apply,
        &args.files,
        args.dry_run,
        semantics,
    )
    .await
}

pub async fn replace(context: &Context, args: ReplaceArgs) -> anyhow::Result<ExitCode> {
    let semantics = WriteSemantics::default();
    write_documents(
        context,
        DocumentCommand::Replace,
        &args.files,
        args.dry_run,
        semantics,
    )
    .await
}

pub async fn delete(context: &Context, args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let targets: Vec<ResourceTarget> = match &args.kind {
        Some(kind) => {
            let kind: Kind = kind.parse()?;
            if args.names.is_empty() {
                anyhow::bail!("name the `{kind}` resources to delete");
            }
            let namespace = namespace_scope(kind, args.namespace.as_deref(), false)?;
            args.names
                .iter()
                .map(|name| ResourceTarget {
                    kind,
                    name: name.clone(),
                    namespace: namespace.clone(),
                })
                .collect()
        }
        None => {
            let files = FileArgs {
                files: args.files.clone(),
                recursive: false,
                skip_empty: false,
                namespace: args.namespace.clone(),
            };
            files
                .load()?
                .into_iter()
                .map(|resource| ResourceTarget {
                    kind: resource.kind,
                    name: resource.metadata.name,
                    namespace: resource.metadata.namespace,
                })
                .collect()
        }
    };
    if let Some(read_only) = targets.iter().find(|t| t.kind == Kind::ClusterInformation) {
        anyhow::bail!("ClusterInformation({}) is read-only", read_only.name);
    }
    let store = writable_datastore(context).await?;
    let semantics = WriteSemantics {
        delete_missing: if args.skip_not_exists {
            ExistingPolicy::Skip
        } else {
            ExistingPolicy::Fail
        },
        ..WriteSemantics::default()
    };
    for target in targets {
        let description = format!(
            "delete {}",
            ResourceKey::new(target.kind, target.namespace.clone(), &target.name)
        );
        let action = Action::ResourceDelete(target);
        run_step(
            context,
            store.clone(),
            "delete",
            description,
            action,
            args.dry_run.mode(),
            semantics,
        )
        .await?;
    }
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
    let store = writable_datastore(context).await?;
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
    run_step(
        context,
        store,
        "label",
        description,
        action,
        args.dry_run.mode(),
        WriteSemantics::default(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

pub async fn patch(context: &Context, args: PatchArgs) -> anyhow::Result<ExitCode> {
    let kind: Kind = args.kind.parse()?;
    let namespace = namespace_scope(kind, args.namespace.as_deref(), false)?;
    let patch: serde_json::Value = serde_json::from_str(&args.patch)
        .with_context(|| format!("the patch is not valid JSON: `{}`", args.patch))?;
    let patch_type = match args.patch_type {
        PatchTypeArg::Merge if !patch.is_object() => {
            anyhow::bail!("a merge patch must be a JSON object, e.g. '{{\"spec\":{{...}}}}'")
        }
        PatchTypeArg::Json if !patch.is_array() => {
            anyhow::bail!(
                "a JSON patch (`--type json`) must be an array of operations, e.g. '[{{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":1}}]'"
            )
        }
        PatchTypeArg::Merge => PatchType::Merge,
        PatchTypeArg::Json => PatchType::Json,
    };
    let store = writable_datastore(context).await?;
    let description = format!("patch {kind}({})", args.name);
    let action = Action::ResourcePatch(ResourcePatch {
        kind,
        name: args.name,
        namespace,
        patch,
        patch_type,
    });
    run_step(
        context,
        store,
        "patch",
        description,
        action,
        args.dry_run.mode(),
        WriteSemantics::default(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

pub fn validate(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let resources = args.files.load()?;
    let mut stdout = std::io::stdout().lock();
    if args.show_defaults {
        for resource in &resources {
            writeln!(stdout, "---")?;
            write!(stdout, "{}", crate::yaml::to_string(resource)?)?;
        }
    } else {
        writeln!(
            stdout,
            "Successfully validated {} resource(s)",
            resources.len()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
