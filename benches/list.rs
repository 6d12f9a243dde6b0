//! Benchmark: listing a large etcd datastore through the `netctl` binary.
//!
//! Starts a real etcd (the test harness's launcher), loads N host endpoints in 128-operation
//! transactions, then times `netctl get hostendpoints` in JSON and table form and records the peak
//! resident memory of the netctl process (VmHWM from /proc). Memory should stay flat as N grows,
//! because lists are paged and streamed. Results are written up in `docs/benchmarks.md`.
//!
//! Run with `cargo bench --bench list`; `NETCTL_BENCH_SIZES=1000,5000` picks other sizes.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Client, Txn, TxnOp};
use support::EtcdServer;

const REPETITIONS: usize = 3;

fn main() {
    let sizes: Vec<usize> = std::env::var("NETCTL_BENCH_SIZES")
        .unwrap_or_else(|_| "10000,50000".into())
        .split(',')
        .map(|size| size.trim().parse().expect("sizes are numbers"))
        .collect();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    println!("| host endpoints | output | wall time (median of {REPETITIONS}) | peak RSS |");
    println!("|---|---|---|---|");
    for size in sizes {
        let etcd = EtcdServer::start();
        let loaded = Instant::now();
        runtime.block_on(load(&etcd.endpoint(), size));
        eprintln!("loaded {size} host endpoints in {:?}", loaded.elapsed());
        for output in ["json", "ps"] {
            let mut runs: Vec<(Duration, u64)> = (0..REPETITIONS)
                .map(|_| run_get(&etcd.endpoint(), output))
                .collect();
            runs.sort();
            let (time, _) = runs[REPETITIONS / 2];
            let peak = runs.iter().map(|(_, rss)| *rss).max().unwrap_or(0);
            println!(
                "| {size} | `-o {output}` | {:.0} ms | {:.1} MiB |",
                time.as_secs_f64() * 1000.0,
                peak as f64 / 1024.0
            );
        }
    }
}

/// Writes `count` host endpoints of about 450 bytes each, 128 puts per transaction (etcd's default
/// `--max-txn-ops`).
async fn load(endpoint: &str, count: usize) {
    let mut client = Client::connect([endpoint], None)
        .await
        .expect("connect to etcd");
    let names: Vec<String> = (0..count)
        .map(|index| format!("host-{index:06}-eth0"))
        .collect();
    for chunk in names.chunks(128) {
        let operations: Vec<TxnOp> = chunk
            .iter()
            .map(|name| {
                let value = serde_json::json!({
                    "apiVersion": "projectcalico.org/v3",
                    "kind": "HostEndpoint",
                    "metadata": {
                        "name": name,
                        "uid": "2b8d3a5e-0000-4000-8000-000000000001",
                        "creationTimestamp": "2026-01-01T00:00:00Z",
                        "labels": {"role": "worker", "zone": "zone-a", "host-endpoint-upgrade": ""}
                    },
                    "spec": {
                        "node": name.trim_end_matches("-eth0"),
                        "interfaceName": "*",
                        "expectedIPs": ["10.0.0.1", "fd00::1"],
                        "profiles": ["projectcalico-default-allow"]
                    }
                });
                TxnOp::put(
                    format!("/calico/resources/v3/projectcalico.org/hostendpoints/{name}"),
                    value.to_string(),
                    None,
                )
            })
            .collect();
        client
            .txn(Txn::new().and_then(operations))
            .await
            .expect("load a batch");
    }
}

/// Runs `netctl get hostendpoints -o OUTPUT` with stdout discarded; returns wall time and peak RSS (KiB).
fn run_get(endpoint: &str, output: &str) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netctl"))
        .args(["get", "hostendpoints", "-o", output])
        .env_clear()
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", endpoint)
        .stdout(Stdio::null())
        .spawn()
        .expect("run netctl");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_path)
            && let Some(line) = status.lines().find(|line| line.starts_with("VmHWM:"))
        {
            let kib: u64 = line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait for netctl") {
            assert!(status.success(), "netctl get failed");
            return (started.elapsed(), peak);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
