//! Asking a BIRD daemon over its control socket: connect, send `show protocols`, read the
//! numbered reply (see `bird.rs`) with upstream's read timeout of 2 s per line.
//!
//! The socket is looked for where upstream looks: `<run dir>/calico/bird.ctl` (`bird6.ctl`), the
//! calico/node container's, then `<run dir>/bird/`, BIRD's own default for installs without the
//! container. The run directory is `/var/run` on a node (`--run-dir` for the host's directory
//! mounted elsewhere, and the tests' stand-in daemon). A reply is bounded in size, so a daemon that
//! talks without end cannot hold the command.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::bird::{BgpPeer, IpVersion, ProtocolsReply, ReplyError};
use crate::errors::Hint;

/// How long one line of a reply may take (upstream's `birdTimeOut`).
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The most a reply may hold: far above a node's few hundred protocols.
const REPLY_LIMIT: u64 = 16 * 1024 * 1024;

/// The run directory on a node.
pub const DEFAULT_RUN_DIR: &str = "/var/run";

/// Where the daemon's socket may be, in the order tried.
pub fn socket_paths(run_dir: &Path, version: IpVersion) -> [PathBuf; 2] {
    let file = format!("{}.ctl", version.daemon());
    [
        run_dir.join("calico").join(&file),
        run_dir.join("bird").join(&file),
    ]
}

/// Why a daemon could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("cannot connect to the BIRDv{} socket (tried `{}` and `{}`)", .version.number(), .paths[0].display(), .paths[1].display())]
    Connect {
        version: IpVersion,
        paths: [PathBuf; 2],
        #[source]
        source: std::io::Error,
    },
    #[error("cannot send `show protocols` to `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read BIRD's reply from `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("BIRD at `{}` did not answer within {}s", path.display(), READ_TIMEOUT.as_secs())]
    Timeout { path: PathBuf },
    #[error("cannot read BIRD's reply from `{}`", path.display())]
    Reply {
        path: PathBuf,
        #[source]
        source: ReplyError,
    },
}

impl Hint for QueryError {
    fn hint(&self) -> Option<String> {
        match self {
            QueryError::Connect { source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Some("the socket is root's: run `netctl node status` with sudo".to_string())
            }
            QueryError::Connect { .. } => Some(
                "is this the node's run directory? `--run-dir DIR` names another (the host's /var/run mounted elsewhere)"
                    .to_string(),
            ),
            QueryError::Timeout { .. } => Some(
                "BIRD may be busy or hung: `calico-node -bird-ready` and the calico-node logs say more".to_string(),
            ),
            _ => None,
        }
    }
}

/// What one daemon said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolsAnswer {
    /// The socket that answered.
    pub socket: PathBuf,
    /// BIRD's greeting (`BIRD v0.3.3+birdv1.6.8 ready.`).
    pub greeting: Option<String>,
    pub peers: Vec<BgpPeer>,
}

/// Connects to the daemon of `version` under `run_dir` and asks it for its protocols.
pub async fn show_protocols(
    run_dir: &Path,
    version: IpVersion,
) -> Result<ProtocolsAnswer, QueryError> {
    let paths = socket_paths(run_dir, version);
    let (path, stream) = match UnixStream::connect(&paths[0]).await {
        Ok(stream) => (paths[0].clone(), stream),
        Err(_) => match UnixStream::connect(&paths[1]).await {
            Ok(stream) => (paths[1].clone(), stream),
            Err(source) => {
                return Err(QueryError::Connect {
                    version,
                    paths,
                    source,
                });
            }
        },
    };
    let (reader, mut writer) = stream.into_split();
    writer
        .write_all(b"show protocols\n")
        .await
        .map_err(|source| QueryError::Write {
            path: path.clone(),
            source,
        })?;
    let mut lines = BufReader::new(reader.take(REPLY_LIMIT)).lines();
    let mut reply = ProtocolsReply::new(version);
    loop {
        let line = match tokio::time::timeout(READ_TIMEOUT, lines.next_line()).await {
            Err(_) => return Err(QueryError::Timeout { path }),
            Ok(Err(source)) => return Err(QueryError::Read { path, source }),
            Ok(Ok(None)) => break,
            Ok(Ok(Some(line))) => line,
        };
        match reply.push(&line) {
            Ok(true) => break,
            Ok(false) => {}
            Err(source) => return Err(QueryError::Reply { path, source }),
        }
    }
    let (greeting, peers) = reply.finish().map_err(|source| QueryError::Reply {
        path: path.clone(),
        source,
    })?;
    Ok(ProtocolsAnswer {
        socket: path,
        greeting,
        peers,
    })
}
