//! The etcd v3 backend: connection (plain, TLS, mutual TLS, RBAC, SRV discovery) and conditional CRUD
//! in upstream's key layout.
//!
//! Connections, failover and sending a request again belong to [`endpoints`]: this module says what
//! to send and what an answer means. Writes are transactions compared on the key's version (create)
//! or mod revision (update, delete): a conflicting writer is reported, never overwritten, and a copy
//! of a write sent again after its answer was lost can never apply twice. When a copy may have
//! applied ([`endpoints::Delivery`]) and the guard then fails, the write checks whether the change in
//! the store is its own before it reports a conflict (see [`EtcdStore::create`]). Batches of writes
//! are one transaction each, and many keys are read as key ranges (`batch.rs`). Lists are read in
//! pages pinned to one revision, so a listing is a consistent snapshot while memory stays bounded by
//! a page.

mod batch;
pub mod check;
mod conversion;
pub mod coordination;
mod endpoints;
mod errors;
mod ipam;
pub mod ipam_encoding;
mod paging;
mod policy_keys;
pub mod srv;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use etcd_client::{
    AlarmAction, AlarmType, Compare, CompareOp, DeleteOptions, EventType, GetOptions, KeyValue,
    Txn, TxnOp, TxnOpResponse, TxnResponse, WatchOptions,
};

pub use conversion::{
    PolicyLayout, RESOURCE_ROOT, has_two_layouts, key_path, list_prefix, stored_name,
};
pub use errors::{EndpointFailure, EndpointFailures, EtcdError, QUORUM_HINT};

use super::health::{DatastoreHealth, MemberHealth, MemberStatus};
use super::{
    BatchLimits, BatchOutcome, DEFAULT_PAGE_SIZE, Datastore, DatastoreType, Detail, FetchedPage,
    ListOptions, Page, StoreError, Write,
};
use crate::config::{EndpointSource, EtcdSettings};
use crate::output::Printer;
use crate::resource::{Resource, ResourceKey};
use endpoints::{Connection, Delivery, Pool};
use paging::{
    DOCUMENT_PAGE_BYTES, FULL_PAGE_BYTES, PAGE_BYTES, decode_page, decode_token, encode_token,
    next_page_size,
};

/// Time limits for connecting and for each request.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub request: Duration,
}

impl Default for Timeouts {
    /// Upstream dials with a 10 s timeout (`libcalico-go/lib/backend/etcdv3/etcdv3.go`).
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(10),
        }
    }
}

/// A connected etcd datastore.
#[derive(Clone)]
pub struct EtcdStore {
    pool: Arc<Pool>,
}

impl EtcdStore {
    /// Connects and proves the connection works: at least one endpoint reachable, TLS accepted,
    /// credentials valid and `/calico/` readable.
    pub async fn connect(
        settings: &EtcdSettings,
        timeouts: Timeouts,
    ) -> Result<EtcdStore, StoreError> {
        EtcdStore::connect_with(settings, timeouts, Printer::default()).await
    }

    /// As [`EtcdStore::connect`], saying through `printer` which endpoints it tries and uses
    /// (debug detail).
    pub async fn connect_with(
        settings: &EtcdSettings,
        timeouts: Timeouts,
        printer: Printer,
    ) -> Result<EtcdStore, StoreError> {
        let endpoints = match &settings.endpoints {
            EndpointSource::Static(list) => list.clone(),
            EndpointSource::Srv { domain } => {
                srv::discover(domain, settings.tls.is_some(), settings.resolver).await?
            }
        };
        let pool = Pool::connect(&endpoints, settings, timeouts, printer).await?;
        Ok(EtcdStore { pool })
    }

    /// The endpoints in use, for messages.
    pub fn endpoints(&self) -> String {
        self.pool.endpoints()
    }

    /// The endpoint requests go to now (it changes when one fails).
    pub fn current_endpoint(&self) -> String {
        self.pool.current()
    }

    /// Sends one request (again if needed, see [`Pool::run`]) whose outcome needs no checking:
    /// reads, and writes that are the same whichever copy applies.
    async fn request<T, F, Fut>(&self, operation: &str, call: F) -> Result<T, StoreError>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.pool
            .run(operation, &mut Delivery::default(), call)
            .await
    }

    /// Sends a guarded write transaction; `delivery` says afterwards whether an earlier copy may
    /// have applied. A failure after such a copy becomes [`StoreError::OutcomeUnknown`].
    async fn write(
        &self,
        operation: &'static str,
        key: &ResourceKey,
        txn: Txn,
        delivery: &mut Delivery,
    ) -> Result<TxnResponse, StoreError> {
        let result = self
            .pool
            .run(operation, delivery, |mut connection| {
                let txn = txn.clone();
                async move { connection.kv.txn(txn).await }
            })
            .await;
        result.map_err(|error| match delivery.maybe_applied() {
            true => StoreError::OutcomeUnknown {
                operation,
                key: key.to_string(),
                source: Box::new(error),
            },
            false => error,
        })
    }

    /// The key as it was at `revision` (a historical read), if it existed then.
    async fn read_at(&self, path: &str, revision: i64) -> Result<Option<KeyValue>, StoreError> {
        let response = self
            .request("a read of the key's history", |mut connection| {
                let path = path.to_string();
                async move {
                    connection
                        .kv
                        .get(path, Some(GetOptions::new().with_revision(revision)))
                        .await
                }
            })
            .await?;
        Ok(response.kvs().first().cloned())
    }

    /// The first change of `path` after `revision`, read from etcd's history with a watch. The
    /// caller knows there is one (the key's version at `revision` is no longer current), so the
    /// watch answers at once.
    async fn first_change_after(
        &self,
        path: &str,
        revision: i64,
    ) -> Result<Option<(EventType, Option<KeyValue>, Option<KeyValue>)>, StoreError> {
        self.request("a read of the key's history", |connection| {
            let path = path.to_string();
            let mut watch = connection.client.watch_client();
            async move {
                let options = WatchOptions::new()
                    .with_start_revision(revision + 1)
                    .with_prev_key();
                let mut stream = watch.watch(path, Some(options)).await?;
                while let Some(response) = stream.message().await? {
                    if response.compact_revision() > 0 || response.canceled() {
                        return Ok(None);
                    }
                    if let Some(event) = response.events().first() {
                        return Ok(Some((
                            event.event_type(),
                            event.kv().cloned(),
                            event.prev_kv().cloned(),
                        )));
                    }
                }
                Ok(None)
            }
        })
        .await
    }

    /// What came right after `path`'s version at `revision`: a put of exactly `ours`, or with
    /// `ours = None` a delete, is [`Succession::Ours`].
    async fn succession(
        &self,
        path: &str,
        revision: i64,
        ours: Option<&[u8]>,
    ) -> Result<Succession, StoreError> {
        // Only a version that really existed has a successor to look for.
        match self.read_at(path, revision).await {
            Ok(Some(at)) if at.mod_revision() == revision => {}
            Ok(_) => return Ok(Succession::Other),
            Err(error) if matches!(error.backend_as::<EtcdError>(), Some(EtcdError::Compacted)) => {
                return Ok(Succession::Forgotten);
            }
            Err(error) => return Err(error),
        }
        let Some(change) = self.first_change_after(path, revision).await? else {
            return Ok(Succession::Forgotten);
        };
        Ok(match (change, ours) {
            ((EventType::Put, Some(written), _), Some(ours)) if written.value() == ours => {
                Succession::Ours(written)
            }
            ((EventType::Delete, _, Some(previous)), None) => Succession::Ours(previous),
            _ => Succession::Other,
        })
    }
}

/// One range read in pages: the keys under `prefix`, `first` of them in the first page, later pages
/// sized to `page_bytes` at the average size seen (see [`next_page_size`]).
struct Range<'a> {
    operation: &'a str,
    prefix: &'a str,
    first: usize,
    page_bytes: usize,
}

impl EtcdStore {
    /// One page of `range`, pinned to the revision of the first page: its entries, the next page's
    /// token (from the answer alone, so the entries can be decoded afterwards) and that revision.
    async fn range_page(
        &self,
        range: Range<'_>,
        continue_token: Option<&str>,
    ) -> Result<(Vec<KeyValue>, Option<String>, i64), StoreError> {
        let (pinned, limit, start) = match continue_token {
            Some(token) => {
                let (revision, limit, key) = decode_token(token)?;
                (Some(revision), limit, key)
            }
            None => (None, range.first, range.prefix.as_bytes().to_vec()),
        };
        let mut get_options = GetOptions::new()
            .with_range(conversion::prefix_end(range.prefix))
            .with_limit(limit as i64);
        if let Some(revision) = pinned {
            get_options = get_options.with_revision(revision);
        }
        let mut response = self
            .request(range.operation, |mut connection| {
                let (start, get_options) = (start.clone(), get_options.clone());
                async move { connection.kv.get(start, Some(get_options)).await }
            })
            .await?;
        let revision = pinned.unwrap_or_else(|| {
            response
                .header()
                .map(|header| header.revision())
                .unwrap_or_default()
        });
        let entries = response.kvs();
        let next = match (response.more(), entries.last()) {
            (true, Some(last)) => {
                let mut next = last.key().to_vec();
                next.push(0);
                // `count` is how many keys the range held from this page's start.
                let remaining = (response.count() as usize).saturating_sub(entries.len());
                let bytes: usize = entries.iter().map(|entry| entry.value().len()).sum();
                let size = next_page_size(
                    range.page_bytes,
                    range.first,
                    bytes / entries.len(),
                    remaining,
                );
                Some(encode_token(revision, size, &next))
            }
            _ => None,
        };
        Ok((response.take_kvs(), next, revision))
    }
}

/// What followed a key's version in etcd's history.
enum Succession {
    /// Our own write: the value written (a put) or the value deleted (a delete).
    Ours(KeyValue),
    /// Someone else's change.
    Other,
    /// The history was compacted: nobody can tell.
    Forgotten,
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn parse_revision(resource_version: &str) -> Result<i64, StoreError> {
    resource_version
        .parse::<i64>()
        .ok()
        .filter(|revision| *revision > 0)
        .ok_or_else(|| StoreError::InvalidResourceVersion(resource_version.to_string()))
}

/// Write transactions a command keeps out at once (see `batch_limits`).
const WRITE_BATCHES_IN_FLIGHT: usize = 2;

#[async_trait]
impl Datastore for EtcdStore {
    fn kind(&self) -> DatastoreType {
        DatastoreType::EtcdV3
    }

    fn ipam(&self) -> Option<&dyn crate::datastore::ipam::IpamStore> {
        Some(self)
    }

    fn request_timeout(&self) -> Duration {
        self.pool.timeouts().request
    }

    /// The member list (from any member that answers), then every member's own status, asked at
    /// its first client URL all at once, and the active alarms.
    async fn health(&self) -> Result<Option<DatastoreHealth>, StoreError> {
        let listed = self
            .request("a list of the etcd members", |connection| {
                let mut client = connection.client.clone();
                async move { client.member_list().await }
            })
            .await?;
        let alarms = self
            .request("a list of the etcd alarms", |connection| {
                let mut client = connection.client.clone();
                async move { client.alarm(AlarmAction::Get, AlarmType::None, None).await }
            })
            .await?;
        let members = futures_util::future::join_all(listed.members().iter().map(|member| {
            let name = match member.name() {
                "" => format!("{:x}", member.id()),
                name => name.to_string(),
            };
            let endpoint = member.client_urls().first().cloned().unwrap_or_default();
            async move {
                let status = match endpoint.as_str() {
                    "" => Err("it has no client URL: it was added and has not started".to_string()),
                    url => self.pool.status_at(url).await.map(|status| MemberStatus {
                        version: status.version().to_string(),
                        database_bytes: status.db_size(),
                        quota_bytes: Some(status.db_size_quota()).filter(|quota| *quota > 0),
                        has_leader: status.leader() != 0,
                        // An alarm shows here too (`memberID:… alarm:NOSPACE`); alarms are
                        // read from the alarm list, and judged as such.
                        errors: status
                            .errors()
                            .iter()
                            .filter(|error| !error.contains("alarm:"))
                            .cloned()
                            .collect(),
                    }),
                };
                MemberHealth {
                    name,
                    endpoint,
                    status,
                }
            }
        }))
        .await;
        let alarms = alarms
            .alarms()
            .iter()
            .filter(|alarm| alarm.alarm() != AlarmType::None)
            .map(|alarm| {
                format!(
                    "{} on member {:x}",
                    alarm.alarm().as_str_name(),
                    alarm.member_id()
                )
            })
            .collect();
        Ok(Some(DatastoreHealth { members, alarms }))
    }

    async fn read_many(&self, keys: &[ResourceKey]) -> Result<Vec<Option<Resource>>, StoreError> {
        // A default-tier policy may be under either of two keys (`policy_keys.rs`).
        if keys.iter().any(conversion::has_two_layouts) {
            let mut found = Vec::with_capacity(keys.len());
            for key in keys {
                found.push(match self.get(key).await {
                    Ok(resource) => Some(resource),
                    Err(StoreError::NotFound(_)) => None,
                    Err(error) => return Err(error),
                });
            }
            return Ok(found);
        }
        self.read_keys(keys).await
    }

    /// Two batches out at once: etcd commits proposals that arrive together in one fsync, and
    /// keys within one command are distinct, so their order does not matter.
    fn batch_limits(&self) -> BatchLimits {
        BatchLimits {
            in_flight: WRITE_BATCHES_IN_FLIGHT,
            ..BatchLimits::DEFAULT
        }
    }

    async fn write_batch(&self, writes: &[Write]) -> BatchOutcome {
        // Policies are written in the cluster's layout and moved off the other key one at a time.
        if writes
            .iter()
            .any(|write| conversion::has_two_layouts(&write.key()))
        {
            return crate::datastore::batch::write_one_by_one(self, writes).await;
        }
        self.write_transaction(writes).await
    }

    async fn check(&self) -> Result<(), StoreError> {
        let probe = format!("{RESOURCE_ROOT}clusterinformations/default");
        self.request("a read of `/calico/`", |mut connection| {
            let probe = probe.clone();
            async move {
                connection
                    .kv
                    .get(probe, Some(GetOptions::new().with_keys_only()))
                    .await
            }
        })
        .await
        .map(|_| ())
    }

    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        if conversion::has_two_layouts(key) {
            return self.get_policy(key).await;
        }
        let path = key_path(key);
        let response = self
            .request("get", |mut connection| {
                let path = path.clone();
                async move { connection.kv.get(path, None).await }
            })
            .await?;
        let found = response
            .kvs()
            .first()
            .ok_or_else(|| StoreError::NotFound(key.clone()))?;
        conversion::decode(&path, found.value(), found.mod_revision())
    }

    async fn list_page(
        &self,
        options: &ListOptions,
        continue_token: Option<&str>,
    ) -> Result<Page, StoreError> {
        self.fetch_page(options, continue_token).await?.decode()
    }

    async fn fetch_page(
        &self,
        options: &ListOptions,
        continue_token: Option<&str>,
    ) -> Result<FetchedPage, StoreError> {
        let prefix = list_prefix(options.kind, options.namespace.as_deref());
        let first = match options.page_size {
            0 => DEFAULT_PAGE_SIZE,
            size => size,
        };
        let page_bytes = match options.detail {
            Detail::Full => FULL_PAGE_BYTES,
            Detail::Document => DOCUMENT_PAGE_BYTES,
            Detail::Summary { .. } => PAGE_BYTES,
        };
        let range = Range {
            operation: "list",
            prefix: &prefix,
            first,
            page_bytes,
        };
        let (entries, continue_token, revision) = self.range_page(range, continue_token).await?;
        let (kind, detail) = (options.kind, options.detail.clone());
        let token = continue_token.clone();
        Ok(FetchedPage::new(continue_token, move || {
            decode_page(kind, &detail, entries, token, revision)
        }))
    }

    /// Creates the key only if it is absent. When an earlier copy may have applied and the key now
    /// exists, the value it was created with tells whose create it was: ours carries a fresh uid.
    async fn create(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let key = resource.key();
        if conversion::has_two_layouts(&key) {
            return self.create_policy(resource).await;
        }
        let path = key_path(&key);
        let mut stored = resource.clone();
        if stored.metadata.uid.is_none() {
            stored.metadata.uid = Some(uuid::Uuid::new_v4().to_string());
        }
        if stored.metadata.creation_timestamp.is_none() {
            stored.metadata.creation_timestamp = Some(now_rfc3339());
        }
        let value = conversion::encode(&stored);
        let txn = Txn::new()
            .when([Compare::version(path.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(path.as_str(), value.clone(), None)])
            .or_else([TxnOp::get(path.as_str(), None)]);
        let mut delivery = Delivery::default();
        let response = self.write("create", &key, txn, &mut delivery).await?;
        let revision = match (response.succeeded(), found(&response)) {
            (true, _) => header_revision(&response),
            (false, Some(existing)) if delivery.maybe_applied() => {
                let unknown = |source| unknown_outcome("create", &key, source);
                if existing.value() == value.as_slice() {
                    existing.mod_revision()
                } else {
                    // Ours, then changed by someone: the first version still shows whose it was.
                    match self.read_at(&path, existing.create_revision()).await {
                        Ok(Some(first)) if first.value() == value.as_slice() => {
                            first.mod_revision()
                        }
                        Ok(_) => return Err(StoreError::AlreadyExists(key)),
                        Err(error) => return Err(unknown(error)),
                    }
                }
            }
            (false, _) => return Err(StoreError::AlreadyExists(key)),
        };
        stored.metadata.resource_version = Some(revision.to_string());
        Ok(stored)
    }

    /// Replaces the key only at the expected revision. When an earlier copy may have applied and
    /// the revision moved on, etcd's history tells whether the next version was ours.
    async fn update(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let key = resource.key();
        if conversion::has_two_layouts(&key) {
            return self.update_policy(resource).await;
        }
        let path = key_path(&key);
        let expected = StoreError::expected_version(resource)?;
        let revision = parse_revision(expected)?;
        let value = conversion::encode(resource);
        let txn = Txn::new()
            .when([Compare::mod_revision(
                path.as_str(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::put(path.as_str(), value.clone(), None)])
            .or_else([TxnOp::get(path.as_str(), None)]);
        let mut delivery = Delivery::default();
        let response = self.write("update", &key, txn, &mut delivery).await?;
        let written = match (response.succeeded(), found(&response)) {
            (true, _) => header_revision(&response),
            (false, current) if delivery.maybe_applied() => match current {
                Some(current) if current.value() == value.as_slice() => current.mod_revision(),
                current => match self.succession(&path, revision, Some(&value)).await {
                    Ok(Succession::Ours(written)) => written.mod_revision(),
                    Ok(Succession::Other) => {
                        return Err(conflict_or_missing(key, expected, current.as_ref()));
                    }
                    Ok(Succession::Forgotten) => {
                        let source = conflict_or_missing(key.clone(), expected, current.as_ref());
                        return Err(unknown_outcome("update", &key, source));
                    }
                    Err(error) => return Err(unknown_outcome("update", &key, error)),
                },
            },
            (false, current) => return Err(conflict_or_missing(key, expected, current.as_ref())),
        };
        let mut stored = resource.clone();
        stored.metadata.resource_version = Some(written.to_string());
        Ok(stored)
    }

    /// Deletes the key, at the expected revision when one is given. When an earlier copy may have
    /// applied and the revision moved on, etcd's history tells whether that version was deleted
    /// next (by that copy).
    async fn delete(
        &self,
        key: &ResourceKey,
        resource_version: Option<&str>,
    ) -> Result<Resource, StoreError> {
        if conversion::has_two_layouts(key) {
            return self.delete_policy(key, resource_version).await;
        }
        let path = key_path(key);
        let expected = resource_version.map(parse_revision).transpose()?;
        let compare = match expected {
            Some(revision) => vec![Compare::mod_revision(
                path.as_str(),
                CompareOp::Equal,
                revision,
            )],
            // Unconditional, but still a transaction so the deleted value comes back atomically.
            None => vec![],
        };
        let txn = Txn::new()
            .when(compare)
            .and_then([TxnOp::delete(
                path.as_str(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(path.as_str(), None)]);
        let mut delivery = Delivery::default();
        let response = self.write("delete", key, txn, &mut delivery).await?;
        if response.succeeded() {
            let previous = response.op_responses().into_iter().find_map(|op| match op {
                TxnOpResponse::Delete(deleted) => deleted.prev_kvs().first().cloned(),
                _ => None,
            });
            // Unconditional and already gone (perhaps by an earlier copy of this request): what
            // was there cannot be known, and "not found" is what callers accept as gone.
            return match previous {
                Some(previous) => {
                    conversion::decode(&path, previous.value(), previous.mod_revision())
                }
                None => Err(StoreError::NotFound(key.clone())),
            };
        }
        let current = found(&response);
        let expected_text = resource_version.unwrap_or_default();
        match expected {
            Some(revision) if delivery.maybe_applied() => {
                match self.succession(&path, revision, None).await {
                    Ok(Succession::Ours(previous)) => {
                        conversion::decode(&path, previous.value(), previous.mod_revision())
                    }
                    Ok(Succession::Other) => Err(conflict_or_missing(
                        key.clone(),
                        expected_text,
                        current.as_ref(),
                    )),
                    Ok(Succession::Forgotten) => {
                        let source =
                            conflict_or_missing(key.clone(), expected_text, current.as_ref());
                        Err(unknown_outcome("delete", key, source))
                    }
                    Err(error) => Err(unknown_outcome("delete", key, error)),
                }
            }
            _ => Err(conflict_or_missing(
                key.clone(),
                expected_text,
                current.as_ref(),
            )),
        }
    }
}

/// The revision a transaction was applied at.
pub(super) fn header_revision(response: &TxnResponse) -> i64 {
    response
        .header()
        .map(|header| header.revision())
        .unwrap_or_default()
}

/// What each operation of a transaction read, in order: the key's value, or `None` for a key
/// that does not exist or an operation that is not a read.
pub(super) fn reads(response: &TxnResponse) -> Vec<Option<KeyValue>> {
    response
        .op_responses()
        .into_iter()
        .map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().cloned(),
            _ => None,
        })
        .collect()
}

/// The key read by a transaction's `else` branch, if it exists.
pub(super) fn found(response: &TxnResponse) -> Option<KeyValue> {
    reads(response).into_iter().flatten().next()
}

fn unknown_outcome(operation: &'static str, key: &ResourceKey, source: StoreError) -> StoreError {
    StoreError::OutcomeUnknown {
        operation,
        key: key.to_string(),
        source: Box::new(source),
    }
}

fn conflict_or_missing(key: ResourceKey, expected: &str, current: Option<&KeyValue>) -> StoreError {
    match current {
        Some(current) => StoreError::Conflict {
            key,
            expected: expected.to_string(),
            current: current.mod_revision().to_string(),
        },
        None => StoreError::NotFound(key),
    }
}
