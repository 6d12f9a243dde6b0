//! The side-by-side benchmark: netctl next to what the same work costs without it, on one real etcd
//! 3.4 on loopback, with every target of `docs/benchmarks.md` checked.
//!
//! It starts its own etcd servers (the test harness's launcher: temporary directories, free ports,
//! killed on exit), loads ~500-byte host endpoints in transactions of 100, and times whole commands
//! with their output discarded: netctl and its comparison interleaved in one run (A B, B A, ...),
//! so a busy machine slows both alike. Each command runs under `/usr/bin/time` for its peak
//! resident memory. Printed: one Markdown table with medians, peak RSS, ratios and whether each
//! target is met (`MISSED` otherwise).
//!
//! The comparisons are programs a user has (`etcdctl`), netctl itself in another format, and this
//! binary's own raw clients (`raw-load`, `raw-label`: plain etcd-client transactions of 100
//! guarded operations, run as separate processes so they pay the same start-up as netctl).
//!
//! Run it through `scripts/bench.sh` (`--quick` for 10,000 resources). What it does not do: judge
//! anything but time and memory; correctness is the tests' job (each row still checks that the
//! command did its work, so a fast failure cannot pass for a fast run).

#[path = "../tests/it/support/mod.rs"]
mod support;

#[path = "side_by_side_parts/ipam.rs"]
mod ipam;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Client, CompactionOptions, Compare, CompareOp, GetOptions, Txn, TxnOp};
use serde_json::{Value, json};
use support::EtcdServer;

const HOST_ENDPOINTS: &str = "/calico/resources/v3/projectcalico.org/hostendpoints/";
const CLUSTER_INFORMATION: &str =
    "/calico/resources/v3/projectcalico.org/clusterinformations/default";
const UPGRADE_POLICY: &str =
    "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/default.allow-all-upgrade";
const NETCTL_STATE: &str = "/calico/netctl/";
const UPGRADE_LABEL: &str = "host-endpoint-upgrade";
/// Operations per raw transaction (etcd's default `--max-txn-ops` is 128).
const BATCH: usize = 100;

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match arguments.first().map(String::as_str) {
        Some("raw-load") => return raw_load(&arguments[1], Path::new(&arguments[2])),
        Some("raw-label") => return raw_label(&arguments[1]),
        _ => {}
    }
    let options = Options::parse(&arguments);
    let tools = Tools::find();
    let work = tempfile::Builder::new()
        .prefix("netctl-bench-")
        .tempdir()
        .expect("a temporary directory");
    eprintln!(
        "side-by-side benchmark: {} repetitions, sizes {:?}, timeout {:?} per command",
        options.repetitions, options.list_sizes, options.timeout
    );
    let mut report = Report::default();
    if options.runs("lists") {
        for &size in &options.list_sizes {
            lists(&options, &tools, size, &mut report);
        }
    }
    if options.runs("writes") {
        writes(&options, &tools, work.path(), &mut report);
    }
    if options.runs("validate") {
        validate(&options, &tools, work.path(), &mut report);
    }
    if options.runs("upgrade") {
        for &size in &options.upgrade_sizes {
            upgrade(&options, &tools, work.path(), size, &mut report);
        }
        report.per_step_overhead();
    }
    if options.runs("ipam") {
        for &size in &options.ipam_sizes {
            ipam::ipam(&options, &tools, size, &mut report);
        }
        ipam::linearity(&mut report);
    }
    println!("{}", report.markdown());
    if report.missed > 0 {
        eprintln!("{} target(s) missed (marked MISSED above)", report.missed);
    }
}

// ----- options and tools -----

struct Options {
    repetitions: usize,
    timeout: Duration,
    list_sizes: Vec<usize>,
    write_size: usize,
    validate_size: usize,
    upgrade_sizes: Vec<usize>,
    ipam_sizes: Vec<usize>,
    sections: Vec<String>,
}

impl Options {
    fn parse(arguments: &[String]) -> Options {
        let quick = arguments.iter().any(|argument| argument == "--quick");
        let value = |flag: &str| {
            arguments
                .iter()
                .position(|argument| argument == flag)
                .and_then(|index| arguments.get(index + 1))
        };
        let repetitions = value("--repetitions")
            .map(|text| text.parse().expect("--repetitions takes a number"))
            .unwrap_or(if quick { 3 } else { 5 });
        let timeout = Duration::from_secs(
            value("--timeout")
                .map(|text| text.parse().expect("--timeout takes seconds"))
                .unwrap_or(if quick { 60 } else { 300 }),
        );
        let sections = value("--only")
            .map(|list| list.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        let sizes = |flag: &str, default: Vec<usize>| {
            value(flag).map_or(default, |list| {
                list.split(',')
                    .map(|size| size.parse().expect("sizes are numbers, comma-separated"))
                    .collect()
            })
        };
        Options {
            repetitions,
            timeout,
            list_sizes: sizes(
                "--list-sizes",
                if quick {
                    vec![10_000]
                } else {
                    vec![10_000, 100_000]
                },
            ),
            write_size: sizes("--write-size", vec![10_000])[0],
            validate_size: sizes(
                "--validate-size",
                vec![if quick { 10_000 } else { 100_000 }],
            )[0],
            upgrade_sizes: sizes("--upgrade-sizes", vec![1_000, 10_000]),
            ipam_sizes: sizes(
                "--ipam-sizes",
                if quick {
                    vec![10_000]
                } else {
                    vec![10_000, 100_000]
                },
            ),
            sections,
        }
    }

    fn runs(&self, section: &str) -> bool {
        self.sections.is_empty() || self.sections.iter().any(|name| name == section)
    }
}

struct Tools {
    netctl: PathBuf,
    etcdctl: PathBuf,
    time: PathBuf,
    this: PathBuf,
}

impl Tools {
    fn find() -> Tools {
        let time = PathBuf::from("/usr/bin/time");
        assert!(
            time.is_file(),
            "/usr/bin/time (GNU time) not found: install it with `apt-get install time`"
        );
        // `NETCTL_BENCH_BINARY` measures another build (say, the one before a change).
        let netctl = std::env::var_os("NETCTL_BENCH_BINARY")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_netctl")));
        Tools {
            netctl,
            etcdctl: support::find_program("etcdctl", "apt-get install etcd-client"),
            time,
            this: std::env::current_exe().expect("the benchmark's own path"),
        }
    }

    fn netctl(&self, endpoint: &str, arguments: &[&str]) -> Invocation {
        Invocation {
            program: self.netctl.clone(),
            arguments: arguments.iter().map(|text| text.to_string()).collect(),
            environment: vec![
                ("DATASTORE_TYPE".into(), "etcdv3".into()),
                ("ETCD_ENDPOINTS".into(), endpoint.into()),
            ],
        }
    }

    fn etcdctl(&self, endpoint: &str, arguments: &[&str]) -> Invocation {
        let mut all = vec![format!("--endpoints={endpoint}")];
        all.extend(arguments.iter().map(|text| text.to_string()));
        Invocation {
            program: self.etcdctl.clone(),
            arguments: all,
            environment: vec![("ETCDCTL_API".into(), "3".into())],
        }
    }

    fn raw(&self, arguments: &[&str]) -> Invocation {
        Invocation {
            program: self.this.clone(),
            arguments: arguments.iter().map(|text| text.to_string()).collect(),
            environment: Vec::new(),
        }
    }
}

// ----- measuring one command -----

#[derive(Clone)]
struct Invocation {
    program: PathBuf,
    arguments: Vec<String>,
    environment: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    seconds: f64,
    peak_kib: u64,
    timed_out: bool,
}

/// Runs `invocation` under `/usr/bin/time` with stdout discarded; panics when it exits otherwise
/// than `expect_success` says (stderr is shown then), so a broken command is never timed.
fn measure(
    tools: &Tools,
    invocation: &Invocation,
    timeout: Duration,
    expect_success: bool,
) -> Sample {
    let rss = tempfile::NamedTempFile::new().expect("a file for /usr/bin/time");
    let stderr = tempfile::NamedTempFile::new().expect("a file for stderr");
    let mut command = Command::new(&tools.time);
    command
        .args(["-f", "%M", "-o"])
        .arg(rss.path())
        .arg("--")
        .arg(&invocation.program)
        .args(&invocation.arguments)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(
            invocation
                .environment
                .iter()
                .map(|(key, value)| (key, value)),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr.reopen().expect("stderr file"))
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn().expect("start /usr/bin/time");
    let status: Option<ExitStatus> = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break Some(status);
        }
        if started.elapsed() > timeout {
            let group = rustix::process::Pid::from_raw(child.id() as i32).expect("a pid");
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let seconds = started.elapsed().as_secs_f64();
    let Some(status) = status else {
        eprintln!("  timed out after {timeout:?}: {}", describe(invocation));
        return Sample {
            seconds,
            peak_kib: 0,
            timed_out: true,
        };
    };
    // GNU time writes "Command exited with non-zero status N" before the figure.
    let peak_kib = std::fs::read_to_string(rss.path())
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .next_back()
        .unwrap_or(0);
    if status.success() != expect_success {
        let output = std::fs::read_to_string(stderr.path()).unwrap_or_default();
        panic!(
            "`{}` exited with {status} (expected {}):\n{}",
            describe(invocation),
            if expect_success { "success" } else { "failure" },
            output
                .chars()
                .rev()
                .take(3000)
                .collect::<String>()
                .chars()
                .rev()
                .collect::<String>()
        );
    }
    Sample {
        seconds,
        peak_kib,
        timed_out: false,
    }
}

fn describe(invocation: &Invocation) -> String {
    let name = invocation
        .program
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name} {}", invocation.arguments.join(" "))
}

/// Medians and the peak of repeated samples.
#[derive(Debug, Clone, Copy)]
struct Figure {
    seconds: f64,
    peak_kib: u64,
    timed_out: bool,
}

impl Figure {
    fn of(samples: &[Sample]) -> Figure {
        let mut seconds: Vec<f64> = samples.iter().map(|sample| sample.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        let middle = seconds.len() / 2;
        let median = if seconds.len().is_multiple_of(2) {
            (seconds[middle - 1] + seconds[middle]) / 2.0
        } else {
            seconds[middle]
        };
        Figure {
            seconds: median,
            peak_kib: samples
                .iter()
                .map(|sample| sample.peak_kib)
                .max()
                .unwrap_or(0),
            timed_out: samples.iter().any(|sample| sample.timed_out),
        }
    }

    fn time(&self) -> String {
        let prefix = if self.timed_out { "> " } else { "" };
        if self.seconds < 1.0 {
            format!("{prefix}{:.0} ms", self.seconds * 1000.0)
        } else {
            format!("{prefix}{:.2} s", self.seconds)
        }
    }

    fn memory(&self) -> String {
        if self.timed_out || self.peak_kib == 0 {
            "—".into()
        } else {
            format!("{:.1} MiB", self.peak_kib as f64 / 1024.0)
        }
    }
}

/// Runs `first` and `second` `repetitions` times, alternating which goes first; `prepare` runs
/// (untimed) before each command with its index (0 = first, 1 = second).
fn interleaved(
    options: &Options,
    tools: &Tools,
    pair: [(&Invocation, bool); 2],
    mut prepare: impl FnMut(usize),
    mut check: impl FnMut(usize),
) -> [Figure; 2] {
    let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
    for repetition in 0..options.repetitions {
        let order = if repetition % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            // A command that ran out of time once is not given the time again.
            if samples[index].iter().any(|sample| sample.timed_out) {
                continue;
            }
            prepare(index);
            let (invocation, expect_success) = pair[index];
            let sample = measure(tools, invocation, options.timeout, expect_success);
            if !sample.timed_out {
                check(index);
            }
            samples[index].push(sample);
        }
    }
    [Figure::of(&samples[0]), Figure::of(&samples[1])]
}

/// Runs one successful command `repetitions` times, stopping after a time-out.
fn repeated(options: &Options, tools: &Tools, invocation: &Invocation) -> Vec<Sample> {
    let mut samples = Vec::new();
    for _ in 0..options.repetitions {
        let sample = measure(tools, invocation, options.timeout, true);
        samples.push(sample);
        if sample.timed_out {
            break;
        }
    }
    samples
}

// ----- the report -----

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    missed: usize,
    per_item: Vec<(usize, f64)>,
    /// `ipam check`'s seconds per allocation at each size (the linearity row).
    ipam_per_allocation: Vec<(usize, f64)>,
}

struct Row {
    work: String,
    netctl: Figure,
    comparison: Option<(String, Figure)>,
    ratio: Option<f64>,
    target: String,
    met: Option<bool>,
}

impl Report {
    fn add(&mut self, row: Row) {
        if row.met == Some(false) {
            self.missed += 1;
        }
        eprintln!(
            "  {}: {} ({}){}",
            row.work,
            row.netctl.time(),
            row.netctl.memory(),
            row.ratio
                .map(|ratio| format!(" = {ratio:.2}×"))
                .unwrap_or_default()
        );
        self.rows.push(row);
    }

    /// Compares netctl with a comparison: met when the ratio is at most `limit`.
    fn ratio_row(
        &mut self,
        work: &str,
        [netctl, comparison]: [Figure; 2],
        comparison_name: &str,
        limit: Option<f64>,
        extra_target: Option<(&str, bool)>,
    ) {
        let ratio = netctl.seconds / comparison.seconds;
        let timed_out = netctl.timed_out;
        let ratio_met = limit.map(|limit| !timed_out && ratio <= limit);
        let met = match (ratio_met, extra_target) {
            (Some(a), Some((_, b))) => Some(a && b),
            (Some(a), None) => Some(a),
            (None, Some((_, b))) => Some(b),
            (None, None) => None,
        };
        let mut target = limit.map(|limit| format!("≤ {limit}×")).unwrap_or_default();
        if let Some((text, _)) = extra_target {
            if !target.is_empty() {
                target.push_str("; ");
            }
            target.push_str(text);
        }
        self.add(Row {
            work: work.into(),
            netctl,
            comparison: Some((comparison_name.into(), comparison)),
            ratio: Some(ratio),
            target,
            met,
        });
    }

    fn per_step_overhead(&mut self) {
        if let [(small, small_each), (large, large_each)] = self.per_item[..] {
            let growth = large_each / small_each;
            let met = growth <= 1.5;
            let row = Row {
                work: format!(
                    "per-step overhead of the preparation: {} µs per host endpoint at {small}, {} µs at {large}",
                    (small_each * 1e6).round(),
                    (large_each * 1e6).round()
                ),
                netctl: Figure {
                    seconds: large_each,
                    peak_kib: 0,
                    timed_out: false,
                },
                comparison: None,
                ratio: Some(growth),
                target: "independent of plan size (≤ 1.5× from 1k to 10k)".into(),
                met: Some(met),
            };
            self.add(row);
        }
    }

    fn markdown(&self) -> String {
        let mut text = String::new();
        text.push_str("| work | netctl | peak RSS | comparison | comparison time | ratio | target | result |\n");
        text.push_str("|---|---|---|---|---|---|---|---|\n");
        for row in &self.rows {
            let (name, time) = match &row.comparison {
                Some((name, figure)) => (name.clone(), figure.time()),
                None => ("—".into(), "—".into()),
            };
            let result = match row.met {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "",
            };
            let netctl_time = if row.comparison.is_none() && row.work.starts_with("per-step") {
                "see work".to_string()
            } else {
                row.netctl.time()
            };
            let _ = writeln!(
                text,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                row.work,
                netctl_time,
                row.netctl.memory(),
                name,
                time,
                row.ratio
                    .map(|ratio| format!("{ratio:.2}×"))
                    .unwrap_or_else(|| "—".into()),
                row.target,
                result
            );
        }
        text
    }
}

// ----- data -----

/// A host endpoint of about 500 bytes as netctl stores it (key order as written).
fn host_endpoint(index: usize, all_interfaces: bool) -> (String, Value) {
    let node = format!("host-{index:06}");
    let (name, interface) = match all_interfaces {
        true => (format!("{node}-all"), "*"),
        false => (format!("{node}-eth0"), "eth0"),
    };
    let zone = ["zone-a", "zone-b", "zone-c"][index % 3];
    let value = json!({
        "apiVersion": "projectcalico.org/v3",
        "kind": "HostEndpoint",
        "metadata": {
            "name": name,
            "uid": format!("2b8d3a5e-{:04x}-4000-8000-{index:012x}", index % 65_536),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "environment": "production",
                "rack": format!("rack-{:02}", index % 40),
                "role": "worker",
                "topology.kubernetes.io/zone": zone
            }
        },
        "spec": {
            "node": node,
            "interfaceName": interface,
            "expectedIPs": [
                format!("10.{}.{}.{}", index / 65_536 % 256, index / 256 % 256, index % 256),
                // Two groups: one group of more than four hex digits is no address.
                format!("fd00::{:x}:{:x}", index / 65_536, index % 65_536)
            ],
            "profiles": ["projectcalico-default-allow"],
            "ports": [
                {"name": "https", "port": 443, "protocol": "TCP"},
                {"name": "ssh", "port": 22, "protocol": "TCP"}
            ]
        }
    });
    (format!("{HOST_ENDPOINTS}{name}"), value)
}

/// The same host endpoint as a user writes it in a file for `apply -f` (no uid, no timestamp).
fn host_endpoint_document(index: usize) -> String {
    let (_, value) = host_endpoint(index, false);
    let metadata = &value["metadata"];
    let spec = &value["spec"];
    let labels = &metadata["labels"];
    format!(
        "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: {}\n  labels:\n    environment: production\n    rack: {}\n    role: worker\n    topology.kubernetes.io/zone: {}\nspec:\n  node: {}\n  interfaceName: eth0\n  expectedIPs:\n  - {}\n  - \"{}\"\n  profiles:\n  - projectcalico-default-allow\n  ports:\n  - name: https\n    port: 443\n    protocol: TCP\n  - name: ssh\n    port: 22\n    protocol: TCP\n",
        metadata["name"].as_str().unwrap_or_default(),
        labels["rack"].as_str().unwrap_or_default(),
        labels["topology.kubernetes.io/zone"]
            .as_str()
            .unwrap_or_default(),
        spec["node"].as_str().unwrap_or_default(),
        spec["expectedIPs"][0].as_str().unwrap_or_default(),
        spec["expectedIPs"][1].as_str().unwrap_or_default(),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

async fn connect(endpoint: &str) -> Client {
    Client::connect([endpoint], None)
        .await
        .expect("connect to etcd")
}

/// Writes `entries` in transactions of [`BATCH`]; `guarded` makes each put a create (version 0).
async fn put_batches(client: &mut Client, entries: &[(String, Vec<u8>)], guarded: bool) {
    for chunk in entries.chunks(BATCH) {
        let compares: Vec<Compare> = match guarded {
            true => chunk
                .iter()
                .map(|(key, _)| Compare::version(key.as_str(), CompareOp::Equal, 0))
                .collect(),
            false => Vec::new(),
        };
        let puts: Vec<TxnOp> = chunk
            .iter()
            .map(|(key, value)| TxnOp::put(key.as_str(), value.clone(), None))
            .collect();
        let response = client
            .txn(Txn::new().when(compares).and_then(puts))
            .await
            .expect("a batch of puts");
        assert!(response.succeeded(), "a guarded batch found existing keys");
    }
}

/// Deletes `prefix` and compacts, so deleted keys do not linger in etcd's index between runs.
async fn clear(client: &mut Client, prefixes: &[&str]) {
    for prefix in prefixes {
        client
            .delete(
                *prefix,
                Some(etcd_client::DeleteOptions::new().with_prefix()),
            )
            .await
            .expect("delete a prefix");
    }
    compact(client).await;
}

async fn compact(client: &mut Client) {
    let revision = client
        .get("compaction-probe", None)
        .await
        .expect("read the revision")
        .header()
        .map(|header| header.revision())
        .unwrap_or(0);
    client
        .compact(revision, Some(CompactionOptions::new().with_physical()))
        .await
        .expect("compact");
}

async fn count(client: &mut Client, prefix: &str) -> i64 {
    client
        .get(
            prefix,
            Some(GetOptions::new().with_prefix().with_count_only()),
        )
        .await
        .expect("count keys")
        .count()
}

fn load_host_endpoints(endpoint: &str, count: usize, all_interfaces: bool) {
    let entries: Vec<(String, Vec<u8>)> = (0..count)
        .map(|index| {
            let (key, value) = host_endpoint(index, all_interfaces);
            (key, value.to_string().into_bytes())
        })
        .collect();
    runtime().block_on(async {
        let mut client = connect(endpoint).await;
        put_batches(&mut client, &entries, false).await;
        compact(&mut client).await;
    });
}

// ----- the raw clients (separate processes) -----

/// `raw-load ENDPOINT FILE`: puts every `key<TAB>value` line of FILE as a create, 100 per transaction.
fn raw_load(endpoint: &str, file: &Path) {
    let reader = BufReader::new(std::fs::File::open(file).expect("the raw data file"));
    let entries: Vec<(String, Vec<u8>)> = reader
        .lines()
        .map(|line| {
            let line = line.expect("a line");
            let (key, value) = line.split_once('\t').expect("key<TAB>value");
            (key.to_string(), value.as_bytes().to_vec())
        })
        .collect();
    runtime().block_on(async {
        let mut client = connect(endpoint).await;
        put_batches(&mut client, &entries, true).await;
    });
}

/// `raw-label ENDPOINT`: adds the upgrade label to every all-interfaces host endpoint, 100 updates
/// per transaction, each guarded by the revision it read.
fn raw_label(endpoint: &str) {
    runtime().block_on(async {
        let mut client = connect(endpoint).await;
        // 10,000 host endpoints are more than gRPC's default 4 MiB answer.
        let response = client
            .kv_client()
            .max_decoding_message_size(64 << 20)
            .get(HOST_ENDPOINTS, Some(GetOptions::new().with_prefix()))
            .await
            .expect("read the host endpoints");
        let mut updates = Vec::new();
        for entry in response.kvs() {
            let mut value: Value = serde_json::from_slice(entry.value()).expect("JSON");
            if value["spec"]["interfaceName"] != "*" {
                continue;
            }
            value["metadata"]["labels"][UPGRADE_LABEL] = json!("");
            updates.push((
                entry.key().to_vec(),
                entry.mod_revision(),
                value.to_string().into_bytes(),
            ));
        }
        for chunk in updates.chunks(BATCH) {
            let compares: Vec<Compare> = chunk
                .iter()
                .map(|(key, revision, _)| {
                    Compare::mod_revision(key.clone(), CompareOp::Equal, *revision)
                })
                .collect();
            let puts: Vec<TxnOp> = chunk
                .iter()
                .map(|(key, _, value)| TxnOp::put(key.clone(), value.clone(), None))
                .collect();
            let response = client
                .txn(Txn::new().when(compares).and_then(puts))
                .await
                .expect("a batch of labels");
            assert!(
                response.succeeded(),
                "a host endpoint changed while labelling"
            );
        }
    });
}

// ----- the sections -----

fn lists(options: &Options, tools: &Tools, size: usize, report: &mut Report) {
    eprintln!("lists: loading {size} host endpoints");
    let etcd = EtcdServer::start();
    let endpoint = etcd.endpoint();
    load_host_endpoints(&endpoint, size, false);
    let thousands = size / 1000;
    let get = |format: &str| tools.netctl(&endpoint, &["get", "hostendpoints", "-o", format]);
    let etcdctl = |json: bool| {
        let mut arguments = vec!["get", "--prefix", HOST_ENDPOINTS];
        if json {
            arguments.splice(0..0, ["-w", "json"]);
        }
        tools.etcdctl(&endpoint, &arguments)
    };
    let nothing = |_| {};

    let figures = interleaved(
        options,
        tools,
        [(&get("ps"), true), (&etcdctl(false), true)],
        nothing,
        nothing,
    );
    let memory_met = figures[0].peak_kib <= 64 * 1024;
    report.ratio_row(
        &format!("`get hep` (table), {thousands}k"),
        figures,
        "`etcdctl get --prefix`",
        Some(1.0),
        Some(("≤ 64 MiB", memory_met)),
    );
    let figures = interleaved(
        options,
        tools,
        [(&get("json"), true), (&etcdctl(true), true)],
        nothing,
        nothing,
    );
    report.ratio_row(
        &format!("`get hep -o json`, {thousands}k"),
        figures,
        "`etcdctl -w json get --prefix`",
        Some(0.7),
        None,
    );
    let figures = interleaved(
        options,
        tools,
        [(&get("yaml"), true), (&get("wide"), true)],
        nothing,
        nothing,
    );
    report.ratio_row(
        &format!("`get hep -o yaml`, {thousands}k"),
        figures,
        "`get hep -o wide`",
        Some(1.5),
        None,
    );
}

fn writes(options: &Options, tools: &Tools, work: &Path, report: &mut Report) {
    let size = options.write_size;
    eprintln!("writes: {size} new host endpoints");
    let documents = work.join("host-endpoints.yaml");
    let raw = work.join("host-endpoints.raw");
    write_apply_inputs(size, &documents, &raw);
    let etcd = EtcdServer::start();
    let endpoint = etcd.endpoint();
    let runtime = runtime();
    let mut client = runtime.block_on(connect(&endpoint));
    let apply = tools.netctl(
        &endpoint,
        &["apply", "-f", documents.to_str().expect("UTF-8 path")],
    );
    let raw_load = tools.raw(&["raw-load", &endpoint, raw.to_str().expect("UTF-8 path")]);
    let mut check_all_written = |_| {
        let stored = runtime.block_on(count(&mut client, HOST_ENDPOINTS));
        assert_eq!(stored, size as i64, "every host endpoint was written");
    };
    let clear_before = |_| {
        let mut client = runtime.block_on(connect(&endpoint));
        runtime.block_on(clear(&mut client, &[HOST_ENDPOINTS]));
    };
    let new = interleaved(
        options,
        tools,
        [(&apply, true), (&raw_load, true)],
        clear_before,
        &mut check_all_written,
    );
    let memory_met = new[0].peak_kib <= 64 * 1024;
    report.ratio_row(
        &format!("`apply -f` {}k new host endpoints", size / 1000),
        new,
        "raw transactions of 100 guarded puts",
        Some(1.5),
        Some(("≤ 64 MiB", memory_met)),
    );

    // Unchanged: the same file again, right after it was applied to an empty store.
    let mut samples = Vec::new();
    for _ in 0..options.repetitions {
        clear_before(0);
        measure(tools, &apply, options.timeout, true);
        samples.push(measure(tools, &apply, options.timeout, true));
        check_all_written(0);
    }
    let unchanged = Figure::of(&samples);
    report.ratio_row(
        &format!("`apply -f` {}k unchanged", size / 1000),
        [unchanged, new[0]],
        "the same apply when new",
        Some(0.3),
        None,
    );
}

fn write_apply_inputs(size: usize, documents: &Path, raw: &Path) {
    let mut yaml = std::io::BufWriter::new(std::fs::File::create(documents).expect("a file"));
    let mut lines = std::io::BufWriter::new(std::fs::File::create(raw).expect("a file"));
    for index in 0..size {
        yaml.write_all(host_endpoint_document(index).as_bytes())
            .expect("write");
        let (key, value) = host_endpoint(index, false);
        writeln!(lines, "{key}\t{value}").expect("write");
    }
    yaml.flush().expect("flush");
    lines.flush().expect("flush");
}

fn validate(options: &Options, tools: &Tools, work: &Path, report: &mut Report) {
    let size = options.validate_size;
    eprintln!("validate: {size} documents");
    let documents = work.join("validate.yaml");
    let mut yaml = std::io::BufWriter::new(std::fs::File::create(&documents).expect("a file"));
    for index in 0..size {
        yaml.write_all(host_endpoint_document(index).as_bytes())
            .expect("write");
    }
    yaml.flush().expect("flush");
    drop(yaml);
    let validate = Invocation {
        environment: Vec::new(),
        ..tools.netctl(
            "",
            &["validate", "-f", documents.to_str().expect("UTF-8 path")],
        )
    };
    let samples = repeated(options, tools, &validate);
    let figure = Figure::of(&samples);
    let rate = size as f64 / figure.seconds;
    report.add(Row {
        work: format!(
            "`validate` {}k documents: {:.1}k documents/s",
            size / 1000,
            rate / 1000.0
        ),
        netctl: figure,
        comparison: None,
        ratio: None,
        target: "≥ 50k documents/s".into(),
        met: Some(!figure.timed_out && rate >= 50_000.0),
    });
}

fn upgrade(options: &Options, tools: &Tools, work: &Path, size: usize, report: &mut Report) {
    let thousands = size / 1000;
    eprintln!("upgrade: {size} all-interfaces host endpoints");
    let etcd = EtcdServer::start();
    let endpoint = etcd.endpoint();
    let runtime = runtime();
    let mut client = runtime.block_on(connect(&endpoint));
    runtime.block_on(async {
        client
            .put(
                CLUSTER_INFORMATION,
                r#"{"apiVersion":"projectcalico.org/v3","kind":"ClusterInformation","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.13.2","clusterType":"bgp","datastoreReady":true}}"#,
                None,
            )
            .await
            .expect("seed ClusterInformation");
    });
    load_host_endpoints(&endpoint, size, true);

    let plan_file = work.join(format!("plan-{size}.json"));
    let plan = tools.netctl(
        &endpoint,
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.27.0",
            "--install-method",
            "manifest",
            "--no-manifest-edits",
            "-o",
            "json",
            "--out",
            plan_file.to_str().expect("UTF-8 path"),
        ],
    );
    let samples = repeated(options, tools, &plan);
    let figure = Figure::of(&samples);
    let target = (size == 10_000).then_some(1.0);
    report.add(Row {
        work: format!("`upgrade plan`, {thousands}k all-interfaces host endpoints"),
        netctl: figure,
        comparison: None,
        ratio: None,
        target: target.map(|_| "≤ 1 s".to_string()).unwrap_or_default(),
        met: target.map(|limit| !figure.timed_out && figure.seconds <= limit),
    });
    if figure.timed_out {
        eprintln!("  no plan: the preparation row is skipped at {size}");
        report.add(Row {
            work: format!("`upgrade apply` preparation, {thousands}k: not run (no plan)"),
            netctl: figure,
            comparison: None,
            ratio: None,
            target: "≤ 3× raw batched labelling".into(),
            met: Some(false),
        });
        return;
    }

    // The preparation: list, label every all-interfaces host endpoint, apply the policy; then the
    // manifest download fails at once (an empty mirror), which ends the run.
    let mirror = work.join("empty-mirror");
    std::fs::create_dir_all(&mirror).expect("a mirror directory");
    let state = work.join(format!("state-{size}"));
    let apply = tools.netctl(
        &endpoint,
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().expect("UTF-8 path"),
            "--yes",
            "--progress",
            "plain",
            "--state-dir",
            state.to_str().expect("UTF-8 path"),
            "--mirror-dir",
            mirror.to_str().expect("UTF-8 path"),
            // No cluster here: the run ends at the first Kubernetes step, after the preparation.
            "--skip-preflight",
            "cluster",
        ],
    );
    let raw_label = tools.raw(&["raw-label", &endpoint]);
    let reset = |_| {
        let _ = std::fs::remove_dir_all(&state);
        runtime.block_on(async {
            let mut client = connect(&endpoint).await;
            client
                .delete(
                    NETCTL_STATE,
                    Some(etcd_client::DeleteOptions::new().with_prefix()),
                )
                .await
                .expect("clear netctl's state");
            client
                .delete(UPGRADE_POLICY, None)
                .await
                .expect("delete the policy");
        });
        load_host_endpoints(&endpoint, size, true);
    };
    let check_labelled = |_| {
        runtime.block_on(async {
            let client = connect(&endpoint).await;
            let response = client
                .kv_client()
                .max_decoding_message_size(64 << 20)
                .get(HOST_ENDPOINTS, Some(GetOptions::new().with_prefix()))
                .await
                .expect("read the host endpoints");
            let labelled = response
                .kvs()
                .iter()
                .filter(|entry| {
                    let value: Value = serde_json::from_slice(entry.value()).unwrap_or_default();
                    value["metadata"]["labels"].get(UPGRADE_LABEL).is_some()
                })
                .count();
            assert_eq!(
                labelled, size,
                "every all-interfaces host endpoint was labelled"
            );
        });
    };
    let figures = interleaved(
        options,
        tools,
        [(&apply, false), (&raw_label, true)],
        reset,
        check_labelled,
    );
    if !figures[0].timed_out {
        report
            .per_item
            .push((size, figures[0].seconds / size as f64));
    }
    report.ratio_row(
        &format!("`upgrade apply` preparation, {thousands}k all-interfaces host endpoints"),
        figures,
        "raw labelling in transactions of 100",
        (size == 10_000).then_some(3.0),
        None,
    );
}
