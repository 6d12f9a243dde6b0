//! Release lines against a real etcd: documents are validated for the release the cluster runs
//! (ClusterInformation `calicoVersion`) or `--release`, in both directions (a field of a later line
//! refused with the release it needs, a field a later line removed still accepted on the lines
//! that have it), and policies of the default tier are found under either etcd key, written in the
//! cluster's layout and never stored twice. Stored values are written in the exact JSON shapes
//! upstream's etcd backend produces for each line.

use crate::support::snapshot::netctl_snapshot;
use crate::support::{EtcdServer, Netctl, ok};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";

/// ClusterInformation as the node agent writes it, naming `version`.
fn cluster_runs(etcd: &EtcdServer, version: &str) {
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        format!(
            r#"{{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{{"name":"default","uid":"4b1fbc3e-2a55-4e0c-9d8a-0c3a7c0e2f11","creationTimestamp":"2026-01-01T00:00:00Z"}},"spec":{{"clusterGUID":"1d4a0e6c7a2b4f0e9b3c5d7e8f901234","clusterType":"typha,kdd,k8s,operator,bgp","calicoVersion":"{version}","datastoreReady":true}}}}"#
        ),
    );
}

const PEER_WITH_NEXT_HOP_MODE: &str = "apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: rack1-tor}
spec: {peerIP: 10.0.0.1, asNumber: 64512, nextHopMode: Self}
";

const FELIX_WITH_LOCK_TIMEOUT: &str = "apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {iptablesLockTimeout: 10s}
";

const STAGED_POLICY: &str = "apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: trial, namespace: prod}
spec: {stagedAction: Set, selector: all(), ingress: [{action: Allow}]}
";

const NAMED_PORT_WITHOUT_PROTOCOL: &str = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web}
spec:
  selector: all()
  ingress: [{action: Allow, destination: {ports: [http]}}]
";

#[test]
fn a_field_of_a_later_line_is_refused_with_the_release_it_needs_and_nothing_is_written() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.29.4");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(PEER_WITH_NEXT_HOP_MODE)
            .run()
    );
    assert!(etcd.get(&format!("{ROOT}/bgppeers/rack1-tor")).is_none());

    cluster_runs(&etcd, "v3.30.2");
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(PEER_WITH_NEXT_HOP_MODE)
        .run());
    let stored = etcd
        .get_json(&format!("{ROOT}/bgppeers/rack1-tor"))
        .unwrap();
    assert_eq!(stored["spec"]["nextHopMode"], "Self");
}

#[test]
fn a_field_a_later_line_removed_is_accepted_where_the_line_still_has_it() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.31.7");
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(FELIX_WITH_LOCK_TIMEOUT)
        .run());
    let stored = etcd
        .get_json(&format!("{ROOT}/felixconfigurations/default"))
        .unwrap();
    assert_eq!(stored["spec"]["iptablesLockTimeout"], "10s");

    cluster_runs(&etcd, "v3.32.1");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(FELIX_WITH_LOCK_TIMEOUT)
            .run()
    );
}

#[test]
fn kinds_and_rules_follow_the_line_and_a_dry_run_may_name_another() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.29.7");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(STAGED_POLICY)
            .run()
    );
    // Named ports without a protocol: v3.32's rule.
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(NAMED_PORT_WITHOUT_PROTOCOL)
            .run()
    );
    // `--release` with `--dry-run` rehearses for another line; nothing is written.
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-", "--dry-run", "--release", "v3.32"])
            .stdin(NAMED_PORT_WITHOUT_PROTOCOL)
            .run()
    );
    assert!(
        etcd.get_prefix(&format!("{ROOT}/globalnetworkpolicies/"))
            .is_empty()
    );
    // A real write follows the cluster, never a flag.
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-", "--release", "v3.32"])
            .stdin(NAMED_PORT_WITHOUT_PROTOCOL)
            .run()
    );
    // `get --release` refuses a kind that line lacks.
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["get", "snp", "--release", "v3.29"])
            .run()
    );
    ok(Netctl::etcd(&etcd)
        .args(["get", "snp", "--release", "v3.30", "-A"])
        .run());
}

#[test]
fn validate_follows_the_newest_line_offline_and_any_known_line_on_request() {
    ok(Netctl::new()
        .args(["validate", "-f", "-"])
        .stdin(PEER_WITH_NEXT_HOP_MODE)
        .run());
    netctl_snapshot!(
        Netctl::new()
            .args(["validate", "-f", "-", "--release", "v3.30.1"])
            .stdin(PEER_WITH_NEXT_HOP_MODE)
            .run()
    );
    ok(Netctl::new()
        .args(["validate", "-f", "-", "--release", "v3.31"])
        .stdin(FELIX_WITH_LOCK_TIMEOUT)
        .run());
    netctl_snapshot!(
        Netctl::new()
            .args(["validate", "-f", "-"])
            .stdin(FELIX_WITH_LOCK_TIMEOUT)
            .run()
    );
    let unknown = Netctl::new()
        .args(["validate", "-f", "-", "--release", "v3.26"])
        .stdin(STAGED_POLICY)
        .run();
    assert_eq!(unknown.code, Some(1));
    assert!(
        unknown.stderr.contains("v3.27 … v3.32"),
        "{}",
        unknown.stderr
    );
}

// ---- policy keys ------------------------------------------------------------------------------

const GNP: &str = "globalnetworkpolicies";

/// `allow-dns` as calicoctl v3.29.4 – v3.31.7 stores it (key `default.allow-dns`).
const TIERED_VALUE: &str = r#"{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"default.allow-dns","uid":"0f6d3c4e-8b1a-4f7e-9c2d-3a5b7c9e1f20","creationTimestamp":"2026-03-01T10:00:00Z","annotations":{"projectcalico.org/metadata":"{\"name\":\"allow-dns\"}"}},"spec":{"egress":[{"action":"Allow","protocol":"UDP","source":{},"destination":{"ports":[53]}}],"selector":"all()","types":["Egress"]}}"#;

/// `allow-dns` as calicoctl v3.32 stores it (key `allow-dns`).
const NAMED_VALUE: &str = r#"{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-dns","uid":"6a2e9f1b-3c4d-4e5f-8a7b-9c0d1e2f3a4b","creationTimestamp":"2026-07-01T10:00:00Z","labels":{"projectcalico.org/tier":"default"},"annotations":{"projectcalico.org/metadata":"{\"name\":\"allow-dns\"}"}},"spec":{"tier":"default","egress":[{"action":"Allow","protocol":"UDP","destination":{"ports":[53]}}],"selector":"all()","types":["Egress"]}}"#;

/// `allow-dns` as calicoctl v3.28 and earlier store it (key `allow-dns`, no annotation).
const UNTIERED_VALUE: &str = r#"{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-dns","uid":"9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","creationTimestamp":"2025-01-01T10:00:00Z"},"spec":{"egress":[{"action":"Allow","protocol":"UDP","source":{},"destination":{"ports":[53]}}],"selector":"all()","types":["Egress"]}}"#;

const ALLOW_DNS: &str = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-dns}
spec:
  selector: all()
  egress: [{action: Allow, protocol: UDP, destination: {ports: [53, 5353]}}]
";

fn policy_keys(etcd: &EtcdServer) -> Vec<String> {
    etcd.get_prefix(&format!("{ROOT}/{GNP}/"))
        .into_iter()
        .map(|(key, _)| {
            key.trim_start_matches(&format!("{ROOT}/{GNP}/"))
                .to_string()
        })
        .collect()
}

/// get by name, apply (updated in place under the line's key, uid kept), delete: one key at every
/// point. `stored_at` is the key the value starts under, `written_at` the cluster's layout.
fn policy_life_cycle(version: &str, value: &str, stored_at: &str, written_at: &str) {
    // Named per case: the four tests share this function, so insta's numbering by function name
    // would depend on which test ran first.
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_suffix(format!("{version}-{stored_at}"));
    settings.bind(|| {
        let etcd = EtcdServer::start();
        cluster_runs(&etcd, version);
        etcd.put(&format!("{ROOT}/{GNP}/{stored_at}"), value);
        let uid =
            serde_json::from_str::<serde_json::Value>(value).unwrap()["metadata"]["uid"].clone();

        netctl_snapshot!(
            "allow_dns_stored",
            Netctl::etcd(&etcd)
                .args(["get", "gnp", "allow-dns", "-o", "yaml"])
                .run()
        );
        assert!(ok(Netctl::etcd(&etcd).args(["get", "gnp"]).run()).contains("allow-dns"));

        ok(Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(ALLOW_DNS)
            .run());
        assert_eq!(policy_keys(&etcd), [written_at], "{version}");
        let stored = etcd
            .get_json(&format!("{ROOT}/{GNP}/{written_at}"))
            .unwrap();
        assert_eq!(
            stored["metadata"]["uid"], uid,
            "{version}: updated in place"
        );
        assert_eq!(
            stored["spec"]["egress"][0]["destination"]["ports"],
            serde_json::json!([53, 5353])
        );
        let listed = ok(Netctl::etcd(&etcd).args(["get", "gnp", "-o", "name"]).run());
        assert_eq!(listed.lines().count(), 1, "{version}: {listed}");

        ok(Netctl::etcd(&etcd)
            .args(["delete", "gnp", "allow-dns"])
            .run());
        assert!(policy_keys(&etcd).is_empty(), "{version}");
        netctl_snapshot!(
            "allow_dns_deleted",
            Netctl::etcd(&etcd).args(["get", "gnp", "allow-dns"]).run()
        );
    });
}

#[test]
fn a_v3_32_key_is_found_updated_in_place_and_deleted() {
    policy_life_cycle("v3.32.1", NAMED_VALUE, "allow-dns", "allow-dns");
}

#[test]
fn a_v3_31_key_is_found_and_moved_to_the_v3_32_key_on_a_v3_32_cluster() {
    policy_life_cycle("v3.32.1", TIERED_VALUE, "default.allow-dns", "allow-dns");
}

#[test]
fn a_v3_31_key_stays_where_it_is_on_a_v3_31_cluster() {
    policy_life_cycle(
        "v3.31.7",
        TIERED_VALUE,
        "default.allow-dns",
        "default.allow-dns",
    );
}

#[test]
fn a_v3_28_key_is_found_on_a_v3_30_cluster_and_moved_to_the_tiered_key() {
    policy_life_cycle("v3.30.7", UNTIERED_VALUE, "allow-dns", "default.allow-dns");
}

#[test]
fn a_v3_32_key_on_a_cluster_not_yet_reporting_its_version_is_not_stored_twice() {
    // The issue's bug: the plain key was invisible to `get` and `apply` wrote a second key.
    let etcd = EtcdServer::start();
    etcd.put(&format!("{ROOT}/{GNP}/allow-dns"), NAMED_VALUE);
    ok(Netctl::etcd(&etcd).args(["get", "gnp", "allow-dns"]).run());
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(ALLOW_DNS)
        .run());
    assert_eq!(policy_keys(&etcd).len(), 1, "{:?}", policy_keys(&etcd));
}

#[test]
fn writes_use_the_layout_of_the_clusters_line() {
    for (version, key, annotated) in [
        ("v3.28.5", "allow-dns", false),
        ("v3.29.7", "default.allow-dns", true),
        ("v3.31.7", "default.allow-dns", true),
        ("v3.32.1", "allow-dns", true),
    ] {
        let etcd = EtcdServer::start();
        cluster_runs(&etcd, version);
        ok(Netctl::etcd(&etcd)
            .args(["create", "-f", "-"])
            .stdin(ALLOW_DNS)
            .run());
        assert_eq!(policy_keys(&etcd), [key], "{version}");
        let stored = etcd.get_json(&format!("{ROOT}/{GNP}/{key}")).unwrap();
        assert_eq!(stored["metadata"]["name"], key, "{version}");
        assert_eq!(
            stored["metadata"]["annotations"]["projectcalico.org/metadata"].is_string(),
            annotated,
            "{version}: {stored}"
        );
    }
}

#[test]
fn create_is_refused_when_the_other_key_holds_the_policy() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.32.1");
    etcd.put(&format!("{ROOT}/{GNP}/default.allow-dns"), TIERED_VALUE);
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["create", "-f", "-"])
            .stdin(ALLOW_DNS)
            .run()
    );
    assert_eq!(policy_keys(&etcd), ["default.allow-dns"]);
}

#[test]
fn delete_removes_both_keys_while_an_upgrade_moves_them() {
    // Upstream's v3.32 migrator creates the new key before it deletes the old one.
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.32.1");
    etcd.put(&format!("{ROOT}/{GNP}/default.allow-dns"), TIERED_VALUE);
    etcd.put(&format!("{ROOT}/{GNP}/allow-dns"), NAMED_VALUE);
    let listed = netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["get", "gnp", "allow-dns", "-o", "json"])
            .run()
    );
    // The uid is masked in the snapshot: the one of the v3.32 key's value.
    assert!(
        listed.stdout.contains("6a2e9f1b"),
        "the v3.32 key is read first: {}",
        listed.stdout
    );
    ok(Netctl::etcd(&etcd)
        .args(["delete", "gnp", "allow-dns"])
        .run());
    assert!(policy_keys(&etcd).is_empty(), "{:?}", policy_keys(&etcd));
}

// ---- netctl's own release line --------------------------------------------------------------------

#[test]
fn version_names_the_newest_line_and_the_commit_and_warns_about_distant_clusters() {
    let client = ok(Netctl::new().args(["version", "--client"]).stdin("").run());
    let lines: Vec<&str> = client.lines().collect();
    assert_eq!(lines.len(), 3, "{client}");
    assert!(
        lines[1].starts_with("Release Line:") && lines[1].ends_with("v3.32"),
        "{client}"
    );
    let commit = lines[2].strip_prefix("Git commit:").unwrap().trim();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{client}"
    );

    let etcd = EtcdServer::start();
    for (version, warned) in [
        ("v3.33.0", Some("newer than v3.32")),
        ("v3.32.1", None),
        ("v3.31.7", None),
        ("v3.29.4", Some("3 minor releases older than v3.32")),
    ] {
        cluster_runs(&etcd, version);
        let run = Netctl::etcd(&etcd).args(["version"]).run();
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(run.stdout.contains(version), "{}", run.stdout);
        match warned {
            Some(text) => assert!(run.stderr.contains(text), "{version}: {}", run.stderr),
            None => assert!(!run.stderr.contains("warning"), "{version}: {}", run.stderr),
        }
    }
}
