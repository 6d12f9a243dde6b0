//! End-to-end runs of `netctl runbook ...` and `netctl upgrade plan`: exit code, stdout and stderr.
//! netctl runs with no datastore configured, in the source tree (the fixtures are named relative
//! to it); `upgrade plan` runs with `--offline` where it matters.

use crate::support::Netctl;
use crate::support::snapshot::netctl_snapshot;

#[test]
fn lint_of_the_shipped_runbooks_passes() {
    Netctl::in_source_tree()
        .args(["runbook", "lint"])
        .assert()
        .success()
        .stdout("");
    Netctl::in_source_tree()
        .args(["runbook", "lint", "runbooks"])
        .assert()
        .success()
        .stdout("");
}

#[test]
fn lint_fails_on_a_defective_runbook() {
    netctl_snapshot!(Netctl::in_source_tree().args([
        "runbook",
        "lint",
        "tests/fixtures/runbooks/cycle",
        "tests/fixtures/runbooks/command-hygiene/runbook.yaml",
    ]));
}

#[test]
fn runbook_list_shows_every_runbook() {
    netctl_snapshot!(Netctl::in_source_tree().args(["runbook", "list"]));
}

#[test]
fn runbook_render_prints_the_rendered_steps() {
    netctl_snapshot!(Netctl::in_source_tree().args([
        "runbook",
        "render",
        "--from",
        "v3.22.0",
        "--to",
        "v3.29.2",
        "--install-method",
        "operator",
    ]));
}

#[test]
fn an_unsupported_path_is_refused_with_exit_1() {
    netctl_snapshot!(Netctl::in_source_tree().args([
        "upgrade",
        "plan",
        "--from",
        "v3.14.0",
        "--to",
        "v3.29.2",
        "--install-method",
        "operator",
        "--offline",
    ]));
}

#[test]
fn a_saved_plan_carries_facts_and_digest() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("plan.json");
    Netctl::in_source_tree()
        .args(["upgrade", "plan", "--from", "v3.25.1", "--to", "v3.29.2"])
        .args(["--install-method", "manifest", "-o", "json", "--out"])
        .arg(&path)
        .assert()
        .success();
    let saved: netctl::plan::Plan =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(saved.digest_is_valid());
    assert_eq!(
        saved.facts.install_method.value,
        netctl::plan::InstallMethod::Manifest
    );
}

#[test]
fn another_runbook_directory_replaces_the_built_in_set() {
    let output = Netctl::in_source_tree()
        .args([
            "runbook",
            "list",
            "--runbooks",
            "tests/fixtures/runbooks/needs-later-phase",
        ])
        .run();
    netctl_snapshot!(output);
}
