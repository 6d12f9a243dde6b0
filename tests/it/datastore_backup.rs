//! `netctl datastore backup` and `netctl datastore restore` against real etcd and the strict
//! Kubernetes test server: a backup holds every kind (WorkloadEndpoints too), ClusterInformation and
//! the IPAM objects keyed as upstream's export keys them; a dry run of a restore against the changed
//! datastore shows the difference and writes nothing; a restore puts back what was deleted or
//! changed and leaves what was created since; IPAM only with `--include-ipam`; a cut-short backup and
//! a backup of the other datastore type are refused before anything is written.

use std::path::Path;

use serde_json::Value;

use crate::ipam_common::{kube_netctl, three_problems_scenario};
use crate::support::{EtcdServer, KubeApiServer, Netctl, Run, failed, ok};

const HOST_ENDPOINTS: &str = "\
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata:
  name: h1
  labels: {role: edge}
spec:
  node: node-1
  interfaceName: eth0
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata:
  name: h2
spec:
  node: node-1
  interfaceName: eth1
";

const HANDLE_KEY: &str = "/calico/ipam/v2/handle/leaked-handle";

fn etcd_run(etcd: &EtcdServer, state: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let mut command = Netctl::new();
    command
        .config_file(&etcd.netctl_config_yaml())
        .env("XDG_STATE_HOME", state)
        .args(args);
    if let Some(stdin) = stdin {
        command.stdin(stdin);
    }
    command.run()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_backup_of_etcd_restores_what_changed_and_ipam_only_when_asked() {
    let etcd = EtcdServer::start();
    three_problems_scenario().seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| etcd_run(&etcd, state.path(), args, None);
    ok(etcd_run(
        &etcd,
        state.path(),
        &["apply", "-f", "-"],
        Some(HOST_ENDPOINTS),
    ));
    let file = state.path().join("calico-backup.jsonl");
    let backup = file.to_str().unwrap();
    let taken = run(&["datastore", "backup", "-o", backup]);
    assert!(
        taken.stderr.contains("Backed up ") && taken.stderr.contains(" IPAM object(s) to `"),
        "{taken:?}"
    );
    ok(taken);
    let records = lines(&file);
    assert_eq!(records[0]["netctlBackup"], 1);
    assert_eq!(records[0]["datastoreType"], "etcdv3");
    let last = records.last().unwrap();
    assert!(last["end"]["resources"].as_u64().unwrap() >= 5, "{last}");
    let kinds: Vec<&str> = records
        .iter()
        .filter_map(|record| record["resource"]["kind"].as_str())
        .collect();
    for kind in [
        "ClusterInformation",
        "HostEndpoint",
        "IPPool",
        "Node",
        "WorkloadEndpoint",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let handle = records
        .iter()
        .find(|record| record["ipam"]["Key"] == HANDLE_KEY)
        .expect("the leaked handle is backed up");
    assert_eq!(
        handle["ipam"]["Value"],
        serde_json::from_str::<Value>(&etcd.get(HANDLE_KEY).unwrap()).unwrap()
    );
    assert!(records.iter().any(
        |record| record["ipam"]["Key"] == "/calico/ipam/v2/assignment/ipv4/block/10.66.12.0-26"
    ));

    // The datastore changes: h1 deleted, h2 changed, h3 created, a handle gone.
    let stored_handle = etcd.get(HANDLE_KEY).unwrap();
    ok(run(&["delete", "hostendpoint", "h1"]));
    ok(etcd_run(
        &etcd,
        state.path(),
        &["apply", "-f", "-"],
        Some(&HOST_ENDPOINTS.replace("eth1", "eth9").replace("h1", "h3")),
    ));
    assert!(etcd.delete(HANDLE_KEY));

    // The dry run shows the difference and writes nothing.
    let before = etcd.dump_prefix_bytes("/calico/");
    let out = ok(run(&["datastore", "restore", "-f", backup, "--dry-run"]));
    assert!(out.contains("+ would create HostEndpoint(h1)"), "{out}");
    assert!(out.contains("~ would update HostEndpoint(h2)"), "{out}");
    assert!(out.contains("eth9"), "{out}");
    assert!(
        out.contains("1 would be created") && out.contains("without --include-ipam"),
        "{out}"
    );
    assert!(!out.contains("HostEndpoint(h3)"), "{out}");
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));

    // The restore puts the resources back, leaves h3, and IPAM alone.
    let out = ok(run(&["datastore", "restore", "-f", backup]));
    assert!(out.contains("not restored without --include-ipam"), "{out}");
    let h1: Value = serde_json::from_str(
        &etcd
            .get("/calico/resources/v3/projectcalico.org/hostendpoints/h1")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(h1["spec"]["interfaceName"], "eth0");
    assert_eq!(h1["metadata"]["labels"]["role"], "edge");
    let h2 = etcd
        .get("/calico/resources/v3/projectcalico.org/hostendpoints/h2")
        .unwrap();
    assert!(h2.contains("\"eth1\""), "{h2}");
    assert!(
        etcd.get("/calico/resources/v3/projectcalico.org/hostendpoints/h3")
            .is_some()
    );
    assert!(etcd.get(HANDLE_KEY).is_none());

    // With --include-ipam the handle comes back as it was; a second run changes nothing.
    let out = ok(run(&[
        "datastore",
        "restore",
        "-f",
        backup,
        "--include-ipam",
    ]));
    assert!(out.contains("1 created"), "{out}");
    assert_eq!(
        serde_json::from_str::<Value>(&etcd.get(HANDLE_KEY).unwrap()).unwrap(),
        serde_json::from_str::<Value>(&stored_handle).unwrap()
    );
    let before = etcd.dump_prefix_bytes("/calico/");
    let out = ok(run(&[
        "datastore",
        "restore",
        "-f",
        backup,
        "--include-ipam",
    ]));
    assert!(out.contains("0 created, 0 updated"), "{out}");
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));

    // The restore is journaled.
    let journal = std::fs::read_to_string(state.path().join("netctl/journal.jsonl")).unwrap();
    assert!(journal.contains("datastore.restore -f "), "{journal}");
}

#[test]
fn a_cut_short_or_foreign_backup_is_refused_before_any_write() {
    let etcd = EtcdServer::start();
    three_problems_scenario().seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("b.jsonl");
    ok(etcd_run(
        &etcd,
        state.path(),
        &["datastore", "backup", "-o", file.to_str().unwrap()],
        None,
    ));
    let whole = std::fs::read_to_string(&file).unwrap();
    let cut = state.path().join("cut.jsonl");
    let without_end: Vec<&str> = whole.lines().collect();
    std::fs::write(&cut, without_end[..without_end.len() - 1].join("\n")).unwrap();
    ok(etcd_run(
        &etcd,
        state.path(),
        &["delete", "ippool", "default-ipv4-ippool"],
        None,
    ));
    let before = etcd.dump_prefix_bytes("/calico/");
    let refused = failed(etcd_run(
        &etcd,
        state.path(),
        &["datastore", "restore", "-f", cut.to_str().unwrap()],
        None,
    ));
    assert!(refused.contains("is incomplete"), "{refused}");
    assert!(
        refused.contains("netctl datastore backup -o FILE"),
        "{refused}"
    );
    let garbage = state.path().join("garbage.jsonl");
    std::fs::write(&garbage, "apiVersion: v1\n").unwrap();
    let refused = failed(etcd_run(
        &etcd,
        state.path(),
        &["datastore", "restore", "-f", garbage.to_str().unwrap()],
        None,
    ));
    assert!(
        refused.contains("is not a netctl backup: line 1"),
        "{refused}"
    );
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));

    // An etcd backup does not go into a Kubernetes datastore.
    let kube = KubeApiServer::start();
    three_problems_scenario().seed_kube(&kube);
    let refused = failed(kube_netctl(
        &kube,
        &["datastore", "restore", "-f", file.to_str().unwrap()],
    ));
    assert!(
        refused.contains("is of a `etcdv3` datastore and this one is `kubernetes`"),
        "{refused}"
    );
}

#[test]
fn a_backup_of_kubernetes_restores_a_deleted_resource_and_says_what_it_cannot() {
    let kube = KubeApiServer::start();
    three_problems_scenario().seed_kube(&kube);
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("k.jsonl");
    let backup = file.to_str().unwrap();
    ok(kube_netctl(&kube, &["datastore", "backup", "-o", backup]));
    let records = lines(&file);
    assert_eq!(records[0]["datastoreType"], "kubernetes");
    let kinds: Vec<&str> = records
        .iter()
        .filter_map(|record| record["resource"]["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"WorkloadEndpoint"), "{kinds:?}");
    assert!(kinds.contains(&"IPPool"), "{kinds:?}");
    assert!(records.iter().any(
        |record| record["ipam"]["Key"] == "/calico/ipam/v2/assignment/ipv4/block/10.66.12.0-26"
    ));

    ok(kube_netctl(
        &kube,
        &["delete", "ippool", "default-ipv4-ippool"],
    ));
    let out = ok(kube_netctl(
        &kube,
        &["datastore", "restore", "-f", backup, "--dry-run"],
    ));
    assert!(
        out.contains("+ would create IPPool(default-ipv4-ippool)"),
        "{out}"
    );
    assert!(
        out.contains("WorkloadEndpoint(s) in the backup are not restored"),
        "{out}"
    );
    let out = ok(kube_netctl(&kube, &["datastore", "restore", "-f", backup]));
    assert!(out.contains("IPPool: 1 created"), "{out}");
    let pool = ok(kube_netctl(
        &kube,
        &["get", "ippool", "default-ipv4-ippool", "-o", "yaml"],
    ));
    assert!(pool.contains("10.66.0.0/16"), "{pool}");
}

/// `upgrade apply` backs the datastore up into its state directory before its first write, named
/// in the journal; `datastore restore --dry-run` of that backup against the changed datastore shows
/// what the run changed; `--no-backup` takes none and is journaled.
#[test]
fn an_upgrade_run_leaves_its_backup_taken_before_its_first_write() {
    use crate::exec_common::{Operator, action, plan, seed, step, text};
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let label = plan(vec![step(
        "pre/label-h1",
        "Label h1",
        action(
            "resource.label",
            serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": "yes"}),
        ),
    )]);
    let plan_file = operator.write_plan(&label);
    let output = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("backed up "), "{stderr}");
    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    let events: Vec<Value> = journal
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let backup_at = events
        .iter()
        .position(|entry| entry["event"] == "backup-taken")
        .unwrap_or_else(|| panic!("no backup in {journal}"));
    let first_step = events
        .iter()
        .position(|entry| entry["event"] == "started")
        .unwrap();
    assert!(backup_at < first_step, "{journal}");
    let run_id = events[backup_at]["run_id"].as_str().unwrap();
    let file = operator
        .state_dir()
        .join("backups")
        .join(format!("{run_id}.jsonl"));
    let summary = events[backup_at]["summary"].as_str().unwrap();
    assert!(summary.contains(file.to_str().unwrap()), "{summary}");
    // The backup holds h1 as it was before the run labelled it.
    let h1 = lines(&file)
        .into_iter()
        .find(|record| record["resource"]["metadata"]["name"] == "h1")
        .unwrap();
    assert!(
        h1["resource"]["metadata"]["labels"]["upgrade"].is_null(),
        "{h1}"
    );
    let mut restore = Netctl::new();
    restore.config_file(operator.config()).args([
        "datastore",
        "restore",
        "--dry-run",
        "-f",
        file.to_str().unwrap(),
    ]);
    let out = ok(restore.run());
    assert!(out.contains("~ would update HostEndpoint(h1)"), "{out}");
    assert!(out.contains("upgrade"), "{out}");

    // `--no-backup`: none taken, journaled.
    let output = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--no-backup",
            "--discard-checkpoint",
        ],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    let last_run: Vec<&str> = journal
        .lines()
        .rev()
        .take_while(|line| !line.contains("\"run-started\""))
        .collect();
    assert!(journal.contains("\"backup-skipped\""), "{journal}");
    assert!(
        !last_run.iter().any(|line| line.contains("backup-taken")),
        "{journal}"
    );
    assert_eq!(
        std::fs::read_dir(operator.state_dir().join("backups"))
            .unwrap()
            .count(),
        1
    );
}
