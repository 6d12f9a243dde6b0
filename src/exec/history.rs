//! The runs of a state directory, read back from its journal: who ran what, when, from which
//! release to which, how it ended, how long it took and what each step did — for `upgrade history`,
//! `upgrade status RUN` and the time estimates of later runs (`estimate.rs`).
//!
//! The journal is read one line at a time and folded per run id (a run spans every process that
//! started or resumed it). How a run ended is the last event that ends a process's part of it:
//! `run-completed` (succeeded), `run-failed` or a step's `failed` (failed), `stopped-at-gate`
//! (waiting at a gate, or verification failed when the verification phase said so first),
//! `cancelled` (interrupted), `stopped-at-deadline`; none means the run is under way or its process
//! was killed. A rollback is a run of its own whose `run-started` names the run it goes back from
//! (`rolls_back`); once it completed, that run reads as rolled back. A line cut short by a kill is
//! counted, not fatal. This file writes nothing.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::checkpoint::{JOURNAL_FILE, StepState};
use super::journal::{JournalEntry, JournalEvent};
use crate::errors::Hint;

/// Every run a journal records, oldest first.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub directory: PathBuf,
    pub runs: Vec<RunHistory>,
    /// Lines that could not be read (1-based): a last line cut short by a kill, or damage.
    pub unreadable_lines: Vec<usize>,
}

/// One run, as its journal entries tell it.
#[derive(Debug, Clone, Serialize)]
pub struct RunHistory {
    pub run_id: String,
    pub user: String,
    pub host: String,
    pub started: String,
    /// The time of the run's last entry.
    pub finished: String,
    pub duration_seconds: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub procedure: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    pub plan_digest: String,
    /// How many steps the plan has, when the journal says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_steps: Option<usize>,
    /// The cluster's ClusterInformation `clusterGUID`, when the journal says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// For a rollback run: the run it goes back from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolls_back: Option<String>,
    /// The rollback run of this run, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackSummary>,
    #[serde(flatten)]
    pub result: RunResult,
    pub counts: StepCounts,
    /// How many processes worked on the run (the first, and each `--resume`).
    pub processes: usize,
    /// Each step the run reached, in the order it first did.
    #[serde(skip)]
    pub steps: Vec<StepHistory>,
    #[serde(skip)]
    step_index: HashMap<String, usize>,
}

/// The rollback of a run, as the forward run's history shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RollbackSummary {
    pub run_id: String,
    #[serde(flatten)]
    pub result: RunResult,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum RunResult {
    Succeeded,
    Failed {
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A completed rollback run went back from it.
    RolledBack {
        by: String,
    },
    WaitingAtGate {
        step: String,
    },
    VerificationFailed {
        step: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        what: Option<String>,
    },
    Interrupted {
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    StoppedAtDeadline {
        step: String,
    },
    /// No entry ended it: a process is working on it, or was killed.
    Unfinished,
}

impl RunResult {
    /// The result's name as `-o json` writes it.
    pub fn name(&self) -> &'static str {
        match self {
            RunResult::Succeeded => "succeeded",
            RunResult::Failed { .. } => "failed",
            RunResult::RolledBack { .. } => "rolled-back",
            RunResult::WaitingAtGate { .. } => "waiting-at-gate",
            RunResult::VerificationFailed { .. } => "verification-failed",
            RunResult::Interrupted { .. } => "interrupted",
            RunResult::StoppedAtDeadline { .. } => "stopped-at-deadline",
            RunResult::Unfinished => "unfinished",
        }
    }
}

impl std::fmt::Display for RunResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunResult::Succeeded => write!(f, "succeeded"),
            RunResult::Failed {
                step: Some(step), ..
            } => write!(f, "failed at `{step}`"),
            RunResult::Failed { step: None, .. } => write!(f, "failed"),
            RunResult::RolledBack { by } => write!(f, "rolled back (by run {})", short_id(by)),
            RunResult::WaitingAtGate { step } => write!(f, "waiting at gate `{step}`"),
            RunResult::VerificationFailed { step, .. } => {
                write!(f, "verification failed at `{step}`")
            }
            RunResult::Interrupted { .. } => write!(f, "interrupted"),
            RunResult::StoppedAtDeadline { step } => {
                write!(f, "stopped before `{step}`: window ended")
            }
            RunResult::Unfinished => write!(f, "unfinished (running, or killed)"),
        }
    }
}

/// How many steps ran, were skipped, failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StepCounts {
    pub run: usize,
    pub skipped: usize,
    pub failed: usize,
}

/// One step of a run, as its journal entries tell it.
#[derive(Debug, Clone, Serialize)]
pub struct StepHistory {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// `running` when the last entry is its start (the run stopped in it).
    pub state: StepState,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long each successful attempt took.
    #[serde(skip)]
    pub succeeded_after: Vec<Duration>,
}

/// Why the history could not be read, or a run not found in it.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot read the journal `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no run `{given}` in the journal of `{}`", directory.display())]
    NotFound { given: String, directory: PathBuf },
    #[error("`{given}` names {} runs: {}", matches.len(), matches.join(", "))]
    Ambiguous { given: String, matches: Vec<String> },
}

impl Hint for HistoryError {
    fn hint(&self) -> Option<String> {
        match self {
            HistoryError::NotFound { .. } => Some(
                "`netctl upgrade history` lists the runs of this state directory (pass the run's own `--state-dir`)"
                    .to_string(),
            ),
            HistoryError::Ambiguous { .. } => {
                Some("give more characters of the run id".to_string())
            }
            HistoryError::Read { .. } => None,
        }
    }
}

/// The first eight characters of a run id, as the history table shows it.
pub fn short_id(run_id: &str) -> &str {
    run_id.get(..8).unwrap_or(run_id)
}

impl History {
    /// Reads the journal of `directory`; an absent journal is an empty history.
    pub fn read(directory: &Path) -> Result<History, HistoryError> {
        let path = directory.join(JOURNAL_FILE);
        let mut history = History {
            directory: directory.to_path_buf(),
            ..History::default()
        };
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(history),
            Err(source) => return Err(HistoryError::Read { path, source }),
        };
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|source| HistoryError::Read {
                path: path.clone(),
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let Ok(entry) = serde_json::from_str::<JournalEntry>(&line) else {
                history.unreadable_lines.push(number + 1);
                continue;
            };
            let index = *by_id.entry(entry.run_id.clone()).or_insert_with(|| {
                history.runs.push(RunHistory::first(&entry));
                history.runs.len() - 1
            });
            history.runs[index].add(&entry);
        }
        history.settle_rollbacks();
        Ok(history)
    }

    /// A rollback run that completed makes the run it names rolled back; either way the forward
    /// run shows its rollback.
    fn settle_rollbacks(&mut self) {
        let rollbacks: Vec<(String, String, RunResult)> = self
            .runs
            .iter()
            .filter_map(|run| {
                let target = run.rolls_back.clone()?;
                Some((target, run.run_id.clone(), run.result.clone()))
            })
            .collect();
        for (target, by, result) in rollbacks {
            let Some(forward) = self.runs.iter_mut().find(|run| run.run_id == target) else {
                continue;
            };
            if result == RunResult::Succeeded {
                forward.result = RunResult::RolledBack { by: by.clone() };
            }
            forward.rollback = Some(RollbackSummary { run_id: by, result });
        }
    }

    /// The runs a listing shows, newest first: rollback runs are shown with the run they go back
    /// from, not as runs of their own.
    pub fn listed(&self) -> impl Iterator<Item = &RunHistory> {
        self.runs
            .iter()
            .rev()
            .filter(|run| run.rolls_back.is_none())
    }

    /// The run whose id is `given` or starts with it.
    pub fn find(&self, given: &str) -> Result<&RunHistory, HistoryError> {
        if let Some(run) = self.runs.iter().find(|run| run.run_id == given) {
            return Ok(run);
        }
        let matches: Vec<&RunHistory> = self
            .runs
            .iter()
            .filter(|run| !given.is_empty() && run.run_id.starts_with(given))
            .collect();
        match matches.as_slice() {
            [one] => Ok(one),
            [] => Err(HistoryError::NotFound {
                given: given.to_string(),
                directory: self.directory.clone(),
            }),
            many => Err(HistoryError::Ambiguous {
                given: given.to_string(),
                matches: many.iter().map(|run| run.run_id.clone()).collect(),
            }),
        }
    }

    /// How long each step took when it succeeded in the earlier runs of `cluster` (runs that
    /// recorded no cluster count as the same unknown cluster), oldest first, by step id.
    pub fn step_durations(&self, cluster: Option<&str>) -> HashMap<&str, Vec<Duration>> {
        let mut durations: HashMap<&str, Vec<Duration>> = HashMap::new();
        for run in self
            .runs
            .iter()
            .filter(|run| run.cluster.as_deref() == cluster)
        {
            for step in &run.steps {
                durations
                    .entry(step.id.as_str())
                    .or_default()
                    .extend(step.succeeded_after.iter().copied());
            }
        }
        durations
    }

    /// How many earlier runs of `cluster` the journal holds.
    pub fn runs_of(&self, cluster: Option<&str>) -> usize {
        self.runs
            .iter()
            .filter(|run| run.cluster.as_deref() == cluster)
            .count()
    }
}

impl StepHistory {
    /// A step the run has not reached (or not yet), in `state`.
    pub fn new(id: &str, action: Option<String>, state: StepState) -> StepHistory {
        StepHistory {
            id: id.to_string(),
            action,
            state,
            attempts: 0,
            started_at: None,
            finished_at: None,
            summary: None,
            error: None,
            succeeded_after: Vec::new(),
        }
    }
}

impl RunHistory {
    fn first(entry: &JournalEntry) -> RunHistory {
        RunHistory {
            run_id: entry.run_id.clone(),
            user: entry.user.clone(),
            host: entry.host.clone(),
            started: entry.time.clone(),
            finished: entry.time.clone(),
            duration_seconds: 0,
            procedure: None,
            from: None,
            to: None,
            plan_digest: entry.plan_digest.clone(),
            plan_steps: None,
            cluster: None,
            rolls_back: None,
            rollback: None,
            result: RunResult::Unfinished,
            counts: StepCounts::default(),
            processes: 0,
            steps: Vec::new(),
            step_index: HashMap::new(),
        }
    }

    fn add(&mut self, entry: &JournalEntry) {
        self.finished = entry.time.clone();
        self.duration_seconds = seconds_between(&self.started, &self.finished);
        match entry.event {
            JournalEvent::RunStarted | JournalEvent::RunResumed => {
                self.processes += 1;
                self.procedure = entry.procedure.clone().or(self.procedure.take());
                self.from = entry.from.clone().or(self.from.take());
                self.to = entry.to.clone().or(self.to.take());
                self.plan_steps = entry.steps.or(self.plan_steps);
                self.cluster = entry.cluster.clone().or(self.cluster.take());
                self.rolls_back = entry.rolls_back.clone().or(self.rolls_back.take());
                // A resumed run is under way again, whatever stopped it before.
                self.result = RunResult::Unfinished;
            }
            JournalEvent::RunCompleted => self.result = RunResult::Succeeded,
            JournalEvent::RunFailed => {
                self.result = RunResult::Failed {
                    step: entry.step.clone(),
                    error: entry.error.clone(),
                }
            }
            JournalEvent::StoppedAtGate => {
                let step = entry.step.clone().unwrap_or_default();
                // The verification phase says what failed, then stops at its gate.
                if !matches!(&self.result, RunResult::VerificationFailed { step: failed, .. } if *failed == step)
                {
                    self.result = RunResult::WaitingAtGate { step };
                }
            }
            JournalEvent::VerificationFailed => {
                self.result = RunResult::VerificationFailed {
                    step: entry.step.clone().unwrap_or_default(),
                    what: entry.summary.clone(),
                }
            }
            JournalEvent::Cancelled => {
                self.result = RunResult::Interrupted {
                    detail: entry.summary.clone(),
                }
            }
            JournalEvent::StoppedAtDeadline => {
                self.result = RunResult::StoppedAtDeadline {
                    step: entry.step.clone().unwrap_or_default(),
                }
            }
            _ => {}
        }
        if let Some(step) = &entry.step {
            self.add_step_event(step, entry);
        }
    }

    fn add_step_event(&mut self, id: &str, entry: &JournalEntry) {
        let state = match entry.event {
            JournalEvent::Started => StepState::Running,
            JournalEvent::Succeeded | JournalEvent::Recovered => StepState::Succeeded,
            JournalEvent::Failed => StepState::Failed,
            JournalEvent::Skipped => StepState::Skipped,
            _ => return,
        };
        let index = match self.step_index.get(id) {
            Some(index) => *index,
            None => {
                self.steps.push(StepHistory::new(id, None, state));
                self.step_index.insert(id.to_string(), self.steps.len() - 1);
                self.steps.len() - 1
            }
        };
        let step = &mut self.steps[index];
        step.state = state;
        if entry.action.is_some() {
            step.action = entry.action.clone();
        }
        match entry.event {
            JournalEvent::Started => {
                step.attempts += 1;
                step.started_at = Some(entry.time.clone());
                step.finished_at = None;
                step.error = None;
            }
            _ => {
                step.finished_at = Some(entry.time.clone());
                if entry.event != JournalEvent::Failed {
                    step.summary = entry.summary.clone().or(step.summary.take());
                }
                step.error = entry.error.clone();
            }
        }
        if let (JournalEvent::Succeeded, Some(milliseconds)) = (entry.event, entry.duration_ms) {
            step.succeeded_after.push(Duration::from_millis(
                milliseconds.min(u64::MAX as u128) as u64
            ));
        }
        self.counts = count(&self.steps);
        // A step that failed for good (no later `run-failed` says otherwise) fails the run.
        if entry.event == JournalEvent::Failed {
            self.result = RunResult::Failed {
                step: Some(id.to_string()),
                error: entry.error.clone(),
            };
        }
    }
}

fn count(steps: &[StepHistory]) -> StepCounts {
    let mut counts = StepCounts::default();
    for step in steps {
        match step.state {
            StepState::Succeeded => counts.run += 1,
            StepState::Skipped => counts.skipped += 1,
            StepState::Failed => counts.failed += 1,
            StepState::Pending | StepState::Running => {}
        }
    }
    counts
}

fn parse_time(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok()
}

fn seconds_between(from: &str, to: &str) -> u64 {
    match (parse_time(from), parse_time(to)) {
        (Some(from), Some(to)) => to.duration_since(from).map_or(0, |span| span.as_secs()),
        _ => 0,
    }
}

/// A duration as the history table shows it: `42s`, `3m05s`, `1h02m`.
pub fn short_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, (seconds % 3600) / 60),
    }
}

#[cfg(test)]
mod tests;
