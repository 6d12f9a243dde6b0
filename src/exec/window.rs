//! Maintenance windows (`--deadline TIME`, `--window DURATION`): a run starts no piece of work that
//! the estimates (`estimate.rs`) say will not finish in time, and stops at the next safe point once
//! the deadline has come.
//!
//! A plan is cut into segments at its human gates (a `pause`, an irreversible step): a run stops in
//! front of a gate anyway, so a segment — from where the run starts, or from a gate, to the next
//! gate — is the piece a window must hold whole. A span a step opens and a later step closes (a
//! datastore lock … unlock; `SpanEdge`) must not be cut either: it is a piece of its own, and the
//! run is never stopped inside one (a gate cannot stand inside one; lint `gate-inside-span`). So
//! before step `i` the run asks [`check`]: inside a span, go on; past the deadline, stop here; at
//! the start of a segment (the run's first step, or a gate), or at a step that opens a span, start
//! it only when now + its estimate is within the deadline. Stopping writes nothing but the
//! checkpoint's state: `--resume` continues from that step in the next window. This file decides;
//! the run records (`execute.rs`).

use std::time::{Duration, SystemTime};

use super::estimate::Estimate;
use super::history::short_duration;
use crate::plan::{Action, Plan, PlannedStep, SpanEdge};

/// When the maintenance window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub deadline: SystemTime,
}

impl Window {
    /// The deadline as RFC 3339 (UTC), for messages and the journal.
    pub fn deadline_text(&self) -> String {
        humantime::format_rfc3339_seconds(self.deadline).to_string()
    }

    /// How long is left at `now` (zero once it passed).
    fn left(&self, now: SystemTime) -> Duration {
        self.deadline.duration_since(now).unwrap_or(Duration::ZERO)
    }
}

/// What the window says before a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Go,
    /// Stop in front of the step; `reason` says why (the deadline passed, or the piece that starts
    /// here would not finish in time).
    Stop {
        reason: String,
    },
}

/// Whether `step` waits for a person (a gate cuts the plan into segments).
pub fn is_gate(step: &PlannedStep) -> bool {
    matches!(step.action, Action::Pause(_)) || step.irreversible
}

/// For each step, whether a span is open in front of it (opened by an earlier step and not yet
/// closed): the run must not stop there.
pub fn inside_spans(plan: &Plan) -> Vec<bool> {
    let mut open: Vec<&str> = Vec::new();
    let mut inside = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        inside.push(!open.is_empty());
        match &step.span {
            Some(SpanEdge::Opens(name)) => open.push(name),
            Some(SpanEdge::Closes(name)) => {
                if let Some(position) = open.iter().rposition(|opened| *opened == name) {
                    open.remove(position);
                }
            }
            None => {}
        }
    }
    inside
}

/// The end (exclusive) of the piece that starts at `index`: at a segment start, the next gate the
/// run may stop at; at a step that opens a span, the step after the one that closes it (the plan's
/// end when none does).
fn piece_end(plan: &Plan, inside: &[bool], index: usize, segment: bool) -> usize {
    let steps = &plan.steps;
    if segment {
        return (index + 1..steps.len())
            .find(|&next| is_gate(&steps[next]) && !inside[next])
            .unwrap_or(steps.len());
    }
    let Some(SpanEdge::Opens(name)) = &steps[index].span else {
        return index + 1;
    };
    (index + 1..steps.len())
        .find(|&next| matches!(&steps[next].span, Some(SpanEdge::Closes(closed)) if closed == name))
        .map_or(steps.len(), |close| close + 1)
}

/// The estimated time of the steps `first..end` not yet done.
fn remaining(
    estimates: &[Estimate],
    first: usize,
    end: usize,
    done: &dyn Fn(usize) -> bool,
) -> Duration {
    (first..end)
        .filter(|&index| !done(index))
        .map(|index| estimates[index].duration)
        .sum()
}

/// What the window says before step `index`. `starting`: the run (this process of it) starts
/// here; `done` tells the steps that need no more work.
pub fn check(
    plan: &Plan,
    estimates: &[Estimate],
    window: &Window,
    index: usize,
    starting: bool,
    done: &dyn Fn(usize) -> bool,
    now: SystemTime,
) -> Verdict {
    let inside = inside_spans(plan);
    if inside[index] {
        return Verdict::Go;
    }
    if now >= window.deadline {
        return Verdict::Stop {
            reason: "the deadline has passed".to_string(),
        };
    }
    let step = &plan.steps[index];
    let segment = starting || is_gate(step);
    let opens_span = matches!(step.span, Some(SpanEdge::Opens(_)));
    if !segment && !opens_span {
        return Verdict::Go;
    }
    let end = piece_end(plan, &inside, index, segment);
    let needed = remaining(estimates, index, end, done);
    let left = window.left(now);
    if needed <= left {
        return Verdict::Go;
    }
    let what = match (&step.span, segment) {
        (Some(SpanEdge::Opens(name)), false) => format!("span `{name}`"),
        _ => "the segment".to_string(),
    };
    let until = match plan.steps.get(end) {
        Some(next) if segment => format!("until gate `{}`", next.id),
        _ if segment => "to the end of the plan".to_string(),
        _ => format!("through `{}`", plan.steps[end - 1].id),
    };
    Verdict::Stop {
        reason: format!(
            "{what} from `{}` {until} needs about {} by the estimates, and {} is left",
            step.id,
            short_duration(needed),
            short_duration(left)
        ),
    }
}

/// The plan's segments and spans with their estimates, and whether each fits `window`, as
/// `upgrade plan` prints them after the plan (not part of it: estimates change with every run).
pub fn describe(
    plan: &Plan,
    estimates: &[Estimate],
    basis: &str,
    window: Option<&Window>,
    now: SystemTime,
) -> String {
    if plan.steps.is_empty() {
        return String::new();
    }
    let inside = inside_spans(plan);
    let nothing_done = |_: usize| false;
    let mut text = format!("\ntime estimates ({basis}; not part of the plan):\n");
    let mut start = 0;
    let mut number = 1;
    let mut total = Duration::ZERO;
    let mut misses = Vec::new();
    while start < plan.steps.len() {
        let end = piece_end(plan, &inside, start, true);
        let needed = remaining(estimates, start, end, &nothing_done);
        total += needed;
        let ends = match plan.steps.get(end) {
            Some(gate) => format!("until gate `{}`", gate.id),
            None => "to the end".to_string(),
        };
        text.push_str(&format!(
            "  segment {number}: steps {}-{} {ends}: ~{}\n",
            start + 1,
            end,
            short_duration(needed)
        ));
        for (open, step) in plan.steps.iter().enumerate().take(end).skip(start) {
            if let Some(SpanEdge::Opens(name)) = &step.span {
                let close = piece_end(plan, &inside, open, false);
                text.push_str(&format!(
                    "    span `{name}` (steps {}-{}, never cut): ~{}\n",
                    open + 1,
                    close,
                    short_duration(remaining(estimates, open, close, &nothing_done))
                ));
            }
        }
        // Each segment on its own: the run stops at the gate before it for a person, whose
        // time is not known.
        if let Some(window) = window
            && needed > window.left(now)
        {
            misses.push(number);
        }
        start = end;
        number += 1;
    }
    let gates = plan.steps.iter().filter(|step| is_gate(step)).count();
    text.push_str(&format!(
        "  total: ~{} of work, plus the time people take at {gates} gate(s)\n",
        short_duration(total)
    ));
    if let Some(window) = window {
        let verdict = match misses.as_slice() {
            [] => "every segment fits".to_string(),
            many => format!(
                "segment(s) {} would not finish in it: `upgrade apply` would not start them",
                many.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        text.push_str(&format!(
            "  window: until {} ({} from now): {verdict}\n",
            window.deadline_text(),
            short_duration(window.left(now))
        ));
    }
    text
}

#[cfg(test)]
mod tests;
