//! The `netctl` binary under test, run in a sandbox: an empty environment except `PATH`, a
//! temporary `HOME` and `NO_COLOR=1`, so no test ever sees the developer's configuration
//! (`~/.config`, `NET_*`/`NETCTL_*` variables, `RUST_BACKTRACE`, ...).
//!
//! Arguments and the config file are collected and the command is built when it runs, so
//! `config_file` and `args` can be called in any order: the file is always passed first as
//! `-c <file>`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::assert::Assert;
use tempfile::TempDir;

use super::dns::DnsServer;
use super::etcd::EtcdServer;

/// How long one netctl run may take before the test fails (instead of hanging).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A sandboxed `netctl` invocation. Methods chain like `std::process::Command`'s:
///
/// ```ignore
/// Netctl::new().config_file(&yaml).args(["get", "globalnetworkpolicy"]).assert().success();
/// ```
#[derive(Debug)]
pub struct Netctl {
    program: PathBuf,
    home: TempDir,
    envs: Vec<(OsString, OsString)>,
    config: Option<PathBuf>,
    /// Flags that go before `args` (`--request-timeout`).
    global_args: Vec<OsString>,
    args: Vec<OsString>,
    stdin: Option<Vec<u8>>,
    current_dir: Option<PathBuf>,
    timeout: Duration,
}

impl Default for Netctl {
    fn default() -> Self {
        Netctl::new()
    }
}

impl Netctl {
    pub fn new() -> Netctl {
        super::watchdog::arm();
        let home = tempfile::Builder::new()
            .prefix("netctl-home-")
            .tempdir()
            .expect("create a temporary HOME");
        Netctl {
            program: env!("CARGO_BIN_EXE_netctl").into(),
            home,
            envs: Vec::new(),
            config: None,
            global_args: Vec::new(),
            args: Vec::new(),
            stdin: None,
            current_dir: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// netctl run in the source tree, so paths relative to the repository work
    /// (`tests/fixtures/...`, `runbooks`).
    pub fn in_source_tree() -> Netctl {
        let mut netctl = Netctl::new();
        netctl.current_dir(env!("CARGO_MANIFEST_DIR"));
        netctl
    }

    /// netctl for one etcd server, through the environment as upstream's calicoctl is usually
    /// pointed (`DATASTORE_TYPE=etcdv3`, `ETCD_ENDPOINTS`); no user, no TLS (use
    /// [`Netctl::config_file`] with [`EtcdServer::netctl_config_yaml`] for those).
    pub fn etcd(etcd: &EtcdServer) -> Netctl {
        Netctl::endpoints(&etcd.endpoint())
    }

    /// netctl for the etcd `endpoints` (comma-separated, as `ETCD_ENDPOINTS` takes them): a
    /// cluster's members, or endpoints that fail.
    pub fn endpoints(endpoints: &str) -> Netctl {
        let mut netctl = Netctl::new();
        netctl
            .env("DATASTORE_TYPE", "etcdv3")
            .env("ETCD_ENDPOINTS", endpoints);
        netctl
    }

    /// `--request-timeout <timeout>` before the other arguments.
    pub fn request_timeout(&mut self, timeout: &str) -> &mut Self {
        self.global_args
            .extend(["--request-timeout".into(), timeout.into()]);
        self
    }

    /// The path of the netctl binary cargo built for these tests.
    pub fn program() -> &'static Path {
        super::watchdog::arm();
        Path::new(env!("CARGO_BIN_EXE_netctl"))
    }

    /// Runs `program` instead of netctl in the same sandbox (to test the sandbox itself, or a
    /// wrapper script).
    pub fn with_program(program: impl AsRef<Path>) -> Netctl {
        Netctl {
            program: program.as_ref().to_owned(),
            ..Netctl::new()
        }
    }

    /// The temporary `HOME` (also a good place for test files; removed with this value).
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Sets `NETCTL_RESOLVER` to the DNS server.
    pub fn resolver(&mut self, dns: &DnsServer) -> &mut Self {
        let (key, value) = dns.resolver_env();
        self.env(key, value)
    }

    /// Writes `yaml` to `$HOME/netctl.cfg` and passes `-c <that file>`.
    pub fn config_file(&mut self, yaml: &str) -> &mut Self {
        let path = self.home.path().join("netctl.cfg");
        std::fs::write(&path, yaml).expect("write netctl config file");
        self.config = Some(path);
        self
    }

    /// Writes `contents` to `$HOME/<name>` and returns its path (for `-f` files and the like).
    pub fn write_file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.home.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent directory");
        }
        std::fs::write(&path, contents).expect("write test file");
        path
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    pub fn stdin(&mut self, input: impl AsRef<[u8]>) -> &mut Self {
        self.stdin = Some(input.as_ref().to_vec());
        self
    }

    /// The working directory (default: the temporary `HOME`).
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.current_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// The run's time limit (default 60 s).
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// The assembled command, for anything the methods above do not cover.
    pub fn command(&self) -> assert_cmd::Command {
        let mut command = assert_cmd::Command::new(&self.program);
        command
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .current_dir(self.current_dir.as_deref().unwrap_or(self.home.path()))
            .timeout(self.timeout);
        for (key, value) in &self.envs {
            command.env(key, value);
        }
        if let Some(config) = &self.config {
            command.arg("-c").arg(config);
        }
        command.args(&self.global_args).args(&self.args);
        if let Some(input) = &self.stdin {
            command.write_stdin(input.clone());
        } else {
            // An empty stdin, never the test runner's.
            command.write_stdin(Vec::new());
        }
        command
    }

    /// Runs netctl and returns assert_cmd's `Assert` (exit code, stdout, stderr).
    pub fn assert(&self) -> Assert {
        self.command().assert()
    }

    /// Runs netctl and returns its raw output (any exit code).
    pub fn output(&self) -> std::process::Output {
        self.command()
            .output()
            .unwrap_or_else(|error| panic!("cannot run netctl: {error}"))
    }
}

impl Netctl {
    /// Starts netctl in the same sandbox without waiting for it (to signal it, or to hurt its
    /// datastore while it runs): stdin empty, stdout and stderr piped. No time limit: the caller
    /// waits (see [`wait_for_exit`]).
    pub fn spawn(&self) -> std::process::Child {
        let mut command = std::process::Command::new(&self.program);
        command
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .current_dir(self.current_dir.as_deref().unwrap_or(self.home.path()))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (key, value) in &self.envs {
            command.env(key, value);
        }
        if let Some(config) = &self.config {
            command.arg("-c").arg(config);
        }
        command.args(&self.global_args).args(&self.args);
        command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start netctl: {error}"))
    }
}

/// Waits for a spawned netctl to exit within `limit` (killing it and failing the test otherwise)
/// and returns what it printed.
pub fn wait_for_exit(mut child: std::process::Child, limit: Duration) -> Run {
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait for netctl").is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("collect netctl output");
            panic!(
                "netctl did not exit within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Run::from(child.wait_with_output().expect("collect netctl output"))
}

/// What one netctl run returned: its exit code (`None`: ended by a signal), stdout and stderr as
/// text. The one result type of the tests' runs; [`netctl_snapshot!`](super::snapshot) snapshots
/// it whole.
#[derive(Debug, Clone)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Whether it exited 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl From<std::process::Output> for Run {
    /// Both streams must be UTF-8: netctl never writes anything else.
    fn from(output: std::process::Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).expect("netctl writes UTF-8 to stdout"),
            stderr: String::from_utf8(output.stderr).expect("netctl writes UTF-8 to stderr"),
        }
    }
}

impl Netctl {
    /// Runs and captures exit code, stdout and stderr (both must be UTF-8).
    pub fn run(&self) -> Run {
        Run::from(self.output())
    }
}

/// The stdout of a run that must succeed (exit 0); its stderr is shown otherwise.
pub fn ok(run: Run) -> String {
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    run.stdout
}

/// The stderr of a run that must fail with exit 1; its stdout is shown otherwise.
pub fn failed(run: Run) -> String {
    assert_eq!(run.code, Some(1), "stdout: {}", run.stdout);
    run.stderr
}

/// Runs `scripts/install.sh` with `PREFIX=prefix` and this build's binary, and asserts that it
/// succeeded.
pub fn install_into(prefix: &Path) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install.sh");
    let output = std::process::Command::new("bash")
        .arg(script)
        .env("PREFIX", prefix)
        .env("NETCTL_BINARY", Netctl::program())
        .output()
        .expect("run scripts/install.sh");
    assert!(
        output.status.success(),
        "install.sh: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
