//! Issue 17, items 1 and 9: the pre-flight checks an `upgrade apply` runs before its first write,
//! each failing for real against real etcd (a member stopped with SIGSTOP, then killed; a database
//! near its quota; a `NOSPACE` alarm raised by filling a member past `--quota-backend-bytes`) and
//! the Kubernetes test server (a verb denied by a SelfSubjectAccessReview; the PodSecurityPolicy
//! API withdrawn as Kubernetes 1.25 removed it; a node agent pod still at an older version). Each
//! refusal leaves the etcd revision (or the cluster's objects) as they were and says how to fix it.

use serde_json::{Value, json};

use super::auto_host_endpoints::{
    auto_host_endpoint_data, auto_host_endpoint_datastore, auto_host_endpoint_plan,
    play_kube_controllers,
};
use super::common::*;
use crate::exec_common::text;
use crate::support::{EtcdCluster, KubeApiServer};

/// The name etcd knows member `index` by (from `member list`, asked of `ask`).
fn member_name(cluster: &EtcdCluster, index: usize, ask: usize) -> String {
    let listed = cluster
        .member_etcdctl(ask)
        .run(&["member", "list", "-w", "json"]);
    let listed: Value = serde_json::from_slice(&listed).expect("member list is JSON");
    let endpoint = cluster.endpoint(index);
    listed["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|member| {
            member["clientURLs"]
                .as_array()
                .is_some_and(|urls| urls.iter().any(|url| *url == json!(endpoint)))
        })
        .and_then(|member| member["name"].as_str())
        .expect("the member is listed")
        .to_string()
}

#[test]
fn preflight_refuses_a_run_while_an_etcd_member_is_stopped_or_killed() {
    let mut cluster = EtcdCluster::start();
    auto_host_endpoint_data("b", &|key, value| cluster.put(key, value));
    cluster.put(
        &format!("{ROOT}/clusterinformations/default"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default","uid":"c1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"calicoVersion":"v3.29.2","clusterType":"k8s,bgp","datastoreReady":true}}"#,
    );
    let operator = Operator::with_config(&cluster.netctl_config_yaml());
    let (plan_file, _) = auto_host_endpoint_plan(&operator);
    let leader = cluster.leader();
    let broken = (0..cluster.len()).find(|&i| i != leader).unwrap();
    let live = (0..cluster.len()).find(|&i| i != broken).unwrap();
    let name = member_name(&cluster, broken, live);
    let apply = Apply::plan(&plan_file)
        .yes()
        .with(&["--skip-preflight", "node-agents"]);

    // A hung member: its port accepts connections, nothing answers.
    cluster.pause_member(broken);
    let before = cluster.member_etcdctl(live).revision();
    let output = operator.apply(&apply);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "etcd-members: 1 of 3 etcd member(s) unhealthy: `{name}` at `{}`: no ",
            cluster.endpoint(broken)
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: bring the member back") && stderr.contains("etcdctl member remove"),
        "{stderr}"
    );
    assert!(stderr.contains("--skip-preflight etcd-members"), "{stderr}");
    assert_eq!(
        cluster.member_etcdctl(live).revision(),
        before,
        "nothing was written, not even the lock"
    );
    cluster.resume_member(broken);

    // A dead member: nothing listens on its port.
    cluster.kill_member(broken);
    let output = operator.apply(&apply);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "etcd-members: 1 of 3 etcd member(s) unhealthy: `{name}` at `{}`: ",
            cluster.endpoint(broken)
        )),
        "{stderr}"
    );
    assert_eq!(cluster.member_etcdctl(live).revision(), before);

    // Healthy again, the same plan runs.
    cluster.restart_member(broken);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let output = std::thread::scope(|scope| {
        scope.spawn(|| {
            // kube-controllers, played against the cluster (the helper speaks to one server's
            // etcdctl; the cluster's is the same protocol).
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let config = cluster
                    .get_json(&format!("{ROOT}/kubecontrollersconfigurations/default"))
                    .unwrap_or_default();
                if config["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
                {
                    for node in ["node-a", "node-b"] {
                        cluster.put(
                            &format!("{ROOT}/hostendpoints/{node}-auto-hep"),
                            json!({"apiVersion": "projectcalico.org/v3", "kind": "HostEndpoint",
                                   "metadata": {"name": format!("{node}-auto-hep"), "uid": format!("uid-{node}-auto"),
                                                "creationTimestamp": "2026-01-01T00:00:00Z",
                                                "labels": {"projectcalico.org/created-by": "calico-kube-controllers"}},
                                   "spec": {"node": node, "interfaceName": "*"}})
                            .to_string(),
                        );
                    }
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        let output = operator.apply(&apply);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        output
    });
    assert_success(&output, "apply with every member healthy");
}

/// etcd's status answer for the one member of `etcd`: its database size.
fn database_bytes(etcd: &crate::support::EtcdServer) -> u64 {
    let status = etcd.admin().run(&["endpoint", "status", "-w", "json"]);
    let status: Value = serde_json::from_slice(&status).expect("endpoint status is JSON");
    status[0]["Status"]["dbSize"].as_u64().expect("dbSize")
}

#[test]
fn preflight_refuses_a_run_when_etcd_is_near_or_over_its_quota() {
    // A small quota, so a few writes raise the real NOSPACE alarm.
    const QUOTA: u64 = 2 << 20;
    let etcd = crate::support::EtcdServer::builder()
        .arg(&format!("--quota-backend-bytes={QUOTA}"))
        .start();
    set_etcd_version(&etcd, "v3.29.2");
    auto_host_endpoint_data("b", &|key, value| etcd.put(key, value));
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let (plan_file, _) = auto_host_endpoint_plan(&operator);
    let apply = |quota: u64| {
        operator.apply(&Apply::plan(&plan_file).yes().with(&[
            "--skip-preflight",
            "node-agents",
            "--etcd-quota-bytes",
            &quota.to_string(),
        ]))
    };

    // etcd 3.4 does not report its quota: told one the database nearly fills, the run refuses.
    let used = database_bytes(&etcd);
    let before = etcd.revision();
    let output = apply(used + used / 20);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("etcd-quota: the fullest database, member `")
            && stderr.contains("(from `--etcd-quota-bytes`)")
            && stderr.contains("less than 10% free, and etcd refuses every write once it is full"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: free space first: compact and defragment"),
        "{stderr}"
    );
    assert_eq!(etcd.revision(), before, "nothing was written");

    // The dry run says so too, and still shows every step.
    let rehearsed = operator.apply(&Apply::plan(&plan_file).dry_run().with(&[
        "--skip-preflight",
        "node-agents",
        "--etcd-quota-bytes",
        &(used + used / 20).to_string(),
    ]));
    assert_success(&rehearsed, "dry run");
    let transcript = text(&rehearsed.stdout);
    assert!(
        transcript.contains("the run would stop here: pre-flight failed before anything was written: etcd-quota: the fullest database")
            && transcript.contains("  to fix: free space first: compact and defragment"),
        "{transcript}"
    );
    assert!(transcript.contains("[1/"), "{transcript}");
    assert_eq!(etcd.revision(), before, "the dry run wrote nothing");

    // Filled past its real quota, etcd raises NOSPACE; the pre-flight names the alarm.
    let filler = "x".repeat(100 * 1024);
    for index in 0..64 {
        if etcd
            .admin()
            .try_put(&format!("/filler/{index}"), &filler)
            .is_err()
        {
            break;
        }
    }
    let alarms = text(&etcd.admin().run(&["alarm", "list"]));
    assert!(alarms.contains("NOSPACE"), "no NOSPACE alarm: {alarms}");
    let before = etcd.revision();
    let output = apply(QUOTA);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("etcd-quota: etcd has active alarms: NOSPACE on member "),
        "{stderr}"
    );
    assert_eq!(etcd.revision(), before);
}

#[test]
fn plan_reports_the_etcd_checks() {
    let etcd = auto_host_endpoint_datastore("b");
    let operator = Operator::with_config(&etcd.netctl_config_yaml());
    let output = operator.run(
        &[
            "upgrade",
            "plan",
            "--procedure",
            "auto-host-endpoints",
            "--install-method",
            "manifest",
        ],
        &[],
    );
    assert_success(&output, "upgrade plan");
    let talk = text(&output.stderr);
    assert!(
        talk.contains("pre-flight etcd-members: ok (1 member(s) answered"),
        "{talk}"
    );
    assert!(
        talk.contains("pre-flight etcd-quota: ok (the fullest database")
            && talk.contains("2.0 GiB quota (etcd's default; this etcd does not report its quota"),
        "{talk}"
    );
    // No cluster: the autoCreate step's node agent requirement cannot be read, and says so.
    assert!(
        talk.contains(
            "pre-flight node-agents: FAILED: step `auto-host-endpoints/enable-auto-host-endpoints` requires every node agent to run `v3.29.2`, and no cluster is configured"
        ),
        "{talk}"
    );
}

#[test]
fn auto_create_waits_for_every_node_agent_at_the_target_version() {
    // Item 9: one node agent still at v3.28.2 — enabling automatic host endpoints now would cut
    // node-b off. The run refuses before any write.
    let etcd = auto_host_endpoint_datastore("b");
    let kube = KubeApiServer::start();
    kube.put(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    node_agent_pods(
        &kube,
        "kube-system",
        &[("node-a", "v3.29.2"), ("node-b", "v3.28.2")],
    );
    let operator = operator_for(&etcd, &kube);
    let (plan_file, plan) = auto_host_endpoint_plan(&operator);
    let enable = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["id"] == "auto-host-endpoints/enable-auto-host-endpoints")
        .expect("the autoCreate step");
    assert_eq!(enable["requires"], json!({"nodeAgents": "v3.29.2"}));

    let before = etcd.revision();
    let output = operator.apply(&Apply::plan(&plan_file).yes());
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "node-agents: step `auto-host-endpoints/enable-auto-host-endpoints` requires every node agent to run `v3.29.2`: 1 of 2 node agent pod(s) do not: pod `calico-node-node-b` on node `node-b` runs `v3.28.2`"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: finish upgrading the node agents to `v3.29.2` first"),
        "{stderr}"
    );
    assert_eq!(etcd.revision(), before, "nothing was written");

    // Rolled, the run goes ahead.
    node_agent_pods(&kube, "kube-system", &[("node-b", "v3.29.2")]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let output = std::thread::scope(|scope| {
        scope.spawn(|| play_kube_controllers(&etcd, &stop));
        let output = operator.apply(
            &Apply::plan(&plan_file)
                .approve("auto-host-endpoints/confirm-delete-old-host-endpoints"),
        );
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        output
    });
    // Unattended, the run stops at the first irreversible deletion, and its gate says how to go
    // back before and after it (item 6).
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("`auto-host-endpoints/delete-old-host-endpoint[0]` is irreversible")
            && stderr.contains("to go back now instead: The old host endpoint still protects the node. Keep a copy (`netctl get hostendpoint node-a-all -o yaml > node-a-all.yaml`)")
            && stderr.contains("once it has run: The node is protected by `node-a-auto-hep` alone."),
        "{stderr}"
    );
    let output = operator.apply(&Apply::resume().yes());
    assert_success(&output, "apply with every node agent current");
    // `upgrade plan` reports what the run found.
    let planned = operator.run(
        &[
            "upgrade",
            "plan",
            "--procedure",
            "auto-host-endpoints",
            "--install-method",
            "manifest",
            "--set",
            r#"all_interfaces_host_endpoints=[{"name": "node-a-all", "node": "node-a", "labels": {}}]"#,
        ],
        &[],
    );
    assert_success(&planned, "upgrade plan");
    assert!(
        text(&planned.stderr).contains("pre-flight node-agents: ok (step `auto-host-endpoints/enable-auto-host-endpoints` requires `v3.29.2`: all 2 node agent pod(s) run it)"),
        "{}",
        text(&planned.stderr)
    );
}

/// A Helm install of v3.20 on a cluster, the operator rolled out, and netctl with a stand-in Helm.
fn helm_migration(kube: &KubeApiServer) -> (Operator, std::path::PathBuf, std::path::PathBuf) {
    let operator = kubernetes_operator(kube);
    super::helm::install_helm_stand_in(&operator, kube);
    let mirror = mirror(
        &operator,
        "v3.27.0",
        "operator-crds.yaml",
        super::helm::OPERATOR_CRDS,
    );
    roll_out_in(
        kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    let (plan_file, _) = plan(&operator, "v3.27.0", &[]);
    (operator, plan_file, mirror)
}

/// The requests that change something (everything but reads and access reviews).
fn writes(kube: &KubeApiServer) -> Vec<String> {
    kube.requests()
        .into_iter()
        .filter(|request| !request.starts_with("GET "))
        .filter(|request| !request.contains("selfsubjectaccessreviews"))
        .collect()
}

#[test]
fn preflight_refuses_a_run_whose_identity_may_not_delete_the_old_release_secrets() {
    let kube = super::helm::helm_cluster("kube-system");
    kube.deny_access("deletecollection", "secrets", Some("kube-system"));
    let (operator, plan_file, mirror) = helm_migration(&kube);
    let written = writes(&kube);
    let output = operator.apply(&Apply::plan(&plan_file).mirror(&mirror).yes());
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "permissions: netctl may not `deletecollection` on `secrets` in namespace `kube-system` for step `helm-ownership-migration/delete-old-release-secrets`"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: grant netctl's identity these verbs in its RBAC role"),
        "{stderr}"
    );
    assert_eq!(writes(&kube), written, "nothing was written");
    assert!(
        kube.requests().iter().any(|request| request
            .starts_with("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews")),
        "the pre-flight asked the API server"
    );
}

#[test]
fn a_pod_security_policy_patch_is_skipped_on_a_cluster_without_the_api() {
    // Kubernetes 1.25 removed policy/v1beta1 PodSecurityPolicy: there is nothing to adopt.
    let kube = super::helm::helm_cluster("kube-system");
    kube.withdraw("policy/v1beta1", "podsecuritypolicies");
    let (operator, plan_file, mirror) = helm_migration(&kube);
    let step = "helm-ownership-migration/adopt-into-release[2]";
    let reason = "the cluster does not serve `policy/v1beta1` `PodSecurityPolicy`, which Kubernetes removed in 1.25 (this cluster runs 1.33); there is nothing of it to change";
    let planned = operator.run(&["upgrade", "plan", "--to", "v3.27.0"], &[]);
    assert_success(&planned, "upgrade plan");
    assert!(
        text(&planned.stderr).contains(&format!(
            "pre-flight: step `{step}` will be skipped: {reason}"
        )),
        "{}",
        text(&planned.stderr)
    );

    // The dry run runs the same pre-flight: the step is skipped there too, not reported as a type
    // the cluster does not serve.
    let requests_before = kube.requests().len();
    let rehearsed = operator.apply(&Apply::plan(&plan_file).mirror(&mirror).dry_run());
    assert_success(&rehearsed, "dry run");
    let transcript = text(&rehearsed.stdout);
    let heading = transcript
        .lines()
        .position(|line| line.contains(&format!("] {step} (")))
        .unwrap_or_else(|| panic!("no {step} in:\n{transcript}"));
    assert_eq!(
        transcript.lines().nth(heading + 1).unwrap_or_default(),
        format!("  would be skipped by the pre-flight: {reason}"),
        "{transcript}"
    );
    assert!(
        !transcript.contains("does not serve `PodSecurityPolicy`"),
        "{transcript}"
    );
    assert!(
        transcript.contains(&format!(
            "  pre-flight: step `{step}` will be skipped: {reason}"
        )),
        "{transcript}"
    );
    assert!(
        kube.requests()[requests_before..].iter().all(|request| {
            request.starts_with("GET")
                || request.contains("dryRun=All")
                || request.contains("selfsubjectaccessreviews")
        }),
        "the dry run and its pre-flight only read: {:#?}",
        &kube.requests()[requests_before..]
    );

    // The run goes as far as Helm (the rest is the Helm scenario's) and is stopped there.
    apply_killed_at(
        &operator,
        &Apply::plan(&plan_file).mirror(&mirror).yes(),
        "helm-ownership-migration/install-chart:before",
    );
    let status = status_json(&operator);
    let record = status["checkpoint"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|record| record["id"] == step)
        .cloned()
        .expect("the step's record");
    assert_eq!(record["state"], "skipped", "{record}");
    let journal = std::fs::read_to_string(operator.home().join("state/journal.jsonl")).unwrap();
    assert!(
        journal.contains(&format!("skipped by the pre-flight: {reason}")),
        "{journal}"
    );
    assert!(
        !kube
            .requests()
            .iter()
            .any(|request| request.contains("podsecuritypolicies") && !request.starts_with("GET")),
        "no request changed a PodSecurityPolicy"
    );
    // The other objects were adopted.
    let installation = kube
        .get("operator.tigera.io/v1", "installations", "", "default")
        .unwrap();
    assert_eq!(
        installation["metadata"]["annotations"]["meta.helm.sh/release-namespace"],
        "tigera-operator"
    );
}
