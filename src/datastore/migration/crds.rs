//! The CRD manifest a migration import installs: which of the release's files it is, where it is
//! downloaded from, and whether a given file is one that defines every kind an export holds.
//!
//! netctl carries no copy of upstream's CRDs. The manifest is the release's own file, named by the
//! export's `calicoVersion` and the API group the target uses: `manifests/crds.yaml` for
//! `crd.projectcalico.org/v1` (every release), `manifests/v3_projectcalico_org.yaml` for v3.32's
//! native `projectcalico.org/v3` CRDs. Upstream's import installs the CRDs compiled into calicoctl
//! (`lcconfig.AllCRDs()` in `calicoctl/calicoctl/commands/datastore/migrate/import.go`); netctl
//! downloads the same definitions, so the plan names the file and its digest and a site without
//! network serves it from a mirror directory or a local copy (`--crds FILE`).
//!
//! A file is refused unless every document is an `apiextensions.k8s.io/v1`
//! CustomResourceDefinition and the CRDs of the target's group define every kind the export
//! holds (ClusterInformation always; the IPAM kinds its IPAM part holds). Only the CRDs of that
//! group are installed: the release's files also carry others (`policy.networking.k8s.io`,
//! `operator.tigera.io`), which the components' own manifests install.

use std::collections::BTreeSet;

use serde_json::Value;

use super::file::MigrationFile;
use crate::config::CalicoApiGroup;
use crate::datastore::backup::IpamObject;
use crate::resource::Kind;

/// The release file holding the Calico CRDs of `group`.
pub fn manifest_name(group: CalicoApiGroup) -> &'static str {
    match group {
        CalicoApiGroup::CrdV1 => "crds.yaml",
        CalicoApiGroup::V3 => "v3_projectcalico_org.yaml",
    }
}

/// Where the CRD manifest of `version` (`v3.32.1`) for `group` is downloaded from, below
/// `base` (the manifest base URL the upgrade runbooks use).
pub fn release_url(base: &str, version: &str, group: CalicoApiGroup) -> String {
    format!(
        "{}/{version}/manifests/{}",
        base.trim_end_matches('/'),
        manifest_name(group)
    )
}

/// Why a file is not the CRD manifest an import needs.
#[derive(Debug, thiserror::Error)]
pub enum CrdManifestError {
    #[error("the CRD manifest {origin} does not read as YAML")]
    Syntax {
        origin: String,
        #[source]
        source: crate::yaml::YamlError,
    },
    #[error(
        "{origin} is not a CRD manifest: document {index} is `{api_version}` `{kind}`, not `apiextensions.k8s.io/v1` `CustomResourceDefinition`"
    )]
    NotCrd {
        origin: String,
        index: usize,
        api_version: String,
        kind: String,
    },
    #[error("{origin} holds no CustomResourceDefinition of `{group}`")]
    NoneOfGroup { origin: String, group: String },
    #[error("the CRD manifest {origin} does not define {} in `{group}`, which the export holds", missing.iter().map(|kind| format!("`{kind}`")).collect::<Vec<_>>().join(", "))]
    Missing {
        origin: String,
        group: String,
        missing: Vec<String>,
    },
}

impl crate::errors::Hint for CrdManifestError {
    fn hint(&self) -> Option<String> {
        Some(
            "pass the release's CRD manifest (`manifests/crds.yaml` for `crd.projectcalico.org/v1`, `manifests/v3_projectcalico_org.yaml` for v3.32's `projectcalico.org/v3`) with `--crds FILE`, or leave `--crds` out to download it for the export's calicoVersion; nothing was written"
                .to_string(),
        )
    }
}

/// The CRD kinds of `group` the export needs: ClusterInformation, its resources' kinds (Nodes
/// are Kubernetes nodes, not custom resources) and the IPAM kinds its third part holds.
pub fn needed_kinds(file: &MigrationFile, group: CalicoApiGroup) -> BTreeSet<String> {
    let mut kinds = BTreeSet::from(["ClusterInformation".to_string()]);
    for resource in &file.resources {
        if resource.kind != Kind::Node {
            kinds.insert(resource.kind.to_string());
        }
    }
    for object in &file.ipam {
        let kind = match (object, group) {
            (IpamObject::Block(_), _) => "IPAMBlock",
            (IpamObject::Affinity(_), _) => "BlockAffinity",
            (IpamObject::Handle(_), _) => "IPAMHandle",
            (IpamObject::Config(_), CalicoApiGroup::CrdV1) => "IPAMConfig",
            (IpamObject::Config(_), CalicoApiGroup::V3) => "IPAMConfiguration",
        };
        kinds.insert(kind.to_string());
    }
    kinds
}

/// The CRDs of `group` in `text` (read from `origin`), refused unless every document is a CRD and
/// they define every kind of `needed`.
pub fn group_crds(
    text: &str,
    origin: &str,
    group: CalicoApiGroup,
    needed: &BTreeSet<String>,
) -> Result<Vec<Value>, CrdManifestError> {
    let documents =
        crate::yaml::read_documents(text).map_err(|source| CrdManifestError::Syntax {
            origin: origin.to_string(),
            source,
        })?;
    let mut crds = Vec::new();
    let mut defined = BTreeSet::new();
    for (position, document) in documents.into_iter().enumerate() {
        let mut value = document.value;
        if value.is_null() {
            continue;
        }
        let field = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
        let (api_version, kind) = (field("/apiVersion"), field("/kind"));
        if api_version != Some("apiextensions.k8s.io/v1")
            || kind != Some("CustomResourceDefinition")
        {
            return Err(CrdManifestError::NotCrd {
                origin: origin.to_string(),
                index: position + 1,
                api_version: api_version.unwrap_or_default().to_string(),
                kind: kind.unwrap_or_default().to_string(),
            });
        }
        if field("/spec/group") != Some(group.group()) {
            continue;
        }
        let serves_version = value["spec"]["versions"]
            .as_array()
            .is_some_and(|versions| {
                versions.iter().any(|version| {
                    version["name"].as_str() == Some(group.version())
                        && version["served"].as_bool() == Some(true)
                })
            });
        if let Some(kind) = field("/spec/names/kind")
            && serves_version
        {
            defined.insert(kind.to_string());
        }
        crate::yaml::shape::canonical_numbers(&mut value);
        crds.push(value);
    }
    if crds.is_empty() {
        return Err(CrdManifestError::NoneOfGroup {
            origin: origin.to_string(),
            group: group.api_version().to_string(),
        });
    }
    let missing: Vec<String> = needed.difference(&defined).cloned().collect();
    if !missing.is_empty() {
        return Err(CrdManifestError::Missing {
            origin: origin.to_string(),
            group: group.api_version().to_string(),
            missing,
        });
    }
    Ok(crds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(group: &str, version: &str, kind: &str) -> String {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {kind}s.{group}}}\nspec:\n  group: {group}\n  names: {{kind: {kind}, plural: {kind}s}}\n  scope: Cluster\n  versions: [{{name: {version}, served: true, storage: true}}]\n"
        )
    }

    fn needed(kinds: &[&str]) -> BTreeSet<String> {
        kinds.iter().map(|kind| kind.to_string()).collect()
    }

    #[test]
    fn the_crds_of_the_group_are_kept_and_must_define_every_needed_kind() {
        let text = [
            crd("crd.projectcalico.org", "v1", "IPPool"),
            crd("crd.projectcalico.org", "v1", "ClusterInformation"),
            crd(
                "policy.networking.k8s.io",
                "v1alpha1",
                "ClusterNetworkPolicy",
            ),
        ]
        .join("---\n");
        let group = CalicoApiGroup::CrdV1;
        let kept = group_crds(
            &text,
            "`crds.yaml`",
            group,
            &needed(&["IPPool", "ClusterInformation"]),
        )
        .unwrap();
        assert_eq!(kept.len(), 2);
        let refused = group_crds(
            &text,
            "`crds.yaml`",
            group,
            &needed(&["IPPool", "HostEndpoint", "ClusterInformation"]),
        )
        .unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("does not define `HostEndpoint`")
        );
        let refused = group_crds(&text, "`crds.yaml`", CalicoApiGroup::V3, &needed(&[]))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("no CustomResourceDefinition of `projectcalico.org/v3`"));
    }

    #[test]
    fn a_manifest_with_other_objects_is_no_crd_manifest() {
        let text = format!(
            "{}---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: calico-node}}\n",
            crd("crd.projectcalico.org", "v1", "IPPool")
        );
        let refused = group_crds(&text, "`calico.yaml`", CalicoApiGroup::CrdV1, &needed(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("document 2 is `apps/v1` `DaemonSet`"),
            "{refused}"
        );
    }

    #[test]
    fn the_release_url_names_the_file_of_the_group() {
        assert_eq!(
            release_url("https://example.org/calico/", "v3.32.1", CalicoApiGroup::V3),
            "https://example.org/calico/v3.32.1/manifests/v3_projectcalico_org.yaml"
        );
    }
}
