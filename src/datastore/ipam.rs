//! The `IpamStore` trait: what netctl asks of a datastore's IPAM — blocks, handles and affinities
//! listed a page at a time, single objects read, and every write a compare-and-swap on the
//! object's revision (etcd's mod revision, Kubernetes' resourceVersion), as upstream's allocator
//! writes them.
//!
//! Both backends implement it (`etcd/ipam.rs`, `kube/ipam.rs`), converting at their boundary
//! between [`crate::ipam`]'s domain values and their storage (`etcd/ipam_encoding.rs`,
//! `kube/ipam_encoding.rs`). A listed object that does not decode is handed over as [`Damaged`]
//! with its key and what is wrong, so a listing never stops at one bad value and nothing is
//! "fixed" on the way.

use async_trait::async_trait;

use super::StoreError;
use crate::errors::Hint;
use crate::ipam::{
    AllocationBlock, BlockAffinity, BlockEncoding, Cidr, IpamConfig, IpamHandle, Stored,
};

/// A stored IPAM object that could not be read, by key (etcd) or object (Kubernetes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    pub key: String,
    pub reason: String,
}

/// One page of a listing: each item decoded, or damaged.
#[derive(Debug)]
pub struct IpamPage<T> {
    pub items: Vec<Result<Stored<T>, Damaged>>,
    /// `None` on the last page; otherwise pass it back for the next.
    pub continue_token: Option<String>,
}

/// Why an IPAM read or write failed.
#[derive(Debug, thiserror::Error)]
pub enum IpamError {
    /// The compare-and-swap found another revision: someone wrote the object since it was read.
    #[error("{what} was changed by someone else since it was read")]
    Conflict { what: String },
    #[error("{what} does not exist (any more)")]
    NotFound { what: String },
    #[error("{what} already exists")]
    AlreadyExists { what: String },
    #[error("{what} is damaged: {reason}")]
    Damaged { what: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Hint for IpamError {
    fn hint(&self) -> Option<String> {
        match self {
            IpamError::Store(error) => error.hint(),
            IpamError::Damaged { .. } => Some(
                "netctl does not repair IPAM objects; compare the object with upstream's format, then fix or delete it with etcdctl or kubectl".into(),
            ),
            _ => None,
        }
    }
}

impl IpamError {
    /// Whether the object changed or went since it was read (a guarded write that must be
    /// decided again, or skipped).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            IpamError::Conflict { .. } | IpamError::NotFound { .. }
        )
    }
}

/// The IPAM objects of a datastore.
#[async_trait]
pub trait IpamStore: Send + Sync {
    /// Where a block lives, for messages (`/calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26`,
    /// `ipamblocks.crd.projectcalico.org/10-0-0-0-26`).
    fn block_location(&self, cidr: &Cidr) -> String;

    /// Where a handle lives, for messages.
    fn handle_location(&self, id: &str) -> String;

    /// Where the allocator's configuration lives, for messages.
    fn config_location(&self) -> String;

    /// One page of the blocks (every block once, in a consistent snapshot on etcd).
    async fn block_page(
        &self,
        token: Option<&str>,
    ) -> Result<IpamPage<AllocationBlock>, StoreError>;

    /// One page of the handles.
    async fn handle_page(&self, token: Option<&str>) -> Result<IpamPage<IpamHandle>, StoreError>;

    /// One page of the block affinities (host and virtual).
    async fn affinity_page(
        &self,
        token: Option<&str>,
    ) -> Result<IpamPage<BlockAffinity>, StoreError>;

    /// The block of `cidr`, if stored.
    async fn get_block(&self, cidr: &Cidr) -> Result<Option<Stored<AllocationBlock>>, IpamError>;

    /// Writes a block while its revision is still `block.revision`; `encoding` is the cluster
    /// release's (etcd).
    async fn update_block(
        &self,
        block: &Stored<AllocationBlock>,
        encoding: BlockEncoding,
    ) -> Result<Stored<AllocationBlock>, IpamError>;

    /// Deletes a block while its revision is still `block.revision`.
    async fn delete_block(&self, block: &Stored<AllocationBlock>) -> Result<(), IpamError>;

    /// Creates a block that must not exist (imports, fixtures).
    async fn create_block(
        &self,
        block: &AllocationBlock,
        encoding: BlockEncoding,
    ) -> Result<Stored<AllocationBlock>, IpamError>;

    /// Handle `id`, if stored.
    async fn get_handle(&self, id: &str) -> Result<Option<Stored<IpamHandle>>, IpamError>;

    /// Writes a handle while its revision is still `handle.revision`.
    async fn update_handle(
        &self,
        handle: &Stored<IpamHandle>,
    ) -> Result<Stored<IpamHandle>, IpamError>;

    /// Deletes a handle while its revision (and, on Kubernetes, UID) are still the stored ones.
    async fn delete_handle(&self, handle: &Stored<IpamHandle>) -> Result<(), IpamError>;

    /// Creates a handle that must not exist (imports, fixtures).
    async fn create_handle(&self, handle: &IpamHandle) -> Result<Stored<IpamHandle>, IpamError>;

    /// Creates a block affinity that must not exist (imports, fixtures).
    async fn create_affinity(
        &self,
        affinity: &BlockAffinity,
    ) -> Result<Stored<BlockAffinity>, IpamError>;

    /// The allocator's configuration, if stored.
    async fn get_config(&self) -> Result<Option<Stored<IpamConfig>>, IpamError>;

    /// Writes the allocator's configuration: created when `expected` is `None`, else only while
    /// its revision is still `expected`.
    async fn put_config(
        &self,
        config: &IpamConfig,
        expected: Option<&str>,
    ) -> Result<Stored<IpamConfig>, IpamError>;
}

macro_rules! for_each_of {
    ($name:ident, $page:ident, $item:ty, $what:literal) => {
        #[doc = concat!("Visits every ", $what, " page by page (memory bounded by a page), stopping at the first error of `visit`.")]
        pub async fn $name<E: From<StoreError>>(
            store: &dyn IpamStore,
            mut visit: impl FnMut(Result<Stored<$item>, Damaged>) -> Result<(), E>,
        ) -> Result<(), E> {
            let mut token: Option<String> = None;
            loop {
                let page = store.$page(token.as_deref()).await?;
                for item in page.items {
                    visit(item)?;
                }
                match page.continue_token {
                    Some(next) => token = Some(next),
                    None => return Ok(()),
                }
            }
        }
    };
}

for_each_of!(for_each_block, block_page, AllocationBlock, "block");
for_each_of!(for_each_handle, handle_page, IpamHandle, "handle");
for_each_of!(
    for_each_affinity,
    affinity_page,
    BlockAffinity,
    "block affinity"
);
