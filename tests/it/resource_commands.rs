//! The resource commands through the binary against a real etcd: `create`, `apply`, `replace`,
//! `delete`, `label`, `patch`, `validate` and `get`, with the guarantees users rely on — every document
//! validated before any is written, `--dry-run` changes nothing, writes refused on a cluster newer than
//! netctl knows, ClusterInformation read-only — and upstream-compatible storage.

use crate::support::snapshot::netctl_snapshot;
use crate::support::{EtcdServer, Netctl, failed, ok};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";

const POLICY: &str = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: allow-all-upgrade
spec:
  selector: has(host-endpoint-upgrade)
  types: [Ingress, Egress]
  ingress: [{action: Log}, {action: Allow}]
  egress: [{action: Log}, {action: Allow}]
";

const HOST_ENDPOINTS: &str = "apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-all, labels: {zone: a}}
spec: {node: node1, interfaceName: '*'}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0}
spec: {node: node1, interfaceName: eth0, expectedIPs: [10.0.0.1]}
";

#[test]
fn apply_from_stdin_stores_upstream_format_and_reads_back() {
    let etcd = EtcdServer::start();
    let out = ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(POLICY)
        .run());
    assert_eq!(
        out,
        "Successfully applied 1 resource(s) (GlobalNetworkPolicy: 1 created)\n"
    );
    let stored = etcd
        .get_json(&format!(
            "{ROOT}/globalnetworkpolicies/default.allow-all-upgrade"
        ))
        .unwrap();
    assert_eq!(stored["spec"]["selector"], "has(host-endpoint-upgrade)");
    assert_eq!(stored["spec"]["ingress"][0]["action"], "Log");
    netctl_snapshot!(Netctl::etcd(&etcd).args(["get", "gnp", "-o", "wide"]).run());
    // Applying again updates in place (uid kept).
    let uid = stored["metadata"]["uid"].clone();
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(POLICY)
        .run());
    let again = etcd
        .get_json(&format!(
            "{ROOT}/globalnetworkpolicies/default.allow-all-upgrade"
        ))
        .unwrap();
    assert_eq!(again["metadata"]["uid"], uid);
}

#[test]
fn one_invalid_document_means_nothing_is_written() {
    let etcd = EtcdServer::start();
    let input = format!(
        "{HOST_ENDPOINTS}---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {{name: broken}}\nspec: {{interfaceName: 'eth0:1'}}\n"
    );
    let before = etcd.dump_prefix_bytes("/calico/");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["create", "-f", "-"])
            .stdin(&input)
            .run()
    );
    assert_eq!(
        etcd.dump_prefix_bytes("/calico/"),
        before,
        "nothing was written"
    );
}

#[test]
fn dry_run_shows_the_documents_and_changes_nothing() {
    let etcd = EtcdServer::start();
    let before = etcd.dump_prefix_bytes("/calico/");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-", "--dry-run"])
            .stdin(HOST_ENDPOINTS)
            .run()
    );
    assert_eq!(etcd.dump_prefix_bytes("/calico/"), before);
}

#[test]
fn create_replace_delete_follow_existence_rules() {
    let etcd = EtcdServer::start();
    ok(Netctl::etcd(&etcd)
        .args(["create", "-f", "-"])
        .stdin(HOST_ENDPOINTS)
        .run());
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["create", "-f", "-"])
            .stdin(HOST_ENDPOINTS)
            .run()
    );
    ok(Netctl::etcd(&etcd)
        .args(["create", "--skip-exists", "-f", "-"])
        .stdin(HOST_ENDPOINTS)
        .run());

    let missing = "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {name: ghost}\nspec: {node: n, interfaceName: eth1}\n";
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["replace", "-f", "-"])
            .stdin(missing)
            .run()
    );

    ok(Netctl::etcd(&etcd)
        .args(["delete", "hostendpoint", "node1-eth0"])
        .run());
    assert!(
        etcd.get(&format!("{ROOT}/hostendpoints/node1-eth0"))
            .is_none()
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["delete", "hep", "node1-eth0"])
            .run()
    );
    ok(Netctl::etcd(&etcd)
        .args(["delete", "hep", "node1-eth0", "--skip-not-exists"])
        .run());
    ok(Netctl::etcd(&etcd)
        .args(["delete", "-f", "-", "--skip-not-exists"])
        .stdin(HOST_ENDPOINTS)
        .run());
    assert!(
        etcd.get_prefix(&format!("{ROOT}/hostendpoints/"))
            .is_empty()
    );
}

#[test]
fn label_set_overwrite_remove_and_select() {
    let etcd = EtcdServer::start();
    ok(Netctl::etcd(&etcd)
        .args(["create", "-f", "-"])
        .stdin(HOST_ENDPOINTS)
        .run());
    let out = ok(Netctl::etcd(&etcd)
        .args([
            "label",
            "hostendpoint",
            "node1-all",
            "host-endpoint-upgrade=",
        ])
        .run());
    assert_eq!(
        out,
        "Successfully set label host-endpoint-upgrade on hostendpoint node1-all\n"
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["label", "hostendpoint", "node1-all", "zone=b"])
            .run()
    );
    ok(Netctl::etcd(&etcd)
        .args([
            "label",
            "hostendpoint",
            "node1-all",
            "zone=b",
            "--overwrite",
        ])
        .run());

    let selected = ok(Netctl::etcd(&etcd)
        .args([
            "get",
            "hep",
            "-l",
            "has(host-endpoint-upgrade) && zone == 'b'",
            "-o",
            "name",
        ])
        .run());
    assert_eq!(selected, "hostendpoint/node1-all\n");
    netctl_snapshot!(Netctl::etcd(&etcd).args(["get", "hep", "-o", "wide"]).run());

    ok(Netctl::etcd(&etcd)
        .args([
            "label",
            "hep",
            "node1-all",
            "host-endpoint-upgrade",
            "--remove",
        ])
        .run());
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args([
                "label",
                "hep",
                "node1-all",
                "host-endpoint-upgrade",
                "--remove",
            ])
            .run()
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["label", "hep", "node1-all", "a=b=c"])
            .run()
    );
}

#[test]
fn patch_merge_and_json_are_validated_before_writing() {
    let etcd = EtcdServer::start();
    ok(Netctl::etcd(&etcd)
        .args(["create", "-f", "-"])
        .stdin(HOST_ENDPOINTS)
        .run());
    ok(Netctl::etcd(&etcd)
        .args([
            "patch",
            "hep",
            "node1-eth0",
            "-p",
            r#"{"spec":{"expectedIPs":["10.0.0.2"]}}"#,
        ])
        .run());
    ok(Netctl::etcd(&etcd)
        .args([
            "patch",
            "hep",
            "node1-eth0",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/interfaceName","value":"eth1"}]"#,
        ])
        .run());
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["get", "hep", "node1-eth0", "-o", "yaml"])
            .run()
    );

    let before = etcd.dump_prefix_bytes("/calico/");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args([
                "patch",
                "hep",
                "node1-eth0",
                "-p",
                r#"{"spec":{"interfaceName":"bad:name"}}"#,
            ])
            .run()
    );
    assert_eq!(
        etcd.dump_prefix_bytes("/calico/"),
        before,
        "an invalid result is not written"
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["patch", "hep", "node1-eth0", "-p", "{not json"])
            .run()
    );
}

#[test]
fn validate_needs_no_datastore() {
    let mut command = Netctl::new();
    let file = command.write_file("heps.yaml", HOST_ENDPOINTS);
    command.args(["validate", "-f"]).arg(&file);
    let output = command.output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "Successfully validated 2 resource(s)\n"
    );

    let mut bad = Netctl::new();
    let file = bad.write_file("bad.yaml", "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.1/24}\n");
    bad.args(["validate", "-f"]).arg(&file);
    let output = bad.output();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("spec.cidr"), "{stderr}");
}

/// `validate` reads one document at a time and keeps only the problems: a long file with bad
/// documents spread through it still reports every one, each with its document and line, in order,
/// and prints nothing of the good ones.
#[test]
fn validate_reports_every_bad_document_of_a_long_file() {
    let mut text = String::new();
    let mut bad = Vec::new();
    for index in 1..=300 {
        let cidr = match index % 50 {
            7 => {
                bad.push(index);
                "10.0.0.1/24"
            }
            _ => "10.0.0.0/24",
        };
        text.push_str(&format!(
            "---\napiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata:\n  name: pool-{index}\nspec:\n  cidr: {cidr}\n"
        ));
    }
    let mut command = Netctl::new();
    let file = command.write_file("pools.yaml", &text);
    command.args(["validate", "-f"]).arg(&file);
    let output = command.output();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("found {} problems in the input:", bad.len())),
        "{stderr}"
    );
    let mut from = 0;
    for index in &bad {
        // Each document is 7 lines; its `cidr` is on the last of them.
        let needle = format!("document {index} (from line {})", (index - 1) * 7 + 1);
        let at = stderr[from..]
            .find(&needle)
            .unwrap_or_else(|| panic!("`{needle}` missing or out of order in {stderr}"));
        from += at + needle.len();
        let cidr_line = format!("line {}", index * 7);
        assert!(stderr[from..].contains(&cidr_line), "{stderr}");
    }
    assert_eq!(stderr.matches("spec.cidr").count(), bad.len(), "{stderr}");
}

#[test]
fn writes_to_a_newer_cluster_are_refused_unless_allowed() {
    let etcd = EtcdServer::start();
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.33.2"}}"#,
    );
    let before = etcd.dump_prefix_bytes("/calico/");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(POLICY)
            .run()
    );
    assert_eq!(etcd.dump_prefix_bytes("/calico/"), before);
    ok(Netctl::etcd(&etcd)
        .args(["--allow-version-mismatch", "apply", "-f", "-"])
        .stdin(POLICY)
        .run());
    // Reading is always allowed.
    ok(Netctl::etcd(&etcd).args(["get", "gnp"]).run());
}

#[test]
fn cluster_information_is_read_only() {
    let etcd = EtcdServer::start();
    let info = "apiVersion: projectcalico.org/v3\nkind: ClusterInformation\nmetadata: {name: default}\nspec: {calicoVersion: v3.29.2}\n";
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(info)
            .run()
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["delete", "clusterinformation", "default"])
            .run()
    );
}

#[test]
fn namespaced_resources_use_the_namespace_flag() {
    let etcd = EtcdServer::start();
    let policy = "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: deny}\nspec: {selector: all()}\n";
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-n", "prod", "-f", "-"])
        .stdin(policy)
        .run());
    assert!(
        etcd.get(&format!("{ROOT}/networkpolicies/prod/default.deny"))
            .is_some()
    );
    let all = ok(Netctl::etcd(&etcd)
        .args(["get", "networkpolicy", "-A"])
        .run());
    assert!(all.starts_with("NAMESPACE"), "{all}");
    assert!(all.contains("prod        deny"), "{all}");
    let none = ok(Netctl::etcd(&etcd).args(["get", "networkpolicy"]).run());
    assert_eq!(none, "NAME   TIER   \n\n", "the default namespace has none");
    let mismatch = "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: deny, namespace: dev}\nspec: {selector: all()}\n";
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-n", "prod", "-f", "-"])
            .stdin(mismatch)
            .run()
    );
}

#[test]
fn rules_that_need_the_datastore_are_checked_before_writing() {
    let etcd = EtcdServer::start();
    let pool = |name: &str, cidr: &str| {
        format!(
            "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {{name: {name}}}\nspec: {{cidr: {cidr}}}\n"
        )
    };
    ok(Netctl::etcd(&etcd)
        .args(["create", "-f", "-"])
        .stdin(pool("pool-a", "10.0.0.0/16"))
        .run());
    let before = etcd.dump_prefix_bytes("/calico/");
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["create", "-f", "-"])
            .stdin(pool("pool-b", "10.0.128.0/24"))
            .run()
    );
    // Two new pools in one file that overlap each other: neither is written.
    let both = format!(
        "{}---\n{}",
        pool("pool-c", "10.1.0.0/16"),
        pool("pool-d", "10.1.0.0/20")
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(&both)
            .run()
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(pool("pool-a", "10.9.0.0/16"))
            .run()
    );
    assert_eq!(
        etcd.dump_prefix_bytes("/calico/"),
        before,
        "no refused write changed anything"
    );

    let tiered = "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: security.block}\nspec: {tier: security, selector: all()}\n";
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(tiered)
            .run()
    );
    let tier = "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: security}\nspec: {order: 100}\n";
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(tier)
        .run());
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(tiered)
        .run());
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["delete", "tier", "security"])
            .run()
    );
    ok(Netctl::etcd(&etcd)
        .args(["delete", "gnp", "security.block"])
        .run());
    ok(Netctl::etcd(&etcd)
        .args(["delete", "tier", "security"])
        .run());
    etcd.put(
        &format!("{ROOT}/tiers/default"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"Tier","metadata":{"name":"default"},"spec":{"order":1000000}}"#,
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["delete", "tier", "default"])
            .run()
    );
}

#[test]
fn deleting_a_node_takes_what_belongs_to_it() {
    let etcd = EtcdServer::start();
    let documents = "apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node2}
spec: {}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0}
spec: {node: node1, interfaceName: eth0}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node2-eth0}
spec: {node: node2, interfaceName: eth0}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: node1-tor}
spec: {node: node1, peerIP: 10.0.0.254, asNumber: 64513}
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: node.node1}
spec: {}
";
    ok(Netctl::etcd(&etcd)
        .args(["create", "-f", "-"])
        .stdin(documents)
        .run());
    let before = etcd.dump_prefix_bytes("/calico/");
    let plan = ok(Netctl::etcd(&etcd)
        .args(["delete", "node", "node1", "--dry-run"])
        .run());
    for line in [
        "would delete HostEndpoint(node1-eth0) (belongs to Node(node1))",
        "would delete BGPPeer(node1-tor) (belongs to Node(node1))",
        "would delete FelixConfiguration(node.node1) (belongs to Node(node1))",
    ] {
        assert!(plan.contains(line), "{plan}");
    }
    assert!(!plan.contains("node2"), "{plan}");
    assert_eq!(etcd.dump_prefix_bytes("/calico/"), before);

    let out = ok(Netctl::etcd(&etcd).args(["delete", "node", "node1"]).run());
    assert_eq!(
        out,
        "Successfully deleted Node(node1) and 3 resource(s) that belonged to it\n"
    );
    let remaining: Vec<String> = etcd
        .get_prefix(ROOT)
        .into_iter()
        .map(|(key, _)| key.trim_start_matches(ROOT).to_string())
        .collect();
    assert_eq!(
        remaining,
        [
            "/clusterinformations/default",
            "/hostendpoints/node2-eth0",
            "/nodes/node2",
            "/tiers/adminnetworkpolicy",
            "/tiers/default",
        ],
        "node2's resources and what the first write initialised"
    );
}

#[test]
fn get_by_file_reads_what_the_documents_name_and_export_strips_this_copy() {
    let etcd = EtcdServer::start();
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(format!("{HOST_ENDPOINTS}---\n{POLICY}"))
        .run());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wanted.yaml");
    std::fs::write(&file, format!("{HOST_ENDPOINTS}---\n{POLICY}")).unwrap();
    let file = file.to_str().unwrap();

    // Tables: one per object, each with its kind's columns.
    let tables = ok(Netctl::etcd(&etcd).args(["get", "-f", file]).run());
    assert_eq!(
        tables,
        "NAME        NODE    \nnode1-all   node1   \n\nNAME         NODE    \nnode1-eth0   node1   \n\nNAME                TIER      \nallow-all-upgrade   default   \n\n",
    );
    // Documents: one list across the kinds, as stored (resourceVersion and uid included).
    let documents: Vec<serde_json::Value> = serde_json::from_str(&ok(Netctl::etcd(&etcd)
        .args(["get", "-f", file, "-o", "json"])
        .run()))
    .unwrap();
    let kinds: Vec<&str> = documents
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["HostEndpoint", "HostEndpoint", "GlobalNetworkPolicy"]
    );
    assert!(documents[0]["metadata"]["resourceVersion"].is_string());
    // `-l` filters what the file names.
    let names = ok(Netctl::etcd(&etcd)
        .args(["get", "-f", file, "-o", "name", "-l", "zone == 'a'"])
        .run());
    assert_eq!(names, "hostendpoint/node1-all\n");

    // A document naming a missing resource: the others print, the missing one is the error.
    ok(Netctl::etcd(&etcd)
        .args(["delete", "hostendpoint", "node1-eth0"])
        .run());
    let run = Netctl::etcd(&etcd)
        .args(["get", "-f", file, "-o", "name"])
        .run();
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "hostendpoint/node1-all\nglobalnetworkpolicy/allow-all-upgrade\n"
    );
    assert!(
        run.stderr.contains("HostEndpoint(node1-eth0)"),
        "{}",
        run.stderr
    );

    // `--export` leaves out what belongs to this copy, and the result creates the resource anew.
    let exported = ok(Netctl::etcd(&etcd)
        .args(["get", "gnp", "allow-all-upgrade", "-o", "yaml", "--export"])
        .run());
    for field in ["resourceVersion", "uid", "creationTimestamp"] {
        assert!(!exported.contains(field), "{field} in {exported}");
    }
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["get", "gnp", "allow-all-upgrade", "-o", "yaml"])
            .run()
    );
    ok(Netctl::etcd(&etcd)
        .args(["delete", "gnp", "allow-all-upgrade"])
        .run());
    ok(Netctl::etcd(&etcd)
        .args(["create", "-f", "-"])
        .stdin(&exported)
        .run());
    ok(Netctl::etcd(&etcd)
        .args(["get", "gnp", "allow-all-upgrade"])
        .run());

    // Refusals: an export of a whole list, and KIND together with `-f`.
    let stderr = failed(Netctl::etcd(&etcd).args(["get", "gnp", "--export"]).run());
    assert!(
        stderr.contains("`--export` needs resource names"),
        "{stderr}"
    );
    let run = Netctl::etcd(&etcd).args(["get", "gnp", "-f", file]).run();
    assert_eq!(run.code, Some(64), "{}", run.stderr);
}

#[test]
fn bgp_filters_are_stored_listed_and_must_exist_before_a_peer_names_them() {
    let etcd = EtcdServer::start();
    let filter = "apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: edge}
spec:
  exportV4: [{action: Accept, matchOperator: In, cidr: 77.0.0.0/16}, {action: Reject}]
  importV6: [{action: Reject, interface: '*.calico'}]
";
    let peer = "apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor}
spec: {peerIP: 10.0.0.1, asNumber: 64600, filters: [edge]}
";
    // The peer alone names a filter that does not exist: refused, nothing written.
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["create", "-f", "-"])
            .stdin(peer)
            .run()
    );
    assert!(etcd.get(&format!("{ROOT}/bgppeers/tor")).is_none());

    // Filter and peer in one file: the filter earlier in the batch counts.
    ok(Netctl::etcd(&etcd)
        .args(["create", "-f", "-"])
        .stdin(format!("{filter}---\n{peer}"))
        .run());
    let stored = etcd.get_json(&format!("{ROOT}/bgpfilters/edge")).unwrap();
    assert_eq!(stored["kind"], "BGPFilter");
    assert_eq!(stored["spec"]["exportV4"][0]["cidr"], "77.0.0.0/16");

    let table = ok(Netctl::etcd(&etcd).args(["get", "bgpfilters"]).run());
    assert_eq!(
        table,
        "NAME   NUMEXPORTV4   NUMIMPORTV4   NUMEXPORTV6   NUMIMPORTV6   \nedge   2             0             0             1             \n\n"
    );
    assert_eq!(
        ok(Netctl::etcd(&etcd).args(["get", "bf", "-o", "name"]).run()),
        "bgpfilter/edge\n"
    );
}

#[test]
fn the_first_write_initialises_the_datastore_as_upstream_and_a_refused_one_does_not() {
    let etcd = EtcdServer::start();
    // A refused file writes nothing at all, initialisation included.
    let bad = "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: p}\nspec: {selector: 'bad ('}\n";
    failed(
        Netctl::etcd(&etcd)
            .args(["apply", "-f", "-"])
            .stdin(bad)
            .run(),
    );
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-", "--dry-run"])
        .stdin(POLICY)
        .run());
    assert!(etcd.get_prefix("/calico/").is_empty());

    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(POLICY)
        .run());
    let information = etcd
        .get_json(&format!("{ROOT}/clusterinformations/default"))
        .unwrap();
    let guid = information["spec"]["clusterGUID"].as_str().unwrap();
    assert_eq!(guid.len(), 32, "{information}");
    assert_eq!(information["spec"]["datastoreReady"], true);
    assert!(
        information["spec"].get("calicoVersion").is_none(),
        "{information}"
    );
    let tiers = ok(Netctl::etcd(&etcd)
        .args(["get", "tiers", "-o", "custom-columns=NAME,ORDER"])
        .run());
    // Go prints a float64 of a million as `1e+06`, and so does the ORDER column.
    assert_eq!(
        tiers,
        "NAME                 ORDER   \nadminnetworkpolicy   1000    \ndefault              1e+06   \n\n"
    );

    // Later writes keep what is there: the same GUID, and a tier the user changed stays changed.
    ok(Netctl::etcd(&etcd)
        .args(["label", "tier", "default", "team=net"])
        .run());
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(HOST_ENDPOINTS)
        .run());
    let again = etcd
        .get_json(&format!("{ROOT}/clusterinformations/default"))
        .unwrap();
    assert_eq!(again["spec"]["clusterGUID"], guid);
    let labelled = ok(Netctl::etcd(&etcd)
        .args(["get", "tier", "-l", "team == 'net'", "-o", "name"])
        .run());
    assert_eq!(labelled, "tier/default\n");
}

#[test]
fn the_status_the_system_wrote_survives_every_kind_of_update() {
    let etcd = EtcdServer::start();
    // As the node agent and kube-controllers write them: spec and status in one value.
    etcd.put(
        &format!("{ROOT}/nodes/node1"),
        r#"{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"node1","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"bgp":{"ipv4Address":"10.0.0.1/24"}},"status":{"wireguardPublicKey":"jlkVyQYooZYzI2wFfNhSZez5eWh44yfq1wKVjLvSXgY=","podCIDRs":["192.168.1.0/24"]}}"#,
    );
    etcd.put(
        &format!("{ROOT}/kubecontrollersconfigurations/default"),
        r#"{"kind":"KubeControllersConfiguration","apiVersion":"projectcalico.org/v3","metadata":{"name":"default","uid":"u2","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"controllers":{"node":{"reconcilerPeriod":"5m"}}},"status":{"runningConfig":{"controllers":{"node":{"reconcilerPeriod":"5m"}}},"environmentVars":{"ENABLED_CONTROLLERS":"node"}}}"#,
    );
    let status_of = |key: &str| -> serde_json::Value {
        let stored = etcd.get_json(&format!("{ROOT}/{key}")).unwrap();
        stored["status"].clone()
    };
    let node_status = status_of("nodes/node1");
    let controllers_status = status_of("kubecontrollersconfigurations/default");

    // `get` shows it, as upstream.
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["get", "node", "node1", "-o", "yaml"])
            .run()
    );

    // label and patch read, modify and write the whole resource.
    ok(Netctl::etcd(&etcd)
        .args(["label", "node", "node1", "zone=a"])
        .run());
    ok(Netctl::etcd(&etcd)
        .args([
            "patch",
            "kubecontrollersconfiguration",
            "default",
            "-p",
            r#"{"spec":{"controllers":{"node":{"hostEndpoint":{"autoCreate":"Enabled"}}}}}"#,
        ])
        .run());
    // apply and replace write the user's document, whose status netctl ignores.
    let yaml = ok(Netctl::etcd(&etcd)
        .args(["get", "node", "node1", "-o", "yaml"])
        .run());
    let edited = yaml
        .replace("10.0.0.1/24", "10.0.0.2/24")
        .replace("jlkVyQ", "forged");
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(&edited)
        .run());
    let again = ok(Netctl::etcd(&etcd)
        .args(["get", "node", "node1", "-o", "yaml"])
        .run());
    ok(Netctl::etcd(&etcd)
        .args(["replace", "-f", "-"])
        .stdin(&again)
        .run());

    assert_eq!(status_of("nodes/node1"), node_status);
    assert_eq!(
        status_of("kubecontrollersconfigurations/default"),
        controllers_status
    );
    netctl_snapshot!(
        Netctl::etcd(&etcd)
            .args(["get", "node", "node1", "-o", "yaml"])
            .run()
    );
}
