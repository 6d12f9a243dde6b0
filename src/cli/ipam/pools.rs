//! The IP pools as IPAM commands need them: name, CIDR, block size and whether enabled, read once
//! in list order (a cluster has a handful).

use crate::datastore::{Datastore, ListOptions, for_each};
use crate::ipam::Cidr;
use crate::resource::Kind;

/// One pool.
#[derive(Debug, Clone)]
pub struct Pool {
    pub name: String,
    pub cidr: Cidr,
    /// The pool's `blockSize`, else upstream's default for its IP version (26 / 122).
    pub block_size: u8,
    pub disabled: bool,
}

/// Every pool whose CIDR parses, in list order; the others are named in `skipped`.
pub async fn read_pools(store: &dyn Datastore) -> anyhow::Result<(Vec<Pool>, Vec<String>)> {
    let mut pools = Vec::new();
    let mut skipped = Vec::new();
    for_each(store, &ListOptions::new(Kind::IpPool), |pool| {
        let text = pool.spec["cidr"].as_str().unwrap_or_default();
        match Cidr::parse(text) {
            Ok(cidr) => {
                let default = match cidr.version() {
                    crate::ipam::IpVersion::V4 => 26,
                    crate::ipam::IpVersion::V6 => 122,
                };
                let block_size = pool.spec["blockSize"]
                    .as_u64()
                    .and_then(|size| u8::try_from(size).ok())
                    .unwrap_or(default);
                pools.push(Pool {
                    name: pool.metadata.name,
                    cidr,
                    block_size,
                    disabled: pool.spec["disabled"].as_bool().unwrap_or(false),
                });
            }
            Err(_) => skipped.push(format!(
                "IP pool `{}` has no valid CIDR (`{text}`)",
                pool.metadata.name
            )),
        }
        Ok::<(), crate::datastore::StoreError>(())
    })
    .await?;
    Ok((pools, skipped))
}
