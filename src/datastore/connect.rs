//! Connecting to what the client configuration names: the datastore (etcd or Kubernetes), its
//! coordination service, and the Kubernetes cluster `kube.*` steps run against.
//!
//! Every connection is proven before it is handed out (`EtcdStore::connect` reads a key, the
//! Kubernetes client asks the API server for its version), so configuration mistakes surface at once
//! with a classified message. This file decides which backend to build from a validated
//! [`ClientConfig`] and the few settings that come from elsewhere ([`ConnectOptions`]); it reads no
//! environment variable and no flag itself.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::coordination::Coordination;
use super::etcd::{EtcdStore, Timeouts};
use super::kube::KubeStore;
use super::{Datastore, DatastoreType, StoreError};
use crate::config::{ClientConfig, ConfigError, KubernetesSettings, Origin};
use crate::errors::Hint;
use crate::output::Printer;

/// Set in every pod: its presence means the in-cluster service account can be used.
pub const IN_CLUSTER_VARIABLE: &str = "KUBERNETES_SERVICE_HOST";

/// What connecting needs besides the client configuration.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Bounds connecting and each request.
    pub request_timeout: Duration,
    /// `--context`: the kubeconfig context, over `k8sCurrentContext`.
    pub kube_context: Option<String>,
    /// `HOME`, where the default kubeconfig is.
    pub home: Option<PathBuf>,
    /// Whether this process runs in a pod ([`IN_CLUSTER_VARIABLE`] is set).
    pub in_cluster: bool,
    /// Where connecting says what it tried (debug detail).
    pub printer: Printer,
    /// Connect to a Kubernetes datastore that does not serve the Calico CRDs yet (the target of a
    /// migration, whose import installs them); otherwise that is refused at once.
    pub crds_optional: bool,
}

/// Why no connection could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot connect to the {datastore} datastore")]
    Datastore {
        /// `etcd` or `kubernetes`, as messages name them.
        datastore: &'static str,
        #[source]
        source: StoreError,
    },
    #[error("cannot set up the Kubernetes client for `kube.*` steps")]
    Cluster(#[source] StoreError),
}

impl Hint for ConnectError {
    fn hint(&self) -> Option<String> {
        match self {
            ConnectError::Config(error) => error.hint(),
            ConnectError::Datastore { source, .. } | ConnectError::Cluster(source) => source.hint(),
        }
    }
}

/// Connects to the configured datastore and its coordination service (leases, the upgrade lock and
/// the checkpoint mirror): etcd leases and keys, or Kubernetes Leases and ConfigMaps.
pub async fn connect_coordinated(
    config: &ClientConfig,
    options: &ConnectOptions,
) -> Result<(Arc<dyn Datastore>, Arc<dyn Coordination>), ConnectError> {
    match config.datastore_type.value {
        DatastoreType::EtcdV3 => {
            let store = Arc::new(connect_etcd(config, options).await?);
            Ok((store.clone(), store))
        }
        DatastoreType::Kubernetes => {
            let store = Arc::new(connect_kubernetes(config, options).await?);
            // Both groups served by CRDs, the other holding objects: said before any command
            // reads or writes the one chosen (rancher/rke2-charts#1205 lost them this way).
            if let Some(other) = store.other_group_objects().await {
                options.printer.warn(format!(
                    "{}\n  hint: {}",
                    other.warning(store.api_group()),
                    other.hint()
                ));
            }
            Ok((store.clone(), store))
        }
    }
}

/// Connects to the configured datastore.
pub async fn connect(
    config: &ClientConfig,
    options: &ConnectOptions,
) -> Result<Arc<dyn Datastore>, ConnectError> {
    Ok(connect_coordinated(config, options).await?.0)
}

/// The validated Kubernetes settings (kubeconfig, context, overrides).
pub fn kubernetes_settings(
    config: &ClientConfig,
    options: &ConnectOptions,
) -> Result<KubernetesSettings, ConfigError> {
    config.kubernetes(options.kube_context.as_deref(), options.home.as_deref())
}

/// Whether anything names a Kubernetes cluster: a kubeconfig, an API endpoint, or the in-cluster
/// service account.
fn names_a_cluster(settings: &KubernetesSettings, options: &ConnectOptions) -> bool {
    settings.kubeconfig.is_some() || settings.api_endpoint.is_some() || options.in_cluster
}

/// A Kubernetes API client for the executor's `kube.*` actions, when the configuration names a
/// cluster; `None` when nothing does. A cluster that is named but unusable (a broken kubeconfig, an
/// unknown context) is an error, not a silent `None`.
pub async fn kubernetes_client(
    config: &ClientConfig,
    options: &ConnectOptions,
) -> Result<Option<kube::Client>, ConnectError> {
    let settings = kubernetes_settings(config, options)?;
    if !names_a_cluster(&settings, options) {
        options
            .printer
            .debug("no Kubernetes cluster is configured: `kube.*` steps are only described");
        return Ok(None);
    }
    let api = super::kube::client::build(&settings, options.request_timeout)
        .await
        .map_err(ConnectError::Cluster)?;
    Ok(Some(api.client))
}

/// Whether the configuration names a datastore at all: not so for the default `kubernetes` type with
/// no kubeconfig, no API endpoint and no in-cluster service (planning then uses flags and defaults).
pub fn names_a_datastore(
    config: &ClientConfig,
    options: &ConnectOptions,
) -> Result<bool, ConfigError> {
    if config.datastore_type.value != DatastoreType::Kubernetes
        || config.datastore_type.origin != Origin::Default
    {
        return Ok(true);
    }
    let settings = kubernetes_settings(config, options)?;
    Ok(names_a_cluster(&settings, options))
}

/// Connects to the Kubernetes datastore: the client, the API group of the Calico resources
/// (configured, else discovered as upstream) and a first list. Says which group at debug level;
/// what the group not chosen holds is the caller's to ask (`KubeStore::other_group_objects`).
pub async fn connect_kubernetes(
    config: &ClientConfig,
    options: &ConnectOptions,
) -> Result<KubeStore, ConnectError> {
    let settings = kubernetes_settings(config, options)?;
    let store = KubeStore::connect_with(&settings, options.request_timeout, options.crds_optional)
        .await
        .map_err(|source| ConnectError::Datastore {
            datastore: "kubernetes",
            source,
        })?;
    options.printer.debug(format!(
        "connected to the Kubernetes API at {}; Calico API group {}",
        store.server(),
        store.api_group()
    ));
    Ok(store)
}

async fn connect_etcd(
    config: &ClientConfig,
    options: &ConnectOptions,
) -> Result<EtcdStore, ConnectError> {
    let settings = config.etcd()?;
    let timeouts = Timeouts {
        connect: options.request_timeout,
        request: options.request_timeout,
    };
    let store = EtcdStore::connect_with(&settings, timeouts, options.printer.clone())
        .await
        .map_err(|source| ConnectError::Datastore {
            datastore: "etcd",
            source,
        })?;
    options
        .printer
        .debug(format!("connected to etcd at {}", store.endpoints()));
    Ok(store)
}
