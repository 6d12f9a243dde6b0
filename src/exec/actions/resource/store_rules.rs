//! The validation rules that need the datastore, checked before a write (upstream's clientv3 checks
//! them too: `libcalico-go/lib/clientv3/ippool.go`, `networkpolicy.go`, `globalnetworkpolicy.go`,
//! `bgppeer.go`, `tier.go`): IP pools must not overlap other pools and
//! keep their CIDR and block size; a policy's tier must exist; a peer's BGP filters must exist; the
//! built-in tiers and tiers that still hold policies cannot be deleted. Everything that needs only the document is in
//! `resource::validate`.
//!
//! The checks read current state, so they narrow but cannot close the window in which another writer
//! changes it; the write itself stays conditional.

use std::collections::{BTreeSet, HashMap};

use crate::datastore::{Datastore, ListOptions, StoreError, for_each};
use crate::resource::validate::syntax::Cidr;
use crate::resource::{Kind, Resource, ResourceKey};

/// A write or delete the datastore's current state does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {key}: {reason}")]
pub struct RuleViolation {
    pub key: String,
    pub reason: String,
}

/// Tiers upstream creates and never lets users delete.
const BUILT_IN_TIERS: [&str; 2] = ["default", "adminnetworkpolicy"];

fn invalid(key: &ResourceKey, reason: String) -> RuleViolation {
    RuleViolation {
        key: key.to_string(),
        reason,
    }
}

fn unreadable(key: &ResourceKey, error: StoreError) -> RuleViolation {
    invalid(
        key,
        format!("cannot check it against the datastore: {error}"),
    )
}

fn spec_text<'a>(resource: &'a Resource, field: &str) -> Option<&'a str> {
    resource.spec.get(field).and_then(|value| value.as_str())
}

/// Checks writes of `batch` (already validated and defaulted), as a whole: pools in the batch may not
/// overlap each other either.
///
/// Each tier is looked up once however many policies name it (a file of ten thousand policies in
/// one tier costs one read, not ten thousand).
pub async fn check_writes(store: &dyn Datastore, batch: &[Resource]) -> Result<(), RuleViolation> {
    let mut tiers: HashMap<String, bool> = HashMap::new();
    for resource in batch {
        let key = resource.key();
        match resource.kind {
            Kind::IpPool => check_pool(store, resource, batch).await?,
            Kind::NetworkPolicy | Kind::GlobalNetworkPolicy => {
                let tier = spec_text(resource, "tier").unwrap_or("default");
                if tier == "default" {
                    continue;
                }
                let exists = match tiers.get(tier) {
                    Some(exists) => *exists,
                    None => {
                        let exists =
                            match store.get(&ResourceKey::new(Kind::Tier, None, tier)).await {
                                Ok(_) => true,
                                Err(StoreError::NotFound(_)) => false,
                                Err(error) => return Err(unreadable(&key, error)),
                            };
                        tiers.insert(tier.to_string(), exists);
                        exists
                    }
                };
                if !exists {
                    return Err(invalid(
                        &key,
                        format!(
                            "spec.tier = '{tier}': tier `{tier}` does not exist; create it first"
                        ),
                    ));
                }
            }
            Kind::BgpPeer => check_filters(store, resource, batch).await?,
            _ => {}
        }
    }
    Ok(())
}

/// Every BGPFilter a peer names exists, in the datastore or earlier in the batch
/// (upstream `libcalico-go/lib/clientv3/bgppeer.go`).
async fn check_filters(
    store: &dyn Datastore,
    peer: &Resource,
    batch: &[Resource],
) -> Result<(), RuleViolation> {
    let key = peer.key();
    let names = peer
        .spec
        .get("filters")
        .and_then(|filters| filters.as_array())
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str());
    let mut missing = Vec::new();
    for name in names {
        let in_batch = batch
            .iter()
            .any(|other| other.kind == Kind::BgpFilter && other.metadata.name == name);
        if in_batch {
            continue;
        }
        match store
            .get(&ResourceKey::new(Kind::BgpFilter, None, name))
            .await
        {
            Ok(_) => {}
            Err(StoreError::NotFound(_)) => missing.push(format!("`{name}`")),
            Err(error) => return Err(unreadable(&key, error)),
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(invalid(
        &key,
        format!(
            "spec.filters: BGPFilter(s) not found: {}; create them first",
            missing.join(", ")
        ),
    ))
}

async fn check_pool(
    store: &dyn Datastore,
    pool: &Resource,
    batch: &[Resource],
) -> Result<(), RuleViolation> {
    let key = pool.key();
    let Some(cidr) = spec_text(pool, "cidr").and_then(Cidr::parse) else {
        return Ok(()); // the document validation already reported it
    };
    match store.get(&key).await {
        Ok(stored) => {
            for field in ["cidr", "blockSize"] {
                let (before, after) = (stored.spec.get(field), pool.spec.get(field));
                let same = match field {
                    "cidr" => {
                        before
                            .and_then(|v| v.as_str())
                            .and_then(Cidr::parse)
                            .map(|c| c.network().to_string())
                            == Some(cidr.network().to_string())
                    }
                    _ => before == after,
                };
                if !same {
                    return Err(invalid(
                        &key,
                        format!(
                            "spec.{field} cannot be changed on an existing IP pool; create a new pool instead"
                        ),
                    ));
                }
            }
        }
        Err(StoreError::NotFound(_)) => {}
        Err(error) => return Err(unreadable(&key, error)),
    }
    let mut overlap: Option<(String, String)> = None;
    let mut check = |other: &Resource| {
        if other.metadata.name == pool.metadata.name || overlap.is_some() {
            return;
        }
        if let Some(text) = spec_text(other, "cidr")
            && let Some(other_cidr) = Cidr::parse(text)
            && cidr.overlaps(&other_cidr)
        {
            overlap = Some((other.metadata.name.clone(), text.to_string()));
        }
    };
    batch
        .iter()
        .filter(|r| r.kind == Kind::IpPool)
        .for_each(&mut check);
    for_each(store, &ListOptions::new(Kind::IpPool), |other: Resource| {
        check(&other);
        Ok::<(), StoreError>(())
    })
    .await
    .map_err(|error| unreadable(&key, error))?;
    match overlap {
        Some((other, other_cidr)) => Err(invalid(
            &key,
            format!("spec.cidr = '{cidr}': overlaps with IPPool({other}) CIDR {other_cidr}"),
        )),
        None => Ok(()),
    }
}

/// Checks a delete: built-in tiers and tiers that still hold policies stay.
pub async fn check_delete(store: &dyn Datastore, key: &ResourceKey) -> Result<(), RuleViolation> {
    if key.kind != Kind::Tier {
        return Ok(());
    }
    if BUILT_IN_TIERS.contains(&key.name.as_str()) {
        return Err(invalid(
            key,
            format!("the `{}` tier is built in and cannot be deleted", key.name),
        ));
    }
    for kind in [Kind::GlobalNetworkPolicy, Kind::NetworkPolicy] {
        let mut holder: Option<String> = None;
        for_each(store, &ListOptions::new(kind), |policy: Resource| {
            if holder.is_none() && spec_text(&policy, "tier") == Some(key.name.as_str()) {
                holder = Some(policy.key().to_string());
            }
            Ok::<(), StoreError>(())
        })
        .await
        .map_err(|error| unreadable(key, error))?;
        if let Some(policy) = holder {
            return Err(invalid(
                key,
                format!("the tier still holds policies (e.g. {policy}); delete or move them first"),
            ));
        }
    }
    Ok(())
}

/// What deleting Nodes takes with them, as upstream's node deletion does
/// (`libcalico-go/lib/clientv3/node.go`): each node's workload endpoints, host endpoints and BGP
/// peers, and its per-node FelixConfiguration and BGPConfiguration (`node.<name>`), with the node
/// each belongs to. One pass
/// over each list, whatever the number of nodes. IPAM blocks and handles are not modelled by netctl
/// and are left to the node controller.
pub async fn node_dependents(
    store: &dyn Datastore,
    nodes: &BTreeSet<String>,
) -> Result<Vec<(ResourceKey, String)>, StoreError> {
    let mut dependents = Vec::new();
    if nodes.is_empty() {
        return Ok(dependents);
    }
    for kind in [Kind::WorkloadEndpoint, Kind::HostEndpoint, Kind::BgpPeer] {
        for_each(store, &ListOptions::new(kind), |resource: Resource| {
            if let Some(node) = spec_text(&resource, "node")
                && nodes.contains(node)
            {
                dependents.push((resource.key(), node.to_string()));
            }
            Ok::<(), StoreError>(())
        })
        .await?;
    }
    let configurations: Vec<(ResourceKey, String)> = nodes
        .iter()
        .flat_map(|node| {
            [Kind::FelixConfiguration, Kind::BgpConfiguration].map(|kind| {
                (
                    ResourceKey::new(kind, None, format!("node.{node}")),
                    node.clone(),
                )
            })
        })
        .collect();
    let keys: Vec<ResourceKey> = configurations.iter().map(|(key, _)| key.clone()).collect();
    let found = store.read_many(&keys).await?;
    for ((key, node), found) in configurations.into_iter().zip(found) {
        if found.is_some() {
            dependents.push((key, node));
        }
    }
    Ok(dependents)
}
