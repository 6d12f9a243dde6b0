//! The DaemonSet side of the test API server ([`super::kube_api`]): what kube-apiserver does to a
//! DaemonSet it stores (defaults and validates `spec.updateStrategy`, as
//! `pkg/apis/apps/v1/defaults.go` and `pkg/apis/apps/validation/validation.go` of Kubernetes), and a
//! stand-in for the DaemonSet controller of the DaemonSets a test hands it
//! ([`super::KubeApiServer::run_daemon_set`]): one pod per node from the pod template (labels of the
//! selector, an owner reference to the DaemonSet, every container ready); a deleted pod comes back
//! on its node from the template as it is now; a template change replaces every pod at once under
//! `RollingUpdate` and none under `OnDelete`; the status counts (`desiredNumberScheduled`,
//! `updatedNumberScheduled`, `numberAvailable`, `observedGeneration`) follow.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::kube_api::{ResourceType, State, status_error};

/// The DaemonSets the stand-in controls: `(namespace, name)` → the nodes it runs a pod on.
pub type StandIns = BTreeMap<(String, String), Vec<String>>;

/// Defaults `spec.updateStrategy` and refuses what kube-apiserver refuses (`422 Invalid`).
#[allow(clippy::result_large_err)]
pub fn prepare(resource: &ResourceType, object: &mut Value) -> Result<(), Response> {
    if resource.kind != "DaemonSet" || !object["spec"].is_object() {
        return Ok(());
    }
    let strategy = &mut object["spec"]["updateStrategy"];
    if !strategy.is_object() {
        *strategy = json!({});
    }
    if strategy["type"].as_str().unwrap_or_default().is_empty() {
        strategy["type"] = json!("RollingUpdate");
    }
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let strategy = &mut object["spec"]["updateStrategy"];
    match strategy["type"].as_str() {
        Some("OnDelete") => Ok(()),
        Some("RollingUpdate") => {
            if !strategy["rollingUpdate"].is_object() {
                strategy["rollingUpdate"] = json!({});
            }
            let rolling = &mut strategy["rollingUpdate"];
            if rolling["maxUnavailable"].is_null() {
                rolling["maxUnavailable"] = json!(1);
            }
            if rolling["maxSurge"].is_null() {
                rolling["maxSurge"] = json!(0);
            }
            Ok(())
        }
        other => Err(status_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!(
                "DaemonSet.apps \"{name}\" is invalid: spec.updateStrategy: Unsupported value: \"{}\": supported values: \"OnDelete\", \"RollingUpdate\"",
                other.unwrap_or_default()
            ),
            json!({"name": name, "group": "apps", "kind": "DaemonSet"}),
        )),
    }
}

fn containers(template: &Value) -> Vec<Value> {
    template["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Whether `pod` runs the template's containers and images.
fn runs_template(pod: &Value, template: &Value) -> bool {
    let images = |object: &Value| -> Vec<(Value, Value)> {
        containers(object)
            .iter()
            .map(|container| (container["name"].clone(), container["image"].clone()))
            .collect()
    };
    images(pod) == images(template)
}

impl State {
    /// A new pod of DaemonSet `daemon_set` on `node`, from its template as it is now.
    fn create_pod(&mut self, daemon_set: &Value, node: &str) {
        let namespace = daemon_set["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let name = daemon_set["metadata"]["name"].as_str().unwrap_or_default();
        self.pod_serial += 1;
        let template = &daemon_set["spec"]["template"];
        let containers = containers(template);
        let statuses: Vec<Value> = containers
            .iter()
            .map(|container| json!({"name": container["name"], "ready": true, "image": container["image"]}))
            .collect();
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("{name}-{:05x}", self.pod_serial),
                "namespace": namespace,
                "labels": template["metadata"]["labels"].clone(),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                                     "uid": daemon_set["metadata"]["uid"], "controller": true}],
            },
            "spec": {"nodeName": node, "containers": containers},
            "status": {"phase": "Running", "containerStatuses": statuses,
                       "conditions": [{"type": "Ready", "status": "True"}]},
        });
        let resource = pod_type();
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let key = super::kube_api::object_key(&resource, namespace, pod_name);
        self.store(key, pod, &resource);
    }

    /// The stand-in's pods of DaemonSet `(namespace, name)`: `(pod name, node, runs the template)`.
    fn stand_in_pods(
        &self,
        namespace: &str,
        name: &str,
        template: &Value,
    ) -> Vec<(String, String, bool)> {
        self.objects
            .iter()
            .filter(|(key, pod)| {
                key.0.is_empty()
                    && key.1 == "pods"
                    && key.2 == namespace
                    && pod["metadata"]["ownerReferences"][0]["name"].as_str() == Some(name)
                    && pod["metadata"]["ownerReferences"][0]["kind"].as_str() == Some("DaemonSet")
            })
            .map(|(key, pod)| {
                (
                    key.3.clone(),
                    pod["spec"]["nodeName"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    runs_template(pod, template),
                )
            })
            .collect()
    }

    /// Brings the stand-in's DaemonSet `(namespace, name)` to its spec: a pod on every node (from
    /// the template now), the pods behind the template replaced under `RollingUpdate`, the status
    /// counted.
    pub(super) fn reconcile_daemon_set(&mut self, namespace: &str, name: &str) {
        let Some(nodes) = self
            .daemon_sets
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
        else {
            return;
        };
        let resource = daemon_set_type();
        let key = super::kube_api::object_key(&resource, namespace, name);
        let Some(daemon_set) = self.objects.get(&key).cloned() else {
            return;
        };
        let template = daemon_set["spec"]["template"].clone();
        let rolling = daemon_set["spec"]["updateStrategy"]["type"].as_str() != Some("OnDelete");
        let pods = self.stand_in_pods(namespace, name, &template);
        for (pod, _, current) in &pods {
            if rolling && !current {
                let pod_key = super::kube_api::object_key(&pod_type(), namespace, pod);
                self.objects.remove(&pod_key);
            }
        }
        let pods = self.stand_in_pods(namespace, name, &template);
        for node in &nodes {
            if !pods.iter().any(|(_, on, _)| on == node) {
                self.create_pod(&daemon_set, node);
            }
        }
        let pods = self.stand_in_pods(namespace, name, &template);
        let updated = pods.iter().filter(|(_, _, current)| *current).count();
        if let Some(stored) = self.objects.get_mut(&key) {
            stored["status"] = json!({
                "observedGeneration": daemon_set["metadata"]["generation"],
                "desiredNumberScheduled": nodes.len(),
                "currentNumberScheduled": pods.len(),
                "updatedNumberScheduled": updated,
                "numberReady": pods.len(),
                "numberAvailable": pods.len(),
            });
        }
    }

    /// After a pod was deleted: its DaemonSet's stand-in (if any) puts a new one on the node.
    pub(super) fn pod_deleted(&mut self, pod: &Value) {
        let owner = &pod["metadata"]["ownerReferences"][0];
        if owner["kind"].as_str() != Some("DaemonSet") {
            return;
        }
        let namespace = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = owner["name"].as_str().unwrap_or_default().to_string();
        self.reconcile_daemon_set(&namespace, &name);
    }
}

fn pod_type() -> ResourceType {
    super::kube_api::resource_type("v1", "Pod")
}

fn daemon_set_type() -> ResourceType {
    super::kube_api::resource_type("apps/v1", "DaemonSet")
}
