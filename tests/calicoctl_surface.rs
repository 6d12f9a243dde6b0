//! The rest of calicoctl's surface: `version --poll`, the kubectl plugin form (`kubectl-netctl`),
//! `patch --type strategic` and `get -o go-template=` / `go-template-file=`, each against a real
//! etcd (and, for the templates, the real `kubectl` rendering the same object).

mod support;

use std::io::{BufRead, BufReader};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{EtcdServer, Netctl, Run, Signal, ok, send_signal, wait_for_exit};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";

fn netctl(etcd: &EtcdServer, args: &[&str]) -> Run {
    let mut command = Netctl::new();
    command
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint())
        .args(args);
    command.run()
}

fn cluster_runs(etcd: &EtcdServer, version: &str) {
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        format!(
            r#"{{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{{"name":"default","uid":"4b1fbc3e-2a55-4e0c-9d8a-0c3a7c0e2f11","creationTimestamp":"2026-01-01T00:00:00Z"}},"spec":{{"clusterGUID":"1d4a0e6c7a2b4f0e9b3c5d7e8f901234","clusterType":"typha,kdd,k8s,operator,bgp","calicoVersion":"{version}","datastoreReady":true}}}}"#
        ),
    );
}

/// Waits until `lines` holds a line containing `text` (at most 20 s).
fn wait_for_line(lines: &Mutex<Vec<String>>, text: &str) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if lines.lock().unwrap().iter().any(|line| line.contains(text)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "no line with `{text}` within 20 s: {:?}",
        lines.lock().unwrap()
    );
}

#[test]
fn version_poll_prints_the_cluster_lines_again_only_when_they_change_and_stops_on_ctrl_c() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.31.2");
    let mut command = Netctl::new();
    command
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint())
        .args(["version", "--poll", "100ms"]);
    let mut child = command.spawn();
    let stdout = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let lines = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                lines.lock().unwrap().push(line.unwrap());
            }
        })
    };
    wait_for_line(&lines, "v3.31.2");
    // Several polls with nothing changed print nothing more.
    std::thread::sleep(Duration::from_millis(400));
    cluster_runs(&etcd, "v3.32.1");
    wait_for_line(&lines, "v3.32.1");
    send_signal(child.id(), Signal::INT).unwrap();
    let run = wait_for_exit(child, Duration::from_secs(10));
    reader.join().unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines = lines.lock().unwrap();
    let cluster: Vec<&str> = lines
        .iter()
        .filter(|line| line.starts_with("Cluster"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        cluster,
        [
            "Cluster Version:   v3.31.2",
            "Cluster Type:      typha,kdd,k8s,operator,bgp",
            "Cluster Version:   v3.32.1",
        ],
        "{lines:?}"
    );
}

#[test]
fn version_poll_zero_reads_once_and_a_bad_duration_is_a_usage_error() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.30.4");
    let once = ok(netctl(&etcd, &["version", "--poll", "0"]));
    assert!(once.contains("Cluster Version:   v3.30.4"), "{once}");
    let bad = netctl(&etcd, &["version", "--poll", "soon"]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("`soon`"), "{}", bad.stderr);
}

#[test]
fn installed_as_kubectl_netctl_it_answers_kubectl_netctl_with_that_name_in_its_help() {
    let prefix = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install.sh");
    let installed = std::process::Command::new("bash")
        .arg(script)
        .env("PREFIX", prefix.path())
        .env("NETCTL_BINARY", Netctl::program())
        .output()
        .expect("run scripts/install.sh");
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let link = prefix.path().join("bin/kubectl-netctl");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::Path::new("netctl")
    );
    let kubectl = support::find_program("kubectl", "apt-get install kubernetes-client");
    let path = format!(
        "{}:{}",
        prefix.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // kubectl finds the plugin on PATH and runs it for `kubectl netctl ...`.
    let mut command = Netctl::with_program(&kubectl);
    command.env("PATH", &path).args(["netctl", "get", "--help"]);
    let help = ok(command.run());
    assert!(help.contains("Usage: kubectl netctl get"), "{help}");
    assert!(help.contains("\n  kubectl netctl get nodes"), "{help}");
    assert!(!help.contains("\n  netctl get"), "{help}");
    let mut command = Netctl::with_program(&kubectl);
    command
        .env("PATH", &path)
        .args(["netctl", "version", "--client"]);
    let version = ok(command.run());
    assert!(version.starts_with("Client Version:"), "{version}");
    let mut command = Netctl::with_program(&kubectl);
    command.env("PATH", &path).args(["plugin", "list"]);
    let listed = command.run();
    assert!(
        listed.stdout.contains("kubectl-netctl"),
        "{}{}",
        listed.stdout,
        listed.stderr
    );
    // Run as `netctl`, it stays `netctl`.
    let mut command = Netctl::with_program(prefix.path().join("bin/netctl"));
    command.args(["get", "--help"]);
    let plain = ok(command.run());
    assert!(plain.contains("Usage: netctl get"), "{plain}");
}
