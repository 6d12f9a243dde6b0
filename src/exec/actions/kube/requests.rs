//! The requests each `kube.*` action sends, described: method, API path, content type and body
//! size, one line each. A dry-run without a cluster shows exactly these lines; with a cluster (and
//! for real) the action prints them before it sends the requests. Nothing here talks to a cluster.

use crate::plan::action::{
    KubeApply, KubeDelete, KubeList, KubeMetadataChange, KubeObject, KubePatch, ManifestSource,
    PatchType,
};

/// The lower-case plural of a Kubernetes kind (`Deployment` → `deployments`, `NetworkPolicy` →
/// `networkpolicies`), as the API path uses it.
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// The API path of a collection or object: `/api/v1/...` for the core group, `/apis/<group>/<v>/...`.
pub fn api_path(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: Option<&str>,
) -> String {
    let mut path = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    if let Some(namespace) = namespace {
        path.push_str(&format!("/namespaces/{namespace}"));
    }
    path.push('/');
    path.push_str(&plural(kind));
    if let Some(name) = name {
        path.push('/');
        path.push_str(name);
    }
    path
}

pub(super) fn object_path(object: &KubeObject) -> String {
    api_path(
        &object.api_version,
        &object.kind,
        object.namespace.as_deref(),
        Some(&object.name),
    )
}

fn patch_content_type(patch_type: PatchType) -> &'static str {
    match patch_type {
        PatchType::Merge => "application/merge-patch+json",
        PatchType::Json => "application/json-patch+json",
        PatchType::Strategic => "application/strategic-merge-patch+json",
    }
}

pub(super) fn body_size(value: &serde_json::Value) -> usize {
    serde_json::to_vec(value)
        .map(|bytes| bytes.len())
        .unwrap_or(0)
}

/// The objects of a manifest text.
fn manifest_objects(text: &str) -> Result<Vec<KubeObject>, String> {
    let values = crate::yaml::read_values(text).map_err(|error| error.to_string())?;
    Ok(values.iter().map(KubeObject::of_document).collect())
}

/// The requests `kube.apply` would send.
pub fn describe_apply(apply: &KubeApply, files_dir: &std::path::Path) -> Vec<String> {
    let mut lines = describe_apply_requests(apply, files_dir);
    if let Some(file) = &apply.save_previous {
        lines.insert(
            0,
            format!(
                "would first save the objects as they are live to `{}` (kept if it exists), to go back with",
                files_dir
                    .join(crate::plan::action::previous_file_of_run(file, "<run id>"))
                    .display()
            ),
        );
    }
    lines
}

fn describe_apply_requests(apply: &KubeApply, files_dir: &std::path::Path) -> Vec<String> {
    let text = match &apply.source {
        ManifestSource::Inline(text) => Some(text.clone()),
        ManifestSource::File(file) => std::fs::read_to_string(files_dir.join(file)).ok(),
        ManifestSource::Url(_) => None,
    };
    let origin = match &apply.source {
        ManifestSource::Inline(_) => "the inline manifest".to_string(),
        ManifestSource::File(file) => format!("`{file}`"),
        ManifestSource::Url(url) => format!("`{url}`"),
    };
    let (method, query, content_type) = if apply.server_side {
        let force = if apply.force_conflicts {
            "&force=true"
        } else {
            ""
        };
        (
            "PATCH",
            format!("?fieldManager={}{force}", apply.field_manager),
            "application/apply-patch+yaml",
        )
    } else {
        ("PUT or POST", String::new(), "application/json")
    };
    let objects = match text.map(|text| manifest_objects(&text)) {
        Some(Ok(objects)) => objects,
        Some(Err(error)) => {
            return vec![format!(
                "would apply {origin}, which is not valid YAML: {error}"
            )];
        }
        None => {
            // A file comes from an earlier step; a URL is read when this step runs.
            let known = match &apply.source {
                ManifestSource::Url(_) => "the objects are known once it is read",
                _ => "the objects are known once an earlier step has downloaded it",
            };
            return vec![format!(
                "would {method} each object of {origin} ({content_type}{}); {known}",
                if query.is_empty() {
                    String::new()
                } else {
                    format!(", {query}")
                }
            )];
        }
    };
    let mut lines = vec![format!(
        "would apply {} object(s) of {origin}:",
        objects.len()
    )];
    for object in objects {
        lines.push(format!(
            "  {method} {}{query} ({content_type})",
            object_path(&object)
        ));
    }
    lines
}

pub fn describe_patch(patch: &KubePatch) -> Vec<String> {
    vec![format!(
        "would PATCH {} ({}, {} bytes): {}",
        object_path(&patch.object),
        patch_content_type(patch.patch_type),
        body_size(&patch.patch),
        patch.patch
    )]
}

pub fn describe_metadata(change: &KubeMetadataChange, field: &str) -> Vec<String> {
    let mut values = serde_json::Map::new();
    for (key, value) in &change.values {
        values.insert(key.clone(), serde_json::json!(value));
    }
    let body = serde_json::json!({ "metadata": { field: values } });
    vec![format!(
        "would PATCH {} (application/merge-patch+json, {} bytes): {body}{}",
        object_path(&change.object),
        body_size(&body),
        if change.overwrite {
            ""
        } else {
            " (refused if a key already has another value)"
        }
    )]
}

pub fn describe_list(list: &KubeList) -> Vec<String> {
    vec![format!(
        "would GET {}{}",
        api_path(
            &list.api_version,
            &list.kind,
            list.namespace.as_deref(),
            None
        ),
        list.selector
            .as_ref()
            .map(|selector| format!("?labelSelector={selector}"))
            .unwrap_or_default()
    )]
}

/// `secrets in `default` matching `owner=helm``: what a list or delete covers, as messages say it.
pub(super) fn collection(plural: &str, namespace: Option<&str>, selector: Option<&str>) -> String {
    let mut text = plural.to_string();
    if let Some(namespace) = namespace {
        text.push_str(&format!(" in `{namespace}`"));
    }
    if let Some(selector) = selector {
        text.push_str(&format!(" matching `{selector}`"));
    }
    text
}

/// `3 secrets would be deleted: a, b, c` / `0 secrets found`: a count, a verb and the names.
pub(super) fn listing(names: &[String], plural: &str, verb: &str) -> String {
    format!(
        "{} {plural} {verb}{}",
        names.len(),
        if names.is_empty() {
            String::new()
        } else {
            format!(": {}", names.join(", "))
        }
    )
}

pub fn describe_delete(delete: &KubeDelete) -> Vec<String> {
    vec![format!(
        "would DELETE {}?labelSelector={}",
        api_path(
            &delete.api_version,
            &delete.kind,
            delete.namespace.as_deref(),
            None
        ),
        delete.selector
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_kubernetes_api_layout() {
        assert_eq!(
            api_path(
                "apps/v1",
                "DaemonSet",
                Some("calico-system"),
                Some("calico-node")
            ),
            "/apis/apps/v1/namespaces/calico-system/daemonsets/calico-node"
        );
        assert_eq!(
            api_path("v1", "ConfigMap", Some("x"), None),
            "/api/v1/namespaces/x/configmaps"
        );
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
    }
}
