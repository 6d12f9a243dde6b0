//! `exec` and `helm` actions: run a program with exactly the argv the plan shows.
//!
//! No shell is involved unless the argv names one, so what the reviewer read is what runs. The child
//! inherits netctl's environment plus the step's `env`, gets no stdin, and is killed when its timeout
//! passes. Output is captured (bounded) for the step's registered output; displays of the command line
//! redact secret-looking values. In dry-run nothing is started: the transcript shows the command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::{Context, Held, Outcome, Perform, Performed, RunMode};
use crate::errors::Hint;
use crate::plan::Action;
use crate::plan::action::{Exec, Helm, HelmRelease};
use crate::redaction::{REDACTED, command_line};

/// At most this much of each output stream is kept.
const OUTPUT_LIMIT: usize = 64 * 1024;

impl Perform for Helm {
    async fn perform(&self, _: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let tracking = context.child_tracking.as_ref();
        let env = BTreeMap::new();
        let Some(release) = &self.record_revision else {
            return Ok(run(&self.argv(), &env, self.timeout.0, mode, tracking).await?);
        };
        if mode == RunMode::DryRun {
            let mut outcome = run(&self.argv(), &env, self.timeout.0, mode, tracking).await?;
            outcome.transcript.insert(
                0,
                format!(
                    "would first record the deployed revision: {}",
                    command_line(&release.history_argv(), &env)
                ),
            );
            return Ok(outcome);
        }
        let revision = deployed_revision(release, self.timeout.0).await?;
        let mut outcome = run(&self.argv(), &env, self.timeout.0, mode, tracking).await?;
        outcome.summary = format!(
            "{} (release `{}` was at revision {revision})",
            outcome.summary, release.release
        );
        if let Some(output) = outcome.output.as_mut() {
            output["revision_before"] = serde_json::json!(revision);
        }
        Ok(outcome)
    }

    /// A program may do anything.
    fn is_idempotent(&self, _: &Action) -> bool {
        false
    }
}

/// `exec`; as a postcondition, the program exits 0.
impl Perform for Exec {
    async fn perform(&self, _: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let tracking = context.child_tracking.as_ref();
        Ok(run(&self.command, &self.env, self.timeout.0, mode, tracking).await?)
    }

    async fn holds(&self, _: &Action, _: &Context<'_>) -> Held {
        let (code, _, _) = run_status(&self.command, &self.env, self.timeout.0, None).await?;
        Ok(code == Some(0))
    }

    /// A program may do anything.
    fn is_idempotent(&self, _: &Action) -> bool {
        false
    }
}

/// The revision of `release` Helm lists last (`helm history --max 1 -o json`: a JSON array of
/// `{revision, updated, status, chart, app_version, description}`).
async fn deployed_revision(release: &HelmRelease, timeout: Duration) -> Result<u64, ProcessError> {
    let argv = release.history_argv();
    let output = run_captured(&argv, &BTreeMap::new(), timeout, None).await?;
    let stdout = output["stdout"].as_str().unwrap_or_default();
    serde_json::from_str::<Vec<serde_json::Value>>(stdout)
        .ok()
        .and_then(|entries| entries.last()?.get("revision")?.as_u64())
        .ok_or_else(|| ProcessError::Failed {
            program: "helm".to_string(),
            status: format!(
                "`helm history {}` printed no revision (`{}`)",
                release.release,
                stdout.trim().chars().take(200).collect::<String>()
            ),
            stderr: String::new(),
        })
}

/// Why a program step failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{program}` did not finish within {seconds}s and was killed")]
    Timeout { program: String, seconds: u64 },
    #[error(
        "`{program}` has a redacted secret on its command line, and plans keep no secrets to run it with"
    )]
    RedactedArgument { program: String },
    #[error("`{program}` failed with {status}{}", stderr_tail(stderr))]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
}

impl Hint for ProcessError {
    fn hint(&self) -> Option<String> {
        match self {
            ProcessError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Some("install the program or give its full path in the runbook".to_string())
            }
            ProcessError::RedactedArgument { .. } => Some(
                "pass the secret through the environment instead: the program inherits netctl's, and the plan keeps only the variable's name".to_string(),
            ),
            ProcessError::Timeout { .. } => {
                Some("raise the step's `timeout`, or look at why the program hangs".to_string())
            }
            _ => None,
        }
    }
}

fn stderr_tail(stderr: &str) -> String {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        return String::new();
    }
    let last: Vec<&str> = trimmed.lines().rev().take(3).collect();
    let lines: Vec<&str> = last.into_iter().rev().collect();
    format!(": {}", lines.join(" / "))
}

fn truncate(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(OUTPUT_LIMIT)]);
    text.into_owned()
}

/// Where a running step's child process is recorded (`{step, pid, program}`), so that a resume after
/// netctl itself was killed can tell that the orphaned program is still running. A SIGKILLed netctl
/// cannot take its child down with it, and running the step again beside the orphan would apply its
/// effect twice.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChildRecord {
    pub step: String,
    pub pid: u32,
    pub program: String,
}

/// Where [`ChildRecord`]s are written: the file, and the step the record names.
#[derive(Debug, Clone)]
pub struct ChildTracking {
    pub file: PathBuf,
    pub step: String,
}

impl ChildRecord {
    /// Reads the record left in `file`, if any.
    pub fn read(file: &Path) -> Option<ChildRecord> {
        serde_json::from_slice(&std::fs::read(file).ok()?).ok()
    }

    /// Whether the recorded process still runs the recorded program (a recycled pid does not).
    pub fn is_alive(&self) -> bool {
        let Ok(command_line) = std::fs::read(format!("/proc/{}/cmdline", self.pid)) else {
            return false;
        };
        let argv0 = command_line
            .split(|byte| *byte == 0)
            .next()
            .unwrap_or_default();
        let program = Path::new(&self.program);
        let running = Path::new(std::str::from_utf8(argv0).unwrap_or_default());
        running == program || running.file_name() == program.file_name()
    }
}

/// Runs `argv` (or shows it, in dry-run).
pub async fn run(
    argv: &[String],
    env: &BTreeMap<String, String>,
    timeout: Duration,
    mode: RunMode,
    tracking: Option<&ChildTracking>,
) -> Result<Outcome, ProcessError> {
    let shown = command_line(argv, env);
    if mode == RunMode::DryRun {
        return Ok(Outcome {
            summary: format!("would run {shown}"),
            transcript: vec![format!(
                "would run: {shown} (timeout {})",
                humantime::format_duration(timeout)
            )],
            output: None,
        });
    }
    let output = run_captured(argv, env, timeout, tracking).await?;
    Ok(Outcome {
        summary: format!("ran {shown}"),
        transcript: vec![format!("ran: {shown}")],
        output: Some(output),
    })
}

/// Runs `argv` and returns `{exit_code, stdout, stderr}`; a non-zero exit is an error.
async fn run_captured(
    argv: &[String],
    env: &BTreeMap<String, String>,
    timeout: Duration,
    tracking: Option<&ChildTracking>,
) -> Result<serde_json::Value, ProcessError> {
    let (exit_code, stdout, stderr) = run_status(argv, env, timeout, tracking).await?;
    if exit_code != Some(0) {
        return Err(ProcessError::Failed {
            program: argv[0].clone(),
            status: match exit_code {
                Some(code) => format!("exit code {code}"),
                None => "a signal".to_string(),
            },
            stderr,
        });
    }
    Ok(serde_json::json!({ "exit_code": 0, "stdout": stdout, "stderr": stderr }))
}

/// Runs `argv` and returns its exit code (None when killed by a signal) and output.
pub async fn run_status(
    argv: &[String],
    env: &BTreeMap<String, String>,
    timeout: Duration,
    tracking: Option<&ChildTracking>,
) -> Result<(Option<i32>, String, String), ProcessError> {
    let program = argv[0].clone();
    // A redacted value was never kept (see `redaction.rs`): on a command line there is nothing to
    // run with; in the environment the program inherits it from netctl's own.
    if argv.iter().any(|argument| argument.contains(REDACTED)) {
        return Err(ProcessError::RedactedArgument { program });
    }
    let child = Command::new(&program)
        .args(&argv[1..])
        .envs(env.iter().filter(|(_, value)| *value != REDACTED))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| ProcessError::Spawn {
            program: program.clone(),
            source,
        })?;
    if let (Some(tracking), Some(pid)) = (tracking, child.id()) {
        let record = ChildRecord {
            step: tracking.step.clone(),
            pid,
            program: program.clone(),
        };
        // Best effort: without the record a resume cannot warn about an orphan, nothing worse.
        if let Ok(bytes) = serde_json::to_vec(&record) {
            let _ = crate::exec::checkpoint::write_atomically(&tracking.file, &bytes);
        }
    }
    let waited = tokio::time::timeout(timeout, child.wait_with_output()).await;
    if let Some(tracking) = tracking {
        let _ = std::fs::remove_file(&tracking.file);
    }
    let output = match waited {
        Ok(result) => result.map_err(|source| ProcessError::Spawn {
            program: program.clone(),
            source,
        })?,
        // Dropping the future drops the child, which kills it (`kill_on_drop`).
        Err(_) => {
            return Err(ProcessError::Timeout {
                program,
                seconds: timeout.as_secs(),
            });
        }
    };
    Ok((
        output.status.code(),
        truncate(&output.stdout),
        truncate(&output.stderr),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failing_program_reports_its_exit_code_and_stderr() {
        let argv: Vec<String> = ["sh", "-c", "echo boom >&2; exit 3"]
            .map(String::from)
            .to_vec();
        let error = run(
            &argv,
            &BTreeMap::new(),
            Duration::from_secs(5),
            RunMode::Execute,
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(error.to_string(), "`sh` failed with exit code 3: boom");
    }

    #[tokio::test]
    async fn a_slow_program_is_killed_at_its_timeout() {
        let argv: Vec<String> = ["sleep", "5"].map(String::from).to_vec();
        let error = run(
            &argv,
            &BTreeMap::new(),
            Duration::from_millis(100),
            RunMode::Execute,
            None,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, ProcessError::Timeout { .. }));
    }
}
