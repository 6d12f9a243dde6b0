//! Running the node container for real: root check, host preparation, private files, removal of an old
//! container, the engine command, and the startup check on the container's logs.
//!
//! The sequence is upstream's (`calicoctl/calicoctl/commands/node/run.go`) with these differences,
//! on purpose: a failure to remove an old container is reported unless it is "no such container";
//! the engine's
//! output is shown line by line (upstream splits on a literal `/n`); the startup check ends early, with
//! the last log lines, when the container stops; and with `--init-system` the container runs in the
//! foreground, its output is the log, and netctl exits with its status (an init system supervises it).
//! Progress goes to stderr through the command's printer (`-q` silences it); stdout stays empty.

use std::collections::VecDeque;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::command::{ContainerCommand, PrivateFile};
use super::error::{EngineOutput, LogTail};
use super::request::Lifecycle;
use super::{CONTAINER_NAME, HostPreparation, LocatedEngine, NodeError, STARTED_LINE};
use crate::output::Printer;

/// How many log lines a failed startup check shows.
const TAIL_LINES: usize = 10;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The detached container reported a successful start.
    Started,
    /// The foreground container (`--init-system`) stopped with this exit code (`None`: killed by a signal).
    Stopped { code: Option<i32> },
}

/// Whether this process runs as root. The owner of `/proc/self` is the effective user.
pub fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|metadata| metadata.uid() == 0)
}

/// Runs `command` with `engine`: everything after validation.
pub async fn execute(
    command: &ContainerCommand,
    engine: &LocatedEngine,
    host: HostPreparation,
    startup_timeout: Duration,
    printer: &Printer,
) -> Result<RunOutcome, NodeError> {
    if !is_root() {
        return Err(NodeError::NotRoot);
    }
    if host == HostPreparation::Prepare {
        prepare_host(&command.host_directories, printer).await?;
    }
    write_private_files(&command.private_files)?;

    let program = engine.engine.program();
    printer.say(format!(
        "Removing the old {CONTAINER_NAME} container (if there is one)."
    ));
    let remove = ["rm", "-f", CONTAINER_NAME];
    let output = engine_output(engine, &remove).await?;
    if !output.status.success() && !mentions_no_such_container(&output) {
        return Err(failure(program, &remove, &output));
    }

    printer.say("Starting the node container with this command:");
    printer.say(command.shell_line());
    printer.say("The image may take a while to download if it is not available locally.");
    if command.lifecycle == Lifecycle::InitSystem {
        let status = Command::new(&engine.path)
            .args(&command.arguments)
            .status()
            .await
            .map_err(|source| spawn_error(program, "run", source))?;
        return Ok(RunOutcome::Stopped {
            code: status.code(),
        });
    }
    let output = engine_output(engine, &command.arguments).await?;
    if !output.status.success() {
        return Err(failure(program, &["run"], &output));
    }

    printer.say("Container started; checking its logs for progress.");
    wait_for_start(engine, startup_timeout, printer).await?;
    printer.say("The node agent started.");
    Ok(RunOutcome::Started)
}

fn spawn_error(program: &str, subcommand: &str, source: std::io::Error) -> NodeError {
    NodeError::Spawn {
        command: format!("{program} {subcommand}"),
        source,
    }
}

async fn engine_output(
    engine: &LocatedEngine,
    arguments: &[impl AsRef<std::ffi::OsStr>],
) -> Result<Output, NodeError> {
    Command::new(&engine.path)
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|source| {
            let subcommand = arguments
                .first()
                .map(|first| first.as_ref().to_string_lossy().into_owned())
                .unwrap_or_default();
            spawn_error(engine.engine.program(), &subcommand, source)
        })
}

fn output_lines(output: &Output) -> Vec<String> {
    [&output.stdout, &output.stderr]
        .into_iter()
        .flat_map(|bytes| {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|line| !line.trim().is_empty())
        .collect()
}

fn mentions_no_such_container(output: &Output) -> bool {
    output_lines(output)
        .iter()
        .any(|line| line.to_lowercase().contains("no such container"))
}

fn failure(program: &str, arguments: &[&str], output: &Output) -> NodeError {
    NodeError::EngineFailed {
        command: format!("{program} {}", arguments.join(" ")),
        status: output.status.to_string(),
        output: EngineOutput(output_lines(output)),
    }
}

/// Loads the kernel modules the agent needs, enables forwarding, raises the conntrack limit and
/// creates the directories the container mounts.
async fn prepare_host(
    directories: &[std::path::PathBuf],
    printer: &Printer,
) -> Result<(), NodeError> {
    for directory in directories {
        std::fs::create_dir_all(directory).map_err(|source| NodeError::HostPreparation {
            what: format!("create directory `{}`", directory.display()),
            source,
        })?;
    }
    // Best effort, as upstream: the modules may be built in, or loaded by the distribution.
    match Command::new("modprobe")
        .args(["-a", "xt_set", "ip6_tables"])
        .stdin(Stdio::null())
        .output()
        .await
    {
        Ok(output) if output.status.success() => {}
        Ok(output) => printer.warn(format!(
            "`modprobe -a xt_set ip6_tables` failed ({}); continuing",
            output.status
        )),
        Err(error) => printer.warn(format!(
            "cannot run `modprobe -a xt_set ip6_tables` ({error}); continuing"
        )),
    }
    std::fs::write("/proc/sys/net/ipv4/ip_forward", "1").map_err(|source| {
        NodeError::HostPreparation {
            what: "enable IPv4 forwarding (`/proc/sys/net/ipv4/ip_forward`)".into(),
            source,
        }
    })?;
    if Path::new("/proc/sys/net/ipv6").exists() {
        std::fs::write("/proc/sys/net/ipv6/conf/all/forwarding", "1").map_err(|source| {
            NodeError::HostPreparation {
                what: "enable IPv6 forwarding (`/proc/sys/net/ipv6/conf/all/forwarding`)".into(),
                source,
            }
        })?;
    }
    if let Err(error) = std::fs::write("/proc/sys/net/netfilter/nf_conntrack_max", "1000000") {
        printer.warn(format!(
            "cannot raise the conntrack table size (`/proc/sys/net/netfilter/nf_conntrack_max`): {error}"
        ));
    }
    Ok(())
}

/// Writes each file with mode 0600 inside a 0700 directory, atomically (temporary file, then rename),
/// so the container never reads a half-written key. The files stay: the container reads them whenever
/// it restarts.
pub fn write_private_files(files: &[PrivateFile]) -> Result<(), NodeError> {
    for file in files {
        let error = |source| NodeError::PrivateFile {
            path: file.path.clone(),
            source,
        };
        if let Some(directory) = file.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(directory)
                .map_err(error)?;
            std::fs::set_permissions(directory, std::fs::Permissions::from_mode(0o700))
                .map_err(error)?;
        }
        let temporary = file.path.with_extension("tmp");
        let _ = std::fs::remove_file(&temporary);
        let mut handle = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(error)?;
        handle.write_all(&file.contents).map_err(error)?;
        handle.sync_all().map_err(error)?;
        drop(handle);
        std::fs::rename(&temporary, &file.path).map_err(error)?;
    }
    Ok(())
}

/// Follows the container's logs, echoing each line to stderr, until the agent's start line appears,
/// the logs end (the container stopped) or `timeout` passes.
async fn wait_for_start(
    engine: &LocatedEngine,
    timeout: Duration,
    printer: &Printer,
) -> Result<(), NodeError> {
    let program = engine.engine.program();
    let mut follower = Command::new(&engine.path)
        .args(["logs", "--follow", CONTAINER_NAME])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| spawn_error(program, "logs", source))?;
    // The engine writes the container's stdout and stderr to its own stdout and stderr: read both.
    let mut stdout = follower
        .stdout
        .take()
        .map(|out| BufReader::new(out).lines());
    let mut stderr = follower
        .stderr
        .take()
        .map(|err| BufReader::new(err).lines());
    let mut tail: VecDeque<String> = VecDeque::with_capacity(TAIL_LINES);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);

    loop {
        let line = tokio::select! {
            line = next_line(&mut stdout), if stdout.is_some() => line,
            line = next_line(&mut stderr), if stderr.is_some() => line,
            () = &mut deadline => {
                let _ = follower.kill().await;
                return Err(NodeError::StartupTimeout { timeout, tail: LogTail(tail.into()) });
            }
        };
        if let Some(line) = line {
            printer.say(&line);
            if line.trim_end_matches('\r') == STARTED_LINE {
                let _ = follower.kill().await;
                return Ok(());
            }
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        if stdout.is_none() && stderr.is_none() {
            let _ = follower.wait().await;
            return Err(NodeError::ContainerExited {
                tail: LogTail(tail.into()),
            });
        }
    }
}

/// The next line of a stream; at its end (or on a read error) the stream is dropped.
async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    stream: &mut Option<tokio::io::Lines<R>>,
) -> Option<String> {
    let lines = stream.as_mut()?;
    match lines.next_line().await {
        Ok(Some(line)) => Some(line),
        Ok(None) | Err(_) => {
            *stream = None;
            None
        }
    }
}
