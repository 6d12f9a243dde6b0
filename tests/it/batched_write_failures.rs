//! A write of many resources that stops half way, against a real etcd: a role that forbids one key
//! (the third batch fails, the first two are undone), etcd killed and etcd hung (SIGSTOP) in the
//! middle of a large apply (a bounded exit, and a recovery file that names exactly what may be
//! left, checked against etcd afterwards), and Ctrl-C / SIGTERM (stop between batches, undo, say
//! so). Each command runs with a short `--request-timeout`; the figures are printed
//! (`cargo test -- --nocapture`) for the record.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::snapshot::netctl_snapshot;
use crate::support::{AuthSetup, EtcdServer, Netctl, Run, failed, ok, wait_for_exit};

const HEPS: &str = "/calico/resources/v3/projectcalico.org/hostendpoints/";

/// Host endpoint documents `<prefix>-00000`, ... for the indices in `range`.
fn host_endpoints(prefix: &str, range: std::ops::Range<usize>) -> String {
    let mut text = String::new();
    for index in range {
        text.push_str(&format!(
            "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: {prefix}-{index:05}\n  labels: {{batch: {prefix}}}\nspec:\n  node: node-{index:05}\n  interfaceName: eth0\n  expectedIPs: [10.{}.{}.{}]\n",
            index / 65536,
            index / 256 % 256,
            index % 256
        ));
    }
    text
}

/// The names of the stored host endpoints starting with `prefix`.
fn stored(etcd: &EtcdServer, prefix: &str) -> BTreeSet<String> {
    etcd.get_prefix(&format!("{HEPS}{prefix}"))
        .into_iter()
        .map(|(key, _)| key.trim_start_matches(HEPS).to_string())
        .collect()
}

/// Every stored resource, key and value as JSON (so a value written back in another field order
/// compares equal).
fn resources(etcd: &EtcdServer) -> Vec<(String, serde_json::Value)> {
    etcd.get_prefix("/calico/resources/")
        .into_iter()
        .map(|(key, value)| (key, serde_json::from_str(&value).unwrap()))
        .collect()
}

/// How many host endpoints are stored (cheap: etcd counts).
fn count(etcd: &EtcdServer) -> usize {
    let out = etcd
        .admin()
        .try_run(&[
            "get",
            HEPS,
            "--prefix",
            "--keys-only",
            "--limit=1",
            "-w",
            "json",
        ])
        .unwrap_or_default();
    serde_json::from_slice::<serde_json::Value>(&out)
        .ok()
        .and_then(|value| value["count"].as_u64())
        .unwrap_or(0) as usize
}

/// Waits until at least `at_least` host endpoints are stored (the write is under way).
fn wait_for_writes(etcd: &EtcdServer, at_least: usize, child: &mut std::process::Child) {
    let started = Instant::now();
    while count(etcd) < at_least {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("netctl ended ({status}) before {at_least} resources were written");
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "{at_least} resources were not written within 180 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A recovery file's documents: each name with the reason written above it.
fn recovery_entries(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.split("\n---\n")
        .skip(1)
        .map(|document| {
            let (comment, body) = document.split_once('\n').unwrap();
            let value: serde_json::Value = netctl::yaml::from_str(body).unwrap();
            (
                value["metadata"]["name"].as_str().unwrap().to_string(),
                comment.trim_start_matches("# ").to_string(),
            )
        })
        .collect()
}

/// The recovery file of created resources a failed run left in `directory`.
fn created_file(directory: &Path) -> PathBuf {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| {
                    name.starts_with("netctl-recovery-") && name.ends_with("-created.yaml")
                })
        })
        .unwrap_or_else(|| panic!("no recovery file in {}", directory.display()))
}

/// What a recovery file says against what etcd holds: everything stored is in the file; what the
/// file says was written is stored; the rest of the file is what may have been written (the
/// batches in flight: two transactions of 128 at most). Returns (written, may have been written).
fn check_recovery(file: &Path, stored: &BTreeSet<String>) -> (usize, usize) {
    let entries = recovery_entries(file);
    let listed: BTreeSet<String> = entries.iter().map(|(name, _)| name.clone()).collect();
    assert_eq!(listed.len(), entries.len(), "each resource once");
    let missing: Vec<&String> = stored.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "stored but not in the recovery file: {missing:?}"
    );
    let mut maybe = 0;
    // The batches whose answer was lost, by index (documents are cut into batches of 128 in
    // order): how many of each are stored.
    let mut lost_batches: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for (name, why) in &entries {
        if why.starts_with("may have been written") {
            maybe += 1;
            let index: usize = name.rsplit('-').next().unwrap().parse().unwrap();
            let batch = lost_batches.entry(index / 128).or_default();
            batch.0 += 1;
            batch.1 += usize::from(stored.contains(name));
        } else {
            assert_eq!(why, "written by the command, not put back", "{name}");
            assert!(
                stored.contains(name),
                "{name} is said written, but is not stored"
            );
        }
    }
    assert!(
        maybe <= 2 * 128,
        "{maybe} resources may have been written: more than the two batches in flight"
    );
    for (batch, (listed, stored)) in lost_batches {
        assert!(
            stored == 0 || stored == listed,
            "a transaction applies whole or not at all: {stored} of the {listed} resources of batch {batch} are stored"
        );
    }
    (entries.len() - maybe, maybe)
}

/// An etcd whose netctl user may read everything under `/calico/` but write only host endpoints
/// and netctl's own keys: a policy write is refused.
fn etcd_forbidding_policies() -> EtcdServer {
    let etcd = EtcdServer::builder().auth(AuthSetup::default()).start();
    let root = etcd.as_user("root", "root-pw");
    let role = AuthSetup::default().role;
    root.run(&[
        "role",
        "revoke-permission",
        &role,
        "--prefix=true",
        "/calico/",
    ]);
    root.run(&[
        "role",
        "grant-permission",
        &role,
        "--prefix=true",
        "read",
        "/calico/",
    ]);
    for prefix in [HEPS, "/calico/netctl/"] {
        root.run(&[
            "role",
            "grant-permission",
            &role,
            "--prefix=true",
            "readwrite",
            prefix,
        ]);
    }
    etcd
}

/// The third batch is refused (the role may not write policies): the two batches before it are
/// undone, a new resource deleted and a changed one restored, and the error says so.
#[test]
fn a_failure_in_the_third_batch_undoes_the_first_two() {
    let etcd = etcd_forbidding_policies();
    let existing = r#"{"kind":"HostEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"t-00001","uid":"7e1c","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"node":"node1","interfaceName":"eth0","expectedIPs":["10.0.0.1"]}}"#;
    etcd.put(&format!("{HEPS}t-00001"), existing);
    let before = resources(&etcd);

    let mut netctl = Netctl::new();
    netctl.config_file(&etcd.netctl_config_yaml());
    let policy = "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: allow-web}\nspec: {selector: has(web)}\n";
    // 256 host endpoints fill two batches; the policy is the third.
    let file = netctl.write_file(
        "batch.yaml",
        format!("{}{policy}", host_endpoints("t", 0..256)),
    );
    let run = netctl.args(["apply", "-f", file.to_str().unwrap()]).run();
    let stderr = failed(run);
    assert!(
        stderr.contains(
            "error: a write failed, and the 256 resource(s) written before it were put back as they were: cannot apply GlobalNetworkPolicy(allow-web): permission denied"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("may"), "nothing is uncertain: {stderr}");
    assert_eq!(
        resources(&etcd),
        before,
        "the new ones deleted, the changed one as it was (the role cannot write ClusterInformation, so initialisation changed nothing)"
    );
}

/// Two transactions are out at once: when the third batch fails, the fourth has been sent
/// already. It is answered, then undone with the first two; the fifth is never sent.
#[test]
fn a_failure_with_another_batch_in_flight_undoes_that_batch_too() {
    let etcd = etcd_forbidding_policies();
    let before = resources(&etcd);
    let mut netctl = Netctl::new();
    netctl.config_file(&etcd.netctl_config_yaml());
    let policy = "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: allow-web}\nspec: {selector: has(web)}\n";
    // Batches: 128, 128, the policy and 127, 128 (in flight when the third fails), 1.
    let file = netctl.write_file(
        "batch.yaml",
        format!(
            "{}{policy}{}",
            host_endpoints("t", 0..256),
            host_endpoints("t", 256..512)
        ),
    );
    let run = netctl.args(["apply", "-f", file.to_str().unwrap()]).run();
    let stderr = failed(run);
    assert!(
        stderr.contains(
            "error: a write failed, and the 384 resource(s) written before it were put back as they were: cannot apply GlobalNetworkPolicy(allow-web): permission denied"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("may"), "nothing is uncertain: {stderr}");
    assert_eq!(resources(&etcd), before, "every batch written is undone");
}

/// A delete that fails half way (the role may not delete policies) creates again what it deleted.
#[test]
fn a_delete_that_fails_half_way_puts_back_what_it_deleted() {
    let etcd = EtcdServer::builder().auth(AuthSetup::default()).start();
    let root = etcd.as_user("root", "root-pw");
    let role = AuthSetup::default().role;
    let documents = format!(
        "{}---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata: {{name: nets}}\nspec: {{nets: [10.1.0.0/16]}}\n",
        host_endpoints("k", 0..200)
    );
    let mut admin = Netctl::new();
    admin
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint())
        .env("ETCD_USERNAME", "root")
        .env("ETCD_PASSWORD", "root-pw");
    ok(admin
        .args(["apply", "-f", "-"])
        .stdin(documents.clone())
        .run());
    root.run(&[
        "role",
        "revoke-permission",
        &role,
        "--prefix=true",
        "/calico/",
    ]);
    root.run(&[
        "role",
        "grant-permission",
        &role,
        "--prefix=true",
        "read",
        "/calico/",
    ]);
    root.run(&[
        "role",
        "grant-permission",
        &role,
        "--prefix=true",
        "readwrite",
        HEPS,
    ]);
    let before = stored(&etcd, "k-");
    assert_eq!(before.len(), 200);

    let mut netctl = Netctl::new();
    netctl.config_file(&etcd.netctl_config_yaml());
    netctl_snapshot!(netctl.args(["delete", "-f", "-"]).stdin(documents).run());
    assert_eq!(stored(&etcd, "k-"), before, "every host endpoint is back");
}

/// etcd killed in the middle of a 20,000-document apply: the command ends within twice the request
/// timeout, and its recovery file names exactly what is left (checked against etcd after it
/// restarts): what it says was written is there, and nothing else is, beyond the batches (two at
/// most) whose answer was lost (marked "may").
#[test]
fn etcd_killed_during_a_20000_document_apply_leaves_a_recovery_file_of_exactly_what_is_left() {
    let mut etcd = EtcdServer::start();
    let timeout = Duration::from_secs(3);
    let mut netctl = Netctl::etcd(&etcd);
    netctl.request_timeout("3s");
    let file = netctl.write_file("many.yaml", host_endpoints("x", 0..20_000));
    netctl.args(["apply", "-f", file.to_str().unwrap()]);
    let started = Instant::now();
    let mut child = netctl.spawn();
    wait_for_writes(&etcd, 2_000, &mut child);
    let written_before_kill = started.elapsed();
    etcd.kill();
    let killed = Instant::now();
    let run = wait_for_exit(child, Duration::from_secs(60));
    let took = killed.elapsed();
    eprintln!(
        "etcd killed {written_before_kill:?} into the apply; netctl exited {took:?} later (request timeout {timeout:?})"
    );
    assert!(took <= 2 * timeout, "exit took {took:?}");
    let stderr = failed(run);
    assert!(
        stderr.contains("resource(s) it wrote may still be as it left them")
            && stderr.contains("they are listed in")
            && stderr.contains("netctl delete --skip-not-exists -f"),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        2,
        "one error line and one hint: {stderr}"
    );

    etcd.restart();
    let left = stored(&etcd, "x-");
    let (written, maybe) = check_recovery(&created_file(netctl.home()), &left);
    eprintln!(
        "left in etcd: {}; recovery file: {written} written, {maybe} may have been written",
        left.len()
    );
    // What etcd held when it was killed (2,000 or more) survived its restart, and all of it is in
    // the file (`check_recovery`); netctl may not have had the answers of the last batches yet,
    // which the file marks "may".
    assert!(left.len() >= 2_000, "{} stored", left.len());
    // Each of the (at most two) batches whose answer was lost landed whole or not at all
    // (`check_recovery`); one may have landed and the other not.
    assert!(
        (left.len() - written).is_multiple_of(128) && left.len() <= written + maybe,
        "{} stored beyond the {written} written, of {maybe} that may have been",
        left.len() - written
    );
}

/// etcd hung (SIGSTOP) in the middle of an apply: the command ends within about twice the request
/// timeout with a recovery file; the batches in flight may land when etcd continues, and the
/// file says so.
#[test]
fn a_hung_etcd_during_an_apply_ends_the_command_within_a_bound() {
    let mut etcd = EtcdServer::start();
    // Long enough that the fixed costs (the leader check, writing the recovery file on a loaded
    // machine) do not decide the bound; it is the timeouts that must not add up.
    let timeout = Duration::from_secs(4);
    let mut netctl = Netctl::etcd(&etcd);
    netctl.request_timeout("4s");
    let file = netctl.write_file("many.yaml", host_endpoints("y", 0..10_000));
    netctl.args(["apply", "-f", file.to_str().unwrap()]);
    let mut child = netctl.spawn();
    wait_for_writes(&etcd, 1_000, &mut child);
    etcd.pause();
    let paused = Instant::now();
    let run = wait_for_exit(child, Duration::from_secs(60));
    let took = paused.elapsed();
    etcd.resume();
    eprintln!("etcd hung; netctl exited {took:?} later (request timeout {timeout:?})");
    // The batches in flight time out together (one request timeout), the check that etcd has no
    // leader takes up to a second, then the undo has one deadline (it fails at once: the member
    // failed).
    assert!(
        took <= 2 * timeout + Duration::from_secs(2),
        "exit took {took:?}"
    );
    let stderr = failed(run);
    assert!(stderr.contains("may still be as it left them"), "{stderr}");
    // Give a batch that was queued in etcd time to land.
    std::thread::sleep(Duration::from_millis(500));
    let left = stored(&etcd, "y-");
    let (written, maybe) = check_recovery(&created_file(netctl.home()), &left);
    eprintln!(
        "left: {}; {written} written, {maybe} may have been",
        left.len()
    );
}

/// Ctrl-C and SIGTERM in the middle of a 20,000-document apply: the command stops between two
/// batches, puts back what it wrote, says so, and fails.
#[test]
fn ctrl_c_and_sigterm_during_an_apply_stop_between_batches_and_undo() {
    let etcd = EtcdServer::start();
    for (signal, prefix, name) in [
        (rustix::process::Signal::INT, "int", "SIGINT (Ctrl-C)"),
        (rustix::process::Signal::TERM, "term", "SIGTERM"),
    ] {
        let mut netctl = Netctl::etcd(&etcd);
        netctl.request_timeout("10s");
        // 20,000 documents, so the apply is still running when the signal lands: with 5,000 a run
        // on a loaded machine once finished between the test seeing 256 written and its signal.
        let file = netctl.write_file("many.yaml", host_endpoints(prefix, 0..20_000));
        netctl.args(["apply", "-f", file.to_str().unwrap()]);
        let before = count(&etcd);
        let mut child = netctl.spawn();
        wait_for_writes(&etcd, before + 256, &mut child);
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
        let run: Run = wait_for_exit(child, Duration::from_secs(60));
        let stderr = failed(run);
        assert!(
            stderr.contains(&format!(
                "error: stopped by {name} between two batches, and the "
            )) && stderr.contains("resource(s) written before it were put back as they were"),
            "{stderr}"
        );
        assert!(
            stored(&etcd, prefix).is_empty(),
            "{name}: everything undone"
        );
    }
}
