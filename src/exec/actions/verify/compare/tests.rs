use std::collections::{BTreeMap, BTreeSet};

use super::*;

fn sessions(established: &[&str], not_established: &[&str]) -> NodeSessions {
    NodeSessions {
        answered: true,
        reason: None,
        established: established.iter().map(|peer| peer.to_string()).collect(),
        not_established: not_established
            .iter()
            .map(|peer| peer.to_string())
            .collect(),
    }
}

fn nodes(entries: &[(&str, NodeSessions)]) -> BTreeMap<String, NodeSessions> {
    entries
        .iter()
        .map(|(node, sessions)| (node.to_string(), sessions.clone()))
        .collect()
}

#[test]
fn a_lost_session_fails_naming_the_node_and_the_peer() {
    let before = nodes(&[
        ("a", sessions(&["10.0.0.2", "10.0.0.3"], &[])),
        ("b", sessions(&["10.0.0.1"], &[])),
    ]);
    let now = nodes(&[
        ("a", sessions(&["10.0.0.2"], &["10.0.0.3 (Active)"])),
        ("b", sessions(&["10.0.0.1"], &[])),
    ]);
    let finding = bgp(Some(&before), &now);
    assert_eq!(finding.verdict, Verdict::Failed);
    assert_eq!(
        finding.evidence,
        vec![
            "node `a`: 1 session(s) established, 2 before; lost `10.0.0.3` (now: 10.0.0.3 (Active))"
        ]
    );
    assert_eq!(bgp(Some(&before), &before).verdict, Verdict::Passed);
}

#[test]
fn a_node_that_stops_answering_fails_and_one_that_never_answered_is_not_compared() {
    let silent = NodeSessions {
        answered: false,
        reason: Some("no answer within 30s".to_string()),
        ..NodeSessions::default()
    };
    let before = nodes(&[("a", sessions(&["10.0.0.2"], &[])), ("b", silent.clone())]);
    let now = nodes(&[("a", silent.clone()), ("b", silent)]);
    let finding = bgp(Some(&before), &now);
    assert_eq!(
        finding.evidence,
        vec!["node `a` did not report its sessions: no answer within 30s"]
    );
}

#[test]
fn without_a_baseline_every_reported_session_must_be_established() {
    let now = nodes(&[("a", sessions(&["10.0.0.2"], &["10.0.0.3 (Connect)"]))]);
    let finding = bgp(None, &now);
    assert_eq!(finding.verdict, Verdict::Failed);
    assert_eq!(
        finding.evidence,
        vec!["node `a`: 1 session(s) not established (now: 10.0.0.3 (Connect))"]
    );
}

#[test]
fn only_new_ipam_problems_fail() {
    let before = vec!["leaked address 10.0.0.9".to_string()];
    let mut now: BTreeSet<String> = before.iter().cloned().collect();
    assert_eq!(ipam(Some(&before), &now).verdict, Verdict::Passed);
    now.insert("leaked address 10.0.0.10".to_string());
    let finding = ipam(Some(&before), &now);
    assert_eq!(finding.verdict, Verdict::Failed);
    assert_eq!(finding.evidence, vec!["leaked address 10.0.0.10"]);
    assert_eq!(ipam(None, &now).evidence.len(), 2);
}

fn kind(names: &[(&str, &str)], digest: &str) -> KindDigest {
    KindDigest {
        count: names.len() as u64,
        digest: digest.to_string(),
        names: names
            .iter()
            .map(|(name, digest)| (name.to_string(), digest.to_string()))
            .collect(),
    }
}

#[test]
fn changed_resources_are_named_unless_a_step_writes_their_kind() {
    let before: BTreeMap<String, KindDigest> = [
        (
            "GlobalNetworkPolicy".to_string(),
            kind(&[("a", "1"), ("b", "2")], "x"),
        ),
        ("HostEndpoint".to_string(), kind(&[("h", "1")], "y")),
    ]
    .into();
    let now: BTreeMap<String, KindDigest> = [
        (
            "GlobalNetworkPolicy".to_string(),
            kind(&[("a", "9"), ("c", "3")], "z"),
        ),
        ("HostEndpoint".to_string(), kind(&[("h", "2")], "w")),
    ]
    .into();
    let changed_by: BTreeMap<String, Vec<String>> = [(
        "HostEndpoint".to_string(),
        vec!["auto-host-endpoints/label".to_string()],
    )]
    .into();
    let finding = resources(&before, &now, &changed_by);
    assert_eq!(finding.verdict, Verdict::Failed);
    assert_eq!(
        finding.summary,
        "resources changed that no step of the plan writes; changed as planned: HostEndpoint (changed by `auto-host-endpoints/label`)"
    );
    assert_eq!(
        finding.evidence,
        vec!["GlobalNetworkPolicy: 2 → 2 resource(s); changed: `a`; created: `c`; deleted: `b`"]
    );
    assert_eq!(
        resources(&before, &before, &BTreeMap::new()).verdict,
        Verdict::Passed
    );
}
