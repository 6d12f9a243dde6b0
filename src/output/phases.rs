//! The time a command spends in each of its phases (read, validate, read what is stored, write,
//! print …), said as debug lines (`-vv`, `--log-level debug`) through the [`Printer`]: which phase
//! holds the time of a slow command, on the machine where it is slow. The benchmark
//! (`docs/benchmarks.md`, "Phases (issue 31)") reads the same lines. Off, a clock costs one
//! branch per phase.

use std::time::{Duration, Instant};

use super::Printer;

/// Marks the end of each phase of one command; each mark says how long the phase took.
pub struct PhaseClock {
    /// `None` when debug lines are not shown.
    printer: Option<Printer>,
    started: Instant,
    last: Instant,
}

impl PhaseClock {
    /// A clock that speaks when `printer` shows debug lines, silent otherwise.
    pub fn new(printer: &Printer) -> PhaseClock {
        let now = Instant::now();
        PhaseClock {
            printer: printer.shows_debug().then(|| printer.clone()),
            started: now,
            last: now,
        }
    }

    /// A clock that never speaks.
    pub fn off() -> PhaseClock {
        let now = Instant::now();
        PhaseClock {
            printer: None,
            started: now,
            last: now,
        }
    }

    /// Ends phase `name` (it began at the last mark or when the clock was made) and says how
    /// long it took: `debug: phase read and validate: 152.3 ms (total 160.1 ms)`.
    pub fn mark(&mut self, name: &str) {
        let Some(printer) = &self.printer else {
            return;
        };
        let now = Instant::now();
        printer.debug(format!(
            "phase {name}: {} (total {})",
            milliseconds(now - self.last),
            milliseconds(now - self.started)
        ));
        self.last = now;
    }
}

fn milliseconds(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{LogLevel, Verbosity};

    #[test]
    fn phases_are_said_at_debug_level_only() {
        let debug = Verbosity {
            quiet: false,
            level: LogLevel::Debug,
        };
        let (printer, capture) = Printer::capture(debug);
        let mut clock = PhaseClock::new(&printer);
        clock.mark("read");
        clock.mark("write");
        let said = capture.stderr();
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.len(), 2, "{said}");
        assert!(lines[0].starts_with("debug: phase read: ") && lines[0].contains(" ms (total "));
        assert!(lines[1].starts_with("debug: phase write: "), "{said}");

        let (printer, capture) = Printer::capture(Verbosity::DEFAULT);
        let mut clock = PhaseClock::new(&printer);
        clock.mark("read");
        assert_eq!(capture.stderr(), "");
    }
}
