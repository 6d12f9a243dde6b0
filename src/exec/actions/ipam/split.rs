//! `ipam.split`: a pool replaced by 2^k children that cover it (upstream's `ipam split`,
//! `calicoctl/calicoctl/commands/ipam/split.go`): the children are copies of the pool with their
//! CIDRs, enabled, named `split-<pool>-<i>`; the pool is deleted without touching its blocks and
//! affinities (upstream's `UnsafeDelete`), which now lie in the children.
//!
//! Everything is checked before the first write — the datastore locked, the pool still at the
//! revision the plan was made at, every child valid for the cluster's release (upstream disables
//! the pool first and checks the split after). On etcd the delete and the creates are one
//! transaction. On Kubernetes they are sent in upstream's order — the pool disabled, the children
//! created, the pool deleted — and undone newest first when a write fails or the command is
//! stopped, each undo guarded by the revision netctl wrote.

use crate::datastore::readiness::lock_state;
use crate::datastore::{Datastore, DatastoreType, StoreError, Write};
use crate::exec::RunMode;
use crate::exec::actions::Outcome;
use crate::exec::interrupt::Interrupt;
use crate::plan::action::IpamSplit;
use crate::release::ApiRelease;
use crate::resource::{Kind, Resource, ResourceKey};

use super::IpamActionError;

pub async fn split(
    store: &dyn Datastore,
    request: &IpamSplit,
    release: &ApiRelease,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
) -> Result<Outcome, IpamActionError> {
    if !lock_state(store).await?.locked {
        return Err(IpamActionError::NotLocked {
            what: "`ipam split`",
        });
    }
    let key = ResourceKey::new(Kind::IpPool, None, &request.pool);
    let pool = match store.get(&key).await {
        Ok(pool) => pool,
        Err(StoreError::NotFound(_)) => {
            return Err(IpamActionError::NoSuchPool {
                pool: request.pool.clone(),
            });
        }
        Err(error) => return Err(error.into()),
    };
    let current = pool.metadata.resource_version.clone().unwrap_or_default();
    if current != request.revision {
        return Err(IpamActionError::PoolChanged {
            pool: request.pool.clone(),
            planned: request.revision.clone(),
            current,
        });
    }
    let mut children = Vec::new();
    for child in &request.children {
        let mut resource = Resource::new(Kind::IpPool, &child.name);
        resource.metadata.labels = pool.metadata.labels.clone();
        resource.metadata.annotations = pool.metadata.annotations.clone();
        resource.spec = pool.spec.clone();
        resource.spec["cidr"] = serde_json::Value::String(child.cidr.clone());
        resource.spec["disabled"] = serde_json::Value::Bool(false);
        crate::resource::validate::validate_and_default_for(&mut resource, release).map_err(
            |error| IpamActionError::Refused {
                reason: format!(
                    "the child pool `{}` would not be valid: {error}",
                    child.name
                ),
            },
        )?;
        children.push(resource);
    }
    let mut transcript = Vec::new();
    if mode == RunMode::DryRun {
        for child in &request.children {
            transcript.push(format!(
                "would create IP pool `{}` with CIDR {}",
                child.name, child.cidr
            ));
        }
        transcript.push(format!(
            "would delete IP pool `{}` (its blocks and block affinities stay: they now lie in the new pools)",
            request.pool
        ));
        return Ok(Outcome {
            summary: format!("would split IP pool `{}`", request.pool),
            transcript,
            output: None,
        });
    }
    match store.kind() {
        DatastoreType::EtcdV3 => split_in_one_transaction(store, &pool, &children).await?,
        DatastoreType::Kubernetes => split_in_order(store, &pool, &children, interrupt).await?,
    }
    let parent_cidr = pool.spec["cidr"].as_str().unwrap_or_default();
    transcript.push(format!(
        "IP Pool {} was successfully split into {} smaller pools.",
        request.pool,
        children.len()
    ));
    for child in &request.children {
        transcript.push(format!("Created {} with CIDR {}.", child.name, child.cidr));
    }
    transcript.push(format!(
        "The pool's blocks and block affinities are kept. Unlock the datastore (`netctl datastore migrate unlock`); then, to move workloads off part of {parent_cidr}, disable the pools to drain and re-create their pods."
    ));
    Ok(Outcome {
        summary: format!(
            "split IP pool `{}` into {} pools",
            request.pool,
            children.len()
        ),
        transcript,
        output: None,
    })
}

/// etcd: the pool's delete (guarded by its revision) and the children's creates, all or nothing.
async fn split_in_one_transaction(
    store: &dyn Datastore,
    pool: &Resource,
    children: &[Resource],
) -> Result<(), IpamActionError> {
    let mut writes = vec![Write::Delete {
        key: pool.key(),
        revision: pool.metadata.resource_version.clone().unwrap_or_default(),
    }];
    writes.extend(children.iter().cloned().map(Write::Create));
    if writes.len() > store.batch_limits().writes {
        return Err(IpamActionError::Refused {
            reason: format!(
                "{} pools are more than one etcd transaction holds ({} writes)",
                children.len(),
                store.batch_limits().writes
            ),
        });
    }
    let outcome = store.write_batch(&writes).await;
    if let Some(failure) = outcome.failure {
        return Err(failure.into());
    }
    for (write, result) in writes.iter().zip(outcome.outcomes) {
        if let crate::datastore::WriteOutcome::Refused { error, .. } = result {
            return Err(IpamActionError::Refused {
                reason: format!(
                    "nothing was written: the {} of {} was refused: {error}",
                    write.operation(),
                    write.key()
                ),
            });
        }
    }
    Ok(())
}

/// Kubernetes: disable, create, delete, in upstream's order; undone when a write fails.
async fn split_in_order(
    store: &dyn Datastore,
    pool: &Resource,
    children: &[Resource],
    interrupt: Option<&Interrupt>,
) -> Result<(), IpamActionError> {
    let mut disabled = pool.clone();
    disabled.spec["disabled"] = serde_json::Value::Bool(true);
    let disabled = store.update(&disabled).await?;
    let mut created: Vec<Resource> = Vec::new();
    let mut failure: Option<IpamActionError> = None;
    for child in children {
        if let Some(signal) = interrupt.and_then(Interrupt::received) {
            failure = Some(IpamActionError::Interrupted {
                done: format!("created {} of {} pools", created.len(), children.len()),
                signal: signal.describe(),
            });
            break;
        }
        match store.create(child).await {
            Ok(written) => created.push(written),
            Err(error) => {
                failure = Some(error.into());
                break;
            }
        }
    }
    if failure.is_none() {
        match store
            .delete(&pool.key(), disabled.metadata.resource_version.as_deref())
            .await
        {
            Ok(_) => return Ok(()),
            Err(error) => failure = Some(error.into()),
        }
    }
    // Undo, newest first, each guarded by what netctl wrote.
    let mut not_undone = Vec::new();
    for child in created.iter().rev() {
        if let Err(error) = store
            .delete(&child.key(), child.metadata.resource_version.as_deref())
            .await
        {
            not_undone.push(format!("pool `{}` ({error})", child.metadata.name));
        }
    }
    let mut enabled = disabled.clone();
    enabled.spec["disabled"] = pool.spec["disabled"].clone();
    if let Err(error) = store.update(&enabled).await {
        not_undone.push(format!(
            "pool `{}` left disabled ({error})",
            pool.metadata.name
        ));
    }
    let cause = failure.unwrap_or(IpamActionError::Refused {
        reason: "the split failed".into(),
    });
    let done = match not_undone.is_empty() {
        true => "the split was undone".to_string(),
        false => format!(
            "the split was undone except for: {} — delete or fix these by hand",
            not_undone.join(", ")
        ),
    };
    Err(IpamActionError::Stopped {
        done,
        cause: Box::new(cause),
    })
}
