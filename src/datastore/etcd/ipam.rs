//! [`IpamStore`] for etcd: IPAM keys read in pages pinned to one revision, and every write a
//! transaction guarded on the key's mod revision (a create on its version being 0), as upstream's
//! allocator writes them (`libcalico-go/lib/backend/etcdv3`).
//!
//! A write whose answer was lost may be sent again by the endpoint pool; when its guard then
//! fails, the key's history tells whether the change in the store is our own (the same check as
//! the resource writes in `mod.rs`), so a lost answer is never reported as someone else's change.

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, KeyValue, Txn, TxnOp};

use super::endpoints::Delivery;
use super::ipam_encoding as encoding;
use super::{EtcdStore, FULL_PAGE_BYTES, Range, Succession, found, header_revision};
use crate::datastore::StoreError;
use crate::datastore::ipam::{Damaged, IpamError, IpamPage, IpamStore};
use crate::ipam::{
    AllocationBlock, BlockAffinity, BlockEncoding, Cidr, IpamConfig, IpamHandle, Stored,
};

/// Keys in a listing's first page.
const FIRST_PAGE: usize = 500;

/// Where the two kinds of affinity live.
const HOST_AFFINITIES: &str = "/calico/ipam/v2/host/";
const VIRTUAL_AFFINITIES: &str = "/calico/ipam/v2/virtual/";

impl EtcdStore {
    /// One page of the keys under `prefix`; the token pins the revision and sizes the next page
    /// by bytes, as resource lists do.
    async fn ipam_range(
        &self,
        prefix: &str,
        token: Option<&str>,
    ) -> Result<(Vec<KeyValue>, Option<String>), StoreError> {
        let range = Range {
            operation: "a list of IPAM keys",
            prefix,
            first: FIRST_PAGE,
            page_bytes: FULL_PAGE_BYTES,
        };
        let (entries, next, _) = self.range_page(range, token).await?;
        Ok((entries, next))
    }

    async fn read_key(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        let response = self
            .request("a read of an IPAM key", |mut connection| {
                let key = key.to_string();
                async move { connection.kv.get(key, None).await }
            })
            .await?;
        Ok(response.kvs().first().cloned())
    }

    /// Writes `value` at `key` while its mod revision is `expected` (`None`: while it does not
    /// exist). Returns the revision written at.
    async fn guarded_put(
        &self,
        what: &str,
        key: &str,
        value: Vec<u8>,
        expected: Option<i64>,
    ) -> Result<i64, IpamError> {
        let guard = match expected {
            Some(revision) => Compare::mod_revision(key, CompareOp::Equal, revision),
            None => Compare::version(key, CompareOp::Equal, 0),
        };
        let txn = Txn::new()
            .when([guard])
            .and_then([TxnOp::put(key, value.clone(), None)])
            .or_else([TxnOp::get(key, None)]);
        let mut delivery = Delivery::default();
        let response = self
            .pool
            .run("an IPAM write", &mut delivery, |mut connection| {
                let txn = txn.clone();
                async move { connection.kv.txn(txn).await }
            })
            .await
            .map_err(|error| lost(what, error, &delivery))?;
        if response.succeeded() {
            return Ok(header_revision(&response));
        }
        let current = found(&response);
        let refused = || match (&current, expected) {
            (Some(_), None) => IpamError::AlreadyExists {
                what: what.to_string(),
            },
            (Some(_), Some(_)) => IpamError::Conflict {
                what: what.to_string(),
            },
            (None, _) => IpamError::NotFound {
                what: what.to_string(),
            },
        };
        if !delivery.maybe_applied() {
            return Err(refused());
        }
        // An earlier copy may have applied: our bytes there now, or next after the expected version.
        if let Some(current) = current.as_ref().filter(|current| current.value() == value) {
            return Ok(current.mod_revision());
        }
        match expected {
            Some(revision) => match self.succession(key, revision, Some(&value)).await {
                Ok(Succession::Ours(written)) => Ok(written.mod_revision()),
                Ok(Succession::Other) => Err(refused()),
                Ok(Succession::Forgotten) | Err(_) => Err(unknown(what)),
            },
            None => Err(refused()),
        }
    }

    /// Deletes `key` while its mod revision is `expected`.
    async fn guarded_delete(&self, what: &str, key: &str, expected: i64) -> Result<(), IpamError> {
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, expected)])
            .and_then([TxnOp::delete(key, None)])
            .or_else([TxnOp::get(key, None)]);
        let mut delivery = Delivery::default();
        let response = self
            .pool
            .run("an IPAM delete", &mut delivery, |mut connection| {
                let txn = txn.clone();
                async move { connection.kv.txn(txn).await }
            })
            .await
            .map_err(|error| lost(what, error, &delivery))?;
        if response.succeeded() {
            return Ok(());
        }
        let current = found(&response);
        if delivery.maybe_applied() {
            match self.succession(key, expected, None).await {
                Ok(Succession::Ours(_)) => return Ok(()),
                Ok(Succession::Other) => {}
                Ok(Succession::Forgotten) | Err(_) => return Err(unknown(what)),
            }
        }
        Err(match current {
            Some(_) => IpamError::Conflict {
                what: what.to_string(),
            },
            None => IpamError::NotFound {
                what: what.to_string(),
            },
        })
    }
}

/// A failed write: when an earlier copy may have applied, nobody can say whether it did.
fn lost(what: &str, error: StoreError, delivery: &Delivery) -> IpamError {
    match delivery.maybe_applied() {
        true => IpamError::Store(StoreError::OutcomeUnknown {
            operation: "IPAM write",
            key: what.to_string(),
            source: Box::new(error),
        }),
        false => IpamError::Store(error),
    }
}

fn unknown(what: &str) -> IpamError {
    IpamError::Store(StoreError::OutcomeUnknown {
        operation: "IPAM write",
        key: what.to_string(),
        source: Box::new(StoreError::failed(
            "an IPAM write",
            crate::datastore::Plain(
                "the answer was lost and etcd's history no longer shows whose change it was".into(),
            ),
        )),
    })
}

fn revision_of(stored_revision: &str, what: &str) -> Result<i64, IpamError> {
    stored_revision
        .parse::<i64>()
        .ok()
        .filter(|revision| *revision > 0)
        .ok_or_else(|| IpamError::Damaged {
            what: what.to_string(),
            reason: format!("`{stored_revision}` is not an etcd revision"),
        })
}

fn key_text(entry: &KeyValue) -> String {
    String::from_utf8_lossy(entry.key()).into_owned()
}

fn stored<T>(entry: &KeyValue, decoded: Result<T, String>) -> Result<Stored<T>, Damaged> {
    decoded
        .map(|value| Stored::new(value, entry.mod_revision().to_string(), None))
        .map_err(|reason| Damaged {
            key: key_text(entry),
            reason,
        })
}

#[async_trait]
impl IpamStore for EtcdStore {
    fn block_location(&self, cidr: &Cidr) -> String {
        encoding::block_key(cidr)
    }

    fn handle_location(&self, id: &str) -> String {
        encoding::handle_key(id)
    }

    fn config_location(&self) -> String {
        encoding::CONFIG_KEY.to_string()
    }

    async fn block_page(
        &self,
        token: Option<&str>,
    ) -> Result<IpamPage<AllocationBlock>, StoreError> {
        let (entries, continue_token) = self.ipam_range(encoding::BLOCK_ROOT, token).await?;
        let items = entries
            .iter()
            .map(|entry| {
                let key = key_text(entry);
                let decoded = match encoding::block_cidr_of_key(&key) {
                    None => Err("it is not a block key".to_string()),
                    Some(cidr) => {
                        encoding::decode_block(entry.value()).and_then(|block| match block.cidr {
                            Some(stored) if stored != cidr => {
                                Err(format!("its `cidr` {stored} is not the key's {cidr}"))
                            }
                            _ => Ok(block),
                        })
                    }
                };
                stored(entry, decoded)
            })
            .collect();
        Ok(IpamPage {
            items,
            continue_token,
        })
    }

    async fn handle_page(&self, token: Option<&str>) -> Result<IpamPage<IpamHandle>, StoreError> {
        let (entries, continue_token) = self.ipam_range(encoding::HANDLE_ROOT, token).await?;
        let items = entries
            .iter()
            .map(|entry| {
                stored(
                    entry,
                    encoding::decode_handle(&key_text(entry), entry.value()),
                )
            })
            .collect();
        Ok(IpamPage {
            items,
            continue_token,
        })
    }

    /// Host affinities, then (v3.30+) virtual ones: the token says which range it continues.
    async fn affinity_page(
        &self,
        token: Option<&str>,
    ) -> Result<IpamPage<BlockAffinity>, StoreError> {
        let (prefix, inner) = match token.and_then(|token| token.split_once('|')) {
            Some(("v", inner)) => (VIRTUAL_AFFINITIES, Some(inner).filter(|i| !i.is_empty())),
            Some((_, inner)) => (HOST_AFFINITIES, Some(inner).filter(|i| !i.is_empty())),
            None => (HOST_AFFINITIES, None),
        };
        let (entries, next) = self.ipam_range(prefix, inner).await?;
        let items = entries
            .iter()
            .map(|entry| {
                stored(
                    entry,
                    encoding::decode_affinity(&key_text(entry), entry.value()),
                )
            })
            .collect();
        let tag = if prefix == HOST_AFFINITIES { "h" } else { "v" };
        let continue_token = match next {
            Some(next) => Some(format!("{tag}|{next}")),
            None if tag == "h" => Some("v|".to_string()),
            None => None,
        };
        Ok(IpamPage {
            items,
            continue_token,
        })
    }

    async fn get_block(&self, cidr: &Cidr) -> Result<Option<Stored<AllocationBlock>>, IpamError> {
        let key = encoding::block_key(cidr);
        let Some(entry) = self.read_key(&key).await? else {
            return Ok(None);
        };
        stored(&entry, encoding::decode_block(entry.value()))
            .map(Some)
            .map_err(|damaged| IpamError::Damaged {
                what: format!("block `{key}`"),
                reason: damaged.reason,
            })
    }

    async fn update_block(
        &self,
        block: &Stored<AllocationBlock>,
        block_encoding: BlockEncoding,
    ) -> Result<Stored<AllocationBlock>, IpamError> {
        let cidr = block_cidr(&block.value)?;
        let key = encoding::block_key(&cidr);
        let what = format!("block `{key}`");
        let expected = revision_of(&block.revision, &what)?;
        let value = encoding::encode_block(&block.value, block_encoding);
        let revision = self.guarded_put(&what, &key, value, Some(expected)).await?;
        Ok(Stored::new(block.value.clone(), revision.to_string(), None))
    }

    async fn delete_block(&self, block: &Stored<AllocationBlock>) -> Result<(), IpamError> {
        let cidr = block_cidr(&block.value)?;
        let key = encoding::block_key(&cidr);
        let what = format!("block `{key}`");
        let expected = revision_of(&block.revision, &what)?;
        self.guarded_delete(&what, &key, expected).await
    }

    async fn create_block(
        &self,
        block: &AllocationBlock,
        block_encoding: BlockEncoding,
    ) -> Result<Stored<AllocationBlock>, IpamError> {
        let cidr = block_cidr(block)?;
        let key = encoding::block_key(&cidr);
        let what = format!("block `{key}`");
        let value = encoding::encode_block(block, block_encoding);
        let revision = self.guarded_put(&what, &key, value, None).await?;
        Ok(Stored::new(block.clone(), revision.to_string(), None))
    }

    async fn get_handle(&self, id: &str) -> Result<Option<Stored<IpamHandle>>, IpamError> {
        let key = encoding::handle_key(id);
        let Some(entry) = self.read_key(&key).await? else {
            return Ok(None);
        };
        stored(&entry, encoding::decode_handle(&key, entry.value()))
            .map(Some)
            .map_err(|damaged| IpamError::Damaged {
                what: format!("handle `{key}`"),
                reason: damaged.reason,
            })
    }

    async fn update_handle(
        &self,
        handle: &Stored<IpamHandle>,
    ) -> Result<Stored<IpamHandle>, IpamError> {
        let key = encoding::handle_key(&handle.value.id);
        let what = format!("handle `{key}`");
        let expected = revision_of(&handle.revision, &what)?;
        let value = encoding::encode_handle(&handle.value);
        let revision = self.guarded_put(&what, &key, value, Some(expected)).await?;
        Ok(Stored::new(
            handle.value.clone(),
            revision.to_string(),
            None,
        ))
    }

    async fn delete_handle(&self, handle: &Stored<IpamHandle>) -> Result<(), IpamError> {
        let key = encoding::handle_key(&handle.value.id);
        let what = format!("handle `{key}`");
        let expected = revision_of(&handle.revision, &what)?;
        self.guarded_delete(&what, &key, expected).await
    }

    async fn create_handle(&self, handle: &IpamHandle) -> Result<Stored<IpamHandle>, IpamError> {
        let key = encoding::handle_key(&handle.id);
        let what = format!("handle `{key}`");
        let revision = self
            .guarded_put(&what, &key, encoding::encode_handle(handle), None)
            .await?;
        Ok(Stored::new(handle.clone(), revision.to_string(), None))
    }

    async fn create_affinity(
        &self,
        affinity: &BlockAffinity,
    ) -> Result<Stored<BlockAffinity>, IpamError> {
        let key = encoding::affinity_key(affinity.affinity_type, &affinity.node, &affinity.cidr);
        let what = format!("block affinity `{key}`");
        let revision = self
            .guarded_put(&what, &key, encoding::encode_affinity(affinity), None)
            .await?;
        Ok(Stored::new(affinity.clone(), revision.to_string(), None))
    }

    async fn get_config(&self) -> Result<Option<Stored<IpamConfig>>, IpamError> {
        let Some(entry) = self.read_key(encoding::CONFIG_KEY).await? else {
            return Ok(None);
        };
        stored(&entry, encoding::decode_config(entry.value()))
            .map(Some)
            .map_err(|damaged| IpamError::Damaged {
                what: format!("`{}`", encoding::CONFIG_KEY),
                reason: damaged.reason,
            })
    }

    async fn put_config(
        &self,
        config: &IpamConfig,
        expected: Option<&str>,
    ) -> Result<Stored<IpamConfig>, IpamError> {
        let what = format!("the IPAM configuration `{}`", encoding::CONFIG_KEY);
        let expected = expected
            .map(|revision| revision_of(revision, &what))
            .transpose()?;
        let revision = self
            .guarded_put(
                &what,
                encoding::CONFIG_KEY,
                encoding::encode_config(config),
                expected,
            )
            .await?;
        Ok(Stored::new(config.clone(), revision.to_string(), None))
    }
}

fn block_cidr(block: &AllocationBlock) -> Result<Cidr, IpamError> {
    block.cidr.ok_or_else(|| IpamError::Damaged {
        what: "a block".to_string(),
        reason: "it has no `cidr`".to_string(),
    })
}
