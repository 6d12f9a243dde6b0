//! Real etcd 3.4 servers on loopback: one server ([`EtcdServer`]) or a cluster ([`EtcdCluster`]),
//! plain or TLS with required client certificates, optionally listening on `[::1]` too, optionally
//! with RBAC auth set up; plus [`Etcdctl`], an `etcdctl` wrapper to seed and inspect the data.
//!
//! Each member runs from its own temporary directory (`data/` and `etcd.log`), on ports picked free
//! at start. A start that loses a port race ("address already in use") starts again on new ports.
//! Every etcd process is killed and waited for when its server is dropped.
//!
//! The peer link is always plain HTTP on `127.0.0.1`: netctl only talks to the client port.
//! What this module does not do: talk gRPC itself. Seeding and assertions go through `etcdctl`, a
//! program independent of the code under test.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use super::pki::{Ca, CertPair, Pki};
use super::process::{self, OwnedChild};

const INSTALL_HINT: &str = "apt-get install etcd-server etcd-client";

/// How long a server or member may take to become healthy before the test fails.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(20);

/// What etcd 3.4 logs (with `--logger zap`) when a client listener starts serving: "serving
/// client traffic securely" or "... insecurely; this is strongly discouraged!".
const READY_MESSAGE: &str = "serving client traffic";

/// How many times a start is retried after losing a port race.
const START_ATTEMPTS: usize = 5;

fn etcd_program() -> PathBuf {
    process::find_program("etcd", INSTALL_HINT)
}

fn etcdctl_program() -> PathBuf {
    process::find_program("etcdctl", INSTALL_HINT)
}

// ---------------------------------------------------------------------------------------------
// Auth

/// The RBAC set up on a server by [`EtcdServerBuilder::auth`]: a `root` user (needed by etcd to
/// enable auth) and one limited user with readwrite on one prefix.
///
/// The defaults: root password `root-pw`, user `netctl` with password `netctl-pw`, role
/// `calico-readwrite` on prefix `/calico/`, etcd's default token TTL (300 s).
#[derive(Clone, Debug)]
pub struct AuthSetup {
    pub root_password: String,
    pub user: String,
    pub password: String,
    pub role: String,
    pub prefix: String,
    /// `--auth-token-ttl`; whole seconds, at least one. `None` keeps etcd's 300 s.
    pub token_ttl: Option<Duration>,
}

impl Default for AuthSetup {
    fn default() -> Self {
        AuthSetup {
            root_password: "root-pw".to_owned(),
            user: "netctl".to_owned(),
            password: "netctl-pw".to_owned(),
            role: "calico-readwrite".to_owned(),
            prefix: "/calico/".to_owned(),
            token_ttl: None,
        }
    }
}

impl AuthSetup {
    /// A short token lifetime, to test that netctl refreshes its token (gotcha G5).
    pub fn token_ttl(mut self, ttl: Duration) -> Self {
        assert!(
            ttl.as_secs() >= 1,
            "etcd's --auth-token-ttl is in whole seconds, at least 1"
        );
        self.token_ttl = Some(ttl);
        self
    }

    pub fn user(mut self, user: &str, password: &str) -> Self {
        self.user = user.to_owned();
        self.password = password.to_owned();
        self
    }

    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_owned();
        self
    }

    /// Creates the users and role and enables auth, talking as `admin` (no user yet).
    fn apply(&self, admin: &Etcdctl) {
        let root_password = format!("--new-user-password={}", self.root_password);
        let password = format!("--new-user-password={}", self.password);
        let readwrite = [
            "role",
            "grant-permission",
            &self.role,
            "--prefix=true",
            "readwrite",
        ];
        let steps: [Vec<&str>; 7] = [
            vec!["user", "add", "root", "--interactive=false", &root_password],
            // Before `auth enable`, so etcd does not warn that root lacks the root role (G9).
            vec!["user", "grant-role", "root", "root"],
            vec!["role", "add", &self.role],
            [&readwrite[..], &["--", &self.prefix]].concat(),
            vec!["user", "add", &self.user, "--interactive=false", &password],
            vec!["user", "grant-role", &self.user, &self.role],
            vec!["auth", "enable"],
        ];
        for step in steps {
            admin.run(&step);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// etcdctl

/// A key-value pair as etcd stores it, with its revisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub version: i64,
    pub lease: i64,
}

impl KeyValue {
    /// The key as text (lossy for non-UTF-8 keys).
    pub fn key_str(&self) -> String {
        String::from_utf8_lossy(&self.key).into_owned()
    }

    /// The value as text; panics if it is not UTF-8 (use `value` for binary data).
    pub fn value_str(&self) -> String {
        String::from_utf8(self.value.clone())
            .unwrap_or_else(|_| panic!("value of `{}` is not UTF-8", self.key_str()))
    }
}

/// How to reach a server with `etcdctl`: endpoints, TLS files and user. Cheap to clone; the
/// `with_*` methods make variants (another user, another client certificate, one member only).
#[derive(Clone, Debug)]
pub struct Etcdctl {
    program: PathBuf,
    endpoints: Vec<String>,
    ca: Option<PathBuf>,
    client_cert: Option<(PathBuf, PathBuf)>,
    user: Option<(String, String)>,
    dial_timeout: Duration,
    command_timeout: Duration,
}

impl Etcdctl {
    /// `etcdctl` for plain `endpoints`, no user.
    pub fn new(endpoints: Vec<String>) -> Etcdctl {
        Etcdctl {
            program: etcdctl_program(),
            endpoints,
            ca: None,
            client_cert: None,
            user: None,
            dial_timeout: Duration::from_secs(3),
            command_timeout: Duration::from_secs(10),
        }
    }

    /// etcdctl's `--dial-timeout` and `--command-timeout` (default 3 s and 10 s). etcdctl retries
    /// until they expire, so a call expected to fail (untrusted certificate, dead server) should
    /// use short ones, e.g. `with_timeouts(Duration::from_secs(1), Duration::from_secs(2))`.
    pub fn with_timeouts(mut self, dial: Duration, command: Duration) -> Etcdctl {
        self.dial_timeout = dial;
        self.command_timeout = command;
        self
    }

    /// Trusts the PKI's CA bundle and presents the CA A client certificate.
    pub fn with_pki(self, pki: &Pki) -> Etcdctl {
        self.with_ca_file(pki.ca_bundle())
            .with_client_cert(pki.client(Ca::A))
    }

    pub fn with_ca_file(mut self, ca: &Path) -> Etcdctl {
        self.ca = Some(ca.to_owned());
        self
    }

    pub fn with_client_cert(mut self, pair: &CertPair) -> Etcdctl {
        self.client_cert = Some((pair.cert.clone(), pair.key.clone()));
        self
    }

    pub fn without_client_cert(mut self) -> Etcdctl {
        self.client_cert = None;
        self
    }

    pub fn with_user(mut self, user: &str, password: &str) -> Etcdctl {
        self.user = Some((user.to_owned(), password.to_owned()));
        self
    }

    pub fn without_user(mut self) -> Etcdctl {
        self.user = None;
        self
    }

    pub fn with_endpoints(mut self, endpoints: Vec<String>) -> Etcdctl {
        self.endpoints = endpoints;
        self
    }

    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// An `etcdctl` command with the endpoints, TLS files and user set, and an empty environment
    /// (so no `ETCDCTL_*` variable of the developer leaks in). Add the subcommand and run it.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .env_clear()
            .arg(format!("--endpoints={}", self.endpoints.join(",")))
            .arg(format!(
                "--dial-timeout={}ms",
                self.dial_timeout.as_millis()
            ))
            .arg(format!(
                "--command-timeout={}ms",
                self.command_timeout.as_millis()
            ));
        if let Some(ca) = &self.ca {
            command.arg("--cacert").arg(ca);
        }
        if let Some((cert, key)) = &self.client_cert {
            command.arg("--cert").arg(cert).arg("--key").arg(key);
        }
        if let Some((user, password)) = &self.user {
            command.args(["--user", user, "--password", password]);
        }
        command
    }

    /// Runs `etcdctl <args>`; stdout on success, otherwise stderr (with the exit status).
    pub fn try_run(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        self.try_run_with_stdin(args, None)
    }

    /// Runs `etcdctl <args>` and returns stdout; panics with stderr on failure.
    pub fn run(&self, args: &[&str]) -> Vec<u8> {
        self.try_run(args).unwrap_or_else(|error| {
            panic!(
                "etcdctl {args:?} against {:?} failed: {error}",
                self.endpoints
            )
        })
    }

    fn try_run_with_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, String> {
        let mut command = self.command();
        command
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {:?}: {error}", self.program));
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("piped stdin");
            pipe.write_all(input).expect("write etcdctl stdin");
        }
        let output = child.wait_with_output().expect("wait for etcdctl");
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(format!(
                "{}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }

    /// Puts `value` (any bytes: it goes through stdin) at `key`.
    pub fn try_put(&self, key: &str, value: impl AsRef<[u8]>) -> Result<(), String> {
        self.try_run_with_stdin(&["put", "--", key], Some(value.as_ref()))
            .map(drop)
    }

    pub fn put(&self, key: &str, value: impl AsRef<[u8]>) {
        self.try_put(key, value)
            .unwrap_or_else(|error| panic!("etcdctl put `{key}` failed: {error}"));
    }

    /// The value at `key` as text, or the error (e.g. `permission denied`).
    pub fn try_get(&self, key: &str) -> Result<Option<String>, String> {
        let (_, kvs) = self.try_range(key, false)?;
        Ok(kvs.into_iter().next().map(|kv| kv.value_str()))
    }

    pub fn get(&self, key: &str) -> Option<String> {
        self.try_get(key)
            .unwrap_or_else(|error| panic!("etcdctl get `{key}` failed: {error}"))
    }

    /// Every key under `prefix` with its value, in key order.
    pub fn get_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        self.entries(prefix)
            .into_iter()
            .map(|kv| (kv.key_str(), kv.value_str()))
            .collect()
    }

    /// Every key under `prefix` with values and revisions, in key order (`""` = the whole store).
    pub fn entries(&self, prefix: &str) -> Vec<KeyValue> {
        self.try_range(prefix, true)
            .unwrap_or_else(|error| panic!("etcdctl get --prefix `{prefix}` failed: {error}"))
            .1
    }

    /// A byte-exact dump of everything under `prefix`: keys, values, create and mod revisions,
    /// versions and leases. Equal dumps before and after a command prove it wrote nothing there
    /// (a rewrite of the same value still changes the mod revision).
    pub fn dump_prefix_bytes(&self, prefix: &str) -> Vec<u8> {
        let mut dump = Vec::new();
        for kv in self.entries(prefix) {
            let mut header = String::new();
            let _ = writeln!(
                header,
                "create_revision={} mod_revision={} version={} lease={} key_len={} value_len={}",
                kv.create_revision,
                kv.mod_revision,
                kv.version,
                kv.lease,
                kv.key.len(),
                kv.value.len()
            );
            dump.extend_from_slice(header.as_bytes());
            dump.extend_from_slice(&kv.key);
            dump.push(b'\n');
            dump.extend_from_slice(&kv.value);
            dump.push(b'\n');
        }
        dump
    }

    /// The mod revision of `key` (netctl's `resourceVersion`), `None` if absent.
    pub fn mod_revision(&self, key: &str) -> Option<i64> {
        let (_, kvs) = self
            .try_range(key, false)
            .unwrap_or_else(|error| panic!("etcdctl get `{key}` failed: {error}"));
        kvs.first().map(|kv| kv.mod_revision)
    }

    /// The store's current revision (from a response header); it moves on every write anywhere.
    /// It reads the key `netctl-test/revision-probe`, so it needs a user allowed to (root).
    pub fn revision(&self) -> i64 {
        let (revision, _) = self
            .try_range("netctl-test/revision-probe", false)
            .unwrap_or_else(|error| panic!("etcdctl get (revision) failed: {error}"));
        revision
    }

    /// Deletes every key under `prefix`; returns how many were deleted.
    pub fn delete_prefix(&self, prefix: &str) -> u64 {
        let output = self.run(&["del", "--prefix", "--", prefix]);
        String::from_utf8_lossy(&output)
            .trim()
            .parse()
            .expect("etcdctl del prints a count")
    }

    /// Deletes `key`; returns whether it existed.
    pub fn delete(&self, key: &str) -> bool {
        let output = self.run(&["del", "--", key]);
        String::from_utf8_lossy(&output).trim() == "1"
    }

    /// `etcdctl get -w json` of `key` (or of everything under it): the header revision and the pairs.
    fn try_range(&self, key: &str, prefix: bool) -> Result<(i64, Vec<KeyValue>), String> {
        let mut args = vec!["get", "-w", "json"];
        if prefix {
            args.push("--prefix");
        }
        args.extend(["--", key]);
        let output = self.try_run(&args)?;
        let json: Value = serde_json::from_slice(&output)
            .unwrap_or_else(|error| panic!("etcdctl -w json printed invalid JSON ({error})"));
        Ok((json_i64(&json["header"], "revision"), parse_kvs(&json)))
    }
}

fn json_i64(object: &Value, field: &str) -> i64 {
    // etcdctl's JSON omits zero fields.
    object.get(field).and_then(Value::as_i64).unwrap_or(0)
}

fn parse_kvs(json: &Value) -> Vec<KeyValue> {
    let Some(kvs) = json.get("kvs").and_then(Value::as_array) else {
        return Vec::new();
    };
    kvs.iter()
        .map(|kv| KeyValue {
            key: base64_field(kv, "key"),
            value: base64_field(kv, "value"),
            create_revision: json_i64(kv, "create_revision"),
            mod_revision: json_i64(kv, "mod_revision"),
            version: json_i64(kv, "version"),
            lease: json_i64(kv, "lease"),
        })
        .collect()
}

fn base64_field(object: &Value, field: &str) -> Vec<u8> {
    let text = object.get(field).and_then(Value::as_str).unwrap_or("");
    decode_base64(text).unwrap_or_else(|| panic!("etcdctl printed invalid base64 in `{field}`"))
}

/// Decodes standard padded base64 (what Go's encoding/json makes of `[]byte`). Twenty lines here
/// spare a dev-dependency.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn sextet(byte: u8) -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let padding = chunk.iter().rev().take_while(|&&byte| byte == b'=').count();
        if padding > 2 {
            return None;
        }
        let mut group = 0u32;
        for &byte in &chunk[..4 - padding] {
            group = (group << 6) | sextet(byte)?;
        }
        group <<= 6 * padding as u32;
        let decoded = [(group >> 16) as u8, (group >> 8) as u8, group as u8];
        out.extend_from_slice(&decoded[..3 - padding]);
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// Members

/// Settings shared by a single server and a cluster.
#[derive(Clone, Debug)]
struct Options {
    pki: Option<Pki>,
    dual_stack: bool,
    auth: Option<AuthSetup>,
    start_timeout: Duration,
    heartbeat_interval: Option<Duration>,
    election_timeout: Option<Duration>,
    extra_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pki: None,
            dual_stack: false,
            auth: None,
            start_timeout: DEFAULT_START_TIMEOUT,
            heartbeat_interval: None,
            election_timeout: None,
            extra_args: Vec::new(),
        }
    }
}

impl Options {
    fn scheme(&self) -> &'static str {
        if self.pki.is_some() { "https" } else { "http" }
    }

    /// etcdctl for `endpoints` with this TLS setup and no user.
    fn etcdctl(&self, endpoints: Vec<String>) -> Etcdctl {
        let etcdctl = Etcdctl::new(endpoints);
        match &self.pki {
            Some(pki) => etcdctl.with_pki(pki),
            None => etcdctl,
        }
    }
}

/// One etcd process and its directory.
struct Member {
    // Declared first so it is killed before the directory below is removed.
    child: Option<OwnedChild>,
    name: String,
    client_port: u16,
    peer_port: u16,
    client_urls: Vec<String>,
    advertise_url: String,
    args: Vec<OsString>,
    log: PathBuf,
    log_offset: u64,
    dir: TempDir,
}

impl Member {
    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn spawn(&mut self) {
        // A restart appends to the same log: remember where this run's lines begin.
        self.log_offset = std::fs::metadata(&self.log).map_or(0, |meta| meta.len());
        let mut command = Command::new(etcd_program());
        command.env_clear().args(&self.args);
        self.child = Some(OwnedChild::spawn(command, self.dir.path(), &self.log));
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill();
        }
    }

    fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| child.exited().is_none())
    }

    /// Sends `signal` to the running etcd process; panics when it is not running.
    fn signal(&mut self, signal: rustix::process::Signal) {
        let pid = self
            .child
            .as_ref()
            .map(OwnedChild::id)
            .unwrap_or_else(|| panic!("etcd member `{}` is not running", self.name));
        let pid = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .expect("a process id is a positive i32");
        rustix::process::kill_process(pid, signal)
            .unwrap_or_else(|error| panic!("cannot signal etcd member `{}`: {error}", self.name));
    }

    fn log_tail(&self) -> String {
        process::log_tail(&self.log, process::LOG_TAIL_LINES)
    }

    /// What the current run of etcd has logged so far.
    fn log_since_spawn(&self) -> String {
        let bytes = std::fs::read(&self.log).unwrap_or_default();
        let start = usize::try_from(self.log_offset)
            .unwrap_or(0)
            .min(bytes.len());
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "--- etcd member `{}` log tail ---\n{}",
                self.name,
                self.log_tail()
            );
        }
        process::release_ports(&[self.client_port, self.peer_port]);
    }
}

/// Builds (without starting) `count` members wired into one cluster.
fn plan_members(options: &Options, count: usize) -> Vec<Member> {
    let ports = process::free_tcp_ports(2 * count, options.dual_stack);
    let scheme = options.scheme();
    let dirs: Vec<TempDir> = (0..count).map(|_| process::server_dir("etcd")).collect();
    // The directory's random suffix makes names unique, so readiness can tell our server from a
    // foreign one that won a port race.
    let unique = dirs[0]
        .path()
        .file_name()
        .map(|name| {
            name.to_string_lossy()
                .rsplit('-')
                .next()
                .unwrap_or("x")
                .to_owned()
        })
        .unwrap_or_default();
    let names: Vec<String> = (0..count)
        .map(|i| format!("netctl-test-{unique}-{i}"))
        .collect();
    let peer_urls: Vec<String> = (0..count)
        .map(|i| format!("http://127.0.0.1:{}", ports[2 * i + 1]))
        .collect();
    let initial_cluster = names
        .iter()
        .zip(&peer_urls)
        .map(|(name, url)| format!("{name}={url}"))
        .collect::<Vec<_>>()
        .join(",");

    dirs.into_iter()
        .enumerate()
        .map(|(i, dir)| {
            let client_port = ports[2 * i];
            let peer_port = ports[2 * i + 1];
            let advertise_url = format!("{scheme}://127.0.0.1:{client_port}");
            let mut client_urls = vec![advertise_url.clone()];
            if options.dual_stack {
                client_urls.push(format!("{scheme}://[::1]:{client_port}"));
            }
            let log = dir.path().join("etcd.log");
            let mut args: Vec<OsString> = Vec::new();
            let mut arg = |flag: &str, value: &str| {
                args.push(flag.into());
                args.push(value.into());
            };
            arg("--name", &names[i]);
            arg("--data-dir", &dir.path().join("data").to_string_lossy());
            arg("--listen-client-urls", &client_urls.join(","));
            arg("--advertise-client-urls", &advertise_url);
            arg("--listen-peer-urls", &peer_urls[i]);
            arg("--initial-advertise-peer-urls", &peer_urls[i]);
            arg("--initial-cluster", &initial_cluster);
            arg("--initial-cluster-state", "new");
            arg("--initial-cluster-token", &format!("netctl-test-{unique}"));
            arg("--logger", "zap");
            arg("--log-outputs", "stderr");
            if let Some(interval) = options.heartbeat_interval {
                arg("--heartbeat-interval", &interval.as_millis().to_string());
            }
            if let Some(timeout) = options.election_timeout {
                arg("--election-timeout", &timeout.as_millis().to_string());
            }
            if let Some(pki) = &options.pki {
                arg("--cert-file", &pki.server().cert.to_string_lossy());
                arg("--key-file", &pki.server().key.to_string_lossy());
                arg("--trusted-ca-file", &pki.ca_bundle().to_string_lossy());
                args.push("--client-cert-auth".into());
            }
            if let Some(ttl) = options.auth.as_ref().and_then(|auth| auth.token_ttl) {
                args.push("--auth-token-ttl".into());
                args.push(ttl.as_secs().to_string().into());
            }
            args.extend(options.extra_args.iter().map(OsString::from));
            Member {
                child: None,
                name: names[i].clone(),
                client_port,
                peer_port,
                client_urls,
                advertise_url,
                args,
                log,
                log_offset: 0,
                dir,
            }
        })
        .collect()
}

enum StartFailure {
    /// Another process took one of our ports first: start again on new ones.
    PortTaken,
    Failed(String),
}

/// Waits until every member in `which` answers `endpoint health` as itself.
fn wait_healthy(
    members: &mut [Member],
    which: &[usize],
    admin: &Etcdctl,
    timeout: Duration,
) -> Result<(), StartFailure> {
    let deadline = Instant::now() + timeout;
    let mut pending: Vec<usize> = which.to_vec();
    while !pending.is_empty() {
        let mut still_pending = Vec::new();
        for &i in &pending {
            let member = &mut members[i];
            if !member.is_running() {
                let tail = member.log_tail();
                if tail.contains("address already in use") {
                    return Err(StartFailure::PortTaken);
                }
                return Err(StartFailure::Failed(format!(
                    "etcd member `{}` exited during start; log tail:\n{tail}",
                    member.name
                )));
            }
            // etcd logs this once its client listeners serve. Probing before would make etcdctl
            // sit in gRPC's dial backoff (about 1 s) after etcd is already up.
            if !member.log_since_spawn().contains(READY_MESSAGE) {
                still_pending.push(i);
                continue;
            }
            let probe = admin
                .clone()
                .with_endpoints(vec![member.advertise_url.clone()])
                .with_timeouts(Duration::from_secs(1), Duration::from_secs(3));
            if probe.try_run(&["endpoint", "health"]).is_err() {
                still_pending.push(i);
                continue;
            }
            // A foreign etcd that won the port race would also be healthy: check the name.
            let list = probe
                .try_run(&["member", "list", "-w", "json"])
                .unwrap_or_default();
            if !String::from_utf8_lossy(&list).contains(&format!("\"{}\"", member.name)) {
                return Err(StartFailure::PortTaken);
            }
        }
        pending = still_pending;
        if pending.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            let tails: String = pending
                .iter()
                .map(|&i| {
                    format!(
                        "--- `{}` log tail ---\n{}\n",
                        members[i].name,
                        members[i].log_tail()
                    )
                })
                .collect();
            return Err(StartFailure::Failed(format!(
                "etcd did not become healthy within {timeout:?}\n{tails}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Starts `count` members, retrying on port races, sets up auth; returns them with the admin
/// etcdctl (root when auth is set up).
fn launch(options: &Options, count: usize) -> (Vec<Member>, Etcdctl) {
    for _ in 0..START_ATTEMPTS {
        let mut members = plan_members(options, count);
        for member in &mut members {
            member.spawn();
        }
        let endpoints: Vec<String> = members
            .iter()
            .map(|member| member.advertise_url.clone())
            .collect();
        let anonymous = options.etcdctl(endpoints);
        let all: Vec<usize> = (0..count).collect();
        match wait_healthy(&mut members, &all, &anonymous, options.start_timeout) {
            Ok(()) => {}
            Err(StartFailure::PortTaken) => continue,
            Err(StartFailure::Failed(message)) => panic!("{message}"),
        }
        let admin = match &options.auth {
            Some(auth) => {
                auth.apply(&anonymous);
                anonymous.with_user("root", &auth.root_password)
            }
            None => anonymous,
        };
        return (members, admin);
    }
    panic!("etcd lost a port race {START_ATTEMPTS} times in a row; is the machine out of ports?");
}

/// The body of `GET path` from a plain-HTTP server on `127.0.0.1:port` (etcd's `/metrics`).
fn http_get(port: u16, path: &str) -> String {
    use std::io::Read as _;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|error| panic!("cannot connect to 127.0.0.1:{port}: {error}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("set a read timeout");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    response
}

fn netctl_config_yaml(endpoints: &[String], options: &Options) -> String {
    // JSON strings are valid YAML scalars, and quote whatever a path or password holds.
    let quote = |value: &str| serde_json::to_string(value).expect("a string serializes");
    let mut yaml = String::from(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n",
    );
    let _ = writeln!(yaml, "  etcdEndpoints: {}", quote(&endpoints.join(",")));
    if let Some(pki) = &options.pki {
        let client = pki.client(Ca::A);
        let _ = writeln!(
            yaml,
            "  etcdCACertFile: {}",
            quote(&pki.ca_bundle().to_string_lossy())
        );
        let _ = writeln!(
            yaml,
            "  etcdCertFile: {}",
            quote(&client.cert.to_string_lossy())
        );
        let _ = writeln!(
            yaml,
            "  etcdKeyFile: {}",
            quote(&client.key.to_string_lossy())
        );
    }
    if let Some(auth) = &options.auth {
        let _ = writeln!(yaml, "  etcdUsername: {}", quote(&auth.user));
        let _ = writeln!(yaml, "  etcdPassword: {}", quote(&auth.password));
    }
    yaml
}

/// Generates the key-value helper methods of a server type, delegating to its admin `Etcdctl`.
macro_rules! kv_helpers {
    () => {
        /// `etcdctl` as the admin (root when auth is set up), endpoints and certificates set.
        pub fn etcdctl(&self) -> std::process::Command {
            self.admin.command()
        }

        /// The admin `Etcdctl` (root when auth is set up; CA A client certificate with TLS).
        pub fn admin(&self) -> Etcdctl {
            self.admin.clone()
        }

        /// `Etcdctl` as another user (same endpoints and certificates).
        pub fn as_user(&self, user: &str, password: &str) -> Etcdctl {
            self.admin.clone().with_user(user, password)
        }

        /// `Etcdctl` as the limited user of the [`AuthSetup`]; panics without auth.
        pub fn as_limited_user(&self) -> Etcdctl {
            let auth = self.auth().expect("this server was started without auth");
            self.as_user(&auth.user, &auth.password)
        }

        /// `Etcdctl` with no user (with TLS, the client certificate still identifies it).
        pub fn anonymous(&self) -> Etcdctl {
            self.admin.clone().without_user()
        }

        pub fn put(&self, key: &str, value: impl AsRef<[u8]>) {
            self.admin.put(key, value)
        }

        pub fn get(&self, key: &str) -> Option<String> {
            self.admin.get(key)
        }

        /// The value at `key` parsed as JSON (what netctl stores), if there is one.
        pub fn get_json(&self, key: &str) -> Option<serde_json::Value> {
            self.get(key)
                .map(|text| serde_json::from_str(&text).expect("a JSON value"))
        }

        pub fn get_prefix(&self, prefix: &str) -> Vec<(String, String)> {
            self.admin.get_prefix(prefix)
        }

        pub fn entries(&self, prefix: &str) -> Vec<KeyValue> {
            self.admin.entries(prefix)
        }

        pub fn dump_prefix_bytes(&self, prefix: &str) -> Vec<u8> {
            self.admin.dump_prefix_bytes(prefix)
        }

        pub fn mod_revision(&self, key: &str) -> Option<i64> {
            self.admin.mod_revision(key)
        }

        pub fn revision(&self) -> i64 {
            self.admin.revision()
        }

        pub fn delete(&self, key: &str) -> bool {
            self.admin.delete(key)
        }

        pub fn delete_prefix(&self, prefix: &str) -> u64 {
            self.admin.delete_prefix(prefix)
        }

        /// A netctl client config file (`NetAPIConfig`, calicoctl's field names) for these
        /// endpoints: the CA bundle and CA A client certificate with TLS, the limited user of the
        /// [`AuthSetup`] with auth. Feed it to [`super::Netctl::config_file`].
        pub fn netctl_config_yaml(&self) -> String {
            netctl_config_yaml(&self.endpoints(), &self.options)
        }

        /// The PKI whose certificates the server uses, if TLS.
        pub fn pki(&self) -> Option<&Pki> {
            self.options.pki.as_ref()
        }

        pub fn auth(&self) -> Option<&AuthSetup> {
            self.options.auth.as_ref()
        }

        /// `http` or `https`.
        pub fn scheme(&self) -> &'static str {
            self.options.scheme()
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Single server

/// Configures an [`EtcdServer`]; see [`EtcdServer::builder`].
#[derive(Debug, Default)]
pub struct EtcdServerBuilder {
    options: Options,
}

impl EtcdServerBuilder {
    /// Serves `https` with the PKI's server certificate and requires client certificates from CA A
    /// or CA B (`--client-cert-auth --trusted-ca-file ca-bundle.pem`).
    pub fn tls(mut self, pki: &Pki) -> Self {
        self.options.pki = Some(pki.clone());
        self
    }

    /// Listens on `[::1]` as well as `127.0.0.1`, on the same port.
    pub fn dual_stack(mut self) -> Self {
        self.options.dual_stack = true;
        self
    }

    /// Sets up RBAC and enables auth once the server is healthy.
    pub fn auth(mut self, auth: AuthSetup) -> Self {
        self.options.auth = Some(auth);
        self
    }

    /// How long to wait for health (default 20 s).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.options.start_timeout = timeout;
        self
    }

    /// Any other etcd flag, e.g. `--max-txn-ops=16`.
    pub fn arg(mut self, arg: &str) -> Self {
        self.options.extra_args.push(arg.to_owned());
        self
    }

    /// Starts etcd and waits until it is healthy (and auth is set up); panics with the log tail
    /// otherwise.
    pub fn start(mut self) -> EtcdServer {
        // A lone member has nobody to disagree with, so short raft timeouts cost nothing, and
        // etcd's defaults (100 ms / 1 s) would make it wait up to a second to elect itself.
        self.options.heartbeat_interval = Some(Duration::from_millis(20));
        self.options.election_timeout = Some(Duration::from_millis(200));
        let (mut members, admin) = launch(&self.options, 1);
        EtcdServer {
            member: members.pop().expect("one member"),
            admin,
            options: self.options,
        }
    }
}

/// One etcd server; killed when dropped.
pub struct EtcdServer {
    member: Member,
    admin: Etcdctl,
    options: Options,
}

impl std::fmt::Debug for EtcdServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdServer")
            .field("client_urls", &self.member.client_urls)
            .field("dir", &self.member.dir.path())
            .finish_non_exhaustive()
    }
}

impl EtcdServer {
    pub fn builder() -> EtcdServerBuilder {
        EtcdServerBuilder::default()
    }

    /// A plain server on `127.0.0.1`.
    pub fn start() -> EtcdServer {
        EtcdServer::builder().start()
    }

    /// `http(s)://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        self.member.advertise_url.clone()
    }

    /// netctl's etcd datastore connected to this server (plain, no user), for tests that call the
    /// library; within a tokio runtime.
    pub async fn connect(&self) -> netctl::datastore::etcd::EtcdStore {
        use netctl::config::{EndpointSource, EtcdEndpoint, EtcdSettings};
        let settings = EtcdSettings {
            endpoints: EndpointSource::Static(vec![EtcdEndpoint::parse(&self.endpoint()).unwrap()]),
            credentials: None,
            tls: None,
            resolver: None,
        };
        netctl::datastore::etcd::EtcdStore::connect(
            &settings,
            netctl::datastore::etcd::Timeouts::default(),
        )
        .await
        .expect("connect to the test etcd")
    }

    /// The endpoints to give a client: `[endpoint()]` (see `client_urls` for every listener).
    pub fn endpoints(&self) -> Vec<String> {
        vec![self.endpoint()]
    }

    /// Every URL the server listens on: `127.0.0.1`, then `[::1]` when dual-stack.
    pub fn client_urls(&self) -> Vec<String> {
        self.member.client_urls.clone()
    }

    /// `http(s)://[::1]:<port>` when dual-stack.
    pub fn ipv6_endpoint(&self) -> Option<String> {
        self.member.client_urls.get(1).cloned()
    }

    /// `http(s)://localhost:<port>` (the server certificate has the `localhost` SAN).
    pub fn localhost_endpoint(&self) -> String {
        format!("{}://localhost:{}", self.scheme(), self.port())
    }

    pub fn port(&self) -> u16 {
        self.member.client_port
    }

    /// etcd's `--data-dir`.
    pub fn data_dir(&self) -> PathBuf {
        self.member.data_dir()
    }

    /// The server's own temporary directory (data dir, log, pid files).
    pub fn dir(&self) -> &Path {
        self.member.dir.path()
    }

    pub fn log_path(&self) -> &Path {
        &self.member.log
    }

    /// The last 40 lines of etcd's log.
    pub fn log_tail(&self) -> String {
        self.member.log_tail()
    }

    pub fn pid(&self) -> Option<u32> {
        self.member.child.as_ref().map(OwnedChild::id)
    }

    pub fn is_running(&mut self) -> bool {
        self.member.is_running()
    }

    /// Kills etcd (SIGKILL), keeping its data and ports.
    pub fn kill(&mut self) {
        self.member.kill();
    }

    /// Stops etcd with SIGSTOP: its sockets stay open and the kernel still accepts connections,
    /// but nothing answers (a hung server). [`EtcdServer::resume`] continues it; dropping a
    /// paused server kills it all the same.
    pub fn pause(&mut self) {
        self.member.signal(rustix::process::Signal::STOP);
    }

    /// Continues a server stopped by [`EtcdServer::pause`] (SIGCONT).
    pub fn resume(&mut self) {
        self.member.signal(rustix::process::Signal::CONT);
    }

    /// Starts etcd again on the same data and ports and waits until it is healthy.
    pub fn restart(&mut self) {
        self.member.kill();
        self.member.spawn();
        let admin = self.admin.clone();
        let timeout = self.options.start_timeout;
        match wait_healthy(
            std::slice::from_mut(&mut self.member),
            &[0],
            &admin,
            timeout,
        ) {
            Ok(()) => {}
            Err(StartFailure::PortTaken) => panic!(
                "etcd could not take its ports back on restart; log tail:\n{}",
                self.log_tail()
            ),
            Err(StartFailure::Failed(message)) => panic!("{message}"),
        }
    }

    kv_helpers!();
}

// ---------------------------------------------------------------------------------------------
// Cluster

/// Configures an [`EtcdCluster`]; see [`EtcdCluster::builder`].
#[derive(Debug)]
pub struct EtcdClusterBuilder {
    options: Options,
    members: usize,
}

impl EtcdClusterBuilder {
    /// Number of members (default 3).
    pub fn members(mut self, count: usize) -> Self {
        assert!(count >= 1, "a cluster needs at least one member");
        self.members = count;
        self
    }

    /// As [`EtcdServerBuilder::tls`], for every member.
    pub fn tls(mut self, pki: &Pki) -> Self {
        self.options.pki = Some(pki.clone());
        self
    }

    pub fn auth(mut self, auth: AuthSetup) -> Self {
        self.options.auth = Some(auth);
        self
    }

    /// Raft timing (etcd's defaults are 100 ms and 1000 ms); shorter means faster failover but
    /// more spurious elections on a loaded machine.
    pub fn raft_timing(mut self, heartbeat_interval: Duration, election_timeout: Duration) -> Self {
        self.options.heartbeat_interval = Some(heartbeat_interval);
        self.options.election_timeout = Some(election_timeout);
        self
    }

    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.options.start_timeout = timeout;
        self
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.options.extra_args.push(arg.to_owned());
        self
    }

    /// Starts every member and waits until each one is healthy.
    pub fn start(self) -> EtcdCluster {
        let (members, admin) = launch(&self.options, self.members);
        EtcdCluster {
            members,
            admin,
            options: self.options,
        }
    }
}

/// A cluster of etcd members on loopback; every member is killed when dropped.
pub struct EtcdCluster {
    members: Vec<Member>,
    admin: Etcdctl,
    options: Options,
}

impl std::fmt::Debug for EtcdCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdCluster")
            .field("endpoints", &self.endpoints())
            .finish_non_exhaustive()
    }
}

impl EtcdCluster {
    pub fn builder() -> EtcdClusterBuilder {
        EtcdClusterBuilder {
            options: Options::default(),
            members: 3,
        }
    }

    /// A plain 3-member cluster.
    pub fn start() -> EtcdCluster {
        EtcdCluster::builder().start()
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// One client URL per member (`127.0.0.1`), in member order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|member| member.advertise_url.clone())
            .collect()
    }

    /// The client URL of member `i`.
    pub fn endpoint(&self, i: usize) -> String {
        self.members[i].advertise_url.clone()
    }

    pub fn client_urls(&self, i: usize) -> Vec<String> {
        self.members[i].client_urls.clone()
    }

    pub fn data_dir(&self, i: usize) -> PathBuf {
        self.members[i].data_dir()
    }

    pub fn log_tail(&self, i: usize) -> String {
        self.members[i].log_tail()
    }

    pub fn is_running(&mut self, i: usize) -> bool {
        self.members[i].is_running()
    }

    /// Kills member `i` (SIGKILL) and waits for it to exit; its data and ports are kept.
    ///
    /// Killing the leader stalls writes until the others elect a new one (about 1–2 s with etcd's
    /// default raft timing); a write sent meanwhile can fail with `etcdserver: request timed out`
    /// after 7 s. That is real etcd behaviour netctl must cope with; a test that only wants the
    /// cluster usable again calls [`EtcdCluster::leader`], which waits for the new leader.
    pub fn kill_member(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Stops member `i` with SIGSTOP (a hung member: connections are accepted, nothing answers).
    pub fn pause_member(&mut self, i: usize) {
        self.members[i].signal(rustix::process::Signal::STOP);
    }

    /// Continues member `i` after [`EtcdCluster::pause_member`] (SIGCONT).
    pub fn resume_member(&mut self, i: usize) {
        self.members[i].signal(rustix::process::Signal::CONT);
    }

    /// Starts member `i` again on its data and ports and waits until it is healthy.
    pub fn restart_member(&mut self, i: usize) {
        self.members[i].kill();
        self.members[i].spawn();
        let admin = self.admin.clone();
        match wait_healthy(&mut self.members, &[i], &admin, self.options.start_timeout) {
            Ok(()) => {}
            Err(StartFailure::PortTaken) => panic!(
                "etcd member {i} could not take its ports back on restart; log tail:\n{}",
                self.log_tail(i)
            ),
            Err(StartFailure::Failed(message)) => panic!("{message}"),
        }
    }

    /// The port of member `i`'s client URL.
    pub fn port(&self, i: usize) -> u16 {
        self.members[i].client_port
    }

    /// How many KV transactions member `i` has answered with OK (its `/metrics`): which member a
    /// client writes through.
    pub fn transactions_served(&self, i: usize) -> u64 {
        let metrics = http_get(self.members[i].client_port, "/metrics");
        metrics
            .lines()
            .find(|line| {
                line.starts_with("grpc_server_handled_total{")
                    && line.contains("grpc_code=\"OK\"")
                    && line.contains("grpc_method=\"Txn\"")
            })
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|count| count.trim().parse::<f64>().ok())
            .map_or(0, |count| count as u64)
    }

    /// Makes member `to` the leader (`etcdctl move-leader`), waiting until it is.
    pub fn move_leader(&mut self, to: usize) {
        let leader = self.leader();
        if leader == to {
            return;
        }
        let status = self
            .member_etcdctl(to)
            .run(&["endpoint", "status", "-w", "json"]);
        let json: Value = serde_json::from_slice(&status).expect("endpoint status is JSON");
        let id = json[0]["Status"]["header"]["member_id"]
            .as_u64()
            .expect("a member id");
        self.member_etcdctl(leader)
            .run(&["move-leader", &format!("{id:x}")]);
        let moved = process::poll_until(
            self.options.start_timeout,
            Duration::from_millis(100),
            || (self.leader() == to).then_some(()),
        );
        assert!(moved.is_some(), "leadership did not move to member {to}");
    }

    /// `Etcdctl` (admin identity) talking to member `i` only.
    pub fn member_etcdctl(&self, i: usize) -> Etcdctl {
        self.admin.clone().with_endpoints(vec![self.endpoint(i)])
    }

    /// The index of the current leader, waiting (up to the start timeout) for one to be elected
    /// among the running members.
    pub fn leader(&mut self) -> usize {
        let live: Vec<usize> = (0..self.len())
            .filter(|&i| self.members[i].is_running())
            .collect();
        let endpoints: Vec<String> = live.iter().map(|&i| self.endpoint(i)).collect();
        let status = self.admin.clone().with_endpoints(endpoints);
        let found = process::poll_until(
            self.options.start_timeout,
            Duration::from_millis(100),
            || {
                let output = status.try_run(&["endpoint", "status", "-w", "json"]).ok()?;
                let json: Value = serde_json::from_slice(&output).ok()?;
                json.as_array()?.iter().find_map(|entry| {
                    let member_id = entry["Status"]["header"]["member_id"].as_u64()?;
                    let leader = entry["Status"]["leader"].as_u64()?;
                    let endpoint = entry["Endpoint"].as_str()?;
                    (member_id == leader).then(|| endpoint.to_owned())
                })
            },
        );
        let endpoint = found.unwrap_or_else(|| {
            panic!(
                "no etcd leader elected within {:?}",
                self.options.start_timeout
            )
        });
        (0..self.len())
            .find(|&i| self.endpoint(i) == endpoint)
            .expect("the leader is one of our members")
    }

    kv_helpers!();
}
