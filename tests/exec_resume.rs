//! Crash and resume against a real etcd: a run killed with SIGKILL before or after any step's action
//! (the test-only hook `NETCTL_TEST_CRASH_AFTER`) resumes to completion, and no step's effect is
//! applied twice — the `exec` steps append to a file exactly once, the created host endpoint is
//! created once (a second create would fail), and completed steps are not run again.

mod exec_common;
mod support;

use std::os::unix::process::ExitStatusExt;

use exec_common::*;
use support::EtcdServer;

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

            // The killed run still holds the lock (its lease has not run out): a resume is refused
            // and names the holder; the operator removes it by id.
            let refused = operator.run(&["upgrade", "apply", "--resume"], &[]);
            assert_eq!(refused.status.code(), Some(1), "{kill_point}");
            let refusal = text(&refused.stderr);
            assert!(
                refusal.contains("another upgrade run holds the lock: ops@"),
                "{kill_point}: {refusal}"
            );
            let lock_id = stale_lock_id(&operator);
            let unlocked = operator.run(&["upgrade", "unlock", &lock_id], &[]);
            assert!(unlocked.status.success(), "{}", text(&unlocked.stderr));

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
    let message = text(&refused.stderr);
    assert!(
        message.contains("step `pre/append-a` was interrupted and cannot safely run again"),
        "{message}"
    );
    assert!(message.contains("--rerun pre/append-a"), "{message}");

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
    let message = text(&output.stderr);
    assert!(
        message.contains("error: interrupted; the run stopped where it was"),
        "{message}"
    );
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
