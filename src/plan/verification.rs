//! The verification every upgrade plan ends with (issue 30, item 1): a first step that records the
//! baseline before anything is written, and a last step that compares the cluster with it — node
//! agents Ready at the target version, BGP sessions per node, IPAM problems, each kind's count and
//! digest (excused for the kinds a step of the plan writes, named with those steps) and, for
//! operator installs, TigeraStatus. What the steps do is `exec/actions/verify/`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use super::action::{Action, BASELINE_OUTPUT, UpgradeBaseline, UpgradeVerify, VerifyScope};
use super::{Facts, HumanDuration, InstallMethod, Phase, PlannedStep, Release};
use crate::resource::Kind;

/// The runbook name of the two steps (`verify/baseline`, `verify/cluster`).
pub const VERIFY_RUNBOOK: &str = "verify";
/// The id of the baseline step.
pub const BASELINE_STEP: &str = "verify/baseline";
/// The id of the verification step.
pub const VERIFY_STEP: &str = "verify/cluster";
/// How long each BGP node has to report its sessions.
const BGP_TIMEOUT: Duration = Duration::from_secs(30);

/// `steps` between the baseline and the verification.
pub fn around(steps: Vec<PlannedStep>, to: &Release, facts: &Facts) -> Vec<PlannedStep> {
    let scope = VerifyScope {
        operator: matches!(
            facts.install_method.value,
            InstallMethod::Operator | InstallMethod::Helm
        ),
        bgp_timeout: HumanDuration(BGP_TIMEOUT),
    };
    let reason = "every plan ends with its verification (docs/executor.md, \"Verification\")";
    let mut baseline = PlannedStep::new(
        BASELINE_STEP,
        VERIFY_RUNBOOK,
        Phase::PreUpgrade,
        Action::UpgradeBaseline(UpgradeBaseline {
            scope: scope.clone(),
        }),
        "Record what the verification compares with: BGP sessions per node, IPAM problems, each kind's count and digest",
        reason,
    );
    baseline.register = Some(BASELINE_OUTPUT.to_string());
    let mut verify = PlannedStep::new(
        VERIFY_STEP,
        VERIFY_RUNBOOK,
        Phase::Finish,
        Action::UpgradeVerify(UpgradeVerify {
            version: to.to_string(),
            scope,
            changed_by: changed_by(&steps),
            baseline_output: Some(BASELINE_OUTPUT.to_string()),
            baseline: None,
            nodes: Vec::new(),
        }),
        format!("Verify the cluster at {to} against the baseline"),
        reason,
    );
    verify.needs = vec![BASELINE_STEP.to_string()];
    let mut all = Vec::with_capacity(steps.len() + 2);
    all.push(baseline);
    all.extend(steps);
    all.push(verify);
    all
}

/// The kinds steps write, each with those steps.
fn changed_by(steps: &[PlannedStep]) -> BTreeMap<String, Vec<String>> {
    let mut kinds: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for step in steps {
        for kind in written_kinds(&step.action) {
            let steps = kinds.entry(kind.to_string()).or_default();
            if !steps.contains(&step.id) {
                steps.push(step.id.clone());
            }
        }
    }
    kinds
}

/// The kinds of resources an action writes. A create, apply or replace also makes sure the tiers
/// `default` and `adminnetworkpolicy` exist, as upstream's `EnsureInitialized` (docs/architecture.md).
pub(crate) fn written_kinds(action: &Action) -> Vec<Kind> {
    match action {
        Action::ResourceCreate(documents)
        | Action::ResourceApply(documents)
        | Action::ResourceReplace(documents) => {
            let mut kinds: Vec<Kind> = documents.documents.iter().map(|doc| doc.kind).collect();
            kinds.push(Kind::Tier);
            kinds
        }
        Action::ResourceLabelEach(each) => vec![each.kind],
        Action::ResourcePatch(patch) => vec![patch.kind],
        other => other
            .written_resources()
            .unwrap_or_default()
            .into_iter()
            .map(|key| key.kind)
            .collect(),
    }
}
