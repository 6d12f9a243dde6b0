//! The words runbooks and plans share: phases, retry policies, install methods, human-written
//! durations and the names of the actions a runbook may use.
//!
//! Runbook files are written in these words and plans are made of them, so they live below both:
//! `runbook` (the file format) and `plan` (facts, resolution, actions) import this module, and it
//! imports neither. It holds plain values and their text forms only; what an action does is in `plan`
//! and `exec`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Every action name a runbook may use, in documentation order (`plan::Action` has one variant for
/// each, and `node.run`, which only `netctl node run` builds).
pub const RUNBOOK_ACTIONS: [&str; 23] = [
    "resource.get",
    "resource.list",
    "resource.create",
    "resource.apply",
    "resource.replace",
    "resource.delete",
    "resource.label",
    "resource.patch",
    "resource.wait",
    "kube.apply",
    "kube.patch",
    "kube.annotate",
    "kube.label",
    "kube.list",
    "kube.delete",
    "kube.wait-rollout",
    "kube.restore-owner-reference",
    "kube.restart",
    "fetch",
    "helm",
    "exec",
    "check",
    "pause",
];

/// The phases of an upgrade, in the order they run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Preparation that must happen while the old version runs.
    PreUpgrade,
    /// Replacing the software.
    Upgrade,
    /// Checks and follow-ups once the new version runs.
    PostUpgrade,
    /// Clean-up after the operator has reviewed the result (e.g. removing temporary policy).
    Finish,
}

impl Phase {
    pub const ALL: [Phase; 4] = [
        Phase::PreUpgrade,
        Phase::Upgrade,
        Phase::PostUpgrade,
        Phase::Finish,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::PreUpgrade => "pre-upgrade",
            Phase::Upgrade => "upgrade",
            Phase::PostUpgrade => "post-upgrade",
            Phase::Finish => "finish",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How often to retry a failed step and how long to wait between attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Total attempts, including the first (at least 1).
    #[schemars(range(min = 1))]
    pub attempts: u32,
    /// Pause between attempts, e.g. `10s`.
    #[serde(default = "default_retry_delay")]
    pub delay: HumanDuration,
}

fn default_retry_delay() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}

/// Where a step stands in a span of steps a run must never be cut inside (a datastore lock …
/// unlock): the step that opens the span and the one that closes it, by the span's name. A
/// maintenance window (`--deadline`, `--window`) counts the span as one piece: the run starts it
/// only when the estimates say it finishes in time, and never stops between its ends. No human
/// gate may stand inside a span (lint `gate-inside-span`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum SpanEdge {
    /// This step opens the span, e.g. `{opens: datastore-lock}`.
    Opens(String),
    /// This step closes it, e.g. `{closes: datastore-lock}`.
    Closes(String),
}

/// How the network was installed; it decides the upgrade procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InstallMethod {
    /// The operator, installed from its manifest.
    Operator,
    /// The operator, installed with the Helm chart.
    Helm,
    /// The single manifest (`calico.yaml`, `canal.yaml`, `calico-etcd.yaml`, ...).
    Manifest,
}

impl InstallMethod {
    pub const ALL: [InstallMethod; 3] = [
        InstallMethod::Operator,
        InstallMethod::Helm,
        InstallMethod::Manifest,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            InstallMethod::Operator => "operator",
            InstallMethod::Helm => "helm",
            InstallMethod::Manifest => "manifest",
        }
    }
}

impl fmt::Display for InstallMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InstallMethod {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        InstallMethod::ALL
            .into_iter()
            .find(|method| method.as_str() == text)
            .ok_or_else(|| text.to_string())
    }
}

/// A duration written the human way (`60s`, `15m`, `1h 30m`) in runbooks and plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl schemars::JsonSchema for HumanDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HumanDuration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration such as `30s`, `5m` or `1h 30m`.",
            "pattern": "^([0-9]+ ?[a-z]+ ?)+$"
        })
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(&text)
            .map(HumanDuration)
            .map_err(|error| {
                serde::de::Error::custom(format!("invalid duration `{text}`: {error}"))
            })
    }
}
