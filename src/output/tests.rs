//! What users see from `netctl get`: every kind's `ps` and `wide` tables (snapshots under
//! `snapshots/`), custom columns, the documents and their shapes, `-o name`, and the errors.

use serde_json::json;

use super::*;
use crate::resource::Resource;

fn resource(kind: Kind, name: &str, spec: serde_json::Value) -> Resource {
    let mut resource = Resource::new(kind, name);
    resource.spec = spec;
    resource
}

fn namespaced(kind: Kind, namespace: &str, name: &str, spec: serde_json::Value) -> Resource {
    let mut resource = resource(kind, name, spec);
    resource.metadata.namespace = Some(namespace.to_string());
    resource
}

fn print_all(resources: &[Resource], shape: Shape, options: &PrintOptions) -> String {
    let kind = resources
        .first()
        .map_or(Kind::Node, |resource| resource.kind);
    let mut printer = ResourcePrinter::new(Vec::new(), kind, shape, options).expect("printer");
    for resource in resources {
        printer.print(resource).expect("prints");
    }
    String::from_utf8(printer.finish().expect("finishes")).expect("utf-8")
}

fn list(resources: &[Resource], format: OutputFormat) -> String {
    let options = PrintOptions {
        format,
        ..PrintOptions::default()
    };
    print_all(
        resources,
        Shape::List {
            revision: "42".to_string(),
        },
        &options,
    )
}

/// The shape of a list whose revision is not shown.
fn a_list() -> Shape {
    Shape::List {
        revision: String::new(),
    }
}

/// A printer of a list of host endpoints in `format`.
fn host_endpoint_list(format: OutputFormat) -> ResourcePrinter<Vec<u8>> {
    let options = PrintOptions {
        format,
        ..PrintOptions::default()
    };
    let shape = Shape::List {
        revision: "42".to_string(),
    };
    ResourcePrinter::new(Vec::new(), Kind::HostEndpoint, shape, &options).expect("printer")
}

/// `ps` then `wide`, as one snapshot per kind. Lines end where the terminal would show them, trailing
/// padding included; the closing marker line keeps insta (which trims the end of a snapshot) from
/// dropping the last table's padding and blank line.
fn tables(resources: &[Resource]) -> String {
    format!(
        "--- ps\n{}--- wide\n{}--- end\n",
        list(resources, OutputFormat::Ps),
        list(resources, OutputFormat::Wide)
    )
}

fn custom(headings: &[&str]) -> OutputFormat {
    OutputFormat::CustomColumns(headings.iter().map(|heading| heading.to_string()).collect())
}

#[test]
fn node_tables() {
    let nodes = [
        resource(
            Kind::Node,
            "node-1",
            json!({"bgp": {"asNumber": 64513, "ipv4Address": "10.0.0.1/24", "ipv6Address": "fd00::1/64"}}),
        ),
        resource(
            Kind::Node,
            "node-2",
            json!({"bgp": {"ipv4Address": "10.0.0.2/24"}}),
        ),
        resource(Kind::Node, "node-3", json!({})),
    ];
    insta::assert_snapshot!("node", tables(&nodes));
    let wide_with = |global_as_number| {
        let options = PrintOptions {
            format: OutputFormat::Wide,
            cells: CellContext { global_as_number },
            ..PrintOptions::default()
        };
        let shape = a_list();
        print_all(&nodes[1..2], shape, &options)
    };
    let output = wide_with(GlobalAsNumber::Unreadable);
    assert!(
        output.contains("node-2   (unknown)   10.0.0.2/24"),
        "{output}"
    );
    let output = wide_with(GlobalAsNumber::Known(65001));
    assert!(output.contains("(65001)"), "{output}");
}

#[test]
fn bgp_peer_tables() {
    insta::assert_snapshot!(
        "bgppeer",
        tables(&[
            resource(
                Kind::BgpPeer,
                "peer-node",
                json!({"peerIP": "192.0.2.1", "node": "node-1", "asNumber": 64514}),
            ),
            resource(
                Kind::BgpPeer,
                "peer-rack",
                json!({"peerIP": "192.0.2.2", "nodeSelector": "rack == 'a'", "asNumber": 65000}),
            ),
            resource(
                Kind::BgpPeer,
                "peer-global",
                json!({"peerSelector": "route-reflector == 'true'"}),
            ),
        ])
    );
}

#[test]
fn host_endpoint_tables() {
    insta::assert_snapshot!(
        "hostendpoint",
        tables(&[
            resource(
                Kind::HostEndpoint,
                "node-1-eth0",
                json!({"node": "node-1", "interfaceName": "eth0",
                       "expectedIPs": ["10.0.0.1", "10.0.0.2"], "profiles": ["edge", "web"]}),
            ),
            resource(
                Kind::HostEndpoint,
                "node-2-all",
                json!({"node": "node-2", "interfaceName": "*"}),
            ),
        ])
    );
}

#[test]
fn global_network_policy_tables() {
    insta::assert_snapshot!(
        "globalnetworkpolicy",
        tables(&[
            resource(
                Kind::GlobalNetworkPolicy,
                "default.allow-dns",
                json!({"tier": "default", "order": 100, "selector": "all()"}),
            ),
            resource(
                Kind::GlobalNetworkPolicy,
                "security.deny-db",
                json!({"tier": "security", "order": 1000000.0, "selector": "role == 'db'"}),
            ),
            resource(
                Kind::GlobalNetworkPolicy,
                "untiered",
                json!({"order": 10.5})
            ),
        ])
    );
}

#[test]
fn network_policy_tables_with_and_without_namespace() {
    let policies = [
        namespaced(
            Kind::NetworkPolicy,
            "prod",
            "default.allow-web",
            json!({"tier": "default", "order": 200, "selector": "app == 'web'"}),
        ),
        namespaced(
            Kind::NetworkPolicy,
            "staging-long-namespace",
            "deny",
            json!({"selector": "has(app)"}),
        ),
    ];
    let with_namespace = PrintOptions {
        format: OutputFormat::Wide,
        namespace_column: NamespaceColumn::Show,
        ..PrintOptions::default()
    };
    insta::assert_snapshot!(
        "networkpolicy",
        format!(
            "{}--- wide -A\n{}--- end\n",
            tables(&policies),
            print_all(
                &policies,
                Shape::List {
                    revision: "7".to_string()
                },
                &with_namespace
            )
        )
    );
}

#[test]
fn ip_pool_tables() {
    insta::assert_snapshot!(
        "ippool",
        tables(&[
            resource(
                Kind::IpPool,
                "default-ipv4-ippool",
                json!({"cidr": "10.244.0.0/16", "natOutgoing": true, "ipipMode": "Always",
                       "nodeSelector": "all()"}),
            ),
            resource(
                Kind::IpPool,
                "ipv6-pool",
                json!({"cidr": "fd00:10::/64", "vxlanMode": "CrossSubnet", "disabled": true,
                       "disableBGPExport": true, "nodeSelector": "zone == 'a'"}),
            ),
        ])
    );
}

#[test]
fn bgp_configuration_tables() {
    insta::assert_snapshot!(
        "bgpconfiguration",
        tables(&[
            resource(
                Kind::BgpConfiguration,
                "default",
                json!({"logSeverityScreen": "Info", "nodeToNodeMeshEnabled": false, "asNumber": 64512}),
            ),
            resource(Kind::BgpConfiguration, "node.node-1", json!({})),
        ])
    );
}

#[test]
fn cluster_information_tables() {
    insta::assert_snapshot!(
        "clusterinformation",
        tables(&[resource(
            Kind::ClusterInformation,
            "default",
            json!({"clusterGUID": "2b5a5c1f6c4e4c6f9f3f0c2a1d7e8b90", "clusterType": "k8s,bgp",
                   "calicoVersion": "v3.29.7", "datastoreReady": true}),
        )])
    );
}

#[test]
fn name_only_kinds_tables() {
    let output = format!(
        "{}{}",
        tables(&[resource(
            Kind::FelixConfiguration,
            "default",
            json!({"logSeverityScreen": "Info"})
        )]),
        tables(&[resource(
            Kind::KubeControllersConfiguration,
            "default",
            json!({})
        )])
    );
    insta::assert_snapshot!("felix_and_kubecontrollers_configuration", output);
}

fn many_networks() -> serde_json::Value {
    json!(
        (1..=12)
            .map(|index| format!("198.51.100.{index}/32"))
            .collect::<Vec<_>>()
    )
}

#[test]
fn network_set_tables_cut_long_lists() {
    let global = [
        resource(
            Kind::GlobalNetworkSet,
            "many",
            json!({"nets": many_networks()}),
        ),
        resource(
            Kind::GlobalNetworkSet,
            "few",
            json!({"nets": ["192.0.2.0/24", "2001:db8::/32"]}),
        ),
    ];
    let namespaced_set = [namespaced(
        Kind::NetworkSet,
        "prod",
        "external",
        json!({"nets": many_networks()}),
    )];
    let reservations = [resource(
        Kind::IpReservation,
        "reserved",
        json!({"reservedCIDRs": many_networks()}),
    )];
    let output = format!(
        "{}{}{}",
        tables(&global),
        tables(&namespaced_set),
        tables(&reservations)
    );
    for line in output
        .lines()
        .filter(|line| line.contains("198.51.100.1/32"))
    {
        let cell = line.split("   ").find(|cell| cell.contains("/32")).unwrap();
        assert_eq!(cell.trim_end().chars().count(), 80, "{line}");
        assert!(cell.trim_end().ends_with("..."), "{line}");
    }
    insta::assert_snapshot!("networkset_globalnetworkset_ipreservation", output);
}

#[test]
fn profile_tables_sort_labels() {
    insta::assert_snapshot!(
        "profile",
        tables(&[
            resource(
                Kind::Profile,
                "web",
                json!({"labelsToApply": {"tier": "frontend", "app": "web", "env": "prod"}}),
            ),
            resource(Kind::Profile, "empty", json!({})),
        ])
    );
}

#[test]
fn tier_tables_in_order() {
    let mut tiers = vec![
        resource(Kind::Tier, "unordered", json!({})),
        resource(Kind::Tier, "default", json!({"order": 1000000})),
        resource(Kind::Tier, "security", json!({"order": 100})),
        resource(Kind::Tier, "platform", json!({"order": 100})),
    ];
    sort_tiers_by_order(&mut tiers);
    insta::assert_snapshot!("tier", tables(&tiers));
}

#[test]
fn workload_endpoint_tables() {
    let endpoints = [
        namespaced(
            Kind::WorkloadEndpoint,
            "prod",
            "node--1-k8s-web--0-eth0",
            json!({"orchestrator": "k8s", "node": "node-1", "pod": "web-0",
                   "ipNetworks": ["10.244.1.5/32", "fd00:10::5/128"], "interfaceName": "cali1234",
                   "profiles": ["kns.prod", "ksa.prod.default"],
                   "ipNATs": [{"internalIP": "10.244.1.5", "externalIP": "192.0.2.10"}]}),
        ),
        namespaced(
            Kind::WorkloadEndpoint,
            "prod",
            "vm-1",
            json!({"orchestrator": "openstack", "workload": "instance-0001", "node": "node-2",
                   "ipNetworks": ["10.0.5.2/32"], "interfaceName": "tap1"}),
        ),
    ];
    let with_namespace = PrintOptions {
        namespace_column: NamespaceColumn::Show,
        ..PrintOptions::default()
    };
    let output = format!(
        "{}--- ps -n prod\n{}--- custom-columns=NAME,ORCHESTRATOR\n{}--- end\n",
        tables(&endpoints),
        print_all(&endpoints, a_list(), &with_namespace),
        list(&endpoints, custom(&["NAME", "ORCHESTRATOR"])),
    );
    insta::assert_snapshot!("workloadendpoint", output);
}

#[test]
fn custom_columns_follow_the_given_order_and_never_add_namespace() {
    let policy = [namespaced(
        Kind::NetworkPolicy,
        "prod",
        "allow",
        json!({"selector": "all()", "order": 5}),
    )];
    let options = PrintOptions {
        format: custom(&["SELECTOR", "NAME"]),
        namespace_column: NamespaceColumn::Show,
        ..PrintOptions::default()
    };
    assert_eq!(
        print_all(&policy, a_list(), &options),
        "SELECTOR   NAME    \nall()      allow   \n\n"
    );
    let explicit = PrintOptions {
        format: custom(&["NAMESPACE", "NAME"]),
        ..PrintOptions::default()
    };
    assert_eq!(
        print_all(&policy, a_list(), &explicit),
        "NAMESPACE   NAME    \nprod        allow   \n\n"
    );
}

#[test]
fn unknown_custom_column_lists_the_valid_ones() {
    let options = PrintOptions {
        format: custom(&["NAME", "BOGUS"]),
        ..PrintOptions::default()
    };
    let error = ResourcePrinter::new(Vec::new(), Kind::HostEndpoint, Shape::Named, &options)
        .err()
        .expect("refused");
    insta::assert_snapshot!(error.to_string(), @"unknown heading `BOGUS` for HostEndpoint, valid values are: INTERFACE, IPS, NAME, NODE, PROFILES");
    let namespace = TableColumns::new(
        Kind::Node,
        ColumnSet::Custom(&["NAMESPACE".to_string()]),
        NamespaceColumn::Hide,
    )
    .unwrap_err();
    assert_eq!(
        namespace.to_string(),
        "unknown heading `NAMESPACE` for Node, valid values are: ASN, IPV4, IPV6, NAME"
    );
}

#[test]
fn every_kind_has_a_table_for_every_format() {
    for kind in Kind::ALL {
        for set in [ColumnSet::Ps, ColumnSet::Wide] {
            for namespace in [NamespaceColumn::Hide, NamespaceColumn::Show] {
                let columns = TableColumns::new(kind, set, namespace).expect("defined");
                let headings = columns.headings();
                assert!(!headings.is_empty(), "{kind}");
                assert_eq!(
                    headings.first() == Some(&"NAMESPACE"),
                    namespace == NamespaceColumn::Show && kind.is_namespaced(),
                    "{kind}"
                );
            }
        }
        let all: Vec<String> = headings_for(kind).into_iter().map(String::from).collect();
        assert!(TableColumns::new(kind, ColumnSet::Custom(&all), NamespaceColumn::Hide).is_ok());
    }
}

#[test]
fn the_global_as_number_is_needed_only_for_node_asn() {
    assert!(OutputFormat::Wide.needs_global_as_number(Kind::Node));
    assert!(!OutputFormat::Ps.needs_global_as_number(Kind::Node));
    assert!(custom(&["ASN"]).needs_global_as_number(Kind::Node));
    assert!(!OutputFormat::Wide.needs_global_as_number(Kind::BgpPeer));
    assert!(!OutputFormat::Yaml.needs_global_as_number(Kind::Node));
}

#[test]
fn named_gets_print_one_table_per_object() {
    let pools = [
        resource(Kind::IpPool, "pool-a", json!({"cidr": "10.0.0.0/24"})),
        resource(Kind::IpPool, "pool-bb", json!({"cidr": "10.1.0.0/16"})),
    ];
    assert_eq!(
        print_all(&pools, Shape::Named, &PrintOptions::default()),
        "NAME     CIDR          SELECTOR   \n\
         pool-a   10.0.0.0/24              \n\
         \n\
         NAME      CIDR          SELECTOR   \n\
         pool-bb   10.1.0.0/16              \n\
         \n"
    );
}

#[test]
fn output_formats_parse() {
    let cases = [
        ("ps", OutputFormat::Ps),
        ("wide", OutputFormat::Wide),
        ("yaml", OutputFormat::Yaml),
        ("yml", OutputFormat::Yaml),
        ("json", OutputFormat::Json),
        ("name", OutputFormat::Name),
        ("custom-columns=NAME,NODE", custom(&["NAME", "NODE"])),
        ("custom-columns=NAME, NODE,", custom(&["NAME", "NODE"])),
    ];
    for (text, expected) in cases {
        assert_eq!(text.parse::<OutputFormat>(), Ok(expected), "{text}");
    }
    assert_eq!(
        custom(&["NAME", "NODE"]).to_string(),
        "custom-columns=NAME,NODE"
    );
    assert_eq!(
        "custom-columns=".parse::<OutputFormat>(),
        Err(OutputFormatError::NoColumns)
    );
    assert_eq!(
        "custom-columns".parse::<OutputFormat>(),
        Err(OutputFormatError::NoColumns)
    );
    assert_eq!(
        "custom-columns=,".parse::<OutputFormat>(),
        Err(OutputFormatError::NoColumns)
    );
    let advice =
        |error: OutputFormatError| format!("{error}\nhint: {}", error.hint().unwrap_or_default());
    insta::assert_snapshot!(
        advice("go-template={{.}}".parse::<OutputFormat>().unwrap_err()),
        @r"
    unrecognized output format `go-template={{.}}`
    hint: use one of ps, wide, yaml, json, name or custom-columns=HEADING,...
    "
    );
    insta::assert_snapshot!(
        advice(OutputFormatError::NoColumns),
        @r"
    need to specify at least one column
    hint: list headings after the `=`, e.g. `custom-columns=NAME,NODE`
    "
    );
}

fn sample_pools() -> Vec<Resource> {
    let mut first = resource(
        Kind::IpPool,
        "pool-a",
        json!({"cidr": "10.0.0.0/24", "ipipMode": "Never", "blockSize": 26}),
    );
    first.metadata.resource_version = Some("40".to_string());
    first
        .metadata
        .labels
        .insert("zone".to_string(), "a".to_string());
    let second = resource(Kind::IpPool, "pool-b", json!({"cidr": "10.1.0.0/16"}));
    vec![first, second]
}

#[test]
fn json_list_is_one_list_object() {
    let output = list(&sample_pools(), OutputFormat::Json);
    let parsed: serde_json::Value = serde_json::from_str(&output).expect("valid JSON");
    assert_eq!(parsed["kind"], "IPPoolList");
    assert_eq!(parsed["items"].as_array().map(Vec::len), Some(2));
    insta::assert_snapshot!("json_list", output);
    let empty = print_all(
        &[],
        Shape::List {
            revision: "3".to_string(),
        },
        &PrintOptions {
            format: OutputFormat::Json,
            ..PrintOptions::default()
        },
    );
    let parsed: serde_json::Value = serde_json::from_str(&empty).expect("valid JSON");
    assert_eq!(parsed["items"], json!([]));
    assert_eq!(parsed["metadata"]["resourceVersion"], "3");
}

#[test]
fn yaml_list_is_one_list_object_with_sorted_keys() {
    let output = list(&sample_pools(), OutputFormat::Yaml);
    let parsed: serde_json::Value = crate::yaml::from_str(&output).expect("valid YAML");
    assert_eq!(parsed["kind"], "IPPoolList");
    assert_eq!(parsed["metadata"]["resourceVersion"], "42");
    assert_eq!(parsed["items"][1]["metadata"]["name"], "pool-b");
    insta::assert_snapshot!("yaml_list", output);
    let options = PrintOptions {
        format: OutputFormat::Yaml,
        ..PrintOptions::default()
    };
    let empty = print_all(&[], a_list(), &options);
    assert_eq!(
        empty,
        "apiVersion: projectcalico.org/v3\nitems: []\nkind: NodeList\nmetadata: {}\n"
    );
}

#[test]
fn named_documents_are_an_object_alone_or_an_array() {
    let pools = sample_pools();
    for format in [OutputFormat::Json, OutputFormat::Yaml] {
        let options = PrintOptions {
            format: format.clone(),
            ..PrintOptions::default()
        };
        let one = print_all(&pools[..1], Shape::Named, &options);
        let two = print_all(&pools, Shape::Named, &options);
        let none = print_all(&[], Shape::Named, &options);
        let (one, two, none): (serde_json::Value, serde_json::Value, serde_json::Value) =
            if format == OutputFormat::Json {
                (
                    serde_json::from_str(&one).unwrap(),
                    serde_json::from_str(&two).unwrap(),
                    serde_json::from_str(&none).unwrap(),
                )
            } else {
                (
                    crate::yaml::from_str(&one).unwrap(),
                    crate::yaml::from_str(&two).unwrap(),
                    crate::yaml::from_str(&none).unwrap(),
                )
            };
        assert_eq!(one["metadata"]["name"], "pool-a", "{format}");
        assert_eq!(two[1]["metadata"]["name"], "pool-b", "{format}");
        assert_eq!(none, json!([]), "{format}");
    }
    let options = PrintOptions {
        format: OutputFormat::Json,
        ..PrintOptions::default()
    };
    insta::assert_snapshot!(
        "json_named_one",
        print_all(&pools[..1], Shape::Named, &options)
    );
    insta::assert_snapshot!("json_named_two", print_all(&pools, Shape::Named, &options));
    let options = PrintOptions {
        format: OutputFormat::Yaml,
        ..PrintOptions::default()
    };
    insta::assert_snapshot!("yaml_named_two", print_all(&pools, Shape::Named, &options));
}

#[test]
fn yaml_keeps_multi_line_values_inside_list_items() {
    let mut annotated = resource(Kind::GlobalNetworkSet, "notes", json!({"nets": []}));
    annotated.metadata.annotations.insert(
        "description".to_string(),
        "line one\n  indented line two\n".to_string(),
    );
    let output = list(&[annotated.clone(), annotated], OutputFormat::Yaml);
    let parsed: serde_json::Value = crate::yaml::from_str(&output).expect("valid YAML");
    assert_eq!(
        parsed["items"][1]["metadata"]["annotations"]["description"],
        "line one\n  indented line two\n"
    );
}

#[test]
fn names_are_lower_case_kind_slash_name() {
    let resources = [
        resource(Kind::HostEndpoint, "node-1-eth0", json!({})),
        namespaced(Kind::NetworkPolicy, "prod", "allow", json!({})),
    ];
    let options = PrintOptions {
        format: OutputFormat::Name,
        ..PrintOptions::default()
    };
    assert_eq!(
        print_all(&resources, Shape::Named, &options),
        "hostendpoint/node-1-eth0\nnetworkpolicy/allow\n"
    );
    for kind in Kind::ALL {
        let printed_kind = kind.as_str().to_ascii_lowercase();
        assert_eq!(Kind::from_user_input(&printed_kind), Some(kind));
    }
}

// ----- the document writers against the value pipeline they replaced -----

/// A small deterministic generator (no seed crate needed for a few hundred values).
struct Generator(u64);

impl Generator {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % below
    }

    fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[self.next(choices.len())]
    }

    fn scalar(&mut self) -> serde_json::Value {
        const TEXTS: &[&str] = &[
            "plain",
            "no",
            "yes",
            "1.5",
            "40",
            "0400",
            "10.0.0.0/16",
            "fd00::1",
            "a: b",
            "#x",
            "-x",
            "- x",
            "",
            " leading",
            "trailing ",
            "line one\nline two\n",
            "a\n\nb",
            "x\r\ny",
            "tab\there",
            "héhé",
            "it's",
            "\"quoted\"",
            "2024-01-01",
            "~",
            "null",
            "on",
            "1e3",
            "has(a) && b == 'c'",
            "all()",
            "*",
            "&anchor",
            "key:",
            "ends with newline\n\n",
            "\u{7}bell",
            "eth0",
            "host-000001-eth0",
            "projectcalico-default-allow",
        ];
        match self.next(7) {
            0 => json!(self.next(100_000)),
            1 => json!([1.5, -3.25, 1e21, 0.0001, 100.0][self.next(5)]),
            2 => json!(self.next(2) == 0),
            3 => serde_json::Value::Null,
            _ => json!(self.pick(TEXTS)),
        }
    }

    fn value(&mut self, depth: usize) -> serde_json::Value {
        const KEYS: &[&str] = &[
            "zeta",
            "alpha",
            "Mixed",
            "node",
            "interfaceName",
            "expectedIPs",
            "on",
            "1",
            "a b",
            "x.y/z",
            "ports",
            "_under",
            "-dash",
            "ipv4Address",
        ];
        match (depth, self.next(5)) {
            (0, _) | (_, 0 | 1) => self.scalar(),
            (_, 2) => {
                let length = self.next(4);
                json!(
                    (0..length)
                        .map(|_| self.value(depth - 1))
                        .collect::<Vec<_>>()
                )
            }
            _ => {
                let mut map = serde_json::Map::new();
                for _ in 0..self.next(5) {
                    map.insert(self.pick(KEYS).to_string(), self.value(depth - 1));
                }
                serde_json::Value::Object(map)
            }
        }
    }

    fn resource(&mut self, index: usize) -> Resource {
        let kinds = [
            Kind::HostEndpoint,
            Kind::GlobalNetworkPolicy,
            Kind::NetworkPolicy,
            Kind::Node,
            Kind::IpPool,
        ];
        let kind = kinds[index % kinds.len()];
        let mut resource = Resource::new(kind, format!("object-{index:04}"));
        resource.spec = match self.next(8) {
            0 => serde_json::Value::Null,
            _ => self.value(4),
        };
        if self.next(3) == 0 {
            resource.status = self.value(2);
        }
        let metadata = &mut resource.metadata;
        if kind.is_namespaced() {
            metadata.namespace = Some(self.pick(&["default", "prod", "no"]).to_string());
        }
        metadata.resource_version = Some(format!("{}", self.next(1_000_000)));
        if self.next(2) == 0 {
            metadata.uid = Some("2b8d3a5e-0001-4000-8000-000000000001".to_string());
            metadata.creation_timestamp = Some("2026-01-01T00:00:00Z".to_string());
        }
        for _ in 0..self.next(4) {
            let key = self.pick(&["role", "zone", "topology.kubernetes.io/zone", "on", "z"]);
            let value = self.pick(&["worker", "", "yes", "a b", "1.0", "x\ny"]);
            metadata.labels.insert(key.to_string(), value.to_string());
        }
        if self.next(4) == 0 {
            metadata
                .annotations
                .insert("note".to_string(), "multi\nline\n".to_string());
        }
        if self.next(5) == 0 {
            metadata
                .other
                .insert("generation".to_string(), json!(self.next(9)));
            metadata
                .other
                .insert("finalizers".to_string(), json!(["a", "b"]));
        }
        resource
    }
}

/// What a document was before the writers encoded straight from the resource: a JSON value with
/// the top level reordered, pretty-printed or sorted and emitted.
fn encoded_through_a_value(resource: &Resource, format: DocumentFormat) -> String {
    let serde_json::Value::Object(mut fields) = serde_json::to_value(resource).unwrap() else {
        unreachable!("a resource is an object");
    };
    let mut ordered = serde_json::Map::new();
    for key in ["kind", "apiVersion", "metadata", "spec"] {
        if let Some(field) = fields.remove(key) {
            ordered.insert(key.to_string(), field);
        }
    }
    ordered.extend(fields);
    let value = serde_json::Value::Object(ordered);
    match format {
        DocumentFormat::Json => serde_json::to_string_pretty(&value).unwrap(),
        DocumentFormat::Yaml => crate::yaml::emit::value_to_string(&sort_keys(value)),
    }
}

fn prefixed_lines(text: &str, first: &str, rest: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(index, line)| format!("{}{line}\n", if index == 0 { first } else { rest }))
        .collect()
}

#[test]
fn documents_of_three_hundred_varied_resources_are_byte_for_byte_what_they_were() {
    let mut generator = Generator(19);
    let resources: Vec<Resource> = (0..300).map(|index| generator.resource(index)).collect();
    for resource in &resources {
        for format in [DocumentFormat::Json, DocumentFormat::Yaml] {
            assert_eq!(
                document::encode_for_tests(resource, format),
                encoded_through_a_value(resource, format),
                "{format:?} of {resource:?}"
            );
        }
    }
    // A list of them (mixed kinds: the writer does not care), as the list writers frame it.
    let mut json_items = Vec::new();
    let mut yaml_items = String::new();
    for resource in &resources {
        let text = encoded_through_a_value(resource, DocumentFormat::Json);
        json_items.push(prefixed_lines(&text, "    ", "    ").trim_end().to_string());
        yaml_items.push_str(&prefixed_lines(
            &encoded_through_a_value(resource, DocumentFormat::Yaml),
            "- ",
            "  ",
        ));
    }
    let json = format!(
        "{{\n  \"kind\": \"HostEndpointList\",\n  \"apiVersion\": \"projectcalico.org/v3\",\n  \"metadata\": {{\n    \"resourceVersion\": \"42\"\n  }},\n  \"items\": [\n{}\n  ]\n}}\n",
        json_items.join(",\n")
    );
    assert_eq!(list(&resources, OutputFormat::Json), json);
    let yaml = format!(
        "apiVersion: projectcalico.org/v3\nitems:\n{yaml_items}kind: HostEndpointList\nmetadata:\n  resourceVersion: '42'\n"
    );
    assert_eq!(list(&resources, OutputFormat::Yaml), yaml);
    // Gets by name: one alone, several as an array.
    let named = |resources: &[Resource], format| {
        print_all(
            resources,
            Shape::Named,
            &PrintOptions {
                format,
                ..PrintOptions::default()
            },
        )
    };
    let first = encoded_through_a_value(&resources[0], DocumentFormat::Yaml);
    assert_eq!(named(&resources[..1], OutputFormat::Yaml), first);
    let json_first = encoded_through_a_value(&resources[0], DocumentFormat::Json);
    assert_eq!(
        named(&resources[..1], OutputFormat::Json),
        format!("{json_first}\n")
    );
    let several: String = resources[..5]
        .iter()
        .map(|resource| {
            let text = encoded_through_a_value(resource, DocumentFormat::Json);
            prefixed_lines(&text, "  ", "  ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join(",\n");
    assert_eq!(
        named(&resources[..5], OutputFormat::Json),
        format!("[\n{several}\n]\n")
    );
}

// ----- listed documents printed from the stored text against the same through a value -----

/// A list printed from each resource's spec and status as `texts` gives their stored text.
fn list_from_stored_text(
    resources: &[Resource],
    format: OutputFormat,
    texts: impl Fn(&serde_json::Value) -> String,
) -> String {
    let mut printer = host_endpoint_list(format);
    for resource in resources {
        let text = |value: &serde_json::Value| (!value.is_null()).then(|| texts(value));
        let (spec, status) = (text(&resource.spec), text(&resource.status));
        let mut bare = resource.clone();
        bare.spec = json!({"ignored": "the stored text is what prints"});
        bare.status = serde_json::Value::Null;
        printer
            .print_stored(&bare, spec.as_deref(), status.as_deref())
            .expect("prints");
    }
    String::from_utf8(printer.finish().expect("finishes")).expect("utf-8")
}

#[test]
fn listed_documents_from_stored_text_are_byte_for_byte_the_decoded_ones() {
    let mut generator = Generator(20);
    let resources: Vec<Resource> = (0..300).map(|index| generator.resource(index)).collect();
    for format in [OutputFormat::Json, OutputFormat::Yaml] {
        let decoded = list(&resources, format.clone());
        let compact = |value: &serde_json::Value| value.to_string();
        let pretty = |value: &serde_json::Value| serde_json::to_string_pretty(value).unwrap();
        assert_eq!(
            list_from_stored_text(&resources, format.clone(), compact),
            decoded,
            "{format}"
        );
        assert_eq!(
            list_from_stored_text(&resources, format.clone(), pretty),
            decoded,
            "{format}, stored with whitespace"
        );
    }
}

/// Stored text a `Value` would normalize: escapes, numbers at the edges, repeated keys, keys out
/// of order, strings YAML 1.1 readers would retype, empty and nested collections.
const TRICKY_SPECS: &[&str] = &[
    r##"{"text":"\u00fc\u6f22\ud83d\ude00 ü漢😀","escapes":"q\"b\\s\/n\nt\tc\u0001l\u2028x\u0085","plain":"host-000001-eth0"}"##,
    r##"{"numbers":[0,-0,1.0,-1.5e-7,1e300,0.1,18446744073709551615,-9223372036854775808,123456789012345678901234567890,2.5E+3]}"##,
    r##"{"a":1,"b":{"x":1,"x":2},"a":3,"c":[{"k":"v","k":null}]}"##,
    r##"{"zeta":{},"alpha":[],"Mixed":[[[]],[1,[2,[3,{}]]],[[],{}]],"nothing":null,"yes":true,"no":false}"##,
    r##"{"words":["yes","no","on","off","y","n","~","null","0400","0x1F","1_000","190:20:30","2024-01-01","","=","<<",".inf","1e3","-"," lead","trail ","- x","a: b","#c","multi\nline\n","multi\n\n","\nlead","tab\there"]}"##,
    r##"{"yes":1,"":2,"a b":3,"multi\nkey":4,"0400":5,"on":{"off":[]},"\u0007":6,"#hash":7}"##,
    "  {\n  \"spaced\" :  [ 1 , 2 ] ,\n  \"out\" : { \"z\" : 1 , \"a\" : 2 }\n}  ",
    r##"[]"##,
    r##""a spec that is a string""##,
    r##"{"many":{"k20":20,"k19":19,"k18":18,"k17":17,"k16":16,"k15":15,"k14":14,"k13":13,"k12":12,"k11":11,"k10":10,"k09":9,"k08":8,"k07":7,"k06":6,"k05":5,"k04":4,"k03":3,"k02":2,"k01":1,"k05":"again"}}"##,
];

#[test]
fn tricky_stored_text_prints_as_its_value_would() {
    for text in TRICKY_SPECS {
        let mut resource = Resource::new(Kind::HostEndpoint, "tricky");
        resource.metadata.resource_version = Some("7".to_string());
        resource.spec = serde_json::from_str(text).expect("valid JSON");
        let status = r#"{"podCIDRs":["10.0.0.0/24"],"wireguardPublicKey":"n0/+="}"#;
        resource.status = serde_json::from_str(status).unwrap();
        let resources = [resource.clone()];
        for format in [OutputFormat::Json, OutputFormat::Yaml] {
            let mut printer = host_endpoint_list(format.clone());
            let mut bare = resource.clone();
            bare.spec = serde_json::Value::Null;
            bare.status = serde_json::Value::Null;
            printer
                .print_stored(&bare, Some(text), Some(status))
                .unwrap();
            let stored = String::from_utf8(printer.finish().unwrap()).unwrap();
            assert_eq!(
                stored,
                list(&resources, format.clone()),
                "{format} of {text}"
            );
        }
    }
}

#[test]
fn repeated_keys_keep_the_first_place_and_the_last_value() {
    let tree = StoredJson::parse(r#"{"b":1,"a":2,"b":3}"#).unwrap();
    assert_eq!(serde_json::to_string(&tree).unwrap(), r#"{"b":3,"a":2}"#);
    let mut yaml = String::new();
    tree.write_yaml_entry(&mut yaml, "spec", 0);
    assert_eq!(yaml, "spec:\n  a: 2\n  b: 3\n");
}

#[test]
fn stored_text_that_is_not_json_is_an_encoding_error() {
    assert!(StoredJson::parse(r#"{"a":"#).is_err());
    assert!(StoredJson::parse(r#"{"a":1} trailing"#).is_err());
    let mut printer = host_endpoint_list(OutputFormat::Json);
    let resource = Resource::new(Kind::HostEndpoint, "broken");
    let error = printer
        .print_stored(&resource, Some("{"), None)
        .unwrap_err();
    assert!(matches!(error, OutputError::Encode { .. }), "{error:?}");
}

#[test]
fn outputs_other_than_list_documents_decode_the_stored_text() {
    let mut resource = Resource::new(Kind::HostEndpoint, "h1");
    resource.spec = json!({"node": "n1", "interfaceName": "eth0", "expectedIPs": ["10.0.0.1"]});
    let text = resource.spec.to_string();
    let mut bare = resource.clone();
    bare.spec = serde_json::Value::Null;
    for format in [OutputFormat::Wide, OutputFormat::Name] {
        let mut printer = host_endpoint_list(format.clone());
        printer.print_stored(&bare, Some(&text), None).unwrap();
        let printed = String::from_utf8(printer.finish().unwrap()).unwrap();
        assert_eq!(printed, list(std::slice::from_ref(&resource), format));
    }
    let named = PrintOptions {
        format: OutputFormat::Yaml,
        ..PrintOptions::default()
    };
    let mut printer =
        ResourcePrinter::new(Vec::new(), Kind::HostEndpoint, Shape::Named, &named).unwrap();
    printer.print_stored(&bare, Some(&text), None).unwrap();
    let printed = String::from_utf8(printer.finish().unwrap()).unwrap();
    assert!(printed.contains("  node: n1\n"), "{printed}");
}
