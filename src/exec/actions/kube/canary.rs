//! The canary node rollout's requests (issue 30, item 4; the plan side is `plan/canary.rs`):
//! holding a DaemonSet of a manifest at `updateStrategy: OnDelete` while it is applied
//! ([`hold`], called by `kube.apply`), `kube.replace-pods` (each chosen node's pod deleted, then
//! waited for until the controller's new pod there is Ready with the pod template's images) and
//! `kube.restore-update-strategy` (the strategy the hold recorded, put back).
//!
//! Every step is idempotent: a node whose pod already runs the template is skipped, a pod already
//! gone is waited for, a strategy already restored (no annotation) is left alone — so a run killed
//! anywhere in the rollout resumes by running the step again.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use serde_json::{Value, json};

use super::{
    ApiAccess, KubeActionError, api_path, cluster, described, done, request_error, with_lines,
    without_cluster,
};
use crate::exec::actions::{Context, Outcome, Perform, Performed, RunMode};
use crate::exec::preflight::node_agents::agent_image as pod_image;
use crate::plan::Action;
use crate::plan::action::{KubeReplacePods, KubeRestoreUpdateStrategy, UPDATE_STRATEGY_ANNOTATION};

/// How often a replacement is looked for again.
const POLL: Duration = Duration::from_millis(300);

/// Holds DaemonSet `name` of a manifest's `documents` at `updateStrategy: OnDelete`, keeping its
/// own strategy (`{}` when it has none) in [`UPDATE_STRATEGY_ANNOTATION`]. A manifest without
/// that DaemonSet is refused: the canary would roll nothing.
pub fn hold(documents: &mut [Value], name: &str) -> Result<(), KubeActionError> {
    let document = documents
        .iter_mut()
        .find(|document| {
            document["kind"].as_str() == Some("DaemonSet")
                && document["metadata"]["name"].as_str() == Some(name)
        })
        .ok_or_else(|| KubeActionError::HeldDaemonSetMissing {
            name: name.to_string(),
        })?;
    let own = document
        .pointer("/spec/updateStrategy")
        .cloned()
        .unwrap_or_else(|| json!({}));
    document["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
    if !document["metadata"]["annotations"].is_object() {
        document["metadata"]["annotations"] = json!({});
    }
    document["metadata"]["annotations"][UPDATE_STRATEGY_ANNOTATION] = json!(own.to_string());
    Ok(())
}

impl Perform for KubeReplacePods {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        match cluster(context, action) {
            Ok(client) => Ok(replace_pods(client, self, mode, &context.progress).await?),
            Err(_) => without_cluster(action, mode, describe_replace(self)),
        }
    }

    /// A node already at the template is skipped, a pod already deleted waited for.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let namespace = Some(&self.namespace);
        let daemon_set = ApiAccess::of_type(
            "apps/v1",
            "DaemonSet",
            namespace,
            Some(&self.daemon_set),
            &["get"],
        );
        let pods = ApiAccess::of_type("v1", "Pod", namespace, None, &["list", "delete"]);
        Some(vec![daemon_set, pods])
    }
}

impl Perform for KubeRestoreUpdateStrategy {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        match cluster(context, action) {
            Ok(client) => Ok(restore_strategy(client, self, mode).await?),
            Err(_) => without_cluster(action, mode, describe_restore(self)),
        }
    }

    /// Without the annotation there is nothing left to restore.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let verbs = &["get", "patch"];
        let name = Some(&self.daemon_set);
        let namespace = Some(&self.namespace);
        let daemon_set = ApiAccess::of_type("apps/v1", "DaemonSet", namespace, name, verbs);
        Some(vec![daemon_set])
    }
}

fn describe_replace(replace: &KubeReplacePods) -> Vec<String> {
    let nodes = match replace.nodes.is_empty() {
        true => "every node whose pod is not at the pod template".to_string(),
        false => format!("node(s) {}", replace.nodes.join(", ")),
    };
    vec![format!(
        "would GET {}, then for {nodes}, one at a time: DELETE {} (the node's pod) and wait until the new pod on that node is Ready with the template's images (timeout {} each)",
        api_path(
            "apps/v1",
            "DaemonSet",
            Some(&replace.namespace),
            Some(&replace.daemon_set)
        ),
        api_path("v1", "Pod", Some(&replace.namespace), Some("<pod>")),
        replace.timeout
    )]
}

fn describe_restore(restore: &KubeRestoreUpdateStrategy) -> Vec<String> {
    vec![format!(
        "would PATCH {} (application/merge-patch+json): `spec.updateStrategy` back to the value of annotation {UPDATE_STRATEGY_ANNOTATION}, the annotation removed",
        api_path(
            "apps/v1",
            "DaemonSet",
            Some(&restore.namespace),
            Some(&restore.daemon_set)
        )
    )]
}

/// What the controller puts in each pod: the template's containers by name, with their images.
struct Template {
    images: Vec<(String, String)>,
    selector: String,
}

impl Template {
    fn of(daemon_set: &DaemonSet) -> Template {
        let spec = daemon_set.spec.as_ref();
        let images = spec
            .and_then(|spec| spec.template.spec.as_ref())
            .map(|pod| {
                pod.containers
                    .iter()
                    .map(|container| {
                        (
                            container.name.clone(),
                            container.image.clone().unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selector = spec
            .and_then(|spec| spec.selector.match_labels.as_ref())
            .map(|labels| {
                labels
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        Template { images, selector }
    }

    /// Whether `pod` runs the template's images, container by container.
    fn runs(&self, pod: &Pod) -> bool {
        let containers = pod
            .spec
            .as_ref()
            .map(|spec| spec.containers.as_slice())
            .unwrap_or_default();
        containers.len() == self.images.len()
            && self.images.iter().all(|(name, image)| {
                containers.iter().any(|container| {
                    &container.name == name && container.image.as_ref() == Some(image)
                })
            })
    }

    /// The image of the node agent's container (`calico-node`, else the first).
    fn image(&self) -> &str {
        self.images
            .iter()
            .find(|(name, _)| name == "calico-node")
            .or(self.images.first())
            .map_or("", |(_, image)| image.as_str())
    }
}

fn pod_node(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// Running, not being deleted, and the node agent's container (`calico-node`, else every
/// container) ready.
fn pod_ready(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    let statuses = status.container_statuses.clone().unwrap_or_default();
    let agent = statuses.iter().find(|status| status.name == "calico-node");
    pod.metadata.deletion_timestamp.is_none()
        && status.phase.as_deref() == Some("Running")
        && match agent {
            Some(agent) => agent.ready,
            None => !statuses.is_empty() && statuses.iter().all(|status| status.ready),
        }
}

async fn daemon_set_and_pods(
    daemon_sets: &Api<DaemonSet>,
    pods: &Api<Pod>,
    name: &str,
) -> Result<(Template, Vec<Pod>), KubeActionError> {
    let daemon_set = daemon_sets
        .get(name)
        .await
        .map_err(|error| request_error(format!("read of DaemonSet {name}"), error))?;
    let template = Template::of(&daemon_set);
    let list = pods
        .list(&ListParams::default().labels(&template.selector))
        .await
        .map_err(|error| request_error(format!("list of the pods of DaemonSet {name}"), error))?;
    Ok((template, list.items))
}

/// `kube.replace-pods`: node by node, the pod deleted and its replacement waited for.
async fn replace_pods(
    client: &kube::Client,
    replace: &KubeReplacePods,
    mode: RunMode,
    progress: &crate::exec::progress::Progress,
) -> Result<Outcome, KubeActionError> {
    let daemon_sets: Api<DaemonSet> = Api::namespaced(client.clone(), &replace.namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &replace.namespace);
    let (template, listed) = daemon_set_and_pods(&daemon_sets, &pods, &replace.daemon_set).await?;
    let nodes: Vec<String> = match replace.nodes.is_empty() {
        false => replace.nodes.clone(),
        true => {
            let mut behind: Vec<String> = listed
                .iter()
                .filter(|pod| !template.runs(pod))
                .filter_map(|pod| pod_node(pod).map(str::to_string))
                .collect();
            behind.sort();
            behind.dedup();
            behind
        }
    };
    if mode == RunMode::DryRun {
        let mut lines = Vec::new();
        for node in &nodes {
            let on_node: Vec<&Pod> = listed
                .iter()
                .filter(|pod| pod_node(pod) == Some(node.as_str()))
                .collect();
            lines.push(match on_node.first() {
                None => format!("  node `{node}`: no pod of DaemonSet {} now", replace.daemon_set),
                Some(pod) if template.runs(pod) => format!(
                    "  node `{node}`: pod `{}` runs the pod template as things stand ({}): nothing to replace now",
                    pod.metadata.name.as_deref().unwrap_or("?"),
                    template.image()
                ),
                Some(pod) => format!(
                    "  node `{node}`: would delete pod `{}` ({} → {})",
                    pod.metadata.name.as_deref().unwrap_or("?"),
                    pod_image(pod),
                    template.image()
                ),
            });
        }
        if nodes.is_empty() {
            lines.push(
                "  every pod runs the pod template as things stand: nothing to replace now"
                    .to_string(),
            );
        }
        return Ok(with_lines(described(describe_replace(replace)), lines));
    }
    let mut replaced = Vec::new();
    let mut already = Vec::new();
    for node in &nodes {
        let target = format!("node `{node}`");
        let mut reporter = crate::exec::progress::WaitReporter::new(progress, target.clone());
        let started = Instant::now();
        let mut deleted = None;
        loop {
            let (_, listed) = daemon_set_and_pods(&daemon_sets, &pods, &replace.daemon_set).await?;
            let on_node: Vec<&Pod> = listed
                .iter()
                .filter(|pod| pod_node(pod) == Some(node.as_str()))
                .collect();
            let updated = on_node
                .iter()
                .find(|pod| template.runs(pod) && pod_ready(pod));
            if let Some(pod) = updated {
                let name = pod.metadata.name.clone().unwrap_or_default();
                match &deleted {
                    Some(old) => replaced.push(format!("{node} ({old} → {name})")),
                    None => already.push(node.clone()),
                }
                break;
            }
            let old = on_node
                .iter()
                .find(|pod| !template.runs(pod) && pod.metadata.deletion_timestamp.is_none());
            if let (Some(pod), None) = (old, &deleted) {
                let name = pod.metadata.name.clone().unwrap_or_default();
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: pod.metadata.uid.clone(),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match pods.delete(&name, &params).await {
                    Ok(_) => {}
                    // Gone or replaced meanwhile: the wait below finds its successor.
                    Err(kube::Error::Api(status)) if [404, 409].contains(&status.code) => {}
                    Err(error) => {
                        return Err(request_error(format!("delete of pod `{name}`"), error));
                    }
                }
                deleted = Some(name);
            }
            let state = match on_node.first() {
                Some(pod) => format!(
                    "pod `{}` {} ({})",
                    pod.metadata.name.as_deref().unwrap_or("?"),
                    if pod_ready(pod) { "ready" } else { "not ready" },
                    pod_image(pod)
                ),
                None => "no pod yet".to_string(),
            };
            if started.elapsed() >= replace.timeout.0 {
                return Err(KubeActionError::RolloutTimeout {
                    target: format!("the node agent on {target}"),
                    timeout: humantime::format_duration(replace.timeout.0).to_string(),
                    last: format!("{state}; expected a ready pod with {}", template.image()),
                });
            }
            reporter.report(&format!("{state}, waiting for {}", template.image()));
            tokio::time::sleep(POLL).await;
        }
    }
    let mut summary = format!(
        "DaemonSet {}/{}: replaced the pods of {} node(s)",
        replace.namespace,
        replace.daemon_set,
        replaced.len()
    );
    if !replaced.is_empty() {
        summary.push_str(&format!(": {}", replaced.join(", ")));
    }
    if !already.is_empty() {
        summary.push_str(&format!(
            "; already at {}: {}",
            template.image(),
            already.join(", ")
        ));
    }
    Ok(done(
        summary,
        json!({"replaced": replaced, "already": already, "image": template.image()}),
    ))
}

/// `kube.restore-update-strategy`.
async fn restore_strategy(
    client: &kube::Client,
    restore: &KubeRestoreUpdateStrategy,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let daemon_sets: Api<DaemonSet> = Api::namespaced(client.clone(), &restore.namespace);
    let what = format!("DaemonSet {}/{}", restore.namespace, restore.daemon_set);
    let current = daemon_sets
        .get(&restore.daemon_set)
        .await
        .map_err(|error| request_error(format!("read of {what}"), error))?;
    let recorded = current
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(UPDATE_STRATEGY_ANNOTATION));
    let Some(recorded) = recorded else {
        let summary = format!(
            "{what} has no {UPDATE_STRATEGY_ANNOTATION} annotation: its strategy was restored already"
        );
        return Ok(match mode {
            RunMode::DryRun => with_lines(
                described(describe_restore(restore)),
                vec![format!("  {summary}")],
            ),
            RunMode::Execute => done(summary, json!({})),
        });
    };
    let strategy: Value =
        serde_json::from_str(recorded).map_err(|error| KubeActionError::DamagedStrategy {
            object: what.clone(),
            detail: error.to_string(),
        })?;
    let strategy = match strategy.as_object().is_some_and(|object| object.is_empty()) {
        true => Value::Null,
        false => strategy,
    };
    let patch = json!({
        "metadata": {"annotations": {UPDATE_STRATEGY_ANNOTATION: null}},
        "spec": {"updateStrategy": strategy},
    });
    let params = PatchParams {
        dry_run: mode == RunMode::DryRun,
        ..PatchParams::default()
    };
    daemon_sets
        .patch(&restore.daemon_set, &params, &Patch::Merge(&patch))
        .await
        .map_err(|error| {
            request_error(format!("restore of the update strategy of {what}"), error)
        })?;
    let shown = match &strategy {
        Value::Null => "the API server's default (RollingUpdate)".to_string(),
        other => other.to_string(),
    };
    Ok(match mode {
        RunMode::DryRun => with_lines(
            described(describe_restore(restore)),
            vec![format!("  server dry-run accepted updateStrategy {shown}")],
        ),
        RunMode::Execute => done(
            format!("{what}: updateStrategy back to {shown}"),
            json!({"updateStrategy": strategy}),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_daemon_set_keeps_its_strategy_in_the_annotation() {
        let mut documents = vec![
            json!({"kind": "ConfigMap", "metadata": {"name": "calico-node"}}),
            json!({"kind": "DaemonSet", "metadata": {"name": "calico-node"},
                   "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}}}),
        ];
        hold(&mut documents, "calico-node").unwrap();
        assert_eq!(
            documents[1]["spec"]["updateStrategy"],
            json!({"type": "OnDelete"})
        );
        let recorded = documents[1]["metadata"]["annotations"][UPDATE_STRATEGY_ANNOTATION]
            .as_str()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(recorded).unwrap(),
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
        );
        assert!(documents[0]["spec"].is_null());
        let error = hold(&mut documents, "canal").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the manifest has no DaemonSet `canal` to roll node by node (`--canary`)"
        );
    }
}
