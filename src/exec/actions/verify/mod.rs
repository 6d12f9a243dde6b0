//! The verification family: `upgrade.baseline` records what the cluster looks like before a run
//! writes anything (the first step of every upgrade plan), `upgrade.verify` compares the cluster
//! with it after the last step (and is the one step of `netctl upgrade verify`).
//!
//! `observe.rs` reads (BGP sessions through temporary CalicoNodeStatus objects, the IPAM check,
//! each kind's count and digest, the node agent pods, TigeraStatus); `compare.rs` judges. A failed
//! verification is a [`VerificationFailed`] error carrying the whole report: the executor stops the
//! run at that step as at a gate, with the report and the way back (`exec/execute.rs`).
//!
//! In dry-run both read the Nodes and say what they would observe; nothing is created.

pub mod compare;
pub mod observe;

use std::collections::BTreeSet;

use super::{Context, Outcome, Perform, Performed, RunMode, StepError};
use crate::exec::clock::now_rfc3339;
use crate::plan::Action;
use crate::plan::action::{Baseline, UpgradeBaseline, UpgradeVerify, VerifyScope};
use compare::{Report, Verdict};
use observe::ObserveError;

/// The verification found the cluster worse than before the run.
#[derive(Debug, thiserror::Error)]
#[error("verification failed: {}", summary(.report))]
#[derive(Clone)]
pub struct VerificationFailed {
    pub report: Report,
    /// What the failure means, after "verification failed at `STEP`: " (the run's gate message).
    pub meaning: &'static str,
}

impl VerificationFailed {
    /// A failed `upgrade.verify`: the cluster compared with the run's baseline.
    pub fn of_upgrade(report: Report) -> VerificationFailed {
        VerificationFailed {
            report,
            meaning: "the cluster is not as it was before the run",
        }
    }
}

fn summary(report: &Report) -> String {
    report
        .failed()
        .map(|finding| {
            let evidence = match finding.evidence.as_slice() {
                [] => String::new(),
                lines => format!(" ({})", lines.join("; ")),
            };
            format!("{}: {}{evidence}", finding.check, finding.summary)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a verification step failed.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Failed(#[from] VerificationFailed),
    #[error(transparent)]
    Observe(#[from] ObserveError),
    #[error("the baseline `{output}` is not among the run's recorded outputs")]
    NoBaseline { output: String },
    #[error("the baseline `{output}` cannot be read")]
    DamagedBaseline {
        output: String,
        #[source]
        source: serde_json::Error,
    },
}

impl crate::errors::Hint for VerifyError {
    fn hint(&self) -> Option<String> {
        match self {
            VerifyError::Failed(_) => Some(
                "fix what failed, then verify again (`netctl upgrade verify`, or `netctl upgrade apply --resume` in a run); the steps' rollback advice says how to go back".to_string(),
            ),
            VerifyError::Observe(error) => error.hint(),
            VerifyError::NoBaseline { .. } | VerifyError::DamagedBaseline { .. } => {
                Some("`netctl upgrade verify` checks the cluster without a baseline".to_string())
            }
        }
    }
}

impl VerifyError {
    /// The failed verification, with its report.
    pub fn failed(&self) -> Option<&VerificationFailed> {
        match self {
            VerifyError::Failed(failed) => Some(failed),
            _ => None,
        }
    }
}

impl From<VerifyError> for StepError {
    fn from(error: VerifyError) -> StepError {
        StepError::Verify(Box::new(error))
    }
}

impl From<ObserveError> for StepError {
    fn from(error: ObserveError) -> StepError {
        VerifyError::Observe(error).into()
    }
}

impl Perform for UpgradeBaseline {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let nodes = observe::bgp_nodes(store).await?;
        if mode == RunMode::DryRun {
            return Ok(Outcome::line(format!(
                "would record the baseline: the sessions of {} BGP node(s), the IPAM check's problems, each kind's count and digest",
                nodes.len()
            )));
        }
        let baseline = take(store, context, &self.scope, &nodes).await?;
        let sessions: usize = baseline
            .bgp
            .values()
            .map(|node| node.established.len())
            .sum();
        let resources: u64 = baseline.resources.values().map(|kind| kind.count).sum();
        let summary = format!(
            "baseline: {} BGP node(s) with {sessions} session(s) established, {}, {} kind(s) with {resources} resource(s)",
            baseline.bgp.len(),
            match &baseline.ipam {
                Some(problems) => format!("{} IPAM problem(s)", problems.len()),
                None => "IPAM not checked".to_string(),
            },
            baseline.resources.len()
        );
        let mut transcript = vec![summary.clone()];
        transcript.extend(
            baseline
                .not_observed
                .iter()
                .map(|why| format!("not recorded: {why}")),
        );
        Ok(Outcome {
            summary,
            transcript,
            output: Some(serde_json::to_value(&baseline).unwrap_or_default()),
        })
    }

    /// It reads, and deletes the status objects it creates.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl Perform for UpgradeVerify {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let baseline = self.baseline(context)?;
        let nodes = observe::bgp_nodes(store).await?;
        if !self.nodes.is_empty() {
            return self
                .verify_nodes(context, store, mode, baseline, nodes)
                .await;
        }
        if mode == RunMode::DryRun {
            return Ok(Outcome::line(format!(
                "would verify: node agents Ready at {}, the sessions of {} BGP node(s), IPAM, resource counts and digests{}",
                self.version,
                nodes.len(),
                if self.scope.operator {
                    ", TigeraStatus"
                } else {
                    ""
                }
            )));
        }
        let now = take(store, context, &self.scope, &nodes).await?;
        let mut report = Report::default();
        report.push(match &context.kubernetes {
            Some(client) => compare::node_agents(
                &self.version,
                observe::node_agents(client, &self.version, &[]).await,
            ),
            None => compare::not_checked(
                "node-agents",
                "no cluster is configured to read the calico-node pods from".to_string(),
            ),
        });
        report.push(compare::bgp(
            baseline.as_ref().map(|baseline| &baseline.bgp),
            &now.bgp,
        ));
        report.push(match &now.ipam {
            Some(problems) => {
                let problems: BTreeSet<String> = problems.iter().cloned().collect();
                compare::ipam(baseline.as_ref().and_then(|b| b.ipam.as_ref()), &problems)
            }
            None => compare::not_checked("ipam", now.not_observed.join("; ")),
        });
        report.push(match &baseline {
            Some(baseline) => {
                compare::resources(&baseline.resources, &now.resources, &self.changed_by)
            }
            None => compare::not_checked(
                "resources",
                "no baseline to compare the counts and digests with".to_string(),
            ),
        });
        if self.scope.operator {
            report.push(match &context.kubernetes {
                Some(client) => compare::tigera_status(observe::tigera_status(client).await),
                None => compare::not_checked(
                    "tigera-status",
                    "no cluster is configured to read TigeraStatus from".to_string(),
                ),
            });
        }
        if report.failed().next().is_some() {
            return Err(VerifyError::Failed(VerificationFailed::of_upgrade(report)).into());
        }
        let checked = report
            .findings
            .iter()
            .filter(|finding| finding.verdict == Verdict::Passed)
            .count();
        Ok(Outcome {
            summary: format!(
                "verified: {checked} of {} checks passed, none failed",
                report.findings.len()
            ),
            transcript: report.lines(),
            output: Some(serde_json::to_value(&report).unwrap_or_default()),
        })
    }

    /// It reads, and deletes the status objects it creates.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

impl UpgradeVerify {
    /// The canaries' verification (`nodes`): their node agents at the version and Ready, their BGP
    /// sessions as many as in the baseline; the rest waits for the verification at the end.
    async fn verify_nodes(
        &self,
        context: &Context<'_>,
        store: &dyn crate::datastore::Datastore,
        mode: RunMode,
        baseline: Option<Baseline>,
        bgp_nodes: Vec<String>,
    ) -> Performed {
        let bgp_nodes: Vec<String> = bgp_nodes
            .into_iter()
            .filter(|node| self.nodes.contains(node))
            .collect();
        let listed = self.nodes.join(", ");
        if mode == RunMode::DryRun {
            return Ok(Outcome::line(format!(
                "would verify node(s) {listed}: node agents Ready at {}, the sessions of {} BGP node(s) among them",
                self.version,
                bgp_nodes.len()
            )));
        }
        let mut report = Report::default();
        report.push(match &context.kubernetes {
            Some(client) => compare::node_agents(
                &self.version,
                observe::node_agents(client, &self.version, &self.nodes).await,
            ),
            None => compare::not_checked(
                "node-agents",
                "no cluster is configured to read the calico-node pods from".to_string(),
            ),
        });
        let now = observe::bgp_sessions(
            store,
            &bgp_nodes,
            self.scope.bgp_timeout.0,
            context.interrupt.as_ref(),
            context.progress.printer(),
        )
        .await?;
        let before = baseline.map(|baseline| {
            baseline
                .bgp
                .into_iter()
                .filter(|(node, _)| self.nodes.contains(node))
                .collect()
        });
        report.push(compare::bgp(before.as_ref(), &now));
        if report.failed().next().is_some() {
            return Err(VerifyError::Failed(VerificationFailed::of_upgrade(report)).into());
        }
        Ok(Outcome {
            summary: format!(
                "verified node(s) {listed}: node agents at {}, BGP sessions as before",
                self.version
            ),
            transcript: report.lines(),
            output: Some(serde_json::to_value(&report).unwrap_or_default()),
        })
    }

    /// The baseline the step names: a registered output of the run, or its own.
    fn baseline(&self, context: &Context<'_>) -> Result<Option<Baseline>, VerifyError> {
        if let Some(baseline) = &self.baseline {
            return Ok(Some((**baseline).clone()));
        }
        let Some(output) = &self.baseline_output else {
            return Ok(None);
        };
        let value = context
            .outputs
            .get(output)
            .ok_or_else(|| VerifyError::NoBaseline {
                output: output.clone(),
            })?;
        serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|source| VerifyError::DamagedBaseline {
                output: output.clone(),
                source,
            })
    }
}

/// Observes the cluster: what a baseline records (and what verification compares with it).
async fn take(
    store: &dyn crate::datastore::Datastore,
    context: &Context<'_>,
    scope: &VerifyScope,
    nodes: &[String],
) -> Result<Baseline, ObserveError> {
    let mut baseline = Baseline {
        taken_at: now_rfc3339(),
        ..Baseline::default()
    };
    baseline.bgp = observe::bgp_sessions(
        store,
        nodes,
        scope.bgp_timeout.0,
        context.interrupt.as_ref(),
        context.progress.printer(),
    )
    .await?;
    match observe::ipam_problems(store, context.kubernetes.as_ref()).await? {
        Ok(problems) => baseline.ipam = Some(problems.into_iter().collect()),
        Err(why) => baseline.not_observed.push(format!("IPAM: {why}")),
    }
    baseline.resources = observe::resources(store).await?;
    Ok(baseline)
}
