//! The command line: clap types and one thin file per command.
//!
//! A command translates flags into a typed request and calls one entry point; it does no domain work
//! (`STYLE.md` habit 2). Settings are resolved once, in [`Context`], before any connection is opened.

mod completion;
mod config;
mod get;
mod node;
pub mod runbook;
pub mod upgrade;
mod upgrade_apply;

pub use upgrade_apply::UpgradeApplyError;
pub use write::ClusterTooNew;
mod version;
mod write;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::config::{ClientConfig, Environment, KubernetesSettings};
use crate::datastore::coordination::Coordination;
use crate::datastore::etcd::{EtcdStore, Timeouts};
use crate::datastore::kube::KubeStore;
use crate::datastore::{Datastore, DatastoreType};
use crate::terminal::{self, LogLevel};

const AFTER_HELP: &str = "\
Configuration: `-c FILE` (a NetAPIConfig document), else /etc/netctl/netctl.cfg if it exists, else the
environment (DATASTORE_TYPE, ETCD_ENDPOINTS, ... each also as NET_<NAME>). See `netctl config view`.

Examples:
  DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS=http://127.0.0.1:2379 netctl get nodes
  netctl -c /etc/netctl/netctl.cfg get hostendpoints -o wide
  netctl config view";

/// Administer a Calico-compatible container network: resources, safe upgrades, the node agent.
#[derive(Debug, Parser)]
#[command(name = "netctl", version, about, after_help = AFTER_HELP, propagate_version = true)]
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
    /// How much to say on stderr
    #[arg(long, global = true, value_enum, default_value_t = LogLevel::Warn)]
    pub log_level: LogLevel,
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
    Apply(write::ApplyArgs),
    /// Replace existing resources from files
    Replace(write::ReplaceArgs),
    /// Delete resources by name or as listed in files
    Delete(write::DeleteArgs),
    /// Set or remove a label on a resource
    Label(write::LabelArgs),
    /// Change a resource with a JSON merge patch or JSON patch
    Patch(write::PatchArgs),
    /// Check resource files without a datastore (validation and defaulting only)
    Validate(write::ValidateArgs),
    /// Show or check the client configuration
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Plan and run upgrades from the versioned runbooks: plan, apply, status, unlock
    #[command(subcommand)]
    Upgrade(upgrade_apply::UpgradeCommand),
    /// Review runbooks: lint them, render them for a version edge, list them
    #[command(subcommand)]
    Runbook(runbook::RunbookCommand),
    /// Show the client version and the version of the cluster
    Version(version::VersionArgs),
    /// Print a shell completion script
    Completion(completion::CompletionArgs),
    /// Run the node agent container
    #[command(subcommand)]
    Node(node::NodeCommand),
}

/// Parses a duration such as `10s`, `1m30s` or `500ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|error| format!("`{text}`: {error}"))
}

/// What every command may need, created once: the environment, the configuration and the datastore.
pub struct Context {
    pub global: GlobalOptions,
    pub environment: Environment,
    client_config: OnceLock<ClientConfig>,
}

impl Context {
    pub fn new(global: GlobalOptions, environment: Environment) -> Context {
        Context {
            global,
            environment,
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
            terminal::warn(warning);
        }
        Ok(self.client_config.get_or_init(|| config))
    }

    /// Connects to the configured datastore and proves the connection works.
    pub async fn datastore(&self) -> anyhow::Result<Box<dyn Datastore>> {
        match self.client_config()?.datastore_type.value {
            DatastoreType::EtcdV3 => Ok(Box::new(self.connect_etcd().await?)),
            DatastoreType::Kubernetes => Ok(Box::new(self.connect_kubernetes().await?)),
        }
    }

    /// The datastore together with its coordination service (leases, lock and checkpoint mirror);
    /// the executor needs both for upgrade runs. Both datastores have one: etcd leases and keys,
    /// Kubernetes Leases and ConfigMaps.
    pub async fn coordinated_datastore(
        &self,
    ) -> anyhow::Result<(Arc<dyn Datastore>, Arc<dyn Coordination>)> {
        match self.client_config()?.datastore_type.value {
            DatastoreType::EtcdV3 => {
                let store = Arc::new(self.connect_etcd().await?);
                Ok((store.clone(), store))
            }
            DatastoreType::Kubernetes => {
                let store = Arc::new(self.connect_kubernetes().await?);
                Ok((store.clone(), store))
            }
        }
    }

    /// The validated Kubernetes settings (kubeconfig, context, overrides).
    pub fn kubernetes_settings(&self) -> anyhow::Result<KubernetesSettings> {
        let home = self.environment.exact("HOME").map(PathBuf::from);
        Ok(self
            .client_config()?
            .kubernetes(self.global.context.as_deref(), home.as_deref())?)
    }

    /// A Kubernetes API client for the executor's `kube.*` actions, when the configuration names a
    /// cluster (a kubeconfig, an API endpoint, or the in-cluster service account); `None` when
    /// nothing does. A cluster that is named but unusable (a broken kubeconfig, an unknown context)
    /// is an error, not a silent `None`.
    pub async fn kubernetes_client(&self) -> anyhow::Result<Option<kube::Client>> {
        let settings = self.kubernetes_settings()?;
        if settings.kubeconfig.is_none()
            && settings.api_endpoint.is_none()
            && self.environment.exact(IN_CLUSTER_VARIABLE).is_none()
        {
            terminal::debug(
                "no Kubernetes cluster is configured: `kube.*` steps are only described",
            );
            return Ok(None);
        }
        let api = crate::datastore::kube::client::build(&settings, self.global.request_timeout)
            .await
            .context("cannot set up the Kubernetes client for `kube.*` steps")?;
        Ok(Some(api.client))
    }

    async fn connect_kubernetes(&self) -> anyhow::Result<KubeStore> {
        let settings = self.kubernetes_settings()?;
        let store = KubeStore::connect(&settings, self.global.request_timeout)
            .await
            .context("cannot connect to the kubernetes datastore")?;
        terminal::debug(format!(
            "connected to the Kubernetes API at {}",
            store.server()
        ));
        Ok(store)
    }

    async fn connect_etcd(&self) -> anyhow::Result<EtcdStore> {
        let settings = self.client_config()?.etcd()?;
        let timeouts = Timeouts {
            connect: self.global.request_timeout,
            request: self.global.request_timeout,
        };
        let store = EtcdStore::connect(&settings, timeouts)
            .await
            .context("cannot connect to the etcd datastore")?;
        terminal::debug(format!("connected to etcd at {}", store.endpoints()));
        Ok(store)
    }
}

impl Context {
    /// The datastore to discover upgrade facts from, or `None` when planning offline: with
    /// `--offline`, or when nothing names a datastore at all (the default `kubernetes` type with no
    /// kubeconfig, no API endpoint and no in-cluster service) — said on stderr, so the plan's fact
    /// origins are never mistaken for discovered ones.
    pub async fn datastore_for_facts(
        &self,
        offline: bool,
    ) -> anyhow::Result<Option<Box<dyn Datastore>>> {
        if offline {
            return Ok(None);
        }
        let config = self.client_config()?;
        if config.datastore_type.value == DatastoreType::Kubernetes
            && config.datastore_type.origin == crate::config::Origin::Default
        {
            let settings = self.kubernetes_settings()?;
            if settings.kubeconfig.is_none()
                && settings.api_endpoint.is_none()
                && self.environment.exact(IN_CLUSTER_VARIABLE).is_none()
            {
                terminal::warn(
                    "no datastore is configured (no kubeconfig, no etcd endpoints): planning from flags and defaults (pass `--offline` to silence this)",
                );
                return Ok(None);
            }
        }
        Ok(Some(self.datastore().await?))
    }
}

/// Set in every pod: its presence means the in-cluster service account can be used.
const IN_CLUSTER_VARIABLE: &str = "KUBERNETES_SERVICE_HOST";

/// Runs a parsed command line.
pub async fn run(cli: Cli, environment: Environment) -> anyhow::Result<ExitCode> {
    let context = Context::new(cli.global, environment);
    match cli.command {
        Command::Get(args) => get::run(&context, args).await,
        Command::Create(args) => write::create(&context, args).await,
        Command::Apply(args) => write::apply(&context, args).await,
        Command::Replace(args) => write::replace(&context, args).await,
        Command::Delete(args) => write::delete(&context, args).await,
        Command::Label(args) => write::label(&context, args).await,
        Command::Patch(args) => write::patch(&context, args).await,
        Command::Validate(args) => write::validate(args),
        Command::Config(command) => config::run(&context, command),
        Command::Version(args) => version::run(&context, args).await,
        Command::Completion(args) => completion::run(args),
        Command::Node(command) => node::run(&context, command).await,
        Command::Upgrade(command) => upgrade_apply::run(&context, command).await,
        Command::Runbook(command) => command.run().map(|()| ExitCode::SUCCESS),
    }
}
