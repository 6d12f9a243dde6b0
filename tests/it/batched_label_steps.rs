//! A step that labels many resources (`resource.label-each`, what the planner makes of a `foreach`
//! of `resource.label`) against a real etcd: its items go in transactions of at most 128 (127, 128
//! and 129 items), the checkpoint records after each batch how many items are done, a run killed
//! with SIGKILL in the middle of the step resumes from there without labelling anything twice or
//! missing one, and a resource changed by someone else between the batch's read and its write is
//! the only one read again.

use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;

use crate::exec_common::*;
use crate::support::{self, EtcdServer};
use netctl::datastore::testing::TestStore;
use netctl::exec::RunMode;
use netctl::exec::actions::WriteSemantics;
use netctl::exec::actions::resource::label_each::{LabelTally, label_batch};
use netctl::plan::action::ResourceLabelEach;
use netctl::plan::{Action, Plan};
use netctl::resource::Kind;

const STEP: &str = "pre/label-all";
const LABEL: &str = "host-endpoint-upgrade";

fn names(count: usize) -> Vec<String> {
    (0..count).map(|index| format!("h-{index:05}")).collect()
}

/// `count` host endpoints `h-00000`, ... written by `netctl apply`.
fn seed_host_endpoints(operator: &Operator, count: usize) {
    let documents: String = names(count)
        .iter()
        .map(|name| {
            format!(
                "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: {name}\n  labels:\n    role: edge\nspec:\n  node: n1\n  interfaceName: eth0\n"
            )
        })
        .collect();
    let file = operator.netctl.write_file("heps.yaml", documents);
    let applied = operator.run(&["apply", "-f", file.to_str().unwrap()], &[]);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
}

fn label_each(count: usize) -> ResourceLabelEach {
    ResourceLabelEach {
        kind: Kind::HostEndpoint,
        namespace: None,
        key: LABEL.to_string(),
        value: Some(String::new()),
        overwrite: true,
        remove: false,
        names: names(count),
    }
}

/// One batched label step over `count` host endpoints, verified by its labels.
fn label_plan(count: usize) -> Plan {
    let mut label = step(
        STEP,
        "Label every host endpoint",
        Action::ResourceLabelEach(label_each(count)),
    );
    label.verify = Some(Action::ResourceLabelEach(label_each(count)));
    plan(vec![label])
}

fn apply(operator: &Operator, plan_file: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["upgrade", "apply", "--plan", plan_file.to_str().unwrap()];
    args.extend_from_slice(extra);
    operator.run(&args, &[])
}

/// The host endpoints as etcd stores them: (name, has the label, version = writes of the key).
fn stored(etcd: &EtcdServer) -> Vec<(String, bool, i64, i64)> {
    etcd.entries(HOST_ENDPOINTS)
        .into_iter()
        .map(|entry| {
            let value: serde_json::Value = serde_json::from_slice(&entry.value).unwrap();
            let labelled = value["metadata"]["labels"][LABEL] == "";
            let name = entry.key_str()[HOST_ENDPOINTS.len()..].to_string();
            (name, labelled, entry.version, entry.mod_revision)
        })
        .collect()
}

/// The `items_done` of each transition of the step in the local log, in order.
fn logged_items_done(operator: &Operator) -> Vec<u64> {
    let log = std::fs::read_to_string(operator.state_dir().join("checkpoint.log")).unwrap();
    log.lines()
        .filter_map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).ok()?;
            record.pointer("/step/record/items_done")?.as_u64()
        })
        .collect()
}

#[test]
fn batches_hold_at_most_128_items_at_127_128_and_129() {
    let etcd = EtcdServer::start();
    for (count, batches) in [(127, 1), (128, 1), (129, 2)] {
        etcd.delete_prefix("/calico/");
        seed(&etcd);
        etcd.delete(&format!("{HOST_ENDPOINTS}h1"));
        let operator = Operator::new(&etcd);
        seed_host_endpoints(&operator, count);
        let plan_file = operator.write_plan(&label_plan(count));
        let ran = apply(&operator, &plan_file, &[]);
        assert!(ran.status.success(), "{count}: {}", text(&ran.stderr));

        let heps = stored(&etcd);
        assert_eq!(heps.len(), count);
        assert!(
            heps.iter()
                .all(|(_, labelled, version, _)| *labelled && *version == 2)
        );
        // One transaction per batch: the labelled host endpoints share one revision per batch.
        let revisions: std::collections::BTreeSet<i64> =
            heps.iter().map(|(_, _, _, revision)| *revision).collect();
        assert_eq!(revisions.len(), batches, "{count} items");
        let first_batch = heps.iter().filter(|hep| hep.3 == heps[0].3).count();
        assert_eq!(first_batch, count.min(128), "{count} items");

        let status = status_json(&operator);
        let record = &status["checkpoint"]["steps"][0];
        assert_eq!(record["state"], "succeeded", "{record}");
        assert_eq!(record["items_done"], count, "{record}");
        assert_eq!(
            record["summary"],
            format!("set label {LABEL} on {count} HostEndpoint(s); 0 already had it")
        );
        let mut expected: Vec<u64> = (1..=batches as u64)
            .map(|batch| (batch * 128).min(count as u64))
            .collect();
        // The step's last record (succeeded) carries the count too.
        expected.push(count as u64);
        let logged = logged_items_done(&operator);
        assert_eq!(
            logged[logged.len() - expected.len()..],
            expected[..],
            "{count}"
        );
    }
}

#[test]
fn a_run_killed_inside_a_batched_label_step_resumes_without_doubling_or_losing_a_label() {
    const COUNT: usize = 300; // batches of 128, 128 and 44
    let etcd = EtcdServer::start();
    // Killed around the second batch (before its transaction, or after it and before the checkpoint
    // records it), and after the last batch's transaction.
    for (batch, when) in [(2, "before"), (2, "after"), (3, "after")] {
        etcd.delete_prefix("/calico/");
        seed(&etcd);
        let operator = Operator::new(&etcd);
        seed_host_endpoints(&operator, COUNT);
        let plan_file = operator.write_plan(&label_plan(COUNT));
        let kill_point = format!("{STEP}@{batch}:{when}");
        let done_before = 128 * (batch - 1);
        let crashed = operator.run(
            &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
            &[("NETCTL_TEST_CRASH_AFTER", &kill_point)],
        );
        assert_eq!(
            crashed.status.signal(),
            Some(9),
            "{kill_point}: {}",
            text(&crashed.stderr)
        );

        // The checkpoint is readable, here and from the datastore mirror: the step is running with
        // the batches before the one killed recorded.
        for status in [status_json(&operator), status_json(&Operator::new(&etcd))] {
            let record = &status["checkpoint"]["steps"][0];
            assert_eq!(record["state"], "running", "{kill_point}: {record}");
            assert_eq!(record["items_done"], done_before, "{kill_point}: {record}");
            assert_eq!(
                record["summary"],
                format!("{done_before} of 300 items done")
            );
        }
        let labelled = stored(&etcd).iter().filter(|hep| hep.1).count();
        let expected = match when {
            "before" => done_before,
            _ => (done_before + 128).min(COUNT),
        };
        assert_eq!(labelled, expected, "{kill_point}");

        let lock_id = status_json(&operator)["lock"]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let unlocked = operator.run(&["upgrade", "unlock", &lock_id], &[]);
        assert!(unlocked.status.success(), "{}", text(&unlocked.stderr));
        let resumed = operator.run(&["upgrade", "apply", "--resume"], &[]);
        assert!(
            resumed.status.success(),
            "{kill_point}: {}",
            text(&resumed.stderr)
        );

        // Every label is there, each host endpoint written once (created, then labelled).
        let heps = stored(&etcd);
        assert_eq!(heps.len(), COUNT + 1, "the seeded h1 as well");
        for (name, labelled, version, _) in heps.iter().filter(|hep| hep.0.starts_with("h-")) {
            assert!(labelled, "{kill_point}: {name} lost its label");
            assert_eq!(
                *version,
                2,
                "{kill_point}: {name} was written {} times",
                version - 1
            );
        }
        let status = status_json(&operator);
        let record = &status["checkpoint"]["steps"][0];
        assert_eq!(record["state"], "succeeded", "{record}");
        assert_eq!(record["items_done"], COUNT);
        // The resume re-read the batch in flight: written when the kill came before it, found in
        // place (not written again) when it came after.
        if batch == 3 {
            // Every label was in place: the step is recorded done without running again.
            assert_eq!(
                record["summary"], "interrupted; its postcondition holds, so not run again",
                "{kill_point}"
            );
            continue;
        }
        let (set, already) = if when == "before" {
            (172, 0)
        } else {
            (44, 128)
        };
        assert_eq!(
            record["summary"],
            format!(
                "set label {LABEL} on {set} HostEndpoint(s); {already} already had it; 128 item(s) were done before the run was interrupted"
            ),
            "{kill_point}"
        );
    }
}

#[test]
fn a_conflict_inside_a_batch_re_reads_only_that_resource() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    seed_host_endpoints(&operator, 128);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let before = etcd.revision();
    let (done, keys_read) = runtime.block_on(async {
        // Another writer changes one resource after the batch read it and before its
        // transaction; the store counts the keys read.
        let store = TestStore::over(Arc::new(etcd.connect().await));
        support::another_writer_before_the_first_batch(
            &store,
            &etcd,
            &format!("{HOST_ENDPOINTS}h-00050"),
            |value| value["metadata"]["labels"]["owner"] = "someone-else".into(),
        );
        let each = label_each(128);
        let done = label_batch(
            &store,
            &each,
            &each.names,
            WriteSemantics::default(),
            RunMode::Execute,
            &netctl::release::ApiRelease::newest(),
        )
        .await
        .unwrap();
        (done, store.keys_read())
    });
    assert_eq!(
        done.tally,
        LabelTally {
            changed: 128,
            unchanged: 0
        }
    );
    // The batch's one read of 128 keys; the refused transaction named the victim as stored now, so
    // nothing else was read again.
    assert!(keys_read <= 129, "{keys_read} keys read");
    // The other writer's put, the refused transaction (no revision), then one transaction.
    assert_eq!(etcd.revision() - before, 2);
    let victim: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{HOST_ENDPOINTS}h-00050")).unwrap()).unwrap();
    assert_eq!(
        victim["metadata"]["labels"]["owner"], "someone-else",
        "their change stays"
    );
    assert_eq!(victim["metadata"]["labels"][LABEL], "");
    assert!(
        stored(&etcd)
            .iter()
            .filter(|hep| hep.0.starts_with("h-"))
            .all(|hep| hep.1)
    );
}
