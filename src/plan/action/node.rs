//! The arguments of the `node.*` actions, which only `netctl node` commands build: `node.run`
//! (start the node agent container; what a plan's digest keeps of it is the command line and the
//! private files' paths, never their contents) and `node.status` (ask nodes for their BGP status
//! through temporary CalicoNodeStatus objects), with their one-line descriptions.
//!
//! Starting the container and asking are `exec/actions/node/`'s.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use super::{Arguments, HumanDuration};
use crate::node::{ContainerCommand, HostPreparation, LocatedEngine};

/// The node agent container to start: the exact engine command (with the private files it reads),
/// the engine, whether to prepare the host, and how long to wait for the agent's start line.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRun {
    pub command: ContainerCommand,
    pub engine: LocatedEngine,
    pub host: HostPreparation,
    pub startup_timeout: Duration,
}

/// For the plan's digest only: the command line and the private files' paths, never their
/// contents (inline certificates, credentials).
impl Serialize for NodeRun {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let private_files: Vec<String> = self
            .command
            .private_files
            .iter()
            .map(|file| file.path.display().to_string())
            .collect();
        serde_json::json!({
            "engine": self.engine.path.display().to_string(),
            "arguments": self.command.arguments,
            "private_files": private_files,
            "prepare_host": self.host == HostPreparation::Prepare,
            "startup_timeout": HumanDuration(self.startup_timeout),
        })
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for NodeRun {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "`node.run` is made by `netctl node run` and is not read from plans",
        ))
    }
}

impl Arguments for NodeRun {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name}: {}", self.command.shell_line())
    }
}

/// The nodes `node.status` asks, each through its own temporary CalicoNodeStatus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeStatusQuery {
    /// The query's id: part of each object's name and the value of its
    /// `netctl.projectcalico.org/node-status` label.
    pub id: String,
    pub nodes: Vec<NodeStatusTarget>,
    /// How long to wait for every node to answer.
    pub timeout: HumanDuration,
}

/// One node and the name of the object that asks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeStatusTarget {
    pub node: String,
    pub object: String,
}

impl Arguments for NodeStatusQuery {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes: Vec<&str> = self
            .nodes
            .iter()
            .map(|target| target.node.as_str())
            .collect();
        write!(out, "{name} {} (timeout {})", nodes.join(","), self.timeout)
    }

    /// It deletes what it created on Ctrl-C and SIGTERM.
    fn stops_on_signal(&self) -> bool {
        true
    }
}
