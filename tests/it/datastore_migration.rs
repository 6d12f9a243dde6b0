//! `netctl upgrade plan|apply --procedure datastore-migration`: a single-manifest install on real
//! etcd moved to the strict Kubernetes test server's datastore (a cluster with no Calico CRDs),
//! as the `datastore-migration` runbook does it: download the release's CRDs, pre-flight, lock
//! etcd, export into the state directory, install the CRDs and import, switch the components to
//! the Kubernetes-datastore manifest of the same release, wait for the rollout, unlock. The host
//! endpoints are attached to their renamed nodes afterwards; a run killed with SIGKILL after a
//! step resumes and finishes with every resource once; the last step compares the export with
//! the Kubernetes datastore and fails on a resource lost there; the dry run writes nothing; a
//! target that holds Calico data is refused before the lock.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use serde_json::Value;

use crate::migrate::{assert_reads_back, crd_manifest_text, kube_target, seed};
use crate::support::calico_node::{Behaviour, CalicoNodeStandIn};
use crate::support::kube_api::{CALICO_GROUP, CALICO_V3_GROUP};
use crate::support::snapshot::netctl_snapshot;
use crate::support::{CalicoGroups, EtcdServer, KubeApiServer, Netctl};
use crate::upgrade_e2e::common::assert_success;
use crate::upgrade_real_manifests::{Flavour, etcd_manifest};

const VERSION: &str = "v3.32.1";

/// The Kubernetes-datastore manifest of the release (`calico.yaml`): the etcd manifest's
/// components with `DATASTORE_TYPE=kubernetes` in place of the etcd endpoints.
fn kubernetes_manifest() -> String {
    etcd_manifest(Flavour::Calico, VERSION).replace(
        "            - name: ETCD_ENDPOINTS\n              valueFrom:\n                configMapKeyRef:\n                  name: calico-config\n                  key: etcd_endpoints\n",
        "            - name: DATASTORE_TYPE\n              value: \"kubernetes\"\n",
    )
}

/// netctl on etcd (datastore) and the test server (cluster), state in `$HOME/state`, the
/// release's files in `$HOME/mirror`, every `upgrade plan|apply` reading them there.
struct Operator {
    inner: crate::upgrade_real_manifests::Operator,
    config: String,
}

impl Operator {
    fn new(etcd: &EtcdServer, kube: &KubeApiServer) -> Operator {
        let inner = crate::upgrade_real_manifests::Operator::new(etcd, kube);
        for (file, text) in [
            ("crds.yaml", crd_manifest_text(CALICO_GROUP, &[])),
            ("calico.yaml", kubernetes_manifest()),
            // v3.32's native `projectcalico.org/v3` CRDs and the calico manifest that uses them.
            (
                "v3_projectcalico_org.yaml",
                crd_manifest_text(CALICO_V3_GROUP, &[]),
            ),
            ("calico-v3-crds.yaml", kubernetes_manifest()),
            ("calico-etcd.yaml", etcd_manifest(Flavour::Calico, VERSION)),
        ] {
            inner.mirror(VERSION, file, &text);
        }
        let config = std::fs::read_to_string(inner.netctl.home().join("netctl.cfg"))
            .expect("the operator's configuration");
        Operator { inner, config }
    }

    fn home(&self) -> PathBuf {
        self.inner.home()
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mirror = self.home().join("mirror");
        let mut args: Vec<&str> = args.to_vec();
        if args.first() == Some(&"upgrade") && matches!(args.get(1), Some(&"plan" | &"apply")) {
            args.extend(["--mirror-dir", mirror.to_str().unwrap()]);
        }
        self.inner.run(&args, env)
    }

    /// `upgrade plan --procedure datastore-migration` as the operator reviews it, with `extra`
    /// arguments.
    fn show_plan(&self, extra: &[&str]) -> std::process::Output {
        let mut args = vec![
            "upgrade",
            "plan",
            "--procedure",
            "datastore-migration",
            "--no-manifest-edits",
            "--to",
            VERSION,
        ];
        args.extend(extra);
        self.run(&args, &[])
    }

    /// The plan saved as JSON; its path.
    fn plan(&self) -> PathBuf {
        let plan = self.home().join("plan.json");
        let planned = self.show_plan(&["-o", "json", "--out", plan.to_str().unwrap()]);
        assert_success(&planned, "upgrade plan");
        plan
    }
}

/// calico-node's status reporter for the etcd node, so that the baseline and the final
/// verification read its BGP sessions at once instead of waiting out their timeout.
fn bgp_reporter(etcd: &EtcdServer) -> CalicoNodeStandIn {
    CalicoNodeStandIn::on_etcd(
        etcd.endpoints(),
        Behaviour::for_nodes(&["etcd-node-1"], std::time::Duration::from_millis(50)),
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The Kubernetes node the etcd node is called there, Ready.
fn ready_node(kube: &KubeApiServer) {
    kube.put(
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
}

/// etcd as a manifest install of the release left it (`handles` IPAM handles besides the
/// node's), the cluster with its objects and the node, no Calico CRDs.
fn installed(handles: usize) -> (EtcdServer, KubeApiServer) {
    installed_on(handles, CalicoGroups::None)
}

/// As [`installed`], the cluster serving the Calico `groups` (their CRDs, no objects).
fn installed_on(handles: usize, groups: CalicoGroups) -> (EtcdServer, KubeApiServer) {
    let etcd = EtcdServer::start();
    seed(&etcd, handles);
    let kube = kube_target(groups);
    ready_node(&kube);
    for object in netctl::yaml::read_values(&etcd_manifest(Flavour::Calico, VERSION)).unwrap() {
        kube.put(object);
    }
    (etcd, kube)
}

fn locked(etcd: &EtcdServer) -> bool {
    let information = etcd
        .get("/calico/resources/v3/projectcalico.org/clusterinformations/default")
        .expect("ClusterInformation");
    let information: Value = serde_json::from_str(&information).unwrap();
    information["spec"]["datastoreReady"] == false
}

impl Operator {
    /// Adds `calicoAPIGroup: GROUP` to the configuration file (with one, netctl reads no
    /// environment, as calicoctl).
    fn configure_api_group(&self, group: &str) {
        std::fs::write(
            self.home().join("netctl.cfg"),
            format!("{}  calicoAPIGroup: {group}\n", self.config),
        )
        .unwrap();
    }

    /// Releases the run lock a killed run left (as an operator would, `upgrade unlock`).
    fn release_run_lock(&self) {
        let status = self.run(&["upgrade", "status", "-o", "json"], &[]);
        let status: Value = serde_json::from_slice(&status.stdout).unwrap();
        if let Some(lock) = status["lock"]["id"].as_str() {
            assert_success(&self.run(&["upgrade", "unlock", lock], &[]), "unlock");
        }
    }

    /// Resumes the run, killed with SIGKILL at `crash` (`<step>:<before|after>`).
    fn resume_until_killed(&self, crash: &str) {
        self.apply_until_killed(&["--resume"], crash);
    }

    /// Applies `--plan PLAN` (or resumes), killed with SIGKILL at `crash`; releases the run lock.
    fn apply_until_killed(&self, how: &[&str], crash: &str) {
        let mut args = vec!["upgrade", "apply"];
        args.extend(how);
        args.push("--yes");
        let crashed = self.run(&args, &[("NETCTL_TEST_CRASH_AFTER", crash)]);
        assert_eq!(
            crashed.status.signal(),
            Some(9),
            "the run was not killed at {crash}: {}",
            text(&crashed.stderr)
        );
        self.release_run_lock();
    }
}

/// Plans the migration, shows the plan, and applies it killed with SIGKILL after every step
/// (the baseline, the downloads, the pre-flight, the lock, the export, the switch, the wait, the
/// unlock, the final comparison) and in the middle of the import (its IPAM handles half written);
/// each time `--resume` goes on. A resource deleted on the Kubernetes side fails the comparison,
/// which names it. The end state has every resource and IPAM object once, equal to the export, the
/// host endpoint on its node's Kubernetes name, the target unlocked and etcd left locked. A
/// calico-node status stand-in answers the BGP status requests of the baseline and the
/// verification, so no resume waits out their timeout.
#[test]
fn the_migration_takes_an_etcd_install_to_the_kubernetes_datastore_through_kills() {
    let (etcd, kube) = installed(400);
    let operator = Operator::new(&etcd, &kube);
    let shown = operator.show_plan(&[]);
    // The plan as the operator reviews it: every step, the lock marked, the rollback advice.
    // (The pre-flight's findings on stderr name the etcd database's size, which varies.)
    let mut shown = crate::support::Run::from(shown);
    shown.stderr.clear();
    let shown = netctl_snapshot!("datastore_migration_plan", shown);
    for step in [
        "datastore-migration/download-crds",
        "datastore-migration/preflight",
        "datastore-migration/lock",
        "new pods get no network until the unlock",
        "datastore-migration/export",
        "datastore-migration/import",
        "datastore-migration/switch-components",
        "datastore-migration/unlock",
    ] {
        assert!(shown.stdout.contains(step), "{step}: {}", shown.stdout);
    }
    let plan = operator.plan();
    let _reporter = bgp_reporter(&etcd);

    // Killed after the baseline, then after each step before the lock: nothing is written.
    operator.apply_until_killed(&["--plan", plan.to_str().unwrap()], "verify/baseline:after");
    for step in ["download-crds", "preflight", "download-manifest"] {
        operator.resume_until_killed(&format!("datastore-migration/{step}:after"));
        assert!(!locked(&etcd), "{step}");
    }

    // Killed after the lock: etcd is locked, nothing exported yet.
    operator.resume_until_killed("datastore-migration/lock:after");
    assert!(locked(&etcd));
    assert!(find(&operator.home().join("state"), "migration.txt").is_none());
    operator.release_run_lock();

    // Killed after the export: the file is whole; nothing is in the target yet.
    operator.resume_until_killed("datastore-migration/export:after");
    let export = find(&operator.home().join("state"), "migration.txt").expect("the export");
    assert!(kube.names("crd.projectcalico.org/v1", "ippools").is_empty());

    // Killed in the middle of the import, its IPAM handles half written.
    let mut command = Netctl::new();
    command
        .config_file(&operator.config)
        .env("USER", "ops")
        .args(["upgrade", "apply", "--resume", "--yes", "--state-dir"])
        .arg(operator.home().join("state"))
        .arg("--mirror-dir")
        .arg(operator.home().join("mirror"));
    let mut child = command.spawn();
    let started = std::time::Instant::now();
    while kube
        .requests()
        .iter()
        .filter(|request| request.starts_with("POST /apis/crd.projectcalico.org/v1/ipamhandles"))
        .count()
        < 20
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the kill"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(120));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    let _ = crate::support::wait_for_exit(child, std::time::Duration::from_secs(10));
    let stored = kube.names("crd.projectcalico.org/v1", "ipamhandles").len();
    assert!(stored > 0 && stored < 402, "{stored}");
    operator.release_run_lock();

    // Killed after the switch: the node agent reads the Kubernetes datastore.
    operator.resume_until_killed("datastore-migration/switch-components:after");
    let agent = kube
        .get("apps/v1", "daemonsets", "kube-system", "calico-node")
        .unwrap();
    assert_eq!(
        agent["spec"]["template"]["spec"]["containers"][0]["env"][0]["name"],
        "DATASTORE_TYPE"
    );

    // The cluster rolls the node agents. A resource lost on the Kubernetes side (deleted by
    // hand here) fails the last step, which names it; put back, `--resume` verifies again and
    // the run finishes.
    crate::upgrade_e2e::common::roll_out(&kube, "daemonsets", "calico-node", 2, 2);
    operator.resume_until_killed("datastore-migration/wait-node-agents:after");
    operator.resume_until_killed("datastore-migration/unlock:after");
    let lost = kube
        .get("crd.projectcalico.org/v1", "globalnetworksets", "", "gns-1")
        .expect("the imported GlobalNetworkSet");
    let deleted = kube.raw_request(
        "DELETE",
        "/apis/crd.projectcalico.org/v1/globalnetworksets/gns-1",
        "",
    );
    assert!(deleted.starts_with("HTTP/1.1 200"), "{deleted}");
    let failed = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    let said = text(&failed.stderr);
    assert!(!failed.status.success(), "{said}");
    assert!(said.contains("datastore-migration/verify"), "{said}");
    assert!(
        said.contains("GlobalNetworkSet: 1 in the export, 0 in the Kubernetes datastore; missing `GlobalNetworkSet(gns-1)`"),
        "{said}"
    );
    // Said as what it is: the export compared with the target, not a cluster with its baseline.
    assert!(
        said.contains("verification failed at `datastore-migration/verify`: the Kubernetes datastore does not hold what the export holds"),
        "{said}"
    );
    kube.put(lost);
    operator.resume_until_killed("datastore-migration/verify:after");
    let resumed = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert_success(&resumed, "resume");
    assert!(
        text(&resumed.stderr).contains("datastore-migration/verify: succeeded"),
        "{}",
        text(&resumed.stderr)
    );
    // Every resource and IPAM object once, equal to the export; the target unlocked.
    assert_reads_back(&kube, export.to_str().unwrap(), &operator.home(), true);
    assert_eq!(
        kube.names("crd.projectcalico.org/v1", "ipamhandles").len(),
        402
    );
    let endpoint = kube
        .get("crd.projectcalico.org/v1", "hostendpoints", "", "endpoint1")
        .unwrap();
    assert!(endpoint.to_string().contains("node-a"), "{endpoint}");
    // etcd stays locked: nothing may write to it any more.
    assert!(locked(&etcd));
}

/// The dry run of the whole procedure writes nothing, to etcd or to the cluster.
#[test]
fn a_dry_run_of_the_migration_writes_nothing() {
    let (etcd, kube) = installed(3);
    let operator = Operator::new(&etcd, &kube);
    let plan = operator.plan();
    let before = etcd.dump_prefix_bytes("/calico/");
    let dry = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
    );
    // It says which steps would fail as things stand (the verification needs the baseline a
    // real run records), and exits so; it is no crash.
    assert!(dry.status.code().is_some(), "{dry:?}");
    let shown = format!("{}{}", text(&dry.stdout), text(&dry.stderr));
    assert!(
        shown.contains("would export the etcd datastore, locked by then"),
        "{shown}"
    );
    assert!(
        shown.contains("would compare `") && shown.contains("each block's allocations"),
        "{shown}"
    );
    assert_eq!(etcd.dump_prefix_bytes("/calico/"), before);
    let writes: Vec<String> = kube
        .requests()
        .into_iter()
        .filter(|request| {
            !request.starts_with("GET")
                && !request.contains("selfsubjectaccessreviews")
                && !request.contains("dryRun=All")
        })
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
}

/// A target that already holds Calico data is refused by the pre-flight step, before the lock:
/// etcd stays unlocked.
#[test]
fn a_target_holding_calico_data_is_refused_before_the_lock() {
    let (etcd, kube) = installed_on(3, CalicoGroups::V1);
    kube.put(
        serde_json::json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
        "metadata": {"name": "existing-pool"},
        "spec": {"cidr": "10.99.0.0/16", "blockSize": 26, "nodeSelector": "all()"}}),
    );
    let operator = Operator::new(&etcd, &kube);
    let plan = operator.plan();
    let refused = operator.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert!(!refused.status.success());
    let said = text(&refused.stderr);
    assert!(
        said.contains("already holds Calico data that is not this export's: IPPool(existing-pool)"),
        "{said}"
    );
    assert!(!locked(&etcd), "{said}");
}

/// A cluster that serves only v3.32's native `projectcalico.org/v3` CRDs (installed, holding
/// nothing): the plan finds that group (fact `calico_api_group`, discovered) and downloads its
/// CRDs (`v3_projectcalico_org.yaml`) and the manifest that uses them (`calico-v3-crds.yaml`);
/// the run imports into `projectcalico.org/v3`, creates no `crd.projectcalico.org/v1` CRD, and
/// its last step finds the Kubernetes datastore equal to the export.
#[test]
fn a_cluster_serving_the_native_v3_crds_is_migrated_into_them() {
    let (etcd, kube) = installed_on(3, CalicoGroups::V3);
    let operator = Operator::new(&etcd, &kube);
    migrate_into_native_v3_crds(&etcd, &kube, &operator);
}

/// A cluster with no Calico CRDs, where the configuration says `calicoAPIGroup:
/// projectcalico.org/v3`: the plan takes the configured group, and the run keeps it (the plan's
/// fact, not what the empty cluster would let discovery choose) from the pre-flight to the
/// comparison.
#[test]
fn the_configured_native_v3_group_is_migrated_into_on_a_cluster_without_calico_crds() {
    let (etcd, kube) = installed(3);
    let operator = Operator::new(&etcd, &kube);
    operator.configure_api_group("projectcalico.org/v3");
    migrate_into_native_v3_crds(&etcd, &kube, &operator);
}

/// Plans the migration (which must name the native CRDs and their manifest), runs it killed
/// after the switch, rolls the node agents and resumes to the end; then checks where every
/// object went.
fn migrate_into_native_v3_crds(etcd: &EtcdServer, kube: &KubeApiServer, operator: &Operator) {
    let shown = operator.show_plan(&[]);
    assert_success(&shown, "upgrade plan");
    let shown = text(&shown.stdout);
    for said in [
        "calico_api_group               projectcalico.org/v3  (discovered)",
        "Download the `projectcalico.org/v3` CRDs of v3.32.1 (`v3_projectcalico_org.yaml`)",
        "Download `calico-v3-crds.yaml` of v3.32.1",
        "Install the `projectcalico.org/v3` CRDs and import `migration.txt`",
    ] {
        assert!(shown.contains(said), "{said}: {shown}");
    }
    let plan = operator.plan();
    let _reporter = bgp_reporter(etcd);
    operator.apply_until_killed(
        &["--plan", plan.to_str().unwrap()],
        "datastore-migration/switch-components:after",
    );
    crate::upgrade_e2e::common::roll_out(kube, "daemonsets", "calico-node", 2, 2);
    let finished = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert_success(&finished, "resume");
    let said = text(&finished.stderr);
    assert!(
        said.contains("datastore-migration/verify: succeeded"),
        "{said}"
    );
    let export = find(&operator.home().join("state"), "migration.txt").expect("the export");
    assert_reads_back(kube, export.to_str().unwrap(), &operator.home(), true);
    let endpoint = kube
        .get("projectcalico.org/v3", "hostendpoints", "", "endpoint1")
        .expect("the host endpoint in `projectcalico.org/v3`");
    assert_eq!(endpoint["spec"]["node"], "node-a", "{endpoint}");
    assert!(!kube.names("projectcalico.org/v3", "ipamhandles").is_empty());
    let crds = kube.names("apiextensions.k8s.io/v1", "customresourcedefinitions");
    assert!(
        !crds
            .iter()
            .any(|name| name.ends_with(".crd.projectcalico.org")),
        "{crds:?}"
    );
    assert!(kube.names("crd.projectcalico.org/v1", "ippools").is_empty());
}

/// The group comes from the configuration where it says one (`calicoAPIGroup`), on a cluster
/// with no Calico CRDs yet; the native CRDs need v3.32, and
/// canal has no manifest with them: both refused when planning, with the reason.
#[test]
fn the_configured_api_group_chooses_the_crds_and_what_cannot_be_is_refused() {
    let (etcd, kube) = installed(3);
    let operator = Operator::new(&etcd, &kube);
    let plan = || {
        let planned = operator.show_plan(&[]);
        assert_success(&planned, "upgrade plan");
        text(&planned.stdout)
    };
    let unset = plan();
    assert!(
        unset.contains("calico_api_group               crd.projectcalico.org/v1  (discovered)"),
        "{unset}"
    );
    assert!(unset.contains("(`crds.yaml`)"), "{unset}");
    operator.configure_api_group("projectcalico.org/v3");
    let configured = plan();
    assert!(
        configured.contains("(`v3_projectcalico_org.yaml`)")
            && configured.contains("`calico-v3-crds.yaml`"),
        "{configured}"
    );

    for (from, flavour, reason) in [
        (
            "v3.31.2",
            "calico",
            "which upstream publishes from v3.32 on, and the install runs v3.31.2",
        ),
        (
            VERSION,
            "canal",
            "upstream publishes no Kubernetes-datastore manifest with `projectcalico.org/v3` CRDs for the `canal` flavour",
        ),
    ] {
        let mut command = Netctl::new();
        command.args([
            "upgrade",
            "plan",
            "--procedure",
            "datastore-migration",
            "--from",
            from,
            "--install-method",
            "manifest",
            "--datastore-type",
            "etcdv3",
            "--offline",
            "--set",
            "calico_api_group=projectcalico.org/v3",
            "--set",
            &format!("manifest_flavor={flavour}"),
        ]);
        let refused = command.run();
        assert_eq!(refused.code, Some(1), "{refused:?}");
        assert!(refused.stderr.contains(reason), "{}", refused.stderr);
        assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    }
}

/// The first file called `name` below `directory`.
fn find(directory: &std::path::Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(directory).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|file| file == name) {
            return Some(path);
        }
    }
    None
}

/// `upgrade plan --procedure …` offline with the install method and datastore given.
fn plan_offline(
    procedure: &str,
    install_method: &str,
    datastore_type: &str,
) -> crate::support::Run {
    let mut command = Netctl::new();
    command.args([
        "upgrade",
        "plan",
        "--procedure",
        procedure,
        "--from",
        VERSION,
        "--install-method",
        install_method,
        "--datastore-type",
        datastore_type,
        "--offline",
    ]);
    command.run()
}

/// The migration of an operator or Helm install, or of one already on the Kubernetes datastore,
/// is refused by the planner's generic rule — every runbook of the procedure fails its `appliesTo`
/// — naming the requirement that fails with the value found and the runbook's `why` (it used to
/// plan only the verification steps, silently); the manifest install on etcd is planned.
#[test]
fn the_migration_is_refused_where_there_is_no_etcd_install_to_move() {
    let why = "the operator and its Helm chart run Calico only on the Kubernetes datastore, so they have no etcd datastore to move, and a manifest install on the Kubernetes datastore has nothing to move";
    for (install_method, datastore_type, failed) in [
        (
            "operator",
            "kubernetes",
            "install methods `manifest` (this install: `operator`) and datastores `etcdv3` (this install: `kubernetes`)",
        ),
        (
            "helm",
            "etcdv3",
            "install methods `manifest` (this install: `helm`)",
        ),
        (
            "manifest",
            "kubernetes",
            "datastores `etcdv3` (this install: `kubernetes`)",
        ),
    ] {
        let refused = plan_offline("datastore-migration", install_method, datastore_type);
        assert_eq!(refused.code, Some(1), "{refused:?}");
        assert!(
            refused.stderr.contains(&format!(
                "the procedure `datastore-migration` does not apply to this install: runbook `datastore-migration` applies to {failed}: {why}\n"
            )),
            "{}",
            refused.stderr
        );
        assert!(
            refused
                .stderr
                .contains("`netctl upgrade plan` without `--to` lists what applies"),
            "{}",
            refused.stderr
        );
        assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    }
    let planned = plan_offline("datastore-migration", "manifest", "etcdv3");
    assert!(planned.success(), "{}", planned.stderr);
    assert!(planned.stdout.contains("datastore-migration/verify"));
}

/// The move from the `crd.projectcalico.org/v1` CRDs to the native `projectcalico.org/v3` ones
/// is refused, naming upstream's way (kube-controllers' DatastoreMigration `v1-to-v3`).
#[test]
fn the_v1_to_v3_crd_migration_is_refused_with_upstreams_way() {
    for procedure in ["crd-v3-migration", "v3-crd-migration", "crd-migration"] {
        let refused = plan_offline(procedure, "manifest", "kubernetes");
        assert_eq!(refused.code, Some(1), "{refused:?}");
        for said in [
            format!("netctl does not plan `{procedure}`"),
            "upstream's kube-controllers performs it".to_string(),
            "manifests/v3_projectcalico_org.yaml".to_string(),
            "manifests/migration.projectcalico.org_datastoremigrations.yaml".to_string(),
            "DatastoreMigration `v1-to-v3`".to_string(),
            "`spec.type: APIServerToCRDs`".to_string(),
            "`CALICO_API_GROUP=projectcalico.org/v3`".to_string(),
            "at `Complete` that removes the v1 CRDs".to_string(),
        ] {
            assert!(refused.stderr.contains(&said), "{said}: {}", refused.stderr);
        }
    }
}
