//! Runs on a terminal (a pseudo-terminal from util-linux `script`): a human gate asks on the terminal
//! and goes on after `y`, stops after anything else; the progress bar is drawn only there, counting
//! the running step (`[3/5]`) and showing a wait's count inside itself.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::exec_common::*;
use crate::support::{EtcdServer, Netctl};

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Runs netctl under `script` with `answer` typed on the terminal; returns exit success and the
/// terminal transcript.
fn on_terminal(operator: &Operator, args: &[&str], answer: &str) -> (bool, String) {
    on_terminal_of_type(operator, args, answer, "xterm")
}

fn on_terminal_of_type(
    operator: &Operator,
    args: &[&str],
    answer: &str,
    term: &str,
) -> (bool, String) {
    on_terminal_answering(operator, args, answer, term, None)
}

/// Like [`on_terminal`], but types `answer` only once the terminal shows `wait_for` (for keys like
/// ^C that act when typed rather than when read).
fn on_terminal_answering(
    operator: &Operator,
    args: &[&str],
    answer: &str,
    term: &str,
    wait_for: Option<&str>,
) -> (bool, String) {
    on_terminal_acting(operator, args, answer, term, wait_for, &|| {})
}

/// Like [`on_terminal_answering`], on a terminal 160 columns wide, and running `act` (the rest of
/// the world) once the terminal shows `wait_for`, before typing `answer`.
fn on_terminal_acting(
    operator: &Operator,
    args: &[&str],
    answer: &str,
    term: &str,
    wait_for: Option<&str>,
    act: &dyn Fn(),
) -> (bool, String) {
    // `script` gives the pseudo-terminal no size; the bar shortens its message to the width.
    let mut command_line = vec![
        "stty cols 160 rows 40;".to_string(),
        quote(&Netctl::program().display().to_string()),
        "-c".to_string(),
        quote(&operator.home().join("netctl.cfg").display().to_string()),
    ];
    command_line.extend(args.iter().map(|arg| quote(arg)));
    command_line.push("--state-dir".to_string());
    command_line.push(quote(&operator.state_dir().display().to_string()));
    let mut child = Command::new("script")
        .args(["-qec", &command_line.join(" "), "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", operator.home())
        .env("USER", "ops")
        .env("NO_COLOR", "1")
        .env("TERM", term)
        .env("SHELL", "/bin/sh")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` is installed (apt-get install bsdutils)");
    let mut stdout = child.stdout.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(count) = std::io::Read::read(&mut stdout, &mut buffer) {
                if count == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buffer[..count]);
            }
        })
    };
    if let Some(marker) = wait_for {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !text(&seen.lock().unwrap()).contains(marker) {
            assert!(
                std::time::Instant::now() < deadline,
                "`{marker}` never appeared: {}",
                text(&seen.lock().unwrap())
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        act();
    }
    // Otherwise typed ahead: the terminal holds the line until netctl reads its answer.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let transcript = text(&seen.lock().unwrap());
    (status.success(), transcript)
}

fn gate_plan(operator: &Operator) -> netctl::plan::Plan {
    let log = operator.home().join("log.txt");
    plan(vec![
        append_step("pre/append-a", &log, "a"),
        step(
            "pre/window",
            "Confirm the window",
            action(
                "pause",
                serde_json::json!({"message": "is the window open?"}),
            ),
        ),
        append_step("post/append-b", &log, "b"),
    ])
}

#[test]
fn a_gate_asks_on_the_terminal_and_continues_after_yes() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan_file = operator.write_plan(&gate_plan(&operator));
    let (success, transcript) = on_terminal(
        &operator,
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        "y\n",
    );
    assert!(success, "{transcript}");
    assert!(
        transcript.contains("is the window open?")
            && transcript.contains("continue with step `pre/window`? [y/N]"),
        "{transcript}"
    );
    assert!(
        transcript.contains("[3/3] post/append-b: succeeded"),
        "the bar prints finished steps above itself: {transcript}"
    );
    assert_eq!(
        std::fs::read_to_string(operator.home().join("log.txt")).unwrap(),
        "a\nb\n"
    );
    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    assert!(
        journal.contains(r#""summary":"confirmed on the terminal""#),
        "{journal}"
    );
}

#[test]
fn a_gate_answered_no_stops_the_run_with_a_checkpoint() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan_file = operator.write_plan(&gate_plan(&operator));
    let (success, transcript) = on_terminal(
        &operator,
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        "n\n",
    );
    assert!(!success, "{transcript}");
    assert!(
        transcript.contains("step `pre/window` was not confirmed"),
        "{transcript}"
    );
    assert_eq!(
        std::fs::read_to_string(operator.home().join("log.txt")).unwrap(),
        "a\n"
    );
    let status = status_json(&operator);
    assert_eq!(status["checkpoint"]["run"]["state"], "waiting-at-gate");
}

#[test]
fn a_terminal_that_cannot_draw_a_bar_gets_plain_lines() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan_file = operator.write_plan(&gate_plan(&operator));
    let (success, transcript) = on_terminal_of_type(
        &operator,
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--yes",
        ],
        "",
        "dumb",
    );
    assert!(success, "{transcript}");
    for line in [
        "[1/3] pre/append-a: append `a`",
        "[2/3] pre/window: Confirm the window",
        "[3/3] post/append-b: succeeded",
    ] {
        assert!(transcript.contains(line), "{line} in {transcript}");
    }
}

#[test]
fn ctrl_c_at_a_question_ends_the_run_and_releases_the_lock() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan_file = operator.write_plan(&gate_plan(&operator));
    // ^C typed on the terminal: the terminal driver sends SIGINT to netctl.
    let (success, transcript) = on_terminal_answering(
        &operator,
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        "\x03",
        "xterm",
        Some("[y/N]"),
    );
    assert!(!success, "{transcript}");
    assert!(
        transcript.contains("interrupted by SIGINT at a question; nothing more was changed"),
        "{transcript}"
    );
    assert_eq!(etcd.get(LOCK_KEY), None, "the lock was released");
    assert_eq!(
        std::fs::read_to_string(operator.home().join("log.txt")).unwrap(),
        "a\n"
    );
    let resumed = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(
        std::fs::read_to_string(operator.home().join("log.txt")).unwrap(),
        "a\nb\n"
    );
}

/// The bar counts the step that runs (`[3/5]` while step 3 runs, not the steps done) and shows a
/// wait's count inside itself, not as `warning:` lines.
#[test]
fn the_bar_counts_the_running_step_and_shows_the_count_of_a_wait() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let endpoint = |name: &str| {
        etcd.put(
            &format!("{HOST_ENDPOINTS}{name}"),
            format!(
                r#"{{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{{"name":"{name}","uid":"u-{name}","creationTimestamp":"2026-01-01T00:00:00Z"}},"spec":{{"node":"n1","interfaceName":"eth0"}}}}"#
            ),
        )
    };
    for name in ["h2", "h3", "h4", "h5", "h6", "h7"] {
        endpoint(name);
    }
    let operator = Operator::new(&etcd);
    let log = operator.home().join("log.txt");
    let names: Vec<String> = (1..=9).map(|index| format!("h{index}")).collect();
    let plan_file = operator.write_plan(&plan(vec![
        append_step("pre/append-a", &log, "a"),
        append_step("pre/append-b", &log, "b"),
        step(
            "pre/endpoints",
            "Wait for the host endpoints",
            action(
                "resource.wait",
                serde_json::json!({"kind": "HostEndpoint", "names": names, "timeout": "2m"}),
            ),
        ),
        append_step("post/append-c", &log, "c"),
        append_step("post/append-d", &log, "d"),
    ]));
    // The test plays whoever creates the last two endpoints, once the bar showed the count.
    let (success, transcript) = on_terminal_acting(
        &operator,
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        "",
        "xterm",
        Some("7/9 present"),
        &|| {
            endpoint("h8");
            endpoint("h9");
        },
    );
    assert!(success, "{transcript}");
    // The frames the bar drew, without terminal controls, its spinner and the elapsed time.
    let controls = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").unwrap();
    let frames: Vec<String> = controls
        .replace_all(&transcript, "")
        .split(['\r', '\n'])
        .map(|frame| frame.trim())
        .filter(|frame| frame.contains("] pre/") || frame.contains("] post/"))
        .map(|frame| {
            let frame = frame
                .trim_start_matches(|c: char| !c.is_ascii() || c == ' ' || "|/-\\".contains(c));
            regex::Regex::new(r" +\d+s$")
                .unwrap()
                .replace(frame, "")
                .to_string()
        })
        .collect();
    let bar_of = |needle: &str| {
        frames
            .iter()
            .find(|frame| frame.contains(needle) && !frame.contains("succeeded"))
            .unwrap_or_else(|| panic!("no frame with {needle:?} in {frames:#?}"))
            .clone()
    };
    // Frames between two redraws may be skipped, but the wait's is drawn (it was waited for), and
    // every frame of the step counts it as the third.
    insta::assert_snapshot!(
        "progress_bar_counts",
        bar_of("[3/5] pre/endpoints: waiting for")
    );
    for frame in frames
        .iter()
        .filter(|frame| frame.contains(" pre/endpoints: "))
    {
        assert!(frame.starts_with("[3/5] "), "{frame} in {frames:#?}");
    }
    assert!(
        !transcript.contains("warning: waiting for"),
        "the wait's count is in the bar: {transcript}"
    );
    assert!(
        transcript.contains("[3/5] pre/endpoints: succeeded"),
        "{transcript}"
    );
}
