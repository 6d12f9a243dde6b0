//! The table columns of `netctl get` for every kind: which headings `ps` and `wide` show, and how each
//! cell is computed from a resource.
//!
//! Headings, defaults and fallbacks follow upstream calicoctl
//! (`calicoctl/calicoctl/resourcemgr/*.go`, `commands/common/printer.go`) so that scripts reading
//! the tables keep working: Node ASN falls back to `(<global AS>)`, BGPPeer NODE to
//! `(global)`, IPPool encapsulation modes to `Never`, BGPConfiguration mesh and AS number to `-`,
//! network lists are cut at 80 characters with `...`, and policy TIER shows `default` when the spec
//! names none. Where upstream's Go templates print Go artefacts, netctl prints something readable
//! instead, deliberately:
//!
//! - an absent optional value (an unset `order`, an unset `datastoreReady`) is an empty cell, where
//!   Go prints `<nil>`;
//! - a BGPPeer without `asNumber` shows `0`, as upstream (the Go zero value), because `0` is what a
//!   peer without an AS number means;
//! - WorkloadEndpoint NATS shows each mapping as Go does, `{<internalIP> <externalIP>}`, joined by `,`.
//!
//! This module computes cell text only; laying cells out is `table.rs`'s job.

use serde_json::Value;

use crate::resource::{Kind, Resource};

use super::OutputError;
use cells::spec;
use kinds::definition;

mod cells;
mod kinds;
#[cfg(test)]
mod tests;

/// The AS number a Node without its own shows in parentheses: BGPConfiguration `default`'s
/// `spec.asNumber`, or [`DEFAULT_AS_NUMBER`] when that is unset or absent. The caller reads it (only
/// when [`TableColumns::needs_global_as_number`] says so) and passes it in; this module does no I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalAsNumber {
    Known(u32),
    /// Reading BGPConfiguration failed for a reason other than "not found"; upstream shows `unknown`.
    Unreadable,
}

/// The AS number Calico uses when none is configured (the first private-use AS).
pub const DEFAULT_AS_NUMBER: u32 = 64512;

impl Default for GlobalAsNumber {
    fn default() -> GlobalAsNumber {
        GlobalAsNumber::Known(DEFAULT_AS_NUMBER)
    }
}

impl std::fmt::Display for GlobalAsNumber {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GlobalAsNumber::Known(number) => write!(formatter, "{number}"),
            GlobalAsNumber::Unreadable => formatter.write_str("unknown"),
        }
    }
}

/// What cells may need beyond the resource itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CellContext {
    pub global_as_number: GlobalAsNumber,
}

/// Which columns a table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnSet<'a> {
    /// The default (`-o ps`) headings.
    Ps,
    /// The `-o wide` headings.
    Wide,
    /// `-o custom-columns=A,B`: headings from the kind's heading map, in the order given.
    Custom(&'a [String]),
}

/// Whether to prepend a NAMESPACE column (for `-n`/`-A`) when the kind has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceColumn {
    Show,
    Hide,
}

type CellFunction = fn(&Resource, &CellContext) -> String;

struct Column {
    heading: &'static str,
    cell: CellFunction,
}

struct KindColumns {
    ps: &'static [&'static str],
    wide: &'static [&'static str],
    /// Every heading `custom-columns` may name for the kind.
    all: &'static [Column],
}

/// The resolved columns of one table.
pub struct TableColumns {
    kind: Kind,
    columns: Vec<&'static Column>,
}

impl std::fmt::Debug for TableColumns {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TableColumns")
            .field("kind", &self.kind)
            .field("headings", &self.headings())
            .finish()
    }
}

impl TableColumns {
    /// Resolves the columns for a kind. `namespace` only applies to `Ps` and `Wide`: with
    /// custom-columns a user lists NAMESPACE explicitly, as upstream.
    pub fn new(
        kind: Kind,
        set: ColumnSet<'_>,
        namespace: NamespaceColumn,
    ) -> Result<TableColumns, OutputError> {
        let definition = definition(kind);
        let find = |heading: &str| {
            definition
                .all
                .iter()
                .find(|column| column.heading == heading)
        };
        let mut columns = Vec::new();
        let headings: Vec<&str> = match set {
            ColumnSet::Ps => definition.ps.to_vec(),
            ColumnSet::Wide => definition.wide.to_vec(),
            ColumnSet::Custom(headings) => headings.iter().map(String::as_str).collect(),
        };
        if namespace == NamespaceColumn::Show && !matches!(set, ColumnSet::Custom(_)) {
            columns.extend(find("NAMESPACE"));
        }
        for heading in headings {
            match find(heading) {
                Some(column) => columns.push(column),
                None => {
                    let mut valid: Vec<&str> =
                        definition.all.iter().map(|column| column.heading).collect();
                    valid.sort_unstable();
                    return Err(OutputError::UnknownHeading {
                        kind,
                        heading: heading.to_string(),
                        valid: valid.join(", "),
                    });
                }
            }
        }
        Ok(TableColumns { kind, columns })
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The heading row.
    pub fn headings(&self) -> Vec<&'static str> {
        self.columns.iter().map(|column| column.heading).collect()
    }

    /// The cells of one resource's row.
    pub fn row(&self, resource: &Resource, context: &CellContext) -> Vec<String> {
        self.columns
            .iter()
            .map(|column| (column.cell)(resource, context))
            .collect()
    }

    /// The top-level spec fields the cells read, so a list can decode only those
    /// (`Detail::Summary`); `None` when a column does not say, and everything must be decoded.
    pub fn spec_fields(&self) -> Option<Vec<&'static str>> {
        let mut fields = Vec::new();
        for column in &self.columns {
            for field in spec_fields_read(self.kind, column.heading)? {
                if !fields.contains(field) {
                    fields.push(*field);
                }
            }
        }
        Some(fields)
    }

    /// Whether a cell shows the global AS number, so the caller knows to read BGPConfiguration.
    pub fn needs_global_as_number(&self) -> bool {
        self.kind == Kind::Node && self.columns.iter().any(|column| column.heading == "ASN")
    }
}

/// Every heading the kind knows, sorted (what custom-columns accepts).
pub fn headings_for(kind: Kind) -> Vec<&'static str> {
    let mut headings: Vec<&str> = definition(kind)
        .all
        .iter()
        .map(|column| column.heading)
        .collect();
    headings.sort_unstable();
    headings
}

/// Sorts tiers as upstream lists them: by `spec.order` ascending, tiers without an order last; ties by
/// name so the output is stable.
pub fn sort_tiers_by_order(tiers: &mut [Resource]) {
    tiers.sort_by(|left, right| {
        let order = |tier: &Resource| spec(tier, &["order"]).and_then(Value::as_f64);
        match (order(left), order(right)) {
            (Some(a), Some(b)) => a.total_cmp(&b),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then_with(|| left.metadata.name.cmp(&right.metadata.name))
    });
}

/// The top-level spec fields the cell under `heading` reads for `kind` (beyond the name and
/// namespace, which every read has); `None` for a column not listed here, which makes a list decode
/// whole resources. Kept next to [`definition`]; a test checks that every column is listed and that
/// its cells come out the same from a resource decoded with only these fields.
fn spec_fields_read(kind: Kind, heading: &str) -> Option<&'static [&'static str]> {
    let fields: &'static [&'static str] = match (kind, heading) {
        (_, "NAME" | "NAMESPACE") => &[],
        (Kind::Node, "ASN" | "IPV4" | "IPV6") => &["bgp"],
        (Kind::BgpPeer, "PEERIP") => &["peerIP"],
        (Kind::BgpPeer, "NODE") => &["node", "nodeSelector"],
        (Kind::BgpPeer, "ASN") => &["asNumber"],
        (Kind::HostEndpoint, "NODE") => &["node"],
        (Kind::HostEndpoint, "INTERFACE") => &["interfaceName"],
        (Kind::HostEndpoint, "IPS") => &["expectedIPs"],
        (Kind::HostEndpoint, "PROFILES") => &["profiles"],
        (
            Kind::GlobalNetworkPolicy
            | Kind::NetworkPolicy
            | Kind::StagedGlobalNetworkPolicy
            | Kind::StagedNetworkPolicy,
            "TIER",
        ) => &["tier"],
        (
            Kind::GlobalNetworkPolicy
            | Kind::NetworkPolicy
            | Kind::StagedGlobalNetworkPolicy
            | Kind::StagedNetworkPolicy
            | Kind::Tier,
            "ORDER",
        ) => &["order"],
        (
            Kind::GlobalNetworkPolicy
            | Kind::NetworkPolicy
            | Kind::StagedGlobalNetworkPolicy
            | Kind::StagedNetworkPolicy,
            "SELECTOR",
        ) => &["selector"],
        (Kind::StagedKubernetesNetworkPolicy, "PODSELECTOR") => &["podSelector"],
        (Kind::IpPool, "CIDR") => &["cidr"],
        (Kind::IpamConfiguration, "STRICTAFFINITY") => &["strictAffinity"],
        (Kind::IpamConfiguration, "AUTOALLOCATEBLOCKS") => &["autoAllocateBlocks"],
        (Kind::IpamConfiguration, "MAXBLOCKSPERHOST") => &["maxBlocksPerHost"],
        (Kind::IpPool, "NAT") => &["natOutgoing"],
        (Kind::IpPool, "IPIPMODE") => &["ipipMode"],
        (Kind::IpPool, "VXLANMODE") => &["vxlanMode"],
        (Kind::IpPool, "DISABLED") => &["disabled"],
        (Kind::IpPool, "DISABLEBGPEXPORT") => &["disableBGPExport"],
        (Kind::IpPool, "SELECTOR") => &["nodeSelector"],
        (Kind::BgpConfiguration, "LOGSEVERITY") => &["logSeverityScreen"],
        (Kind::BgpConfiguration, "MESHENABLED") => &["nodeToNodeMeshEnabled"],
        (Kind::BgpConfiguration, "ASNUMBER") => &["asNumber"],
        (Kind::BgpFilter, "NUMEXPORTV4") => &["exportV4"],
        (Kind::BgpFilter, "NUMIMPORTV4") => &["importV4"],
        (Kind::BgpFilter, "NUMEXPORTV6") => &["exportV6"],
        (Kind::BgpFilter, "NUMIMPORTV6") => &["importV6"],
        (Kind::ClusterInformation, "CLUSTERGUID") => &["clusterGUID"],
        (Kind::ClusterInformation, "CLUSTERTYPE") => &["clusterType"],
        (Kind::ClusterInformation, "CALICOVERSION") => &["calicoVersion"],
        (Kind::ClusterInformation, "DATASTOREREADY") => &["datastoreReady"],
        (Kind::GlobalNetworkSet | Kind::NetworkSet, "NETS") => &["nets"],
        (Kind::IpReservation, "CIDRS") => &["reservedCIDRs"],
        (Kind::CalicoNodeStatus, "NODE") => &["node"],
        (Kind::CalicoNodeStatus, "CLASSES") => &["classes"],
        (Kind::Profile, "LABELS") => &["labelsToApply"],
        (Kind::WorkloadEndpoint, "WORKLOAD") => &["workload", "pod"],
        (Kind::WorkloadEndpoint, "ORCHESTRATOR") => &["orchestrator"],
        (Kind::WorkloadEndpoint, "NODE") => &["node"],
        (Kind::WorkloadEndpoint, "NETWORKS") => &["ipNetworks"],
        (Kind::WorkloadEndpoint, "INTERFACE") => &["interfaceName"],
        (Kind::WorkloadEndpoint, "PROFILES") => &["profiles"],
        (Kind::WorkloadEndpoint, "NATS") => &["ipNATs"],
        _ => return None,
    };
    Some(fields)
}
