//! Progress on stderr: a bar with the current step on a terminal, one plain line per event otherwise.
//!
//! Plain lines are for logs and CI (and are what the tests snapshot): `[n/m] step-id: what`, then a
//! result line. The bar (indicatif) is used only when stderr is a terminal; colour follows
//! `terminal::color()` (which honours `NO_COLOR`). Progress never goes to stdout, which carries
//! data (the dry-run transcript, `upgrade status`).

use std::io::Write;
use std::time::Duration;

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

/// Reports a run's progress.
pub struct Progress {
    mode: ProgressMode,
    total: usize,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: usize, already_done: usize) -> Progress {
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
        Progress { mode, total, bar }
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
            bar.set_message(format!("{id}: {description}"));
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
            bar.inc(1);
        }
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
