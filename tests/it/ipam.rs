//! `netctl ipam show` and `netctl ipam check` against real etcd and the strict Kubernetes test
//! server, on fixtures written from upstream's formats and scenarios (`calicoctl/tests/fv/
//! ipam_test.go`: TestIPAM, TestIPAMCleanup).

use crate::ipam_common::{
    Block, Scenario, etcd_netctl, kube_netctl, test_ipam_scenario, three_problems_scenario,
};
use crate::support::{EtcdServer, KubeApiServer, Run, failed, ok};

/// Both datastores seeded with the same scenario; `run` runs netctl against either.
struct Both {
    etcd: EtcdServer,
    kube: KubeApiServer,
}

impl Both {
    fn seeded(scenario: &Scenario) -> Both {
        let etcd = EtcdServer::start();
        scenario.seed_etcd(&etcd);
        let kube = KubeApiServer::start();
        scenario.seed_kube(&kube);
        Both { etcd, kube }
    }

    /// The same command on etcd, then on Kubernetes.
    fn each(&self, args: &[&str]) -> [(&'static str, Run); 2] {
        [
            ("etcd", etcd_netctl(&self.etcd, args)),
            ("kubernetes", kube_netctl(&self.kube, args)),
        ]
    }
}

fn line_with<'a>(text: &'a str, parts: &[&str]) -> Option<&'a str> {
    text.lines()
        .find(|line| parts.iter().all(|part| line.contains(part)))
}

#[test]
fn test_ipam_pool_and_block_figures_are_upstreams() {
    let both = Both::seeded(&test_ipam_scenario());
    for (datastore, run) in both.each(&["ipam", "show"]) {
        let out = ok(run);
        assert!(out.contains("IPS IN USE"), "{datastore}: {out}");
        let pool = line_with(&out, &["IP Pool", "10.65.0.0/16"])
            .unwrap_or_else(|| panic!("{datastore}: {out}"));
        assert!(
            pool.contains("5 (0%)") && pool.contains("65531 (100%)"),
            "{datastore}: {out}"
        );
        let v6 =
            line_with(&out, &["IP Pool", "fd5f:abcd:64::/48"]).unwrap_or_else(|| panic!("{out}"));
        assert!(v6.contains("7 (0%)"), "{datastore}: {out}");
        // Exact digits where upstream prints 1.2089e+24.
        assert!(
            v6.contains("1208925819614629174706176"),
            "{datastore}: {out}"
        );
        assert!(!out.contains("Block"), "{datastore}: {out}");
    }
    for (datastore, run) in both.each(&["ipam", "show", "--show-blocks"]) {
        let out = ok(run);
        let block = line_with(&out, &["Block", "10.65.79.0/26"])
            .unwrap_or_else(|| panic!("{datastore}: {out}"));
        assert!(
            block.contains("5 (8%)") && block.contains("59 (92%)"),
            "{datastore}: {out}"
        );
        assert!(
            line_with(&out, &["Block", "10.66", "8 (100%)", "0 (0%)"]).is_some(),
            "{datastore}: {out}"
        );
        assert!(
            line_with(&out, &["Block", "10.66.137.232/29", "3 (38%)", "5 (62%)"]).is_some(),
            "{out}"
        );
        assert!(
            line_with(&out, &["IP Pool", "fd5f", "7 (0%)"]).is_some(),
            "{datastore}: {out}"
        );
        assert!(
            line_with(
                &out,
                &[
                    "Block",
                    "fd5f:abcd:64:4f2c:ec1b:27b9:1989:77c0/122",
                    "7 (11%)"
                ]
            )
            .is_some(),
            "{out}"
        );
    }
}

#[test]
fn test_ipam_one_address() {
    let both = Both::seeded(&test_ipam_scenario());
    for (datastore, run) in both.each(&["ipam", "show", "--ip=10.65.0.2"]) {
        assert_eq!(ok(run), "10.65.0.2 is not assigned\n", "{datastore}");
    }
    for (datastore, run) in both.each(&["ipam", "show", "--ip", "10.65.79.2"]) {
        let out = ok(run);
        assert!(out.contains("10.65.79.2 is in use"), "{datastore}: {out}");
        assert!(out.contains("Attributes:"), "{datastore}: {out}");
        assert!(
            out.contains("note: reserved by ipam_test.go"),
            "{datastore}: {out}"
        );
        assert!(out.contains("Handle ID: <none>"), "{datastore}: {out}");
    }
    for (datastore, run) in both.each(&["ipam", "show", "--ip=10.240.0.300"]) {
        let error = failed(run);
        assert!(
            error.contains("invalid IP address `10.240.0.300`"),
            "{datastore}: {error}"
        );
    }
    for (datastore, run) in both.each(&["ipam", "show", "--ip", "10.65.79.3", "-o", "json"]) {
        let document: serde_json::Value = serde_json::from_str(&ok(run)).unwrap();
        assert_eq!(document["inUse"], true, "{datastore}");
        assert_eq!(document["block"], "10.65.79.0/26", "{datastore}");
        assert_eq!(
            document["activeOwnerAttributes"]["note"],
            "reserved by ipam_test.go"
        );
    }
}

#[test]
fn every_view_prints_as_json_and_yaml() {
    let both = Both::seeded(&three_problems_scenario());
    for (datastore, run) in both.each(&["ipam", "show", "--show-blocks", "-o", "json"]) {
        let document: serde_json::Value = serde_json::from_str(&ok(run)).unwrap();
        let pool = &document["pools"][0];
        assert_eq!(pool["name"], "default-ipv4-ippool", "{datastore}");
        assert_eq!(pool["capacity"], 65536);
        assert_eq!(pool["inUse"], 3);
        assert_eq!(pool["blocks"][0]["affinity"], "host:node-1");
    }
    for (datastore, run) in both.each(&["ipam", "show", "-o", "yaml"]) {
        let out = ok(run);
        assert!(
            out.contains("name: default-ipv4-ippool"),
            "{datastore}: {out}"
        );
        assert!(out.contains("inUse: 3"), "{datastore}: {out}");
    }
    for (datastore, run) in both.each(&["ipam", "show", "--show-configuration", "-o", "json"]) {
        let run_out = run;
        let stderr = run_out.stderr.clone();
        let document: serde_json::Value = serde_json::from_str(&ok(run_out)).unwrap();
        assert_eq!(document["autoAllocateBlocks"], true, "{datastore}");
        assert_eq!(document["stored"], false, "{datastore}");
        assert!(stderr.contains("is not stored"), "{datastore}: {stderr}");
    }
}

#[test]
fn borrowed_addresses_name_their_pod() {
    let mut scenario = three_problems_scenario();
    scenario.blocks[0] = scenario.blocks[0].clone().allocate(
        5,
        Some("k8s-pod-network.b"),
        &[("node", "node-2"), ("namespace", "prod"), ("pod", "api-1")],
    );
    let both = Both::seeded(&scenario);
    for (datastore, run) in both.each(&["ipam", "show", "--show-borrowed"]) {
        let out = ok(run);
        assert!(out.contains("BORROWING-NODE"), "{datastore}: {out}");
        let row = line_with(
            &out,
            &[
                "10.66.12.5",
                "node-2",
                "10.66.12.0/26",
                "node-1",
                "pod",
                "prod/api-1",
            ],
        );
        assert!(row.is_some(), "{datastore}: {out}");
    }
}

#[test]
fn the_three_problems_are_found_and_named() {
    let both = Both::seeded(&three_problems_scenario());
    for (datastore, run) in both.each(&["ipam", "check", "--show-all-ips"]) {
        let out = ok(run);
        for line in [
            "Found 1 IPAM blocks.",
            " IPAM block 10.66.12.0/26 affinity=host:node-1:",
            "IPAM blocks record 3 allocations.",
            "Found 1 active IP pools.",
            "Found 1 node tunnel IPs.",
            "Found 2 workload IPs.",
            "  10.66.12.1 leaked; attrs Main:k8s-pod-network.gone0 Extra:namespace=default,node=node-1,pod=gone-0,timestamp=2026-08-01 10:00:00.000000001 +0000 UTC",
            "Found 1 IPs that are allocated in IPAM but not actually in use.",
            "  10.66.12.9 in use by Workload(default/node--1-k8s-db--0-eth0) and in active IPAM pool but has no IPAM allocation.",
            "Found 1 in-use IPs that are in active IP pools but have no corresponding IPAM allocation.",
            "Found 0 in-use IPs that are not in active IP pools.",
            "  leaked-handle doesn't have any active IPs.",
            "Found 1 handles with no matching IPs (and 3 handles with matches).",
            "Found 0 handles mentioned in blocks with no matching handle resource.",
            "Check complete; found 3 problems.",
        ] {
            assert!(out.contains(line), "{datastore}: `{line}` in\n{out}");
        }
    }
    // Problems alone exit 0, as upstream; --exit-code makes them 1.
    for (datastore, run) in both.each(&["ipam", "check", "--exit-code"]) {
        assert_eq!(run.code, Some(1), "{datastore}: {}", run.stderr);
        assert!(run.stdout.contains("Check complete; found 3 problems."));
    }
}

#[test]
fn the_report_holds_the_three_problems_in_upstreams_shape() {
    let both = Both::seeded(&three_problems_scenario());
    let directory = tempfile::tempdir().unwrap();
    for (datastore, run) in [
        ("etcd", {
            let path = directory.path().join("etcd.json");
            etcd_netctl(&both.etcd, &["ipam", "check", "-o", path.to_str().unwrap()])
        }),
        ("kubernetes", {
            let path = directory.path().join("kubernetes.json");
            kube_netctl(&both.kube, &["ipam", "check", "-o", path.to_str().unwrap()])
        }),
    ] {
        ok(run);
        let text =
            std::fs::read_to_string(directory.path().join(format!("{datastore}.json"))).unwrap();
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            report["clusterGUID"],
            crate::ipam_common::GUID,
            "{datastore}"
        );
        assert_eq!(report["datastoreLocked"], false);
        assert!(
            report["clusterInformationRevision"]
                .as_str()
                .is_some_and(|r| !r.is_empty())
        );
        let leaked = &report["allocations"]["10.66.12.1"][0];
        assert_eq!(leaked["inUse"], false, "{datastore}: {text}");
        assert_eq!(leaked["handle"], "k8s-pod-network.gone0");
        assert_eq!(leaked["pod"], "gone-0");
        assert!(leaked["sequenceNumber"].is_u64());
        assert!(leaked["owners"].is_null());
        let used = &report["allocations"]["10.66.12.0"][0];
        assert_eq!(used["inUse"], true);
        assert_eq!(
            used["owners"][0],
            "Workload(default/node--1-k8s-web--0-eth0)"
        );
        assert_eq!(
            report["allocations"]["10.66.12.2"][0]["owners"][0],
            "Node(node-1)"
        );
        let handles = report["leakedHandles"].as_array().unwrap();
        assert_eq!(handles.len(), 1, "{datastore}: {text}");
        assert_eq!(handles[0]["ID"], "leaked-handle");
        assert!(
            handles[0]["Revision"]
                .as_str()
                .is_some_and(|r| !r.is_empty())
        );
        match datastore {
            "etcd" => assert!(handles[0]["UID"].is_null()),
            _ => assert!(handles[0]["UID"].is_string(), "{text}"),
        }
        // What upstream's shape cannot hold, under netctl's own key.
        assert_eq!(
            report["netctl"]["inUseWithoutAllocation"]["10.66.12.9"][0],
            "Workload(default/node--1-k8s-db--0-eth0)"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(directory.path().join(format!("{datastore}.json")))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn an_ipv6_tunnel_address_is_in_use_unlike_upstream() {
    let mut scenario = three_problems_scenario();
    scenario
        .pools
        .push(crate::ipam_common::Pool::new("v6", "fd00:10::/48", 122));
    scenario.blocks.push(
        Block::new("fd00:10::/122", 64, Some("host:node-1")).allocate(
            0,
            Some("vxlan-v6-tunnel-addr-node-1"),
            &[("node", "node-1"), ("type", "vxlanV6TunnelAddress")],
        ),
    );
    scenario.handles.push(crate::ipam_common::Handle::new(
        "vxlan-v6-tunnel-addr-node-1",
        &[("fd00:10::/122", 1)],
    ));
    scenario.nodes[0].ipv6_vxlan = Some("fd00:10::".into());
    let both = Both::seeded(&scenario);
    for (datastore, run) in both.each(&["ipam", "check"]) {
        let out = ok(run);
        assert!(
            out.contains("Found 2 node tunnel IPs."),
            "{datastore}: {out}"
        );
        assert!(
            out.contains("Check complete; found 3 problems."),
            "{datastore}: {out}"
        );
    }
}

#[test]
fn what_cannot_be_checked_is_said() {
    let both = Both::seeded(&three_problems_scenario());
    // No KubeControllersConfiguration `default`: the LoadBalancer Services are not checked.
    for (datastore, run) in both.each(&["ipam", "check"]) {
        let out = ok(run);
        assert!(
            out.contains("Not checked: LoadBalancer Service addresses: KubeControllersConfiguration `default` does not exist"),
            "{datastore}: {out}"
        );
    }
    // With the LoadBalancer controller on and no cluster for the etcd datastore.
    both.etcd.put(
        &format!("{}kubecontrollersconfigurations/default", crate::ipam_common::RESOURCES),
        serde_json::json!({"kind": "KubeControllersConfiguration", "apiVersion": "projectcalico.org/v3",
            "metadata": {"name": "default"},
            "spec": {"controllers": {"loadBalancer": {"assignIPs": "AllServices"}}}})
        .to_string(),
    );
    let out = ok(etcd_netctl(&both.etcd, &["ipam", "check"]));
    assert!(
        out.contains("Not checked: LoadBalancer Service addresses: no Kubernetes cluster is configured for the etcd datastore (pass --kubeconfig or set KUBECONFIG)"),
        "{out}"
    );
    // With --kubeconfig, the Services of that cluster are read.
    both.kube
        .put(serde_json::json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "lb", "namespace": "default"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.66.12.9"}]}}}));
    let kubeconfig = both.kube.kubeconfig_path();
    let out = ok(etcd_netctl(
        &both.etcd,
        &[
            "ipam",
            "check",
            "--show-problem-ips",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
    ));
    assert!(out.contains("Found 1 service load balancer(s)."), "{out}");
    assert!(out.contains("  10.66.12.9 has multiple owners."), "{out}");
    assert!(!out.contains("Not checked"), "{out}");
}

#[test]
fn a_damaged_block_is_named_by_key_and_nothing_panics() {
    let etcd = EtcdServer::start();
    three_problems_scenario().seed_etcd(&etcd);
    let key = "/calico/ipam/v2/assignment/ipv4/block/10.66.13.0-26";
    etcd.put(key, r#"{"cidr":"10.66.13.0/26","allocations":[0,"#);
    let wrong_length = "/calico/ipam/v2/assignment/ipv4/block/10.66.14.0-26";
    etcd.put(
        wrong_length,
        r#"{"cidr":"10.66.14.0/26","affinity":"host:node-1","allocations":[7,null],"unallocated":[1],"attributes":[],"sequenceNumber":0,"sequenceNumberForAllocation":null,"deleted":false}"#,
    );
    let run = etcd_netctl(&etcd, &["ipam", "show", "--show-blocks"]);
    let stderr = failed(run);
    assert!(
        stderr.contains(&format!(
            "IPAM block `{key}` is damaged: its JSON is damaged"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 IPAM block(s) could not be read"),
        "{stderr}"
    );
    let out = ok(etcd_netctl(&etcd, &["ipam", "check"]));
    assert!(out.contains("Found 3 IPAM blocks."), "{out}");
    assert!(out.contains("Found 2 damaged IPAM blocks:"), "{out}");
    assert!(
        out.contains(&format!("  `{key}`: its JSON is damaged")),
        "{out}"
    );
    assert!(
        out.contains(&format!("  `{wrong_length}`: `allocations` has 2 entries for the block's 64 addresses; ordinal 0 names attributes 7, and there are 0")),
        "{out}"
    );
    // The damaged block's one allocation is leaked too: 2 leaked, 1 without allocation, 1 handle, 2 damaged.
    assert!(out.contains("Check complete; found 6 problems."), "{out}");
}

#[test]
fn v3_32_blocks_read_as_well_as_v3_31_ones() {
    let etcd = EtcdServer::start();
    let mut scenario = three_problems_scenario();
    scenario.calico_version = "v3.32.1".into();
    scenario.seed_etcd(&etcd);
    // Rewrite the block as v3.32 writes it: no nulls.
    let block = &scenario.blocks[0];
    etcd.put(&block.etcd_key(), block.etcd_json(false));
    let out = ok(etcd_netctl(&etcd, &["ipam", "check"]));
    assert!(out.contains("Check complete; found 3 problems."), "{out}");
}

#[test]
fn ipam_objects_the_strict_server_refuses() {
    // The strict server validates IPAM objects as kube-apiserver validates them against upstream's
    // CRDs: this is what a wrong encoding would meet.
    let server = KubeApiServer::start();
    let client = reqwest_put(
        &server,
        "/apis/crd.projectcalico.org/v1/ipamblocks",
        serde_json::json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMBlock",
            "metadata": {"name": "10-0-0-0-30"},
            "spec": {"cidr": "10.0.0.0/30", "allocations": ["x", null, null, null], "attributes": [], "strictAffinity": false}}),
    );
    assert!(client.contains("422"), "{client}");
    assert!(
        client.contains("spec.unallocated: Required value")
            && client.contains("spec.allocations[0]: Invalid value: \\\"string\\\": spec.allocations[0] in body must be of type integer"),
        "{client}"
    );
    let upper = reqwest_put(
        &server,
        "/apis/crd.projectcalico.org/v1/ipamhandles",
        serde_json::json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMHandle",
            "metadata": {"name": "TestIPAMCleanup"}, "spec": {"handleID": "TestIPAMCleanup", "block": {}}}),
    );
    assert!(upper.contains("lowercase RFC 1123 subdomain"), "{upper}");
}

/// POSTs `body` to the test server with curl-like plain HTTP and returns status and body.
fn reqwest_put(server: &KubeApiServer, path: &str, body: serde_json::Value) -> String {
    use std::io::{Read, Write};
    let url = server.url();
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let text = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn the_ipam_configuration_kind_on_both_datastores() {
    let document = "apiVersion: projectcalico.org/v3\nkind: IPAMConfiguration\nmetadata: {name: default}\nspec: {strictAffinity: true, maxBlocksPerHost: 4}\n";
    let mut validate = crate::support::Netctl::new();
    validate.args(["validate", "-f", "-"]).stdin(document);
    ok(validate.run());
    for (bad, expected) in [
        (
            document.replace("name: default", "name: other"),
            "an IPAMConfiguration must be named `default`",
        ),
        (
            document.replace("maxBlocksPerHost: 4", "maxBlocksPerHost: 2000000"),
            "spec.maxBlocksPerHost",
        ),
        (
            document.replace(
                "maxBlocksPerHost: 4",
                "maxBlocksPerHost: 4, autoAllocateBlocks: true",
            ),
            "v3.32",
        ),
    ] {
        let mut validate = crate::support::Netctl::new();
        validate
            .args(["validate", "--release", "v3.31", "-f", "-"])
            .stdin(bad.as_str());
        let error = failed(validate.run());
        assert!(error.contains(expected), "{expected}: {error}");
    }

    let both = Both::seeded(&three_problems_scenario());
    let mut apply = crate::support::Netctl::new();
    apply
        .config_file(&both.etcd.netctl_config_yaml())
        .args(["apply", "-f", "-"])
        .stdin(document);
    let run = apply.run();
    assert!(
        run.stderr.contains("is not what the allocator reads"),
        "{}",
        run.stderr
    );
    ok(run);
    assert!(
        both.etcd
            .get("/calico/resources/v3/projectcalico.org/ipamconfigurations/default")
            .is_some()
    );
    // The allocator's configuration on etcd is another object: still not stored.
    assert!(both.etcd.get("/calico/ipam/v2/config").is_none());
    let run = etcd_netctl(&both.etcd, &["get", "ipamconfigurations", "-o", "wide"]);
    assert!(
        run.stderr.contains("is not what the allocator reads"),
        "{}",
        run.stderr
    );
    let out = ok(run);
    assert!(out.starts_with("NAME"), "{out}");
    assert!(
        line_with(&out, &["default", "true", "false", "4"]).is_some(),
        "{out}"
    );

    // On Kubernetes both are one object: `ipamconfigs` `default`, kind IPAMConfig.
    let mut apply = crate::support::Netctl::new();
    apply
        .env("DATASTORE_TYPE", "kubernetes")
        .env("KUBECONFIG", both.kube.kubeconfig_path())
        .args(["apply", "-f", "-"])
        .stdin(document);
    let run = apply.run();
    assert!(
        !run.stderr.contains("is not what the allocator reads"),
        "{}",
        run.stderr
    );
    ok(run);
    let stored = both
        .kube
        .get("crd.projectcalico.org/v1", "ipamconfigs", "", "default")
        .unwrap();
    assert_eq!(stored["kind"], "IPAMConfig");
    assert_eq!(stored["spec"]["strictAffinity"], true);
    let out = ok(kube_netctl(
        &both.kube,
        &["ipam", "show", "--show-configuration", "-o", "json"],
    ));
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["strictAffinity"], true);
    assert_eq!(shown["maxBlocksPerHost"], 4);
}

#[test]
fn every_ipam_and_lock_command_has_help_with_examples() {
    for command in [
        vec!["ipam", "show"],
        vec!["ipam", "check"],
        vec!["ipam", "release"],
        vec!["ipam", "split"],
        vec!["ipam", "configure"],
        vec!["datastore", "migrate"],
        vec!["datastore", "migrate", "lock"],
        vec!["datastore", "migrate", "unlock"],
        vec!["datastore", "lock"],
        vec!["datastore", "unlock"],
    ] {
        let mut help = crate::support::Netctl::new();
        help.args(&command).arg("--help");
        let out = ok(help.run());
        assert!(out.contains("Examples:\n  netctl "), "{command:?}: {out}");
    }
}
