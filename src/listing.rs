//! The one bounded lister: every list of problems netctl shows — the invalid documents of
//! `validate` and `create|apply|replace|delete -f`, the targets a delete refuses, the findings of
//! `runbook lint`, the checks of `config check`, the nodes a pre-flight refuses — is written here,
//! so a file of 100,000 bad documents gives a screen to read, not megabytes.
//!
//! Past [`SHOWN`] problems, a listing shows the first [`SHOWN`] and then counts the rest by kind of
//! problem:
//!
//! ```text
//! - `hosts.yaml` document 1 (from line 1): `HostEndpoint(h0)` has 1 error:
//!     line 9: spec.expectedIPs[1] = '10.0.0.999': invalid IP address
//! …
//! 34,444 more, by kind of problem:
//!   34,444 × spec.expectedIPs[1]: invalid IP address
//! (`--all-errors` lists every one; `--errors-file FILE` writes them to FILE)
//! ```
//!
//! A kind of problem is its field path with list indexes normalised (`spec.ingress[*].ports`) and
//! its message without the values of one document (`…` for a quoted value, `N` for a number): the
//! same mistake made in many documents is one kind. Where every problem of a kind says the same
//! path or the same words, they are shown as they are. [`Limit::All`] (`--all-errors`) lists every
//! problem; [`Limit::WrittenTo`] (`--errors-file`) counts on screen and names the file that has
//! them all. This file imports nothing of netctl.

use std::collections::HashMap;
use std::fmt::Write as _;

/// How many problems a listing shows before it counts the rest.
pub const SHOWN: usize = 20;

/// How many kinds of problem the counts name before they count the kinds too.
pub const KINDS_SHOWN: usize = 20;

/// How much of a listing to show.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Limit {
    /// The first [`SHOWN`], then counts by kind, and how to see the rest.
    #[default]
    Bounded,
    /// As [`Limit::Bounded`], saying that every problem was written to this file
    /// (`--errors-file`; the reporter writes it).
    WrittenTo(std::path::PathBuf),
    /// Every problem (`--all-errors`).
    All,
}

/// One kind of problem, for counting the problems not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemKind {
    /// Problems with the same key are counted together.
    key: String,
    /// How the kind reads when all its problems say the same.
    text: String,
}

impl ProblemKind {
    /// A problem with a field: `path` (`spec.expectedIPs[1]`) and what is wrong with it (a
    /// reason that names its field first reads alone).
    pub fn field(path: &str, reason: &str) -> ProblemKind {
        let text = match reason.starts_with(&format!("`{path}`")) {
            true => reason.to_string(),
            false => format!("{path}: {reason}"),
        };
        ProblemKind {
            key: format!("{}\u{0}{}", normalise_path(path), normalise_text(reason)),
            text,
        }
    }

    /// A problem that names no field: its message.
    pub fn message(message: &str) -> ProblemKind {
        ProblemKind {
            key: normalise_text(message),
            text: message.to_string(),
        }
    }

    /// A kind named by the caller (a lint check, a refusal's reason): counted by `name` alone.
    pub fn named(name: &str) -> ProblemKind {
        ProblemKind {
            key: name.to_string(),
            text: name.to_string(),
        }
    }

    /// How a group of this kind reads: the problems' own text when they all say the same, else
    /// the normalised one.
    fn shown(&self, uniform: bool) -> String {
        match uniform {
            true => self.text.clone(),
            false => match self.key.split_once('\u{0}') {
                Some((path, reason)) => format!("{path}: {reason}"),
                None => self.key.clone(),
            },
        }
    }
}

/// An error that lists problems: its text with them listed as `limit` says (`None` for an error
/// of the type that lists none). Its `Display` is the [`Limit::Bounded`] form; the reporter asks
/// for the others (`--all-errors`, `--errors-file`).
pub trait Listed {
    fn listed(&self, limit: &Limit) -> Option<String>;
}

/// A problem as a listing shows it.
pub trait Problem {
    /// The problem's entry; lines after the first are indented by the listing.
    fn entry(&self) -> String;

    /// What it counts as when it is not shown: one kind per mistake it holds (a document with two
    /// bad fields counts under both).
    fn kinds(&self) -> Vec<ProblemKind>;
}

/// Writes `problems` as a list under `headline` (`found 3 problems in the input:`), one `- ` entry
/// each, as `limit` says.
pub fn render<P: Problem>(headline: &str, problems: &[P], limit: &Limit) -> String {
    let mut text = headline.to_string();
    for problem in shown(problems, limit) {
        text.push_str("\n- ");
        text.push_str(&bounded_entry(&problem.entry(), limit).replace('\n', "\n  "));
    }
    text.push_str(&rest(problems, limit));
    text
}

/// An entry of many lines (a document with hundreds of bad fields) keeps its first line and
/// [`SHOWN`] more unless `limit` says all.
fn bounded_entry(entry: &str, limit: &Limit) -> String {
    let lines = entry.lines().count();
    if *limit == Limit::All || lines <= SHOWN + 1 {
        return entry.to_string();
    }
    let mut text: Vec<&str> = entry.lines().take(SHOWN + 1).collect();
    let more = format!(
        "  … {} more lines of this one",
        thousands(lines - SHOWN - 1)
    );
    text.push(&more);
    text.join("\n")
}

/// Writes `problems` one entry a line, as compilers write findings (`file:line:col: ...`), as
/// `limit` says; the counts of the rest follow on lines of their own. Ends with a line break.
pub fn lines<P: Problem>(problems: &[P], limit: &Limit) -> String {
    let mut text = String::new();
    for problem in shown(problems, limit) {
        text.push_str(&problem.entry());
        text.push('\n');
    }
    let rest = rest(problems, limit);
    if let Some(rest) = rest.strip_prefix('\n') {
        text.push_str(rest);
        text.push('\n');
    }
    text
}

/// The problems a listing shows one by one.
fn shown<'a, P>(problems: &'a [P], limit: &Limit) -> &'a [P] {
    match limit {
        Limit::All => problems,
        Limit::Bounded | Limit::WrittenTo(_) => &problems[..problems.len().min(SHOWN)],
    }
}

/// After the problems shown: nothing, or a line break, the counts of the others by kind and how
/// to see them.
fn rest<P: Problem>(problems: &[P], limit: &Limit) -> String {
    let rest = &problems[shown(problems, limit).len()..];
    if rest.is_empty() {
        return String::new();
    }
    let mut text = String::from("\n");
    text.push_str(&counts(rest.iter().flat_map(Problem::kinds), rest.len()));
    match limit {
        Limit::WrittenTo(path) => {
            let _ = write!(
                text,
                "\n(all {} are in `{}`)",
                thousands(problems.len()),
                path.display()
            );
        }
        _ => text.push_str(
            "\n(`--all-errors` lists every one; `--errors-file FILE` writes them to FILE)",
        ),
    }
    text
}

/// Items of one kind named in a line (`` `n1`, `n2` and 4,998 more ``): the first [`SHOWN`]
/// unless `limit` is [`Limit::All`].
pub fn inline(items: &[String], limit: &Limit) -> String {
    let shown = match limit {
        Limit::All => items.len(),
        Limit::Bounded | Limit::WrittenTo(_) => items.len().min(SHOWN),
    };
    let mut text = items[..shown].join(", ");
    if shown < items.len() {
        let _ = write!(text, " and {} more", thousands(items.len() - shown));
    }
    text
}

/// `N more, by kind of problem:` and a line per kind, most frequent first (then first seen).
fn counts(kinds: impl Iterator<Item = ProblemKind>, more: usize) -> String {
    struct Group {
        kind: ProblemKind,
        count: usize,
        uniform: bool,
        first: usize,
    }
    let mut groups: HashMap<String, Group> = HashMap::new();
    for (seen, kind) in kinds.enumerate() {
        match groups.get_mut(&kind.key) {
            Some(group) => {
                group.count += 1;
                group.uniform &= group.kind.text == kind.text;
            }
            None => {
                groups.insert(
                    kind.key.clone(),
                    Group {
                        kind,
                        count: 1,
                        uniform: true,
                        first: seen,
                    },
                );
            }
        }
    }
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then(a.first.cmp(&b.first)));
    let mut text = format!("{} more, by kind of problem:", thousands(more));
    for group in groups.iter().take(KINDS_SHOWN) {
        let _ = write!(
            text,
            "\n  {} × {}",
            thousands(group.count),
            group.kind.shown(group.uniform)
        );
    }
    if groups.len() > KINDS_SHOWN {
        let others = &groups[KINDS_SHOWN..];
        let count: usize = others.iter().map(|group| group.count).sum();
        let _ = write!(
            text,
            "\n  {} × {} other kinds",
            thousands(count),
            thousands(others.len())
        );
    }
    text
}

/// `34444` → `34,444`.
pub fn thousands(number: usize) -> String {
    let digits = number.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// A field path with its list indexes as `[*]`; map keys in brackets (`labels[app]`) stay.
fn normalise_path(path: &str) -> String {
    let mut text = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let close = rest.find(']').unwrap_or(rest.len());
        let index = &rest[..close];
        match !index.is_empty() && index.bytes().all(|byte| byte.is_ascii_digit()) {
            true => text.push('*'),
            false => text.push_str(index),
        }
        rest = &rest[close..];
    }
    text.push_str(rest);
    text
}

/// A message without the values of one document: a quoted value (`` `x` ``, `'x'`) becomes `…`
/// and a run of digits `N`.
fn normalise_text(message: &str) -> String {
    let mut text = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(char) = chars.next() {
        match char {
            '`' | '\'' => {
                let quoted: String = chars.by_ref().take_while(|next| *next != char).collect();
                match quoted.is_empty() {
                    true => text.push(char),
                    false => {
                        text.push(char);
                        text.push('…');
                        text.push(char);
                    }
                }
            }
            digit if digit.is_ascii_digit() => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                text.push('N');
            }
            other => text.push(other),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bad {
        entry: String,
        kinds: Vec<ProblemKind>,
    }

    impl Problem for Bad {
        fn entry(&self) -> String {
            self.entry.clone()
        }
        fn kinds(&self) -> Vec<ProblemKind> {
            self.kinds.clone()
        }
    }

    fn document(index: usize, path: &str, reason: &str) -> Bad {
        Bad {
            entry: format!("document {index}:\n{path}: {reason}"),
            kinds: vec![ProblemKind::field(path, reason)],
        }
    }

    #[test]
    fn a_short_listing_is_listed_whole() {
        let problems: Vec<Bad> = (1..=3)
            .map(|index| document(index, "spec.node", "must be set"))
            .collect();
        assert_eq!(
            render("found 3 problems:", &problems, &Limit::Bounded),
            "found 3 problems:\n- document 1:\n  spec.node: must be set\n- document 2:\n  spec.node: must be set\n- document 3:\n  spec.node: must be set"
        );
    }

    #[test]
    fn past_twenty_the_rest_is_counted_by_kind() {
        let mut problems: Vec<Bad> = (1..=30_000)
            .map(|index| document(index, "spec.expectedIPs[1]", "invalid IP address"))
            .collect();
        // The same mistake at other indexes and with other values is the same kind.
        problems.extend((0..5).map(|index| {
            document(
                index,
                &format!("spec.ports[{index}].port"),
                &format!("`{}` is not a port", 70_000 + index),
            )
        }));
        problems.push(document(1, "metadata.name", "must be set"));
        let text = render("found 30,006 problems:", &problems, &Limit::Bounded);
        let tail = text.split_once("\n29,986 more").unwrap().1;
        assert_eq!(
            tail,
            ", by kind of problem:\n  29,980 × spec.expectedIPs[1]: invalid IP address\n  5 × spec.ports[*].port: `…` is not a port\n  1 × metadata.name: must be set\n(`--all-errors` lists every one; `--errors-file FILE` writes them to FILE)"
        );
        assert_eq!(text.matches("\n- ").count(), SHOWN);
        assert!(text.len() < 2_000, "{} bytes", text.len());
    }

    #[test]
    fn all_lists_every_one_and_a_file_is_named() {
        let problems: Vec<Bad> = (1..=25)
            .map(|index| document(index, "spec.node", "must be set"))
            .collect();
        let all = render("found 25 problems:", &problems, &Limit::All);
        assert_eq!(all.matches("\n- ").count(), 25);
        assert!(!all.contains("more, by kind"));
        let written = render(
            "found 25 problems:",
            &problems,
            &Limit::WrittenTo("errors.txt".into()),
        );
        assert!(
            written.ends_with("5 × spec.node: must be set\n(all 25 are in `errors.txt`)"),
            "{written}"
        );
    }

    #[test]
    fn kinds_past_twenty_are_counted_too() {
        let problems: Vec<Bad> = (0..60)
            .map(|index| Bad {
                entry: format!("problem {index}"),
                kinds: vec![ProblemKind::named(&format!("check-{}", index % 30))],
            })
            .collect();
        let text = render("60 problems:", &problems, &Limit::Bounded);
        assert!(text.contains("\n  2 × check-20\n"), "{text}");
        assert!(text.contains("\n  10 × 10 other kinds\n"), "{text}");
    }

    #[test]
    fn an_entry_of_many_lines_is_cut_too() {
        let fields: Vec<String> = (0..500)
            .map(|index| format!("  spec.ports[{index}]: not a port"))
            .collect();
        let problems = vec![Bad {
            entry: format!("document 1:\n{}", fields.join("\n")),
            kinds: vec![ProblemKind::field("spec.ports[0]", "not a port")],
        }];
        let text = render("found 1 problem:", &problems, &Limit::Bounded);
        assert_eq!(text.lines().count(), 2 + SHOWN + 1);
        assert!(
            text.ends_with("\n    … 480 more lines of this one"),
            "{text}"
        );
        let all = render("found 1 problem:", &problems, &Limit::All);
        assert_eq!(all.lines().count(), 502);
    }

    #[test]
    fn inline_lists_name_the_first_and_count_the_rest() {
        let nodes: Vec<String> = (0..25).map(|index| format!("`n{index}`")).collect();
        let text = inline(&nodes, &Limit::Bounded);
        assert!(text.starts_with("`n0`, `n1`"));
        assert!(text.ends_with("`n19` and 5 more"), "{text}");
        assert_eq!(inline(&nodes, &Limit::All).matches('`').count(), 50);
    }

    #[test]
    fn numbers_read_with_thousands_separators() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(34_444), "34,444");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn paths_keep_map_keys_and_lose_indexes() {
        assert_eq!(
            normalise_path("spec.ingress[12].destination.ports[0]"),
            "spec.ingress[*].destination.ports[*]"
        );
        assert_eq!(
            normalise_path("metadata.labels[app]"),
            "metadata.labels[app]"
        );
    }
}
