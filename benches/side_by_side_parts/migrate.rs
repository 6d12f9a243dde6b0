//! The migration export row of the side-by-side benchmark: `datastore migrate export` of a locked
//! etcd datastore holding N host endpoints and the IPAM of N allocations in /26 blocks (4,096
//! blocks and their handles for 100,000), next to `etcdctl get --prefix /calico` reading every key
//! of the same datastore. The export must take at most twice as long, in at most 128 MiB.

use super::ipam::load_ipam;
use super::*;

pub(super) fn migrate(options: &Options, tools: &Tools, size: usize, report: &mut Report) {
    let thousands = size / 1000;
    let blocks = (size * 4096).div_ceil(100_000);
    eprintln!("migrate: {size} host endpoints, {size} allocations in {blocks} blocks");
    let etcd = EtcdServer::start();
    let endpoint = etcd.endpoint();
    load_host_endpoints(&endpoint, size, false);
    load_ipam(&endpoint, size, blocks, false);
    // Locked, as the export requires.
    let locked = br#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"clusterGUID":"4f0cde3c2f2a4f4e9c0f2b6f3c8f6d10","calicoVersion":"v3.31.3","clusterType":"k8s,bgp","datastoreReady":false}}"#;
    runtime().block_on(async {
        let mut client = connect(&endpoint).await;
        client
            .put(CLUSTER_INFORMATION, locked.to_vec(), None)
            .await
            .expect("lock the datastore");
    });
    let export = tools.netctl(&endpoint, &["datastore", "migrate", "export"]);
    let read_all = tools.etcdctl(&endpoint, &["get", "--prefix", "/calico"]);
    let figures = interleaved(
        options,
        tools,
        [(&export, true), (&read_all, true)],
        |_| {},
        |_| {},
    );
    let memory_met = figures[0].peak_kib > 0 && figures[0].peak_kib <= 128 * 1024;
    report.ratio_row(
        &format!("`datastore migrate export`, {thousands}k host endpoints + {blocks} IPAM blocks"),
        figures,
        "`etcdctl get --prefix /calico`",
        Some(2.0),
        Some(("peak RSS ≤ 128 MiB", memory_met)),
    );
}
