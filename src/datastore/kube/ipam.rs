//! [`IpamStore`] for the Kubernetes datastore: the IPAM custom resources read with the API's
//! `limit`/`continue` paging, written with the `resourceVersion` read (a PUT the API server
//! refuses with 409 when someone wrote since), and deleted as upstream deletes them: first marked
//! `deleted` with a guarded update (the API has no compare-and-delete on content), then deleted
//! with resourceVersion and UID preconditions. A stored object already marked deleted is treated
//! as gone, as upstream's clients treat it.

use async_trait::async_trait;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

use super::KubeStore;
use super::errors;
use super::ipam_encoding::{self as encoding, ApiGroup, IpamType};
use crate::datastore::StoreError;
use crate::datastore::ipam::{Damaged, IpamError, IpamPage, IpamStore};
use crate::ipam::{
    AllocationBlock, BlockAffinity, BlockEncoding, Cidr, IpamConfig, IpamHandle, Stored,
};

/// Objects in one page of a listing.
const PAGE: u32 = 500;

/// What a request was, for errors.
struct Target<'a> {
    ipam_type: IpamType,
    name: Option<&'a str>,
}

impl KubeStore {
    fn ipam_resource(&self, ipam_type: IpamType) -> ApiResource {
        let group = self.ipam_group();
        let (kind, plural) = group.names(ipam_type);
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group.group(), group.version(), kind),
            plural,
        )
    }

    fn ipam_api(&self, ipam_type: IpamType) -> Api<DynamicObject> {
        Api::all_with(self.api.client.clone(), &self.ipam_resource(ipam_type))
    }

    fn location(&self, ipam_type: IpamType, name: &str) -> String {
        let (_, plural) = self.ipam_group().names(ipam_type);
        format!("{plural}.{}/{name}", self.ipam_group().group())
    }

    /// Runs one request within the time limit; API refusals become [`IpamError`]s.
    async fn ipam_call<T>(
        &self,
        target: Target<'_>,
        verb: &str,
        future: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, IpamError> {
        let what = match target.name {
            Some(name) => format!("`{}`", self.location(target.ipam_type, name)),
            None => {
                let (_, plural) = self.ipam_group().names(target.ipam_type);
                format!("`{plural}.{}`", self.ipam_group().group())
            }
        };
        let result = match tokio::time::timeout(self.timeout, future).await {
            Ok(result) => result,
            Err(_) => {
                return Err(IpamError::Store(StoreError::TimedOut(Box::new(
                    errors::KubeError::TimedOut {
                        server: self.api.server.clone(),
                        seconds: self.timeout.as_secs(),
                    },
                ))));
            }
        };
        result.map_err(|error| match &error {
            kube::Error::Api(status) if status.code == 404 && target.name.is_some() => {
                let names_it = status
                    .details
                    .as_ref()
                    .is_some_and(|details| !details.name.is_empty());
                match names_it {
                    true => IpamError::NotFound { what },
                    false => IpamError::Store(self.not_installed(target.ipam_type)),
                }
            }
            kube::Error::Api(status) if status.code == 409 && status.reason == "AlreadyExists" => {
                IpamError::AlreadyExists { what }
            }
            kube::Error::Api(status) if status.code == 409 => IpamError::Conflict { what },
            _ => {
                let (_, plural) = self.ipam_group().names(target.ipam_type);
                let resource = format!("{plural}.{}", self.ipam_group().group());
                IpamError::Store(errors::classify(
                    error,
                    &errors::Request {
                        server: &self.api.server,
                        verb,
                        resource: &resource,
                        key: None,
                        expected: None,
                        timeout: self.timeout,
                    },
                ))
            }
        })
    }

    fn not_installed(&self, ipam_type: IpamType) -> StoreError {
        let (_, plural) = self.ipam_group().names(ipam_type);
        StoreError::Misconfigured(Box::new(errors::KubeError::NotInstalled {
            server: self.api.server.clone(),
            resource: format!("{plural}.{}", self.ipam_group().group()),
        }))
    }

    async fn list_objects(
        &self,
        ipam_type: IpamType,
        token: Option<&str>,
    ) -> Result<(Vec<Value>, Option<String>), StoreError> {
        let mut params = ListParams::default().limit(PAGE);
        if let Some(token) = token {
            params = params.continue_token(token);
        }
        let api = self.ipam_api(ipam_type);
        let target = Target {
            ipam_type,
            name: None,
        };
        let list = self
            .ipam_call(target, "list", api.list(&params))
            .await
            .map_err(|error| match error {
                IpamError::Store(error) => error,
                other => StoreError::failed("a list of IPAM objects", other),
            })?;
        let next = list.metadata.continue_.filter(|token| !token.is_empty());
        let objects = list
            .items
            .iter()
            .map(|object| serde_json::to_value(object).unwrap_or(Value::Null))
            .collect();
        Ok((objects, next))
    }

    async fn get_object(
        &self,
        ipam_type: IpamType,
        name: &str,
    ) -> Result<Option<Value>, IpamError> {
        let api = self.ipam_api(ipam_type);
        let target = Target {
            ipam_type,
            name: Some(name),
        };
        match self.ipam_call(target, "get", api.get(name)).await {
            Ok(object) => Ok(Some(serde_json::to_value(&object).unwrap_or(Value::Null))),
            Err(IpamError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    async fn write_object(
        &self,
        ipam_type: IpamType,
        name: &str,
        object: Value,
        create: bool,
    ) -> Result<Value, IpamError> {
        let api = self.ipam_api(ipam_type);
        let dynamic: DynamicObject =
            serde_json::from_value(object).map_err(|error| IpamError::Damaged {
                what: format!("`{}`", self.location(ipam_type, name)),
                reason: format!("netctl built an object the client cannot send: {error}"),
            })?;
        let target = Target {
            ipam_type,
            name: Some(name),
        };
        let params = PostParams::default();
        let written = match create {
            true => {
                self.ipam_call(target, "create", api.create(&params, &dynamic))
                    .await?
            }
            false => {
                self.ipam_call(target, "update", api.replace(name, &params, &dynamic))
                    .await?
            }
        };
        Ok(serde_json::to_value(&written).unwrap_or(Value::Null))
    }

    /// Marks an object deleted with a guarded update, then deletes it on the revision that update
    /// wrote and the object's UID (upstream's `DeleteKVP`).
    async fn delete_marked(
        &self,
        ipam_type: IpamType,
        name: &str,
        marked: Value,
        client_uid: Option<&str>,
    ) -> Result<(), IpamError> {
        let written = self.write_object(ipam_type, name, marked, false).await?;
        let identity = encoding::identity(self.ipam_group(), &written);
        let uid = client_uid
            .map(|uid| self.ipam_group().object_uid(uid))
            .or_else(|| written["metadata"]["uid"].as_str().map(str::to_string));
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: Some(identity.revision),
                uid,
            }),
            ..DeleteParams::default()
        };
        let api = self.ipam_api(ipam_type);
        let target = Target {
            ipam_type,
            name: Some(name),
        };
        self.ipam_call(target, "delete", api.delete(name, &params))
            .await
            .map(|_| ())
    }

    fn stored<T>(&self, object: &Value, decoded: Result<T, String>) -> Result<Stored<T>, Damaged> {
        let identity = encoding::identity(self.ipam_group(), object);
        match decoded {
            Ok(value) => Ok(Stored::new(value, identity.revision, identity.uid)),
            Err(reason) => Err(Damaged {
                key: identity.name,
                reason,
            }),
        }
    }

    fn page<T>(
        &self,
        ipam_type: IpamType,
        objects: Vec<Value>,
        next: Option<String>,
        decode: impl Fn(&Value) -> Result<T, String>,
        deleted: impl Fn(&T) -> bool,
    ) -> IpamPage<T> {
        let items = objects
            .iter()
            .map(|object| {
                self.stored(object, decode(object)).map_err(|mut damaged| {
                    damaged.key = self.location(ipam_type, &damaged.key);
                    damaged
                })
            })
            // Marked deleted: on its way out, as upstream's clients see it.
            .filter(|item| !matches!(item, Ok(stored) if deleted(&stored.value)))
            .collect();
        IpamPage {
            items,
            continue_token: next,
        }
    }

    fn damaged(&self, ipam_type: IpamType, name: &str, reason: String) -> IpamError {
        IpamError::Damaged {
            what: format!("`{}`", self.location(ipam_type, name)),
            reason,
        }
    }
}

fn block_cidr(block: &AllocationBlock) -> Result<Cidr, IpamError> {
    block.cidr.ok_or_else(|| IpamError::Damaged {
        what: "a block".to_string(),
        reason: "it has no `cidr`".to_string(),
    })
}

#[async_trait]
impl IpamStore for KubeStore {
    fn block_location(&self, cidr: &Cidr) -> String {
        self.location(IpamType::Block, &encoding::block_name(cidr))
    }

    fn handle_location(&self, id: &str) -> String {
        self.location(IpamType::Handle, &encoding::handle_name(id))
    }

    fn config_location(&self) -> String {
        self.location(IpamType::Config, encoding::CONFIG_NAME)
    }

    async fn block_page(
        &self,
        token: Option<&str>,
    ) -> Result<IpamPage<AllocationBlock>, StoreError> {
        let (objects, next) = self.list_objects(IpamType::Block, token).await?;
        Ok(self.page(
            IpamType::Block,
            objects,
            next,
            encoding::decode_block,
            |block| block.deleted,
        ))
    }

    async fn handle_page(&self, token: Option<&str>) -> Result<IpamPage<IpamHandle>, StoreError> {
        let (objects, next) = self.list_objects(IpamType::Handle, token).await?;
        Ok(self.page(
            IpamType::Handle,
            objects,
            next,
            encoding::decode_handle,
            |handle| handle.deleted,
        ))
    }

    async fn affinity_page(
        &self,
        token: Option<&str>,
    ) -> Result<IpamPage<BlockAffinity>, StoreError> {
        let (objects, next) = self.list_objects(IpamType::Affinity, token).await?;
        let group = self.ipam_group();
        Ok(self.page(
            IpamType::Affinity,
            objects,
            next,
            |object| encoding::decode_affinity(group, object),
            |affinity| affinity.deleted,
        ))
    }

    async fn get_block(&self, cidr: &Cidr) -> Result<Option<Stored<AllocationBlock>>, IpamError> {
        let name = encoding::block_name(cidr);
        let Some(object) = self.get_object(IpamType::Block, &name).await? else {
            return Ok(None);
        };
        let stored = self
            .stored(&object, encoding::decode_block(&object))
            .map_err(|damaged| self.damaged(IpamType::Block, &name, damaged.reason))?;
        Ok(Some(stored).filter(|stored| !stored.value.deleted))
    }

    async fn update_block(
        &self,
        block: &Stored<AllocationBlock>,
        _: BlockEncoding,
    ) -> Result<Stored<AllocationBlock>, IpamError> {
        let cidr = block_cidr(&block.value)?;
        let object = encoding::encode_block(
            self.ipam_group(),
            &block.value,
            &cidr,
            Some(&block.revision),
        );
        let written = self
            .write_object(IpamType::Block, &encoding::block_name(&cidr), object, false)
            .await?;
        let identity = encoding::identity(self.ipam_group(), &written);
        Ok(Stored::new(
            block.value.clone(),
            identity.revision,
            identity.uid,
        ))
    }

    async fn delete_block(&self, block: &Stored<AllocationBlock>) -> Result<(), IpamError> {
        let cidr = block_cidr(&block.value)?;
        let mut marked = block.value.clone();
        marked.deleted = true;
        let object =
            encoding::encode_block(self.ipam_group(), &marked, &cidr, Some(&block.revision));
        self.delete_marked(
            IpamType::Block,
            &encoding::block_name(&cidr),
            object,
            block.uid.as_deref(),
        )
        .await
    }

    async fn create_block(
        &self,
        block: &AllocationBlock,
        _: BlockEncoding,
    ) -> Result<Stored<AllocationBlock>, IpamError> {
        let cidr = block_cidr(block)?;
        let object = encoding::encode_block(self.ipam_group(), block, &cidr, None);
        let written = self
            .write_object(IpamType::Block, &encoding::block_name(&cidr), object, true)
            .await?;
        let identity = encoding::identity(self.ipam_group(), &written);
        Ok(Stored::new(block.clone(), identity.revision, identity.uid))
    }

    async fn get_handle(&self, id: &str) -> Result<Option<Stored<IpamHandle>>, IpamError> {
        let name = encoding::handle_name(id);
        let Some(object) = self.get_object(IpamType::Handle, &name).await? else {
            return Ok(None);
        };
        let stored = self
            .stored(&object, encoding::decode_handle(&object))
            .map_err(|damaged| self.damaged(IpamType::Handle, &name, damaged.reason))?;
        Ok(Some(stored).filter(|stored| !stored.value.deleted))
    }

    async fn update_handle(
        &self,
        handle: &Stored<IpamHandle>,
    ) -> Result<Stored<IpamHandle>, IpamError> {
        let object =
            encoding::encode_handle(self.ipam_group(), &handle.value, Some(&handle.revision));
        let written = self
            .write_object(
                IpamType::Handle,
                &encoding::handle_name(&handle.value.id),
                object,
                false,
            )
            .await?;
        let identity = encoding::identity(self.ipam_group(), &written);
        Ok(Stored::new(
            handle.value.clone(),
            identity.revision,
            identity.uid,
        ))
    }

    async fn delete_handle(&self, handle: &Stored<IpamHandle>) -> Result<(), IpamError> {
        let mut marked = handle.value.clone();
        marked.deleted = true;
        let object = encoding::encode_handle(self.ipam_group(), &marked, Some(&handle.revision));
        self.delete_marked(
            IpamType::Handle,
            &encoding::handle_name(&handle.value.id),
            object,
            handle.uid.as_deref(),
        )
        .await
    }

    async fn create_handle(&self, handle: &IpamHandle) -> Result<Stored<IpamHandle>, IpamError> {
        let object = encoding::encode_handle(self.ipam_group(), handle, None);
        let written = self
            .write_object(
                IpamType::Handle,
                &encoding::handle_name(&handle.id),
                object,
                true,
            )
            .await?;
        let identity = encoding::identity(self.ipam_group(), &written);
        Ok(Stored::new(handle.clone(), identity.revision, identity.uid))
    }

    async fn create_affinity(
        &self,
        affinity: &BlockAffinity,
    ) -> Result<Stored<BlockAffinity>, IpamError> {
        let object = encoding::encode_affinity(self.ipam_group(), affinity, true, None);
        let name = encoding::affinity_name(&affinity.node, &affinity.cidr);
        let written = self
            .write_object(IpamType::Affinity, &name, object, true)
            .await?;
        let identity = encoding::identity(self.ipam_group(), &written);
        Ok(Stored::new(
            affinity.clone(),
            identity.revision,
            identity.uid,
        ))
    }

    async fn get_config(&self) -> Result<Option<Stored<IpamConfig>>, IpamError> {
        let Some(object) = self
            .get_object(IpamType::Config, encoding::CONFIG_NAME)
            .await?
        else {
            return Ok(None);
        };
        self.stored(&object, encoding::decode_config(&object))
            .map(Some)
            .map_err(|damaged| {
                self.damaged(IpamType::Config, encoding::CONFIG_NAME, damaged.reason)
            })
    }

    async fn put_config(
        &self,
        config: &IpamConfig,
        expected: Option<&str>,
    ) -> Result<Stored<IpamConfig>, IpamError> {
        let object = encoding::encode_config(self.ipam_group(), config, expected);
        let written = self
            .write_object(
                IpamType::Config,
                encoding::CONFIG_NAME,
                object,
                expected.is_none(),
            )
            .await?;
        let identity = encoding::identity(self.ipam_group(), &written);
        Ok(Stored::new(config.clone(), identity.revision, identity.uid))
    }
}

/// The API group the IPAM objects of a store are read from and written to.
impl KubeStore {
    /// Uses the IPAM objects of `group`, with the Calico resources in the same group (the group is
    /// otherwise chosen at connection: `datastore/kube/api_group.rs`).
    pub fn with_ipam_group(mut self, group: ApiGroup) -> KubeStore {
        self.group = super::api_group::GroupChoice::fixed(match group {
            ApiGroup::CrdV1 => crate::config::CalicoApiGroup::CrdV1,
            ApiGroup::ProjectcalicoV3 => crate::config::CalicoApiGroup::V3,
        });
        self
    }
}
