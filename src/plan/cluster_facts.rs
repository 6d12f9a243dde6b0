//! Facts the Kubernetes cluster tells, when one is configured: the install method (the operator
//! Deployment, Helm release secrets, the manifest DaemonSets), the manifest flavour, every
//! OwnerReference to a `projectcalico.org/v3` owner, and the service Deployments of the mesh.
//!
//! Read page by page with the Kubernetes API; nothing is written. What the resource datastore tells
//! (the installed version, host endpoints) is read by `facts::discover_facts`; this file does not
//! assemble or override facts.

use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use std::collections::BTreeMap;

use super::facts::{
    ClusterFacts, DeploymentFact, FactError, ManifestFlavor, OwnerReferenceFact, sort_for_removal,
};
use crate::vocabulary::InstallMethod;

/// The namespace label that turns on sidecar injection for every pod in the namespace.
const INJECTION_NAMESPACE_LABEL: (&str, &str) = ("istio-injection", "enabled");

/// The pod label (or, in older meshes, annotation) that turns sidecar injection on or off per pod.
const INJECTION_POD_KEY: &str = "sidecar.istio.io/inject";

/// The operator Deployment's name, in every install method that uses the operator.
const OPERATOR_DEPLOYMENT: &str = "tigera-operator";
/// Where manifest installs run their DaemonSet.
const MANIFEST_NAMESPACE: &str = "kube-system";
/// The apiVersion of the owners whose UIDs change in the upgrade (seed 9.3).
const CALICO_V3: &str = "projectcalico.org/v3";
/// Objects per list request, so a large cluster is read in pages.
const PAGE_SIZE: u32 = 250;

/// The node-agent DaemonSets of the single manifests, by the names upstream gives them.
const MANIFEST_NODE_AGENTS: [&str; 3] = ["calico-node", "canal", "canal-node"];

/// Reads each object of a manifest as it is live (`None`: not there, or its type is unknown to the
/// server, as a CustomResourceDefinition's kind before it is installed). Secrets are never read:
/// their values must not reach a plan. An object without a namespace of a namespaced type is read
/// from the kubeconfig's namespace, where `kubectl apply` made it.
pub async fn read_live_objects(
    client: &kube::Client,
    objects: &[serde_json::Value],
) -> Result<Vec<Option<serde_json::Value>>, FactError> {
    let mut live = Vec::with_capacity(objects.len());
    for object in objects {
        let field = |pointer: &str| object.pointer(pointer).and_then(serde_json::Value::as_str);
        let (Some(api_version), Some(kind), Some(name)) = (
            field("/apiVersion"),
            field("/kind"),
            field("/metadata/name"),
        ) else {
            live.push(None);
            continue;
        };
        if kind == "Secret" {
            live.push(None);
            continue;
        }
        let what = || format!("{kind} `{name}` ({api_version})");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = match kube::discovery::pinned_kind(client, &gvk).await {
            Ok(found) => found,
            Err(kube::Error::Api(status)) if status.code == 404 => {
                live.push(None);
                continue;
            }
            Err(kube::Error::Discovery(_)) => {
                live.push(None);
                continue;
            }
            Err(source) => {
                return Err(FactError::ClusterDiscovery {
                    what: what(),
                    source: Box::new(source),
                });
            }
        };
        let api: Api<DynamicObject> = match (
            capabilities.scope == kube::discovery::Scope::Namespaced,
            field("/metadata/namespace"),
        ) {
            (true, Some(namespace)) => Api::namespaced_with(client.clone(), namespace, &resource),
            (true, None) => Api::default_namespaced_with(client.clone(), &resource),
            (false, _) => Api::all_with(client.clone(), &resource),
        };
        let found = api
            .get_opt(name)
            .await
            .map_err(|source| FactError::ClusterDiscovery {
                what: what(),
                source: Box::new(source),
            })?;
        live.push(match found {
            Some(found) => {
                Some(
                    serde_json::to_value(found).map_err(|error| FactError::ClusterDiscovery {
                        what: what(),
                        source: Box::new(kube::Error::SerdeError(error)),
                    })?,
                )
            }
            None => None,
        });
    }
    Ok(live)
}

/// Reads the install from the Kubernetes objects that make it up:
///
/// - the install method: a `tigera-operator` Deployment installed by a Helm release (its
///   `meta.helm.sh/release-name` annotation, or the only release in its namespace, confirmed by a
///   release secret labelled `owner=helm,name=<release>`) is `helm`, with the namespace of that
///   release secret (its `meta.helm.sh/release-namespace` annotation); any other `tigera-operator`
///   Deployment is `operator`; either way the Deployment's namespace is the operator namespace (before
///   v3.23 a Helm release lived in `default`, apart from the operator); without one, a
///   node-agent DaemonSet of a single manifest in `kube-system` is `manifest`: `calico-node`
///   (calico.yaml, calico-etcd.yaml, calico-policy-only.yaml), `canal` (canal.yaml) or `canal-node`
///   (canal-etcd.yaml), as upstream names them at every tag from v3.13 to v3.32;
/// - the manifest flavour: `canal` when a `canal` or `canal-node` DaemonSet runs in `kube-system`;
/// - every OwnerReference to a `projectcalico.org/v3` owner from a ConfigMap, Secret, Deployment or
///   DaemonSet in any namespace, read page by page;
/// - the service Deployments of the mesh: those in a namespace labelled `istio-injection=enabled`
///   whose pod template does not opt out (`sidecar.istio.io/inject: "false"` as label or annotation),
///   and those anywhere whose pod template opts in (`sidecar.istio.io/inject: "true"`).
///
/// Any API error is returned: a plan made from half the facts would be wrong.
pub async fn discover_cluster_facts(client: &kube::Client) -> Result<ClusterFacts, FactError> {
    let mut operators: Vec<DynamicObject> = Vec::new();
    let mut helm_releases: Vec<(String, String)> = Vec::new();
    let mut manifest_daemon_sets: Vec<String> = Vec::new();
    let mut owner_references = Vec::new();
    // Every Deployment with its pod template's injection choice (`Some(true)` opts in).
    let mut deployments: Vec<(DeploymentFact, Option<bool>)> = Vec::new();
    for (group, kind, plural) in [
        ("", "ConfigMap", "configmaps"),
        ("", "Secret", "secrets"),
        ("apps", "Deployment", "deployments"),
        ("apps", "DaemonSet", "daemonsets"),
    ] {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let mut params = ListParams::default().limit(PAGE_SIZE);
        loop {
            let page = api
                .list(&params)
                .await
                .map_err(|source| FactError::ClusterDiscovery {
                    what: format!("`{plural}`"),
                    source: Box::new(source),
                })?;
            for object in page.items {
                let namespace = object.metadata.namespace.clone().unwrap_or_default();
                let name = object.metadata.name.clone().unwrap_or_default();
                for (index, reference) in object
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .enumerate()
                {
                    if reference.api_version == CALICO_V3 {
                        owner_references.push(OwnerReferenceFact {
                            api_version: resource.api_version.clone(),
                            kind: kind.to_string(),
                            namespace: (!namespace.is_empty()).then(|| namespace.clone()),
                            name: name.clone(),
                            owner_kind: reference.kind.clone(),
                            owner_name: reference.name.clone(),
                            index,
                            owner_uid: Some(reference.uid.clone()),
                            controller: reference.controller,
                            block_owner_deletion: reference.block_owner_deletion,
                        });
                    }
                }
                if kind == "Deployment" {
                    deployments.push((
                        DeploymentFact {
                            namespace: namespace.clone(),
                            name: name.clone(),
                        },
                        pod_injection(&object.data),
                    ));
                }
                let labels = object.metadata.labels.clone().unwrap_or_default();
                match kind {
                    "Secret" if labels.get("owner").map(String::as_str) == Some("helm") => {
                        if let Some(release) = labels.get("name") {
                            helm_releases.push((namespace, release.clone()));
                        }
                    }
                    "Deployment" if name == OPERATOR_DEPLOYMENT => operators.push(object),
                    "DaemonSet"
                        if namespace == MANIFEST_NAMESPACE
                            && MANIFEST_NODE_AGENTS.contains(&name.as_str()) =>
                    {
                        manifest_daemon_sets.push(name)
                    }
                    _ => {}
                }
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
    }
    sort_for_removal(&mut owner_references);

    let injected_namespaces = injection_namespaces(client).await?;
    let mut service_deployments: Vec<DeploymentFact> = deployments
        .into_iter()
        .filter(|(deployment, choice)| match choice {
            Some(choice) => *choice,
            None => injected_namespaces.contains(&deployment.namespace),
        })
        .map(|(deployment, _)| deployment)
        .collect();
    service_deployments.sort();

    let mut facts = ClusterFacts {
        owner_references,
        service_deployments,
        ..ClusterFacts::default()
    };
    if manifest_daemon_sets
        .iter()
        .any(|name| name == "canal" || name == "canal-node")
    {
        facts.manifest_flavor = Some(ManifestFlavor::Canal);
    } else if !manifest_daemon_sets.is_empty() {
        facts.manifest_flavor = Some(ManifestFlavor::Calico);
    }
    operators.sort_by(|a, b| a.metadata.namespace.cmp(&b.metadata.namespace));
    if let Some(operator) = operators.first() {
        let namespace = operator.metadata.namespace.clone().unwrap_or_default();
        let annotations = operator.metadata.annotations.clone().unwrap_or_default();
        match operator_release(&namespace, &annotations, &helm_releases) {
            Some((release_namespace, release)) => {
                facts.install_method = Some(InstallMethod::Helm);
                facts.helm_release = Some(release);
                facts.helm_release_namespace = Some(release_namespace);
            }
            None => facts.install_method = Some(InstallMethod::Operator),
        }
        // Where the operator runs. Not the release's namespace: charts before v3.23 kept the
        // release in `default` while the operator ran in `tigera-operator`, and the ownership
        // migration moves the release to where the operator is.
        facts.operator_namespace = Some(namespace);
    } else if !manifest_daemon_sets.is_empty() {
        facts.install_method = Some(InstallMethod::Manifest);
    }
    Ok(facts)
}

/// The Helm release that installed the operator Deployment in `namespace`, as `(namespace, name)`
/// of its release secrets: the release its `meta.helm.sh/release-name` annotation names, in the
/// namespace its `meta.helm.sh/release-namespace` annotation names (else the Deployment's own), when
/// a release secret there confirms it; without the annotation, the only release in the
/// Deployment's namespace. `releases` are the `(namespace, name)` of every release secret.
fn operator_release(
    namespace: &str,
    annotations: &BTreeMap<String, String>,
    releases: &[(String, String)],
) -> Option<(String, String)> {
    match annotations.get("meta.helm.sh/release-name") {
        Some(release) => {
            let release_namespace = annotations
                .get("meta.helm.sh/release-namespace")
                .map_or(namespace, String::as_str);
            let annotated = (release_namespace.to_string(), release.clone());
            releases.contains(&annotated).then_some(annotated)
        }
        None => {
            let mut in_namespace: Vec<&(String, String)> = releases
                .iter()
                .filter(|(release_namespace, _)| release_namespace == namespace)
                .collect();
            in_namespace.sort();
            in_namespace.dedup();
            match in_namespace.as_slice() {
                [only] => Some((*only).clone()),
                _ => None,
            }
        }
    }
}

/// The namespaces labelled `istio-injection=enabled`.
async fn injection_namespaces(
    client: &kube::Client,
) -> Result<std::collections::BTreeSet<String>, FactError> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "Namespace"),
        "namespaces",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let (label, value) = INJECTION_NAMESPACE_LABEL;
    let mut params = ListParams::default()
        .labels(&format!("{label}={value}"))
        .limit(PAGE_SIZE);
    let mut names = std::collections::BTreeSet::new();
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|source| FactError::ClusterDiscovery {
                what: "`namespaces`".to_string(),
                source: Box::new(source),
            })?;
        names.extend(page.items.into_iter().filter_map(|item| item.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    Ok(names)
}

/// A Deployment's pod-template choice about sidecar injection: the label wins over the (older)
/// annotation; `None` when the template says nothing, so the namespace decides.
fn pod_injection(deployment: &serde_json::Value) -> Option<bool> {
    let metadata = &deployment["spec"]["template"]["metadata"];
    ["labels", "annotations"].iter().find_map(|field| {
        match metadata[field][INJECTION_POD_KEY].as_str() {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_release_is_found_where_its_annotation_says() {
        let annotations = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect()
        };
        let releases = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(namespace, name)| (namespace.to_string(), name.to_string()))
                .collect()
        };
        let annotated = annotations(&[
            ("meta.helm.sh/release-name", "calico"),
            ("meta.helm.sh/release-namespace", "ops"),
        ]);
        // A release in a namespace that is neither `default` nor the operator's.
        assert_eq!(
            operator_release(
                "tigera-operator",
                &annotated,
                &releases(&[("default", "calico"), ("ops", "calico"), ("ops", "calico")])
            ),
            Some(("ops".to_string(), "calico".to_string()))
        );
        // The annotation names a release no secret confirms: not a Helm install.
        assert_eq!(
            operator_release(
                "tigera-operator",
                &annotated,
                &releases(&[("default", "calico")])
            ),
            None
        );
        // Without a namespace annotation the release is beside the Deployment.
        assert_eq!(
            operator_release(
                "tigera-operator",
                &annotations(&[("meta.helm.sh/release-name", "calico")]),
                &releases(&[("ops", "calico"), ("tigera-operator", "calico")])
            ),
            Some(("tigera-operator".to_string(), "calico".to_string()))
        );
        // Without any annotation, only a single release in the Deployment's namespace counts.
        assert_eq!(
            operator_release(
                "tigera-operator",
                &annotations(&[]),
                &releases(&[("tigera-operator", "net"), ("tigera-operator", "net")])
            ),
            Some(("tigera-operator".to_string(), "net".to_string()))
        );
        assert_eq!(
            operator_release(
                "tigera-operator",
                &annotations(&[]),
                &releases(&[("tigera-operator", "a"), ("tigera-operator", "b")])
            ),
            None
        );
    }

    #[test]
    fn a_pod_template_opts_in_or_out_of_sidecar_injection() {
        let template = |metadata: serde_json::Value| serde_json::json!({"spec": {"template": {"metadata": metadata}}});
        assert_eq!(pod_injection(&template(serde_json::json!({}))), None);
        assert_eq!(
            pod_injection(&template(
                serde_json::json!({"labels": {"sidecar.istio.io/inject": "true"}})
            )),
            Some(true)
        );
        assert_eq!(
            pod_injection(&template(serde_json::json!({
                "labels": {"sidecar.istio.io/inject": "false"},
                "annotations": {"sidecar.istio.io/inject": "true"}
            }))),
            Some(false),
            "the label wins over the annotation"
        );
    }
}
