//! The `Datastore` trait: what netctl asks of a resource store, and the errors a caller can match on.
//!
//! Two backends implement it — `etcd` (etcd v3, upstream key layout) and `kube` (Calico CRDs and core
//! objects through the Kubernetes API). Each
//! converts between [`Resource`] and its own storage format at its boundary; nothing above this module
//! knows keys, revisions or CRDs. Every write is conditional (optimistic concurrency): a create fails if
//! the resource exists, an update fails if the stored revision moved on. Lists come back one page at a
//! time so callers can stream them with bounded memory. Many writes go in batches
//! ([`Datastore::write_batch`], `batch.rs`): one etcd transaction each, or one request per object
//! where the backend has no transactions, with an outcome per write either way.

pub mod backup;
pub mod batch;
pub mod connect;
pub mod coordination;
pub mod etcd;
pub mod health;
pub mod initialize;
pub mod ipam;
pub mod ipam_check;
pub mod kube;
mod pages;
pub mod readiness;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::time::Duration;

use async_trait::async_trait;

use crate::resource::{Kind, Resource, ResourceKey};

pub use batch::{BatchLimits, BatchOutcome, Write, WriteOutcome};
pub use pages::{FetchedPage, Pages};

// The type is a setting of the configuration; named here too because the backends and their errors
// speak of it.
pub use crate::config::DatastoreType;

/// The default number of resources fetched in a list's first page.
///
/// etcd 3.4 walks the rest of the range on every limited read, so many small pages are quadratic
/// (`reference/etcd-and-crates.md` §5); the etcd backend therefore makes the pages after the first
/// as large as a byte budget allows (see `etcd::list_page`). 1000 keeps the first answer quick.
pub const DEFAULT_PAGE_SIZE: usize = 1000;

/// Which resources a list returns, and how much of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOptions {
    pub kind: Kind,
    /// For namespaced kinds: `Some(ns)` lists one namespace, `None` lists all. Ignored otherwise.
    pub namespace: Option<String>,
    /// Resources in the first page; `0` means [`DEFAULT_PAGE_SIZE`]. A backend may make later pages
    /// larger.
    pub page_size: usize,
    /// How much of each resource the caller reads.
    pub detail: Detail,
}

impl ListOptions {
    pub fn new(kind: Kind) -> ListOptions {
        ListOptions {
            kind,
            namespace: None,
            page_size: DEFAULT_PAGE_SIZE,
            detail: Detail::Full,
        }
    }

    pub fn in_namespace(mut self, namespace: Option<String>) -> ListOptions {
        self.namespace = namespace;
        self
    }

    pub fn with_detail(mut self, detail: Detail) -> ListOptions {
        self.detail = detail;
        self
    }
}

/// How much of each listed resource the caller will read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Detail {
    /// The whole resource (documents, writes, facts).
    #[default]
    Full,
    /// Enough for a table: kind, name, namespace, resourceVersion, the labels when `labels` is set,
    /// and the named top-level fields of the spec. A backend may leave out everything else (the
    /// other metadata, the other spec fields, the status) to decode less; etcd does, a list of
    /// 100,000 host endpoints prints twice as fast.
    Summary {
        spec_fields: Vec<&'static str>,
        labels: bool,
    },
    /// The whole resource, to be printed as a document and nothing else: a backend may leave the
    /// spec and status out of the items and hand them over parsed once from their stored JSON text
    /// in [`Page::bodies`] instead, so they are written out without being decoded into values or
    /// parsed again (etcd does). The metadata is decoded as for [`Detail::Full`].
    Document,
}

/// One page of a list, in key order. `continue_token` is opaque; pass it back for the next page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub items: Vec<Resource>,
    /// With [`Detail::Document`], where the backend gives them: the stored spec and status of each
    /// item, in the same order, the items then holding neither. Empty otherwise.
    pub bodies: Vec<StoredBody>,
    pub continue_token: Option<String>,
    /// The datastore revision the whole list is pinned to (a consistent snapshot across pages).
    pub revision: String,
}

/// A listed resource's spec and status as the datastore stored them, parsed once (as the rest of
/// the resource was decoded) into tapes of their stored text that the printer writes out: `None`
/// where the resource has none (or `null`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredBody {
    pub spec: Option<crate::output::StoredJson>,
    pub status: Option<crate::output::StoredJson>,
}

/// Why a datastore operation failed, in terms a caller can act on.
///
/// Messages describe this layer only; the underlying cause is kept in `source` where there is one.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("resource does not exist: {0}")]
    NotFound(ResourceKey),
    #[error("resource already exists: {0}")]
    AlreadyExists(ResourceKey),
    #[error(
        "update conflict: {key} was changed by someone else (stored revision {current}, expected {expected})"
    )]
    Conflict {
        key: ResourceKey,
        expected: String,
        current: String,
    },
    #[error("operation `{operation}` is not supported on {kind}: {reason}")]
    Unsupported {
        operation: &'static str,
        kind: Kind,
        reason: &'static str,
    },
    #[error("{detail}")]
    AuthenticationFailed {
        datastore: DatastoreType,
        detail: String,
    },
    #[error("permission denied by the datastore for {operation}")]
    PermissionDenied {
        datastore: DatastoreType,
        operation: String,
        detail: String,
    },
    #[error("TLS handshake with {endpoint} failed: {detail}")]
    Tls { endpoint: String, detail: String },
    #[error("no datastore endpoint could be reached ({endpoints}): {detail}")]
    Unavailable {
        datastore: DatastoreType,
        endpoints: String,
        detail: String,
    },
    #[error("the datastore did not answer within {seconds}s ({endpoints})")]
    Timeout {
        datastore: DatastoreType,
        endpoints: String,
        seconds: u64,
    },
    /// Every etcd endpoint failed; each one is named with how.
    #[error("no etcd endpoint could be used: {0}")]
    EtcdEndpoints(etcd::EndpointFailures),
    /// A member answers, but the cluster kept refusing the request (no leader, leader changes);
    /// `failed` names the members that did not answer at all.
    #[error(
        "etcd kept answering `{detail}` for {seconds}s ({operation}, {attempts} attempts){}",
        failed.as_also()
    )]
    EtcdBusy {
        operation: String,
        attempts: u32,
        seconds: u64,
        detail: String,
        failed: etcd::EndpointFailures,
    },
    /// A write whose answer was lost and could not be checked afterwards.
    #[error("the {operation} of {key} may or may not have been applied")]
    OutcomeUnknown {
        operation: &'static str,
        key: String,
        #[source]
        source: Box<StoreError>,
    },
    #[error("stored value at `{location}` is not a valid resource")]
    InvalidData {
        location: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid resource version `{0}`: must be a decimal revision")]
    InvalidResourceVersion(String),
    #[error("failed to discover etcd endpoints through SRV records `{name}`: {detail}")]
    Discovery { name: String, detail: String },
    #[error("cannot use {location} to reach the Kubernetes API: {detail}")]
    Kubeconfig { location: String, detail: String },
    #[error("the Kubernetes API at {server} does not serve `{resource}`")]
    NotInstalled { server: String, resource: String },
    #[error("datastore request failed: {0}")]
    Other(String),
}

impl StoreError {
    /// Whether no request can succeed any more in this command: every etcd endpoint has failed
    /// (a failed member is not used again), so an undo need not be tried.
    pub fn no_endpoint_left(&self) -> bool {
        match self {
            StoreError::EtcdEndpoints(_) => true,
            StoreError::OutcomeUnknown { source, .. } => source.no_endpoint_left(),
            _ => false,
        }
    }

    /// Advice for the user, printed on its own `hint:` line.
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            StoreError::AuthenticationFailed {
                datastore: DatastoreType::Kubernetes,
                ..
            } => {
                "check the credentials of the kubeconfig user (token, client certificate) or k8sAPIToken"
            }
            StoreError::PermissionDenied {
                datastore: DatastoreType::Kubernetes,
                ..
            } => {
                "ask a cluster administrator for RBAC access to the Calico resources named above (see `kubectl auth can-i`)"
            }
            StoreError::Unavailable {
                datastore: DatastoreType::Kubernetes,
                ..
            }
            | StoreError::Timeout {
                datastore: DatastoreType::Kubernetes,
                ..
            } => {
                "check that the cluster is up and that the kubeconfig (KUBECONFIG, --context) or k8sAPIEndpoint names its API server"
            }
            StoreError::Kubeconfig { .. } => {
                "check KUBECONFIG (or `kubeconfig`), the context (`--context`, k8sCurrentContext) and the k8s* overrides"
            }
            StoreError::NotInstalled { .. } => {
                "install the Calico CRDs in the cluster, or check the kubeconfig context; netctl reads the API group calico-node reads, `crd.projectcalico.org/v1` unless only `projectcalico.org/v3` is served, and `NET_CALICO_API_GROUP` (or `calicoAPIGroup`) names it"
            }
            StoreError::AuthenticationFailed { .. } => {
                "check etcdUsername/etcdPassword (or ETCD_USERNAME/ETCD_PASSWORD)"
            }
            StoreError::PermissionDenied { .. } => {
                "grant the etcd user's role readwrite on the `/calico/` prefix"
            }
            StoreError::Tls { .. } => {
                "check etcdCACertFile (the CA that issued the server certificate) and the client certificate and key"
            }
            StoreError::Unavailable { .. } | StoreError::Timeout { .. } => {
                "check that etcd is running and that the endpoints (etcdEndpoints / ETCD_ENDPOINTS) are right"
            }
            StoreError::EtcdEndpoints(failures) => failures.hint(),
            StoreError::EtcdBusy { failed, .. } if !failed.0.is_empty() => etcd::QUORUM_HINT,
            StoreError::EtcdBusy { .. } => {
                "the etcd cluster is electing a leader, has lost quorum or is overloaded: check `etcdctl endpoint status --cluster`, then run the command again"
            }
            StoreError::OutcomeUnknown { source, .. } => return source.hint(),
            StoreError::Discovery { .. } => {
                "check the SRV records of etcdDiscoverySrv, or list the endpoints in etcdEndpoints instead"
            }
            StoreError::Conflict { .. } => "read the resource again and retry the change",
            StoreError::Unsupported {
                kind: Kind::WorkloadEndpoint,
                ..
            } => {
                "change or delete the Pod through Kubernetes (e.g. `kubectl delete pod -n NAMESPACE POD`); its workload endpoint follows it"
            }
            _ => return None,
        })
    }
}

/// A resource store. Implementations are cheap to share (`&self` everywhere) and safe to call concurrently.
#[async_trait]
pub trait Datastore: Send + Sync {
    /// A short name for messages and plans, e.g. `etcdv3`.
    fn kind(&self) -> DatastoreType;

    /// Proves the datastore is reachable and the credentials work (connections are otherwise lazy).
    async fn check(&self) -> Result<(), StoreError>;

    /// The API group the Calico resources live in (`kubernetes` only: `crd.projectcalico.org/v1`
    /// or v3.32's native `projectcalico.org/v3`); `None` for a datastore without groups.
    fn calico_api_group(&self) -> Option<crate::config::CalicoApiGroup> {
        None
    }

    /// The datastore's IPAM (blocks, handles, affinities, the allocator's configuration); `None`
    /// for a store that keeps none.
    fn ipam(&self) -> Option<&dyn ipam::IpamStore> {
        None
    }

    /// Reads one resource; `resourceVersion` is set to the stored revision.
    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError>;

    /// Reads one page of a list. `continue_token` is `None` for the first page.
    async fn list_page(
        &self,
        options: &ListOptions,
        continue_token: Option<&str>,
    ) -> Result<Page, StoreError>;

    /// Reads one page of a list as [`list_page`](Datastore::list_page) does, handing back its
    /// continue token before its items are decoded, so [`Pages`] can ask for the next page first.
    /// The default decodes at once; etcd decodes later.
    async fn fetch_page(
        &self,
        options: &ListOptions,
        continue_token: Option<&str>,
    ) -> Result<FetchedPage, StoreError> {
        self.list_page(options, continue_token)
            .await
            .map(FetchedPage::decoded)
    }

    /// Creates a resource that must not exist yet. `uid` and `creationTimestamp` are set when missing.
    async fn create(&self, resource: &Resource) -> Result<Resource, StoreError>;

    /// Replaces a resource whose stored revision must equal `metadata.resourceVersion`.
    async fn update(&self, resource: &Resource) -> Result<Resource, StoreError>;

    /// Deletes a resource, only if its stored revision equals `resource_version` when one is given.
    /// Returns the resource as it was.
    async fn delete(
        &self,
        key: &ResourceKey,
        resource_version: Option<&str>,
    ) -> Result<Resource, StoreError>;

    /// What the members of a replicated datastore say about themselves (etcd: every member's
    /// status and the active alarms); `None` for a datastore without members to ask.
    async fn health(&self) -> Result<Option<health::DatastoreHealth>, StoreError> {
        Ok(None)
    }

    /// How long one request may take (`--request-timeout`); callers that must finish within a
    /// bound (the undo of a half-written file) plan with it.
    fn request_timeout(&self) -> Duration {
        Duration::from_secs(10)
    }

    /// How big one [`Datastore::write_batch`] may be.
    fn batch_limits(&self) -> BatchLimits {
        BatchLimits::DEFAULT
    }

    /// Reads what is stored under each key, in the order of `keys` (`None`: nothing is). The
    /// default reads them one at a time; etcd reads key ranges.
    async fn read_many(&self, keys: &[ResourceKey]) -> Result<Vec<Option<Resource>>, StoreError> {
        batch::read_one_by_one(self, keys).await
    }

    /// Sends a batch of conditional writes (at most [`Datastore::batch_limits`]) and says what
    /// became of each (see [`batch`]). The default writes them one at a time; etcd writes a batch
    /// as one transaction, all or nothing.
    async fn write_batch(&self, writes: &[Write]) -> BatchOutcome {
        batch::write_one_by_one(self, writes).await
    }
}

/// Lists every resource matching `options`, page by page, handing each to `visit` as it arrives so
/// memory stays bounded by one page. Stops early when `visit` returns an error.
pub async fn for_each<E>(
    store: &dyn Datastore,
    options: &ListOptions,
    mut visit: impl FnMut(Resource) -> Result<(), E>,
) -> Result<(), E>
where
    E: From<StoreError>,
{
    let mut token: Option<String> = None;
    loop {
        let page = store.list_page(options, token.as_deref()).await?;
        for item in page.items {
            visit(item)?;
        }
        match page.continue_token {
            Some(next) => token = Some(next),
            None => return Ok(()),
        }
    }
}
