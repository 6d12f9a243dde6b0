//! Releasing addresses from a block, and the handle counts that follow: the domain half of
//! `netctl ipam release`, no I/O.
//!
//! Upstream (`libcalico-go/lib/ipam/ipam_block.go: release`) fails a whole block's request when one
//! address's sequence number or handle no longer matches. netctl decides each address on its own:
//! an address whose stored sequence number or handle differs from the request's was re-allocated
//! since the request was made (from a report) and is skipped with the reason, while the others are
//! released. The attributes an allocation used are removed when no other allocation uses them,
//! and the indexes of the rest are renumbered, as upstream does; the caller bumps the block's
//! sequence number when it writes the block.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::block::AllocationBlock;
use super::handle::IpamHandle;

/// One address to release, with what the caller knows of its allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseRequest {
    pub address: IpAddr,
    /// Release only while the allocation has this handle.
    pub handle: Option<String>,
    /// Release only while the allocation has this sequence number (a report's).
    pub sequence_number: Option<u64>,
}

/// What became of one requested address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseVerdict {
    /// Freed; the handle it had (one count of it goes).
    Released { handle: Option<String> },
    /// Not allocated (any more).
    NotAllocated,
    /// Allocated again since the request was made: the stored sequence number differs.
    SequenceChanged { expected: u64, found: u64 },
    /// Allocated to another handle than the request names.
    HandleChanged { expected: String, found: String },
    /// The address is not in this block.
    OutsideBlock,
}

impl ReleaseVerdict {
    pub fn is_released(&self) -> bool {
        matches!(self, ReleaseVerdict::Released { .. })
    }
}

/// Releases what `requests` name from `block`, each address decided on its own. Returns the
/// verdict of each request (in order) and how many addresses each handle lost.
pub fn release(
    block: &mut AllocationBlock,
    requests: &[ReleaseRequest],
) -> (Vec<ReleaseVerdict>, BTreeMap<String, i64>) {
    let mut verdicts = Vec::with_capacity(requests.len());
    let mut freed: Vec<usize> = Vec::new();
    let mut handles: BTreeMap<String, i64> = BTreeMap::new();
    for request in requests {
        let verdict = decide(block, request, &freed);
        if let ReleaseVerdict::Released { handle } = &verdict {
            if let Some(ordinal) = block.cidr.and_then(|cidr| cidr.ordinal_of(request.address)) {
                freed.push(ordinal as usize);
            }
            if let Some(handle) = handle {
                *handles.entry(handle.clone()).or_default() += 1;
            }
        }
        verdicts.push(verdict);
    }
    free_ordinals(block, &freed);
    (verdicts, handles)
}

fn decide(block: &AllocationBlock, request: &ReleaseRequest, freed: &[usize]) -> ReleaseVerdict {
    let Some(ordinal) = block.cidr.and_then(|cidr| cidr.ordinal_of(request.address)) else {
        return ReleaseVerdict::OutsideBlock;
    };
    let ordinal = ordinal as usize;
    if freed.contains(&ordinal) {
        return ReleaseVerdict::NotAllocated;
    }
    let Some(allocation) = block.allocation_of(request.address) else {
        return ReleaseVerdict::NotAllocated;
    };
    let stored = block.sequence_number_of(ordinal);
    if let Some(expected) = request.sequence_number {
        if expected != stored {
            return ReleaseVerdict::SequenceChanged {
                expected,
                found: stored,
            };
        }
    }
    let handle = allocation
        .attribute
        .and_then(|attribute| attribute.sanitized_handle())
        .map(str::to_string);
    if let Some(expected) = request.handle.as_deref().filter(|h| !h.is_empty()) {
        if handle.as_deref() != Some(expected) {
            return ReleaseVerdict::HandleChanged {
                expected: expected.to_string(),
                found: handle.unwrap_or_default(),
            };
        }
    }
    ReleaseVerdict::Released { handle }
}

/// Frees the ordinals, dropping the attributes no remaining allocation uses and renumbering the
/// rest (upstream's `deleteAttributes`).
fn free_ordinals(block: &mut AllocationBlock, freed: &[usize]) {
    if freed.is_empty() {
        return;
    }
    for ordinal in freed {
        block.allocations[*ordinal] = None;
        block.unallocated.push(*ordinal as i64);
        if let Some(numbers) = block.sequence_number_for_allocation.as_mut() {
            numbers.remove(&ordinal.to_string());
        }
    }
    let mut used = vec![false; block.attributes.len()];
    for index in block.allocations.iter().flatten() {
        if let Some(slot) = usize::try_from(*index).ok().and_then(|i| used.get_mut(i)) {
            *slot = true;
        }
    }
    let mut renumbered = vec![None; block.attributes.len()];
    let mut kept = Vec::new();
    for (index, attribute) in std::mem::take(&mut block.attributes)
        .into_iter()
        .enumerate()
    {
        if used[index] {
            renumbered[index] = Some(kept.len() as i64);
            kept.push(attribute);
        }
    }
    block.attributes = kept;
    for entry in block.allocations.iter_mut() {
        if let Some(index) = *entry {
            *entry = usize::try_from(index)
                .ok()
                .and_then(|old| renumbered.get(old).copied().flatten())
                // An index that was already out of range stays as it was: damage is not repaired.
                .or(Some(index));
        }
    }
}

/// Why a handle's count could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleCountError {
    #[error("handle `{handle}` holds no addresses of block `{block}`")]
    NotLinked { handle: String, block: String },
    #[error(
        "handle `{handle}` holds {held} addresses of block `{block}`, fewer than the {released} released"
    )]
    TooFew {
        handle: String,
        block: String,
        held: i64,
        released: i64,
    },
}

impl IpamHandle {
    /// Lowers the count of `block` by `released` (upstream's `decrementBlock`); the entry goes at
    /// zero. The handle is then empty when it holds no block.
    pub fn release_from(&mut self, block: &str, released: i64) -> Result<(), HandleCountError> {
        let Some(held) = self.blocks.get(block).copied() else {
            return Err(HandleCountError::NotLinked {
                handle: self.id.clone(),
                block: block.to_string(),
            });
        };
        if held < released {
            return Err(HandleCountError::TooFew {
                handle: self.id.clone(),
                block: block.to_string(),
                held,
                released,
            });
        }
        if held == released {
            self.blocks.remove(block);
        } else {
            self.blocks.insert(block.to_string(), held - released);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipam::cidr::Cidr;

    fn block_with(addresses: &[(&str, &str)]) -> AllocationBlock {
        let cidr = Cidr::parse("10.0.0.0/29").unwrap();
        let mut block = AllocationBlock::empty(cidr, None);
        for (address, handle) in addresses {
            block.allocate(address.parse().unwrap(), Some(handle), BTreeMap::new());
        }
        block
    }

    fn request(address: &str, sequence_number: Option<u64>) -> ReleaseRequest {
        ReleaseRequest {
            address: address.parse().unwrap(),
            handle: None,
            sequence_number,
        }
    }

    #[test]
    fn each_address_is_decided_on_its_own() {
        let mut block = block_with(&[("10.0.0.1", "a"), ("10.0.0.2", "b"), ("10.0.0.3", "b")]);
        // 10.0.0.2 was allocated at sequence 1; a report that saw sequence 7 is out of date.
        let (verdicts, handles) = release(
            &mut block,
            &[
                request("10.0.0.1", Some(0)),
                request("10.0.0.2", Some(7)),
                request("10.0.0.5", None),
                request("10.0.0.3", Some(2)),
                request("10.1.0.0", None),
            ],
        );
        assert_eq!(
            verdicts,
            [
                ReleaseVerdict::Released {
                    handle: Some("a".into())
                },
                ReleaseVerdict::SequenceChanged {
                    expected: 7,
                    found: 1
                },
                ReleaseVerdict::NotAllocated,
                ReleaseVerdict::Released {
                    handle: Some("b".into())
                },
                ReleaseVerdict::OutsideBlock,
            ]
        );
        assert_eq!(handles, BTreeMap::from([("a".into(), 1), ("b".into(), 1)]));
        // Attribute `a` (index 0) and `b`'s second copy (index 2) went; `b` at 1 is now 0.
        assert_eq!(block.attributes.len(), 1);
        assert_eq!(block.allocations[2], Some(0));
        assert!(block.damage().is_empty(), "{:?}", block.damage());
    }

    #[test]
    fn a_changed_handle_is_not_released() {
        let mut block = block_with(&[("10.0.0.1", "new-owner")]);
        let (verdicts, _) = release(
            &mut block,
            &[ReleaseRequest {
                address: "10.0.0.1".parse().unwrap(),
                handle: Some("old-owner".into()),
                sequence_number: None,
            }],
        );
        assert!(matches!(verdicts[0], ReleaseVerdict::HandleChanged { .. }));
        assert_eq!(block.allocated_count(), 1);
    }

    #[test]
    fn handle_counts_go_down_to_nothing() {
        let mut handle = IpamHandle::new("h", [("10.0.0.0/26".to_string(), 2)]);
        handle.release_from("10.0.0.0/26", 1).unwrap();
        assert_eq!(handle.blocks["10.0.0.0/26"], 1);
        assert!(handle.release_from("10.0.0.0/26", 2).is_err());
        handle.release_from("10.0.0.0/26", 1).unwrap();
        assert!(handle.blocks.is_empty());
        assert!(handle.release_from("10.9.0.0/26", 1).is_err());
    }
}
