//! The validation table: for every kind, documents that must pass and documents that must fail with
//! exactly the listed field errors (rendered as users see them), plus defaulting snapshots.
//!
//! The table is v3.29's, the line these rules were first written for: documents are validated for
//! v3.29.7. What later lines changed is tested line by line in `tests/it/release_lines.rs`.

use crate::release::ApiRelease;
use crate::resource::{Loader, Resource, validate_and_default_for};

/// Validates and defaults as a v3.29.7 cluster would have it.
fn validate_and_default(resource: &mut Resource) -> Result<(), crate::resource::ValidationError> {
    let release = ApiRelease::from_flag("v3.29").expect("v3.29 is a known line");
    validate_and_default_for(resource, &release)
}

fn resource(yaml: &str) -> Resource {
    let mut resources = Loader::unvalidated()
        .load_text(yaml, "<test>")
        .expect("test documents parse");
    assert_eq!(resources.len(), 1, "one resource per test document");
    resources.remove(0).resource
}

/// The rendered field errors of a document, or an empty list when it is valid.
fn errors_of(yaml: &str) -> Vec<String> {
    let mut resource = resource(yaml);
    match validate_and_default(&mut resource) {
        Ok(()) => Vec::new(),
        Err(error) => error.errors.iter().map(ToString::to_string).collect(),
    }
}

fn defaulted(yaml: &str) -> Resource {
    let mut resource = resource(yaml);
    if let Err(error) = validate_and_default(&mut resource) {
        panic!("expected a valid document, got:\n{error}");
    }
    resource
}

/// Runs a table and reports every mismatch at once.
fn check_table(table: &[(&str, &str, &[&str])]) {
    let mut mismatches = Vec::new();
    for (name, yaml, expected) in table {
        let actual = errors_of(yaml);
        if actual != *expected {
            mismatches.push(format!(
                "case `{name}`:\n  expected: {expected:#?}\n  actual:   {actual:#?}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

const NO_ERRORS: &[&str] = &[];

#[test]
fn valid_documents_of_every_kind() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "gnp with rules of every shape",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-web}
spec:
  order: 100
  selector: role == 'web'
  ingress:
    - action: Allow
      protocol: TCP
      source: {nets: [10.0.0.0/8], namespaceSelector: global()}
      destination: {ports: [80, "443", "8000:8080", http]}
    - action: Allow
      protocol: ICMP
      icmp: {type: 8, code: 0}
    - action: Allow
      protocol: TCP
      http: {methods: [GET], paths: [{prefix: /api}]}
  egress:
    - action: Allow
      destination: {services: {name: kube-dns, namespace: kube-system}}
"#,
            NO_ERRORS,
        ),
        (
            "namespaced policy in a tier",
            r#"
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: security.deny-all, namespace: prod}
spec: {tier: security, selector: all(), types: [Ingress, Egress]}
"#,
            NO_ERRORS,
        ),
        (
            "default tier prefix",
            r#"
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: default.db, namespace: prod}
spec: {}
"#,
            NO_ERRORS,
        ),
        (
            "all-interfaces host endpoint",
            r#"
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-all, labels: {host-endpoint: ingress}}
spec:
  node: node1
  interfaceName: "*"
  expectedIPs: [192.0.2.1, "2001:db8::1"]
  ports: [{name: ssh, protocol: TCP, port: 22}]
"#,
            NO_ERRORS,
        ),
        (
            "ipv6 pool",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool6}
spec: {cidr: "fd00:10::/64", vxlanMode: CrossSubnet}
"#,
            NO_ERRORS,
        ),
        (
            "bgp peer by selector",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: rr}
spec: {nodeSelector: "!has(route-reflector)", peerSelector: has(route-reflector)}
"#,
            NO_ERRORS,
        ),
        (
            "bgp peer with port and dotted as number",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor}
spec: {node: rack1-host1, peerIP: "[2001:db8::1]:179", asNumber: "1.10", reachableBy: "2001:db8::fe"}
"#,
            NO_ERRORS,
        ),
        (
            "bgp filter with every rule shape (upstream's sample)",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: my-filter}
spec:
  exportV4:
    - {action: Accept, matchOperator: In, cidr: 77.0.0.0/16, source: RemotePeers}
    - {action: Reject, interface: '*.calico'}
  importV4:
    - {action: Accept, matchOperator: In, cidr: 55.0.0.0/16, prefixLength: {min: 30}}
    - {action: Reject, matchOperator: NotIn, cidr: 44.0.0.0/16}
  exportV6:
    - {action: Reject, source: RemotePeers}
  importV6:
    - {action: Accept, matchOperator: Equal, cidr: "5000::0/64", prefixLength: {min: 65, max: 128}}
    - {action: Reject}
"#,
            NO_ERRORS,
        ),
        (
            "node",
            r#"
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec:
  bgp: {ipv4Address: 10.0.0.1/24, asNumber: 64512, routeReflectorClusterID: 224.0.0.1}
  ipv4VXLANTunnelAddr: 10.244.0.1
  vxlanTunnelMACAddr: "66:a3:0c:7e:7e:b1"
  addresses: [{address: 10.0.0.1, type: InternalIP}]
  orchRefs: [{nodeName: node1, orchestrator: k8s}]
"#,
            NO_ERRORS,
        ),
        (
            "kube controllers configuration",
            r#"
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec:
  healthChecks: Enabled
  etcdV3CompactionPeriod: 10m
  controllers:
    node: {reconcilerPeriod: 5m, syncLabels: Enabled, hostEndpoint: {autoCreate: Disabled}}
    policy: {reconcilerPeriod: 5m}
"#,
            NO_ERRORS,
        ),
        (
            "felix configuration",
            r#"
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec:
  logSeverityScreen: Info
  reportingInterval: 0s
  ipipMTU: 1440
  bpfEnabled: false
  kubeNodePortRanges: [30000:32767]
  failsafeInboundHostPorts: [{protocol: TCP, port: 22}]
  externalNodesList: [192.0.2.0/24]
  routeTableRanges: [{min: 1, max: 250}]
  healthTimeoutOverrides: [{name: InternalDataplaneMainLoop, timeout: 30s}]
"#,
            NO_ERRORS,
        ),
        (
            "bgp configuration default",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec:
  nodeToNodeMeshEnabled: false
  asNumber: 63400
  serviceClusterIPs: [{cidr: 10.96.0.0/12}]
  communities: [{name: internal, value: "64512:100"}]
  prefixAdvertisements: [{cidr: 10.96.0.0/12, communities: [internal, "64512:200"]}]
"#,
            NO_ERRORS,
        ),
        (
            "profile, sets, reservation, tier, cluster information, workload endpoint",
            r#"
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: dev}
spec:
  ingress: [{action: Allow}]
  labelsToApply: {stage: development}
"#,
            NO_ERRORS,
        ),
        (
            "global network set",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: blocklist}
spec: {nets: [192.0.2.5, 198.51.100.1/24]}
"#,
            NO_ERRORS,
        ),
        (
            "network set",
            r#"
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: partners, namespace: prod}
spec: {nets: ["2001:db8::/32"]}
"#,
            NO_ERRORS,
        ),
        (
            "ip reservation",
            r#"
apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: gateways}
spec: {reservedCIDRs: [10.0.0.1, 10.0.1.0/28]}
"#,
            NO_ERRORS,
        ),
        (
            "tier",
            r#"
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100, defaultAction: Pass}
"#,
            NO_ERRORS,
        ),
        (
            "cluster information",
            r#"
apiVersion: projectcalico.org/v3
kind: ClusterInformation
metadata: {name: default}
spec: {calicoVersion: v3.29.7, datastoreReady: true, clusterGUID: abc}
"#,
            NO_ERRORS,
        ),
        (
            "workload endpoint",
            r#"
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-pod1-eth0, namespace: prod}
spec:
  orchestrator: k8s
  node: node1
  pod: pod1
  endpoint: eth0
  ipNetworks: [10.244.0.5/32]
  interfaceName: cali12345
  mac: "ee:ee:ee:ee:ee:ee"
  ports: [{name: http, protocol: TCP, port: 80, hostPort: 8080}]
"#,
            NO_ERRORS,
        ),
    ];
    check_table(table);
}

#[test]
fn invalid_policies() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "lower-case protocol and ports without protocol",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web}
spec:
  ingress:
    - action: Allow
      destination: {ports: [80]}
    - action: Allow
      protocol: tcp
"#,
            &[
                "spec.ingress[0].destination.ports: rules that specify ports must set protocol to `TCP`, `UDP` or `SCTP`",
                "spec.ingress[1].protocol = 'tcp': protocol name invalid (names are case-sensitive: use `TCP`)",
            ],
        ),
        (
            "unknown field names its path",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web}
spec:
  ingress:
    - action: Allow
      destination: {prots: [80]}
"#,
            &["spec.ingress[0].destination.prots: unknown field (did you mean `ports`?)"],
        ),
        (
            "action, ipVersion, protocol number, port range",
            r#"
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: np, namespace: prod}
spec:
  egress:
    - action: allow
      ipVersion: 5
      protocol: 0
    - action: Deny
      protocol: UDP
      destination: {ports: ["90:80", 0]}
    - {}
"#,
            &[
                "spec.egress[0].action = 'allow': must be one of `Allow`, `Deny`, `Log` or `Pass`",
                "spec.egress[0].ipVersion = '5': ipVersion must be 4 or 6",
                "spec.egress[0].protocol = '0': protocol number invalid (allowed: 1-255)",
                "spec.egress[1].destination.ports[0] = '90:80': port range `90:80` is invalid (minimum is greater than maximum)",
                "spec.egress[1].destination.ports[1] = '0': port number `0` is out of range (1-65535)",
                "spec.egress[2].action: action is required: `Allow`, `Deny`, `Log` or `Pass`",
            ],
        ),
        (
            "icmp limits and protocol agreement",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: icmp}
spec:
  ingress:
    - action: Allow
      protocol: ICMP
      ipVersion: 6
      icmp: {type: 255, code: 256}
    - action: Allow
      protocol: TCP
      notICMP: {code: 1}
"#,
            &[
                "spec.ingress[0].ipVersion = '6': protocol `ICMP` requires ipVersion 4 (use `ICMPv6` for IPv6)",
                "spec.ingress[0].icmp.type = '255': must be between 0 and 254",
                "spec.ingress[0].icmp.code = '256': must be between 0 and 255",
                "spec.ingress[1].notICMP: rules that specify ICMP fields must set protocol to `ICMP` or `ICMPv6`",
                "spec.ingress[1].notICMP.code = '1': ICMP code requires the ICMP type to be set",
            ],
        ),
        (
            "nets: family mixing, ipVersion, catch-all negation, syntax",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: nets}
spec:
  ingress:
    - action: Deny
      source: {nets: [10.0.0.0/8], notNets: ["::/0"]}
    - action: Deny
      ipVersion: 4
      destination: {nets: ["2001:db8::/32", 10.0.0.0/33]}
"#,
            &[
                "spec.ingress[0].source.notNets[0] = '::/0': a catch-all CIDR cannot be negated (the rule would never match)",
                "spec.ingress[0]: rule contains both IPv4 and IPv6 CIDRs",
                "spec.ingress[1].destination.nets[1] = '10.0.0.0/33': must be a CIDR with a prefix length, e.g. `10.0.0.0/8` or `10.0.0.1/32`",
                "spec.ingress[1].destination.nets[0] = '2001:db8::/32': CIDR family does not match the rule's ipVersion 4",
            ],
        ),
        (
            "global() placement and selector syntax",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: sel}
spec:
  selector: global()
  namespaceSelector: "role == 'x"
  ingress:
    - action: Allow
      source: {selector: global(), namespaceSelector: "global() && a == 'b'"}
"#,
            &[
                "spec.selector = 'global()': global() can only be used in an EntityRule namespaceSelector",
                "spec.namespaceSelector = 'role == 'x': invalid selector: unterminated string at column 8",
                "spec.ingress[0].source.selector = 'global()': global() can only be used in an EntityRule namespaceSelector",
                "spec.ingress[0].source.namespaceSelector = 'global() && a == 'b'': global() cannot be combined with other selectors",
            ],
        ),
        (
            "preDNAT, doNotTrack, applyOnForward",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: pre}
spec:
  preDNAT: true
  doNotTrack: true
  types: [Ingress, Egress]
  egress: [{action: Allow}]
"#,
            &[
                "spec.preDNAT = 'true': preDNAT and doNotTrack cannot both be true",
                "spec.egress: a preDNAT policy cannot have egress rules",
                "spec.types: a preDNAT policy cannot have the `Egress` type",
                "spec.applyOnForward = 'false': applyOnForward must be true when preDNAT or doNotTrack is set",
            ],
        ),
        (
            "names: tier prefix, bad characters, reserved prefix",
            r#"
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: other.web, namespace: prod}
spec: {tier: security, types: [Ingress, Ingress, ingress]}
"#,
            &[
                "metadata.name = 'other.web': incorrectly formatted policy name: a policy in tier `security` must be named `security.<name>`",
                "spec.types[1] = 'Ingress': type specified more than once",
                "spec.types[2] = 'ingress': type must be `Ingress` or `Egress`",
            ],
        ),
        (
            "gnp name with two dots and a bad tier",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: a.b.c}
spec: {tier: Bad_Tier}
"#,
            &[
                "metadata.name = 'a.b.c': name must be a DNS label (lower case alphanumerics or `-`), optionally prefixed by its tier and a dot",
                "spec.tier = 'Bad_Tier': tier must be a DNS label (at most 63 lower case alphanumerics or `-`)",
            ],
        ),
        (
            "knp prefix refused and namespace missing",
            r#"
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: knp.default.x}
spec: {}
"#,
            &[
                "metadata.namespace: namespace is required for the namespaced kind `NetworkPolicy`",
                "metadata.name = 'knp.default.x': names starting with `knp.default.` are reserved for Kubernetes network policies",
            ],
        ),
        (
            "http and services rules",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: l7}
spec:
  ingress:
    - action: Deny
      protocol: UDP
      http: {methods: [get, GET, GET], paths: [{exact: /a, prefix: /b}, {prefix: api}]}
      destination: {services: {name: svc}}
  egress:
    - action: Allow
      http: {}
      destination: {services: {name: svc, namespace: default}, selector: a == 'b', ports: [80]}
"#,
            &[
                "spec.ingress[0].destination.services: a destination services match is only allowed in egress rules",
                "spec.ingress[0].http: an HTTP match is only allowed in rules with action `Allow`",
                "spec.ingress[0].protocol = 'UDP': rules with an HTTP match must use protocol `TCP`",
                "spec.ingress[0].http.methods[2] = 'GET': HTTP method listed more than once",
                "spec.ingress[0].http.paths[0]: exactly one of `exact` or `prefix` must be set",
                "spec.ingress[0].http.paths[1].prefix = 'api': HTTP path must start with `/` and contain no `?`, `#` or space",
                "spec.egress[0].destination.services: a services match cannot be combined with `selector`",
                "spec.egress[0].destination.services: a destination services match cannot be combined with ports (the service's ports are used)",
                "spec.egress[0].destination.ports: rules that specify ports must set protocol to `TCP`, `UDP` or `SCTP`",
                "spec.egress[0].http: an HTTP match is not allowed in egress rules",
            ],
        ),
        (
            "rule nets must be strictly masked CIDRs; notProtocol ICMPv6 needs ipVersion 6",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: strict}
spec:
  ingress:
    - action: Allow
      ipVersion: 4
      notProtocol: ICMPv6
      source: {nets: [10.1.2.3/16, 10.0.0.1]}
      metadata: {annotations: {"bad key": x}}
"#,
            &[
                "spec.ingress[0].ipVersion = '4': protocol `ICMPv6` requires ipVersion 6 (use `ICMP` for IPv4)",
                "spec.ingress[0].source.nets[0] = '10.1.2.3/16': CIDR is not strictly masked (did you mean `10.1.0.0/16`?)",
                "spec.ingress[0].source.nets[1] = '10.0.0.1': must be a CIDR with a prefix length, e.g. `10.0.0.0/8` or `10.0.0.1/32`",
                "spec.ingress[0].metadata.annotations[bad key]: invalid annotation key: key name must consist of alphanumerics, `-`, `_` or `.`, and start and end with an alphanumeric character",
            ],
        ),
        (
            "labels and annotations",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: labelled
  labels: {"bad key": x, ok: "not ok!"}
  annotations: {"-bad": x}
spec: {performanceHints: [Fast]}
"#,
            &[
                "metadata.labels[bad key]: invalid label key: key name must consist of alphanumerics, `-`, `_` or `.`, and start and end with an alphanumeric character",
                "metadata.labels[ok] = 'not ok!': label value must be empty or consist of alphanumerics, `-`, `_` or `.`, and start and end with an alphanumeric character",
                "metadata.annotations[-bad]: invalid annotation key: key name must consist of alphanumerics, `-`, `_` or `.`, and start and end with an alphanumeric character",
                "spec.performanceHints[0] = 'Fast': must be `AssumeNeededOnEveryNode`",
            ],
        ),
    ];
    check_table(table);
}

#[test]
fn invalid_host_endpoints() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "no node, no interface",
            r#"
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: hep}
spec: {}
"#,
            &[
                "spec.node: no node has been specified",
                "spec: no interface or expected IPs have been specified (set `interfaceName`, `expectedIPs` or both)",
            ],
        ),
        (
            "interface name too long",
            r#"
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: hep}
spec: {node: node1, interfaceName: a-very-long-interface}
"#,
            &[
                "spec.interfaceName = 'a-very-long-interface': interface name must be `*` or 1-15 of a-z, A-Z, 0-9, `_`, `.` or `-`",
            ],
        ),
        (
            "interface name with forbidden characters",
            r#"
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: hep}
spec: {node: node1, interfaceName: "eth0:1"}
"#,
            &[
                "spec.interfaceName = 'eth0:1': interface name must be `*` or 1-15 of a-z, A-Z, 0-9, `_`, `.` or `-`",
            ],
        ),
        (
            "bad expected IPs and node name",
            r#"
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: hep}
spec: {node: Node_1, expectedIPs: [10.0.0.256, 10.0.0.0/24]}
"#,
            &[
                "spec.node = 'Node_1': name must consist of lower case alphanumeric characters, `-` or `.`, and start and end with an alphanumeric character",
                "spec.expectedIPs[0] = '10.0.0.256': must be a valid address",
                "spec.expectedIPs[1] = '10.0.0.0/24': must be a valid address",
            ],
        ),
        (
            "ports: name, protocol, number",
            r#"
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: hep}
spec:
  node: node1
  interfaceName: eth0
  ports:
    - {name: SSH, protocol: TCP, port: 22}
    - {name: ping, protocol: ICMP, port: 0}
"#,
            &[
                "spec.ports[0].name = 'SSH': port name must be at most 15 lower case alphanumerics or `-`, with at least one letter",
                "spec.ports[1].protocol = 'ICMP': endpoint port protocol does not support ports (use `TCP`, `UDP` or `SCTP`)",
                "spec.ports[1].port = '0': must be between 1 and 65535",
            ],
        ),
        (
            "namespace on a cluster-wide kind and a misspelt field",
            r#"
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: hep, namespace: prod}
spec: {node: node1, interface: eth0}
"#,
            &[
                "metadata.namespace = 'prod': namespace must not be set: `HostEndpoint` is not a namespaced kind",
                "spec.interface: unknown field",
            ],
        ),
    ];
    check_table(table);
}

#[test]
fn invalid_ip_pools() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "not strictly masked",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.1.2.3/16}
"#,
            &[
                "spec.cidr = '10.1.2.3/16': IPPool CIDR is not strictly masked (did you mean `10.1.0.0/16`?)",
            ],
        ),
        (
            "too small for the default block size",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.1.0.0/27}
"#,
            &[
                "spec.cidr = '10.1.0.0/27': IP pool size is too small for use with Calico IPAM: the prefix length must be at most the block size (26)",
            ],
        ),
        (
            "block size out of range, v6 ipip",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: "fd00::/48", blockSize: 26, ipipMode: Always}
"#,
            &[
                "spec.blockSize = '26': IPv6 block size must be between 116 and 128",
                "spec.ipipMode = 'Always': IPIP is not supported on an IPv6 pool",
            ],
        ),
        (
            "link-local overlap",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 169.254.0.0/20}
"#,
            &[
                "spec.cidr = '169.254.0.0/20': IPPool CIDR overlaps with the link-local range `169.254.0.0/16`",
            ],
        ),
        (
            "ipip and vxlan, bad modes and uses",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.0.0.0/16, ipipMode: Always, vxlanMode: CrossSubnet, allowedUses: [Workload, LoadBalancer]}
"#,
            &[
                "`spec.allowedUses[1]` value `LoadBalancer` needs v3.30.0; validating for v3.29.7 (`--release v3.29`)",
                "spec.vxlanMode = 'CrossSubnet': IPIP and VXLAN cannot both be enabled on one pool",
            ],
        ),
        (
            "missing cidr, bad mode, v1 fields, bad selector",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {ipipMode: always, nodeSelector: "a == (", ipip: {enabled: true}, nat-outgoing: true}
"#,
            &[
                "spec.cidr: IPPool CIDR must be specified",
                "spec.ipipMode = 'always': must be one of `Always`, `CrossSubnet` or `Never`",
                "spec.nodeSelector = 'a == (': invalid selector: expected a quoted string, found `(` at column 5",
                "spec.ipip: the v1 field `ipip` must not be set (use `ipipMode`)",
                "spec.nat-outgoing = 'true': the v1 field `nat-outgoing` must not be true (use `natOutgoing`)",
            ],
        ),
        (
            "not a cidr",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.0.0.0/8/8}
"#,
            &[
                "spec.cidr = '10.0.0.0/8/8': IPPool CIDR must be a valid subnet (address/prefix length)",
            ],
        ),
        (
            "a bare address is not a subnet",
            r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.0.0.1}
"#,
            &["spec.cidr = '10.0.0.1': IPPool CIDR must be a valid subnet (address/prefix length)"],
        ),
    ];
    check_table(table);
}

#[test]
fn invalid_bgp_peers() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "node and nodeSelector",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer}
spec: {node: node1, nodeSelector: all(), peerIP: 10.0.0.1}
"#,
            &["spec.nodeSelector = 'all()': node and nodeSelector cannot both be set"],
        ),
        (
            "peerIP and peerSelector with asNumber",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer}
spec: {peerIP: 10.0.0.1, peerSelector: all(), asNumber: 64512}
"#,
            &[
                "spec.peerSelector = 'all()': peerIP and peerSelector cannot both be set",
                "spec.asNumber = '64512': asNumber must be empty when peerSelector is set (the peers' own AS numbers are used)",
            ],
        ),
        (
            "bad peer address and as number",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer}
spec: {peerIP: badpeerIP, asNumber: "70000.1"}
"#,
            &[
                "spec.peerIP = 'badpeerIP': must be an IP address, `IPv4:port` or `[IPv6]:port`",
                "spec.asNumber = '70000.1': AS number `70000.1` is invalid (expected a 32-bit number or `high.low` with 16-bit parts)",
            ],
        ),
        (
            "reachableBy without peerIP",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer}
spec: {peerSelector: all(), reachableBy: 10.0.0.254}
"#,
            &["spec.reachableBy = '10.0.0.254': reachableBy must be empty when peerIP is empty"],
        ),
        (
            "reachableBy family mismatch",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer}
spec: {peerIP: "10.0.0.1:179", reachableBy: "2001:db8::1"}
"#,
            &[
                "spec.reachableBy = '2001:db8::1': reachableBy must be of the same address family as peerIP",
            ],
        ),
        (
            "a decoding error stops at the first bad type",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer}
spec: {peerIP: 10.0.0.1, sourceAddress: NodeIP, maxRestartTime: 30, filters: [Bad]}
"#,
            &["spec.maxRestartTime: invalid type: integer `30`, expected a string"],
        ),
    ];
    check_table(table);
}

#[test]
fn invalid_bgp_peer_fields_are_all_reported() {
    let errors = errors_of(
        r#"
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer}
spec: {peerIP: 10.0.0.1, sourceAddress: NodeIP, maxRestartTime: 30s0, filters: [Bad]}
"#,
    );
    assert_eq!(
        errors,
        [
            "spec.sourceAddress = 'NodeIP': must be one of `UseNodeIP` or `None`",
            "spec.maxRestartTime = '30s0': duration is missing a unit (one of ns, us, ms, s, m, h)",
            "spec.filters[0] = 'Bad': name must consist of lower case alphanumeric characters, `-` or `.`, and start and end with an alphanumeric character",
        ]
    );
}

#[test]
fn invalid_bgp_filter_rules_are_all_reported_with_their_list_and_index() {
    let errors = errors_of(
        r#"
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: f}
spec:
  exportV4:
    - {matchOperator: Like, cidr: "2001:db8::/64"}
  importV4:
    - {action: Allow, cidr: 10.0.0.1/8, prefixLength: {min: 33}, source: Peers}
  importV6:
    - {action: Accept, cidr: 10.0.0.0/8, prefixLength: {max: 129}, interface: much-too-long-interface}
"#,
    );
    assert_eq!(
        errors,
        [
            "spec.exportV4[0].action: action is required (`Accept` or `Reject`)",
            "spec.exportV4[0].matchOperator = 'Like': must be one of `Equal`, `NotEqual`, `In` or `NotIn`",
            "spec.exportV4[0].cidr = '2001:db8::/64': must be a valid IPv4 address or CIDR",
            "spec.importV4[0].action = 'Allow': must be one of `Accept` or `Reject`",
            "spec.importV4[0].cidr = '10.0.0.1/8': CIDR is not strictly masked (did you mean `10.0.0.0/8`?)",
            "spec.importV4[0].prefixLength.min = '33': must be between 0 and 32",
            "spec.importV4[0].source = 'Peers': must be one of `RemotePeers`",
            "spec.importV6[0].cidr = '10.0.0.0/8': must be a valid IPv6 address or CIDR",
            "spec.importV6[0].prefixLength.max = '129': must be between 0 and 128",
            "spec.importV6[0].interface = 'much-too-long-interface': must be an interface name of at most 15 characters (letters, digits, `_.-` and `*` wildcards)",
        ]
    );
    // Fields of releases after v3.29 are refused rather than silently ignored by a v3.29 cluster.
    let errors = errors_of(
        "apiVersion: projectcalico.org/v3\nkind: BGPFilter\nmetadata: {name: f}\nspec: {exportV4: [{action: Accept, peerType: eBGP}]}\n",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("peerType"), "{errors:?}");
}

#[test]
fn invalid_nodes() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "empty bgp",
            r#"
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {}}
"#,
            &["spec.bgp: spec.bgp should not be empty (remove it or set an address)"],
        ),
        (
            "address families",
            r#"
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Address: "2001:db8::1/64", ipv6Address: 10.0.0.1}}
"#,
            &[
                "spec.bgp.ipv4Address = '2001:db8::1/64': must be a valid IPv4 address or CIDR",
                "spec.bgp.ipv6Address = '10.0.0.1': must be a valid IPv6 address or CIDR",
            ],
        ),
        (
            "tunnel addresses and cluster id",
            r#"
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec:
  bgp: {ipv4IPIPTunnelAddr: 10.0.0.1/32, routeReflectorClusterID: "::1", asNumber: -1}
  ipv6VXLANTunnelAddr: 10.0.0.1
"#,
            &[
                "spec.bgp.ipv4IPIPTunnelAddr = '10.0.0.1/32': must be a valid IPv4 address",
                "spec.bgp.routeReflectorClusterID = '::1': must be a valid IPv4 address",
                "spec.bgp.asNumber = '-1': AS number `-1` is invalid (expected a 32-bit number or `high.low` with 16-bit parts)",
                "spec.ipv6VXLANTunnelAddr = '10.0.0.1': must be a valid IPv6 address",
            ],
        ),
        (
            "mac addresses",
            r#"
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {vxlanTunnelMACAddr: "zz:zz", vxlanTunnelMACAddrV6: "ee:ee:ee:ee:ee"}
"#,
            &[
                "spec.vxlanTunnelMACAddr = 'zz:zz': must be a valid MAC address",
                "spec.vxlanTunnelMACAddrV6 = 'ee:ee:ee:ee:ee': must be a valid MAC address",
            ],
        ),
        (
            "address types and name",
            r#"
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: Node1}
spec: {addresses: [{address: 10.0.0.1, type: PublicIP}, {address: nowhere}]}
"#,
            &[
                "metadata.name = 'Node1': name must consist of lower case alphanumeric characters, `-` or `.`, and start and end with an alphanumeric character",
                "spec.addresses[0].type = 'PublicIP': must be one of `CalicoNodeIP`, `InternalIP` or `ExternalIP`",
                "spec.addresses[1].address = 'nowhere': must be a valid address or CIDR",
            ],
        ),
        (
            "unknown bgp field",
            r#"
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Adress: 10.0.0.1}}
"#,
            &["spec.bgp.ipv4Adress: unknown field (did you mean `ipv4Address`?)"],
        ),
    ];
    check_table(table);
}

#[test]
fn invalid_kube_controllers_configurations() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "name must be default",
            r#"
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: custom}
spec: {}
"#,
            &["metadata.name = 'custom': a KubeControllersConfiguration must be named `default`"],
        ),
        (
            "log level and health checks",
            r#"
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec: {logSeverityScreen: Verbose, healthChecks: "on"}
"#,
            &[
                "spec.logSeverityScreen = 'Verbose': must be one of `Debug`, `Info`, `Warning`, `Error` or `Fatal`",
                "spec.healthChecks = 'on': must be one of `Enabled` or `Disabled`",
            ],
        ),
        (
            "durations",
            r#"
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec:
  etcdV3CompactionPeriod: 10
  controllers: {node: {reconcilerPeriod: 5 minutes, leakGracePeriod: 1d}}
"#,
            &["spec.etcdV3CompactionPeriod: invalid type: integer `10`, expected a string"],
        ),
        (
            "node controller durations and switches",
            r#"
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec:
  controllers:
    node: {reconcilerPeriod: 5 minutes, leakGracePeriod: 1d, syncLabels: "yes", hostEndpoint: {autoCreate: true}}
"#,
            // `autoCreate: true` is the text "true" upstream (a boolean read into a string field),
            // which is then refused as a value.
            &[
                "spec.controllers.node.reconcilerPeriod = '5 minutes': duration has an unknown unit ` minutes` (one of ns, us, ms, s, m, h)",
                "spec.controllers.node.leakGracePeriod = '1d': duration has an unknown unit `d` (one of ns, us, ms, s, m, h)",
                "spec.controllers.node.syncLabels = 'yes': must be one of `Enabled` or `Disabled`",
                "spec.controllers.node.hostEndpoint.autoCreate = 'true': must be one of `Enabled` or `Disabled`",
            ],
        ),
        (
            "node controller values",
            r#"
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec:
  prometheusMetricsPort: 70000
  controllers:
    node: {reconcilerPeriod: 5 minutes, leakGracePeriod: 1d, syncLabels: "yes"}
"#,
            &[
                "spec.prometheusMetricsPort = '70000': must be between 0 and 65535",
                "spec.controllers.node.reconcilerPeriod = '5 minutes': duration has an unknown unit ` minutes` (one of ns, us, ms, s, m, h)",
                "spec.controllers.node.leakGracePeriod = '1d': duration has an unknown unit `d` (one of ns, us, ms, s, m, h)",
                "spec.controllers.node.syncLabels = 'yes': must be one of `Enabled` or `Disabled`",
            ],
        ),
        (
            "unknown controller",
            r#"
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec: {controllers: {nodes: {}}}
"#,
            &["spec.controllers.nodes: unknown field (did you mean `node`?)"],
        ),
    ];
    check_table(table);
}

#[test]
fn invalid_other_kinds() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "felix configuration",
            r#"
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec:
  logSeverityScreen: info
  reportingInterval: 30
  kubeNodePortRanges: [http, 1:2, 3:4, 5:6, 7:8, 9:10, 11:12, 13:14]
  externalNodesList: ["2001:db8::/32"]
"#,
            &["spec.reportingInterval: invalid type: integer `30`, expected a string"],
        ),
        (
            "felix configuration values",
            r#"
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec:
  logSeverityScreen: info
  reportingInterval: 30x
  kubeNodePortRanges: [http, 1:2, 3:4, 5:6, 7:8, 9:10, 11:12, 13:14]
  externalNodesList: ["2001:db8::/32"]
  natOutgoingAddress: "::1"
  routeTableRange: {min: 1, max: 251}
  routeTableRanges: [{min: 300, max: 200}, {min: 0, max: 70000}]
  openstackRegion: Region_One
  featureGates: "a=true,b"
  mtuIfacePattern: "^(eth"
  failsafeInboundHostPorts: [{protocol: ICMP, port: 0}]
  healthTimeoutOverrides: [{name: "x/y", timeout: -5s}]
"#,
            &[
                "spec.logSeverityScreen = 'info': must be one of `Debug`, `Info`, `Warning`, `Error` or `Fatal`",
                "spec.reportingInterval = '30x': duration has an unknown unit `x` (one of ns, us, ms, s, m, h)",
                "spec.featureGates = 'a=true,b': must be a comma-separated list of `key=value` pairs",
                "spec.mtuIfacePattern = '^(eth': must be a valid regular expression: error: unclosed group",
                "spec.healthTimeoutOverrides[0].name = 'x/y': name must be letters, digits, `_`, `-` or spaces",
                "spec.healthTimeoutOverrides[0].timeout = '-5s': timeout must not be negative",
                "spec.failsafeInboundHostPorts[0].protocol = 'ICMP': must be one of `TCP`, `UDP` or `SCTP`",
                "spec.kubeNodePortRanges: node port ranges list is too long: at most 7 ranges, found 8",
                "spec.kubeNodePortRanges[0] = 'http': named ports are not allowed here (use a number or `min:max`)",
                "spec.externalNodesList[0] = '2001:db8::/32': must be a valid IPv4 address or CIDR",
                "spec.natOutgoingAddress = '::1': must be a valid IPv4 address",
                "spec.routeTableRange: routeTableRange cannot be set when routeTableRanges is also set",
                "spec.routeTableRange = '1-251': must be a range of route table indices within 1..250",
                "spec.routeTableRanges[0] = '300-200': min cannot be greater than max",
                "spec.routeTableRanges[1] = '0-70000': cannot target indices below 1",
                "spec.routeTableRanges: targets too many tables: 70001, at most 65535",
                "spec.openstackRegion = 'Region_One': must be a valid DNS label",
            ],
        ),
        (
            "bgp configuration that is not default",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: node.node1}
spec:
  nodeToNodeMeshEnabled: true
  asNumber: 64512
  serviceExternalIPs: [{cidr: 192.0.2.0/24}]
  communities: [{name: bad, value: "70000:1"}]
  listenPort: 0
"#,
            &[
                "spec.listenPort = '0': must be between 1 and 65535",
                "spec.communities[0].value = '70000:1': community value must be `aa:nn` (16-bit numbers) or `aa:nn:mm` (32-bit numbers)",
                "spec.communities: communities are defined but not used in spec.prefixAdvertisements",
                "spec.nodeToNodeMeshEnabled: cannot set nodeToNodeMeshEnabled on a non default BGP Configuration (only on `default`)",
                "spec.asNumber: cannot set asNumber on a non default BGP Configuration (only on `default`)",
                "spec.serviceExternalIPs: cannot set serviceExternalIPs on a non default BGP Configuration (only on `default`)",
            ],
        ),
        (
            "bgp configuration with the mesh disabled",
            r#"
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec:
  nodeToNodeMeshEnabled: false
  nodeMeshMaxRestartTime: 120s
  serviceClusterIPs: [{cidr: 10.96.0.1/12}]
  ignoredInterfaces: ["*", "eth*", a-very-long-interface-name]
  prefixAdvertisements: [{cidr: 10.0.0.0/8, communities: [unknown]}]
"#,
            &[
                "spec.serviceClusterIPs[0].cidr = '10.96.0.1/12': CIDR is not strictly masked (did you mean `10.96.0.0/12`?)",
                "spec.prefixAdvertisements[0].communities[0] = 'unknown': must name a community of spec.communities or be a community value `aa:nn` / `aa:nn:mm`",
                "spec.ignoredInterfaces[0] = '*': must be 1-15 of a-z, A-Z, 0-9, `_`, `.`, `-` or `*` (and not just `*`)",
                "spec.ignoredInterfaces[2] = 'a-very-long-interface-name': must be 1-15 of a-z, A-Z, 0-9, `_`, `.`, `-` or `*` (and not just `*`)",
                "spec.nodeMeshMaxRestartTime: nodeMeshMaxRestartTime cannot be set when nodeToNodeMeshEnabled is false",
            ],
        ),
        (
            "workload endpoint networks and NATs",
            r#"
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: wep, namespace: prod}
spec:
  interfaceName: cali0
  ipNetworks: [10.0.0.0/24, 10.0.1.5/32]
  ipNATs: [{internalIP: 10.9.9.9, externalIP: "2001:db8::1"}]
  ports: [{protocol: UDP, port: 53}]
"#,
            &[
                "spec.ipNetworks[0] = '10.0.0.0/24': IP network contains multiple addresses (use a /32 or /128)",
                "spec.ipNATs[0].externalIP = '2001:db8::1': internal and external IPs must be of the same IP version",
                "spec.ipNATs[0].internalIP = '10.9.9.9': NAT internal IP is not in the endpoint's ipNetworks",
                "spec.ports[0].name: port name must not be empty when no hostPort is specified",
            ],
        ),
        (
            "tier",
            r#"
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: default}
spec: {order: 5, defaultAction: Allow}
"#,
            &[
                "spec.order = '5': the `default` tier must have order 1000000",
                "spec.defaultAction = 'Allow': must be one of `Deny` or `Pass`",
            ],
        ),
        (
            "tier name with a dot",
            r#"
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: a.b}
"#,
            &[
                "metadata.name = 'a.b': tier name must be a DNS label (at most 63 lower case alphanumerics or `-`, no dots)",
            ],
        ),
        (
            "cluster information name",
            r#"
apiVersion: projectcalico.org/v3
kind: ClusterInformation
metadata: {name: mine}
spec: {}
"#,
            &["metadata.name = 'mine': a ClusterInformation must be named `default`"],
        ),
        (
            "network set with reserved label",
            r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: set, labels: {projectcalico.org/namespace: x}}
spec: {nets: [10.0.0.0/40]}
"#,
            &[
                "spec.nets[0] = '10.0.0.0/40': must be a valid address or CIDR",
                "metadata.labels[projectcalico.org/namespace]: `projectcalico.org/namespace` is reserved and cannot be set on a network set",
            ],
        ),
        (
            "profile rules and labels",
            r#"
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: prof}
spec: {egress: [{action: Allow, protocol: SCTP, notProtocol: udp}], labelsToApply: {a: "b c"}}
"#,
            &[
                "spec.egress[0].notProtocol = 'udp': protocol name invalid (names are case-sensitive: use `UDP`)",
                "spec.labelsToApply[a] = 'b c': label value must be empty or consist of alphanumerics, `-`, `_` or `.`, and start and end with an alphanumeric character",
            ],
        ),
        (
            "workload endpoint",
            r#"
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: wep, namespace: prod}
spec: {ipNetworks: [10.0.0.300/32], ipv4Gateway: "::1", mac: nope, ports: [{name: web, protocol: TCP, port: 80, hostPort: 70000}]}
"#,
            &[
                "spec.ipNetworks[0] = '10.0.0.300/32': must be a valid address or CIDR",
                "spec.ipv4Gateway = '::1': must be a valid IPv4 address",
                "spec.interfaceName: interface name is required",
                "spec.mac = 'nope': must be a valid MAC address",
                "spec.ports[0].hostPort = '70000': must be between 0 and 65535",
            ],
        ),
        (
            "wrong api version",
            r#"
apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: ""}
spec: {reservedCIDRs: [nope]}
"#,
            &[
                "metadata.name: name is required",
                "spec.reservedCIDRs[0] = 'nope': must be a valid address or CIDR",
            ],
        ),
    ];
    check_table(table);
}

#[test]
fn validation_error_renders_one_field_per_line() {
    let mut resource = resource(
        r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web}
spec:
  ingress: [{action: Allow, protocol: tcp}, {action: Allow, protocol: udp}]
"#,
    );
    let error = validate_and_default(&mut resource).unwrap_err();
    insta::assert_snapshot!(error.to_string(), @r"
    `GlobalNetworkPolicy(web)` has 2 errors:
      spec.ingress[0].protocol = 'tcp': protocol name invalid (names are case-sensitive: use `TCP`)
      spec.ingress[1].protocol = 'udp': protocol name invalid (names are case-sensitive: use `UDP`)
    ");
}

#[test]
fn invalid_resources_are_left_untouched() {
    let text = r#"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.0.0.0/27}
"#;
    let original = resource(text);
    let mut candidate = original.clone();
    assert!(validate_and_default(&mut candidate).is_err());
    assert_eq!(candidate, original);
}

#[test]
fn policy_types_default_from_rules() {
    let types_of = |rules: &str| -> serde_json::Value {
        let text = format!(
            "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {{name: p}}\nspec: {rules}\n"
        );
        defaulted(&text).spec["types"].clone()
    };
    assert_eq!(types_of("{}"), serde_json::json!(["Ingress"]));
    assert_eq!(
        types_of("{ingress: [{action: Allow}]}"),
        serde_json::json!(["Ingress"])
    );
    assert_eq!(
        types_of("{egress: [{action: Allow}]}"),
        serde_json::json!(["Egress"])
    );
    assert_eq!(
        types_of("{ingress: [{action: Allow}], egress: [{action: Deny}]}"),
        serde_json::json!(["Ingress", "Egress"])
    );
    assert_eq!(
        types_of("{types: [Egress], ingress: [{action: Allow}]}"),
        serde_json::json!(["Egress"])
    );
}

#[test]
fn defaulting_snapshots() {
    let documents = [
        (
            "ip_pool_v4",
            "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool}\nspec: {cidr: 10.244.0.0/16, natOutgoing: true}\n",
        ),
        (
            "ip_pool_v6",
            "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool6}\nspec: {cidr: \"fd00:0:0:10:0:0:0:0/64\", vxlanMode: Always}\n",
        ),
        (
            "kube_controllers_configuration",
            "apiVersion: projectcalico.org/v3\nkind: KubeControllersConfiguration\nmetadata: {name: default}\nspec: {controllers: {node: {syncLabels: Enabled}}}\n",
        ),
        (
            "felix_configuration_deprecated_ctlb",
            "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata: {name: default}\nspec: {bpfConnectTimeLoadBalancingEnabled: false}\n",
        ),
        (
            "felix_configuration_empty",
            "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata: {name: node.node1}\n",
        ),
        (
            "tier",
            "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: security}\n",
        ),
        (
            "network_policy",
            "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: allow-dns, namespace: prod}\nspec:\n  order: 10.5\n  egress: [{action: Allow, protocol: UDP, destination: {ports: [53]}}]\n",
        ),
    ];
    for (name, text) in documents {
        insta::assert_yaml_snapshot!(format!("defaulted_{name}"), defaulted(text));
    }
}

mod properties {
    use proptest::prelude::*;

    use crate::resource::Resource;
    use crate::resource::validate::{SelectorContext, check_selector, validate_and_default};

    proptest! {
        /// Validation of arbitrary specs reports errors and never panics.
        #[test]
        fn arbitrary_specs_never_panic(
            kind_index in 0usize..16,
            cidr in "[0-9a-f:./]{0,24}",
            port in proptest::num::i64::ANY,
            text in "\\PC{0,30}",
        ) {
            let kind = crate::resource::Kind::ALL[kind_index];
            let mut resource = Resource::new(kind, "fuzz");
            if kind.is_namespaced() {
                resource.metadata.namespace = Some("default".to_string());
            }
            resource.spec = serde_json::json!({
                "cidr": cidr,
                "ingress": [{"action": "Allow", "protocol": "TCP", "destination": {"ports": [port, text]}}],
            });
            let _ = validate_and_default(&mut resource);
        }

        #[test]
        fn arbitrary_selectors_never_panic(text in "\\PC{0,60}") {
            let _ = check_selector("spec.selector", &text, SelectorContext::Plain);
            let _ = check_selector("spec.selector", &text, SelectorContext::EntityRuleNamespace);
        }
    }
}
