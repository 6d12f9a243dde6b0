//! The signals that stop an upgrade run where it is: SIGINT (Ctrl-C) and SIGTERM (what systemd, CI
//! runners, `kill` and container runtimes send). Both are handled alike: the run records where it
//! stopped, journals it and releases its lock (see `execute.rs`); a question at a gate is abandoned
//! the same way (see `gate.rs`). This file only waits for them.

use tokio::signal::unix::{SignalKind, signal};

/// Waits until SIGINT or SIGTERM arrives and returns its name. Listening replaces the default
/// action (ending the process) only while the returned future is alive.
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
