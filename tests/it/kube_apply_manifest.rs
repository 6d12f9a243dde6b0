//! `kube.apply` of a Kubernetes-datastore manifest written with what upstream's `calico.yaml` /
//! `canal.yaml` carry — CustomResourceDefinitions (`creationTimestamp: null`, `|-` descriptions,
//! `x-kubernetes-*` extensions), comments, an empty document, `---` variants, quoted ConfigMap
//! values and a configMap volume — against the strict in-process API server, which decodes each
//! body into its `k8s-openapi` type as kube-apiserver does. The fixture is written here from
//! reading upstream's manifests (facts only).

use crate::exec_common::*;
use crate::support::{EtcdServer, KubeApiServer};
use serde_json::json;

const MANIFEST: &str = r#"---
# Source: calico/templates/calico-config.yaml
# This ConfigMap is used to configure a self-hosted Canal installation.
kind: ConfigMap
apiVersion: v1
metadata:
  name: canal-config
  namespace: kube-system
data:
  typha_service_name: "none"
  canal_iface: ""
  masquerade: "true"
  veth_mtu: "0"
  net-conf.json: |
    {
      "Network": "10.244.0.0/16",
      "Backend": {
        "Type": "vxlan"
      }
    }
---
# Source: calico/templates/kdd-crds.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: (devel)
  creationTimestamp: null
  name: tiers.crd.projectcalico.org
spec:
  group: crd.projectcalico.org
  names:
    kind: Tier
    listKind: TierList
    plural: tiers
    singular: tier
  preserveUnknownFields: false
  scope: Cluster
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          apiVersion:
            description: |-
              APIVersion defines the versioned schema of this representation of an object.
              Servers should convert recognized schemas to the latest internal value.
            type: string
          spec:
            description: TierSpec contains the specification for a security policy tier resource.
            properties:
              order:
                description: |-
                  Order is an optional field that specifies the order in which the tier is applied.
                type: number
            type: object
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
        type: object
    served: true
    storage: true
--- # the next document is empty
---
# Source: calico/templates/calico-node.yaml
kind: DaemonSet
apiVersion: apps/v1
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
      terminationGracePeriodSeconds: 0
      containers:
        - name: calico-node
          image: docker.io/calico/node:v3.29.7
          env:
            # Use Kubernetes API as the backing datastore.
            - name: DATASTORE_TYPE
              value: "kubernetes"
            - name: FELIX_IPINIPMTU
              valueFrom:
                configMapKeyRef:
                  name: canal-config
                  key: veth_mtu
          resources:
            requests:
              cpu: 250m
        - name: kube-flannel
          image: docker.io/flannel/flannel:v0.24.4
          volumeMounts:
          - mountPath: /etc/kube-flannel/
            name: flannel-cfg
      volumes:
        # Used by flannel.
        - name: flannel-cfg
          configMap:
            name: canal-config
"#;

#[test]
fn a_manifest_with_crds_and_comments_applies_with_its_types_against_the_strict_server() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let kube = KubeApiServer::start();
    let mut operator = Operator::new(&etcd);
    let config = format!(
        "{}  kubeconfig: {}\n",
        operator.config(),
        serde_json::to_string(&kube.kubeconfig_path().display().to_string()).unwrap()
    );
    operator.netctl.config_file(&config);
    let apply = step(
        "upgrade/apply-manifest",
        "Apply the manifest",
        action(
            "kube.apply",
            json!({"source": {"inline": MANIFEST}, "server_side": true, "force_conflicts": true}),
        ),
    );
    let plan_file = operator.write_plan(&plan(vec![apply]));
    let output = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));

    let crd = kube
        .get(
            "apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            "",
            "tiers.crd.projectcalico.org",
        )
        .expect("the CRD was applied");
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(
        schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    assert_eq!(crd["spec"]["preserveUnknownFields"], false);
    let config = kube
        .get("v1", "configmaps", "kube-system", "canal-config")
        .unwrap();
    // Quoted values stay strings (a YAML 1.1 reader would otherwise send the boolean true).
    assert_eq!(config["data"]["masquerade"], "true");
    assert!(
        config["data"]["net-conf.json"]
            .as_str()
            .unwrap()
            .contains("\"Type\": \"vxlan\""),
        "{config}"
    );
    let daemon_set = kube
        .get("apps/v1", "daemonsets", "kube-system", "canal")
        .unwrap();
    let pod = &daemon_set["spec"]["template"]["spec"];
    assert_eq!(pod["terminationGracePeriodSeconds"], 0);
    assert_eq!(pod["hostNetwork"], true);
    assert_eq!(pod["containers"][0]["env"][0]["value"], "kubernetes");
    // The CRD was applied before the objects (CRDs first), one apply per object.
    let applies: Vec<String> = kube
        .requests()
        .into_iter()
        .filter(|request| request.starts_with("PATCH"))
        .collect();
    assert_eq!(applies.len(), 3, "{applies:?}");
    assert!(
        applies[0].contains("customresourcedefinitions"),
        "{applies:?}"
    );
}
