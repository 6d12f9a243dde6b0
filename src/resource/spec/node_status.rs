//! CalicoNodeStatus (upstream `api/pkg/apis/projectcalico/v3/nodestatus.go`): a request that a
//! node's calico-node report its BIRD daemons, BGP sessions and routes, and the report it writes
//! back under `status`. The kind is in every line netctl knows (upstream added it in v3.22); the
//! Kubernetes CRD `caliconodestatuses.crd.projectcalico.org` lists the allowed values of
//! `classes` and of the status fields from v3.32 on.
//!
//! The spec is what users write; the status types describe what calico-node writes
//! (`node/pkg/status/populators/`). netctl never writes a status: it reads it (`node status
//! --node`), so the status types accept fields a newer calico-node may add.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The classes of information a CalicoNodeStatus may ask for.
pub const CLASSES: [&str; 3] = ["Agent", "BGP", "Routes"];

/// The longest update period upstream allows: one day.
pub const MAXIMUM_UPDATE_PERIOD_SECONDS: u32 = 86_400;

/// What to report about which node, and how often.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CalicoNodeStatusSpec {
    /// The name of the node (a Calico Node) whose calico-node reports. Required.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// What to report: `Agent`, `BGP`, `Routes`, each at most once. Required.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"type": "string", "enum": ["Agent", "BGP", "Routes"]}))]
    pub classes: Vec<String>,
    /// How often calico-node refreshes the status, 0 (once) to 86400 seconds. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 86_400))]
    pub update_period_seconds: Option<u32>,
}

/// What calico-node reports (upstream `CalicoNodeStatusStatus`). Every part is optional: only the
/// classes asked for are filled in, and a node that never answered has none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CalicoNodeStatusStatus {
    /// When calico-node last wrote the status (RFC 3339, UTC); absent or null until it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    #[serde(default)]
    pub agent: AgentStatus,
    #[serde(default)]
    pub bgp: BgpStatus,
    #[serde(default)]
    pub routes: RouteStatus,
}

/// The BIRD daemons.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(default, rename = "birdV4")]
    pub bird_v4: DaemonStatus,
    #[serde(default, rename = "birdV6")]
    pub bird_v6: DaemonStatus,
}

/// One BIRD daemon, from its `show status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonStatus {
    /// `Ready` or `NotReady` (no socket: BGP is off or BIRD is down).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["Ready", "NotReady"]))]
    pub state: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, rename = "routerID", skip_serializing_if = "String::is_empty")]
    pub router_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_boot_time: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_reconfiguration_time: String,
}

/// The BGP sessions. A session counts as established when BIRD's protocol is `up`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BgpStatus {
    #[serde(default, rename = "numberEstablishedV4")]
    pub number_established_v4: u64,
    #[serde(default, rename = "numberNotEstablishedV4")]
    pub number_not_established_v4: u64,
    #[serde(default, rename = "numberEstablishedV6")]
    pub number_established_v6: u64,
    #[serde(default, rename = "numberNotEstablishedV6")]
    pub number_not_established_v6: u64,
    #[serde(default, rename = "peersV4", skip_serializing_if = "Vec::is_empty")]
    pub peers_v4: Vec<PeerStatus>,
    #[serde(default, rename = "peersV6", skip_serializing_if = "Vec::is_empty")]
    pub peers_v6: Vec<PeerStatus>,
}

/// One BGP session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PeerStatus {
    #[serde(default, rename = "peerIP", skip_serializing_if = "String::is_empty")]
    pub peer_ip: String,
    /// `NodeMesh`, `NodePeer` or `GlobalPeer`.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["NodeMesh", "NodePeer", "GlobalPeer"]))]
    pub peer_type: String,
    /// The BGP session state (`Established`, `Active`, …); empty when BIRD's is none of them
    /// (a protocol that is down says `Failed` or nothing).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["Idle", "Connect", "Active", "OpenSent", "OpenConfirm", "Established", "Close"]))]
    pub state: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub since: String,
}

/// The routes BIRD knows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteStatus {
    #[serde(default, rename = "routesV4", skip_serializing_if = "Vec::is_empty")]
    pub routes_v4: Vec<RouteEntry>,
    #[serde(default, rename = "routesV6", skip_serializing_if = "Vec::is_empty")]
    pub routes_v6: Vec<RouteEntry>,
}

/// One route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteEntry {
    /// `FIB` (in the kernel's table) or `RIB` (known to BIRD only).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["FIB", "RIB"]))]
    pub route_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub destination: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gateway: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub interface: String,
    #[serde(default)]
    pub learned_from: LearnedFrom,
}

/// Where a route came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LearnedFrom {
    /// `Kernel`, `Static`, `Direct`, `NodeMesh` or `BGPPeer`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["Kernel", "Static", "Direct", "NodeMesh", "BGPPeer"]))]
    pub source_type: String,
    #[serde(default, rename = "peerIP", skip_serializing_if = "String::is_empty")]
    pub peer_ip: String,
}

#[cfg(test)]
mod tests {
    use crate::release::ApiRelease;
    use crate::resource::availability::check_kind;
    use crate::resource::{Kind, Resource, validate_and_default_for};

    /// The kind is in every line netctl knows: a request validates for the oldest and the newest.
    #[test]
    fn every_line_has_the_kind() {
        for release in ["v3.27.0", "v3.29.4", "v3.31.3", "v3.32.1"] {
            let api = ApiRelease::cluster(release.parse().unwrap());
            assert!(
                check_kind(Kind::CalicoNodeStatus, &api).is_none(),
                "{release}"
            );
            let mut request = Resource::new(Kind::CalicoNodeStatus, "status-1");
            request.spec =
                serde_json::json!({"node": "node-1", "classes": ["BGP"], "updatePeriodSeconds": 0});
            validate_and_default_for(&mut request, &api).unwrap();
        }
    }
}
