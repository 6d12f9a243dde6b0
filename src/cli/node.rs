//! `netctl node`: the group's subcommands, and `node run` itself: flags in, a validated request
//! out, then a one-step plan (`node.run`) through the executor, which prints the command
//! (`--dry-run`) or runs it. The domain work lives in `crate::node`; this file only translates and
//! orders the steps: validate every flag and the datastore settings, find the engine, choose the
//! image, and only then hand the plan over. `node status` and `node checksystem` live in
//! `node_status.rs` and `node_checksystem.rs`, `node diags` in `diags.rs`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use super::Context;
use super::args::parse_duration;
use super::{node_checksystem, node_status};
use crate::config::DatastoreType;
use crate::errors::error_chain;
use crate::exec::lock::Holder;
use crate::exec::{ExecError, Executor, RunMode, RunOneOptions};
use crate::node::image::{self, ImageChoice};
use crate::node::{
    ContainerCommand, DEFAULT_SECRETS_DIR, DefaultPools, Engine, HostPreparation, Lifecycle,
    LocatedEngine, NodeError, NodeRunOptions, SKIP_HOST_PREPARATION_VARIABLE, host_name,
};
use crate::plan::action::NodeRun;
use crate::plan::{Action, Plan};

/// The group's help.
pub const EXAMPLES: &str = "\
Examples:
  netctl node run --dry-run                 # print the container command, run nothing
  netctl node run --ip autodetect --init-system
  sudo netctl node status                   # this node's BGP peers (read-only)
  netctl node status --all                  # every node's sessions, through the datastore
  sudo netctl node checksystem              # kernel version and modules (read-only)
  sudo netctl node diags                    # this node's diagnostics bundle (read-only)";

const RUN_AFTER_HELP: &str = "\
The datastore settings (etcdv3 only) come from the client configuration and are passed to the
container: endpoints as environment variables, certificate files mounted read-only under
/etc/calico/certs, inline certificates and the etcd user name and password through 0600 files in
--secrets-dir. See docs/node-run.md.

Examples:
  netctl node run --dry-run
  netctl node run --ip autodetect --ip-autodetection-method 'interface=eth.*,ens[0-9]+'
  netctl node run --name node-1 --ip 10.0.0.5 --as 64512 --node-image quay.io/calico/node:v3.29.2
  netctl node run --init-system --dry-run";

#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// Start the node agent container with the datastore settings passed through
    #[command(after_help = RUN_AFTER_HELP)]
    Run(Box<RunArgs>),
    /// Show the BGP sessions of this node, or of any node through the datastore (read-only)
    #[command(after_help = node_status::AFTER_HELP)]
    Status(node_status::StatusArgs),
    /// Check that this host can run the node agent: kernel version and modules (read-only)
    #[command(after_help = node_checksystem::AFTER_HELP)]
    Checksystem(node_checksystem::CheckSystemArgs),
    /// Collect this node's diagnostics into a .tar.gz (read-only; run on the node, as root)
    #[command(after_help = super::diags::NODE_DIAGS_AFTER_HELP)]
    Diags(super::diags::NodeDiagsArgs),
}

#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Node options")]
pub struct RunArgs {
    /// Node name [default: the host name, trimmed and lower-cased]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Node image [default: quay.io/calico/node at the cluster's release]
    #[arg(long, value_name = "IMAGE")]
    node_image: Option<String>,
    /// IPv4 address of the node, or `autodetect`
    #[arg(long, value_name = "IP")]
    ip: Option<String>,
    /// IPv6 address of the node, or `autodetect`
    #[arg(long, value_name = "IP6")]
    ip6: Option<String>,
    /// BGP AS number of the node, plain (64512) or dotted (1.10)
    #[arg(long = "as", value_name = "AS_NUMBER")]
    as_number: Option<String>,
    /// How to find the IPv4 address: first-found, can-reach=<ip|name>, interface=<regex,...>,
    /// skip-interface=<regex,...>, cidr=<cidr,...>, kubernetes-internal-ip
    #[arg(long, value_name = "METHOD", default_value = "first-found")]
    ip_autodetection_method: String,
    /// How to find the IPv6 address (same methods as for IPv4)
    #[arg(long, value_name = "METHOD", default_value = "first-found")]
    ip6_autodetection_method: String,
    /// Routing backend: bird or none
    #[arg(long, value_name = "BACKEND", default_value = "bird")]
    backend: String,
    /// Host directory for the agent's logs
    #[arg(long, value_name = "DIR", default_value = "/var/log/calico")]
    log_dir: PathBuf,
    /// Felix configuration file to mount into the container
    #[arg(long, value_name = "FILE")]
    felix_config: Option<PathBuf>,
    /// Do not create the default IP pools on first start
    #[arg(long)]
    no_default_ippools: bool,
    /// Run in the foreground and remove the container when it stops (for systemd and the like)
    #[arg(long)]
    init_system: bool,
    /// Print the command instead of running it
    #[arg(long = "dry-run", alias = "dryrun")]
    dry_run: bool,
    /// Container engine [default: docker if on PATH, else podman]
    #[arg(long, value_enum)]
    engine: Option<Engine>,
    /// Directory for the files netctl writes for the container (inline certificates, credentials)
    #[arg(long, value_name = "DIR", default_value = DEFAULT_SECRETS_DIR)]
    secrets_dir: PathBuf,
    /// How long to wait for the agent to report a successful start
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    startup_timeout: Duration,
}

pub async fn run(context: &Context, command: NodeCommand) -> anyhow::Result<ExitCode> {
    match command {
        NodeCommand::Run(args) => run_agent(context, *args).await,
        NodeCommand::Status(args) => node_status::run(context, args).await,
        NodeCommand::Checksystem(args) => node_checksystem::run(context, args),
        NodeCommand::Diags(args) => super::diags::node(context, args).await,
    }
}

async fn run_agent(context: &Context, args: RunArgs) -> anyhow::Result<ExitCode> {
    let mode = match args.dry_run {
        true => RunMode::DryRun,
        false => RunMode::Execute,
    };
    let options = NodeRunOptions {
        name: args.name,
        image: args.node_image,
        ip: args.ip,
        ip6: args.ip6,
        as_number: args.as_number,
        ip_autodetection_method: args.ip_autodetection_method,
        ip6_autodetection_method: args.ip6_autodetection_method,
        backend: args.backend,
        log_dir: args.log_dir,
        felix_config: args.felix_config,
        default_pools: if args.no_default_ippools {
            DefaultPools::Skip
        } else {
            DefaultPools::Create
        },
        lifecycle: if args.init_system {
            Lifecycle::InitSystem
        } else {
            Lifecycle::Engine
        },
        engine: args.engine,
        secrets_dir: args.secrets_dir,
        startup_timeout: args.startup_timeout,
    };

    let config = context.client_config()?;
    if config.datastore_type.value != DatastoreType::EtcdV3 {
        return Err(NodeError::UnsupportedDatastore {
            found: config.datastore_type.value,
        }
        .into());
    }
    let request = options.validate(config.etcd()?, host_name)?;

    // A dry run may print a command for another host, so a named engine need not be installed here.
    let engine = match (mode, options.engine) {
        (RunMode::DryRun, Some(engine)) => LocatedEngine {
            engine,
            path: PathBuf::from(engine.program()),
        },
        (_, wanted) => {
            LocatedEngine::locate(wanted, context.environment.exact("PATH").unwrap_or(""))?
        }
    };

    let image = match options.image {
        Some(image) => image,
        None => {
            let choice = cluster_image(context).await;
            if let Some(reason) = &choice.fallback_reason {
                context.printer.warn(format!(
                    "cannot tell which release the cluster runs ({reason}); using `{}`",
                    choice.image
                ));
            }
            choice.image
        }
    };

    let action = Action::NodeRun(NodeRun {
        command: ContainerCommand::build(&request, &image, engine.engine),
        engine,
        host: match context.environment.exact(SKIP_HOST_PREPARATION_VARIABLE) {
            Some(_) => HostPreparation::Skip,
            None => HostPreparation::Prepare,
        },
        startup_timeout: request.startup_timeout,
    });
    let plan = Plan::single(
        "node run",
        format!("start the node agent `{image}`"),
        action,
    );
    let executor =
        Executor::without_datastore(Holder::current()).with_printer(context.printer.clone());
    let mut stdout = context.printer.stdout();
    match executor
        .run_one(&plan, mode, &RunOneOptions::default(), &mut stdout)
        .await
    {
        Ok(_) => Ok(ExitCode::SUCCESS),
        // One step, nothing to resume: the node error is the command's error.
        Err(ExecError::StepFailed { source, .. }) => Err(anyhow::Error::new(*source)),
        Err(error) => Err(error.into()),
    }
}

/// The image at the cluster's release, or the fallback with the reason. Bounded in time so that a
/// dead datastore (or a slow SRV lookup) cannot hold the command up for long.
async fn cluster_image(context: &Context) -> ImageChoice {
    let limit = context.global.request_timeout * 3;
    let lookup = async {
        let store = context
            .datastore()
            .await
            .map_err(|error| error_chain(error.as_ref()))?;
        image::cluster_release(store.as_ref())
            .await
            .map_err(|error| format!("cannot read ClusterInformation `default`: {error}"))
    };
    let release = match tokio::time::timeout(limit, lookup).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "the datastore did not answer within {}",
            humantime::format_duration(limit)
        )),
    };
    image::choose(release)
}
