//! The history of journals written the way runs write them: every ending, resumes, rollbacks.

use super::*;

/// One journal line: `event` of `run` at second `second`, with more fields from `extra`.
fn line(run: &str, second: u32, event: &str, extra: serde_json::Value) -> String {
    let mut entry = serde_json::json!({
        "time": format!("2026-03-01T02:{:02}:{:02}Z", second / 60, second % 60),
        "run_id": run,
        "plan_digest": "sha256:aa",
        "user": "ops",
        "host": "bastion",
        "pid": 7,
        "event": event,
    });
    for (key, value) in extra.as_object().unwrap() {
        entry[key] = value.clone();
    }
    entry.to_string()
}

fn started(run: &str, second: u32) -> String {
    line(
        run,
        second,
        "run-started",
        serde_json::json!({"procedure": "upgrade", "from": "v3.26.4", "to": "v3.29.2", "steps": 3, "cluster": "c1"}),
    )
}

fn step(run: &str, second: u32, event: &str, step: &str, extra: serde_json::Value) -> String {
    let mut extra = extra;
    extra["step"] = serde_json::json!(step);
    extra["action"] = serde_json::json!("exec");
    line(run, second, event, extra)
}

fn history_of(lines: &[String]) -> History {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join(JOURNAL_FILE), lines.join("\n") + "\n").unwrap();
    History::read(directory.path()).unwrap()
}

fn ok(run: &str, second: u32, name: &str, milliseconds: u64) -> Vec<String> {
    vec![
        step(
            run,
            second,
            "started",
            name,
            serde_json::json!({"attempt": 1}),
        ),
        step(
            run,
            second + 1,
            "succeeded",
            name,
            serde_json::json!({"attempt": 1, "duration_ms": milliseconds}),
        ),
    ]
}

#[test]
fn a_succeeded_a_failed_and_a_rolled_back_run_are_told_apart() {
    let mut lines = vec![started("run-a", 0)];
    lines.extend(ok("run-a", 1, "pre/a", 1000));
    lines.push(step(
        "run-a",
        3,
        "skipped",
        "pre/b",
        serde_json::json!({"summary": "skipped by `--skip`"}),
    ));
    lines.extend(ok("run-a", 4, "upgrade/c", 3000));
    lines.push(line(
        "run-a",
        9,
        "run-completed",
        serde_json::json!({"exit_code": 0}),
    ));

    lines.push(started("run-b", 60));
    lines.extend(ok("run-b", 61, "pre/a", 2000));
    lines.push(step(
        "run-b",
        63,
        "started",
        "pre/b",
        serde_json::json!({"attempt": 1}),
    ));
    lines.push(step(
        "run-b",
        64,
        "failed",
        "pre/b",
        serde_json::json!({"error": "exit 1"}),
    ));
    lines.push(line(
        "run-b",
        64,
        "run-failed",
        serde_json::json!({"step": "pre/b", "error": "step `pre/b` failed after 1 attempt(s): exit 1", "exit_code": 1}),
    ));

    lines.push(started("run-c", 120));
    lines.extend(ok("run-c", 121, "pre/a", 1500));
    lines.push(line(
        "run-c",
        123,
        "run-completed",
        serde_json::json!({"exit_code": 0}),
    ));
    // The rollback is a run of its own that names the run it goes back from.
    lines.push(line(
        "run-d",
        180,
        "run-started",
        serde_json::json!({"procedure": "rollback", "from": "v3.29.2", "to": "v3.26.4", "steps": 1, "rolls_back": "run-c"}),
    ));
    lines.extend(ok("run-d", 181, "undo/pre/a", 500));
    lines.push(line(
        "run-d",
        183,
        "run-completed",
        serde_json::json!({"exit_code": 0}),
    ));

    let history = history_of(&lines);
    let listed: Vec<(&str, String, StepCounts)> = history
        .listed()
        .map(|run| (run.run_id.as_str(), run.result.to_string(), run.counts))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "run-c",
                "rolled back (by run run-d)".to_string(),
                StepCounts {
                    run: 1,
                    skipped: 0,
                    failed: 0
                }
            ),
            (
                "run-b",
                "failed at `pre/b`".to_string(),
                StepCounts {
                    run: 1,
                    skipped: 0,
                    failed: 1
                }
            ),
            (
                "run-a",
                "succeeded".to_string(),
                StepCounts {
                    run: 2,
                    skipped: 1,
                    failed: 0
                }
            ),
        ],
        "newest first; the rollback run is shown with the run it rolled back"
    );
    let run_a = history.find("run-a").unwrap();
    assert_eq!(run_a.duration_seconds, 9);
    assert_eq!(
        (run_a.from.as_deref(), run_a.to.as_deref()),
        (Some("v3.26.4"), Some("v3.29.2"))
    );
    let json = serde_json::to_value(history.find("run-c").unwrap()).unwrap();
    assert_eq!(json["result"], "rolled-back");
    assert_eq!(json["rollback"]["run_id"], "run-d");
    assert_eq!(json["rollback"]["result"], "succeeded");
    let failed = serde_json::to_value(history.find("run-b").unwrap()).unwrap();
    assert_eq!(failed["result"], "failed");
    assert_eq!(failed["step"], "pre/b");
    // The rollback run itself is found by its id.
    assert_eq!(
        history.find("run-d").unwrap().rolls_back.as_deref(),
        Some("run-c")
    );
}

#[test]
fn a_resumed_run_is_one_run_and_ends_as_its_last_process_did() {
    let mut lines = vec![started("run-a", 0)];
    lines.extend(ok("run-a", 1, "pre/a", 1000));
    lines.push(step(
        "run-a",
        3,
        "stopped-at-gate",
        "pre/gate",
        serde_json::json!({"exit_code": 3}),
    ));
    let history = history_of(&lines);
    assert_eq!(
        history.find("run-a").unwrap().result,
        RunResult::WaitingAtGate {
            step: "pre/gate".into()
        }
    );
    lines.push(line(
        "run-a",
        300,
        "run-resumed",
        serde_json::json!({"steps": 3}),
    ));
    let history = history_of(&lines);
    assert_eq!(history.find("run-a").unwrap().result, RunResult::Unfinished);
    lines.extend(ok("run-a", 301, "pre/gate", 10));
    lines.push(line("run-a", 303, "run-completed", serde_json::json!({})));
    let history = history_of(&lines);
    let run = history.find("run-a").unwrap();
    assert_eq!(run.result, RunResult::Succeeded);
    assert_eq!(run.processes, 2);
    assert_eq!(run.duration_seconds, 303);
    assert_eq!(
        run.procedure.as_deref(),
        Some("upgrade"),
        "kept from the first process"
    );
}

#[test]
fn a_verification_failure_reads_as_such_not_as_a_plain_gate() {
    let mut lines = vec![started("run-a", 0)];
    lines.push(step(
        "run-a",
        5,
        "verification-failed",
        "verify/node-agents",
        serde_json::json!({"summary": "node n2 runs v3.26.4"}),
    ));
    lines.push(step(
        "run-a",
        5,
        "stopped-at-gate",
        "verify/node-agents",
        serde_json::json!({"exit_code": 3}),
    ));
    let history = history_of(&lines);
    let json = serde_json::to_value(history.find("run-a").unwrap()).unwrap();
    assert_eq!(json["result"], "verification-failed");
    assert_eq!(json["what"], "node n2 runs v3.26.4");
}

#[test]
fn a_line_cut_short_by_a_kill_is_counted_not_fatal_and_runs_are_found_by_prefix() {
    let mut lines = vec![started("3f2a9c10-0000", 0), started("3f2b0000-0000", 1)];
    lines.extend(ok("3f2a9c10-0000", 2, "pre/a", 1200));
    lines.push(r#"{"time":"2026-03-01T02:00:09Z","run_id":"3f2a"#.to_string());
    let history = history_of(&lines);
    assert_eq!(history.unreadable_lines, [5]);
    assert_eq!(history.find("3f2a").unwrap().run_id, "3f2a9c10-0000");
    assert!(matches!(
        history.find("3f2"),
        Err(HistoryError::Ambiguous { .. })
    ));
    assert!(matches!(
        history.find("zz"),
        Err(HistoryError::NotFound { .. })
    ));
    let durations = history.step_durations(Some("c1"));
    assert_eq!(durations["pre/a"], [Duration::from_millis(1200)]);
    assert!(history.step_durations(Some("other")).is_empty());
}

#[test]
fn no_journal_is_an_empty_history() {
    let directory = tempfile::tempdir().unwrap();
    let history = History::read(directory.path()).unwrap();
    assert!(history.runs.is_empty());
    assert_eq!(short_duration(Duration::from_secs(185)), "3m05s");
    assert_eq!(short_duration(Duration::from_secs(3720)), "1h02m");
}
