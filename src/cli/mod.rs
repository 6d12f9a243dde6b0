//! The command line: clap types and one thin file per command.
//!
//! A command translates flags into a typed request and calls one entry point; it does no domain work
//! (`STYLE.md` habit 2). Settings are resolved once, in [`Context`], before any connection is opened.

mod args;
pub mod completion;
mod config;
mod datastore;
mod diags;
mod diff;
mod get;
mod get_forms;
mod ipam;
mod journaled;
mod manual;
mod migrate_import;
mod modeline;
mod node;
mod node_checksystem;
mod node_status;
pub mod plugin;
mod report;
mod runbook;
mod schema;
mod upgrade;
mod upgrade_apply;
mod upgrade_history;
mod upgrade_rollback;
mod upgrade_verify;
mod version;
mod write;

pub use report::{hint_for, report};
pub use upgrade_apply::UpgradeApplyError;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::config::{ClientConfig, Environment};
use crate::datastore::Datastore;
use crate::datastore::connect::{self, ConnectOptions, IN_CLUSTER_VARIABLE};
use crate::datastore::coordination::Coordination;
use crate::listing::Limit;
use crate::output::{LogLevel, Printer, Verbosity};
use args::parse_duration;

// Short lines, one item each: `wrap_help` re-wraps a long paragraph at the terminal's width and
// once split "else the environment" across lines.
const CONFIGURATION_AND_EXAMPLES: &str = "\
Configuration, first found wins:
  -c FILE                   a NetAPIConfig document
  /etc/netctl/netctl.cfg    when it exists
  the environment           DATASTORE_TYPE, ETCD_ENDPOINTS, ... (each also as NET_<NAME>)
`netctl config view` shows the values in effect and where each came from.

Examples:
  DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS=http://127.0.0.1:2379 netctl get nodes
  netctl -c /etc/netctl/netctl.cfg get hostendpoints -o wide
  netctl config view
  netctl -q apply -f policies/          # nothing on stderr but errors
  netctl -vv get nodes                  # also which etcd endpoints were tried
  netctl validate -f hosts.yaml --errors-file errors.txt   # all problems to a file

Talk (progress, warnings, notes) goes to stderr and data to stdout. Past 20 problems (invalid
documents, lint findings, refused targets) the rest are counted by kind; `--all-errors` lists
every one.
";

/// The top-level help's closing text: configuration, examples, and every exit code `main` produces.
fn after_help() -> String {
    format!(
        "{CONFIGURATION_AND_EXAMPLES}\n{}",
        crate::exit_code::help_text()
    )
}

/// Administer a Calico-compatible container network: resources, safe upgrades, the node agent.
#[derive(Debug, Parser)]
#[command(name = "netctl", version, about, after_help = after_help(), propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command accepts.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalOptions {
    /// Client configuration file (a NetAPIConfig document)
    #[arg(short = 'c', long = "config", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Say nothing on stderr but errors (and questions at a gate on a terminal); data still goes
    /// to stdout
    #[arg(short = 'q', long, global = true, conflicts_with_all = ["verbose", "log_level"])]
    pub quiet: bool,
    /// Say more on stderr: `-v` adds notes (like `--log-level info`), `-vv` debug detail
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Which levelled messages to show on stderr (warnings, notes, debug); `-v` and `-q` are
    /// shorter ways to say the common ones
    #[arg(long, global = true, value_enum, default_value_t = LogLevel::Warn)]
    pub log_level: LogLevel,
    /// List every problem (invalid documents, lint findings, refused targets); without it, past
    /// 20 problems the rest are counted by kind
    #[arg(long, global = true, conflicts_with = "errors_file")]
    pub all_errors: bool,
    /// When the command fails, write its error with every problem to FILE (overwritten); stderr
    /// shows the first 20 and counts the rest
    #[arg(long, global = true, value_name = "FILE")]
    pub errors_file: Option<PathBuf>,
    /// Allow writes to a cluster running a newer release than netctl knows
    #[arg(long, global = true)]
    pub allow_version_mismatch: bool,
    /// Time limit for connecting and for each datastore request (e.g. 10s, 1m)
    #[arg(long, global = true, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Kubeconfig context to use with the `kubernetes` datastore (over k8sCurrentContext)
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show resources
    Get(get::GetArgs),
    /// Create resources from files (fails for any that already exist)
    Create(write::CreateArgs),
    /// Create or update resources from files
    #[command(after_help = write::APPLY_EXAMPLES)]
    Apply(write::DocumentArgs),
    /// Replace existing resources from files
    #[command(after_help = write::REPLACE_EXAMPLES)]
    Replace(write::DocumentArgs),
    /// Delete resources by name or as listed in files
    Delete(write::DeleteArgs),
    /// Set or remove a label on a resource
    Label(write::LabelArgs),
    /// Change a resource with a strategic merge, JSON merge or JSON patch
    Patch(write::PatchArgs),
    /// Check resource files without a datastore (validation and defaulting only)
    Validate(write::ValidateArgs),
    /// Show how resource files differ from what is stored (as `apply` would change it)
    #[command(after_help = diff::AFTER_HELP)]
    Diff(diff::DiffArgs),
    /// Show or check the client configuration
    #[command(subcommand, after_help = config::EXAMPLES)]
    Config(config::ConfigCommand),
    /// Plan and run upgrades from the runbooks: plan, apply, status, history, unlock
    #[command(subcommand, after_help = upgrade::EXAMPLES)]
    Upgrade(upgrade::UpgradeCommand),
    /// Review runbooks: lint them, render them for a version edge, list them
    #[command(subcommand, after_help = runbook::EXAMPLES)]
    Runbook(runbook::RunbookCommand),
    /// Back up and restore the datastore; migrate it: lock, export, import, unlock
    #[command(subcommand, after_help = datastore::EXAMPLES)]
    Datastore(datastore::DatastoreCommand),
    /// IP address management: show use, check for leaks, release, split pools, configure
    #[command(subcommand, after_help = ipam::EXAMPLES)]
    Ipam(ipam::IpamCommand),
    /// Show the client version and the version of the cluster
    Version(version::VersionArgs),
    /// Print a shell completion script
    Completion(completion::CompletionArgs),
    /// Print the JSON Schema of a kind (or write them all) for editors
    Schema(schema::SchemaArgs),
    /// Print the man page (or write one per command)
    Man(manual::ManArgs),
    /// Run the node agent container; check a node (status, checksystem, diags)
    #[command(subcommand, after_help = node::EXAMPLES)]
    Node(node::NodeCommand),
    /// Cluster-wide diagnostics through the Kubernetes API
    #[command(subcommand, after_help = diags::CLUSTER_EXAMPLES)]
    Cluster(diags::ClusterCommand),
}

impl GlobalOptions {
    /// How much to say, from `-q`, `-v` and `--log-level` together.
    pub fn verbosity(&self) -> Verbosity {
        Verbosity::from_flags(self.quiet, self.verbose, self.log_level)
    }

    /// How much of a list of problems to show, from `--all-errors` and `--errors-file`.
    pub fn listing(&self) -> Limit {
        match (&self.errors_file, self.all_errors) {
            (Some(path), _) => Limit::WrittenTo(path.clone()),
            (None, true) => Limit::All,
            (None, false) => Limit::Bounded,
        }
    }
}

impl Command {
    /// The exit code an error of this command ends with: kubectl diff's errors exit above its 1
    /// ("differences"), every other command's exit 1.
    pub fn failure_code(&self) -> u8 {
        match self {
            Command::Diff(_) => crate::exit_code::DIFF_FAILED,
            _ => crate::exit_code::FAILURE,
        }
    }
}

/// What every command may need, created once: the environment, the configuration (loaded on first
/// use), connections to what it names, and the printer.
pub struct Context {
    pub global: GlobalOptions,
    pub environment: Environment,
    pub printer: Printer,
    client_config: OnceLock<ClientConfig>,
}

impl Context {
    pub fn new(global: GlobalOptions, environment: Environment, printer: Printer) -> Context {
        Context {
            global,
            environment,
            printer,
            client_config: OnceLock::new(),
        }
    }

    /// The client configuration, loaded on first use; its warnings are printed once.
    pub fn client_config(&self) -> anyhow::Result<&ClientConfig> {
        if let Some(config) = self.client_config.get() {
            return Ok(config);
        }
        let config = crate::config::load(self.global.config.as_deref(), &self.environment)?;
        for warning in &config.warnings {
            self.printer.warn(warning);
        }
        for ignored in &config.ignored {
            self.printer.info(ignored);
        }
        Ok(self.client_config.get_or_init(|| config))
    }

    /// What the configuration says that a plan's facts are made of: its static etcd endpoints
    /// (`etcd_endpoints`) and its Calico API group (`calico_api_group`), where it has them.
    pub fn configured_facts(&self) -> crate::plan::request::Configured {
        let Ok(config) = self.client_config() else {
            return crate::plan::request::Configured::default();
        };
        crate::plan::request::Configured {
            etcd_endpoints: config.static_etcd_endpoints(),
            api_group: connect::kubernetes_settings(config, &self.connect_options())
                .ok()
                .and_then(|settings| settings.api_group),
        }
    }

    fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            request_timeout: self.global.request_timeout,
            kube_context: self.global.context.clone(),
            home: self.environment.exact("HOME").map(PathBuf::from),
            in_cluster: self.environment.exact(IN_CLUSTER_VARIABLE).is_some(),
            printer: self.printer.clone(),
            crds_optional: false,
        }
    }

    /// The kubeconfig file the configuration names (or `~/.kube/config`), when there is one.
    pub fn kubeconfig_path(&self) -> Option<PathBuf> {
        let config = self.client_config().ok()?;
        let settings = connect::kubernetes_settings(config, &self.connect_options()).ok()?;
        settings.kubeconfig.map(|sourced| sourced.value)
    }

    /// Connects to the configured datastore and proves the connection works.
    pub async fn datastore(&self) -> anyhow::Result<Arc<dyn Datastore>> {
        Ok(connect::connect(self.client_config()?, &self.connect_options()).await?)
    }

    /// The datastore as the target of a migration: a Kubernetes datastore need not serve the
    /// Calico CRDs yet (the import installs them).
    pub async fn migration_target(&self) -> anyhow::Result<Arc<dyn Datastore>> {
        let options = ConnectOptions {
            crds_optional: true,
            ..self.connect_options()
        };
        Ok(connect::connect(self.client_config()?, &options).await?)
    }

    /// The Kubernetes datastore itself (what `config check` reports on): connected, its API group
    /// chosen and proven.
    pub async fn kubernetes_datastore(&self) -> anyhow::Result<crate::datastore::kube::KubeStore> {
        Ok(connect::connect_kubernetes(self.client_config()?, &self.connect_options()).await?)
    }

    /// The datastore together with its coordination service; upgrade runs need both.
    pub async fn coordinated_datastore(
        &self,
    ) -> anyhow::Result<(Arc<dyn Datastore>, Arc<dyn Coordination>)> {
        Ok(connect::connect_coordinated(self.client_config()?, &self.connect_options()).await?)
    }

    /// The Kubernetes cluster for `kube.*` steps and cluster facts, when one is configured.
    pub async fn kubernetes_client(&self) -> anyhow::Result<Option<kube::Client>> {
        Ok(connect::kubernetes_client(self.client_config()?, &self.connect_options()).await?)
    }

    /// The datastore to discover upgrade facts from, or `None` when planning offline: with
    /// `--offline`, or when nothing names a datastore at all — said on stderr, so the plan's fact
    /// origins are never mistaken for discovered ones.
    pub async fn datastore_for_facts(
        &self,
        offline: bool,
    ) -> anyhow::Result<Option<Arc<dyn Datastore>>> {
        if offline {
            return Ok(None);
        }
        if !connect::names_a_datastore(self.client_config()?, &self.connect_options())? {
            self.printer.warn(
                "no datastore is configured (no kubeconfig, no etcd endpoints): planning from flags and defaults (pass `--offline` to silence this)",
            );
            return Ok(None);
        }
        Ok(Some(self.datastore().await?))
    }
}

/// Runs a parsed command line.
pub async fn run(cli: Cli, environment: Environment, printer: Printer) -> anyhow::Result<ExitCode> {
    let context = Context::new(cli.global, environment, printer);
    match cli.command {
        Command::Get(args) => get::run(&context, args).await,
        Command::Create(args) => write::create(&context, args).await,
        Command::Apply(args) => write::apply(&context, args).await,
        Command::Replace(args) => write::replace(&context, args).await,
        Command::Delete(args) => write::delete(&context, args).await,
        Command::Label(args) => write::label(&context, args).await,
        Command::Patch(args) => write::patch(&context, args).await,
        Command::Validate(args) => write::validate(&context, args),
        Command::Diff(args) => diff::run(&context, args).await,
        Command::Config(command) => config::run(&context, command).await,
        Command::Ipam(command) => ipam::run(&context, command).await,
        Command::Datastore(command) => datastore::run(&context, command).await,
        Command::Version(args) => version::run(&context, args).await,
        Command::Completion(args) => completion::run(&context, args),
        Command::Schema(args) => schema::run(&context, args),
        Command::Man(args) => manual::run(&context, args),
        Command::Node(command) => node::run(&context, command).await,
        Command::Cluster(command) => diags::cluster(&context, command).await,
        Command::Upgrade(command) => upgrade::run(&context, command).await,
        Command::Runbook(command) => runbook::run(&context, command).await,
    }
}
