//! Shared plumbing for the servers: finding programs, picking free loopback ports, making the
//! per-server temporary directory, reading log tails, owning child processes (killed on drop, and
//! by the [`super::watchdog`] when a test runs too long) and sending signals.
//!
//! It knows nothing about etcd or DNS; [`super::etcd`] and [`super::dns`] build on it. Signals go
//! through a system call (rustix), not the `kill` program, which a minimal system lacks.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

pub use rustix::process::Signal;
use tempfile::TempDir;

/// How many lines [`log_tail`] returns by default.
pub const LOG_TAIL_LINES: usize = 40;

/// The file, inside a server's directory, holding the pid of the test process that owns it.
pub const OWNER_PID_FILE: &str = "owner.pid";
/// The file, inside a server's directory, holding the pid of the server process.
pub const CHILD_PID_FILE: &str = "server.pid";
/// Every server directory starts with this, followed by the kind (`etcd`, `dns`).
pub const DIR_PREFIX: &str = "netctl-test-";

/// Finds `name` on `PATH`, then in the usual system directories; panics with `hint` when absent.
///
/// A missing program must fail the test: a skipped datastore test looks exactly like a passing one.
pub fn find_program(name: &str, hint: &str) -> PathBuf {
    super::watchdog::arm();
    let path_dirs = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    let system_dirs =
        ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin", "/sbin"].map(PathBuf::from);
    path_dirs
        .into_iter()
        .chain(system_dirs)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{name} not found: install it with `{hint}`"))
}

/// Fails the test unless `localhost` resolves to `127.0.0.1` through the system resolver.
///
/// SRV discovery hands out host names, which netctl resolves as upstream does (the system
/// resolver); `localhost` is the one name a test can serve a certificate for and rely on without
/// a resolver of its own. A minimal system may lack the `/etc/hosts` line; the hint says how to
/// add it (`scripts/prerequisites.sh` does).
pub fn require_localhost() {
    use std::net::{IpAddr, ToSocketAddrs};
    let addresses: Vec<IpAddr> = ("localhost", 0)
        .to_socket_addrs()
        .map(|addresses| addresses.map(|address| address.ip()).collect())
        .unwrap_or_default();
    assert!(
        addresses.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)),
        "`localhost` does not resolve to 127.0.0.1 (it resolves to {addresses:?}): install it with \
         `echo '127.0.0.1 localhost' >> /etc/hosts` (scripts/prerequisites.sh does)"
    );
}

/// Ports handed out by this test process and not yet released by [`release_ports`]: tests in
/// the same binary run in parallel, and the kernel may hand a just-closed port out again.
fn reserved_ports() -> &'static Mutex<HashSet<u16>> {
    static RESERVED: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    RESERVED.get_or_init(Default::default)
}

/// Returns `count` distinct TCP ports free on `127.0.0.1` (and on `[::1]` too when `dual_stack`).
///
/// The ports are probed by binding and then released, so another process can still take one before
/// the server binds it: callers detect "address already in use" and start again with new ports.
pub fn free_tcp_ports(count: usize, dual_stack: bool) -> Vec<u16> {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    let mut reserved = reserved_ports()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    while ports.len() < count {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        if reserved.contains(&port) {
            continue;
        }
        if dual_stack {
            match TcpListener::bind((Ipv6Addr::LOCALHOST, port)) {
                Ok(v6) => held.push(v6),
                Err(_) => continue,
            }
        }
        held.push(listener);
        reserved.insert(port);
        ports.push(port);
    }
    ports
}

/// Returns a port free for both UDP and TCP on `127.0.0.1` (a DNS server listens on both).
pub fn free_udp_and_tcp_port() -> u16 {
    let mut reserved = reserved_ports()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    loop {
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind udp 127.0.0.1:0");
        let port = udp.local_addr().expect("local address").port();
        if reserved.contains(&port) {
            continue;
        }
        if TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).is_ok() {
            reserved.insert(port);
            return port;
        }
    }
}

/// Gives ports back once their server is gone.
pub fn release_ports(ports: &[u16]) {
    let mut reserved = reserved_ports()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    for port in ports {
        reserved.remove(port);
    }
}

/// Makes the temporary directory of one server and records the owning test process in it.
pub fn server_dir(kind: &str) -> TempDir {
    super::watchdog::arm();
    super::reap::reap_orphans_once();
    let dir = tempfile::Builder::new()
        .prefix(&format!("{DIR_PREFIX}{kind}-"))
        .tempdir()
        .expect("create a temporary directory for a test server");
    fs::write(
        dir.path().join(OWNER_PID_FILE),
        std::process::id().to_string(),
    )
    .expect("write owner pid file");
    dir
}

/// The last `lines` lines of a log file, or a note saying why there are none.
pub fn log_tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(no log at {}: {error})", path.display()),
    }
}

/// A running child process that is killed and reaped when dropped.
#[derive(Debug)]
pub struct OwnedChild {
    child: Child,
    pid_file: PathBuf,
}

impl OwnedChild {
    /// Spawns `command` with stdout and stderr appended to `log`, recording its pid in `dir`.
    pub fn spawn(mut command: Command, dir: &Path, log: &Path) -> OwnedChild {
        let log_file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open server log file");
        let stderr = log_file.try_clone().expect("clone log file handle");
        command.stdin(Stdio::null()).stdout(log_file).stderr(stderr);
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {command:?}: {error}"));
        let pid_file = dir.join(CHILD_PID_FILE);
        fs::write(&pid_file, child.id().to_string()).expect("write server pid file");
        live_children_insert(child.id());
        OwnedChild { child, pid_file }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("poll child process")
    }

    /// Kills (SIGKILL) and reaps the process; a no-op if it already exited.
    pub fn kill(&mut self) {
        if self.exited().is_none() {
            // An error here means it exited between the two calls, which is what we want.
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        live_children_remove(self.child.id());
        let _ = fs::remove_file(&self.pid_file);
    }
}

impl Drop for OwnedChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A child process started by a test itself (e.g. a background `netctl upgrade apply`): killed
/// (SIGKILL) and reaped when dropped, so a failing assertion never leaves it running.
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
}

impl ChildGuard {
    pub fn new(child: Child) -> ChildGuard {
        live_children_insert(child.id());
        ChildGuard { child: Some(child) }
    }

    /// Waits for the process and collects its piped output, as [`Child::wait_with_output`].
    pub fn wait_with_output(mut self) -> std::io::Result<std::process::Output> {
        let child = self
            .child
            .take()
            .expect("the child is taken only here or in drop");
        let pid = child.id();
        let output = child.wait_with_output();
        live_children_remove(pid);
        output
    }
}

impl std::ops::Deref for ChildGuard {
    type Target = Child;

    fn deref(&self) -> &Child {
        self.child
            .as_ref()
            .expect("the child is taken only when the guard is consumed")
    }
}

impl std::ops::DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("the child is taken only when the guard is consumed")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            live_children_remove(child.id());
        }
    }
}

/// Sends `signal` to process `pid` (SIGINT to stop a run, SIGSTOP to freeze a server, ...).
pub fn send_signal(pid: u32, signal: Signal) -> std::io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::other(format!("`{pid}` is not a process id")))?;
    rustix::process::kill_process(pid, signal).map_err(std::io::Error::from)
}

/// The processes owned by [`OwnedChild`] and [`ChildGuard`] values that are still alive, each
/// with the thread (the test) that started it: the watchdog kills an overdue test's processes, and
/// all of them before it stops the test binary, since no destructor runs then.
fn live_children() -> &'static Mutex<HashMap<u32, ThreadId>> {
    static LIVE: OnceLock<Mutex<HashMap<u32, ThreadId>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

fn live_children_insert(pid: u32) {
    live_children()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .insert(pid, std::thread::current().id());
}

fn live_children_remove(pid: u32) {
    live_children()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .remove(&pid);
}

/// Kills (SIGKILL) the processes still owned by the test running on `thread`, or by every test
/// of this binary when `thread` is `None`.
pub(super) fn kill_live_children(thread: Option<ThreadId>) {
    let live: Vec<u32> = live_children()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .iter()
        .filter(|(_, owner)| thread.is_none_or(|thread| **owner == thread))
        .map(|(pid, _)| *pid)
        .collect();
    for pid in live {
        let _ = send_signal(pid, Signal::KILL);
    }
}

/// Calls `probe` every `interval` until it returns `Some`, or `None` after `timeout`.
pub fn poll_until<T>(
    timeout: Duration,
    interval: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(interval);
    }
}
