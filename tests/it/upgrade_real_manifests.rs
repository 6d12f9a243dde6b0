//! Upgrades of etcd manifest installs with manifests that carry what upstream's real ones carry, against
//! the strict in-process API server (which refuses a value of the wrong type as kube-apiserver does).
//!
//! The fixtures are written here from reading upstream's `calico-etcd.yaml` and `canal-etcd.yaml`
//! (v3.13 and v3.27): every document opens with `---` and a `# Source:` comment, the etcd Secret's
//! `data:` holds only comments (so it is null), ConfigMap values carry trailing comments, the CNI
//! configuration is a `|-` block, secret volumes use the octal modes `0400` (node agent) and `0440`
//! (kube-controllers, the last line of the file), and canal-etcd has its own names (`canal-config`,
//! `canal-node`) and a `configure-canal` Job. Empty documents and `--- # comment` separators are in
//! the stream too. A YAML 1.1 reader (kubectl's, and netctl's) reads `0400` as 256; a YAML 1.2
//! reader gives the string or 400, which a real API server refuses.
//!
//! The test plays the cluster's other actors as `upgrade_e2e.rs` does: rollouts are reported with
//! `set_status` and ready pods, and ClusterInformation's version is bumped between the kill after the
//! apply step and `--resume`. No network.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use crate::support::snapshot::netctl_snapshot;
use crate::support::{EtcdServer, KubeApiServer, Netctl};
use serde_json::Value;

const ROOT: &str = "/calico/resources/v3/projectcalico.org";
const MANIFEST_HOST: &str = "raw.githubusercontent.com/projectcalico/calico";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The two flavours of etcd manifest and the names each gives its objects.
#[derive(Clone, Copy)]
pub(crate) enum Flavour {
    Calico,
    Canal,
}

impl Flavour {
    fn file(self) -> &'static str {
        match self {
            Flavour::Calico => "calico-etcd.yaml",
            Flavour::Canal => "canal-etcd.yaml",
        }
    }

    fn config_map(self) -> &'static str {
        match self {
            Flavour::Calico => "calico-config",
            Flavour::Canal => "canal-config",
        }
    }

    fn node_agent(self) -> &'static str {
        match self {
            Flavour::Calico => "calico-node",
            Flavour::Canal => "canal-node",
        }
    }
}

/// An etcd manifest of `flavour` at `version`, with upstream's placeholder for the endpoints.
pub(crate) fn etcd_manifest(flavour: Flavour, version: &str) -> String {
    let config = flavour.config_map();
    let agent = flavour.node_agent();
    let flannel = match flavour {
        Flavour::Calico => String::new(),
        Flavour::Canal => format!(
            r#"        - name: flannel
          image: quay.io/coreos/flannel:v0.15.1
          env:
            - name: FLANNELD_ETCD_ENDPOINTS
              valueFrom:
                configMapKeyRef:
                  name: {config}
                  key: etcd_endpoints
          volumeMounts:
            - mountPath: /calico-secrets
              name: etcd-certs
"#
        ),
    };
    let canal_config = match flavour {
        Flavour::Calico => "  calico_backend: \"bird\"\n",
        Flavour::Canal => "  canal_iface: \"\"\n  masquerade: \"true\"\n",
    };
    let job = match flavour {
        Flavour::Calico => String::new(),
        // The Job is the same at both versions here: its pod template is immutable on a real
        // cluster, so a manifest that changed it could not be re-applied.
        Flavour::Canal => format!(
            r#"---
# Source: calico/templates/configure-canal.yaml
# Writes flannel's network configuration into etcd.
apiVersion: batch/v1
kind: Job
metadata:
  name: configure-canal
  namespace: kube-system
  labels:
    k8s-app: canal
spec:
  template:
    metadata:
      name: configure-canal
    spec:
      hostNetwork: true
      restartPolicy: OnFailure
      serviceAccountName: {agent}
      containers:
        - name: configure-flannel
          image: quay.io/coreos/etcd:v3.5.1
          command:
            - "etcdctl"
            - "set"
            - "/coreos.com/network/config"
            - '{{ "Network": "10.244.0.0/16", "Backend": {{"Type": "vxlan"}} }}'
          env:
            - name: ETCDCTL_PEERS
              valueFrom:
                configMapKeyRef:
                  name: {config}
                  key: etcd_endpoints
          volumeMounts:
            - mountPath: /calico-secrets
              name: etcd-certs
      volumes:
        - name: etcd-certs
          secret:
            secretName: calico-etcd-secrets
"#
        ),
    };
    format!(
        r#"---
# Source: calico/templates/calico-kube-controllers.yaml
# This manifest creates a Pod Disruption Budget for Controller to allow K8s Cluster Autoscaler to evict

apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: calico-kube-controllers
  namespace: kube-system
  labels:
    k8s-app: calico-kube-controllers
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      k8s-app: calico-kube-controllers
---
# Source: calico/templates/calico-node.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {agent}
  namespace: kube-system
---
# Source: calico/templates/calico-etcd-secrets.yaml
# The following contains k8s Secrets for use with a TLS enabled etcd cluster.
apiVersion: v1
kind: Secret
type: Opaque
metadata:
  name: calico-etcd-secrets
  namespace: kube-system
data:
  # Populate the following with etcd TLS configuration if desired, but leave blank if
  # not using TLS for etcd.
  # etcd-key: null
  # etcd-cert: null
  # etcd-ca: null
--- # an empty document follows, as a hand-edited manifest may have
---
# Source: calico/templates/calico-config.yaml
kind: ConfigMap
apiVersion: v1
metadata:
  name: {config}
  namespace: kube-system
data:
  # Configure this with the location of your etcd cluster.
  etcd_endpoints: "http://<ETCD_IP>:<ETCD_PORT>"
  etcd_ca: ""   # "/calico-secrets/etcd-ca"
  etcd_cert: "" # "/calico-secrets/etcd-cert"
  etcd_key: ""  # "/calico-secrets/etcd-key"
  typha_service_name: "none"
{canal_config}  veth_mtu: "0"
  cni_network_config: |-
    {{
      "name": "k8s-pod-network",
      "cniVersion": "0.3.1",
      "plugins": [
        {{
          "type": "calico",
          "etcd_endpoints": "__ETCD_ENDPOINTS__",
          "ipam": {{"type": "calico-ipam"}}
        }}
      ]
    }}
---
# Source: calico/templates/calico-node-rbac.yaml
kind: ClusterRole
apiVersion: rbac.authorization.k8s.io/v1
metadata:
  name: calico-node
rules:
  - apiGroups: [""]
    resources:
      - pods
      - nodes
      - namespaces
    verbs:
      - get
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: calico-node
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: calico-node
subjects:
- kind: ServiceAccount
  name: {agent}
  namespace: kube-system
---
# Source: calico/templates/calico-node.yaml
# This manifest installs the node agent on each node.
kind: DaemonSet
apiVersion: apps/v1
metadata:
  name: {agent}
  namespace: kube-system
  labels:
    k8s-app: {agent}
spec:
  selector:
    matchLabels:
      k8s-app: {agent}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  template:
    metadata:
      labels:
        k8s-app: {agent}
    spec:
      nodeSelector:
        kubernetes.io/os: linux
      hostNetwork: true
      serviceAccountName: {agent}
      terminationGracePeriodSeconds: 0
      priorityClassName: system-node-critical
      containers:
        - name: calico-node
          image: docker.io/calico/node:{version}
          env:
            - name: ETCD_ENDPOINTS
              valueFrom:
                configMapKeyRef:
                  name: {config}
                  key: etcd_endpoints
            - name: CALICO_NETWORKING_BACKEND
              value: "none"
            - name: FELIX_HEALTHENABLED
              value: "true"
          securityContext:
            privileged: true
          resources:
            requests:
              cpu: 250m
          volumeMounts:
            - mountPath: /calico-secrets
              name: etcd-certs
{flannel}      volumes:
        # Mount in the etcd TLS secrets with mode 400.
        # See https://kubernetes.io/docs/concepts/configuration/secret/
        - name: etcd-certs
          secret:
            secretName: calico-etcd-secrets
            defaultMode: 0400
{job}---
# Source: calico/templates/calico-kube-controllers.yaml
# See https://github.com/projectcalico/kube-controllers
apiVersion: apps/v1
kind: Deployment
metadata:
  name: calico-kube-controllers
  namespace: kube-system
  labels:
    k8s-app: calico-kube-controllers
spec:
  # The controllers can only have a single active instance.
  replicas: 1
  selector:
    matchLabels:
      k8s-app: calico-kube-controllers
  strategy:
    type: Recreate
  template:
    metadata:
      name: calico-kube-controllers
      namespace: kube-system
      labels:
        k8s-app: calico-kube-controllers
    spec:
      nodeSelector:
        kubernetes.io/os: linux
      hostNetwork: true
      containers:
        - name: calico-kube-controllers
          image: docker.io/calico/kube-controllers:{version}
          env:
            - name: ETCD_ENDPOINTS
              valueFrom:
                configMapKeyRef:
                  name: {config}
                  key: etcd_endpoints
          volumeMounts:
            # Mount in the etcd TLS secrets.
            - mountPath: /calico-secrets
              name: etcd-certs
      volumes:
        # Mount in the etcd TLS secrets with mode 400.
        # See https://kubernetes.io/docs/concepts/configuration/secret/
        - name: etcd-certs
          secret:
            secretName: calico-etcd-secrets
            defaultMode: 0440"#
    )
}

/// A sandboxed netctl on `etcd` (datastore) and `kube` (cluster), `USER=ops`, state in `$HOME/state`.
pub(crate) struct Operator {
    pub(crate) netctl: Netctl,
}

impl Operator {
    pub(crate) fn new(etcd: &EtcdServer, kube: &KubeApiServer) -> Operator {
        let mut netctl = Netctl::new();
        let config = format!(
            "{}  kubeconfig: {}\n",
            etcd.netctl_config_yaml(),
            serde_json::to_string(&kube.kubeconfig_path().display().to_string()).unwrap()
        );
        netctl.config_file(&config).env("USER", "ops");
        Operator { netctl }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.netctl.home().to_path_buf()
    }

    pub(crate) fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut command = self.netctl.command();
        command.args(args);
        if args.first() == Some(&"upgrade") && matches!(args.get(1), Some(&"apply" | &"status")) {
            command.arg("--state-dir").arg(self.home().join("state"));
        }
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("run netctl")
    }

    /// Serves `text` as the released `manifests/<file>` of `tag`; returns the mirror directory.
    pub(crate) fn mirror(&self, tag: &str, file: &str, text: &str) -> PathBuf {
        self.netctl.write_file(
            &format!("mirror/{MANIFEST_HOST}/{tag}/manifests/{file}"),
            text,
        );
        self.home().join("mirror")
    }
}

fn assert_success(output: &std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// Stores the objects of a manifest as an earlier `kubectl apply` left them (read as kubectl reads).
fn install(kube: &KubeApiServer, manifest: &str) {
    for object in netctl::yaml::read_values(manifest).expect("the fixture is valid YAML") {
        kube.put(object);
    }
}

fn set_version(etcd: &EtcdServer, version: &str) {
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        format!(
            r#"{{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{{"name":"default","uid":"c1","creationTimestamp":"2026-01-01T00:00:00Z"}},"spec":{{"calicoVersion":"{version}","clusterType":"k8s,bgp","datastoreReady":true}}}}"#
        ),
    );
}

/// Reports a finished rollout of `name` with `ready` of `total` containers ready in each pod (the
/// end-to-end tests' helper: pods with the template's images, as the controller makes them).
fn roll_out(kube: &KubeApiServer, plural: &str, name: &str, ready: usize, total: usize) {
    crate::upgrade_e2e::common::roll_out(kube, plural, name, ready, total)
}

fn secret_mode(kube: &KubeApiServer, plural: &str, name: &str) -> Value {
    let object = kube.get("apps/v1", plural, "kube-system", name).unwrap();
    object["spec"]["template"]["spec"]["volumes"][0]["secret"]["defaultMode"].clone()
}

/// Plans and applies the upgrade of a `flavour` etcd manifest install from v3.13.2 to v3.27.0:
/// discovered, planned and applied with the flavour's own object names, the octal modes sent as
/// the numbers kubectl sends.
fn upgrade_etcd_manifest_install(flavour: Flavour) {
    let etcd = EtcdServer::start();
    set_version(&etcd, "v3.13.2");
    let kube = KubeApiServer::start();
    install(&kube, &etcd_manifest(flavour, "v3.13.2"));
    assert_eq!(secret_mode(&kube, "daemonsets", flavour.node_agent()), 256);
    let operator = Operator::new(&etcd, &kube);
    let mirror = operator.mirror(
        "v3.27.0",
        flavour.file(),
        &etcd_manifest(flavour, "v3.27.0"),
    );

    let plan_file = operator.home().join("plan.json");
    let planned = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "-o",
            "json",
            "--out",
            plan_file.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&planned, "upgrade plan");
    let plan: Value = serde_json::from_slice(&planned.stdout).unwrap();
    assert_eq!(plan["facts"]["install_method"]["value"], "manifest");
    let expected_flavour = match flavour {
        Flavour::Calico => "calico",
        Flavour::Canal => "canal",
    };
    assert_eq!(plan["facts"]["manifest_flavor"]["value"], expected_flavour);
    assert_eq!(plan["facts"]["manifest_flavor"]["origin"], "discovered");
    // The plan's review of the overlay: the flavour's ConfigMap gets netctl's etcd endpoints.
    let diff = plan["manifest_previews"][0]["diff"].as_str().unwrap();
    assert!(
        diff.contains(&format!(
            "v1 ConfigMap kube-system/{}",
            flavour.config_map()
        )),
        "{diff}"
    );
    assert!(
        diff.contains("-  etcd_endpoints: http://<ETCD_IP>:<ETCD_PORT>"),
        "{diff}"
    );

    let apply = [
        "upgrade",
        "apply",
        "--plan",
        plan_file.to_str().unwrap(),
        "--mirror-dir",
        mirror.to_str().unwrap(),
        "--yes",
    ];
    let crashed = operator.run(
        &apply,
        &[(
            "NETCTL_TEST_CRASH_AFTER",
            "etcd-upgrade/apply-manifest:after",
        )],
    );
    assert_eq!(
        crashed.status.signal(),
        Some(9),
        "the run was not killed after the apply: {}",
        text(&crashed.stderr)
    );

    // What was applied is what kubectl would send: the modes are the numbers 256 and 288 (the
    // strict server refuses the strings), and the flavour's own objects were updated.
    assert_eq!(secret_mode(&kube, "daemonsets", flavour.node_agent()), 256);
    assert_eq!(
        secret_mode(&kube, "deployments", "calico-kube-controllers"),
        288
    );
    let agent = kube
        .get("apps/v1", "daemonsets", "kube-system", flavour.node_agent())
        .unwrap();
    assert_eq!(
        agent["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/calico/node:v3.27.0"
    );
    let owners = kube.owners("apps/v1", "daemonsets", "kube-system", flavour.node_agent());
    assert!(
        owners.values().any(|manager| manager == "netctl"),
        "{owners:?}"
    );
    let config = kube
        .get("v1", "configmaps", "kube-system", flavour.config_map())
        .unwrap();
    assert!(
        config["data"]["etcd_endpoints"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{config}"
    );
    assert!(
        config["data"]["cni_network_config"]
            .as_str()
            .unwrap()
            .contains("\"etcd_endpoints\": \"__ETCD_ENDPOINTS__\""),
        "{config}"
    );
    // No object under the other flavour's names appeared.
    let other = match flavour {
        Flavour::Calico => Flavour::Canal,
        Flavour::Canal => Flavour::Calico,
    };
    assert!(
        kube.get("v1", "configmaps", "kube-system", other.config_map())
            .is_none()
    );
    assert!(
        kube.get("apps/v1", "daemonsets", "kube-system", other.node_agent())
            .is_none()
    );

    // The cluster does its part; the run resumes and waits on the flavour's node agent.
    let lock = {
        let status = operator.run(&["upgrade", "status", "-o", "json"], &[]);
        let status: Value = serde_json::from_slice(&status.stdout).unwrap();
        status["lock"]["id"].as_str().unwrap().to_string()
    };
    assert_success(&operator.run(&["upgrade", "unlock", &lock], &[]), "unlock");
    roll_out(&kube, "daemonsets", flavour.node_agent(), 1, 2);
    roll_out(&kube, "deployments", "calico-kube-controllers", 1, 1);
    set_version(&etcd, "v3.27.0");
    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--mirror-dir",
            mirror.to_str().unwrap(),
            "--yes",
        ],
        &[],
    );
    assert_success(&resumed, "resume");
    let status = operator.run(&["upgrade", "status", "-o", "json"], &[]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        status["checkpoint"]["run"]["state"], "completed",
        "{status}"
    );
}

#[test]
fn calico_etcd_manifest_upgrade_sends_the_octal_modes_as_numbers() {
    upgrade_etcd_manifest_install(Flavour::Calico);
}

#[test]
fn canal_etcd_manifest_install_is_discovered_planned_and_applied_with_its_own_names() {
    upgrade_etcd_manifest_install(Flavour::Canal);
}

#[test]
fn a_policy_only_plan_on_etcd_is_refused_before_anything_is_written() {
    let etcd = EtcdServer::start();
    set_version(&etcd, "v3.25.0");
    let kube = KubeApiServer::start();
    install(&kube, &etcd_manifest(Flavour::Calico, "v3.25.0"));
    let before = etcd.dump_prefix_bytes("/calico/");
    let operator = Operator::new(&etcd, &kube);
    let planned = operator.run(
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.29.0",
            "--set",
            "manifest_flavor=policy-only",
        ],
        &[],
    );
    assert_eq!(planned.status.code(), Some(1), "{}", text(&planned.stderr));
    netctl_snapshot!(&planned);
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));
}

/// Sends one request to the test server and returns the status code and the body.
fn send(
    kube: &KubeApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // reqwest is built without a crypto provider (netctl's main installs ring); plain HTTP here.
    let _ = rustls::crypto::ring::default_provider().install_default();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let response = client
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{}{path}", kube.url()),
            )
            .header("content-type", content_type)
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let code = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (code, body)
    })
}

/// A DaemonSet body with `mode` as its secret volume's `defaultMode` (as JSON text).
fn daemon_set_with_mode(mode: &str) -> String {
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{{"name":"calico-node","namespace":"kube-system"}},
            "spec":{{"selector":{{"matchLabels":{{"k8s-app":"calico-node"}}}},
            "template":{{"metadata":{{"labels":{{"k8s-app":"calico-node"}}}},
            "spec":{{"containers":[{{"name":"calico-node","image":"x"}}],
            "volumes":[{{"name":"etcd-certs","secret":{{"secretName":"calico-etcd-secrets","defaultMode":{mode}}}}}]}}}}}}}}"#
    )
}

#[test]
fn the_strict_server_refuses_a_string_mode_as_kube_apiserver_does() {
    let kube = KubeApiServer::start();
    let path = "/apis/apps/v1/namespaces/kube-system/daemonsets";
    let apply_path = format!("{path}/calico-node?fieldManager=netctl&force=true");

    // Server-side apply: structured-merge-diff's conversion error, a 500 without a reason.
    let (code, status) = send(
        &kube,
        "PATCH",
        &apply_path,
        "application/apply-patch+yaml",
        &daemon_set_with_mode("\"0400\""),
    );
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert!(
        status.get("reason").is_none_or(|reason| reason == ""),
        "{status}"
    );
    assert_eq!(
        status["message"],
        "failed to create typed patch object (kube-system/calico-node; apps/v1, Kind=DaemonSet): .spec.template.spec.volumes[0].secret.defaultMode: expected numeric (int or float), got string"
    );

    // Create: a decoding error, 400 BadRequest.
    let (code, status) = send(
        &kube,
        "POST",
        path,
        "application/json",
        &daemon_set_with_mode("\"0400\""),
    );
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "DaemonSet in version \"v1\" cannot be handled as a DaemonSet: json: cannot unmarshal string into Go struct field DaemonSet.spec.template.spec.volumes[0].secret.defaultMode of type int32"
    );

    // Unknown fields: refused by apply, refused by a strict create, dropped otherwise.
    let unknown = daemon_set_with_mode("256").replace("\"secretName\"", "\"secretNmae\"");
    let (code, status) = send(
        &kube,
        "PATCH",
        &apply_path,
        "application/apply-patch+yaml",
        &unknown,
    );
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"].as_str().unwrap().ends_with(
            ".spec.template.spec.volumes[0].secret.secretNmae: field not declared in schema"
        ),
        "{status}"
    );
    let (code, status) = send(
        &kube,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        "application/json",
        &unknown,
    );
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "strict decoding error: unknown field \"spec.template.spec.volumes[0].secret.secretNmae\""
    );

    // The number is accepted and stored.
    let (code, stored) = send(
        &kube,
        "PATCH",
        &apply_path,
        "application/apply-patch+yaml",
        &daemon_set_with_mode("256"),
    );
    assert_eq!(code, 201, "{stored}");
    assert_eq!(secret_mode(&kube, "daemonsets", "calico-node"), 256);
}
