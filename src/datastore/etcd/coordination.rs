//! [`Coordination`] for etcd: leases through the lease API, lock keys through a transaction that
//! compares the key's create revision with zero, blobs as plain keys.
//!
//! Every call goes through the store's request timeout and error classification, so a lock attempt
//! against an unreachable cluster fails like any other datastore call.

use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp, TxnOpResponse};

use super::EtcdStore;
use crate::datastore::StoreError;
use crate::datastore::coordination::{Blob, Coordination, CreateOutcome, LeaseId};

fn blob_of(entry: &etcd_client::KeyValue) -> Blob {
    Blob {
        value: entry.value().to_vec(),
        revision: entry.mod_revision(),
        lease: match entry.lease() {
            0 => None,
            id => Some(LeaseId(id)),
        },
    }
}

#[async_trait]
impl Coordination for EtcdStore {
    async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, StoreError> {
        let mut lease = self.client.lease_client();
        let seconds = ttl.as_secs().max(1) as i64;
        let response = self
            .request_once("a lease grant", lease.grant(seconds, None))
            .await?;
        Ok(LeaseId(response.id()))
    }

    async fn keep_lease_alive(&self, id: LeaseId) -> Result<Option<Duration>, StoreError> {
        let mut lease = self.client.lease_client();
        let renew = async move {
            let (mut keeper, mut stream) = lease.keep_alive(id.0).await?;
            keeper.keep_alive().await?;
            stream.message().await
        };
        let response = self.request_once("a lease renewal", renew).await?;
        Ok(response
            .map(|response| response.ttl())
            .filter(|ttl| *ttl > 0)
            .map(|ttl| Duration::from_secs(ttl as u64)))
    }

    async fn revoke_lease(&self, id: LeaseId) -> Result<(), StoreError> {
        let mut lease = self.client.lease_client();
        match self
            .request_once("a lease revocation", lease.revoke(id.0))
            .await
        {
            Ok(_) => Ok(()),
            // The lease expired on its own: the keys are gone, which is what revoking wanted.
            Err(StoreError::Other(detail)) if detail.contains("lease not found") => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn create_leased(
        &self,
        key: &str,
        value: &[u8],
        lease: LeaseId,
    ) -> Result<CreateOutcome, StoreError> {
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key,
                value.to_vec(),
                Some(PutOptions::new().with_lease(lease.0)),
            )])
            .or_else([TxnOp::get(key, None)]);
        let mut kv = self.kv.clone();
        let response = self.request_once("a lock write", kv.txn(txn)).await?;
        if response.succeeded() {
            return Ok(CreateOutcome::Created);
        }
        let existing = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().map(blob_of),
            _ => None,
        });
        match existing {
            Some(blob) => Ok(CreateOutcome::Exists(blob)),
            // Deleted between the compare and the read: report it as held by nobody we can name.
            None => Err(StoreError::Other(format!(
                "`{key}` changed while it was being written; try again"
            ))),
        }
    }

    async fn put_blob(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let mut kv = self.kv.clone();
        self.request_once("a checkpoint write", kv.put(key, value.to_vec(), None))
            .await
            .map(|_| ())
    }

    async fn get_blob(&self, key: &str) -> Result<Option<Blob>, StoreError> {
        let mut kv = self.kv.clone();
        let response = self.request_once("a read", kv.get(key, None)).await?;
        Ok(response.kvs().first().map(blob_of))
    }

    async fn delete_blob_at(&self, key: &str, revision: i64) -> Result<bool, StoreError> {
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, revision)])
            .and_then([TxnOp::delete(key, None)]);
        let mut kv = self.kv.clone();
        let response = self.request_once("a delete", kv.txn(txn)).await?;
        Ok(response.succeeded())
    }
}
