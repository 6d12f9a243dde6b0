//! Stage 1 of planning: the target. `--to` as the user wrote it (`v3.29` or `v3.29.2`) becomes
//! the full release to upgrade to, and the release catalog decides whether the path from the
//! installed release is supported — naming the route through releases it accepts when it is not.
//!
//! This stage reads the catalog only; which runbooks run is [`super::select`]'s business.

use super::PlanError;
use crate::plan::Release;
use crate::plan::catalog::Catalog;

/// Checks the path against the catalog and returns the full target release.
pub(super) fn resolve_target(
    catalog: &Catalog,
    from: &Release,
    to: Option<&str>,
) -> Result<Release, PlanError> {
    let text = to.ok_or(PlanError::MissingTarget)?;
    let (mut to, precise) =
        Release::parse_with_precision(text).map_err(PlanError::InvalidTarget)?;
    let target = catalog
        .target(&to)
        .ok_or_else(|| PlanError::UnknownTarget {
            to: to.to_string(),
            known: catalog.target_names(),
        })?;
    if !precise {
        to = target.latest.clone().ok_or_else(|| PlanError::NeedsPatch {
            to: target.release.clone(),
        })?;
    }
    if let Some(latest) = target.latest.as_ref().filter(|latest| to > **latest) {
        return Err(PlanError::BeyondLatest {
            to,
            latest: latest.clone(),
        });
    }
    if to <= *from {
        return Err(PlanError::NotAnUpgrade {
            from: from.clone(),
            to,
        });
    }
    if !catalog.accepts(target, from) {
        let hint = match catalog.route(from, target) {
            Some(route) => format!(
                "upgrade to {} first, then to {}",
                route[0],
                route[1..].join(", then to ")
            ),
            None => format!(
                "no supported route from `{from}` is known; upgrade to a release {} accepts first",
                target.release
            ),
        };
        return Err(PlanError::Unsupported {
            from: from.to_string(),
            to: to.to_string(),
            line: target.release.clone(),
            requirement: target.upgrade_from.clone(),
            hint,
        });
    }
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::resolve::test_support::CATALOG;

    fn resolve(from: &str, to: Option<&str>) -> Result<Release, PlanError> {
        let catalog = Catalog::parse(CATALOG).unwrap();
        resolve_target(&catalog, &from.parse().unwrap(), to)
    }

    #[test]
    fn a_line_becomes_its_newest_patch_and_a_patch_stays_itself() {
        assert_eq!(
            resolve("v3.20.1", Some("v3.29")).unwrap().to_string(),
            "v3.29.7"
        );
        assert_eq!(
            resolve("v3.20.1", Some("v3.29.2")).unwrap().to_string(),
            "v3.29.2"
        );
    }

    #[test]
    fn targets_the_catalog_cannot_reach_are_refused_with_their_reason() {
        assert!(matches!(
            resolve("v3.20.1", None),
            Err(PlanError::MissingTarget)
        ));
        assert!(matches!(
            resolve("v3.20.1", Some("v3.31")),
            Err(PlanError::UnknownTarget { .. })
        ));
        assert!(matches!(
            resolve("v3.1.0", Some("v3.20")),
            Err(PlanError::NeedsPatch { .. })
        ));
        assert!(matches!(
            resolve("v3.20.1", Some("v3.29.9")),
            Err(PlanError::BeyondLatest { .. })
        ));
        assert!(matches!(
            resolve("v3.29.7", Some("v3.29.2")),
            Err(PlanError::NotAnUpgrade { .. })
        ));
    }

    #[test]
    fn an_unsupported_path_names_the_route_through_a_release_that_accepts_it() {
        let Err(PlanError::Unsupported {
            hint, requirement, ..
        }) = resolve("v3.10.0", Some("v3.29.7"))
        else {
            panic!("a path from v3.10 to v3.29 is not supported");
        };
        assert_eq!(requirement, ">=3.15.0");
        assert!(hint.starts_with("upgrade to v3.20"), "{hint}");
    }
}
