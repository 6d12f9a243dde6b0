//! The IPAM handle: which blocks hold addresses of one owner (a pod's network, a node's tunnel
//! address) and how many in each (upstream's `IPAMHandle`, `libcalico-go/lib/backend/model/ipam_handle.go`).
//! The allocator counts up when it allocates and down when it releases; a handle with no block
//! left is deleted. No I/O.

use std::collections::BTreeMap;

/// One handle.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IpamHandle {
    /// The handle's ID as the allocator wrote it (case kept; the Kubernetes object name is its
    /// lower-cased form).
    pub id: String,
    /// Block CIDR (as text, `10.0.0.0/26`) → how many of the handle's addresses it holds.
    pub blocks: BTreeMap<String, i64>,
    /// Set before a Kubernetes delete, so that a racing writer sees a conflict.
    pub deleted: bool,
}

impl IpamHandle {
    pub fn new(
        id: impl Into<String>,
        blocks: impl IntoIterator<Item = (String, i64)>,
    ) -> IpamHandle {
        IpamHandle {
            id: id.into(),
            blocks: blocks.into_iter().collect(),
            deleted: false,
        }
    }

    /// Whether the handle holds no address.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// How many addresses the handle holds in all.
    pub fn total(&self) -> i64 {
        self.blocks.values().sum()
    }
}
