//! A time limit for every test that starts a program through this support module: a test still
//! running after [`DEFAULT_LIMIT`] (or `NETCTL_TEST_TIME_LIMIT` seconds) makes the watchdog print its
//! name and kill the processes that test started (its servers, its background netctl), so a test
//! waiting on one of them fails and the other tests of the binary go on. A test that still has not
//! ended a grace period later (it hangs in its own code) stops the whole binary with a failure,
//! after its servers and every other test's are killed — never a wait forever.
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

/// How long one test may run. The slowest (the etcd fault suite's and the end-to-end upgrades, about
/// a minute each) stay far below it on a loaded two-core machine; the margin is for slower machines.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(600);

/// Overrides [`DEFAULT_LIMIT`], in seconds.
pub const LIMIT_VARIABLE: &str = "NETCTL_TEST_TIME_LIMIT";

/// How long an overdue test whose processes were killed may take to end before the binary is
/// stopped: [`MAX_GRACE`], or the time limit when that is shorter.
const MAX_GRACE: Duration = Duration::from_secs(60);

/// An armed test: its name, when it started, and when the watchdog killed its processes.
struct Armed {
    name: String,
    started: Instant,
    killed: Option<Instant>,
}

/// The armed tests, by thread.
fn armed() -> &'static Mutex<HashMap<ThreadId, Armed>> {
    static ARMED: OnceLock<Mutex<HashMap<ThreadId, Armed>>> = OnceLock::new();
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
            .insert(
                thread.id(),
                Armed {
                    name,
                    started: Instant::now(),
                    killed: None,
                },
            );
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
    let grace = limit.min(MAX_GRACE);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let mut armed = armed().lock().unwrap_or_else(|poison| poison.into_inner());
        // Straight to the standard error stream: `eprintln!` inside a test is captured, and a
        // captured message would be lost with the process.
        let mut stderr = std::io::stderr().lock();
        for (thread, test) in armed.iter_mut() {
            match test.killed {
                None if test.started.elapsed() > limit => {
                    let _ = writeln!(
                        stderr,
                        "\nwatchdog: test `{}` is still running after {} s, its time limit \
                         ({LIMIT_VARIABLE}); killing the processes it started",
                        test.name,
                        limit.as_secs()
                    );
                    super::process::kill_live_children(Some(*thread));
                    test.killed = Some(Instant::now());
                }
                Some(killed) if killed.elapsed() > grace => {
                    let _ = writeln!(
                        stderr,
                        "\nwatchdog: test `{}` did not end within {} s after its processes were \
                         killed; killing this test binary's servers and stopping it",
                        test.name,
                        grace.as_secs()
                    );
                    super::process::kill_live_children(None);
                    std::process::exit(101);
                }
                _ => {}
            }
        }
    }
}
