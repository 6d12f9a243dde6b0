//! `netctl node run` against a real etcd: without `--node-image`, the node image tag follows the
//! release the cluster reports in ClusterInformation `default`.

use crate::support::{EtcdServer, Netctl};

#[test]
fn the_node_image_follows_the_cluster_release() {
    let etcd = EtcdServer::start();
    etcd.put(
        "/calico/resources/v3/projectcalico.org/clusterinformations/default",
        r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.27.3"}}"#,
    );
    let mut netctl = Netctl::new();
    netctl
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint())
        .args([
            "node",
            "run",
            "--dry-run",
            "--engine",
            "docker",
            "--name",
            "node-1",
        ]);
    let output = netctl.output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(" quay.io/calico/node:v3.27.3\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("ETCD_ENDPOINTS={}", etcd.endpoint())),
        "{stdout}"
    );
}
