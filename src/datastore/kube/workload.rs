//! Workload endpoints in the `kubernetes` datastore: each scheduled, pod-networked Pod is one
//! `WorkloadEndpoint` named `<node>-k8s-<pod>-eth0`, computed from the Pod as upstream does
//! (`libcalico-go/lib/backend/k8s/conversion/workload_endpoint_default.go`, the pod checks in
//! `conversion.go`, the name rules in `lib/names/workloadendpoint.go`).
//!
//! Reads only. Upstream's `resources/workloadendpoint.go` writes a workload endpoint by patching
//! the Pod's `cni.projectcalico.org/podIP(s)` annotations, and only for the CNI plugin (any other
//! caller gets "unsupported PatchMode"); its delete sets those annotations to `""`, which is the
//! CNI plugin's signal that the pod lost its address at teardown. From a CLI that delete would
//! report success while the endpoint stays listed (the Pod's status still has its IPs), or cut a
//! running pod off the network — so netctl refuses create, update and delete and points at the Pod
//! instead. Not modelled: QoS controls (the `qos.projectcalico.org/*` annotations; netctl's
//! `WorkloadEndpoint` spec has no such field) and `FELIX_INTERFACEPREFIX` (the interface name
//! always starts with `cali`, upstream's default; netctl reads no Felix environment).

use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use super::KubeStore;
use crate::datastore::{ListOptions, Page, StoreError};
use crate::resource::spec::endpoint::WorkloadEndpointSpec;
use crate::resource::{API_VERSION, Kind, ObjectMeta, Resource, ResourceKey};

pub const WORKLOAD_ENDPOINTS: &str = "workload endpoints are derived from Kubernetes Pods in the `kubernetes` datastore, and only the CNI plugin writes them";

/// Pod annotations upstream reads (`conversion/constants.go`).
const ANNOTATION_POD_IP: &str = "cni.projectcalico.org/podIP";
const ANNOTATION_POD_IPS: &str = "cni.projectcalico.org/podIPs";
const ANNOTATION_AWS_POD_IPS: &str = "vpc.amazonaws.com/pod-ips";
const ANNOTATION_CONTAINER_ID: &str = "cni.projectcalico.org/containerID";
const ANNOTATION_FLOATING_IPS: &str = "cni.projectcalico.org/floatingIPs";
const ANNOTATION_SOURCE_PREFIXES: &str = "cni.projectcalico.org/allowedSourcePrefixes";
const ANNOTATION_NETWORK_STATUS: &str = "k8s.v1.cni.cncf.io/network-status";

/// The one endpoint of a Kubernetes pod.
const ENDPOINT: &str = "eth0";
const ORCHESTRATOR: &str = "k8s";

/// The identifiers in a workload endpoint name of the Kubernetes orchestrator.
#[derive(Debug, PartialEq)]
pub struct EndpointName {
    pub node: String,
    pub pod: String,
    pub endpoint: String,
}

/// `<node>-k8s-<pod>-<endpoint>`, each part with its dashes doubled (upstream
/// `CalculateWorkloadEndpointName`). Kubernetes names never begin or end with a dash, which upstream
/// refuses because the name could not be split again.
pub fn endpoint_name(node: &str, pod: &str, endpoint: &str) -> String {
    [node, ORCHESTRATOR, pod, endpoint]
        .iter()
        .map(|part| part.replace('-', "--"))
        .collect::<Vec<_>>()
        .join("-")
}

/// Splits a workload endpoint name on single dashes, undoubling the doubled ones (upstream
/// `extractParts`); `None` unless it names a Kubernetes pod's endpoint.
pub fn parse_endpoint_name(name: &str) -> Option<EndpointName> {
    let bytes = name.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut index = 1;
    while index < bytes.len() {
        if bytes[index] == b'-' {
            if bytes.get(index + 1) == Some(&b'-') {
                index += 2;
                continue;
            }
            parts.push(name[start..index].replace("--", "-"));
            start = index + 1;
        }
        index += 1;
    }
    parts.push(name.get(start..)?.replace("--", "-"));
    match parts.as_slice() {
        [node, orchestrator, pod, endpoint]
            if orchestrator == ORCHESTRATOR && !node.is_empty() && !pod.is_empty() =>
        {
            Some(EndpointName {
                node: node.clone(),
                pod: pod.clone(),
                endpoint: endpoint.clone(),
            })
        }
        _ => None,
    }
}

/// The host-side interface name the CNI plugin gives a pod: `cali` and the first 11 hex digits of
/// the SHA-1 of `<namespace>.<pod>` (upstream `VethNameForWorkload`).
pub fn interface_name(namespace: &str, pod: &str) -> String {
    let digest = sha1(format!("{namespace}.{pod}").as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("cali{}", &hex[..11])
}

/// Whether a Pod has a workload endpoint at all: upstream (`IsValidCalicoWorkloadEndpoint`) skips
/// host-networked pods and pods not yet scheduled to a node. Finished pods and pods without an
/// address are kept, with no IP networks.
fn has_endpoint(pod: &Pod) -> bool {
    let Some(spec) = &pod.spec else {
        return false;
    };
    !spec.host_network.unwrap_or(false)
        && spec
            .node_name
            .as_deref()
            .is_some_and(|node| !node.is_empty())
}

/// A pod that finished (or whose network was torn down while it terminates) no longer owns its IPs
/// (upstream `IsFinished`).
fn is_finished(pod: &Pod) -> bool {
    let annotations = pod.metadata.annotations.as_ref();
    let emptied = |key: &str| {
        annotations
            .and_then(|map| map.get(key))
            .is_some_and(String::is_empty)
    };
    if pod.metadata.deletion_timestamp.is_some()
        && (emptied(ANNOTATION_POD_IP) || emptied(ANNOTATION_AWS_POD_IPS))
    {
        return true;
    }
    let phase = pod
        .status
        .as_ref()
        .and_then(|status| status.phase.as_deref());
    matches!(phase, Some("Failed" | "Succeeded" | "Completed"))
}

/// An address or network, as upstream's `ParseCIDROrIP`: a CIDR is reduced to its network, a bare
/// address is a host network (`/32`, `/128`).
fn parse_network(text: &str) -> Option<(IpAddr, u8)> {
    let text = text.trim();
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address.parse::<IpAddr>().ok()?, prefix.parse::<u8>().ok()?),
        None => {
            let address = text.parse::<IpAddr>().ok()?;
            let bits = if address.is_ipv4() { 32 } else { 128 };
            (address, bits)
        }
    };
    let network = match address {
        IpAddr::V4(address) if prefix <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::from((u32::from(address) & mask).to_be_bytes())
        }
        IpAddr::V6(address) if prefix <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::from((u128::from(address) & mask).to_be_bytes())
        }
        _ => return None,
    };
    Some((network, prefix))
}

fn invalid_annotation(pod: &str, annotation: &str, source: serde_json::Error) -> StoreError {
    StoreError::InvalidData {
        location: format!("pod `{pod}` (annotation `{annotation}`)"),
        source,
    }
}

fn bad_value(pod: &str, what: &'static str, value: &str) -> StoreError {
    StoreError::failed(
        "a read of workload endpoints",
        super::errors::KubeError::InvalidPod {
            pod: pod.to_string(),
            what,
            value: value.to_string(),
        },
    )
}

/// The pod's IPs in upstream's order of preference (`getPodIPs`): the status (plural, then
/// singular), then the Calico CNI annotations (plural, then singular), then the AWS VPC CNI one.
fn pod_networks(pod: &Pod, shown: &str) -> Result<Vec<(IpAddr, u8)>, StoreError> {
    let annotation = |key: &str| {
        pod.metadata
            .annotations
            .as_ref()
            .and_then(|map| map.get(key))
            .filter(|value| !value.is_empty())
            .cloned()
    };
    let status = pod.status.as_ref();
    let status_ips: Vec<String> = status
        .and_then(|status| status.pod_ips.as_ref())
        .map(|ips| ips.iter().map(|ip| ip.ip.clone()).collect())
        .unwrap_or_default();
    let texts: Vec<String> = if !status_ips.is_empty() {
        status_ips
    } else if let Some(ip) = status
        .and_then(|status| status.pod_ip.clone())
        .filter(|ip| !ip.is_empty())
    {
        vec![ip]
    } else if let Some(ips) = annotation(ANNOTATION_POD_IPS) {
        ips.split(',').map(str::to_string).collect()
    } else if let Some(ip) = annotation(ANNOTATION_POD_IP) {
        vec![ip]
    } else if let Some(ips) = annotation(ANNOTATION_AWS_POD_IPS) {
        ips.split(',').map(str::to_string).collect()
    } else {
        Vec::new()
    };
    texts
        .iter()
        .map(|text| parse_network(text).ok_or_else(|| bad_value(shown, "pod IP", text)))
        .collect()
}

/// Named ports and host ports of the containers (upstream `appendEndpointPorts`): a port is listed
/// when it has a name or a host port; unknown protocols are skipped.
fn endpoint_ports(containers: &[Container]) -> Vec<Value> {
    let mut ports = Vec::new();
    for port in containers
        .iter()
        .flat_map(|container| container.ports.iter().flatten())
    {
        let name = port.name.clone().unwrap_or_default();
        let host_port = port.host_port.unwrap_or(0);
        if port.container_port == 0 || (host_port == 0 && name.is_empty()) {
            continue;
        }
        let protocol = match port.protocol.as_deref().unwrap_or("TCP") {
            "TCP" | "" => "TCP",
            "UDP" => "UDP",
            "SCTP" => "SCTP",
            _ => continue,
        };
        let mut entry = json!({"name": name, "protocol": protocol, "port": port.container_port});
        if host_port != 0 {
            entry["hostPort"] = json!(host_port);
        }
        if let Some(host_ip) = port.host_ip.as_deref().filter(|ip| !ip.is_empty()) {
            entry["hostIP"] = json!(host_ip);
        }
        ports.push(entry);
    }
    ports
}

/// The workload endpoint of a Pod, or `None` for a pod that has none (see [`has_endpoint`]).
pub fn pod_to_workload_endpoint(pod: &Pod) -> Result<Option<Resource>, StoreError> {
    if !has_endpoint(pod) {
        return Ok(None);
    }
    let metadata = &pod.metadata;
    let spec = pod.spec.clone().unwrap_or_default();
    let namespace = metadata.namespace.clone().unwrap_or_default();
    let name = metadata.name.clone().unwrap_or_default();
    let node = spec.node_name.clone().unwrap_or_default();
    let shown = format!("{namespace}/{name}");
    let annotations = metadata.annotations.clone().unwrap_or_default();
    let account = spec.service_account_name.clone().unwrap_or_default();

    let mut profiles = vec![format!("kns.{namespace}")];
    if !account.is_empty() {
        profiles.push(format!("ksa.{namespace}.{account}"));
    }
    let networks = if is_finished(pod) {
        // Its IPs have gone back to the pool; upstream keeps the endpoint but without them.
        Vec::new()
    } else {
        pod_networks(pod, &shown)?
    };

    let mut labels = metadata.labels.clone().unwrap_or_default();
    labels.insert("projectcalico.org/namespace".into(), namespace.clone());
    labels.insert("projectcalico.org/orchestrator".into(), ORCHESTRATOR.into());
    // Upstream adds it only below 63 characters, the label value limit.
    if !account.is_empty() && account.len() < 63 {
        labels.insert("projectcalico.org/serviceaccount".into(), account.clone());
    }

    // One-to-one NAT of floating IPs onto the pod IP of the same family; the pod IP must be a
    // single address.
    let mut nats = Vec::new();
    if let Some(text) = annotations.get(ANNOTATION_FLOATING_IPS)
        && !networks.is_empty()
    {
        let floating: Vec<String> = serde_json::from_str(text)
            .map_err(|source| invalid_annotation(&shown, ANNOTATION_FLOATING_IPS, source))?;
        for (address, prefix) in &networks {
            let host = if address.is_ipv4() { 32 } else { 128 };
            if *prefix != host {
                return Err(bad_value(
                    &shown,
                    "pod IP for floating IPs (not a single address)",
                    &format!("{address}/{prefix}"),
                ));
            }
        }
        let family = |v6: bool| {
            networks
                .iter()
                .rev()
                .find(|(address, _)| address.is_ipv6() == v6)
        };
        for external in floating {
            if let Some((internal, _)) = family(external.contains(':')) {
                nats.push(json!({"internalIP": internal.to_string(), "externalIP": external}));
            }
        }
    }

    let mut source_prefixes = Vec::new();
    if let Some(text) = annotations
        .get(ANNOTATION_SOURCE_PREFIXES)
        .filter(|text| !text.is_empty())
    {
        let prefixes: Vec<String> = serde_json::from_str(text)
            .map_err(|source| invalid_annotation(&shown, ANNOTATION_SOURCE_PREFIXES, source))?;
        for prefix in prefixes {
            if !prefix.contains('/') {
                return Err(bad_value(&shown, "allowed source prefix", &prefix));
            }
            let (network, bits) = parse_network(&prefix)
                .ok_or_else(|| bad_value(&shown, "allowed source prefix", &prefix))?;
            source_prefixes.push(format!("{network}/{bits}"));
        }
    }

    let mut ports = endpoint_ports(&spec.containers);
    ports.extend(endpoint_ports(
        spec.init_containers.as_deref().unwrap_or_default(),
    ));

    let mut body = json!({
        "orchestrator": ORCHESTRATOR,
        "node": node,
        "pod": name,
        "endpoint": ENDPOINT,
        "interfaceName": interface_name(&namespace, &name),
        "profiles": profiles,
    });
    let mut set = |field: &str, value: Value| body[field] = value;
    if let Some(id) = annotations
        .get(ANNOTATION_CONTAINER_ID)
        .filter(|id| !id.is_empty())
    {
        set("containerID", json!(id));
    }
    if !networks.is_empty() {
        let texts: Vec<String> = networks
            .iter()
            .map(|(address, prefix)| format!("{address}/{prefix}"))
            .collect();
        set("ipNetworks", json!(texts));
    }
    if !ports.is_empty() {
        set("ports", json!(ports));
    }
    if !nats.is_empty() {
        set("ipNATs", json!(nats));
    }
    if !account.is_empty() {
        set("serviceAccountName", json!(account));
    }
    if !source_prefixes.is_empty() {
        set("allowSpoofedSourcePrefixes", json!(source_prefixes));
    }

    // In the field order of the typed spec, so that every output prints as it does from etcd.
    let body = serde_json::from_value::<WorkloadEndpointSpec>(body.clone())
        .and_then(serde_json::to_value)
        .unwrap_or(body);

    let mut endpoint_annotations = std::collections::BTreeMap::new();
    if let Some(status) = annotations.get(ANNOTATION_NETWORK_STATUS) {
        endpoint_annotations.insert(ANNOTATION_NETWORK_STATUS.to_string(), status.clone());
    }
    let mut other = serde_json::Map::new();
    if let Some(generate_name) = &metadata.generate_name {
        other.insert("generateName".into(), json!(generate_name));
    }
    Ok(Some(Resource {
        api_version: API_VERSION.to_string(),
        kind: Kind::WorkloadEndpoint,
        metadata: ObjectMeta {
            name: endpoint_name(&node, &name, ENDPOINT),
            namespace: Some(namespace),
            labels,
            annotations: endpoint_annotations,
            other,
            // The pod's own UID, unconverted, as upstream.
            ..super::derived::kept_metadata(metadata)
        },
        spec: body,
        status: Value::Null,
    }))
}

fn pod_api(store: &KubeStore, namespace: Option<&str>) -> Api<Pod> {
    match namespace {
        Some(namespace) => Api::namespaced(store.api.client.clone(), namespace),
        None => Api::all(store.api.client.clone()),
    }
}

/// Reads the pod a workload endpoint name points at; the endpoint must be the one that pod has.
pub async fn get(store: &KubeStore, key: &ResourceKey) -> Result<Resource, StoreError> {
    let not_found = || StoreError::NotFound(key.clone());
    let parsed = parse_endpoint_name(&key.name).ok_or_else(not_found)?;
    let namespace = key.namespace.as_deref().unwrap_or("default");
    let pod = store
        .call(
            store.request("get", "pods", Some(key), None),
            pod_api(store, Some(namespace)).get(&parsed.pod),
        )
        .await?;
    match pod_to_workload_endpoint(&pod)? {
        Some(endpoint) if endpoint.metadata.name == key.name => Ok(endpoint),
        _ => Err(not_found()),
    }
}

/// One page of pods (the API's `limit` and `continue`), converted; pods without an endpoint are
/// left out, so a page may hold fewer items than asked for, or none, and still have a next page.
pub async fn list(
    store: &KubeStore,
    options: &ListOptions,
    continue_token: Option<&str>,
) -> Result<Page, StoreError> {
    let mut params = ListParams::default().limit(super::page_size(options));
    if let Some(token) = continue_token {
        params = params.continue_token(token);
    }
    let list = store
        .call(
            store.request("list", "pods", None, None),
            pod_api(store, options.namespace.as_deref()).list(&params),
        )
        .await?;
    let mut items = Vec::with_capacity(list.items.len());
    for pod in &list.items {
        if let Some(endpoint) = pod_to_workload_endpoint(pod)? {
            items.push(endpoint);
        }
    }
    Ok(Page {
        items,
        bodies: Vec::new(),
        continue_token: list.metadata.continue_.filter(|token| !token.is_empty()),
        revision: list.metadata.resource_version.unwrap_or_default(),
    })
}

/// SHA-1 (FIPS 180-4), for the interface name only: upstream derives it with SHA-1 and the CNI
/// plugin named the host's interfaces that way, so nothing else would match. Not for security.
fn sha1(message: &[u8]) -> [u8; 20] {
    let mut state: [u32; 5] = [
        0x6745_2301,
        0xefcd_ab89,
        0x98ba_dcfe,
        0x1032_5476,
        0xc3d2_e1f0,
    ];
    let mut padded = message.to_vec();
    padded.push(0x80);
    while padded.len() % 64 != 56 {
        padded.push(0);
    }
    padded.extend_from_slice(&((message.len() as u64).wrapping_mul(8)).to_be_bytes());
    for block in padded.chunks_exact(64) {
        let mut words = [0u32; 80];
        for (index, word) in block.chunks_exact(4).enumerate() {
            words[index] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for index in 16..80 {
            words[index] =
                (words[index - 3] ^ words[index - 8] ^ words[index - 14] ^ words[index - 16])
                    .rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = state;
        for (index, word) in words.iter().enumerate() {
            let (f, k) = match index {
                0..=19 => ((b & c) | (!b & d), 0x5a82_7999),
                20..=39 => (b ^ c ^ d, 0x6ed9_eba1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8f1b_bcdc),
                _ => (b ^ c ^ d, 0xca62_c1d6),
            };
            let next = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*word);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = next;
        }
        for (slot, value) in state.iter_mut().zip([a, b, c, d, e]) {
            *slot = slot.wrapping_add(value);
        }
    }
    let mut digest = [0u8; 20];
    for (chunk, word) in digest.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    digest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Hint;

    fn pod(value: Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn sha1_matches_the_standard_test_vectors() {
        let hex = |digest: [u8; 20]| -> String {
            digest.iter().map(|byte| format!("{byte:02x}")).collect()
        };
        assert_eq!(hex(sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            hex(sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(sha1(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
    }

    #[test]
    fn interface_names_hash_namespace_and_pod() {
        // Expected values from `printf 'prod.web-0' | sha1sum` (aa960f0d82e7…) and
        // `printf 'default.web-0' | sha1sum` (0d7763386da2…).
        assert_eq!(interface_name("prod", "web-0"), "caliaa960f0d82e");
        assert_eq!(interface_name("default", "web-0"), "cali0d7763386da");
    }

    #[test]
    fn names_double_dashes_and_split_back() {
        let name = endpoint_name("node-1", "web-0", "eth0");
        assert_eq!(name, "node--1-k8s-web--0-eth0");
        assert_eq!(
            parse_endpoint_name(&name),
            Some(EndpointName {
                node: "node-1".into(),
                pod: "web-0".into(),
                endpoint: "eth0".into()
            })
        );
        assert_eq!(parse_endpoint_name("node1-cni-abc-eth0"), None);
        assert_eq!(parse_endpoint_name("node1-k8s-web"), None);
        assert_eq!(parse_endpoint_name("node1-k8s-web-eth0-x"), None);
        assert_eq!(parse_endpoint_name(""), None);
    }

    #[test]
    fn a_pod_becomes_its_workload_endpoint() {
        let pod = pod(json!({
            "metadata": {"name": "web-0", "namespace": "prod", "uid": "u-1",
                "resourceVersion": "9", "generateName": "web-", "labels": {"app": "web"},
                "annotations": {"cni.projectcalico.org/podIP": "10.244.1.5/32",
                    "cni.projectcalico.org/podIPs": "10.244.1.5/32,fd00::5/128",
                    "cni.projectcalico.org/containerID": "abc123",
                    "cni.projectcalico.org/floatingIPs": "[\"192.0.2.1\", \"2001:db8::1\"]",
                    "cni.projectcalico.org/allowedSourcePrefixes": "[\"10.1.2.3/16\"]",
                    "unrelated": "x"}},
            "spec": {"nodeName": "node-1", "serviceAccountName": "web-sa",
                "containers": [{"name": "c", "ports": [
                    {"containerPort": 80, "name": "http"},
                    {"containerPort": 53, "protocol": "UDP", "hostPort": 5353, "hostIP": "10.0.0.1"},
                    {"containerPort": 9090},
                    {"containerPort": 7, "name": "odd", "protocol": "QUIC"}]}],
                "initContainers": [{"name": "i", "ports": [{"containerPort": 8443, "name": "init", "protocol": "SCTP"}]}]}
        }));
        let endpoint = pod_to_workload_endpoint(&pod).unwrap().unwrap();
        assert_eq!(endpoint.metadata.name, "node--1-k8s-web--0-eth0");
        assert_eq!(endpoint.metadata.namespace.as_deref(), Some("prod"));
        assert_eq!(endpoint.metadata.uid.as_deref(), Some("u-1"));
        assert_eq!(endpoint.metadata.resource_version.as_deref(), Some("9"));
        assert_eq!(endpoint.metadata.other["generateName"], "web-");
        assert!(endpoint.metadata.annotations.is_empty());
        assert_eq!(
            serde_json::to_value(&endpoint.metadata.labels).unwrap(),
            json!({"app": "web", "projectcalico.org/namespace": "prod",
                   "projectcalico.org/orchestrator": "k8s",
                   "projectcalico.org/serviceaccount": "web-sa"})
        );
        assert_eq!(
            endpoint.spec,
            json!({
                "orchestrator": "k8s", "node": "node-1", "pod": "web-0", "endpoint": "eth0",
                "containerID": "abc123",
                "interfaceName": interface_name("prod", "web-0"),
                "profiles": ["kns.prod", "ksa.prod.web-sa"],
                "ipNetworks": ["10.244.1.5/32", "fd00::5/128"],
                "ipNATs": [{"internalIP": "10.244.1.5", "externalIP": "192.0.2.1"},
                           {"internalIP": "fd00::5", "externalIP": "2001:db8::1"}],
                "serviceAccountName": "web-sa",
                "allowSpoofedSourcePrefixes": ["10.1.0.0/16"],
                "ports": [
                    {"name": "http", "protocol": "TCP", "port": 80},
                    {"name": "", "protocol": "UDP", "port": 53, "hostPort": 5353, "hostIP": "10.0.0.1"},
                    {"name": "init", "protocol": "SCTP", "port": 8443}
                ]
            })
        );
        let mut validated = endpoint.clone();
        crate::resource::validate_and_default(&mut validated).unwrap();
    }

    #[test]
    fn the_status_ips_come_first_and_finished_pods_have_none() {
        let running = pod(json!({
            "metadata": {"name": "a", "namespace": "n",
                "annotations": {"cni.projectcalico.org/podIP": "10.0.0.9/32"}},
            "spec": {"nodeName": "n1", "containers": []},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}
        }));
        let endpoint = pod_to_workload_endpoint(&running).unwrap().unwrap();
        assert_eq!(
            endpoint.spec["ipNetworks"],
            json!(["10.0.0.1/32", "fd00::1/128"])
        );
        assert!(
            !endpoint
                .metadata
                .labels
                .contains_key("projectcalico.org/serviceaccount")
        );
        assert_eq!(endpoint.spec["profiles"], json!(["kns.n"]));

        let mut finished = running.clone();
        finished.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let endpoint = pod_to_workload_endpoint(&finished).unwrap().unwrap();
        assert!(endpoint.spec.get("ipNetworks").is_none());

        // Being deleted, with the CNI plugin having emptied the annotation: finished too.
        let mut terminating = pod(json!({
            "metadata": {"name": "a", "namespace": "n", "deletionTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {"cni.projectcalico.org/podIP": ""}},
            "spec": {"nodeName": "n1", "containers": []},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        }));
        assert!(
            pod_to_workload_endpoint(&terminating)
                .unwrap()
                .unwrap()
                .spec
                .get("ipNetworks")
                .is_none()
        );
        terminating.metadata.annotations = None;
        assert_eq!(
            pod_to_workload_endpoint(&terminating)
                .unwrap()
                .unwrap()
                .spec["ipNetworks"],
            json!(["10.0.0.1/32"])
        );
    }

    #[test]
    fn unscheduled_and_host_networked_pods_have_no_endpoint() {
        let pending = pod(json!({"metadata": {"name": "a", "namespace": "n"},
            "spec": {"containers": []}}));
        assert!(pod_to_workload_endpoint(&pending).unwrap().is_none());
        let host = pod(json!({"metadata": {"name": "a", "namespace": "n"},
            "spec": {"nodeName": "n1", "hostNetwork": true, "containers": []}}));
        assert!(pod_to_workload_endpoint(&host).unwrap().is_none());
        let no_ip = pod(json!({"metadata": {"name": "a", "namespace": "n"},
            "spec": {"nodeName": "n1", "containers": []}}));
        let endpoint = pod_to_workload_endpoint(&no_ip).unwrap().unwrap();
        assert!(endpoint.spec.get("ipNetworks").is_none());
    }

    #[test]
    fn a_bad_annotation_names_the_pod() {
        let bad = pod(json!({"metadata": {"name": "a", "namespace": "n",
                "annotations": {"cni.projectcalico.org/podIP": "not-an-ip"}},
            "spec": {"nodeName": "n1", "containers": []}}));
        let error = pod_to_workload_endpoint(&bad).unwrap_err();
        assert_eq!(
            crate::errors::error_chain(&error),
            "a read of workload endpoints failed: pod `n/a` has an invalid pod IP `not-an-ip`, so its workload endpoint cannot be shown"
        );
        assert!(error.hint().unwrap().contains("annotation"));
    }
}
