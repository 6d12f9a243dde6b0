//! The `node-agents` pre-flight check (issue 17, item 9): a step that `requires: {nodeAgents:
//! VERSION}` runs only once every node agent runs that version, read from the calico-node pods'
//! images (label `k8s-app` one of `calico-node`, `canal`, `canal-node`; container `calico-node`), not assumed from the plan.
//!
//! Upstream added a caution after enabling automatic host endpoints while older node agents still
//! ran cut nodes off: an older agent does not program the new host endpoint's default-allow
//! profile. When an earlier step of the same run rolls the node agents (it applies a manifest,
//! runs Helm or restarts a workload), the pre-flight cannot know the outcome yet; the executor
//! asks [`check_version`] again when the requiring step starts. It writes nothing.

use k8s_openapi::api::core::v1::Pod;

use super::Verdict;
use crate::listing::{self, Limit};
use crate::plan::PlannedStep;

/// How the node agent pods are found: calico-node's, and canal's (`canal.yaml` labels its
/// DaemonSet's pods `k8s-app=canal`, `canal-etcd.yaml` `k8s-app=canal-node`; the container is
/// `calico-node` in all).
pub const NODE_AGENT_SELECTOR: &str = "k8s-app in (calico-node,canal,canal-node)";

/// The pre-flight's verdict on the steps' node agent requirements.
pub(super) async fn verdict(
    cluster: Option<&kube::Client>,
    steps: &[&PlannedStep],
    limit: &Limit,
) -> Verdict {
    let Some((index, first, version)) = steps.iter().enumerate().find_map(|(index, step)| {
        step.requires
            .as_ref()
            .map(|requirement| (index, *step, requirement.node_agents.as_str()))
    }) else {
        return Verdict::NotRun("no step requires a node agent version".to_string());
    };
    if let Some(rolling) = steps[..index].iter().find(|step| rolls_workloads(step)) {
        return Verdict::Passed(format!(
            "step `{}` requires node agents at `{version}`; step `{}` rolls them first, so that is checked when `{}` starts",
            first.id, rolling.id, first.id
        ));
    }
    let Some(client) = cluster else {
        return Verdict::Failed {
            problem: format!(
                "step `{}` requires every node agent to run `{version}`, and no cluster is configured to read the calico-node pods from",
                first.id
            ),
            fix: "configure the cluster (`kubeconfig` in the configuration file, or `KUBECONFIG`); where node agents run outside Kubernetes, check each node's calico-node version yourself, then pass `--skip-preflight node-agents`"
                .to_string(),
        };
    };
    match check_version(client, version, limit).await {
        Ok(found) => Verdict::Passed(format!("step `{}` requires `{version}`: {found}", first.id)),
        Err(problem) => Verdict::Failed {
            problem: format!(
                "step `{}` requires every node agent to run `{version}`: {problem}",
                first.id
            ),
            fix: format!(
                "finish upgrading the node agents to `{version}` first (`kubectl -n NAMESPACE rollout status daemonset/calico-node`), then run again"
            ),
        },
    }
}

/// Whether a step may change which version the node agents run.
fn rolls_workloads(step: &PlannedStep) -> bool {
    step.action.arguments().may_roll_workloads()
}

/// Every node agent pod in the cluster (label `NODE_AGENT_SELECTOR`); the error says what could
/// not be listed. The verification and the pre-flight's version check both read them.
pub async fn node_agent_pods(client: &kube::Client) -> Result<kube::core::ObjectList<Pod>, String> {
    let pods: kube::Api<Pod> = kube::Api::all(client.clone());
    pods.list(&kube::api::ListParams::default().labels(NODE_AGENT_SELECTOR))
        .await
        .map_err(|error| {
            format!(
                "cannot list the node agent pods (`{NODE_AGENT_SELECTOR}`): {}",
                crate::errors::error_chain(&error)
            )
        })
}

/// Whether every node agent pod runs `version`: `Ok` with how many, or `Err` naming those that
/// do not (pod, node, version; past twenty they are counted unless `limit` says all) or saying why
/// that could not be read.
pub async fn check_version(
    client: &kube::Client,
    version: &str,
    limit: &Limit,
) -> Result<String, String> {
    let list = node_agent_pods(client).await?;
    if list.items.is_empty() {
        return Err(format!(
            "no node agent pods found (label `{NODE_AGENT_SELECTOR}`), so their version is unknown"
        ));
    }
    let mut behind: Vec<String> = Vec::new();
    for pod in &list.items {
        let name = pod.metadata.name.as_deref().unwrap_or("?");
        let node = pod
            .spec
            .as_ref()
            .and_then(|spec| spec.node_name.as_deref())
            .unwrap_or("no node yet");
        let image = agent_image(pod);
        let tag = image_tag(&image);
        let current = tag == version || tag.starts_with(&format!("{version}-"));
        if !current {
            behind.push(format!(
                "pod `{name}` on node `{node}` runs `{}`",
                match tag {
                    "" => image.as_str(),
                    tag => tag,
                }
            ));
        }
    }
    match behind.is_empty() {
        true => Ok(format!("all {} node agent pod(s) run it", list.items.len())),
        false => Err(format!(
            "{} of {} node agent pod(s) do not: {}",
            behind.len(),
            list.items.len(),
            listing::inline(&behind, limit)
        )),
    }
}

/// The image of a node agent pod's own container (`calico-node`, else its first container).
pub fn agent_image(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|spec| {
            spec.containers
                .iter()
                .find(|container| container.name == "calico-node")
                .or(spec.containers.first())
        })
        .and_then(|container| container.image.clone())
        .unwrap_or_default()
}

/// The tag of an image reference (`docker.io/calico/node:v3.29.2` → `v3.29.2`); empty without one.
pub fn image_tag(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.split_once(':').map(|(_, tag)| tag).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::image_tag;

    #[test]
    fn image_tags_are_read_after_the_last_path_segment() {
        assert_eq!(image_tag("docker.io/calico/node:v3.29.2"), "v3.29.2");
        assert_eq!(image_tag("registry:5000/calico/node:v3.28.0"), "v3.28.0");
        assert_eq!(image_tag("registry:5000/calico/node"), "");
        assert_eq!(
            image_tag("quay.io/calico/node:v3.29.2@sha256:0123"),
            "v3.29.2"
        );
    }
}
