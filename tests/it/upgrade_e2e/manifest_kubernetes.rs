//! Single-manifest installs on the Kubernetes datastore: `calico.yaml` v3.25 → v3.29 (with a
//! manifest overlay whose diff the plan shows, refused overlays, a manifest changed since the
//! reviewed plan, hand edits made at the edits gate) and `canal.yaml`.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::common::*;
use crate::exec_common::text;
use crate::support::KubeApiServer;

#[test]
fn kubernetes_manifest_install_from_v3_25_to_v3_29() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    install(&kube, &manifest_for("v3.25.2", "kubernetes"));
    let operator = kubernetes_operator(&kube);
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "calico.yaml",
        &manifest_for("v3.29.0", "kubernetes"),
    );
    let (plan_file, plan) = plan(&operator, "v3.29.0", &[]);
    assert_eq!(plan["facts"]["datastore_type"]["value"], "kubernetes");
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(plan["facts"]["manifest_flavor"]["value"], "calico");

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        node["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.29.0"
    );
    let owners = kube.owners("apps/v1", "daemonsets", "kube-system", "calico-node");
    assert!(
        owners.values().any(|manager| manager == "netctl"),
        "{owners:?}"
    );
    // Until the node agents report the new version, the run cannot finish.
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");

    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert!(status["lock"].is_null(), "{status}");
    let steps: Vec<(String, String)> = status["checkpoint"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            (
                step["id"].as_str().unwrap().to_string(),
                step["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        steps.len() == 8 && steps.iter().all(|(_, state)| state == "succeeded"),
        "{steps:?}"
    );
}

/// The hand edits of the `kubernetes_manifest_*` installs: an env var on the node container and a
/// ConfigMap value.
const MANIFEST_OVERLAY: &str = r#"# Our edits of calico.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: calico-node
  namespace: kube-system
spec:
  template:
    spec:
      containers:
        - name: calico-node
          env:
            - name: IP_AUTODETECTION_METHOD
              value: interface=eth0
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: calico-config
  namespace: kube-system
data:
  veth_mtu: "1440"
"#;

/// A Kubernetes-datastore manifest install at v3.25.2 with `calico.yaml` v3.29.0 in the mirror.
pub(super) fn kubernetes_manifest_cluster() -> (KubeApiServer, Operator, PathBuf) {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    install(&kube, &manifest_for("v3.25.2", "kubernetes"));
    let operator = kubernetes_operator(&kube);
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "calico.yaml",
        &manifest_for("v3.29.0", "kubernetes"),
    );
    (kube, operator, mirror)
}

#[test]
fn kubernetes_manifest_install_with_an_overlay_shows_the_diff_and_carries_the_edits() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    operator.netctl.write_file("edits.yaml", MANIFEST_OVERLAY);
    let overlay = operator.home().join("edits.yaml");
    let plan_file = operator.home().join("plan.json");
    let args = [
        "upgrade",
        "plan",
        "--to",
        "v3.29.0",
        "--manifest-overlay",
        overlay.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--out",
        plan_file.to_str().unwrap(),
    ];
    let output = operator.run(&args, &[]);
    assert_success(&output, "upgrade plan");
    snapshot(
        &operator,
        "kubernetes_manifest_overlay_plan",
        &text(&output.stdout),
    );
    // The saved plan carries the overlay in its step and the reviewed diff, both under the digest.
    let saved: Value = serde_json::from_slice(&std::fs::read(&plan_file).unwrap()).unwrap();
    let ids = step_ids(&saved);
    assert!(
        !ids.contains(&"manifest-upgrade/reapply-local-changes".to_string()),
        "no edits gate once the edits are stated: {ids:?}"
    );
    assert_eq!(
        saved["steps"][1]["with"]["overlay"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let diff = saved["manifest_previews"][0]["diff"].as_str().unwrap();
    assert!(diff.contains("+  veth_mtu: '1440'"), "{diff}");
    assert!(
        diff.contains("+        - name: IP_AUTODETECTION_METHOD"),
        "{diff}"
    );

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    // The cluster carries the new release and the edits.
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    let container = &node["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "docker.io/calico/node:v3.29.0");
    assert_eq!(
        container["env"],
        json!([
            {"name": "DATASTORE_TYPE", "value": "kubernetes"},
            {"name": "ETCD_ENDPOINTS", "valueFrom": {"configMapKeyRef": {"name": "calico-config", "key": "etcd_endpoints"}}},
            {"name": "IP_AUTODETECTION_METHOD", "value": "interface=eth0"}
        ])
    );
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(config["data"]["veth_mtu"], "1440");
    assert_eq!(config["data"]["calico_backend"], "bird");
    // The download is kept as released beside the overlaid manifest that was applied.
    let files = operator.home().join("state/files");
    assert_eq!(
        std::fs::read_to_string(files.join("upgrade.yaml.original")).unwrap(),
        manifest_for("v3.29.0", "kubernetes")
    );
    let applied = std::fs::read_to_string(files.join("upgrade.yaml")).unwrap();
    assert!(applied.contains("IP_AUTODETECTION_METHOD"), "{applied}");

    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");
    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(files.join("upgrade.yaml")).unwrap(),
        applied,
        "a resume keeps the overlaid manifest it applied"
    );
}

/// Regression: with neither `--manifest-overlay` nor `--no-manifest-edits` the plan keeps a gate
/// that asks for the hand edits to be made in `upgrade.yaml` in the state directory. An unattended
/// run stops there; the operator edits the file and resumes. The resume once found the file's digest
/// changed, downloaded it again and applied the release as published, edits silently lost.
#[test]
fn kubernetes_manifest_edits_made_at_the_gate_are_kept_on_resume_and_applied() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    let (plan_file, plan) = plan(&operator, "v3.29.0", &[]);
    let gate = "manifest-upgrade/reapply-local-changes";
    assert!(step_ids(&plan).contains(&gate.to_string()), "{plan}");
    let mirror = mirror.to_str().unwrap();
    let stopped = operator.apply(&Apply::plan(&plan_file).mirror(mirror));
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    assert_eq!(
        status_json(&operator)["checkpoint"]["run"],
        json!({"state": "waiting-at-gate", "step": gate})
    );

    // What the gate asks for: the same edits, made in the downloaded manifest.
    let file = operator.home().join("state/files/upgrade.yaml");
    let downloaded = std::fs::read_to_string(&file).unwrap();
    assert_eq!(downloaded, manifest_for("v3.29.0", "kubernetes"));
    let edited = downloaded.replace("veth_mtu: \"0\"", "veth_mtu: \"1440\"");
    assert_ne!(edited, downloaded);
    std::fs::write(&file, &edited).unwrap();

    let resume = Apply::resume()
        .mirror(mirror)
        .approve(gate)
        .approve("manifest-upgrade/apply-manifest");
    apply_killed_at(&operator, &resume, "manifest-upgrade/apply-manifest:after");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        edited,
        "the resume keeps the edited manifest"
    );
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(config["data"]["veth_mtu"], "1440", "the edits are applied");
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        node["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.29.0"
    );

    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");
    resume_to_the_end(&operator, mirror);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(config["data"]["veth_mtu"], "1440");

    // Reviewers see that the applied manifest is not the download: its digest is in the checkpoint
    // of the apply step, and the step's summary (and journal entry) says so.
    let status = status_json(&operator);
    let checkpoint = &status["checkpoint"];
    assert_eq!(checkpoint["run"]["state"], "completed", "{status}");
    let step = |id: &str| {
        checkpoint["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|step| step["id"] == id)
            .unwrap_or_else(|| panic!("no step `{id}`: {status}"))
            .clone()
    };
    let download = step("manifest-upgrade/download-manifest");
    let apply = step("manifest-upgrade/apply-manifest");
    let downloaded_digest = sha256(downloaded.as_bytes());
    let edited_digest = sha256(edited.as_bytes());
    assert_eq!(download["download_digest"], downloaded_digest.as_str());
    assert_eq!(apply["applied_digest"], edited_digest.as_str(), "{apply}");
    let summary = apply["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(
            "`upgrade.yaml` was edited after step `manifest-upgrade/download-manifest` wrote it ({downloaded_digest}); applied as edited ({edited_digest})"
        )),
        "{summary}"
    );
    let journal = std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap();
    let restored: Vec<Value> = journal
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["event"] == "restored")
        .collect();
    assert!(
        !restored.is_empty()
            && restored.iter().all(|entry| {
                entry["step"] == "manifest-upgrade/download-manifest"
                    && entry["summary"]
                        .as_str()
                        .unwrap()
                        .contains("as edited since the download")
            }),
        "{restored:?}"
    );
    let text_status = operator.run(&["upgrade", "status"], &[]);
    assert_success(&text_status, "upgrade status");
    assert!(
        text(&text_status.stdout).contains("applied as edited"),
        "{}",
        text(&text_status.stdout)
    );
}

/// `upgrade plan --manifest-overlay` pins the manifest it showed the diff of; when the file at the
/// URL changes before the maintenance window (a re-tagged release, an updated mirror), `apply`
/// refuses it, naming both digests, with nothing written or applied.
#[test]
fn a_manifest_changed_since_the_reviewed_plan_is_refused_with_nothing_written() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    operator.netctl.write_file("edits.yaml", MANIFEST_OVERLAY);
    let overlay = operator.home().join("edits.yaml");
    let plan_file = operator.home().join("plan.json");
    let planned = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.29.0",
            "--manifest-overlay",
            overlay.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--out",
            plan_file.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&planned, "upgrade plan");
    let saved: Value = serde_json::from_slice(&std::fs::read(&plan_file).unwrap()).unwrap();
    let reviewed = saved["manifest_previews"][0]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(saved["steps"][1]["with"]["sha256"], reviewed.as_str());
    assert!(
        text(&planned.stdout).contains(&format!("(pinned to the reviewed {reviewed})")),
        "{}",
        text(&planned.stdout)
    );

    // The mirror now serves another file under the same release tag.
    let retagged = manifest_for("v3.29.0", "kubernetes")
        .replace("calico_backend: bird", "calico_backend: vxlan");
    let mirror = self::mirror(&operator, "v3.29.0", "calico.yaml", &retagged);
    // The run's own checkpoint mirror (a ConfigMap) aside, nothing in the cluster may change.
    let workloads = |kube: &KubeApiServer| -> Vec<String> {
        cluster_objects(kube)
            .into_iter()
            .filter(|object| !object.contains(r#""app.kubernetes.io/managed-by":"netctl""#))
            .collect()
    };
    let objects_before = workloads(&kube);
    let output = operator.apply(&Apply::plan(&plan_file).mirror(&mirror).yes());
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let message = text(&output.stderr);
    let served = sha256(retagged.as_bytes());
    assert!(
        message.contains(&format!(
            "`https://{MANIFEST_HOST}/v3.29.0/manifests/calico.yaml` serves a manifest with digest {served}, not the {reviewed} the plan was reviewed with"
        )),
        "{message}"
    );
    assert!(
        message.contains("run `netctl upgrade plan` again and review the new diff"),
        "{message}"
    );
    let files = operator.home().join("state/files");
    assert!(!files.join("upgrade.yaml").exists(), "nothing is written");
    assert!(
        !files.join("upgrade.yaml.original").exists(),
        "nothing is written"
    );
    assert_eq!(objects_before, workloads(&kube), "no object changes");

    // A dry-run from the mirror says the same before the window.
    let dry = operator.apply(
        &Apply::plan(&plan_file)
            .mirror(&mirror)
            .dry_run()
            .discard_checkpoint(),
    );
    assert!(
        text(&dry.stdout).contains("not the sha256:")
            || text(&dry.stderr).contains("not the sha256:"),
        "stdout:\n{}\nstderr:\n{}",
        text(&dry.stdout),
        text(&dry.stderr)
    );
}

/// Plans that do not read the manifest keep working and say that it is not pinned.
#[test]
fn a_plan_without_an_overlay_says_the_manifest_is_not_pinned() {
    let (_kube, operator, _mirror) = kubernetes_manifest_cluster();
    let output = operator.run(
        &["upgrade", "plan", "--to", "v3.29.0", "--no-manifest-edits"],
        &[],
    );
    assert_success(&output, "upgrade plan");
    assert!(
        text(&output.stdout).contains(
            "(not pinned: not read at plan time; the run uses whatever the URL serves then)"
        ),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn a_manifest_overlay_that_does_not_fit_is_refused_with_nothing_written() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    let objects_before = cluster_objects(&kube);
    operator.netctl.write_file(
        "missing.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-settings\n  namespace: kube-system\ndata:\n  veth_mtu: \"1440\"\n",
    );
    operator
        .netctl
        .write_file("broken.yaml", "apiVersion: v1\nkind: [ConfigMap\n");
    let plan_file = operator.home().join("plan.json");
    let mut refusals = String::new();
    for (file, command) in [
        ("missing.yaml", "plan"),
        ("missing.yaml", "apply"),
        ("broken.yaml", "plan"),
    ] {
        let overlay = operator.home().join(file);
        let mut args = vec![
            "upgrade",
            command,
            "--to",
            "v3.29.0",
            "--manifest-overlay",
            overlay.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ];
        if command == "plan" {
            args.extend(["--out", plan_file.to_str().unwrap()]);
        } else {
            args.push("--yes");
        }
        let output = operator.run(&args, &[]);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
        assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
        refusals.push_str(&format!(
            "$ netctl upgrade {command} --manifest-overlay {file} ...\n{}\n",
            text(&output.stderr)
        ));
    }
    assert!(!plan_file.exists(), "no plan is saved");
    assert!(
        !operator.home().join("state/files/upgrade.yaml").exists(),
        "nothing is downloaded"
    );
    assert_eq!(objects_before, cluster_objects(&kube), "no object changes");
    snapshot(&operator, "manifest_overlay_refusals", &refusals);
}

/// The node-agent DaemonSet of `canal.yaml` (Kubernetes datastore): named `canal`, with the policy
/// agent and flannel side by side.
fn canal_manifest(version: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: canal-config
  namespace: kube-system
data:
  canal_iface: ""
  masquerade: "true"
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: canal
  namespace: kube-system
  labels:
    k8s-app: canal
spec:
  selector:
    matchLabels:
      k8s-app: canal
  template:
    metadata:
      labels:
        k8s-app: canal
    spec:
      hostNetwork: true
      containers:
        - name: calico-node
          image: docker.io/calico/node:{version}
          env:
            - name: DATASTORE_TYPE
              value: kubernetes
        - name: kube-flannel
          image: docker.io/flannel/flannel:v0.24.4
"#
    )
}

#[test]
fn kubernetes_canal_manifest_install_waits_for_the_canal_daemon_set() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.25.2");
    install(&kube, &canal_manifest("v3.25.2"));
    let operator = kubernetes_operator(&kube);
    let mirror = mirror(
        &operator,
        "v3.29.0",
        "canal.yaml",
        &canal_manifest("v3.29.0"),
    );
    let (plan_file, plan) = plan(&operator, "v3.29.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    assert_eq!(plan["facts"]["manifest_flavor"]["value"], "canal");
    assert_eq!(plan["facts"]["manifest_flavor"]["origin"], "discovered");

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "manifest-upgrade/apply-manifest:after");
    let canal = kube
        .get("apps/v1", "daemonsets", "kube-system", "canal")
        .unwrap();
    assert_eq!(
        canal["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.29.0"
    );
    assert!(
        kube.get("apps/v1", "daemonsets", "kube-system", "calico-node")
            .is_none(),
        "canal.yaml has no calico-node DaemonSet"
    );
    roll_out(&kube, "daemonsets", "canal", 2, 2);
    set_kube_version(&kube, "v3.29.0");
    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
}

/// The manifest apply is not a point of no return: its `undo` (what `upgrade rollback` runs,
/// `rollback.rs`) re-applies the objects it saves as they were live to `previous-manifest.yaml` in
/// the state directory before the first write, and the exact command its advice names (real
/// kubectl) brings calico-node back by hand too.
#[test]
fn the_manifest_apply_saves_the_previous_manifest_and_kubectl_can_go_back() {
    let (kube, operator, mirror) = kubernetes_manifest_cluster();
    let step = "manifest-upgrade/apply-manifest";
    let (plan_file, plan) = plan(&operator, "v3.29.0", &["--no-manifest-edits"]);
    let planned = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|planned| planned["id"] == step)
        .unwrap()
        .clone();
    assert_eq!(planned["irreversible"], Value::Null, "{planned}");
    assert_eq!(
        planned["undo"]["action"],
        json!({"action": "kube.apply", "with": {"source": {"file": "previous-manifest.yaml"},
               "server_side": true, "force_conflicts": true, "field_manager": "netctl",
               "delete_not_live_before": true}}),
        "{planned}"
    );
    let after = planned["rollback"]["after"].as_str().unwrap();
    assert!(
        after.contains("run `netctl upgrade rollback`: it re-applies the previous manifest server-side")
            && after.contains("`kubectl apply --server-side --force-conflicts --field-manager=netctl -f previous-manifest.yaml`"),
        "{after}"
    );
    let shown = operator.run(
        &["upgrade", "plan", "--to", "v3.29.0", "--no-manifest-edits"],
        &[],
    );
    assert_success(&shown, "upgrade plan");
    assert!(
        text(&shown.stdout).contains("previous-manifest.yaml"),
        "the plan shows the advice: {}",
        text(&shown.stdout)
    );

    let files = operator.home().join("state/files");
    let image = |kube: &KubeApiServer| {
        kube.get("apps/v1", "daemonsets", "kube-system", "calico-node")
            .unwrap()["spec"]["template"]["spec"]["containers"][0]["image"]
            .clone()
    };
    assert_eq!(image(&kube), "docker.io/calico/node:v3.25.2");
    assert!(!files.join("runs").exists());

    // Unattended and without approval: with the edits stated, nothing gates the apply.
    let apply = Apply::plan(&plan_file).mirror(&mirror);
    apply_killed_at(&operator, &apply, &format!("{step}:after"));
    assert_eq!(image(&kube), "docker.io/calico/node:v3.29.0");
    // Kept per run: `files/runs/<run id>/previous-manifest.yaml`.
    let run_id = status_json(&operator)["checkpoint"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let saved_path = files.join(format!("runs/{run_id}/previous-manifest.yaml"));
    let saved = std::fs::read_to_string(&saved_path).expect("the previous manifest is saved");
    let command = format!(
        "kubectl apply --server-side --force-conflicts --field-manager=netctl -f {}",
        saved_path.display()
    );
    assert!(saved.contains(&command), "{saved}");
    assert!(saved.contains("docker.io/calico/node:v3.25.2"), "{saved}");
    for server_set in ["resourceVersion", "managedFields", "uid:", "status:"] {
        assert!(!saved.contains(server_set), "{server_set} in {saved}");
    }
    assert!(!saved.contains("kind: Secret"), "{saved}");
    // The resume runs the apply again (killed before the checkpoint recorded it) and keeps what the
    // first attempt saved: the live objects are the new ones by now.
    roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    set_kube_version(&kube, "v3.29.0");
    let resumed = operator.apply(&Apply::resume().mirror(&mirror).yes());
    assert_success(&resumed, "resume");
    assert_eq!(std::fs::read_to_string(&saved_path).unwrap(), saved);
    let journal = std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap();
    assert!(
        journal.contains("saved before an earlier attempt (to go back:"),
        "{journal}"
    );

    // Going back as the advice says, with the real kubectl.
    let program = crate::support::find_program("kubectl", "apt-get install kubernetes-client");
    let home = kube.directory().join("kubectl-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut words = command.split(' ');
    words.next();
    let output = std::process::Command::new(program)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("KUBECONFIG", kube.kubeconfig_path())
        .args(words)
        .arg("--validate=false")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(image(&kube), "docker.io/calico/node:v3.25.2", "back");
}
