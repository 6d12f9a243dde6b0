//! Shared plumbing for the servers: finding programs, picking free loopback ports, making the
//! per-server temporary directory, reading log tails and owning child processes.
//!
//! It knows nothing about etcd or DNS; [`super::etcd`] and [`super::dns`] build on it.

use std::collections::HashSet;
use std::fs;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

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
        let _ = fs::remove_file(&self.pid_file);
    }
}

impl Drop for OwnedChild {
    fn drop(&mut self) {
        self.kill();
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
