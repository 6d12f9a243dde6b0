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
pub mod migration;
mod pages;
pub mod policy_names;
pub mod readiness;
pub mod snapshot;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use crate::errors::Hint;
use crate::resource::{Kind, Resource, ResourceKey};

pub use batch::{BatchLimits, BatchOutcome, Write, WriteOutcome};
pub use pages::{FetchedPage, Pages};

// The type is a setting of the configuration; named here too because the backends and their errors
// speak of it.
pub use crate::config::DatastoreType;

/// The default number of resources fetched in a list's first page.
///
/// etcd 3.4 walks the rest of the range on every limited read, so many small pages are quadratic
/// (`docs/architecture.md`, "Lists are paged"; `docs/benchmarks.md`); the etcd backend therefore
/// makes the pages after the first as large as a byte budget allows (see `etcd::list_page`). 1000
/// keeps the first answer quick.
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

/// What a backend says about a failure in its own terms (`etcd::EtcdError`, `kube::KubeError`):
/// an error with its causes, and its advice. [`StoreError`] keeps it as its `source`, so the
/// backend's own words and advice reach the user while callers match on the neutral category.
pub trait BackendError: std::error::Error + Hint + Send + Sync + 'static {}

impl<T: std::error::Error + Hint + Send + Sync + 'static> BackendError for T {}

/// Why a datastore operation failed, in terms a caller can act on — whichever backend answered.
///
/// The variants are the categories callers decide on (a missing resource, a conflict, no access,
/// no server, an answer lost). What exactly happened is the backend's error, kept as the
/// [`source`](std::error::Error::source) with its advice ([`BackendError`]): etcd's endpoints and
/// how each failed, the Kubernetes API's status. Messages describe this layer only.
#[derive(Debug)]
pub enum StoreError {
    NotFound(ResourceKey),
    AlreadyExists(ResourceKey),
    Conflict {
        key: ResourceKey,
        expected: String,
        current: String,
    },
    Unsupported {
        operation: &'static str,
        kind: Kind,
        reason: &'static str,
    },
    /// The datastore did not accept netctl's credentials.
    Unauthenticated(Box<dyn BackendError>),
    /// The credentials were accepted; the operation is not allowed to them.
    PermissionDenied {
        operation: String,
        source: Box<dyn BackendError>,
    },
    /// No server of the datastore could serve the request (unreachable, refused, no leader).
    Unavailable(Box<dyn BackendError>),
    /// A request was sent and no answer came in time: it may have been applied.
    TimedOut(Box<dyn BackendError>),
    /// The connection cannot be set up as configured (a kubeconfig, SRV records, a CA bundle), or
    /// the datastore lacks what netctl needs (the Calico CRDs).
    Misconfigured(Box<dyn BackendError>),
    /// A write whose answer was lost and could not be checked afterwards.
    OutcomeUnknown {
        operation: &'static str,
        key: String,
        source: Box<StoreError>,
    },
    InvalidData {
        location: String,
        source: serde_json::Error,
    },
    InvalidResourceVersion(String),
    /// The datastore refused or failed `operation` for a reason of its own.
    Failed {
        operation: String,
        source: Box<dyn BackendError>,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound(key) => write!(f, "resource does not exist: {key}"),
            StoreError::AlreadyExists(key) => write!(f, "resource already exists: {key}"),
            StoreError::Conflict {
                key,
                expected,
                current,
            } => write!(
                f,
                "update conflict: {key} was changed by someone else (stored revision {current}, expected {expected})"
            ),
            StoreError::Unsupported {
                operation,
                kind,
                reason,
            } => write!(
                f,
                "operation `{operation}` is not supported on {kind}: {reason}"
            ),
            StoreError::Unauthenticated(_) => f.write_str("authentication failed"),
            StoreError::PermissionDenied { operation, .. } => {
                write!(f, "permission denied by the datastore for {operation}")
            }
            StoreError::Unavailable(_) => f.write_str("the datastore is unavailable"),
            StoreError::TimedOut(_) => f.write_str("the datastore did not answer in time"),
            StoreError::Misconfigured(_) => {
                f.write_str("the datastore cannot be used as configured")
            }
            StoreError::OutcomeUnknown { operation, key, .. } => {
                write!(
                    f,
                    "the {operation} of {key} may or may not have been applied"
                )
            }
            StoreError::InvalidData { location, .. } => {
                write!(f, "stored value at `{location}` is not a valid resource")
            }
            StoreError::InvalidResourceVersion(version) => write!(
                f,
                "invalid resource version `{version}`: must be a decimal revision"
            ),
            StoreError::Failed { operation, .. } => write!(f, "{operation} failed"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        if let Some(backend) = self.carried() {
            return Some(backend);
        }
        match self {
            StoreError::OutcomeUnknown { source, .. } => Some(source.as_ref()),
            StoreError::InvalidData { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl StoreError {
    /// The resource version an update expects to replace: an update without one is refused as
    /// an invalid (empty) version, before anything is sent.
    pub fn expected_version(resource: &Resource) -> Result<&str, StoreError> {
        resource
            .metadata
            .resource_version
            .as_deref()
            .ok_or_else(|| StoreError::InvalidResourceVersion(String::new()))
    }

    /// The backend's error this one carries as its own source.
    fn carried(&self) -> Option<&dyn BackendError> {
        match self {
            StoreError::Unauthenticated(source)
            | StoreError::PermissionDenied { source, .. }
            | StoreError::Unavailable(source)
            | StoreError::TimedOut(source)
            | StoreError::Misconfigured(source)
            | StoreError::Failed { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }

    /// The backend's own error, when this one carries it (or, for a lost answer, its cause does):
    /// what exactly failed, in the backend's terms (callers of one backend downcast it to
    /// `EtcdError` or `KubeError`).
    pub fn backend(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::OutcomeUnknown { source, .. } => source.backend(),
            _ => self
                .carried()
                .map(|backend| backend as &(dyn std::error::Error + 'static)),
        }
    }

    /// Whether no request can succeed any more in this command: every etcd endpoint has failed
    /// (a failed member is not used again), so an undo need not be tried.
    pub fn no_endpoint_left(&self) -> bool {
        matches!(
            self.backend_as::<etcd::EtcdError>(),
            Some(etcd::EtcdError::Endpoints(_))
        )
    }

    /// Whether the datastore does not serve the type of resource asked for (a Kubernetes
    /// custom resource whose CRD is not installed).
    pub fn is_not_served(&self) -> bool {
        matches!(
            self.backend_as::<kube::KubeError>(),
            Some(kube::KubeError::NotInstalled { .. })
        )
    }

    /// The backend's error as `T`, when it is one.
    pub fn backend_as<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.backend()?.downcast_ref::<T>()
    }

    /// A failure of `operation` whose cause is `source` (a backend's error, or a plain message).
    pub fn failed(operation: impl Into<String>, source: impl BackendError) -> StoreError {
        StoreError::Failed {
            operation: operation.into(),
            source: Box::new(source),
        }
    }
}

/// The neutral categories have no advice of their own beyond a conflict's and a derived kind's;
/// the backend's error knows what to check (the kubeconfig, etcd's endpoints, the RBAC rules).
impl Hint for StoreError {
    fn hint(&self) -> Option<String> {
        match self {
            StoreError::Conflict { .. } => {
                Some("read the resource again and retry the change".into())
            }
            StoreError::Unsupported {
                kind: Kind::WorkloadEndpoint,
                ..
            } => Some(
                "change or delete the Pod through Kubernetes (e.g. `kubectl delete pod -n NAMESPACE POD`); its workload endpoint follows it".into(),
            ),
            StoreError::OutcomeUnknown { source, .. } => source.hint(),
            _ => self.carried()?.hint(),
        }
    }
}

/// A cause in plain words, for the few failures no backend type names (a test double's, a
/// decoding bug's): no advice.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Plain(pub String);

impl Hint for Plain {
    fn hint(&self) -> Option<String> {
        None
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

    /// Streams a snapshot of the whole database into `out` (etcd's maintenance API), checked;
    /// `None` for a store that has none (Kubernetes).
    async fn snapshot(
        &self,
        _out: &mut (dyn std::io::Write + Send),
    ) -> Option<Result<snapshot::SnapshotTaken, snapshot::SnapshotError>> {
        None
    }

    /// The store's misnamed default-tier policies (`datastore migrate-policy-names`); `None` for
    /// a store whose policy names are another component's business (Kubernetes: kube-controllers).
    fn policy_names(&self) -> Option<&dyn policy_names::PolicyNameStore> {
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
