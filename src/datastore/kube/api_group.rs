//! Which API group the Calico custom resources are read and written in, and why: the choice every
//! Kubernetes connection makes once, before its first request for a Calico resource.
//!
//! Upstream (`libcalico-go/lib/backend/k8s/discovery.go`, `UsingV3CRDs`) takes `CALICO_API_GROUP`
//! when it is set and otherwise asks the API server for its groups: `projectcalico.org/v3` when it
//! is served and `crd.projectcalico.org/v1` is not (v3.32's native CRDs), else
//! `crd.projectcalico.org/v1` — both served usually means the Calico API server presents the v1
//! resources as v3. netctl chooses the same way (`calicoAPIGroup`, `CALICO_API_GROUP` or
//! `NET_CALICO_API_GROUP` over discovery), so it reads what the cluster's components read.
//!
//! Beyond upstream, it looks closer when both groups are served: the Calico API server serves
//! `profiles` in `projectcalico.org/v3` and native CRDs do not, so a v3 group without them is CRDs
//! installed beside the v1 ones — a half-done switch (rancher/rke2-charts#1205) in which each group
//! may hold resources the other lacks. Then the kinds that hold objects in the group not chosen are
//! listed ([`OtherGroup`]), for a warning: those objects exist but are not what netctl (or a
//! component configured like it) reads. Only discovery and lists of at most one object are sent;
//! nothing is written.

use std::fmt;

use futures_util::future::join_all;
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use super::{ApiClient, errors};
use crate::config::{CalicoApiGroup, Origin, Sourced};
use crate::datastore::StoreError;
use crate::resource::Kind;

/// Which of the two Calico groups the API server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Served {
    /// `crd.projectcalico.org/v1`.
    pub v1: bool,
    /// `projectcalico.org/v3`, by native CRDs or by the Calico API server.
    pub v3: bool,
}

/// Why a group was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// `calicoAPIGroup` in the file, or `CALICO_API_GROUP` / `NET_CALICO_API_GROUP`.
    Configured(Origin),
    /// Found from what the API server serves.
    Discovered,
    /// The API server would not list its groups (403/404): upstream's default.
    Undiscoverable,
    /// The plan that runs chose it (its fact `calico_api_group`, found when it was made): the
    /// target of a migration keeps the group its plan was reviewed with.
    Planned,
}

/// The group a connection uses, why, and what the server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupChoice {
    pub group: CalicoApiGroup,
    pub reason: Reason,
    pub served: Served,
}

impl GroupChoice {
    /// A choice made without asking a server (tests, offline descriptions).
    pub fn fixed(group: CalicoApiGroup) -> GroupChoice {
        GroupChoice {
            group,
            reason: Reason::Discovered,
            served: Served {
                v1: group == CalicoApiGroup::CrdV1,
                v3: group == CalicoApiGroup::V3,
            },
        }
    }

    /// Whether the chosen group is not served at all (every request for a Calico resource will
    /// answer 404).
    pub fn is_unserved(&self) -> bool {
        match self.group {
            CalicoApiGroup::CrdV1 => !self.served.v1,
            CalicoApiGroup::V3 => !self.served.v3,
        }
    }
}

impl fmt::Display for GroupChoice {
    /// `projectcalico.org/v3 (discovered: the API server serves projectcalico.org/v3 and not
    /// crd.projectcalico.org/v1)`, for `config check` and messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v1, v3) = (
            CalicoApiGroup::CrdV1.api_version(),
            CalicoApiGroup::V3.api_version(),
        );
        write!(f, "{} (", self.group)?;
        match (&self.reason, self.served.v1, self.served.v3) {
            (Reason::Configured(origin), _, _) => write!(f, "configured by {origin}")?,
            (Reason::Planned, _, _) => {
                write!(f, "chosen by the plan: its fact `calico_api_group`")?
            }
            (Reason::Undiscoverable, _, _) => write!(
                f,
                "the API server would not list its groups, so {v1} as upstream"
            )?,
            (Reason::Discovered, false, true) => write!(
                f,
                "discovered: the API server serves {v3} and not {v1}, v3.32's native CRDs"
            )?,
            (Reason::Discovered, true, false) => {
                write!(f, "discovered: the API server serves {v1}")?
            }
            (Reason::Discovered, true, true) => write!(
                f,
                "discovered: the API server serves both, so {v1} as upstream; {v3} is then usually the Calico API server's view of it"
            )?,
            (Reason::Discovered, false, false) => write!(
                f,
                "discovered: the API server serves neither {v1} nor {v3}, so {v1} as upstream"
            )?,
        }
        f.write_str(")")
    }
}

/// What decides the group of a cluster's Kubernetes datastore reached from another configuration
/// ([`KubeStore::for_cluster`](super::KubeStore::for_cluster)).
#[derive(Debug, Clone, Copy)]
pub enum ClusterGroup<'a> {
    /// The configured group (`calicoAPIGroup`, `CALICO_API_GROUP`), else discovery.
    Configured(Option<&'a Sourced<CalicoApiGroup>>),
    /// The group of the plan being run.
    Planned(CalicoApiGroup),
}

/// Chooses the group: the configured one, else from the groups the server lists, as upstream.
/// The groups are asked for either way, so that a configured group the server does not serve, and
/// both groups served, can be told. A transport failure or a refused login is returned as it is
/// (the connection would fail next anyway); a server that will not list its groups gets
/// upstream's default.
pub async fn choose(
    api: &ApiClient,
    configured: Option<&Sourced<CalicoApiGroup>>,
    request: errors::Request<'_>,
) -> Result<GroupChoice, StoreError> {
    let served = match api.client.list_api_groups().await {
        Ok(list) => Some(Served {
            v1: list
                .groups
                .iter()
                .any(|group| group.name == CalicoApiGroup::CrdV1.group()),
            v3: list
                .groups
                .iter()
                .any(|group| group.name == CalicoApiGroup::V3.group()),
        }),
        Err(kube::Error::Api(status)) if status.code == 403 || status.code == 404 => None,
        Err(error) => return Err(errors::classify(error, &request)),
    };
    Ok(match (configured, served) {
        (Some(configured), served) => GroupChoice {
            group: configured.value,
            reason: Reason::Configured(configured.origin.clone()),
            // Not known: take the configured group as served and let its requests tell.
            served: served.unwrap_or(GroupChoice::fixed(configured.value).served),
        },
        (None, Some(served)) => GroupChoice {
            group: if served.v3 && !served.v1 {
                CalicoApiGroup::V3
            } else {
                CalicoApiGroup::CrdV1
            },
            reason: Reason::Discovered,
            served,
        },
        (None, None) => GroupChoice {
            group: CalicoApiGroup::CrdV1,
            reason: Reason::Undiscoverable,
            served: Served::default(),
        },
    })
}

/// The group not chosen, when it is served by CRDs of its own and holds objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherGroup {
    pub group: CalicoApiGroup,
    /// The kinds (as the group names them) with at least one object there.
    pub kinds_with_objects: Vec<String>,
}

impl OtherGroup {
    /// The warning `connect` prints.
    pub fn warning(&self, choice: &GroupChoice) -> String {
        format!(
            "both {} and {} are served by CRDs; netctl reads {} ({}) and does not see the {} objects in {}",
            CalicoApiGroup::CrdV1,
            CalicoApiGroup::V3,
            choice.group,
            match &choice.reason {
                Reason::Configured(origin) => format!("configured by {origin}"),
                _ => "as upstream's components do unless CALICO_API_GROUP is set".to_string(),
            },
            self.kinds_with_objects.join(", "),
            self.group,
        )
    }

    /// What to do about it.
    pub fn hint(&self) -> String {
        format!(
            "check which group calico-node reads (its CALICO_API_GROUP, else the same rule) and set `NET_CALICO_API_GROUP` (or `calicoAPIGroup`) to it; a v1 → v3 switch part done is finished by upstream's DatastoreMigration (`kubectl get datastoremigrations`), never by deleting the {} CRDs, which deletes their objects",
            CalicoApiGroup::CrdV1.group()
        )
    }
}

/// The plurals of the custom-resource kinds a Calico group holds: every kind netctl stores as a
/// custom resource, and the IPAM kinds (whose objects matter most when lost). The IPAM
/// configuration is `ipamconfigs` under v1 and `ipamconfigurations` under v3
/// (`api/config/crd/` against `libcalico-go/config/crd/`).
fn plurals(group: CalicoApiGroup) -> Vec<(String, &'static str)> {
    let mut plurals: Vec<(String, &'static str)> = Kind::ALL
        .into_iter()
        .filter(|kind| is_custom_resource(*kind))
        .map(|kind| (kind.as_str().to_string(), kind.plural()))
        .collect();
    plurals.extend([
        ("IPAMBlock".to_string(), "ipamblocks"),
        ("BlockAffinity".to_string(), "blockaffinities"),
        ("IPAMHandle".to_string(), "ipamhandles"),
    ]);
    plurals.push(match group {
        CalicoApiGroup::CrdV1 => ("IPAMConfig".to_string(), "ipamconfigs"),
        CalicoApiGroup::V3 => ("IPAMConfiguration".to_string(), "ipamconfigurations"),
    });
    plurals
}

/// Whether the Kubernetes datastore keeps a kind as a Calico custom resource (not derived from
/// core objects).
pub fn is_custom_resource(kind: Kind) -> bool {
    !matches!(kind, Kind::Node | Kind::Profile | Kind::WorkloadEndpoint)
}

/// When both groups are served and the v3 one by CRDs (its resource list has no `profiles`, which
/// only the Calico API server serves), the kinds of the group not chosen that hold objects. `None`
/// when the case does not arise or nothing is there. Errors are not returned: this only decides a
/// warning, and the requests that matter come next.
pub async fn inspect_other_group(api: &ApiClient, choice: &GroupChoice) -> Option<OtherGroup> {
    if !(choice.served.v1 && choice.served.v3) {
        return None;
    }
    let v3 = CalicoApiGroup::V3;
    let resources = api
        .client
        .list_api_group_resources(v3.api_version())
        .await
        .ok()?;
    if resources
        .resources
        .iter()
        .any(|resource| resource.name == "profiles")
    {
        // The Calico API server: projectcalico.org/v3 is the v1 resources seen as v3.
        return None;
    }
    let other = choice.group.other();
    let lists = plurals(other).into_iter().map(|(kind, plural)| {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(other.group(), other.version(), &kind),
            plural,
        );
        let api: Api<DynamicObject> = Api::all_with(api.client.clone(), &resource);
        async move {
            let found = api.list_metadata(&ListParams::default().limit(1)).await;
            found
                .is_ok_and(|list| !list.items.is_empty())
                .then_some(kind)
        }
    });
    let kinds_with_objects: Vec<String> = join_all(lists).await.into_iter().flatten().collect();
    (!kinds_with_objects.is_empty()).then_some(OtherGroup {
        group: other,
        kinds_with_objects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_reads_as_a_sentence() {
        let choice = |group, reason, v1, v3| {
            GroupChoice {
                group,
                reason,
                served: Served { v1, v3 },
            }
            .to_string()
        };
        assert_eq!(
            choice(CalicoApiGroup::V3, Reason::Discovered, false, true),
            "projectcalico.org/v3 (discovered: the API server serves projectcalico.org/v3 and not crd.projectcalico.org/v1, v3.32's native CRDs)"
        );
        assert_eq!(
            choice(CalicoApiGroup::CrdV1, Reason::Discovered, true, false),
            "crd.projectcalico.org/v1 (discovered: the API server serves crd.projectcalico.org/v1)"
        );
        assert_eq!(
            choice(
                CalicoApiGroup::V3,
                Reason::Configured(Origin::Environment("NET_CALICO_API_GROUP".into())),
                true,
                true
            ),
            "projectcalico.org/v3 (configured by `NET_CALICO_API_GROUP`)"
        );
        assert!(
            choice(CalicoApiGroup::CrdV1, Reason::Discovered, true, true)
                .contains("serves both, so crd.projectcalico.org/v1 as upstream")
        );
    }

    #[test]
    fn the_ipam_configuration_is_named_per_group() {
        let v1 = plurals(CalicoApiGroup::CrdV1);
        let v3 = plurals(CalicoApiGroup::V3);
        assert!(v1.iter().any(|(_, plural)| *plural == "ipamconfigs"));
        assert!(v3.iter().any(|(_, plural)| *plural == "ipamconfigurations"));
        assert!(!v3.iter().any(|(_, plural)| *plural == "profiles"));
    }
}
