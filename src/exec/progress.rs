//! Progress on stderr: a bar with the current step on a terminal, one plain line per event otherwise.
//!
//! The bar counts the running step (`[3/5]` while step 3 runs). A wait inside a step (a rollout, a
//! resource to appear) reports through [`WaitReporter`]: on the bar its count replaces the step's
//! message ("calico-node 7/9 ready"); in plain lines it prints when the count changes and at least
//! every `interval` (30 s unless `--progress-interval` says otherwise), so a log shows the run is
//! alive; outside a run (one-step commands) it warns when the count changes, as before.
//!
//! Plain lines are for logs and CI (and are what the tests snapshot): `[n/m] step-id: what`, then a
//! result line. Everything is said through the run's [`Printer`]: the bar only where the printer
//! can draw one (stderr a terminal, not `-q`), colour where it has colour (never with `NO_COLOR`),
//! the plain lines as its talk (so `-q` silences them). Progress never goes to stdout, which
//! carries data (the dry-run transcript, `upgrade status`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::output::Printer;

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

/// The step running now, where waits report.
#[derive(Clone)]
struct Running {
    step: String,
    number: usize,
}

struct Shared {
    printer: Printer,
    mode: ProgressMode,
    total: usize,
    bar: Option<ProgressBar>,
    interval: Duration,
    running: Mutex<Option<Running>>,
}

/// Reports a run's progress. Clones report to the same display (the actions of a step hold one).
#[derive(Clone)]
pub struct Progress {
    shared: Arc<Shared>,
}

impl Progress {
    /// Progress of a run of `total` steps, `already_done` of them done before (a resume), with
    /// plain lines during a wait at least every `interval`.
    pub fn new(
        printer: &Printer,
        mode: ProgressMode,
        total: usize,
        already_done: usize,
        interval: Duration,
    ) -> Progress {
        let bar = match mode {
            ProgressMode::Bar => printer.start_bar(total as u64),
            ProgressMode::Lines | ProgressMode::Silent => None,
        };
        // Where no bar can be drawn (not a terminal, `TERM=dumb`, `-q`), plain lines are better
        // than silence; `-q` silences them in turn.
        let mode = match (mode, &bar) {
            (ProgressMode::Bar, None) => ProgressMode::Lines,
            (other, _) => other,
        };
        if let Some(bar) = &bar {
            let template = if printer.color() {
                "{spinner:.cyan} [{pos}/{len}] {wide_msg} {elapsed:.dim}"
            } else {
                "{spinner} [{pos}/{len}] {wide_msg} {elapsed}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar.set_position(already_done as u64);
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        Progress {
            shared: Arc::new(Shared {
                printer: printer.clone(),
                mode,
                total,
                bar,
                interval,
                running: Mutex::new(None),
            }),
        }
    }

    /// No progress display: one-step commands print their own result; their waits warn.
    pub fn silent(printer: &Printer) -> Progress {
        Progress::new(printer, ProgressMode::Silent, 0, 0, DEFAULT_INTERVAL)
    }

    /// The printer progress talks through.
    pub fn printer(&self) -> &Printer {
        &self.shared.printer
    }

    fn line(&self, text: &str) {
        if self.shared.mode != ProgressMode::Silent {
            // Above the bar when there is one (the printer knows).
            self.shared.printer.say(text);
        }
    }

    fn running(&self) -> Option<Running> {
        self.set_running_with(|running| running.clone())
    }

    fn set_running_with<R>(&self, change: impl FnOnce(&mut Option<Running>) -> R) -> R {
        let mut running = self
            .shared
            .running
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        change(&mut running)
    }

    /// A step begins.
    pub fn step_started(&self, number: usize, id: &str, description: &str) {
        if let Some(bar) = &self.shared.bar {
            bar.set_position(number as u64);
            bar.set_message(format!("{id}: {description}"));
        }
        if self.shared.mode != ProgressMode::Silent {
            self.set_running_with(|running| {
                *running = Some(Running {
                    step: id.to_string(),
                    number,
                })
            });
        }
        if self.shared.bar.is_none() {
            self.line(&format!(
                "[{number}/{}] {id}: {description}",
                self.shared.total
            ));
        }
    }

    /// A step ended; `outcome` is a short word or phrase (`succeeded`, `failed: ...`).
    pub fn step_finished(&self, number: usize, id: &str, outcome: &str, elapsed: Duration) {
        let text = format!(
            "[{number}/{}] {id}: {outcome} ({})",
            self.shared.total,
            format_elapsed(elapsed)
        );
        self.line(&text);
        if let Some(bar) = &self.shared.bar {
            bar.set_position(number as u64);
        }
        self.set_running_with(|running| *running = None);
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

    /// Removes the bar before the final message.
    pub fn finish(&self) {
        self.set_running_with(|running| *running = None);
        if self.shared.bar.is_some() {
            self.shared.printer.finish_bar();
        }
    }
}

/// Reports what one wait is waiting for, each time it looks (see the module comment).
pub struct WaitReporter {
    progress: Progress,
    what: String,
    last: String,
    last_line: Option<Instant>,
    started: Instant,
}

impl WaitReporter {
    /// `what` names the wait: `daemonsets/calico-node in kube-system`.
    pub fn new(progress: &Progress, what: impl Into<String>) -> WaitReporter {
        WaitReporter {
            progress: progress.clone(),
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
        let shared = &self.progress.shared;
        match (self.progress.running(), &shared.bar) {
            (Some(Running { step, .. }), Some(bar)) => {
                bar.set_message(format!("{step}: waiting for {}: {report}", self.what))
            }
            (Some(Running { step, number }), None) => {
                let due = self
                    .last_line
                    .is_none_or(|printed| printed.elapsed() >= shared.interval);
                if changed || due {
                    self.last_line = Some(Instant::now());
                    self.progress.line(&format!(
                        "[{number}/{}] {step}: waiting for {}: {report} ({})",
                        shared.total,
                        self.what,
                        format_elapsed(self.started.elapsed())
                    ));
                }
            }
            (None, _) if changed => {
                shared
                    .printer
                    .warn(format!("waiting for {}: {report}", self.what));
            }
            (None, _) => {}
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
