//! Why `netctl node run` refused or failed. Each variant says what was being attempted; [`NodeError::hint`]
//! says what to change. Validation variants are raised before any command runs.

use std::path::PathBuf;
use std::time::Duration;

use crate::datastore::DatastoreType;
use crate::errors::Hint;

/// The last log lines of the container, shown when the startup check fails.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogTail(pub Vec<String>);

impl std::fmt::Display for LogTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("; the container printed no log lines");
        }
        f.write_str("; last log lines:")?;
        for line in &self.0 {
            write!(f, "\n | {line}")?;
        }
        Ok(())
    }
}

/// What a failed engine command printed, shown one line after another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOutput(pub Vec<String>);

impl std::fmt::Display for EngineOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in &self.0 {
            write!(f, "\n | {line}")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("invalid IP address `{value}` given to `{flag}`")]
    InvalidAddress { flag: &'static str, value: String },
    #[error("`{flag}` takes an {expected} address, but `{value}` is not one")]
    WrongFamily {
        flag: &'static str,
        expected: &'static str,
        value: String,
    },
    #[error("invalid AS number `{value}`")]
    InvalidAsNumber { value: String },
    #[error("unknown backend `{value}`")]
    UnknownBackend { value: String },
    #[error("invalid IP autodetection method `{value}` given to `{flag}`: {reason}")]
    InvalidAutodetectionMethod {
        flag: &'static str,
        value: String,
        reason: String,
    },
    #[error("cannot determine the node name from the host name")]
    NodeName {
        #[source]
        source: std::io::Error,
    },
    #[error("invalid node name `{value}`")]
    InvalidNodeName { value: String },
    #[error(
        "`netctl node run` needs the `etcdv3` datastore, but the configuration selects `{found}`"
    )]
    UnsupportedDatastore { found: DatastoreType },
    #[error("cannot use Felix configuration file `{}`", path.display())]
    FelixConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot resolve path `{}`", path.display())]
    Path {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot mount `{}` into the container: the path contains `:` or `,`", path.display())]
    UnmountablePath { path: PathBuf },
    #[error("the etcd {what} contains a line break, which an engine environment file cannot carry")]
    UnsafeCredential { what: &'static str },
    #[error("no container engine found on PATH (looked for `docker`, then `podman`)")]
    NoEngine,
    #[error("container engine `{engine}` not found on PATH")]
    EngineMissing { engine: &'static str },
    #[error("need super user privileges to start the node container")]
    NotRoot,
    #[error("cannot {what}")]
    HostPreparation {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write `{}`", path.display())]
    PrivateFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}){output}")]
    EngineFailed {
        command: String,
        status: String,
        output: EngineOutput,
    },
    #[error(
        "the node container did not report a successful start within {}{tail}",
        humantime::format_duration(*timeout)
    )]
    StartupTimeout { timeout: Duration, tail: LogTail },
    #[error("the node container stopped before reporting a successful start{tail}")]
    ContainerExited { tail: LogTail },
    /// With `--init-system` the container runs in the foreground; its failure is the command's.
    #[error("the node container stopped with exit code {code}")]
    ContainerFailed { code: i32 },
    #[error("the node container was stopped by a signal")]
    ContainerKilled,
}

impl Hint for NodeError {
    /// Advice for the user, printed on its own `hint:` line.
    fn hint(&self) -> Option<String> {
        Some(match self {
            NodeError::InvalidAddress { flag, .. } => format!(
                "give `{flag}` an address such as `{}` or the word `autodetect`",
                if *flag == "--ip" { "10.0.0.5" } else { "fd00::5" }
            ),
            NodeError::WrongFamily { .. } => {
                "use `--ip` for an IPv4 address and `--ip6` for an IPv6 address".into()
            }
            NodeError::InvalidAsNumber { .. } => {
                "an AS number is a plain number up to 4294967295 or the dotted form `A.B` (each part up to 65535)".into()
            }
            NodeError::UnknownBackend { .. } => "`--backend` is `bird` or `none`".into(),
            NodeError::InvalidAutodetectionMethod { .. } => {
                "methods: `first-found`, `can-reach=<ip or name>`, `interface=<regex,...>`, `skip-interface=<regex,...>`, `cidr=<cidr,...>`, `kubernetes-internal-ip`".into()
            }
            NodeError::NodeName { .. } | NodeError::InvalidNodeName { .. } => {
                "give the node name with `--name`".into()
            }
            NodeError::UnsupportedDatastore { .. } => {
                "with the `kubernetes` datastore the node agent runs as a DaemonSet managed by the cluster; for etcd set `DATASTORE_TYPE=etcdv3` and `ETCD_ENDPOINTS` (or `datastoreType: etcdv3` in the config file)".into()
            }
            NodeError::UnmountablePath { .. } => {
                "move the file or directory to a path without `:` or `,`".into()
            }
            NodeError::FelixConfig { .. } => "check the path given to `--felix-config`".into(),
            NodeError::UnsafeCredential { .. } => {
                "use an etcd user name and password without line breaks".into()
            }
            NodeError::NoEngine => {
                "install docker or podman, or name one with `--engine` (with `--dry-run` it need not be installed)".into()
            }
            NodeError::EngineMissing { engine } => {
                format!("install `{engine}` or add its directory to PATH")
            }
            NodeError::NotRoot => {
                "run it as root (e.g. with sudo), or use `--dry-run` to print the command".into()
            }
            NodeError::HostPreparation { .. } => format!(
                "prepare the host yourself and set `{}=1` to skip this step",
                super::SKIP_HOST_PREPARATION_VARIABLE
            ),
            NodeError::PrivateFile { .. } => {
                "choose a writable directory with `--secrets-dir`".into()
            }
            NodeError::StartupTimeout { .. } => format!(
                "the agent may still be starting: check `docker logs {0}` (or `podman logs {0}`), or allow longer with `--startup-timeout`",
                super::CONTAINER_NAME
            ),
            NodeError::ContainerExited { .. } => format!(
                "check the full logs with `docker logs {0}` (or `podman logs {0}`)",
                super::CONTAINER_NAME
            ),
            _ => return None,
        })
    }
}
