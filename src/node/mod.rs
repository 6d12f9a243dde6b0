//! `netctl node`: start the node agent container with the datastore settings passed through
//! (`node run`), and the node's read-only diagnostics: its BGP sessions (`status/`, also asked of any
//! node through the datastore) and whether the host can run the agent (`checksystem.rs`).
//!
//! The flow (`docs/node-run.md`): the flags become [`NodeRunOptions`], which
//! [`NodeRunOptions::validate`] turns into a [`NodeRunRequest`] (every flag and the datastore
//! settings checked, nothing run yet);
//! [`ContainerCommand::build`] turns the request into the exact engine command and the private files it
//! needs; [`run::execute`] prepares the host, removes an old container, starts the new one and watches
//! its logs until the agent reports that it started. `--dry-run` stops after printing the command.
//!
//! Facts come from upstream's `calicoctl node run` (`calicoctl/calicoctl/commands/node/run.go`);
//! the differences are deliberate and listed in `docs/node-run.md` (stable environment order,
//! read-only certificate mounts,
//! inline PEM and RBAC credentials passed through private files, `podman` support).
//! This module does not parse flags (that is `cli/node.rs`) and does not read environment variables
//! (that is `config::Environment`, handed in by the caller).

pub mod checksystem;
mod command;
mod engine;
mod error;
pub mod image;
mod request;
pub mod run;
pub mod status;

pub use command::{ContainerCommand, Mount, PrivateFile, dry_run_text};
pub use engine::{Engine, LocatedEngine};
pub use error::NodeError;
pub use request::{
    AddressSetting, AsNumber, AutodetectionMethod, Backend, DefaultPools, IpFamily, Lifecycle,
    NodeRunOptions, NodeRunRequest, host_name,
};

/// Whether netctl runs as root (the effective user): the node's own files and sockets are root's.
pub fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether netctl prepares the host (kernel modules, forwarding, conntrack table size) before it
/// starts the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPreparation {
    Prepare,
    Skip,
}

/// The container is always called this, as upstream, so that other tools (and `node status`) find it.
pub const CONTAINER_NAME: &str = "calico-node";

/// The log line the node agent prints once it is up; the startup check waits for exactly this line.
pub const STARTED_LINE: &str = "Calico node started successfully";

/// Where netctl keeps the files it writes for the container (inline PEM, RBAC credentials) by default.
///
/// Under `/var/lib/calico`, the node agent's own state directory on the host: it survives reboots, is
/// root-owned, and is already part of the node's footprint. The files stay after the run because the
/// container reads them every time it starts (`--restart=always`).
pub const DEFAULT_SECRETS_DIR: &str = "/var/lib/calico/netctl-certs";

/// Setting this variable (to anything) skips host preparation (kernel modules, forwarding, conntrack),
/// for hosts where it is done elsewhere or netctl itself runs in a container (upstream:
/// `CALICO_CTL_CONTAINER`).
pub const SKIP_HOST_PREPARATION_VARIABLE: &str = "NETCTL_SKIP_HOST_PREP";
