//! The IPAM rows of the side-by-side benchmark: `ipam show` and `ipam check` on a datastore with
//! N allocations (and their handles) in /26 blocks — 4,096 blocks for 100,000 allocations, as the
//! IPAM issue sets it — and N workload endpoints, next to `etcdctl get --prefix` reading the same
//! keys, plus the cost of `ipam check` per allocation at each size (it must grow linearly).
//!
//! The data is written with raw etcd transactions of 100 puts, as upstream's allocator and CNI
//! plugin would have stored it (blocks encoded as v3.31 writes them). One allocation in a hundred
//! has no workload endpoint (a leak), so the check has problems to name.

use netctl::datastore::etcd::ipam_encoding::{block_key, encode_block, handle_key};
use netctl::ipam::{AllocationBlock, BlockEncoding, Cidr};

use super::*;

/// Allocations per /26 block: 100,000 in 4,096 blocks.
fn blocks_for(allocations: usize) -> usize {
    (allocations * 4096).div_ceil(100_000)
}

pub(super) fn ipam(options: &Options, tools: &Tools, size: usize, report: &mut Report) {
    let thousands = size / 1000;
    let blocks = blocks_for(size);
    eprintln!("ipam: {size} allocations in {blocks} blocks, {size} workload endpoints");
    let etcd = EtcdServer::start();
    let endpoint = etcd.endpoint();
    load_ipam(&endpoint, size, blocks);

    let show = tools.netctl(&endpoint, &["ipam", "show", "--show-blocks"]);
    let read_blocks = tools.etcdctl(
        &endpoint,
        &["get", "--prefix", "/calico/ipam/v2/assignment/"],
    );
    let figures = interleaved(
        options,
        tools,
        [(&show, true), (&read_blocks, true)],
        |_| {},
        |_| {},
    );
    let show_figure = figures[0];
    report.ratio_row(
        &format!("`ipam show --show-blocks`, {thousands}k allocations in {blocks} blocks"),
        figures,
        "`etcdctl get --prefix` of the blocks",
        None,
        (size == 100_000).then_some((
            "≤ 1 s",
            !show_figure.timed_out && show_figure.seconds <= 1.0,
        )),
    );

    let check = tools.netctl(&endpoint, &["ipam", "check"]);
    let read_all = tools.etcdctl(&endpoint, &["get", "--prefix", "/calico/"]);
    let figures = interleaved(
        options,
        tools,
        [(&check, true), (&read_all, true)],
        |_| {},
        |_| {},
    );
    let check_figure = figures[0];
    let memory_met = check_figure.peak_kib > 0 && check_figure.peak_kib <= 256 * 1024;
    if !check_figure.timed_out {
        report
            .ipam_per_allocation
            .push((size, check_figure.seconds / size as f64));
    }
    report.ratio_row(
        &format!("`ipam check`, {thousands}k allocations, handles and workload endpoints"),
        figures,
        "`etcdctl get --prefix /calico/` (IPAM and endpoint keys)",
        (size == 100_000).then_some(3.0),
        (size == 100_000).then_some(("peak RSS ≤ 256 MiB", memory_met)),
    );
}

/// The check's cost per allocation at the smallest and largest size measured.
pub(super) fn linearity(report: &mut Report) {
    let figures = report.ipam_per_allocation.clone();
    let (Some((small, small_each)), Some((large, large_each))) = (figures.first(), figures.last())
    else {
        return;
    };
    if small == large {
        return;
    }
    let growth = large_each / small_each;
    let met = growth <= 1.5;
    report.add(Row {
        work: format!(
            "`ipam check` per allocation: {:.1} µs at {small}, {:.1} µs at {large} ({growth:.2}×)",
            small_each * 1e6,
            large_each * 1e6
        ),
        netctl: Figure {
            seconds: *large_each * *large as f64,
            peak_kib: 0,
            timed_out: false,
        },
        comparison: None,
        ratio: Some(growth),
        target: "linear: ≤ 1.5× per allocation".into(),
        met: Some(met),
    });
}

/// Stores a pool, `blocks` /26 blocks holding `allocations` addresses with their handles, and a
/// workload endpoint for 99 of every 100 of them.
fn load_ipam(endpoint: &str, allocations: usize, blocks: usize) {
    let mut entries: Vec<(String, Vec<u8>)> = vec![
        (
            CLUSTER_INFORMATION.to_string(),
            br#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"clusterGUID":"4f0cde3c2f2a4f4e9c0f2b6f3c8f6d10","calicoVersion":"v3.31.3","clusterType":"k8s,bgp","datastoreReady":true}}"#.to_vec(),
        ),
        (
            "/calico/resources/v3/projectcalico.org/ippools/default-ipv4-ippool".to_string(),
            br#"{"apiVersion":"projectcalico.org/v3","kind":"IPPool","metadata":{"name":"default-ipv4-ippool"},"spec":{"cidr":"10.0.0.0/8","blockSize":26,"ipipMode":"Never","vxlanMode":"Always","natOutgoing":true}}"#.to_vec(),
        ),
    ];
    let per_block = allocations.div_ceil(blocks);
    let mut made = 0;
    for index in 0..blocks {
        let network = std::net::Ipv4Addr::from(0x0a00_0000u32 + (index as u32) * 64);
        let cidr = Cidr::new(network.into(), 26).expect("a /26");
        let node = format!("node-{}", index % 500);
        let mut block = AllocationBlock::empty(cidr, Some(format!("host:{node}")));
        for ordinal in 0..per_block.min(allocations - made) {
            let address = cidr.nth(ordinal as u128);
            let pod = format!("pod-{made}");
            let handle = format!("k8s-pod-network.{made:08x}");
            let owner = [
                ("namespace", "default"),
                ("node", node.as_str()),
                ("pod", pod.as_str()),
                ("timestamp", "2026-08-01 10:00:00.000000001 +0000 UTC"),
            ]
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
            block.allocate(address, Some(&handle), owner);
            entries.push((
                handle_key(&handle),
                format!(r#"{{"block":{{"{cidr}":1}},"deleted":false}}"#).into_bytes(),
            ));
            if made % 100 != 99 {
                let name = format!(
                    "{}-k8s-{}-eth0",
                    node.replace('-', "--"),
                    pod.replace('-', "--")
                );
                entries.push((
                    format!("/calico/resources/v3/projectcalico.org/workloadendpoints/default/{name}"),
                    json!({"apiVersion": "projectcalico.org/v3", "kind": "WorkloadEndpoint",
                        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{made}"),
                            "labels": {"app": "bench", "projectcalico.org/namespace": "default", "projectcalico.org/orchestrator": "k8s"}},
                        "spec": {"orchestrator": "k8s", "node": node, "pod": pod, "endpoint": "eth0",
                            "containerID": format!("{made:064x}"), "interfaceName": format!("cali{made:011x}"),
                            "ipNetworks": [format!("{address}/32")], "profiles": ["kns.default", "ksa.default.default"]}})
                    .to_string()
                    .into_bytes(),
                ));
            }
            made += 1;
        }
        entries.push((
            block_key(&cidr),
            encode_block(&block, BlockEncoding::NullAttributes),
        ));
    }
    runtime().block_on(async {
        let mut client = connect(endpoint).await;
        put_batches(&mut client, &entries, false).await;
        compact(&mut client).await;
    });
}
