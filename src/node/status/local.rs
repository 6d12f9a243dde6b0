//! `netctl node status` on a node: is the agent running, and what do its BIRD daemons say about
//! their BGP peers? Read-only; the same questions, in the same order, as upstream's
//! `calicoctl node status`.
//!
//! Without the agent there is nothing to report, so that is an error (upstream: "Calico process
//! is not running."), never an empty table. A BIRD daemon that runs is asked over its socket; one
//! that does not is reported as not running; a daemon that runs but cannot be asked (no socket,
//! a hung or garbled reply) makes the command fail after the rest is printed.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::bird::{BgpPeer, IpVersion};
use super::processes::{Daemon, ProcessTable};
use super::socket::{self, QueryError};
use crate::errors::Hint;

/// Where `node status` looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalStatusOptions {
    /// The proc file system (`/proc`; `<root>/proc` with `--root`).
    pub proc: PathBuf,
    /// The run directory holding `calico/bird.ctl` (`/var/run`; `--run-dir`).
    pub run_dir: PathBuf,
}

/// What one BIRD daemon says, or why it says nothing.
#[derive(Debug)]
pub enum DaemonReport {
    NotRunning,
    Answered {
        socket: PathBuf,
        greeting: Option<String>,
        peers: Vec<BgpPeer>,
    },
    Failed(QueryError),
}

/// Everything `node status` found on the node.
#[derive(Debug)]
pub struct LocalStatus {
    /// The agent's command line.
    pub agent: String,
    pub bird: DaemonReport,
    pub bird6: DaemonReport,
}

/// Why `node status` has nothing to report.
#[derive(Debug, thiserror::Error)]
pub enum LocalStatusError {
    #[error("`node status` asks the node's BIRD sockets and must run as root")]
    NotRoot,
    #[error("cannot read the process table `{}`", path.display())]
    ProcessTable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the node agent is not running here (no `calico-node -felix` or `calico-felix` process in `{}`)",
        proc.display()
    )]
    AgentNotRunning { proc: PathBuf },
    #[error("cannot ask BIRDv{} for its BGP peers", .version.number())]
    Bird {
        version: IpVersion,
        #[source]
        source: QueryError,
    },
}

impl Hint for LocalStatusError {
    fn hint(&self) -> Option<String> {
        match self {
            LocalStatusError::NotRoot => Some(
                "run it with sudo on the node; `netctl node status --node NAME` asks a node from anywhere"
                    .to_string(),
            ),
            LocalStatusError::AgentNotRunning { .. } => Some(
                "run this on a node whose calico-node is up (`netctl node run` starts it); `netctl node status --node NAME` asks a node from anywhere"
                    .to_string(),
            ),
            LocalStatusError::Bird { source, .. } => source.hint(),
            LocalStatusError::ProcessTable { .. } => None,
        }
    }
}

impl LocalStatus {
    /// The first daemon that could not be asked, as the command's error.
    pub fn failure(self) -> Option<LocalStatusError> {
        [(IpVersion::V4, self.bird), (IpVersion::V6, self.bird6)]
            .into_iter()
            .find_map(|(version, report)| match report {
                DaemonReport::Failed(source) => Some(LocalStatusError::Bird { version, source }),
                _ => None,
            })
    }

    /// The report as a document for `-o json|yaml`.
    pub fn document(&self) -> LocalDocument<'_> {
        LocalDocument {
            agent: AgentDocument {
                running: true,
                command: &self.agent,
            },
            bird: DaemonDocument::from(&self.bird),
            bird6: DaemonDocument::from(&self.bird6),
        }
    }
}

/// `-o json|yaml` of `node status` on a node.
#[derive(Debug, Serialize)]
pub struct LocalDocument<'a> {
    pub agent: AgentDocument<'a>,
    pub bird: DaemonDocument<'a>,
    pub bird6: DaemonDocument<'a>,
}

#[derive(Debug, Serialize)]
pub struct AgentDocument<'a> {
    pub running: bool,
    pub command: &'a str,
}

#[derive(Debug, Serialize)]
pub struct DaemonDocument<'a> {
    pub running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<&'a Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub greeting: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peers: Option<&'a [BgpPeer]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl<'a> From<&'a DaemonReport> for DaemonDocument<'a> {
    fn from(report: &'a DaemonReport) -> DaemonDocument<'a> {
        match report {
            DaemonReport::NotRunning => DaemonDocument {
                running: false,
                socket: None,
                greeting: None,
                peers: None,
                error: None,
            },
            DaemonReport::Answered {
                socket,
                greeting,
                peers,
            } => DaemonDocument {
                running: true,
                socket: Some(socket),
                greeting: greeting.as_deref(),
                peers: Some(peers),
                error: None,
            },
            DaemonReport::Failed(error) => DaemonDocument {
                running: true,
                socket: None,
                greeting: None,
                peers: None,
                error: Some(crate::errors::error_chain(error)),
            },
        }
    }
}

/// Looks at the node: the agent first (refused without it), then each BIRD daemon that runs.
pub async fn node_status(options: &LocalStatusOptions) -> Result<LocalStatus, LocalStatusError> {
    let processes =
        ProcessTable::read(&options.proc).map_err(|source| LocalStatusError::ProcessTable {
            path: options.proc.clone(),
            source,
        })?;
    let agent = processes
        .find(Daemon::Agent)
        .ok_or_else(|| LocalStatusError::AgentNotRunning {
            proc: options.proc.clone(),
        })?;
    let ask = |daemon: Daemon, version: IpVersion| {
        let running = processes.find(daemon).is_some();
        let run_dir = options.run_dir.clone();
        async move {
            if !running {
                return DaemonReport::NotRunning;
            }
            match socket::show_protocols(&run_dir, version).await {
                Ok(answer) => DaemonReport::Answered {
                    socket: answer.socket,
                    greeting: answer.greeting,
                    peers: answer.peers,
                },
                Err(error) => DaemonReport::Failed(error),
            }
        }
    };
    let (bird, bird6) = tokio::join!(
        ask(Daemon::Bird, IpVersion::V4),
        ask(Daemon::Bird6, IpVersion::V6)
    );
    Ok(LocalStatus { agent, bird, bird6 })
}

/// Upstream's text: the agent line, then a section per daemon (the peer table, "No IPv4 peers
/// found.", or that it does not run), and a blank line at the end.
pub fn render(status: &LocalStatus) -> String {
    let mut out = String::from("Calico process is running.\n");
    if matches!(
        (&status.bird, &status.bird6),
        (DaemonReport::NotRunning, DaemonReport::NotRunning)
    ) {
        out.push_str("\nThe BGP backend process (BIRD) is not running.\n");
    } else {
        for (version, report) in [
            (IpVersion::V4, &status.bird),
            (IpVersion::V6, &status.bird6),
        ] {
            let number = version.number();
            match report {
                DaemonReport::NotRunning => out.push_str(&format!(
                    "\nINFO: BIRDv{number} process: '{}' is not running.\n",
                    version.daemon()
                )),
                DaemonReport::Answered { peers, .. } => {
                    out.push_str(&format!("\nIPv{number} BGP status\n"));
                    out.push_str(&super::table::peer_table(peers, version));
                }
                // Said as the command's error, after the rest.
                DaemonReport::Failed(_) => {}
            }
        }
    }
    out.push('\n');
    out
}
