//! `netctl node status` on a node, through the binary: the process table of a host (a directory
//! tree with `proc/<pid>/cmdline` files, and once the real `/proc` with real processes), and
//! stand-in BIRD daemons on Unix sockets that speak BIRD's numbered reply lines (`support::bird`):
//! established, idle, connect and active peers, rows that are not Calico's peers or are malformed,
//! a wrong heading, an error line, a reply cut short and a daemon that never answers.
//!
//! `--root` and `--run-dir` point netctl at the test's directories, so these run without root (and
//! without the root check, which applies to the host's own files only); one test runs netctl as
//! another user to see that check refuse.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::bird::{BirdStandIn, GREETING, Reply};
use crate::support::snapshot::netctl_snapshot;
use crate::support::{ChildGuard, Netctl, failed, ok};
use tempfile::TempDir;

/// A reply with every kind of row: Calico's three peer types in several states, other protocols,
/// and rows that look like peers but are not (too few columns, a name of another shape).
const PROTOCOLS_V4: &str = "\
2002-name     proto    table    state  since       info
1002-static1  Static   master   up     09:11:58
 kernel1  Kernel   master   up     09:11:58
 device1  Device   master   up     09:11:58
 direct1  Direct   master   up     09:11:58
 Mesh_10_0_0_2 BGP      master   up     09:12:01    Established
 Mesh_10_0_0_3 BGP      master   start  09:12:01    Idle
 Node_10_0_1_1 BGP      master   start  09:12:04    Connect
 Global_192_0_2_1 BGP   master   start  09:12:04    Active        Socket: Connection refused
 Global_192_0_2_9 BGP   master   down   09:12:05    Failed
 Mesh_10_0_0_4 BGP      master   up
 Meshy_10_0_0_5 BGP     master   up     09:12:01    Established
 Node_10_0_1_2 Static   master   up     09:12:01    Established
0000 
";

const PROTOCOLS_V6: &str = "\
2002-name     proto    table    state  since       info
1002-kernel1  Kernel   master   up     09:11:58
 Mesh_fd00_10__2 BGP   master   up     09:12:02    Established
0000 
";

const NO_PEERS: &str = "\
2002-name     proto    table    state  since       info
1002-kernel1  Kernel   master   up     09:11:58
 device1  Device   master   up     09:11:58
0000 
";

/// A host's files: a process table and a run directory.
struct Host {
    root: TempDir,
}

impl Host {
    /// A host whose process table holds these command lines (`\0` between the words).
    fn with_processes(commands: &[&str]) -> Host {
        let root = tempfile::Builder::new()
            .prefix("netctl-host-")
            .tempdir()
            .unwrap();
        let proc = root.path().join("proc");
        std::fs::create_dir_all(proc.join("self")).unwrap();
        std::fs::write(proc.join("self/cmdline"), "netctl\0").unwrap();
        std::fs::write(proc.join("uptime"), "1.00 1.00\n").unwrap();
        // pid 1, then one per command; a kernel thread (empty command line) too.
        let mut all = vec!["/sbin/init\0splash", ""];
        all.extend_from_slice(commands);
        for (index, command) in all.iter().enumerate() {
            let pid = proc.join((index + 1).to_string());
            std::fs::create_dir_all(&pid).unwrap();
            std::fs::write(pid.join("cmdline"), command.replace(' ', "\0")).unwrap();
        }
        std::fs::create_dir_all(root.path().join("var/run")).unwrap();
        Host { root }
    }

    /// A node with the agent and both BIRD daemons running, as calico/node starts them.
    fn node() -> Host {
        Host::with_processes(&[
            "calico-node -felix",
            "calico-node -confd",
            "bird -R -s /var/run/calico/bird.ctl -d -c /etc/calico/confd/config/bird.cfg",
            "bird6 -R -s /var/run/calico/bird6.ctl -d -c /etc/calico/confd/config/bird6.cfg",
        ])
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn socket(&self, name: &str) -> PathBuf {
        self.root().join("var/run/calico").join(name)
    }

    fn status(&self) -> Netctl {
        let mut netctl = Netctl::new();
        netctl
            .arg("node")
            .arg("status")
            .arg("--root")
            .arg(self.root());
        netctl
    }
}

fn reply(body: &str) -> Reply {
    Reply::text(body)
}

#[test]
fn established_idle_connect_and_malformed_peers_make_upstreams_table() {
    let host = Host::node();
    let bird = BirdStandIn::start(&host.socket("bird.ctl"), reply(PROTOCOLS_V4));
    let _bird6 = BirdStandIn::start(&host.socket("bird6.ctl"), reply(PROTOCOLS_V6));
    let output = netctl_snapshot!(&host.status());
    assert!(output.success());
    assert_eq!(bird.commands(), ["show protocols"]);
}

#[test]
fn a_daemon_without_peers_says_so_and_one_that_does_not_run_is_named() {
    let host = Host::with_processes(&[
        "/usr/local/bin/calico-node -felix",
        "bird -R -s /var/run/calico/bird.ctl",
    ]);
    let _bird = BirdStandIn::start(&host.socket("bird.ctl"), reply(NO_PEERS));
    netctl_snapshot!(&host.status());

    let host = Host::with_processes(&["calico-felix", "calico-node -confd"]);
    netctl_snapshot!("no_bird_at_all", &host.status());
}

#[test]
fn the_socket_in_birds_own_directory_is_found_when_calicos_is_not_there() {
    let host = Host::node();
    let bird_dir = host.root().join("var/run/bird");
    let _bird = BirdStandIn::start(&bird_dir.join("bird.ctl"), reply(PROTOCOLS_V6));
    let _bird6 = BirdStandIn::start(&bird_dir.join("bird6.ctl"), reply(PROTOCOLS_V6));
    let out = ok(host.status().args(["-o", "json"]).run());
    let document: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        document["bird6"]["socket"],
        bird_dir.join("bird6.ctl").display().to_string()
    );
    assert_eq!(document["bird6"]["peers"][0]["peerIP"], "fd00:10::2");
    assert_eq!(document["agent"]["command"], "calico-node -felix");
    assert_eq!(
        document["bird"]["greeting"],
        GREETING.trim_start_matches("0001 ")
    );
}

#[test]
fn json_and_yaml_carry_every_peer_field() {
    let host = Host::node();
    let _bird = BirdStandIn::start(&host.socket("bird.ctl"), reply(PROTOCOLS_V4));
    let _bird6 = BirdStandIn::start(&host.socket("bird6.ctl"), reply(NO_PEERS));
    let out = ok(host.status().args(["-o", "json"]).run());
    let document: serde_json::Value = serde_json::from_str(&out).unwrap();
    let peers = document["bird"]["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 5, "{out}");
    assert_eq!(
        peers[3],
        serde_json::json!({"peerIP": "192.0.2.1", "type": "GlobalPeer", "state": "start",
                           "since": "09:12:04", "bgpState": "Active", "info": "Socket: Connection refused"})
    );
    assert_eq!(document["bird6"]["peers"], serde_json::json!([]));
    let yaml = ok(host.status().args(["-o", "yaml"]).run());
    let from_yaml: serde_json::Value = netctl::yaml::from_str(&yaml).unwrap();
    assert_eq!(from_yaml, document);
}

#[test]
fn a_wrong_heading_an_error_line_and_a_cut_reply_are_refused() {
    let host = Host::node();
    let wrong_heading = "2002-name     proto    table    state  foo       info\n1002-kernel1  Kernel   master   up     09:11:58\n0000 \n";
    let _bird = BirdStandIn::start(&host.socket("bird.ctl"), reply(wrong_heading));
    let _bird6 = BirdStandIn::start(&host.socket("bird6.ctl"), reply(NO_PEERS));
    netctl_snapshot!(
        "wrong_heading",
        &host.status(),
        filters = [(host.root().to_str().unwrap(), "[ROOT]")]
    );

    let host = Host::node();
    let error_line = "2002-name     proto    table    state  since       info\n1002-kernel1  Kernel   master   up     09:11:58\n8007 Access denied\n";
    let _bird = BirdStandIn::start(&host.socket("bird.ctl"), reply(error_line));
    let _bird6 = BirdStandIn::start(&host.socket("bird6.ctl"), reply(NO_PEERS));
    let stderr = failed(host.status().run());
    assert!(
        stderr.contains("unexpected output line from BIRD: `8007 Access denied`"),
        "{stderr}"
    );

    let host = Host::node();
    let cut = "2002-name     proto    table    state  since       info\n1002-kernel1  Kernel   master   up     09:11:58\n Mesh_10_0_0_2 BGP      master   up     09:12:01    Established\n";
    let _bird = BirdStandIn::start(
        &host.socket("bird.ctl"),
        Reply::Partial(cut.lines().map(str::to_string).collect()),
    );
    let _bird6 = BirdStandIn::start(&host.socket("bird6.ctl"), reply(NO_PEERS));
    let run = host.status().run();
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("the reply ended before BIRD's end-of-reply line `0000` (after 4 lines)"),
        "{}",
        run.stderr
    );
    // The peer the cut reply did carry is not shown as if it were all of them.
    assert!(!run.stdout.contains("10.0.0.2"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("IPv6 BGP status\nNo IPv6 peers found.\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_hung_daemon_times_out_after_two_seconds() {
    let host = Host::node();
    let _bird = BirdStandIn::start(&host.socket("bird.ctl"), Reply::Silent);
    let _bird6 = BirdStandIn::start(&host.socket("bird6.ctl"), reply(NO_PEERS));
    let started = Instant::now();
    let run = host.status().run();
    let took = started.elapsed();
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("did not answer within 2s"),
        "{}",
        run.stderr
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(15),
        "{took:?}"
    );
}

#[test]
fn a_running_daemon_without_a_socket_fails_after_the_rest() {
    let host = Host::node();
    let _bird6 = BirdStandIn::start(&host.socket("bird6.ctl"), reply(PROTOCOLS_V6));
    let run = host.status().run();
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("cannot ask BIRDv4 for its BGP peers: cannot connect to the BIRDv4 socket"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: is this the node's run directory?"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout
            .contains("| fd00:10::2   | node-to-node mesh | up    | 09:12:02 | Established |"),
        "{}",
        run.stdout
    );
}

#[test]
fn without_the_agent_the_command_refuses_instead_of_printing_an_empty_table() {
    let host = Host::with_processes(&[
        "bird -R -s /var/run/calico/bird.ctl",
        // Another program's `-felix` is not Felix.
        "sleep -felix",
        "calico-node -confd",
    ]);
    let _bird = BirdStandIn::start(&host.socket("bird.ctl"), reply(PROTOCOLS_V4));
    netctl_snapshot!(
        &host.status(),
        filters = [(host.root().to_str().unwrap(), "[ROOT]")]
    );
}

/// Runs netctl with `args` as `nobody` when the tests run as root (as is otherwise).
fn unprivileged(args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(Netctl::program());
    command
        .args(args)
        .env_clear()
        .env("NO_COLOR", "1")
        .env("HOME", std::env::temp_dir());
    if rustix::process::geteuid().is_root() {
        command.uid(65534).gid(65534);
    }
    command.output().unwrap()
}

#[test]
fn the_host_itself_needs_root() {
    let output = unprivileged(&["node", "status"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`node status` asks the node's BIRD sockets and must run as root"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: run it with sudo on the node"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());

    let output = unprivileged(&["node", "checksystem"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`node checksystem` reads the host's kernel files and must run as root"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

/// The real process table: real processes named as calico/node names its daemons, found in
/// `/proc` while the BIRD sockets come from `--run-dir`. (The other tests read a copy of a process
/// table, so these processes cannot make them see an agent.)
#[test]
fn real_processes_in_proc_are_found() {
    let run_dir = tempfile::tempdir().unwrap();
    let spawn = |name: &str| {
        let mut command = std::process::Command::new("sleep");
        command.arg0(name).arg("60");
        ChildGuard::new(command.spawn().expect("start sleep"))
    };
    let _agent = spawn("calico-felix");
    let _bird = spawn("bird");
    let _stand_in =
        BirdStandIn::start(&run_dir.path().join("calico/bird.ctl"), reply(PROTOCOLS_V4));
    let out = ok(Netctl::new()
        .args(["node", "status", "-o", "json", "--run-dir"])
        .arg(run_dir.path())
        .run());
    let document: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(document["agent"]["command"], "calico-felix 60", "{out}");
    assert_eq!(document["bird"]["running"], true, "{out}");
    assert_eq!(document["bird6"]["running"], false, "{out}");
    assert_eq!(document["bird"]["peers"][0]["state"], "up", "{out}");
}
