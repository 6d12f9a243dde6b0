//! Notification hooks for runs nobody watches: `--on-gate CMD` when a run reaches a human gate,
//! `--on-failure CMD` when it fails, `--on-finish CMD` whenever it ends (as Argo's exit handlers).
//!
//! A hook is a shell command line (`sh -c CMD`, so it may be `curl … && logger …`). It gets the run's
//! state in its environment — `NETCTL_EVENT` (`gate`, `failure`, `finish`), `NETCTL_STEP`,
//! `NETCTL_STATE_DIR`, `NETCTL_EXIT_CODE` (the code netctl ends with; on `gate` only when the run
//! stops there), `NETCTL_RESULT`, `NETCTL_MESSAGE`, `NETCTL_RUN_ID`, `NETCTL_PLAN_DIGEST`,
//! `NETCTL_PROCEDURE`, `NETCTL_FROM`, `NETCTL_TO` — on top of netctl's own environment without what
//! opens the datastore (`config::environment_without_datastore_access`): secrets never reach it.
//! Its standard output goes to netctl's stderr (stdout is data), its input is empty, and it has a
//! time limit (`--hook-timeout`), after which it is killed.
//!
//! A hook never changes the run: its failure (an exit status, a timeout, a missing shell) is a
//! warning and a `hook-failed` journal entry, never an error. Neither the command line (it may carry
//! a webhook's token) nor the hook's output is journaled; the entry names the flag. A dry run runs
//! no hook.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::journal::{Journal, JournalEvent};
use super::lock::Holder;
use crate::output::Printer;
use crate::plan::Plan;

/// The hook commands of a run, and how long each may take.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub on_gate: Option<String>,
    pub on_failure: Option<String>,
    pub on_finish: Option<String>,
    pub timeout: Duration,
}

impl Hooks {
    pub fn is_empty(&self) -> bool {
        self.on_gate.is_none() && self.on_failure.is_none() && self.on_finish.is_none()
    }
}

/// What a hook is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    Gate,
    Failure,
    Finish,
}

impl HookEvent {
    fn name(self) -> &'static str {
        match self {
            HookEvent::Gate => "gate",
            HookEvent::Failure => "failure",
            HookEvent::Finish => "finish",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            HookEvent::Gate => "--on-gate",
            HookEvent::Failure => "--on-failure",
            HookEvent::Finish => "--on-finish",
        }
    }
}

/// One event as a hook sees it.
#[derive(Debug, Clone, Default)]
pub struct Notice {
    pub step: Option<String>,
    pub exit_code: Option<u8>,
    /// `succeeded`, `failed`, `waiting-at-gate`, `stopped-at-deadline`, `interrupted`.
    pub result: Option<&'static str>,
    /// One line: the gate's question, or the error.
    pub message: Option<String>,
}

/// The run a hook belongs to, once it is known.
#[derive(Debug, Clone, Default)]
struct RunFacts {
    run_id: Option<String>,
    plan_digest: Option<String>,
    procedure: Option<String>,
    from: Option<String>,
    to: Option<String>,
    /// The run's journal, once the run has begun (a run refused before it began has none).
    journal: Option<PathBuf>,
}

/// Runs a run's hooks, and journals what became of them once the run has a journal.
pub struct Notifier {
    hooks: Hooks,
    environment: BTreeMap<String, String>,
    state_dir: PathBuf,
    holder: Holder,
    run: Mutex<RunFacts>,
    /// The command's: a hook that failed is warned about through it.
    printer: Printer,
}

impl Notifier {
    /// `environment` is netctl's own without datastore access (see the file's comment).
    pub fn new(
        hooks: Hooks,
        environment: BTreeMap<String, String>,
        state_dir: &Path,
        holder: &Holder,
        printer: &Printer,
    ) -> Notifier {
        Notifier {
            hooks,
            environment,
            state_dir: state_dir.to_path_buf(),
            holder: holder.clone(),
            run: Mutex::new(RunFacts::default()),
            printer: printer.clone(),
        }
    }

    /// The plan the run follows (its procedure, releases and digest go to every hook).
    pub fn plan(&self, plan: &Plan) {
        let mut run = self
            .run
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        run.plan_digest = Some(plan.digest.clone());
        run.procedure = Some(plan.procedure.clone());
        run.from = Some(plan.from.to_string());
        run.to = Some(plan.to.to_string());
    }

    /// The run has begun and journals in `journal`.
    pub fn begun(&self, run_id: &str, journal: &Path) {
        let mut run = self
            .run
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        run.run_id = Some(run_id.to_string());
        run.journal = Some(journal.to_path_buf());
    }

    /// Runs the hook of `event`, if one is set; a failure is warned about and journaled.
    pub async fn notify(&self, event: HookEvent, notice: &Notice) {
        let command = match event {
            HookEvent::Gate => &self.hooks.on_gate,
            HookEvent::Failure => &self.hooks.on_failure,
            HookEvent::Finish => &self.hooks.on_finish,
        };
        let Some(command) = command else {
            return;
        };
        let facts = self
            .run
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let environment = self.hook_environment(event, notice, &facts);
        let outcome = run(command, &environment, self.hooks.timeout).await;
        if let Err(problem) = &outcome {
            self.printer.warn(format!(
                "the `{}` hook failed ({problem}); the run is not affected",
                event.flag()
            ));
        }
        self.journal(event, &facts, outcome);
    }

    fn hook_environment(
        &self,
        event: HookEvent,
        notice: &Notice,
        facts: &RunFacts,
    ) -> BTreeMap<String, String> {
        let mut environment = self.environment.clone();
        // A netctl run from a hook must not think it is the one being notified about.
        environment.retain(|name, _| !name.starts_with("NETCTL_"));
        let mut set = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                environment.insert(name.to_string(), value);
            }
        };
        set("NETCTL_EVENT", Some(event.name().to_string()));
        set("NETCTL_STEP", notice.step.clone());
        set(
            "NETCTL_STATE_DIR",
            Some(self.state_dir.display().to_string()),
        );
        set(
            "NETCTL_EXIT_CODE",
            notice.exit_code.map(|code| code.to_string()),
        );
        set("NETCTL_RESULT", notice.result.map(str::to_string));
        set(
            "NETCTL_MESSAGE",
            notice.message.as_ref().map(|message| one_line(message)),
        );
        set("NETCTL_RUN_ID", facts.run_id.clone());
        set("NETCTL_PLAN_DIGEST", facts.plan_digest.clone());
        set("NETCTL_PROCEDURE", facts.procedure.clone());
        set("NETCTL_FROM", facts.from.clone());
        set("NETCTL_TO", facts.to.clone());
        environment
    }

    /// A `hook-ran` or `hook-failed` entry in the run's journal, when the run has one.
    fn journal(&self, event: HookEvent, facts: &RunFacts, outcome: Result<(), String>) {
        let (Some(path), Some(run_id)) = (&facts.journal, &facts.run_id) else {
            return;
        };
        let digest = facts.plan_digest.clone().unwrap_or_default();
        let Ok(mut journal) = Journal::open(path, run_id, &digest, &self.holder) else {
            return;
        };
        let (kind, summary, error) = match outcome {
            Ok(()) => (
                JournalEvent::HookRan,
                format!("`{}` hook ran for `{}`", event.flag(), event.name()),
                None,
            ),
            Err(problem) => (
                JournalEvent::HookFailed,
                format!("`{}` hook failed for `{}`", event.flag(), event.name()),
                Some(problem),
            ),
        };
        let mut entry = journal.entry(kind);
        entry.summary = Some(summary);
        entry.error = error;
        if let Err(error) = journal.record(&entry) {
            self.printer.warn(error.to_string());
        }
    }
}

/// The message's first line, bounded (an environment variable is no place for a page).
fn one_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    match line.char_indices().nth(1024) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// Runs `command` with `sh -c` in exactly `environment`; `Err` says what went wrong.
async fn run(
    command: &str,
    environment: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<(), String> {
    let mut process = tokio::process::Command::new("sh");
    process
        .arg("-c")
        .arg(command)
        .env_clear()
        .envs(environment)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    // stdout is netctl's data: the hook's output goes to stderr with the rest of the talk.
    if let Ok(stderr) = std::os::fd::AsFd::as_fd(&std::io::stderr()).try_clone_to_owned() {
        process.stdout(std::process::Stdio::from(stderr));
    }
    let mut child = process
        .spawn()
        .map_err(|error| format!("cannot start `sh`: {error}"))?;
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(match status.code() {
            Some(code) => format!("exited with {code}"),
            None => format!("ended by a signal ({status})"),
        }),
        Ok(Err(error)) => Err(format!("cannot wait for it: {error}")),
        Err(_) => {
            let _ = child.kill().await;
            Err(format!(
                "still running after {}; killed",
                humantime::format_duration(timeout)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notifier(hooks: Hooks, directory: &Path) -> Notifier {
        let holder = Holder {
            user: "ops".into(),
            host: "h".into(),
            pid: 1,
            started: "t".into(),
        };
        let environment = BTreeMap::from([
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            ("NETCTL_EVENT".to_string(), "stale".to_string()),
        ]);
        Notifier::new(hooks, environment, directory, &holder, &Printer::default())
    }

    #[tokio::test]
    async fn a_hook_sees_the_event_and_its_failure_is_journaled_not_raised() {
        let directory = tempfile::tempdir().unwrap();
        let seen = directory.path().join("seen");
        let hooks = Hooks {
            on_gate: Some(format!(
                "echo \"$NETCTL_EVENT $NETCTL_STEP $NETCTL_EXIT_CODE $NETCTL_RUN_ID\" > '{}'",
                seen.display()
            )),
            on_failure: Some("exit 7".to_string()),
            on_finish: Some("sleep 5".to_string()),
            timeout: Duration::from_millis(300),
        };
        let journal = directory.path().join("journal.jsonl");
        let notifier = notifier(hooks, directory.path());
        notifier.begun("run-1", &journal);
        let notice = Notice {
            step: Some("pre/gate".into()),
            exit_code: Some(3),
            ..Notice::default()
        };
        notifier.notify(HookEvent::Gate, &notice).await;
        assert_eq!(
            std::fs::read_to_string(&seen).unwrap(),
            "gate pre/gate 3 run-1\n"
        );
        notifier
            .notify(HookEvent::Failure, &Notice::default())
            .await;
        let started = std::time::Instant::now();
        notifier.notify(HookEvent::Finish, &Notice::default()).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "killed at its limit"
        );
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let events: Vec<(&str, &str)> = lines
            .iter()
            .map(|line| {
                (
                    line["event"].as_str().unwrap(),
                    line["error"].as_str().unwrap_or("-"),
                )
            })
            .collect();
        assert_eq!(
            events,
            [
                ("hook-ran", "-"),
                ("hook-failed", "exited with 7"),
                ("hook-failed", "still running after 300ms; killed"),
            ]
        );
        let text = std::fs::read_to_string(&journal).unwrap();
        assert!(
            !text.contains("exit 7"),
            "the command line is not journaled"
        );
    }
}
