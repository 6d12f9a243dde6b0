//! README "Upgrading": the walk-through's command lines, read from the README itself and run as
//! written on the quickstart's data (`scripts/quickstart.sh`: etcd at v3.13 with three nodes and an
//! all-interfaces host endpoint). Steps 0–2 run against that datastore alone, as the quickstart
//! leaves it; the whole walk-through runs again with the cluster configured (the Kubernetes test
//! server holding the v3.13 manifest install), gate by gate, to a completed run.
//!
//! The test adds only what a sandbox needs: `--mirror-dir` (no network here) and the state directory
//! (`Operator::run`), and it plays the cluster's controllers once the new manifest is applied.

use serde_json::Value;

use super::common::*;
use crate::exec_common::text;
use crate::support::{EtcdServer, KubeApiServer};

/// The command lines of the README's "Upgrading" walk-through, without their comments.
fn walkthrough() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## Upgrading\n")
        .nth(1)
        .expect("README has an `Upgrading` section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the Upgrading section opens with a ```sh block");
    let commands: Vec<Vec<String>> = block
        .lines()
        .map(|line| line.split('#').next().unwrap().trim())
        .filter(|line| !line.is_empty())
        .map(|line| line.split_whitespace().map(str::to_string).collect())
        .collect();
    assert!(
        commands.iter().all(|words| words[0] == "netctl"),
        "{commands:?}"
    );
    assert!(commands.len() >= 6, "{commands:?}");
    commands
}

/// The quickstart's datastore, written as `scripts/quickstart.sh` writes it.
fn quickstart_datastore() -> EtcdServer {
    let etcd = EtcdServer::start();
    for (index, node) in ["node-a", "node-b", "node-c"].into_iter().enumerate() {
        let tunnel = match node {
            "node-a" => r#","ipv4IPIPTunnelAddr":"192.168.10.0""#,
            _ => "",
        };
        etcd.put(
            &format!("{ROOT}/nodes/{node}"),
            format!(
                r#"{{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{{"name":"{node}"}},"spec":{{"bgp":{{"ipv4Address":"10.0.0.{}/24"{tunnel}}}}}}}"#,
                index + 1
            ),
        );
    }
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"clusterGUID":"8b6f1c2d3e4f40a1b2c3d4e5f6a7b8c9","calicoVersion":"v3.13.2","clusterType":"bgp","datastoreReady":true}}"#,
    );
    // The pool and the blocks the quickstart writes for its `ipam show` and `ipam check` (its
    // handles, affinities and workload endpoints are left out: no upgrade step reads them).
    etcd.put(
        &format!("{ROOT}/ippools/default-ipv4-ippool"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"IPPool","metadata":{"name":"default-ipv4-ippool"},"spec":{"cidr":"192.168.0.0/16","blockSize":26,"ipipMode":"Always","natOutgoing":true}}"#,
    );
    let nulls = |from: usize| vec!["null"; 64 - from].join(",");
    let free = |from: usize| {
        (from..64)
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let owner = |handle: &str, pairs: &str| {
        format!(r#"{{"handle_id":"{handle}","secondary":{{{pairs}}}}}"#)
    };
    let pod =
        |node: &str, pod: &str| format!(r#""namespace":"default","node":"{node}","pod":"{pod}""#);
    etcd.put(
        "/calico/ipam/v2/assignment/ipv4/block/192.168.10.0-26",
        format!(
            r#"{{"cidr":"192.168.10.0/26","affinity":"host:node-a","allocations":[0,1,2,{}],"unallocated":[{}],"attributes":[{},{},{}],"sequenceNumber":3,"sequenceNumberForAllocation":{{"0":0,"1":1,"2":2}},"deleted":false}}"#,
            nulls(3),
            free(3),
            owner("ipip-tunnel-addr-node-a", r#""node":"node-a","type":"ipipTunnelAddress""#),
            owner("k8s-pod-network.web-0", &pod("node-a", "web-0")),
            owner("k8s-pod-network.gone-0", &pod("node-a", "gone-0")),
        ),
    );
    etcd.put(
        "/calico/ipam/v2/assignment/ipv4/block/192.168.20.0-26",
        format!(
            r#"{{"cidr":"192.168.20.0/26","affinity":"host:node-b","allocations":[0,{}],"unallocated":[{}],"attributes":[{}],"sequenceNumber":1,"sequenceNumberForAllocation":{{"0":0}},"deleted":false}}"#,
            nulls(1),
            free(1),
            owner("k8s-pod-network.db-0", &pod("node-b", "db-0")),
        ),
    );
    etcd
}

/// `netctl apply -f` of the quickstart's two host endpoints.
fn apply_quickstart_host_endpoints(operator: &Operator) {
    let file = operator.netctl.write_file(
        "hostendpoints.yaml",
        r#"apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-a-all, labels: {role: worker}}
spec: {node: node-a, interfaceName: "*"}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-b-eth0, labels: {role: worker}}
spec: {node: node-b, interfaceName: eth0, expectedIPs: [10.0.0.2]}
"#,
    );
    let output = operator.run(&["apply", "-f", file.to_str().unwrap()], &[]);
    assert_success(&output, "netctl apply -f hostendpoints.yaml");
}

/// Runs one walk-through line in `operator`'s home (where `plan.json` lands), with the mirror.
fn run_line(
    operator: &Operator,
    words: &[String],
    mirror: &std::path::Path,
) -> std::process::Output {
    let mut args: Vec<String> = words[1..].to_vec();
    if args[0] == "upgrade" && matches!(args[1].as_str(), "plan" | "apply") {
        args.extend(["--mirror-dir".to_string(), mirror.display().to_string()]);
    }
    for arg in args.iter_mut() {
        if arg == "plan.json" {
            *arg = operator.home().join("plan.json").display().to_string();
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    operator.run(&args, &[])
}

fn waiting_gate(operator: &Operator) -> Option<String> {
    let status: Value = status_json(operator);
    (status["checkpoint"]["run"]["state"] == "waiting-at-gate").then(|| {
        status["checkpoint"]["run"]["step"]
            .as_str()
            .unwrap()
            .to_string()
    })
}

#[test]
fn the_first_steps_work_on_the_quickstart_datastore_alone() {
    let etcd = quickstart_datastore();
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    apply_quickstart_host_endpoints(&operator);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let before = etcd.dump_prefix_bytes("/calico/");
    for words in &walkthrough()[..3] {
        let output = run_line(&operator, words, &mirror);
        assert_success(&output, &words.join(" "));
    }
    assert!(operator.home().join("plan.json").exists());
    assert_eq!(
        etcd.dump_prefix_bytes("/calico/"),
        before,
        "steps 0-2 change nothing"
    );
}

/// Plays the controllers, kubelet and node agents: once the v3.27 manifest is applied, the
/// workloads roll out and ClusterInformation reports v3.27.0.
fn play_the_cluster(etcd: &EtcdServer, kube: &KubeApiServer, stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        // Both workloads must carry the new spec before they roll: the manifest is applied one
        // object at a time, and a Deployment marked rolled out before its own update would keep
        // an observed generation behind its spec (the wait would never end).
        let at_new_image = |resource: &str, name: &str, image: &str| {
            kube.get("apps/v1", resource, "kube-system", name)
                .is_some_and(|object| {
                    object["spec"]["template"]["spec"]["containers"][0]["image"] == image
                })
        };
        let applied = at_new_image("daemonsets", "calico-node", "docker.io/calico/node:v3.27.0")
            && at_new_image(
                "deployments",
                "calico-kube-controllers",
                "docker.io/calico/kube-controllers:v3.27.0",
            );
        if applied {
            roll_out(kube, "daemonsets", "calico-node", 1, 2);
            roll_out(kube, "deployments", "calico-kube-controllers", 1, 1);
            set_etcd_version(etcd, "v3.27.0");
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn the_whole_walkthrough_runs_as_written_with_the_cluster_configured() {
    let etcd = quickstart_datastore();
    let kube = KubeApiServer::start();
    install(&kube, &manifest_workloads("v3.13.2"));
    let operator = operator_for(&etcd, &kube);
    apply_quickstart_host_endpoints(&operator);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let lines = walkthrough();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| play_the_cluster(&etcd, &kube, &stop));
        let mut gates = Vec::new();
        for words in &lines {
            let line = words.join(" ");
            if line.ends_with("--approve STEP") {
                // As often as `upgrade status` names a gate.
                while let Some(gate) = waiting_gate(&operator) {
                    let approved: Vec<String> = words
                        .iter()
                        .map(|word| {
                            if word == "STEP" {
                                gate.clone()
                            } else {
                                word.clone()
                            }
                        })
                        .collect();
                    let output = run_line(&operator, &approved, &mirror);
                    assert!(
                        matches!(output.status.code(), Some(0 | 3)),
                        "{line} ({gate}): {}",
                        text(&output.stderr)
                    );
                    gates.push(gate);
                    assert!(gates.len() < 10, "gates do not end: {gates:?}");
                }
                continue;
            }
            let output = run_line(&operator, words, &mirror);
            let stops_at_a_gate =
                words.iter().any(|word| word == "apply") && !line.contains("--dry-run");
            match stops_at_a_gate {
                true => assert_eq!(
                    output.status.code(),
                    Some(3),
                    "{line}: {}",
                    text(&output.stderr)
                ),
                false => assert_success(&output, &line),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(!gates.is_empty());
    });
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert!(
        etcd.get(&format!(
            "{ROOT}/globalnetworkpolicies/default.allow-all-upgrade"
        ))
        .is_none(),
        "the finish phase removed the temporary policy"
    );
}
