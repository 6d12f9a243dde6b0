//! Hand edits of an installed manifest found for the operator: `upgrade plan` compares the installed
//! release's `calico.yaml` (from the mirror), the objects it made as the Kubernetes test server
//! holds them, and the new `calico.yaml`, and carries exactly the hand edits into `upgrade.yaml`.
//! The test server fills no defaults, so the install here is stored as a real API server stores
//! it: with status, server metadata, pod-template and container defaults and rollout annotations.
//! Also: a cluster changed after the plan makes it stale, `--manifest-overlay` combines (and wins),
//! `--no-manifest-edits` turns discovery off.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::common::*;
use crate::exec_common::text;
use crate::support::KubeApiServer;
use crate::support::snapshot::netctl_snapshot;

const GATE: &str = "manifest-upgrade/reapply-local-changes";

/// `object` as a real API server holds it after `kubectl apply` and a rollout.
fn as_served(mut object: Value) -> Value {
    let metadata = &mut object["metadata"];
    metadata["generation"] = json!(2);
    metadata["managedFields"] =
        json!([{"manager": "kubectl-client-side-apply", "operation": "Update"}]);
    metadata["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json!("{}");
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    if kind == "DaemonSet" || kind == "Deployment" {
        let annotation = match kind.as_str() {
            "DaemonSet" => "deprecated.daemonset.template.generation",
            _ => "deployment.kubernetes.io/revision",
        };
        object["metadata"]["annotations"][annotation] = json!("2");
        object["status"] = json!({"observedGeneration": 2, "numberReady": 2});
        let spec = &mut object["spec"];
        spec["revisionHistoryLimit"] = json!(10);
        if kind == "DaemonSet" {
            spec["updateStrategy"]["rollingUpdate"]["maxSurge"] = json!(0);
        } else {
            spec["progressDeadlineSeconds"] = json!(600);
            spec["strategy"] = json!({"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}});
        }
        spec["template"]["metadata"]["creationTimestamp"] = Value::Null;
        let pod = &mut spec["template"]["spec"];
        pod["dnsPolicy"] = json!("ClusterFirst");
        pod["schedulerName"] = json!("default-scheduler");
        pod["securityContext"] = json!({});
        pod["restartPolicy"] = json!("Always");
        pod["terminationGracePeriodSeconds"] = json!(30);
        if let Some(account) = pod.get("serviceAccountName").cloned() {
            pod["serviceAccount"] = account;
        }
        for container in pod["containers"].as_array_mut().unwrap() {
            container["terminationMessagePath"] = json!("/dev/termination-log");
            container["terminationMessagePolicy"] = json!("File");
            container["imagePullPolicy"] = json!("IfNotPresent");
            container["resources"] = json!({});
        }
    }
    object
}

/// A v3.25.2 `calico.yaml` install with two hand edits (an env var on `calico-node`, `veth_mtu`),
/// stored as a real API server holds it; both releases' `calico.yaml` are in the mirror.
fn edited_cluster() -> (KubeApiServer, Operator, PathBuf) {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    let released = manifest_for("v3.25.2", "kubernetes");
    for document in released.split("\n---\n") {
        let mut object = as_served(netctl::yaml::from_str(document).unwrap());
        match object["kind"].as_str() {
            Some("ConfigMap") => object["data"]["veth_mtu"] = json!("1440"),
            Some("DaemonSet") => object["spec"]["template"]["spec"]["containers"][0]["env"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "IP_AUTODETECTION_METHOD", "value": "interface=eth0"})),
            _ => {}
        }
        kube.put(object);
    }
    let operator = kubernetes_operator(&kube);
    mirror(&operator, "v3.25.2", "calico.yaml", &released);
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "calico.yaml",
        &manifest_for("v3.29.0", "kubernetes"),
    );
    (kube, operator, mirror)
}

fn discovered_overlay(plan: &Value) -> Value {
    plan["manifest_discovery"][0]["overlay"].clone()
}

/// The two edits, as the overlay discovery makes of them.
fn the_two_edits() -> Value {
    json!([
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "calico-config", "namespace": "kube-system"},
         "data": {"veth_mtu": "1440"}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": {"name": "calico-node", "namespace": "kube-system"},
         "spec": {"template": {"spec": {"containers": [{"name": "calico-node", "env": [
             {"name": "IP_AUTODETECTION_METHOD", "value": "interface=eth0"}]}]}}}}
    ])
}

#[test]
fn hand_edits_are_found_in_the_cluster_reviewed_and_carried_into_upgrade_yaml() {
    let (kube, operator, mirror) = edited_cluster();
    let mirror_arg = mirror.to_str().unwrap();
    let (plan_file, plan) = plan(&operator, "v3.29.0", &["--mirror-dir", mirror_arg]);
    // Exactly the two hand edits; nothing the server set.
    assert_eq!(discovered_overlay(&plan), the_two_edits(), "{plan:#}");
    let record = &plan["manifest_discovery"][0];
    assert_eq!(record["edits"].as_array().unwrap().len(), 2, "{record:#}");
    assert!(record.get("undecided").is_none(), "{record:#}");
    assert_eq!(record["live"].as_array().unwrap().len(), 4, "{record:#}");
    // The step carries them (under the digest) and the review gate stays.
    assert_eq!(plan["steps"][1]["with"]["overlay"], the_two_edits());
    assert!(step_ids(&plan).contains(&GATE.to_string()), "{plan:#}");
    let diff = plan["manifest_previews"][0]["diff"].as_str().unwrap();
    assert!(diff.contains("+  veth_mtu: '1440'"), "{diff}");
    assert!(
        diff.contains("+        - name: IP_AUTODETECTION_METHOD"),
        "{diff}"
    );

    // What the operator reads.
    let shown = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.29.0",
            "--mirror-dir",
            mirror_arg,
        ],
        &[],
    );
    assert_success(&shown, "upgrade plan");
    snapshot(
        &operator,
        "manifest_edit_discovery_plan",
        &text(&shown.stdout),
    );

    // The run stops at the review gate; approved, it applies the new release with the edits.
    let stopped = operator.apply(&Apply::plan(&plan_file).mirror(mirror_arg));
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let files = operator.home().join("state/files");
    let applied = std::fs::read_to_string(files.join("upgrade.yaml")).unwrap();
    assert!(applied.contains("IP_AUTODETECTION_METHOD"), "{applied}");
    assert!(applied.contains("veth_mtu: '1440'"), "{applied}");
    assert!(
        applied.contains("docker.io/calico/node:v3.29.0"),
        "{applied}"
    );
    let resume = Apply::resume()
        .mirror(mirror_arg)
        .approve(GATE)
        .approve("manifest-upgrade/apply-manifest");
    apply_killed_at(&operator, &resume, "manifest-upgrade/apply-manifest:after");
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    let container = &node["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "docker.io/calico/node:v3.29.0");
    assert_eq!(
        container["env"][2],
        json!({"name": "IP_AUTODETECTION_METHOD", "value": "interface=eth0"})
    );
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(config["data"]["veth_mtu"], "1440");
}

#[test]
fn a_cluster_edited_after_the_plan_makes_it_stale_with_nothing_written() {
    let (kube, operator, mirror) = edited_cluster();
    let mirror_arg = mirror.to_str().unwrap();
    let (plan_file, _) = plan(&operator, "v3.29.0", &["--mirror-dir", mirror_arg]);
    let mut config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    config["data"]["veth_mtu"] = json!("1400");
    kube.put(config);
    // A controller's status update alone is no change.
    let mut node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    node["status"]["numberReady"] = json!(1);
    kube.put(node);
    let before = cluster_objects(&kube);
    let refused = operator.apply(&Apply::plan(&plan_file).mirror(mirror_arg).yes());
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    netctl_snapshot!(&refused);
    assert_eq!(cluster_objects(&kube), before);
    assert!(!operator.home().join("state/files/upgrade.yaml").exists());

    // The status update alone does not make a fresh plan stale.
    let (plan_file, _) = plan(&operator, "v3.29.0", &["--mirror-dir", mirror_arg]);
    let mut node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    node["status"]["numberReady"] = json!(2);
    kube.put(node);
    let dry_run = operator.apply(&Apply::plan(&plan_file).mirror(mirror_arg).dry_run());
    assert_success(&dry_run, "upgrade apply --dry-run");
}

#[test]
fn an_explicit_overlay_combines_with_the_discovered_edits_and_wins() {
    let (_kube, operator, mirror) = edited_cluster();
    operator.netctl.write_file(
        "edits.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-config\n  namespace: kube-system\ndata:\n  veth_mtu: \"1500\"\n  typha_service_name: none\n",
    );
    let overlay = operator.home().join("edits.yaml");
    let mirror_arg = mirror.to_str().unwrap();
    let (_, plan) = plan(
        &operator,
        "v3.29.0",
        &[
            "--mirror-dir",
            mirror_arg,
            "--manifest-overlay",
            overlay.to_str().unwrap(),
        ],
    );
    assert_eq!(discovered_overlay(&plan), the_two_edits());
    let documents = plan["steps"][1]["with"]["overlay"].as_array().unwrap();
    assert_eq!(documents.len(), 3, "discovered first, then the file's");
    assert_eq!(documents[2]["data"]["veth_mtu"], "1500");
    let diff = plan["manifest_previews"][0]["diff"].as_str().unwrap();
    assert!(diff.contains("+  veth_mtu: '1500'"), "{diff}");
    assert!(diff.contains("+  typha_service_name: none"), "{diff}");
    assert!(!diff.contains("'1440'"), "{diff}");
}

#[test]
fn no_manifest_edits_turns_discovery_off() {
    let (_kube, operator, mirror) = edited_cluster();
    let (_, plan) = plan(
        &operator,
        "v3.29.0",
        &[
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--no-manifest-edits",
        ],
    );
    assert!(plan.get("manifest_discovery").is_none(), "{plan:#}");
    assert!(
        plan["steps"][0]["with"].get("overlay").is_none(),
        "{plan:#}"
    );
    assert!(!step_ids(&plan).contains(&GATE.to_string()), "{plan:#}");
}

#[test]
fn an_unedited_install_needs_no_edits_gate_and_an_unreadable_one_keeps_it() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    let released = manifest_for("v3.25.2", "kubernetes");
    for document in released.split("\n---\n") {
        kube.put(as_served(netctl::yaml::from_str(document).unwrap()));
    }
    let operator = kubernetes_operator(&kube);
    let new = mirror(
        &operator,
        "v3.29.0",
        "calico.yaml",
        &manifest_for("v3.29.0", "kubernetes"),
    );
    // The installed release's manifest is not in the mirror: nothing compared, the gate stays.
    let (_, unread) = plan(
        &operator,
        "v3.29.0",
        &["--mirror-dir", new.to_str().unwrap()],
    );
    assert!(step_ids(&unread).contains(&GATE.to_string()), "{unread:#}");
    let reason = unread["manifest_discovery"][0]["unavailable"]
        .as_str()
        .unwrap();
    assert!(reason.contains("v3.25.2/manifests/calico.yaml"), "{reason}");

    mirror(&operator, "v3.25.2", "calico.yaml", &released);
    let (_, plan) = plan(
        &operator,
        "v3.29.0",
        &["--mirror-dir", new.to_str().unwrap()],
    );
    assert!(!step_ids(&plan).contains(&GATE.to_string()), "{plan:#}");
    let record = &plan["manifest_discovery"][0];
    assert!(record.get("overlay").is_none(), "{record:#}");
    assert_eq!(record["live"].as_array().unwrap().len(), 4);
}

/// An image moved to a private registry by hand, where upstream moves the image too: discovery
/// cannot tell which should win, says so in the plan and carries nothing for it.
#[test]
fn a_field_changed_by_hand_and_by_upstream_is_left_undecided() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    let released = manifest_for("v3.25.2", "kubernetes");
    install(
        &kube,
        &released.replace(
            "image: docker.io/calico/kube-controllers:v3.25.2",
            "image: registry.example.com/calico/kube-controllers:v3.25.2",
        ),
    );
    let operator = kubernetes_operator(&kube);
    mirror(&operator, "v3.25.2", "calico.yaml", &released);
    let new = mirror(
        &operator,
        "v3.29.0",
        "calico.yaml",
        &manifest_for("v3.29.0", "kubernetes"),
    );
    let (_, plan) = plan(
        &operator,
        "v3.29.0",
        &["--mirror-dir", new.to_str().unwrap()],
    );
    let record = &plan["manifest_discovery"][0];
    assert!(record.get("overlay").is_none(), "{record:#}");
    assert_eq!(
        record["undecided"],
        json!([{
            "object": "`apps/v1 Deployment kube-system/calico-kube-controllers`",
            "field": "spec.template.spec.containers[calico-kube-controllers].image",
            "released": "`docker.io/calico/kube-controllers:v3.25.2`",
            "live": "`registry.example.com/calico/kube-controllers:v3.25.2`",
            "new": "`docker.io/calico/kube-controllers:v3.29.0`"
        }])
    );
    assert!(step_ids(&plan).contains(&GATE.to_string()), "{plan:#}");
    let shown = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.29.0",
            "--mirror-dir",
            new.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&shown, "upgrade plan");
    assert!(
        text(&shown.stdout).contains("? `apps/v1 Deployment kube-system/calico-kube-controllers` spec.template.spec.containers[calico-kube-controllers].image: undecided, not carried"),
        "{}",
        text(&shown.stdout)
    );
}
