//! How long each step of a plan is expected to take, for maintenance windows (`window.rs`) and for
//! `upgrade plan`'s estimates.
//!
//! A step that succeeded in earlier runs of this cluster (the state directory's journal, runs with
//! the same ClusterInformation `clusterGUID`; `history.rs`) is expected to take what it took then:
//! the median of its last five successful attempts. Any other step takes what its kind usually
//! takes ([`by_kind`]): a few seconds for a datastore or Kubernetes request, more per item for a
//! long batch, a download's half minute, and for waits and programs a typical time bounded by the
//! step's own timeout. A human gate's own work takes no time; the person's time is not estimated
//! (the run stops there anyway). Estimates are expectations, not bounds: retries are not counted.

use std::time::Duration;

use serde::Serialize;

use super::history::History;
use crate::plan::{Action, Plan, PlannedStep};

/// What one step is expected to take, and what says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Estimate {
    #[serde(serialize_with = "as_seconds")]
    pub duration: Duration,
    pub basis: Basis,
}

/// Where an estimate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "from")]
pub enum Basis {
    /// The step's kind (its action), for a step no earlier run of this cluster completed.
    Kind,
    /// The step's own successful attempts in earlier runs of this cluster (how many were used).
    History { samples: usize },
}

fn as_seconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// How many of a step's most recent successful attempts its estimate is the median of.
const SAMPLES: usize = 5;

/// What a step of this kind usually takes, where no earlier run tells.
pub fn by_kind(action: &Action) -> Duration {
    let seconds = Duration::from_secs;
    let per_item = |base: u64, items: usize| {
        seconds(base) + Duration::from_millis(2).saturating_mul(items as u32)
    };
    match action {
        Action::Pause(_) => Duration::ZERO,
        Action::ResourceGet(_) | Action::ResourceList(_) | Action::Check(_) => seconds(1),
        Action::ResourceCreate(write)
        | Action::ResourceApply(write)
        | Action::ResourceReplace(write) => per_item(2, write.documents.len()),
        Action::ResourceDelete(deletion) => per_item(2, deletion.targets.len()),
        Action::ResourceLabelEach(each) => per_item(2, each.names.len()),
        Action::ResourceLabel(_) | Action::ResourcePatch(_) => seconds(2),
        Action::ResourceWait(wait) => wait.timeout.0.min(seconds(120)),
        Action::KubeApply(_) => seconds(15),
        Action::KubeList(_) => seconds(2),
        Action::KubePatch(_)
        | Action::KubeAnnotate(_)
        | Action::KubeLabel(_)
        | Action::KubeDelete(_)
        | Action::KubeRestoreOwnerReference(_)
        | Action::KubeRestart(_) => seconds(3),
        Action::KubeWaitRollout(wait) => wait.timeout.0.min(seconds(600)),
        // A node agent pod per node: deleted, pulled, started and Ready in about a minute.
        Action::KubeReplacePods(replace) => match replace.nodes.len() {
            0 => seconds(600),
            nodes => seconds(60).saturating_mul(nodes as u32),
        },
        Action::KubeRestoreUpdateStrategy(_) => seconds(3),
        Action::Fetch(_) => seconds(30),
        Action::Helm(helm) => helm.timeout.0.min(seconds(180)),
        Action::Exec(exec) => exec.timeout.0.min(seconds(60)),
        Action::NodeRun(_) => seconds(30),
        // calico-node fills the status within a few seconds; its timeout bounds it.
        Action::NodeStatus(query) => query.timeout.0.min(seconds(30)),
        Action::DatastoreLock(_) | Action::DatastoreUnlock(_) | Action::IpamConfigure(_) => {
            seconds(2)
        }
        // A block read and a guarded write per block holding addresses, a delete per handle.
        Action::IpamRelease(release) => {
            per_item(2, release.addresses.len() + release.handles.len())
        }
        Action::IpamSplit(split) => per_item(3, split.children.len()),
        // A whole datastore's worth of reads and writes; a restore is not an upgrade step.
        Action::DatastoreRestore(_)
        | Action::DatastoreImport(_)
        | Action::DatastoreExport(_)
        | Action::DatastoreMigrationVerify(_) => seconds(120),
        // Two reads of the policy keys and a transaction per misnamed policy (policies are few).
        Action::DatastoreMigratePolicyNames(_) | Action::DatastoreMigrationPreflight(_) => {
            seconds(10)
        }
        // A list of every kind, the IPAM check and a status request per BGP node.
        Action::UpgradeBaseline(baseline) => {
            seconds(5) + baseline.scope.bgp_timeout.0.min(seconds(30))
        }
        Action::UpgradeVerify(verify) => seconds(5) + verify.scope.bgp_timeout.0.min(seconds(30)),
    }
}

/// The estimate of every step of `plan`, in plan order, learning from `history`'s runs of
/// `cluster`.
pub fn estimate_steps(plan: &Plan, history: &History, cluster: Option<&str>) -> Vec<Estimate> {
    let durations = history.step_durations(cluster);
    plan.steps
        .iter()
        .map(|step| estimate_step(step, durations.get(step.id.as_str())))
        .collect()
}

fn estimate_step(step: &PlannedStep, earlier: Option<&Vec<Duration>>) -> Estimate {
    let recent: Vec<Duration> = earlier
        .map(|all| all.iter().rev().take(SAMPLES).copied().collect())
        .unwrap_or_default();
    match median(recent.clone()) {
        Some(duration) => Estimate {
            duration,
            basis: Basis::History {
                samples: recent.len(),
            },
        },
        None => Estimate {
            duration: by_kind(&step.action),
            basis: Basis::Kind,
        },
    }
}

fn median(mut samples: Vec<Duration>) -> Option<Duration> {
    samples.sort();
    let middle = samples.len() / 2;
    match samples.len() {
        0 => None,
        count if count % 2 == 1 => Some(samples[middle]),
        _ => Some((samples[middle - 1] + samples[middle]) / 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::Phase;

    fn step(id: &str, action: &str, with: serde_json::Value) -> PlannedStep {
        let action = Action::from_parts(action, with).unwrap();
        PlannedStep::new(id, "test", Phase::Upgrade, action, id, "test")
    }

    #[test]
    fn a_step_takes_what_it_took_on_this_cluster_else_what_its_kind_takes() {
        let wait = step(
            "upgrade/wait",
            "kube.wait-rollout",
            serde_json::json!({"namespace": "kube-system", "kind": "DaemonSet", "name": "calico-node", "timeout": "20m"}),
        );
        let short_exec = step(
            "pre/exec",
            "exec",
            serde_json::json!({"command": ["true"], "timeout": "10s"}),
        );
        assert_eq!(
            estimate_step(&wait, None).duration,
            Duration::from_secs(600)
        );
        assert_eq!(
            estimate_step(&short_exec, None).duration,
            Duration::from_secs(10),
            "never more than the step's own timeout"
        );
        let earlier: Vec<Duration> = [400, 1, 90, 100, 110, 120]
            .map(Duration::from_secs)
            .to_vec();
        assert_eq!(
            estimate_step(&wait, Some(&earlier)),
            Estimate {
                duration: Duration::from_secs(100),
                basis: Basis::History { samples: 5 }
            },
            "the median of the five most recent (the oldest, 400 s, is left out)"
        );
    }
}
