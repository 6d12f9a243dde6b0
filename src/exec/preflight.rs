//! Pre-flight: what must hold before an upgrade run writes anything (issue 17, item 1).
//!
//! [`preflight`] looks at the steps a run is about to take and checks, without writing: the
//! datastore answers a read (`datastore`); when steps talk to Kubernetes, a cluster is configured
//! and its API server answers (`cluster`); and every Node is Ready (`nodes-ready`), since a rolling
//! update waits on each node agent. A failed check stops the run before the lock is taken, with what
//! to do about it; `--skip-preflight CHECK` passes one, and the run journals that it was skipped.
//! Not yet checked here (docs/executor.md says so): etcd member health and quota, per-step
//! permissions (SelfSubjectAccessReview), API availability, node agent versions.
//!
//! It decides nothing about which steps run (the plan did) and writes nothing.

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::core::v1::Node;

use crate::datastore::{Datastore, StoreError};
use crate::plan::PlannedStep;
use crate::resource::{Kind, ResourceKey};

/// The checks, by the names `--skip-preflight` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Check {
    Datastore,
    Cluster,
    NodesReady,
}

impl Check {
    pub const ALL: [Check; 3] = [Check::Datastore, Check::Cluster, Check::NodesReady];

    pub fn name(self) -> &'static str {
        match self {
            Check::Datastore => "datastore",
            Check::Cluster => "cluster",
            Check::NodesReady => "nodes-ready",
        }
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

/// Every finding of one pre-flight.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreflightReport {
    pub findings: Vec<Finding>,
}

impl PreflightReport {
    pub fn failures(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| matches!(finding.verdict, Verdict::Failed { .. }))
    }

    /// One line per check, as the run prints them.
    pub fn lines(&self) -> Vec<String> {
        self.findings
            .iter()
            .map(|finding| match &finding.verdict {
                Verdict::Passed(what) => format!("pre-flight {}: ok ({what})", finding.check),
                Verdict::NotRun(why) => format!("pre-flight {}: not run ({why})", finding.check),
                Verdict::Failed { problem, .. } => {
                    format!("pre-flight {}: FAILED: {problem}", finding.check)
                }
            })
            .collect()
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

impl PreflightFailed {
    pub fn hint(&self) -> String {
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
        fixes.join("; ")
    }
}

/// Runs the checks `steps` need, except those in `skip`.
pub async fn preflight(
    store: &dyn Datastore,
    cluster: Option<&kube::Client>,
    steps: &[&PlannedStep],
    skip: &BTreeSet<Check>,
) -> PreflightReport {
    let kubernetes_steps: Vec<&str> = steps
        .iter()
        .filter(|step| step.action.name().starts_with("kube."))
        .map(|step| step.id.as_str())
        .collect();
    let mut findings: Vec<Finding> = Vec::new();
    for check in Check::ALL {
        let cluster_answered = findings.iter().any(|finding| {
            finding.check == Check::Cluster && matches!(finding.verdict, Verdict::Passed(_))
        });
        let verdict = if skip.contains(&check) {
            Verdict::NotRun("skipped with `--skip-preflight`".to_string())
        } else {
            match check {
                Check::Datastore => datastore(store).await,
                Check::Cluster => cluster_reachable(cluster, &kubernetes_steps).await,
                // Asking a cluster that did not answer would only repeat that.
                Check::NodesReady if !cluster_answered => {
                    Verdict::NotRun("the cluster check did not pass".to_string())
                }
                Check::NodesReady => nodes_ready(cluster, &kubernetes_steps).await,
            }
        };
        findings.push(Finding { check, verdict });
    }
    PreflightReport { findings }
}

async fn datastore(store: &dyn Datastore) -> Verdict {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    match store.get(&key).await {
        Ok(_) => Verdict::Passed(format!("{} answered", store.kind())),
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
                .map(str::to_string)
                .unwrap_or_else(|| "check the datastore settings and that it runs".to_string()),
        },
    }
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

async fn nodes_ready(cluster: Option<&kube::Client>, kubernetes_steps: &[&str]) -> Verdict {
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
            not_ready.join(", ")
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
