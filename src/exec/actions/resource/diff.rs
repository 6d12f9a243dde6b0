//! Datastore writes shown as diffs against what is stored, as terraform shows a plan: `+` a resource
//! that would be created (its document, every line marked), `~` one that would change (only the
//! fields that change: `~` a changed value, `+` a new field, `-` a removed one), `-` one that would
//! be deleted, and an unchanged one said as such. The lines are for transcripts (dry runs and
//! step summaries); this file decides nothing about what is written.

use serde_json::Value;

use crate::resource::Resource;

/// The mark of a resource line: created, changed, deleted, unchanged. Field lines under a resource
/// are indented, so only resource lines start with a mark.
pub const CREATE: &str = "+";
pub const CHANGE: &str = "~";
pub const DELETE: &str = "-";
pub const UNCHANGED: &str = "=";

/// A resource as compared: its JSON without the revision it was read at (that changes on every
/// write and is no change of the user's).
fn compared(resource: &Resource) -> Value {
    let mut shown = resource.clone();
    shown.metadata.resource_version = None;
    serde_json::to_value(&shown).unwrap_or(Value::Null)
}

/// A path segment as shown: `spec.node`, `metadata.labels["projectcalico.org/created-by"]`.
fn joined(prefix: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "_-".contains(character));
    match (prefix.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{prefix}.{key}"),
        (_, false) => format!("{prefix}[{}]", Value::from(key)),
    }
}

/// Every leaf of `value` with its path; maps are walked, lists and scalars are leaves (a list is
/// shown whole: its items have no names to follow).
fn leaves<'a>(value: &'a Value, prefix: &str, out: &mut Vec<(String, &'a Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                leaves(child, &joined(prefix, key), out);
            }
        }
        other => out.push((prefix.to_string(), other)),
    }
}

fn find<'a>(leaves: &[(String, &'a Value)], path: &str) -> Option<&'a Value> {
    leaves
        .iter()
        .find(|(other, _)| other == path)
        .map(|(_, value)| *value)
}

/// The fields that differ between `before` (stored) and `after` (as it would be written), one line
/// each, indented for a transcript. Empty when nothing changes.
pub(super) fn field_changes(before: &Resource, after: &Resource) -> Vec<String> {
    let (before, after) = (compared(before), compared(after));
    let (mut old, mut new) = (Vec::new(), Vec::new());
    leaves(&before, "", &mut old);
    leaves(&after, "", &mut new);
    let mut lines = Vec::new();
    for (path, value) in &new {
        match find(&old, path) {
            Some(previous) if previous == *value => {}
            Some(previous) => lines.push(format!("    {CHANGE} {path}: {previous} → {value}")),
            None => lines.push(format!("    {CREATE} {path}: {value}")),
        }
    }
    for (path, value) in &old {
        if find(&new, path).is_none() {
            lines.push(format!("    {DELETE} {path}: {value}"));
        }
    }
    lines
}

/// The lines of an update: the header (marked `~`, or said unchanged) and the changed fields.
pub(super) fn update_lines(header: &str, before: &Resource, after: &Resource) -> Vec<String> {
    let changes = field_changes(before, after);
    if changes.is_empty() {
        return vec![format!(
            "{UNCHANGED} {} unchanged: it already says this",
            before.key()
        )];
    }
    let mut lines = vec![format!("{CHANGE} {header}:")];
    lines.extend(changes);
    lines
}

/// The lines of a create: the header marked `+` and the document, every line marked `+`.
pub(super) fn create_lines(header: &str, created: &Resource) -> Vec<String> {
    let mut lines = vec![format!("{CREATE} {header}:")];
    lines.extend(
        super::document_lines(created)
            .iter()
            .map(|line| format!("    {CREATE} {}", line.strip_prefix("    ").unwrap_or(line))),
    );
    lines
}

/// The differences in a transcript of datastore writes, as `netctl diff` prints them: the resource
/// lines marked created (`+`), changed (`~`) or deleted (`-`), each with its field lines; unchanged
/// resources (`=`) and the closing summary are left out, as kubectl diff says nothing of what is
/// the same.
pub fn differences(transcript: &[String]) -> Vec<&str> {
    let mut shown = Vec::new();
    let mut keep = false;
    for line in transcript {
        if line.starts_with(' ') {
            if keep {
                shown.push(line.as_str());
            }
            continue;
        }
        keep = matches!(
            line.split_once(' ').map(|(mark, _)| mark),
            Some(CREATE | CHANGE | DELETE)
        );
        if keep {
            shown.push(line.as_str());
        }
    }
    shown
}

/// How many resources a run's datastore writes would create, change, leave unchanged and delete,
/// counted from the marked lines of its transcripts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteCounts {
    pub created: usize,
    pub changed: usize,
    pub unchanged: usize,
    pub deleted: usize,
}

impl WriteCounts {
    /// Adds the resource lines (unindented, marked) of one step's transcript.
    pub fn add(&mut self, transcript: &[String]) {
        for line in transcript {
            match line.split_once(' ').map(|(mark, _)| mark) {
                Some(CREATE) => self.created += 1,
                Some(CHANGE) => self.changed += 1,
                Some(UNCHANGED) => self.unchanged += 1,
                Some(DELETE) => self.deleted += 1,
                _ => {}
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == WriteCounts::default()
    }
}

impl std::fmt::Display for WriteCounts {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} to create, {} to change, {} unchanged, {} to delete",
            self.created, self.changed, self.unchanged, self.deleted
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(yaml: &str) -> Resource {
        crate::yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn only_changed_fields_are_shown_with_their_marks() {
        let stored = endpoint(
            "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: h1\n  resourceVersion: '3'\n  labels:\n    role: edge\n    old: x\nspec:\n  node: n1\n  interfaceName: eth0\n  expectedIPs: [10.0.0.1]\n",
        );
        let written = endpoint(
            "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: h1\n  labels:\n    role: edge\n    projectcalico.org/created-by: netctl\nspec:\n  node: n1\n  interfaceName: '*'\n  expectedIPs: [10.0.0.1, 10.0.0.9]\n",
        );
        assert_eq!(
            field_changes(&stored, &written),
            vec![
                r#"    + metadata.labels["projectcalico.org/created-by"]: "netctl""#,
                r#"    ~ spec.interfaceName: "eth0" → "*""#,
                r#"    ~ spec.expectedIPs: ["10.0.0.1"] → ["10.0.0.1","10.0.0.9"]"#,
                r#"    - metadata.labels.old: "x""#,
            ]
        );
        assert_eq!(
            update_lines("would update HostEndpoint(h1)", &stored, &stored),
            vec!["= HostEndpoint(h1) unchanged: it already says this"]
        );
    }

    #[test]
    fn counts_come_from_resource_lines_only() {
        let transcript: Vec<String> = [
            "+ would create HostEndpoint(h2):",
            "    + kind: HostEndpoint",
            "~ would update HostEndpoint(h1) (apply):",
            "    - metadata.labels.old: \"x\"",
            "= HostEndpoint(h3) unchanged; would not be written",
            "- would delete HostEndpoint(h4) (revision 3)",
            "would apply 3 resource(s)",
        ]
        .map(String::from)
        .to_vec();
        let mut counts = WriteCounts::default();
        counts.add(&transcript);
        assert_eq!(
            counts.to_string(),
            "1 to create, 1 to change, 1 unchanged, 1 to delete"
        );
        assert_eq!(
            differences(&transcript),
            vec![
                "+ would create HostEndpoint(h2):",
                "    + kind: HostEndpoint",
                "~ would update HostEndpoint(h1) (apply):",
                "    - metadata.labels.old: \"x\"",
                "- would delete HostEndpoint(h4) (revision 3)",
            ],
            "unchanged resources and the summary are left out"
        );
    }
}
