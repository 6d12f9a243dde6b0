//! Cleanup of servers leaked by an earlier test run whose process was killed before `Drop` ran
//! (a `cargo test` interrupted with Ctrl-C, a timeout killing the test binary, ...).
//!
//! Each server directory records the pid of the test process that owns it and the pid of the
//! server. A directory whose owner is no longer running is an orphan: its server is killed, but
//! only when `/proc/<pid>/cmdline` still names that directory, so a recycled pid is never touched.
//! Directories of live test processes (other test binaries running in parallel) are left alone.

use std::fs;
use std::path::Path;
use std::sync::Once;

use super::process::{CHILD_PID_FILE, DIR_PREFIX, OWNER_PID_FILE, Signal, send_signal};

/// Runs [`reap_orphans`] once per test process.
pub fn reap_orphans_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(reap_orphans);
}

/// Kills the servers of dead test processes and removes their directories.
pub fn reap_orphans() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(DIR_PREFIX) {
            continue;
        }
        let dir = entry.path();
        let Some(owner) = read_pid(&dir.join(OWNER_PID_FILE)) else {
            continue;
        };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        if let Some(server) = read_pid(&dir.join(CHILD_PID_FILE)) {
            let cmdline = fs::read(format!("/proc/{server}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(&*dir.to_string_lossy()) {
                let _ = send_signal(server, Signal::KILL);
            }
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}
