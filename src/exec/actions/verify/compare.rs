//! The verification's verdicts: what the cluster shows now against the baseline, check by check,
//! each with its evidence. Pure: `mod.rs` observes, this file judges.
//!
//! - `node-agents`: every calico-node pod Ready and running the target version;
//! - `bgp`: every BGP node has at least the sessions it had established before (by peer), and
//!   answers; without a baseline, every session it reports is established;
//! - `ipam`: no problem `ipam check` did not already find before (without a baseline: none);
//! - `resources`: each kind's count and digest as before, unless a step of the plan writes that
//!   kind (named); the resources that changed are named when the baseline kept their digests;
//! - `tigera-status` (operator installs): every TigeraStatus `Available` and not `Degraded`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::plan::action::{KindDigest, NodeSessions};

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Passed,
    Failed,
    /// It could not be made (no cluster configured, no IPAM); says why.
    NotChecked,
}

/// One check's verdict with what it saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub verdict: Verdict,
    pub summary: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

impl Finding {
    pub fn new(
        check: &'static str,
        verdict: Verdict,
        summary: String,
        evidence: Vec<String>,
    ) -> Finding {
        Finding {
            check,
            verdict,
            summary,
            evidence,
        }
    }

    /// `check: summary` and the evidence, one line each, indented.
    pub fn lines(&self) -> Vec<String> {
        let word = match self.verdict {
            Verdict::Passed => "ok",
            Verdict::Failed => "FAILED",
            Verdict::NotChecked => "not checked",
        };
        let mut lines = vec![format!("{word:<11} {}: {}", self.check, self.summary)];
        lines.extend(
            self.evidence
                .iter()
                .map(|line| format!("              {line}")),
        );
        lines
    }
}

/// Every check's verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn failed(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| finding.verdict == Verdict::Failed)
    }

    pub fn lines(&self) -> Vec<String> {
        self.findings.iter().flat_map(Finding::lines).collect()
    }

    pub fn push(&mut self, finding: Finding) {
        self.findings.push(finding);
    }
}

/// The node agents' verdict: `pods` listed and what is wrong with them, or why they could not be.
pub fn node_agents(version: &str, observed: Result<(usize, Vec<String>), String>) -> Finding {
    match observed {
        Ok((pods, problems)) if problems.is_empty() => Finding::new(
            "node-agents",
            Verdict::Passed,
            format!("all {pods} node agent pod(s) run {version}, ready"),
            Vec::new(),
        ),
        Ok((pods, problems)) => Finding::new(
            "node-agents",
            Verdict::Failed,
            format!("of {pods} node agent pod(s), not all run {version}, ready"),
            problems,
        ),
        Err(reason) => Finding::new("node-agents", Verdict::Failed, reason, Vec::new()),
    }
}

/// The operator's verdict.
pub fn tigera_status(observed: Result<(usize, Vec<String>), String>) -> Finding {
    match observed {
        Ok((count, problems)) if problems.is_empty() => Finding::new(
            "tigera-status",
            Verdict::Passed,
            format!("all {count} TigeraStatus object(s) are Available"),
            Vec::new(),
        ),
        Ok((count, problems)) => Finding::new(
            "tigera-status",
            Verdict::Failed,
            format!("of {count} TigeraStatus object(s), not all are Available"),
            problems,
        ),
        Err(reason) => Finding::new("tigera-status", Verdict::Failed, reason, Vec::new()),
    }
}

/// A check that could not be made.
pub fn not_checked(check: &'static str, why: String) -> Finding {
    Finding::new(check, Verdict::NotChecked, why, Vec::new())
}

/// The BGP verdict: each node's established sessions now against before.
pub fn bgp(
    before: Option<&BTreeMap<String, NodeSessions>>,
    now: &BTreeMap<String, NodeSessions>,
) -> Finding {
    let mut evidence = Vec::new();
    let mut nodes = 0;
    let mut sessions = 0;
    let empty = NodeSessions::default();
    let names: BTreeSet<&String> = now
        .keys()
        .chain(before.into_iter().flat_map(BTreeMap::keys))
        .collect();
    for node in names {
        let current = now.get(node).unwrap_or(&empty);
        let earlier = before.and_then(|before| before.get(node));
        nodes += 1;
        sessions += current.established.len();
        if let Some(earlier) = earlier
            && !earlier.answered
        {
            // It did not answer before either: nothing to compare it with.
            continue;
        }
        if !current.answered {
            let why = current
                .reason
                .as_deref()
                .unwrap_or("it is no longer a BGP node");
            evidence.push(format!("node `{node}` did not report its sessions: {why}"));
            continue;
        }
        let lost: Vec<&String> = match earlier {
            Some(earlier) => earlier
                .established
                .iter()
                .filter(|peer| !current.established.contains(peer))
                .collect(),
            None => Vec::new(),
        };
        let expected = earlier.map_or(0, |earlier| earlier.established.len());
        if !lost.is_empty() || current.established.len() < expected {
            evidence.push(format!(
                "node `{node}`: {} session(s) established, {expected} before; lost {}{}",
                current.established.len(),
                lost.iter()
                    .map(|peer| format!("`{peer}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                not_established(current)
            ));
        } else if earlier.is_none() && before.is_none() && !current.not_established.is_empty() {
            evidence.push(format!(
                "node `{node}`: {} session(s) not established{}",
                current.not_established.len(),
                not_established(current)
            ));
        }
    }
    let compared = match before {
        Some(_) => "as many as before",
        None => "no baseline: every reported session must be established",
    };
    match evidence.is_empty() {
        true => Finding::new(
            "bgp",
            Verdict::Passed,
            format!("{nodes} BGP node(s), {sessions} session(s) established ({compared})"),
            Vec::new(),
        ),
        false => Finding::new(
            "bgp",
            Verdict::Failed,
            format!("BGP sessions were lost ({compared})"),
            evidence,
        ),
    }
}

fn not_established(node: &NodeSessions) -> String {
    match node.not_established.as_slice() {
        [] => String::new(),
        peers => format!(" (now: {})", peers.join(", ")),
    }
}

/// The IPAM verdict: problems found now that were not found before.
pub fn ipam(before: Option<&Vec<String>>, now: &BTreeSet<String>) -> Finding {
    let known: BTreeSet<&String> = before.into_iter().flatten().collect();
    let new: Vec<String> = now
        .iter()
        .filter(|problem| !known.contains(problem))
        .cloned()
        .collect();
    let compared = match before {
        Some(before) => format!("{} found before the run", before.len()),
        None => "no baseline".to_string(),
    };
    match new.is_empty() {
        true => Finding::new(
            "ipam",
            Verdict::Passed,
            format!("no new IPAM problem ({} now, {compared})", now.len()),
            Vec::new(),
        ),
        false => Finding::new(
            "ipam",
            Verdict::Failed,
            format!(
                "{} new IPAM problem(s) ({compared}; `netctl ipam check --show-problem-ips` shows them)",
                new.len()
            ),
            new,
        ),
    }
}

/// The resources' verdict: each kind as before, but the kinds `changed_by` steps of the plan.
pub fn resources(
    before: &BTreeMap<String, KindDigest>,
    now: &BTreeMap<String, KindDigest>,
    changed_by: &BTreeMap<String, Vec<String>>,
) -> Finding {
    let mut evidence = Vec::new();
    let mut excused = Vec::new();
    let empty = KindDigest::default();
    let kinds: BTreeSet<&String> = before.keys().chain(now.keys()).collect();
    for kind in &kinds {
        let earlier = before.get(*kind).unwrap_or(&empty);
        let current = now.get(*kind).unwrap_or(&empty);
        if earlier.count == current.count && earlier.digest == current.digest {
            continue;
        }
        if let Some(steps) = changed_by.get(*kind) {
            excused.push(format!(
                "{kind} (changed by {})",
                steps
                    .iter()
                    .map(|step| format!("`{step}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        }
        evidence.push(format!(
            "{kind}: {} → {} resource(s){}",
            earlier.count,
            current.count,
            changed_names(earlier, current)
        ));
    }
    let excused = match excused.as_slice() {
        [] => String::new(),
        kinds => format!("; changed as planned: {}", kinds.join(", ")),
    };
    match evidence.is_empty() {
        true => Finding::new(
            "resources",
            Verdict::Passed,
            format!("{} kind(s) unchanged{excused}", kinds.len()),
            Vec::new(),
        ),
        false => Finding::new(
            "resources",
            Verdict::Failed,
            format!("resources changed that no step of the plan writes{excused}"),
            evidence,
        ),
    }
}

/// `; changed: a, b; created: c; deleted: d` when both sides kept each resource's digest.
fn changed_names(before: &KindDigest, now: &KindDigest) -> String {
    if before.names.is_empty() && now.names.is_empty() {
        return format!(" (digest {} → {})", before.digest, now.digest);
    }
    let mut parts = Vec::new();
    let named = |names: Vec<&String>, word: &str, parts: &mut Vec<String>| {
        if !names.is_empty() {
            let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
            parts.push(format!("{word}: {}", names.join(", ")));
        }
    };
    named(
        now.names
            .iter()
            .filter(|(name, digest)| before.names.get(*name).is_some_and(|old| old != *digest))
            .map(|(name, _)| name)
            .collect(),
        "changed",
        &mut parts,
    );
    named(
        now.names
            .keys()
            .filter(|name| !before.names.contains_key(*name))
            .collect(),
        "created",
        &mut parts,
    );
    named(
        before
            .names
            .keys()
            .filter(|name| !now.names.contains_key(*name))
            .collect(),
        "deleted",
        &mut parts,
    );
    format!("; {}", parts.join("; "))
}

#[cfg(test)]
mod tests;
