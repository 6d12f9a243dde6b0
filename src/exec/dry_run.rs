//! Dry runs: every step of a plan is walked against the world as it is now, and what would happen
//! is written to the transcript (stdout) — documents, Kubernetes requests, command lines — with
//! nothing written anywhere: no datastore write, no lock, no checkpoint, no journal, no download.
//!
//! There is one rehearsal of a step ([`Rehearsal::step`]) for every plan. An upgrade's transcript
//! heads and numbers each step, rehearses a `kube.apply` of a file an earlier `fetch` would download
//! with that download's source, and goes on past a step that would fail (an earlier step may change
//! that); a one-step command's transcript is the step's own account, and its failure is the
//! command's. `upgrade plan`'s preview of a plan's datastore writes ([`WritePreview`]) is the same
//! rehearsal of the write steps alone; it is printed after the plan and never part of it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;

use super::actions::resource::diff::WriteCounts;
use super::actions::{self, Context, Outcome, StepError};
use super::checkpoint::{self, Checkpoint};
use super::error::ExecError;
use super::{ApplyOptions, Executor, RunMode, RunOneOptions, RunReport, plan_semantics};
use crate::errors::Hint;
use crate::plan::action::ManifestSource;
use crate::plan::{Action, Plan, PlannedStep};

/// What a dry run knows as it walks a plan: what the actions may use, and the downloads the
/// `fetch` steps before this one would make.
struct Rehearsal<'a> {
    /// The facts, where files would be, the write semantics; `register` is set per step.
    context: Context<'a>,
    /// File → (URL, step) of the downloads earlier `fetch` steps would make.
    would_download: BTreeMap<String, (String, String)>,
    /// File → the overlaid manifest of those downloads that have a manifest overlay (`None` until
    /// the dry-run of the `fetch` could compute it from a local source).
    would_overlay: BTreeMap<String, Option<String>>,
}

impl<'a> Rehearsal<'a> {
    fn new(context: Context<'a>) -> Rehearsal<'a> {
        Rehearsal {
            context,
            would_download: BTreeMap::new(),
            would_overlay: BTreeMap::new(),
        }
    }

    /// Rehearses one step: a line saying what stands in for a pending download (if anything), and
    /// what the action would do.
    async fn step(
        &mut self,
        step: &'a PlannedStep,
    ) -> (Option<String>, Result<Outcome, StepError>) {
        self.context.register = step.register.as_deref();
        if let Action::Fetch(fetch) = &step.action {
            self.would_download
                .insert(fetch.file.clone(), (fetch.url.clone(), step.id.clone()));
            if !fetch.overlay.is_empty() {
                self.would_overlay.insert(fetch.file.clone(), None);
            }
        }
        let (action, line) = match rehearse_download(
            &step.action,
            &self.context.files_dir,
            self.context.mirror_dir.is_some(),
            &self.would_download,
            &self.would_overlay,
        ) {
            Some((action, line)) => (Cow::Owned(action), Some(line)),
            None => (Cow::Borrowed(&step.action), None),
        };
        let result = actions::perform(&self.context, &action, RunMode::DryRun).await;
        if let (Ok(outcome), Action::Fetch(fetch)) = (&result, &step.action)
            && let Some(text) = outcome
                .output
                .as_ref()
                .and_then(|output| output.get("overlaid"))
                .and_then(|text| text.as_str())
        {
            self.would_overlay
                .insert(fetch.file.clone(), Some(text.to_string()));
        }
        (line, result)
    }
}

/// What a plan's datastore writes would do to what is stored now (`upgrade plan` shows it): per
/// resource step, the dry run's own marked lines, and a note when an earlier step of the plan
/// writes the same resource, so the lines show it before that step ran.
#[derive(Debug, Clone, Default)]
pub struct WritePreview {
    pub steps: Vec<StepPreview>,
    pub counts: WriteCounts,
}

#[derive(Debug, Clone)]
pub struct StepPreview {
    pub number: usize,
    pub id: String,
    pub lines: Vec<String>,
    /// The earlier step this one's resources depend on, when there is one.
    pub depends_on: Option<String>,
}

impl WritePreview {
    /// The preview as text, after a plan: not part of the plan (nor its digest).
    pub fn text(&self) -> String {
        if self.steps.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "\ndatastore writes, each against what is stored now (a preview, not part of the plan or its digest):\n",
        );
        for step in &self.steps {
            text.push_str(&format!("{}. {}\n", step.number, step.id));
            if let Some(earlier) = &step.depends_on {
                text.push_str(&format!(
                    "  depends on step `{earlier}`, which writes the same resource first: shown as stored before it runs\n"
                ));
            }
            for line in &step.lines {
                text.push_str(&format!("  {line}\n"));
            }
        }
        text.push_str(&format!("{}\n", self.counts));
        text
    }
}

/// The resources a datastore write step writes, as `ResourceKey` text; `None` for other steps.
fn written_resources(action: &Action) -> Option<Vec<String>> {
    let keys = action.written_resources()?;
    Some(keys.iter().map(ToString::to_string).collect())
}

impl Executor {
    /// A rehearsal of `plan`'s steps for `upgrade plan` (no files, no earlier outputs).
    fn plan_rehearsal<'a>(
        &'a self,
        plan: &'a Plan,
        outputs: &'a BTreeMap<String, serde_json::Value>,
    ) -> Rehearsal<'a> {
        let files = std::env::temp_dir().join("netctl-plan-preview-has-no-files");
        Rehearsal::new(self.context(&plan.facts, files, None, plan_semantics(), outputs, None))
    }

    /// The preview of `plan`'s datastore writes: the dry run's rehearsal of its `resource.*` write
    /// steps alone, each against what is stored now, with the counts. Reads only.
    pub async fn preview_writes(&self, plan: &Plan) -> Result<WritePreview, ExecError> {
        let outputs = BTreeMap::new();
        let mut rehearsal = self.plan_rehearsal(plan, &outputs);
        let mut preview = WritePreview::default();
        let mut written: BTreeMap<String, String> = BTreeMap::new();
        for (index, step) in plan.steps.iter().enumerate() {
            let Some(resources) = written_resources(&step.action) else {
                continue;
            };
            let (_, result) = rehearsal.step(step).await;
            let lines = match result {
                Ok(outcome) => outcome.transcript,
                Err(error) => vec![format!("would fail as things stand now: {error}")],
            };
            preview.counts.add(&lines);
            let depends_on = resources
                .iter()
                .find_map(|resource| written.get(resource).cloned());
            for resource in resources {
                written.entry(resource).or_insert_with(|| step.id.clone());
            }
            preview.steps.push(StepPreview {
                number: index + 1,
                id: step.id.clone(),
                lines,
                depends_on,
            });
        }
        Ok(preview)
    }

    /// The steps of `plan` that would do something now, for `upgrade plan --detailed-exitcode` of
    /// a fix-up procedure: not a gate (`pause`: it asks, it does nothing), not a datastore write
    /// whose rehearsal against what is stored now creates, changes and deletes nothing, not a step
    /// whose `verify` holds already. Any other step counts as pending, as does a write that would
    /// fail. Reads only.
    pub async fn pending_steps(&self, plan: &Plan) -> Result<Vec<String>, ExecError> {
        let outputs = BTreeMap::new();
        let mut rehearsal = self.plan_rehearsal(plan, &outputs);
        let mut pending = Vec::new();
        for step in &plan.steps {
            // Gates and the verification around every plan change nothing: they are not work
            // left to do.
            if matches!(
                step.action,
                Action::Pause(_) | Action::UpgradeBaseline(_) | Action::UpgradeVerify(_)
            ) {
                continue;
            }
            if written_resources(&step.action).is_some() {
                let (_, result) = rehearsal.step(step).await;
                let mut counts = WriteCounts::default();
                let changes = match result {
                    Ok(outcome) => {
                        counts.add(&outcome.transcript);
                        counts.created + counts.changed + counts.deleted > 0
                    }
                    Err(_) => true,
                };
                if changes {
                    pending.push(step.id.clone());
                }
                continue;
            }
            let done = match &step.verify {
                Some(verify) => {
                    matches!(actions::holds(&rehearsal.context, verify).await, Ok(true))
                }
                None => false,
            };
            if !done {
                pending.push(step.id.clone());
            }
        }
        Ok(pending)
    }

    /// The dry run of an upgrade plan, from the checkpoint's state when one is resumed.
    pub(super) async fn dry_run(
        &self,
        plan: &Plan,
        checkpoint: Option<&Checkpoint>,
        options: &ApplyOptions,
        out: &mut dyn Write,
    ) -> Result<RunReport, ExecError> {
        let mut write = |text: String| writeln!(out, "{text}").map_err(ExecError::Output);
        let total = plan.steps.len();
        write(format!(
            "dry run of plan {} ({} {} → {}, {total} steps); nothing will be changed",
            plan.digest, plan.procedure, plan.from, plan.to
        ))?;
        write(
            "each step is shown against the datastore as it is now, without the effects of the steps before it".to_string(),
        )?;
        let facts = self.facts_now(plan).await?;
        // The run's pre-flight (reads only) over the steps it would take: a failed check is what
        // the run would stop at, and a step whose type the cluster no longer serves is skipped, as
        // the run skips it.
        let remaining = plan
            .steps
            .iter()
            .enumerate()
            .filter(|(index, _)| checkpoint.is_none_or(|c| !c.step(*index).state.is_done()))
            .map(|(_, step)| step)
            .collect();
        let preflight = self
            .preflight_report(
                remaining,
                &options.preflight_options(self.printer.listing()),
            )
            .await
            .unwrap_or_default();
        if !preflight.findings.is_empty() {
            write(String::new())?;
            write(
                "the checks the run makes before its first write, as things stand now:".to_string(),
            )?;
            for line in preflight.lines() {
                write(format!("  {line}"))?;
            }
        }
        let refused = super::preflight::PreflightFailed { report: preflight };
        if refused.report.failures().next().is_some() {
            write(format!("the run would stop here: {refused}"))?;
            if let Some(fix) = refused.hint() {
                write(format!("  to fix: {fix}"))?;
            }
            self.printer
                .warn(format!("the run's pre-flight would refuse it: {refused}"));
        }
        let skipped = refused.report.skipped_steps;
        let outputs = checkpoint.map(|c| c.outputs.clone()).unwrap_or_default();
        let mut rehearsal = Rehearsal::new(self.context(
            &facts,
            options.state_dir.join(checkpoint::FILES_DIR),
            options.mirror_dir.clone(),
            plan_semantics(),
            &outputs,
            None,
        ));
        let mut problems = 0;
        let mut writes = WriteCounts::default();
        for (index, step) in plan.steps.iter().enumerate() {
            write(String::new())?;
            write(format!(
                "[{}/{total}] {} ({}) — {}",
                index + 1,
                step.id,
                step.action.name(),
                step.description
            ))?;
            if let Some(state) = checkpoint.map(|c| c.step(index).state)
                && state.is_done()
            {
                write(format!(
                    "  already {} in the checkpoint; would not run again",
                    state.as_str()
                ))?;
                continue;
            }
            if let Some(skip) = skipped.iter().find(|skip| skip.id == step.id) {
                write(format!(
                    "  would be skipped by the pre-flight: {}",
                    skip.reason
                ))?;
                continue;
            }
            if step.irreversible {
                write("  irreversible: would ask for confirmation first".to_string())?;
            }
            let (line, result) = rehearsal.step(step).await;
            if let Some(line) = line {
                write(format!("  {line}"))?;
            }
            match result {
                Ok(outcome) => {
                    writes.add(&outcome.transcript);
                    for line in outcome.transcript {
                        write(format!("  {line}"))?;
                    }
                }
                Err(error) => {
                    problems += 1;
                    write(format!("  would fail as things stand now: {error}"))?;
                    write("  (an earlier step of this plan may change that)".to_string())?;
                }
            }
            if let Some(verify) = &step.verify {
                write(format!("  then would verify: {verify}"))?;
            }
            if let Some(retry) = &step.retry {
                write(format!(
                    "  on failure: up to {} attempts, {} apart (doubling)",
                    retry.attempts, retry.delay
                ))?;
            }
        }
        if !writes.is_empty() {
            write(String::new())?;
            write(format!(
                "datastore writes, each against the datastore as it is now: {writes}"
            ))?;
        }
        if problems > 0 {
            self.printer.warn(format!(
                "{problems} step(s) would fail if run against the datastore as it is now (see the transcript)"
            ));
        }
        Ok(RunReport {
            run_id: String::new(),
            steps: total,
            repaired: vec![],
        })
    }

    /// The dry run of a one-step command: the step's own transcript, with the plan's facts.
    pub(super) async fn dry_run_one(
        &self,
        plan: &Plan,
        step: &PlannedStep,
        options: &RunOneOptions,
        out: &mut dyn Write,
    ) -> Result<Outcome, ExecError> {
        let outputs = BTreeMap::new();
        let files = options.files_dir();
        let context = self.context(&plan.facts, files, None, options.semantics, &outputs, None);
        let mut rehearsal = Rehearsal::new(context);
        let (_, result) = rehearsal.step(step).await;
        let outcome = result.map_err(|source| ExecError::StepFailed {
            step: step.id.clone(),
            attempts: 1,
            source: Box::new(source),
        })?;
        for line in &outcome.transcript {
            writeln!(out, "{line}").map_err(ExecError::Output)?;
        }
        Ok(outcome)
    }
}

/// In a dry-run, a `kube.apply` of a file that an earlier `fetch` of the plan would download (and that
/// is not there yet) reads the download's source instead, so the rehearsal applies the real manifest
/// with `dryRun=All` rather than failing on a missing file. Only for local sources (a mirror
/// directory or a `file://` URL): a dry-run never goes to the network for this. A download with a
/// manifest overlay is rehearsed with the overlaid manifest the `fetch` dry-run computed, or not at
/// all when it could not. Returns the action to rehearse and a line saying so.
fn rehearse_download(
    action: &Action,
    files: &std::path::Path,
    mirror: bool,
    would_download: &BTreeMap<String, (String, String)>,
    would_overlay: &BTreeMap<String, Option<String>>,
) -> Option<(Action, String)> {
    let Action::KubeApply(apply) = action else {
        return None;
    };
    let ManifestSource::File(file) = &apply.source else {
        return None;
    };
    let (url, step) = would_download.get(file)?;
    if files.join(file).exists() || !(mirror || url.starts_with("file://")) {
        return None;
    }
    let mut rehearsed = apply.clone();
    if let Some(overlaid) = would_overlay.get(file) {
        rehearsed.source = ManifestSource::Inline(overlaid.clone()?);
        return Some((
            Action::KubeApply(rehearsed),
            format!(
                "(`{file}` is not downloaded yet: rehearsing with what step `{step}` would download, with its manifest overlay)"
            ),
        ));
    }
    rehearsed.source = ManifestSource::Url(url.clone());
    Some((
        Action::KubeApply(rehearsed),
        format!(
            "(`{file}` is not downloaded yet: rehearsing with what step `{step}` would download)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::action::KubeApply;

    /// The source the rehearsal applies, and the line that says so.
    fn rehearsed(rehearsal: Option<(Action, String)>) -> Option<(ManifestSource, String)> {
        match rehearsal? {
            (Action::KubeApply(apply), line) => Some((apply.source, line)),
            (other, _) => panic!("a rehearsal applies a manifest, not {other:?}"),
        }
    }

    #[test]
    fn a_dry_run_rehearses_a_pending_download_only_from_a_local_source() {
        let apply = Action::KubeApply(KubeApply {
            source: ManifestSource::File("upgrade.yaml".into()),
            server_side: true,
            force_conflicts: true,
            field_manager: "netctl".into(),
            save_previous: None,
            hold_daemon_set: None,
            delete_not_live_before: false,
        });
        let files = tempfile::tempdir().unwrap();
        let url = "https://example.org/calico.yaml".to_string();
        let https = BTreeMap::from([(
            "upgrade.yaml".to_string(),
            (url.clone(), "u/fetch".to_string()),
        )]);
        let none = BTreeMap::new();
        let rehearse = |mirror, overlays: &BTreeMap<String, Option<String>>| {
            rehearsed(rehearse_download(
                &apply,
                files.path(),
                mirror,
                &https,
                overlays,
            ))
        };
        // No mirror and a network URL: never downloaded by a dry-run.
        assert_eq!(rehearse(false, &none), None);
        let (source, line) = rehearse(true, &none).unwrap();
        assert_eq!(source, ManifestSource::Url(url.clone()));
        assert!(line.contains("step `u/fetch`"), "{line}");
        // With a manifest overlay: the overlaid text the fetch dry-run computed, or no rehearsal.
        let pending = BTreeMap::from([("upgrade.yaml".to_string(), None)]);
        assert_eq!(rehearse(true, &pending), None);
        let text = "kind: ConfigMap\n".to_string();
        let computed = BTreeMap::from([("upgrade.yaml".to_string(), Some(text.clone()))]);
        let (source, line) = rehearse(true, &computed).unwrap();
        assert_eq!(source, ManifestSource::Inline(text));
        assert!(line.contains("with its manifest overlay"), "{line}");
        // A file that is already there (an earlier run downloaded it) is what gets applied.
        std::fs::write(files.path().join("upgrade.yaml"), "").unwrap();
        assert_eq!(rehearse(true, &none), None);
    }
}
