//! The columns of every kind: which headings `ps` and `wide` show, and each heading's cell.

use super::cells::*;
use super::{Column, KindColumns};
use crate::resource::Kind;

const NAME: Column = Column {
    heading: "NAME",
    cell: name,
};
const NAMESPACE: Column = Column {
    heading: "NAMESPACE",
    cell: namespace,
};

const POLICY_COLUMNS: &[Column] = &[
    NAME,
    Column {
        heading: "TIER",
        cell: tier,
    },
    Column {
        heading: "ORDER",
        cell: order,
    },
    Column {
        heading: "SELECTOR",
        cell: policy_selector,
    },
];

const NAMESPACED_POLICY_COLUMNS: &[Column] = &[
    NAME,
    NAMESPACE,
    Column {
        heading: "TIER",
        cell: tier,
    },
    Column {
        heading: "ORDER",
        cell: order,
    },
    Column {
        heading: "SELECTOR",
        cell: policy_selector,
    },
];

/// A scalar as upstream's Go templates print it: an absent field is the Go zero value.
fn go_zero(value: Option<&serde_json::Value>, zero: &str) -> String {
    match scalar(value) {
        text if text.is_empty() => zero.to_string(),
        text => text,
    }
}

pub(super) fn definition(kind: Kind) -> KindColumns {
    match kind {
        // As calicoctl's `resourcemgr/ipamconfiguration.go`.
        Kind::IpamConfiguration => KindColumns {
            ps: &["NAME", "STRICTAFFINITY", "AUTOALLOCATEBLOCKS"],
            wide: &[
                "NAME",
                "STRICTAFFINITY",
                "AUTOALLOCATEBLOCKS",
                "MAXBLOCKSPERHOST",
            ],
            all: &[
                NAME,
                Column {
                    heading: "STRICTAFFINITY",
                    cell: |resource, _| go_zero(spec(resource, &["strictAffinity"]), "false"),
                },
                Column {
                    heading: "AUTOALLOCATEBLOCKS",
                    cell: |resource, _| go_zero(spec(resource, &["autoAllocateBlocks"]), "false"),
                },
                Column {
                    heading: "MAXBLOCKSPERHOST",
                    cell: |resource, _| go_zero(spec(resource, &["maxBlocksPerHost"]), "0"),
                },
            ],
        },
        Kind::Node => KindColumns {
            ps: &["NAME"],
            wide: &["NAME", "ASN", "IPV4", "IPV6"],
            all: &[
                NAME,
                Column {
                    heading: "ASN",
                    cell: node_as_number,
                },
                Column {
                    heading: "IPV4",
                    cell: |resource, _| scalar(spec(resource, &["bgp", "ipv4Address"])),
                },
                Column {
                    heading: "IPV6",
                    cell: |resource, _| scalar(spec(resource, &["bgp", "ipv6Address"])),
                },
            ],
        },
        Kind::BgpPeer => KindColumns {
            ps: &["NAME", "PEERIP", "NODE", "ASN"],
            wide: &["NAME", "PEERIP", "NODE", "ASN"],
            all: &[
                NAME,
                Column {
                    heading: "PEERIP",
                    cell: |resource, _| scalar(spec(resource, &["peerIP"])),
                },
                Column {
                    heading: "NODE",
                    cell: peer_node,
                },
                Column {
                    heading: "ASN",
                    cell: peer_as_number,
                },
            ],
        },
        Kind::HostEndpoint => KindColumns {
            ps: &["NAME", "NODE"],
            wide: &["NAME", "NODE", "INTERFACE", "IPS", "PROFILES"],
            all: &[
                NAME,
                Column {
                    heading: "NODE",
                    cell: node,
                },
                Column {
                    heading: "INTERFACE",
                    cell: interface,
                },
                Column {
                    heading: "IPS",
                    cell: |resource, _| join(spec(resource, &["expectedIPs"])),
                },
                Column {
                    heading: "PROFILES",
                    cell: profiles,
                },
            ],
        },
        // The staged kinds as calicoctl's `resourcemgr/staged*.go`: the columns of what they stage.
        Kind::GlobalNetworkPolicy | Kind::StagedGlobalNetworkPolicy => KindColumns {
            ps: &["NAME", "TIER"],
            wide: &["NAME", "TIER", "ORDER", "SELECTOR"],
            all: POLICY_COLUMNS,
        },
        Kind::NetworkPolicy | Kind::StagedNetworkPolicy => KindColumns {
            ps: &["NAME", "TIER"],
            wide: &["NAME", "TIER", "ORDER", "SELECTOR"],
            all: NAMESPACED_POLICY_COLUMNS,
        },
        Kind::StagedKubernetesNetworkPolicy => KindColumns {
            ps: &["NAME"],
            wide: &["NAME", "PODSELECTOR"],
            all: &[
                NAME,
                NAMESPACE,
                Column {
                    heading: "PODSELECTOR",
                    cell: |resource, _| join_map(spec(resource, &["podSelector", "matchLabels"])),
                },
            ],
        },
        Kind::IpPool => KindColumns {
            ps: &["NAME", "CIDR", "SELECTOR"],
            wide: &[
                "NAME",
                "CIDR",
                "NAT",
                "IPIPMODE",
                "VXLANMODE",
                "DISABLED",
                "DISABLEBGPEXPORT",
                "SELECTOR",
            ],
            all: &[
                NAME,
                Column {
                    heading: "CIDR",
                    cell: |resource, _| scalar(spec(resource, &["cidr"])),
                },
                Column {
                    heading: "NAT",
                    cell: |resource, _| flag(spec(resource, &["natOutgoing"])),
                },
                Column {
                    heading: "IPIPMODE",
                    cell: |resource, _| encapsulation_mode(spec(resource, &["ipipMode"])),
                },
                Column {
                    heading: "VXLANMODE",
                    cell: |resource, _| encapsulation_mode(spec(resource, &["vxlanMode"])),
                },
                Column {
                    heading: "DISABLED",
                    cell: |resource, _| flag(spec(resource, &["disabled"])),
                },
                Column {
                    heading: "DISABLEBGPEXPORT",
                    cell: |resource, _| flag(spec(resource, &["disableBGPExport"])),
                },
                Column {
                    heading: "SELECTOR",
                    cell: |resource, _| scalar(spec(resource, &["nodeSelector"])),
                },
            ],
        },
        Kind::BgpConfiguration => KindColumns {
            ps: &["NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"],
            wide: &["NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"],
            all: &[
                NAME,
                Column {
                    heading: "LOGSEVERITY",
                    cell: |resource, _| scalar(spec(resource, &["logSeverityScreen"])),
                },
                Column {
                    heading: "MESHENABLED",
                    cell: |resource, _| set_or_dash(spec(resource, &["nodeToNodeMeshEnabled"])),
                },
                Column {
                    heading: "ASNUMBER",
                    cell: |resource, _| set_or_dash(spec(resource, &["asNumber"])),
                },
            ],
        },
        Kind::BgpFilter => KindColumns {
            ps: BGP_FILTER_HEADINGS,
            wide: BGP_FILTER_HEADINGS,
            all: &[
                NAME,
                Column {
                    heading: "NUMEXPORTV4",
                    cell: |resource, _| count(spec(resource, &["exportV4"])),
                },
                Column {
                    heading: "NUMIMPORTV4",
                    cell: |resource, _| count(spec(resource, &["importV4"])),
                },
                Column {
                    heading: "NUMEXPORTV6",
                    cell: |resource, _| count(spec(resource, &["exportV6"])),
                },
                Column {
                    heading: "NUMIMPORTV6",
                    cell: |resource, _| count(spec(resource, &["importV6"])),
                },
            ],
        },
        Kind::ClusterInformation => KindColumns {
            ps: &[
                "NAME",
                "CLUSTERGUID",
                "CLUSTERTYPE",
                "CALICOVERSION",
                "DATASTOREREADY",
            ],
            wide: &[
                "NAME",
                "CLUSTERGUID",
                "CLUSTERTYPE",
                "CALICOVERSION",
                "DATASTOREREADY",
            ],
            all: &[
                NAME,
                Column {
                    heading: "CLUSTERGUID",
                    cell: |resource, _| scalar(spec(resource, &["clusterGUID"])),
                },
                Column {
                    heading: "CLUSTERTYPE",
                    cell: |resource, _| scalar(spec(resource, &["clusterType"])),
                },
                Column {
                    heading: "CALICOVERSION",
                    cell: |resource, _| scalar(spec(resource, &["calicoVersion"])),
                },
                Column {
                    heading: "DATASTOREREADY",
                    cell: |resource, _| scalar(spec(resource, &["datastoreReady"])),
                },
            ],
        },
        Kind::FelixConfiguration | Kind::KubeControllersConfiguration => KindColumns {
            ps: &["NAME"],
            wide: &["NAME"],
            all: &[NAME],
        },
        Kind::GlobalNetworkSet => KindColumns {
            ps: &["NAME"],
            wide: &["NAME", "NETS"],
            all: &[
                NAME,
                Column {
                    heading: "NETS",
                    cell: nets,
                },
            ],
        },
        Kind::NetworkSet => KindColumns {
            ps: &["NAME"],
            wide: &["NAME", "NETS"],
            all: &[
                NAME,
                NAMESPACE,
                Column {
                    heading: "NETS",
                    cell: nets,
                },
            ],
        },
        Kind::IpReservation => KindColumns {
            ps: &["NAME"],
            wide: &["NAME", "CIDRS"],
            all: &[
                NAME,
                Column {
                    heading: "CIDRS",
                    cell: |resource, _| join_and_truncate(spec(resource, &["reservedCIDRs"])),
                },
            ],
        },
        // calicoctl's columns (`resourcemgr/nodestatus.go`).
        Kind::CalicoNodeStatus => KindColumns {
            ps: &["NAME", "NODE"],
            wide: &["NAME", "NODE", "CLASSES"],
            all: &[
                NAME,
                Column {
                    heading: "NODE",
                    cell: |resource, _| scalar(spec(resource, &["node"])),
                },
                Column {
                    heading: "CLASSES",
                    cell: |resource, _| join(spec(resource, &["classes"])),
                },
            ],
        },
        Kind::Profile => KindColumns {
            ps: &["NAME"],
            wide: &["NAME", "LABELS"],
            all: &[
                NAME,
                Column {
                    heading: "LABELS",
                    cell: |resource, _| join_map(spec(resource, &["labelsToApply"])),
                },
            ],
        },
        Kind::Tier => KindColumns {
            ps: &["NAME", "ORDER"],
            wide: &["NAME", "ORDER"],
            all: &[
                NAME,
                Column {
                    heading: "ORDER",
                    cell: order,
                },
            ],
        },
        Kind::WorkloadEndpoint => KindColumns {
            ps: &["WORKLOAD", "NODE", "NETWORKS", "INTERFACE"],
            wide: &[
                "NAME",
                "WORKLOAD",
                "NODE",
                "NETWORKS",
                "INTERFACE",
                "PROFILES",
                "NATS",
            ],
            all: &[
                NAME,
                NAMESPACE,
                Column {
                    heading: "WORKLOAD",
                    cell: workload,
                },
                Column {
                    heading: "ORCHESTRATOR",
                    cell: |resource, _| scalar(spec(resource, &["orchestrator"])),
                },
                Column {
                    heading: "NODE",
                    cell: node,
                },
                Column {
                    heading: "NETWORKS",
                    cell: |resource, _| join(spec(resource, &["ipNetworks"])),
                },
                Column {
                    heading: "INTERFACE",
                    cell: interface,
                },
                Column {
                    heading: "PROFILES",
                    cell: profiles,
                },
                Column {
                    heading: "NATS",
                    cell: nat_mappings,
                },
            ],
        },
    }
}
