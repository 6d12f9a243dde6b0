//! A single-manifest install on the etcd datastore: v3.13 → v3.27 with an all-interfaces host
//! endpoint, killed after the manifest is applied and resumed, and its dry-run transcript.

use serde_json::json;

use super::common::*;

#[test]
fn etcd_manifest_install_from_v3_13_to_v3_27_with_an_all_interfaces_host_endpoint() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    // The mirror also serves the plan's overlay review (`etcd_endpoints`): no network.
    let (plan_file, plan) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap()],
    );
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    let diff = plan["manifest_previews"][0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("-  etcd_endpoints: http://<ETCD_IP>:<ETCD_PORT>"),
        "{diff}"
    );
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(
        plan["facts"]["all_interfaces_host_endpoints"]["value"],
        json!([{"name": "node-a-all", "node": "node-a", "labels": {"role": "edge"}}])
    );
    let ids = step_ids(&plan);
    assert!(
        ids.contains(&"etcd-upgrade/apply-manifest".to_string()),
        "{ids:?}"
    );

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    apply_killed_at(&operator, &apply, "etcd-upgrade/apply-manifest:after");

    // The pre-upgrade phase ran: the label and the temporary policy exist.
    let endpoint = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-all"))
        .unwrap();
    assert_eq!(
        endpoint["metadata"]["labels"],
        json!({"role": "edge", "host-endpoint-upgrade": ""})
    );
    let untouched = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-eth0"))
        .unwrap();
    assert!(untouched["metadata"]["labels"].is_null(), "{untouched}");
    // Written while the cluster runs v3.13: under its own name, as releases before v3.29 store it.
    let policy = etcd
        .get_json(&format!("{ROOT}/globalnetworkpolicies/allow-all-upgrade"))
        .expect("allow-all-upgrade exists after pre-upgrade");
    assert_eq!(
        policy["spec"]["selector"],
        json!("has(host-endpoint-upgrade)")
    );
    // The manifest was server-side applied by netctl.
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        node["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.27.0"
    );
    let owners = kube.owners("apps/v1", "daemonsets", "kube-system", "calico-node");
    assert!(
        owners.values().any(|manager| manager == "netctl"),
        "{owners:?}"
    );
    // netctl's own etcd endpoints replaced the placeholder of the released manifest (seed 9.7).
    let config = kube
        .get("v1", "configmaps", "kube-system", "calico-config")
        .unwrap();
    assert_eq!(
        config["data"]["etcd_endpoints"],
        json!(plan["facts"]["etcd_endpoints"]["value"])
    );
    assert!(
        config["data"]["etcd_endpoints"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{config}"
    );
    let controllers = kube
        .get(
            "apps/v1",
            "deployments",
            "kube-system",
            "calico-kube-controllers",
        )
        .unwrap();
    assert_eq!(
        controllers["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/kube-controllers:v3.27.0"
    );

    // The cluster does its part: the workloads roll out (calico-node 1/2 ready, as with etcd) and
    // the new node agents report their version.
    roll_out(&kube, "daemonsets", "calico-node", 1, 2);
    roll_out(&kube, "deployments", "calico-kube-controllers", 1, 1);
    set_etcd_version(&etcd, "v3.27.0");

    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert!(status["lock"].is_null(), "{status}");

    // The finish phase removed the temporary policy and the label.
    assert!(
        etcd.get_prefix(&format!("{ROOT}/globalnetworkpolicies/"))
            .is_empty()
    );
    let endpoint = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-all"))
        .unwrap();
    assert_eq!(endpoint["metadata"]["labels"], json!({"role": "edge"}));
}

#[test]
fn etcd_manifest_dry_run_transcript() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let (plan_file, _) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap()],
    );
    dry_run_snapshot(
        &operator,
        Some(&etcd),
        Some(&kube),
        &plan_file,
        &mirror,
        "etcd_manifest_v3_13_to_v3_27_dry_run",
    );
}

/// SIGKILL at every step boundary of the whole v3.13 → v3.27 run, finish steps included: one run
/// is killed before step 1's action, resumed and killed after it, resumed and killed before step 2,
/// and so on to the end; every resume goes on from where the kill left it. At the end the cluster
/// is as after an uninterrupted run, each step is journaled done exactly once, and no label is left.
#[test]
fn etcd_manifest_run_killed_at_every_step_boundary_resumes_to_the_end() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let (plan_file, plan) = plan(
        &operator,
        "v3.27.0",
        &["--mirror-dir", mirror.to_str().unwrap()],
    );
    let ids = step_ids(&plan);
    let applied = ids
        .iter()
        .position(|id| id == "etcd-upgrade/apply-manifest")
        .expect("the plan applies the manifest");
    for id in [
        "hostendpoint-finish/delete-allow-all-upgrade",
        "hostendpoint-finish/unlabel-all-interfaces-heps",
    ] {
        assert!(ids.iter().any(|step| step == id), "{id} in {ids:?}");
    }

    let mut apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    for (index, id) in ids.iter().enumerate() {
        for when in ["before", "after"] {
            apply_killed_at(&operator, &apply, &format!("{id}:{when}"));
            // The cluster does its part once the new manifest is in: rollouts, the new version.
            if index > applied || (index == applied && when == "after") {
                roll_out(&kube, "daemonsets", "calico-node", 1, 2);
                roll_out(&kube, "deployments", "calico-kube-controllers", 1, 1);
                set_etcd_version(&etcd, "v3.27.0");
            }
            // The checkpoint a kill leaves is readable and says where the run was: the step is
            // `running`, whether its action had begun or had just finished.
            let status = status_json(&operator);
            let record = &status["checkpoint"]["steps"][index];
            assert_eq!(record["state"], "running", "{id}:{when}: {status}");
            apply = Apply::resume().mirror(&mirror).yes();
        }
    }
    resume_to_the_end(&operator, &mirror);

    let status = status_json(&operator);
    assert_eq!(status["checkpoint"]["run"]["state"], "completed");
    let journal =
        std::fs::read_to_string(operator.home().join("state").join("journal.jsonl")).unwrap();
    for id in &ids {
        let done = journal
            .lines()
            .filter(|line| {
                line.contains(&format!(r#""step":"{id}""#))
                    && (line.contains(r#""event":"succeeded""#)
                        || line.contains(r#""event":"recovered""#))
            })
            .count();
        assert_eq!(done, 1, "{id} is journaled done once:\n{journal}");
    }
    assert!(
        etcd.get(&format!(
            "{ROOT}/globalnetworkpolicies/default.allow-all-upgrade"
        ))
        .is_none()
    );
    let endpoint = etcd
        .get_json(&format!("{ROOT}/hostendpoints/node-a-all"))
        .unwrap();
    assert_eq!(endpoint["metadata"]["labels"], json!({"role": "edge"}));
    let node = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        node["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.27.0"
    );
}

/// `upgrade plan` previews the datastore writes of its resource steps against what is stored now,
/// with the dry run's marks and counts, and says when a step's resource is written by an earlier
/// step first (the finish phase's unlabel and delete). The preview is not in the saved plan.
#[test]
fn etcd_manifest_plan_previews_the_datastore_writes() {
    let (etcd, kube) = etcd_manifest_cluster();
    let operator = operator_for(&etcd, &kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "calico-etcd.yaml",
        &released_etcd_manifest("v3.27.0"),
    );
    let mirror_arg = mirror.to_str().unwrap();
    let before = etcd.dump_prefix_bytes("/calico/");
    let out = operator.home().join("previewed-plan.json");
    let shown = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "--mirror-dir",
            mirror_arg,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&shown, "upgrade plan");
    assert_eq!(
        before,
        etcd.dump_prefix_bytes("/calico/"),
        "a plan writes nothing"
    );
    let stdout = crate::exec_common::text(&shown.stdout);
    let preview = stdout
        .split_once("\ndatastore writes, each against what is stored now")
        .map(|(_, preview)| format!("datastore writes, each against what is stored now{preview}"))
        .unwrap_or_else(|| panic!("no preview in:\n{stdout}"));
    assert!(
        preview.contains("+ would create GlobalNetworkPolicy(allow-all-upgrade)")
            && preview.contains("depends on step `hostendpoint-preparation/"),
        "{preview}"
    );
    snapshot(&operator, "etcd_manifest_plan_write_preview", &preview);
    // The saved plan (and so its digest) is the plan alone.
    let saved = std::fs::read_to_string(&out).unwrap();
    assert!(!saved.contains("would create"), "{saved}");
    let (_, json_plan) = plan(&operator, "v3.27.0", &["--mirror-dir", mirror_arg]);
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved["digest"], json_plan["digest"]);
}
