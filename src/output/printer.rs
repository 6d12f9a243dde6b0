//! The one way a command writes: data on stdout, talk on stderr.
//!
//! stdout carries what a script reads (`netctl get ... -o json | jq`, a plan, a dry-run transcript,
//! a table); stderr carries what a person reads while the command runs (`saved plan ... to ...`,
//! `upgrade run ... completed`), warnings included. Every command writes through a [`Printer`] so
//! that line is drawn in one place (uv's `printer.rs` plays the same part). Warnings and debug detail
//! keep their levels and colour from `terminal`; deeper layers (the executor's progress, the node
//! run) talk through `terminal` directly. Nothing here formats a resource or a plan.

use std::io::{self, Write};

/// Where a command's output goes. Copy it freely: it holds no state of its own today, and is the
/// place a quiet mode or a captured output would be added.
#[derive(Debug, Clone, Copy, Default)]
pub struct Printer;

impl Printer {
    /// stdout, locked, for data written piece by piece (tables, documents, transcripts).
    pub fn stdout(&self) -> io::StdoutLock<'static> {
        io::stdout().lock()
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

    /// One line on stderr: what the command did, for the person running it. Not data, never a
    /// warning; a closed stderr is not worth failing a command for.
    pub fn say(&self, line: impl AsRef<str>) {
        let _ = writeln!(io::stderr().lock(), "{}", line.as_ref());
    }

    /// A problem that does not stop the command (levelled and coloured by `terminal`).
    pub fn warn(&self, message: impl AsRef<str>) {
        crate::terminal::warn(message);
    }

    /// A counter of `total` items on stderr (a bar on a terminal; see `output::progress`).
    pub fn progress(&self, what: &str, total: u64) -> super::progress::Progress {
        super::progress::Progress::new(what, total)
    }
}
