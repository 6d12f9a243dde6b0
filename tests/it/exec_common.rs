//! Shared pieces of the executor tests (`tests/exec_*.rs`): plans built from the library's own types,
//! a seeded etcd, and a sandboxed `netctl` pointed at it with a state directory of its own.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;

use netctl::datastore::DatastoreType;
use netctl::plan::{
    Action, DiscoveredFacts, FactOverrides, Facts, InstallMethod, Phase, Plan, PlannedStep, Release,
};

use crate::support::{ChildGuard, EtcdServer, Netctl};

pub const HOST_ENDPOINTS: &str = "/calico/resources/v3/projectcalico.org/hostendpoints/";
pub const CLUSTER_INFORMATION: &str =
    "/calico/resources/v3/projectcalico.org/clusterinformations/default";
pub const LOCK_KEY: &str = "/calico/netctl/upgrade/lock";
pub const CHECKPOINT_KEY: &str = "/calico/netctl/upgrade/checkpoint";

/// The checkpoint as another machine reads it from the datastore mirror: `upgrade status -o json`
/// of a netctl with an empty state directory, if the mirror holds a run.
pub fn mirrored_checkpoint(etcd: &EtcdServer) -> Option<serde_json::Value> {
    let elsewhere = Operator::new(etcd);
    let status = status_json(&elsewhere);
    Some(status["checkpoint"].clone()).filter(|checkpoint| !checkpoint.is_null())
}

/// Every value netctl keeps under `/calico/netctl/` (the lock and the checkpoint mirror), gzip
/// values decompressed, as one text: what a secret must never be found in.
pub fn netctl_values_text(etcd: &EtcdServer) -> String {
    use std::io::Read;
    let mut text = String::new();
    for entry in etcd.entries("/calico/netctl/") {
        let mut value = entry.value;
        if value.starts_with(&[0x1f, 0x8b]) {
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(value.as_slice())
                .read_to_end(&mut plain)
                .expect("a valid gzip stream");
            value = plain;
        }
        text.push_str(&String::from_utf8_lossy(&value));
        text.push('\n');
    }
    text
}

/// The name of the user running the tests, as netctl records it (from the operating system, not
/// `$USER`).
pub fn os_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|user| user.name)
        .expect("the test user has a name")
}

/// Puts what discovery reads: ClusterInformation (v3.26.4) and one ordinary host endpoint `h1`.
pub fn seed(etcd: &EtcdServer) {
    etcd.put(
        CLUSTER_INFORMATION,
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default","uid":"c1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"calicoVersion":"v3.26.4","datastoreReady":true}}"#,
    );
    etcd.put(
        &format!("{HOST_ENDPOINTS}h1"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"h1","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"role":"edge"}},"spec":{"node":"n1","interfaceName":"eth0","expectedIPs":["10.0.0.1"]}}"#,
    );
}

/// The facts the seeded datastore shows, as a planner would record them.
pub fn facts() -> Facts {
    Facts::assemble(
        &DiscoveredFacts {
            installed_version: Some(Release::new(3, 26, 4)),
            datastore_type: Some(DatastoreType::EtcdV3),
            all_interfaces_host_endpoints: Some(vec![]),
            ..DiscoveredFacts::default()
        },
        &FactOverrides {
            install_method: Some(InstallMethod::Manifest),
            ..FactOverrides::default()
        },
    )
    .expect("facts")
}

pub fn action(name: &str, with: serde_json::Value) -> Action {
    Action::from_parts(name, with).expect("valid action")
}

pub fn step(id: &str, description: &str, action: Action) -> PlannedStep {
    let runbook = id.split('/').next().unwrap_or(id);
    PlannedStep::new(id, runbook, Phase::PreUpgrade, action, description, "test")
}

pub fn plan(steps: Vec<PlannedStep>) -> Plan {
    Plan::new(
        "upgrade",
        Release::new(3, 26, 4),
        Release::new(3, 29, 2),
        facts(),
        steps,
    )
}

/// An `exec` step that appends `line` to `file`, with a `verify` that the line is there.
pub fn append_step(id: &str, file: &Path, line: &str) -> PlannedStep {
    let script = format!("echo {line} >> '{}'", file.display());
    let mut step = step(
        id,
        &format!("append `{line}`"),
        action("exec", serde_json::json!({"command": ["sh", "-c", script]})),
    );
    step.verify = Some(action(
        "exec",
        serde_json::json!({"command": ["grep", "-qx", line, file.display().to_string()]}),
    ));
    step
}

pub fn host_endpoint(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "projectcalico.org/v3",
        "kind": "HostEndpoint",
        "metadata": {"name": name, "labels": {"made-by": "plan"}},
        "spec": {"node": "n1", "interfaceName": "eth1", "expectedIPs": ["10.0.0.2"]}
    })
}

/// A sandboxed netctl for one etcd, with `USER=ops` and the state directory `$HOME/state`.
pub struct Operator {
    pub netctl: Netctl,
    config: String,
}

impl Operator {
    pub fn new(etcd: &EtcdServer) -> Operator {
        let mut netctl = Netctl::new();
        let config = etcd.netctl_config_yaml();
        netctl.config_file(&config).env("USER", "ops");
        Operator { netctl, config }
    }

    pub fn home(&self) -> &Path {
        self.netctl.home()
    }

    pub fn state_dir(&self) -> PathBuf {
        self.home().join("state")
    }

    pub fn write_plan(&self, plan: &Plan) -> PathBuf {
        self.netctl.write_file(
            "plan.json",
            serde_json::to_vec_pretty(plan).expect("plan JSON"),
        )
    }

    /// `netctl <args>` with the state directory added to `upgrade apply|status|history`.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut command = self.netctl.command();
        command.args(args);
        if args.first() == Some(&"upgrade")
            && matches!(args.get(1), Some(&"apply" | &"status" | &"history"))
        {
            command.arg("--state-dir").arg(self.state_dir());
        }
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("run netctl")
    }

    /// Starts `netctl <args>` in the background (same sandbox), for lock tests; it is killed
    /// when the returned guard is dropped.
    pub fn spawn(&self, args: &[&str], state_dir: &Path) -> ChildGuard {
        let child = std::process::Command::new(Netctl::program())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("NO_COLOR", "1")
            .env("USER", "ops")
            .arg("-c")
            .arg(self.home().join("netctl.cfg"))
            .args(args)
            .arg("--state-dir")
            .arg(state_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn netctl");
        ChildGuard::new(child)
    }

    pub fn config(&self) -> &str {
        &self.config
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `upgrade status -o json` value.
pub fn status_json(operator: &Operator) -> serde_json::Value {
    let output = operator.run(&["upgrade", "status", "-o", "json"], &[]);
    assert!(
        output.status.success(),
        "status failed: {}",
        text(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("status JSON")
}

/// Filters that make transcripts and progress stable across runs: digests, temporary paths,
/// durations, run ids and timestamps.
pub fn filters(home: &Path) -> Vec<(String, String)> {
    vec![
        (
            regex_escape(&home.display().to_string()),
            "[HOME]".to_string(),
        ),
        (
            r"sha256:[0-9a-f]{64}".to_string(),
            "sha256:[DIGEST]".to_string(),
        ),
        (
            format!("{}@[A-Za-z0-9.-]+", regex_escape(&os_user())),
            "[USER]@[HOST]".to_string(),
        ),
        (r"pid \d+".to_string(), "pid [PID]".to_string()),
        (r"\(\d+(\.\d+)?s\)".to_string(), "([ELAPSED])".to_string()),
        (r"\d+\.\d+s\b".to_string(), "[ELAPSED]".to_string()),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}".to_string(),
            "[UUID]".to_string(),
        ),
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z".to_string(),
            "[TIME]".to_string(),
        ),
        // The pre-flight names the test etcd's members and the size of their databases.
        (
            r"netctl-test-[A-Za-z0-9]+-".to_string(),
            "netctl-test-[ID]-".to_string(),
        ),
        (
            r"holds \d+\.\d [KMG]iB".to_string(),
            "holds [SIZE]".to_string(),
        ),
    ]
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Applies [`filters`] to `text` (for assertions outside insta).
pub fn scrub(text: &str, home: &Path) -> String {
    let mut out = text.to_string();
    for (pattern, replacement) in filters(home) {
        let regex = regex::Regex::new(&pattern).expect("filter regex");
        out = regex.replace_all(&out, replacement.as_str()).into_owned();
    }
    out
}
