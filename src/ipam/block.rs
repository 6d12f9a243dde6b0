//! The allocation block: one CIDR of a pool (a /26 by default), which addresses in it are
//! allocated, to what (the attributes: a handle and the owner's attributes), and the sequence
//! numbers that guard a release against an address re-allocated since it was read.
//!
//! This is upstream's `AllocationBlock` (`libcalico-go/lib/backend/model/block.go`) as a domain
//! value: every field any release stores (`affinity_claim_time` and `alternateOwnerAttrs` from
//! v3.32, `releasedAt` from upstream's unreleased v3.33 line, the deprecated `hostAffinity` and
//! Kubernetes' `strictAffinity`), so that what is read is written back whole. How it is encoded
//! is the backends' business (`datastore/etcd/ipam_encoding.rs`, `datastore/kube/ipam_encoding.rs`).
//!
//! A block read from a datastore may be damaged (allocations of the wrong length, an attribute
//! index out of range, free ordinals that are allocated): [`AllocationBlock::damage`] names each
//! problem; nothing here panics on such a block and nothing repairs it.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::cidr::Cidr;

/// The attribute keys upstream's allocator writes (`block.go`).
pub mod attribute {
    pub const POD: &str = "pod";
    pub const NAMESPACE: &str = "namespace";
    pub const NODE: &str = "node";
    pub const TYPE: &str = "type";
    pub const TIMESTAMP: &str = "timestamp";
    pub const VMI_NAME: &str = "vmi-name";
}

/// The handle upstream reserves for the addresses a Windows node keeps for itself
/// (`lib/ipam`: `WindowsReservedHandle`); such addresses are always in use.
pub const WINDOWS_RESERVED_HANDLE: &str = "windows-reserved-ipam-handle";

/// One allocation block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllocationBlock {
    pub cidr: Option<Cidr>,
    /// `host:<node>` or (v3.30+) `virtual:<node>`; `None` when the block belongs to no node.
    pub affinity: Option<String>,
    /// When the affinity was claimed (v3.32+), as stored.
    pub affinity_claim_time: Option<String>,
    /// One entry per address of the block: the index of its attributes, or `None` when free.
    pub allocations: Vec<Option<i64>>,
    /// The free ordinals, in the order they will be handed out.
    pub unallocated: Vec<i64>,
    pub attributes: Vec<AllocationAttribute>,
    /// Bumped on every write of the block.
    pub sequence_number: u64,
    /// The block's sequence number when each allocated ordinal (as text) was allocated; `None`
    /// when the stored value is `null`.
    pub sequence_number_for_allocation: Option<BTreeMap<String, u64>>,
    /// Set before a Kubernetes delete, so that a racing writer sees a conflict.
    pub deleted: bool,
    /// The deprecated affinity field (`hostAffinity: <node>`) of very old blocks.
    pub host_affinity: Option<String>,
    /// Kubernetes' deprecated `spec.strictAffinity` (always written, never used).
    pub strict_affinity: bool,
}

/// What an allocation is for: its handle and its owner's attributes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllocationAttribute {
    pub handle_id: Option<String>,
    /// The active owner (upstream's JSON name `secondary`): `node`, `pod`, `namespace`, ...
    pub active_owner: Option<BTreeMap<String, String>>,
    /// The previous or next owner during a KubeVirt live migration (v3.32+).
    pub alternate_owner: Option<BTreeMap<String, String>>,
    /// When the allocation entered its cool-down (upstream's unreleased v3.33 line).
    pub released_at: Option<String>,
}

impl AllocationAttribute {
    /// An active owner attribute, `None` when unset or empty.
    pub fn owner(&self, key: &str) -> Option<&str> {
        self.active_owner
            .as_ref()?
            .get(key)
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }

    /// The handle as upstream's release compares it: text after a carriage return dropped (host-local
    /// migration once wrote such handles, `ipam_block.go: sanitizeHandle`).
    pub fn sanitized_handle(&self) -> Option<&str> {
        self.handle_id
            .as_deref()
            .map(|handle| handle.split('\r').next().unwrap_or_default())
    }
}

/// The two kinds of block affinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AffinityType {
    Host,
    /// v3.30+: blocks held for a virtual host (KubeVirt).
    Virtual,
}

impl AffinityType {
    pub fn as_str(self) -> &'static str {
        match self {
            AffinityType::Host => "host",
            AffinityType::Virtual => "virtual",
        }
    }

    pub fn parse(text: &str) -> Option<AffinityType> {
        match text {
            "host" => Some(AffinityType::Host),
            "virtual" => Some(AffinityType::Virtual),
            _ => None,
        }
    }
}

/// One problem of a stored block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockDamage {
    /// No CIDR stored (or none that parses).
    NoCidr,
    /// `allocations` does not have one entry per address.
    AllocationsLength { found: usize, expected: u128 },
    /// An allocated ordinal names attributes that do not exist.
    AttributeIndex {
        ordinal: usize,
        index: i64,
        attributes: usize,
    },
    /// A free ordinal outside the block.
    FreeOrdinalOutOfRange { ordinal: i64 },
    /// An ordinal listed as free that is allocated, or listed twice.
    FreeOrdinalInUse { ordinal: i64 },
    /// Free and allocated ordinals do not add up to the block's size.
    FreeCount { free: usize, unallocated: usize },
}

impl std::fmt::Display for BlockDamage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockDamage::NoCidr => write!(f, "it has no valid `cidr`"),
            BlockDamage::AllocationsLength { found, expected } => write!(
                f,
                "`allocations` has {found} entries for the block's {expected} addresses"
            ),
            BlockDamage::AttributeIndex {
                ordinal,
                index,
                attributes,
            } => write!(
                f,
                "ordinal {ordinal} names attributes {index}, and there are {attributes}"
            ),
            BlockDamage::FreeOrdinalOutOfRange { ordinal } => {
                write!(
                    f,
                    "`unallocated` lists ordinal {ordinal}, outside the block"
                )
            }
            BlockDamage::FreeOrdinalInUse { ordinal } => write!(
                f,
                "`unallocated` lists ordinal {ordinal}, which is allocated or listed twice"
            ),
            BlockDamage::FreeCount { free, unallocated } => write!(
                f,
                "{free} ordinals are free but `unallocated` lists {unallocated}"
            ),
        }
    }
}

/// One allocated address of a block.
#[derive(Debug, Clone, Copy)]
pub struct Allocated<'a> {
    pub ordinal: usize,
    pub address: IpAddr,
    /// `None` when the attribute index is out of range (a damaged block).
    pub attribute: Option<&'a AllocationAttribute>,
}

/// The largest block netctl walks address by address (a /12 of IPv4; upstream's blocks are /20
/// to /32 for IPv4 and /116 to /128 for IPv6).
const LARGEST_BLOCK: u128 = 1 << 20;

impl AllocationBlock {
    /// A free block of `cidr`, as upstream's allocator creates one (not written by netctl today;
    /// tests and fixtures build blocks with it).
    pub fn empty(cidr: Cidr, affinity: Option<String>) -> AllocationBlock {
        let size = cidr.size().min(LARGEST_BLOCK) as usize;
        AllocationBlock {
            cidr: Some(cidr),
            affinity,
            allocations: vec![None; size],
            unallocated: (0..size as i64).collect(),
            sequence_number_for_allocation: Some(BTreeMap::new()),
            ..AllocationBlock::default()
        }
    }

    /// The node of a `host:` or `virtual:` affinity.
    pub fn affine_node(&self) -> Option<&str> {
        let affinity = self.affinity.as_deref()?;
        affinity
            .strip_prefix("host:")
            .or_else(|| affinity.strip_prefix("virtual:"))
    }

    /// The node of a `host:` affinity only (what `ipam check` calls the block's node).
    pub fn host_node(&self) -> Option<&str> {
        self.affinity.as_deref()?.strip_prefix("host:")
    }

    /// How many addresses the block holds.
    pub fn size(&self) -> u128 {
        self.cidr.map_or(0, |cidr| cidr.size())
    }

    /// How many addresses are allocated.
    pub fn allocated_count(&self) -> usize {
        self.allocations
            .iter()
            .filter(|entry| entry.is_some())
            .count()
    }

    /// Every allocated address in ordinal order.
    pub fn allocated(&self) -> impl Iterator<Item = Allocated<'_>> {
        let cidr = self.cidr;
        self.allocations
            .iter()
            .enumerate()
            .filter_map(move |(ordinal, index)| {
                let index = (*index)?;
                let cidr = cidr?;
                Some(Allocated {
                    ordinal,
                    address: cidr.nth(ordinal as u128),
                    attribute: usize::try_from(index)
                        .ok()
                        .and_then(|index| self.attributes.get(index)),
                })
            })
    }

    /// The allocation of `address`, if it is allocated in this block.
    pub fn allocation_of(&self, address: IpAddr) -> Option<Allocated<'_>> {
        let ordinal = usize::try_from(self.cidr?.ordinal_of(address)?).ok()?;
        let index = (*self.allocations.get(ordinal)?)?;
        Some(Allocated {
            ordinal,
            address,
            attribute: usize::try_from(index)
                .ok()
                .and_then(|index| self.attributes.get(index)),
        })
    }

    /// The sequence number stored for an ordinal (`0` when none is, as upstream reads it).
    pub fn sequence_number_of(&self, ordinal: usize) -> u64 {
        self.sequence_number_for_allocation
            .as_ref()
            .and_then(|numbers| numbers.get(&ordinal.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// Every problem of the stored block; empty for a sound one.
    pub fn damage(&self) -> Vec<BlockDamage> {
        let Some(cidr) = self.cidr else {
            return vec![BlockDamage::NoCidr];
        };
        let mut problems = Vec::new();
        let size = cidr.size();
        if self.allocations.len() as u128 != size {
            problems.push(BlockDamage::AllocationsLength {
                found: self.allocations.len(),
                expected: size,
            });
        }
        for (ordinal, index) in self.allocations.iter().enumerate() {
            if let Some(index) = index {
                if *index < 0 || *index as usize >= self.attributes.len() {
                    problems.push(BlockDamage::AttributeIndex {
                        ordinal,
                        index: *index,
                        attributes: self.attributes.len(),
                    });
                }
            }
        }
        let mut listed = vec![false; self.allocations.len()];
        for ordinal in &self.unallocated {
            let slot = usize::try_from(*ordinal)
                .ok()
                .filter(|slot| *slot < self.allocations.len());
            match slot {
                None => problems.push(BlockDamage::FreeOrdinalOutOfRange { ordinal: *ordinal }),
                Some(slot) if listed[slot] || self.allocations[slot].is_some() => {
                    problems.push(BlockDamage::FreeOrdinalInUse { ordinal: *ordinal })
                }
                Some(slot) => listed[slot] = true,
            }
        }
        let free = self.allocations.len() - self.allocated_count();
        if free != self.unallocated.len() {
            problems.push(BlockDamage::FreeCount {
                free,
                unallocated: self.unallocated.len(),
            });
        }
        problems
    }

    /// Whether nothing in the block is allocated.
    pub fn is_empty(&self) -> bool {
        self.allocations.iter().all(Option::is_none)
    }

    /// Allocates `address` (tests, fixtures and the quickstart build allocations with it) with a
    /// new attribute, as upstream's allocator records one: the ordinal leaves `unallocated`, its
    /// sequence number is the block's, and the block's sequence number moves on.
    pub fn allocate(
        &mut self,
        address: IpAddr,
        handle: Option<&str>,
        owner: BTreeMap<String, String>,
    ) -> Option<usize> {
        let ordinal = usize::try_from(self.cidr?.ordinal_of(address)?).ok()?;
        if self.allocations.get(ordinal)?.is_some() {
            return None;
        }
        self.attributes.push(AllocationAttribute {
            handle_id: handle.map(str::to_string),
            active_owner: (!owner.is_empty()).then_some(owner),
            ..AllocationAttribute::default()
        });
        self.allocations[ordinal] = Some(self.attributes.len() as i64 - 1);
        self.unallocated.retain(|free| *free != ordinal as i64);
        let sequence = self.sequence_number;
        self.sequence_number_for_allocation
            .get_or_insert_with(BTreeMap::new)
            .insert(ordinal.to_string(), sequence);
        self.sequence_number += 1;
        Some(ordinal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn a_sound_block_has_no_damage_and_lists_its_allocations() {
        let cidr = Cidr::parse("10.65.79.0/26").unwrap();
        let mut block = AllocationBlock::empty(cidr, Some("host:node-1".into()));
        for last in [2, 3, 4] {
            let address = format!("10.65.79.{last}").parse().unwrap();
            block.allocate(address, Some("h1"), owner(&[("node", "node-1")]));
        }
        assert!(block.damage().is_empty(), "{:?}", block.damage());
        assert_eq!(block.allocated_count(), 3);
        assert_eq!(block.unallocated.len(), 61);
        let first = block.allocated().next().unwrap();
        assert_eq!(first.address.to_string(), "10.65.79.2");
        assert_eq!(first.attribute.unwrap().owner("node"), Some("node-1"));
        assert_eq!(block.sequence_number_of(3), 1);
        assert_eq!(block.affine_node(), Some("node-1"));
    }

    #[test]
    fn damage_is_named_not_repaired() {
        let cidr = Cidr::parse("10.0.0.0/30").unwrap();
        let block = AllocationBlock {
            cidr: Some(cidr),
            allocations: vec![Some(0), Some(5), None],
            unallocated: vec![2, 2, 9],
            attributes: vec![AllocationAttribute::default()],
            ..AllocationBlock::default()
        };
        let damage: Vec<String> = block.damage().iter().map(ToString::to_string).collect();
        assert_eq!(
            damage,
            [
                "`allocations` has 3 entries for the block's 4 addresses",
                "ordinal 1 names attributes 5, and there are 1",
                "`unallocated` lists ordinal 2, which is allocated or listed twice",
                "`unallocated` lists ordinal 9, outside the block",
                "1 ordinals are free but `unallocated` lists 3",
            ]
        );
        // Reading a damaged block's allocations never panics.
        assert_eq!(block.allocated().count(), 2);
        assert!(block.allocated().nth(1).unwrap().attribute.is_none());
    }

    #[test]
    fn handles_are_compared_as_upstream_sanitizes_them() {
        let attribute = AllocationAttribute {
            handle_id: Some("k8s-pod-network.abc\r\neth0".into()),
            ..AllocationAttribute::default()
        };
        assert_eq!(attribute.sanitized_handle(), Some("k8s-pod-network.abc"));
    }
}
