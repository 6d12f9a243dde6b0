//! Diagnostics bundles: what maintainers ask for first, collected read-only into one `.tar.gz`.
//!
//! - [`node_diags`]: `netctl node diags`, run on a node: its routes, rules, addresses and links,
//!   iptables and nftables rule sets, ipsets, sockets, the agent's log directory and its
//!   container's logs through docker, podman, nerdctl or crictl (upstream's
//!   `calicoctl/calicoctl/commands/node/diags.go`, plus the containerd hosts of
//!   projectcalico/calico#5637);
//! - [`cluster_diags`]: `netctl cluster diags`, through the Kubernetes API only (no `kubectl`):
//!   Calico resources of both API groups, the Calico namespaces (manifest installs in
//!   `kube-system` too, projectcalico/calico#12657), nodes, events, webhooks, API services,
//!   censored Secrets, pod logs and each calico-node's dataplane dumps by exec (upstream's
//!   `calicoctl/calicoctl/commands/cluster/diags.go`).
//!
//! Both write through a [`bundle::Bundle`] (staging, limits, index, archive) and a
//! [`scrub::Scrubber`] (no secret or private key in any file). Neither changes anything on the
//! node or in the cluster: no signal to felix, no container started (upstream runs one to list
//! ipsets), no object written.

pub mod bundle;
pub mod cluster_diags;
pub mod node_diags;
pub mod scrub;
pub mod secrets;

use std::path::PathBuf;

use crate::errors::Hint;

/// Why a bundle could not be made. Items that cannot be collected are not errors: the index
/// records them.
#[derive(Debug, thiserror::Error)]
pub enum DiagnoseError {
    #[error("cannot use `{dir}` for the bundle")]
    Directory {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{dir}` is not a directory")]
    NotADirectory { dir: PathBuf },
    #[error("`{path}` already exists")]
    ArchiveExists { path: PathBuf },
    #[error("cannot write `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the archive `{path}`")]
    Archive {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a plain relative path inside the bundle")]
    BadBundlePath { path: String },
    #[error("interrupted: nothing was kept")]
    Interrupted,
    #[error("no Kubernetes cluster is configured")]
    NoCluster,
    #[error("the Kubernetes API at {what} did not answer")]
    Cluster {
        what: String,
        #[source]
        source: kube::Error,
    },
}

impl Hint for DiagnoseError {
    fn hint(&self) -> Option<String> {
        match self {
            DiagnoseError::Directory { .. } | DiagnoseError::NotADirectory { .. } => Some(
                "give an existing directory you can write to with `--dir DIR`".to_string(),
            ),
            DiagnoseError::ArchiveExists { .. } => {
                Some("wait a second (the name has the time) or use another `--dir`".to_string())
            }
            DiagnoseError::Write { .. } | DiagnoseError::Archive { .. } => {
                Some("check the free space and permissions of `--dir`".to_string())
            }
            DiagnoseError::NoCluster => Some(
                "set `kubeconfig` in the configuration (or `KUBECONFIG`), or run where `~/.kube/config` exists"
                    .to_string(),
            ),
            DiagnoseError::Cluster { .. } => Some(
                "check the cluster answers: `netctl config check`, or `kubectl get nodes` with the same kubeconfig"
                    .to_string(),
            ),
            DiagnoseError::BadBundlePath { .. } => {
                Some("this is a bug in netctl: please report it".to_string())
            }
            DiagnoseError::Interrupted => None,
        }
    }
}

/// `YYYYMMDD_HHMMSS` for archive names, as upstream names them (UTC).
pub fn timestamp_for_name(now: std::time::SystemTime) -> String {
    let text = humantime::format_rfc3339_seconds(now).to_string();
    // 2026-01-01T12:00:00Z
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    format!("{}_{}", &digits[..8], &digits[8..14])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names_carry_the_utc_time_as_upstream_writes_it() {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600 + 3_723);
        assert_eq!(timestamp_for_name(time), "20260101_010203");
    }
}
