//! The arguments of the verification actions, which only netctl builds: `upgrade.baseline` (the
//! first step of every upgrade plan: what the cluster looks like before anything is written) and
//! `upgrade.verify` (the last step: that the cluster is as it was, at the new version), also the
//! one step of `netctl upgrade verify`; and [`Baseline`], what the first records for the second.
//!
//! Observing the cluster and comparing are `exec/actions/verify/`'s.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Arguments, HumanDuration};

/// The name under which the baseline step registers the baseline (its output, kept in the
/// checkpoint and its datastore mirror, so a resume on another machine verifies against it).
pub const BASELINE_OUTPUT: &str = "verify_baseline";

/// What the cluster's verification looks at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyScope {
    /// The install is the operator's (operator or Helm): its TigeraStatus objects are read.
    #[serde(default)]
    pub operator: bool,
    /// How long each BGP node has to report its sessions (through a temporary CalicoNodeStatus,
    /// as `netctl node status --all`).
    pub bgp_timeout: HumanDuration,
}

/// `upgrade.baseline`: record the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpgradeBaseline {
    #[serde(flatten)]
    pub scope: VerifyScope,
}

/// `upgrade.verify`: compare the cluster with the baseline, at `version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpgradeVerify {
    /// The release every node agent must run (`v3.29.0`).
    pub version: String,
    #[serde(flatten)]
    pub scope: VerifyScope,
    /// The resource kinds steps of the plan write, each with those steps: their counts and digests
    /// may change.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub changed_by: BTreeMap<String, Vec<String>>,
    /// The registered output of the baseline step ([`BASELINE_OUTPUT`]) ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_output: Option<String>,
    /// ... or the baseline itself (`netctl upgrade verify` reading a run's checkpoint). Without
    /// either, the checks are absolute: every session established, no IPAM problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Box<Baseline>>,
    /// Only these nodes (the canaries of `--canary`): their node agents and BGP sessions; IPAM,
    /// resources and TigeraStatus are left to the verification at the end. Empty: the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

impl Arguments for UpgradeBaseline {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name}: {}", self.scope.observed())
    }
}

impl Arguments for UpgradeVerify {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.nodes.is_empty() {
            return write!(
                out,
                "{name} nodes={} {}: node agents on them Ready at {}, their BGP sessions (timeout {})",
                self.nodes.join(","),
                match &self.baseline_output {
                    Some(output) => format!("against `{output}`"),
                    None => "without a baseline".to_string(),
                },
                self.version,
                self.scope.bgp_timeout
            );
        }
        write!(
            out,
            "{name} {}: node agents Ready at {}, {}",
            match (&self.baseline_output, &self.baseline) {
                (Some(output), _) => format!("against `{output}`"),
                (None, Some(baseline)) => format!("against the baseline of {}", baseline.taken_at),
                (None, None) => "without a baseline".to_string(),
            },
            self.version,
            self.scope.observed()
        )?;
        if !self.changed_by.is_empty() {
            let kinds: Vec<&str> = self.changed_by.keys().map(String::as_str).collect();
            write!(out, " (changed by the plan: {})", kinds.join(", "))?;
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        match (&self.baseline_output, &self.baseline) {
            (Some(_), Some(_)) => {
                Err("give at most one of `baseline_output` and `baseline`".into())
            }
            _ => Ok(()),
        }
    }
}

impl VerifyScope {
    /// What is observed, for the descriptions.
    fn observed(&self) -> String {
        format!(
            "BGP sessions per node (timeout {}), IPAM problems, resource counts and digests{}",
            self.bgp_timeout,
            match self.operator {
                true => ", TigeraStatus",
                false => "",
            }
        )
    }
}

/// What the cluster looked like before the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// When it was taken (RFC 3339).
    pub taken_at: String,
    /// Each BGP node (a Node with `spec.bgp`) and its sessions.
    #[serde(default)]
    pub bgp: BTreeMap<String, NodeSessions>,
    /// The problems `ipam check` found, each as its line; `None` when the check could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipam: Option<Vec<String>>,
    /// Per kind: how many resources and their digest.
    #[serde(default)]
    pub resources: BTreeMap<String, KindDigest>,
    /// What could not be observed, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_observed: Vec<String>,
}

/// One node's BGP sessions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSessions {
    /// Whether calico-node answered; `false` with `reason`.
    pub answered: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The peers whose session is established (`10.0.0.2`, IPv4 and IPv6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub established: Vec<String>,
    /// The other sessions, as `peer (state)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_established: Vec<String>,
}

/// The resources of one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindDigest {
    pub count: u64,
    /// sha256 over each resource's namespace, name, labels and spec, in list order.
    pub digest: String,
    /// Each resource's own digest (12 hex digits), for kinds of at most [`NAMED_DIGESTS`]
    /// resources: what lets a failed check name the resources that changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
}

/// Up to this many resources of a kind, the baseline keeps each one's digest.
pub const NAMED_DIGESTS: u64 = 2_000;
