//! `netctl datastore migrate-policy-names` against real etcd: the default-tier policies v3.29–v3.31
//! stored as `default.<name>` move to their own names (one transaction each) and a second run
//! renames none; the dry run writes nothing; a policy whose own name another policy holds is
//! refused before anything is written, and one stored under both names with the same content loses
//! only its old key; an older cluster and the Kubernetes datastore are refused with the reason; the
//! `policy-names-v3` runbook's etcd step runs through `upgrade apply`.

use std::path::Path;

use serde_json::{Value, json};

use crate::exec_common::{Operator, text};
use crate::ipam_common::kube_netctl;
use crate::support::{EtcdServer, KubeApiServer, Netctl, Run, failed, ok};

const ROOT: &str = "/calico/resources/v3/projectcalico.org/";
const INFORMATION: &str = "/calico/resources/v3/projectcalico.org/clusterinformations/default";

/// ClusterInformation as calico-node writes it, at `version`.
fn information(version: &str) -> String {
    json!({"kind": "ClusterInformation", "apiVersion": "projectcalico.org/v3",
        "metadata": {"name": "default", "uid": "9c1b7a52-1f0e-4d3c-8b6a-5e4d3c2b1a09",
            "creationTimestamp": "2026-02-01T08:00:00Z"},
        "spec": {"clusterGUID": "5a0c1e7bd3f24a6e9b8c7d6e5f4a3b2c", "clusterType": "bgp",
            "calicoVersion": version, "datastoreReady": true}})
    .to_string()
}

/// A default-tier policy as v3.29–v3.31 stored it: key and `metadata.name` `default.<name>`, the
/// name in the `projectcalico.org/metadata` annotation.
fn tiered(kind: &str, namespace: Option<&str>, name: &str, selector: &str) -> String {
    let mut metadata = json!({"name": format!("default.{name}"),
        "uid": format!("0f6d3c4e-8b1a-4f7e-9c2d-{:012x}", name.len()),
        "creationTimestamp": "2026-03-01T10:00:00Z",
        "annotations": {"projectcalico.org/metadata": json!({"name": name}).to_string()}});
    if let Some(namespace) = namespace {
        metadata["namespace"] = namespace.into();
    }
    json!({"kind": kind, "apiVersion": "projectcalico.org/v3", "metadata": metadata,
        "spec": {"tier": "default", "order": 100, "selector": selector, "types": ["Ingress"]}})
    .to_string()
}

/// A default-tier policy as v3.32 stores it: under its own name, the annotation kept.
fn named(name: &str, selector: &str) -> String {
    json!({"kind": "GlobalNetworkPolicy", "apiVersion": "projectcalico.org/v3",
        "metadata": {"name": name, "uid": "6a2e9f1b-3c4d-4e5f-8a7b-9c0d1e2f3a4b",
            "creationTimestamp": "2026-07-01T10:00:00Z",
            "annotations": {"projectcalico.org/metadata": json!({"name": name}).to_string()}},
        "spec": {"tier": "default", "order": 100, "selector": selector, "types": ["Ingress"]}})
    .to_string()
}

fn gnp(name: &str) -> String {
    format!("{ROOT}globalnetworkpolicies/{name}")
}

/// Three misnamed policies of three kinds, one already named, one of another tier.
fn seed(etcd: &EtcdServer, version: &str) {
    etcd.put(INFORMATION, information(version));
    etcd.put(
        &gnp("default.allow-dns"),
        tiered("GlobalNetworkPolicy", None, "allow-dns", "all()"),
    );
    etcd.put(
        &format!("{ROOT}networkpolicies/prod/default.db-ingress"),
        tiered("NetworkPolicy", Some("prod"), "db-ingress", "role == 'db'"),
    );
    etcd.put(
        &format!("{ROOT}stagedglobalnetworkpolicies/default.trial"),
        tiered("StagedGlobalNetworkPolicy", None, "trial", "all()"),
    );
    etcd.put(&gnp("allow-all"), named("allow-all", "all()"));
    // Another tier's names always carried the tier: left alone.
    etcd.put(
        &gnp("security.block"),
        json!({"kind": "GlobalNetworkPolicy", "apiVersion": "projectcalico.org/v3",
            "metadata": {"name": "security.block"},
            "spec": {"tier": "security", "selector": "all()"}})
        .to_string(),
    );
}

fn run(etcd: &EtcdServer, state: &Path, args: &[&str]) -> Run {
    Netctl::new()
        .config_file(&etcd.netctl_config_yaml())
        .args(args)
        .args(["--state-dir", state.to_str().unwrap()])
        .run()
}

fn keys(etcd: &EtcdServer) -> Vec<String> {
    etcd.entries(ROOT)
        .into_iter()
        .map(|entry| entry.key_str())
        .filter(|key| !key.contains("clusterinformations"))
        .collect()
}

#[test]
fn renames_the_default_prefixed_keys_and_the_second_run_renames_none() {
    let etcd = EtcdServer::start();
    seed(&etcd, "v3.32.1");
    let state = tempfile::tempdir().unwrap();

    // The dry run lists the moves and writes nothing.
    let before = etcd.dump_prefix_bytes("/calico/");
    let planned = ok(run(
        &etcd,
        state.path(),
        &["datastore", "migrate-policy-names", "--dry-run"],
    ));
    for line in [
        "would rename `GlobalNetworkPolicy default.allow-dns` to `GlobalNetworkPolicy allow-dns`",
        "would rename `NetworkPolicy prod/default.db-ingress` to `NetworkPolicy prod/db-ingress`",
        "would rename `StagedGlobalNetworkPolicy default.trial` to `StagedGlobalNetworkPolicy trial`",
        "would rename 3 policies (5 examined)",
    ] {
        assert!(planned.contains(line), "{line}\n{planned}");
    }
    assert_eq!(etcd.dump_prefix_bytes("/calico/"), before);
    assert!(!state.path().join("journal.jsonl").exists());

    let moved = ok(run(
        &etcd,
        state.path(),
        &["datastore", "migrate-policy-names"],
    ));
    assert!(
        moved.contains("Renamed 3 policies from `default.<name>` to their own name (5 examined)."),
        "{moved}"
    );
    assert_eq!(
        keys(&etcd),
        [
            gnp("allow-all"),
            gnp("allow-dns"),
            gnp("security.block"),
            format!("{ROOT}networkpolicies/prod/db-ingress"),
            format!("{ROOT}stagedglobalnetworkpolicies/trial"),
        ]
    );
    // Stored as v3.32 stores it: the name itself, the annotation, the rest as it was.
    let stored: Value = serde_json::from_str(&etcd.get(&gnp("allow-dns")).unwrap()).unwrap();
    assert_eq!(stored["metadata"]["name"], "allow-dns");
    assert_eq!(
        stored["metadata"]["annotations"]["projectcalico.org/metadata"],
        r#"{"name":"allow-dns"}"#
    );
    assert_eq!(
        stored["metadata"]["uid"],
        "0f6d3c4e-8b1a-4f7e-9c2d-000000000009"
    );
    assert_eq!(stored["spec"]["selector"], "all()");
    let listed = ok(Netctl::new()
        .config_file(&etcd.netctl_config_yaml())
        .args(["get", "networkpolicy", "-n", "prod", "-o", "name"])
        .run());
    assert!(listed.contains("db-ingress"), "{listed}");
    let journal = std::fs::read_to_string(state.path().join("journal.jsonl")).unwrap();
    assert!(
        journal.contains("datastore.migrate-policy-names"),
        "{journal}"
    );

    // Idempotent: nothing left to move.
    let again = ok(run(
        &etcd,
        state.path(),
        &["datastore", "migrate-policy-names"],
    ));
    assert!(
        again.contains("Renamed 0 policies from `default.<name>` to their own name (5 examined)."),
        "{again}"
    );
    assert_eq!(keys(&etcd).len(), 5);
}

#[test]
fn a_taken_name_is_refused_before_any_write_and_a_duplicate_loses_its_old_key() {
    let etcd = EtcdServer::start();
    seed(&etcd, "v3.32.0");
    // `web` is stored under both names with different selectors; `dns` with the same policy (a
    // move cut short between upstream's create and delete).
    etcd.put(
        &gnp("default.web"),
        tiered("GlobalNetworkPolicy", None, "web", "role == 'web'"),
    );
    etcd.put(&gnp("web"), named("web", "role == 'frontend'"));
    etcd.put(
        &gnp("default.dns"),
        tiered("GlobalNetworkPolicy", None, "dns", "all()"),
    );
    etcd.put(&gnp("dns"), named("dns", "all()"));
    let state = tempfile::tempdir().unwrap();

    let before = etcd.dump_prefix_bytes("/calico/");
    let refused = failed(run(
        &etcd,
        state.path(),
        &["datastore", "migrate-policy-names"],
    ));
    assert!(
        refused.contains("1 policy cannot be moved to its own name: another policy is stored under it (`GlobalNetworkPolicy default.web` and `GlobalNetworkPolicy web` at revision "),
        "{refused}"
    );
    assert!(refused.contains("hint: compare the two"), "{refused}");
    assert_eq!(
        etcd.dump_prefix_bytes("/calico/"),
        before,
        "nothing written"
    );

    // The operator keeps the newer one; then everything moves.
    assert!(etcd.delete(&gnp("default.web")));
    let moved = ok(run(
        &etcd,
        state.path(),
        &["datastore", "migrate-policy-names"],
    ));
    assert!(
        moved.contains("delete `GlobalNetworkPolicy default.dns`: `GlobalNetworkPolicy dns` holds the same policy already"),
        "{moved}"
    );
    assert!(
        moved.contains("Renamed 4 policies from `default.<name>` to their own name (8 examined; 1 already stored under both names, the old key deleted)."),
        "{moved}"
    );
    assert!(etcd.get(&gnp("default.dns")).is_none());
    let dns: Value = serde_json::from_str(&etcd.get(&gnp("dns")).unwrap()).unwrap();
    assert_eq!(
        dns["metadata"]["uid"],
        "6a2e9f1b-3c4d-4e5f-8a7b-9c0d1e2f3a4b"
    );
}

#[test]
fn refused_before_v3_32_and_on_kubernetes() {
    let etcd = EtcdServer::start();
    seed(&etcd, "v3.31.4");
    let state = tempfile::tempdir().unwrap();
    let before = etcd.dump_prefix_bytes("/calico/");
    let refused = failed(run(
        &etcd,
        state.path(),
        &["datastore", "migrate-policy-names"],
    ));
    assert!(
        refused.contains(
            "the cluster runs `v3.31.4`: releases before v3.32 look policies up by `default.<name>`"
        ),
        "{refused}"
    );
    assert!(refused.contains("`--allow-version-mismatch`"), "{refused}");
    assert_eq!(etcd.dump_prefix_bytes("/calico/"), before);
    // Told that every component runs v3.32, it moves them.
    let moved = ok(run(
        &etcd,
        state.path(),
        &[
            "datastore",
            "migrate-policy-names",
            "--allow-version-mismatch",
        ],
    ));
    assert!(moved.contains("Renamed 3 policies"), "{moved}");

    let server = KubeApiServer::start();
    let refused = failed(kube_netctl(
        &server,
        &["datastore", "migrate-policy-names", "--dry-run"],
    ));
    assert!(
        refused.contains("the `kubernetes` datastore's policy names are moved by kube-controllers"),
        "{refused}"
    );
    assert!(
        refused.contains("hint: v3.32's kube-controllers moves them"),
        "{refused}"
    );
}

/// The `policy-names-v3` runbook's etcd step, as `upgrade plan` makes it from the built-in
/// runbooks, run by `upgrade apply` on its own.
#[test]
fn the_runbook_step_moves_them_in_an_upgrade_run() {
    let etcd = EtcdServer::start();
    seed(&etcd, "v3.32.1");
    let operator = Operator::new(&etcd);
    let planned = operator.run(
        &[
            "upgrade",
            "plan",
            "--from",
            "v3.31.4",
            "--to",
            "v3.32",
            "--datastore-type",
            "etcdv3",
            "--install-method",
            "manifest",
            "--offline",
            "--set",
            "etcd_endpoints=https://10.0.0.1:2379",
            "-o",
            "json",
        ],
        &[],
    );
    assert!(planned.status.success(), "{}", text(&planned.stderr));
    let plan: Value = serde_json::from_slice(&planned.stdout).unwrap();
    let step = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["id"] == "policy-names-v3/move-policy-names")
        .expect("the etcd plan moves the policy names");
    assert_eq!(step["action"], "datastore.migrate-policy-names");
    assert!(
        !plan["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|step| step["id"] == "policy-names-v3/confirm-policy-names-moved")
    );

    // That step alone, in a run against this datastore (installed v3.32.1 by now).
    let action = netctl::plan::Action::from_parts(
        step["action"].as_str().unwrap(),
        step.get("with").cloned().unwrap_or(Value::Null),
    )
    .unwrap();
    let facts = netctl::plan::Facts::assemble(
        &netctl::plan::DiscoveredFacts {
            installed_version: Some(netctl::plan::Release::new(3, 32, 1)),
            datastore_type: Some(netctl::datastore::DatastoreType::EtcdV3),
            all_interfaces_host_endpoints: Some(vec![]),
            ..Default::default()
        },
        &netctl::plan::FactOverrides {
            install_method: Some(netctl::plan::InstallMethod::Manifest),
            ..Default::default()
        },
    )
    .unwrap();
    let mut run_step = netctl::plan::PlannedStep::new(
        "policy-names-v3/move-policy-names",
        "policy-names-v3",
        netctl::plan::Phase::PostUpgrade,
        action,
        step["description"].as_str().unwrap(),
        "crosses `policy-names-v3`",
    );
    run_step.needs.clear();
    let plan = netctl::plan::Plan::new(
        "upgrade",
        netctl::plan::Release::new(3, 32, 1),
        netctl::plan::Release::new(3, 32, 1),
        facts,
        vec![run_step],
    );
    let file = operator.write_plan(&plan);
    let applied = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            file.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    assert!(etcd.get(&gnp("default.allow-dns")).is_none());
    assert!(etcd.get(&gnp("allow-dns")).is_some());
    assert!(
        etcd.get(&format!("{ROOT}networkpolicies/prod/db-ingress"))
            .is_some()
    );
}
