//! `netctl node status --node NAME` / `--all` and the CalicoNodeStatus kind, through the binary,
//! on both datastores: real etcd, and the test Kubernetes API server with the CRD's schema
//! (`support::kube_crd`). A stand-in calico-node (`support::calico_node`) watches for the objects
//! and fills in their status after a delay, in the shape calico-node writes; nodes without one
//! never answer. Every test checks that no CalicoNodeStatus is left afterwards.

use std::time::{Duration, Instant};

use crate::support::calico_node::{Behaviour, CalicoNodeStandIn, ETCD_PREFIX};
use crate::support::{
    EtcdServer, KubeApiServer, Netctl, Run, Signal, failed, ok, send_signal, wait_for_exit,
};
use serde_json::json;

const CALICO: &str = "crd.projectcalico.org/v1";
const ROOT: &str = "/calico/resources/v3/projectcalico.org";

/// One of the two datastores, with the nodes `node-1` and `node-2`.
enum Store {
    Etcd(Box<EtcdServer>),
    Kube(KubeApiServer),
}

impl Store {
    fn etcd() -> Store {
        let etcd = EtcdServer::start();
        for node in ["node-1", "node-2"] {
            etcd.put(
                &format!("{ROOT}/nodes/{node}"),
                json!({"kind": "Node", "apiVersion": "projectcalico.org/v3",
                       "metadata": {"name": node, "uid": format!("uid-{node}"), "creationTimestamp": "2026-03-01T09:00:00Z"},
                       "spec": {"bgp": {"ipv4Address": "10.0.0.1/24"}}})
                .to_string(),
            );
        }
        Store::Etcd(Box::new(etcd))
    }

    fn kube() -> Store {
        let server = KubeApiServer::start();
        for node in ["node-1", "node-2"] {
            server.put(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}));
        }
        Store::Kube(server)
    }

    fn netctl(&self) -> Netctl {
        let mut netctl = Netctl::new();
        match self {
            Store::Etcd(etcd) => {
                netctl.config_file(&etcd.netctl_config_yaml());
            }
            Store::Kube(server) => {
                netctl
                    .env("DATASTORE_TYPE", "kubernetes")
                    .env("KUBECONFIG", server.kubeconfig_path());
            }
        }
        netctl
    }

    fn run(&self, args: &[&str]) -> Run {
        self.netctl().args(args).run()
    }

    fn stand_in(&self, behaviour: Behaviour) -> CalicoNodeStandIn {
        match self {
            Store::Etcd(etcd) => CalicoNodeStandIn::on_etcd(etcd.endpoints(), behaviour),
            Store::Kube(server) => CalicoNodeStandIn::on_kube(server.url(), behaviour),
        }
    }

    /// The CalicoNodeStatus objects stored now.
    fn node_statuses(&self) -> Vec<String> {
        match self {
            Store::Etcd(etcd) => etcd
                .get_prefix(ETCD_PREFIX)
                .into_iter()
                .map(|(key, _)| key.trim_start_matches(ETCD_PREFIX).to_string())
                .collect(),
            Store::Kube(server) => server.names(CALICO, "caliconodestatuses"),
        }
    }
}

fn both() -> [Store; 2] {
    [Store::etcd(), Store::kube()]
}

#[test]
fn a_node_that_answers_after_a_delay_is_reported_and_its_object_deleted() {
    for store in both() {
        let stand_in = store.stand_in(Behaviour::for_nodes(
            &["node-1"],
            Duration::from_millis(700),
        ));
        let out = ok(store.run(&["node", "status", "--node", "node-1"]));
        assert!(
            out.starts_with("Node node-1: status reported by calico-node at "),
            "{out}"
        );
        assert!(out.contains("BIRDv4: Ready (v0.3.3+birdv1.6.8, router ID 10.0.0.1, last boot 2026-03-01 09:58:36, last reconfiguration 2026-03-01 09:58:36)\nBIRDv6: NotReady\n"), "{out}");
        assert!(
            out.contains(
                "\
+--------------+-------------------+-------+----------+-------------+
| PEER ADDRESS |     PEER TYPE     | STATE |  SINCE   |    INFO     |
+--------------+-------------------+-------+----------+-------------+
| 10.0.0.3     | node-to-node mesh | up    | 09:58:37 | Established |
| 10.0.0.4     | node-to-node mesh | up    | 09:58:37 | Established |
| 192.0.2.1    | global            | start | 09:58:40 | Active      |
+--------------+-------------------+-------+----------+-------------+
"
            ),
            "{out}"
        );
        assert!(
            out.contains("IPv6 BGP status\nNo IPv6 peers found.\n"),
            "{out}"
        );
        assert!(
            out.ends_with("Routes: IPv4 2 (2 FIB, 0 RIB), IPv6 0 (0 FIB, 0 RIB)\n"),
            "{out}"
        );
        let seen = stand_in.seen();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen.iter()
                .all(|name| name.starts_with("netctl-status-") && name.ends_with("-node-1")),
            "{seen:?}"
        );
        assert_eq!(store.node_statuses(), Vec::<String>::new());
    }
}

#[test]
fn every_node_gets_a_row_and_the_one_that_never_answers_is_named() {
    for store in both() {
        let _stand_in = store.stand_in(Behaviour::for_nodes(
            &["node-1"],
            Duration::from_millis(300),
        ));
        let started = Instant::now();
        let run = store.run(&["node", "status", "--all", "--timeout", "2s"]);
        let took = started.elapsed();
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(lines.len(), 3, "{}", run.stdout);
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>().join(" "),
            "NODE BIRD BIRD6 IPV4 SESSIONS IPV6 SESSIONS IPV4 ROUTES IPV6 ROUTES REPORTED"
        );
        let node_1: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            node_1[..7],
            ["node-1", "Ready", "NotReady", "2/3", "0/0", "2", "0"],
            "{}",
            run.stdout
        );
        assert!(
            lines[2].starts_with("node-2 ") && lines[2].ends_with("no answer within 2s"),
            "{}",
            run.stdout
        );
        assert!(
            run.stderr
                .contains("error: no status from node `node-2` (no answer within 2s)"),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("hint: is calico-node running there?"),
            "{}",
            run.stderr
        );
        // Bounded: the timeout and the deletes, not more.
        assert!(took < Duration::from_secs(15), "{took:?}");
        assert_eq!(store.node_statuses(), Vec::<String>::new());
    }
}

#[test]
fn json_and_yaml_carry_what_calico_node_wrote() {
    let store = Store::etcd();
    let _stand_in = store.stand_in(Behaviour::for_nodes(
        &["node-1", "node-2"],
        Duration::from_millis(100),
    ));
    let out = ok(store.run(&["node", "status", "--all", "-o", "json"]));
    let document: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nodes = document["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{out}");
    assert_eq!(nodes[1]["node"], "node-2");
    assert_eq!(nodes[1]["answered"], true);
    assert_eq!(
        nodes[1]["status"]["agent"]["birdV4"]["routerID"],
        "10.0.0.2"
    );
    assert_eq!(
        nodes[1]["status"]["bgp"]["peersV4"][2]["type"],
        "GlobalPeer"
    );
    let yaml = ok(store.run(&["node", "status", "--node", "node-1", "-o", "yaml"]));
    let document: serde_json::Value = netctl::yaml::from_str(&yaml).unwrap();
    assert_eq!(
        document["nodes"][0]["status"]["routes"]["routesV4"][1]["learnedFrom"]["sourceType"],
        "NodeMesh"
    );
    assert_eq!(store.node_statuses(), Vec::<String>::new());
}

/// calico-node reports at once; when that report fails it reports again `updatePeriodSeconds`
/// (10 s, netctl's setting) later, and netctl is still waiting then.
#[test]
fn a_failed_first_report_is_waited_for_until_the_next_period() {
    let store = Store::etcd();
    let stand_in = store.stand_in(Behaviour {
        first_report_fails: true,
        ..Behaviour::for_nodes(&["node-1"], Duration::from_millis(100))
    });
    let started = Instant::now();
    let out = ok(store.run(&["node", "status", "--node", "node-1", "--timeout", "20s"]));
    assert!(
        started.elapsed() >= Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        out.contains("| 10.0.0.3     | node-to-node mesh | up    |"),
        "{out}"
    );
    assert_eq!(stand_in.reported().len(), 1);
    assert_eq!(store.node_statuses(), Vec::<String>::new());
}

#[test]
fn ctrl_c_while_waiting_deletes_what_was_created() {
    for store in both() {
        // The command (and its temporary HOME with the config file) lives as long as the child.
        let mut command = store.netctl();
        command.args([
            "node",
            "status",
            "--node",
            "node-1",
            "--node",
            "node-2",
            "--timeout",
            "60s",
        ]);
        let mut child = command.spawn();
        let deadline = Instant::now() + Duration::from_secs(20);
        while store.node_statuses().len() < 2 {
            if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
                let _ = child.kill();
                let run = wait_for_exit(child, Duration::from_secs(5));
                panic!("the objects never appeared: {run:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        send_signal(child.id(), Signal::INT).unwrap();
        let run = wait_for_exit(child, Duration::from_secs(10));
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(
            run.stderr.contains("error: stopped by SIGINT (Ctrl-C); the temporary CalicoNodeStatus objects were deleted"),
            "{}",
            run.stderr
        );
        assert_eq!(run.stdout, "");
        assert_eq!(store.node_statuses(), Vec::<String>::new());
    }
}

#[test]
fn an_unknown_node_is_refused_and_a_dry_run_writes_nothing() {
    for store in both() {
        let stderr = failed(store.run(&["node", "status", "--node", "node-9"]));
        assert!(
            stderr.contains("error: node `node-9` does not exist"),
            "{stderr}"
        );
        assert!(
            stderr.contains("hint: `netctl get nodes` lists the nodes"),
            "{stderr}"
        );

        let out = ok(store.run(&["node", "status", "--node", "node-1", "--dry-run"]));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        // `netctl-status-<id>-node-1`, the id (8 hex digits) also the label's value.
        let id = lines[0]
            .strip_prefix("would create CalicoNodeStatus `netctl-status-")
            .and_then(|rest| rest.split('-').next())
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(id.len(), 8, "{out}");
        assert_eq!(
            lines[0],
            format!(
                "would create CalicoNodeStatus `netctl-status-{id}-node-1` (node `node-1`, classes Agent, BGP, Routes, updatePeriodSeconds 10, label netctl.projectcalico.org/node-status={id})"
            )
        );
        assert_eq!(
            lines[1],
            "would wait up to 30s for calico-node to fill in each status, then delete the objects"
        );
        assert_eq!(store.node_statuses(), Vec::<String>::new());
    }
    let usage = Netctl::new()
        .args(["node", "status", "--timeout", "5s"])
        .run();
    assert_eq!(usage.code, Some(64), "{}", usage.stderr);
    let usage = Netctl::new()
        .args(["node", "status", "--all", "--root", "/"])
        .run();
    assert_eq!(usage.code, Some(64), "{}", usage.stderr);
}

const REQUEST: &str = "apiVersion: projectcalico.org/v3
kind: CalicoNodeStatus
metadata:
  name: node-1-status
spec:
  node: node-1
  classes: [Agent, BGP, Routes]
  updatePeriodSeconds: 30
";

#[test]
fn the_kind_is_created_listed_applied_and_deleted_on_both_datastores() {
    for store in both() {
        let out = ok(store
            .netctl()
            .args(["create", "-f", "-"])
            .stdin(REQUEST)
            .run());
        assert_eq!(
            out,
            "Successfully created 1 resource(s) (CalicoNodeStatus: 1 created)\n"
        );
        let table = ok(store.run(&["get", "caliconodestatus"]));
        assert_eq!(
            table
                .lines()
                .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>(),
            ["NAME NODE", "node-1-status node-1", ""]
        );
        let wide = ok(store.run(&["get", "nodestatuses", "-o", "wide"]));
        assert!(wide.contains("Agent,BGP,Routes"), "{wide}");
        let changed = REQUEST.replace("updatePeriodSeconds: 30", "updatePeriodSeconds: 0");
        let out = ok(store
            .netctl()
            .args(["apply", "-f", "-"])
            .stdin(changed)
            .run());
        assert_eq!(
            out,
            "Successfully applied 1 resource(s) (CalicoNodeStatus: 1 configured)\n"
        );
        let yaml = ok(store.run(&["get", "caliconodestatus", "node-1-status", "-o", "yaml"]));
        assert!(yaml.contains("updatePeriodSeconds: 0\n"), "{yaml}");
        match &store {
            Store::Etcd(etcd) => {
                let stored = etcd
                    .get_json(&format!("{ETCD_PREFIX}node-1-status"))
                    .unwrap();
                assert_eq!(stored["kind"], "CalicoNodeStatus");
                assert_eq!(
                    stored["spec"],
                    json!({"node": "node-1", "classes": ["Agent", "BGP", "Routes"], "updatePeriodSeconds": 0})
                );
            }
            Store::Kube(server) => {
                let stored = server
                    .get(CALICO, "caliconodestatuses", "", "node-1-status")
                    .unwrap();
                assert_eq!(stored["kind"], "CalicoNodeStatus");
                assert_eq!(
                    stored["spec"],
                    json!({"node": "node-1", "classes": ["Agent", "BGP", "Routes"], "updatePeriodSeconds": 0})
                );
            }
        }
        let out = ok(store.run(&["delete", "caliconodestatus", "node-1-status"]));
        assert_eq!(
            out,
            "Successfully deleted CalicoNodeStatus(node-1-status)\n"
        );
        assert_eq!(store.node_statuses(), Vec::<String>::new());
    }
}

#[test]
fn the_kind_is_validated_as_upstream_and_refusals_write_nothing() {
    let bad = "apiVersion: projectcalico.org/v3
kind: CalicoNodeStatus
metadata: {name: bad}
spec:
  node: Node_1
  classes: [Agent, Agent, Interfaces]
  updatePeriodSeconds: 86401
---
apiVersion: projectcalico.org/v3
kind: CalicoNodeStatus
metadata: {name: empty}
spec: {}
";
    let run = Netctl::new().args(["validate", "-f", "-"]).stdin(bad).run();
    assert_eq!(run.code, Some(1));
    for expected in [
        "spec.node = 'Node_1'",
        "spec.classes[1] = 'Agent': each class may be named once",
        "spec.classes[2] = 'Interfaces': must be one of `Agent`, `BGP` or `Routes`",
        "spec.updatePeriodSeconds = '86401': must be between 0 and 86400 (one day)",
        "spec.node: node is required",
        "spec.classes: classes are required",
        "spec.updatePeriodSeconds: updatePeriodSeconds is required (0 reports once)",
    ] {
        assert!(run.stderr.contains(expected), "{expected}\n{}", run.stderr);
    }
    let negative = REQUEST.replace("30", "-1");
    let stderr = failed(
        Netctl::new()
            .args(["validate", "-f", "-"])
            .stdin(negative)
            .run(),
    );
    assert!(stderr.contains("spec.updatePeriodSeconds"), "{stderr}");
    assert!(
        ok(Netctl::new()
            .args(["validate", "-f", "-"])
            .stdin(REQUEST)
            .run())
        .contains("Successfully validated 1 resource(s)")
    );
    for store in both() {
        let run = store.netctl().args(["apply", "-f", "-"]).stdin(bad).run();
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert_eq!(store.node_statuses(), Vec::<String>::new());
    }
}

/// The test server checks the CRD's schema as a real one does: what netctl writes passes, and a
/// value outside the CRD's enum is refused with the real server's answer.
#[test]
fn the_kubernetes_crd_schema_is_held_to() {
    let server = KubeApiServer::start();
    let store = Store::Kube(server);
    ok(store
        .netctl()
        .args(["create", "-f", "-"])
        .stdin(REQUEST)
        .run());
    let Store::Kube(server) = &store else {
        unreachable!()
    };
    let mut stored = server
        .get(CALICO, "caliconodestatuses", "", "node-1-status")
        .unwrap();
    stored["spec"]["classes"] = json!(["Agent", "Interfaces"]);
    stored["spec"]["extra"] = json!(true);
    let body = stored.to_string();
    let response = server.raw_request(
        "PUT",
        "/apis/crd.projectcalico.org/v1/caliconodestatuses/node-1-status",
        &body,
    );
    assert!(response.starts_with("HTTP/1.1 422"), "{response}");
    assert!(
        response.contains(r#"CalicoNodeStatus.crd.projectcalico.org \"node-1-status\" is invalid: spec.classes[1]: Unsupported value: \"Interfaces\": supported values: \"Agent\", \"BGP\", \"Routes\""#),
        "{response}"
    );
}

/// A datastore that hangs while netctl waits (etcd stopped with SIGSTOP): the wait still ends at
/// `--timeout`, each delete gives up after twice the request timeout, and the objects that may be
/// left are named with the command that deletes them — which works once etcd is back.
#[test]
fn objects_a_hung_datastore_keeps_are_named_with_the_command_that_deletes_them() {
    let mut etcd = EtcdServer::start();
    etcd.put(
        &format!("{ROOT}/nodes/node-1"),
        json!({"kind": "Node", "apiVersion": "projectcalico.org/v3", "metadata": {"name": "node-1"}, "spec": {}})
            .to_string(),
    );
    let mut command = Netctl::new();
    command.config_file(&etcd.netctl_config_yaml()).args([
        "--request-timeout",
        "1s",
        "node",
        "status",
        "--node",
        "node-1",
        "--timeout",
        "3s",
    ]);
    let started = Instant::now();
    let child = command.spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    while etcd.get_prefix(ETCD_PREFIX).is_empty() {
        assert!(Instant::now() < deadline, "the object never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    etcd.pause();
    let run = wait_for_exit(child, Duration::from_secs(30));
    let took = started.elapsed();
    etcd.resume();
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(
        run.stdout
            .starts_with("Node node-1: no status (no answer within 3s; the last read failed: "),
        "{}",
        run.stdout
    );
    let left = etcd.get_prefix(ETCD_PREFIX);
    assert_eq!(left.len(), 1, "{}", run.stderr);
    let name = left[0].0.trim_start_matches(ETCD_PREFIX);
    assert!(
        run.stderr
            .contains(&format!("error: CalicoNodeStatus `{name}` (")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(") may be left behind\n"),
        "{}",
        run.stderr
    );
    let hint = format!("hint: delete them with `netctl delete caliconodestatus {name}`");
    assert!(run.stderr.contains(&hint), "{}", run.stderr);
    ok(Netctl::new()
        .config_file(&etcd.netctl_config_yaml())
        .args(["delete", "caliconodestatus", name])
        .run());
    assert!(etcd.get_prefix(ETCD_PREFIX).is_empty());
}
