//! Issue 30 for CI and unattended runs, against a real etcd (and the Kubernetes test server where
//! facts come from a cluster): `netctl diff` and `upgrade plan --detailed-exitcode` exit with the
//! codes kubectl diff and Terraform use, and no error with one of those; `upgrade history` lists
//! runs that succeeded, failed and were rolled back; a maintenance window refuses a segment that
//! cannot finish before anything is written and stops a run at a safe point; notification hooks see
//! the gate and the exit code and never the datastore's secrets; and `--resume` of a run killed with
//! SIGKILL takes over that run's own lock.

use std::os::unix::process::ExitStatusExt;

use serde_json::json;

use crate::exec_common::*;
use crate::support::{self, EtcdServer, KubeApiServer, Netctl};

/// A plan of steps that append to `log`, with a gate in the middle.
fn gated_plan(log: &std::path::Path) -> netctl::plan::Plan {
    plan(vec![
        append_step("pre/append-a", log, "a"),
        step(
            "pre/window",
            "Confirm the maintenance window",
            action(
                "pause",
                serde_json::json!({"message": "is the window open?"}),
            ),
        ),
        append_step("upgrade/append-b", log, "b"),
    ])
}

/// An `exec` step that runs `script` with a time limit (its estimate by kind is that limit, up to
/// a minute).
fn shell_step(id: &str, script: &str, timeout: &str) -> netctl::plan::PlannedStep {
    step(
        id,
        script,
        action(
            "exec",
            serde_json::json!({"command": ["sh", "-c", script], "timeout": timeout}),
        ),
    )
}

/// `upgrade apply --plan FILE` with `extra` arguments and environment.
fn apply(
    operator: &Operator,
    file: &std::path::Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let mut args = vec!["upgrade", "apply", "--plan", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    operator.run(&args, env)
}

/// `upgrade plan` of the seeded manifest install (v3.26.4 on etcd) with `extra` arguments.
fn plan_manifest(operator: &Operator, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "upgrade",
        "plan",
        "--install-method",
        "manifest",
        "--set",
        "etcd_endpoints=https://10.0.0.1:2379",
    ];
    args.extend_from_slice(extra);
    operator.run(&args, &[])
}

fn journal_events(operator: &Operator) -> Vec<serde_json::Value> {
    std::fs::read_to_string(operator.state_dir().join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("journal line"))
        .collect()
}

fn policies(yaml_body: &str) -> String {
    format!(
        "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata:\n  name: set-a\n  labels:\n    zone: a\nspec:\n  nets:\n{yaml_body}"
    )
}

#[test]
fn netctl_diff_exits_0_without_differences_1_with_them_and_2_on_errors() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let file = operator
        .netctl
        .write_file("sets/set-a.yaml", policies("  - 10.0.0.0/24\n"));
    let directory = operator.home().join("sets");
    let diff = |args: &[&str]| {
        let mut command = operator.netctl.command();
        command.arg("diff").args(args);
        command.output().expect("run netctl diff")
    };
    let before = etcd.dump_prefix_bytes("");
    let created = diff(&["-f", directory.to_str().unwrap()]);
    assert_eq!(created.status.code(), Some(1), "{}", text(&created.stderr));
    assert_eq!(
        text(&created.stdout),
        "+ would create GlobalNetworkSet(set-a):\n    + apiVersion: projectcalico.org/v3\n    + kind: GlobalNetworkSet\n    + metadata:\n    +   name: set-a\n    +   labels:\n    +     zone: a\n    + spec:\n    +   nets:\n    +   - 10.0.0.0/24\n"
    );
    assert_eq!(
        text(&created.stderr),
        "1 to create, 0 to change, 0 unchanged\n"
    );
    assert_eq!(before, etcd.dump_prefix_bytes(""), "a diff writes nothing");

    operator
        .netctl
        .command()
        .args(["apply", "-f", file.to_str().unwrap()])
        .assert()
        .success();
    let same = diff(&["-f", file.to_str().unwrap()]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    assert_eq!(text(&same.stdout), "", "nothing differs, nothing shown");
    assert_eq!(
        text(&same.stderr),
        "0 to create, 0 to change, 1 unchanged\n"
    );

    // The same lines the dry run prints: only the fields that change.
    operator.netctl.write_file(
        "sets/set-a.yaml",
        policies("  - 10.0.0.0/24\n  - 10.0.1.0/24\n"),
    );
    let changed = diff(&["-R", "-f", directory.to_str().unwrap()]);
    assert_eq!(changed.status.code(), Some(1));
    assert_eq!(
        text(&changed.stdout),
        "~ would update GlobalNetworkSet(set-a) (apply):\n    ~ spec.nets: [\"10.0.0.0/24\"] → [\"10.0.0.0/24\",\"10.0.1.0/24\"]\n"
    );
    let dry_run = operator
        .netctl
        .command()
        .args(["apply", "--dry-run", "-f", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        text(&dry_run.stdout).starts_with(&text(&changed.stdout)),
        "one renderer: the dry run shows the same lines\n{}",
        text(&dry_run.stdout)
    );

    // Errors are above 1: a bad document, a datastore that does not answer, bad usage.
    let bad = operator
        .netctl
        .write_file("bad.yaml", policies("  - not-a-cidr\n"));
    let invalid = diff(&["-f", bad.to_str().unwrap()]);
    assert_eq!(invalid.status.code(), Some(2), "{}", text(&invalid.stderr));
    assert!(text(&invalid.stderr).starts_with("error: "));
    let unreachable = Netctl::new()
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", support::refused_endpoint())
        .args(["--request-timeout", "2s", "diff", "-f"])
        .arg(&file)
        .output();
    assert_eq!(
        unreachable.status.code(),
        Some(2),
        "{}",
        text(&unreachable.stderr)
    );
    let usage = diff(&["--no-such-flag"]);
    assert_eq!(usage.status.code(), Some(64), "{}", text(&usage.stderr));
    assert_eq!(diff(&[]).status.code(), Some(64), "`-f` is required");
}

#[test]
fn detailed_exitcode_is_0_on_a_cluster_at_the_target_and_2_on_one_behind_it() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan =
        |extra: &[&str]| plan_manifest(&operator, &[&["--detailed-exitcode"], extra].concat());
    // v3.26.4 installed: an upgrade is pending.
    let behind = plan(&["--to", "v3.29.2"]);
    assert_eq!(behind.status.code(), Some(2), "{}", text(&behind.stderr));
    assert!(text(&behind.stdout).starts_with("plan: upgrade v3.26.4 → v3.29.2"));
    let survey = plan(&[]);
    assert_eq!(survey.status.code(), Some(2), "a newer release exists");
    // Bad usage is not "pending", and an error is 1.
    assert_eq!(
        plan(&["--to", "v3.29.2", "--bogus"]).status.code(),
        Some(64)
    );
    let refused = plan(&["--to", "v3.29.2", "--from", "v3.20.0"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    // Without the flag, a pending plan is a success as always.
    let plain = plan_manifest(&operator, &["--to", "v3.29.2"]);
    assert_eq!(plain.status.code(), Some(0));

    // The same cluster once it runs the target: nothing to do.
    etcd.put(
        CLUSTER_INFORMATION,
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.29.2","datastoreReady":true}}"#,
    );
    let current = plan(&["--to", "v3.29.2"]);
    assert_eq!(current.status.code(), Some(0), "{}", text(&current.stderr));
    assert_eq!(
        text(&current.stderr),
        "nothing to do: the cluster runs v3.29.2, the target\n"
    );
    etcd.put(
        CLUSTER_INFORMATION,
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.32.1","datastoreReady":true}}"#,
    );
    let newest = plan(&[]);
    assert_eq!(
        newest.status.code(),
        Some(0),
        "no newer release: {}",
        text(&newest.stdout)
    );
}

#[test]
fn detailed_exitcode_on_an_operator_install_read_from_the_kubernetes_api() {
    let kube = KubeApiServer::start();
    let install = |version: &str| {
        kube.put(json!({
            "apiVersion": "crd.projectcalico.org/v1", "kind": "ClusterInformation",
            "metadata": {"name": "default"},
            "spec": {"calicoVersion": version, "datastoreReady": true}
        }));
    };
    kube.put(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "tigera-operator", "namespace": "tigera-operator"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"k8s-app": "tigera-operator"}},
                 "template": {"metadata": {"labels": {"k8s-app": "tigera-operator"}},
                              "spec": {"containers": [{"name": "tigera-operator", "image": "quay.io/tigera/operator:v1.34.0"}]}}}
    }));
    let plan = || {
        Netctl::new()
            .env("DATASTORE_TYPE", "kubernetes")
            .env("KUBECONFIG", kube.kubeconfig_path())
            .args(["upgrade", "plan", "--to", "v3.29", "--detailed-exitcode"])
            .output()
    };
    install("v3.28.5");
    let behind = plan();
    assert_eq!(behind.status.code(), Some(2), "{}", text(&behind.stderr));
    assert!(
        text(&behind.stdout).contains("operator install, kubernetes datastore"),
        "{}",
        text(&behind.stdout)
    );
    install("v3.29.7");
    let current = plan();
    assert_eq!(current.status.code(), Some(0), "{}", text(&current.stderr));
}

#[test]
fn history_lists_a_succeeded_a_failed_and_a_rolled_back_run() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let run = |plan: &netctl::plan::Plan, extra: &[&str]| {
        let file = operator.write_plan(plan);
        apply(&operator, &file, &[&["--yes"], extra].concat(), &[])
    };
    let succeeded = run(&gated_plan(&log), &[]);
    assert!(succeeded.status.success(), "{}", text(&succeeded.stderr));
    let failing = plan(vec![
        append_step("pre/append-c", &log, "c"),
        shell_step("pre/fail", "echo broken >&2; exit 3", "10s"),
        append_step("upgrade/append-d", &log, "d"),
    ]);
    let failed = run(&failing, &[]);
    assert_eq!(failed.status.code(), Some(1));
    let third = plan(vec![append_step("pre/append-e", &log, "e")]);
    let rolled = run(&third, &["--discard-checkpoint"]);
    assert!(rolled.status.success(), "{}", text(&rolled.stderr));

    let ids: Vec<String> = journal_events(&operator)
        .iter()
        .filter(|entry| entry["event"] == "run-started")
        .map(|entry| entry["run_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3, "three runs");
    // The rollback run, as `upgrade rollback` journals it (docs/executor.md, "The journal"): a run
    // of its own naming the run it goes back from, its undo steps, and its end.
    let rollback_id = "7d1e0c52-0000-4000-8000-000000000000";
    let entry = |event: &str, extra: serde_json::Value| {
        let mut entry = json!({
            "time": "2030-01-01T00:00:00Z", "run_id": rollback_id, "plan_digest": "sha256:00",
            "user": "ops", "host": "bastion", "pid": 1, "event": event,
        });
        for (key, value) in extra.as_object().unwrap() {
            entry[key] = value.clone();
        }
        entry.to_string()
    };
    let lines = [
        entry(
            "run-started",
            json!({"procedure": "rollback", "from": "v3.29.2", "to": "v3.26.4", "steps": 1, "rolls_back": ids[2]}),
        ),
        entry(
            "started",
            json!({"step": "undo/pre/append-e", "action": "exec", "attempt": 1}),
        ),
        entry(
            "succeeded",
            json!({"step": "undo/pre/append-e", "action": "exec", "attempt": 1, "duration_ms": 5}),
        ),
        entry("run-completed", json!({"exit_code": 0})),
    ];
    let journal = operator.state_dir().join("journal.jsonl");
    let mut text_now = std::fs::read_to_string(&journal).unwrap();
    for line in lines {
        text_now.push_str(&line);
        text_now.push('\n');
    }
    std::fs::write(&journal, text_now).unwrap();

    let listed = operator.run(&["upgrade", "history", "-o", "json"], &[]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let runs: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let results: Vec<(&str, &str)> = runs
        .iter()
        .map(|run| {
            (
                run["run_id"].as_str().unwrap(),
                run["result"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            (ids[2].as_str(), "rolled-back"),
            (ids[1].as_str(), "failed"),
            (ids[0].as_str(), "succeeded"),
        ],
        "newest first"
    );
    assert_eq!(runs[1]["step"], "pre/fail");
    assert_eq!(
        runs[1]["counts"],
        json!({"run": 1, "skipped": 0, "failed": 1})
    );
    assert_eq!(
        runs[2]["counts"],
        json!({"run": 3, "skipped": 0, "failed": 0})
    );
    assert_eq!(runs[0]["rollback"]["run_id"], rollback_id);
    for run in &runs {
        assert_eq!(run["user"], os_user());
        assert_eq!(run["procedure"], "upgrade");
        assert_eq!(
            (run["from"].as_str(), run["to"].as_str()),
            (Some("v3.26.4"), Some("v3.29.2"))
        );
        assert_eq!(run["state_dir"], operator.state_dir().display().to_string());
    }

    let table = operator.run(&["upgrade", "history"], &[]);
    let shown = scrub(&text(&table.stdout), operator.home());
    let short = |id: &str| id[..8].to_string();
    let rows: Vec<&str> = shown.lines().collect();
    assert!(rows[0].starts_with("RUN "), "{shown}");
    assert!(
        rows[1].starts_with(&short(&ids[2])) && rows[1].contains("rolled back (by run 7d1e0c52)"),
        "{shown}"
    );
    assert!(
        rows[2].contains("failed at `pre/fail`") && rows[2].contains("1/0/1 of 3"),
        "{shown}"
    );
    assert!(
        rows[3].contains("succeeded") && rows[3].contains("v3.26.4 → v3.29.2"),
        "{shown}"
    );
    assert_eq!(rows[4], "state directory: [HOME]/state");

    // An earlier run, step by step: the plan's steps the run never reached are pending.
    let old = operator.run(&["upgrade", "status", &short(&ids[1])], &[]);
    assert!(old.status.success(), "{}", text(&old.stderr));
    let shown = scrub(&text(&old.stdout), operator.home());
    assert!(
        shown.contains("failed at `pre/fail` (from the journal)"),
        "{shown}"
    );
    assert!(shown.contains("  succeeded  pre/append-c"), "{shown}");
    assert!(shown.contains("  failed     pre/fail"), "{shown}");
    assert!(shown.contains("  pending    upgrade/append-d"), "{shown}");
    let unknown = operator.run(&["upgrade", "status", "ffffffff"], &[]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(text(&unknown.stderr).contains("hint: `netctl upgrade history` lists the runs"));
}

#[test]
fn a_deadline_that_cannot_be_met_is_refused_before_the_first_write() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan = plan(vec![
        shell_step("upgrade/roll", "true", "10m"),
        append_step("upgrade/after", &operator.home().join("log.txt"), "x"),
    ]);
    let file = operator.write_plan(&plan);
    let before = etcd.dump_prefix_bytes("");
    let refused = apply(&operator, &file, &["--window", "30s"], &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    let message = text(&refused.stderr);
    // Each `exec` is estimated at its time limit, at most a minute, with no earlier run to go by.
    assert!(
        message.contains(
            "the segment from `upgrade/roll` to the end of the plan needs about 2m00s by the estimates"
        ),
        "{message}"
    );
    assert!(message.contains("nothing was started"), "{message}");
    assert!(
        message.contains("hint: run it in a longer window"),
        "{message}"
    );
    assert_eq!(
        before,
        etcd.dump_prefix_bytes(""),
        "no lock, no mirror, nothing"
    );
    assert!(!operator.state_dir().exists(), "no state directory either");
    let past = apply(
        &operator,
        &file,
        &["--deadline", "2020-01-01T00:00:00Z"],
        &[],
    );
    assert!(
        text(&past.stderr).contains("the deadline has passed"),
        "{}",
        text(&past.stderr)
    );
    let unreadable = apply(&operator, &file, &["--deadline", "tomorrow"], &[]);
    assert_eq!(unreadable.status.code(), Some(64));
    // `upgrade plan` shows the estimate and what the window says.
    let shown = plan_manifest(&operator, &["--to", "v3.29.2", "--window", "30s"]);
    assert!(
        text(&shown.stdout)
            .contains("time estimates (from the step kinds; no earlier run of this cluster in"),
        "{}",
        text(&shown.stdout)
    );
    assert!(text(&shown.stdout).contains("would not finish in it"));
}

#[test]
fn a_run_stops_at_a_safe_point_when_its_window_ends_and_resumes_in_the_next() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let slow = operator.home().join("slow");
    // Each step is quick unless `slow` exists; then the first two take 3 s each.
    let work = |id: &str, line: &str, sleep: bool| {
        let pause = match sleep {
            true => format!("if [ -e '{}' ]; then sleep 3; fi; ", slow.display()),
            false => String::new(),
        };
        shell_step(
            id,
            &format!("{pause}echo {line} >> '{}'", log.display()),
            "60s",
        )
    };
    let plan = plan(vec![
        work("upgrade/first", "1", true),
        work("upgrade/second", "2", true),
        work("upgrade/third", "3", false),
    ]);
    let file = operator.write_plan(&plan);
    // An earlier run of this cluster: its times (milliseconds) become the estimates.
    let earlier = apply(&operator, &file, &[], &[]);
    assert!(earlier.status.success(), "{}", text(&earlier.stderr));
    let state_dir = operator.state_dir();
    let shown = plan_manifest(
        &operator,
        &[
            "--to",
            "v3.29.2",
            "--state-dir",
            state_dir.to_str().unwrap(),
        ],
    );
    assert!(
        text(&shown.stdout).contains("from the step kinds and 1 earlier run(s) of this cluster"),
        "{}",
        text(&shown.stdout)
    );
    std::fs::write(&log, "").unwrap();
    std::fs::write(&slow, "").unwrap();
    // The segment fits a 5 s window by those estimates; the first step ends within it, the second
    // starts (a segment under way is not cut for its estimate) and ends past the deadline: the
    // run stops before the third.
    let stopped = apply(&operator, &file, &["--window", "5s"], &[]);
    assert_eq!(stopped.status.code(), Some(4), "{}", text(&stopped.stderr));
    let message = text(&stopped.stderr);
    assert!(
        message.contains("stopped: the maintenance window ends")
            && message
                .contains("the deadline has passed; the run stopped before step `upgrade/third`"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n2\n");
    assert_eq!(etcd.get(LOCK_KEY), None, "the lock is released");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"],
        json!({"state": "stopped-at-deadline", "step": "upgrade/third"})
    );
    let stop = journal_events(&operator)
        .into_iter()
        .find(|entry| entry["event"] == "stopped-at-deadline")
        .expect("journaled");
    assert_eq!(stop["exit_code"], 4);
    let shown = operator.run(&["upgrade", "status"], &[]);
    assert!(
        text(&shown.stdout)
            .contains("stopped before `upgrade/third`: the maintenance window ended"),
        "{}",
        text(&shown.stdout)
    );

    let resumed = operator.run(&["upgrade", "apply", "--resume", "--window", "10m"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n2\n3\n");
    let listed = operator.run(&["upgrade", "history", "-o", "json"], &[]);
    let runs: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["result"], "succeeded");
    assert_eq!(
        runs[0]["processes"], 2,
        "stopped by the window, then resumed"
    );
}

#[test]
fn a_notification_hook_sees_the_gate_and_the_exit_code_and_no_secret() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let file = operator.write_plan(&gated_plan(&log));
    let hooks = operator.home().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    let record = |name: &str| format!("env > '{}'", hooks.join(name).display());
    let secrets = [
        ("ETCD_PASSWORD", "s3cret-etcd"),
        ("NET_K8S_API_TOKEN", "s3cret-token"),
        ("WEBHOOK_TOKEN", "s3cret-webhook"),
        ("ETCD_ENDPOINTS", "http://192.0.2.1:2379"),
        ("CHANGE_TICKET", "CHG-42"),
    ];
    let stopped = apply(
        &operator,
        &file,
        &[
            "--on-gate",
            &record("gate.env"),
            "--on-finish",
            &record("finish.env"),
            "--on-failure",
            &record("failure.env"),
        ],
        &secrets,
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let read = |name: &str| -> std::collections::BTreeMap<String, String> {
        std::fs::read_to_string(hooks.join(name))
            .unwrap_or_else(|_| panic!("hook {name} ran"))
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    };
    let gate = read("gate.env");
    let finish = read("finish.env");
    assert!(!hooks.join("failure.env").exists(), "a gate is no failure");
    for (name, value) in [
        ("NETCTL_EVENT", "gate"),
        ("NETCTL_STEP", "pre/window"),
        ("NETCTL_EXIT_CODE", "3"),
        ("NETCTL_FROM", "v3.26.4"),
        ("NETCTL_TO", "v3.29.2"),
        ("NETCTL_PROCEDURE", "upgrade"),
        ("NETCTL_MESSAGE", "is the window open?"),
    ] {
        assert_eq!(
            gate.get(name).map(String::as_str),
            Some(value),
            "{name}: {gate:?}"
        );
    }
    assert_eq!(
        gate["NETCTL_STATE_DIR"],
        operator.state_dir().display().to_string()
    );
    for (name, value) in [
        ("NETCTL_EVENT", "finish"),
        ("NETCTL_EXIT_CODE", "3"),
        ("NETCTL_RESULT", "waiting-at-gate"),
        ("NETCTL_STEP", "pre/window"),
    ] {
        assert_eq!(
            finish.get(name).map(String::as_str),
            Some(value),
            "{name}: {finish:?}"
        );
    }
    assert_eq!(gate["NETCTL_RUN_ID"], finish["NETCTL_RUN_ID"]);
    for environment in [&gate, &finish] {
        assert_eq!(
            environment.get("CHANGE_TICKET").map(String::as_str),
            Some("CHG-42")
        );
        for (name, value) in &secrets[..4] {
            assert!(!environment.contains_key(*name), "{name} reached the hook");
            assert!(
                !environment.values().any(|seen| seen.contains(value)),
                "{value} reached the hook"
            );
        }
    }

    // A failing hook is journaled and changes nothing; the run's own failure reaches --on-failure.
    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--approve",
            "pre/window",
            "--on-finish",
            "echo from-the-hook; exit 9",
        ],
        &[],
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert!(text(&resumed.stderr).contains(
        "warning: the `--on-finish` hook failed (exited with 9); the run is not affected"
    ));
    assert!(
        text(&resumed.stderr).contains("from-the-hook"),
        "the hook's output goes to stderr"
    );
    assert_eq!(text(&resumed.stdout), "", "stdout stays data");
    let failed_hook = journal_events(&operator)
        .into_iter()
        .find(|entry| entry["event"] == "hook-failed")
        .expect("journaled");
    assert_eq!(failed_hook["error"], "exited with 9");
    assert!(!failed_hook.to_string().contains("from-the-hook"));

    let failing = plan(vec![shell_step("pre/fail", "exit 5", "10s")]);
    let file = operator.write_plan(&failing);
    let failed = apply(
        &operator,
        &file,
        &["--on-failure", &record("failure.env")],
        &[],
    );
    assert_eq!(failed.status.code(), Some(1));
    let failure = read("failure.env");
    assert_eq!(failure["NETCTL_EVENT"], "failure");
    assert_eq!(failure["NETCTL_EXIT_CODE"], "1");
    assert_eq!(failure["NETCTL_STEP"], "pre/fail");
    assert!(failure["NETCTL_MESSAGE"].starts_with("step `pre/fail` failed"));
}

#[test]
fn a_resume_takes_over_the_lock_its_own_killed_run_left() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let file = operator.write_plan(&plan(vec![
        append_step("pre/append-a", &log, "a"),
        append_step("pre/append-b", &log, "b"),
    ]));
    let crashed = apply(
        &operator,
        &file,
        &["--lock-ttl", "10m"],
        &[("NETCTL_TEST_CRASH_AFTER", "pre/append-b:before")],
    );
    assert_eq!(crashed.status.signal(), Some(9));
    let held: serde_json::Value = serde_json::from_str(&etcd.get(LOCK_KEY).expect("left")).unwrap();
    // Another run is still refused: the lock is not its own.
    let other = operator.write_plan(&plan(vec![append_step("pre/other", &log, "o")]));
    let refused = apply(&operator, &other, &["--discard-checkpoint"], &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("its process is gone from this host"));

    let resumed = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert!(
        text(&resumed.stderr).contains("took over the lock of this run from"),
        "{}",
        text(&resumed.stderr)
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");
    let taken = journal_events(&operator)
        .into_iter()
        .find(|entry| entry["event"] == "lock-taken-over")
        .expect("journaled");
    assert!(
        taken["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("(lock id `{}`)", held["id"].as_str().unwrap())),
        "{taken}"
    );
    assert_eq!(etcd.get(LOCK_KEY), None, "released at the end");
}
