//! `netctl node run` through the binary: every flag and configuration mode, the dry-run command
//! (snapshots), validation (nothing touched on error), and real runs against a stand-in container engine.
//!
//! No Docker engine runs here. The stand-in is a small shell script called `docker` (or `podman`) put
//! first on PATH: it records its arguments and, for `logs --follow`, prints scripted log lines, then
//! either ends (the container stopped) or keeps following. The binary runs with a cleared environment,
//! so the developer's settings never leak in, and with `--request-timeout 1s` so an unreachable
//! datastore costs a second, not ten. Host preparation (which writes to `/proc/sys`) is skipped with
//! `NETCTL_SKIP_HOST_PREP`; real runs need root, so without it they run in a user namespace where the
//! process is root (`unshare --map-root-user`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::snapshot::{self, netctl_snapshot};
use crate::support::{Netctl, Run};
use tempfile::TempDir;

const SYSTEM_PATH: &str = "/usr/bin:/bin";

const CA_PEM: &str =
    "-----BEGIN CERTIFICATE-----\nQ0EgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n";
const CERT_PEM: &str =
    "-----BEGIN CERTIFICATE-----\nY2xpZW50IGNlcnRpZmljYXRl\n-----END CERTIFICATE-----\n";
const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0IGtleQ==\n-----END PRIVATE KEY-----\n";
const PASSWORD: &str = "hunter2-very-secret";

/// A temporary directory with a stand-in engine, its script, and what it recorded.
struct Scene {
    temp: TempDir,
}

impl Scene {
    fn new() -> Scene {
        let scene = Scene {
            temp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(scene.bin()).unwrap();
        std::fs::create_dir_all(scene.engine_dir()).unwrap();
        scene
    }

    fn root(&self) -> &Path {
        self.temp.path()
    }

    fn bin(&self) -> PathBuf {
        self.root().join("bin")
    }

    fn engine_dir(&self) -> PathBuf {
        self.root().join("engine")
    }

    fn secrets_dir(&self) -> PathBuf {
        self.root().join("secrets")
    }

    /// Installs the stand-in engine under `name` (`docker` or `podman`).
    fn install_engine(&self, name: &str) {
        let script = format!(
            r#"#!/bin/sh
# Stand-in container engine for netctl's tests: records argv, replays scripted output.
state='{state}'
{{ for argument in "$@"; do printf '%s\n' "$argument"; done; printf '%s\n' '--'; }} >> "$state/calls"
reply() {{
    [ -f "$state/$1.stdout" ] && cat "$state/$1.stdout"
    [ -f "$state/$1.stderr" ] && cat "$state/$1.stderr" >&2
    if [ -f "$state/$1.status" ]; then exit "$(cat "$state/$1.status")"; fi
    exit 0
}}
case "$1" in
    logs)
        [ -f "$state/logs.stdout" ] && cat "$state/logs.stdout"
        [ -f "$state/logs.stderr" ] && cat "$state/logs.stderr" >&2
        [ -f "$state/logs.follow" ] && exec sleep 30
        exit 0 ;;
    *) reply "$1" ;;
esac
"#,
            state = self.engine_dir().display()
        );
        let path = self.bin().join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Scripts the engine's answer to one subcommand: `file` is e.g. `rm.status` or `logs.stdout`.
    fn script(&self, file: &str, contents: &str) {
        std::fs::write(self.engine_dir().join(file), contents).unwrap();
    }

    /// The recorded engine calls, each as its argv (without the program name).
    fn calls(&self) -> Vec<Vec<String>> {
        let Ok(text) = std::fs::read_to_string(self.engine_dir().join("calls")) else {
            return Vec::new();
        };
        let mut calls = Vec::new();
        let mut current = Vec::new();
        for line in text.lines() {
            if line == "--" {
                calls.push(std::mem::take(&mut current));
            } else {
                current.push(line.to_string());
            }
        }
        calls
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.root().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// PATH with the stand-in first, then the system directories (not `/usr/local/bin`, where a real
    /// docker client may live).
    fn path(&self) -> String {
        format!("{}:{SYSTEM_PATH}", self.bin().display())
    }

    /// `netctl` with the stand-in on PATH, the scene's directory as HOME and the given variables.
    fn netctl(&self, variables: &[(&str, &str)]) -> Netctl {
        self.netctl_with_path(&self.path(), variables)
    }

    fn netctl_with_path(&self, path: &str, variables: &[(&str, &str)]) -> Netctl {
        let mut netctl = Netctl::new();
        self.sandbox(&mut netctl, path, variables);
        netctl.request_timeout("1s");
        netctl
    }

    /// Like [`Scene::netctl`], but as root: directly when the tests run as root, else in a user
    /// namespace that maps the current user to root.
    fn netctl_as_root(&self, variables: &[(&str, &str)], arguments: &[&str]) -> Output {
        let mut netctl = if running_as_root() {
            Netctl::new()
        } else {
            let mut netctl = Netctl::with_program(program("unshare"));
            netctl
                .args(["--map-root-user", "--"])
                .arg(Netctl::program());
            netctl
        };
        self.sandbox(&mut netctl, &self.path(), variables);
        netctl
            .args(["--request-timeout", "1s"])
            .args(arguments)
            .output()
    }

    fn sandbox(&self, netctl: &mut Netctl, path: &str, variables: &[(&str, &str)]) {
        netctl
            .env("PATH", path)
            .env("HOME", self.root())
            .env("NETCTL_SKIP_HOST_PREP", "1");
        for (name, value) in variables {
            netctl.env(name, value);
        }
    }

    /// What snapshots leave out: the temporary directory, shown as `[TEMP]`.
    fn filters(&self) -> [(String, &'static str); 1] {
        [(self.root().display().to_string(), "[TEMP]")]
    }

    /// The snapshot transcript of one run (for snapshots of several runs together).
    fn transcript(&self, output: &Output) -> String {
        snapshot::transcript(&Run::from(output.clone()), self.filters())
    }

    fn redact(&self, text: &str) -> String {
        text.replace(&self.root().display().to_string(), "[TEMP]")
    }
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

fn program(name: &str) -> PathBuf {
    SYSTEM_PATH
        .split(':')
        .map(|directory| Path::new(directory).join(name))
        .find(|candidate| candidate.exists())
        .unwrap_or_else(|| panic!("`{name}` is needed by this test: install util-linux"))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const PLAIN: &[(&str, &str)] = &[
    ("DATASTORE_TYPE", "etcdv3"),
    (
        "ETCD_ENDPOINTS",
        "http://10.0.0.1:2379,http://[fd00::1]:2379",
    ),
];

const IMAGE: &[&str] = &["--node-image", "quay.io/calico/node:v3.28.0"];

/// The environment of a TLS configuration whose files are in `scene`, with RBAC credentials.
fn tls_files(scene: &Scene) -> Vec<(&'static str, String)> {
    vec![
        ("DATASTORE_TYPE", "etcdv3".into()),
        ("ETCD_ENDPOINTS", "https://etcd-1.example.net:2379".into()),
        (
            "ETCD_CA_CERT_FILE",
            scene.write("ca.pem", CA_PEM).display().to_string(),
        ),
        (
            "ETCD_CERT_FILE",
            scene.write("client.pem", CERT_PEM).display().to_string(),
        ),
        (
            "ETCD_KEY_FILE",
            scene.write("client-key.pem", KEY_PEM).display().to_string(),
        ),
        ("ETCD_USERNAME", "calico-node".into()),
        ("ETCD_PASSWORD", PASSWORD.into()),
    ]
}

fn borrowed<'a>(variables: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    variables
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect()
}

/// A NetAPIConfig file with inline PEM material and credentials (inline PEM comes only from a file).
fn inline_config(scene: &Scene) -> PathBuf {
    let indent = |pem: &str| {
        pem.lines()
            .map(|line| format!("    {line}\n"))
            .collect::<String>()
    };
    scene.write(
        "netctl.cfg",
        &format!(
            "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {{}}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://10.0.0.1:2379\n  etcdUsername: calico-node\n  etcdPassword: {PASSWORD}\n  etcdCACert: |\n{}  etcdCert: |\n{}  etcdKey: |\n{}",
            indent(CA_PEM),
            indent(CERT_PEM),
            indent(KEY_PEM)
        ),
    )
}

// ---------------------------------------------------------------------------------------------------
// Dry run: the exact command.

#[test]
fn dry_run_plain_with_every_node_flag() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let felix = scene.write("felix.cfg", "[global]\n");
    let output = scene
        .netctl(PLAIN)
        .args(["node", "run", "--dry-run", "--name", "Node-1"])
        .args(IMAGE)
        .args(["--ip", "10.0.0.5", "--ip6", "autodetect", "--as", "1.10"])
        .args(["--ip-autodetection-method", "interface=eth.*,ens[0-9]+"])
        .args(["--ip6-autodetection-method", "cidr=fd00::/8"])
        .args(["--backend", "none", "--log-dir", "/srv/logs/calico"])
        .arg("--felix-config")
        .arg(&felix)
        .arg("--no-default-ippools")
        .output();
    netctl_snapshot!(&output, filters = scene.filters());
    assert!(scene.calls().is_empty(), "a dry run runs nothing");
}

#[test]
fn dry_run_defaults() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let output = scene
        .netctl(PLAIN)
        .args(["node", "run", "--dry-run", "--name", "node-1"])
        .args(IMAGE)
        .output();
    netctl_snapshot!(&output, filters = scene.filters());
}

#[test]
fn dry_run_tls_files_and_credentials() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let variables = tls_files(&scene);
    let output = scene
        .netctl(&borrowed(&variables))
        .args(["node", "run", "--dry-run", "--name", "node-1"])
        .args(IMAGE)
        .arg("--secrets-dir")
        .arg(scene.secrets_dir())
        .output();
    netctl_snapshot!(&output, filters = scene.filters());
    assert!(!stdout(&output).contains(PASSWORD) && !stderr(&output).contains(PASSWORD));
    assert!(
        !scene.secrets_dir().exists(),
        "a dry run writes no files, not even the credentials"
    );
}

#[test]
fn dry_run_inline_pem() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let config = inline_config(&scene);
    let output = scene
        .netctl(&[])
        .arg("-c")
        .arg(&config)
        .args(["node", "run", "--dry-run", "--name", "node-1"])
        .args(IMAGE)
        .arg("--secrets-dir")
        .arg(scene.secrets_dir())
        .output();
    netctl_snapshot!(&output, filters = scene.filters());
    let text = stdout(&output) + &stderr(&output);
    assert!(!text.contains(PASSWORD) && !text.contains("c2VjcmV0IGtleQ=="));
    assert!(!scene.secrets_dir().exists());
}

#[test]
fn dry_run_srv_discovery_for_an_init_system() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let output = scene
        .netctl(&[
            ("DATASTORE_TYPE", "etcdv3"),
            ("ETCD_DISCOVERY_SRV", "etcd.example.net"),
        ])
        .args([
            "node",
            "run",
            "--dryrun",
            "--init-system",
            "--name",
            "node-1",
        ])
        .args(IMAGE)
        .output();
    netctl_snapshot!(&output, filters = scene.filters());
}

#[test]
fn dry_run_with_podman_named_need_not_find_it() {
    let scene = Scene::new();
    let output = scene
        .netctl(PLAIN)
        .args([
            "node",
            "run",
            "--dry-run",
            "--engine",
            "podman",
            "--name",
            "node-1",
        ])
        .args(IMAGE)
        .output();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("\npodman run --net=host"));
}

#[test]
fn podman_is_found_when_docker_is_not() {
    let scene = Scene::new();
    scene.install_engine("podman");
    let output = scene
        .netctl(PLAIN)
        .args([
            "node",
            "run",
            "--dry-run",
            "--init-system",
            "--name",
            "node-1",
        ])
        .args(IMAGE)
        .output();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("\npodman run --net=host"));
    assert!(stdout(&output).contains("\npodman stop calico-node\n"));
}

#[test]
fn node_name_defaults_to_the_host_name_lower_cased() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_lowercase();
    let output = scene
        .netctl(PLAIN)
        .args(["node", "run", "--dry-run"])
        .args(IMAGE)
        .output();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains(&format!(" -e NODENAME={host} ")));
}

#[test]
fn image_falls_back_when_the_datastore_is_unreachable() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let started = Instant::now();
    let output = scene
        .netctl(&[
            ("DATASTORE_TYPE", "etcdv3"),
            ("ETCD_ENDPOINTS", "http://127.0.0.1:1"),
        ])
        .args(["node", "run", "--dry-run", "--name", "node-1"])
        .output();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the lookup is bounded"
    );
    assert!(stdout(&output).contains(" quay.io/calico/node:v3.29.2\n"));
    let warning = stderr(&output);
    assert!(
        warning.contains("warning: cannot tell which release the cluster runs (")
            && warning.contains("using `quay.io/calico/node:v3.29.2`"),
        "{warning}"
    );
}

#[test]
fn secrets_never_reach_the_command_line() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let variables = tls_files(&scene);
    let output = scene
        .netctl(&borrowed(&variables))
        .args(["node", "run", "--dry-run", "--name", "node-1"])
        .args(IMAGE)
        .output();
    let command = stdout(&output);
    assert!(command.contains(" --env-file=/var/lib/calico/netctl-certs/etcd-credentials.env "));
    assert!(!command.contains("ETCD_PASSWORD") && !command.contains("ETCD_USERNAME"));
}

#[test]
fn relative_paths_are_mounted_by_their_absolute_path() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.write("ca.pem", CA_PEM);
    std::fs::create_dir(scene.root().join("logs")).unwrap();
    let output = scene
        .netctl(&[
            ("DATASTORE_TYPE", "etcdv3"),
            ("ETCD_ENDPOINTS", "https://10.0.0.1:2379"),
            ("ETCD_CA_CERT_FILE", "ca.pem"),
        ])
        .current_dir(scene.root())
        .args([
            "node",
            "run",
            "--dry-run",
            "--name",
            "node-1",
            "--log-dir",
            "logs",
        ])
        .args(IMAGE)
        .output();
    assert!(output.status.success(), "{}", stderr(&output));
    let command = scene.redact(&stdout(&output));
    assert!(
        command.contains(" -v [TEMP]/logs:/var/log/calico "),
        "{command}"
    );
    assert!(
        command.contains(" -v [TEMP]/ca.pem:/etc/calico/certs/ca_cert.crt:ro "),
        "{command}"
    );
}

#[test]
fn help_lists_every_flag() {
    let scene = Scene::new();
    let output = scene
        .netctl(&[("COLUMNS", "100")])
        .args(["node", "run", "--help"])
        .output();
    netctl_snapshot!(&output, filters = scene.filters());
}

// ---------------------------------------------------------------------------------------------------
// Validation: a clear message, exit 1, and no container touched.

#[test]
fn validation_errors_touch_no_container() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let cases: &[&[&str]] = &[
        &["--ip", "10.0.0"],
        &["--ip", "fd00::1"],
        &["--ip6", "10.0.0.1"],
        &["--ip6", "fd00::zz"],
        &["--as", "65536.1"],
        &["--as", "4294967296"],
        &["--as", "AS64512"],
        &["--backend", "gobgp"],
        &["--ip-autodetection-method", "last-found"],
        &["--ip-autodetection-method", "interface=eth(0,ens3)"],
        &["--ip-autodetection-method", "skip-interface="],
        &["--ip-autodetection-method", "can-reach=fd00::1"],
        &["--ip6-autodetection-method", "cidr=10.0.0.0/8"],
        &["--ip6-autodetection-method", "cidr=fd00::/129"],
        &["--felix-config", "/nonexistent/felix.cfg"],
        &["--name", "two words"],
        &["--log-dir", "/var/log/calico:rw"],
    ];
    let mut transcript = String::new();
    for arguments in cases {
        let output = scene
            .netctl(PLAIN)
            .args(["node", "run"])
            .args(IMAGE)
            .args(*arguments)
            .output();
        assert_eq!(output.status.code(), Some(1), "{arguments:?}");
        assert!(stdout(&output).is_empty());
        transcript.push_str(&format!("$ {}\n{}\n", arguments.join(" "), stderr(&output)));
    }
    insta::assert_snapshot!(transcript);
    assert!(scene.calls().is_empty(), "no engine command may run");
}

#[test]
fn kubernetes_datastore_is_refused() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let output = scene
        .netctl(&[("DATASTORE_TYPE", "kubernetes")])
        .args(["node", "run", "--dry-run"])
        .args(IMAGE)
        .output();
    netctl_snapshot!(&output, filters = scene.filters());
    assert!(scene.calls().is_empty());
}

#[test]
fn bad_datastore_settings_are_refused_before_anything_runs() {
    let scene = Scene::new();
    scene.install_engine("docker");
    let output = scene
        .netctl(&[
            ("DATASTORE_TYPE", "etcdv3"),
            ("ETCD_ENDPOINTS", "https://10.0.0.1:2379"),
            ("ETCD_CERT_FILE", "/nonexistent/cert.pem"),
        ])
        .args(["node", "run", "--name", "node-1"])
        .args(IMAGE)
        .output();
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("`etcdCertFile` is set but `etcdKeyFile` is not"));
    assert!(scene.calls().is_empty());
}

#[test]
fn unknown_engine_is_a_usage_error() {
    let scene = Scene::new();
    let output = scene
        .netctl(PLAIN)
        .args(["node", "run", "--dry-run", "--engine", "lxc"])
        .output();
    assert_eq!(output.status.code(), Some(64));
}

#[test]
fn no_engine_found() {
    let scene = Scene::new();
    let empty = scene.root().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let path = empty.display().to_string();
    let mut transcript = String::new();
    for mode in [
        &["--name", "node-1"][..],
        &["--dry-run", "--name", "node-1"],
    ] {
        let output = scene
            .netctl_with_path(&path, PLAIN)
            .args(["node", "run"])
            .args(IMAGE)
            .args(mode)
            .output();
        transcript.push_str(&scene.transcript(&output));
    }
    let named = scene
        .netctl_with_path(&path, PLAIN)
        .args(["node", "run", "--engine", "podman", "--name", "node-1"])
        .args(IMAGE)
        .output();
    transcript.push_str(&scene.transcript(&named));
    insta::assert_snapshot!(transcript);
}

#[test]
fn non_root_is_refused_unless_dry_run() {
    let scene = Scene::new();
    scene.install_engine("docker");
    // The temporary directory must be reachable by the unprivileged user.
    std::fs::set_permissions(scene.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let unprivileged = |arguments: &[&str]| -> Output {
        let mut netctl = if running_as_root() {
            let mut netctl = Netctl::with_program(program("setpriv"));
            netctl
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(Netctl::program());
            netctl
        } else {
            Netctl::new()
        };
        netctl
            .env("PATH", scene.path())
            .env("NETCTL_SKIP_HOST_PREP", "1");
        for (name, value) in PLAIN {
            netctl.env(name, value);
        }
        netctl
            .args(["--request-timeout", "1s", "node", "run", "--name", "node-1"])
            .args(IMAGE)
            .args(arguments)
            .output()
    };
    let refused = unprivileged(&[]);
    assert_eq!(refused.status.code(), Some(1));
    netctl_snapshot!(&refused, filters = scene.filters());
    assert!(scene.calls().is_empty());
    let dry_run = unprivileged(&["--dry-run"]);
    assert!(dry_run.status.success(), "{}", stderr(&dry_run));
}

// ---------------------------------------------------------------------------------------------------
// Real runs against the stand-in engine.

const STARTING_LOG: &str = "2026-11-22 05:00:00.000 [INFO] Starting node node-1\nbird: Started\n";

#[test]
fn run_succeeds_when_the_agent_reports_its_start() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script(
        "rm.stderr",
        "Error response from daemon: No such container: calico-node\n",
    );
    scene.script("rm.status", "1");
    scene.script("run.stdout", "4f1c0ffee\n");
    scene.script(
        "logs.stdout",
        &format!("{STARTING_LOG}Calico node started successfully\n"),
    );
    scene.script("logs.follow", "");
    let started = Instant::now();
    let output = scene.netctl_as_root(
        PLAIN,
        &["node", "run", "--name", "node-1", IMAGE[0], IMAGE[1]],
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "success ends the wait at once"
    );
    netctl_snapshot!(&output, filters = scene.filters());
    let calls = scene.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0], ["rm", "-f", "calico-node"]);
    assert_eq!(
        calls[1][..5],
        [
            "run",
            "--net=host",
            "--privileged",
            "--name=calico-node",
            "-d"
        ]
    );
    assert_eq!(calls[1].last().map(String::as_str), Some(IMAGE[1]));
    assert_eq!(calls[2], ["logs", "--follow", "calico-node"]);
}

#[test]
fn the_start_line_may_come_on_stderr() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script("logs.stdout", STARTING_LOG);
    scene.script("logs.stderr", "Calico node started successfully\n");
    scene.script("logs.follow", "");
    let output = scene.netctl_as_root(
        PLAIN,
        &["node", "run", "--name", "node-1", IMAGE[0], IMAGE[1]],
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn run_writes_private_files_and_passes_credentials_by_file() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script("logs.stdout", "Calico node started successfully\n");
    scene.script("logs.follow", "");
    let config = inline_config(&scene);
    let secrets = scene.secrets_dir().display().to_string();
    let output = scene.netctl_as_root(
        &[],
        &[
            "-c",
            config.to_str().unwrap(),
            "node",
            "run",
            "--name",
            "node-1",
            IMAGE[0],
            IMAGE[1],
            "--secrets-dir",
            &secrets,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let directory = std::fs::metadata(scene.secrets_dir()).unwrap();
    assert_eq!(directory.permissions().mode() & 0o777, 0o700);
    for (name, contents) in [
        ("ca_cert.crt", CA_PEM.to_string()),
        ("cert.crt", CERT_PEM.to_string()),
        ("key.pem", KEY_PEM.to_string()),
        (
            "etcd-credentials.env",
            format!("ETCD_USERNAME=calico-node\nETCD_PASSWORD={PASSWORD}\n"),
        ),
    ] {
        let path = scene.secrets_dir().join(name);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), contents, "{name}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
    }
    let run = &scene.calls()[1];
    assert!(run.contains(&format!("--env-file={secrets}/etcd-credentials.env")));
    assert!(run.contains(&format!("{secrets}/key.pem:/etc/calico/certs/key.pem:ro")));
    assert!(run.contains(&"ETCD_KEY_FILE=/etc/calico/certs/key.pem".to_string()));
    assert!(!run.iter().any(|argument| argument.contains(PASSWORD)));
    assert!(!stderr(&output).contains(PASSWORD));
}

#[test]
fn run_times_out_with_the_last_log_lines() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script("logs.stdout", STARTING_LOG);
    scene.script("logs.follow", "");
    let started = Instant::now();
    let output = scene.netctl_as_root(
        PLAIN,
        &[
            "node",
            "run",
            "--name",
            "node-1",
            IMAGE[0],
            IMAGE[1],
            "--startup-timeout",
            "1s",
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the follower is stopped at the deadline"
    );
    netctl_snapshot!(&output, filters = scene.filters());
}

#[test]
fn run_fails_when_the_container_exits_early() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script(
        "logs.stdout",
        &format!("{STARTING_LOG}[FATAL] cannot connect to etcd\n"),
    );
    let output = scene.netctl_as_root(
        PLAIN,
        &["node", "run", "--name", "node-1", IMAGE[0], IMAGE[1]],
    );
    netctl_snapshot!(&output, filters = scene.filters());
}

#[test]
fn run_reports_engine_failures() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script(
        "run.stderr",
        "docker: Error response from daemon: pull access denied.\nSee 'docker run --help'.\n",
    );
    scene.script("run.status", "125");
    let failed_run = scene.netctl_as_root(
        PLAIN,
        &["node", "run", "--name", "node-1", IMAGE[0], IMAGE[1]],
    );
    assert_eq!(failed_run.status.code(), Some(1));
    assert!(
        stderr(&failed_run).contains(
            "error: `docker run` failed (exit status: 125)\n | docker: Error response from daemon: pull access denied.\n | See 'docker run --help'."
        ),
        "{}",
        stderr(&failed_run)
    );
    assert_eq!(scene.calls().len(), 2, "no log check after a failed run");

    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script(
        "rm.stderr",
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.\n",
    );
    scene.script("rm.status", "1");
    let failed_remove = scene.netctl_as_root(
        PLAIN,
        &["node", "run", "--name", "node-1", IMAGE[0], IMAGE[1]],
    );
    assert_eq!(failed_remove.status.code(), Some(1));
    assert!(stderr(&failed_remove).contains("error: `docker rm -f calico-node` failed"));
    assert_eq!(
        scene.calls().len(),
        1,
        "nothing is started after a failed removal"
    );
}

#[test]
fn init_system_runs_in_the_foreground_and_passes_the_exit_code() {
    let scene = Scene::new();
    scene.install_engine("docker");
    scene.script("run.stdout", "Calico node started successfully\n");
    let output = scene.netctl_as_root(
        PLAIN,
        &[
            "node",
            "run",
            "--init-system",
            "--name",
            "node-1",
            IMAGE[0],
            IMAGE[1],
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Calico node started successfully"));
    let calls = scene.calls();
    assert_eq!(calls.len(), 2, "no log following: the output is the log");
    assert_eq!(calls[1][4], "--rm");

    scene.script("run.status", "3");
    let stopped = scene.netctl_as_root(
        PLAIN,
        &[
            "node",
            "run",
            "--init-system",
            "--name",
            "node-1",
            IMAGE[0],
            IMAGE[1],
        ],
    );
    assert_eq!(stopped.status.code(), Some(1));
    assert!(stderr(&stopped).contains("the node container stopped with exit code 3"));
}
