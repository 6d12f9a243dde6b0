//! Segments between gates, spans that are never cut, and the deadline's verdict before a step.

use super::*;
use crate::exec::estimate::Basis;
use crate::vocabulary::Phase;

fn step(id: &str, action: &str, with: serde_json::Value) -> PlannedStep {
    let action = Action::from_parts(action, with).unwrap();
    PlannedStep::new(id, "test", Phase::Upgrade, action, id, "test")
}

fn work(id: &str) -> PlannedStep {
    step(id, "exec", serde_json::json!({"command": ["true"]}))
}

fn gate(id: &str) -> PlannedStep {
    step(id, "pause", serde_json::json!({"message": "go?"}))
}

/// a(10m) gate b(10m) lock(1m) c(20m) unlock(1m) d(5m): segment 1 is `a`, segment 2 from the gate
/// to the end, with the span lock…unlock inside it.
fn plan() -> (Plan, Vec<Estimate>) {
    let mut lock = work("lock");
    lock.span = Some(SpanEdge::Opens("datastore-lock".into()));
    let mut unlock = work("unlock");
    unlock.span = Some(SpanEdge::Closes("datastore-lock".into()));
    let steps = vec![
        work("a"),
        gate("gate"),
        work("b"),
        lock,
        work("c"),
        unlock,
        work("d"),
    ];
    let minutes = [10, 0, 10, 1, 20, 1, 5];
    let estimates = minutes
        .iter()
        .map(|minutes| Estimate {
            duration: Duration::from_secs(minutes * 60),
            basis: Basis::Kind,
        })
        .collect();
    // A plan's facts do not matter here: one-step plans have a set of their own.
    let mut plan = Plan::single("test", "windows", work("a").action);
    plan.steps = steps;
    (plan, estimates)
}

fn at(minutes: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + minutes * 60)
}

fn verdict(index: usize, starting: bool, now: u64, deadline: u64) -> Verdict {
    let (plan, estimates) = plan();
    let window = Window {
        deadline: at(deadline),
    };
    check(
        &plan,
        &estimates,
        &window,
        index,
        starting,
        &|_| false,
        at(now),
    )
}

#[test]
fn a_segment_starts_only_when_it_finishes_in_time() {
    assert_eq!(verdict(0, true, 0, 10), Verdict::Go);
    match verdict(0, true, 0, 9) {
        Verdict::Stop { reason } => assert_eq!(
            reason,
            "the segment from `a` until gate `gate` needs about 10m00s by the estimates, and 9m00s is left"
        ),
        other => panic!("{other:?}"),
    }
    // At the gate, the rest of the plan (37 minutes) is the next segment.
    assert_eq!(verdict(1, false, 0, 37), Verdict::Go);
    assert!(matches!(verdict(1, false, 0, 36), Verdict::Stop { .. }));
    // A plain step inside a segment goes on while there is time.
    assert_eq!(verdict(2, false, 0, 1), Verdict::Go);
}

#[test]
fn a_span_is_one_piece_never_cut_and_the_deadline_stops_the_run_only_outside_it() {
    // Opening the span needs its three steps (22 minutes) to fit.
    assert_eq!(verdict(3, false, 0, 22), Verdict::Go);
    match verdict(3, false, 0, 21) {
        Verdict::Stop { reason } => assert!(
            reason.starts_with(
                "span `datastore-lock` from `lock` through `unlock` needs about 22m00s"
            ),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    // Past the deadline inside the span: go on to its end.
    assert_eq!(verdict(4, false, 50, 40), Verdict::Go);
    assert_eq!(verdict(5, false, 50, 40), Verdict::Go);
    // Right after it: stop.
    assert_eq!(
        verdict(6, false, 50, 40),
        Verdict::Stop {
            reason: "the deadline has passed".into()
        }
    );
    assert_eq!(
        inside_spans(&plan().0),
        [false, false, false, false, true, true, false]
    );
}

#[test]
fn steps_already_done_are_not_counted_and_the_plan_shows_each_segment() {
    let (plan, estimates) = plan();
    let window = Window { deadline: at(20) };
    // Resuming at `c` (inside the span: `b` and `lock` are done) with the span's end left.
    let done = |index: usize| index < 4;
    assert_eq!(
        check(&plan, &estimates, &window, 4, true, &done, at(0)),
        Verdict::Go,
        "never cut inside a span, even on resume"
    );
    let text = describe(&plan, &estimates, "from step kinds", Some(&window), at(0));
    assert_eq!(
        text,
        "
time estimates (from step kinds; not part of the plan):
  segment 1: steps 1-1 until gate `gate`: ~10m00s
  segment 2: steps 2-7 to the end: ~37m00s
    span `datastore-lock` (steps 4-6, never cut): ~22m00s
  total: ~47m00s of work, plus the time people take at 1 gate(s)
  window: until 2027-01-15T08:20:00Z (20m00s from now): segment(s) 2 would not finish in it: `upgrade apply` would not start them
"
    );
}
