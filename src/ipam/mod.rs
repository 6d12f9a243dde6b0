//! IPAM as upstream's allocator keeps it, as domain values: allocation blocks, handles, block
//! affinities and the allocator's configuration, and the work on them that needs no datastore —
//! utilisation (`ipam show`), the consistency check and its report file (`ipam check`), releasing
//! addresses and handles (`ipam release`), splitting a pool (`ipam split`).
//!
//! It sits on the lowest floor beside `resource/`: nothing here knows keys, revisions or custom
//! resources. The backends encode these values at their boundaries (`datastore/etcd/ipam_encoding.rs`,
//! `datastore/kube/ipam_encoding.rs`) and hand them over wrapped in [`Stored`] (the revision a
//! compare-and-swap needs), through the `datastore::ipam::IpamStore` trait.

pub mod affinity;
pub mod block;
pub mod check;
pub mod cidr;
pub mod config;
pub mod handle;
pub mod release;
pub mod report;
pub mod split;
pub mod usage;

pub use affinity::BlockAffinity;
pub use block::{AffinityType, AllocationAttribute, AllocationBlock, BlockDamage};
pub use cidr::{Cidr, CidrError, IpVersion};
pub use config::IpamConfig;
pub use handle::IpamHandle;

use crate::release::Release;

/// A value as a datastore handed it over: with the revision a compare-and-swap must name (etcd's
/// mod revision, Kubernetes' resourceVersion) and, on Kubernetes, the object's UID as upstream's
/// clients see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored<T> {
    pub value: T,
    pub revision: String,
    pub uid: Option<String>,
}

impl<T> Stored<T> {
    pub fn new(value: T, revision: impl Into<String>, uid: Option<String>) -> Stored<T> {
        Stored {
            value,
            revision: revision.into(),
            uid,
        }
    }
}

/// How a cluster's release writes a block's attributes in etcd: up to v3.31 an empty handle or
/// owner map is written as `null` (the fields had no `omitempty`); from v3.32 it is left out, and
/// `alternateOwnerAttrs` exists. Every release reads both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockEncoding {
    NullAttributes,
    OmitEmpty,
}

impl BlockEncoding {
    /// The encoding of the release a cluster runs; the newest when it records none.
    pub fn for_release(release: Option<&Release>) -> BlockEncoding {
        match release {
            Some(release) if (release.0.major, release.0.minor) < (3, 32) => {
                BlockEncoding::NullAttributes
            }
            _ => BlockEncoding::OmitEmpty,
        }
    }
}
