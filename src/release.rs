//! Releases of the network as users write them (`v3.29.4`, `v3.29`, `3.29.4`), the release lines
//! whose API netctl knows (v3.27 … v3.32, each with its newest patch), and [`ApiRelease`]: which
//! release the API rules of a command follow — the cluster's (ClusterInformation `calicoVersion`),
//! a `--release` flag's, or, with neither, the newest one known — with where that came from, for
//! messages.
//!
//! Pure data on the lowest floor: the resource model gates fields by these releases, the etcd
//! backend picks its policy key layout by them, the planner's catalog names its targets with them.
//! What each line's API holds is not here: it is annotated on the typed specs (`resource/spec`).
//!
//! Releases print with the `v` prefix the upstream tags and manifest URLs use. Pre-releases
//! (`v3.29.0-rc1`) are kept: semver requirements only match them when the requirement names the same
//! `major.minor.patch` with a pre-release, so a release candidate never slips into a plain range.

use std::fmt;
use std::str::FromStr;

use crate::errors::Hint;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One release of the network, e.g. `v3.29.2`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release(pub semver::Version);

/// Why a release version could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid release version `{text}`: expected `vMAJOR.MINOR[.PATCH]`, e.g. `v3.29.2`")]
pub struct ReleaseError {
    pub text: String,
}

/// The release lines whose API netctl knows, oldest first, each as its newest patch release
/// (upstream's tags; v3.31.7 was tagged after v3.32.1).
const KNOWN_LINES: [(u64, u64, u64); 6] = [
    (3, 27, 5),
    (3, 28, 5),
    (3, 29, 7),
    (3, 30, 7),
    (3, 31, 7),
    (3, 32, 1),
];

impl Release {
    /// A placeholder for "not known"; never a real release.
    pub const UNKNOWN: Release = Release(semver::Version::new(0, 0, 0));

    pub const fn new(major: u64, minor: u64, patch: u64) -> Release {
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

    /// The same release without its pre-release and build parts: `v3.29.0-rc1` is the v3.29.0 code
    /// line for every comparison of what a release holds.
    pub fn code_line(&self) -> Release {
        Release::new(self.0.major, self.0.minor, self.0.patch)
    }

    /// Whether both releases belong to one line (`v3.29.2` and `v3.29.7`).
    pub fn same_line(&self, other: &Release) -> bool {
        (self.0.major, self.0.minor) == (other.0.major, other.0.minor)
    }

    /// How many minor releases `self` is ahead of `other` (negative when behind); only meaningful
    /// within one major release, which every line netctl knows shares.
    pub fn minors_ahead_of(&self, other: &Release) -> i64 {
        let minor = |release: &Release| release.0.major as i64 * 1000 + release.0.minor as i64;
        minor(self) - minor(other)
    }
}

/// The newest release of the newest line netctl knows (offline validation follows it).
pub fn newest_known() -> Release {
    let (major, minor, patch) = KNOWN_LINES[KNOWN_LINES.len() - 1];
    Release::new(major, minor, patch)
}

/// The oldest line netctl knows the API of, as its first release (`v3.27.0`).
pub fn oldest_known() -> Release {
    let (major, minor, _) = KNOWN_LINES[0];
    Release::new(major, minor, 0)
}

/// Every line netctl knows, oldest first, each as its newest patch release.
pub fn known_lines() -> impl Iterator<Item = Release> {
    KNOWN_LINES
        .iter()
        .map(|(major, minor, patch)| Release::new(*major, *minor, *patch))
}

/// The newest patch of a line netctl knows (`v3.29.7` for `v3.29`).
pub fn newest_patch(line: &Release) -> Option<Release> {
    known_lines().find(|known| known.same_line(line))
}

/// `v3.27 … v3.32`, for messages.
pub fn known_lines_text() -> String {
    format!("{} … {}", oldest_known().line(), newest_known().line())
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

/// Where the release a command's API rules follow came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOrigin {
    /// ClusterInformation `calicoVersion` of the datastore the command uses.
    Cluster,
    /// `--release` as the user wrote it (`v3.29`).
    Flag(String),
    /// Neither a cluster version nor a flag: the newest release netctl knows.
    Newest,
}

/// The release whose API rules (kinds, fields, values, defaults) a command follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRelease {
    pub release: Release,
    pub origin: ReleaseOrigin,
}

/// Why `--release` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseFlagError {
    #[error(transparent)]
    Invalid(#[from] ReleaseError),
    #[error("netctl does not know the API of release line `{line}`")]
    UnknownLine { line: String },
}

impl Hint for ReleaseFlagError {
    fn hint(&self) -> Option<String> {
        match self {
            ReleaseFlagError::Invalid(_) => None,
            ReleaseFlagError::UnknownLine { .. } => Some(format!(
                "netctl knows the lines {}; name one of them, e.g. `--release {}`",
                known_lines_text(),
                newest_known().line()
            )),
        }
    }
}

impl ApiRelease {
    /// The newest release netctl knows: what offline commands follow.
    pub fn newest() -> ApiRelease {
        ApiRelease {
            release: newest_known(),
            origin: ReleaseOrigin::Newest,
        }
    }

    /// The cluster's release.
    pub fn cluster(release: Release) -> ApiRelease {
        ApiRelease {
            release,
            origin: ReleaseOrigin::Cluster,
        }
    }

    /// `--release v3.29` (the line's newest patch) or `--release v3.29.2` (that release); only the
    /// lines netctl knows.
    pub fn from_flag(text: &str) -> Result<ApiRelease, ReleaseFlagError> {
        let (named, precise) = Release::parse_with_precision(text)?;
        let newest = newest_patch(&named)
            .ok_or_else(|| ReleaseFlagError::UnknownLine { line: named.line() })?;
        Ok(ApiRelease {
            release: if precise { named } else { newest },
            origin: ReleaseOrigin::Flag(text.trim().to_string()),
        })
    }

    /// The end of a message about what this release lacks: `the cluster runs v3.29.4`.
    pub fn describe(&self) -> String {
        match &self.origin {
            ReleaseOrigin::Cluster => format!("the cluster runs {}", self.release),
            ReleaseOrigin::Flag(text) => {
                format!("validating for {} (`--release {text}`)", self.release)
            }
            ReleaseOrigin::Newest => format!(
                "validating for {}, the newest release netctl knows",
                self.release
            ),
        }
    }
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
        assert_eq!(candidate.code_line(), Release::new(3, 29, 0));
    }

    #[test]
    fn the_known_lines_run_from_v3_27_to_v3_32() {
        assert_eq!(known_lines_text(), "v3.27 … v3.32");
        assert_eq!(newest_known(), Release::new(3, 32, 1));
        assert_eq!(
            newest_patch(&Release::new(3, 29, 0)),
            Some(Release::new(3, 29, 7))
        );
        assert_eq!(newest_patch(&Release::new(3, 26, 0)), None);
    }

    #[test]
    fn a_release_flag_names_a_line_or_a_release_of_a_known_line() {
        let line = ApiRelease::from_flag("v3.29").unwrap();
        assert_eq!(line.release, Release::new(3, 29, 7));
        assert_eq!(
            line.describe(),
            "validating for v3.29.7 (`--release v3.29`)"
        );
        let exact = ApiRelease::from_flag("3.30.1").unwrap();
        assert_eq!(exact.release, Release::new(3, 30, 1));
        let unknown = ApiRelease::from_flag("v3.33").unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "netctl does not know the API of release line `v3.33`"
        );
        assert!(unknown.hint().unwrap().contains("v3.27 … v3.32"));
        assert_eq!(
            ApiRelease::cluster(Release::new(3, 29, 4)).describe(),
            "the cluster runs v3.29.4"
        );
    }

    #[test]
    fn minor_distance_counts_lines() {
        let newer = Release::new(3, 32, 1);
        assert_eq!(newer.minors_ahead_of(&Release::new(3, 30, 7)), 2);
        assert_eq!(Release::new(3, 29, 0).minors_ahead_of(&newer), -3);
    }
}
