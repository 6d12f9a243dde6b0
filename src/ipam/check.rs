//! The IPAM consistency check: upstream's algorithm (`calicoctl/calicoctl/commands/ipam/check.go`)
//! fed one object at a time, so a caller can stream blocks, nodes and workload endpoints page by
//! page and keep only what the check needs — one small record per allocation and per address in
//! use, never a decoded block or endpoint.
//!
//! Order matters as upstream's does: blocks first (the allocations), then the active pools, then
//! what uses addresses (node tunnel addresses, LoadBalancer Services, workload endpoints: each
//! marks the allocations of its address as in use), then the handles; [`Checker::finish`] then
//! classifies. The lines upstream prints are written to `out` as the check goes, in upstream's
//! words (installers scrape them), with addresses and handles sorted where upstream's order is a
//! Go map's (random).
//!
//! Beyond upstream: a node's IPv6 VXLAN and WireGuard tunnel addresses count as in use (upstream
//! counts only the IPv4 ones, so it reports a live node's IPv6 tunnel address as leaked and a
//! release from its report would free it); damaged blocks and handles whose counts disagree with
//! their blocks are reported by key; and what could not be checked is said.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};
use std::net::IpAddr;

use super::block::{AllocationAttribute, AllocationBlock, WINDOWS_RESERVED_HANDLE, attribute};
use super::cidr::Cidr;
use super::report::{HandleInfo, NetctlFindings, Report, ReportAllocation};

/// How much the check prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// Counts only.
    #[default]
    Counts,
    /// Also each problem address (`--show-problem-ips`).
    Problems,
    /// Also every address checked (`--show-all-ips`).
    All,
}

impl Detail {
    fn problems(self) -> bool {
        self != Detail::Counts
    }

    fn all(self) -> bool {
        self == Detail::All
    }
}

/// One allocation, as much of it as the check and the report need.
#[derive(Debug, Clone)]
struct Allocation {
    handle: Option<Box<str>>,
    sequence_number: u64,
    pod: Option<Box<str>>,
    namespace: Option<Box<str>>,
    node: Box<str>,
    allocation_type: Option<Box<str>>,
    timestamp: Option<Box<str>>,
    borrowed: bool,
    in_use: bool,
    owners: Vec<Box<str>>,
    /// The attributes as upstream prints them, kept only when problems are shown.
    attributes: Option<Box<str>>,
}

/// The identity a report keeps of a handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandleIdentity {
    pub uid: Option<String>,
    pub revision: String,
}

/// The cluster a check ran against (ClusterInformation `default`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterIdentity {
    pub guid: String,
    pub revision: String,
    pub cluster_type: String,
    pub locked: bool,
}

/// The check in progress.
pub struct Checker {
    detail: Detail,
    allocations: HashMap<IpAddr, Vec<Allocation>>,
    allocation_count: usize,
    by_node: HashMap<Box<str>, usize>,
    in_use: HashMap<IpAddr, Vec<Box<str>>>,
    in_use_handles: HashSet<Box<str>>,
    /// handle → block → allocations the blocks hold (by handle, so that a handle's counts are
    /// found without walking everyone's: a walk per handle made 100k handles take 100 s).
    handle_counts: HashMap<Box<str>, BTreeMap<Box<str>, i64>>,
    handles: BTreeMap<String, HandleIdentity>,
    handle_count_problems: Vec<String>,
    active_pools: Vec<Cidr>,
    blocks: usize,
    damaged: BTreeMap<String, Vec<String>>,
    not_checked: Vec<String>,
}

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    pub leaked: Vec<String>,
    pub without_allocation: Vec<String>,
    pub outside_pools: Vec<String>,
    pub leaked_handles: Vec<String>,
    pub missing_handles: Vec<String>,
    pub handle_counts: Vec<String>,
    pub damaged_blocks: Vec<String>,
    pub not_checked: Vec<String>,
}

impl Findings {
    /// What `Check complete; found N problems.` counts: upstream's four kinds (leaked addresses,
    /// addresses in use outside the pools or without an allocation, leaked handles), and netctl's
    /// damaged blocks and disagreeing handle counts. Missing handles are printed, not counted, as
    /// upstream.
    pub fn problems(&self) -> usize {
        self.leaked.len()
            + self.without_allocation.len()
            + self.outside_pools.len()
            + self.leaked_handles.len()
            + self.handle_counts.len()
            + self.damaged_blocks.len()
    }
}

impl Checker {
    pub fn new(detail: Detail) -> Checker {
        Checker {
            detail,
            allocations: HashMap::new(),
            allocation_count: 0,
            by_node: HashMap::new(),
            in_use: HashMap::new(),
            in_use_handles: HashSet::new(),
            handle_counts: HashMap::new(),
            handles: BTreeMap::new(),
            handle_count_problems: Vec::new(),
            active_pools: Vec::new(),
            blocks: 0,
            damaged: BTreeMap::new(),
            not_checked: Vec::new(),
        }
    }

    /// Records a block whose stored value could not be read at all.
    pub fn add_unreadable_block(&mut self, key: &str, reason: String) {
        self.blocks += 1;
        self.damaged.insert(key.to_string(), vec![reason]);
    }

    /// Records a block and its allocations (upstream's `recordAllocation` per ordinal).
    pub fn add_block(
        &mut self,
        key: &str,
        block: &AllocationBlock,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        self.blocks += 1;
        let damage = block.damage();
        if !damage.is_empty() {
            self.damaged.insert(
                key.to_string(),
                damage.iter().map(ToString::to_string).collect(),
            );
        }
        let cidr = block
            .cidr
            .map_or_else(|| key.to_string(), |cidr| cidr.to_string());
        writeln!(
            out,
            " IPAM block {cidr} affinity={}:",
            block.affinity.as_deref().unwrap_or("<none>")
        )?;
        let block_node = block.host_node().unwrap_or("");
        for allocated in block.allocated() {
            let ip = allocated.address;
            let attribute = allocated.attribute;
            let owner = |key: &str| -> Option<Box<str>> {
                attribute.and_then(|a| a.owner(key)).map(Box::from)
            };
            let mut record = Allocation {
                handle: None,
                sequence_number: block.sequence_number_of(allocated.ordinal),
                pod: owner(attribute::POD),
                namespace: owner(attribute::NAMESPACE),
                node: owner(attribute::NODE).unwrap_or_else(|| block_node.into()),
                allocation_type: owner(attribute::TYPE),
                timestamp: owner(attribute::TIMESTAMP),
                borrowed: false,
                in_use: false,
                owners: Vec::new(),
                attributes: None,
            };
            record.borrowed = &*record.node != block_node;
            let attributes = attribute_text(attribute);
            match attribute.and_then(|a| a.handle_id.as_deref()) {
                Some(WINDOWS_RESERVED_HANDLE) => {
                    self.allocation_count += 1;
                    self.push_allocation(ip, record, &attributes);
                    self.add_in_use(ip, "Reserved for Windows", out)?;
                    continue;
                }
                Some(handle) => {
                    record.handle = Some(handle.into());
                    self.in_use_handles.insert(handle.into());
                    *self
                        .handle_counts
                        .entry(handle.into())
                        .or_default()
                        .entry(cidr.as_str().into())
                        .or_default() += 1;
                }
                None => {}
            }
            self.allocation_count += 1;
            self.push_allocation(ip, record, &attributes);
            if self.detail.all() {
                writeln!(out, "  {ip} allocated; attrs {attributes}")?;
            }
        }
        Ok(())
    }

    fn push_allocation(&mut self, ip: IpAddr, mut record: Allocation, attributes: &str) {
        if self.detail.problems() {
            record.attributes = Some(attributes.into());
        }
        *self.by_node.entry(record.node.clone()).or_default() += 1;
        let owners = self.in_use.get(&ip).cloned().unwrap_or_default();
        if !owners.is_empty() {
            record.in_use = true;
            record.owners = owners;
        }
        self.allocations.entry(ip).or_default().push(record);
    }

    /// Blocks seen so far.
    pub fn block_count(&self) -> usize {
        self.blocks
    }

    /// Allocations seen so far.
    pub fn allocation_count(&self) -> usize {
        self.allocation_count
    }

    /// An enabled pool.
    pub fn add_active_pool(&mut self, cidr: Cidr) {
        self.active_pools.push(cidr);
    }

    pub fn active_pool_count(&self) -> usize {
        self.active_pools.len()
    }

    /// An address in use by `owner` (`Node(name)`, `Workload(ns/name)`, a Service's name):
    /// upstream's `recordInUseIP`.
    pub fn add_in_use(&mut self, ip: IpAddr, owner: &str, out: &mut dyn Write) -> io::Result<()> {
        if self.detail.all() {
            writeln!(out, "  {ip} belongs to {owner}")?;
        }
        self.in_use.entry(ip).or_default().push(owner.into());
        if let Some(allocations) = self.allocations.get_mut(&ip) {
            for allocation in allocations {
                allocation.in_use = true;
                allocation.owners.push(owner.into());
            }
        }
        Ok(())
    }

    /// Addresses in use so far.
    pub fn in_use_count(&self) -> usize {
        self.in_use.len()
    }

    /// A stored handle and what its guarded delete compares; `blocks` its stored counts.
    pub fn add_handle(
        &mut self,
        id: &str,
        identity: HandleIdentity,
        blocks: &BTreeMap<String, i64>,
    ) {
        if self.in_use_handles.contains(id) {
            let mut held_by_block = self.handle_counts.remove(id).unwrap_or_default();
            for (block, count) in blocks {
                let held = held_by_block.remove(block.as_str()).unwrap_or(0);
                if held != *count {
                    self.handle_count_problems.push(format!(
                        "handle `{id}` counts {count} addresses in block `{block}`; the block holds {held}"
                    ));
                }
            }
            for (block, held) in held_by_block {
                self.handle_count_problems.push(format!(
                    "handle `{id}` counts no addresses in block `{block}`; the block holds {held}"
                ));
            }
        }
        self.handles.insert(id.to_string(), identity);
    }

    /// Something the check could not look at, and why (said in the output and the report).
    pub fn not_checked(&mut self, what: String) {
        self.not_checked.push(what);
    }

    /// Prints the top nodes and the classification, and says what was found.
    pub fn finish(&mut self, out: &mut dyn Write) -> io::Result<Findings> {
        const NODES_TO_PRINT: usize = 20;
        writeln!(
            out,
            "Looking for top (up to {NODES_TO_PRINT}) nodes by allocations..."
        )?;
        let mut nodes: Vec<(&str, usize)> = self
            .by_node
            .iter()
            .map(|(node, count)| (&**node, *count))
            .collect();
        nodes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (node, count) in nodes.iter().take(NODES_TO_PRINT) {
            writeln!(out, "  {node} has {count} allocations")?;
        }
        if let Some((_, most)) = nodes.first() {
            let median = nodes[nodes.len() / 2].1;
            writeln!(
                out,
                "Node with most allocations has {most}; median is {median}"
            )?;
        }
        writeln!(out)?;

        let mut findings = Findings::default();
        writeln!(
            out,
            "Scanning for IPs that are allocated but not actually in use..."
        )?;
        let mut leaked: Vec<(&IpAddr, &Vec<Allocation>)> = self
            .allocations
            .iter()
            .filter(|(ip, _)| !self.in_use.contains_key(ip))
            .collect();
        leaked.sort_by_key(|(ip, _)| **ip);
        for (ip, allocations) in &leaked {
            if self.detail.problems() {
                for allocation in *allocations {
                    let attributes = allocation.attributes.as_deref().unwrap_or("<missing>");
                    writeln!(out, "  {ip} leaked; attrs {attributes}")?;
                }
            }
            findings.leaked.push(ip.to_string());
        }
        writeln!(
            out,
            "Found {} IPs that are allocated in IPAM but not actually in use.",
            findings.leaked.len()
        )?;

        writeln!(
            out,
            "Scanning for IPs that are in use by a workload or node but not allocated in IPAM..."
        )?;
        let mut in_use: Vec<(&IpAddr, &Vec<Box<str>>)> = self.in_use.iter().collect();
        in_use.sort_by_key(|(ip, _)| **ip);
        for (ip, owners) in in_use {
            if self.detail.problems() && owners.len() > 1 {
                writeln!(out, "  {ip} has multiple owners.")?;
            }
            if self.allocations.contains_key(ip) {
                continue;
            }
            if !self.active_pools.iter().any(|pool| pool.contains(*ip)) {
                if self.detail.problems() {
                    for owner in owners {
                        writeln!(
                            out,
                            "  {ip} in use by {owner} is not in any active IP pool."
                        )?;
                    }
                }
                findings.outside_pools.push(ip.to_string());
                continue;
            }
            if self.detail.problems() {
                for owner in owners {
                    writeln!(
                        out,
                        "  {ip} in use by {owner} and in active IPAM pool but has no IPAM allocation."
                    )?;
                }
            }
            findings.without_allocation.push(ip.to_string());
        }
        writeln!(
            out,
            "Found {} in-use IPs that are not in active IP pools.",
            findings.outside_pools.len()
        )?;
        writeln!(
            out,
            "Found {} in-use IPs that are in active IP pools but have no corresponding IPAM allocation.",
            findings.without_allocation.len()
        )?;
        writeln!(out)?;

        writeln!(out, "Scanning for IPAM handles with no matching IPs...")?;
        let mut good = 0;
        for id in self.handles.keys() {
            if self.in_use_handles.contains(id.as_str()) {
                good += 1;
                continue;
            }
            if self.detail.all() {
                writeln!(out, "  {id} doesn't have any active IPs.")?;
            }
            findings.leaked_handles.push(id.clone());
        }
        writeln!(
            out,
            "Found {} handles with no matching IPs (and {good} handles with matches).",
            findings.leaked_handles.len()
        )?;
        writeln!(out, "Scanning for IPs with missing handle...")?;
        let mut missing: Vec<&str> = self
            .in_use_handles
            .iter()
            .map(|handle| &**handle)
            .filter(|handle| !self.handles.contains_key(*handle))
            .collect();
        missing.sort_unstable();
        for handle in &missing {
            if self.detail.problems() {
                writeln!(out, "  {handle} is in use in a block but doesn't exist.")?;
            }
        }
        findings.missing_handles = missing.iter().map(|handle| handle.to_string()).collect();
        writeln!(
            out,
            "Found {} handles mentioned in blocks with no matching handle resource.",
            findings.missing_handles.len()
        )?;

        // netctl's own findings, said after upstream's lines so scrapers of those keep working.
        findings.handle_counts = std::mem::take(&mut self.handle_count_problems);
        findings.handle_counts.sort();
        if !findings.handle_counts.is_empty() {
            writeln!(
                out,
                "Found {} handle counts that disagree with their blocks:",
                findings.handle_counts.len()
            )?;
            for problem in &findings.handle_counts {
                writeln!(out, "  {problem}")?;
            }
        }
        if !self.damaged.is_empty() {
            writeln!(out, "Found {} damaged IPAM blocks:", self.damaged.len())?;
            for (key, problems) in &self.damaged {
                writeln!(out, "  `{key}`: {}", problems.join("; "))?;
                findings.damaged_blocks.push(key.clone());
            }
        }
        findings.not_checked = self.not_checked.clone();
        for what in &findings.not_checked {
            writeln!(out, "Not checked: {what}")?;
        }
        writeln!(
            out,
            "Check complete; found {} problems.",
            findings.problems()
        )?;
        Ok(findings)
    }

    /// The report file of this check (call after [`Checker::finish`]).
    pub fn report(&self, cluster: &ClusterIdentity, findings: &Findings) -> Report {
        let allocations = self
            .allocations
            .iter()
            .map(|(ip, records)| {
                let text = ip.to_string();
                let records = records
                    .iter()
                    .map(|record| report_allocation(&text, record))
                    .collect();
                (text, records)
            })
            .collect();
        let leaked_handles = findings
            .leaked_handles
            .iter()
            .filter_map(|id| {
                self.handles.get(id).map(|identity| HandleInfo {
                    id: id.clone(),
                    uid: identity.uid.clone(),
                    revision: identity.revision.clone(),
                })
            })
            .collect();
        let owners_of = |ips: &[String]| -> BTreeMap<String, Vec<String>> {
            ips.iter()
                .map(|ip| {
                    let owners = ip
                        .parse::<IpAddr>()
                        .ok()
                        .and_then(|parsed| self.in_use.get(&parsed))
                        .map(|owners| owners.iter().map(|o| o.to_string()).collect())
                        .unwrap_or_default();
                    (ip.clone(), owners)
                })
                .collect()
        };
        Report {
            version: super::report::report_version(),
            cluster_guid: cluster.guid.clone(),
            datastore_locked: cluster.locked,
            cluster_information_revision: cluster.revision.clone(),
            cluster_type: cluster.cluster_type.clone(),
            allocations,
            leaked_handles,
            netctl: Some(NetctlFindings {
                in_use_without_allocation: owners_of(&findings.without_allocation),
                outside_active_pools: owners_of(&findings.outside_pools),
                missing_handles: findings.missing_handles.clone(),
                handle_counts: findings.handle_counts.clone(),
                damaged_blocks: self.damaged.clone(),
                not_checked: findings.not_checked.clone(),
            }),
        }
    }
}

fn report_allocation(ip: &str, record: &Allocation) -> ReportAllocation {
    let text = |value: &Option<Box<str>>| value.as_deref().unwrap_or_default().to_string();
    ReportAllocation {
        ip: ip.to_string(),
        handle: text(&record.handle),
        sequence_number: Some(record.sequence_number),
        pod: text(&record.pod),
        namespace: text(&record.namespace),
        node: record.node.to_string(),
        allocation_type: text(&record.allocation_type),
        creation_timestamp: text(&record.timestamp),
        in_use: record.in_use,
        borrowed: record.borrowed,
        owners: (!record.owners.is_empty()).then(|| {
            record
                .owners
                .iter()
                .map(|owner| owner.to_string())
                .collect()
        }),
    }
}

/// An allocation's attributes as upstream prints them: `Main:<handle> Extra:k=v,...`, and
/// ` Alternate:k=v,...` when there is an alternate owner.
pub fn attribute_text(attribute: Option<&AllocationAttribute>) -> String {
    let Some(attribute) = attribute else {
        return "<missing>".to_string();
    };
    let pairs = |map: &Option<BTreeMap<String, String>>| -> String {
        map.iter()
            .flatten()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut text = format!(
        "Main:{} Extra:{}",
        attribute.handle_id.as_deref().unwrap_or("<none>"),
        pairs(&attribute.active_owner)
    );
    if attribute
        .alternate_owner
        .as_ref()
        .is_some_and(|owner| !owner.is_empty())
    {
        text.push_str(&format!(" Alternate:{}", pairs(&attribute.alternate_owner)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(node: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("node".to_string(), node.to_string())])
    }

    /// One leaked address, one address in use without an allocation, one leaked handle.
    #[test]
    fn the_three_problems_are_found_and_named() {
        let mut out = Vec::new();
        let mut checker = Checker::new(Detail::All);
        let cidr = Cidr::parse("10.66.0.0/26").unwrap();
        let mut block = AllocationBlock::empty(cidr, Some("host:node-1".into()));
        for (last, handle) in [(1, "pod-a"), (2, "pod-b")] {
            let ip = format!("10.66.0.{last}").parse().unwrap();
            block.allocate(ip, Some(handle), owner("node-1"));
        }
        checker
            .add_block(
                "/calico/ipam/v2/assignment/ipv4/block/10.66.0.0-26",
                &block,
                &mut out,
            )
            .unwrap();
        checker.add_active_pool(Cidr::parse("10.66.0.0/16").unwrap());
        checker
            .add_in_use(
                "10.66.0.1".parse().unwrap(),
                "Workload(default/a)",
                &mut out,
            )
            .unwrap();
        checker
            .add_in_use(
                "10.66.0.9".parse().unwrap(),
                "Workload(default/c)",
                &mut out,
            )
            .unwrap();
        let identity = |revision: &str| HandleIdentity {
            uid: None,
            revision: revision.into(),
        };
        let counts = |n| BTreeMap::from([("10.66.0.0/26".to_string(), n)]);
        checker.add_handle("pod-a", identity("5"), &counts(1));
        checker.add_handle("pod-b", identity("6"), &counts(1));
        checker.add_handle("leaked-handle", identity("7"), &counts(1));
        let findings = checker.finish(&mut out).unwrap();
        assert_eq!(findings.leaked, ["10.66.0.2"]);
        assert_eq!(findings.without_allocation, ["10.66.0.9"]);
        assert_eq!(findings.leaked_handles, ["leaked-handle"]);
        assert_eq!(findings.problems(), 3);
        let text = String::from_utf8(out).unwrap();
        for line in [
            "  10.66.0.2 leaked; attrs Main:pod-b Extra:node=node-1",
            "  10.66.0.9 in use by Workload(default/c) and in active IPAM pool but has no IPAM allocation.",
            "  leaked-handle doesn't have any active IPs.",
            "Found 1 handles with no matching IPs (and 2 handles with matches).",
            "Check complete; found 3 problems.",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        let cluster = ClusterIdentity {
            guid: "g".into(),
            revision: "9".into(),
            ..ClusterIdentity::default()
        };
        let report = checker.report(&cluster, &findings);
        assert!(!report.allocations["10.66.0.2"][0].in_use);
        assert_eq!(
            report.allocations["10.66.0.1"][0].owners,
            Some(vec!["Workload(default/a)".to_string()])
        );
        assert_eq!(report.leaked_handles[0].revision, "7");
        let extra = report.netctl.unwrap();
        assert!(extra.in_use_without_allocation.contains_key("10.66.0.9"));
    }

    #[test]
    fn handle_counts_that_disagree_are_problems() {
        let mut out = Vec::new();
        let mut checker = Checker::new(Detail::Counts);
        let cidr = Cidr::parse("10.0.0.0/30").unwrap();
        let mut block = AllocationBlock::empty(cidr, None);
        block.allocate("10.0.0.1".parse().unwrap(), Some("h"), BTreeMap::new());
        checker.add_block("k", &block, &mut out).unwrap();
        checker
            .add_in_use("10.0.0.1".parse().unwrap(), "Node(n)", &mut out)
            .unwrap();
        let identity = HandleIdentity {
            uid: None,
            revision: "1".into(),
        };
        checker.add_handle(
            "h",
            identity,
            &BTreeMap::from([("10.0.0.0/30".to_string(), 3)]),
        );
        let findings = checker.finish(&mut out).unwrap();
        assert_eq!(
            findings.handle_counts,
            ["handle `h` counts 3 addresses in block `10.0.0.0/30`; the block holds 1"]
        );
        assert_eq!(findings.problems(), 1);
    }
}
