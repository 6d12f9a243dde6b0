//! The IPAM consistency check over a datastore (upstream's `calicoctl/calicoctl/commands/ipam/check.go`):
//! every block, IP pool, node tunnel address, Calico-managed LoadBalancer Service address,
//! workload endpoint and handle, streamed page by page into [`crate::ipam::check::Checker`], which
//! keeps the findings. `netctl ipam check` prints the lines it writes and the report; the upgrade
//! verification (`exec/actions/verify/`) keeps only the findings, to compare with its baseline.
//!
//! Upstream needs a Kubernetes client even on etcd (from v3.30) and KubeControllersConfiguration
//! `default`, and fails without them. This checks what it can without them and tells the checker
//! exactly what it could not check and why. It also counts a node's IPv6 VXLAN and WireGuard tunnel
//! addresses as in use; upstream counts only the IPv4 ones.

use std::collections::BTreeMap;
use std::io::{self, Write};

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::ipam::{IpamStore, for_each_block, for_each_handle};
use super::{Datastore, Detail, ListOptions, StoreError, for_each};
use crate::ipam::Cidr;
use crate::ipam::check::{Checker, ClusterIdentity, HandleIdentity};
use crate::resource::{Kind, ResourceKey};

/// Why the check could not finish.
#[derive(Debug, thiserror::Error)]
pub enum IpamCheckError {
    #[error("cannot read {what}")]
    Read {
        what: &'static str,
        #[source]
        source: StoreError,
    },
    #[error("cannot read the IPAM data")]
    Store(#[from] StoreError),
    #[error("cannot write the check's output")]
    Output(#[from] io::Error),
}

impl crate::errors::Hint for IpamCheckError {
    fn hint(&self) -> Option<String> {
        match self {
            IpamCheckError::Read { source, .. } | IpamCheckError::Store(source) => source.hint(),
            IpamCheckError::Output(_) => None,
        }
    }
}

/// Runs the check: upstream's progress lines go to `out`, the findings into `checker`. `services`
/// gives the cluster whose LoadBalancer Services to read (asked only when KubeControllersConfiguration
/// has the LoadBalancer controller): `Ok(None)` when there is none, `Err` with why it could not be
/// had; either way the check goes on and says what it did not check.
pub async fn scan(
    store: &dyn Datastore,
    ipam: &dyn IpamStore,
    services: impl AsyncFnOnce() -> Result<Option<kube::Client>, String>,
    checker: &mut Checker,
    out: &mut dyn Write,
) -> Result<ClusterIdentity, IpamCheckError> {
    let cluster = cluster_identity(store, checker).await?;

    writeln!(out, "Loading all IPAM blocks...")?;
    // The count comes first in upstream's output: the block lines wait in a buffer.
    let mut block_lines: Vec<u8> = Vec::new();
    for_each_block(ipam, |block| {
        match block {
            Ok(stored) => {
                let key = stored
                    .value
                    .cidr
                    .map_or_else(String::new, |cidr| ipam.block_location(&cidr));
                checker.add_block(&key, &stored.value, &mut block_lines)?;
            }
            Err(damaged) => checker.add_unreadable_block(&damaged.key, damaged.reason),
        }
        Ok::<(), IpamCheckError>(())
    })
    .await?;
    writeln!(out, "Found {} IPAM blocks.", checker.block_count())?;
    out.write_all(&block_lines)?;
    drop(block_lines);
    writeln!(
        out,
        "IPAM blocks record {} allocations.\n",
        checker.allocation_count()
    )?;

    writeln!(out, "Loading all IPAM pools...")?;
    let (pools, skipped) = read_pools(store).await?;
    for problem in skipped {
        checker.not_checked(problem);
    }
    for pool in pools.iter().filter(|pool| !pool.disabled) {
        writeln!(out, "  {}", pool.cidr)?;
        checker.add_active_pool(pool.cidr);
    }
    writeln!(
        out,
        "Found {} active IP pools.\n",
        checker.active_pool_count()
    )?;

    writeln!(out, "Loading all nodes.")?;
    let tunnel_fields = vec![
        "ipv4VXLANTunnelAddr",
        "ipv6VXLANTunnelAddr",
        "wireguard",
        "bgp",
    ];
    let options = ListOptions::new(Kind::Node).with_detail(Detail::Summary {
        spec_fields: tunnel_fields,
        labels: false,
    });
    let mut node_addresses = 0;
    for_each(store, &options, |node| {
        let owner = format!("Node({})", node.metadata.name);
        let spec = &node.spec;
        for (field, text) in [
            ("ipv4VXLANTunnelAddr", &spec["ipv4VXLANTunnelAddr"]),
            (
                "wireguard.interfaceIPv4Address",
                &spec["wireguard"]["interfaceIPv4Address"],
            ),
            ("bgp.ipv4IPIPTunnelAddr", &spec["bgp"]["ipv4IPIPTunnelAddr"]),
            ("ipv6VXLANTunnelAddr", &spec["ipv6VXLANTunnelAddr"]),
            (
                "wireguard.interfaceIPv6Address",
                &spec["wireguard"]["interfaceIPv6Address"],
            ),
        ] {
            let Some(text) = text.as_str().filter(|text| !text.is_empty()) else {
                continue;
            };
            match Cidr::address_of(text) {
                Ok(address) => {
                    checker.add_in_use(address, &owner, out)?;
                    node_addresses += 1;
                }
                Err(_) => checker.not_checked(format!(
                    "node `{}` has `{field}` `{text}`, which is not an address",
                    node.metadata.name
                )),
            }
        }
        Ok::<(), IpamCheckError>(())
    })
    .await?;
    writeln!(out, "Found {node_addresses} node tunnel IPs.\n")?;

    writeln!(out, "Loading all service load balancer IPs.")?;
    load_balancers(store, services, checker, out).await?;
    writeln!(out)?;

    writeln!(out, "Loading all workload endpoints.")?;
    let options = ListOptions::new(Kind::WorkloadEndpoint).with_detail(Detail::Summary {
        spec_fields: vec!["ipNetworks"],
        labels: false,
    });
    let mut workload_addresses = 0;
    for_each(store, &options, |endpoint| {
        let owner = format!(
            "Workload({}/{})",
            endpoint.metadata.namespace.as_deref().unwrap_or_default(),
            endpoint.metadata.name
        );
        for network in endpoint.spec["ipNetworks"].as_array().into_iter().flatten() {
            let text = network.as_str().unwrap_or_default();
            match Cidr::address_of(text) {
                Ok(address) => {
                    checker.add_in_use(address, &owner, out)?;
                    workload_addresses += 1;
                }
                Err(_) => checker.not_checked(format!(
                    "workload endpoint `{owner}` has `{text}` in `ipNetworks`, which is not an address"
                )),
            }
        }
        Ok::<(), IpamCheckError>(())
    })
    .await?;
    writeln!(out, "Found {workload_addresses} workload IPs.")?;
    writeln!(
        out,
        "Workloads and nodes are using {} IPs.\n",
        checker.in_use_count()
    )?;

    writeln!(out, "Loading all handles")?;
    for_each_handle(ipam, |handle| {
        match handle {
            Ok(stored) => {
                let identity = HandleIdentity {
                    uid: stored.uid.clone(),
                    revision: stored.revision.clone(),
                };
                checker.add_handle(&stored.value.id, identity, &stored.value.blocks);
            }
            Err(damaged) => checker.not_checked(format!(
                "handle `{}` could not be read: {}",
                damaged.key, damaged.reason
            )),
        }
        Ok::<(), IpamCheckError>(())
    })
    .await?;

    Ok(cluster)
}

/// One IP pool as the IPAM commands need it.
#[derive(Debug, Clone)]
pub struct Pool {
    pub name: String,
    pub cidr: Cidr,
    /// The pool's `blockSize`, else upstream's default for its IP version (26 / 122).
    pub block_size: u8,
    pub disabled: bool,
}

/// Every pool whose CIDR parses, in list order (a cluster has a handful); the others are named
/// in `skipped`.
pub async fn read_pools(store: &dyn Datastore) -> Result<(Vec<Pool>, Vec<String>), StoreError> {
    let mut pools = Vec::new();
    let mut skipped = Vec::new();
    for_each(store, &ListOptions::new(Kind::IpPool), |pool| {
        let text = pool.spec["cidr"].as_str().unwrap_or_default();
        match Cidr::parse(text) {
            Ok(cidr) => {
                let default = match cidr.version() {
                    crate::ipam::IpVersion::V4 => 26,
                    crate::ipam::IpVersion::V6 => 122,
                };
                let block_size = pool.spec["blockSize"]
                    .as_u64()
                    .and_then(|size| u8::try_from(size).ok())
                    .unwrap_or(default);
                pools.push(Pool {
                    name: pool.metadata.name,
                    cidr,
                    block_size,
                    disabled: pool.spec["disabled"].as_bool().unwrap_or(false),
                });
            }
            Err(_) => skipped.push(format!(
                "IP pool `{}` has no valid CIDR (`{text}`)",
                pool.metadata.name
            )),
        }
        Ok::<(), StoreError>(())
    })
    .await?;
    Ok((pools, skipped))
}

/// ClusterInformation `default`: the GUID, revision, type and lock state the report carries.
async fn cluster_identity(
    store: &dyn Datastore,
    checker: &mut Checker,
) -> Result<ClusterIdentity, IpamCheckError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    match store.get(&key).await {
        Ok(information) => {
            let text = |field: &str| {
                information.spec[field]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            };
            Ok(ClusterIdentity {
                guid: text("clusterGUID"),
                revision: information
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default(),
                cluster_type: text("clusterType"),
                locked: information.spec["datastoreReady"] == Value::Bool(false),
            })
        }
        Err(StoreError::NotFound(_)) => {
            checker.not_checked(
                "ClusterInformation `default` does not exist: the report names no cluster, and no release can be made from it".to_string(),
            );
            Ok(ClusterIdentity::default())
        }
        Err(source) => Err(IpamCheckError::Read {
            what: "ClusterInformation `default`",
            source,
        }),
    }
}

/// The addresses of LoadBalancer Services that kube-controllers' LoadBalancer controller assigns.
async fn load_balancers(
    store: &dyn Datastore,
    services: impl AsyncFnOnce() -> Result<Option<kube::Client>, String>,
    checker: &mut Checker,
    out: &mut dyn Write,
) -> Result<(), IpamCheckError> {
    let key = ResourceKey::new(Kind::KubeControllersConfiguration, None, "default");
    let assign = match store.get(&key).await {
        Ok(configuration) => configuration.spec["controllers"]["loadBalancer"].clone(),
        Err(StoreError::NotFound(_)) => {
            checker.not_checked(
                "LoadBalancer Service addresses: KubeControllersConfiguration `default` does not exist".to_string(),
            );
            return Ok(());
        }
        Err(source) => {
            return Err(IpamCheckError::Read {
                what: "KubeControllersConfiguration `default`",
                source,
            });
        }
    };
    if assign.is_null() {
        writeln!(
            out,
            "No configuration for LoadBalancer kubecontroller found, skipping service check"
        )?;
        return Ok(());
    }
    let assign_ips = assign["assignIPs"]
        .as_str()
        .unwrap_or("AllServices")
        .to_string();
    let client = match services().await {
        Ok(Some(client)) => client,
        Ok(None) => {
            checker.not_checked(
                "LoadBalancer Service addresses: no Kubernetes cluster is configured for the etcd datastore (pass --kubeconfig or set KUBECONFIG)".to_string(),
            );
            return Ok(());
        }
        Err(error) => {
            checker.not_checked(format!("LoadBalancer Service addresses: {error}"));
            return Ok(());
        }
    };
    let api: Api<Service> = Api::all(client);
    let mut params = ListParams::default().limit(500);
    let mut managed = 0;
    loop {
        let list = match api.list(&params).await {
            Ok(list) => list,
            Err(error) => {
                checker.not_checked(format!(
                    "LoadBalancer Service addresses: the Services could not be listed: {error}"
                ));
                return Ok(());
            }
        };
        for service in &list.items {
            if !calico_managed(service, &assign_ips) {
                continue;
            }
            managed += 1;
            let name = service.metadata.name.clone().unwrap_or_default();
            let ingress = service
                .status
                .as_ref()
                .and_then(|status| status.load_balancer.as_ref())
                .and_then(|balancer| balancer.ingress.as_ref());
            for entry in ingress.into_iter().flatten() {
                if let Some(address) = entry.ip.as_deref().and_then(|ip| ip.parse().ok()) {
                    checker.add_in_use(address, &name, out)?;
                }
            }
        }
        match list.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    writeln!(out, "Found {managed} service load balancer(s).")?;
    Ok(())
}

/// Upstream's `IsCalicoManagedLoadBalancer` (kube-controllers' LoadBalancer controller).
fn calico_managed(service: &Service, assign_ips: &str) -> bool {
    let Some(spec) = &service.spec else {
        return false;
    };
    if spec.type_.as_deref() != Some("LoadBalancer") {
        return false;
    }
    let class = spec.load_balancer_class.as_deref();
    if assign_ips == "AllServices" {
        return class.is_none_or(|class| class == "calico");
    }
    if class == Some("calico") {
        return true;
    }
    let annotations: BTreeMap<String, String> =
        service.metadata.annotations.clone().unwrap_or_default();
    let requested = [
        "projectcalico.org/ipv4pools",
        "projectcalico.org/ipv6pools",
        "projectcalico.org/loadBalancerIPs",
    ]
    .iter()
    .any(|key| annotations.get(*key).is_some_and(|value| !value.is_empty()));
    requested && class.is_none()
}
