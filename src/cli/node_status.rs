//! `netctl node status`: flags in, the node's BGP sessions out.
//!
//! Without `--node`/`--all` it looks at this node (`node::status::local`, read-only, no
//! datastore). With them it asks nodes through the datastore: the CLI names the nodes (`--all`
//! lists them), and a one-step plan (`node.status`) runs through the executor, which creates,
//! waits for and deletes the temporary CalicoNodeStatus objects, so `--dry-run`, Ctrl-C and the
//! bounded clean-up are the executor's as for every other write. This file only prints what came
//! back.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::ArgGroup;
use clap_complete::engine::ArgValueCompleter;

use super::args::parse_duration;
use super::{Context, completion};
use crate::datastore::{Datastore, Detail, ListOptions};
use crate::errors::Hint;
use crate::exec::actions::node::status::{LeftBehind, NodeStatusOutput, delete_command};
use crate::exec::lock::Holder;
use crate::exec::{ExecError, Executor, RunMode, RunOneOptions};
use crate::node::status::remote::{self, NodeAnswer};
use crate::node::status::socket::DEFAULT_RUN_DIR;
use crate::node::status::{LocalStatusError, LocalStatusOptions, local};
use crate::output::TableWriter;
use crate::plan::action::{HumanDuration, NodeStatusQuery, NodeStatusTarget};
use crate::plan::{Action, Plan};
use crate::resource::Kind;

pub const AFTER_HELP: &str = "\
Read-only. On a node (as root), as upstream's `calicoctl node status`: whether the node agent
runs (a `calico-node -felix` or `calico-felix` process), then for each BIRD daemon that runs
(`bird`, `bird6`) the BGP peers it reports over its control socket (/var/run/calico/bird.ctl,
bird6.ctl, else /var/run/bird/), in upstream's table. Refused when no agent runs here.

From anywhere, `--node NAME` (repeatable) or `--all` asks calico-node on those nodes through the
datastore: one CalicoNodeStatus per node is created (classes Agent, BGP, Routes), read back once
calico-node has filled in its status, and deleted again — also on timeout and on Ctrl-C. That
temporary object is all it writes; nodes that do not answer within `--timeout` are named and
the command fails after printing the others. `--all` prints one row per node with its
established/total sessions.

Differences from upstream: a program started by its path counts as the agent, and every word of
`calico-node -felix` must match; a BIRD reply that ends before its last line is an error, not
a shorter table. The peer table of `--node` shows BIRD's state as derived from the session state
calico-node reports (`up` when Established).

Examples:
  sudo netctl node status
  netctl node status --node node-1
  netctl node status --all --timeout 1m
  netctl node status --all -o json | jq '.nodes[] | select(.answered | not) | .node'
  netctl node status --node node-1 --dry-run
  netctl node status --root /host     # in a container, the host's / mounted at /host";

#[derive(Debug, clap::Args)]
#[command(group(ArgGroup::new("remote").args(["node", "all"]).multiple(false)))]
#[command(next_help_heading = "Status options")]
pub struct StatusArgs {
    /// Ask this node through the datastore (repeatable) instead of looking at this host
    #[arg(long, value_name = "NAME", add = ArgValueCompleter::new(completion::complete_node_name))]
    node: Vec<String>,
    /// Ask every node through the datastore; one row per node
    #[arg(long)]
    all: bool,
    /// How long to wait for the nodes to answer (with --node/--all)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, requires = "remote")]
    timeout: Duration,
    /// Show the temporary objects that would be created, create nothing (with --node/--all)
    #[arg(long = "dry-run", requires = "remote")]
    dry_run: bool,
    /// The host's root directory: the process table is read from DIR/proc and the BIRD sockets
    /// from DIR/var/run [default: /; no root needed with a directory given]
    #[arg(long, value_name = "DIR", conflicts_with = "remote")]
    root: Option<PathBuf>,
    /// The run directory holding calico/bird.ctl and bird/bird.ctl [default: /var/run, or
    /// ROOT/var/run]
    #[arg(long, value_name = "DIR", conflicts_with = "remote")]
    run_dir: Option<PathBuf>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    output: ReportFormat,
}

/// How the node commands print their report: upstream's text, or a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Yaml,
}

/// Why `node status --node/--all` has no full answer.
#[derive(Debug, thiserror::Error)]
pub enum NodeStatusCommandError {
    #[error("there are no nodes in the datastore to ask")]
    NoNodes,
    /// Each node with why there is no status from it.
    #[error("no status from {}", describe_silent(.nodes))]
    NoAnswer { nodes: Vec<(String, String)> },
    #[error("{}", crate::exec::actions::node::status::describe_left_behind(.left_behind))]
    LeftBehind { left_behind: Vec<LeftBehind> },
    #[error("cannot write the status as {format}")]
    Encode {
        format: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// `node `a` (why)` or `nodes `a` (why), `b` (why)`.
fn describe_silent(nodes: &[(String, String)]) -> String {
    let listed: Vec<String> = nodes
        .iter()
        .map(|(node, reason)| format!("`{node}` ({reason})"))
        .collect();
    match listed.as_slice() {
        [one] => format!("node {one}"),
        many => format!("nodes {}", many.join(", ")),
    }
}

impl Hint for NodeStatusCommandError {
    fn hint(&self) -> Option<String> {
        match self {
            NodeStatusCommandError::NoNodes => Some(
                "a node appears once its calico-node has started (`netctl get nodes`)".to_string(),
            ),
            NodeStatusCommandError::NoAnswer { .. } => Some(
                "is calico-node running there? Its status reporter (calico-node -status-reporter, or -node-services from v3.32) fills in the status; `--timeout` waits longer"
                    .to_string(),
            ),
            NodeStatusCommandError::LeftBehind { left_behind } => {
                Some(format!("delete them with `{}`", delete_command(left_behind)))
            }
            NodeStatusCommandError::Encode { .. } => None,
        }
    }
}

pub async fn run(context: &Context, args: StatusArgs) -> anyhow::Result<ExitCode> {
    if args.all || !args.node.is_empty() {
        return remote(context, args).await;
    }
    // The node's own files are root's; a directory the user names is read with their rights.
    if args.root.is_none() && args.run_dir.is_none() && !crate::node::running_as_root() {
        return Err(LocalStatusError::NotRoot.into());
    }
    let root = args.root.unwrap_or_else(|| PathBuf::from("/"));
    let options = LocalStatusOptions {
        proc: root.join("proc"),
        run_dir: args
            .run_dir
            .unwrap_or_else(|| root.join(DEFAULT_RUN_DIR.trim_start_matches('/'))),
    };
    let status = local::node_status(&options).await?;
    match args.output {
        ReportFormat::Text => context.printer.data(&local::render(&status))?,
        format => context.printer.data(&encode(format, &status.document())?)?,
    }
    match status.failure() {
        Some(error) => Err(error.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

async fn remote(context: &Context, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let store = context.datastore().await?;
    let nodes = if args.all {
        every_node(store.as_ref()).await?
    } else {
        // Each node once, in the order given.
        let mut nodes: Vec<String> = Vec::new();
        for node in args.node {
            if !nodes.contains(&node) {
                nodes.push(node);
            }
        }
        nodes
    };
    if nodes.is_empty() {
        return Err(NodeStatusCommandError::NoNodes.into());
    }
    let id: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let targets = nodes
        .iter()
        .enumerate()
        .map(|(index, node)| NodeStatusTarget {
            node: node.clone(),
            object: remote::object_name(&id, node, index),
        })
        .collect();
    let query = NodeStatusQuery {
        id,
        nodes: targets,
        timeout: HumanDuration(args.timeout),
    };
    let description = match nodes.as_slice() {
        [one] => format!("ask node `{one}` for its status"),
        many => format!("ask {} nodes for their status", many.len()),
    };
    let plan = Plan::single("node status", description, Action::NodeStatus(query));
    let mode = if args.dry_run {
        RunMode::DryRun
    } else {
        RunMode::Execute
    };
    let executor = Executor::new(store, None, Holder::current());
    let outcome = {
        let mut stdout = context.printer.stdout();
        match executor
            .run_one(&plan, mode, &RunOneOptions::default(), &mut stdout)
            .await
        {
            Ok(outcome) => outcome,
            // One step, nothing to resume: the step's error is the command's.
            Err(ExecError::StepFailed { source, .. }) => return Err(anyhow::Error::new(*source)),
            Err(error) => return Err(error.into()),
        }
    };
    if mode == RunMode::DryRun {
        return Ok(ExitCode::SUCCESS);
    }
    let output: NodeStatusOutput = outcome
        .output
        .and_then(|output| serde_json::from_value(output).ok())
        .unwrap_or_default();
    print_answers(context, &output.answers, args.all, args.output)?;
    if !output.left_behind.is_empty() {
        return Err(NodeStatusCommandError::LeftBehind {
            left_behind: output.left_behind,
        }
        .into());
    }
    let silent: Vec<(String, String)> = output
        .answers
        .iter()
        .filter(|answer| answer.status.is_none())
        .map(|answer| {
            let reason = answer.reason.as_deref().unwrap_or("no answer");
            (answer.node.clone(), reason.to_string())
        })
        .collect();
    if !silent.is_empty() {
        return Err(NodeStatusCommandError::NoAnswer { nodes: silent }.into());
    }
    Ok(ExitCode::SUCCESS)
}

/// The names of every Calico Node, in the datastore's order.
async fn every_node(store: &dyn Datastore) -> anyhow::Result<Vec<String>> {
    let mut nodes = Vec::new();
    let options = ListOptions::new(Kind::Node).with_detail(Detail::Summary {
        spec_fields: Vec::new(),
        labels: false,
    });
    crate::datastore::for_each(store, &options, |node| {
        nodes.push(node.metadata.name);
        Ok::<(), crate::datastore::StoreError>(())
    })
    .await?;
    Ok(nodes)
}

fn print_answers(
    context: &Context,
    answers: &[NodeAnswer],
    all: bool,
    format: ReportFormat,
) -> anyhow::Result<()> {
    match format {
        ReportFormat::Json | ReportFormat::Yaml => {
            context
                .printer
                .data(&encode(format, &remote::document(answers))?)?;
        }
        ReportFormat::Text if all => {
            let headings = remote::SUMMARY_HEADINGS.map(str::to_string).to_vec();
            let mut table = TableWriter::trimmed(context.printer.stdout(), headings);
            for answer in answers {
                table.push_row(remote::summary_row(answer))?;
            }
            drop(table.finish()?);
        }
        ReportFormat::Text => {
            let sections: Vec<String> = answers.iter().map(remote::render_node).collect();
            context.printer.data(&sections.join("\n"))?;
        }
    }
    Ok(())
}

/// A report as JSON or YAML (`-o json|yaml` of the node commands), ending with a line break.
pub fn encode(format: ReportFormat, document: &impl serde::Serialize) -> anyhow::Result<String> {
    let text = match format {
        ReportFormat::Yaml => crate::yaml::emit::to_string(document).map_err(|source| {
            NodeStatusCommandError::Encode {
                format: "YAML",
                source,
            }
        })?,
        _ => {
            let mut text = serde_json::to_string_pretty(document).map_err(|source| {
                NodeStatusCommandError::Encode {
                    format: "JSON",
                    source,
                }
            })?;
            text.push('\n');
            text
        }
    };
    Ok(text)
}
