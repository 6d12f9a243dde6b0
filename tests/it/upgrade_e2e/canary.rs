//! The canary node rollout (issue 30, item 4) of a `calico.yaml` install, v3.25 → v3.29, with the
//! test API server standing in for the DaemonSet controller of `calico-node` on three nodes: a
//! canary of one node rolls exactly that node before its gate (the other two still at the old
//! version while the run waits), then the rest; the selector form with kills around the gate; the
//! refusals (too many nodes, operator and Helm installs, another canary on resume).

use serde_json::{Value, json};

use super::common::*;
use super::manifest_kubernetes::kubernetes_manifest_cluster;
use crate::exec_common::text;
use crate::support::KubeApiServer;

const NODES: [&str; 3] = ["node-a", "node-b", "node-c"];

/// Three Ready nodes (`node-b` labelled `canary=yes`) and the controller of DaemonSet
/// `calico-node` running a pod on each.
fn three_nodes(kube: &KubeApiServer) {
    for node in NODES {
        let mut labels = json!({"kubernetes.io/hostname": node});
        if node == "node-b" {
            labels["canary"] = json!("yes");
        }
        kube.put(json!({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        }));
    }
    kube.run_daemon_set("kube-system", "calico-node", &NODES);
}

/// The calico-node release each node's pod runs, by node.
fn versions_by_node(kube: &KubeApiServer) -> Vec<(String, String)> {
    pod_images(kube, "kube-system")
        .iter()
        .filter_map(|line| {
            let (node, image) = line.split_once(' ')?;
            Some((node.to_string(), image.rsplit(':').next()?.to_string()))
        })
        .collect()
}

fn expect(versions: &[(&str, &str)]) -> Vec<(String, String)> {
    versions
        .iter()
        .map(|(node, version)| (node.to_string(), version.to_string()))
        .collect()
}

fn daemon_set(kube: &KubeApiServer) -> Value {
    kube.get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .expect("DaemonSet calico-node")
}

/// What the tests plan with: a canary of one node, no manifest edits, the release's files from
/// `mirror`.
fn one_canary(mirror: &std::path::Path) -> [&str; 5] {
    [
        "--no-manifest-edits",
        "--canary",
        "1",
        "--mirror-dir",
        mirror.to_str().unwrap(),
    ]
}

#[test]
fn a_canary_of_one_of_three_nodes_rolls_exactly_one_node_before_its_gate_then_the_rest() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    three_nodes(&kube);
    let (plan_file, plan) = plan(&operator, "v3.29.0", &one_canary(&mirror));
    assert_eq!(
        plan["canary"],
        json!({"count": 1, "nodes": ["node-a"], "of_nodes": 3,
               "mechanism": "manifest install: the DaemonSet is applied with `updateStrategy: OnDelete`, the canaries' pods are deleted and replaced node by node, then the rest, then the DaemonSet's own strategy is restored"})
    );
    let ids = step_ids(&plan);
    let canary: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .skip_while(|id| *id != "manifest-upgrade/apply-manifest")
        .take(7)
        .collect();
    assert_eq!(
        canary,
        [
            "manifest-upgrade/apply-manifest",
            "canary/roll-canaries",
            "canary/verify-canaries",
            "canary/approve",
            "canary/roll-rest",
            "canary/restore-update-strategy",
            "manifest-upgrade/wait-node-agents",
        ]
    );
    // The text plan names the canary and its mechanism.
    let shown = operator.run(
        &[
            &["upgrade", "plan", "--to", "v3.29.0"][..],
            &one_canary(&mirror),
        ]
        .concat(),
        &[],
    );
    assert_success(&shown, "upgrade plan");
    assert!(
        text(&shown.stdout).contains("canary: 1 of 3 node(s) first (node-a), then a gate, then the rest; manifest install: the DaemonSet is applied with `updateStrategy: OnDelete`"),
        "{}",
        text(&shown.stdout)
    );

    // The dry run rolls nothing and says what the canary step would delete.
    let before = versions_by_node(&kube);
    let dry = operator.apply(&Apply::plan(&plan_file).mirror(&mirror).dry_run());
    assert_success(&dry, "dry-run");
    assert!(
        text(&dry.stdout).contains("[4/12] canary/roll-canaries (kube.replace-pods) — Replace the node agent pods of the canary node(s) node-a, one node at a time\n  would GET /apis/apps/v1/namespaces/kube-system/daemonsets/calico-node, then for node(s) node-a, one at a time: DELETE /api/v1/namespaces/kube-system/pods/<pod>"),
        "{}",
        text(&dry.stdout)
    );
    assert_eq!(versions_by_node(&kube), before);

    // Without a terminal the run stops at the canary gate: exactly node-a runs v3.29.0.
    let stopped = operator.apply(&Apply::plan(&plan_file).mirror(&mirror));
    let stderr = text(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("canary/approve"), "{stderr}");
    assert_eq!(
        versions_by_node(&kube),
        expect(&[
            ("node-a", "v3.29.0"),
            ("node-b", "v3.25.2"),
            ("node-c", "v3.25.2")
        ])
    );
    let held = daemon_set(&kube);
    assert_eq!(held["spec"]["updateStrategy"]["type"], "OnDelete");
    let recorded: Value = serde_json::from_str(
        held["metadata"]["annotations"]["netctl.projectcalico.org/update-strategy"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        recorded,
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
    );
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"],
        json!({"state": "waiting-at-gate", "step": "canary/approve"})
    );
    let journal = std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap();
    assert!(
        journal.contains("replaced the pods of 1 node(s): node-a (calico-node-"),
        "{journal}"
    );
    assert!(journal.contains("verified node(s) node-a"), "{journal}");

    // A resume that asks for another canary is a stale plan.
    let other = operator.apply(&Apply::resume().mirror(&mirror).with(&["--canary", "2"]));
    assert_eq!(other.status.code(), Some(1));
    assert!(
        text(&other.stderr).contains("the plan was made with `--canary 1`, not `--canary 2`"),
        "{}",
        text(&other.stderr)
    );
    assert_eq!(versions_by_node(&kube)[1].1, "v3.25.2");

    // Approved, the rest rolls node by node and the DaemonSet gets its own strategy back.
    set_kube_version(&kube, "v3.29.0");
    let resumed = operator.apply(
        &Apply::resume()
            .mirror(&mirror)
            .approve("canary/approve")
            .approve("post-upgrade-version/replace-netctl"),
    );
    assert_success(&resumed, "resume");
    assert_eq!(
        versions_by_node(&kube),
        expect(&[
            ("node-a", "v3.29.0"),
            ("node-b", "v3.29.0"),
            ("node-c", "v3.29.0")
        ])
    );
    let restored = daemon_set(&kube);
    assert_eq!(
        restored["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert!(
        restored["metadata"]["annotations"]["netctl.projectcalico.org/update-strategy"].is_null(),
        "{restored}"
    );
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
}

#[test]
fn a_canary_chosen_by_selector_resumes_after_kills_around_its_gate() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    three_nodes(&kube);
    let (plan_file, plan) = plan(
        &operator,
        "v3.29.0",
        &[
            "--no-manifest-edits",
            "--canary-selector",
            "canary=yes",
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ],
    );
    assert_eq!(plan["canary"]["selector"], "canary=yes");
    assert_eq!(plan["canary"]["nodes"], json!(["node-b"]));

    // Killed right after the canary's pod was replaced, before the checkpoint knew.
    let apply = Apply::plan(&plan_file).mirror(&mirror);
    apply_killed_at(&operator, &apply, "canary/roll-canaries:after");
    let stopped = operator.apply(&Apply::resume().mirror(&mirror));
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    assert_eq!(
        versions_by_node(&kube),
        expect(&[
            ("node-a", "v3.25.2"),
            ("node-b", "v3.29.0"),
            ("node-c", "v3.25.2")
        ])
    );

    // Approved, then killed before the rest: the resume rolls the rest.
    set_kube_version(&kube, "v3.29.0");
    let approved = Apply::resume().mirror(&mirror).approve("canary/approve");
    apply_killed_at(&operator, &approved, "canary/roll-rest:before");
    assert_eq!(versions_by_node(&kube)[0].1, "v3.25.2");
    let resumed = operator.apply(&Apply::resume().mirror(&mirror).yes());
    assert_success(&resumed, "resume after the kill");
    assert_eq!(
        versions_by_node(&kube),
        expect(&[
            ("node-a", "v3.29.0"),
            ("node-b", "v3.29.0"),
            ("node-c", "v3.29.0")
        ])
    );
    assert_eq!(
        status_json(&operator)["checkpoint"]["run"]["state"],
        "completed"
    );
}

#[test]
fn a_canary_is_refused_with_its_reason_before_anything_is_planned() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    three_nodes(&kube);
    let mirror = mirror.to_str().unwrap();
    let refused = |extra: &[&str]| {
        let mut args = vec![
            "upgrade",
            "plan",
            "--to",
            "v3.29.0",
            "--no-manifest-edits",
            "--mirror-dir",
            mirror,
        ];
        args.extend(extra);
        let output = operator.run(&args, &[]);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
        text(&output.stderr)
    };
    let stderr = refused(&["--canary", "3"]);
    assert!(
        stderr
            .contains("`--canary 3` leaves no node for after the gate: the cluster has 3 node(s)"),
        "{stderr}"
    );
    let stderr = refused(&["--canary-selector", "canary=no"]);
    assert!(stderr.contains("matches no node (of 3)"), "{stderr}");
    let stderr = refused(&["--canary-selector", "kubernetes.io/hostname"]);
    assert!(stderr.contains("matches every node (3)"), "{stderr}");
    // Usage errors exit 64: zero, and both forms at once.
    let zero = operator.run(
        &["upgrade", "plan", "--to", "v3.29.0", "--canary", "0"],
        &[],
    );
    assert_eq!(zero.status.code(), Some(64), "{}", text(&zero.stderr));
    let both = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.29.0",
            "--canary",
            "1",
            "--canary-selector",
            "a=b",
        ],
        &[],
    );
    assert_eq!(both.status.code(), Some(64), "{}", text(&both.stderr));
}

#[test]
fn a_canary_is_refused_on_operator_and_helm_installs_with_the_reason_and_the_alternative() {
    for (method, words) in [
        (
            "operator",
            "`--canary` is refused on operator installs: the operator rolls calico-node from `Installation.spec.nodeUpdateStrategy`",
        ),
        (
            "helm",
            "`--canary` is refused on Helm installs: the chart (`tigera-operator`) hands its `installation` values",
        ),
    ] {
        let (kube, operator, _mirror) = kubernetes_manifest_cluster();
        three_nodes(&kube);
        let output = operator.run(
            &[
                "upgrade",
                "plan",
                "--to",
                "v3.29.0",
                "--install-method",
                method,
                "--canary",
                "1",
            ],
            &[],
        );
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{method}: {stderr}");
        assert!(stderr.contains(words), "{method}: {stderr}");
        assert!(stderr.contains("maxUnavailable"), "{method}: {stderr}");
    }
}

/// The etcd manifest path (v3.13 → v3.27) with BGP node `node-a`, whose calico-node reports its
/// sessions: the canary's new agent lost a session, so the run stops at the canary's own
/// verification, before any other node rolled, naming the session — `--yes` does not pass it.
#[test]
fn a_canary_that_loses_a_bgp_session_stops_at_its_verification_before_the_rest_rolls() {
    use crate::support::calico_node::{Behaviour, CalicoNodeStandIn};
    use std::time::Duration;

    let (etcd, kube) = etcd_manifest_cluster();
    three_nodes(&kube);
    etcd.put(
        &format!("{ROOT}/nodes/node-a"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"node-a","uid":"n1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"bgp":{"ipv4Address":"10.0.0.1/24"}}}"#,
    );
    let before = CalicoNodeStandIn::on_etcd(
        etcd.endpoints(),
        Behaviour::for_nodes(&["node-a"], Duration::from_millis(100)),
    );
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let (plan_file, plan) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap(), "--canary", "1"],
    );
    assert_eq!(plan["canary"]["nodes"], json!(["node-a"]));
    assert!(step_ids(&plan).contains(&"canary/verify-canaries".to_string()));

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "canary/roll-canaries:after");
    drop(before);
    let _after = CalicoNodeStandIn::on_etcd(
        etcd.endpoints(),
        Behaviour {
            lost_peers: vec!["10.0.0.4".to_string()],
            ..Behaviour::for_nodes(&["node-a"], Duration::from_millis(100))
        },
    );
    let stopped = operator.apply(&Apply::resume().mirror(&mirror).yes());
    let stderr = text(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("verification failed at `canary/verify-canaries`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("node `node-a`: 1 session(s) established, 2 before; lost `10.0.0.4`"),
        "{stderr}"
    );
    assert!(stderr.contains("ok          node-agents"), "{stderr}");
    assert_eq!(
        versions_by_node(&kube),
        expect(&[
            ("node-a", "v3.27.0"),
            ("node-b", "v3.13.2"),
            ("node-c", "v3.13.2")
        ]),
        "only the canary rolled"
    );
    assert_eq!(
        status_json(&operator)["checkpoint"]["run"],
        json!({"state": "waiting-at-gate", "step": "canary/verify-canaries"})
    );
}

/// Going back from the canary gate: `upgrade rollback` re-applies the DaemonSet as it was (old
/// template, `RollingUpdate`), its controller puts the canary back on the old version, and the
/// rollback's verification finds every node agent at v3.25.2.
#[test]
fn a_rollback_from_the_canary_gate_puts_the_canary_back() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    three_nodes(&kube);
    let (plan_file, _) = plan(&operator, "v3.29.0", &one_canary(&mirror));
    let stopped = operator.apply(&Apply::plan(&plan_file).mirror(&mirror));
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    assert_eq!(
        versions_by_node(&kube)[0],
        ("node-a".to_string(), "v3.29.0".to_string())
    );

    let rolled = operator.run(&["upgrade", "rollback", "--yes"], &[]);
    assert_success(&rolled, "upgrade rollback");
    let shown = text(&rolled.stdout);
    assert!(
        shown.contains("undo/manifest-upgrade/apply-manifest") && shown.contains("undo/verify"),
        "{shown}"
    );
    assert!(
        !shown.contains("undo/canary/"),
        "the canary steps have nothing of their own to undo: {shown}"
    );
    assert_eq!(
        versions_by_node(&kube),
        expect(&[
            ("node-a", "v3.25.2"),
            ("node-b", "v3.25.2"),
            ("node-c", "v3.25.2")
        ])
    );
    assert_eq!(
        daemon_set(&kube)["spec"]["updateStrategy"]["type"],
        "RollingUpdate"
    );
    assert!(
        text(&rolled.stderr).contains("undo/verify: succeeded"),
        "{}",
        text(&rolled.stderr)
    );
}
