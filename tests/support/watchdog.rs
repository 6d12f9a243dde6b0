//! A time limit for every test that starts a program through this support module: a test still
//! running after [`DEFAULT_LIMIT`] (or `NETCTL_TEST_TIME_LIMIT` seconds) makes the watchdog print its
//! name, kill the processes the test binary owns and end the binary with a failure, so `cargo test
//! --no-fail-fast` reports it and goes on with the next binary instead of waiting forever.
//!
//! A test is armed the first time it runs netctl, finds a program or makes a server directory
//! ([`super::netctl`] and [`super::process`] call [`arm`]) and disarmed when its thread ends (libtest runs each test on a
//! thread named after it). It does not time single commands: `Netctl` runs carry their own timeout,
//! and a hung command is reported there, with its output, long before the watchdog fires.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Mutex, Once, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// How long one test may run. The slowest (the etcd fault suite's, whose whole binary takes about
/// two minutes) stay far below it on a loaded two-core machine; the margin is for slower machines.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(600);

/// Overrides [`DEFAULT_LIMIT`], in seconds.
pub const LIMIT_VARIABLE: &str = "NETCTL_TEST_TIME_LIMIT";

/// The armed tests: thread → (test name, start).
fn armed() -> &'static Mutex<HashMap<ThreadId, (String, Instant)>> {
    static ARMED: OnceLock<Mutex<HashMap<ThreadId, (String, Instant)>>> = OnceLock::new();
    ARMED.get_or_init(Default::default)
}

/// Removes its thread's entry when the thread (the test) ends.
struct Disarm(ThreadId);

impl Drop for Disarm {
    fn drop(&mut self) {
        armed()
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&self.0);
    }
}

thread_local! {
    static DISARM: RefCell<Option<Disarm>> = const { RefCell::new(None) };
}

/// Starts the time limit of the current test, once per test thread.
pub fn arm() {
    let _ = DISARM.try_with(|disarm| {
        let mut disarm = disarm.borrow_mut();
        if disarm.is_some() {
            return;
        }
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("(unnamed thread)").to_owned();
        armed()
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .insert(thread.id(), (name, Instant::now()));
        *disarm = Some(Disarm(thread.id()));
    });
    static MONITOR: Once = Once::new();
    MONITOR.call_once(|| {
        let limit = limit();
        std::thread::Builder::new()
            .name("netctl-test-watchdog".into())
            .spawn(move || watch(limit))
            .expect("start the test watchdog thread");
    });
}

fn limit() -> Duration {
    match std::env::var(LIMIT_VARIABLE) {
        Ok(seconds) => {
            Duration::from_secs(seconds.trim().parse().unwrap_or_else(|_| {
                panic!("{LIMIT_VARIABLE}=`{seconds}` is not a number of seconds")
            }))
        }
        Err(_) => DEFAULT_LIMIT,
    }
}

fn watch(limit: Duration) {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let overdue: Vec<String> = armed()
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .values()
            .filter(|(_, started)| started.elapsed() > limit)
            .map(|(name, _)| name.clone())
            .collect();
        if overdue.is_empty() {
            continue;
        }
        // Straight to the standard error stream: `eprintln!` inside a test is captured, and a
        // captured message would be lost with the process.
        let mut stderr = std::io::stderr().lock();
        for name in &overdue {
            let _ = writeln!(
                stderr,
                "\nwatchdog: test `{name}` is still running after {} s, its time limit \
                 ({LIMIT_VARIABLE}); killing this test binary's servers and stopping it",
                limit.as_secs()
            );
        }
        super::process::kill_live_children();
        std::process::exit(101);
    }
}
