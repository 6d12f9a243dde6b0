//! Citations a reader can open: comments, docs, runbooks, fixtures and the strings netctl prints
//! point at files of this repository (`docs/…`), upstream source paths
//! (`libcalico-go/lib/clientv3/ippool.go`) or issue URLs — never at documents that are not in the
//! repository (the reference notes and the specification the project was started from, by file or
//! by section number). See docs/architecture.md, "Tests".

use std::path::{Path, PathBuf};

use regex::Regex;

/// What the repository holds that a reader reads: everything under these folders, and these files.
const FOLDERS: [&str; 7] = [
    "src", "tests", "runbooks", "docs", "schemas", "scripts", "benches",
];
const FILES: [&str; 4] = ["README.md", "CHANGELOG.md", "Cargo.toml", "build.rs"];

/// Citations of documents outside the repository (this file, which names them, is not scanned).
fn unopenable() -> Vec<(Regex, &'static str)> {
    [
        // `reference/calicoctl.md`, `reference/etcd-and-crates.md` …
        (r"reference/[A-Za-z0-9_.-]+\.md", "a reference note"),
        (
            r"reference[ `]+[A-Za-z0-9_.-]*\.md|reference §",
            "a reference note",
        ),
        (
            r"etcd-and-crates|upgrade-anchors|calicoctl-ipam-datastore-node",
            "a reference note",
        ),
        // `seed §9.1`, `spec (§2.1`, `the spec's (§2.1)`, `seed/000_…`
        (r"\b(?i:seed|spec)('s)? \(?§", "the specification"),
        (r"\bseed/[0-9]", "the specification"),
        // A bare section number names no document: `(§9.9)`, `the §9.2 preparation`. An RFC's
        // sections may be cited (`RFC 9110 §15`).
        (r"§\s?[0-9]", "a section of a document not named"),
    ]
    .into_iter()
    .map(|(pattern, what)| (Regex::new(pattern).unwrap(), what))
    .collect()
}

fn files_under(path: &Path, found: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}

#[test]
fn nothing_cites_documents_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let this_file = root.join(file!().trim_start_matches("./"));
    let mut files: Vec<PathBuf> = FILES.iter().map(|file| root.join(file)).collect();
    for folder in FOLDERS {
        files_under(&root.join(folder), &mut files);
    }
    files.sort();
    let patterns = unopenable();
    let mut scanned = 0;
    let mut found = Vec::new();
    for file in files.iter().filter(|file| **file != this_file) {
        // Binary fixtures (archives, images) hold no citations.
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        scanned += 1;
        for (number, line) in text.lines().enumerate() {
            for (pattern, what) in &patterns {
                let Some(hit) = pattern.find(line) else {
                    continue;
                };
                if hit.as_str().starts_with('§') && line[..hit.start()].contains("RFC") {
                    continue;
                }
                found.push(format!(
                    "{}:{}: `{}` cites {what}",
                    file.strip_prefix(root).unwrap().display(),
                    number + 1,
                    hit.as_str()
                ));
                break;
            }
        }
    }
    assert!(
        scanned > 500,
        "only {scanned} files read under {}",
        root.display()
    );
    assert!(
        found.is_empty(),
        "{} citation(s) a reader of this repository cannot open; cite `docs/…` (a page and its \
         heading), an upstream source path or an issue URL instead:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The patterns catch what they are for and leave ordinary text alone, so that the test above
/// can fail.
#[test]
fn the_patterns_know_a_citation_when_they_see_one() {
    let patterns = unopenable();
    let cites = |line: &str| {
        patterns.iter().any(|(pattern, _)| {
            pattern.find(line).is_some_and(|hit| {
                !(hit.as_str().starts_with('§') && line[..hit.start()].contains("RFC"))
            })
        })
    };
    let section = '\u{a7}';
    for line in [
        format!("(`reference/calicoctl.md` {section}4.8)"),
        format!("as upstream (seed {section}9.1)"),
        format!("the spec ({section}2.1 rule 2)"),
        format!("The rules are the spec's ({section}2.1)"),
        format!("the {section}9.2 preparation"),
        format!("(reference {section}8.1)"),
        "(reference/etcd-and-crates.md G1)".to_string(),
        "(upgrade-anchors 2.4)".to_string(),
        "reference `upgrade-anchors.md`".to_string(),
    ] {
        assert!(cites(&line), "not caught: {line}");
    }
    for line in [
        "(`libcalico-go/lib/clientv3/ippool.go`)",
        "(`docs/upgrade-procedures.md`, \"Versions and advice\")",
        "seed the datastore with 100 host endpoints",
        "the spec is copied as is",
        "RFC 9110 \u{a7}15.5",
        "https://github.com/rancher/rke2-charts/issues/1205",
    ] {
        assert!(!cites(line), "caught by mistake: {line}");
    }
}
