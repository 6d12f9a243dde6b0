//! The canary node rollout (issue 30, item 4): `--canary N` or `--canary-selector SELECTOR` rolls
//! the node agent to a few nodes first, verifies them, stops at a gate, then rolls the rest.
//!
//! The mechanism depends on who owns the node agent's DaemonSet, and each install method says so:
//!
//! - **manifest installs** own it: the manifest's apply step applies the DaemonSet with
//!   `updateStrategy: OnDelete` (its own strategy kept in an annotation), `kube.replace-pods`
//!   replaces the canaries' pods node by node, `upgrade.verify` checks those nodes, a `pause` waits
//!   for the operator, `kube.replace-pods` replaces the rest, `kube.restore-update-strategy` puts
//!   the strategy back, and the runbook's wait for the rollout follows as before;
//! - **operator installs**: the operator reconciles calico-node from
//!   `Installation.spec.nodeUpdateStrategy` — a DaemonSet update strategy with no way to name
//!   nodes (the Installation CRD upstream ships:
//!   `charts/crd.projectcalico.org.v1/templates/operator.tigera.io_installations.yaml`) — and undoes
//!   a hand edit of the DaemonSet within seconds, so a canary is refused, naming the rolling
//!   update's `maxUnavailable: 1` as what the operator offers;
//! - **Helm installs** are the operator too: the chart (`charts/tigera-operator`) copies its
//!   `installation:` values into the Installation, so the same strategy is all its values reach.
//!
//! The canary nodes are chosen when planning (`--canary N`: the first N nodes by name; a selector:
//! the nodes the API server says match it), shown in the plan and kept in it (under its digest), so
//! a resume rolls the same nodes and a resume asked for another canary is refused as a stale plan.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::action::{
    Action, BASELINE_OUTPUT, KubeReplacePods, KubeRestoreUpdateStrategy, Pause, UpgradeVerify,
    VerifyScope,
};
use super::verification::BASELINE_STEP;
use super::{HumanDuration, InstallMethod, Phase, Plan, PlannedStep, PlannedUndo};
use crate::errors::Hint;

/// The runbook name of the canary steps (`canary/roll-canaries`, ...).
pub const CANARY_RUNBOOK: &str = "canary";
/// The gate between the canaries and the rest.
pub const CANARY_GATE: &str = "canary/approve";
/// How long each node's new node agent pod may take to be Ready.
const NODE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);
/// How long each canary node has to report its BGP sessions.
const BGP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// What the user asked for: `--canary N` or `--canary-selector SELECTOR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CanaryRequest {
    Count(u32),
    Selector(String),
}

impl fmt::Display for CanaryRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CanaryRequest::Count(count) => write!(f, "--canary {count}"),
            CanaryRequest::Selector(selector) => write!(f, "--canary-selector '{selector}'"),
        }
    }
}

/// The canary of a plan: what was asked, the nodes it chose and how they roll.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Canary {
    /// `--canary N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// `--canary-selector SELECTOR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The canary nodes, in the order they roll.
    pub nodes: Vec<String>,
    /// How many nodes the cluster had when planning.
    pub of_nodes: usize,
    /// How the node agent is rolled to them, for the install method.
    pub mechanism: String,
}

impl Canary {
    /// The request this canary was made from.
    pub fn request(&self) -> CanaryRequest {
        match (&self.count, &self.selector) {
            (Some(count), _) => CanaryRequest::Count(*count),
            (None, selector) => CanaryRequest::Selector(selector.clone().unwrap_or_default()),
        }
    }

    /// The plan's line about it.
    pub fn line(&self) -> String {
        format!(
            "canary: {} of {} node(s) first ({}), then a gate, then the rest; {}",
            self.nodes.len(),
            self.of_nodes,
            self.nodes.join(", "),
            self.mechanism
        )
    }
}

/// The manifest mechanism, as the plan and `--help` name it.
pub const MANIFEST_MECHANISM: &str = "manifest install: the DaemonSet is applied with `updateStrategy: OnDelete`, the canaries' pods are deleted and replaced node by node, then the rest, then the DaemonSet's own strategy is restored";

/// Why a canary cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum CanaryError {
    #[error(
        "`--canary` is refused on operator installs: the operator rolls calico-node from `Installation.spec.nodeUpdateStrategy`, a DaemonSet update strategy with no way to name nodes, and undoes an edit of its DaemonSet within seconds"
    )]
    Operator,
    #[error(
        "`--canary` is refused on Helm installs: the chart (`tigera-operator`) hands its `installation` values to the operator's Installation, whose `nodeUpdateStrategy` is a DaemonSet update strategy with no way to name nodes"
    )]
    Helm,
    #[error("`--canary` needs the cluster to choose the canary nodes from, and none is configured")]
    NoCluster,
    #[error("cannot list the cluster's nodes to choose the canaries")]
    ListNodes(#[source] Box<kube::Error>),
    #[error("`--canary {count}` must be at least 1")]
    Zero { count: u32 },
    #[error(
        "`--canary {count}` leaves no node for after the gate: the cluster has {nodes} node(s); the canary must be fewer"
    )]
    TooMany { count: u32, nodes: usize },
    #[error("`--canary-selector '{selector}'` matches no node (of {nodes})")]
    SelectorMatchesNone { selector: String, nodes: usize },
    #[error(
        "`--canary-selector '{selector}'` matches every node ({nodes}): nothing would be left for after the gate"
    )]
    SelectorMatchesAll { selector: String, nodes: usize },
    #[error(
        "the `{procedure}` plan has no step that rolls the node agent's DaemonSet from a manifest: `--canary` applies to upgrades of manifest installs"
    )]
    NoNodeAgentRollout { procedure: String },
}

impl Hint for CanaryError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            CanaryError::Operator | CanaryError::Helm => {
                let how = match self {
                    CanaryError::Helm => "`--set installation.nodeUpdateStrategy.rollingUpdate.maxUnavailable=1` on the chart",
                    _ => "`kubectl patch installation default --type=merge -p '{\"spec\":{\"nodeUpdateStrategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":1}}}}'`",
                };
                format!(
                    "leave out `--canary`; to roll one node at a time instead, set the rolling update's `maxUnavailable` to 1 before the upgrade ({how})"
                )
            }
            CanaryError::NoCluster | CanaryError::ListNodes(_) => {
                "configure the cluster (KUBECONFIG or `--context`) and check that it answers `kubectl get nodes`".to_string()
            }
            CanaryError::Zero { .. } | CanaryError::TooMany { .. } => {
                "give a number from 1 to one less than the number of nodes (`kubectl get nodes`)".to_string()
            }
            CanaryError::SelectorMatchesNone { .. } | CanaryError::SelectorMatchesAll { .. } => {
                "check the selector with `kubectl get nodes -l SELECTOR`".to_string()
            }
            CanaryError::NoNodeAgentRollout { .. } => return None,
        })
    }
}

/// How the node agent is rolled to the canaries on `install_method`, or why it cannot be.
pub fn mechanism(install_method: InstallMethod) -> Result<&'static str, CanaryError> {
    match install_method {
        InstallMethod::Manifest => Ok(MANIFEST_MECHANISM),
        InstallMethod::Operator => Err(CanaryError::Operator),
        InstallMethod::Helm => Err(CanaryError::Helm),
    }
}

/// The canary nodes: the first `N` of `all` by name, or `selected` (the nodes the selector
/// matched); refused when none would be left for after the gate.
pub fn choose(
    request: &CanaryRequest,
    all: &[String],
    selected: &[String],
) -> Result<Vec<String>, CanaryError> {
    let mut all = all.to_vec();
    all.sort();
    match request {
        CanaryRequest::Count(0) => Err(CanaryError::Zero { count: 0 }),
        CanaryRequest::Count(count) if *count as usize >= all.len() => Err(CanaryError::TooMany {
            count: *count,
            nodes: all.len(),
        }),
        CanaryRequest::Count(count) => Ok(all[..*count as usize].to_vec()),
        CanaryRequest::Selector(selector) => {
            let mut chosen: Vec<String> = selected
                .iter()
                .filter(|node| all.contains(node))
                .cloned()
                .collect();
            chosen.sort();
            match chosen.len() {
                0 => Err(CanaryError::SelectorMatchesNone {
                    selector: selector.clone(),
                    nodes: all.len(),
                }),
                n if n == all.len() => Err(CanaryError::SelectorMatchesAll {
                    selector: selector.clone(),
                    nodes: all.len(),
                }),
                _ => Ok(chosen),
            }
        }
    }
}

/// The names of every node, and of those `selector` matches (the API server judges it, as
/// `kubectl get nodes -l` does). Reads only.
pub async fn read_nodes(
    client: &kube::Client,
    request: &CanaryRequest,
) -> Result<(Vec<String>, Vec<String>), CanaryError> {
    use kube::api::{Api, ListParams};
    let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let names = |list: kube::core::ObjectList<k8s_openapi::api::core::v1::Node>| {
        list.items
            .into_iter()
            .filter_map(|node| node.metadata.name)
            .collect::<Vec<_>>()
    };
    let error = |error| CanaryError::ListNodes(Box::new(error));
    let all = names(api.list(&ListParams::default()).await.map_err(error)?);
    let selected = match request {
        CanaryRequest::Count(_) => Vec::new(),
        CanaryRequest::Selector(selector) => names(
            api.list(&ListParams::default().labels(selector))
                .await
                .map_err(error)?,
        ),
    };
    Ok((all, selected))
}

/// Puts the canary steps into `plan` (see the module's documentation) and seals it again.
pub fn insert(plan: &mut Plan, canary: Canary) -> Result<(), CanaryError> {
    let no_rollout = || CanaryError::NoNodeAgentRollout {
        procedure: plan.procedure.clone(),
    };
    // The runbook's wait for the node agent's DaemonSet, and the manifest apply it waits on.
    let (wait_index, apply_id, namespace, daemon_set) = plan
        .steps
        .iter()
        .enumerate()
        .find_map(|(index, step)| {
            let Action::KubeWaitRollout(wait) = &step.action else {
                return None;
            };
            let name = wait.name.clone().filter(|_| wait.kind == "DaemonSet")?;
            let apply = step.needs.iter().find(|need| {
                plan.steps.iter().any(|other| {
                    &other.id == *need
                        && matches!(&other.action, Action::KubeApply(apply) if apply.save_previous.is_some())
                })
            })?;
            Some((index, apply.clone(), wait.namespace.clone(), name))
        })
        .ok_or_else(no_rollout)?;
    let apply_index = plan
        .steps
        .iter()
        .position(|step| step.id == apply_id)
        .ok_or_else(no_rollout)?;
    if let Action::KubeApply(apply) = &mut plan.steps[apply_index].action {
        apply.hold_daemon_set = Some(daemon_set.clone());
    }
    let to = plan.to.to_string();
    let nodes = canary.nodes.clone();
    let rest = canary.of_nodes.saturating_sub(nodes.len());
    let reason = format!(
        "{} (docs/upgrade-procedures.md, \"Canary node rollout\")",
        canary.request()
    );
    let step = |id: &str, action: Action, description: String, needs: &str, undo: &str| {
        let mut step = PlannedStep::new(
            format!("{CANARY_RUNBOOK}/{id}"),
            CANARY_RUNBOOK,
            Phase::Upgrade,
            action,
            description,
            reason.clone(),
        );
        step.needs = vec![needs.to_string()];
        step.undo = Some(PlannedUndo {
            description: undo.to_string(),
            action: None,
            from_backup: false,
        });
        step
    };
    let replace = |nodes: Vec<String>| {
        Action::KubeReplacePods(KubeReplacePods {
            namespace: namespace.clone(),
            daemon_set: daemon_set.clone(),
            nodes,
            timeout: HumanDuration(NODE_TIMEOUT),
        })
    };
    let pods_undo = format!(
        "nothing of its own to undo: going back past `{apply_id}` re-applies the previous DaemonSet, whose controller replaces these pods"
    );
    let mut verify = step(
        "verify-canaries",
        Action::UpgradeVerify(UpgradeVerify {
            version: to.clone(),
            scope: VerifyScope {
                operator: false,
                bgp_timeout: HumanDuration(BGP_TIMEOUT),
            },
            changed_by: Default::default(),
            baseline_output: Some(BASELINE_OUTPUT.to_string()),
            baseline: None,
            nodes: nodes.clone(),
        }),
        format!(
            "Verify the canary node(s) {}: node agent Ready at {to}, BGP sessions as many as before",
            nodes.join(", ")
        ),
        "canary/roll-canaries",
        "nothing to undo: it only reads",
    );
    verify.needs.push(BASELINE_STEP.to_string());
    let message = format!(
        "The node agent runs {to} on the canary node(s) {} and they passed their verification. Check them (their workloads, `netctl node status --node NODE`), then continue: the next step rolls the other {rest} node(s). To go back instead: `netctl upgrade rollback`.",
        nodes.join(", ")
    );
    let canary_steps = vec![
        step(
            "roll-canaries",
            replace(nodes.clone()),
            format!(
                "Replace the node agent pods of the canary node(s) {}, one node at a time",
                nodes.join(", ")
            ),
            &apply_id,
            &pods_undo,
        ),
        verify,
        step(
            "approve",
            Action::Pause(Pause { message }),
            format!("Approve rolling the node agent to the other {rest} node(s)"),
            "canary/verify-canaries",
            "nothing to undo: a gate",
        ),
        step(
            "roll-rest",
            replace(Vec::new()),
            format!("Replace the node agent pods of the other {rest} node(s), one node at a time"),
            CANARY_GATE,
            &pods_undo,
        ),
        step(
            "restore-update-strategy",
            Action::KubeRestoreUpdateStrategy(KubeRestoreUpdateStrategy {
                namespace: namespace.clone(),
                daemon_set: daemon_set.clone(),
            }),
            format!("Give DaemonSet {daemon_set} back its own update strategy"),
            "canary/roll-rest",
            &format!(
                "nothing of its own to undo: going back past `{apply_id}` re-applies the previous DaemonSet with its strategy"
            ),
        ),
    ];
    let last = canary_steps
        .last()
        .map(|step| step.id.clone())
        .unwrap_or_default();
    plan.steps[wait_index].needs.push(last);
    let after_apply = apply_index + 1;
    plan.steps.splice(after_apply..after_apply, canary_steps);
    plan.canary = Some(canary);
    plan.digest = plan.compute_digest();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_count_takes_the_first_nodes_by_name_and_leaves_at_least_one() {
        let all = names(&["node-c", "node-a", "node-b"]);
        let one = choose(&CanaryRequest::Count(1), &all, &[]).unwrap();
        assert_eq!(one, names(&["node-a"]));
        assert!(matches!(
            choose(&CanaryRequest::Count(3), &all, &[]),
            Err(CanaryError::TooMany { count: 3, nodes: 3 })
        ));
        assert!(matches!(
            choose(&CanaryRequest::Count(0), &all, &[]),
            Err(CanaryError::Zero { count: 0 })
        ));
    }

    #[test]
    fn a_selector_needs_some_nodes_and_not_all() {
        let all = names(&["a", "b", "c"]);
        let selector = CanaryRequest::Selector("canary=yes".into());
        assert_eq!(
            choose(&selector, &all, &names(&["c", "b"])).unwrap(),
            names(&["b", "c"])
        );
        assert!(matches!(
            choose(&selector, &all, &[]),
            Err(CanaryError::SelectorMatchesNone { .. })
        ));
        assert!(matches!(
            choose(&selector, &all, &all),
            Err(CanaryError::SelectorMatchesAll { .. })
        ));
    }

    fn step(id: &str, action: &str, with: serde_json::Value, needs: &[&str]) -> PlannedStep {
        let action = Action::from_parts(action, with).expect("action");
        let mut step = PlannedStep::new(id, "m", Phase::Upgrade, action, id, "test");
        step.needs = needs.iter().map(|need| need.to_string()).collect();
        step
    }

    fn plan(steps: Vec<PlannedStep>) -> Plan {
        let facts = crate::plan::resolve::test_support::facts(&crate::plan::Release::new(3, 25, 2));
        let (from, to) = (
            crate::plan::Release::new(3, 25, 2),
            crate::plan::Release::new(3, 29, 0),
        );
        Plan::new("upgrade", from, to, facts, steps)
    }

    fn canary(nodes: &[&str]) -> Canary {
        Canary {
            count: Some(nodes.len() as u32),
            selector: None,
            nodes: names(nodes),
            of_nodes: 3,
            mechanism: MANIFEST_MECHANISM.to_string(),
        }
    }

    #[test]
    fn the_canary_steps_go_between_the_manifest_apply_and_the_wait_for_the_daemon_set() {
        let apply = serde_json::json!({"source": {"file": "upgrade.yaml"}, "server_side": true,
                                       "save_previous": "previous-manifest.yaml"});
        let wait = serde_json::json!({"namespace": "kube-system", "kind": "DaemonSet",
                                      "name": "calico-node"});
        let mut planned = plan(vec![
            step("m/apply", "kube.apply", apply, &[]),
            step("m/wait", "kube.wait-rollout", wait, &["m/apply"]),
        ]);
        let digest = planned.digest.clone();
        insert(&mut planned, canary(&["node-a"])).unwrap();
        let ids: Vec<&str> = planned.steps.iter().map(|step| step.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "m/apply",
                "canary/roll-canaries",
                "canary/verify-canaries",
                "canary/approve",
                "canary/roll-rest",
                "canary/restore-update-strategy",
                "m/wait"
            ]
        );
        let Action::KubeApply(apply) = &planned.steps[0].action else {
            panic!()
        };
        assert_eq!(apply.hold_daemon_set.as_deref(), Some("calico-node"));
        assert_eq!(
            planned.steps[6].needs,
            ["m/apply", "canary/restore-update-strategy"]
        );
        assert!(planned.steps[1..6].iter().all(|step| step.undo.is_some()));
        assert_ne!(planned.digest, digest, "the canary is under the digest");
        assert!(planned.digest_is_valid());
        assert_eq!(
            planned.canary.as_ref().map(Canary::request),
            Some(CanaryRequest::Count(1))
        );
    }

    #[test]
    fn a_plan_that_rolls_no_daemon_set_from_a_manifest_has_no_canary() {
        let mut planned = plan(vec![step(
            "m/gate",
            "pause",
            serde_json::json!({"message": "go?"}),
            &[],
        )]);
        let error = insert(&mut planned, canary(&["node-a"])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the `upgrade` plan has no step that rolls the node agent's DaemonSet from a manifest: `--canary` applies to upgrades of manifest installs"
        );
        assert!(planned.canary.is_none());
    }

    #[test]
    fn operator_and_helm_installs_refuse_with_the_alternative() {
        assert!(mechanism(InstallMethod::Manifest).is_ok());
        for method in [InstallMethod::Operator, InstallMethod::Helm] {
            let error = mechanism(method).unwrap_err();
            assert!(error.to_string().contains("nodeUpdateStrategy"), "{error}");
            assert!(error.hint().unwrap().contains("maxUnavailable"));
        }
    }
}
