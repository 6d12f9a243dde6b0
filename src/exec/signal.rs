//! The signals that stop an upgrade run where it is: SIGINT (Ctrl-C) and SIGTERM (what systemd, CI
//! runners, `kill` and container runtimes send). Both are handled alike: the run records where it
//! stopped, journals it and releases its lock (see `execute.rs`); a question at a gate is abandoned
//! the same way (see `gate.rs`). This file only waits for them.

use tokio::signal::unix::{SignalKind, signal};

/// Waits until SIGINT or SIGTERM arrives and returns its name. Once listened for, a signal no
/// longer ends the process by itself (the runtime keeps its handler for the process's life): only
/// the long parts of a command — a run's steps, a question at a gate — listen, and they stop the
/// command themselves.
pub(super) async fn stop_requested() -> &'static str {
    // Without a SIGTERM listener (the runtime cannot install one), Ctrl-C alone still works.
    let Ok(mut terminate) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return "SIGINT";
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    }
}
