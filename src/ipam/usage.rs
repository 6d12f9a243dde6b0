//! What `ipam show` reports, computed from pools and blocks fed one at a time: the utilisation of
//! each pool and its blocks (upstream's `GetUtilization`, `libcalico-go/lib/ipam/ipam.go`), the
//! borrowed addresses (`calicoctl/calicoctl/commands/ipam/show.go`), and the figures as upstream
//! prints them. No I/O.
//!
//! A block counts under the first pool (in pool order) it overlaps; blocks of no pool count under
//! upstream's "orphaned allocation blocks" (which has no pool row). In-use is the number of
//! allocated ordinals, which equals upstream's size minus free list in every sound block.

use serde::Serialize;

use super::block::{AllocationBlock, attribute};
use super::cidr::Cidr;

/// The utilisation of one block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockUsage {
    pub cidr: String,
    #[serde(serialize_with = "serialize_count")]
    pub capacity: u128,
    #[serde(rename = "inUse", serialize_with = "serialize_count")]
    pub in_use: u128,
    /// The node the block belongs to, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
}

/// The utilisation of one pool and its blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolUsage {
    /// The pool's name; `None` for the blocks of no pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_optional_count"
    )]
    pub capacity: Option<u128>,
    #[serde(rename = "inUse", serialize_with = "serialize_count")]
    pub in_use: u128,
    pub blocks: Vec<BlockUsage>,
    #[serde(skip)]
    network: Option<Cidr>,
}

/// A count as a JSON number when it fits in 64 bits (every count but an IPv6 pool's size), else as
/// its digits in a string: JSON readers lose precision past 2^53 anyway.
fn serialize_count<S: serde::Serializer>(value: &u128, serializer: S) -> Result<S::Ok, S::Error> {
    match u64::try_from(*value) {
        Ok(small) => serializer.serialize_u64(small),
        Err(_) => serializer.collect_str(value),
    }
}

fn serialize_optional_count<S: serde::Serializer>(
    value: &Option<u128>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => serialize_count(value, serializer),
        None => serializer.serialize_none(),
    }
}

/// Utilisation of every pool, built block by block.
#[derive(Debug, Clone, Default)]
pub struct Utilization {
    pools: Vec<PoolUsage>,
    orphans: Vec<BlockUsage>,
}

impl Utilization {
    /// A pool, in the order pools are listed.
    pub fn add_pool(&mut self, name: &str, cidr: Cidr) {
        self.pools.push(PoolUsage {
            name: Some(name.to_string()),
            cidr: Some(cidr.to_string()),
            capacity: Some(cidr.size()),
            in_use: 0,
            blocks: Vec::new(),
            network: Some(cidr),
        });
    }

    /// A block: counted under the first pool it overlaps, else as an orphan.
    pub fn add_block(&mut self, block: &AllocationBlock) {
        let Some(cidr) = block.cidr else { return };
        let usage = BlockUsage {
            cidr: cidr.to_string(),
            capacity: cidr.size(),
            in_use: block.allocated_count() as u128,
            affinity: block.affinity.clone(),
        };
        match self
            .pools
            .iter_mut()
            .find(|pool| pool.network.is_some_and(|network| network.overlaps(&cidr)))
        {
            Some(pool) => {
                pool.in_use += usage.in_use;
                pool.blocks.push(usage);
            }
            None => self.orphans.push(usage),
        }
    }

    /// The pools (in order), then the orphaned blocks' group when there are any.
    pub fn pools(&self) -> Vec<PoolUsage> {
        let mut pools = self.pools.clone();
        if !self.orphans.is_empty() {
            pools.push(PoolUsage {
                name: None,
                cidr: None,
                capacity: None,
                in_use: self.orphans.iter().map(|block| block.in_use).sum(),
                blocks: self.orphans.clone(),
                network: None,
            });
        }
        pools
    }
}

/// An address allocated to another node than the block's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BorrowedAddress {
    pub ip: String,
    pub borrowing_node: String,
    pub block: String,
    pub block_owner: String,
    /// `pod`, `vmi` or the allocation's `type` attribute (a tunnel address).
    #[serde(rename = "type")]
    pub allocation_type: String,
    /// `namespace/pod` or `namespace/vmi`.
    pub allocated_to: String,
}

/// The borrowed addresses of a block (upstream's `getBorrowedIPs`), and how many allocations it has
/// that name no node (those cannot be classified).
pub fn borrowed(block: &AllocationBlock) -> (Vec<BorrowedAddress>, usize) {
    let mut found = Vec::new();
    let mut unclassified = 0;
    let Some(cidr) = block.cidr else {
        return (found, 0);
    };
    // Upstream takes what follows the affinity's first `:` (the whole affinity without one).
    let owner = block.affinity.as_deref().map_or("", |affinity| {
        let parts: Vec<&str> = affinity.split(':').collect();
        if parts.len() == 2 { parts[1] } else { parts[0] }
    });
    for allocated in block.allocated() {
        let Some(attributes) = allocated.attribute.and_then(|a| a.active_owner.as_ref()) else {
            unclassified += 1;
            continue;
        };
        let Some(node) = attributes.get(attribute::NODE) else {
            unclassified += 1;
            continue;
        };
        if node == owner {
            continue;
        }
        let get = |key: &str| attributes.get(key).cloned();
        let namespace = get(attribute::NAMESPACE).unwrap_or_default();
        let (allocation_type, allocated_to) = if let Some(vmi) = get(attribute::VMI_NAME) {
            ("vmi".to_string(), format!("{namespace}/{vmi}"))
        } else if let Some(pod) = get(attribute::POD) {
            ("pod".to_string(), format!("{namespace}/{pod}"))
        } else {
            (get(attribute::TYPE).unwrap_or_default(), String::new())
        };
        found.push(BorrowedAddress {
            ip: allocated.address.to_string(),
            borrowing_node: node.clone(),
            block: cidr.to_string(),
            block_owner: owner.to_string(),
            allocation_type,
            allocated_to,
        });
    }
    (found, unclassified)
}

/// A count as `ipam show` prints it: the exact integer. Upstream prints `%.5g`, which switches to
/// exponent notation from 100,000 on (`1.0486e+06` for a /12 pool); netctl keeps the digits.
pub fn count(value: u128) -> String {
    value.to_string()
}

/// A count and its share of `capacity` as upstream prints it: `5 (8%)`, the share rounded to the
/// nearest whole percent (Go's `%.f`: halves to even).
pub fn count_with_share(value: u128, capacity: u128) -> String {
    let share = if capacity == 0 {
        0.0
    } else {
        100.0 * value as f64 / capacity as f64
    };
    format!("{} ({}%)", count(value), round_half_even(share))
}

fn round_half_even(value: f64) -> i64 {
    let floor = value.floor();
    let fraction = value - floor;
    let rounded = if fraction > 0.5 || (fraction == 0.5 && floor as i64 % 2 != 0) {
        floor + 1.0
    } else {
        floor
    };
    rounded as i64
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn figures_print_as_upstreams_test_expects() {
        // TestIPAM: 5 of a /16 pool, 5 of a /26 block, 8 of 8, 3 of 8.
        assert_eq!(count_with_share(5, 65536), "5 (0%)");
        assert_eq!(count_with_share(65531, 65536), "65531 (100%)");
        assert_eq!(count_with_share(5, 64), "5 (8%)");
        assert_eq!(count_with_share(59, 64), "59 (92%)");
        assert_eq!(count_with_share(8, 8), "8 (100%)");
        assert_eq!(count_with_share(3, 8), "3 (38%)");
        assert_eq!(count_with_share(5, 8), "5 (62%)");
        assert_eq!(count_with_share(7, 64), "7 (11%)");
        // Halves go to the even neighbour, as Go's `%.f`.
        assert_eq!(count_with_share(1, 8), "1 (12%)");
        // Exact digits where upstream writes `1.0486e+06` / `1.2089e+24`.
        assert_eq!(count(1 << 20), "1048576");
        assert_eq!(count(1 << 80), "1208925819614629174706176");
    }

    #[test]
    fn blocks_count_under_their_pool_or_as_orphans() {
        let mut usage = Utilization::default();
        usage.add_pool("p1", Cidr::parse("10.65.0.0/16").unwrap());
        let mut block = AllocationBlock::empty(Cidr::parse("10.65.79.0/26").unwrap(), None);
        block.allocate("10.65.79.1".parse().unwrap(), Some("h"), BTreeMap::new());
        usage.add_block(&block);
        usage.add_block(&AllocationBlock::empty(
            Cidr::parse("10.99.0.0/26").unwrap(),
            None,
        ));
        let pools = usage.pools();
        assert_eq!(pools.len(), 2);
        assert_eq!(pools[0].in_use, 1);
        assert_eq!(pools[0].blocks[0].capacity, 64);
        assert_eq!(pools[1].name, None);
        assert_eq!(pools[1].blocks[0].cidr, "10.99.0.0/26");
    }

    #[test]
    fn borrowed_addresses_name_pod_vmi_or_type() {
        let cidr = Cidr::parse("10.0.0.0/29").unwrap();
        let mut block = AllocationBlock::empty(cidr, Some("host:a".into()));
        let attrs = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        block.allocate("10.0.0.1".parse().unwrap(), None, attrs(&[("node", "a")]));
        block.allocate(
            "10.0.0.2".parse().unwrap(),
            None,
            attrs(&[("node", "b"), ("namespace", "ns"), ("pod", "p")]),
        );
        block.allocate(
            "10.0.0.3".parse().unwrap(),
            None,
            attrs(&[("node", "c"), ("type", "vxlanTunnelAddress")]),
        );
        block.allocate("10.0.0.4".parse().unwrap(), None, BTreeMap::new());
        let (found, unclassified) = borrowed(&block);
        assert_eq!(unclassified, 1);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].allocated_to, "ns/p");
        assert_eq!(found[0].block_owner, "a");
        assert_eq!(found[1].allocation_type, "vxlanTunnelAddress");
    }
}
