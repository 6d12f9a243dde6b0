//! How each kind of fact is read from `--set` text and checked against its type. The fact list
//! (`facts/mod.rs`) names one parser and one check per fact; they are here so that facts of one
//! kind (namespaces, object names, URLs, lists) share them.
//!
//! Checks run before any template sees a fact: a value that could change what a rendered
//! selector, path or command means is refused, whether it was given with `--set` or discovered.

use std::str::FromStr;

use super::{DeploymentFact, FactError, HostEndpointFact, OwnerReferenceFact, sort_for_removal};
use crate::resource::validate::syntax::{
    check_label_value, check_qualified_name, check_subdomain, is_dns_label,
};

// --- parsers: `--set NAME=TEXT` (the fact's fixed values, when it has them, are passed along) ---

/// One of the fact's fixed values.
pub(super) fn word<T: FromStr>(text: &str, values: &[&str]) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("expected {}", crate::resource::validate::quote_list(values)))
}

/// A release (`v3.26.4`).
pub(super) fn release(text: &str, _: &[&str]) -> Result<crate::plan::Release, String> {
    text.parse()
        .map_err(|error: super::ReleaseError| error.to_string())
}

/// Any text.
pub(super) fn text(text: &str, _: &[&str]) -> Result<String, String> {
    Ok(text.to_string())
}

/// A namespace that must be named when given.
pub(super) fn required_text(text: &str, _: &[&str]) -> Result<String, String> {
    match text.trim() {
        "" => Err("expected a namespace".to_string()),
        trimmed => Ok(trimmed.to_string()),
    }
}

/// A base URL: without a trailing `/`.
pub(super) fn base_url(text: &str, _: &[&str]) -> Result<String, String> {
    Ok(text.trim_end_matches('/').to_string())
}

/// A Calico API group with its version (`projectcalico.org/v3`), written as upstream writes it.
pub(super) fn api_group(text: &str, values: &[&str]) -> Result<String, String> {
    text.parse::<crate::config::CalicoApiGroup>()
        .map(|group| group.api_version().to_string())
        .map_err(|_| format!("expected {}", crate::resource::validate::quote_list(values)))
}

/// URLs separated by commas (or a JSON list), kept as one comma-separated text.
pub(super) fn url_list(text: &str, _: &[&str]) -> Result<String, String> {
    Ok(list(text)?.join(","))
}

/// Host endpoint names separated by commas, or a JSON list of names or `{name, node, labels}`.
pub(super) fn host_endpoints(text: &str, _: &[&str]) -> Result<Vec<HostEndpointFact>, String> {
    if text.trim().starts_with('[') {
        return serde_json::from_str(text.trim()).map_err(|error| {
            format!("expected a JSON list of names or of {{name, node, labels}}: {error}")
        });
    }
    Ok(list(text)?
        .into_iter()
        .map(HostEndpointFact::named)
        .collect())
}

/// `namespace/name` items separated by commas, or a JSON list of `{namespace, name}`.
pub(super) fn deployments(text: &str, _: &[&str]) -> Result<Vec<DeploymentFact>, String> {
    if text.trim().starts_with('[') {
        return serde_json::from_str(text.trim())
            .map_err(|error| format!("expected a JSON list of {{namespace, name}}: {error}"));
    }
    list(text)?
        .into_iter()
        .map(|item| match item.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(DeploymentFact {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                })
            }
            _ => Err(format!(
                "expected `namespace/name` items separated by commas, got `{item}`"
            )),
        })
        .collect()
}

/// A JSON list of OwnerReferences, put in removal order.
pub(super) fn owner_references(text: &str, _: &[&str]) -> Result<Vec<OwnerReferenceFact>, String> {
    let mut references: Vec<OwnerReferenceFact> =
        serde_json::from_str(text).map_err(|error| format!("expected a JSON list: {error}"))?;
    sort_for_removal(&mut references);
    Ok(references)
}

/// Items separated by commas (blanks dropped), or a JSON list of strings.
fn list(text: &str) -> Result<Vec<String>, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('[') {
        return serde_json::from_str(trimmed)
            .map_err(|error| format!("expected a JSON list: {error}"));
    }
    Ok(trimmed
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect())
}

// --- checks: (the fact's name, its value) ---

fn invalid(name: &str, value: &str, reason: String) -> FactError {
    FactError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        reason,
    }
}

/// Nothing beyond its type.
pub(super) fn any<T>(_: &'static str, _: &T) -> Result<(), FactError> {
    Ok(())
}

/// A DNS-1123 label.
pub(super) fn namespace(name: &'static str, value: &str) -> Result<(), FactError> {
    if is_dns_label(value) {
        return Ok(());
    }
    Err(invalid(
        name,
        value,
        "a namespace is a DNS-1123 label: at most 63 lower case alphanumerics or `-`, starting and \
         ending with an alphanumeric"
            .to_string(),
    ))
}

/// A namespace, or nothing.
pub(super) fn optional_namespace(name: &'static str, value: &str) -> Result<(), FactError> {
    match value.is_empty() {
        true => Ok(()),
        false => namespace(name, value),
    }
}

/// Empty (unknown) or a Calico API group (a template chooses manifests by it).
pub(super) fn optional_api_group(name: &'static str, value: &str) -> Result<(), FactError> {
    match value.is_empty() || value.parse::<crate::config::CalicoApiGroup>().is_ok() {
        true => Ok(()),
        false => Err(invalid(
            name,
            value,
            "expected `crd.projectcalico.org/v1` or `projectcalico.org/v3`".to_string(),
        )),
    }
}

fn object_name(name: &'static str, value: &str) -> Result<(), FactError> {
    check_subdomain(value).map_err(|reason| invalid(name, value, reason))
}

/// A Helm release name: a DNS-1123 subdomain of at most 53 characters (Helm's rule).
pub(super) fn helm_release(name: &'static str, value: &str) -> Result<(), FactError> {
    object_name(name, value)?;
    if value.len() > 53 {
        return Err(invalid(
            name,
            value,
            "a Helm release name has at most 53 characters".to_string(),
        ));
    }
    Ok(())
}

/// Where manifests are read from: an `https`, `http` or `file` URL.
pub(super) fn manifest_url(name: &'static str, value: &str) -> Result<(), FactError> {
    check_url(name, value, &["https", "http", "file"])
}

/// etcd endpoints: `https` or `http` URLs separated by commas, or nothing.
pub(super) fn endpoint_urls(name: &'static str, value: &str) -> Result<(), FactError> {
    if value.is_empty() {
        return Ok(());
    }
    value
        .split(',')
        .try_for_each(|endpoint| check_url(name, endpoint, &["https", "http"]))
}

/// A full version (`1.20.2`), or nothing.
pub(super) fn optional_version(name: &'static str, value: &str) -> Result<(), FactError> {
    if value.is_empty() || semver::Version::parse(value).is_ok() {
        return Ok(());
    }
    Err(invalid(
        name,
        value,
        "expected the full mesh version, e.g. `1.20.2`".to_string(),
    ))
}

/// Names, nodes and labels as Kubernetes has them.
pub(super) fn host_endpoint_names(
    name: &'static str,
    endpoints: &Vec<HostEndpointFact>,
) -> Result<(), FactError> {
    for endpoint in endpoints {
        object_name(name, &endpoint.name)?;
        if !endpoint.node.is_empty() {
            object_name(name, &endpoint.node)?;
        }
        for (key, value) in &endpoint.labels {
            check_qualified_name(key).map_err(|reason| invalid(name, key, reason))?;
            check_label_value(value).map_err(|reason| invalid(name, value, reason))?;
        }
    }
    Ok(())
}

/// Namespaces and names.
pub(super) fn deployment_names(
    name: &'static str,
    deployments: &Vec<DeploymentFact>,
) -> Result<(), FactError> {
    for deployment in deployments {
        namespace(name, &deployment.namespace)?;
        object_name(name, &deployment.name)?;
    }
    Ok(())
}

/// The object's namespace and name, and the owner's name.
pub(super) fn reference_names(
    name: &'static str,
    references: &Vec<OwnerReferenceFact>,
) -> Result<(), FactError> {
    for reference in references {
        if let Some(value) = &reference.namespace {
            namespace(name, value)?;
        }
        object_name(name, &reference.name)?;
        object_name(name, &reference.owner_name)?;
    }
    Ok(())
}

/// Checks that `value` is a URL with one of `schemes` and nothing a template could misread.
fn check_url(name: &str, value: &str, schemes: &[&str]) -> Result<(), FactError> {
    let invalid = |reason: String| invalid(name, value, reason);
    let url = url::Url::parse(value).map_err(|error| invalid(format!("not a URL: {error}")))?;
    if !schemes.contains(&url.scheme()) {
        return Err(invalid(format!(
            "expected a URL starting with {}",
            schemes
                .iter()
                .map(|scheme| format!("`{scheme}://`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if url.scheme() != "file" && url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("the URL names no host".to_string()));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(invalid(
            "a query, a fragment or credentials are not allowed".to_string(),
        ));
    }
    Ok(())
}
