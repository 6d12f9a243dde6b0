//! `upgrade apply` against a real etcd: saved plans (stale or edited ones are refused), human gates
//! in an unattended run, the lock between two concurrent runs, and the plain progress output.

use std::time::{Duration, Instant};

use crate::exec_common::*;
use crate::support::EtcdServer;
use crate::support::snapshot::netctl_snapshot;

fn label_plan() -> netctl::plan::Plan {
    plan(vec![step(
        "pre/label-h1",
        "Label h1",
        action(
            "resource.label",
            serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": "yes"}),
        ),
    )])
}

fn insta_settings(operator: &Operator) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in filters(operator.home()) {
        settings.add_filter(&pattern, replacement);
    }
    settings
}

#[test]
fn a_stale_saved_plan_is_refused_naming_the_fact_that_changed() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan_file = operator.write_plan(&label_plan());
    // After the plan was made, someone adds an all-interfaces host endpoint.
    etcd.put(
        &format!("{HOST_ENDPOINTS}star"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"star"},"spec":{"node":"n1","interfaceName":"*"}}"#,
    );
    let before = etcd.dump_prefix_bytes("");
    let output = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    insta_settings(&operator)
        .bind(|| insta::assert_snapshot!("stale_plan_refused", text(&output.stderr)));
    assert_eq!(before, etcd.dump_prefix_bytes(""), "nothing was written");

    // The version moved on as well: that is named too (it is checked first).
    etcd.put(
        CLUSTER_INFORMATION,
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.27.0"}}"#,
    );
    let output = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert!(
        text(&output.stderr).contains(
            "fact `installed_version` was `v3.26.4` when the plan was made and is `v3.27.0` now"
        ),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn an_edited_plan_is_refused_by_its_digest() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let mut edited = serde_json::to_value(label_plan()).unwrap();
    edited["steps"][0]["with"]["value"] = serde_json::json!("tampered");
    let plan_file = operator
        .netctl
        .write_file("plan.json", serde_json::to_vec_pretty(&edited).unwrap());
    for extra in [&[][..], &["--dry-run"][..]] {
        let mut args = vec!["upgrade", "apply", "--plan", plan_file.to_str().unwrap()];
        args.extend_from_slice(extra);
        let output = operator.run(&args, &[]);
        assert_eq!(output.status.code(), Some(1));
        netctl_snapshot!(&output);
    }
    assert!(
        !etcd
            .get(&format!("{HOST_ENDPOINTS}h1"))
            .unwrap()
            .contains("tampered")
    );
}

#[test]
fn an_unattended_run_stops_at_a_gate_and_resume_continues_past_it() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let mut irreversible = append_step("post/append-c", &log, "c");
    irreversible.irreversible = true;
    let plan = plan(vec![
        append_step("pre/append-a", &log, "a"),
        step(
            "pre/window",
            "Confirm the maintenance window",
            action(
                "pause",
                serde_json::json!({"message": "is the window open?"}),
            ),
        ),
        append_step("pre/append-b", &log, "b"),
        irreversible,
    ]);
    let plan_file = operator.write_plan(&plan);

    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3));
    insta_settings(&operator).bind(|| {
        insta::assert_snapshot!("gate_stops_unattended_run", text(&stopped.stderr));
    });
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\n");
    let status = status_json(&operator);
    assert_eq!(status["checkpoint"]["run"]["state"], "waiting-at-gate");
    assert_eq!(status["checkpoint"]["run"]["step"], "pre/window");
    assert!(status["lock"].is_null(), "a stopped run releases the lock");

    // A new run of any plan is refused while this one is unfinished.
    let refused = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert!(
        text(&refused.stderr).contains("an unfinished run of plan"),
        "{}",
        text(&refused.stderr)
    );

    // Approving the gate alone runs up to the irreversible step, which asks again.
    let next = operator.run(
        &["upgrade", "apply", "--resume", "--approve", "pre/window"],
        &[],
    );
    assert_eq!(next.status.code(), Some(3));
    assert!(
        text(&next.stderr).contains("stopped: step `post/append-c` needs a person's confirmation: `post/append-c` is irreversible"),
        "{}",
        text(&next.stderr)
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");

    let done = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\nc\n");
    let status = operator.run(&["upgrade", "status"], &[]);
    insta_settings(&operator)
        .bind(|| insta::assert_snapshot!("status_after_completion", text(&status.stdout)));

    let again = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert!(text(&again.stderr).contains("there is nothing to resume"));
}

#[test]
fn an_unfinished_run_can_be_discarded_for_a_new_one() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let plan_file = operator.write_plan(&plan(vec![
        step(
            "pre/window",
            "Confirm the window",
            action("pause", serde_json::json!({"message": "go?"})),
        ),
        append_step("pre/append-a", &log, "a"),
    ]));
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3));
    let first_run = status_json(&operator)["checkpoint"]["run_id"].clone();

    let fresh = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--discard-checkpoint",
            "--yes",
        ],
        &[],
    );
    assert!(fresh.status.success(), "{}", text(&fresh.stderr));
    let status = status_json(&operator);
    assert_ne!(status["checkpoint"]["run_id"], first_run);
    assert_eq!(status["checkpoint"]["run"]["state"], "completed");
    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    assert!(
        journal.contains(first_run.as_str().unwrap()),
        "the journal keeps the discarded run"
    );
}

#[test]
fn progress_without_a_terminal_is_one_line_per_step() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let mut flaky = step(
        "pre/flaky",
        "Succeeds on the second attempt",
        action(
            "exec",
            serde_json::json!({"command": ["sh", "-c", format!("[ -e '{0}' ] || {{ touch '{0}'; exit 1; }}", operator.home().join("flag").display())]}),
        ),
    );
    flaky.retry = Some(netctl::plan::RetryPolicy {
        attempts: 2,
        delay: netctl::plan::HumanDuration(Duration::from_millis(100)),
    });
    let plan = plan(vec![
        append_step("pre/append-a", &log, "a"),
        flaky,
        step(
            "pre/create-h2",
            "Create host endpoint h2",
            action(
                "resource.create",
                serde_json::json!({"documents": [host_endpoint("h2")]}),
            ),
        ),
    ]);
    let plan_file = operator.write_plan(&plan);
    let output = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "", "progress is not data");
    insta_settings(&operator)
        .bind(|| insta::assert_snapshot!("plain_progress", text(&output.stderr)));

    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    let events: Vec<String> = journal
        .lines()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            // The operating system's name for the user, not `$USER` (the sandbox sets `ops`).
            assert_eq!(entry["user"], os_user());
            format!(
                "{} {}",
                entry["event"].as_str().unwrap(),
                entry["step"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            "run-started -",
            "backup-taken -",
            "started pre/append-a",
            "succeeded pre/append-a",
            "started pre/flaky",
            "retrying pre/flaky",
            "started pre/flaky",
            "succeeded pre/flaky",
            "started pre/create-h2",
            "succeeded pre/create-h2",
            "run-completed -",
        ]
    );
}

#[test]
fn a_second_concurrent_apply_is_refused_by_the_lock_and_succeeds_after_the_first_ends() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let first = Operator::new(&etcd);
    let go = first.home().join("go");
    let waiting = step(
        "pre/wait",
        "Wait for the test to say go",
        action(
            "exec",
            serde_json::json!({"command": ["sh", "-c", format!("while [ ! -e '{}' ]; do sleep 0.05; done", go.display())], "timeout": "60s"}),
        ),
    );
    let plan_file = first.write_plan(&plan(vec![waiting]));
    let mut running = first.spawn(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &first.state_dir(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while etcd.get(LOCK_KEY).is_none() {
        assert!(
            Instant::now() < deadline,
            "the first run never took the lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Another operator, another machine's state directory, the same cluster.
    let second = Operator::new(&etcd);
    let second_plan = second.write_plan(&label_plan());
    let refused = second.run(
        &["upgrade", "apply", "--plan", second_plan.to_str().unwrap()],
        &[],
    );
    assert_eq!(refused.status.code(), Some(1));
    let message = text(&refused.stderr);
    assert!(
        message.contains(&format!(
            "error: another upgrade run holds the lock: {}@",
            os_user()
        )) && message.contains(&format!("(pid {}", running.id()))
            && message.contains("; its process is running on this host"),
        "{message}"
    );
    assert!(
        message.contains("hint: wait for that run to end"),
        "{message}"
    );
    assert!(
        !etcd
            .get(&format!("{HOST_ENDPOINTS}h1"))
            .unwrap()
            .contains("upgrade")
    );

    // `upgrade status` from the second machine shows the holder, from the mirrored checkpoint.
    // The first run takes its backup between the lock and the step: wait for the step to start.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let status = status_json(&second);
        if status["checkpoint"]["steps"][0]["state"] == "running" || Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status["lock"]["holder"]["pid"], running.id());
    assert_eq!(status["checkpoint"]["steps"][0]["state"], "running");

    std::fs::write(&go, "").unwrap();
    let finished = running.wait().unwrap();
    assert!(finished.success());
    assert_eq!(etcd.get(LOCK_KEY), None, "the lock is released at the end");

    let after = second.run(
        &["upgrade", "apply", "--plan", second_plan.to_str().unwrap()],
        &[],
    );
    assert!(after.status.success(), "{}", text(&after.stderr));
    assert!(
        etcd.get(&format!("{HOST_ENDPOINTS}h1"))
            .unwrap()
            .contains(r#""upgrade":"yes""#)
    );
}

#[test]
fn a_resume_refuses_a_different_plan_and_can_continue_from_another_machine() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let first = Operator::new(&etcd);
    let plan = plan(vec![
        step(
            "pre/window",
            "Confirm the maintenance window",
            action("pause", serde_json::json!({"message": "go?"})),
        ),
        step(
            "pre/create-h2",
            "Create host endpoint h2",
            action(
                "resource.create",
                serde_json::json!({"documents": [host_endpoint("h2")]}),
            ),
        ),
    ]);
    let plan_file = first.write_plan(&plan);
    let stopped = first.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3));

    let other = Operator::new(&etcd);
    let other_plan = other.write_plan(&label_plan());
    let refused = other.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--plan",
            other_plan.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("the checkpoint belongs to plan `sha256:"),
        "{}",
        text(&refused.stderr)
    );
    // The second machine has no local checkpoint: it resumes from the datastore mirror.
    let resumed = other.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert!(etcd.get(&format!("{HOST_ENDPOINTS}h2")).is_some());
}

/// Drift on resume is not a warning: a completed step whose postcondition no longer holds stops
/// the resume before anything runs, naming the step and what no longer holds; `--repair` runs it
/// again (journaled) and the run goes on.
#[test]
fn drift_stops_a_resume_and_repair_runs_the_drifted_step_again() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let mut create = step(
        "pre/create-h2",
        "Create host endpoint h2",
        action(
            "resource.create",
            serde_json::json!({"documents": [host_endpoint("h2")]}),
        ),
    );
    create.verify = Some(action(
        "resource.get",
        serde_json::json!({"kind": "HostEndpoint", "name": "h2"}),
    ));
    let log = operator.home().join("log.txt");
    let plan_file = operator.write_plan(&plan(vec![
        create,
        step(
            "pre/window",
            "Confirm the window",
            action("pause", serde_json::json!({"message": "go?"})),
        ),
        append_step("post/append-a", &log, "a"),
    ]));
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3));
    // Someone removes what the first step made while the run waits at the gate.
    assert!(etcd.delete(&format!("{HOST_ENDPOINTS}h2")));

    let refused = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    netctl_snapshot!(&refused);
    assert!(!log.exists(), "nothing after the drift ran");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"],
        serde_json::json!({"state": "drifted", "steps": ["pre/create-h2"]})
    );

    let repaired = operator.run(&["upgrade", "apply", "--resume", "--repair", "--yes"], &[]);
    netctl_snapshot!(&repaired);
    assert!(etcd.get(&format!("{HOST_ENDPOINTS}h2")).is_some());
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\n");
    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    for event in ["drift", "repairing"] {
        assert!(
            journal.contains(&format!(r#""event":"{event}","step":"pre/create-h2""#)),
            "{journal}"
        );
    }
}

#[test]
fn a_failed_step_is_recorded_and_resume_runs_it_again_after_the_fix() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let fixed = operator.home().join("fixed");
    let log = operator.home().join("log.txt");
    let mut needs_fix = step(
        "pre/needs-fix",
        "Fails until the operator fixes it",
        action(
            "exec",
            serde_json::json!({"command": ["test", "-e", fixed.display().to_string()]}),
        ),
    );
    needs_fix.retry = Some(netctl::plan::RetryPolicy {
        attempts: 2,
        delay: netctl::plan::HumanDuration(Duration::from_millis(50)),
    });
    let plan_file = operator.write_plan(&plan(vec![
        append_step("pre/append-a", &log, "a"),
        needs_fix,
        append_step("post/append-b", &log, "b"),
    ]));
    let failed = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(failed.status.code(), Some(1));
    netctl_snapshot!(&failed);
    let status = status_json(&operator);
    assert_eq!(status["checkpoint"]["run"]["state"], "failed");
    assert_eq!(status["checkpoint"]["steps"][1]["state"], "failed");
    assert_eq!(status["checkpoint"]["steps"][1]["attempts"], 2);

    std::fs::write(&fixed, "").unwrap();
    let resumed = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");
}

#[test]
fn the_lock_is_kept_alive_for_a_run_longer_than_its_lease() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let slow = step(
        "pre/slow",
        "Take longer than the lease",
        action("exec", serde_json::json!({"command": ["sleep", "5"]})),
    );
    let plan_file = operator.write_plan(&plan(vec![slow]));
    let running = operator.spawn(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--lock-ttl",
            "2s",
        ],
        &operator.state_dir(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while etcd.get(LOCK_KEY).is_none() {
        assert!(Instant::now() < deadline, "the run never took the lock");
        std::thread::sleep(Duration::from_millis(50));
    }
    let first_seen = etcd.get(LOCK_KEY).unwrap();
    // Two lease lifetimes later the same lock is still there: it was renewed, not re-taken.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(etcd.get(LOCK_KEY), Some(first_seen));
    let finished = running.wait_with_output().unwrap();
    assert!(finished.status.success(), "{}", text(&finished.stderr));
    assert_eq!(etcd.get(LOCK_KEY), None);
}

/// The datastore copy of the books is chunked: a plan far larger than one etcd value (1.5 MiB) even
/// compressed is mirrored whole, and another machine resumes from it; a transition rewrites one
/// small log segment, never the plan.
#[test]
fn a_plan_larger_than_one_etcd_value_is_mirrored_in_chunks_and_resumes_elsewhere() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);

    // A gate message that does not compress below the limit: a hex dump of 1.6 MB of pseudo-random
    // bytes (half of the 3.2 MB of text is entropy).
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: String = (0..1_600_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            format!("{:02x}", state as u8)
        })
        .collect();
    let huge = plan(vec![
        step(
            "pre/gate",
            "Read this",
            action("pause", serde_json::json!({ "message": noise })),
        ),
        step(
            "pre/label-h1",
            "Label h1",
            action(
                "resource.label",
                serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": "yes"}),
            ),
        ),
    ]);
    let plan_file = operator.write_plan(&huge);
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    let stderr = text(&stopped.stderr);
    // The gate's message is in stderr too: show only the end of it.
    let tail = &stderr[stderr.len().saturating_sub(600)..];
    assert_eq!(stopped.status.code(), Some(3), "{tail}");

    let chunks: Vec<(usize, i64)> = etcd
        .entries("/calico/netctl/upgrade/plans/")
        .into_iter()
        .map(|entry| (entry.value.len(), entry.version))
        .collect();
    assert!(chunks.len() >= 2, "the plan is chunked: {chunks:?}");
    assert!(
        chunks.iter().all(|(bytes, _)| *bytes <= 512 * 1024),
        "{chunks:?}"
    );
    let head: serde_json::Value =
        serde_json::from_slice(&etcd.entries(CHECKPOINT_KEY)[0].value).unwrap();
    assert_eq!(head["plan"]["chunks"], chunks.len(), "{head}");
    assert_eq!(head["format_version"], 2);

    // Another machine, with no state directory of its own, resumes from the mirror.
    let elsewhere = Operator::new(&etcd);
    let resumed = elsewhere.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    let resumed_text = text(&resumed.stderr);
    assert!(
        resumed.status.success(),
        "{}",
        &resumed_text[resumed_text.len().saturating_sub(600)..]
    );
    assert!(
        etcd.get(&format!("{HOST_ENDPOINTS}h1"))
            .unwrap()
            .contains(r#""upgrade":"yes""#)
    );
    let status = status_json(&operator);
    assert_eq!(status["checkpoint"]["run"]["state"], "completed");
    // The plan was stored once: the resume found it in the mirror and did not write it again.
    let after: Vec<(usize, i64)> = etcd
        .entries("/calico/netctl/upgrade/plans/")
        .into_iter()
        .map(|entry| (entry.value.len(), entry.version))
        .collect();
    assert_eq!(after, chunks, "each chunk written once (version 1)");
}
