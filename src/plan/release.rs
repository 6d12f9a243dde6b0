//! Release versions as users write them (`v3.29.2`, `v3.29`, `3.29.2`) over `semver::Version`, and
//! the release policy for writes: [`check_cluster_version`] refuses a cluster that runs a release
//! line newer than the newest one the built-in catalog knows (seed §7: an older tool must not be used
//! after an upgrade).
//!
//! Releases print with the `v` prefix the upstream tags and manifest URLs use. Pre-releases
//! (`v3.29.0-rc1`) are kept: semver requirements only match them when the requirement names the same
//! `major.minor.patch` with a pre-release, so a release candidate never slips into a plain range.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::catalog::{Catalog, CatalogError};
use crate::datastore::{Datastore, StoreError};
use crate::resource::{Kind, ResourceKey};
use crate::runbook::{RunbookError, RunbookSet};

/// One release of the network, e.g. `v3.29.2`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release(pub semver::Version);

/// Why a release version could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid release version `{text}`: expected `vMAJOR.MINOR[.PATCH]`, e.g. `v3.29.2`")]
pub struct ReleaseError {
    pub text: String,
}

impl Release {
    /// A placeholder for "not known"; never a real release.
    pub const UNKNOWN: Release = Release(semver::Version::new(0, 0, 0));

    pub fn new(major: u64, minor: u64, patch: u64) -> Release {
        Release(semver::Version::new(major, minor, patch))
    }

    /// `v3.29` for `v3.29.2`: the release line a catalog entry is keyed by.
    pub fn line(&self) -> String {
        format!("v{}.{}", self.0.major, self.0.minor)
    }

    /// Whether `text` named the patch level; `v3.29` did not.
    pub fn parse_with_precision(text: &str) -> Result<(Release, bool), ReleaseError> {
        let error = || ReleaseError {
            text: text.to_string(),
        };
        let bare = text.trim().strip_prefix('v').unwrap_or(text.trim());
        if let Ok(version) = semver::Version::parse(bare) {
            return Ok((Release(version), true));
        }
        // `3.29` — a release line; patch 0 stands in until the catalog names the latest patch.
        let mut parts = bare.splitn(2, '.');
        let major = parts
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(error)?;
        let minor = parts
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(error)?;
        Ok((Release::new(major, minor, 0), false))
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

impl FromStr for Release {
    type Err = ReleaseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Release::parse_with_precision(text).map(|(release, _)| release)
    }
}

impl Serialize for Release {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Release {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Why netctl will not write to this cluster.
#[derive(Debug, thiserror::Error)]
#[error("the cluster runs {cluster}, newer than the newest release this netctl knows ({newest})")]
pub struct ClusterTooNew {
    pub cluster: String,
    pub newest: String,
}

impl ClusterTooNew {
    pub fn hint(&self) -> &'static str {
        "use the netctl release that matches the cluster; `--allow-version-mismatch` overrides this check"
    }
}

/// Why the cluster's release could not be checked, or is refused.
#[derive(Debug, thiserror::Error)]
pub enum VersionCheckError {
    #[error(transparent)]
    TooNew(#[from] ClusterTooNew),
    #[error("cannot read ClusterInformation `default` to check the cluster version")]
    Unreadable(#[source] StoreError),
    #[error(transparent)]
    Runbooks(#[from] RunbookError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

impl VersionCheckError {
    pub fn hint(&self) -> Option<String> {
        match self {
            VersionCheckError::TooNew(too_new) => Some(too_new.hint().to_string()),
            VersionCheckError::Unreadable(source) => Some(match source.hint() {
                Some(hint) => format!("{hint}; or skip the check with `--allow-version-mismatch`"),
                None => "skip the check with `--allow-version-mismatch`".to_string(),
            }),
            VersionCheckError::Runbooks(_) | VersionCheckError::Catalog(_) => None,
        }
    }
}

/// Refuses a cluster whose ClusterInformation `calicoVersion` is of a newer release line than any
/// the built-in catalog names. Unlike upstream's exact-version equality check, patch releases and
/// older lines pass; a missing ClusterInformation or version passes too (upstream skips the check
/// then, `reference/calicoctl.md` §7.2).
pub async fn check_cluster_version(store: &dyn Datastore) -> Result<(), VersionCheckError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let info = match store.get(&key).await {
        Ok(info) => info,
        Err(StoreError::NotFound(_)) => return Ok(()),
        Err(error) => return Err(VersionCheckError::Unreadable(error)),
    };
    let Some(text) = info.spec.get("calicoVersion").and_then(|v| v.as_str()) else {
        return Ok(());
    };
    let Ok((cluster, _)) = Release::parse_with_precision(text) else {
        return Ok(());
    };
    let set = RunbookSet::embedded()?;
    let catalog = Catalog::parse(set.catalog_text().unwrap_or_default())?;
    let newest = catalog
        .spec
        .targets
        .iter()
        .filter_map(|target| Release::parse_with_precision(&target.release).ok())
        .map(|(release, _)| release)
        .max();
    if let Some(newest) = newest
        && (cluster.0.major, cluster.0.minor) > (newest.0.major, newest.0.minor)
    {
        return Err(ClusterTooNew {
            cluster: text.to_string(),
            newest: newest.line(),
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_read_with_or_without_prefix_and_patch() {
        assert_eq!(
            "v3.29.2".parse::<Release>().unwrap(),
            Release::new(3, 29, 2)
        );
        assert_eq!("3.29.2".parse::<Release>().unwrap().to_string(), "v3.29.2");
        assert_eq!(
            Release::parse_with_precision("v3.13").unwrap(),
            (Release::new(3, 13, 0), false)
        );
        assert_eq!(
            "v3.29.0-rc1".parse::<Release>().unwrap().to_string(),
            "v3.29.0-rc1"
        );
        assert!("latest".parse::<Release>().is_err());
    }

    #[test]
    fn a_release_candidate_never_matches_a_plain_range() {
        let requirement = semver::VersionReq::parse(">=3.15.0").unwrap();
        let candidate: Release = "v3.29.0-rc1".parse().unwrap();
        assert!(!requirement.matches(&candidate.0));
    }
}
