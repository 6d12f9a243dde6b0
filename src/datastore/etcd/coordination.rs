//! [`Coordination`] for etcd: leases through the lease API, lock keys through a transaction that
//! compares the key's create revision with zero, blobs as plain keys.
//!
//! Every call goes through the store's endpoint pool (failover, sending again while etcd is busy),
//! so a lock attempt against an unreachable cluster fails like any other datastore call. Sending
//! again is safe for each: a lease granted twice leaves one unused lease that expires on its own;
//! renewing, revoking, reading and writing a blob are the same whichever copy applies; the lock
//! write and the conditional delete are guarded, and tell their own earlier copy from someone
//! else's change.

use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp, TxnOpResponse};

use super::endpoints::Delivery;
use super::{EtcdError, EtcdStore, Succession};
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
        let seconds = ttl.as_secs().max(1) as i64;
        let response = self
            .request("a lease grant", |connection| {
                let mut lease = connection.client.lease_client();
                async move { lease.grant(seconds, None).await }
            })
            .await?;
        Ok(LeaseId(response.id()))
    }

    async fn keep_lease_alive(&self, id: LeaseId) -> Result<Option<Duration>, StoreError> {
        let response = self
            .request("a lease renewal", |connection| {
                let mut lease = connection.client.lease_client();
                async move {
                    let (mut keeper, mut stream) = lease.keep_alive(id.0).await?;
                    keeper.keep_alive().await?;
                    stream.message().await
                }
            })
            .await?;
        Ok(response
            .map(|response| response.ttl())
            .filter(|ttl| *ttl > 0)
            .map(|ttl| Duration::from_secs(ttl as u64)))
    }

    async fn revoke_lease(&self, id: LeaseId) -> Result<(), StoreError> {
        let revoke = self
            .request("a lease revocation", |connection| {
                let mut lease = connection.client.lease_client();
                async move { lease.revoke(id.0).await }
            })
            .await;
        match revoke {
            Ok(_) => Ok(()),
            // The lease expired on its own (or an earlier copy of this request revoked it): the
            // keys are gone, which is what revoking wanted.
            Err(error)
                if matches!(
                    error.backend_as::<EtcdError>(),
                    Some(EtcdError::LeaseNotFound)
                ) =>
            {
                Ok(())
            }
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
        let mut delivery = Delivery::default();
        let response = self
            .pool
            .run("a lock write", &mut delivery, |mut connection| {
                let txn = txn.clone();
                async move { connection.kv.txn(txn).await }
            })
            .await?;
        if response.succeeded() {
            return Ok(CreateOutcome::Created);
        }
        let existing = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().map(blob_of),
            _ => None,
        });
        match existing {
            // Our own value under our own lease: an earlier copy of this write took the lock.
            Some(blob)
                if delivery.maybe_applied() && blob.value == value && blob.lease == Some(lease) =>
            {
                Ok(CreateOutcome::Created)
            }
            Some(blob) => Ok(CreateOutcome::Exists(blob)),
            // Deleted between the compare and the read: report it as held by nobody we can name.
            None => Err(StoreError::failed(
                "a lock write",
                EtcdError::ChangedWhileWritten {
                    key: key.to_string(),
                },
            )),
        }
    }

    async fn put_blob(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.request("a checkpoint write", |mut connection| {
            let (key, value) = (key.to_string(), value.to_vec());
            async move { connection.kv.put(key, value, None).await }
        })
        .await
        .map(|_| ())
    }

    async fn get_blob(&self, key: &str) -> Result<Option<Blob>, StoreError> {
        let response = self
            .request("a read", |mut connection| {
                let key = key.to_string();
                async move { connection.kv.get(key, None).await }
            })
            .await?;
        Ok(response.kvs().first().map(blob_of))
    }

    async fn delete_blob_at(&self, key: &str, revision: i64) -> Result<bool, StoreError> {
        let txn = Txn::new()
            .when([Compare::mod_revision(key, CompareOp::Equal, revision)])
            .and_then([TxnOp::delete(key, None)]);
        let mut delivery = Delivery::default();
        let response = self
            .pool
            .run("a delete", &mut delivery, |mut connection| {
                let txn = txn.clone();
                async move { connection.kv.txn(txn).await }
            })
            .await?;
        if response.succeeded() || !delivery.maybe_applied() {
            return Ok(response.succeeded());
        }
        // An earlier copy may have deleted it: was that version's next change a delete?
        Ok(matches!(
            self.succession(key, revision, None).await?,
            Succession::Ours(_)
        ))
    }

    async fn delete_blob(&self, key: &str) -> Result<(), StoreError> {
        self.request("a delete", |mut connection| {
            let key = key.to_string();
            async move { connection.kv.delete(key, None).await }
        })
        .await
        .map(|_| ())
    }
}
