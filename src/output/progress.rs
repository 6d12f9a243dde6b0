//! A counter of items for commands that collect many (`cluster diags`, `node diags`), through the
//! command's [`Printer`]: its bar on a terminal, otherwise a line at most every [`LINE_INTERVAL`]
//! so a log shows the command is alive; nothing with `-q`, nothing on stdout. The total can grow
//! as items are found.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::Printer;

/// How often a line is printed when stderr is not a terminal.
pub const LINE_INTERVAL: Duration = Duration::from_secs(10);

/// Items done of a total, for the person waiting (see the module comment).
pub struct Progress {
    printer: Printer,
    what: String,
    bar: Option<ProgressBar>,
    lines: Mutex<Lines>,
}

struct Lines {
    done: u64,
    total: u64,
    last: Instant,
}

impl Progress {
    /// A counter of `total` items (more may be added) described as `what` ("collecting").
    pub fn new(printer: &Printer, what: &str, total: u64) -> Progress {
        let bar = printer.start_bar(total).inspect(|bar| {
            let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(what.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
        });
        Progress {
            printer: printer.clone(),
            what: what.to_string(),
            bar,
            lines: Mutex::new(Lines {
                done: 0,
                total,
                last: Instant::now(),
            }),
        }
    }

    /// `more` items found to do.
    pub fn add(&self, more: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(more);
        }
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).total += more;
    }

    /// One item done; `message` names it on the bar.
    pub fn done(&self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.to_string());
            bar.inc(1);
            return;
        }
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.done += 1;
        if lines.last.elapsed() >= LINE_INTERVAL {
            lines.last = Instant::now();
            self.printer.say(format!(
                "{}: {}/{} done",
                self.what, lines.done, lines.total
            ));
        }
    }

    /// A problem that does not stop the collection, above the bar.
    pub fn warn(&self, message: impl AsRef<str>) {
        self.printer.warn(message);
    }

    /// Removes the bar (lines need no ending).
    pub fn finish(&self) {
        if self.bar.is_some() {
            self.printer.finish_bar();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
