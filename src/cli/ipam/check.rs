//! `netctl ipam check`: upstream's consistency check (`calicoctl/calicoctl/commands/ipam/check.go`)
//! with its output lines and report file, streaming every list so memory stays flat at 100,000
//! allocations and endpoints.
//!
//! Upstream needs a Kubernetes client even on etcd (from v3.30: `--kubeconfig` or `KUBECONFIG`) and
//! KubeControllersConfiguration `default`, and fails without them. netctl checks what it can without
//! them and says exactly what it could not check and why (in the output and in the report). It also
//! counts a node's IPv6 VXLAN and WireGuard tunnel addresses as in use; upstream counts only the IPv4
//! ones, so it reports a live IPv6 tunnel address as leaked.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::ExitCode;

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::pools::read_pools;
use super::{Context, ipam_of};
use crate::datastore::ipam::{for_each_block, for_each_handle};
use crate::datastore::{Datastore, Detail, ListOptions, StoreError, for_each};
use crate::ipam::Cidr;
use crate::ipam::check::{Checker, ClusterIdentity, Detail as CheckDetail, HandleIdentity};
use crate::resource::{Kind, ResourceKey};

pub const EXAMPLES: &str = "\
Examples:
  netctl ipam check
  netctl ipam check --show-problem-ips
  netctl ipam check --show-all-ips -o report.json
  netctl ipam check --exit-code || echo 'IPAM has problems'
The report file (-o) has upstream's JSON shape: `calicoctl ipam release --from-report` reads it
(with --force: the versions differ) and `netctl ipam release --from-report` reads upstream's.
Make the report while the datastore is locked (`netctl datastore migrate lock`) to release from it.
Beyond upstream, a node's IPv6 VXLAN and WireGuard tunnel addresses count as in use (upstream counts
only IPv4 ones and so reports a live IPv6 tunnel address as leaked). Without a Kubernetes cluster
(etcd without --kubeconfig) or KubeControllersConfiguration `default`, LoadBalancer Service addresses
are not checked, and the check says so.";

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Print every address checked
    #[arg(long)]
    show_all_ips: bool,
    /// Print every address that is leaked or not allocated properly
    #[arg(long)]
    show_problem_ips: bool,
    /// Write the report (upstream's JSON shape) to this file
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Exit with status 1 when problems are found (upstream always exits 0)
    #[arg(long)]
    exit_code: bool,
    /// Kubeconfig of the cluster whose LoadBalancer Services to check (etcd datastore; else the
    /// configuration's cluster, if any)
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
}

pub async fn run(context: &Context, args: CheckArgs) -> anyhow::Result<ExitCode> {
    let detail = match (args.show_all_ips, args.show_problem_ips) {
        (true, _) => CheckDetail::All,
        (false, true) => CheckDetail::Problems,
        (false, false) => CheckDetail::Counts,
    };
    let store = context.datastore().await?;
    let ipam = ipam_of(store.as_ref())?;
    let mut out = context.printer.stdout();
    let mut checker = Checker::new(detail);
    writeln!(out, "Checking IPAM for inconsistencies...\n")?;

    let cluster = cluster_identity(store.as_ref(), &mut checker).await?;

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
        Ok::<(), anyhow::Error>(())
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
    let (pools, skipped) = read_pools(store.as_ref()).await?;
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
    for_each(store.as_ref(), &options, |node| {
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
                    checker.add_in_use(address, &owner, &mut out)?;
                    node_addresses += 1;
                }
                Err(_) => checker.not_checked(format!(
                    "node `{}` has `{field}` `{text}`, which is not an address",
                    node.metadata.name
                )),
            }
        }
        Ok::<(), anyhow::Error>(())
    })
    .await?;
    writeln!(out, "Found {node_addresses} node tunnel IPs.\n")?;

    writeln!(out, "Loading all service load balancer IPs.")?;
    load_balancers(
        context,
        store.as_ref(),
        args.kubeconfig,
        &mut checker,
        &mut out,
    )
    .await?;
    writeln!(out)?;

    writeln!(out, "Loading all workload endpoints.")?;
    let options = ListOptions::new(Kind::WorkloadEndpoint).with_detail(Detail::Summary {
        spec_fields: vec!["ipNetworks"],
        labels: false,
    });
    let mut workload_addresses = 0;
    for_each(store.as_ref(), &options, |endpoint| {
        let owner = format!(
            "Workload({}/{})",
            endpoint.metadata.namespace.as_deref().unwrap_or_default(),
            endpoint.metadata.name
        );
        for network in endpoint.spec["ipNetworks"].as_array().into_iter().flatten() {
            let text = network.as_str().unwrap_or_default();
            match Cidr::address_of(text) {
                Ok(address) => {
                    checker.add_in_use(address, &owner, &mut out)?;
                    workload_addresses += 1;
                }
                Err(_) => checker.not_checked(format!(
                    "workload endpoint `{owner}` has `{text}` in `ipNetworks`, which is not an address"
                )),
            }
        }
        Ok::<(), anyhow::Error>(())
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
        Ok::<(), anyhow::Error>(())
    })
    .await?;

    let findings = checker.finish(&mut out)?;
    out.flush()?;
    if let Some(path) = &args.output {
        let report = checker.report(&cluster, &findings);
        write_report(path, &report.to_json())?;
        context
            .printer
            .say(format!("Report written to `{}`.", path.display()));
        if !cluster.locked {
            context.printer.say(
                "The datastore is not locked: a release from this report will need `--force`, and is safest made from a report taken while locked (`netctl datastore migrate lock`).",
            );
        }
    }
    Ok(match (args.exit_code, findings.problems()) {
        (true, problems) if problems > 0 => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// The report names allocations, pods and namespaces: owner-only (upstream writes it world-writable).
fn write_report(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write the report `{}`", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .with_context(|| format!("cannot write the report `{}`", path.display()))
}

/// ClusterInformation `default`: the GUID, revision, type and lock state the report carries.
async fn cluster_identity(
    store: &dyn Datastore,
    checker: &mut Checker,
) -> anyhow::Result<ClusterIdentity> {
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
        Err(error) => {
            Err(anyhow::Error::new(error).context("cannot read ClusterInformation `default`"))
        }
    }
}

/// The addresses of LoadBalancer Services that kube-controllers' LoadBalancer controller assigns.
async fn load_balancers(
    context: &Context,
    store: &dyn Datastore,
    kubeconfig: Option<PathBuf>,
    checker: &mut Checker,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let key = ResourceKey::new(Kind::KubeControllersConfiguration, None, "default");
    let assign = match store.get(&key).await {
        Ok(configuration) => configuration.spec["controllers"]["loadBalancer"].clone(),
        Err(StoreError::NotFound(_)) => {
            checker.not_checked(
                "LoadBalancer Service addresses: KubeControllersConfiguration `default` does not exist".to_string(),
            );
            return Ok(());
        }
        Err(error) => {
            return Err(anyhow::Error::new(error)
                .context("cannot read KubeControllersConfiguration `default`"));
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
    let client = match kubernetes_client(context, store, kubeconfig).await {
        Ok(Some(client)) => client,
        Ok(None) => {
            checker.not_checked(
                "LoadBalancer Service addresses: no Kubernetes cluster is configured for the etcd datastore (pass --kubeconfig or set KUBECONFIG)".to_string(),
            );
            return Ok(());
        }
        Err(error) => {
            checker.not_checked(format!("LoadBalancer Service addresses: {error:#}"));
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

/// The cluster whose Services to read: the datastore's on Kubernetes, else `--kubeconfig`, else
/// the configuration's (kubeconfig, KUBECONFIG), else none.
async fn kubernetes_client(
    context: &Context,
    store: &dyn Datastore,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<Option<kube::Client>> {
    if let Some(path) = kubeconfig {
        let settings = crate::config::KubernetesSettings::from_kubeconfig(
            path,
            context.global.context.clone(),
        );
        let api = crate::datastore::kube::client::build(&settings, context.global.request_timeout)
            .await?;
        return Ok(Some(api.client));
    }
    let _ = store;
    context.kubernetes_client().await
}
