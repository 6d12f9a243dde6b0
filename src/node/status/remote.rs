//! `netctl node status --node NAME` / `--all`: a node's BGP sessions asked through the datastore,
//! from anywhere, with the CalicoNodeStatus resource that calico-node fills in.
//!
//! calico-node's status reporter (`node/pkg/status/`, v3.22 on; part of `calico-node
//! -status-reporter` and, from v3.32, `-node-services`) watches CalicoNodeStatus objects whose
//! `spec.node` is its node. For a new one it asks its BIRD daemons at once and writes `status`
//! with `lastUpdated`, then again every `updatePeriodSeconds` when something changed. So netctl
//! creates one object per node (this module builds it), waits until `status.lastUpdated` is set,
//! reads it and deletes the object; the executor's `node.status` step does the writing, waiting
//! and deleting. This module reads what came back and draws it: the peer table as the local
//! `node status` draws it, the BIRD daemons' state and the route counts, and for many nodes one
//! row each with its established/total sessions.
//!
//! The status carries BGP session states (`Established`, `Active`, …), not BIRD's protocol states,
//! so the table's STATE column is derived as BIRD shows it: `up` for an established session,
//! `down` when BIRD reported none of the session states (a failed protocol), `start` otherwise.

use serde::{Deserialize, Serialize};

use super::bird::{BgpPeer, IpVersion, PeerType};
use crate::resource::spec::node_status::{CLASSES, CalicoNodeStatusStatus, PeerStatus};
use crate::resource::{Kind, Resource};

/// The label on every object netctl creates, its value the query's id: `netctl get
/// caliconodestatus -l netctl.projectcalico.org/node-status` finds any left behind.
pub const QUERY_LABEL: &str = "netctl.projectcalico.org/node-status";

/// How often calico-node refreshes an object while netctl waits. The first report comes at once,
/// so this only matters when it fails (calico-node then tries again at the next period) or when
/// netctl is killed before it deletes the object (it is then refreshed at this pace until someone
/// deletes it).
pub const UPDATE_PERIOD_SECONDS: u32 = 10;

/// The longest object name (a DNS subdomain).
const MAXIMUM_NAME: usize = 253;

/// The name of the object asking `node` (the `index`-th of the query) within query `id`:
/// `netctl-status-<id>-<node>`, or `netctl-status-<id>-<index>` when that would be too long.
pub fn object_name(id: &str, node: &str, index: usize) -> String {
    let name = format!("netctl-status-{id}-{node}");
    if name.len() <= MAXIMUM_NAME {
        name
    } else {
        format!("netctl-status-{id}-{index}")
    }
}

/// The CalicoNodeStatus that asks `node` for every class.
pub fn request(name: &str, node: &str, id: &str) -> Resource {
    let mut resource = Resource::new(Kind::CalicoNodeStatus, name);
    resource
        .metadata
        .labels
        .insert(QUERY_LABEL.to_string(), id.to_string());
    resource.spec = serde_json::json!({
        "node": node,
        "classes": CLASSES,
        "updatePeriodSeconds": UPDATE_PERIOD_SECONDS,
    });
    resource
}

/// Whether calico-node has written the status: `lastUpdated` is set.
pub fn is_filled_in(status: &serde_json::Value) -> bool {
    status
        .get("lastUpdated")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|updated| !updated.is_empty())
}

/// What became of one node's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAnswer {
    pub node: String,
    /// The CalicoNodeStatus object that asked.
    pub object: String,
    /// What calico-node wrote, as it wrote it; `None` when it never answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
    /// Why there is no status (`no answer within 30s`, the object deleted by someone else).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl NodeAnswer {
    /// The status, typed; `None` when there is none.
    pub fn report(&self) -> Option<CalicoNodeStatusStatus> {
        self.status
            .clone()
            .and_then(|status| serde_json::from_value(status).ok())
    }
}

/// `-o json|yaml` of `node status --node/--all`.
#[derive(Debug, Serialize)]
pub struct RemoteDocument<'a> {
    pub nodes: Vec<RemoteNodeDocument<'a>>,
}

#[derive(Debug, Serialize)]
pub struct RemoteNodeDocument<'a> {
    pub node: &'a str,
    pub answered: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
}

/// The answers as a document.
pub fn document(answers: &[NodeAnswer]) -> RemoteDocument<'_> {
    RemoteDocument {
        nodes: answers
            .iter()
            .map(|answer| RemoteNodeDocument {
                node: &answer.node,
                answered: answer.status.is_some(),
                status: answer.status.as_ref(),
                reason: answer.reason.as_deref(),
            })
            .collect(),
    }
}

/// A reported session as the local table shows one.
fn table_peer(peer: &PeerStatus) -> BgpPeer {
    let state = match peer.state.as_str() {
        "Established" => "up",
        "" => "down",
        _ => "start",
    };
    BgpPeer {
        peer_ip: peer.peer_ip.clone(),
        peer_type: PeerType::from_status(&peer.peer_type).unwrap_or(PeerType::Global),
        state: state.to_string(),
        since: peer.since.clone(),
        bgp_state: peer.state.clone(),
        info: String::new(),
    }
}

fn daemon_line(label: &str, daemon: &crate::resource::spec::node_status::DaemonStatus) -> String {
    let mut parts = Vec::new();
    if !daemon.version.is_empty() {
        parts.push(daemon.version.clone());
    }
    if !daemon.router_id.is_empty() {
        parts.push(format!("router ID {}", daemon.router_id));
    }
    if !daemon.last_boot_time.is_empty() {
        parts.push(format!("last boot {}", daemon.last_boot_time));
    }
    if !daemon.last_reconfiguration_time.is_empty() {
        parts.push(format!(
            "last reconfiguration {}",
            daemon.last_reconfiguration_time
        ));
    }
    let state = if daemon.state.is_empty() {
        "unknown"
    } else {
        daemon.state.as_str()
    };
    if parts.is_empty() {
        format!("{label}: {state}\n")
    } else {
        format!("{label}: {state} ({})\n", parts.join(", "))
    }
}

fn route_counts(routes: &[crate::resource::spec::node_status::RouteEntry]) -> String {
    let fib = routes
        .iter()
        .filter(|route| route.route_type == "FIB")
        .count();
    let rib = routes
        .iter()
        .filter(|route| route.route_type == "RIB")
        .count();
    format!("{} ({fib} FIB, {rib} RIB)", routes.len())
}

/// One node's report: the BIRD daemons, the peer table of each family, the route counts. A node
/// that never answered gets one line saying why.
pub fn render_node(answer: &NodeAnswer) -> String {
    let Some(report) = answer.report() else {
        return format!(
            "Node {}: no status ({})\n",
            answer.node,
            answer.reason.as_deref().unwrap_or("no answer")
        );
    };
    let mut out = format!(
        "Node {}: status reported by calico-node at {}\n",
        answer.node,
        report.last_updated.as_deref().unwrap_or("an unknown time")
    );
    out.push_str(&daemon_line("BIRDv4", &report.agent.bird_v4));
    out.push_str(&daemon_line("BIRDv6", &report.agent.bird_v6));
    for (version, peers) in [
        (IpVersion::V4, &report.bgp.peers_v4),
        (IpVersion::V6, &report.bgp.peers_v6),
    ] {
        out.push_str(&format!("\nIPv{} BGP status\n", version.number()));
        let peers: Vec<BgpPeer> = peers.iter().map(table_peer).collect();
        out.push_str(&super::table::peer_table(&peers, version));
    }
    out.push_str(&format!(
        "\nRoutes: IPv4 {}, IPv6 {}\n",
        route_counts(&report.routes.routes_v4),
        route_counts(&report.routes.routes_v6)
    ));
    out
}

/// The headings of the one-row-per-node table (`--all`).
pub const SUMMARY_HEADINGS: [&str; 8] = [
    "NODE",
    "BIRD",
    "BIRD6",
    "IPV4 SESSIONS",
    "IPV6 SESSIONS",
    "IPV4 ROUTES",
    "IPV6 ROUTES",
    "REPORTED",
];

/// One node's row: the daemons' states, established/total sessions per family, routes per family,
/// and when calico-node reported (or why it did not).
pub fn summary_row(answer: &NodeAnswer) -> Vec<String> {
    let Some(report) = answer.report() else {
        let mut row = vec![answer.node.clone()];
        row.extend(std::iter::repeat_n("-".to_string(), 6));
        row.push(answer.reason.clone().unwrap_or_else(|| "no answer".into()));
        return row;
    };
    let state = |daemon: &crate::resource::spec::node_status::DaemonStatus| {
        if daemon.state.is_empty() {
            "-".to_string()
        } else {
            daemon.state.clone()
        }
    };
    let bgp = &report.bgp;
    vec![
        answer.node.clone(),
        state(&report.agent.bird_v4),
        state(&report.agent.bird_v6),
        format!(
            "{}/{}",
            bgp.number_established_v4,
            bgp.number_established_v4 + bgp.number_not_established_v4
        ),
        format!(
            "{}/{}",
            bgp.number_established_v6,
            bgp.number_established_v6 + bgp.number_not_established_v6
        ),
        report.routes.routes_v4.len().to_string(),
        report.routes.routes_v6.len().to_string(),
        report.last_updated.clone().unwrap_or_default(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status as calico-node v3.32 writes it (the shape of upstream's node status e2e test).
    fn reported() -> serde_json::Value {
        serde_json::json!({
            "lastUpdated": "2026-03-01T10:00:05Z",
            "agent": {
                "birdV4": {"state": "Ready", "version": "v0.3.3+birdv1.6.8", "routerID": "172.18.0.2",
                           "lastBootTime": "2026-03-01 09:58:36", "lastReconfigurationTime": "2026-03-01 09:58:36"},
                "birdV6": {"state": "NotReady"}
            },
            "bgp": {
                "numberEstablishedV4": 1, "numberNotEstablishedV4": 2,
                "numberEstablishedV6": 0, "numberNotEstablishedV6": 0,
                "peersV4": [
                    {"peerIP": "172.18.0.3", "type": "NodeMesh", "state": "Established", "since": "09:58:37"},
                    {"peerIP": "172.18.0.9", "type": "NodePeer", "state": "Active", "since": "09:58:37"},
                    {"peerIP": "10.0.0.1", "type": "GlobalPeer", "since": "09:58:40"}
                ]
            },
            "routes": {
                "routesV4": [
                    {"type": "FIB", "destination": "0.0.0.0/0", "gateway": "172.18.0.1", "interface": "eth0",
                     "learnedFrom": {"sourceType": "Kernel"}},
                    {"type": "RIB", "destination": "192.168.82.0/26", "gateway": "172.18.0.3", "interface": "eth0",
                     "learnedFrom": {"sourceType": "NodeMesh", "peerIP": "172.18.0.3"}}
                ]
            }
        })
    }

    #[test]
    fn the_request_asks_for_every_class_and_is_labelled() {
        let request = request("netctl-status-ab12cd34-node-1", "node-1", "ab12cd34");
        assert_eq!(request.kind, Kind::CalicoNodeStatus);
        assert_eq!(request.metadata.labels[QUERY_LABEL], "ab12cd34");
        assert_eq!(
            request.spec,
            serde_json::json!({"node": "node-1", "classes": ["Agent", "BGP", "Routes"], "updatePeriodSeconds": 10})
        );
        let mut checked = request.clone();
        crate::resource::validate_and_default(&mut checked).unwrap();
        assert_eq!(
            object_name("ab12cd34", &"n".repeat(240), 3),
            "netctl-status-ab12cd34-3"
        );
    }

    #[test]
    fn only_a_written_last_updated_is_an_answer() {
        assert!(is_filled_in(&reported()));
        assert!(!is_filled_in(&serde_json::Value::Null));
        assert!(!is_filled_in(
            &serde_json::json!({"lastUpdated": null, "agent": {}})
        ));
        assert!(!is_filled_in(&serde_json::json!({"lastUpdated": ""})));
    }

    #[test]
    fn a_node_report_shows_daemons_peers_and_routes() {
        let answer = NodeAnswer {
            node: "node-1".into(),
            object: "netctl-status-x-node-1".into(),
            status: Some(reported()),
            reason: None,
        };
        let text = render_node(&answer);
        assert!(text.starts_with("Node node-1: status reported by calico-node at 2026-03-01T10:00:05Z\nBIRDv4: Ready (v0.3.3+birdv1.6.8, router ID 172.18.0.2, last boot 2026-03-01 09:58:36, last reconfiguration 2026-03-01 09:58:36)\nBIRDv6: NotReady\n"), "{text}");
        assert!(
            text.contains("| 172.18.0.3   | node-to-node mesh | up    | 09:58:37 | Established |"),
            "{text}"
        );
        assert!(
            text.contains("| 172.18.0.9   | node specific     | start | 09:58:37 | Active      |"),
            "{text}"
        );
        assert!(
            text.contains("| 10.0.0.1     | global            | down  | 09:58:40 |             |"),
            "{text}"
        );
        assert!(
            text.contains("IPv6 BGP status\nNo IPv6 peers found.\n"),
            "{text}"
        );
        assert!(
            text.ends_with("Routes: IPv4 2 (1 FIB, 1 RIB), IPv6 0 (0 FIB, 0 RIB)\n"),
            "{text}"
        );
        assert_eq!(
            summary_row(&answer),
            [
                "node-1",
                "Ready",
                "NotReady",
                "1/3",
                "0/0",
                "2",
                "0",
                "2026-03-01T10:00:05Z"
            ]
        );
        let silent = NodeAnswer {
            node: "node-2".into(),
            object: "netctl-status-x-node-2".into(),
            status: None,
            reason: Some("no answer within 30s".into()),
        };
        assert_eq!(
            render_node(&silent),
            "Node node-2: no status (no answer within 30s)\n"
        );
        assert_eq!(summary_row(&silent)[7], "no answer within 30s");
    }
}
