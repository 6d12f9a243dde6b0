//! The table columns of `netctl get` for every kind: which headings `ps` and `wide` show, and how each
//! cell is computed from a resource.
//!
//! Headings, defaults and fallbacks follow upstream calicoctl (`reference/calicoctl.md` §8.2) so that
//! scripts reading the tables keep working: Node ASN falls back to `(<global AS>)`, BGPPeer NODE to
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

// ----- cell helpers -----

/// Network lists longer than this are cut, the cut ending with `...` (upstream's `joinAndTruncate`).
const MAXIMUM_LIST_WIDTH: usize = 80;
const TRUNCATION_SUFFIX: &str = "...";

fn spec<'a>(resource: &'a Resource, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(&resource.spec, |value, key| value.get(key))
        .filter(|value| !value.is_null())
}

/// A scalar as text: strings as they are, numbers as Go prints them, absent as empty.
fn scalar(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Bool(flag)) => flag.to_string(),
        Some(Value::Number(number)) => go_number(number),
        Some(other) => other.to_string(),
    }
}

/// A boolean that defaults to `false` when absent (a non-pointer Go `bool`).
fn flag(value: Option<&Value>) -> String {
    value.and_then(Value::as_bool).unwrap_or(false).to_string()
}

/// A string that counts as set only when non-empty (Go template truthiness).
fn non_empty(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// Integers plainly; other numbers as Go's `%v` prints a `float64` (see [`go_float`]).
fn go_number(number: &serde_json::Number) -> String {
    if let Some(integer) = number.as_i64() {
        return integer.to_string();
    }
    if let Some(integer) = number.as_u64() {
        return integer.to_string();
    }
    number.as_f64().map_or_else(|| number.to_string(), go_float)
}

/// A `float64` as Go's `%v` prints it: the shortest digits that round-trip, in plain notation when
/// the decimal exponent is in `-4..6` and in Go's exponent notation otherwise (`100`, `1.5`,
/// `1e+06`, `1e-05`). Policy and tier orders are Go `float64`s upstream, so an order of one million
/// shows as `1e+06` there and here.
fn go_float(float: f64) -> String {
    if !float.is_finite() {
        return float.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits and the exact exponent, e.g. `1.5e-7`.
    let scientific = format!("{float:e}");
    let (mantissa, power) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = power.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{float}");
    }
    let (sign, digits) = match power.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', power),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// A policy or tier order: always a Go `float64` upstream, so integers get float formatting too.
fn float_cell(value: Option<&Value>) -> String {
    match value {
        Some(Value::Number(number)) => number.as_f64().map_or_else(|| number.to_string(), go_float),
        other => scalar(other),
    }
}

/// Joins a list of scalars with `,`; anything else renders as a single scalar.
fn join(value: Option<&Value>) -> String {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| scalar(Some(item)))
            .collect::<Vec<_>>()
            .join(","),
        other => scalar(other),
    }
}

/// [`join`], cut to [`MAXIMUM_LIST_WIDTH`] characters with the cut ending in `...`.
fn join_and_truncate(value: Option<&Value>) -> String {
    truncate(join(value))
}

fn truncate(text: String) -> String {
    if text.chars().count() <= MAXIMUM_LIST_WIDTH {
        return text;
    }
    let kept: String = text
        .chars()
        .take(MAXIMUM_LIST_WIDTH - TRUNCATION_SUFFIX.len())
        .collect();
    kept + TRUNCATION_SUFFIX
}

/// A map as sorted `k=v` pairs joined by `,`.
fn join_map(value: Option<&Value>) -> String {
    let Some(Value::Object(map)) = value else {
        return String::new();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(key, value)| format!("{key}={}", scalar(Some(value))))
        .collect();
    pairs.sort();
    pairs.join(",")
}

fn name(resource: &Resource, _: &CellContext) -> String {
    resource.metadata.name.clone()
}

fn namespace(resource: &Resource, _: &CellContext) -> String {
    resource.metadata.namespace.clone().unwrap_or_default()
}

fn tier(resource: &Resource, _: &CellContext) -> String {
    non_empty(spec(resource, &["tier"]))
        .unwrap_or("default")
        .to_string()
}

fn order(resource: &Resource, _: &CellContext) -> String {
    float_cell(spec(resource, &["order"]))
}

fn policy_selector(resource: &Resource, _: &CellContext) -> String {
    scalar(spec(resource, &["selector"]))
}

fn node(resource: &Resource, _: &CellContext) -> String {
    scalar(spec(resource, &["node"]))
}

fn interface(resource: &Resource, _: &CellContext) -> String {
    scalar(spec(resource, &["interfaceName"]))
}

fn profiles(resource: &Resource, _: &CellContext) -> String {
    join(spec(resource, &["profiles"]))
}

fn nets(resource: &Resource, _: &CellContext) -> String {
    join_and_truncate(spec(resource, &["nets"]))
}

fn node_as_number(resource: &Resource, context: &CellContext) -> String {
    if spec(resource, &["bgp"]).is_none() {
        return String::new();
    }
    match spec(resource, &["bgp", "asNumber"]) {
        Some(number) => scalar(Some(number)),
        None => format!("({})", context.global_as_number),
    }
}

fn peer_node(resource: &Resource, _: &CellContext) -> String {
    non_empty(spec(resource, &["node"]))
        .or_else(|| non_empty(spec(resource, &["nodeSelector"])))
        .unwrap_or("(global)")
        .to_string()
}

fn peer_as_number(resource: &Resource, _: &CellContext) -> String {
    spec(resource, &["asNumber"]).map_or_else(|| "0".to_string(), |number| scalar(Some(number)))
}

fn encapsulation_mode(value: Option<&Value>) -> String {
    non_empty(value).unwrap_or("Never").to_string()
}

/// BGPFilter shows the same columns in `ps` and `wide`: the rule count of each list.
const BGP_FILTER_HEADINGS: &[&str] = &[
    "NAME",
    "NUMEXPORTV4",
    "NUMIMPORTV4",
    "NUMEXPORTV6",
    "NUMIMPORTV6",
];

/// The number of entries of a list field (`0` when absent), as upstream's BGPFilter rule counts.
fn count(value: Option<&Value>) -> String {
    value
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
        .to_string()
}

fn set_or_dash(value: Option<&Value>) -> String {
    match value {
        Some(value) => scalar(Some(value)),
        None => "-".to_string(),
    }
}

fn workload(resource: &Resource, _: &CellContext) -> String {
    non_empty(spec(resource, &["workload"]))
        .map(str::to_string)
        .unwrap_or_else(|| scalar(spec(resource, &["pod"])))
}

fn nat_mappings(resource: &Resource, _: &CellContext) -> String {
    let Some(Value::Array(mappings)) = spec(resource, &["ipNATs"]) else {
        return String::new();
    };
    mappings
        .iter()
        .map(|mapping| {
            format!(
                "{{{} {}}}",
                scalar(mapping.get("internalIP")),
                scalar(mapping.get("externalIP"))
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

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

fn definition(kind: Kind) -> KindColumns {
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
        Kind::GlobalNetworkPolicy => KindColumns {
            ps: &["NAME", "TIER"],
            wide: &["NAME", "TIER", "ORDER", "SELECTOR"],
            all: POLICY_COLUMNS,
        },
        Kind::NetworkPolicy => KindColumns {
            ps: &["NAME", "TIER"],
            wide: &["NAME", "TIER", "ORDER", "SELECTOR"],
            all: NAMESPACED_POLICY_COLUMNS,
        },
        // As calicoctl's `resourcemgr/staged*.go`.
        Kind::StagedGlobalNetworkPolicy => KindColumns {
            ps: &["NAME", "TIER"],
            wide: &["NAME", "TIER", "ORDER", "SELECTOR"],
            all: POLICY_COLUMNS,
        },
        Kind::StagedNetworkPolicy => KindColumns {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn order_text(text: &str) -> String {
        float_cell(Some(&serde_json::from_str(text).unwrap()))
    }

    #[test]
    fn orders_print_as_go_prints_a_float64() {
        assert_eq!(order_text("100"), "100");
        assert_eq!(order_text("-3"), "-3");
        assert_eq!(order_text("100.0"), "100");
        assert_eq!(order_text("1.5"), "1.5");
        assert_eq!(order_text("0"), "0");
        assert_eq!(order_text("0.0001"), "0.0001");
        assert_eq!(order_text("0.00001"), "1e-05");
        assert_eq!(order_text("999999"), "999999");
        assert_eq!(order_text("1000000"), "1e+06");
        assert_eq!(order_text("1234567.5"), "1.2345675e+06");
        assert_eq!(order_text("1e21"), "1e+21");
        assert_eq!(order_text("1.25e-122"), "1.25e-122");
    }

    #[test]
    fn other_numbers_print_plainly() {
        assert_eq!(
            scalar(Some(&serde_json::json!(4294967295u64))),
            "4294967295"
        );
        assert_eq!(scalar(Some(&serde_json::json!(true))), "true");
        assert_eq!(scalar(None), "");
    }

    #[test]
    fn every_column_names_the_spec_fields_it_reads() {
        for kind in Kind::ALL {
            for column in definition(kind).all {
                assert!(
                    spec_fields_read(kind, column.heading).is_some(),
                    "{kind} {} reads unlisted fields",
                    column.heading
                );
            }
        }
    }

    #[test]
    fn lists_are_cut_at_eighty_characters() {
        let exactly = "a".repeat(80);
        assert_eq!(truncate(exactly.clone()), exactly);
        let longer = "b".repeat(81);
        let cut = truncate(longer);
        assert_eq!(cut.len(), 80);
        assert!(cut.ends_with("bbb..."));
    }
}
