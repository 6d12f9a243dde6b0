//! `kube.restart` and `kube.wait-rollout`: restart a workload's pods the way `kubectl rollout
//! restart` does (the `restartedAt` value is the run's start time, so a resumed run does not restart
//! twice), and wait until a DaemonSet, Deployment or set of pods has rolled out (also a
//! postcondition).
//!
//! As every `kube.*` action, each first describes its requests, so a dry-run stays total without a
//! cluster.

use std::time::{Duration, Instant};

use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

use super::requests::body_size;
use super::{ApiAccess, cluster, without_cluster};
use super::{
    KubeActionError, api_path, described, done, object_api, plural, request_error, with_lines,
};
use crate::exec::actions::{Context, Held, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::action::{KubeObject, KubeRestart, KubeWaitRollout};

/// How often a rollout wait reads the cluster again.
const ROLLOUT_POLL: Duration = Duration::from_millis(500);

/// `kube.restart`. The `restartedAt` value is the run's start time; outside an upgrade run (a
/// dry-run), the time now stands in.
impl Perform for KubeRestart {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let restarted_at = context
            .run_started_at
            .clone()
            .unwrap_or_else(crate::exec::clock::now_rfc3339);
        match cluster(context, action) {
            Ok(client) => Ok(restart(client, self, &restarted_at, mode).await?),
            Err(_) => without_cluster(action, mode, describe_restart(self, &restarted_at)),
        }
    }

    /// Idempotent within a run: the value is the run's start time (see `Context`).
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let (namespace, name) = (Some(&self.namespace), Some(&self.name));
        let verbs = &["get", "patch"];
        let workload = ApiAccess::of_type("apps/v1", &self.kind, namespace, name, verbs);
        Some(vec![workload])
    }
}

/// `kube.wait-rollout`; as a postcondition, the rollout is complete now.
impl Perform for KubeWaitRollout {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        match cluster(context, action) {
            Ok(client) => Ok(wait_rollout(client, self, mode, &context.progress).await?),
            Err(_) => without_cluster(action, mode, describe_wait(self)),
        }
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        Ok(rolled_out(cluster(context, action)?, self).await?)
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    /// The workload (one, or a collection by selector) and its pods.
    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let namespace = Some(&self.namespace);
        let pods = ApiAccess::of_type("v1", "Pod", namespace, None, &["list"]);
        if self.kind == "Pod" {
            return Some(vec![pods]);
        }
        let verbs: &[&'static str] = match self.name {
            Some(_) => &["get"],
            None => &["list"],
        };
        let name = self.name.as_ref();
        let workload = ApiAccess::of_type("apps/v1", &self.kind, namespace, name, verbs);
        Some(vec![workload, pods])
    }
}

pub fn describe_wait(wait: &KubeWaitRollout) -> Vec<String> {
    let api_version = if wait.kind == "Pod" { "v1" } else { "apps/v1" };
    let target = match (&wait.name, &wait.selector) {
        (Some(name), _) => api_path(api_version, &wait.kind, Some(&wait.namespace), Some(name)),
        (None, Some(selector)) => format!(
            "{}?labelSelector={selector}",
            api_path(api_version, &wait.kind, Some(&wait.namespace), None)
        ),
        (None, None) => api_path(api_version, &wait.kind, Some(&wait.namespace), None),
    };
    vec![format!(
        "would GET {target} until rolled out{} (timeout {})",
        wait.ready
            .as_ref()
            .map(|ready| format!(" with {ready} containers ready"))
            .unwrap_or_default(),
        wait.timeout
    )]
}

/// The pod-template annotation `kubectl rollout restart` sets.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

fn restart_body(restarted_at: &str) -> Value {
    json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: restarted_at}}}}})
}

/// The request `kube.restart` sends, with the value of the run (`restarted_at`).
pub fn describe_restart(restart: &KubeRestart, restarted_at: &str) -> Vec<String> {
    let body = restart_body(restarted_at);
    vec![format!(
        "would PATCH {} (application/strategic-merge-patch+json, {} bytes): {body} (skipped if the pod template already has this value)",
        api_path(
            "apps/v1",
            &restart.kind,
            Some(&restart.namespace),
            Some(&restart.name)
        ),
        body_size(&body),
    )]
}

/// `kube.restart`: `kubectl rollout restart` — a strategic merge patch of the pod template's
/// `restartedAt` annotation, so the controller replaces every pod. When the annotation already holds
/// this run's value (the restart was done before an interruption), nothing is sent.
pub async fn restart(
    client: &kube::Client,
    restart: &KubeRestart,
    restarted_at: &str,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let description = describe_restart(restart, restarted_at);
    let object = KubeObject {
        api_version: "apps/v1".to_string(),
        kind: restart.kind.clone(),
        name: restart.name.clone(),
        namespace: Some(restart.namespace.clone()),
    };
    let api = object_api(client, &object).await?;
    let current = api
        .get(&restart.name)
        .await
        .map_err(|error| request_error(format!("read of {object}"), error))?;
    let value = serde_json::to_value(&current).unwrap_or_default();
    let annotation = value
        .pointer("/spec/template/metadata/annotations")
        .and_then(|annotations| annotations.get(RESTARTED_AT))
        .and_then(Value::as_str);
    if annotation == Some(restarted_at) {
        let summary = format!("{object} was already restarted by this run ({restarted_at})");
        return Ok(match mode {
            RunMode::DryRun => with_lines(described(description), vec![format!("  {summary}")]),
            RunMode::Execute => done(summary, json!({ "object": object.to_string() })),
        });
    }
    let params = PatchParams {
        dry_run: mode == RunMode::DryRun,
        ..PatchParams::default()
    };
    let written = api
        .patch(
            &restart.name,
            &params,
            &Patch::Strategic(restart_body(restarted_at)),
        )
        .await
        .map_err(|error| request_error(format!("restart of {object}"), error))?;
    if mode == RunMode::DryRun {
        return Ok(with_lines(
            described(description),
            vec![format!("  server dry-run accepted the restart of {object}")],
        ));
    }
    Ok(done(
        format!("restarted {object} (restartedAt {restarted_at})"),
        json!({
            "object": object.to_string(),
            "restartedAt": restarted_at,
            "generation": written.metadata.generation,
        }),
    ))
}

/// Expected ready containers per pod, from `N/M`.
fn parse_ready(text: &str) -> Result<(usize, usize), KubeActionError> {
    let invalid = || KubeActionError::InvalidReadyCount(text.to_string());
    let (ready, total) = text.split_once('/').ok_or_else(invalid)?;
    Ok((
        ready.trim().parse().map_err(|_| invalid())?,
        total.trim().parse().map_err(|_| invalid())?,
    ))
}

/// One look at a rollout: whether it is done, and the counts to report.
#[derive(Debug, Clone, PartialEq)]
struct RolloutState {
    done: bool,
    report: String,
}

/// Whether a DaemonSet or Deployment has rolled out: the controller saw the latest spec and every
/// desired replica is updated and available. Returns `(done, report, pod selector)`.
fn workload_state(kind: &str, object: &Value) -> (bool, String, Option<String>) {
    let number = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let generation = number("/metadata/generation");
    let observed = number("/status/observedGeneration");
    let (desired, updated, available) = if kind == "DaemonSet" {
        (
            number("/status/desiredNumberScheduled"),
            number("/status/updatedNumberScheduled"),
            number("/status/numberAvailable"),
        )
    } else {
        (
            object
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1),
            number("/status/updatedReplicas"),
            number("/status/availableReplicas"),
        )
    };
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let done = observed >= generation && updated == desired && available == desired;
    let report = format!(
        "{kind} {name}: {updated}/{desired} updated, {available}/{desired} available{}",
        if observed < generation {
            " (controller has not seen the latest spec yet)"
        } else {
            ""
        }
    );
    let selector = object["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|labels| {
            labels
                .iter()
                .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|selector| !selector.is_empty());
    (done, report, selector)
}

/// Whether every pod runs with the expected containers ready.
fn pods_state(pods: &[Value], expected: Option<(usize, usize)>) -> (bool, String) {
    let mut good = 0;
    let mut details = Vec::new();
    for pod in pods {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let phase = pod["status"]["phase"].as_str().unwrap_or("Pending");
        let statuses = pod["status"]["containerStatuses"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let total = statuses.len().max(
            pod["spec"]["containers"]
                .as_array()
                .map(Vec::len)
                .unwrap_or(0),
        );
        let ready = statuses
            .iter()
            .filter(|status| status["ready"].as_bool() == Some(true))
            .count();
        let ok = phase == "Running"
            && match expected {
                Some((want_ready, want_total)) => ready == want_ready && total == want_total,
                None => ready == total && total > 0,
            };
        if ok {
            good += 1;
        } else {
            details.push(format!("{name} {phase} {ready}/{total}"));
        }
    }
    let mut report = format!("{good}/{} pods running and ready", pods.len());
    if !details.is_empty() {
        report.push_str(&format!(" (waiting for {})", details.join(", ")));
    }
    (!pods.is_empty() && good == pods.len(), report)
}

/// Reads the rollout once.
async fn rollout_state(
    client: &kube::Client,
    wait: &KubeWaitRollout,
    expected: Option<(usize, usize)>,
) -> Result<RolloutState, KubeActionError> {
    let target = describe_target(wait);
    let read = |error| request_error(format!("read of {target}"), error);
    let pods: Api<DynamicObject> = {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods");
        Api::namespaced_with(client.clone(), &wait.namespace, &resource)
    };
    let mut reports = Vec::new();
    let mut done = true;
    let mut selectors = Vec::new();
    if wait.kind == "Pod" {
        selectors.push(wait.selector.clone().unwrap_or_default());
    } else {
        let (group, version) = ("apps", "v1");
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, &wait.kind),
            &plural(&wait.kind),
        );
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &wait.namespace, &resource);
        let objects = match &wait.name {
            Some(name) => vec![api.get(name).await.map_err(read)?],
            None => {
                let mut params = ListParams::default();
                if let Some(selector) = &wait.selector {
                    params = params.labels(selector);
                }
                api.list(&params).await.map_err(read)?.items
            }
        };
        if objects.is_empty() {
            done = false;
            reports.push(format!("no {} found yet", plural(&wait.kind)));
        }
        for object in objects {
            let value = serde_json::to_value(&object).unwrap_or_default();
            let (object_done, report, selector) = workload_state(&wait.kind, &value);
            done &= object_done;
            reports.push(report);
            if let Some(selector) = selector {
                selectors.push(selector);
            }
        }
    }
    for selector in selectors {
        let mut params = ListParams::default();
        if !selector.is_empty() {
            params = params.labels(&selector);
        }
        let list = pods.list(&params).await.map_err(read)?;
        let values: Vec<Value> = list
            .items
            .iter()
            .map(|pod| serde_json::to_value(pod).unwrap_or_default())
            .collect();
        let (pods_done, report) = pods_state(&values, expected);
        done &= pods_done;
        reports.push(report);
    }
    Ok(RolloutState {
        done,
        report: reports.join("; "),
    })
}

fn describe_target(wait: &KubeWaitRollout) -> String {
    match (&wait.name, &wait.selector) {
        (Some(name), _) => format!("{} {}/{name}", wait.kind, wait.namespace),
        (None, Some(selector)) => format!(
            "{} in `{}` matching `{selector}`",
            plural(&wait.kind),
            wait.namespace
        ),
        (None, None) => format!("{} in `{}`", plural(&wait.kind), wait.namespace),
    }
}

/// `kube.wait_rollout`: polls until rolled out, reporting the counts whenever they change.
pub async fn wait_rollout(
    client: &kube::Client,
    wait: &KubeWaitRollout,
    mode: RunMode,
    progress: &crate::exec::progress::Progress,
) -> Result<Outcome, KubeActionError> {
    let expected = wait.ready.as_deref().map(parse_ready).transpose()?;
    let target = describe_target(wait);
    if mode == RunMode::DryRun {
        let state = rollout_state(client, wait, expected).await?;
        return Ok(with_lines(
            described(describe_wait(wait)),
            vec![format!("  now: {}", state.report)],
        ));
    }
    let started = Instant::now();
    let mut reporter = crate::exec::progress::WaitReporter::new(progress, target.clone());
    loop {
        let state = rollout_state(client, wait, expected).await?;
        if !state.done {
            reporter.report(&state.report);
        }
        if state.done {
            return Ok(done(
                format!("{target} rolled out: {}", state.report),
                json!({ "target": target, "status": state.report }),
            ));
        }
        if started.elapsed() >= wait.timeout.0 {
            return Err(KubeActionError::RolloutTimeout {
                target,
                timeout: humantime::format_duration(wait.timeout.0).to_string(),
                last: state.report,
            });
        }
        tokio::time::sleep(ROLLOUT_POLL).await;
    }
}

/// Whether a rollout is complete now (a `verify` postcondition).
pub async fn rolled_out(
    client: &kube::Client,
    wait: &KubeWaitRollout,
) -> Result<bool, KubeActionError> {
    let expected = wait.ready.as_deref().map(parse_ready).transpose()?;
    Ok(rollout_state(client, wait, expected).await?.done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_needs_updated_available_replicas_and_ready_pods() {
        let daemon_set = json!({"metadata": {"name": "calico-node", "generation": 2},
            "spec": {"selector": {"matchLabels": {"k8s-app": "calico-node"}}},
            "status": {"observedGeneration": 2, "desiredNumberScheduled": 2,
                       "updatedNumberScheduled": 1, "numberAvailable": 2}});
        let (done, report, selector) = workload_state("DaemonSet", &daemon_set);
        assert!(!done);
        assert_eq!(report, "DaemonSet calico-node: 1/2 updated, 2/2 available");
        assert_eq!(selector.as_deref(), Some("k8s-app=calico-node"));

        let pod = |phase: &str, ready: [bool; 2]| {
            json!({"metadata": {"name": "p"},
            "status": {"phase": phase, "containerStatuses": [{"ready": ready[0]}, {"ready": ready[1]}]}})
        };
        assert!(pods_state(&[pod("Running", [true, true])], None).0);
        assert!(!pods_state(&[pod("Running", [true, false])], None).0);
        assert!(pods_state(&[pod("Running", [true, false])], Some((1, 2))).0);
        assert!(!pods_state(&[pod("Pending", [true, true])], None).0);
        assert!(!pods_state(&[], None).0);
        assert_eq!(parse_ready("2/2").unwrap(), (2, 2));
        assert!(parse_ready("two").is_err());
    }
}
