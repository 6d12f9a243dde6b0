//! The etcd → Kubernetes migration file of `netctl datastore migrate export | import`, in
//! upstream's format (`calicoctl/calicoctl/commands/datastore/migrate/export.go`,
//! `migrateipam.go`), and the node renaming the export does.
//!
//! The file has three parts separated by a line `===`:
//!
//! 1. the v3 resources as YAML, one `<Kind>List` document per kind in [`KINDS`]' order, each
//!    followed by `---`, their metadata cleaned (no `uid`, `resourceVersion`, deletion fields;
//!    `creationTimestamp: null`), keys sorted as go-yaml writes them;
//! 2. ClusterInformation `default` as indented JSON (its `clusterGUID` and `calicoVersion` are
//!    what the import carries over);
//! 3. the IPAM objects as indented JSON: `block_affinities`, `blocks`, `handles` (lists of
//!    `{"Key": <etcd path>, "Value": <libcalico-go model JSON>, "TTL": 0}`) and `config`, each
//!    left out when empty.
//!
//! Nodes are renamed to their Kubernetes node names (their `k8s` orchestrator reference) where
//! upstream renames them — the Node itself, `node.<name>` FelixConfigurations and
//! BGPConfigurations, block affinities, blocks' affinity and owner attributes, tunnel-address
//! handles — and, beyond upstream, `HostEndpoint.spec.node` and `BGPPeer.spec.node` (upstream
//! leaves those at the old names, so the host endpoints' policy stops applying after its
//! migration). A node without a Kubernetes name is refused by name before anything is written.
//!
//! `export.rs` writes the file from an etcd datastore, streamed; `file.rs` reads one back (the
//! import, `exec/actions/ipam/import.rs`, writes it).

pub mod crds;
pub mod export;
pub mod file;
mod indented;
mod items;

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Datastore, DatastoreType, ListOptions, StoreError};
use crate::errors::Hint;
use crate::ipam::block::attribute;
use crate::ipam::{AllocationBlock, BlockAffinity, IpamHandle};
use crate::resource::{Kind, Resource};

/// The line between the file's parts.
pub const SEPARATOR: &str = "===\n";

/// The kinds the file holds, in upstream's order (`allV3Resources`): Nodes before the kinds that
/// name them.
pub const KINDS: [Kind; 17] = [
    Kind::IpPool,
    Kind::BgpPeer,
    Kind::Tier,
    Kind::GlobalNetworkPolicy,
    Kind::StagedGlobalNetworkPolicy,
    Kind::GlobalNetworkSet,
    Kind::HostEndpoint,
    Kind::KubeControllersConfiguration,
    Kind::NetworkPolicy,
    Kind::StagedNetworkPolicy,
    Kind::StagedKubernetesNetworkPolicy,
    Kind::NetworkSet,
    Kind::Node,
    Kind::BgpConfiguration,
    Kind::FelixConfiguration,
    Kind::IpReservation,
    Kind::BgpFilter,
];

/// The name prefix of the NetworkPolicies kube-controllers writes for Kubernetes NetworkPolicies
/// on etcd (`kube-controllers/pkg/converter`): left out, they come from Kubernetes itself.
pub const KUBERNETES_POLICY_PREFIX: &str = "knp.default.";

/// The handle prefixes of tunnel addresses, which end in the node's name (`migrateipam.go`).
pub const TUNNEL_HANDLE_PREFIXES: [&str; 3] = [
    "ipip-tunnel-addr-",
    "vxlan-tunnel-addr-",
    "wireguard-tunnel-addr-",
];

/// What the file leaves out, for `--help` and the command's stderr.
pub const LEFT_OUT: &str = "WorkloadEndpoints (they are Pods on Kubernetes), Profiles (Namespaces and ServiceAccounts), NetworkPolicies named `knp.default.*` (kube-controllers' copies of Kubernetes NetworkPolicies)";

/// Why a migration export or import cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("the datastore is `{0}`: a migration export reads an etcdv3 datastore")]
    NotEtcd(DatastoreType),
    #[error("the datastore is not locked: the migration export needs it locked")]
    NotLocked,
    #[error(
        "node `{node}` has no Kubernetes node name (no `k8s` orchestrator reference): every node must have one to move to the Kubernetes datastore"
    )]
    NoKubernetesName { node: String },
    #[error("ClusterInformation `default` does not exist: nothing has initialised this datastore")]
    NoClusterInformation,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Ipam(#[from] super::ipam::IpamError),
    #[error("IPAM object `{}` cannot be read: {}", .0.key, .0.reason)]
    Damaged(super::ipam::Damaged),
    #[error("cannot write the migration export `{path}`")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a migration export: {reason}")]
    Format { path: String, reason: String },
}

impl Hint for MigrationError {
    fn hint(&self) -> Option<String> {
        let advice: &str = match self {
            MigrationError::NotEtcd(_) => {
                "point netctl at the etcd datastore you migrate from (`-c FILE` or NET_DATASTORE_TYPE=etcdv3); to copy a Kubernetes datastore use `netctl datastore backup`"
            }
            MigrationError::NotLocked => {
                "lock it first: `netctl datastore migrate lock` (new pods get no network until the migration is done)"
            }
            MigrationError::NoKubernetesName { .. } => {
                "give the node its Kubernetes name (`netctl patch node NAME -p '{\"spec\":{\"orchRefs\":[{\"orchestrator\":\"k8s\",\"nodeName\":\"K8S-NAME\"}]}}'`), or delete it if it is gone"
            }
            MigrationError::NoClusterInformation => {
                "lock the datastore with `netctl datastore migrate lock`, which creates it"
            }
            MigrationError::Store(error) => return error.hint(),
            MigrationError::Ipam(error) => return error.hint(),
            MigrationError::Format { .. } => {
                "make the file again with `netctl datastore migrate export -o FILE` (or `calicoctl datastore migrate export > FILE`)"
            }
            _ => return None,
        };
        Some(advice.to_string())
    }
}

/// The etcd node name → Kubernetes node name of every node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeNames(BTreeMap<String, String>);

impl NodeNames {
    /// Reads every Node (a page at a time); a node without a `k8s` orchestrator reference is
    /// refused by name.
    pub async fn read(store: &dyn Datastore) -> Result<NodeNames, MigrationError> {
        let mut names = BTreeMap::new();
        super::for_each(store, &ListOptions::new(Kind::Node), |node| {
            let name = node.metadata.name.clone();
            let kubernetes = kubernetes_name(&node)
                .ok_or(MigrationError::NoKubernetesName { node: name.clone() })?;
            names.insert(name, kubernetes);
            Ok::<(), MigrationError>(())
        })
        .await?;
        Ok(NodeNames(names))
    }

    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> NodeNames {
        NodeNames(pairs.into_iter().collect())
    }

    /// The Kubernetes name of etcd node `name`, when known.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// How many nodes get another name.
    pub fn renamed(&self) -> usize {
        self.0.iter().filter(|(old, new)| old != new).count()
    }

    fn rename(&self, name: &mut String) -> bool {
        match self.0.get(name.as_str()) {
            Some(new) if new != name => {
                *name = new.clone();
                true
            }
            _ => false,
        }
    }

    /// A tunnel-address handle with its node renamed (`None`: not a tunnel handle of a known
    /// node).
    fn tunnel_handle(&self, handle: &str) -> Option<String> {
        TUNNEL_HANDLE_PREFIXES.iter().find_map(|prefix| {
            let node = handle.strip_prefix(prefix)?;
            self.get(node).map(|new| format!("{prefix}{new}"))
        })
    }

    /// Renames the node a resource names, where it names one (see the module documentation);
    /// says whether it changed anything.
    pub fn rename_resource(&self, resource: &mut Resource) -> bool {
        match resource.kind {
            Kind::Node => self.rename(&mut resource.metadata.name),
            Kind::FelixConfiguration | Kind::BgpConfiguration => {
                let Some(node) = resource.metadata.name.strip_prefix("node.") else {
                    return false;
                };
                let mut node = node.to_string();
                let renamed = self.rename(&mut node);
                if renamed {
                    resource.metadata.name = format!("node.{node}");
                }
                renamed
            }
            Kind::HostEndpoint | Kind::BgpPeer => {
                let Some(Value::String(node)) = resource.spec.get_mut("node") else {
                    return false;
                };
                self.rename(node)
            }
            _ => false,
        }
    }

    /// Renames the nodes a block names: its `host:` affinity, each allocation's `node` owner
    /// attributes, and its tunnel-address handles.
    pub fn rename_block(&self, block: &mut AllocationBlock) {
        if let Some(affinity) = &block.affinity
            && let Some(node) = affinity.strip_prefix("host:")
            && let Some(new) = self.get(node)
        {
            block.affinity = Some(format!("host:{new}"));
        }
        for attributes in &mut block.attributes {
            for owner in [
                &mut attributes.active_owner,
                &mut attributes.alternate_owner,
            ]
            .into_iter()
            .flatten()
            {
                if let Some(node) = owner.get_mut(attribute::NODE) {
                    self.rename(node);
                }
            }
            if let Some(handle) = &attributes.handle_id
                && let Some(renamed) = self.tunnel_handle(handle)
            {
                attributes.handle_id = Some(renamed);
            }
        }
    }

    /// Renames the node of a block affinity.
    pub fn rename_affinity(&self, affinity: &mut BlockAffinity) {
        self.rename(&mut affinity.node);
    }

    /// Renames the node of a tunnel-address handle.
    pub fn rename_handle(&self, handle: &mut IpamHandle) {
        if let Some(renamed) = self.tunnel_handle(&handle.id) {
            handle.id = renamed;
        }
    }
}

/// A Node's Kubernetes node name: its `k8s` orchestrator reference (the last, as upstream).
pub fn kubernetes_name(node: &Resource) -> Option<String> {
    node.spec
        .get("orchRefs")?
        .as_array()?
        .iter()
        .rev()
        .filter(|reference| reference["orchestrator"] == "k8s")
        .filter_map(|reference| reference["nodeName"].as_str())
        .find(|name| !name.is_empty())
        .map(str::to_string)
}

/// FelixConfiguration's iptables actions in the v3 API's spelling (`DROP` → `Drop`), as
/// upstream's export writes them (`ConvertIptablesFields`).
pub fn convert_iptables_fields(resource: &mut Resource) {
    const FIELDS: [&str; 4] = [
        "defaultEndpointToHostAction",
        "iptablesFilterAllowAction",
        "iptablesMangleAllowAction",
        "iptablesFilterDenyAction",
    ];
    for field in FIELDS {
        if let Some(Value::String(value)) = resource.spec.get_mut(field)
            && !value.is_empty()
        {
            let lower = value.to_lowercase();
            let mut letters = lower.chars();
            *value = letters
                .next()
                .map(|first| first.to_uppercase().chain(letters).collect())
                .unwrap_or_default();
        }
    }
}

#[cfg(test)]
mod tests;
