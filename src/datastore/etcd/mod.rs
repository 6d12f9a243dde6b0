//! The etcd v3 backend: connection (plain, TLS, mutual TLS, RBAC, SRV discovery) and conditional CRUD
//! in upstream's key layout.
//!
//! `etcd-client` connects lazily, so [`EtcdStore::connect`] proves the connection with a read before it
//! returns (`reference/etcd-and-crates.md` G2). Writes are transactions compared on the key's version
//! (create) or mod revision (update, delete): a conflicting writer is reported, never overwritten.
//! Lists are read in pages pinned to one revision, so a listing is a consistent snapshot while memory
//! stays bounded by a page.

mod conversion;
pub mod coordination;
mod errors;
pub mod srv;

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, Identity,
    KvClient, TlsOptions, Txn, TxnOp, TxnOpResponse,
};

pub use conversion::{RESOURCE_ROOT, key_path, list_prefix, stored_name};

use super::{DEFAULT_PAGE_SIZE, Datastore, DatastoreType, ListOptions, Page, StoreError};
use crate::config::{EndpointSource, EtcdSettings};
use crate::resource::{Resource, ResourceKey};
use crate::terminal;

/// Where Debian-like systems keep the system CA bundle, used for `https` endpoints when no CA is configured.
const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A large page of large resources can exceed gRPC's default 4 MiB message limit (G3).
const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Time limits for connecting and for each request.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub request: Duration,
}

impl Default for Timeouts {
    /// Upstream dials with a 10 s timeout (`reference/calicoctl.md` §2.6).
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
    client: Client,
    kv: KvClient,
    endpoints: String,
    timeouts: Timeouts,
    /// How often a request that failed to connect is sent again: twice per endpoint, plus one.
    max_attempts: u32,
}

impl EtcdStore {
    /// Connects and proves the connection works (endpoints reachable, TLS accepted, credentials valid).
    pub async fn connect(
        settings: &EtcdSettings,
        timeouts: Timeouts,
    ) -> Result<EtcdStore, StoreError> {
        let endpoints = match &settings.endpoints {
            EndpointSource::Static(list) => list.clone(),
            EndpointSource::Srv { domain } => {
                srv::discover(domain, settings.tls.is_some(), settings.resolver).await?
            }
        };
        let urls: Vec<String> = endpoints.iter().map(|endpoint| endpoint.url()).collect();
        let shown = urls.join(",");

        let mut options = ConnectOptions::new()
            .with_connect_timeout(timeouts.connect)
            .with_timeout(timeouts.request)
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10));
        let uses_https = urls.iter().any(|url| url.starts_with("https://"));
        if settings.tls.is_some() || uses_https {
            options = options.with_tls(tls_options(settings)?);
        }
        if let Some(credentials) = &settings.credentials {
            // Tokens expire (`--auth-token-ttl`, 300 s by default); without refresh a long upgrade would
            // fail half-way with "invalid auth token" (G5).
            options = options
                .with_user(credentials.username.clone(), credentials.password.expose())
                .with_auto_token_refresh(true);
        }

        let connect = Client::connect(urls.clone(), Some(options));
        let client = match tokio::time::timeout(timeouts.connect + timeouts.request, connect).await
        {
            Ok(result) => result
                .map_err(|error| errors::classify(error, &shown, "connect", timeouts.connect))?,
            Err(_) => {
                return Err(StoreError::Timeout {
                    datastore: DatastoreType::EtcdV3,
                    endpoints: shown,
                    seconds: (timeouts.connect + timeouts.request).as_secs(),
                });
            }
        };
        let kv = client
            .kv_client()
            .max_decoding_message_size(MAX_MESSAGE_BYTES);
        let store = EtcdStore {
            client,
            kv,
            endpoints: shown,
            timeouts,
            max_attempts: 2 * urls.len() as u32 + 1,
        };
        store.check().await?;
        Ok(store)
    }

    /// The underlying client, for the executor's lease-based lock and checkpoint mirror.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The endpoints in use, for messages.
    pub fn endpoints(&self) -> &str {
        &self.endpoints
    }

    /// Runs one future within the request timeout, classifying failures; no retry. For the lease and
    /// lock operations of `coordination`, whose callers decide what a failure means.
    async fn request_once<T>(
        &self,
        operation: &str,
        future: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeouts.request, future).await {
            Ok(result) => result.map_err(|error| {
                errors::classify(error, &self.endpoints, operation, self.timeouts.request)
            }),
            Err(_) => Err(StoreError::Timeout {
                datastore: DatastoreType::EtcdV3,
                endpoints: self.endpoints.clone(),
                seconds: self.timeouts.request.as_secs(),
            }),
        }
    }

    /// Runs one request within the request timeout, classifying failures.
    ///
    /// A request that failed while connecting never reached a server, so it is sent again (the
    /// balancer drops the dead endpoint and picks another): this is what keeps a command working when
    /// one member of a cluster is down. Any other failure is returned at once.
    async fn request<T, F, Fut>(&self, operation: &str, mut call: F) -> Result<T, StoreError>
    where
        F: FnMut(KvClient) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.timeouts.request;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            match tokio::time::timeout_at(deadline, call(self.kv.clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error))
                    if errors::is_connect_failure(&error) && attempt < self.max_attempts =>
                {
                    terminal::debug(format!(
                        "etcd {operation} failed to connect, retrying: {error}"
                    ));
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                }
                Ok(Err(error)) => {
                    return Err(errors::classify(
                        error,
                        &self.endpoints,
                        operation,
                        self.timeouts.request,
                    ));
                }
                Err(_) => {
                    return Err(StoreError::Timeout {
                        datastore: DatastoreType::EtcdV3,
                        endpoints: self.endpoints.clone(),
                        seconds: self.timeouts.request.as_secs(),
                    });
                }
            }
        }
    }
}

fn tls_options(settings: &EtcdSettings) -> Result<TlsOptions, StoreError> {
    let mut tls = TlsOptions::new();
    let ca = match settings.tls.as_ref().and_then(|tls| tls.ca.as_ref()) {
        Some(ca) => ca.bytes.clone(),
        None => std::fs::read(SYSTEM_CA_BUNDLE).map_err(|error| StoreError::Tls {
            endpoint: "(all)".into(),
            detail: format!(
                "no CA certificate is configured and the system bundle `{SYSTEM_CA_BUNDLE}` cannot be read ({error}); set etcdCACertFile"
            ),
        })?,
    };
    // Every certificate in the bundle becomes a trust root (several CAs are allowed, seed §2.1).
    tls = tls.ca_certificate(Certificate::from_pem(ca));
    if let Some(identity) = settings.tls.as_ref().and_then(|tls| tls.identity.as_ref()) {
        tls = tls.identity(Identity::from_pem(
            identity.certificate.bytes.clone(),
            identity.key.bytes.clone(),
        ));
    }
    Ok(tls)
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

/// The opaque continue token of a paged list: the pinned revision and the next start key.
fn encode_token(revision: i64, next_key: &[u8]) -> String {
    let hex: String = next_key.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{revision}.{hex}")
}

fn decode_token(token: &str) -> Result<(i64, Vec<u8>), StoreError> {
    let invalid = || StoreError::Other(format!("invalid list continue token `{token}`"));
    let (revision, hex) = token.split_once('.').ok_or_else(invalid)?;
    let revision = revision.parse().map_err(|_| invalid())?;
    if hex.len() % 2 != 0 {
        return Err(invalid());
    }
    let key = (0..hex.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(&hex[index..index + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| invalid())?;
    Ok((revision, key))
}

#[async_trait]
impl Datastore for EtcdStore {
    fn kind(&self) -> DatastoreType {
        DatastoreType::EtcdV3
    }

    async fn check(&self) -> Result<(), StoreError> {
        let probe = format!("{RESOURCE_ROOT}clusterinformations/default");
        self.request("a read of `/calico/`", |mut kv| {
            let probe = probe.clone();
            async move {
                kv.get(probe, Some(GetOptions::new().with_keys_only()))
                    .await
            }
        })
        .await
        .map(|_| ())
    }

    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        let path = key_path(key);
        let response = self
            .request("get", |mut kv| {
                let path = path.clone();
                async move { kv.get(path, None).await }
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
        let prefix = list_prefix(options.kind, options.namespace.as_deref());
        let range_end = conversion::prefix_end(&prefix);
        let (pinned, start) = match continue_token {
            Some(token) => {
                let (revision, key) = decode_token(token)?;
                (Some(revision), key)
            }
            None => (None, prefix.as_bytes().to_vec()),
        };
        let limit = match options.page_size {
            0 => DEFAULT_PAGE_SIZE,
            size => size,
        };
        let mut get_options = GetOptions::new()
            .with_range(range_end)
            .with_limit(limit as i64);
        if let Some(revision) = pinned {
            get_options = get_options.with_revision(revision);
        }
        let response = self
            .request("list", |mut kv| {
                let (start, get_options) = (start.clone(), get_options.clone());
                async move { kv.get(start, Some(get_options)).await }
            })
            .await?;
        let revision = pinned.unwrap_or_else(|| {
            response
                .header()
                .map(|header| header.revision())
                .unwrap_or_default()
        });
        let mut items = Vec::with_capacity(response.kvs().len());
        for entry in response.kvs() {
            let key = String::from_utf8_lossy(entry.key());
            if !conversion::key_matches_kind(options.kind, &key) {
                continue;
            }
            items.push(conversion::decode(
                &key,
                entry.value(),
                entry.mod_revision(),
            )?);
        }
        let continue_token = match (response.more(), response.kvs().last()) {
            (true, Some(last)) => {
                let mut next = last.key().to_vec();
                next.push(0);
                Some(encode_token(revision, &next))
            }
            _ => None,
        };
        Ok(Page {
            items,
            continue_token,
            revision: revision.to_string(),
        })
    }

    async fn create(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let key = resource.key();
        let path = key_path(&key);
        let mut stored = resource.clone();
        if stored.metadata.uid.is_none() {
            stored.metadata.uid = Some(uuid::Uuid::new_v4().to_string());
        }
        if stored.metadata.creation_timestamp.is_none() {
            stored.metadata.creation_timestamp = Some(now_rfc3339());
        }
        let txn = Txn::new()
            .when([Compare::version(path.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(path.as_str(), conversion::encode(&stored), None)]);
        let response = self
            .request("create", |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await?;
        if !response.succeeded() {
            return Err(StoreError::AlreadyExists(key));
        }
        let revision = response
            .header()
            .map(|header| header.revision())
            .unwrap_or_default();
        stored.metadata.resource_version = Some(revision.to_string());
        Ok(stored)
    }

    async fn update(&self, resource: &Resource) -> Result<Resource, StoreError> {
        let key = resource.key();
        let path = key_path(&key);
        let expected = resource
            .metadata
            .resource_version
            .as_deref()
            .ok_or_else(|| StoreError::InvalidResourceVersion(String::new()))?;
        let revision = parse_revision(expected)?;
        let txn = Txn::new()
            .when([Compare::mod_revision(
                path.as_str(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::put(
                path.as_str(),
                conversion::encode(resource),
                None,
            )])
            .or_else([TxnOp::get(path.as_str(), None)]);
        let response = self
            .request("update", |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await?;
        if !response.succeeded() {
            return Err(conflict_or_missing(key, expected, response.op_responses()));
        }
        let mut stored = resource.clone();
        stored.metadata.resource_version = response
            .header()
            .map(|header| header.revision().to_string());
        Ok(stored)
    }

    async fn delete(
        &self,
        key: &ResourceKey,
        resource_version: Option<&str>,
    ) -> Result<Resource, StoreError> {
        let path = key_path(key);
        let compare = match resource_version {
            Some(expected) => vec![Compare::mod_revision(
                path.as_str(),
                CompareOp::Equal,
                parse_revision(expected)?,
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
        let response = self
            .request("delete", |mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await?;
        if !response.succeeded() {
            return Err(conflict_or_missing(
                key.clone(),
                resource_version.unwrap_or_default(),
                response.op_responses(),
            ));
        }
        let previous = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(deleted) => deleted.prev_kvs().first().cloned(),
            _ => None,
        });
        match previous {
            Some(previous) => conversion::decode(&path, previous.value(), previous.mod_revision()),
            None => Err(StoreError::NotFound(key.clone())),
        }
    }
}

fn conflict_or_missing(
    key: ResourceKey,
    expected: &str,
    responses: Vec<TxnOpResponse>,
) -> StoreError {
    let current = responses.into_iter().find_map(|op| match op {
        TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.mod_revision()),
        _ => None,
    });
    match current {
        Some(current) => StoreError::Conflict {
            key,
            expected: expected.to_string(),
            current: current.to_string(),
        },
        None => StoreError::NotFound(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let token = encode_token(42, b"/calico/x\0");
        assert_eq!(decode_token(&token).unwrap(), (42, b"/calico/x\0".to_vec()));
        assert!(decode_token("nonsense").is_err());
    }
}
