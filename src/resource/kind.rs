//! The resource kinds of `projectcalico.org/v3` that netctl knows: their names, plurals, the aliases a
//! user may type, and whether they are namespaced.
//!
//! Aliases follow upstream calicoctl (`calicoctl/calicoctl/resourcemgr/*.go`; the staged kinds as
//! calicoctl v3.30's `resourcemgr/staged*.go`) so existing scripts keep working. Each kind also
//! says from which
//! release it exists ([`Kind::since`]). This module only names kinds; what a kind's spec may
//! contain lives in `spec.rs`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::errors::Hint;
use crate::release::Release;

/// The API group and version of every resource netctl manages.
pub const API_VERSION: &str = "projectcalico.org/v3";

/// A resource kind, exhaustively. Adding a kind means adding it to every table below, which the
/// compiler enforces through the `match` statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    BgpConfiguration,
    BgpFilter,
    BgpPeer,
    CalicoNodeStatus,
    ClusterInformation,
    FelixConfiguration,
    GlobalNetworkPolicy,
    GlobalNetworkSet,
    HostEndpoint,
    IpamConfiguration,
    IpPool,
    IpReservation,
    KubeControllersConfiguration,
    NetworkPolicy,
    NetworkSet,
    Node,
    Profile,
    StagedGlobalNetworkPolicy,
    StagedKubernetesNetworkPolicy,
    StagedNetworkPolicy,
    Tier,
    WorkloadEndpoint,
}

/// A value per kind, each made the first time it is asked for (schemas, shapes and rules derived
/// from them): a command that reads one kind builds only that kind's.
pub(crate) struct PerKind<T> {
    cells: [std::sync::OnceLock<T>; Kind::ALL.len()],
}

impl<T> PerKind<T> {
    pub(crate) const fn new() -> PerKind<T> {
        PerKind {
            cells: [const { std::sync::OnceLock::new() }; Kind::ALL.len()],
        }
    }

    /// The value of `kind`, made by `make` the first time.
    pub(crate) fn get(&self, kind: Kind, make: impl FnOnce(Kind) -> T) -> &T {
        let index = Kind::ALL
            .iter()
            .position(|known| *known == kind)
            .expect("every kind is in Kind::ALL");
        self.cells[index].get_or_init(|| make(kind))
    }
}

impl Kind {
    /// Every kind, in the order `--help` lists them (alphabetical by lower-cased name, as upstream).
    pub const ALL: [Kind; 22] = [
        Kind::BgpConfiguration,
        Kind::BgpFilter,
        Kind::BgpPeer,
        Kind::CalicoNodeStatus,
        Kind::ClusterInformation,
        Kind::FelixConfiguration,
        Kind::GlobalNetworkPolicy,
        Kind::GlobalNetworkSet,
        Kind::HostEndpoint,
        Kind::IpamConfiguration,
        Kind::IpPool,
        Kind::IpReservation,
        Kind::KubeControllersConfiguration,
        Kind::NetworkPolicy,
        Kind::NetworkSet,
        Kind::Node,
        Kind::Profile,
        Kind::StagedGlobalNetworkPolicy,
        Kind::StagedKubernetesNetworkPolicy,
        Kind::StagedNetworkPolicy,
        Kind::Tier,
        Kind::WorkloadEndpoint,
    ];

    /// The `kind:` value in documents, e.g. `HostEndpoint`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::BgpConfiguration => "BGPConfiguration",
            Kind::BgpFilter => "BGPFilter",
            Kind::BgpPeer => "BGPPeer",
            Kind::CalicoNodeStatus => "CalicoNodeStatus",
            Kind::ClusterInformation => "ClusterInformation",
            Kind::FelixConfiguration => "FelixConfiguration",
            Kind::GlobalNetworkPolicy => "GlobalNetworkPolicy",
            Kind::GlobalNetworkSet => "GlobalNetworkSet",
            Kind::HostEndpoint => "HostEndpoint",
            Kind::IpamConfiguration => "IPAMConfiguration",
            Kind::IpPool => "IPPool",
            Kind::IpReservation => "IPReservation",
            Kind::KubeControllersConfiguration => "KubeControllersConfiguration",
            Kind::NetworkPolicy => "NetworkPolicy",
            Kind::NetworkSet => "NetworkSet",
            Kind::Node => "Node",
            Kind::Profile => "Profile",
            Kind::StagedGlobalNetworkPolicy => "StagedGlobalNetworkPolicy",
            Kind::StagedKubernetesNetworkPolicy => "StagedKubernetesNetworkPolicy",
            Kind::StagedNetworkPolicy => "StagedNetworkPolicy",
            Kind::Tier => "Tier",
            Kind::WorkloadEndpoint => "WorkloadEndpoint",
        }
    }

    /// The lower-case plural used in etcd keys and Kubernetes CRD resource names.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::BgpConfiguration => "bgpconfigurations",
            Kind::BgpFilter => "bgpfilters",
            Kind::BgpPeer => "bgppeers",
            Kind::CalicoNodeStatus => "caliconodestatuses",
            Kind::ClusterInformation => "clusterinformations",
            Kind::FelixConfiguration => "felixconfigurations",
            Kind::GlobalNetworkPolicy => "globalnetworkpolicies",
            Kind::GlobalNetworkSet => "globalnetworksets",
            Kind::HostEndpoint => "hostendpoints",
            Kind::IpamConfiguration => "ipamconfigurations",
            Kind::IpPool => "ippools",
            Kind::IpReservation => "ipreservations",
            Kind::KubeControllersConfiguration => "kubecontrollersconfigurations",
            Kind::NetworkPolicy => "networkpolicies",
            Kind::NetworkSet => "networksets",
            Kind::Node => "nodes",
            Kind::Profile => "profiles",
            Kind::StagedGlobalNetworkPolicy => "stagedglobalnetworkpolicies",
            Kind::StagedKubernetesNetworkPolicy => "stagedkubernetesnetworkpolicies",
            Kind::StagedNetworkPolicy => "stagednetworkpolicies",
            Kind::Tier => "tiers",
            Kind::WorkloadEndpoint => "workloadendpoints",
        }
    }

    /// Names a user may type on the command line (lower-case; matching is case-insensitive).
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Kind::BgpConfiguration => &[
                "bgpconfiguration",
                "bgpconfigurations",
                "bgpconfig",
                "bgpconfigs",
            ],
            Kind::BgpFilter => &["bgpfilter", "bgpfilters", "bgpf", "bgpfs", "bf", "bfs"],
            Kind::BgpPeer => &["bgppeer", "bgppeers", "bgpp", "bgpps", "bp", "bps"],
            // calicoctl's names (`resourcemgr/nodestatus.go`, release-v3.32 after v3.32.1).
            Kind::CalicoNodeStatus => &[
                "caliconodestatus",
                "caliconodestatuses",
                "nodestatus",
                "nodestatuses",
            ],
            Kind::ClusterInformation => &[
                "clusterinformation",
                "clusterinformations",
                "clusterinfo",
                "clusterinfos",
            ],
            Kind::FelixConfiguration => &[
                "felixconfiguration",
                "felixconfigurations",
                "felixconfig",
                "felixconfigs",
            ],
            Kind::GlobalNetworkPolicy => &[
                "globalnetworkpolicy",
                "globalnetworkpolicies",
                "gnp",
                "gnps",
            ],
            Kind::GlobalNetworkSet => &["globalnetworkset", "globalnetworksets", "gnetsets"],
            Kind::HostEndpoint => &["hostendpoint", "hostendpoints", "hep", "heps"],
            Kind::IpamConfiguration => &[
                "ipamconfiguration",
                "ipamconfigurations",
                "ipamconfig",
                "ipamconfigs",
            ],
            Kind::IpPool => &["ippool", "ippools", "ipp", "ipps", "pool", "pools"],
            Kind::IpReservation => &[
                "ipreservation",
                "ipreservations",
                "reservation",
                "reservations",
            ],
            Kind::KubeControllersConfiguration => &[
                "kubecontrollersconfiguration",
                "kubecontrollersconfigurations",
                "kubecontrollersconfig",
                "kubecontrollersconfigs",
            ],
            Kind::NetworkPolicy => &[
                "networkpolicy",
                "networkpolicies",
                "policy",
                "np",
                "policies",
                "pol",
                "pols",
            ],
            Kind::NetworkSet => &["networkset", "networksets", "netsets"],
            Kind::Node => &["node", "nodes", "no", "nos"],
            Kind::Profile => &["profile", "profiles", "pro", "pros"],
            Kind::StagedGlobalNetworkPolicy => &[
                "stagedglobalnetworkpolicy",
                "stagedglobalnetworkpolicies",
                "sgnp",
                "sgnps",
            ],
            Kind::StagedKubernetesNetworkPolicy => &[
                "stagedkubernetesnetworkpolicy",
                "stagedkubernetesnetworkpolicies",
                "stagedkubernetespolicy",
                "sknp",
                "stagedkubernetespolicies",
                "skpol",
                "skpols",
            ],
            Kind::StagedNetworkPolicy => &[
                "stagednetworkpolicy",
                "stagednetworkpolicies",
                "stagedpolicy",
                "snp",
                "stagedpolicies",
                "spol",
                "spols",
            ],
            Kind::Tier => &["tier", "tiers"],
            Kind::WorkloadEndpoint => &["workloadendpoint", "workloadendpoints", "wep", "weps"],
        }
    }

    /// Whether resources of this kind live in a namespace.
    pub fn is_namespaced(self) -> bool {
        matches!(
            self,
            Kind::NetworkPolicy
                | Kind::NetworkSet
                | Kind::StagedKubernetesNetworkPolicy
                | Kind::StagedNetworkPolicy
                | Kind::WorkloadEndpoint
        )
    }

    /// The policy kinds whose storage name upstream ties to the tier (`default.<name>` in
    /// v3.29–v3.31, the name itself from v3.32, the original name in the `projectcalico.org/metadata`
    /// annotation): (Staged)(Global)NetworkPolicy. StagedKubernetesNetworkPolicy has no tier.
    pub fn is_tiered_policy(self) -> bool {
        matches!(
            self,
            Kind::NetworkPolicy
                | Kind::GlobalNetworkPolicy
                | Kind::StagedNetworkPolicy
                | Kind::StagedGlobalNetworkPolicy
        )
    }

    /// The first release that has this kind, for kinds added after v3.27.0 (the oldest release
    /// whose API netctl knows): Tier from v3.29.0, the staged policies from v3.30.0.
    pub fn since(self) -> Option<Release> {
        match self {
            Kind::Tier => Some(Release::new(3, 29, 0)),
            Kind::StagedGlobalNetworkPolicy
            | Kind::StagedKubernetesNetworkPolicy
            | Kind::StagedNetworkPolicy => Some(Release::new(3, 30, 0)),
            _ => None,
        }
    }

    /// Looks a kind up by what a user typed: any alias, case-insensitively, or the exact `kind:` value.
    pub fn from_user_input(input: &str) -> Option<Kind> {
        let lower = input.to_ascii_lowercase();
        Kind::ALL
            .into_iter()
            .find(|kind| kind.aliases().contains(&lower.as_str()))
    }

    /// Looks a kind up by its document `kind:` value, exactly (as upstream's GVK lookup).
    pub fn from_document_kind(kind: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// Looks a kind up by its plural, as found in an etcd key.
    pub fn from_plural(plural: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.plural() == plural)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a kind a user typed that netctl does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource type `{0}` is not supported")]
pub struct UnknownKind(pub String);

impl Hint for UnknownKind {
    /// The nearest name netctl knows (by edit distance, when close enough to be a typo) and every
    /// kind with its short names.
    fn hint(&self) -> Option<String> {
        let typed = self.0.to_ascii_lowercase();
        let nearest = Kind::ALL
            .iter()
            .flat_map(|kind| kind.aliases())
            .map(|alias| (strsim::damerau_levenshtein(&typed, alias), *alias))
            .min();
        let kinds: Vec<String> = Kind::ALL
            .iter()
            .map(|kind| {
                let name = kind.aliases()[0];
                // Short names without their plurals: `bgpfilter (bgpf, bf)`.
                let others = &kind.aliases()[2..];
                let short: Vec<&str> = others
                    .iter()
                    .copied()
                    .filter(|alias| alias.len() < name.len())
                    .filter(|alias| {
                        // Plurals of other short names (`nodestatuses` of `nodestatus`) go.
                        ![alias.strip_suffix('s'), alias.strip_suffix("es")]
                            .into_iter()
                            .flatten()
                            .any(|singular| others.contains(&singular))
                    })
                    .collect();
                match short.as_slice() {
                    [] => name.to_string(),
                    short => format!("{name} ({})", short.join(", ")),
                }
            })
            .collect();
        let kinds = format!("kinds: {}", kinds.join(", "));
        match nearest {
            // A typo is a few edits away, about one per four letters: `hostendpiont` finds
            // `hostendpoint`, while `routes` finds nothing rather than a random short name.
            Some((distance, alias))
                if distance > 0 && distance <= typed.len().div_ceil(4).max(1) =>
            {
                Some(format!("did you mean `{alias}`? {kinds}"))
            }
            _ => Some(kinds),
        }
    }
}

impl FromStr for Kind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::from_user_input(s).ok_or_else(|| UnknownKind(s.to_string()))
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Kind::from_document_kind(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown resource kind `{text}` for apiVersion `{API_VERSION}`"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alias_resolves_to_its_own_kind_only() {
        for kind in Kind::ALL {
            for alias in kind.aliases() {
                assert_eq!(Kind::from_user_input(alias), Some(kind), "{alias}");
                assert_eq!(Kind::from_user_input(&alias.to_uppercase()), Some(kind));
            }
            assert_eq!(Kind::from_plural(kind.plural()), Some(kind));
            assert_eq!(Kind::from_document_kind(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn unknown_kind_suggests_the_nearest_name_and_lists_the_kinds() {
        let hint = UnknownKind("hostendpiont".into()).hint().unwrap();
        assert!(
            hint.starts_with("did you mean `hostendpoint`? kinds: "),
            "{hint}"
        );
        assert!(hint.contains("hostendpoint (hep),"), "{hint}");
        let hint = UnknownKind("routes".into()).hint().unwrap();
        assert!(hint.starts_with("kinds: bgpconfiguration"), "{hint}");
    }

    #[test]
    fn staged_kinds_take_upstreams_short_names_and_plurals() {
        assert_eq!(
            Kind::from_user_input("sgnp"),
            Some(Kind::StagedGlobalNetworkPolicy)
        );
        assert_eq!(
            Kind::from_user_input("SPOL"),
            Some(Kind::StagedNetworkPolicy)
        );
        assert_eq!(
            Kind::from_user_input("sknp"),
            Some(Kind::StagedKubernetesNetworkPolicy)
        );
        assert_eq!(
            Kind::from_plural("stagedkubernetesnetworkpolicies"),
            Some(Kind::StagedKubernetesNetworkPolicy)
        );
        assert!(Kind::StagedNetworkPolicy.is_namespaced());
        assert!(!Kind::StagedGlobalNetworkPolicy.is_namespaced());
        assert!(Kind::StagedGlobalNetworkPolicy.is_tiered_policy());
        assert!(!Kind::StagedKubernetesNetworkPolicy.is_tiered_policy());
        assert_eq!(
            Kind::StagedNetworkPolicy.since(),
            Some(Release::new(3, 30, 0))
        );
    }

    #[test]
    fn unknown_kind_is_refused() {
        assert_eq!(
            "gns".parse::<Kind>().unwrap_err().to_string(),
            "resource type `gns` is not supported"
        );
    }
}
