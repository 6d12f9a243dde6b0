//! One voice and bounded listings (issue 26, items 4 and 5): `-q` leaves data and errors (a
//! successful `validate` prints nothing), `-v` adds notes, lists of problems are bounded (20,000
//! bad documents print under 10 kB, counted exactly by kind; `--all-errors` lists every one,
//! `--errors-file` writes them to a file), and what a user sees is captured in process through a
//! printer that writes to memory — an `upgrade apply` gate asked and answered on a "terminal",
//! even with `-q`, against a real etcd.

use crate::exec_common::{HOST_ENDPOINTS, action, plan, seed, step};
use crate::support::{EtcdServer, Netctl, failed, ok};
use clap::Parser;
use netctl::cli::{self, Cli};
use netctl::config::Environment;
use netctl::output::{Capture, Printer};
use netctl::plan::Plan;

const GOOD: &str = "apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: h1}
spec: {node: n1, interfaceName: eth0}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: set-a}
spec: {nets: [10.0.0.0/8]}
";

/// `count` host endpoints whose second expected IP is not an address (each with its own value).
fn bad_host_endpoints(count: usize) -> String {
    (0..count)
        .map(|index| {
            format!(
                "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {{name: h{index}}}\nspec: {{node: n1, expectedIPs: [10.0.0.1, 10.{}.{}.999]}}\n",
                index / 256,
                index % 256
            )
        })
        .collect()
}

#[test]
fn quiet_leaves_data_and_errors_only() {
    let mut netctl = Netctl::new();
    let good = netctl.write_file("good.yaml", GOOD);
    let run = netctl.args(["-q", "validate", "-f"]).arg(&good).run();
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (Some(0), "", ""),
        "a successful validate says nothing with -q"
    );
    // Data is not talk: `--show-defaults` still prints the documents.
    let mut netctl = Netctl::new();
    let good = netctl.write_file("good.yaml", GOOD);
    let documents = ok(netctl
        .args(["-q", "validate", "--show-defaults", "-f"])
        .arg(&good)
        .run());
    assert!(documents.contains("kind: HostEndpoint"), "{documents}");
    // Without -q, calicoctl's result line.
    let mut netctl = Netctl::new();
    let good = netctl.write_file("good.yaml", GOOD);
    assert_eq!(
        ok(netctl.args(["validate", "-f"]).arg(&good).run()),
        "Successfully validated 2 resource(s)\n"
    );
    // Errors are never silenced.
    let mut netctl = Netctl::new();
    let bad = netctl.write_file("bad.yaml", bad_host_endpoints(1));
    let stderr = failed(netctl.args(["-q", "validate", "-f"]).arg(&bad).run());
    assert!(
        stderr.starts_with("error: found 1 problem in the input:"),
        "{stderr}"
    );
    // -q and -v contradict each other.
    let run = Netctl::new()
        .args(["-q", "-v", "version", "--client"])
        .run();
    assert_eq!(run.code, Some(64), "{}", run.stderr);
}

#[test]
fn verbose_adds_notes_and_debug_detail() {
    // The notes of a configuration file that shadows the environment (`info:`) appear with -v;
    // the endpoints tried (`debug:`) with -vv.
    let etcd = EtcdServer::start();
    let config = etcd.netctl_config_yaml();
    let run = |flags: &[&str]| {
        let mut netctl = Netctl::new();
        netctl
            .config_file(&config)
            .env("ETCD_ENDPOINTS", "http://127.0.0.1:1")
            .args(flags)
            .args(["get", "hostendpoints"]);
        netctl.run()
    };
    let quiet = run(&[]);
    assert_eq!(quiet.code, Some(0), "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("info:"), "{}", quiet.stderr);
    let verbose = run(&["-v"]);
    assert!(verbose.stderr.contains("info: "), "{}", verbose.stderr);
    assert!(!verbose.stderr.contains("debug: "), "{}", verbose.stderr);
    let debug = run(&["-vv"]);
    assert!(
        debug.stderr.contains("debug: connected to etcd at"),
        "{}",
        debug.stderr
    );
    // `--log-level debug` says the same as -vv.
    let logged = run(&["--log-level", "debug"]);
    assert!(logged.stderr.contains("debug: connected to etcd at"));
}

#[test]
fn twenty_thousand_bad_documents_print_under_ten_kilobytes() {
    let mut netctl = Netctl::new();
    let file = netctl.write_file("bad.yaml", bad_host_endpoints(20_000));
    let stderr = failed(netctl.args(["validate", "-f"]).arg(&file).run());
    assert!(stderr.len() < 10_000, "{} bytes:\n{stderr}", stderr.len());
    assert!(
        stderr.starts_with("error: found 20,000 problems in the input:\n- `"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("\n- `").count(), 20, "the first twenty");
    // The rest counted exactly, by kind: one path, one message, each document's value left out.
    assert!(
        stderr.ends_with(
            "\n19,980 more, by kind of problem:\n  19,980 × spec.expectedIPs[1]: must be a valid address\n(`--all-errors` lists every one; `--errors-file FILE` writes them to FILE)\n"
        ),
        "{stderr}"
    );

    // `--all-errors` lists every one.
    let mut netctl = Netctl::new();
    let file = netctl.write_file("bad.yaml", bad_host_endpoints(20_000));
    let all = failed(
        netctl
            .args(["validate", "--all-errors", "-f"])
            .arg(&file)
            .run(),
    );
    assert_eq!(all.matches("\n- `").count(), 20_000);
    assert!(
        all.contains("document 20000 (from line"),
        "the last one too"
    );
    assert!(!all.contains("more, by kind of problem"));

    // `--errors-file` writes every one; the screen stays bounded and names the file.
    let mut netctl = Netctl::new();
    let file = netctl.write_file("bad.yaml", bad_host_endpoints(20_000));
    let errors = netctl.home().join("errors.txt");
    let stderr = failed(
        netctl
            .args(["validate", "--errors-file"])
            .arg(&errors)
            .arg("-f")
            .arg(&file)
            .run(),
    );
    assert!(stderr.len() < 10_000, "{} bytes", stderr.len());
    assert!(
        stderr.ends_with(&format!("\n(all 20,000 are in `{}`)\n", errors.display())),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&errors).expect("the errors file");
    assert!(written.starts_with("found 20,000 problems in the input:\n"));
    assert_eq!(written.matches("\n- `").count(), 20_000);
}

#[test]
fn apply_lists_by_the_same_rule_and_groups_each_kind_of_mistake() {
    // Two kinds of mistake, at different list indexes and with different values; refused before
    // any datastore is asked (`--dry-run --release`).
    let mut documents = bad_host_endpoints(30);
    for index in 0..25 {
        documents.push_str(&format!(
            "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata: {{name: s{index}}}\nspec: {{nets: [10.0.0.0/8, {}, bad-{index}]}}\n",
            match index % 2 {
                0 => "10.1.0.0/16",
                _ => "10.2.0.0/16",
            }
        ));
    }
    let mut netctl = Netctl::new();
    let file = netctl.write_file("mixed.yaml", documents);
    let stderr = failed(
        netctl
            .args(["apply", "--dry-run", "--release", "v3.32", "-f"])
            .arg(&file)
            .run(),
    );
    assert!(
        stderr.starts_with("error: found 55 problems in the input:"),
        "{stderr}"
    );
    let counts = stderr
        .split_once("\n35 more, by kind of problem:\n")
        .unwrap()
        .1;
    assert!(
        counts.starts_with("  25 × spec.nets[2]: "),
        "the most frequent kind first: {counts}"
    );
    assert!(
        counts.contains("\n  10 × spec.expectedIPs[1]: must be a valid address\n"),
        "{counts}"
    );
}

/// Runs a command line in process as `main` does — the printer made from its flags, a failure
/// reported through it — with a printer that writes to memory (answering questions as `answers`
/// says, as if on a terminal): the exit code and what the user saw.
fn run_in_process(
    args: &[&str],
    environment: Environment,
    answers: Option<&[&str]>,
) -> (i32, Capture) {
    let cli = Cli::try_parse_from(args).expect("a valid command line");
    let (printer, seen) = match answers {
        Some(answers) => Printer::capture_answering(cli.global.verbosity(), answers),
        None => Printer::capture(cli.global.verbosity()),
    };
    printer.set_listing(cli.global.listing());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let code = match runtime.block_on(cli::run(cli, environment, printer.clone())) {
        Ok(_) => 0,
        Err(error) => {
            let (message, hint) = cli::report(&error, &printer);
            let stopped = error.chain().any(|cause| {
                matches!(
                    cause.downcast_ref::<netctl::exec::ExecError>(),
                    Some(netctl::exec::ExecError::StoppedAtGate { .. })
                )
            });
            match stopped {
                true => printer.stopped(&message, hint.as_deref()),
                false => printer.error(&message, hint.as_deref()),
            }
            if stopped { 3 } else { 1 }
        }
    };
    (code, seen)
}

#[test]
fn what_a_user_sees_is_captured_in_process() {
    let directory = tempfile::tempdir().unwrap();
    let good = directory.path().join("good.yaml");
    std::fs::write(&good, GOOD).unwrap();
    let bad = directory.path().join("bad.yaml");
    std::fs::write(&bad, bad_host_endpoints(25)).unwrap();
    let validate = |flags: &[&str], file: &std::path::Path| {
        let file = file.display().to_string();
        let mut args = vec!["netctl"];
        args.extend_from_slice(flags);
        args.extend(["validate", "-f", &file]);
        let environment = Environment::from_pairs([("HOME", directory.path().to_str().unwrap())]);
        run_in_process(&args, environment, None)
    };

    let (code, seen) = validate(&["-q"], &good);
    assert_eq!(
        (code, seen.stdout(), seen.stderr()),
        (0, String::new(), String::new())
    );
    let (code, seen) = validate(&[], &good);
    assert_eq!(code, 0);
    assert_eq!(seen.stdout(), "Successfully validated 2 resource(s)\n");
    let (code, seen) = validate(&[], &bad);
    assert_eq!(code, 1);
    assert!(
        seen.stderr().ends_with(
            "\n5 more, by kind of problem:\n  5 × spec.expectedIPs[1]: must be a valid address\n(`--all-errors` lists every one; `--errors-file FILE` writes them to FILE)\n"
        ),
        "{}",
        seen.stderr()
    );
    let (_, seen) = validate(&["--all-errors"], &bad);
    assert_eq!(seen.stderr().matches("\n- `").count(), 25);
}

/// A plan of a human gate between two label steps, made for the seeded etcd.
fn gated_plan() -> Plan {
    let label = |value: &str| {
        action(
            "resource.label",
            serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": value, "overwrite": true}),
        )
    };
    let gate = action(
        "pause",
        serde_json::json!({"message": "is the window open?"}),
    );
    plan(vec![
        step("pre/before", "step pre/before", label("before")),
        step("pre/window", "step pre/window", gate),
        step("pre/after", "step pre/after", label("after")),
    ])
}

#[test]
fn a_gate_asks_on_a_terminal_even_when_quiet() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("netctl.cfg");
    std::fs::write(&config, etcd.netctl_config_yaml()).unwrap();
    let plan = home.path().join("plan.json");
    std::fs::write(&plan, serde_json::to_vec_pretty(&gated_plan()).unwrap()).unwrap();
    let run = |flags: &[&str], answers: Option<&[&str]>, state: &str| {
        let state_dir = home.path().join(state);
        let mut args = vec![
            "netctl",
            "-c",
            config.to_str().unwrap(),
            "upgrade",
            "apply",
            "--plan",
            plan.to_str().unwrap(),
            "--state-dir",
            state_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let environment =
            Environment::from_pairs([("HOME", home.path().to_str().unwrap()), ("USER", "ops")]);
        run_in_process(&args, environment, answers)
    };
    let label = || etcd.get(&format!("{HOST_ENDPOINTS}h1")).unwrap();

    // Quiet, on a terminal: the question and nothing else; answered yes, the run goes on.
    let (code, seen) = run(&["-q"], Some(&["y"]), "quiet");
    assert_eq!(code, 0, "{}", seen.stderr());
    assert_eq!(
        seen.stderr(),
        format!(
            "is the window open?\nstate directory: `{}` (downloaded files in `{}`)\ncontinue with step `pre/window`? [y/N] \n",
            home.path().join("quiet").display(),
            home.path().join("quiet/files").display()
        )
    );
    assert_eq!(seen.stdout(), "");
    assert!(label().contains(r#""upgrade":"after""#), "{}", label());

    // Not quiet: the progress lines around the question; answered no, the run stops there.
    let (code, seen) = run(&[], Some(&["n"]), "declined");
    assert_eq!(code, 1, "{}", seen.stderr());
    let stderr = seen.stderr();
    assert!(
        stderr.contains("[1/3] pre/before: step pre/before\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("continue with step `pre/window`? [y/N] \n"),
        "{stderr}"
    );
    assert!(!stderr.contains("[3/3]"), "{stderr}");

    // Quiet without a terminal: the run stops at the gate and says so (exit 3), nothing else.
    // (The declined run is still in the checkpoint, mirrored in etcd: start over.)
    let (code, seen) = run(&["-q", "--discard-checkpoint"], None, "unattended");
    assert_eq!(code, 3, "{}", seen.stderr());
    let stderr = seen.stderr();
    assert!(stderr.starts_with("stopped: "), "{stderr}");
    assert!(!stderr.contains("[1/3]"), "{stderr}");
}
