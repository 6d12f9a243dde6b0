//! Block affinities: which node (or, from v3.30, which virtual host) a block belongs to, and in
//! which state the claim is (upstream's `BlockAffinity`,
//! `libcalico-go/lib/backend/model/block_affinity.go`). No I/O.

use super::block::AffinityType;
use super::cidr::Cidr;

/// One block affinity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockAffinity {
    pub cidr: Cidr,
    pub node: String,
    pub affinity_type: AffinityType,
    /// `confirmed`, `pending` or `pendingDeletion` (empty in values stored before states existed).
    pub state: String,
    pub deleted: bool,
}
