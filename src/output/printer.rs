//! The one voice: every part of netctl that writes for a person or a script writes through a
//! [`Printer`] — commands, the executor's events and progress, gate questions, the node run,
//! warnings, debug detail and the error that ends a command.
//!
//! stdout carries what a script reads (`netctl get ... -o json | jq`, a plan, a dry-run transcript,
//! a table, calicoctl's `Successfully ...` lines); stderr carries what a person reads while the
//! command runs. How much is said is the [`Verbosity`] (`-q`, `-v`, `--log-level`): quiet leaves
//! data, errors and questions at a gate on a terminal, nothing else. Colour is used only on a
//! terminal and never with `NO_COLOR`; a progress bar only on a terminal. While a bar is shown,
//! every line goes above it and a question hides it, so no part needs to know a bar exists.
//!
//! A printer made by [`Printer::capture`] writes to memory instead of the process's streams and
//! reads a question's answers from a list, so tests see in process exactly what a user would (uv's
//! `crates/uv/src/printer.rs` plays the same part). Cloning a printer is cheap; the clones share
//! their streams. Nothing here formats a resource or a plan.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use indicatif::{ProgressBar, ProgressDrawTarget};

use crate::listing::{self, Limit, Problem};

/// The level of detail of levelled messages (upstream's level names for `--log-level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum LogLevel {
    Panic,
    Fatal,
    Error,
    Warn,
    Info,
    Debug,
}

/// How much netctl says on stderr.
///
/// | flags                       | stderr                                                |
/// |-----------------------------|-------------------------------------------------------|
/// | `-q`                        | errors, and questions at a gate on a terminal         |
/// | `--log-level error`         | as the default, without warnings                      |
/// | (default, `--log-level warn`) | what a command did, progress, warnings              |
/// | `-v`, `--log-level info`    | also notes (pre-flight findings, ignored settings)    |
/// | `-vv`, `--log-level debug`  | also debug detail (endpoints tried, connections)      |
///
/// stdout is never affected, except that `-q` leaves out calicoctl's `Successfully ...` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verbosity {
    /// `-q`: data and errors only.
    pub quiet: bool,
    /// Which levelled messages (warnings, notes, debug) are shown when not quiet.
    pub level: LogLevel,
}

impl Verbosity {
    /// What netctl says without flags.
    pub const DEFAULT: Verbosity = Verbosity {
        quiet: false,
        level: LogLevel::Warn,
    };
    /// `-q`.
    pub const QUIET: Verbosity = Verbosity {
        quiet: true,
        level: LogLevel::Error,
    };

    /// The verbosity of `-q`, `-v` (counted) and `--log-level`: `-v` raises the level to `info`,
    /// `-vv` to `debug`, never lowering what `--log-level` asked for.
    pub fn from_flags(quiet: bool, verbose: u8, log_level: LogLevel) -> Verbosity {
        if quiet {
            return Verbosity::QUIET;
        }
        let from_verbose = match verbose {
            0 => LogLevel::Panic,
            1 => LogLevel::Info,
            _ => LogLevel::Debug,
        };
        Verbosity {
            quiet: false,
            level: log_level.max(from_verbose),
        }
    }

    fn shows(&self, level: LogLevel) -> bool {
        !self.quiet && level <= self.level
    }
}

impl Default for Verbosity {
    fn default() -> Verbosity {
        Verbosity::DEFAULT
    }
}

/// Whether a person can answer questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interaction {
    /// stdin and stderr are a terminal (or a captured printer was given answers).
    Terminal,
    /// Scripts, CI, cron, pipes.
    Unattended,
}

/// Where a printer writes.
enum Streams {
    /// The process's stdout, stderr and stdin.
    Process {
        /// stderr is a terminal: colour (without `NO_COLOR`) and progress bars.
        stderr_terminal: bool,
        /// stdin and stderr are terminals: questions can be answered.
        interactive: bool,
    },
    /// Memory, for tests.
    Captured(Mutex<Captured>),
}

#[derive(Default)]
struct Captured {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    answers: Option<VecDeque<String>>,
}

struct Inner {
    verbosity: Verbosity,
    /// How much of a list of problems to show (`--all-errors`, `--errors-file`).
    listing: Mutex<Limit>,
    color: bool,
    streams: Streams,
    /// The progress bar on screen, if any: lines go above it, questions hide it.
    bar: Mutex<Option<ProgressBar>>,
}

/// Where a command's output goes (see the module comment). Clones share their streams.
#[derive(Clone)]
pub struct Printer {
    inner: Arc<Inner>,
}

impl fmt::Debug for Printer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Printer")
            .field("verbosity", &self.inner.verbosity)
            .field("color", &self.inner.color)
            .field(
                "captured",
                &matches!(self.inner.streams, Streams::Captured(_)),
            )
            .finish()
    }
}

/// The process's streams at the default verbosity, what a library caller gets without choosing.
impl Default for Printer {
    fn default() -> Printer {
        Printer::process(Verbosity::DEFAULT, false)
    }
}

impl Printer {
    /// A printer on the process's streams. Colour only when stderr is a terminal and `no_color`
    /// (`NO_COLOR` is set) is false.
    pub fn process(verbosity: Verbosity, no_color: bool) -> Printer {
        let stderr_terminal = io::stderr().is_terminal();
        let interactive = stderr_terminal && io::stdin().is_terminal();
        Printer::new(
            verbosity,
            stderr_terminal && !no_color,
            Streams::Process {
                stderr_terminal,
                interactive,
            },
        )
    }

    /// A printer that writes to memory, with no terminal: what the returned [`Capture`] reads.
    pub fn capture(verbosity: Verbosity) -> (Printer, Capture) {
        let printer = Printer::new(
            verbosity,
            false,
            Streams::Captured(Mutex::new(Captured::default())),
        );
        (printer.clone(), Capture { printer })
    }

    /// As [`Printer::capture`], as if a person sat at a terminal and gave these answers to the
    /// questions asked, in order (a question past the last answer reads end of input: no).
    pub fn capture_answering(verbosity: Verbosity, answers: &[&str]) -> (Printer, Capture) {
        let captured = Captured {
            answers: Some(answers.iter().map(|answer| answer.to_string()).collect()),
            ..Captured::default()
        };
        let printer = Printer::new(verbosity, false, Streams::Captured(Mutex::new(captured)));
        (printer.clone(), Capture { printer })
    }

    fn new(verbosity: Verbosity, color: bool, streams: Streams) -> Printer {
        Printer {
            inner: Arc::new(Inner {
                verbosity,
                listing: Mutex::new(Limit::Bounded),
                color,
                streams,
                bar: Mutex::new(None),
            }),
        }
    }

    /// Lists problems as `limit` says from now on, in every clone (`main` sets it once from
    /// `--all-errors` and `--errors-file`).
    pub fn set_listing(&self, limit: Limit) {
        *lock(&self.inner.listing) = limit;
    }

    /// How much of a list of problems to show.
    pub fn listing(&self) -> Limit {
        lock(&self.inner.listing).clone()
    }

    pub fn verbosity(&self) -> Verbosity {
        self.inner.verbosity
    }

    pub fn is_quiet(&self) -> bool {
        self.inner.verbosity.quiet
    }

    /// Whether stderr may be coloured.
    pub fn color(&self) -> bool {
        self.inner.color
    }

    /// Whether someone can answer a question.
    pub fn interaction(&self) -> Interaction {
        let answerable = match &self.inner.streams {
            Streams::Process { interactive, .. } => *interactive,
            Streams::Captured(captured) => lock(captured).answers.is_some(),
        };
        match answerable {
            true => Interaction::Terminal,
            false => Interaction::Unattended,
        }
    }

    /// Whether stderr is a terminal a progress bar can be drawn on (never when quiet).
    pub fn can_draw_bars(&self) -> bool {
        !self.inner.verbosity.quiet
            && matches!(
                self.inner.streams,
                Streams::Process {
                    stderr_terminal: true,
                    ..
                }
            )
            && !ProgressDrawTarget::stderr().is_hidden()
    }

    /// A progress bar of `total` on stderr, or `None` where [`Printer::can_draw_bars`] says no.
    /// While it is shown (until [`Printer::finish_bar`]) every stderr line goes above it.
    pub fn start_bar(&self, total: u64) -> Option<ProgressBar> {
        if !self.can_draw_bars() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        *lock(&self.inner.bar) = Some(bar.clone());
        Some(bar)
    }

    /// Removes the bar from the screen.
    pub fn finish_bar(&self) {
        if let Some(bar) = lock(&self.inner.bar).take() {
            bar.finish_and_clear();
        }
    }

    /// stdout, for data written piece by piece (tables, documents, transcripts).
    pub fn stdout(&self) -> Stdout {
        match &self.inner.streams {
            Streams::Process { .. } => Stdout::Process(io::stdout().lock()),
            Streams::Captured(_) => Stdout::Captured(self.clone()),
        }
    }

    /// Writes `text` to stdout as it is, and flushes.
    pub fn data(&self, text: &str) -> io::Result<()> {
        let mut stdout = self.stdout();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }

    /// Writes `line` and a line break to stdout.
    pub fn data_line(&self, line: &str) -> io::Result<()> {
        writeln!(self.stdout(), "{line}")
    }

    /// Lists `problems` on stdout one a line (findings, checks) through the bounded lister: the
    /// first twenty and counts of the rest, every one with `--all-errors`; with `--errors-file`
    /// the file gets every one.
    pub fn list_lines<P: Problem>(&self, problems: &[P]) -> io::Result<()> {
        let limit = self.listing();
        if let Limit::WrittenTo(path) = &limit {
            std::fs::write(path, listing::lines(problems, &Limit::All)).map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("cannot write `{}`: {error}", path.display()),
                )
            })?;
        }
        self.data(&listing::lines(problems, &limit))
    }

    /// A command's result line on stdout, as calicoctl prints it (`Successfully applied 3
    /// resource(s)`): scripts read it there, and `-q` leaves it out.
    pub fn summary(&self, line: &str) -> io::Result<()> {
        match self.inner.verbosity.quiet {
            true => Ok(()),
            false => self.data_line(line),
        }
    }

    /// One line on stderr: what the command is doing or did, for the person running it (progress
    /// included). Not a warning; silent with `-q`.
    pub fn say(&self, line: impl AsRef<str>) {
        if !self.inner.verbosity.quiet {
            self.stderr_line(line.as_ref());
        }
    }

    /// A problem that does not stop the command.
    pub fn warn(&self, message: impl AsRef<str>) {
        if self.inner.verbosity.shows(LogLevel::Warn) {
            self.levelled("warning:", "33;1", message.as_ref());
        }
    }

    /// Context a user may want (`-v`).
    pub fn info(&self, message: impl AsRef<str>) {
        if self.inner.verbosity.shows(LogLevel::Info) {
            self.levelled("info:", "36", message.as_ref());
        }
    }

    /// Detail for troubleshooting (`-vv`).
    pub fn debug(&self, message: impl AsRef<str>) {
        if self.inner.verbosity.shows(LogLevel::Debug) {
            self.levelled("debug:", "2", message.as_ref());
        }
    }

    /// Whether [`Printer::debug`] prints anything, for detail that is costly to put into words.
    pub fn shows_debug(&self) -> bool {
        self.inner.verbosity.shows(LogLevel::Debug)
    }

    /// An error that ends the command, with its advice: always shown.
    pub fn error(&self, message: &str, hint: Option<&str>) {
        self.levelled("error:", "31;1", message);
        self.hint(hint);
    }

    /// A run that stopped where the plan says a person decides: not a failure, so not `error:`;
    /// always shown (it is the command's result).
    pub fn stopped(&self, message: &str, hint: Option<&str>) {
        self.levelled("stopped:", "33;1", message);
        self.hint(hint);
    }

    fn hint(&self, hint: Option<&str>) {
        if let Some(hint) = hint {
            self.levelled("  hint:", "32", hint);
        }
    }

    /// Asks a yes/no question of the person at the terminal (hiding a progress bar meanwhile);
    /// anything but `y`/`yes` is no. Asked whatever the verbosity: `-q` silences talk, not
    /// questions. Callers ask only when [`Printer::interaction`] is [`Interaction::Terminal`].
    pub fn ask(&self, question: &str) -> io::Result<bool> {
        let ask = || -> io::Result<String> {
            let mut answer = String::new();
            match &self.inner.streams {
                Streams::Process { .. } => {
                    let mut stderr = io::stderr().lock();
                    write!(stderr, "{question} [y/N] ")?;
                    stderr.flush()?;
                    io::stdin().lock().read_line(&mut answer)?;
                }
                Streams::Captured(captured) => {
                    let mut captured = lock(captured);
                    writeln!(captured.stderr, "{question} [y/N] ")?;
                    if let Some(given) = captured.answers.as_mut().and_then(VecDeque::pop_front) {
                        answer = given;
                    }
                }
            }
            Ok(answer)
        };
        let bar = lock(&self.inner.bar).clone();
        let answer = match bar {
            Some(bar) => bar.suspend(ask)?,
            None => ask()?,
        };
        Ok(matches!(
            answer.trim().to_ascii_lowercase().as_str(),
            "y" | "yes"
        ))
    }

    fn levelled(&self, prefix: &str, ansi: &str, message: &str) {
        let line = match self.inner.color {
            true => format!("\x1b[{ansi}m{prefix}\x1b[0m {message}"),
            false => format!("{prefix} {message}"),
        };
        self.stderr_line(&line);
    }

    /// Writes one line to stderr, above the progress bar when one is shown. A closed stderr
    /// leaves nothing useful to do with the error.
    fn stderr_line(&self, line: &str) {
        match &self.inner.streams {
            Streams::Process { .. } => {
                let bar = lock(&self.inner.bar).clone();
                match bar {
                    Some(bar) => bar.println(line),
                    None => {
                        let _ = writeln!(io::stderr().lock(), "{line}");
                    }
                }
            }
            Streams::Captured(captured) => {
                let _ = writeln!(lock(captured).stderr, "{line}");
            }
        }
    }

    /// A counter of `total` items on stderr (a bar on a terminal; see `output::progress`).
    pub fn progress(&self, what: &str, total: u64) -> super::progress::Progress {
        super::progress::Progress::new(self, what, total)
    }
}

/// stdout as a writer: the process's (locked) or a captured printer's.
pub enum Stdout {
    Process(io::StdoutLock<'static>),
    Captured(Printer),
}

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Stdout::Process(stdout) => stdout.write(bytes),
            Stdout::Captured(printer) => match &printer.inner.streams {
                Streams::Captured(captured) => lock(captured).stdout.write(bytes),
                Streams::Process { .. } => io::stdout().write(bytes),
            },
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Stdout::Process(stdout) => stdout.write_all(bytes),
            other => {
                let mut rest = bytes;
                while !rest.is_empty() {
                    let written = other.write(rest)?;
                    rest = &rest[written..];
                }
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stdout::Process(stdout) => stdout.flush(),
            Stdout::Captured(_) => Ok(()),
        }
    }
}

/// What a captured printer was given: the text of its stdout and stderr so far.
pub struct Capture {
    printer: Printer,
}

impl Capture {
    pub fn stdout(&self) -> String {
        self.read(|captured| &captured.stdout)
    }

    pub fn stderr(&self) -> String {
        self.read(|captured| &captured.stderr)
    }

    fn read(&self, stream: impl Fn(&Captured) -> &Vec<u8>) -> String {
        match &self.printer.inner.streams {
            Streams::Captured(captured) => String::from_utf8_lossy(stream(&lock(captured))).into(),
            Streams::Process { .. } => String::new(),
        }
    }
}

/// A lock whose holder panicked still guards plain data, which stays usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn everything(printer: &Printer) {
        printer.data_line("data").unwrap();
        printer
            .summary("Successfully applied 1 resource(s)")
            .unwrap();
        printer.say("talk");
        printer.warn("careful");
        printer.info("note");
        printer.debug("detail");
        printer.error("failed", Some("do this"));
    }

    #[test]
    fn quiet_leaves_data_and_errors() {
        let (printer, capture) = Printer::capture(Verbosity::QUIET);
        everything(&printer);
        assert_eq!(capture.stdout(), "data\n");
        assert_eq!(capture.stderr(), "error: failed\n  hint: do this\n");
    }

    #[test]
    fn the_default_says_what_happened_and_warns() {
        let (printer, capture) = Printer::capture(Verbosity::DEFAULT);
        everything(&printer);
        assert_eq!(
            capture.stdout(),
            "data\nSuccessfully applied 1 resource(s)\n"
        );
        assert_eq!(
            capture.stderr(),
            "talk\nwarning: careful\nerror: failed\n  hint: do this\n"
        );
    }

    #[test]
    fn each_v_adds_a_level_and_log_level_error_drops_warnings() {
        let (printer, capture) = Printer::capture(Verbosity::from_flags(false, 2, LogLevel::Warn));
        everything(&printer);
        assert!(capture.stderr().contains("info: note\ndebug: detail\n"));
        let verbose = Verbosity::from_flags(false, 1, LogLevel::Warn);
        assert_eq!(verbose.level, LogLevel::Info);
        // `-v` never lowers what `--log-level` asked for.
        let debug = Verbosity::from_flags(false, 1, LogLevel::Debug);
        assert_eq!(debug.level, LogLevel::Debug);
        let (printer, capture) = Printer::capture(Verbosity::from_flags(false, 0, LogLevel::Error));
        everything(&printer);
        assert_eq!(capture.stderr(), "talk\nerror: failed\n  hint: do this\n");
    }

    #[test]
    fn questions_are_asked_even_when_quiet() {
        let (printer, capture) = Printer::capture_answering(Verbosity::QUIET, &["yes", "n"]);
        assert_eq!(printer.interaction(), Interaction::Terminal);
        assert!(printer.ask("continue?").unwrap());
        assert!(!printer.ask("continue?").unwrap());
        // Past the last answer: end of input, which is no.
        assert!(!printer.ask("continue?").unwrap());
        assert_eq!(capture.stderr(), "continue? [y/N] \n".repeat(3));
        let (unattended, _) = Printer::capture(Verbosity::DEFAULT);
        assert_eq!(unattended.interaction(), Interaction::Unattended);
    }

    #[test]
    fn a_captured_printer_draws_no_bar() {
        let (printer, _) = Printer::capture(Verbosity::DEFAULT);
        assert!(printer.start_bar(3).is_none());
    }
}
