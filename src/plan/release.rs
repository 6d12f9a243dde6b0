//! The release policy for writes: [`check_cluster_version`] refuses a cluster that runs a release
//! line newer than the newest one the built-in catalog knows (an older tool must not be used after
//! an upgrade: `docs/upgrade-procedures.md`, "Versions and advice") — and
//! [`cluster_release`]/[`api_release`]: the release whose API rules a command follows (the
//! cluster's, else the newest netctl knows). Release versions themselves are
//! `crate::release`.

use super::catalog::CatalogError;
use crate::datastore::{Datastore, StoreError};
use crate::errors::Hint;
use crate::resource::{Kind, ResourceKey};
use crate::runbook::RunbookError;

pub use crate::release::{ApiRelease, Release, ReleaseError};

/// The release ClusterInformation `default` names in `calicoVersion`: `None` when there is no
/// ClusterInformation, no version or one that is not a release (a development build).
pub async fn cluster_release(store: &dyn Datastore) -> Result<Option<Release>, StoreError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let info = match store.get(&key).await {
        Ok(info) => info,
        Err(StoreError::NotFound(_)) => return Ok(None),
        Err(error) => return Err(error),
    };
    Ok(info
        .spec
        .get("calicoVersion")
        .and_then(|v| v.as_str())
        .and_then(|text| Release::parse_with_precision(text).ok())
        .map(|(release, _)| release))
}

/// The release a command's validation and defaulting follow: `chosen` (`--release`) when given,
/// else the cluster's, else — no version recorded, or ClusterInformation unreadable — the newest
/// netctl knows. Never fails: a write that cannot read ClusterInformation fails on its own.
pub async fn api_release(store: &dyn Datastore, chosen: Option<&ApiRelease>) -> ApiRelease {
    if let Some(chosen) = chosen {
        return chosen.clone();
    }
    match cluster_release(store).await {
        Ok(Some(release)) => ApiRelease::cluster(release),
        Ok(None) | Err(_) => ApiRelease::newest(),
    }
}

/// Why netctl will not write to this cluster.
#[derive(Debug, thiserror::Error)]
#[error("the cluster runs {cluster}, newer than the newest release this netctl knows ({newest})")]
pub struct ClusterTooNew {
    pub cluster: String,
    pub newest: String,
}

impl Hint for ClusterTooNew {
    fn hint(&self) -> Option<String> {
        Some("use the netctl release that matches the cluster; `--allow-version-mismatch` overrides this check".into())
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

impl Hint for VersionCheckError {
    fn hint(&self) -> Option<String> {
        match self {
            VersionCheckError::TooNew(too_new) => too_new.hint(),
            VersionCheckError::Unreadable(source) => Some(match source.hint() {
                Some(hint) => format!("{hint}; or skip the check with `--allow-version-mismatch`"),
                None => "skip the check with `--allow-version-mismatch`".to_string(),
            }),
            VersionCheckError::Runbooks(_) | VersionCheckError::Catalog(_) => None,
        }
    }
}

/// Refuses a cluster whose ClusterInformation `calicoVersion` is of a newer release line than any
/// netctl knows the API of (`crate::release`; the catalog's newest target is the same line, a test
/// of `plan::catalog` keeps them together). Unlike upstream's exact-version equality check, patch releases and
/// older lines pass; a missing ClusterInformation or version passes too (upstream skips the check
/// then, `calicoctl/calicoctl/commands/common/version_mismatch.go`).
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
    let newest = crate::release::newest_known();
    if cluster.minors_ahead_of(&newest) > 0 {
        return Err(ClusterTooNew {
            cluster: text.to_string(),
            newest: newest.line(),
        }
        .into());
    }
    Ok(())
}
