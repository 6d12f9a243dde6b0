//! Helm installs across the ownership edge (v3.20 → v3.27) and after it (v3.24 → v3.27), with a
//! stand-in `helm` that records its argv.

use std::path::PathBuf;

use serde_json::json;

use super::common::*;
use crate::exec_common::text;
use crate::support::KubeApiServer;
use crate::support::snapshot::netctl_snapshot;

/// Puts a `helm` stand-in first on `PATH` that appends its argv (one argument a line, then `--`) to
/// `$HOME/helm-argv` and succeeds. `history` prints what `helm history -o json` prints (a JSON
/// array of `{revision, updated, status, chart, app_version, description}`): revision 1, deployed.
/// For `install` it also does what Helm leaves behind: it creates
/// the release secret `sh.helm.release.v1.<release>.v1` (labels `owner=helm`, `name`,
/// `status=deployed`) in the `--namespace` it was given, through the API server. There is no real
/// Helm here: the test proves netctl runs exactly the command the plan shows, not what Helm does
/// with it.
pub(crate) fn install_helm_stand_in(operator: &Operator, kube: &KubeApiServer) -> PathBuf {
    let curl = crate::support::find_program("curl", "apt-get install curl");
    let script = operator.home().join("bin").join("helm");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
printf '%s\n' "$@" -- >> "$HOME/helm-argv"
if [ "$1" = history ]; then
  echo '[{{"revision":1,"updated":"2026-11-01T10:00:00.000000000Z","status":"deployed","chart":"tigera-operator-v3.24.5","app_version":"v3.24.5","description":"Install complete"}}]'
  exit 0
fi
[ "$1" = install ] || exit 0
release=$2
while [ $# -gt 0 ]; do
  [ "$1" = --namespace ] && namespace=$2
  shift
done
exec {curl} --silent --show-error --fail --output /dev/null -X POST \
  -H 'Content-Type: application/json' \
  --data "{{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"helm.sh/release.v1\",\"metadata\":{{\"name\":\"sh.helm.release.v1.$release.v1\",\"namespace\":\"$namespace\",\"labels\":{{\"owner\":\"helm\",\"name\":\"$release\",\"status\":\"deployed\",\"version\":\"1\"}}}}}}" \
  "{url}/api/v1/namespaces/$namespace/secrets"
"#,
            curl = curl.display(),
            url = kube.url()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    operator.home().join("helm-argv")
}

/// A Helm install of v3.20: the release `calico` in `release_namespace` (two revisions), the
/// operator and its objects in `tigera-operator`, and secrets beside the release that must survive
/// the migration.
pub(crate) fn helm_cluster(release_namespace: &str) -> KubeApiServer {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.20.1");
    let helm = json!({"meta.helm.sh/release-name": "calico",
                      "meta.helm.sh/release-namespace": release_namespace});
    let labels = json!({"app.kubernetes.io/managed-by": "Helm"});
    let metadata = |name: &str, namespace: Option<&str>| {
        let mut metadata = json!({"name": name, "annotations": helm, "labels": labels});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        metadata
    };
    kube.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tigera-operator"}}),
    );
    let mut deployment = operator_deployment("quay.io/tigera/operator:v1.20.4");
    deployment["metadata"]["annotations"] = helm.clone();
    kube.put(deployment);
    kube.put(json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": metadata("tigera-operator", Some("tigera-operator"))}));
    kube.put(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": metadata("tigera-operator", None), "rules": []}),
    );
    kube.put(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": metadata("tigera-operator", None),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tigera-operator"},
                    "subjects": [{"kind": "ServiceAccount", "name": "tigera-operator", "namespace": "tigera-operator"}]}));
    kube.put(
        json!({"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
                    "metadata": metadata("tigera-operator", None), "spec": {"privileged": false}}),
    );
    kube.put(
        json!({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
                    "metadata": metadata("default", None), "spec": {"variant": "Calico"}}),
    );
    kube.put(
        json!({"apiVersion": "operator.tigera.io/v1", "kind": "APIServer",
                    "metadata": metadata("default", None), "spec": {}}),
    );
    for (name, release) in [
        ("sh.helm.release.v1.calico.v1", "calico"),
        ("sh.helm.release.v1.calico.v2", "calico"),
        ("sh.helm.release.v1.ingress.v1", "ingress"),
    ] {
        kube.put(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                        "metadata": {"name": name, "namespace": release_namespace,
                                     "labels": {"owner": "helm", "name": release, "status": "deployed"}},
                        "data": {}}));
    }
    kube.put(json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "app-credentials", "namespace": release_namespace}, "data": {}}));
    kube
}

pub(crate) const OPERATOR_CRDS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: installations.operator.tigera.io
spec:
  group: operator.tigera.io
  names:
    kind: Installation
    listKind: InstallationList
    plural: installations
    singular: installation
  scope: Cluster
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;

#[test]
fn helm_install_from_v3_20_to_v3_27_moves_the_release_into_the_operator_namespace() {
    // The old release was installed into `kube-system`, not the `default` the old chart asked
    // for: discovery finds it there, and the listing and the deletion go there.
    let kube = helm_cluster("kube-system");
    let operator = kubernetes_operator(&kube);
    let helm_argv = install_helm_stand_in(&operator, &kube);
    let mirror = mirror(&operator, "v3.27.0", "operator-crds.yaml", OPERATOR_CRDS);
    let (plan_file, plan) = plan(&operator, "v3.27.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "helm");
    assert_eq!(plan["facts"]["install_method"]["origin"], "discovered");
    assert_eq!(plan["facts"]["helm_release"]["value"], "calico");
    assert_eq!(
        plan["facts"]["operator_namespace"]["value"],
        "tigera-operator"
    );
    assert_eq!(
        plan["facts"]["helm_release_namespace"],
        json!({"value": "kube-system", "origin": "discovered"})
    );

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    let resume = Apply::resume().mirror(&mirror);
    // Killed as `helm install` is about to start: Helm never ran and its release secret is not
    // there, so the resume runs it. That run is killed right after Helm finished, before the
    // checkpoint records it.
    apply_killed_at(
        &operator,
        &apply,
        "helm-ownership-migration/install-chart:before",
    );
    assert!(!helm_argv.exists(), "helm ran before the kill point");
    apply_killed_at(
        &operator,
        &resume,
        "helm-ownership-migration/install-chart:after",
    );
    assert_eq!(
        status_json(&operator)["checkpoint"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|step| step["id"] == "helm-ownership-migration/install-chart")
            .map(|step| step["state"].clone()),
        Some(json!("running")),
        "the kill left the step unrecorded"
    );

    // Every object of the old chart now names the release in the operator namespace.
    for (api_version, plural, namespace, name) in [
        ("operator.tigera.io/v1", "installations", "", "default"),
        ("operator.tigera.io/v1", "apiservers", "", "default"),
        (
            "policy/v1beta1",
            "podsecuritypolicies",
            "",
            "tigera-operator",
        ),
        (
            "apps/v1",
            "deployments",
            "tigera-operator",
            "tigera-operator",
        ),
        (
            "v1",
            "serviceaccounts",
            "tigera-operator",
            "tigera-operator",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "clusterroles",
            "",
            "tigera-operator",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "clusterrolebindings",
            "",
            "tigera-operator",
        ),
    ] {
        let object = kube.get(api_version, plural, namespace, name).unwrap();
        assert_eq!(
            object["metadata"]["annotations"],
            json!({"meta.helm.sh/release-name": "calico", "meta.helm.sh/release-namespace": "tigera-operator"}),
            "{plural} {name}"
        );
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "Helm"
        );
    }
    // The CRDs were server-side applied before the chart.
    let crd = kube
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            "installations.operator.tigera.io",
        )
        .expect("the operator CRDs were applied");
    assert_eq!(crd["spec"]["group"], "operator.tigera.io");
    let owners = kube.owners(
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "",
        "installations.operator.tigera.io",
    );
    assert!(
        owners.values().any(|manager| manager == "netctl"),
        "{owners:?}"
    );
    // Helm ran once, with exactly the plan's argv.
    assert_eq!(
        std::fs::read_to_string(&helm_argv).expect("helm ran"),
        "install\ncalico\nprojectcalico/tigera-operator\n--version\nv3.27.0\n--namespace\ntigera-operator\n--\n"
    );

    roll_out_in(
        &kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    set_kube_version(&kube, "v3.27.0");
    // The operator rolled the node agents and reports its components available.
    node_agent_pods(
        &kube,
        "calico-system",
        &[("node-1", "v3.27.0"), ("node-2", "v3.27.0")],
    );
    operator_reports_available(&kube);

    // `helm install` was killed after it ran, and is not idempotent: the resume finds its
    // postcondition (the deployed release secret in the operator namespace) and does not run it
    // again. Unattended, the run then lists the old release's secrets and stops at the gate before
    // deleting them.
    let stopped = operator.apply(&resume);
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let stderr = text(&stopped.stderr);
    assert!(
        stderr.contains(
            "step `helm-ownership-migration/install-chart` was interrupted; its postcondition holds, so it is not run again"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "found 2 secrets in `kube-system` matching `name=calico,owner=helm`: sh.helm.release.v1.calico.v1, sh.helm.release.v1.calico.v2"
        ),
        "the listing is shown before the gate: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv).expect("helm ran"),
        "install\ncalico\nprojectcalico/tigera-operator\n--version\nv3.27.0\n--namespace\ntigera-operator\n--\n",
        "helm install ran exactly once across the kills"
    );
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["step"], "helm-ownership-migration/confirm-delete-old-release",
        "stderr: {stderr}\nsteps: {}",
        status["checkpoint"]["steps"]
    );
    assert_eq!(
        status["checkpoint"]["outputs"]["old_release_secrets"],
        json!([
            "sh.helm.release.v1.calico.v1",
            "sh.helm.release.v1.calico.v2"
        ])
    );
    assert_eq!(
        kube.names("v1", "secrets"),
        [
            "kube-system/app-credentials",
            "kube-system/sh.helm.release.v1.calico.v1",
            "kube-system/sh.helm.release.v1.calico.v2",
            "kube-system/sh.helm.release.v1.ingress.v1",
            "tigera-operator/sh.helm.release.v1.calico.v1",
        ],
        "nothing deleted before the gate"
    );

    let finished = operator.apply(&resume.clone().yes());
    assert_success(&finished, "resume");
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert_eq!(
        kube.names("v1", "secrets"),
        [
            "kube-system/app-credentials",
            "kube-system/sh.helm.release.v1.ingress.v1",
            "tigera-operator/sh.helm.release.v1.calico.v1",
        ],
        "only the old release's secrets are deleted; the new release keeps its own"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv)
            .unwrap()
            .matches("install")
            .count(),
        1,
        "helm install ran exactly once across the kills"
    );
}

/// The plan lists and deletes the old release where discovery found it; a saved plan is refused when
/// the release has moved since, naming the fact, before anything is changed.
#[test]
fn a_saved_helm_plan_is_refused_when_the_release_moved() {
    let kube = helm_cluster("kube-system");
    let operator = kubernetes_operator(&kube);
    let (plan_file, _) = plan(&operator, "v3.27.0", &[]);
    let mut deployment = kube
        .get(
            "apps/v1",
            "deployments",
            "tigera-operator",
            "tigera-operator",
        )
        .unwrap();
    deployment["metadata"]["annotations"]["meta.helm.sh/release-namespace"] = json!("default");
    kube.put(deployment);
    kube.put(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                    "metadata": {"name": "sh.helm.release.v1.calico.v3", "namespace": "default",
                                 "labels": {"owner": "helm", "name": "calico", "status": "deployed"}},
                    "data": {}}));
    let before = install_objects(&kube);
    let refused = operator.apply(&Apply::plan(&plan_file).yes());
    netctl_snapshot!(&refused);
    assert_eq!(before, install_objects(&kube), "nothing changed");
}

/// The migration's dry-run against the cluster: the listing of the old release's secrets is a real
/// read (it changes nothing), Helm is only shown, and the deletion is a server dry-run.
#[test]
fn helm_ownership_dry_run_transcript() {
    let kube = helm_cluster("kube-system");
    let operator = kubernetes_operator(&kube);
    let helm_argv = install_helm_stand_in(&operator, &kube);
    let mirror = mirror(&operator, "v3.27.0", "operator-crds.yaml", OPERATOR_CRDS);
    let (plan_file, _) = plan(&operator, "v3.27.0", &[]);
    dry_run_snapshot(
        &operator,
        None,
        Some(&kube),
        &plan_file,
        &mirror,
        "helm_v3_20_to_v3_27_dry_run",
    );
    assert!(!helm_argv.exists(), "a dry-run does not run helm");
}

#[test]
fn helm_install_from_v3_24_to_v3_27_upgrades_the_release_in_place() {
    let kube = KubeApiServer::start();
    set_kube_version(&kube, "v3.24.5");
    kube.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tigera-operator"}}),
    );
    let mut deployment = operator_deployment("quay.io/tigera/operator:v1.28.5");
    deployment["metadata"]["annotations"] = json!({"meta.helm.sh/release-name": "calico",
                                                   "meta.helm.sh/release-namespace": "tigera-operator"});
    kube.put(deployment);
    kube.put(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                    "metadata": {"name": "sh.helm.release.v1.calico.v1", "namespace": "tigera-operator",
                                 "labels": {"owner": "helm", "name": "calico", "status": "deployed"}},
                    "data": {}}));
    let operator = kubernetes_operator(&kube);
    let helm_argv = install_helm_stand_in(&operator, &kube);
    let mirror = mirror(&operator, "v3.27.0", "operator-crds.yaml", OPERATOR_CRDS);
    let (plan_file, plan) = plan(&operator, "v3.27.0", &[]);
    assert_eq!(plan["facts"]["install_method"]["value"], "helm");
    assert_eq!(
        plan["facts"]["operator_namespace"]["value"],
        "tigera-operator"
    );
    assert!(
        !step_ids(&plan)
            .iter()
            .any(|id| id.starts_with("helm-ownership-migration/")),
        "the release already lives with the operator: {:?}",
        step_ids(&plan)
    );

    let apply = Apply::plan(&plan_file).mirror(&mirror).yes();
    // Killed after the CRDs and before Helm ran: Helm has not been called yet.
    apply_killed_at(&operator, &apply, "helm-upgrade/apply-operator-crds:after");
    assert!(!helm_argv.exists(), "helm ran before the kill point");
    assert!(
        kube.get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            "installations.operator.tigera.io",
        )
        .is_some()
    );
    roll_out_in(
        &kube,
        "tigera-operator",
        "deployments",
        "tigera-operator",
        1,
        1,
    );
    set_kube_version(&kube, "v3.27.0");
    // The operator rolled the node agents and reports its components available.
    node_agent_pods(
        &kube,
        "calico-system",
        &[("node-1", "v3.27.0"), ("node-2", "v3.27.0")],
    );
    operator_reports_available(&kube);

    resume_to_the_end(&operator, &mirror);
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv).expect("helm ran"),
        "repo\nupdate\nprojectcalico\n--\n\
         history\ncalico\n--namespace\ntigera-operator\n--max\n1\n-o\njson\n--\n\
         upgrade\ncalico\nprojectcalico/tigera-operator\n--version\nv3.27.0\n--namespace\ntigera-operator\n--\n"
    );
    assert_eq!(
        kube.names("v1", "secrets"),
        ["tigera-operator/sh.helm.release.v1.calico.v1"],
        "no release secret is deleted on this path"
    );

    // The verification on this path reads the operator's TigeraStatus (issue 30, item 1).
    let verify = operator.run(&["upgrade", "verify"], &[]);
    assert_success(&verify, "upgrade verify");
    assert!(
        text(&verify.stdout)
            .contains("ok          tigera-status: all 2 TigeraStatus object(s) are Available"),
        "{}",
        text(&verify.stdout)
    );

    // The rollback: `helm rollback` to the revision recorded before the upgrade; the CRDs and
    // the repository refresh have nothing to undo.
    std::fs::remove_file(&helm_argv).unwrap();
    // Its verification finds the node agents still at v3.27.0 (the operator has not rolled them
    // back yet) and stops there; once the operator did, the resume verifies and completes.
    let rolled = operator.run(&["upgrade", "rollback", "--yes"], &[]);
    let stderr = text(&rolled.stderr);
    assert_eq!(rolled.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("verification failed at `undo/verify`")
            && stderr.contains("runs `v3.27.0`"),
        "{stderr}"
    );
    node_agent_pods(
        &kube,
        "calico-system",
        &[("node-1", "v3.24.5"), ("node-2", "v3.24.5")],
    );
    let resumed = operator.apply(&Apply::resume().yes());
    assert_success(&resumed, "rollback resumed");
    let shown = text(&rolled.stdout);
    assert!(
        shown.contains("undo/helm-upgrade/upgrade-release")
            && shown.contains("helm rollback calico --namespace tigera-operator --wait 1"),
        "{shown}"
    );
    assert_eq!(
        std::fs::read_to_string(&helm_argv).expect("helm ran"),
        "rollback\ncalico\n--namespace\ntigera-operator\n--wait\n1\n--\n"
    );
    let listed = operator.run(&["upgrade", "history", "-o", "json"], &[]);
    let runs: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(runs[0]["result"], "rolled-back", "{runs:#}");
}
