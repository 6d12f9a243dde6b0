//! What the verification observes, each read once: the BGP sessions of every BGP node (temporary
//! CalicoNodeStatus objects, as `netctl node status --all`), the IPAM check's problems
//! (`datastore::ipam_check`), the count and digest of each kind of resource, the node agent pods
//! and, for operator installs, TigeraStatus. Reads only, but for the CalicoNodeStatus objects,
//! which `node.status` creates and always deletes.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{ApiResource, DynamicObject, ListParams};
use sha2::{Digest, Sha256};

use crate::datastore::ipam_check::{IpamCheckError, scan};
use crate::datastore::{Datastore, ListOptions, StoreError, for_each};
use crate::exec::actions::node::status::{NodeStatusActionError, NodeStatusOutput, ask};
use crate::exec::actions::{Outcome, RunMode};
use crate::exec::interrupt::Interrupt;
use crate::exec::preflight::node_agents::{
    NODE_AGENT_SELECTOR, agent_image, image_tag, node_agent_pods,
};
use crate::ipam::check::{Checker, Detail};
use crate::node::status::remote;
use crate::plan::action::{
    KindDigest, NAMED_DIGESTS, NodeSessions, NodeStatusQuery, NodeStatusTarget,
};
use crate::resource::{Kind, Resource};

/// Why the cluster could not be observed.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("cannot list the {kind} resources")]
    List {
        kind: Kind,
        #[source]
        source: StoreError,
    },
    #[error("cannot ask the BGP nodes for their sessions")]
    Bgp(#[source] Box<NodeStatusActionError>),
    #[error("cannot run the IPAM check")]
    Ipam(#[source] IpamCheckError),
}

impl crate::errors::Hint for ObserveError {
    fn hint(&self) -> Option<String> {
        match self {
            ObserveError::List { source, .. } => source.hint(),
            ObserveError::Bgp(error) => error.hint(),
            ObserveError::Ipam(error) => error.hint(),
        }
    }
}

/// Kinds whose resources the node agents and controllers write themselves, so an upgrade changes
/// them without any step doing so: not compared (ClusterInformation's `calicoVersion`, Nodes'
/// addresses, workload endpoints, the status objects, Profiles derived from namespaces).
const NOT_COMPARED: [Kind; 5] = [
    Kind::ClusterInformation,
    Kind::Node,
    Kind::WorkloadEndpoint,
    Kind::CalicoNodeStatus,
    Kind::Profile,
];

/// The kinds whose counts and digests are compared.
pub fn compared_kinds() -> impl Iterator<Item = Kind> {
    Kind::ALL
        .into_iter()
        .filter(|kind| !NOT_COMPARED.contains(kind))
}

/// Counts and digests every compared kind, one streamed list each. calico-node writes the
/// per-node FelixConfigurations `node.<name>` on etcd at start (upstream
/// `node/pkg/lifecycle/startup/startup.go`): they are left out.
pub async fn resources(
    store: &dyn Datastore,
) -> Result<BTreeMap<String, KindDigest>, ObserveError> {
    let mut kinds = BTreeMap::new();
    for kind in compared_kinds() {
        let mut hasher = Sha256::new();
        let mut digest = KindDigest::default();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        let visit = |resource: Resource| {
            if kind == Kind::FelixConfiguration && resource.metadata.name.starts_with("node.") {
                return Ok(());
            }
            let one = resource_digest(&resource);
            hasher.update(one.as_bytes());
            digest.count += 1;
            if digest.count <= NAMED_DIGESTS {
                names.insert(resource_name(&resource), one[..12].to_string());
            }
            Ok::<(), StoreError>(())
        };
        match for_each(store, &ListOptions::new(kind), visit).await {
            Ok(()) => {}
            // A kind the cluster's release does not have (its CRD is not installed).
            Err(error) if matches!(error, StoreError::NotFound(_)) || error.is_not_served() => {
                continue;
            }
            Err(source) => return Err(ObserveError::List { kind, source }),
        }
        digest.digest = format!("sha256:{:x}", hasher.finalize());
        if digest.count <= NAMED_DIGESTS {
            digest.names = names;
        }
        kinds.insert(kind.to_string(), digest);
    }
    Ok(kinds)
}

/// `namespace/name`, or the name of a cluster-wide resource.
fn resource_name(resource: &Resource) -> String {
    match &resource.metadata.namespace {
        Some(namespace) => format!("{namespace}/{}", resource.metadata.name),
        None => resource.metadata.name.clone(),
    }
}

/// One resource's digest: namespace, name, labels and spec (not the revision, uid or status).
fn resource_digest(resource: &Resource) -> String {
    let identity = serde_json::json!([
        resource.metadata.namespace,
        resource.metadata.name,
        resource.metadata.labels,
        resource.spec,
    ]);
    format!("{:x}", Sha256::digest(identity.to_string().as_bytes()))
}

/// The problems `ipam check` finds, each as a line (`leaked address 10.0.0.5`); `Ok(None)` with
/// why when the datastore keeps no IPAM.
pub async fn ipam_problems(
    store: &dyn Datastore,
    cluster: Option<&kube::Client>,
) -> Result<Result<BTreeSet<String>, String>, ObserveError> {
    let Some(ipam) = store.ipam() else {
        return Ok(Err(format!(
            "the `{}` datastore keeps no IPAM data",
            store.kind()
        )));
    };
    let mut checker = Checker::new(Detail::Counts);
    let mut sink = std::io::sink();
    let services = async || Ok(cluster.cloned());
    scan(store, ipam, services, &mut checker, &mut sink)
        .await
        .map_err(ObserveError::Ipam)?;
    let findings = checker
        .finish(&mut sink)
        .map_err(|error| ObserveError::Ipam(IpamCheckError::Output(error)))?;
    let mut problems = BTreeSet::new();
    for (what, items) in [
        ("leaked address", &findings.leaked),
        (
            "address in use without an allocation",
            &findings.without_allocation,
        ),
        (
            "address in use outside the active pools",
            &findings.outside_pools,
        ),
        ("leaked handle", &findings.leaked_handles),
        ("handle whose count disagrees", &findings.handle_counts),
        ("damaged block", &findings.damaged_blocks),
    ] {
        problems.extend(items.iter().map(|item| format!("{what} {item}")));
    }
    Ok(Ok(problems))
}

/// The nodes that run BGP: a Node with `spec.bgp`.
pub async fn bgp_nodes(store: &dyn Datastore) -> Result<Vec<String>, ObserveError> {
    let mut nodes = Vec::new();
    for_each(store, &ListOptions::new(Kind::Node), |node| {
        if node.spec.get("bgp").is_some_and(|bgp| !bgp.is_null()) {
            nodes.push(node.metadata.name);
        }
        Ok::<(), StoreError>(())
    })
    .await
    .map_err(|source| ObserveError::List {
        kind: Kind::Node,
        source,
    })?;
    Ok(nodes)
}

/// Asks every BGP node for its sessions, as `netctl node status --all` does.
pub async fn bgp_sessions(
    store: &dyn Datastore,
    nodes: &[String],
    timeout: std::time::Duration,
    interrupt: Option<&Interrupt>,
    printer: &crate::output::Printer,
) -> Result<BTreeMap<String, NodeSessions>, ObserveError> {
    if nodes.is_empty() {
        return Ok(BTreeMap::new());
    }
    let id: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let query = NodeStatusQuery {
        nodes: nodes
            .iter()
            .enumerate()
            .map(|(index, node)| NodeStatusTarget {
                node: node.clone(),
                object: remote::object_name(&id, node, index),
            })
            .collect(),
        id,
        timeout: crate::vocabulary::HumanDuration(timeout),
    };
    let Outcome { output, .. } = ask(store, &query, RunMode::Execute, interrupt, printer)
        .await
        .map_err(|error| ObserveError::Bgp(Box::new(error)))?;
    let answers: NodeStatusOutput = output
        .and_then(|output| serde_json::from_value(output).ok())
        .unwrap_or_default();
    let mut sessions = BTreeMap::new();
    for answer in &answers.answers {
        let mut node = NodeSessions::default();
        match answer.report() {
            Some(report) => {
                node.answered = true;
                for peer in report.bgp.peers_v4.iter().chain(&report.bgp.peers_v6) {
                    match peer.state.as_str() {
                        "Established" => node.established.push(peer.peer_ip.clone()),
                        "" => node
                            .not_established
                            .push(format!("{} (down)", peer.peer_ip)),
                        state => node
                            .not_established
                            .push(format!("{} ({state})", peer.peer_ip)),
                    }
                }
            }
            None => {
                node.reason = Some(
                    answer
                        .reason
                        .clone()
                        .unwrap_or_else(|| "no answer".to_string()),
                );
            }
        }
        sessions.insert(answer.node.clone(), node);
    }
    Ok(sessions)
}

/// The node agent pods (on the nodes of `only`, unless it is empty): those whose calico-node
/// container is not ready or not at `version`, each with its node and why; `Err` when they cannot
/// be listed or there are none (or a node of `only` has none).
pub async fn node_agents(
    client: &kube::Client,
    version: &str,
    only: &[String],
) -> Result<(usize, Vec<String>), String> {
    let mut list = node_agent_pods(client).await?;
    let node_of = |pod: &k8s_openapi::api::core::v1::Pod| {
        pod.spec
            .as_ref()
            .and_then(|spec| spec.node_name.clone())
            .unwrap_or_default()
    };
    if !only.is_empty() {
        list.items.retain(|pod| only.contains(&node_of(pod)));
        if let Some(missing) = only
            .iter()
            .find(|node| !list.items.iter().any(|pod| &node_of(pod) == *node))
        {
            return Err(format!(
                "no node agent pod found on node `{missing}` (label `{NODE_AGENT_SELECTOR}`)"
            ));
        }
    }
    if list.items.is_empty() {
        return Err(format!(
            "no node agent pods found (label `{NODE_AGENT_SELECTOR}`)"
        ));
    }
    let mut problems = Vec::new();
    for pod in &list.items {
        let name = pod.metadata.name.as_deref().unwrap_or("?");
        let spec = pod.spec.as_ref();
        let node = spec
            .and_then(|spec| spec.node_name.as_deref())
            .unwrap_or("no node yet");
        let image = agent_image(pod);
        let tag = image_tag(&image);
        if tag != version && !tag.starts_with(&format!("{version}-")) {
            let running = if tag.is_empty() { image.as_str() } else { tag };
            problems.push(format!("pod `{name}` on node `{node}` runs `{running}`"));
        }
        // The agent's own container, not the pod: on etcd a node agent pod is 1/2 ready by
        // design (the manifest runbooks wait for `1/2`).
        let ready = pod
            .status
            .as_ref()
            .and_then(|status| status.container_statuses.as_ref())
            .and_then(|statuses| {
                statuses
                    .iter()
                    .find(|status| status.name == "calico-node")
                    .or(statuses.first())
            })
            .map(|status| status.ready);
        if ready != Some(true) {
            problems.push(format!(
                "pod `{name}` on node `{node}`: its calico-node container is not ready"
            ));
        }
    }
    Ok((list.items.len(), problems))
}

/// The TigeraStatus objects the operator keeps (`operator.tigera.io/v1`): those not `Available`
/// or `Degraded`, each with the condition's message; `Err` when none can be read.
pub async fn tigera_status(client: &kube::Client) -> Result<(usize, Vec<String>), String> {
    let resource = ApiResource {
        group: "operator.tigera.io".to_string(),
        version: "v1".to_string(),
        api_version: "operator.tigera.io/v1".to_string(),
        kind: "TigeraStatus".to_string(),
        plural: "tigerastatuses".to_string(),
    };
    let api: kube::Api<DynamicObject> = kube::Api::all_with(client.clone(), &resource);
    let list = api.list(&ListParams::default()).await.map_err(|error| {
        format!(
            "cannot list the TigeraStatus objects: {}",
            crate::errors::error_chain(&error)
        )
    })?;
    if list.items.is_empty() {
        return Err("the operator reports no TigeraStatus".to_string());
    }
    let mut problems = Vec::new();
    for status in &list.items {
        let name = status.metadata.name.as_deref().unwrap_or("?");
        let conditions = status.data["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let condition = |kind: &str| {
            conditions
                .iter()
                .find(|condition| condition["type"] == kind)
                .map(|condition| {
                    (
                        condition["status"] == "True",
                        condition["message"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    )
                })
        };
        match condition("Available") {
            Some((true, _)) => {}
            Some((false, message)) => {
                problems.push(format!("`{name}` is not Available{}", note(&message)))
            }
            None => problems.push(format!("`{name}` reports no Available condition")),
        }
        if let Some((true, message)) = condition("Degraded") {
            problems.push(format!("`{name}` is Degraded{}", note(&message)));
        }
    }
    Ok((list.items.len(), problems))
}

fn note(message: &str) -> String {
    match message {
        "" => String::new(),
        message => format!(": {message}"),
    }
}
