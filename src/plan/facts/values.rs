//! The values of the facts that are more than a word: a manifest's flavour, an OwnerReference to a
//! `projectcalico.org/v3` owner, an all-interfaces host endpoint and a Deployment in the mesh, as
//! plans record them and `--set` gives them.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which single manifest a manifest install came from (`docs/upgrade-procedures.md`, "Single
/// manifest, Kubernetes datastore" and "Single manifest, etcd datastore").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ManifestFlavor {
    /// Policy and networking: `calico.yaml` / `calico-etcd.yaml`.
    Calico,
    /// Policy with flannel networking: `canal.yaml` / `canal-etcd.yaml`.
    Canal,
    /// Policy only (advanced): `calico-policy-only.yaml`; Kubernetes datastore only.
    PolicyOnly,
}

impl FromStr for ManifestFlavor {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "calico" => Ok(ManifestFlavor::Calico),
            "canal" => Ok(ManifestFlavor::Canal),
            "policy-only" => Ok(ManifestFlavor::PolicyOnly),
            other => Err(other.to_string()),
        }
    }
}

/// One OwnerReference from a Kubernetes object to a `projectcalico.org/v3` owner.
///
/// `index` is the reference's position in the object's `metadata.ownerReferences`, so a JSON patch can
/// remove exactly it (guarded by a `test` of the owner's apiVersion). The rest is what re-adding it
/// after the upgrade needs besides the owner's new UID: the `controller` and `blockOwnerDeletion`
/// flags as the reference had them (absent when it did not set them), and the UID it pointed at, kept
/// so the record in the plan (and so in the checkpoint) says exactly what was removed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerReferenceFact {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub owner_kind: String,
    pub owner_name: String,
    pub index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl fmt::Display for OwnerReferenceFact {
    /// `ConfigMap apps/settings #0 → Tier security`, as refusals and `upgrade status` show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name)?,
            None => write!(f, "{} {}", self.kind, self.name)?,
        }
        write!(
            f,
            " #{} → {} {}",
            self.index, self.owner_kind, self.owner_name
        )?;
        if let Some(uid) = &self.owner_uid {
            write!(f, " (uid {uid})")?;
        }
        Ok(())
    }
}

/// One all-interfaces host endpoint (`interfaceName: "*"`): its name, its node and its labels, which
/// the migration to automatic host endpoints copies to the node (`docs/upgrade-procedures.md`,
/// "Automatic host endpoints").
///
/// `--set all_interfaces_host_endpoints=a,b` gives names only (node and labels unknown, enough for
/// the pre-v3.14 preparation); the JSON form `[{"name": "a", "node": "n1", "labels": {..}}]` gives
/// everything. A plain string in a JSON list is a name as well.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostEndpointFact {
    pub name: String,
    /// `spec.node`; empty when only the name was given.
    pub node: String,
    pub labels: BTreeMap<String, String>,
}

impl HostEndpointFact {
    /// A host endpoint known by name only.
    pub fn named(name: impl Into<String>) -> HostEndpointFact {
        HostEndpointFact {
            name: name.into(),
            node: String::new(),
            labels: BTreeMap::new(),
        }
    }
}

impl<'de> Deserialize<'de> for HostEndpointFact {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Full {
            name: String,
            #[serde(default)]
            node: String,
            #[serde(default)]
            labels: BTreeMap<String, String>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Name(String),
            Full(Full),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Name(name) => HostEndpointFact::named(name),
            Either::Full(full) => HostEndpointFact {
                name: full.name,
                node: full.node,
                labels: full.labels,
            },
        })
    }
}

/// One Deployment of a service in the mesh, rolled when application layer policy is upgraded
/// (`docs/upgrade-procedures.md`, "Application layer policy"). `--set
/// service_deployments=ns/name,ns/other` or a JSON list of
/// `{"namespace": .., "name": ..}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentFact {
    pub namespace: String,
    pub name: String,
}
