//! "What can I upgrade to": `netctl upgrade plan` without `--to`, as `kubeadm upgrade plan`.
//!
//! [`UpgradeOptions::survey`] takes the installed version, the datastore type and the install
//! method (discovered or given) and the release catalog, and works out the newest patch of every
//! release line newer than the installed one, the shortest chain of supported runs to it (each run
//! to a line whose `upgradeFrom` accepts where the previous run ended), and the advice that applies
//! (`docs/upgrade-procedures.md`, "Versions and advice"). It reads the catalog only through its
//! public shape, so lines added to the catalog appear without a change here. It plans no steps
//! (that is [`super::request`]) and talks to nothing.

use serde::Serialize;

use super::catalog::{Catalog, Target};
use super::{InstallMethod, Release};
use crate::config::DatastoreType;

/// The installed release and where the catalog can take it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpgradeOptions {
    pub installed: Release,
    /// Where the installed version came from (`discovered`, `flag`).
    pub installed_origin: String,
    pub datastore_type: DatastoreType,
    /// `None` when neither discovery nor a flag told.
    pub install_method: Option<InstallMethod>,
    /// Newer release lines, oldest first.
    pub lines: Vec<LineOption>,
    /// The advice that applies to this cluster (`docs/upgrade-procedures.md`, "Versions and
    /// advice").
    pub advice: Vec<String>,
}

/// One release line newer than the installed release.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineOption {
    /// `v3.29`
    pub line: String,
    /// The newest patch the catalog knows; `None` when the catalog names none.
    pub newest: Option<Release>,
    /// The lines each run goes to, in order (the last is this line); empty when no supported chain
    /// of runs reaches it.
    pub runs: Vec<String>,
}

impl LineOption {
    /// `v3.13 → v3.27 → v3.29: two runs`, or why the line cannot be reached.
    pub fn path_text(&self, installed: &Release) -> String {
        if self.runs.is_empty() {
            return format!("no supported path from {}", installed.line());
        }
        let mut stops = vec![installed.line()];
        if self.runs.len() == 1 && self.line == installed.line() {
            stops = vec![installed.to_string()];
        }
        stops.extend(self.runs.iter().cloned());
        if self.line == installed.line()
            && let Some(newest) = &self.newest
        {
            *stops.last_mut().expect("one stop") = newest.to_string();
        }
        format!("{}: {}", stops.join(" → "), count_runs(self.runs.len()))
    }

    /// The `--to` of the first run.
    pub fn first_target(&self, catalog_newest: impl Fn(&str) -> Option<Release>) -> String {
        match self.runs.first() {
            Some(line) => match catalog_newest(line) {
                Some(release) => release.to_string(),
                None => format!("{line}.<patch>"),
            },
            None => String::new(),
        }
    }
}

fn count_runs(runs: usize) -> String {
    let word = match runs {
        1 => return "one run".to_string(),
        2 => "two",
        3 => "three",
        4 => "four",
        5 => "five",
        _ => return format!("{runs} runs"),
    };
    format!("{word} runs")
}

/// What the survey starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct Installed {
    pub version: Release,
    pub origin: String,
    pub datastore_type: DatastoreType,
    pub install_method: Option<InstallMethod>,
    /// All-interfaces host endpoints found (for the v3.14 host-endpoint note); `None` when not
    /// read.
    pub all_interfaces_host_endpoints: Option<usize>,
}

/// The release a run to `target` ends at, for the next run's `upgradeFrom`: its newest patch, else
/// the line's first release.
fn landing(target: &Target) -> Release {
    target.latest.clone().unwrap_or_else(|| {
        target
            .release
            .parse::<Release>()
            .unwrap_or(Release::UNKNOWN)
    })
}

impl UpgradeOptions {
    /// Where the catalog can take `installed`.
    pub fn survey(catalog: &Catalog, installed: &Installed) -> UpgradeOptions {
        let from = &installed.version;
        let lines = catalog
            .spec
            .targets
            .iter()
            .filter(|target| landing(target) > *from)
            .map(|target| LineOption {
                line: target.release.clone(),
                newest: target.latest.clone(),
                runs: runs_to(catalog, from, target),
            })
            .collect();
        UpgradeOptions {
            installed: from.clone(),
            installed_origin: installed.origin.clone(),
            datastore_type: installed.datastore_type,
            install_method: installed.install_method,
            lines,
            advice: advice(installed),
        }
    }
}

/// The fewest runs from `from` to `goal`, each to a catalog line that accepts where the previous one
/// ended; among equally short chains, the one through the newest lines. Breadth first over the
/// lines (a catalog has a handful).
fn runs_to(catalog: &Catalog, from: &Release, goal: &Target) -> Vec<String> {
    let targets = &catalog.spec.targets;
    // Each frontier entry: where the chain ends and the lines it went through.
    let mut frontier: Vec<(Release, Vec<String>)> = vec![(from.clone(), Vec::new())];
    for _ in 0..targets.len() {
        let mut next: Vec<(Release, Vec<String>)> = Vec::new();
        for (at, runs) in &frontier {
            if catalog.accepts(goal, at) && landing(goal) > *at {
                let mut runs = runs.clone();
                runs.push(goal.release.clone());
                return runs;
            }
            // Newest first, so the first chain found goes through the newest lines.
            for step in targets.iter().rev() {
                let end = landing(step);
                if end > *at && end < landing(goal) && catalog.accepts(step, at) {
                    let mut runs = runs.clone();
                    runs.push(step.release.clone());
                    next.push((end, runs));
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    Vec::new()
}

/// `docs/upgrade-procedures.md`, "Versions and advice": etcd mode on Kubernetes → the Kubernetes
/// datastore; a single-manifest install → the operator. Plus the preparation a run from before
/// v3.14 brings ("Host endpoints with `interfaceName: *`").
fn advice(installed: &Installed) -> Vec<String> {
    let mut advice = Vec::new();
    if installed.datastore_type == DatastoreType::EtcdV3 {
        // The procedure that does it takes single-manifest installs (the operator installs only
        // on the Kubernetes datastore).
        let how = match installed.install_method {
            Some(InstallMethod::Manifest) | None => {
                ": `netctl upgrade plan --procedure datastore-migration` plans it"
            }
            Some(_) => "",
        };
        advice.push(format!(
            "the datastore is etcd: moving to the Kubernetes datastore is recommended{how} (see `docs/upgrade-procedures.md`)"
        ));
    }
    match installed.install_method {
        Some(InstallMethod::Manifest) => advice.push(
            "installed from the single manifest: moving to the operator is recommended (see `docs/upgrade-procedures.md`)"
                .to_string(),
        ),
        Some(_) => {}
        None => advice.push(
            "the install method is unknown (no cluster configured): pass `--install-method` for the advice that fits"
                .to_string(),
        ),
    }
    if installed.version < Release::new(3, 14, 0)
        && let Some(count) = installed.all_interfaces_host_endpoints.filter(|n| *n > 0)
    {
        advice.push(format!(
            "{count} all-interfaces host endpoint(s): the run that crosses v3.14 first labels them and applies `allow-all-upgrade` (see `docs/upgrade-procedures.md`)"
        ));
    }
    advice
}

/// The survey as `upgrade plan` prints it.
pub fn text(options: &UpgradeOptions) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let method = options
        .install_method
        .map(|method| method.to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let _ = writeln!(
        out,
        "installed: {} ({}; {} install, {} datastore)",
        options.installed, options.installed_origin, method, options.datastore_type
    );
    if options.lines.is_empty() {
        let _ = writeln!(
            out,
            "\nnothing newer: the catalog knows no release after {}",
            options.installed
        );
    } else {
        let rows: Vec<[String; 3]> = options
            .lines
            .iter()
            .map(|line| {
                [
                    line.line.clone(),
                    line.newest
                        .as_ref()
                        .map(Release::to_string)
                        .unwrap_or_else(|| "(patch not in the catalog)".to_string()),
                    line.path_text(&options.installed),
                ]
            })
            .collect();
        let widths = [0, 1].map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .chain([["RELEASE LINE", "NEWEST PATCH"][column].len()])
                .max()
                .unwrap_or(0)
        });
        let _ = writeln!(
            out,
            "\n{:<w0$}  {:<w1$}  PATH",
            "RELEASE LINE",
            "NEWEST PATCH",
            w0 = widths[0],
            w1 = widths[1]
        );
        for [line, newest, path] in &rows {
            let _ = writeln!(
                out,
                "{line:<w0$}  {newest:<w1$}  {path}",
                w0 = widths[0],
                w1 = widths[1]
            );
        }
        let newest_of = |line: &str| {
            options
                .lines
                .iter()
                .find(|option| option.line == line)
                .and_then(|option| option.newest.clone())
        };
        if let Some(best) = options
            .lines
            .iter()
            .rev()
            .find(|line| !line.runs.is_empty())
        {
            let first = best.runs.first().map(String::as_str).unwrap_or_default();
            let note = match newest_of(first) {
                Some(_) => String::new(),
                None => format!("   (the catalog names no patch of {first}: choose the release)"),
            };
            let _ = writeln!(
                out,
                "\nnext: netctl upgrade plan --to {}{note}",
                best.first_target(newest_of)
            );
        }
    }
    if !options.advice.is_empty() {
        let _ = writeln!(out, "\nadvice:");
        for advice in &options.advice {
            let _ = writeln!(out, "  - {advice}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Catalog {
        let set = crate::runbook::RunbookSet::embedded().unwrap();
        Catalog::parse(set.catalog_text().unwrap()).unwrap()
    }

    fn installed(version: &str, datastore_type: DatastoreType) -> Installed {
        Installed {
            version: version.parse().unwrap(),
            origin: "discovered".to_string(),
            datastore_type,
            install_method: Some(InstallMethod::Manifest),
            all_interfaces_host_endpoints: Some(1),
        }
    }

    #[test]
    fn an_old_etcd_cluster_needs_two_runs_to_the_newest_line() {
        let catalog = shipped();
        let options =
            UpgradeOptions::survey(&catalog, &installed("v3.13.2", DatastoreType::EtcdV3));
        let v3_29 = options
            .lines
            .iter()
            .find(|line| line.line == "v3.29")
            .unwrap();
        assert_eq!(v3_29.runs, ["v3.27", "v3.29"]);
        assert_eq!(
            v3_29.path_text(&options.installed),
            "v3.13 → v3.27 → v3.29: two runs"
        );
        let newest = options.lines.last().unwrap();
        assert_eq!(newest.line, "v3.32");
        assert_eq!(
            newest.path_text(&options.installed),
            "v3.13 → v3.27 → v3.32: two runs"
        );
        assert_eq!(
            options.lines[0].path_text(&options.installed),
            "v3.13 → v3.27: one run"
        );
        assert_eq!(options.advice.len(), 3, "{:?}", options.advice);
    }

    #[test]
    fn a_newer_patch_of_the_installed_line_is_one_run() {
        let catalog = shipped();
        let options =
            UpgradeOptions::survey(&catalog, &installed("v3.29.2", DatastoreType::Kubernetes));
        let lines: Vec<&str> = options
            .lines
            .iter()
            .map(|line| line.line.as_str())
            .collect();
        assert_eq!(lines, ["v3.29", "v3.30", "v3.31", "v3.32"], "{options:?}");
        assert_eq!(
            options.lines[0].path_text(&options.installed),
            "v3.29.2 → v3.29.7: one run"
        );
        assert!(options.lines.iter().all(|line| line.runs.len() == 1));
        assert_eq!(options.advice.len(), 1, "manifest → operator only");
    }

    #[test]
    fn the_newest_patch_installed_has_nothing_newer() {
        let catalog = shipped();
        let options =
            UpgradeOptions::survey(&catalog, &installed("v3.32.1", DatastoreType::Kubernetes));
        assert!(options.lines.is_empty(), "{options:?}");
        assert!(text(&options).contains("nothing newer"));
    }
}
