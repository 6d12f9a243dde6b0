//! Plans: the ordered, fully rendered steps of one operation, with the facts they were made from.
//!
//! A [`Plan`] is what every mutating command hands the executor. For upgrades it is built by
//! [`resolve`](resolve::plan_upgrade) from the runbooks whose version requirements and conditions hold;
//! for one-off commands it has one step. Plans are plain data (serde), print in several formats
//! ([`render`]), and carry a digest over their steps, facts and versions so a saved plan or a checkpoint
//! can be matched to the plan it came from. This module never talks to a datastore except through
//! [`facts::discover_facts`].

pub mod action;
pub mod canary;
pub mod catalog;
mod cluster_facts;
pub mod edit_discovery;
mod error;
pub mod facts;
pub mod lint;
pub mod overlay;
pub mod release;
pub mod render;
pub mod request;
pub mod resolve;
pub mod rollback;
mod single;
pub mod targets;
pub mod verification;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::errors::Hint;
pub use crate::vocabulary::{InstallMethod, Phase, RetryPolicy, SpanEdge};
pub use action::{Action, ActionError, HumanDuration};
pub use catalog::{Catalog, CatalogError};
pub use cluster_facts::{discover_cluster_facts, read_live_objects};
pub use facts::{
    DiscoveredFacts, Fact, FactError, FactOrigin, FactOverrides, Facts, discover_facts,
};
pub use release::{Release, ReleaseError};
pub use resolve::{ManifestEdits, PlanError, PlanRequest, plan_upgrade, plan_upgrade_with};
pub use rollback::PlannedUndo;

/// The version of the plan file format; bumped on any incompatible change.
pub const PLAN_FORMAT_VERSION: u32 = 1;

/// One step of a plan: a fully rendered action and everything the executor and the reader need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// No `deny_unknown_fields`: serde does not support it together with `flatten`.
pub struct PlannedStep {
    /// Unique in the plan: `<runbook>/<step>` plus `[<n>]` for each item of a `foreach`.
    pub id: String,
    /// The runbook the step came from.
    pub runbook: String,
    pub phase: Phase,
    pub description: String,
    /// Ids of steps that must finish first (all earlier in `Plan::steps`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    #[serde(flatten)]
    pub action: Action,
    /// A postcondition, re-checked on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Action>,
    /// A point of no return.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub irreversible: bool,
    /// What must hold before the step runs (`nodeAgents`: the version every node agent runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<crate::runbook::Requirement>,
    /// How to go back before and after this step (required on irreversible steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<crate::runbook::RollbackAdvice>,
    /// The way back `upgrade rollback` runs once this step completed (see [`PlannedUndo`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<PlannedUndo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// The name under which the executor keeps this step's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register: Option<String>,
    /// Why the step is in the plan (version edge, install method, condition).
    pub reason: String,
    /// This step opens or closes a span a run must not be cut inside (see [`SpanEdge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<SpanEdge>,
}

impl PlannedStep {
    /// A step of `runbook` that runs `action` and nothing more: no `needs`, postcondition,
    /// requirement, rollback advice, retry or register, and not a point of no return.
    pub fn new(
        id: impl Into<String>,
        runbook: impl Into<String>,
        phase: Phase,
        action: Action,
        description: impl Into<String>,
        reason: impl Into<String>,
    ) -> PlannedStep {
        PlannedStep {
            id: id.into(),
            runbook: runbook.into(),
            phase,
            description: description.into(),
            needs: Vec::new(),
            action,
            verify: None,
            irreversible: false,
            requires: None,
            rollback: None,
            undo: None,
            retry: None,
            register: None,
            reason: reason.into(),
            span: None,
        }
    }
}

/// Why a saved plan cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    #[error("the plan file is not a valid plan")]
    Invalid(#[source] serde_json::Error),
    #[error(
        "the plan file has format version {found}; this netctl reads version {PLAN_FORMAT_VERSION}"
    )]
    FormatVersion { found: u32 },
    #[error(
        "the plan file was changed after it was made (digest `{recorded}`, content `{computed}`)"
    )]
    DigestMismatch { recorded: String, computed: String },
}

impl Hint for PlanFileError {
    fn hint(&self) -> Option<String> {
        match self {
            PlanFileError::Invalid(_) => None,
            PlanFileError::FormatVersion { .. } => Some(
                "make the plan again with this netctl (`netctl upgrade plan --out FILE`)"
                    .to_string(),
            ),
            PlanFileError::DigestMismatch { .. } => Some(
                "make the plan again with `netctl upgrade plan --out FILE`; plans are not edited by hand".to_string(),
            ),
        }
    }
}

/// A plan: where from, where to, the facts it assumed, and the steps in the order they run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub format_version: u32,
    /// The procedure: `upgrade` or a named one such as `auto-host-endpoints` (`rollback` for the
    /// way back of a run, see `plan/rollback.rs`).
    pub procedure: String,
    /// A rollback plan: the id of the run it goes back from (journaled with its start, so
    /// `upgrade history` shows that run as rolled back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolls_back: Option<String>,
    pub from: Release,
    pub to: Release,
    pub facts: Facts,
    /// Topologically ordered: every step comes after the steps it needs.
    pub steps: Vec<PlannedStep>,
    /// What each manifest overlay changes, computed at plan time for review (see [`ManifestPreview`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_previews: Vec<ManifestPreview>,
    /// The hand edits of the installed manifest found in the cluster (see [`ManifestDiscovery`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_discovery: Vec<ManifestDiscovery>,
    /// The canary node rollout (`--canary`, `--canary-selector`): the nodes chosen and how they
    /// roll (see [`canary`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<canary::Canary>,
    /// `sha256:<hex>` over the canonical JSON of steps, facts and versions; see [`Plan::compute_digest`].
    pub digest: String,
}

/// The review of one `fetch` step's manifest overlay, made when the plan is made. Shown by every plan
/// format; the executor never reads it (it applies the overlay of the step itself), but it is part of
/// the digest so the reviewed diff cannot be edited in a saved plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestPreview {
    /// The id of the `fetch` step.
    pub step: String,
    pub url: String,
    /// The sha256 of the manifest read at plan time, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A unified diff of the objects the overlay changes (manifest as released → with the overlay),
    /// when the manifest could be read; empty when the overlay changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Why the manifest could not be read at plan time (then the plan shows the overlay itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// What `upgrade plan` found of the operator's hand edits for one `fetch` step with `edits_from`
/// (see [`edit_discovery`]): the installed release's manifest, the objects it made as they are
/// live, and the new manifest, compared three-way. Under the digest, and the live objects' digests
/// are checked again before a saved plan runs, so a cluster changed since the review makes the
/// plan stale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestDiscovery {
    /// The id of the `fetch` step the edits are carried by.
    pub step: String,
    /// The installed release's manifest that was compared.
    pub installed_url: String,
    /// The carried edits, one line each (`object field: released → live`); the overlay documents
    /// themselves are in the step's `overlay`, ahead of any `--manifest-overlay`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<String>,
    /// The overlay documents discovery made (also in the step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlay: Vec<serde_json::Value>,
    /// Fields both the operator and upstream changed: not carried, for the operator to decide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<edit_discovery::Undecided>,
    /// What was not compared, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The live objects that were compared, with their digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live: Vec<edit_discovery::LiveObject>,
    /// Why discovery could not run (then nothing was discovered and the edits gate stays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl ManifestDiscovery {
    /// Whether the operator has something to review: edits carried, or fields left undecided.
    pub fn found_anything(&self) -> bool {
        !self.edits.is_empty() || !self.undecided.is_empty()
    }
}

/// What [`Plan::compute_digest`] hashes, in the order it is written. Previews and discovery are
/// left out when empty, so plans without them keep the digest they had.
#[derive(Serialize)]
struct DigestedContent<'a> {
    format_version: u32,
    procedure: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rolls_back: Option<&'a str>,
    from: &'a Release,
    to: &'a Release,
    facts: &'a Facts,
    steps: &'a [PlannedStep],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    manifest_previews: &'a [ManifestPreview],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    manifest_discovery: &'a [ManifestDiscovery],
    #[serde(skip_serializing_if = "Option::is_none")]
    canary: Option<&'a canary::Canary>,
}

/// Feeds written bytes to a hash.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Plan {
    /// Builds a plan and seals it with its digest. Secrets in programs' command lines and
    /// environments are redacted first (`redaction.rs`): no plan holds one.
    pub fn new(
        procedure: impl Into<String>,
        from: Release,
        to: Release,
        facts: Facts,
        mut steps: Vec<PlannedStep>,
    ) -> Plan {
        for step in &mut steps {
            step.action.redact_secrets();
            if let Some(verify) = &mut step.verify {
                verify.redact_secrets();
            }
            if let Some(action) = step.undo.as_mut().and_then(|undo| undo.action.as_mut()) {
                action.redact_secrets();
            }
        }
        let mut plan = Plan {
            format_version: PLAN_FORMAT_VERSION,
            procedure: procedure.into(),
            rolls_back: None,
            from,
            to,
            facts,
            steps,
            manifest_previews: Vec::new(),
            manifest_discovery: Vec::new(),
            canary: None,
            digest: String::new(),
        };
        plan.digest = plan.compute_digest();
        plan
    }

    /// The digest of the plan's content: sha256 of the compact JSON of `{format_version, procedure,
    /// from, to, facts, steps}` (and the manifest previews and discovery when there are any). Keys
    /// are in declaration order and maps are sorted (`BTreeMap`), so the JSON — and the digest — is
    /// the same on every run and machine. The JSON is streamed into the hash, never held: a one-step
    /// plan of ten thousand documents hashes them without building a JSON tree of each.
    pub fn compute_digest(&self) -> String {
        let content = DigestedContent {
            format_version: self.format_version,
            procedure: &self.procedure,
            rolls_back: self.rolls_back.as_deref(),
            from: &self.from,
            to: &self.to,
            facts: &self.facts,
            steps: &self.steps,
            manifest_previews: &self.manifest_previews,
            manifest_discovery: &self.manifest_discovery,
            canary: self.canary.as_ref(),
        };
        let mut hasher = HashWriter(Sha256::new());
        // Serializing plain data cannot fail; the hash of what was written stands either way.
        let _ = serde_json::to_writer(&mut hasher, &content);
        let hash = hasher.0.finalize();
        let hex: String = hash.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("sha256:{hex}")
    }

    /// Whether the stored digest matches the content (a hand-edited or corrupted plan file does not).
    pub fn digest_is_valid(&self) -> bool {
        self.digest == self.compute_digest()
    }

    /// Reads a saved plan (`upgrade plan --out`), refusing another format version and a plan whose
    /// content no longer matches its digest (edited by hand or truncated).
    pub fn parse(text: &str) -> Result<Plan, PlanFileError> {
        let plan: Plan = serde_json::from_str(text).map_err(PlanFileError::Invalid)?;
        if plan.format_version != PLAN_FORMAT_VERSION {
            return Err(PlanFileError::FormatVersion {
                found: plan.format_version,
            });
        }
        if !plan.digest_is_valid() {
            return Err(PlanFileError::DigestMismatch {
                recorded: plan.digest.clone(),
                computed: plan.compute_digest(),
            });
        }
        Ok(plan)
    }

    /// The `fetch` steps with a manifest overlay: `(step id, url, overlay documents)`.
    pub fn overlay_downloads(&self) -> impl Iterator<Item = (&str, &str, &[serde_json::Value])> {
        self.steps.iter().filter_map(|step| match &step.action {
            Action::Fetch(fetch) if !fetch.overlay.is_empty() => Some((
                step.id.as_str(),
                fetch.url.as_str(),
                fetch.overlay.as_slice(),
            )),
            _ => None,
        })
    }

    /// Records the plan-time review of the manifest overlays and seals the plan again. Each `fetch`
    /// whose manifest was read is pinned to that manifest's digest (its `sha256`), so the run refuses
    /// a download other than the one reviewed; one that could not be read stays unpinned.
    pub fn set_manifest_previews(&mut self, previews: Vec<ManifestPreview>) {
        for preview in &previews {
            let Some(digest) = &preview.sha256 else {
                continue;
            };
            for step in self.steps.iter_mut().filter(|step| step.id == preview.step) {
                if let Action::Fetch(fetch) = &mut step.action {
                    fetch.sha256 = Some(digest.clone());
                }
            }
        }
        self.manifest_previews = previews;
        self.digest = self.compute_digest();
    }

    /// Records what edit discovery found and seals the plan again.
    pub fn set_manifest_discovery(&mut self, discovery: Vec<ManifestDiscovery>) {
        self.manifest_discovery = discovery;
        self.digest = self.compute_digest();
    }

    /// The `fetch` steps that name the installed release's manifest: `(step id, url, edits_from)`.
    pub fn edit_sources(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.steps.iter().filter_map(|step| match &step.action {
            Action::Fetch(fetch) => fetch
                .edits_from
                .as_deref()
                .map(|from| (step.id.as_str(), fetch.url.as_str(), from)),
            _ => None,
        })
    }

    /// Steps in a phase, in plan order.
    pub fn steps_in(&self, phase: Phase) -> impl Iterator<Item = &PlannedStep> {
        self.steps.iter().filter(move |step| step.phase == phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatastoreType;

    pub(crate) fn sample_facts() -> Facts {
        Facts::assemble(
            &DiscoveredFacts {
                datastore_type: Some(DatastoreType::Kubernetes),
                ..DiscoveredFacts::default()
            },
            &FactOverrides {
                from: Some(Release::new(3, 26, 4)),
                install_method: Some(InstallMethod::Operator),
                ..FactOverrides::default()
            },
        )
        .unwrap()
    }

    fn sample_plan() -> Plan {
        let pause = Action::from_parts("pause", serde_json::json!({"message": "go?"})).unwrap();
        let step = PlannedStep {
            irreversible: true,
            retry: Some(RetryPolicy {
                attempts: 3,
                delay: HumanDuration(std::time::Duration::from_secs(10)),
            }),
            ..PlannedStep::new(
                "operator/apply",
                "operator",
                Phase::Upgrade,
                pause,
                "apply the operator manifest",
                "install method is `operator`",
            )
        };
        Plan::new(
            "upgrade",
            Release::new(3, 26, 4),
            Release::new(3, 29, 2),
            sample_facts(),
            vec![step],
        )
    }

    #[test]
    fn a_plan_round_trips_through_json_with_its_digest() {
        let plan = sample_plan();
        assert!(plan.digest.starts_with("sha256:"));
        let text = serde_json::to_string_pretty(&plan).unwrap();
        assert!(text.contains(r#""action": "pause""#), "{text}");
        let read: Plan = serde_json::from_str(&text).unwrap();
        assert_eq!(read, plan);
        assert!(read.digest_is_valid());
    }

    #[test]
    fn a_saved_plan_is_refused_when_edited_or_from_another_format() {
        let plan = sample_plan();
        let text = serde_json::to_string_pretty(&plan).unwrap();
        assert_eq!(Plan::parse(&text).unwrap(), plan);
        let edited = text.replace("\"irreversible\": true", "\"irreversible\": false");
        assert!(matches!(
            Plan::parse(&edited).unwrap_err(),
            PlanFileError::DigestMismatch { .. }
        ));
        let mut other = plan.clone();
        other.format_version = 2;
        let error = Plan::parse(&serde_json::to_string(&other).unwrap()).unwrap_err();
        assert!(matches!(error, PlanFileError::FormatVersion { found: 2 }));
        assert!(matches!(
            Plan::parse("{}").unwrap_err(),
            PlanFileError::Invalid(_)
        ));
    }

    #[test]
    fn manifest_previews_are_under_the_digest_only_when_present() {
        let plan = sample_plan();
        assert!(
            !serde_json::to_string(&plan)
                .unwrap()
                .contains("manifest_previews")
        );
        let mut reviewed = plan.clone();
        reviewed.set_manifest_previews(vec![ManifestPreview {
            step: "manifest/download".into(),
            url: "file:///calico.yaml".into(),
            sha256: None,
            diff: Some("-a\n+b\n".into()),
            unavailable: None,
        }]);
        assert_ne!(reviewed.digest, plan.digest);
        let text = serde_json::to_string(&reviewed).unwrap();
        assert_eq!(Plan::parse(&text).unwrap(), reviewed);
        // A reviewed diff edited in a saved plan is refused like any other edit.
        let edited = text.replace("+b", "+c");
        assert!(matches!(
            Plan::parse(&edited).unwrap_err(),
            PlanFileError::DigestMismatch { .. }
        ));
    }

    #[test]
    fn the_digest_changes_with_any_fact_or_step() {
        let plan = sample_plan();
        assert_eq!(plan.compute_digest(), sample_plan().compute_digest());
        let mut changed = plan.clone();
        changed.facts.alp_enabled.value = true;
        assert!(!changed.digest_is_valid());
        let mut changed = plan;
        changed.steps[0].irreversible = false;
        assert!(!changed.digest_is_valid());
    }

    /// The digest as it was computed before it was streamed: through a JSON tree of the content.
    fn digest_through_a_tree(plan: &Plan) -> String {
        let mut content = serde_json::json!({
            "format_version": plan.format_version,
            "procedure": plan.procedure,
            "from": plan.from,
            "to": plan.to,
            "facts": plan.facts,
            "steps": plan.steps,
        });
        if !plan.manifest_previews.is_empty() {
            content["manifest_previews"] = serde_json::json!(plan.manifest_previews);
        }
        if !plan.manifest_discovery.is_empty() {
            content["manifest_discovery"] = serde_json::json!(plan.manifest_discovery);
        }
        let hash = Sha256::digest(serde_json::to_vec(&content).unwrap());
        let hex: String = hash.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("sha256:{hex}")
    }

    #[test]
    fn the_streamed_digest_is_the_digest_saved_plans_carry() {
        let plan = sample_plan();
        assert_eq!(plan.digest, digest_through_a_tree(&plan));
        let mut reviewed = plan.clone();
        reviewed.set_manifest_previews(vec![ManifestPreview {
            step: "manifest/download".into(),
            url: "file:///calico.yaml".into(),
            sha256: Some("abc".into()),
            diff: Some("-a\n+b\n".into()),
            unavailable: None,
        }]);
        assert_eq!(reviewed.digest, digest_through_a_tree(&reviewed));
        let mut endpoint =
            crate::resource::Resource::new(crate::resource::Kind::HostEndpoint, "h1");
        endpoint.metadata.labels.insert("zone".into(), "a".into());
        endpoint.spec =
            serde_json::json!({"node": "n1", "expectedIPs": ["10.0.0.1"], "ports": [{"port": 80}]});
        let documents = action::ResourceDocuments {
            documents: vec![endpoint],
            file: None,
            validated_for: None,
        };
        let single = Plan::single("apply", "apply 1", Action::ResourceApply(documents));
        assert_eq!(single.digest, digest_through_a_tree(&single));
    }
}
