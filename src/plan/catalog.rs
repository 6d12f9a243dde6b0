//! The release catalog (`runbooks/releases.yaml`): the target releases netctl can plan for, which
//! installed versions each may be upgraded from, and the named version edges that pull procedures in.
//!
//! The catalog answers "is this path supported, and if not, what is?"; which steps run is the
//! runbooks' business. Version requirements are matched on the release without its pre-release part
//! (see [`matches`]), so `v3.29.0-rc1` is treated as the v3.29.0 code line rather than silently
//! falling outside every plain range.

use serde::{Deserialize, Serialize};

use super::Release;
use crate::errors::Hint;

/// The catalog file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Catalog {
    pub api_version: String,
    pub kind: String,
    pub spec: CatalogSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogSpec {
    /// In ascending release order.
    pub targets: Vec<Target>,
    #[serde(default)]
    pub edges: Vec<Edge>,
}

/// A release line netctl can upgrade to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Target {
    /// The release line, e.g. `v3.29`.
    pub release: String,
    /// The newest patch release known, used when `--to` names only the line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<Release>,
    /// A semver requirement on the installed version, e.g. `>=3.15.0`.
    pub upgrade_from: String,
}

/// A version edge: crossing it (installed version on the `from` side, target on the `to` side) pulls
/// in the runbooks that name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Edge {
    pub name: String,
    pub from: String,
    pub to: String,
    pub description: String,
}

/// Why the catalog could not be read or refuses a path.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("the runbook set has no release catalog `releases.yaml`")]
    Missing,
    #[error("invalid release catalog: {message}")]
    Invalid { message: String },
    #[error("invalid version requirement `{requirement}` in {place}: {message}")]
    InvalidRequirement {
        requirement: String,
        place: String,
        message: String,
    },
}

impl Hint for CatalogError {
    fn hint(&self) -> Option<String> {
        match self {
            CatalogError::Missing => {
                Some("add one beside the runbooks (see `runbooks/releases.yaml`)".to_string())
            }
            _ => None,
        }
    }
}

/// Whether `release` satisfies `requirement`, ignoring the release's pre-release part.
///
/// semver only lets `3.29.0-rc1` match requirements that themselves name a `3.29.0-…` pre-release, so
/// `>=3.28.0` would be false for a v3.29 release candidate and its OwnerReference steps would vanish
/// from the plan. Upgrade procedures follow the code line, so the candidate is matched as `3.29.0`.
pub fn matches(requirement: &semver::VersionReq, release: &Release) -> bool {
    let mut version = release.0.clone();
    version.pre = semver::Prerelease::EMPTY;
    version.build = semver::BuildMetadata::EMPTY;
    requirement.matches(&version)
}

/// Parses a requirement, naming where it was written on failure.
pub fn requirement(text: &str, place: &str) -> Result<semver::VersionReq, CatalogError> {
    semver::VersionReq::parse(text).map_err(|error| CatalogError::InvalidRequirement {
        requirement: text.to_string(),
        place: place.to_string(),
        message: error.to_string(),
    })
}

impl Catalog {
    pub fn parse(text: &str) -> Result<Catalog, CatalogError> {
        let catalog: Catalog =
            crate::yaml::from_str(text).map_err(|error| CatalogError::Invalid {
                message: error.to_string(),
            })?;
        if catalog.kind != "ReleaseCatalog" {
            return Err(CatalogError::Invalid {
                message: format!("kind must be `ReleaseCatalog`, not `{}`", catalog.kind),
            });
        }
        for target in &catalog.spec.targets {
            requirement(
                &target.upgrade_from,
                &format!("target `{}`", target.release),
            )?;
        }
        for edge in &catalog.spec.edges {
            requirement(&edge.from, &format!("edge `{}`", edge.name))?;
            requirement(&edge.to, &format!("edge `{}`", edge.name))?;
        }
        Ok(catalog)
    }

    /// The target whose line the release belongs to.
    pub fn target(&self, release: &Release) -> Option<&Target> {
        self.spec
            .targets
            .iter()
            .find(|target| target.release == release.line())
    }

    pub fn edge(&self, name: &str) -> Option<&Edge> {
        self.spec.edges.iter().find(|edge| edge.name == name)
    }

    /// Whether the upgrade `from → to` crosses the edge.
    pub fn crosses(&self, edge: &Edge, from: &Release, to: &Release) -> bool {
        let from_side = semver::VersionReq::parse(&edge.from);
        let to_side = semver::VersionReq::parse(&edge.to);
        match (from_side, to_side) {
            (Ok(from_side), Ok(to_side)) => matches(&from_side, from) && matches(&to_side, to),
            _ => false,
        }
    }

    /// Whether `from` may be upgraded straight to the target.
    pub fn accepts(&self, target: &Target, from: &Release) -> bool {
        semver::VersionReq::parse(&target.upgrade_from)
            .map(|requirement| matches(&requirement, from))
            .unwrap_or(false)
    }

    /// A supported route through an intermediate target, e.g. `[v3.27, v3.29]` for v3.14 → v3.29.
    pub fn route(&self, from: &Release, target: &Target) -> Option<Vec<String>> {
        self.spec
            .targets
            .iter()
            .filter(|step| step.release != target.release && self.accepts(step, from))
            .filter(|step| {
                let lowest = step.release.parse::<Release>().unwrap_or(Release::UNKNOWN);
                let goal = target
                    .release
                    .parse::<Release>()
                    .unwrap_or(Release::UNKNOWN);
                lowest > *from && lowest < goal && self.accepts(target, &lowest)
            })
            .map(|step| vec![step.release.clone(), target.release.clone()])
            .next_back()
    }

    /// The target lines, for messages: `v3.27, v3.29`.
    pub fn target_names(&self) -> String {
        self.spec
            .targets
            .iter()
            .map(|target| format!("`{}`", target.release))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Catalog {
        let set = crate::runbook::RunbookSet::embedded().unwrap();
        Catalog::parse(set.catalog_text().unwrap()).unwrap()
    }

    fn release(text: &str) -> Release {
        text.parse().unwrap()
    }

    #[test]
    fn the_shipped_catalog_states_the_supported_paths() {
        let catalog = shipped();
        let v327 = catalog.target(&release("v3.27.4")).unwrap();
        let v329 = catalog.target(&release("v3.29.2")).unwrap();
        assert!(catalog.accepts(v327, &release("v3.0.0")));
        assert!(!catalog.accepts(v327, &release("v2.6.12")));
        assert!(catalog.accepts(v329, &release("v3.15.0")));
        assert!(!catalog.accepts(v329, &release("v3.14.9")));
        assert_eq!(
            catalog.route(&release("v3.14.0"), v329),
            Some(vec!["v3.27".to_string(), "v3.29".to_string()])
        );
    }

    #[test]
    fn edges_are_crossed_only_from_the_old_side_to_the_new() {
        let catalog = shipped();
        let helm = catalog.edge("helm-ownership").unwrap();
        assert!(catalog.crosses(helm, &release("v3.22.5"), &release("v3.27.0")));
        assert!(!catalog.crosses(helm, &release("v3.23.0"), &release("v3.27.0")));
        let uids = catalog.edge("owner-reference-uids").unwrap();
        assert!(catalog.crosses(uids, &release("v3.27.3"), &release("v3.29.0-rc1")));
        assert!(!catalog.crosses(uids, &release("v3.28.0"), &release("v3.29.0")));
    }

    #[test]
    fn the_catalog_reaches_the_newest_line_netctl_knows_with_its_latest_patches() {
        let catalog = shipped();
        let newest = crate::release::newest_known();
        let last = catalog.spec.targets.last().unwrap();
        assert_eq!(last.release, newest.line());
        assert_eq!(last.latest.as_ref(), Some(&newest));
        // Every line netctl knows the API of is a target with upstream's newest tag of that line
        // (v3.27.5 and the v3.28 line were once missing: "patch not in the catalog").
        for known in crate::release::known_lines() {
            let target = catalog
                .target(&known)
                .unwrap_or_else(|| panic!("{} is a target", known.line()));
            assert_eq!(target.latest.as_ref(), Some(&known), "{}", known.line());
        }
        for (line, latest) in [
            ("v3.28", "v3.28.5"),
            ("v3.30", "v3.30.7"),
            ("v3.31", "v3.31.7"),
            ("v3.32", "v3.32.1"),
        ] {
            let target = catalog.target(&release(&format!("{line}.0"))).unwrap();
            assert_eq!(target.latest, Some(release(latest)));
            assert!(catalog.accepts(target, &release("v3.15.0")));
            assert!(!catalog.accepts(target, &release("v3.14.9")));
        }
        let names = catalog.edge("policy-names-v3").unwrap();
        assert!(catalog.crosses(names, &release("v3.31.7"), &release("v3.32.1")));
        assert!(!catalog.crosses(names, &release("v3.32.0"), &release("v3.32.1")));
    }
}
