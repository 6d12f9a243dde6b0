//! Kinds the Kubernetes datastore derives from core objects (upstream
//! `libcalico-go/lib/backend/k8s/k8s.go` and `resources/`):
//!
//! - a Calico `Node` is a Kubernetes Node (upstream `resources/node.go`): its BGP, tunnel and
//!   WireGuard interface fields live in `projectcalico.org/*` annotations, its addresses come from
//!   the Node's status. Its own labels and annotations are kept as JSON in the
//!   `projectcalico.org/labels` and `projectcalico.org/annotations` annotations; on read the
//!   Kubernetes Node's labels are laid over its labels (Kubernetes wins) and recorded in the
//!   `projectcalico.org/kube-labels` annotation, so that on write the inherited ones can be told
//!   apart and left out: netctl never changes a Kubernetes Node's labels. An update merges into the
//!   Kubernetes Node (a merge patch carrying the `resourceVersion` read, so a concurrent change is a
//!   conflict); create and delete are Kubernetes' business. The WireGuard public keys
//!   (`WireguardPublicKey`, `WireguardPublicKeyV6`) are Node *status* upstream, which netctl's
//!   resources do not carry: they are neither shown nor touched.
//! - `Profile`s are read-only: `kns.<namespace>` from each Namespace, `ksa.<namespace>.<account>`
//!   from each ServiceAccount, plus `projectcalico-default-allow`.
//!
//! Workload endpoints (derived from Pods) are in `workload`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as K8sObjectMeta;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::KubeStore;
use crate::datastore::{ListOptions, Page, StoreError};
use crate::resource::{API_VERSION, Kind, ObjectMeta, Resource, ResourceKey};

pub const NODES: &str = "Nodes are Kubernetes Nodes in the `kubernetes` datastore: create and delete them through Kubernetes";
pub const PROFILES: &str = "Profiles are derived from Kubernetes Namespaces and ServiceAccounts in the `kubernetes` datastore";

/// The annotation prefix of Calico Node fields on a Kubernetes Node.
const ANNOTATION_PREFIX: &str = "projectcalico.org/";

/// The annotation that records the Kubernetes Node's labels on the Calico Node (JSON).
pub const KUBE_LABELS_ANNOTATION: &str = "projectcalico.org/kube-labels";

/// The Calico Node's own labels and annotations, as JSON, on the Kubernetes Node.
const LABELS_ANNOTATION: &str = "projectcalico.org/labels";
const ANNOTATIONS_ANNOTATION: &str = "projectcalico.org/annotations";

/// The name of the profile that allows everything.
pub const DEFAULT_ALLOW_PROFILE: &str = "projectcalico-default-allow";

/// `(spec path, annotation name)` for the Node fields kept in annotations.
const NODE_ANNOTATIONS: [(&[&str], &str); 9] = [
    (&["bgp", "ipv4Address"], "IPv4Address"),
    (&["bgp", "ipv6Address"], "IPv6Address"),
    (&["bgp", "asNumber"], "ASNumber"),
    (
        &["bgp", "routeReflectorClusterID"],
        "RouteReflectorClusterID",
    ),
    (&["bgp", "ipv4IPIPTunnelAddr"], "IPv4IPIPTunnelAddr"),
    (&["ipv4VXLANTunnelAddr"], "IPv4VXLANTunnelAddr"),
    (&["vxlanTunnelMACAddr"], "VXLANTunnelMACAddr"),
    (&["ipv6VXLANTunnelAddr"], "IPv6VXLANTunnelAddr"),
    (&["vxlanTunnelMACAddrV6"], "VXLANTunnelMACAddrV6"),
];

const WIREGUARD_ANNOTATIONS: [(&str, &str); 2] = [
    ("interfaceIPv4Address", "IPv4WireguardInterfaceAddr"),
    ("interfaceIPv6Address", "IPv6WireguardInterfaceAddr"),
];

/// Node status fields kept in annotations (upstream `node.go`: the WireGuard public keys the node
/// agent publishes).
const STATUS_ANNOTATIONS: [(&str, &str); 2] = [
    ("wireguardPublicKey", "WireguardPublicKey"),
    ("wireguardPublicKeyV6", "WireguardPublicKeyV6"),
];

fn node_api(store: &KubeStore) -> Api<Node> {
    Api::all(store.api.client.clone())
}

/// The Calico Node a Kubernetes Node represents.
pub fn node_to_resource(node: &Node) -> Resource {
    let metadata = &node.metadata;
    let annotations = metadata.annotations.clone().unwrap_or_default();
    let annotation = |name: &str| annotations.get(&format!("{ANNOTATION_PREFIX}{name}"));
    let mut spec = json!({});
    for (path, name) in NODE_ANNOTATIONS {
        let Some(value) = annotation(name) else {
            continue;
        };
        let value = match name {
            "ASNumber" => value
                .parse::<u64>()
                .map(Value::from)
                .unwrap_or(json!(value)),
            _ => json!(value),
        };
        match path {
            [field] => spec[*field] = value,
            [group, field] => spec[*group][*field] = value,
            _ => {}
        }
    }
    for (field, name) in WIREGUARD_ANNOTATIONS {
        if let Some(value) = annotation(name) {
            spec["wireguard"][field] = json!(value);
        }
    }
    let name = metadata.name.clone().unwrap_or_default();
    // As upstream (`SetCalicoMetadataFromK8sAnnotations`, `mergeCalicoAndK8sLabels`): an annotation
    // that does not parse is ignored.
    let stored = |key: &str| -> BTreeMap<String, String> {
        annotations
            .get(key)
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    };
    let mut labels = stored(LABELS_ANNOTATION);
    labels.extend(metadata.labels.clone().unwrap_or_default());
    let mut calico_annotations = stored(ANNOTATIONS_ANNOTATION);
    // Upstream writes Go's `null` for a Node without labels; so does serializing `None`.
    calico_annotations.insert(
        KUBE_LABELS_ANNOTATION.to_string(),
        serde_json::to_string(&metadata.labels).unwrap_or_default(),
    );
    let addresses: Vec<Value> = node
        .status
        .as_ref()
        .and_then(|status| status.addresses.as_ref())
        .map(|addresses| {
            addresses
                .iter()
                .filter(|address| address.type_ == "InternalIP" || address.type_ == "ExternalIP")
                .map(|address| json!({"address": address.address, "type": address.type_}))
                .collect()
        })
        .unwrap_or_default();
    if !addresses.is_empty() {
        spec["addresses"] = json!(addresses);
    }
    spec["orchRefs"] = json!([{ "nodeName": name, "orchestrator": "k8s" }]);
    // The status as upstream reports it: the public keys from annotations, the pod CIDRs from the
    // Kubernetes Node's spec.
    let mut status = serde_json::Map::new();
    for (field, name) in STATUS_ANNOTATIONS {
        if let Some(value) = annotation(name).filter(|value| !value.is_empty()) {
            status.insert(field.to_string(), json!(value));
        }
    }
    if let Some(cidrs) = node
        .spec
        .as_ref()
        .and_then(|spec| spec.pod_cidrs.as_ref())
        .filter(|cidrs| !cidrs.is_empty())
    {
        status.insert("podCIDRs".to_string(), json!(cidrs));
    }
    Resource {
        api_version: API_VERSION.to_string(),
        kind: Kind::Node,
        metadata: ObjectMeta {
            name,
            labels,
            annotations: calico_annotations,
            ..kept_metadata(metadata)
        },
        spec,
        status: if status.is_empty() {
            Value::Null
        } else {
            Value::Object(status)
        },
    }
}

/// The merge patch that makes a Kubernetes Node carry `resource`: the Calico annotations set or
/// removed, and the `resourceVersion` read as a precondition. The Node's labels are not touched:
/// labels that came from it (named in `projectcalico.org/kube-labels`) are dropped, the rest are
/// the Calico Node's own and go to the `projectcalico.org/labels` annotation (upstream
/// `mergeCalicoNodeIntoK8sNode`, `restoreCalicoLabels`). A label that shadows a Kubernetes label
/// is therefore dropped too, as upstream does.
pub fn node_patch(current: &Node, resource: &Resource) -> Result<Value, StoreError> {
    let mut annotations = serde_json::Map::new();
    let spec = &resource.spec;
    for (path, name) in NODE_ANNOTATIONS {
        let value = path.iter().try_fold(spec, |value, field| value.get(*field));
        let value = match value {
            Some(Value::String(text)) if !text.is_empty() => json!(text),
            Some(Value::Number(number)) => json!(number.to_string()),
            _ => Value::Null,
        };
        annotations.insert(format!("{ANNOTATION_PREFIX}{name}"), value);
    }
    for (field, name) in WIREGUARD_ANNOTATIONS {
        let value = match spec["wireguard"][field].as_str() {
            Some(text) if !text.is_empty() => json!(text),
            _ => Value::Null,
        };
        annotations.insert(format!("{ANNOTATION_PREFIX}{name}"), value);
    }
    // The status annotations (the public keys) are left alone: the node agent owns them, and an
    // update only ever carries the stored status back (see `Resource::status`). Upstream writes them
    // here because its node agent updates through the same code.
    let mut labels = resource.metadata.labels.clone();
    let mut own_annotations = resource.metadata.annotations.clone();
    if let Some(raw) = own_annotations
        .remove(KUBE_LABELS_ANNOTATION)
        .filter(|raw| !raw.is_empty())
    {
        let inherited: Option<BTreeMap<String, String>> =
            serde_json::from_str(&raw).map_err(|source| StoreError::InvalidData {
                location: format!(
                    "annotation `{KUBE_LABELS_ANNOTATION}` of Node `{}`",
                    resource.metadata.name
                ),
                source,
            })?;
        for key in inherited.unwrap_or_default().keys() {
            labels.remove(key);
        }
    }
    let as_json = |map: &BTreeMap<String, String>| match map.is_empty() {
        true => Value::Null,
        false => json!(serde_json::to_string(map).unwrap_or_default()),
    };
    annotations.insert(LABELS_ANNOTATION.to_string(), as_json(&labels));
    annotations.insert(
        ANNOTATIONS_ANNOTATION.to_string(),
        as_json(&own_annotations),
    );
    let existing = current.metadata.annotations.clone().unwrap_or_default();
    annotations.retain(|key, value| !value.is_null() || existing.contains_key(key));
    Ok(json!({
        "metadata": {
            "resourceVersion": resource.metadata.resource_version,
            "annotations": annotations,
        }
    }))
}

pub async fn get_node(store: &KubeStore, key: &ResourceKey) -> Result<Resource, StoreError> {
    let api = node_api(store);
    let node = store
        .call(
            store.request("get", "nodes", Some(key), None),
            api.get(&key.name),
        )
        .await?;
    Ok(node_to_resource(&node))
}

pub async fn list_nodes(
    store: &KubeStore,
    options: &ListOptions,
    continue_token: Option<&str>,
) -> Result<Page, StoreError> {
    let api = node_api(store);
    let mut params = ListParams::default().limit(super::page_size(options));
    if let Some(token) = continue_token {
        params = params.continue_token(token);
    }
    let list = store
        .call(
            store.request("list", "nodes", None, None),
            api.list(&params),
        )
        .await?;
    Ok(Page {
        items: list.items.iter().map(node_to_resource).collect(),
        bodies: Vec::new(),
        continue_token: list.metadata.continue_.filter(|token| !token.is_empty()),
        revision: list.metadata.resource_version.unwrap_or_default(),
    })
}

pub async fn update_node(store: &KubeStore, resource: &Resource) -> Result<Resource, StoreError> {
    let key = resource.key();
    let expected = StoreError::expected_version(resource)?.to_string();
    let api = node_api(store);
    let current = store
        .call(
            store.request("get", "nodes", Some(&key), None),
            api.get(&key.name),
        )
        .await?;
    let patch = node_patch(&current, resource)?;
    let result = store
        .call(
            store.request("update", "nodes", Some(&key), Some(&expected)),
            api.patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await;
    match result {
        Ok(node) => Ok(node_to_resource(&node)),
        Err(StoreError::Conflict { key, expected, .. }) => Err(StoreError::Conflict {
            key,
            expected,
            current: current.metadata.resource_version.unwrap_or_default(),
        }),
        Err(error) => Err(error),
    }
}

fn allow_all() -> Value {
    json!([{ "action": "Allow" }])
}

fn profile(name: String, resource_version: Option<String>, spec: Value) -> Resource {
    Resource {
        api_version: API_VERSION.to_string(),
        kind: Kind::Profile,
        metadata: ObjectMeta {
            name,
            resource_version,
            ..ObjectMeta::default()
        },
        spec,
        status: Value::Null,
    }
}

fn default_allow_profile() -> Resource {
    profile(
        DEFAULT_ALLOW_PROFILE.to_string(),
        Some("0".into()),
        json!({ "ingress": allow_all(), "egress": allow_all() }),
    )
}

fn labels_to_apply(prefix: &str, name: &str, labels: &BTreeMap<String, String>) -> Value {
    let mut applied = serde_json::Map::new();
    applied.insert(format!("{prefix}.projectcalico.org/name"), json!(name));
    for (key, value) in labels {
        applied.insert(format!("{prefix}.{key}"), json!(value));
    }
    Value::Object(applied)
}

/// The `kns.<namespace>` profile of a Namespace.
pub fn namespace_profile(namespace: &Namespace) -> Resource {
    let name = namespace.metadata.name.clone().unwrap_or_default();
    let labels = namespace.metadata.labels.clone().unwrap_or_default();
    profile(
        format!("kns.{name}"),
        namespace.metadata.resource_version.clone(),
        json!({
            "ingress": allow_all(),
            "egress": allow_all(),
            "labelsToApply": labels_to_apply("pcns", &name, &labels),
        }),
    )
}

/// The `ksa.<namespace>.<account>` profile of a ServiceAccount.
pub fn service_account_profile(account: &ServiceAccount) -> Resource {
    let name = account.metadata.name.clone().unwrap_or_default();
    let namespace = account.metadata.namespace.clone().unwrap_or_default();
    let labels = account.metadata.labels.clone().unwrap_or_default();
    profile(
        format!("ksa.{namespace}.{name}"),
        account.metadata.resource_version.clone(),
        json!({ "labelsToApply": labels_to_apply("pcsa", &name, &labels) }),
    )
}

pub async fn get_profile(store: &KubeStore, key: &ResourceKey) -> Result<Resource, StoreError> {
    let client = store.api.client.clone();
    if key.name == DEFAULT_ALLOW_PROFILE {
        return Ok(default_allow_profile());
    }
    if let Some(namespace) = key.name.strip_prefix("kns.") {
        let api: Api<Namespace> = Api::all(client);
        let found = store
            .call(
                store.request("get", "namespaces", Some(key), None),
                api.get(namespace),
            )
            .await?;
        return Ok(namespace_profile(&found));
    }
    if let Some((namespace, account)) = key
        .name
        .strip_prefix("ksa.")
        .and_then(|rest| rest.split_once('.'))
    {
        let api: Api<ServiceAccount> = Api::namespaced(client, namespace);
        let found = store
            .call(
                store.request("get", "serviceaccounts", Some(key), None),
                api.get(account),
            )
            .await?;
        return Ok(service_account_profile(&found));
    }
    Err(StoreError::NotFound(key.clone()))
}

/// Where a profile listing goes on: the continue token is the phase (`namespaces/` or
/// `serviceaccounts/`) followed by the API's own continue token for that phase (empty to start it).
const NAMESPACE_PHASE: &str = "namespaces/";
const SERVICE_ACCOUNT_PHASE: &str = "serviceaccounts/";

/// One page of profiles: the default-allow profile first, then one per Namespace, then one per
/// ServiceAccount, each read with the API's `limit` and `continue`, so a listing holds one page of
/// Namespaces or ServiceAccounts at a time however large the cluster.
pub async fn list_profiles(
    store: &KubeStore,
    options: &ListOptions,
    continue_token: Option<&str>,
) -> Result<Page, StoreError> {
    let client = store.api.client.clone();
    let size = super::page_size(options);
    let mut items = Vec::new();
    let (phase, inner) = match continue_token {
        None => {
            items.push(default_allow_profile());
            (NAMESPACE_PHASE, None)
        }
        Some(token) => {
            let (phase, inner) = [NAMESPACE_PHASE, SERVICE_ACCOUNT_PHASE]
                .iter()
                .find_map(|phase| Some((*phase, token.strip_prefix(phase)?)))
                .ok_or_else(|| {
                    StoreError::failed(
                        "a list of profiles",
                        super::errors::KubeError::InvalidContinueToken(token.to_string()),
                    )
                })?;
            (phase, Some(inner).filter(|inner| !inner.is_empty()))
        }
    };
    // The default-allow profile takes one place of the first page (but a limit of 0 would mean
    // no limit to the API).
    let limit = if items.is_empty() {
        size
    } else {
        size.saturating_sub(1).max(1)
    };
    let mut params = ListParams::default().limit(limit);
    if let Some(inner) = inner {
        params = params.continue_token(inner);
    }
    let (revision, next) = if phase == NAMESPACE_PHASE {
        let namespaces: Api<Namespace> = Api::all(client);
        let list = store
            .call(
                store.request("list", "namespaces", None, None),
                namespaces.list(&params),
            )
            .await?;
        items.extend(list.items.iter().map(namespace_profile));
        let next = match list.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => format!("{NAMESPACE_PHASE}{token}"),
            None => SERVICE_ACCOUNT_PHASE.to_string(),
        };
        (list.metadata.resource_version, Some(next))
    } else {
        let accounts: Api<ServiceAccount> = Api::all(client);
        let list = store
            .call(
                store.request("list", "serviceaccounts", None, None),
                accounts.list(&params),
            )
            .await?;
        items.extend(list.items.iter().map(service_account_profile));
        let next = list
            .metadata
            .continue_
            .filter(|token| !token.is_empty())
            .map(|token| format!("{SERVICE_ACCOUNT_PHASE}{token}"));
        (list.metadata.resource_version, next)
    };
    Ok(Page {
        items,
        bodies: Vec::new(),
        continue_token: next,
        revision: revision.unwrap_or_default(),
    })
}

/// What a resource derived from a core object keeps of that object's metadata, as upstream: its
/// UID (unconverted), creation time and resource version.
pub(super) fn kept_metadata(metadata: &K8sObjectMeta) -> ObjectMeta {
    ObjectMeta {
        uid: metadata.uid.clone(),
        creation_timestamp: metadata
            .creation_timestamp
            .as_ref()
            .map(|time| time.0.to_string()),
        resource_version: metadata.resource_version.clone(),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_fields_round_trip_through_annotations() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "node1", "resourceVersion": "5", "labels": {"zone": "a"},
                "annotations": {"projectcalico.org/IPv4Address": "10.0.0.1/24",
                                "projectcalico.org/ASNumber": "64512",
                                "projectcalico.org/IPv4VXLANTunnelAddr": "10.244.0.1"}},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                                     {"type": "Hostname", "address": "node1"}]}
        }))
        .unwrap();
        let resource = node_to_resource(&node);
        assert_eq!(resource.spec["bgp"]["ipv4Address"], "10.0.0.1/24");
        assert_eq!(resource.spec["bgp"]["asNumber"], 64512);
        assert_eq!(resource.spec["ipv4VXLANTunnelAddr"], "10.244.0.1");
        assert_eq!(
            resource.spec["addresses"],
            json!([{"address": "10.0.0.1", "type": "InternalIP"}])
        );
        assert_eq!(resource.metadata.labels["zone"], "a");
        crate::resource::validate_and_default(&mut resource.clone()).unwrap();

        let mut changed = resource.clone();
        changed.spec["bgp"]["ipv4Address"] = json!("10.0.0.2/24");
        changed
            .spec
            .as_object_mut()
            .unwrap()
            .remove("ipv4VXLANTunnelAddr");
        changed.metadata.labels.clear();
        let patch = node_patch(&node, &changed).unwrap();
        let annotations = &patch["metadata"]["annotations"];
        assert_eq!(annotations["projectcalico.org/IPv4Address"], "10.0.0.2/24");
        assert_eq!(annotations["projectcalico.org/ASNumber"], "64512");
        assert!(annotations["projectcalico.org/IPv4VXLANTunnelAddr"].is_null());
        assert!(annotations.get("projectcalico.org/IPv6Address").is_none());
        // The Kubernetes Node's labels are never part of the patch.
        assert!(patch["metadata"].get("labels").is_none());
        assert_eq!(patch["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn kube_labels_separate_inherited_labels_from_calico_ones() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "node1", "resourceVersion": "5",
                "labels": {"kubernetes.io/os": "linux", "zone": "a"},
                "annotations": {
                    "projectcalico.org/labels": "{\"rack\":\"r1\",\"zone\":\"calico\"}",
                    "projectcalico.org/annotations": "{\"note\":\"n\"}",
                    "projectcalico.org/IPv4WireguardInterfaceAddr": "10.250.0.1",
                    "projectcalico.org/IPv6WireguardInterfaceAddr": "fd00:250::1",
                    "projectcalico.org/WireguardPublicKey": "key"}}
        }))
        .unwrap();
        let resource = node_to_resource(&node);
        // Kubernetes labels win over the Calico label of the same key.
        assert_eq!(
            serde_json::to_value(&resource.metadata.labels).unwrap(),
            json!({"kubernetes.io/os": "linux", "rack": "r1", "zone": "a"})
        );
        assert_eq!(
            serde_json::to_value(&resource.metadata.annotations).unwrap(),
            json!({"note": "n",
                   "projectcalico.org/kube-labels": "{\"kubernetes.io/os\":\"linux\",\"zone\":\"a\"}"})
        );
        assert_eq!(
            resource.spec["wireguard"],
            json!({"interfaceIPv4Address": "10.250.0.1", "interfaceIPv6Address": "fd00:250::1"})
        );

        let mut changed = resource.clone();
        changed.metadata.labels.insert("team".into(), "net".into());
        changed.metadata.labels.insert("zone".into(), "b".into());
        changed.metadata.annotations.remove("note");
        changed.spec["wireguard"] = json!({"interfaceIPv4Address": "10.250.0.2"});
        let patch = node_patch(&node, &changed).unwrap();
        let annotations = &patch["metadata"]["annotations"];
        // Inherited labels (even when changed: shadowed) are left out; only Calico's own remain.
        assert_eq!(
            annotations["projectcalico.org/labels"],
            "{\"rack\":\"r1\",\"team\":\"net\"}"
        );
        assert!(annotations["projectcalico.org/annotations"].is_null());
        assert!(annotations.get("projectcalico.org/kube-labels").is_none());
        assert_eq!(
            annotations["projectcalico.org/IPv4WireguardInterfaceAddr"],
            "10.250.0.2"
        );
        assert!(annotations["projectcalico.org/IPv6WireguardInterfaceAddr"].is_null());
        // Status upstream; not netctl's to change.
        assert!(
            annotations
                .get("projectcalico.org/WireguardPublicKey")
                .is_none()
        );

        // A Node without labels records Go's `null`, and reads back without inherited labels.
        let bare: Node = serde_json::from_value(json!({"metadata": {"name": "node2"}})).unwrap();
        let resource = node_to_resource(&bare);
        assert_eq!(
            resource.metadata.annotations["projectcalico.org/kube-labels"],
            "null"
        );
        let patch = node_patch(&bare, &resource).unwrap();
        assert!(
            patch["metadata"]["annotations"]
                .get("projectcalico.org/labels")
                .is_none()
        );
    }

    #[test]
    fn profiles_come_from_namespaces_and_service_accounts() {
        let namespace: Namespace = serde_json::from_value(
            json!({"metadata": {"name": "prod", "labels": {"team": "a"}, "resourceVersion": "3"}}),
        )
        .unwrap();
        let profile = namespace_profile(&namespace);
        assert_eq!(profile.metadata.name, "kns.prod");
        assert_eq!(
            profile.spec["labelsToApply"]["pcns.projectcalico.org/name"],
            "prod"
        );
        assert_eq!(profile.spec["labelsToApply"]["pcns.team"], "a");
        let account: ServiceAccount =
            serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "prod"}}))
                .unwrap();
        assert_eq!(
            service_account_profile(&account).metadata.name,
            "ksa.prod.web"
        );
    }
}
