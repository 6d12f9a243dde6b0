//! The API group the Calico custom resources of the Kubernetes datastore live in (`calicoAPIGroup`,
//! `CALICO_API_GROUP`): `crd.projectcalico.org/v1`, as every release has them, or
//! `projectcalico.org/v3`, v3.32's native CRDs (upstream `libcalico-go/lib/backend/k8s/discovery.go`).
//!
//! A setting, so its value and text forms live with the configuration; which group a connection
//! uses when none is configured is discovered by the Kubernetes backend
//! (`datastore/kube/api_group.rs`). This file holds the value and its parsing only.

use std::fmt;

/// A Calico API group with its version, as upstream writes the setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CalicoApiGroup {
    /// `crd.projectcalico.org/v1`: custom resources carrying the v3 metadata in an annotation.
    CrdV1,
    /// `projectcalico.org/v3`: v3.32's native CRDs, each object the resource itself.
    V3,
}

impl CalicoApiGroup {
    /// The API group (`crd.projectcalico.org`).
    pub fn group(self) -> &'static str {
        match self {
            CalicoApiGroup::CrdV1 => "crd.projectcalico.org",
            CalicoApiGroup::V3 => "projectcalico.org",
        }
    }

    /// The version within the group (`v1`).
    pub fn version(self) -> &'static str {
        match self {
            CalicoApiGroup::CrdV1 => "v1",
            CalicoApiGroup::V3 => "v3",
        }
    }

    /// Group and version as objects name them (`crd.projectcalico.org/v1`), which is also how the
    /// setting is written.
    pub fn api_version(self) -> &'static str {
        match self {
            CalicoApiGroup::CrdV1 => "crd.projectcalico.org/v1",
            CalicoApiGroup::V3 => "projectcalico.org/v3",
        }
    }

    /// The other group.
    pub fn other(self) -> CalicoApiGroup {
        match self {
            CalicoApiGroup::CrdV1 => CalicoApiGroup::V3,
            CalicoApiGroup::V3 => CalicoApiGroup::CrdV1,
        }
    }
}

impl fmt::Display for CalicoApiGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.api_version())
    }
}

impl std::str::FromStr for CalicoApiGroup {
    type Err = String;

    /// Either group with its version, case folded as upstream compares them (`strings.EqualFold`).
    /// Upstream takes every other value for `crd.projectcalico.org/v1`, so a typo such as
    /// `projectcalico.org` silently picks the group the user did not mean; netctl refuses it.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        [CalicoApiGroup::CrdV1, CalicoApiGroup::V3]
            .into_iter()
            .find(|group| group.api_version().eq_ignore_ascii_case(text))
            .ok_or_else(|| text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_groups_parse_case_folded_and_others_are_refused() {
        assert_eq!(
            "projectcalico.org/v3".parse::<CalicoApiGroup>(),
            Ok(CalicoApiGroup::V3)
        );
        assert_eq!(
            "CRD.projectcalico.org/V1".parse::<CalicoApiGroup>(),
            Ok(CalicoApiGroup::CrdV1)
        );
        assert!("projectcalico.org".parse::<CalicoApiGroup>().is_err());
        assert!("crd.projectcalico.org".parse::<CalicoApiGroup>().is_err());
        assert_eq!(CalicoApiGroup::V3.other(), CalicoApiGroup::CrdV1);
        assert_eq!(
            CalicoApiGroup::CrdV1.to_string(),
            "crd.projectcalico.org/v1"
        );
    }
}
