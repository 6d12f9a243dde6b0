//! Pod logs, chosen as upstream chooses them (`collectSelectedNodeLogs`): for each DaemonSet,
//! Deployment and StatefulSet of the Calico namespaces (in `kube-system` only those named
//! `calico...`), its pods — matched by the workload's selector — taken node by node in the order
//! `--focus-nodes` first, then the cluster's, up to `--max-logs` pods. Every container of a chosen
//! pod gives its log (`--since`, at most `--max-file-size`), and its previous instance's when it
//! restarted; upstream's `kubectl logs --all-containers` mixes them into one file.
//!
//! Files: `nodes/<node>/<namespace>/<pod>/<container>.log` (and `.previous.log`).

use futures_util::AsyncReadExt;
use futures_util::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use serde_json::Value;

use super::super::DiagnoseError;
use super::super::bundle::Status;
use super::objects::{Cluster, Workloads};
use super::{Collector, node_order};

/// A pod whose logs were collected, for the dataplane dumps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ChosenPod {
    pub namespace: String,
    pub name: String,
    pub node: String,
    pub containers: Vec<String>,
}

/// One log to read.
struct LogItem {
    pod: ChosenPod,
    container: String,
    previous: bool,
}

/// Chooses the pods and reads their logs; returns the pods chosen.
pub(super) async fn logs(
    collector: &Collector,
    cluster: &Cluster,
    workloads: &Workloads,
) -> Result<Vec<ChosenPod>, DiagnoseError> {
    let order = node_order(&collector.options.focus_nodes, &cluster.nodes);
    let mut chosen: Vec<ChosenPod> = Vec::new();
    let mut items = Vec::new();
    for workload in &workloads.workloads {
        let namespace = workload["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let name = workload["metadata"]["name"].as_str().unwrap_or_default();
        if namespace == "kube-system" && !name.starts_with("calico") {
            continue;
        }
        let selector = &workload["spec"]["selector"];
        let pods: Vec<&Value> = workloads
            .pods
            .iter()
            .filter(|pod| pod["metadata"]["namespace"] == namespace)
            .filter(|pod| selects(selector, &pod["metadata"]["labels"]))
            .collect();
        for pod in pick(&pods, &order, collector.options.max_logs) {
            let chosen_pod = chosen_pod(pod);
            if chosen.contains(&chosen_pod) {
                continue;
            }
            for (container, restarted) in containers(pod) {
                items.push(LogItem {
                    pod: chosen_pod.clone(),
                    container: container.clone(),
                    previous: false,
                });
                if restarted {
                    items.push(LogItem {
                        pod: chosen_pod.clone(),
                        container,
                        previous: true,
                    });
                }
            }
            chosen.push(chosen_pod);
        }
    }
    collector.progress.add(items.len() as u64);
    for result in join_all(items.iter().map(|item| read_log(collector, item))).await {
        result?;
    }
    Ok(chosen)
}

fn chosen_pod(pod: &Value) -> ChosenPod {
    let text = |pointer: &str| {
        pod.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    ChosenPod {
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name"),
        node: match text("/spec/nodeName") {
            node if node.is_empty() => "unscheduled".to_string(),
            node => node,
        },
        containers: containers(pod).into_iter().map(|(name, _)| name).collect(),
    }
}

/// Up to `max` pods, node by node in `order` (pods on nodes not in it last).
fn pick<'a>(pods: &[&'a Value], order: &[String], max: usize) -> Vec<&'a Value> {
    let node = |pod: &Value| {
        pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let mut sorted: Vec<&Value> = pods.to_vec();
    sorted.sort_by_key(|pod| {
        let node = node(pod);
        order
            .iter()
            .position(|name| *name == node)
            .unwrap_or(order.len())
    });
    sorted.truncate(max);
    sorted
}

/// The init and regular containers of a pod, each with whether it restarted.
fn containers(pod: &Value) -> Vec<(String, bool)> {
    let restarted = |name: &str| {
        ["initContainerStatuses", "containerStatuses"]
            .iter()
            .filter_map(|field| pod["status"][field].as_array())
            .flatten()
            .any(|status| {
                status["name"] == name && status["restartCount"].as_i64().unwrap_or(0) > 0
            })
    };
    ["initContainers", "containers"]
        .iter()
        .filter_map(|field| pod["spec"][field].as_array())
        .flatten()
        .filter_map(|container| container["name"].as_str())
        .map(|name| (name.to_string(), restarted(name)))
        .collect()
}

/// Whether a workload's label selector (`matchLabels`, `matchExpressions`) selects `labels`. An
/// empty or missing selector selects nothing (a workload always has one).
fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let match_labels = selector["matchLabels"].as_object();
    let expressions = selector["matchExpressions"].as_array();
    if match_labels.is_none_or(|m| m.is_empty()) && expressions.is_none_or(|e| e.is_empty()) {
        return false;
    }
    let labels_match = match_labels.is_none_or(|wanted| {
        wanted
            .iter()
            .all(|(key, value)| label(key) == value.as_str())
    });
    let expressions_match = expressions.is_none_or(|all| {
        all.iter().all(|expression| {
            let key = expression["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = expression["values"]
                .as_array()
                .map(|values| values.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match expression["operator"].as_str() {
                Some("In") => label(key).is_some_and(|value| values.contains(&value)),
                Some("NotIn") => label(key).is_none_or(|value| !values.contains(&value)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        })
    });
    labels_match && expressions_match
}

async fn read_log(collector: &Collector, item: &LogItem) -> Result<(), DiagnoseError> {
    let pod = &item.pod;
    let mut query = format!("container={}", item.container);
    if item.previous {
        query.push_str("&previous=true");
    }
    let source = format!(
        "GET /api/v1/namespaces/{}/pods/{}/log?{query}",
        pod.namespace, pod.name
    );
    let suffix = if item.previous {
        ".previous.log"
    } else {
        ".log"
    };
    let file = format!(
        "nodes/{}/{}/{}/{}{suffix}",
        pod.node, pod.namespace, pod.name, item.container
    );
    let api: Api<Pod> = Api::namespaced(collector.client.clone(), &pod.namespace);
    let params = LogParams {
        container: Some(item.container.clone()),
        previous: item.previous,
        since_seconds: collector
            .options
            .since
            .map(|since| since.as_secs().max(1) as i64),
        limit_bytes: Some(collector.options.bundle.max_file_size as i64),
        ..LogParams::default()
    };
    let work = async {
        let mut stream = match api.log_stream(&pod.name, &params).await {
            Ok(stream) => stream,
            Err(error) => {
                collector.failed(&source, &error);
                return Ok(());
            }
        };
        let Some(mut out) = collector.bundle.open(&file, false)? else {
            collector
                .bundle
                .record(collector.bundle.full_entry(source.clone()));
            return Ok(());
        };
        let mut buffer = vec![0u8; 64 * 1024];
        let failure = loop {
            match stream.read(&mut buffer).await {
                Ok(0) => break None,
                Ok(read) => {
                    if let Err(error) = std::io::Write::write_all(&mut out, &buffer[..read]) {
                        break Some(error.to_string());
                    }
                }
                Err(error) => break Some(format!("the log stream broke: {error}")),
            }
        };
        let written = out.finish()?;
        let status = match failure {
            None => Status::Collected,
            Some(_) => Status::Failed,
        };
        collector
            .bundle
            .record(written.entry(source.clone(), status, failure));
        Ok::<(), DiagnoseError>(())
    };
    collector.item(&source, work).await.transpose()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "calico-system", "labels": {"k8s-app": "calico-node"}},
               "spec": {"nodeName": node, "initContainers": [{"name": "install-cni"}], "containers": [{"name": "calico-node"}]},
               "status": {"containerStatuses": [{"name": "calico-node", "restartCount": 2}]}})
    }

    #[test]
    fn pods_are_picked_focus_nodes_first_up_to_the_limit() {
        let pods = [pod("a", "n1"), pod("b", "n2"), pod("c", "n3")];
        let refs: Vec<&Value> = pods.iter().collect();
        let order = ["n3".to_string(), "n1".to_string(), "n2".to_string()];
        let picked: Vec<&str> = pick(&refs, &order, 2)
            .iter()
            .map(|pod| pod["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(picked, ["c", "a"]);
        assert_eq!(
            containers(&pods[0]),
            [
                ("install-cni".to_string(), false),
                ("calico-node".to_string(), true)
            ]
        );
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = json!({"k8s-app": "calico-node", "tier": "a"});
        assert!(selects(
            &json!({"matchLabels": {"k8s-app": "calico-node"}}),
            &labels
        ));
        assert!(!selects(
            &json!({"matchLabels": {"k8s-app": "calico-typha"}}),
            &labels
        ));
        assert!(selects(
            &json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                         {"key": "x", "operator": "DoesNotExist"}]}),
            &labels
        ));
        assert!(!selects(&json!({}), &labels));
    }
}
