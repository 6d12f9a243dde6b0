//! The words runbooks and plans share: phases, retry policies, install methods, human-written
//! durations, and the one list of actions ([`action_table`]).
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

/// THE list of actions, defined once: each entry is the `plan::Action` variant, its name in
/// runbooks and plans, the type of its arguments (in `plan::action`) and what it does. The serde
/// names and `Action::name` (`plan/action/mod.rs`), the executor's dispatch (`exec/actions/mod.rs`)
/// and [`RUNBOOK_ACTIONS`] (the runbook schema, lint) are all generated from it: the macro hands the
/// list to the macro it is given (`action_table!(then)` expands `then! { runbook { ... } netctl { ... } }`).
/// `runbook` holds the actions a runbook may use, in documentation order; `netctl` those only
/// netctl itself builds.
macro_rules! action_table {
    ($then:ident) => {
        $then! {
            runbook {
                /// Read one resource (used as a postcondition: the resource exists).
                ResourceGet = "resource.get" (ResourceTarget),
                /// List resources of a kind, optionally filtered by a label selector.
                ResourceList = "resource.list" (ResourceList),
                /// Create resources, all or none.
                ResourceCreate = "resource.create" (ResourceDocuments),
                /// Create or update resources, all or none.
                ResourceApply = "resource.apply" (ResourceDocuments),
                /// Update resources, all or none.
                ResourceReplace = "resource.replace" (ResourceDocuments),
                /// Delete resources, all or none.
                ResourceDelete = "resource.delete" (ResourceDeletion),
                /// Set or remove labels of one resource.
                ResourceLabel = "resource.label" (ResourceLabel),
                /// Change one resource with a merge or JSON patch.
                ResourcePatch = "resource.patch" (ResourcePatch),
                /// Wait until named resources exist (and match a selector), or until a selector
                /// matches any.
                ResourceWait = "resource.wait" (ResourceWait),
                /// Apply a Kubernetes manifest (server-side apply when asked).
                KubeApply = "kube.apply" (KubeApply),
                /// Change one Kubernetes object with a merge or JSON patch.
                KubePatch = "kube.patch" (KubePatch),
                /// Set or remove annotations of one Kubernetes object.
                KubeAnnotate = "kube.annotate" (KubeMetadataChange),
                /// Set or remove labels of one Kubernetes object.
                KubeLabel = "kube.label" (KubeMetadataChange),
                /// List Kubernetes objects of one kind by namespace and label selector; reads only
                /// (also a postcondition: some object matches).
                KubeList = "kube.list" (KubeList),
                /// Delete Kubernetes objects of one kind selected by labels.
                KubeDelete = "kube.delete" (KubeDelete),
                /// Wait until a workload has rolled out and shows the expected readiness.
                KubeWaitRollout = "kube.wait-rollout" (KubeWaitRollout),
                /// Add back an OwnerReference to a `projectcalico.org/v3` owner, with the UID the
                /// owner has when the step runs (the upgrade changes it, so a plan cannot carry it).
                KubeRestoreOwnerReference = "kube.restore-owner-reference" (KubeRestoreOwnerReference),
                /// Restart a workload's pods the way `kubectl rollout restart` does.
                KubeRestart = "kube.restart" (KubeRestart),
                /// Download a URL to a file (`file://` URLs and a local mirror directory serve
                /// air-gapped sites).
                Fetch = "fetch" (Fetch),
                /// Run `helm` with exactly these arguments.
                Helm = "helm" (Helm),
                /// Run a program with exactly this argv (no shell unless the argv names one); never
                /// run in dry-run.
                Exec = "exec" (Exec),
                /// Assert a fact about the cluster, e.g. the Cluster Version after the upgrade.
                Check = "check" (Check),
                /// A human gate: stop and wait for the operator to confirm.
                Pause = "pause" (Pause),
                /// Move the default-tier policies an etcd datastore still keeps under
                /// `default.<name>` (v3.29–v3.31) to their own names, as v3.32 stores them; each
                /// move one guarded transaction. Also `netctl datastore migrate-policy-names`.
                DatastoreMigratePolicyNames = "datastore.migrate-policy-names" (DatastoreMigratePolicyNames),
                /// Lock the datastore (ClusterInformation `datastoreReady: false`), recording who
                /// locked it and when: new pods get no network until it is unlocked. Also `netctl
                /// datastore migrate lock`.
                DatastoreLock = "datastore.lock" (DatastoreLock),
                /// Unlock the datastore (`datastoreReady: true`). Also `netctl datastore migrate
                /// unlock`.
                DatastoreUnlock = "datastore.unlock" (DatastoreLock),
                /// Check, reading only, what the etcd → Kubernetes migration needs before its lock:
                /// every node has a Kubernetes name, the cluster answers, the CRD manifest fits the
                /// target's API group, the target holds no Calico data.
                DatastoreMigrationPreflight = "datastore.migration-preflight" (DatastoreMigrationPreflight),
                /// Write the locked etcd datastore as a migration export (upstream's format, nodes
                /// renamed to their Kubernetes names) into the run's state directory.
                DatastoreExport = "datastore.export" (DatastoreExport),
                /// Write a migration export (upstream's format) into the Kubernetes datastore,
                /// installing the CRDs of its release first: refused when the target holds other
                /// Calico data, finishes an import stopped half way. Also `netctl datastore
                /// migrate import`.
                DatastoreImport = "datastore.import" (DatastoreImport),
                /// Compare, reading only, a migration export with the Kubernetes datastore it was
                /// imported into: each kind's resources by name, the IPAM blocks, affinities and
                /// handles, each block's allocations. A difference fails the step as a
                /// verification does.
                DatastoreMigrationVerify = "datastore.migration-verify" (DatastoreMigrationVerify),
            }
            netctl {
                /// One label set on (or removed from) many resources of a kind: what the planner
                /// makes of a `foreach` step of `resource.label` whose items differ only in the
                /// resource's name. Not written in runbooks; the executor labels the resources in
                /// batched transactions and records after each batch how many are done (per-item
                /// resume).
                ResourceLabelEach = "resource.label-each" (ResourceLabelEach),
                /// Start the node agent container. Built by `netctl node run` only: not a runbook
                /// action, and never read back from a plan file (its private files are not written
                /// into one).
                NodeRun = "node.run" (NodeRun),
                /// Ask nodes' calico-node for their BGP status: one temporary CalicoNodeStatus per
                /// node, created, waited on until filled in (bounded), and deleted again, also
                /// after a timeout or a signal. Built by `netctl node status --node/--all` only: not
                /// a runbook action.
                NodeStatus = "node.status" (NodeStatusQuery),
                /// Put a backup back into the datastore it was taken of (resources; IPAM when
                /// asked). Built by `netctl datastore restore`.
                DatastoreRestore = "datastore.restore" (DatastoreRestore),
                /// Free addresses and delete leaked handles, each guarded by the allocation's
                /// sequence number and the handle's revision. Built by `netctl ipam release` only.
                IpamRelease = "ipam.release" (IpamRelease),
                /// Replace an IP pool by 2^k children. Built by `netctl ipam split` only.
                IpamSplit = "ipam.split" (IpamSplit),
                /// Change the allocator's configuration. Built by `netctl ipam configure` only.
                IpamConfigure = "ipam.configure" (IpamConfigure),
                /// Record what the cluster looks like before a run writes anything (BGP sessions
                /// per node, IPAM problems, each kind's count and digest): the first step of every
                /// upgrade plan, its output the baseline the last step compares with.
                UpgradeBaseline = "upgrade.baseline" (UpgradeBaseline),
                /// Verify the cluster after a run: node agents Ready at the target version, BGP
                /// sessions, IPAM, resources and (operator installs) TigeraStatus against the
                /// baseline. The last step of every upgrade plan and the one step of `netctl
                /// upgrade verify`; a failure stops the run as a gate does.
                UpgradeVerify = "upgrade.verify" (UpgradeVerify),
                /// Replace a DaemonSet's pods node by node (delete the pod, wait until the
                /// controller's new one on that node is Ready at the pod template): the canary
                /// rollout of the node agent (`--canary`), on the named nodes or on every node
                /// still behind. Built by the planner for manifest installs only.
                KubeReplacePods = "kube.replace-pods" (KubeReplacePods),
                /// Give a DaemonSet back the update strategy the canary apply recorded on it
                /// (annotation `netctl.projectcalico.org/update-strategy`) once every node rolled.
                KubeRestoreUpdateStrategy = "kube.restore-update-strategy" (KubeRestoreUpdateStrategy),
            }
        }
    };
}
pub(crate) use action_table;

/// The `runbook` half of the action table as a list of names.
macro_rules! runbook_action_names {
    (
        runbook { $( $(#[$doc:meta])* $variant:ident = $name:literal ($arguments:ident), )* }
        netctl { $( $rest:tt )* }
    ) => {
        /// Every action name a runbook may use, in documentation order (the `runbook` half of
        /// [`action_table`]).
        pub const RUNBOOK_ACTIONS: &[&str] = &[$($name),*];
    };
}
action_table!(runbook_action_names);

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
