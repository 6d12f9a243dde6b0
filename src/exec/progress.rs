//! Progress on stderr: a bar with the current step on a terminal, one plain line per event otherwise.
//!
//! The bar counts the running step (`[3/5]` while step 3 runs). A wait inside a step (a rollout, a
//! resource to appear) reports through [`WaitReporter`]: on the bar its count replaces the step's
//! message ("calico-node 7/9 ready"); in plain lines it prints when the count changes and at least
//! every `interval` (30 s unless `--progress-interval` says otherwise), so a log shows the run is
//! alive; outside a run (one-step commands) it warns when the count changes, as before.
//!
//! Plain lines are for logs and CI (and are what the tests snapshot): `[n/m] step-id: what`, then a
//! result line. The bar (indicatif) is used only when stderr is a terminal; colour follows
//! `terminal::color()` (which honours `NO_COLOR`). Progress never goes to stdout, which carries
//! data (the dry-run transcript, `upgrade status`).

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live bar on a terminal.
    Bar,
    /// One line per event.
    Lines,
    /// Nothing (one-step commands print their own result).
    Silent,
}

/// How often a wait prints a line without a terminal, unless told otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// The step running now, where waits report (one run per process).
#[derive(Clone)]
struct Running {
    step: String,
    number: usize,
    total: usize,
    bar: Option<ProgressBar>,
    lines: bool,
    interval: Duration,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

fn running() -> Option<Running> {
    RUNNING
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .clone()
}

fn set_running(value: Option<Running>) {
    *RUNNING.lock().unwrap_or_else(|poison| poison.into_inner()) = value;
}

/// Reports what one wait is waiting for, each time it looks (see the module comment).
pub struct WaitReporter {
    what: String,
    last: String,
    last_line: Option<Instant>,
    started: Instant,
}

impl WaitReporter {
    /// `what` names the wait: `daemonsets/calico-node in kube-system`.
    pub fn new(what: impl Into<String>) -> WaitReporter {
        WaitReporter {
            what: what.into(),
            last: String::new(),
            last_line: None,
            started: Instant::now(),
        }
    }

    /// The state seen now, e.g. `7/9 ready`.
    pub fn report(&mut self, report: &str) {
        let changed = report != self.last;
        self.last = report.to_string();
        match running() {
            Some(Running {
                bar: Some(bar),
                step,
                ..
            }) => bar.set_message(format!("{step}: waiting for {}: {report}", self.what)),
            Some(Running {
                lines: true,
                step,
                number,
                total,
                interval,
                ..
            }) => {
                let due = self
                    .last_line
                    .is_none_or(|printed| printed.elapsed() >= interval);
                if changed || due {
                    self.last_line = Some(Instant::now());
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "[{number}/{total}] {step}: waiting for {}: {report} ({})",
                        self.what,
                        format_elapsed(self.started.elapsed())
                    );
                }
            }
            _ if changed => {
                crate::terminal::warn(format!("waiting for {}: {report}", self.what));
            }
            _ => {}
        }
    }
}

/// Reports a run's progress.
pub struct Progress {
    mode: ProgressMode,
    total: usize,
    bar: Option<ProgressBar>,
    interval: Duration,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: usize, already_done: usize) -> Progress {
        Progress::with_interval(mode, total, already_done, DEFAULT_INTERVAL)
    }

    /// As [`Progress::new`], with plain lines during a wait at least every `interval`.
    pub fn with_interval(
        mode: ProgressMode,
        total: usize,
        already_done: usize,
        interval: Duration,
    ) -> Progress {
        let target = ProgressDrawTarget::stderr();
        // indicatif draws nothing on a terminal it cannot use (e.g. `TERM=dumb` or unset); plain
        // lines are better than silence there.
        let mode = match mode {
            ProgressMode::Bar if target.is_hidden() => ProgressMode::Lines,
            other => other,
        };
        let bar = match mode {
            ProgressMode::Bar => {
                let bar = ProgressBar::with_draw_target(Some(total as u64), target);
                let template = if crate::terminal::color() {
                    "{spinner:.cyan} [{pos}/{len}] {wide_msg} {elapsed:.dim}"
                } else {
                    "{spinner} [{pos}/{len}] {wide_msg} {elapsed}"
                };
                if let Ok(style) = ProgressStyle::with_template(template) {
                    bar.set_style(style);
                }
                bar.set_position(already_done as u64);
                bar.enable_steady_tick(Duration::from_millis(120));
                Some(bar)
            }
            ProgressMode::Lines | ProgressMode::Silent => None,
        };
        Progress {
            mode,
            total,
            bar,
            interval,
        }
    }

    fn line(&self, text: &str) {
        match (&self.bar, self.mode) {
            (Some(bar), _) => bar.println(text),
            (None, ProgressMode::Lines) => {
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            }
            _ => {}
        }
    }

    /// A step begins.
    pub fn step_started(&self, number: usize, id: &str, description: &str) {
        if let Some(bar) = &self.bar {
            bar.set_position(number as u64);
            bar.set_message(format!("{id}: {description}"));
        }
        if self.mode != ProgressMode::Silent {
            set_running(Some(Running {
                step: id.to_string(),
                number,
                total: self.total,
                bar: self.bar.clone(),
                lines: self.mode == ProgressMode::Lines,
                interval: self.interval,
            }));
        }
        if self.bar.is_none() {
            self.line(&format!("[{number}/{}] {id}: {description}", self.total));
        }
    }

    /// A step ended; `outcome` is a short word or phrase (`succeeded`, `failed: ...`).
    pub fn step_finished(&self, number: usize, id: &str, outcome: &str, elapsed: Duration) {
        let text = format!(
            "[{number}/{}] {id}: {outcome} ({})",
            self.total,
            format_elapsed(elapsed)
        );
        self.line(&text);
        if let Some(bar) = &self.bar {
            bar.set_position(number as u64);
        }
        set_running(None);
    }

    /// A waiting period with a count, e.g. a retry.
    pub fn waiting(&self, id: &str, what: &str, attempt: u32, attempts: u32, delay: Duration) {
        self.line(&format!(
            "      {id}: {what}; attempt {attempt} of {attempts} in {}",
            format_elapsed(delay)
        ));
    }

    /// Anything else worth a line (drift, recovered steps).
    pub fn note(&self, text: &str) {
        self.line(text);
    }

    /// Runs `work` (e.g. a question on the terminal) with the bar hidden.
    pub fn suspend<R>(&self, work: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(work),
            None => work(),
        }
    }

    /// Removes the bar before the final message.
    pub fn finish(&self) {
        set_running(None);
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `0.4s`, `12s`, `3m 5s`.
pub fn format_elapsed(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    if seconds < 10 {
        format!("{:.1}s", elapsed.as_secs_f64())
    } else if seconds < 60 {
        format!("{seconds}s")
    } else {
        format!("{}m {}s", seconds / 60, seconds % 60)
    }
}
