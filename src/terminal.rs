//! What netctl says to the person at the terminal: warnings, notes and debug detail on stderr.
//!
//! stdout carries data only (`netctl get ... -o json | jq` must always work); everything here goes to
//! stderr. The level comes from `--log-level` and is set once by `main`. Colour is used only on a
//! terminal and never when `NO_COLOR` is set.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};

/// How much netctl says on stderr (upstream's level names, `reference/calicoctl.md` §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum LogLevel {
    Panic,
    Fatal,
    Error,
    Warn,
    Info,
    Debug,
}

static LEVEL: AtomicU8 = AtomicU8::new(LogLevel::Warn as u8);
static COLOR: AtomicU8 = AtomicU8::new(0);

/// Sets the level and whether stderr may be coloured. Called once by `main`.
pub fn configure(level: LogLevel, no_color: bool) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    let color = !no_color && std::io::stderr().is_terminal();
    COLOR.store(color as u8, Ordering::Relaxed);
}

fn enabled(level: LogLevel) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Whether stderr is a terminal that may show colour.
pub fn color() -> bool {
    COLOR.load(Ordering::Relaxed) == 1
}

fn emit(prefix: &str, ansi: &str, message: &str) {
    let mut stderr = std::io::stderr().lock();
    // A closed stderr leaves nothing useful to do with the error.
    let _ = if color() {
        writeln!(stderr, "\x1b[{ansi}m{prefix}\x1b[0m {message}")
    } else {
        writeln!(stderr, "{prefix} {message}")
    };
}

/// A problem that does not stop the command.
pub fn warn(message: impl AsRef<str>) {
    if enabled(LogLevel::Warn) {
        emit("warning:", "33;1", message.as_ref());
    }
}

/// Progress or context a user may want.
pub fn info(message: impl AsRef<str>) {
    if enabled(LogLevel::Info) {
        emit("info:", "36", message.as_ref());
    }
}

/// Detail for troubleshooting.
pub fn debug(message: impl AsRef<str>) {
    if enabled(LogLevel::Debug) {
        emit("debug:", "2", message.as_ref());
    }
}

/// An error that ends the command, with an optional hint line.
pub fn error(message: &str, hint: Option<&str>) {
    emit("error:", "31;1", message);
    if let Some(hint) = hint {
        emit("  hint:", "32", hint);
    }
}

/// A run that stopped where the plan says a person decides: not a failure, so not `error:`.
pub fn stopped(message: &str, hint: Option<&str>) {
    emit("stopped:", "33;1", message);
    if let Some(hint) = hint {
        emit("  hint:", "32", hint);
    }
}
