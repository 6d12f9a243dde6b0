//! Verification, the last step of every plan (issue 30, item 1): a run whose node agents come up
//! at the wrong version stops there (exit 3) naming the pod, `upgrade status` shows it, a resume
//! once the cluster is right completes the run, and `upgrade verify` checks again on its own.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use serde_json::json;

use super::common::*;
use super::manifest_kubernetes::kubernetes_manifest_cluster;
use crate::exec_common::text;
use crate::ipam_common::Block;
use crate::support::calico_node::{Behaviour, CalicoNodeStandIn};

#[test]
fn a_run_whose_node_agents_come_up_at_the_wrong_version_stops_at_verification() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    let (plan_file, plan) = plan(&operator, "v3.29.0", &["--no-manifest-edits"]);
    let ids = step_ids(&plan);
    assert_eq!(ids.first().map(String::as_str), Some("verify/baseline"));
    assert_eq!(ids.last().map(String::as_str), Some("verify/cluster"));

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    // The node agent on node-1 did not come up at the new version.
    kube.put(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "calico-node-1", "namespace": "kube-system",
                     "labels": {"k8s-app": "calico-node"}},
        "spec": {"nodeName": "node-1",
                 "containers": [{"name": "calico-node", "image": "docker.io/calico/node:v3.25.2"},
                                {"name": "c1", "image": "x"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "calico-node", "ready": true},
                                                             {"name": "c1", "ready": true}]}
    }));
    set_kube_version(&kube, "v3.29.0");

    let stopped = operator.apply(&Apply::resume().mirror(&mirror).yes());
    let stderr = text(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("verification failed at `verify/cluster`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("pod `calico-node-1` on node `node-1` runs `v3.25.2`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("to go back, newest step first:\n  after `manifest-upgrade/apply-manifest`: The node agents roll to v3.29.0."),
        "{stderr}"
    );
    let status = operator.run(&["upgrade", "status"], &[]);
    let shown = text(&status.stdout);
    assert!(
        shown.contains("stopped at `verify/cluster`: the verification failed"),
        "{shown}"
    );
    assert!(
        shown.contains("pod `calico-node-1` on node `node-1` runs `v3.25.2`"),
        "{shown}"
    );
    let json = status_json(&operator);
    assert_eq!(
        json["checkpoint"]["run"],
        json!({"state": "waiting-at-gate", "step": "verify/cluster"})
    );

    // `upgrade verify` on its own says the same, against the run's baseline, and exits 1.
    let verify = operator.run(&["upgrade", "verify"], &[]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify.stderr));
    let report = text(&verify.stdout);
    assert!(report.contains("FAILED      node-agents"), "{report}");
    assert!(
        report.contains("ok          ipam: no new IPAM problem"),
        "{report}"
    );
    assert!(report.contains("ok          resources:"), "{report}");

    // Once the agent runs the new version, the resume verifies again and completes the run.
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    let verify = operator.run(&["upgrade", "verify", "-o", "json"], &[]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(report["findings"][0]["check"], "node-agents");
    assert_eq!(report["findings"][0]["verdict"], "passed");
    assert!(verify.status.signal().is_none());
}

/// The etcd manifest path (v3.13 → v3.27) with a BGP node whose calico-node reports its sessions:
/// after the manifest step the node has lost a session and an address leaked; the verification
/// names both, against the baseline the run took before its first write.
#[test]
fn a_run_that_loses_a_bgp_session_and_leaks_an_address_stops_at_verification() {
    let (etcd, kube) = etcd_manifest_cluster();
    etcd.put(
        &format!("{ROOT}/nodes/node-a"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"node-a","uid":"n1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"bgp":{"ipv4Address":"10.0.0.1/24"}}}"#,
    );
    let before = CalicoNodeStandIn::on_etcd(
        etcd.endpoints(),
        Behaviour::for_nodes(&["node-a"], Duration::from_millis(100)),
    );
    let (operator, mirror, plan_file) = etcd_manifest_plan(&etcd, &kube);
    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "etcd-upgrade/apply-manifest:after");
    let status = status_json(&operator);
    let baseline = &status["checkpoint"]["outputs"]["verify_baseline"];
    assert_eq!(
        baseline["bgp"]["node-a"]["established"],
        json!(["10.0.0.3", "10.0.0.4"]),
        "{status}"
    );
    assert_eq!(baseline["ipam"], json!([]), "{status}");

    // The upgraded agent on node-a lost its session to 10.0.0.4, and an address leaked.
    drop(before);
    let _after = CalicoNodeStandIn::on_etcd(
        etcd.endpoints(),
        Behaviour {
            lost_peers: vec!["10.0.0.4".to_string()],
            ..Behaviour::for_nodes(&["node-a"], Duration::from_millis(100))
        },
    );
    let block = Block::new("10.65.0.0/26", 64, Some("host:node-a")).allocate(
        5,
        Some("k8s-pod-network.gone"),
        &[("namespace", "default"), ("pod", "gone")],
    );
    etcd.put(&block.etcd_key(), block.etcd_json(false));
    roll_out(&kube, "daemonsets", "calico-node", 1, 2);
    roll_out(&kube, "deployments", "calico-kube-controllers", 1, 1);
    set_etcd_version(&etcd, "v3.27.0");

    let stopped = operator.apply(&Apply::resume().mirror(&mirror).yes());
    let stderr = text(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "node `node-a`: 1 session(s) established, 2 before; lost `10.0.0.4` (now: 10.0.0.4 (Active), 192.0.2.1 (Active))"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("leaked address 10.65.0.5"), "{stderr}");
    // The node agents themselves are fine; the temporary policy and label the plan adds are
    // gone again by then (its finish phase runs before the verification).
    assert!(stderr.contains("ok          node-agents"), "{stderr}");
    assert!(stderr.contains("ok          resources"), "{stderr}");
}
