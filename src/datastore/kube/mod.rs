//! The Kubernetes backend: Calico resources as custom resources of `crd.projectcalico.org/v1` or,
//! on clusters with v3.32's native CRDs, `projectcalico.org/v3` (the group is chosen once per
//! connection as upstream chooses it: `api_group`), Nodes as Kubernetes Nodes, Profiles derived
//! from Namespaces and ServiceAccounts and WorkloadEndpoints derived from Pods (both read-only).
//!
//! Every request goes through the Kubernetes API with the kube client built by [`client`]. Writes are
//! conditional as the API server makes them: create is a POST (409 `AlreadyExists` if taken), update
//! a PUT carrying the `resourceVersion` read (409 `Conflict` if someone else wrote since), delete
//! carries `resourceVersion` and UID preconditions. The API has no multi-object transactions, so a
//! batch of writes is sent one object at a time (the trait's default, `datastore/batch.rs`) with the
//! same per-write outcomes as etcd's. Lists use the API's `limit` and `continue`, so a
//! listing is paged exactly as with etcd. Conversion lives in `conversion` (custom resources of
//! either group; `names` the custom resource names of default-tier policies),
//! `derived` (Nodes, Profiles) and `workload` (WorkloadEndpoints from Pods, read-only); error
//! classification in `errors`; the upgrade lock and checkpoint
//! mirror (Leases and ConfigMaps) in `coordination`.

pub mod api_group;
pub mod client;
mod conversion;
pub mod coordination;
mod derived;
mod errors;

pub use errors::KubeError;
mod ipam;
pub mod ipam_encoding;
mod names;
mod workload;

use std::time::Duration;

use async_trait::async_trait;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::core::{ApiResource, DynamicObject};

pub use api_group::{ClusterGroup, GroupChoice, OtherGroup, is_custom_resource};
pub use client::ApiClient;
pub use conversion::{CRD_GROUP, CRD_VERSION, METADATA_ANNOTATION, api_resource, convert_uid};

use super::{DEFAULT_PAGE_SIZE, Datastore, DatastoreType, ListOptions, Page, StoreError};
use crate::config::{CalicoApiGroup, KubernetesSettings};
use crate::release::Release;
use crate::resource::{Kind, Resource, ResourceKey};
use names::PolicyNaming;

/// A Kubernetes datastore.
#[derive(Clone)]
pub struct KubeStore {
    api: ApiClient,
    timeout: Duration,
    group: GroupChoice,
}

impl KubeStore {
    /// Builds the client, chooses the API group of the Calico resources (`api_group::choose`) and
    /// proves that the API answers and serves the Calico CRDs of that group.
    pub async fn connect(
        settings: &KubernetesSettings,
        timeout: Duration,
    ) -> Result<KubeStore, StoreError> {
        KubeStore::connect_with(settings, timeout, false).await
    }

    /// As [`KubeStore::connect`]; with `crds_optional` (a migration's target, whose import
    /// installs them) the Calico CRDs need not be served yet: only that the API answers.
    pub async fn connect_with(
        settings: &KubernetesSettings,
        timeout: Duration,
        crds_optional: bool,
    ) -> Result<KubeStore, StoreError> {
        let api = client::build(settings, timeout).await?;
        let request = errors::Request::api_groups(&api.server, timeout);
        let chosen = tokio::time::timeout(
            timeout,
            api_group::choose(&api, settings.api_group.as_ref(), request),
        )
        .await
        .map_err(|_| {
            StoreError::TimedOut(Box::new(errors::KubeError::TimedOut {
                server: api.server.clone(),
                seconds: timeout.as_secs(),
            }))
        })??;
        let store = KubeStore {
            api,
            timeout,
            group: chosen,
        };
        match store.check().await {
            Err(error) if crds_optional && error.is_not_served() => Ok(store),
            checked => checked.map(|()| store),
        }
    }

    /// The Kubernetes datastore of the cluster `client` talks to, whether or not the Calico CRDs
    /// are served yet: the target of an etcd → Kubernetes migration from an etcd configuration
    /// (`datastore.import`, `datastore.unlock` with `datastore: kubernetes`) and what a plan for
    /// it finds. The API group is `group`'s: the running plan's, else chosen as
    /// [`KubeStore::connect`] chooses it (the configured one, else discovered).
    pub async fn for_cluster(
        client: kube::Client,
        server: String,
        timeout: Duration,
        group: ClusterGroup<'_>,
    ) -> Result<KubeStore, StoreError> {
        let api = ApiClient { client, server };
        let request = errors::Request::api_groups(&api.server, timeout);
        let configured = match group {
            ClusterGroup::Configured(configured) => configured,
            ClusterGroup::Planned(_) => None,
        };
        let mut choice = api_group::choose(&api, configured, request).await?;
        if let ClusterGroup::Planned(planned) = group {
            choice.group = planned;
            choice.reason = api_group::Reason::Planned;
        }
        Ok(KubeStore::with_group(api, timeout, choice))
    }

    /// A store for a client and a group chosen elsewhere (an upgrade's `kube.*` steps, tests).
    pub fn with_group(api: ApiClient, timeout: Duration, group: GroupChoice) -> KubeStore {
        KubeStore {
            api,
            timeout,
            group,
        }
    }

    /// Where the IPAM objects live (`kube/ipam.rs`): the group the Calico resources live in.
    fn ipam_group(&self) -> ipam_encoding::ApiGroup {
        match self.group.group {
            CalicoApiGroup::CrdV1 => ipam_encoding::ApiGroup::CrdV1,
            CalicoApiGroup::V3 => ipam_encoding::ApiGroup::ProjectcalicoV3,
        }
    }

    /// The API group of the Calico custom resources and why it was chosen.
    pub fn api_group(&self) -> &GroupChoice {
        &self.group
    }

    /// When both groups are served by CRDs, the kinds of the other group that hold objects netctl
    /// does not read (a warning for the caller to print). Reads at most one object per kind.
    pub async fn other_group_objects(&self) -> Option<OtherGroup> {
        tokio::time::timeout(
            self.timeout,
            api_group::inspect_other_group(&self.api, &self.group),
        )
        .await
        .ok()
        .flatten()
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
        self.api(&api_resource(kind, self.group.group), namespace)
    }

    /// The current resourceVersion of a resource, for a conflict message.
    async fn current_version(&self, key: &ResourceKey) -> String {
        match self.get(key).await {
            Ok(resource) => resource.metadata.resource_version.unwrap_or_default(),
            Err(StoreError::NotFound(_)) => "(deleted)".into(),
            Err(_) => "unknown".into(),
        }
    }

    /// A conflict named with the version stored now; any other outcome as it is.
    async fn with_current_version<T>(
        &self,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match result {
            Err(StoreError::Conflict { key, expected, .. }) => {
                let current = self.current_version(&key).await;
                Err(StoreError::Conflict {
                    key,
                    expected,
                    current,
                })
            }
            other => other,
        }
    }

    fn resource_name(&self, kind: Kind) -> String {
        conversion::resource_name(kind, self.group.group)
    }

    fn to_dynamic(&self, resource: &Resource, name: &str) -> Result<DynamicObject, StoreError> {
        to_dynamic(conversion::to_custom_resource(
            resource,
            self.group.group,
            name,
        ))
    }

    fn resource_from(&self, kind: Kind, object: &DynamicObject) -> Result<Resource, StoreError> {
        let value = serde_json::to_value(object).map_err(|source| StoreError::InvalidData {
            location: format!(
                "{} `{}`",
                self.resource_name(kind),
                object.metadata.name.as_deref().unwrap_or("")
            ),
            source,
        })?;
        conversion::from_custom_resource(kind, &value, self.group.group)
    }

    /// How the cluster's release names default-tier policies under v1 (ClusterInformation
    /// `calicoVersion`; read at each policy create, since an upgrade changes it).
    async fn policy_naming(&self) -> PolicyNaming {
        let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
        let release = self.get(&key).await.ok().and_then(|information| {
            let text = information.spec.get("calicoVersion")?.as_str()?;
            Release::parse_with_precision(text)
                .ok()
                .map(|(release, _)| release)
        });
        PolicyNaming::of(release.as_ref())
    }

    /// Reads the custom resource of `key` under one of its names.
    async fn get_named(&self, key: &ResourceKey, name: &str) -> Result<Resource, StoreError> {
        let resource = self.resource_name(key.kind);
        let api = self.custom_api(key.kind, key.namespace.as_deref());
        let object = self
            .call(
                self.request("get", &resource, Some(key), None),
                api.get(name),
            )
            .await?;
        self.resource_from(key.kind, &object)
    }

    /// Every custom resource that holds `key`, with its name, in read order (two only for a
    /// default-tier policy caught mid-rename under v1).
    async fn locate(&self, key: &ResourceKey) -> Result<Vec<(String, Resource)>, StoreError> {
        let mut found = Vec::new();
        for name in names::read_order(key, self.group.group) {
            match self.get_named(key, &name).await {
                Ok(resource) => found.push((name, resource)),
                Err(StoreError::NotFound(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(found)
    }

    /// Deletes the custom resource `name` of `key`, conditional on the resourceVersion and UID of
    /// `current` (the resourceVersion `expected` when given).
    async fn delete_named(
        &self,
        key: &ResourceKey,
        name: &str,
        current: &Resource,
        expected: Option<&str>,
    ) -> Result<(), StoreError> {
        let resource = self.resource_name(key.kind);
        let api = self.custom_api(key.kind, key.namespace.as_deref());
        // The UID of a v1 custom resource is the resource's, converted (upstream `Delete`).
        let uid = current
            .metadata
            .uid
            .as_deref()
            .map(|uid| match self.group.group {
                CalicoApiGroup::CrdV1 => convert_uid(uid),
                CalicoApiGroup::V3 => uid.to_string(),
            });
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: Some(
                    expected
                        .map(str::to_string)
                        .or_else(|| current.metadata.resource_version.clone())
                        .unwrap_or_default(),
                ),
                uid,
            }),
            ..DeleteParams::default()
        };
        let result = self
            .call(
                self.request("delete", &resource, Some(key), expected),
                api.delete(name, &params),
            )
            .await;
        self.with_current_version(result.map(|_| ())).await
    }
}

fn to_dynamic(value: serde_json::Value) -> Result<DynamicObject, StoreError> {
    serde_json::from_value(value).map_err(|source| StoreError::InvalidData {
        location: "a custom resource built by netctl".into(),
        source,
    })
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

    fn ipam(&self) -> Option<&dyn crate::datastore::ipam::IpamStore> {
        Some(self)
    }

    fn request_timeout(&self) -> Duration {
        self.timeout
    }

    async fn check(&self) -> Result<(), StoreError> {
        let kind = Kind::ClusterInformation;
        let resource = self.resource_name(kind);
        let api = self.custom_api(kind, None);
        let params = ListParams::default().limit(1);
        self.call(
            self.request("list", &resource, None, None),
            api.list(&params),
        )
        .await
        .map(|_| ())
    }

    fn calico_api_group(&self) -> Option<CalicoApiGroup> {
        Some(self.group.group)
    }

    async fn get(&self, key: &ResourceKey) -> Result<Resource, StoreError> {
        match key.kind {
            Kind::Node => return derived::get_node(self, key).await,
            Kind::Profile => return derived::get_profile(self, key).await,
            Kind::WorkloadEndpoint => return workload::get(self, key).await,
            _ => {}
        }
        for name in names::read_order(key, self.group.group) {
            match self.get_named(key, &name).await {
                Err(StoreError::NotFound(_)) => continue,
                found => return found,
            }
        }
        Err(StoreError::NotFound(key.clone()))
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
        let resource = self.resource_name(options.kind);
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
            .map(|object| self.resource_from(options.kind, object))
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
        let name = match names::has_two_names(&key, self.group.group) {
            true => {
                // Either name taken means the policy exists (there is no transaction to make this
                // and the create one step; kube-controllers' rename is the only other writer).
                if !self.locate(&key).await?.is_empty() {
                    return Err(StoreError::AlreadyExists(key));
                }
                names::write_name(&key, self.group.group, self.policy_naming().await)
            }
            false => key.name.clone(),
        };
        let mut body = resource.clone();
        // The API server assigns UID, resourceVersion and creation time.
        body.metadata.resource_version = None;
        body.metadata.uid = None;
        let object = self.to_dynamic(&body, &name)?;
        let resource_name = self.resource_name(resource.kind);
        let api = self.custom_api(resource.kind, resource.metadata.namespace.as_deref());
        let created = self
            .call(
                self.request("create", &resource_name, Some(&key), None),
                api.create(&PostParams::default(), &object),
            )
            .await?;
        self.resource_from(resource.kind, &created)
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
        let expected = StoreError::expected_version(resource)?.to_string();
        // The custom resource it was read from: the one holding the expected version, else the
        // first found (whose version then refuses the update as a conflict).
        let name = match names::has_two_names(&key, self.group.group) {
            true => {
                let found = self.locate(&key).await?;
                found
                    .iter()
                    .find(|(_, stored)| {
                        stored.metadata.resource_version.as_deref() == Some(expected.as_str())
                    })
                    .or(found.first())
                    .map(|(name, _)| name.clone())
                    .ok_or_else(|| StoreError::NotFound(key.clone()))?
            }
            false => key.name.clone(),
        };
        let object = self.to_dynamic(resource, &name)?;
        let resource_name = self.resource_name(resource.kind);
        let api = self.custom_api(resource.kind, resource.metadata.namespace.as_deref());
        let result = self
            .call(
                self.request("update", &resource_name, Some(&key), Some(&expected)),
                api.replace(&name, &PostParams::default(), &object),
            )
            .await;
        let updated = self.with_current_version(result).await?;
        self.resource_from(resource.kind, &updated)
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
        let found = self.locate(key).await?;
        let chosen = match resource_version {
            Some(expected) => found
                .iter()
                .position(|(_, stored)| {
                    stored.metadata.resource_version.as_deref() == Some(expected)
                })
                .unwrap_or(0),
            None => 0,
        };
        let Some((name, current)) = found.get(chosen) else {
            return Err(StoreError::NotFound(key.clone()));
        };
        self.delete_named(key, name, current, resource_version)
            .await?;
        // A second custom resource of the same policy (mid-rename) goes too, so the policy is
        // gone under both names.
        for (index, (name, other)) in found.iter().enumerate() {
            if index == chosen {
                continue;
            }
            match self.delete_named(key, name, other, None).await {
                Ok(()) | Err(StoreError::NotFound(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(current.clone())
    }
}
