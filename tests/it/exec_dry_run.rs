//! `upgrade apply --dry-run` against a real etcd: it walks every step, prints exactly what would
//! happen, and changes nothing — the datastore dump is byte-identical before and after, no program
//! runs, no file is written, no lock or checkpoint appears.

use crate::exec_common::*;
use crate::support::EtcdServer;

fn sample_plan(operator: &Operator) -> netctl::plan::Plan {
    let log = operator.home().join("log.txt");
    let manifest = operator.netctl.write_file(
        "mirror/calico.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: calico-node\n  namespace: kube-system\n",
    );
    let mut gate = step(
        "pre/confirm",
        "Confirm the maintenance window",
        action(
            "pause",
            serde_json::json!({"message": "is the window open?"}),
        ),
    );
    gate.phase = netctl::plan::Phase::PreUpgrade;
    let mut create = step(
        "pre/create-hep",
        "Create a host endpoint",
        action(
            "resource.create",
            serde_json::json!({"documents": [host_endpoint("h2")]}),
        ),
    );
    create.verify = Some(action(
        "resource.get",
        serde_json::json!({"kind": "HostEndpoint", "name": "h2"}),
    ));
    let mut patch = step(
        "pre/patch-h1",
        "Add an expected IP to h1",
        action(
            "resource.patch",
            serde_json::json!({"kind": "HostEndpoint", "name": "h1", "patch": {"spec": {"expectedIPs": ["10.0.0.1", "10.0.0.9"]}}}),
        ),
    );
    patch.retry = Some(netctl::plan::RetryPolicy {
        attempts: 3,
        delay: netctl::plan::HumanDuration(std::time::Duration::from_secs(2)),
    });
    let mut fetch = step(
        "upgrade/fetch",
        "Download the manifest",
        action(
            "fetch",
            serde_json::json!({"url": format!("file://{}", manifest.display()), "file": "calico.yaml"}),
        ),
    );
    fetch.phase = netctl::plan::Phase::Upgrade;
    let mut apply = step(
        "upgrade/apply-manifest",
        "Apply the manifest",
        action(
            "kube.apply",
            serde_json::json!({"source": {"inline": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: calico-node\n  namespace: kube-system\n"}, "server_side": true, "force_conflicts": true}),
        ),
    );
    apply.phase = netctl::plan::Phase::Upgrade;
    apply.irreversible = true;
    let mut check = step(
        "post/version",
        "The cluster still reports the old version until the upgrade ran",
        action(
            "check",
            serde_json::json!({"fact": "installed_version", "equals": "v3.26.4"}),
        ),
    );
    check.phase = netctl::plan::Phase::PostUpgrade;
    plan(vec![
        gate,
        step(
            "pre/label-h1",
            "Label h1",
            action(
                "resource.label",
                serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": "v3.29", "overwrite": true}),
            ),
        ),
        create,
        patch,
        append_step("pre/append", &log, "ran"),
        fetch,
        apply,
        step(
            "post/delete-h1",
            "Delete h1",
            action(
                "resource.delete",
                serde_json::json!({"kind": "HostEndpoint", "name": "h1"}),
            ),
        ),
        check,
    ])
}

#[test]
fn a_dry_run_changes_nothing_and_shows_every_step() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan = sample_plan(&operator);
    let plan_file = operator.write_plan(&plan);
    let before = etcd.dump_prefix_bytes("");

    let output = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
    );
    assert!(
        output.status.success(),
        "dry-run failed: {}",
        text(&output.stderr)
    );

    assert_eq!(
        before,
        etcd.dump_prefix_bytes(""),
        "the datastore changed during a dry-run"
    );
    assert!(!operator.home().join("log.txt").exists(), "a program ran");
    assert!(
        !operator.state_dir().exists(),
        "a dry-run created the state directory"
    );
    assert_eq!(etcd.get(LOCK_KEY), None);
    assert_eq!(etcd.get(CHECKPOINT_KEY), None);
    // The plan has a Kubernetes step and no cluster is configured: the run's pre-flight (which the
    // dry run runs too) would refuse it, and that is the one warning.
    assert_eq!(
        text(&output.stderr),
        "warning: the run's pre-flight would refuse it: pre-flight failed before anything was written: cluster: 1 step(s) talk to Kubernetes (first `upgrade/apply-manifest`) and no cluster is configured\n"
    );

    let settings = {
        let mut settings = insta::Settings::clone_current();
        for (pattern, replacement) in filters(operator.home()) {
            settings.add_filter(&pattern, replacement);
        }
        settings
    };
    settings.bind(|| insta::assert_snapshot!("dry_run_transcript", text(&output.stdout)));
}

#[test]
fn a_dry_run_reports_a_step_that_would_fail_and_goes_on() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let plan = plan(vec![
        step(
            "pre/label-missing",
            "Label a host endpoint that does not exist",
            action(
                "resource.label",
                serde_json::json!({"kind": "HostEndpoint", "name": "nope", "key": "k", "value": "v"}),
            ),
        ),
        step(
            "pre/label-h1",
            "Change h1's role without --overwrite",
            action(
                "resource.label",
                serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "role", "value": "core"}),
            ),
        ),
    ]);
    let plan_file = operator.write_plan(&plan);
    let before = etcd.dump_prefix_bytes("");
    let output = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(before, etcd.dump_prefix_bytes(""));
    let transcript = text(&output.stdout);
    assert!(
        transcript.contains("would fail as things stand now: cannot read HostEndpoint(nope)"),
        "{transcript}"
    );
    assert!(
        transcript
            .contains("key role is already present. please use '--overwrite' to set a new value."),
        "{transcript}"
    );
    assert!(
        text(&output.stderr).contains("2 step(s) would fail"),
        "{}",
        text(&output.stderr)
    );
}
