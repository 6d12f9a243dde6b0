//! Ctrl-C and SIGTERM while a command writes many resources: noticed, not obeyed at once.
//!
//! A process killed in the middle of a multi-document write leaves part of the file written and
//! nothing undone. So while a one-step command writes (`create`, `apply`, `replace`, `delete`), an
//! [`Interrupt`] catches SIGINT and SIGTERM and only records them; the writer looks between two
//! batches (a safe point: no request in flight), stops there and undoes what it wrote, as it would
//! after a failure, and says so. A second signal during that undo cuts it short (the recovery file
//! then names what is left).
//!
//! Catching a signal is for the rest of the process (the runtime keeps its handler), so only the
//! commands that check use it; an upgrade run has its own handling around its steps.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

/// The signals a write stops for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
}

impl StopSignal {
    /// The signal's name and how it usually comes, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT (Ctrl-C)",
            StopSignal::Terminate => "SIGTERM",
        }
    }

    fn code(self) -> u8 {
        match self {
            StopSignal::Interrupt => 1,
            StopSignal::Terminate => 2,
        }
    }

    fn from_code(code: u8) -> Option<StopSignal> {
        match code {
            1 => Some(StopSignal::Interrupt),
            2 => Some(StopSignal::Terminate),
            _ => None,
        }
    }
}

/// SIGINT and SIGTERM as a writer sees them: the first one received, and how many.
#[derive(Clone, Debug, Default)]
pub struct Interrupt {
    first: Arc<AtomicU8>,
    count: Arc<AtomicU32>,
}

impl Interrupt {
    /// Catches SIGINT and SIGTERM from now on (in the background, on the current runtime).
    pub fn listen() -> std::io::Result<Interrupt> {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = Interrupt::default();
        let mut sigint = signal(SignalKind::interrupt())?;
        let mut sigterm = signal(SignalKind::terminate())?;
        let recorder = interrupt.clone();
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    Some(()) = sigint.recv() => StopSignal::Interrupt,
                    Some(()) = sigterm.recv() => StopSignal::Terminate,
                    else => return,
                };
                recorder.record(received);
            }
        });
        Ok(interrupt)
    }

    /// Records a signal as if it had been received (also how tests stop a write on cue).
    pub fn record(&self, signal: StopSignal) {
        let _ = self
            .first
            .compare_exchange(0, signal.code(), Ordering::SeqCst, Ordering::SeqCst);
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    /// The first signal received, if any.
    pub fn received(&self) -> Option<StopSignal> {
        StopSignal::from_code(self.first.load(Ordering::SeqCst))
    }

    /// Whether a second signal came: the user insists.
    pub fn insisted(&self) -> bool {
        self.count.load(Ordering::SeqCst) >= 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_signal_is_kept_and_a_second_one_insists() {
        let interrupt = Interrupt::default();
        assert_eq!(interrupt.received(), None);
        interrupt.record(StopSignal::Terminate);
        assert_eq!(interrupt.received(), Some(StopSignal::Terminate));
        assert!(!interrupt.insisted());
        interrupt.record(StopSignal::Interrupt);
        assert_eq!(interrupt.received(), Some(StopSignal::Terminate));
        assert!(interrupt.insisted());
    }
}
