//! The IPAM writes and the datastore lock against real etcd and the strict Kubernetes test server:
//! `datastore migrate lock|unlock` and its warnings, `ipam release` from `ipam check` reports
//! (upstream's TestIPAMCleanup scenario: refusals, the release itself, an address re-allocated
//! since the report, a stale report), `ipam split` with upstream's refusals (`tests/st/calicoctl/
//! test_ipam_split.py`), `ipam configure`, and etcd killed part way through a release.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::ipam_common::{
    Block, CLUSTER_INFORMATION, GUID, Scenario, etcd_netctl, kube_netctl, three_problems_scenario,
};
use crate::support::{EtcdServer, KubeApiServer, Netctl, Run, failed, ok};
use serde_json::Value;

const BLOCK_KEY: &str = "/calico/ipam/v2/assignment/ipv4/block/10.66.12.0-26";

fn etcd_json(etcd: &EtcdServer, key: &str) -> Value {
    serde_json::from_str(&etcd.get(key).unwrap_or_else(|| panic!("{key} is stored"))).unwrap()
}

fn run_in(etcd: &EtcdServer, state: &Path, args: &[&str]) -> Run {
    let mut command = Netctl::new();
    command
        .config_file(&etcd.netctl_config_yaml())
        .env("XDG_STATE_HOME", state)
        .args(args);
    command.run()
}

fn report_path(directory: &tempfile::TempDir, name: &str) -> String {
    directory.path().join(name).to_str().unwrap().to_string()
}

#[test]
fn lock_and_unlock_record_who_and_when_on_etcd() {
    let etcd = EtcdServer::start();
    three_problems_scenario().seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    // A dry run writes nothing.
    let before = etcd.dump_prefix_bytes("/calico/");
    let out = ok(run_in(
        &etcd,
        state.path(),
        &["datastore", "migrate", "lock", "--dry-run"],
    ));
    assert!(
        out.contains(
            "would lock the datastore: ClusterInformation `default` datastoreReady: false"
        ),
        "{out}"
    );
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));

    let out = ok(run_in(
        &etcd,
        state.path(),
        &["datastore", "migrate", "lock"],
    ));
    assert!(out.starts_with("Datastore locked.\n"), "{out}");
    assert!(out.contains("new pods get no network"), "{out}");
    let information = etcd_json(&etcd, CLUSTER_INFORMATION);
    assert_eq!(information["spec"]["datastoreReady"], false);
    assert_eq!(information["spec"]["clusterGUID"], GUID);
    let by = information["metadata"]["annotations"]["netctl.projectcalico.org/locked-by"]
        .as_str()
        .unwrap();
    assert!(by.contains('@'), "{information}");
    assert!(
        information["metadata"]["annotations"]["netctl.projectcalico.org/locked-at"].is_string()
    );
    // Locking again writes nothing.
    let revision = etcd.mod_revision(CLUSTER_INFORMATION);
    let out = ok(run_in(&etcd, state.path(), &["datastore", "lock"]));
    assert!(
        out.starts_with("The datastore is already locked (by "),
        "{out}"
    );
    assert_eq!(revision, etcd.mod_revision(CLUSTER_INFORMATION));

    let journal =
        std::fs::read_to_string(state.path().join("netctl").join("journal.jsonl")).unwrap();
    let entries: Vec<Value> = journal
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let locked = entries
        .iter()
        .find(|entry| entry["event"] == "succeeded" && entry["action"] == "datastore.lock")
        .unwrap_or_else(|| panic!("{journal}"));
    assert!(locked["user"].is_string() && locked["host"].is_string() && locked["time"].is_string());

    let out = ok(run_in(
        &etcd,
        state.path(),
        &["datastore", "migrate", "unlock"],
    ));
    assert!(out.starts_with("Datastore unlocked.\n"), "{out}");
    let information = etcd_json(&etcd, CLUSTER_INFORMATION);
    assert_eq!(information["spec"]["datastoreReady"], true);
    assert!(
        information["metadata"].get("annotations").is_none(),
        "{information}"
    );
}

#[test]
fn lock_and_unlock_on_kubernetes() {
    let server = KubeApiServer::start();
    three_problems_scenario().seed_kube(&server);
    ok(kube_netctl(&server, &["datastore", "migrate", "lock"]));
    let information = server
        .get(
            "crd.projectcalico.org/v1",
            "clusterinformations",
            "",
            "default",
        )
        .unwrap();
    assert_eq!(
        information["spec"]["datastoreReady"], false,
        "{information}"
    );
    assert_eq!(information["spec"]["clusterGUID"], GUID);
    let run = kube_netctl(&server, &["version"]);
    assert!(
        run.stderr.contains("the datastore is LOCKED (by "),
        "{}",
        run.stderr
    );
    ok(kube_netctl(&server, &["datastore", "unlock"]));
    let information = server
        .get(
            "crd.projectcalico.org/v1",
            "clusterinformations",
            "",
            "default",
        )
        .unwrap();
    assert_eq!(information["spec"]["datastoreReady"], true);
}

#[test]
fn a_locked_datastore_is_warned_about_by_every_command_named() {
    let etcd = EtcdServer::start();
    let mut scenario = three_problems_scenario();
    scenario.datastore_ready = false;
    scenario.calico_version = "v3.30.2".into();
    scenario.seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let warning = "the datastore is LOCKED (ClusterInformation `default` has datastoreReady: false): new pods get no network";
    for args in [
        vec!["version"],
        vec!["get", "nodes"],
        vec!["upgrade", "plan", "--to", "v3.31.3"],
        vec!["upgrade", "status"],
    ] {
        let run = run_in(&etcd, state.path(), &args);
        assert!(run.stderr.contains(warning), "{args:?}: {}", run.stderr);
    }
    // An upgrade does not start: the pre-flight refuses.
    let run = run_in(
        &etcd,
        state.path(),
        &["upgrade", "apply", "--to", "v3.31.3", "--yes"],
    );
    assert_ne!(run.code, Some(0), "{}", run.stdout);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("the datastore is locked"), "{all}");
    // Commands that do not show the cluster's state stay quiet.
    let run = run_in(&etcd, state.path(), &["get", "ippools"]);
    assert!(!run.stderr.contains("LOCKED"), "{}", run.stderr);
}

/// TestIPAMCleanup, with netctl: refusals, the release, re-running, a recreated handle.
fn release_from_report_scenario(
    run: &dyn Fn(&[&str]) -> Run,
    stored_block: &dyn Fn() -> Value,
    handle_exists: &dyn Fn(&str) -> bool,
    recreate_leaked_handle: &dyn Fn(),
) {
    let directory = tempfile::tempdir().unwrap();
    let unlocked = report_path(&directory, "unlocked.json");
    ok(run(&["ipam", "check", "-o", &unlocked]));
    let error = failed(run(&["ipam", "release", "--from-report", &unlocked]));
    assert!(
        error.contains("the datastore is not locked: a release from reports needs it locked"),
        "{error}"
    );
    // Locking changes ClusterInformation: the report made before is stale, even with --force.
    ok(run(&["datastore", "migrate", "lock"]));
    let error = failed(run(&[
        "ipam",
        "release",
        "--from-report",
        &unlocked,
        "--force",
    ]));
    assert!(error.contains("the reports are all stale"), "{error}");
    assert!(
        error.contains("generate a new report") || error.contains("make a new report"),
        "{error}"
    );

    let report = report_path(&directory, "locked.json");
    let out = ok(run(&["ipam", "check", "--show-all-ips", "-o", &report]));
    assert!(
        out.contains("Found 1 handles with no matching IPs (and 3 handles with matches)."),
        "{out}"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("\"datastoreLocked\": true"), "{text}");

    // --dry-run lists what would be released and writes nothing.
    let block_before = stored_block();
    let out = ok(run(&[
        "ipam",
        "release",
        "--from-report",
        &report,
        "--dry-run",
    ]));
    assert!(
        out.contains("would release 10.66.12.1 (handle k8s-pod-network.gone0)"),
        "{out}"
    );
    assert!(out.contains("would delete handle `leaked-handle`"), "{out}");
    assert!(
        !out.contains("10.66.12.0") && !out.contains("10.66.12.2"),
        "{out}"
    );
    assert_eq!(block_before, stored_block());
    assert!(handle_exists("leaked-handle"));

    let out = ok(run(&["ipam", "release", "--from-report", &report]));
    assert!(out.contains("Released 1 IPs successfully"), "{out}");
    assert!(
        out.contains("Released 1 handles; 0 skipped; 0 errors."),
        "{out}"
    );
    assert!(
        out.ends_with("You may now unlock the data store.\n"),
        "{out}"
    );
    let block = stored_block();
    let allocations = block["allocations"].as_array().unwrap();
    assert!(allocations[1].is_null(), "{block}");
    assert!(
        !allocations[0].is_null() && !allocations[2].is_null(),
        "{block}"
    );
    assert!(
        block["unallocated"]
            .as_array()
            .unwrap()
            .contains(&Value::from(1))
    );
    // The freed address's handle held nothing else: it went; the leaked one went too.
    assert!(!handle_exists("k8s-pod-network.gone0"));
    assert!(!handle_exists("leaked-handle"));
    assert!(handle_exists("k8s-pod-network.web0") && handle_exists("ipip-tunnel-addr-node-1"));

    // The handle recreated since: its revision changed, so it is skipped; the address is free already.
    recreate_leaked_handle();
    let out = ok(run(&["ipam", "release", "--from-report", &report]));
    assert!(!out.contains("Released 1 IPs"), "{out}");
    assert!(
        out.contains("1 addresses marked as leaked in the report had already been cleaned up."),
        "{out}"
    );
    assert!(
        out.contains("Released 0 handles; 1 skipped; 0 errors."),
        "{out}"
    );
    assert!(handle_exists("leaked-handle"));
    ok(run(&["datastore", "migrate", "unlock"]));
}

#[test]
fn test_ipam_cleanup_on_etcd() {
    let etcd = EtcdServer::start();
    three_problems_scenario().seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    release_from_report_scenario(
        &|args| run_in(&etcd, state.path(), args),
        &|| etcd_json(&etcd, BLOCK_KEY),
        &|id| etcd.get(&format!("/calico/ipam/v2/handle/{id}")).is_some(),
        &|| {
            etcd.put(
                "/calico/ipam/v2/handle/leaked-handle",
                r#"{"block":{"10.65.79.0/26":1},"deleted":false}"#,
            )
        },
    );
    // The block was written as the cluster's release (v3.31) writes it: nulls kept.
    let text = etcd.get(BLOCK_KEY).unwrap();
    assert!(
        text.contains(r#""sequenceNumberForAllocation":{"#),
        "{text}"
    );
}

#[test]
fn test_ipam_cleanup_on_kubernetes() {
    let server = KubeApiServer::start();
    three_problems_scenario().seed_kube(&server);
    release_from_report_scenario(
        &|args| kube_netctl(&server, args),
        &|| {
            server
                .get(
                    "crd.projectcalico.org/v1",
                    "ipamblocks",
                    "",
                    "10-66-12-0-26",
                )
                .unwrap()["spec"]
                .clone()
        },
        &|id| {
            server
                .get(
                    "crd.projectcalico.org/v1",
                    "ipamhandles",
                    "",
                    &id.to_lowercase(),
                )
                .is_some()
        },
        &|| {
            server.put(serde_json::json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMHandle",
                "metadata": {"name": "leaked-handle"},
                "spec": {"handleID": "leaked-handle", "block": {"10.65.79.0/26": 1}, "deleted": false}}));
        },
    );
}

#[test]
fn an_address_allocated_again_since_the_report_is_skipped() {
    let etcd = EtcdServer::start();
    let mut scenario = three_problems_scenario();
    scenario.datastore_ready = false;
    scenario.seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let directory = tempfile::tempdir().unwrap();
    let report = report_path(&directory, "report.json");
    ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "check", "-o", &report],
    ));
    // Between the report and the release, the allocator frees 10.66.12.1 and hands it to a new pod
    // (as upstream's TestIPAMCleanup re-creates its handle): a new sequence number and handle.
    let mut block = Block::new("10.66.12.0/26", 64, Some("host:node-1"))
        .allocate(
            0,
            Some("k8s-pod-network.web0"),
            &[
                ("node", "node-1"),
                ("pod", "web-0"),
                ("namespace", "default"),
            ],
        )
        .allocate(
            1,
            Some("k8s-pod-network.new0"),
            &[
                ("node", "node-1"),
                ("pod", "new-0"),
                ("namespace", "default"),
            ],
        )
        .allocate(
            2,
            Some("ipip-tunnel-addr-node-1"),
            &[("node", "node-1"), ("type", "ipipTunnelAddress")],
        );
    block.allocations[1].sequence += 1000;
    etcd.put(BLOCK_KEY, block.etcd_json(true));
    let before = etcd_json(&etcd, BLOCK_KEY);
    let out = ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--from-report", &report],
    ));
    assert!(out.contains("Released 0 IPs successfully"), "{out}");
    assert!(
        out.contains(
            "1 addresses were allocated again since the report and were skipped: 10.66.12.1"
        ),
        "{out}"
    );
    assert_eq!(
        before,
        etcd_json(&etcd, BLOCK_KEY),
        "the re-allocated address stays"
    );
    // The leaked handle still goes: its revision did not change.
    assert!(
        out.contains("Released 1 handles; 0 skipped; 0 errors."),
        "{out}"
    );
}

#[test]
fn reports_of_another_cluster_or_version_and_truncated_reports_are_refused() {
    let etcd = EtcdServer::start();
    let mut scenario = three_problems_scenario();
    scenario.datastore_ready = false;
    scenario.seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let directory = tempfile::tempdir().unwrap();
    let report = report_path(&directory, "report.json");
    ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "check", "-o", &report],
    ));
    let before = etcd.dump_prefix_bytes("/calico/ipam/");
    let text = std::fs::read_to_string(&report).unwrap();

    let other = report_path(&directory, "other.json");
    std::fs::write(
        &other,
        text.replace(GUID, "0000000000000000000000000000beef"),
    )
    .unwrap();
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--from-report", &other, "--force"],
    ));
    assert!(
        error.contains("the report was taken of cluster `0000000000000000000000000000beef (in "),
        "{error}"
    );
    assert!(
        error.contains("`--force` does not override this"),
        "{error}"
    );

    // A report written by upstream's calicoctl: another version, taken with --force.
    let upstream = report_path(&directory, "upstream.json");
    let mut value: Value = serde_json::from_str(&text).unwrap();
    value["version"] = Value::from("v3.31.3");
    value.as_object_mut().unwrap().remove("netctl");
    std::fs::write(&upstream, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--from-report", &upstream],
    ));
    assert!(
        error.contains("was made by another version (`v3.31.3`"),
        "{error}"
    );

    let truncated = report_path(&directory, "cut.json");
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--from-report", &truncated],
    ));
    assert!(
        error.contains(&format!(
            "`{truncated}` is not a complete IPAM report (line "
        )),
        "{error}"
    );
    assert_eq!(
        before,
        etcd.dump_prefix_bytes("/calico/ipam/"),
        "nothing written"
    );

    let run = run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--from-report", &upstream, "--force"],
    );
    let out = ok(run);
    assert!(out.contains("Released 1 IPs successfully"), "{out}");
}

#[test]
fn release_by_address() {
    let etcd = EtcdServer::start();
    three_problems_scenario().seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let out = ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--ip", "10.66.12.1"],
    ));
    assert_eq!(out, "Successfully released IP address 10.66.12.1\n");
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--ip", "10.66.12.1"],
    ));
    assert!(
        error.contains("IP address 10.66.12.1 is not assigned"),
        "{error}"
    );
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--ip", "10.66.12.300"],
    ));
    assert!(
        error.contains("invalid IP address `10.66.12.300`"),
        "{error}"
    );
    // Outside every pool and block: not assigned, nothing written.
    let before = etcd.dump_prefix_bytes("/calico/ipam/");
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--ip", "192.0.2.1"],
    ));
    assert!(
        error.contains("IP address 192.0.2.1 is not assigned"),
        "{error}"
    );
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/ipam/"));
}

#[test]
fn etcd_killed_during_a_release_exits_in_time_and_a_second_run_finishes() {
    let mut etcd = EtcdServer::start();
    let mut scenario = Scenario::new();
    scenario.datastore_ready = false;
    scenario.pools = vec![crate::ipam_common::Pool::new("p", "10.70.0.0/16", 26)];
    // 400 blocks, each with one leaked address.
    for index in 0..400 {
        let cidr = format!("10.70.{}.{}/26", index / 4, (index % 4) * 64);
        let block = Block::new(&cidr, 64, None).allocate(1, None, &[("node", "node-1")]);
        scenario.blocks.push(block);
    }
    scenario.seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let directory = tempfile::tempdir().unwrap();
    let report = report_path(&directory, "report.json");
    ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "check", "-o", &report],
    ));
    let mut command = Netctl::new();
    command.config_file(&etcd.netctl_config_yaml()).args([
        "--request-timeout",
        "2s",
        "ipam",
        "release",
        "--from-report",
        &report,
    ]);
    let child = command.spawn();
    // Kill etcd once the release has freed something.
    let first = "/calico/ipam/v2/assignment/ipv4/block/10.70.0.0-26";
    let deadline = Instant::now() + Duration::from_secs(30);
    while etcd.get(first).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    etcd.kill();
    let killed = Instant::now();
    let run = crate::support::wait_for_exit(child, Duration::from_secs(30));
    assert!(
        killed.elapsed() < Duration::from_secs(12),
        "{:?}",
        killed.elapsed()
    );
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.stderr.contains("released "), "{}", run.stderr);
    assert!(run.stderr.contains(" of 400 addresses"), "{}", run.stderr);
    assert!(
        run.stderr.contains("run the same command again"),
        "{}",
        run.stderr
    );
    etcd.restart();
    let out = ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "release", "--from-report", &report],
    ));
    assert!(
        out.contains("addresses marked as leaked in the report had already been cleaned up."),
        "{out}"
    );
    let remaining = etcd.get_prefix("/calico/ipam/v2/assignment/");
    assert!(
        remaining.is_empty(),
        "empty blocks of no node are deleted: {remaining:?}"
    );
}

#[test]
fn split_refusals_are_upstreams_and_nothing_is_written() {
    let etcd = EtcdServer::start();
    let mut scenario = three_problems_scenario();
    scenario
        .pools
        .push(crate::ipam_common::Pool::new("tiny", "10.99.0.0/30", 30));
    scenario.seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let before = etcd.dump_prefix_bytes("/calico/");
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "split", "2", "--name", "default-ipv4-ippool"],
    ));
    assert!(
        error.contains("the datastore is not locked: `ipam split` needs it locked"),
        "{error}"
    );
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));
    ok(run_in(
        &etcd,
        state.path(),
        &["datastore", "migrate", "lock"],
    ));
    let before = etcd.dump_prefix_bytes("/calico/");
    for (args, expected) in [
        (
            vec!["ipam", "split", "3", "--cidr", "10.66.0.0/16"],
            "not a valid power of 2: 3",
        ),
        (
            vec!["ipam", "split", "3", "--name", "default-ipv4-ippool"],
            "not a valid power of 2: 3",
        ),
        (
            vec!["ipam", "split", "8", "--cidr", "10.99.0.0/30"],
            "the CIDR 10.99.0.0/30 is not large enough to be split into 8 parts",
        ),
        (
            vec!["ipam", "split", "8", "--name", "tiny"],
            "the CIDR 10.99.0.0/30 is not large enough to be split into 8 parts",
        ),
        (
            vec!["ipam", "split", "4", "--name", "tiny"],
            "gives /32 pools, smaller than the pool's block size /30",
        ),
        (
            vec!["ipam", "split", "2", "--cidr", "10.98.0.0/16"],
            "there is no IP pool with CIDR `10.98.0.0/16`",
        ),
        (
            vec!["ipam", "split", "2", "--name", "nope"],
            "there is no IP pool named `nope`",
        ),
        (
            vec!["ipam", "split", "2048", "--name", "default-ipv4-ippool"],
            "smaller than the pool's block size /26",
        ),
    ] {
        let error = failed(run_in(&etcd, state.path(), &args));
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));
}

fn pools_after_split(names: &[String]) {
    assert_eq!(
        names,
        ["split-default-ipv4-ippool-0", "split-default-ipv4-ippool-1"]
    );
}

#[test]
fn split_on_etcd_and_kubernetes() {
    let etcd = EtcdServer::start();
    let mut scenario = three_problems_scenario();
    scenario.datastore_ready = false;
    scenario.seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let out = ok(run_in(
        &etcd,
        state.path(),
        &[
            "ipam",
            "split",
            "2",
            "--name",
            "default-ipv4-ippool",
            "--dry-run",
        ],
    ));
    assert!(
        out.contains("would create IP pool `split-default-ipv4-ippool-0` with CIDR 10.66.0.0/17"),
        "{out}"
    );
    let out = ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "split", "2", "--cidr", "10.66.0.0/16"],
    ));
    assert!(
        out.contains("IP Pool default-ipv4-ippool was successfully split into 2 smaller pools."),
        "{out}"
    );
    assert!(
        out.contains("Created split-default-ipv4-ippool-1 with CIDR 10.66.128.0/17."),
        "{out}"
    );
    let pools: Vec<String> = etcd
        .get_prefix("/calico/resources/v3/projectcalico.org/ippools/")
        .into_iter()
        .map(|(key, _)| key.rsplit('/').next().unwrap().to_string())
        .collect();
    pools_after_split(&pools);
    let child = etcd_json(
        &etcd,
        "/calico/resources/v3/projectcalico.org/ippools/split-default-ipv4-ippool-0",
    );
    assert_eq!(child["spec"]["cidr"], "10.66.0.0/17");
    assert_eq!(child["spec"]["blockSize"], 26);
    assert_eq!(child["spec"]["vxlanMode"], "Always");
    assert!(etcd.get(BLOCK_KEY).is_some(), "blocks stay");
    // The figures now count under the child.
    let out = ok(etcd_netctl(&etcd, &["ipam", "show"]));
    assert!(out.contains("10.66.0.0/17"), "{out}");

    let server = KubeApiServer::start();
    three_problems_scenario().seed_kube(&server);
    ok(kube_netctl(&server, &["datastore", "lock"]));
    let out = ok(kube_netctl(
        &server,
        &["ipam", "split", "2", "--name", "default-ipv4-ippool"],
    ));
    assert!(
        out.contains("successfully split into 2 smaller pools"),
        "{out}"
    );
    pools_after_split(&server.names("crd.projectcalico.org/v1", "ippools"));
    assert!(
        server
            .get(
                "crd.projectcalico.org/v1",
                "ipamblocks",
                "",
                "10-66-12-0-26"
            )
            .is_some()
    );
}

#[test]
fn configure_writes_what_the_allocator_reads() {
    let etcd = EtcdServer::start();
    three_problems_scenario().seed_etcd(&etcd);
    let state = tempfile::tempdir().unwrap();
    let out = ok(run_in(
        &etcd,
        state.path(),
        &["ipam", "configure", "--strictaffinity=true", "--dry-run"],
    ));
    assert!(
        out.contains("would set StrictAffinity from false to true"),
        "{out}"
    );
    assert!(etcd.get("/calico/ipam/v2/config").is_none());
    let out = ok(run_in(
        &etcd,
        state.path(),
        &[
            "ipam",
            "configure",
            "--strictaffinity=true",
            "--max-blocks-per-host",
            "4",
        ],
    ));
    assert_eq!(
        out,
        "Successfully set StrictAffinity to: true\nSuccessfully set MaxBlocksPerHost to: 4\n"
    );
    assert_eq!(
        etcd.get("/calico/ipam/v2/config").unwrap(),
        r#"{"strict_affinity":true,"auto_allocate_blocks":true,"maxBlocksPerHost":4}"#
    );
    let out = ok(etcd_netctl(
        &etcd,
        &["ipam", "show", "--show-configuration"],
    ));
    assert!(
        out.contains("| StrictAffinity ") && out.contains("| true "),
        "{out}"
    );
    // v3.31 has no KubeVirt persistence; nothing is written.
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "configure", "--kubevirt-ip-persistence", "Disabled"],
    ));
    assert!(
        error.contains("KubeVirtVMAddressPersistence needs v3.32; the cluster runs v3.31.3"),
        "{error}"
    );
    let error = failed(run_in(
        &etcd,
        state.path(),
        &["ipam", "configure", "--kubevirt-ip-persistence", "Off"],
    ));
    assert!(
        error.contains("invalid value `Off` for --kubevirt-ip-persistence"),
        "{error}"
    );
    let error = failed(run_in(&etcd, state.path(), &["ipam", "configure"]));
    assert!(
        error.contains("at least one configuration option must be given"),
        "{error}"
    );

    let server = KubeApiServer::start();
    let mut scenario = three_problems_scenario();
    scenario.calico_version = "v3.32.1".into();
    scenario.seed_kube(&server);
    let out = ok(kube_netctl(
        &server,
        &["ipam", "configure", "--kubevirt-ip-persistence", "Disabled"],
    ));
    assert_eq!(
        out,
        "Successfully set KubeVirtVMAddressPersistence to: Disabled\n"
    );
    let config = server
        .get("crd.projectcalico.org/v1", "ipamconfigs", "", "default")
        .unwrap();
    assert_eq!(config["kind"], "IPAMConfig");
    assert_eq!(config["spec"]["kubeVirtVMAddressPersistence"], "Disabled");
    assert_eq!(config["spec"]["autoAllocateBlocks"], true);
}
