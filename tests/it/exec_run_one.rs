//! One-step plans (`Plan::single` + `Executor::run_one`), the path every mutating command takes,
//! against a real etcd: upstream's apply/label/patch/delete semantics and messages, and a dry-run
//! that leaves the datastore byte-identical.

use std::path::Path;
use std::sync::Arc;

use crate::exec_common::*;
use crate::support::EtcdServer;
use netctl::config::Environment;
use netctl::datastore::etcd::{EtcdStore, Timeouts};
use netctl::exec::actions::{ExistingPolicy, WriteSemantics};
use netctl::exec::lock::Holder;
use netctl::exec::{Executor, RunMode, RunOneOptions};
use netctl::plan::Plan;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn executor(etcd: &EtcdServer) -> Executor {
    let environment = Environment::from_pairs([
        ("DATASTORE_TYPE", "etcdv3".to_string()),
        ("ETCD_ENDPOINTS", etcd.endpoint()),
    ]);
    let config =
        netctl::config::load_with_default(None, Path::new("/nonexistent/netctl.cfg"), &environment)
            .unwrap();
    let store = EtcdStore::connect(&config.etcd().unwrap(), Timeouts::default())
        .await
        .unwrap();
    Executor::new(Arc::new(store), None, Holder::current())
}

async fn run(executor: &Executor, plan: &Plan, mode: RunMode) -> Result<String, String> {
    let mut transcript = Vec::new();
    executor
        .run_one(plan, mode, &RunOneOptions::default(), &mut transcript)
        .await
        .map(|outcome| match mode {
            RunMode::DryRun => text(&transcript),
            RunMode::Execute => outcome.summary,
        })
        .map_err(|error| format!("{:#}", anyhow::Error::new(error)))
}

fn label(key: &str, value: Option<&str>, overwrite: bool) -> Plan {
    let mut with = serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": key, "overwrite": overwrite});
    match value {
        Some(value) => with["value"] = serde_json::json!(value),
        None => with["remove"] = serde_json::json!(true),
    }
    Plan::single("label", "label h1", action("resource.label", with))
}

#[test]
fn label_follows_upstream_rules_and_messages() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    runtime().block_on(async {
        let executor = executor(&etcd).await;
        let execute = RunMode::Execute;
        assert_eq!(
            run(&executor, &label("tier", Some("web"), false), execute).await.unwrap(),
            "Successfully set label tier on hostendpoint h1"
        );
        // The same value again is an update, not a conflict.
        assert_eq!(
            run(&executor, &label("role", Some("edge"), false), execute).await.unwrap(),
            "Successfully updated label role on hostendpoint h1"
        );
        assert_eq!(
            run(&executor, &label("role", Some("core"), false), execute).await.unwrap_err(),
            "step `label` failed after 1 attempt(s): failed to update label of hostendpoint h1, key role is already present. please use '--overwrite' to set a new value."
        );
        assert_eq!(
            run(&executor, &label("role", Some("core"), true), execute).await.unwrap(),
            "Successfully updated label role on hostendpoint h1"
        );
        assert_eq!(
            run(&executor, &label("missing", None, false), execute).await.unwrap_err(),
            "step `label` failed after 1 attempt(s): cannot remove label of hostendpoint h1, key missing does not exist"
        );
        assert_eq!(
            run(&executor, &label("tier", None, false), execute).await.unwrap(),
            "Successfully removed label tier from hostendpoint h1"
        );
    });
    let stored: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{HOST_ENDPOINTS}h1")).unwrap()).unwrap();
    assert_eq!(
        stored["metadata"]["labels"],
        serde_json::json!({"role": "core"})
    );
    assert_eq!(stored["metadata"]["uid"], "u1", "the uid survives");
}

#[test]
fn apply_creates_then_updates_keeping_the_stored_identity() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let mut document = host_endpoint("h1");
    document["metadata"]["uid"] = serde_json::json!("forged");
    document["metadata"]["labels"] = serde_json::json!({"only": "this"});
    let apply = Plan::single(
        "apply",
        "apply h1 and h3",
        action(
            "resource.apply",
            serde_json::json!({"documents": [document, host_endpoint("h3")]}),
        ),
    );
    let revision_before = etcd.mod_revision(&format!("{HOST_ENDPOINTS}h1")).unwrap();
    runtime().block_on(async {
        let executor = executor(&etcd).await;
        assert_eq!(
            run(&executor, &apply, RunMode::Execute).await.unwrap(),
            "applied 2 resource(s) (HostEndpoint: 1 created, 1 configured)"
        );
    });
    let h1: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{HOST_ENDPOINTS}h1")).unwrap()).unwrap();
    assert_eq!(h1["metadata"]["uid"], "u1", "uid comes from the store");
    assert_eq!(h1["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
    assert_eq!(
        h1["metadata"]["labels"],
        serde_json::json!({"only": "this"})
    );
    assert_eq!(
        h1["spec"]["interfaceName"], "eth1",
        "the spec comes from the user"
    );
    assert!(etcd.mod_revision(&format!("{HOST_ENDPOINTS}h1")).unwrap() > revision_before);
    let h3: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{HOST_ENDPOINTS}h3")).unwrap()).unwrap();
    assert!(
        h3["metadata"]["uid"]
            .as_str()
            .is_some_and(|uid| uid.len() == 36)
    );
}

#[test]
fn patches_merge_or_apply_operations_and_keep_identity() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let patch = |patch: serde_json::Value, patch_type: &str| {
        Plan::single(
            "patch",
            "patch h1",
            action(
                "resource.patch",
                serde_json::json!({"kind": "HostEndpoint", "name": "h1", "patch": patch, "type": patch_type}),
            ),
        )
    };
    runtime().block_on(async {
        let executor = executor(&etcd).await;
        let merged = patch(serde_json::json!({"spec": {"interfaceName": "eth9"}}), "merge");
        assert_eq!(
            run(&executor, &merged, RunMode::Execute).await.unwrap(),
            "Successfully patched 1 'HostEndpoint' resource"
        );
        let operations = patch(
            serde_json::json!([{"op": "add", "path": "/spec/expectedIPs/-", "value": "10.0.0.7"}]),
            "json",
        );
        run(&executor, &operations, RunMode::Execute).await.unwrap();
        let rename = patch(
            serde_json::json!([{"op": "replace", "path": "/metadata/name", "value": "h9"}]),
            "json",
        );
        assert_eq!(
            run(&executor, &rename, RunMode::Execute).await.unwrap_err(),
            "step `patch` failed after 1 attempt(s): the patch would change the identity of HostEndpoint(h1) (kind, name or namespace)"
        );
    });
    let h1: serde_json::Value =
        serde_json::from_str(&etcd.get(&format!("{HOST_ENDPOINTS}h1")).unwrap()).unwrap();
    assert_eq!(h1["spec"]["interfaceName"], "eth9");
    assert_eq!(
        h1["spec"]["expectedIPs"],
        serde_json::json!(["10.0.0.1", "10.0.0.7"])
    );
}

#[test]
fn delete_skips_a_missing_resource_only_when_asked() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let delete = Plan::single(
        "delete",
        "delete h7",
        action(
            "resource.delete",
            serde_json::json!({"kind": "HostEndpoint", "name": "h7"}),
        ),
    );
    runtime().block_on(async {
        let executor = executor(&etcd).await;
        let mut transcript = Vec::new();
        let error = executor
            .run_one(&delete, RunMode::Execute, &RunOneOptions::default(), &mut transcript)
            .await
            .unwrap_err();
        assert_eq!(
            format!("{:#}", anyhow::Error::new(error)),
            "step `delete` failed after 1 attempt(s): nothing was deleted: resource does not exist: HostEndpoint(h7)"
        );
        let skip = RunOneOptions {
            semantics: WriteSemantics {
                delete_missing: ExistingPolicy::Skip,
                ..WriteSemantics::default()
            },
            journal: None,
        };
        let outcome = executor
            .run_one(&delete, RunMode::Execute, &skip, &mut transcript)
            .await
            .unwrap();
        assert_eq!(outcome.summary, "deleted nothing: HostEndpoint(h7) does not exist");
    });
}

#[test]
fn a_one_step_dry_run_changes_nothing_and_shows_the_change() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let before = etcd.dump_prefix_bytes("");
    let transcript = runtime().block_on(async {
        let executor = executor(&etcd).await;
        let mut transcript = String::new();
        for plan in [
            label("tier", Some("web"), false),
            Plan::single(
                "create",
                "create h2",
                action(
                    "resource.create",
                    serde_json::json!({"documents": [host_endpoint("h2")]}),
                ),
            ),
            Plan::single(
                "delete",
                "delete h1",
                action(
                    "resource.delete",
                    serde_json::json!({"kind": "HostEndpoint", "name": "h1"}),
                ),
            ),
        ] {
            transcript.push_str(&run(&executor, &plan, RunMode::DryRun).await.unwrap());
        }
        transcript
    });
    assert_eq!(before, etcd.dump_prefix_bytes(""));
    assert!(
        transcript.starts_with(
            "~ would update HostEndpoint(h1) (set label tier on hostendpoint h1):\n    + metadata.labels.tier: \"web\"\n+ would create HostEndpoint(h2):\n    + apiVersion: projectcalico.org/v3\n"
        ),
        "{transcript}"
    );
    assert!(
        transcript.contains("would create HostEndpoint(h2):"),
        "{transcript}"
    );
    assert!(
        transcript.contains("would delete HostEndpoint(h1)"),
        "{transcript}"
    );
}
