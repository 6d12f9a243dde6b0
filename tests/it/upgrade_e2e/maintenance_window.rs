//! Issue 17, the 3 a.m. upgrade: the paper cuts an operator meets in a maintenance window, each
//! against a real etcd and the Kubernetes test server. `upgrade apply --procedure` runs a named
//! procedure in one command; the plan's `run:` lines are commands `netctl label` accepts; a gate
//! names the state directory and exits 3, as help, README and docs/executor.md say; a `--from`
//! that contradicts the datastore and a `--to` past the newest known patch are refused before
//! anything is written.

use super::auto_host_endpoints::{
    auto_host_endpoint_datastore, host_endpoint_names, play_kube_controllers,
};
use super::common::*;
use crate::exec_common::text;
use crate::support::snapshot::netctl_snapshot;

#[test]
fn apply_procedure_plans_and_runs_a_named_procedure_in_one_command() {
    let etcd = auto_host_endpoint_datastore("b");
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let output = std::thread::scope(|scope| {
        scope.spawn(|| play_kube_controllers(&etcd, &stop));
        let output = operator.run(
            &[
                "upgrade",
                "apply",
                "--procedure",
                "auto-host-endpoints",
                "--yes",
                // No cluster: the node agents run outside Kubernetes, checked by the operator.
                "--skip-preflight",
                "node-agents",
            ],
            &[],
        );
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        output
    });
    assert_success(&output, "upgrade apply --procedure");
    netctl_snapshot!(&output);
    assert_eq!(
        host_endpoint_names(&etcd),
        ["node-a-auto-hep", "node-a-eth0", "node-b-auto-hep"]
    );
    assert_eq!(
        status_json(&operator)["plan"]["procedure"],
        "auto-host-endpoints"
    );
}

#[test]
fn apply_procedure_upgrade_still_needs_a_target() {
    let etcd = auto_host_endpoint_datastore("b");
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let before = etcd.revision();
    let output = operator.run(&["upgrade", "apply", "--procedure", "upgrade"], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    netctl_snapshot!(&output);
    assert_eq!(etcd.revision(), before, "nothing was written");
}

#[test]
fn plan_run_lines_are_label_commands_netctl_accepts() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let output = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&output, "upgrade plan");
    let plan = text(&output.stdout);
    let removal = plan
        .lines()
        .filter_map(|line| line.split("run:").nth(1))
        .map(str::trim)
        .find(|command| command.starts_with("resource.label") && command.contains("--remove"))
        .unwrap_or_else(|| panic!("no label removal shown as `KEY --remove`:\n{plan}"));
    // One batched step: the label command for each of the names it lists.
    assert_eq!(
        removal,
        "resource.label-each HostEndpoint host-endpoint-upgrade --remove on 1 resource(s): node-a-all"
    );
    let (command, names) = removal.split_once(" on ").unwrap();
    let name = names.split(": ").nth(1).unwrap();

    // The line, given to `netctl label`, does what the step does.
    let labelled = operator.run(
        &[
            "label",
            "hostendpoint",
            "node-a-all",
            "host-endpoint-upgrade=",
        ],
        &[],
    );
    assert_success(&labelled, "label");
    let mut arguments: Vec<&str> = command.split_whitespace().skip(1).collect();
    arguments.insert(1, name);
    let removed = operator.run(&[&["label"], arguments.as_slice()].concat(), &[]);
    assert_success(&removed, "the plan's label command");
    let endpoint = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-all"))
        .unwrap();
    assert_eq!(
        endpoint["metadata"]["labels"],
        serde_json::json!({"role": "edge"})
    );
}

#[test]
fn an_unattended_gate_names_the_state_directory_and_exits_3() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let (plan_file, _) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap()],
    );
    // No `--yes`, no terminal: the first gate stops the run.
    let output = operator.apply(&Apply::plan(&plan_file).mirror(&mirror));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let state = operator.home().join("state");
    assert!(
        stderr.contains(&format!("state directory: `{}`", state.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("`{}`", state.join("files").display())),
        "{stderr}"
    );
}

#[test]
fn the_exit_code_of_a_stopped_gate_is_one_number_everywhere() {
    let help = crate::support::Netctl::new()
        .args(["upgrade", "apply", "--help"])
        .output();
    assert_success(&help, "upgrade apply --help");
    let help = text(&help.stdout).replace('\n', " ");
    assert!(
        help.contains("3 when it stopped at a gate"),
        "help says 3: {help}"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains("| 3 | `upgrade apply` stopped at a human gate"),
        "README says 3"
    );
    let executor =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/executor.md"))
            .unwrap()
            .replace('\n', " ");
    assert!(
        executor.contains("exit 3 so a script can tell")
            && executor.contains("interrupted; 3 stopped at a gate")
            && executor.contains("64 bad usage"),
        "docs/executor.md says 3"
    );
    assert!(
        !executor.contains("interrupted or stopped at a gate"),
        "docs/executor.md no longer counts a gate as a failure"
    );
}

#[test]
fn a_from_that_contradicts_the_datastore_is_refused_before_anything_is_written() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let before = etcd.revision();
    for command in [
        &["upgrade", "plan", "--to", "v3.27.0", "--from", "v3.20.0"][..],
        &[
            "upgrade", "apply", "--to", "v3.27.0", "--from", "v3.20.0", "--yes",
        ][..],
    ] {
        let output = operator.run(command, &[]);
        netctl_snapshot!(&output);
    }
    assert_eq!(etcd.revision(), before, "nothing was written");
    // Agreeing with the datastore is fine.
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let output = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "--from",
            "v3.13.2",
            "--no-manifest-edits",
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "-o",
            "json",
        ],
        &[],
    );
    assert_success(&output, "plan with an agreeing --from");
}

#[test]
fn a_target_past_the_newest_known_patch_is_refused() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    set_etcd_version(&etcd, "v3.27.0");
    let output = operator.run(&["upgrade", "plan", "--to", "v3.29.99"], &[]);
    netctl_snapshot!(&output);
}

#[test]
fn plan_without_a_target_shows_the_releases_within_reach_and_the_advice() {
    // The quickstart's cluster: etcd at v3.13 with an all-interfaces host endpoint, no kubeconfig.
    let (etcd, _kube) = etcd_manifest_cluster();
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let before = etcd.revision();
    let output = operator.run(&["upgrade", "plan"], &[]);
    assert_success(&output, "upgrade plan");
    let survey = text(&output.stdout);
    assert!(
        survey.contains("v3.13 → v3.27 → v3.29: two runs"),
        "{survey}"
    );
    snapshot(&operator, "plan_without_a_target_v3_13_etcd", &survey);

    let output = operator.run(&["upgrade", "plan", "-o", "json"], &[]);
    assert_success(&output, "upgrade plan -o json");
    let survey: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(survey["installed"], "v3.13.2");
    assert_eq!(
        survey["lines"][0],
        serde_json::json!({"line": "v3.27", "newest": "v3.27.5", "runs": ["v3.27"]})
    );
    assert_eq!(
        survey["lines"][2],
        serde_json::json!({"line": "v3.29", "newest": "v3.29.7", "runs": ["v3.27", "v3.29"]})
    );
    assert_eq!(etcd.revision(), before, "a survey writes nothing");

    // A draw of the plan, or saving it, needs a target.
    let output = operator.run(&["upgrade", "plan", "-o", "mermaid"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("without `--to` there is none"));
}

#[test]
fn plan_without_a_target_on_a_kubernetes_operator_install_has_no_advice_to_move() {
    let kube = crate::support::KubeApiServer::start();
    set_kube_version(&kube, "v3.29.2");
    kube.put(operator_deployment("quay.io/tigera/operator:v1.36.2"));
    let operator = kubernetes_operator(&kube);
    let output = operator.run(&["upgrade", "plan"], &[]);
    assert_success(&output, "upgrade plan");
    netctl_snapshot!(&output);
}

#[test]
fn preflight_refuses_a_run_without_its_cluster_before_anything_is_written() {
    // The issue's 3 a.m.: no kubeconfig, and the first steps would label host endpoints and apply
    // `allow-all-upgrade` before the first Kubernetes step failed.
    let (etcd, _kube) = etcd_manifest_cluster();
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    // `upgrade plan` reports what the run would stop at.
    let planned = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&planned, "upgrade plan");
    let talk = text(&planned.stderr);
    assert!(talk.contains("pre-flight datastore: ok"), "{talk}");
    assert!(
        talk.contains("pre-flight cluster: FAILED:")
            && talk.contains("`upgrade apply` would stop here before writing anything"),
        "{talk}"
    );
    let before = etcd.revision();
    let apply = |extra: &[&str]| {
        let mut args = vec![
            "upgrade",
            "apply",
            "--to",
            "v3.27.0",
            "--no-manifest-edits",
            "--yes",
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ];
        args.extend(extra);
        operator.run(&args, &[])
    };
    let output = apply(&[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("pre-flight failed before anything was written: cluster:"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "talk to Kubernetes (first `etcd-upgrade/apply-manifest`) and no cluster is configured"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("hint: configure the cluster"), "{stderr}");
    assert!(stderr.contains("--skip-preflight cluster"), "{stderr}");
    assert_eq!(etcd.revision(), before, "not even the lock was written");
    assert!(
        !operator.home().join("state/checkpoint.json").exists(),
        "no checkpoint either"
    );

    // The override is the operator's to make, and the journal keeps it.
    let output = apply(&["--skip-preflight", "cluster"]);
    assert_ne!(etcd.revision(), before, "{}", text(&output.stderr));
    let journal =
        std::fs::read_to_string(operator.home().join("state/journal.jsonl")).expect("a journal");
    assert!(
        journal.contains(r#""event":"preflight-skipped""#)
            && journal.contains("pre-flight check `cluster` skipped"),
        "{journal}"
    );
}

#[test]
fn preflight_refuses_a_run_while_a_node_is_not_ready() {
    let (etcd, kube) = etcd_manifest_cluster();
    for (node, ready) in [("node-a", "True"), ("node-b", "False")] {
        kube.put(serde_json::json!({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}
        }));
    }
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let (plan_file, _) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap()],
    );
    let before = etcd.revision();
    let output = operator.apply(&Apply::plan(&plan_file).mirror(&mirror).yes());
    netctl_snapshot!(&output);
    assert_eq!(etcd.revision(), before, "nothing was written");
}

/// Runs the `auto-host-endpoints` procedure without a terminal (kube-controllers played, taking
/// 1.5 s to create the endpoints) and returns stderr's lines about the wait for `node-a-auto-hep`.
fn wait_lines(extra: &[&str]) -> Vec<String> {
    let etcd = auto_host_endpoint_datastore("b");
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let output = std::thread::scope(|scope| {
        scope.spawn(|| play_kube_controllers(&etcd, &stop));
        let mut args = vec![
            "upgrade",
            "apply",
            "--procedure",
            "auto-host-endpoints",
            "--yes",
            "--skip-preflight",
            "node-agents",
        ];
        args.extend(extra);
        let output = operator.run(&args, &[]);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        output
    });
    assert_success(&output, "upgrade apply --procedure");
    let stderr = text(&output.stderr);
    assert!(
        !stderr.contains("warning: waiting for"),
        "a wait's count is progress, not a warning: {stderr}"
    );
    stderr
        .lines()
        .filter(|line| line.contains("waiting for hostendpoints `node-a-auto-hep`"))
        .map(str::to_string)
        .collect()
}

#[test]
fn without_a_terminal_a_wait_prints_a_progress_line_at_least_every_interval() {
    // The default interval (30 s) is longer than the wait: one line, when the count is first seen.
    let lines = wait_lines(&[]);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].starts_with(
            "[5/10] auto-host-endpoints/wait-for-auto-host-endpoint[0]: waiting for hostendpoints `node-a-auto-hep` matching `projectcalico.org/created-by == 'calico-kube-controllers'`: 0/1 present; missing node-a-auto-hep ("
        ),
        "{lines:#?}"
    );
    // A short interval (injected): the same count again on every look while the wait lasts.
    let lines = wait_lines(&["--progress-interval", "100ms"]);
    assert!(lines.len() >= 2, "{lines:#?}");
    assert!(
        lines.iter().all(|line| line
            .starts_with("[5/10] auto-host-endpoints/wait-for-auto-host-endpoint[0]: waiting for")),
        "{lines:#?}"
    );
}
