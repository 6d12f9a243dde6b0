//! Crash and resume against a real etcd: a run killed with SIGKILL before or after any step's action
//! (the test-only hook `NETCTL_TEST_CRASH_AFTER`) resumes to completion, and no step's effect is
//! applied twice — the `exec` steps append to a file exactly once, the created host endpoint is
//! created once (a second create would fail), and completed steps are not run again.

use std::os::unix::process::ExitStatusExt;

use crate::exec_common::*;
use crate::support::snapshot::netctl_snapshot;
use crate::support::{self, EtcdServer};

fn crash_plan(log: &std::path::Path) -> netctl::plan::Plan {
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
    plan(vec![
        append_step("pre/append-a", log, "a"),
        create,
        step(
            "pre/label-h1",
            "Label h1",
            action(
                "resource.label",
                serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": "yes"}),
            ),
        ),
        append_step("post/append-b", log, "b"),
    ])
}

/// The lock a killed run left behind: its id, from `upgrade status`.
fn stale_lock_id(operator: &Operator) -> String {
    let status = status_json(operator);
    status["lock"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a killed run leaves its lock until the lease expires: {status}"))
        .to_string()
}

#[test]
fn a_run_killed_at_any_step_boundary_resumes_without_repeating_an_effect() {
    let etcd = EtcdServer::start();
    let step_ids = [
        "pre/append-a",
        "pre/create-h2",
        "pre/label-h1",
        "post/append-b",
    ];
    for step_id in step_ids {
        for when in ["before", "after"] {
            let kill_point = format!("{step_id}:{when}");
            etcd.delete_prefix("/calico/");
            seed(&etcd);
            let operator = Operator::new(&etcd);
            let log = operator.home().join("log.txt");
            let plan_file = operator.write_plan(&crash_plan(&log));

            let crashed = operator.run(
                &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
                &[("NETCTL_TEST_CRASH_AFTER", &kill_point)],
            );
            assert_eq!(
                crashed.status.signal(),
                Some(9),
                "{kill_point}: the run was not killed: {}",
                text(&crashed.stderr)
            );

            // The killed run still holds the lock (its lease has not run out): another run is
            // refused and names the holder (a resume of this run takes it over, below).
            let refused = operator.run(
                &[
                    "upgrade",
                    "apply",
                    "--plan",
                    plan_file.to_str().unwrap(),
                    "--discard-checkpoint",
                ],
                &[],
            );
            assert_eq!(refused.status.code(), Some(1), "{kill_point}");
            let refusal = text(&refused.stderr);
            assert!(
                refusal.contains(&format!(
                    "another upgrade run holds the lock: {}@",
                    os_user()
                )),
                "{kill_point}: {refusal}"
            );
            // The holder ran on this host and its pid is gone: the refusal says so, and offers
            // the unlock command instead of telling the operator to wait for the run.
            let lock_id = stale_lock_id(&operator);
            assert!(
                refusal.contains("; its process is gone from this host")
                    && refusal.contains(&format!("netctl upgrade unlock {lock_id}"))
                    && !refusal.contains("wait for that run to end"),
                "{kill_point}: {refusal}"
            );
            let shown = text(&operator.run(&["upgrade", "status"], &[]).stdout);
            assert!(
                shown.contains("that process is gone from this host"),
                "{kill_point}: {shown}"
            );
            // Either way out: the operator removes the lock by id, or the resume of this same
            // run takes it over (journaled).
            if when == "after" {
                let unlocked = operator.run(&["upgrade", "unlock", &lock_id], &[]);
                assert!(unlocked.status.success(), "{}", text(&unlocked.stderr));
            }

            let status = status_json(&operator);
            let interrupted = status["checkpoint"]["steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|record| record["id"] == step_id)
                .unwrap()
                .clone();
            assert_eq!(interrupted["state"], "running", "{kill_point}: {status}");

            let resumed = operator.run(&["upgrade", "apply", "--resume"], &[]);
            assert!(
                resumed.status.success(),
                "{kill_point}: resume failed: {}",
                text(&resumed.stderr)
            );
            assert_eq!(
                text(&resumed.stderr).contains(&format!("(lock id `{lock_id}`)")),
                when == "before",
                "{kill_point}: {}",
                text(&resumed.stderr)
            );

            assert_eq!(
                std::fs::read_to_string(&log).unwrap_or_default(),
                "a\nb\n",
                "{kill_point}: each append ran exactly once"
            );
            let h2 = etcd
                .get(&format!("{HOST_ENDPOINTS}h2"))
                .unwrap_or_else(|| panic!("{kill_point}: h2 was not created"));
            assert!(h2.contains("made-by"), "{h2}");
            let h1 = etcd.get(&format!("{HOST_ENDPOINTS}h1")).unwrap();
            assert!(h1.contains(r#""upgrade":"yes""#), "{kill_point}: {h1}");

            let status = status_json(&operator);
            assert_eq!(
                status["checkpoint"]["run"]["state"], "completed",
                "{status}"
            );
            assert!(status["lock"].is_null(), "the lock is released: {status}");
            let mirrored = mirrored_checkpoint(&etcd).expect("a mirrored checkpoint");
            assert_eq!(mirrored["run"]["state"], "completed");

            // The journal tells the story: an interrupted non-idempotent step whose effect was
            // already there is recorded as recovered, not run again.
            let journal =
                std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
            let recovered = journal
                .lines()
                .filter(|line| line.contains(r#""event":"recovered""#))
                .count();
            let expect_recovered = when == "after" && step_id != "pre/label-h1";
            assert_eq!(
                recovered,
                usize::from(expect_recovered),
                "{kill_point}: {journal}"
            );
        }
    }
}

#[test]
fn a_crashed_runs_lock_expires_with_its_lease() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let plan_file = operator.write_plan(&crash_plan(&log));
    let crashed = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--lock-ttl",
            "2s",
        ],
        &[("NETCTL_TEST_CRASH_AFTER", "pre/create-h2:after")],
    );
    assert_eq!(crashed.status.signal(), Some(9));
    assert!(
        etcd.get(LOCK_KEY).is_some(),
        "the lock outlives the process"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while etcd.get(LOCK_KEY).is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the lock never expired"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let resumed = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");
}

/// Regression: the hook sent its SIGKILL with the `kill` program, which a minimal Debian lacks
/// (procps); the run then ended with SIGABRT instead, and every crash test failed.
#[test]
fn the_crash_hook_needs_no_kill_program() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let plan_file = operator.write_plan(&crash_plan(&log));
    let no_programs = operator.home().join("no-programs");
    std::fs::create_dir(&no_programs).unwrap();
    let crashed = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[
            ("NETCTL_TEST_CRASH_AFTER", "pre/append-a:before"),
            ("PATH", no_programs.to_str().unwrap()),
        ],
    );
    assert_eq!(
        crashed.status.signal(),
        Some(9),
        "{}",
        text(&crashed.stderr)
    );
}

#[test]
fn an_interrupted_step_that_cannot_tell_whether_it_ran_is_not_run_again_blindly() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let mut blind = append_step("pre/append-a", &log, "a");
    blind.verify = None;
    let plan_file = operator.write_plan(&plan(vec![blind]));
    let crashed = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--lock-ttl",
            "2s",
        ],
        &[("NETCTL_TEST_CRASH_AFTER", "pre/append-a:after")],
    );
    assert_eq!(crashed.status.signal(), Some(9));
    let lock_id = stale_lock_id(&operator);
    assert!(
        operator
            .run(&["upgrade", "unlock", &lock_id], &[])
            .status
            .success()
    );

    let refused = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert_eq!(refused.status.code(), Some(1));
    netctl_snapshot!(&refused);

    // The operator looked: the line is there, so the step is marked done by hand.
    let skipped = operator.run(
        &["upgrade", "apply", "--resume", "--skip", "pre/append-a"],
        &[],
    );
    assert!(skipped.status.success(), "{}", text(&skipped.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\n");
}

#[test]
fn a_run_killed_from_outside_in_the_middle_of_a_step_resumes() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let started = operator.home().join("started");
    // The step writes a marker, then waits; it is killed while waiting, before it appends.
    // The first run waits (and is killed meanwhile); a re-run finds the marker and goes straight on.
    let script = format!(
        "if [ -e '{0}' ]; then echo slow >> '{1}'; else touch '{0}'; sleep 30; echo slow >> '{1}'; fi",
        started.display(),
        log.display()
    );
    let mut slow = step(
        "pre/slow",
        "A slow program",
        action("exec", serde_json::json!({"command": ["sh", "-c", script]})),
    );
    slow.verify = Some(action(
        "exec",
        serde_json::json!({"command": ["grep", "-qx", "slow", log.display().to_string()]}),
    ));
    let plan_file = operator.write_plan(&plan(vec![slow, append_step("post/append-b", &log, "b")]));
    let mut child = operator.spawn(
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
    // netctl records the program's pid just after starting it, so the program can be faster: wait
    // for the record too, or the kill may come before netctl knows of its program.
    let record = operator.state_dir().join("running-program.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() || !record.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the step never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9));
    let lock_id = stale_lock_id(&operator);
    assert!(
        operator
            .run(&["upgrade", "unlock", &lock_id], &[])
            .status
            .success()
    );

    // netctl died, its program did not: running the step again beside it would append twice.
    let refused = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert_eq!(refused.status.code(), Some(1));
    let message = text(&refused.stderr);
    let orphan: serde_json::Value = serde_json::from_slice(
        &std::fs::read(operator.state_dir().join("running-program.json")).unwrap(),
    )
    .unwrap();
    let pid = orphan["pid"].as_u64().unwrap();
    assert!(
        message.contains(&format!(
            "`sh` (pid {pid}) of interrupted step `pre/slow` is still running"
        )),
        "{message}"
    );
    assert!(message.contains(&format!("kill {pid}")), "{message}");
    support::send_signal(u32::try_from(pid).unwrap(), support::Signal::TERM).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the orphan did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // Its postcondition does not hold (it never appended), so the step runs again — quickly this
    // time, because the marker tells the script to skip the wait.
    let resumed = operator
        .netctl
        .command()
        .args(["upgrade", "apply", "--resume", "--state-dir"])
        .arg(operator.state_dir())
        .timeout(std::time::Duration::from_secs(90))
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "slow\nb\n");
}

#[test]
fn ctrl_c_stops_the_run_releases_the_lock_and_resume_continues() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let started = operator.home().join("started");
    let script = format!(
        "if [ -e '{0}' ]; then echo slow >> '{1}'; else touch '{0}'; sleep 30; echo slow >> '{1}'; fi",
        started.display(),
        log.display()
    );
    let mut slow = step(
        "pre/slow",
        "A slow program",
        action("exec", serde_json::json!({"command": ["sh", "-c", script]})),
    );
    slow.verify = Some(action(
        "exec",
        serde_json::json!({"command": ["grep", "-qx", "slow", log.display().to_string()]}),
    ));
    let plan_file = operator.write_plan(&plan(vec![slow, append_step("post/append-b", &log, "b")]));
    let child = operator.spawn(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &operator.state_dir(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the step never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    support::send_signal(child.id(), support::Signal::INT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    netctl_snapshot!(&output);
    assert_eq!(etcd.get(LOCK_KEY), None, "the lock is released at once");
    let status = status_json(&operator);
    assert_eq!(status["checkpoint"]["steps"][0]["state"], "running");
    assert!(
        !operator.state_dir().join("running-program.json").exists()
            || !std::path::Path::new(&format!("/proc/{}", child_pid_of(&operator))).exists(),
        "the step's program was stopped with netctl"
    );

    let resumed = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "slow\nb\n");
}

fn child_pid_of(operator: &Operator) -> u64 {
    std::fs::read(operator.state_dir().join("running-program.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|record| record["pid"].as_u64())
        .unwrap_or(0)
}

/// SIGTERM (what systemd, CI runners and `kill` send) stops a run like Ctrl-C: the step in progress
/// stays `running`, the run is recorded as interrupted and journaled, the lock is released at once,
/// and a resume finishes the run without repeating the interrupted step's effect.
#[test]
fn sigterm_stops_a_run_where_it_is_and_releases_the_lock() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let started = operator.home().join("started");
    let go = operator.home().join("go");
    // Appends `a` only once `go` exists; its `verify` tells whether it did.
    let mut waiting = append_step("pre/append-a", &log, "a");
    waiting.action = action(
        "exec",
        serde_json::json!({"command": ["sh", "-c", format!(
            "touch '{}'; while [ ! -e '{}' ]; do sleep 0.1; done; echo a >> '{}'",
            started.display(), go.display(), log.display()
        )], "timeout": "60s"}),
    );
    let plan_file = operator.write_plan(&plan(vec![
        waiting,
        append_step("post/append-b", &log, "b"),
    ]));
    let running = operator.spawn(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &operator.state_dir(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the step never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(etcd.get(LOCK_KEY).is_some(), "the run holds the lock");
    support::send_signal(running.id(), support::Signal::TERM).unwrap();
    let stopped = running.wait_with_output().unwrap();
    let stderr = text(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: interrupted by SIGTERM; the run stopped where it was"),
        "{stderr}"
    );
    assert_eq!(etcd.get(LOCK_KEY), None, "the lock is released at once");

    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"],
        serde_json::json!({"state": "interrupted", "signal": "SIGTERM"}),
        "{status}"
    );
    assert_eq!(status["checkpoint"]["steps"][0]["state"], "running");
    let shown = operator.run(&["upgrade", "status"], &[]);
    assert!(
        text(&shown.stdout).contains("interrupted by SIGTERM (resume with"),
        "{}",
        text(&shown.stdout)
    );
    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    assert!(
        journal.contains(r#""event":"cancelled""#) && journal.contains("stopped by SIGTERM"),
        "{journal}"
    );

    std::fs::write(&go, "").unwrap();
    let resumed = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");
}

/// A damaged local checkpoint (cut short, or saved with a byte order mark by an editor) is refused
/// with what is wrong with it, and the refusal points to the readable copy in the datastore;
/// `upgrade status` shows that copy; once the damaged file is moved aside, the resume uses it.
#[test]
fn a_damaged_local_checkpoint_points_to_the_datastore_copy() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let plan_file = operator.write_plan(&plan(vec![
        append_step("pre/append-a", &log, "a"),
        step(
            "pre/gate",
            "Gate",
            action("pause", serde_json::json!({"message": "go?"})),
        ),
        append_step("post/append-b", &log, "b"),
    ]));
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let path = operator.state_dir().join("checkpoint.json");
    let good = std::fs::read(&path).unwrap();

    for (damage, says) in [
        (good[..good.len() / 3].to_vec(), "is truncated"),
        (
            [b"\xef\xbb\xbf".as_slice(), &good].concat(),
            "begins with a UTF-8 byte order mark",
        ),
    ] {
        std::fs::write(&path, damage).unwrap();
        let refused = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
        let refusal = text(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{refusal}");
        assert!(
            refusal.contains("the local checkpoint in")
                && refusal.contains("is damaged")
                && refusal.contains(says)
                && refusal.contains("hint: the datastore holds a readable copy of run")
                && refusal.contains("(1 of 3 steps done"),
            "{refusal}"
        );
        let shown = operator.run(&["upgrade", "status"], &[]);
        assert!(shown.status.success(), "{}", text(&shown.stderr));
        assert!(
            text(&shown.stderr).contains("showing the checkpoint mirrored in the datastore")
                && text(&shown.stdout).contains("waiting at gate `pre/gate`"),
            "{}{}",
            text(&shown.stderr),
            text(&shown.stdout)
        );
    }
    std::fs::rename(&path, operator.state_dir().join("checkpoint.json.damaged")).unwrap();
    let resumed = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");
}

/// The real v3.13 → v3.27 plan for 10,000 all-interfaces host endpoints (one batched label step of
/// 10,000 items) is mirrored into etcd in chunks; a run killed in the middle of the label step on one
/// machine is read and resumed from the mirror on a second machine, killed again, and read by a
/// third: every batch recorded before a kill is there, and no host endpoint is labelled twice. The
/// state directory keeps the plan once and a log of transitions, one per batch, not one per item.
#[test]
fn a_ten_thousand_host_endpoint_run_resumes_from_the_datastore_mirror() {
    const ENDPOINTS: usize = 10_000;
    const LABEL_STEP: &str = "hostendpoint-preparation/label-all-interfaces-heps";
    let etcd = EtcdServer::start();
    etcd.put(
        CLUSTER_INFORMATION,
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default","uid":"c1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"calicoVersion":"v3.13.2","datastoreReady":true}}"#,
    );
    let first = Operator::new(&etcd);
    let names: Vec<String> = (0..ENDPOINTS).map(|index| format!("h{index}")).collect();
    let documents: String = names
        .iter()
        .map(|name| {
            format!("---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: {name}\nspec:\n  node: n1\n  interfaceName: \"*\"\n")
        })
        .collect();
    let documents_file = first.netctl.write_file("heps.yaml", documents);
    let applied = first.run(&["apply", "-f", documents_file.to_str().unwrap()], &[]);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let plan_file = first.home().join("plan.json");
    let planned = first.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "--from",
            "v3.13.2",
            "--install-method",
            "manifest",
            "--offline",
            "--set",
            "datastore_type=etcdv3",
            "--set",
            "etcd_endpoints=http://127.0.0.1:2379",
            "--set",
            &format!("all_interfaces_host_endpoints={}", names.join(",")),
            "--out",
            plan_file.to_str().unwrap(),
            "-o",
            "json",
        ],
        &[],
    );
    assert!(planned.status.success(), "{}", text(&planned.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&planned.stdout).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    let label_index = steps
        .iter()
        .position(|step| step["id"] == LABEL_STEP)
        .expect("one label step");
    assert_eq!(
        steps[label_index]["with"]["names"]
            .as_array()
            .unwrap()
            .len(),
        ENDPOINTS
    );
    let steps = steps.len();
    assert!(
        steps < 100,
        "{steps} steps: the items are one step each way"
    );

    let killed = |operator: &Operator, args: &[&str], kill_point: &str| {
        let crashed = operator.run(args, &[("NETCTL_TEST_CRASH_AFTER", kill_point)]);
        assert_eq!(
            crashed.status.signal(),
            Some(9),
            "not killed at {kill_point}: {}",
            text(&crashed.stderr)
        );
        let lock_id = stale_lock_id(operator);
        let unlocked = operator.run(&["upgrade", "unlock", &lock_id], &[]);
        assert!(unlocked.status.success(), "{}", text(&unlocked.stderr));
    };
    // No cluster here: the run stops long before the Kubernetes steps, so their pre-flight is skipped.
    // Killed after the third batch's transaction, before the checkpoint records it.
    killed(
        &first,
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--skip-preflight",
            "cluster",
        ],
        &format!("{LABEL_STEP}@3:after"),
    );

    // Machine one's books: the plan once, a small snapshot, a short log.
    let state = first.state_dir();
    let plan_bytes = std::fs::read_dir(state.join("plans"))
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum::<u64>();
    let log_lines = std::fs::read_to_string(state.join("checkpoint.log"))
        .unwrap()
        .lines()
        .count();
    assert!(plan_bytes < 1_000_000, "the plan is {plan_bytes} bytes");
    assert_eq!(
        log_lines,
        2 * label_index + 3,
        "two per step before it, the label step started, two batches"
    );

    // Machine two reads the run from the mirror alone, and goes on from it.
    let second = Operator::new(&etcd);
    let status = status_json(&second);
    let records = status["checkpoint"]["steps"].as_array().unwrap();
    assert_eq!(records.len(), steps);
    let record = &records[label_index];
    assert_eq!(record["state"], "running", "{record}");
    assert_eq!(record["items_done"], 256, "{record}");
    killed(
        &second,
        &[
            "upgrade",
            "apply",
            "--resume",
            "--skip-preflight",
            "cluster",
        ],
        &format!("{LABEL_STEP}@40:before"),
    );

    // Machine three sees what machine two did: 39 batches done.
    let third = Operator::new(&etcd);
    let status = status_json(&third);
    let record = &status["checkpoint"]["steps"][label_index];
    assert_eq!(record["state"], "running", "{record}");
    assert_eq!(record["items_done"], 39 * 128, "{record}");
    let entries = etcd.entries(HOST_ENDPOINTS);
    assert_eq!(entries.len(), ENDPOINTS);
    let labelled: Vec<_> = entries
        .iter()
        .filter(|entry| String::from_utf8_lossy(&entry.value).contains("host-endpoint-upgrade"))
        .collect();
    assert_eq!(labelled.len(), 39 * 128);
    // The third batch, written before the first kill and re-read by the resume, was not written
    // again: every host endpoint was written at most twice (created, labelled).
    assert!(entries.iter().all(|entry| entry.version <= 2));
    let chunks = etcd.entries("/calico/netctl/upgrade/plans/").len();
    assert!(chunks >= 1, "the plan is in the mirror");
}
