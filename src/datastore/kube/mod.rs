//! The Kubernetes backend: Calico resources as custom resources of `crd.projectcalico.org/v1`, Nodes
//! as Kubernetes Nodes, Profiles derived from Namespaces and ServiceAccounts and WorkloadEndpoints
//! derived from Pods (both read-only).
//!
//! Every request goes through the Kubernetes API with the kube client built by [`client`]. Writes are
//! conditional as the API server makes them: create is a POST (409 `AlreadyExists` if taken), update
//! a PUT carrying the `resourceVersion` read (409 `Conflict` if someone else wrote since), delete
//! carries `resourceVersion` and UID preconditions. The API has no multi-object transactions, so a
//! batch of writes is sent one object at a time (the trait's default, `datastore/batch.rs`) with the
//! same per-write outcomes as etcd's. Lists use the API's `limit` and `continue`, so a
//! listing is paged exactly as with etcd. Conversion lives in `conversion` (custom resources),
//! `derived` (Nodes, Profiles) and `workload` (WorkloadEndpoints from Pods, read-only); error
//! classification in `errors`; the upgrade lock and checkpoint
//! mirror (Leases and ConfigMaps) in `coordination`.

pub mod client;
mod conversion;
pub mod coordination;
mod derived;
mod errors;

pub use errors::KubeError;
mod workload;

use std::time::Duration;

use async_trait::async_trait;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::core::{ApiResource, DynamicObject};

pub use client::ApiClient;
pub use conversion::{CRD_GROUP, CRD_VERSION, METADATA_ANNOTATION, convert_uid};

use super::{DEFAULT_PAGE_SIZE, Datastore, DatastoreType, ListOptions, Page, StoreError};
use crate::config::KubernetesSettings;
use crate::resource::{Kind, Resource, ResourceKey};

/// A Kubernetes datastore.
#[derive(Clone)]
pub struct KubeStore {
    api: ApiClient,
    timeout: Duration,
}

impl KubeStore {
    /// Builds the client and proves that the API answers and serves the Calico CRDs.
    pub async fn connect(
        settings: &KubernetesSettings,
        timeout: Duration,
    ) -> Result<KubeStore, StoreError> {
        let api = client::build(settings, timeout).await?;
        let store = KubeStore { api, timeout };
        store.check().await?;
        Ok(store)
    }

    /// The API server URL, for messages.
    pub fn server(&self) -> &str {
        &self.api.server
    }

    /// The underlying client (for the executor's Kubernetes actions).
    pub fn client(&self) -> &kube::Client {
        &self.api.client
    }

    fn request<'a>(
        &'a self,
        verb: &'a str,
        resource: &'a str,
        key: Option<&'a ResourceKey>,
        expected: Option<&'a str>,
    ) -> errors::Request<'a> {
        errors::Request {
            server: &self.api.server,
            verb,
            resource,
            key,
            expected,
            timeout: self.timeout,
        }
    }

    /// Runs one API call within the time limit, classifying failures.
    async fn call<T>(
        &self,
        request: errors::Request<'_>,
        future: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, future).await {
            Ok(result) => result.map_err(|error| errors::classify(error, &request)),
            Err(_) => Err(StoreError::TimedOut(Box::new(
                errors::KubeError::TimedOut {
                    server: self.api.server.clone(),
                    seconds: self.timeout.as_secs(),
                },
            ))),
        }
    }

    /// The API for one type, in one namespace or across all.
    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(namespace) => Api::namespaced_with(self.api.client.clone(), namespace, resource),
            None => Api::all_with(self.api.client.clone(), resource),
        }
    }

    fn custom_api(&self, kind: Kind, namespace: Option<&str>) -> Api<DynamicObject> {
        let namespace = namespace.filter(|_| kind.is_namespaced());
        self.api(&conversion::api_resource(kind), namespace)
    }

    /// The current resourceVersion of a resource, for a conflict message.
    async fn current_version(&self, key: &ResourceKey) -> String {
        match self.get(key).await {
            Ok(resource) => resource.metadata.resource_version.unwrap_or_default(),
            Err(StoreError::NotFound(_)) => "(deleted)".into(),
            Err(_) => "unknown".into(),
        }
    }

    fn resource_name(kind: Kind) -> String {
        format!("{}.{CRD_GROUP}", kind.plural())
    }
}

fn to_dynamic(value: serde_json::Value) -> Result<DynamicObject, StoreError> {
    serde_json::from_value(value).map_err(|source| StoreError::InvalidData {
        location: "a custom resource built by netctl".into(),
        source,
    })
}

fn from_dynamic(kind: Kind, object: &DynamicObject) -> Result<Resource, StoreError> {
    let value = serde_json::to_value(object).map_err(|source| StoreError::InvalidData {
        location: format!(
            "{} `{}`",
            kind.plural(),
            object.metadata.name.as_deref().unwrap_or("")
        ),
        source,
    })?;
    conversion::from_custom_resource(kind, &value)
}

fn unsupported(operation: &'static str, kind: Kind, reason: &'static str) -> StoreError {
    StoreError::Unsupported {
        operation,
        kind,
        reason,
    }
}

fn page_size(options: &ListOptions) -> u32 {
    let size = match options.page_size {
        0 => DEFAULT_PAGE_SIZE,
        size => size,
    };
    u32::try_from(size).unwrap_or(u32::MAX)
}

#[async_trait]
impl Datastore for KubeStore {
    fn kind(&self) -> DatastoreType {
        DatastoreType::Kubernetes
    }

    fn request_timeout(&self) -> Duration {
        self.timeout
    }

    async fn check(&self) -> Result<(), StoreError> {
        let kind = Kind::ClusterInformation;
        let resource = Self::resource_name(kind);
        let api = self.custom_api(kind, None);
        let params = ListParams::default().limit(1);
        self.call(
            self.request("list", &resource, None, None),
            api.list(&params),
        )
        .await
        .map(|_| ())
    }

    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        match key.kind {
            Kind::Node => return derived::get_node(self, key).await,
            Kind::Profile => return derived::get_profile(self, key).await,
            Kind::WorkloadEndpoint => return workload::get(self, key).await,
            _ => {}
        }
        let resource = Self::resource_name(key.kind);
        let api = self.custom_api(key.kind, key.namespace.as_deref());
        let name = crate::datastore::etcd::stored_name(key.kind, &key.name);
        let object = self
            .call(
                self.request("get", &resource, Some(key), None),
                api.get(&name),
            )
            .await?;
        from_dynamic(key.kind, &object)
    }

    async fn list_page(
        &self,
        options: &ListOptions,
        continue_token: Option<&str>,
    ) -> Result<Page, StoreError> {
        match options.kind {
            Kind::Node => return derived::list_nodes(self, options, continue_token).await,
            Kind::Profile => return derived::list_profiles(self, options, continue_token).await,
            Kind::WorkloadEndpoint => {
                return workload::list(self, options, continue_token).await;
            }
            _ => {}
        }
        let resource = Self::resource_name(options.kind);
        let api = self.custom_api(options.kind, options.namespace.as_deref());
        let mut params = ListParams::default().limit(page_size(options));
        if let Some(token) = continue_token {
            params = params.continue_token(token);
        }
        let list = self
            .call(
                self.request("list", &resource, None, None),
                api.list(&params),
            )
            .await?;
        let items = list
            .items
            .iter()
            .map(|object| from_dynamic(options.kind, object))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            bodies: Vec::new(),
            continue_token: list.metadata.continue_.filter(|token| !token.is_empty()),
            revision: list.metadata.resource_version.unwrap_or_default(),
        })
    }

    async fn create(&self, resource: &Resource) -> Result<Resource, StoreError> {
        match resource.kind {
            Kind::Node => return Err(unsupported("create", resource.kind, derived::NODES)),
            Kind::Profile => return Err(unsupported("create", resource.kind, derived::PROFILES)),
            Kind::WorkloadEndpoint => {
                return Err(unsupported(
                    "create",
                    resource.kind,
                    workload::WORKLOAD_ENDPOINTS,
                ));
            }
            _ => {}
        }
        let key = resource.key();
        let mut body = resource.clone();
        // The API server assigns UID, resourceVersion and creation time.
        body.metadata.resource_version = None;
        body.metadata.uid = None;
        let object = to_dynamic(conversion::to_custom_resource(&body))?;
        let name = Self::resource_name(resource.kind);
        let api = self.custom_api(resource.kind, resource.metadata.namespace.as_deref());
        let created = self
            .call(
                self.request("create", &name, Some(&key), None),
                api.create(&PostParams::default(), &object),
            )
            .await?;
        from_dynamic(resource.kind, &created)
    }

    async fn update(&self, resource: &Resource) -> Result<Resource, StoreError> {
        match resource.kind {
            Kind::Node => return derived::update_node(self, resource).await,
            Kind::Profile => return Err(unsupported("update", resource.kind, derived::PROFILES)),
            Kind::WorkloadEndpoint => {
                return Err(unsupported(
                    "update",
                    resource.kind,
                    workload::WORKLOAD_ENDPOINTS,
                ));
            }
            _ => {}
        }
        let key = resource.key();
        let expected = resource
            .metadata
            .resource_version
            .clone()
            .ok_or_else(|| StoreError::InvalidResourceVersion(String::new()))?;
        let object = to_dynamic(conversion::to_custom_resource(resource))?;
        let name = Self::resource_name(resource.kind);
        let api = self.custom_api(resource.kind, resource.metadata.namespace.as_deref());
        let stored_name =
            crate::datastore::etcd::stored_name(resource.kind, &resource.metadata.name);
        let result = self
            .call(
                self.request("update", &name, Some(&key), Some(&expected)),
                api.replace(&stored_name, &PostParams::default(), &object),
            )
            .await;
        match result {
            Ok(updated) => from_dynamic(resource.kind, &updated),
            Err(StoreError::Conflict { key, expected, .. }) => {
                let current = self.current_version(&key).await;
                Err(StoreError::Conflict {
                    key,
                    expected,
                    current,
                })
            }
            Err(error) => Err(error),
        }
    }

    async fn delete(
        &self,
        key: &ResourceKey,
        resource_version: Option<&str>,
    ) -> Result<Resource, StoreError> {
        match key.kind {
            Kind::Node => return Err(unsupported("delete", key.kind, derived::NODES)),
            Kind::Profile => return Err(unsupported("delete", key.kind, derived::PROFILES)),
            Kind::WorkloadEndpoint => {
                return Err(unsupported(
                    "delete",
                    key.kind,
                    workload::WORKLOAD_ENDPOINTS,
                ));
            }
            _ => {}
        }
        // Read first: the API answers a delete with the object or a bare Status depending on the
        // type, and the caller wants the resource as it was.
        let current = self.get(key).await?;
        let name = Self::resource_name(key.kind);
        let api = self.custom_api(key.kind, key.namespace.as_deref());
        let stored_name = crate::datastore::etcd::stored_name(key.kind, &key.name);
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: Some(
                    resource_version
                        .map(str::to_string)
                        .or_else(|| current.metadata.resource_version.clone())
                        .unwrap_or_default(),
                ),
                uid: current.metadata.uid.as_deref().map(convert_uid),
            }),
            ..DeleteParams::default()
        };
        let result = self
            .call(
                self.request("delete", &name, Some(key), resource_version),
                api.delete(&stored_name, &params),
            )
            .await;
        match result {
            Ok(_) => Ok(current),
            Err(StoreError::Conflict { key, expected, .. }) => {
                let current = self.current_version(&key).await;
                Err(StoreError::Conflict {
                    key,
                    expected,
                    current,
                })
            }
            Err(error) => Err(error),
        }
    }
}
