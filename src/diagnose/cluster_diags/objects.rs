//! The objects of a cluster bundle: each type listed in pages and written as YAML documents (one
//! per object, `---` between them), censored first — Secrets' values (certificates excepted, as
//! upstream's `censorSecret` keeps them), the values of environment variables whose names say
//! password, token, secret or key, `last-applied-configuration` annotations, and `managedFields`
//! (dropped, as `kubectl get -o yaml` drops them).
//!
//! Layout: `cluster/` (version, nodes, namespaces, events, webhooks, API services, network
//! policies, the Calico CRDs' names and versions), `calico/<plural>.<group>.yaml` (every served
//! Calico and Tigera type), `namespaces/<namespace>/<plural>.yaml`.

use futures_util::future::join_all;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind, Resource};
use serde_json::Value;

use super::super::DiagnoseError;
use super::super::bundle::{Entry, Status};
use super::super::scrub::base64;
use super::{CALICO_NAMESPACES, Collector};
use crate::redaction::looks_secret;

/// What is censored in place of a value.
pub const CENSORED: &str = "<censored>";

/// Objects read per page.
const PAGE: u32 = 500;

/// The cluster as the collection starts: its Calico namespaces and its nodes in listed order.
#[derive(Debug, Clone, Default)]
pub(super) struct Cluster {
    pub namespaces: Vec<String>,
    pub nodes: Vec<String>,
}

/// What the log collection needs: the workloads and pods of the Calico namespaces.
#[derive(Debug, Clone, Default)]
pub(super) struct Workloads {
    pub workloads: Vec<Value>,
    pub pods: Vec<Value>,
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// A type to list, the namespace (or all), and the file its objects go to.
struct Listing {
    resource: ApiResource,
    namespace: Option<String>,
    file: String,
    keep: bool,
}

impl Listing {
    fn source(&self) -> String {
        format!(
            "GET {}",
            DynamicObject::url_path(&self.resource, self.namespace.as_deref())
        )
    }
}

/// Lists one type into its file; the objects when `keep` (for the few that later steps read).
async fn list(collector: &Collector, listing: &Listing) -> Result<Vec<Value>, DiagnoseError> {
    let source = listing.source();
    let work = async {
        let api: Api<DynamicObject> = match &listing.namespace {
            Some(namespace) => {
                Api::namespaced_with(collector.client.clone(), namespace, &listing.resource)
            }
            None => Api::all_with(collector.client.clone(), &listing.resource),
        };
        let Some(mut file) = collector.bundle.open(&listing.file, true)? else {
            collector
                .bundle
                .record(collector.bundle.full_entry(source.clone()));
            return Ok(Vec::new());
        };
        let mut kept = Vec::new();
        let mut continue_token: Option<String> = None;
        let mut count = 0usize;
        let failure = loop {
            let mut params = ListParams::default().limit(PAGE);
            if let Some(token) = &continue_token {
                params = params.continue_token(token);
            }
            let page = match api.list(&params).await {
                Ok(page) => page,
                Err(error) => break Some(error),
            };
            for item in page.items {
                let mut value = serde_json::to_value(&item).unwrap_or_default();
                value["apiVersion"] = Value::String(listing.resource.api_version.clone());
                value["kind"] = Value::String(listing.resource.kind.clone());
                censor(&mut value);
                let document = crate::yaml::emit::value_to_string(&value);
                let separator: &[u8] = if count == 0 { b"" } else { b"---\n" };
                std::io::Write::write_all(&mut file, separator)
                    .and_then(|()| std::io::Write::write_all(&mut file, document.as_bytes()))
                    .map_err(|source| DiagnoseError::Write {
                        path: listing.file.clone().into(),
                        source,
                    })?;
                count += 1;
                if listing.keep {
                    kept.push(value);
                }
            }
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => continue_token = Some(token),
                None => break None,
            }
        };
        let written = file.finish()?;
        match failure {
            None => collector
                .bundle
                .record(written.entry(source.clone(), Status::Collected, None)),
            Some(error) if count == 0 => {
                collector.bundle.discard(&written);
                collector.failed(&source, &error);
            }
            Some(error) => {
                let (_, reason) = super::describe(&error);
                collector.bundle.record(written.entry(
                    source.clone(),
                    Status::Failed,
                    Some(format!("{count} objects read, then: {reason}")),
                ));
            }
        }
        Ok(kept)
    };
    Ok(collector
        .item(&source, work)
        .await
        .transpose()?
        .unwrap_or_default())
}

/// Nodes and namespaces, written, and what later steps need of them.
pub(super) async fn cluster_basics(collector: &Collector) -> Result<Cluster, DiagnoseError> {
    collector.progress.add(2);
    let nodes = list(
        collector,
        &Listing {
            resource: resource("", "v1", "Node", "nodes"),
            namespace: None,
            file: "cluster/nodes.yaml".into(),
            keep: true,
        },
    )
    .await?;
    let namespaces = list(
        collector,
        &Listing {
            resource: resource("", "v1", "Namespace", "namespaces"),
            namespace: None,
            file: "cluster/namespaces.yaml".into(),
            keep: true,
        },
    )
    .await?;
    let name = |object: &Value| object["metadata"]["name"].as_str().map(str::to_string);
    let existing: Vec<String> = namespaces.iter().filter_map(name).collect();
    let mut calico = Vec::new();
    for wanted in CALICO_NAMESPACES {
        if existing.iter().any(|namespace| namespace == wanted) {
            calico.push(wanted.to_string());
        } else {
            collector.bundle.record(Entry::without_file(
                format!("namespace {wanted}"),
                Status::Skipped,
                "the namespace does not exist (operator installs have calico-system and tigera-operator, manifest installs kube-system)",
            ));
        }
    }
    for namespace in &existing {
        let named = namespace.contains("calico") || namespace.contains("tigera");
        if named && !calico.contains(namespace) {
            calico.push(namespace.clone());
        }
    }
    Ok(Cluster {
        namespaces: calico,
        nodes: nodes.iter().filter_map(name).collect(),
    })
}

/// The Secrets of the Calico namespaces (in `kube-system`, those named `calico...` only),
/// censored; returns every value censored, to be kept out of every other file.
pub(super) async fn secrets(
    collector: &Collector,
    cluster: &Cluster,
) -> Result<Vec<String>, DiagnoseError> {
    collector.progress.add(cluster.namespaces.len() as u64);
    let mut learned = Vec::new();
    for namespace in &cluster.namespaces {
        let source = format!("GET /api/v1/namespaces/{namespace}/secrets");
        let api: Api<DynamicObject> = Api::namespaced_with(
            collector.client.clone(),
            namespace,
            &resource("", "v1", "Secret", "secrets"),
        );
        let file = format!("namespaces/{namespace}/secrets.yaml");
        let work = async {
            let mut documents = Vec::new();
            let mut continue_token: Option<String> = None;
            loop {
                let mut params = ListParams::default().limit(PAGE);
                if let Some(token) = &continue_token {
                    params = params.continue_token(token);
                }
                let page = api.list(&params).await?;
                for item in page.items {
                    let name = item.metadata.name.clone().unwrap_or_default();
                    if namespace == "kube-system" && !name.starts_with("calico") {
                        continue;
                    }
                    let mut value = serde_json::to_value(&item).unwrap_or_default();
                    value["apiVersion"] = Value::String("v1".into());
                    value["kind"] = Value::String("Secret".into());
                    learned.extend(censor_secret(&mut value));
                    censor(&mut value);
                    documents.push(crate::yaml::emit::value_to_string(&value));
                }
                match page.metadata.continue_.filter(|token| !token.is_empty()) {
                    Some(token) => continue_token = Some(token),
                    None => break,
                }
            }
            Ok::<Vec<String>, kube::Error>(documents)
        };
        match collector.item(&source, work).await {
            Some(Ok(documents)) => {
                collector
                    .bundle
                    .write(&file, source, documents.join("---\n").as_bytes(), true)?
            }
            Some(Err(error)) => collector.failed(&source, &error),
            None => {}
        }
    }
    Ok(learned)
}

/// Everything else, `--max-parallelism` lists at a time; the workloads and pods are kept.
pub(super) async fn everything_else(
    collector: &Collector,
    cluster: &Cluster,
) -> Result<Workloads, DiagnoseError> {
    let mut listings = calico_types(collector).await;
    for (group, version, kind, plural, file) in [
        ("", "v1", "Event", "events", "cluster/events.yaml"),
        (
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            "cluster/networkpolicies.yaml",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "cluster/validatingwebhookconfigurations.yaml",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "cluster/mutatingwebhookconfigurations.yaml",
        ),
        (
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "apiservices",
            "cluster/apiservices.yaml",
        ),
        (
            "policy.networking.k8s.io",
            "v1alpha1",
            "AdminNetworkPolicy",
            "adminnetworkpolicies",
            "cluster/adminnetworkpolicies.yaml",
        ),
        (
            "policy.networking.k8s.io",
            "v1alpha1",
            "BaselineAdminNetworkPolicy",
            "baselineadminnetworkpolicies",
            "cluster/baselineadminnetworkpolicies.yaml",
        ),
    ] {
        listings.push(Listing {
            resource: resource(group, version, kind, plural),
            namespace: None,
            file: file.into(),
            keep: false,
        });
    }
    for namespace in &cluster.namespaces {
        for (group, kind, plural, keep) in [
            ("", "Pod", "pods", true),
            ("", "Service", "services", false),
            ("", "ConfigMap", "configmaps", false),
            ("", "ServiceAccount", "serviceaccounts", false),
            ("apps", "DaemonSet", "daemonsets", true),
            ("apps", "Deployment", "deployments", true),
            ("apps", "ReplicaSet", "replicasets", false),
            ("apps", "StatefulSet", "statefulsets", true),
        ] {
            listings.push(Listing {
                resource: resource(group, "v1", kind, plural),
                namespace: Some(namespace.clone()),
                file: format!("namespaces/{namespace}/{plural}.yaml"),
                keep,
            });
        }
    }
    collector.progress.add(listings.len() as u64 + 1);
    let crds = crd_summary(collector);
    let lists = join_all(listings.iter().map(|listing| list(collector, listing)));
    let (crds, lists) = tokio::join!(crds, lists);
    crds?;
    let mut workloads = Workloads::default();
    for (listing, result) in listings.iter().zip(lists) {
        let objects = result?;
        match listing.resource.plural.as_str() {
            "pods" => workloads.pods.extend(objects),
            _ => workloads.workloads.extend(objects),
        }
    }
    Ok(workloads)
}

/// Every listable type of the served Calico and Tigera groups (`crd.projectcalico.org`,
/// `projectcalico.org`, `operator.tigera.io`, ...), at each group's preferred version.
async fn calico_types(collector: &Collector) -> Vec<Listing> {
    collector.progress.add(1);
    let source = "GET /apis";
    let groups = match collector
        .item(source, collector.client.list_api_groups())
        .await
    {
        Some(Ok(groups)) => groups,
        Some(Err(error)) => {
            collector.failed(source, &error);
            return Vec::new();
        }
        None => return Vec::new(),
    };
    let wanted: Vec<(String, String)> = groups
        .groups
        .iter()
        .filter(|group| group.name.contains("projectcalico") || group.name.contains("tigera"))
        .filter_map(|group| {
            let version = group
                .preferred_version
                .as_ref()
                .or(group.versions.first())?;
            Some((group.name.clone(), version.version.clone()))
        })
        .collect();
    collector.progress.add(wanted.len() as u64);
    let mut listings = Vec::new();
    let mut summary = String::new();
    for (group, version) in wanted {
        let group_version = format!("{group}/{version}");
        let source = format!("GET /apis/{group_version}");
        let resources = match collector
            .item(
                &source,
                collector.client.list_api_group_resources(&group_version),
            )
            .await
        {
            Some(Ok(resources)) => resources,
            Some(Err(error)) => {
                collector.failed(&source, &error);
                continue;
            }
            None => continue,
        };
        for served in resources.resources {
            if served.name.contains('/') || !served.verbs.iter().any(|verb| verb == "list") {
                continue;
            }
            summary.push_str(&format!(
                "{group_version}\t{}\t{}\tnamespaced={}\n",
                served.name, served.kind, served.namespaced
            ));
            listings.push(Listing {
                resource: resource(&group, &version, &served.kind, &served.name),
                namespace: None,
                file: format!("calico/{}.{group}.yaml", served.name),
                keep: false,
            });
        }
    }
    if let Err(error) = collector.bundle.write(
        "cluster/calico-api-resources.txt",
        "GET /apis (Calico and Tigera groups)",
        summary.as_bytes(),
        true,
    ) {
        collector
            .progress
            .warn(format!("cannot write the API summary: {error}"));
    }
    listings
}

/// The Calico and Tigera CRDs: name, served versions and the storage version (their schemas are
/// large and the same in every cluster of a release, so they are not copied).
async fn crd_summary(collector: &Collector) -> Result<(), DiagnoseError> {
    let source = "GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let api: Api<DynamicObject> = Api::all_with(
        collector.client.clone(),
        &resource(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
    );
    match collector
        .item(source, api.list(&ListParams::default()))
        .await
    {
        Some(Ok(list)) => {
            let mut text = String::from("NAME\tSERVED\tSTORAGE\n");
            for crd in list.items {
                let name = crd.metadata.name.clone().unwrap_or_default();
                if !name.contains("projectcalico") && !name.contains("tigera") {
                    continue;
                }
                let versions = crd.data["spec"]["versions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let served: Vec<&str> = versions
                    .iter()
                    .filter(|v| v["served"] == true)
                    .filter_map(|v| v["name"].as_str())
                    .collect();
                let storage: Vec<&str> = versions
                    .iter()
                    .filter(|v| v["storage"] == true)
                    .filter_map(|v| v["name"].as_str())
                    .collect();
                text.push_str(&format!(
                    "{name}\t{}\t{}\n",
                    served.join(","),
                    storage.join(",")
                ));
            }
            collector
                .bundle
                .write("cluster/crds.txt", source, text.as_bytes(), true)?;
        }
        Some(Err(error)) => collector.failed(source, &error),
        None => {}
    }
    Ok(())
}

/// Censors a Secret's values (keeping certificates, as upstream's `censorSecret` does) and
/// returns the values censored, decoded.
pub(super) fn censor_secret(secret: &mut Value) -> Vec<String> {
    let mut learned = Vec::new();
    if let Some(data) = secret.get_mut("data").and_then(Value::as_object_mut) {
        for value in data.values_mut() {
            let decoded = value
                .as_str()
                .and_then(base64_decode)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            if is_certificate(&decoded) {
                continue;
            }
            learned.push(decoded);
            *value = Value::String(base64(CENSORED.as_bytes()));
        }
    }
    if let Some(data) = secret.get_mut("stringData").and_then(Value::as_object_mut) {
        for value in data.values_mut() {
            learned.extend(value.as_str().map(str::to_string));
            *value = Value::String(CENSORED.to_string());
        }
    }
    if let Some(annotation) = secret
        .pointer_mut("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration")
    {
        *annotation = Value::String(CENSORED.to_string());
    }
    learned.retain(|value| !value.trim().is_empty());
    learned
}

/// A public certificate (kept, as upstream keeps `tls.crt` and the like): a value of nothing but
/// PEM `CERTIFICATE` blocks, whatever its key is called.
fn is_certificate(decoded: &str) -> bool {
    let mut rest = decoded.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let Some(block) = rest.strip_prefix("-----BEGIN CERTIFICATE-----") else {
            return false;
        };
        let Some((body, after)) = block.split_once("-----END CERTIFICATE-----") else {
            return false;
        };
        let base64_only = body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=\r\n ".contains(c));
        if !base64_only {
            return false;
        }
        rest = after.trim_start();
    }
    true
}

/// Censors any object: `managedFields` dropped, secret-looking environment values and the
/// secrets inside a `last-applied-configuration` annotation replaced.
pub(super) fn censor(object: &mut Value) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    if let Some(annotation) = object
        .pointer_mut("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration")
        && let Some(text) = annotation.as_str()
        && let Ok(mut applied) = serde_json::from_str::<Value>(text)
    {
        censor_values(&mut applied);
        *annotation = Value::String(applied.to_string());
    }
    censor_values(object);
}

/// `{name: <secret-looking>, value: ...}` anywhere (environment variables) loses its value.
fn censor_values(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let secret_name = map
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(looks_secret);
            if secret_name && map.get("value").is_some_and(Value::is_string) {
                map.insert("value".into(), Value::String(CENSORED.into()));
            }
            for inner in map.values_mut() {
                censor_values(inner);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(censor_values),
        _ => {}
    }
}

/// Standard base64 decoded (Secrets' data); `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_secret_keeps_its_certificates_and_loses_everything_else() {
        let certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let mut secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "calico-etcd-secrets", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"etcd-key\":\"S0VZ\"}}"}},
            "data": {
                "etcd-ca": base64(certificate.as_bytes()),
                "tls.crt": base64(certificate.as_bytes()),
                "etcd-key": base64(b"-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"),
                "password": base64(b"hunter2hunter2")
            }
        });
        let learned = censor_secret(&mut secret);
        assert_eq!(secret["data"]["tls.crt"], base64(certificate.as_bytes()));
        assert_eq!(secret["data"]["etcd-ca"], base64(certificate.as_bytes()));
        for key in ["etcd-key", "password"] {
            assert_eq!(secret["data"][key], base64(b"<censored>"), "{key}");
        }
        assert_eq!(
            secret["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
            CENSORED
        );
        assert!(
            learned.contains(&"hunter2hunter2".to_string()),
            "{learned:?}"
        );
    }

    #[test]
    fn secret_environment_values_and_managed_fields_go() {
        let mut daemonset = json!({
            "metadata": {"name": "calico-node", "managedFields": [{"manager": "kubectl"}],
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                            "{\"spec\":{\"env\":[{\"name\":\"ETCD_PASSWORD\",\"value\":\"pw-123456\"}]}}"}},
            "spec": {"template": {"spec": {"containers": [{"name": "calico-node", "env": [
                {"name": "ETCD_PASSWORD", "value": "pw-123456"},
                {"name": "CALICO_NETWORKING_BACKEND", "value": "bird"},
                {"name": "ETCD_KEY", "valueFrom": {"secretKeyRef": {"name": "calico-etcd-secrets", "key": "etcd-key"}}}
            ]}]}}}
        });
        censor(&mut daemonset);
        let text = daemonset.to_string();
        assert!(!text.contains("pw-123456"), "{text}");
        assert!(!text.contains("managedFields"), "{text}");
        assert!(text.contains("\"value\":\"bird\""), "{text}");
        assert!(text.contains("secretKeyRef"), "{text}");
    }
}
