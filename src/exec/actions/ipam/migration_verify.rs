//! `datastore.migration-verify`: the last step of the etcd → Kubernetes migration
//! (`runbooks/datastore-migration.yaml`) compares the export in the run's state directory — what
//! the locked etcd datastore held — with the Kubernetes datastore it was imported into, reading
//! only.
//!
//! Per kind of the export, the resources by name (counts, and the first few missing or extra
//! names); the IPAM block affinities, blocks and handles by key; and for each block, which
//! ordinals are allocated and to which handle. Nodes are left out: the import writes a Node only
//! onto the Kubernetes node of that name, and Kubernetes has nodes etcd never had. Objects every
//! Kubernetes datastore has (its built-in tiers, kube-controllers' `knp.default.` policies, the
//! IPAM configuration) are not counted as extra. A difference fails the step as `upgrade.verify`
//! does (a [`VerificationFailed`] report): the run stops there with the evidence, and `--resume`
//! checks again once it is fixed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::IpamActionError;
use super::import::BUILT_IN_TIERS;
use super::migration::target;
use crate::datastore::backup::{IpamObject, for_each_ipam_object, record};
use crate::datastore::ipam as ipam_store;
use crate::datastore::migration::file::{self as migration_file, MigrationFile};
use crate::datastore::migration::{KINDS, KUBERNETES_POLICY_PREFIX};
use crate::datastore::{Datastore, ListOptions};
use crate::exec::actions::verify::compare::{Finding, Report, Verdict};
use crate::exec::actions::verify::{VerificationFailed, VerifyError};
use crate::exec::actions::{Context, Outcome, Perform, Performed, RunMode, fetch};
use crate::ipam::AllocationBlock;
use crate::plan::Action;
use crate::plan::action::{DatastoreMigrationVerify, DatastoreTarget};
use crate::resource::Kind;

/// How many missing or extra names a finding shows.
const NAMED: usize = 5;

/// One side of the IPAM comparison: the keys of the affinities and handles, each block's
/// allocations by key.
#[derive(Default)]
struct Ipam {
    affinities: BTreeSet<String>,
    handles: BTreeSet<String>,
    blocks: BTreeMap<String, Allocations>,
}

/// A block's allocated ordinals, each with its handle.
type Allocations = Vec<(usize, Option<String>)>;

fn allocations(block: &AllocationBlock) -> Allocations {
    block
        .allocations
        .iter()
        .enumerate()
        .filter_map(|(ordinal, attribute)| {
            let attribute = (*attribute)?;
            let handle = usize::try_from(attribute)
                .ok()
                .and_then(|index| block.attributes.get(index))
                .and_then(|attribute| attribute.handle_id.clone());
            Some((ordinal, handle))
        })
        .collect()
}

impl Ipam {
    fn add(&mut self, object: &IpamObject) {
        let Some(key) = record(object).map(|record| record.key) else {
            return;
        };
        match object {
            IpamObject::Affinity(_) => {
                self.affinities.insert(key);
            }
            IpamObject::Handle(_) => {
                self.handles.insert(key);
            }
            IpamObject::Block(block) => {
                self.blocks.insert(key, allocations(block));
            }
            IpamObject::Config(_) => {}
        }
    }

    async fn read(store: &dyn Datastore) -> Result<(Ipam, Vec<String>), IpamActionError> {
        let ipam = store.ipam().ok_or(IpamActionError::NoIpam(store.kind()))?;
        let mut read = Ipam::default();
        let mut damaged = Vec::new();
        let mut visit = |item: Result<IpamObject, ipam_store::Damaged>| {
            match item {
                Ok(object) => read.add(&object),
                Err(broken) => damaged.push(format!("{}: {}", broken.key, broken.reason)),
            }
            Ok::<(), IpamActionError>(())
        };
        for_each_ipam_object(ipam, &mut visit).await?;
        Ok((read, damaged))
    }
}

/// `exported` against `stored`: `None` when equal, else the evidence (counts, the first few
/// missing and extra names).
fn differences(
    exported: &BTreeSet<String>,
    stored: &BTreeSet<String>,
    what: &str,
) -> Option<String> {
    let missing: Vec<&String> = exported.difference(stored).collect();
    let extra: Vec<&String> = stored.difference(exported).collect();
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    let named = |names: &[&String]| {
        let shown: Vec<String> = names
            .iter()
            .take(NAMED)
            .map(|name| format!("`{name}`"))
            .collect();
        match names.len().saturating_sub(NAMED) {
            0 => shown.join(", "),
            rest => format!("{} and {rest} more", shown.join(", ")),
        }
    };
    let mut parts = vec![format!(
        "{what}: {} in the export, {} in the Kubernetes datastore",
        exported.len(),
        stored.len()
    )];
    if !missing.is_empty() {
        parts.push(format!("missing {}", named(&missing)));
    }
    if !extra.is_empty() {
        parts.push(format!("extra {}", named(&extra)));
    }
    Some(parts.join("; "))
}

/// Whether a resource the target holds is one every Kubernetes datastore may have.
fn ignored(kind: Kind, name: &str) -> bool {
    (kind == Kind::Tier && BUILT_IN_TIERS.contains(&name))
        || (kind == Kind::NetworkPolicy && name.starts_with(KUBERNETES_POLICY_PREFIX))
}

/// The resources finding: each kind of the export, by name.
async fn resources(
    store: &dyn Datastore,
    file: &MigrationFile,
) -> Result<Finding, IpamActionError> {
    let mut exported: HashMap<Kind, BTreeSet<String>> = HashMap::new();
    for resource in &file.resources {
        exported
            .entry(resource.kind)
            .or_default()
            .insert(resource.key().to_string());
    }
    let mut evidence = Vec::new();
    let mut compared = 0usize;
    for kind in KINDS.into_iter().filter(|kind| *kind != Kind::Node) {
        let mut stored = BTreeSet::new();
        let listed = crate::datastore::for_each(store, &ListOptions::new(kind), |resource| {
            let key = resource.key().to_string();
            let in_export = exported.get(&kind).is_some_and(|keys| keys.contains(&key));
            if in_export || !ignored(kind, &resource.metadata.name) {
                stored.insert(key);
            }
            Ok::<(), IpamActionError>(())
        })
        .await;
        match listed {
            Err(IpamActionError::Store(error)) if error.is_not_served() => {}
            other => other?,
        }
        let empty = BTreeSet::new();
        let exported = exported.get(&kind).unwrap_or(&empty);
        compared += exported.len();
        evidence.extend(differences(exported, &stored, &kind.to_string()));
    }
    Ok(match evidence.is_empty() {
        true => Finding::new(
            "resources",
            Verdict::Passed,
            format!(
                "all {compared} resource(s) of the export are in the Kubernetes datastore, and no other (Nodes are Kubernetes' own)"
            ),
            Vec::new(),
        ),
        false => Finding::new(
            "resources",
            Verdict::Failed,
            "the Kubernetes datastore does not hold the export's resources".to_string(),
            evidence,
        ),
    })
}

/// The IPAM finding: affinities, blocks and handles by key, each block's allocations.
fn ipam(exported: &Ipam, stored: &Ipam, damaged: Vec<String>) -> Finding {
    let mut evidence: Vec<String> = damaged
        .into_iter()
        .map(|damaged| format!("damaged IPAM object {damaged}"))
        .collect();
    evidence.extend(differences(
        &exported.affinities,
        &stored.affinities,
        "block affinities",
    ));
    let keys = |blocks: &BTreeMap<String, Allocations>| blocks.keys().cloned().collect();
    evidence.extend(differences(
        &keys(&exported.blocks),
        &keys(&stored.blocks),
        "blocks",
    ));
    evidence.extend(differences(&exported.handles, &stored.handles, "handles"));
    for (key, before) in &exported.blocks {
        let Some(after) = stored.blocks.get(key) else {
            continue;
        };
        if before != after {
            let show = |allocations: &Allocations| {
                allocations
                    .iter()
                    .map(|(ordinal, handle)| {
                        format!("{ordinal}={}", handle.as_deref().unwrap_or("-"))
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            evidence.push(format!(
                "block `{key}`: allocations in the export [{}], in the Kubernetes datastore [{}]",
                show(before),
                show(after)
            ));
        }
    }
    match evidence.is_empty() {
        true => Finding::new(
            "ipam",
            Verdict::Passed,
            format!(
                "{} block affinity(ies), {} block(s) with the same allocations, {} handle(s), as in the export",
                exported.affinities.len(),
                exported.blocks.len(),
                exported.handles.len()
            ),
            Vec::new(),
        ),
        false => Finding::new(
            "ipam",
            Verdict::Failed,
            "the Kubernetes datastore's IPAM differs from the export's".to_string(),
            evidence,
        ),
    }
}

impl Perform for DatastoreMigrationVerify {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let path = fetch::target_path(&context.files_dir, &self.file)?;
        if mode == RunMode::DryRun && !path.exists() {
            return Ok(Outcome::line(format!(
                "would compare `{}`, once the export step wrote it, with the Kubernetes datastore: each kind's resources by name, the IPAM block affinities, blocks and handles, each block's allocations",
                path.display()
            )));
        }
        let file = migration_file::read(&path).map_err(IpamActionError::from)?;
        let target = target(context, action, DatastoreTarget::Kubernetes).await?;
        let store = target.store();
        if mode == RunMode::DryRun && !super::import::crds_served(store).await? {
            return Ok(Outcome::line(format!(
                "would compare the {} resource(s) and {} IPAM object(s) of `{}` with the Kubernetes datastore once the import wrote them",
                file.resources.len(),
                file.ipam.len(),
                path.display()
            )));
        }
        let mut exported = Ipam::default();
        for object in &file.ipam {
            exported.add(object);
        }
        let (stored, damaged) = Ipam::read(store).await?;
        let mut report = Report::default();
        report.push(resources(store, &file).await?);
        report.push(ipam(&exported, &stored, damaged));
        if report.failed().next().is_some() {
            return Err(VerifyError::Failed(VerificationFailed {
                report,
                // Not a comparison with the run's baseline, as `upgrade.verify`'s.
                meaning: "the Kubernetes datastore does not hold what the export holds",
            })
            .into());
        }
        let transcript = report.lines();
        Ok(Outcome {
            summary: format!(
                "the Kubernetes datastore holds what `{}` holds: {}",
                self.file,
                report
                    .findings
                    .iter()
                    .map(|finding| finding.summary.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            transcript,
            output: None,
        })
    }

    /// It reads only.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipam::AllocationAttribute;

    fn block(allocated: &[(usize, &str)]) -> IpamObject {
        let mut block = AllocationBlock {
            cidr: Some("10.66.12.0/26".parse().unwrap()),
            allocations: vec![None; 64],
            ..AllocationBlock::default()
        };
        for (index, (ordinal, handle)) in allocated.iter().enumerate() {
            block.allocations[*ordinal] = Some(index as i64);
            block.attributes.push(AllocationAttribute {
                handle_id: Some(handle.to_string()),
                ..AllocationAttribute::default()
            });
        }
        IpamObject::Block(block)
    }

    fn side(objects: &[IpamObject]) -> Ipam {
        let mut side = Ipam::default();
        for object in objects {
            side.add(object);
        }
        side
    }

    #[test]
    fn the_same_allocations_pass() {
        let exported = side(&[block(&[
            (0, "ipip-tunnel-addr-node-a"),
            (1, "k8s-pod-network.1"),
        ])]);
        let stored = side(&[block(&[
            (0, "ipip-tunnel-addr-node-a"),
            (1, "k8s-pod-network.1"),
        ])]);
        let finding = ipam(&exported, &stored, Vec::new());
        assert_eq!(finding.verdict, Verdict::Passed, "{finding:?}");
    }

    #[test]
    fn a_block_whose_allocations_differ_fails_naming_them() {
        let exported = side(&[block(&[
            (0, "ipip-tunnel-addr-node-a"),
            (1, "k8s-pod-network.1"),
        ])]);
        let stored = side(&[block(&[
            (0, "ipip-tunnel-addr-node-a"),
            (2, "k8s-pod-network.1"),
        ])]);
        let finding = ipam(&exported, &stored, Vec::new());
        assert_eq!(finding.verdict, Verdict::Failed);
        assert_eq!(
            finding.evidence,
            [
                "block `/calico/ipam/v2/assignment/ipv4/block/10.66.12.0-26`: allocations in the export [0=ipip-tunnel-addr-node-a 1=k8s-pod-network.1], in the Kubernetes datastore [0=ipip-tunnel-addr-node-a 2=k8s-pod-network.1]"
            ]
        );
    }

    #[test]
    fn a_missing_block_is_named_with_the_counts() {
        let exported = side(&[block(&[(0, "h")])]);
        let finding = ipam(&exported, &Ipam::default(), Vec::new());
        assert_eq!(
            finding.evidence,
            [
                "blocks: 1 in the export, 0 in the Kubernetes datastore; missing `/calico/ipam/v2/assignment/ipv4/block/10.66.12.0-26`"
            ]
        );
    }
}
