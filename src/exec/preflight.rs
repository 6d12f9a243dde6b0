//! Pre-flight: what must hold before an upgrade run writes anything (issue 17, items 1 and 9).
//!
//! [`preflight`] looks at the steps a run is about to take and checks, without writing: the
//! datastore answers a read (`datastore`); every etcd member answers its own status request and
//! knows a leader (`etcd-members`); no member's database is near its quota and no `NOSPACE` alarm
//! is raised (`etcd-quota`); when steps talk to Kubernetes, a cluster is configured and its API
//! server answers (`cluster`); every Node is Ready (`nodes-ready`), since a rolling update waits on
//! each node agent; the API server serves every type the steps use (`apis`, see
//! `preflight/cluster_access.rs`), and netctl's identity may do what each step does to it
//! (`permissions`, one SelfSubjectAccessReview per verb and resource); and the node agents run
//! the version a step requires (`node-agents`, `preflight/node_agents.rs`). A failed check stops
//! the run before the lock is taken, with what to do about it; `--skip-preflight CHECK` passes
//! one, and the run journals that it was skipped. A step whose type Kubernetes removed (the
//! PodSecurityPolicy patch of the Helm migration on Kubernetes 1.25 and later) is not a failure:
//! the report names it with the reason, and the run skips it and journals why.
//!
//! It decides nothing about which steps run (the plan did) and writes nothing.

mod cluster_access;
pub mod node_agents;

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::core::v1::Node;

use crate::datastore::health::DatastoreHealth;
use crate::datastore::{Datastore, StoreError};
use crate::errors::Hint;
use crate::listing::{self, Limit};
use crate::output::human_size;
use crate::plan::PlannedStep;
use crate::resource::{Kind, ResourceKey};

/// The quota etcd enforces when started without `--quota-backend-bytes` (2 GiB); etcd before 3.6
/// does not report its quota, so this is assumed unless `--etcd-quota-bytes` says otherwise.
pub const ETCD_DEFAULT_QUOTA_BYTES: u64 = 2 << 30;

/// The least share of the etcd quota that must be free, in percent. An upgrade writes little, but
/// etcd keeps every old revision until it is compacted, and once a member's database reaches the
/// quota etcd raises `NOSPACE` and refuses every write — the run's own undo and checkpoint
/// included. Below this margin the run would start where one burst of writes ends it half-way.
pub const ETCD_QUOTA_FREE_PERCENT: u64 = 10;

/// The checks, by the names `--skip-preflight` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Check {
    Datastore,
    EtcdMembers,
    EtcdQuota,
    Cluster,
    NodesReady,
    Apis,
    Permissions,
    NodeAgents,
}

impl Check {
    pub const ALL: [Check; 8] = [
        Check::Datastore,
        Check::EtcdMembers,
        Check::EtcdQuota,
        Check::Cluster,
        Check::NodesReady,
        Check::Apis,
        Check::Permissions,
        Check::NodeAgents,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Datastore => "datastore",
            Check::EtcdMembers => "etcd-members",
            Check::EtcdQuota => "etcd-quota",
            Check::Cluster => "cluster",
            Check::NodesReady => "nodes-ready",
            Check::Apis => "apis",
            Check::Permissions => "permissions",
            Check::NodeAgents => "node-agents",
        }
    }
}

impl std::str::FromStr for Check {
    type Err = String;

    fn from_str(name: &str) -> Result<Check, String> {
        Check::ALL
            .into_iter()
            .find(|check| check.name() == name)
            .ok_or_else(|| format!("no pre-flight check is named `{name}`"))
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one check came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed(String),
    /// Not needed by these steps, or skipped on the command line; why.
    NotRun(String),
    Failed {
        problem: String,
        fix: String,
    },
}

/// One check and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub check: Check,
    pub verdict: Verdict,
}

/// A step the run will skip, and why (its type was removed from this Kubernetes version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedStep {
    pub id: String,
    pub reason: String,
}

/// Every finding of one pre-flight.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreflightReport {
    pub findings: Vec<Finding>,
    /// Steps that do not apply to this cluster; the run records them as skipped with the reason.
    pub skipped_steps: Vec<SkippedStep>,
}

impl PreflightReport {
    pub fn failures(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| matches!(finding.verdict, Verdict::Failed { .. }))
    }

    /// One line per check, then one per step that will be skipped, as the run prints them.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .findings
            .iter()
            .map(|finding| match &finding.verdict {
                Verdict::Passed(what) => format!("pre-flight {}: ok ({what})", finding.check),
                Verdict::NotRun(why) => format!("pre-flight {}: not run ({why})", finding.check),
                Verdict::Failed { problem, .. } => {
                    format!("pre-flight {}: FAILED: {problem}", finding.check)
                }
            })
            .collect();
        lines.extend(self.skipped_steps.iter().map(|skipped| {
            format!(
                "pre-flight: step `{}` will be skipped: {}",
                skipped.id, skipped.reason
            )
        }));
        lines
    }
}

/// Why a run was refused by its pre-flight.
#[derive(Debug, thiserror::Error)]
#[error("pre-flight failed before anything was written: {}", summary(.report))]
pub struct PreflightFailed {
    pub report: PreflightReport,
}

fn summary(report: &PreflightReport) -> String {
    report
        .failures()
        .map(|finding| match &finding.verdict {
            Verdict::Failed { problem, .. } => format!("{}: {problem}", finding.check),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Hint for PreflightFailed {
    fn hint(&self) -> Option<String> {
        let mut fixes: Vec<String> = self
            .report
            .failures()
            .filter_map(|finding| match &finding.verdict {
                Verdict::Failed { fix, .. } => Some(fix.clone()),
                _ => None,
            })
            .collect();
        let names: Vec<&str> = self.report.failures().map(|f| f.check.name()).collect();
        fixes.push(format!(
            "only if you are sure, `--skip-preflight {}` runs anyway (journaled)",
            names.join(" --skip-preflight ")
        ));
        Some(fixes.join("; "))
    }
}

/// What the pre-flight is told beyond the steps: the checks to pass and the etcd quota.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreflightOptions {
    /// `--skip-preflight CHECK`.
    pub skip: BTreeSet<Check>,
    /// `--etcd-quota-bytes`: the members' `--quota-backend-bytes`, for etcd that does not report it.
    pub etcd_quota_bytes: Option<u64>,
    /// How many nodes and pods a finding names (`--all-errors`: all; else twenty, then a count).
    pub listing: Limit,
    /// A resume of a run whose own `datastore.lock` step is done (the `datastore-migration`
    /// runbook): the datastore is locked by that step, as expected, not by someone else.
    pub own_lock: bool,
}

/// Runs the checks `steps` need, except those `options` skips.
pub async fn preflight(
    store: &dyn Datastore,
    cluster: Option<&kube::Client>,
    steps: &[&PlannedStep],
    options: &PreflightOptions,
) -> PreflightReport {
    let kubernetes_steps: Vec<&str> = steps
        .iter()
        .filter(|step| step.action.name().starts_with("kube."))
        .map(|step| step.id.as_str())
        .collect();
    // Asked once for both etcd checks.
    let health = match options.skip.contains(&Check::EtcdMembers)
        && options.skip.contains(&Check::EtcdQuota)
    {
        true => None,
        false => Some(store.health().await),
    };
    let mut report = PreflightReport::default();
    let mut access: Option<cluster_access::Access> = None;
    for check in Check::ALL {
        let passed = |report: &PreflightReport, wanted: Check| {
            report.findings.iter().any(|finding| {
                finding.check == wanted && matches!(finding.verdict, Verdict::Passed(_))
            })
        };
        let cluster_answered = passed(&report, Check::Cluster);
        let verdict = if options.skip.contains(&check) {
            Verdict::NotRun("skipped with `--skip-preflight`".to_string())
        } else {
            match check {
                Check::Datastore => datastore(store, options.own_lock).await,
                Check::EtcdMembers => etcd_members(health.as_ref()),
                Check::EtcdQuota => etcd_quota(health.as_ref(), options.etcd_quota_bytes),
                Check::Cluster => cluster_reachable(cluster, &kubernetes_steps).await,
                // Asking a cluster that did not answer would only repeat that.
                Check::NodesReady | Check::Apis | Check::Permissions
                    if !kubernetes_steps.is_empty() && !cluster_answered =>
                {
                    Verdict::NotRun("the cluster check did not pass".to_string())
                }
                Check::NodesReady => {
                    nodes_ready(cluster, &kubernetes_steps, &options.listing).await
                }
                Check::Apis | Check::Permissions => {
                    let (Some(client), false) = (cluster, kubernetes_steps.is_empty()) else {
                        report.findings.push(Finding {
                            check,
                            verdict: Verdict::NotRun("no step talks to Kubernetes".to_string()),
                        });
                        continue;
                    };
                    if access.is_none() {
                        access = Some(cluster_access::Access::discover(client, steps).await);
                    }
                    let found = access.as_ref().expect("discovered above");
                    match check {
                        Check::Apis => {
                            report.skipped_steps = found.skipped_steps();
                            found.apis_verdict()
                        }
                        _ => found.permissions_verdict(client).await,
                    }
                }
                Check::NodeAgents => node_agents::verdict(cluster, steps, &options.listing).await,
            }
        };
        report.findings.push(Finding { check, verdict });
    }
    report
}

async fn datastore(store: &dyn Datastore, own_lock: bool) -> Verdict {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    match store.get(&key).await {
        Ok(information) => {
            let lock = crate::datastore::readiness::LockState::of(&information);
            match lock.locked {
                true if own_lock => Verdict::Passed(format!(
                    "{} answered; locked{} by this run's lock step",
                    store.kind(),
                    lock.holder()
                )),
                // A run on a locked datastore would upgrade node agents that cannot start pods.
                true => Verdict::Failed {
                    problem: format!(
                        "the datastore is locked{}: {}",
                        lock.holder(),
                        crate::datastore::readiness::WHILE_LOCKED
                    ),
                    fix: "finish the migration or IPAM clean-up and unlock it (`netctl datastore migrate unlock`) before upgrading".to_string(),
                },
                false => Verdict::Passed(format!("{} answered", store.kind())),
            }
        }
        Err(StoreError::NotFound(_)) => Verdict::Passed(format!(
            "{} answered; it has no ClusterInformation `default`",
            store.kind()
        )),
        Err(error) => Verdict::Failed {
            problem: format!(
                "the datastore did not answer a read: {}",
                crate::errors::error_chain(&error)
            ),
            fix: error
                .hint()
                .unwrap_or_else(|| "check the datastore settings and that it runs".to_string()),
        },
    }
}

fn unreadable_health(error: &StoreError) -> Verdict {
    Verdict::Failed {
        problem: format!(
            "cannot read the etcd member list: {}",
            crate::errors::error_chain(error)
        ),
        fix: "check `etcdctl member list` and `etcdctl endpoint status --cluster`; netctl's etcd user needs no more than read access for this"
            .to_string(),
    }
}

fn etcd_members(health: Option<&Result<Option<DatastoreHealth>, StoreError>>) -> Verdict {
    let health = match health {
        None | Some(Ok(None)) => return Verdict::NotRun("the datastore is not etcd".to_string()),
        Some(Err(error)) => return unreadable_health(error),
        Some(Ok(Some(health))) => health,
    };
    let unhealthy: Vec<String> = health
        .members
        .iter()
        .filter_map(|member| {
            let endpoint = match member.endpoint.as_str() {
                "" => String::new(),
                endpoint => format!(" at `{endpoint}`"),
            };
            match &member.status {
                Err(problem) => Some(format!("`{}`{endpoint}: {problem}", member.name)),
                Ok(status) if !status.has_leader => Some(format!(
                    "`{}`{endpoint}: answered but knows no leader",
                    member.name
                )),
                Ok(status) if !status.errors.is_empty() => Some(format!(
                    "`{}`{endpoint}: reports {}",
                    member.name,
                    status.errors.join("; ")
                )),
                Ok(_) => None,
            }
        })
        .collect();
    if unhealthy.is_empty() {
        return Verdict::Passed(format!(
            "{} member(s) answered: {}",
            health.members.len(),
            health
                .members
                .iter()
                .map(|member| format!("`{}`", member.name))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Verdict::Failed {
        problem: format!(
            "{} of {} etcd member(s) unhealthy: {}",
            unhealthy.len(),
            health.members.len(),
            unhealthy.join("; ")
        ),
        fix: "bring the member back (its logs, `etcdctl endpoint health --cluster`) or remove it (`etcdctl member remove`) before upgrading: a cluster one failure away from losing quorum should not take an upgrade's writes".to_string(),
    }
}

fn etcd_quota(
    health: Option<&Result<Option<DatastoreHealth>, StoreError>>,
    configured_quota: Option<u64>,
) -> Verdict {
    let health = match health {
        None | Some(Ok(None)) => return Verdict::NotRun("the datastore is not etcd".to_string()),
        Some(Err(error)) => return unreadable_health(error),
        Some(Ok(Some(health))) => health,
    };
    let fix_space = "free space first: compact and defragment (`etcdctl compact REVISION`, `etcdctl defrag --cluster`), then `etcdctl alarm disarm`; or raise the members' `--quota-backend-bytes`";
    if !health.alarms.is_empty() {
        return Verdict::Failed {
            problem: format!(
                "etcd has active alarms: {} (etcd refuses writes while `NOSPACE` is raised)",
                health.alarms.join(", ")
            ),
            fix: fix_space.to_string(),
        };
    }
    let mut fullest: Option<(String, u64, u64, &'static str)> = None;
    for member in &health.members {
        let Ok(status) = &member.status else { continue };
        let (quota, origin) = match (status.quota_bytes, configured_quota) {
            (Some(reported), _) => (reported as u64, "reported by the member"),
            (None, Some(configured)) => (configured, "from `--etcd-quota-bytes`"),
            (None, None) => (
                ETCD_DEFAULT_QUOTA_BYTES,
                "etcd's default; this etcd does not report its quota, `--etcd-quota-bytes` gives it",
            ),
        };
        let used = status.database_bytes.max(0) as u64;
        let share = |used: u64, quota: u64| used as f64 / quota.max(1) as f64;
        if fullest
            .as_ref()
            .is_none_or(|(_, u, q, _)| share(used, quota) > share(*u, *q))
        {
            fullest = Some((member.name.clone(), used, quota, origin));
        }
    }
    let Some((name, used, quota, origin)) = fullest else {
        return Verdict::NotRun("no etcd member answered (see etcd-members)".to_string());
    };
    let free = quota.saturating_sub(used);
    let percent_used = used as f64 * 100.0 / quota.max(1) as f64;
    let what = format!(
        "the fullest database, member `{name}`'s, holds {} of a {} quota ({origin}), {percent_used:.1}% used",
        human_size(used),
        human_size(quota)
    );
    if free * 100 < quota * ETCD_QUOTA_FREE_PERCENT {
        return Verdict::Failed {
            problem: format!(
                "{what}: less than {ETCD_QUOTA_FREE_PERCENT}% free, and etcd refuses every write once it is full"
            ),
            fix: fix_space.to_string(),
        };
    }
    Verdict::Passed(what)
}

async fn cluster_reachable(cluster: Option<&kube::Client>, kubernetes_steps: &[&str]) -> Verdict {
    let Some(first) = kubernetes_steps.first() else {
        return Verdict::NotRun("no step talks to Kubernetes".to_string());
    };
    let Some(client) = cluster else {
        return Verdict::Failed {
            problem: format!(
                "{} step(s) talk to Kubernetes (first `{first}`) and no cluster is configured",
                kubernetes_steps.len()
            ),
            fix: "configure the cluster (`kubeconfig` in the configuration file, or `KUBECONFIG`)"
                .to_string(),
        };
    };
    match client.apiserver_version().await {
        Ok(version) => Verdict::Passed(format!(
            "Kubernetes {}.{} answered",
            version.major, version.minor
        )),
        Err(error) => Verdict::Failed {
            problem: format!(
                "the Kubernetes API server did not answer: {}",
                crate::errors::error_chain(&error)
            ),
            fix: "check the kubeconfig's server and credentials (`kubectl version`)".to_string(),
        },
    }
}

async fn nodes_ready(
    cluster: Option<&kube::Client>,
    kubernetes_steps: &[&str],
    limit: &Limit,
) -> Verdict {
    if kubernetes_steps.is_empty() {
        return Verdict::NotRun("no step talks to Kubernetes".to_string());
    }
    let Some(client) = cluster else {
        return Verdict::NotRun("no cluster configured".to_string());
    };
    let nodes: kube::Api<Node> = kube::Api::all(client.clone());
    let list = match nodes.list(&Default::default()).await {
        Ok(list) => list,
        Err(error) => {
            return Verdict::Failed {
                problem: format!(
                    "cannot list the Nodes: {}",
                    crate::errors::error_chain(&error)
                ),
                fix: "netctl needs `list` on `nodes`; check its RBAC role".to_string(),
            };
        }
    };
    let not_ready: Vec<String> = list
        .items
        .iter()
        .filter(|node| !is_ready(node))
        .map(|node| format!("`{}`", node.metadata.name.as_deref().unwrap_or("?")))
        .collect();
    if not_ready.is_empty() {
        return Verdict::Passed(format!("{} node(s) Ready", list.items.len()));
    }
    Verdict::Failed {
        problem: format!(
            "{} of {} node(s) not Ready: {}",
            not_ready.len(),
            list.items.len(),
            listing::inline(&not_ready, limit)
        ),
        fix: "a rolling update waits on every node agent: bring the nodes back (`kubectl describe node`) or cordon and remove them first".to_string(),
    }
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|ready| ready.status == "True")
}
