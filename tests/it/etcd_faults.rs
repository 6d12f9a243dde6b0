//! Faults a datastore really has, against real etcd on loopback: a hung member (SIGSTOP, before
//! and during a command), a listener that accepts and never answers, a dead member (SIGKILL), the
//! leader killed in the middle of a large apply, a cluster without quorum, answers lost after etcd
//! applied a write, TLS to an IPv6 literal, and messages that say which endpoint failed how.
//!
//! What it proves is the client's behaviour across a whole command (mostly through the netctl
//! binary): a bad member costs at most one timeout per command, a dead one costs almost nothing, a
//! write cut off by a leader change or a lost answer is neither lost nor doubled. Each test bounds its own time with a short
//! `--request-timeout`; the figures are printed (`cargo test -- --nocapture`) for the record.
//! The executor's own failure handling (undo deadlines, recovery files, signals) is tested
//! elsewhere.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::support::{
    self, EtcdCluster, EtcdServer, Netctl, NotEtcdServer, Pki, ReplyDroppingProxy, Run,
    SilentListener, refused_endpoint,
};
use netctl::config::{EndpointSource, EtcdEndpoint, EtcdSettings};
use netctl::datastore::Datastore;
use netctl::datastore::etcd::{EtcdStore, Timeouts};
use netctl::resource::{Kind, Resource};

const SETS: &str = "/calico/resources/v3/projectcalico.org/globalnetworksets/";

/// `count` GlobalNetworkSet documents named `<prefix>-00000`, `<prefix>-00001`, ...
fn documents(prefix: &str, count: usize) -> String {
    let mut text = String::new();
    for index in 0..count {
        text.push_str(&format!(
            "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata:\n  name: {prefix}-{index:05}\n  labels:\n    batch: {prefix}\nspec:\n  nets:\n    - 10.{}.{}.0/24\n",
            index / 256 % 256,
            index % 256
        ));
    }
    text
}

/// Runs netctl and returns the run with its wall time.
fn timed(netctl: &Netctl) -> (Run, Duration) {
    let started = Instant::now();
    let run = netctl.run();
    (run, started.elapsed())
}

fn assert_success(run: &Run, what: &str) {
    assert_eq!(run.code, Some(0), "{what} failed: {}", run.stderr);
}

/// Applies a document then reads it back, `rounds` times: 2 × `rounds` commands, each of which
/// must succeed within `limit`. Returns the slowest.
fn apply_and_get_rounds(endpoints: &str, label: &str, rounds: usize, limit: Duration) -> Duration {
    let mut slowest = Duration::ZERO;
    for round in 0..rounds {
        let mut apply = Netctl::endpoints(endpoints);
        apply.request_timeout("2s");
        let file = apply.write_file("set.yaml", documents(&format!("{label}{round}"), 1));
        apply.arg("apply").arg("-f").arg(&file);
        let (run, took) = timed(&apply);
        assert_success(&run, &format!("apply #{round} against `{endpoints}`"));
        slowest = slowest.max(took);

        let mut get = Netctl::endpoints(endpoints);
        get.request_timeout("2s");
        get.args([
            "get",
            "globalnetworksets",
            &format!("{label}{round}-00000"),
            "-o",
            "name",
        ]);
        let (run, took) = timed(&get);
        assert_success(&run, &format!("get #{round} against `{endpoints}`"));
        assert!(
            run.stdout.contains(&format!("{label}{round}-00000")),
            "{}",
            run.stdout
        );
        slowest = slowest.max(took);
    }
    assert!(
        slowest <= limit,
        "the slowest command against `{endpoints}` took {slowest:?} (limit {limit:?})"
    );
    slowest
}

/// The index of a member that is not the leader.
fn follower(cluster: &mut EtcdCluster) -> usize {
    let leader = cluster.leader();
    (0..cluster.len())
        .find(|&member| member != leader)
        .expect("a cluster of 3 has followers")
}

#[test]
fn hung_member_listed_first_fails_no_command() {
    let mut cluster = EtcdCluster::start();
    let hung = follower(&mut cluster);
    let live: Vec<usize> = (0..cluster.len())
        .filter(|&member| member != hung)
        .collect();
    cluster.pause_member(hung);
    let endpoints = format!("{},{}", cluster.endpoint(hung), cluster.endpoint(live[0]));
    // 10 commands; each may pay the 2 s request timeout at most once, plus a loaded machine.
    let slowest = apply_and_get_rounds(&endpoints, "hung", 5, Duration::from_secs(6));
    eprintln!("hung member first: 10/10 commands succeeded, slowest {slowest:?}");
    cluster.resume_member(hung);
}

/// The number of objects under `SETS`, read with the admin's etcdctl (`--limit 1 -w json` reports
/// the count of the whole range: etcdctl 3.4 has no `--count-only`).
fn sets_stored(cluster: &EtcdCluster) -> usize {
    cluster
        .admin()
        .try_run(&[
            "get",
            "--prefix",
            "--keys-only",
            "--limit",
            "1",
            "-w",
            "json",
            SETS,
        ])
        .ok()
        .and_then(|output| serde_json::from_slice::<serde_json::Value>(&output).ok())
        .and_then(|json| json["count"].as_u64())
        .unwrap_or(0) as usize
}

/// Every object under `SETS` must be written exactly once, each with its own uid.
fn assert_written_once(cluster: &EtcdCluster, count: usize) {
    let entries = cluster.entries(SETS);
    assert_eq!(entries.len(), count, "exactly {count} objects");
    let doubled: Vec<String> = entries
        .iter()
        .filter(|entry| entry.version != 1)
        .map(|entry| entry.key_str())
        .collect();
    assert!(doubled.is_empty(), "written more than once: {doubled:?}");
    let uids: HashSet<String> = entries
        .iter()
        .map(|entry| {
            let value: serde_json::Value = serde_json::from_slice(&entry.value).expect("JSON");
            value["metadata"]["uid"].as_str().expect("a uid").to_owned()
        })
        .collect();
    assert_eq!(uids.len(), count, "every object has its own uid");
}

#[test]
fn member_hung_during_an_apply_costs_one_timeout() {
    // Writes go in transactions of up to 128, so the file must be long enough to still be
    // writing when the member hangs.
    const COUNT: usize = 10_000;
    let mut cluster = EtcdCluster::start();
    let mut apply = Netctl::endpoints(&cluster.endpoints().join(","));
    apply.request_timeout("2s");
    let file = apply.write_file("sets.yaml", documents("paused", COUNT));
    apply
        .args(["--log-level", "debug", "apply", "-f"])
        .arg(&file)
        .timeout(Duration::from_secs(120));
    let started = Instant::now();
    let running = std::thread::spawn(move || apply.run());
    let deadline = Instant::now() + Duration::from_secs(60);
    while sets_stored(&cluster) < COUNT / 10 {
        assert!(
            Instant::now() < deadline,
            "the apply wrote under 1,000 objects in 60 s"
        );
        assert!(
            !running.is_finished(),
            "the apply finished before a member could hang"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let writer = (0..cluster.len())
        .max_by_key(|&member| cluster.transactions_served(member))
        .expect("three members");
    let paused_at = started.elapsed();
    cluster.pause_member(writer);
    assert!(
        !running.is_finished(),
        "the apply finished before the member hung: nothing was tested"
    );
    let run = running.join().expect("the apply thread");
    let took = started.elapsed();
    cluster.resume_member(writer);
    let timeouts = run
        .stderr
        .lines()
        .filter(|line| line.contains("did not answer within"))
        .count();
    eprintln!(
        "member hung {paused_at:?} into a {COUNT}-document apply: exit {:?} after {took:?}, {timeouts} timeout(s)",
        run.code
    );
    assert_success(&run, "the apply across the hung member");
    // Two transactions are out at once: both may have gone to the hung member, and they time out
    // together (one timeout of waiting), then the other members take them.
    assert!(
        (1..=2).contains(&timeouts),
        "one timeout per batch in flight, then the other members: {}",
        run.stderr
    );
    assert_written_once(&cluster, COUNT);
}

#[test]
fn silent_listener_anywhere_in_the_list_fails_no_command() {
    let etcd = EtcdServer::start();
    let silent = SilentListener::start();
    for (position, endpoints) in [
        (
            "second",
            format!("{},{}", etcd.endpoint(), silent.endpoint()),
        ),
        (
            "first",
            format!("{},{}", silent.endpoint(), etcd.endpoint()),
        ),
    ] {
        let slowest = apply_and_get_rounds(&endpoints, position, 5, Duration::from_secs(6));
        eprintln!("silent listener {position}: 10/10 commands succeeded, slowest {slowest:?}");
    }
}

/// Applies `count` documents and lists them: the two commands' total time.
fn apply_and_list(endpoints: &str, prefix: &str, count: usize) -> Duration {
    let mut apply = Netctl::endpoints(endpoints);
    apply.request_timeout("2s");
    let file = apply.write_file("sets.yaml", documents(prefix, count));
    apply.arg("apply").arg("-f").arg(&file);
    let (run, apply_took) = timed(&apply);
    assert_success(
        &run,
        &format!("apply of {count} documents against `{endpoints}`"),
    );

    let mut list = Netctl::endpoints(endpoints);
    list.request_timeout("2s");
    list.args([
        "get",
        "globalnetworksets",
        "-l",
        &format!("batch == '{prefix}'"),
        "-o",
        "name",
    ]);
    let (run, list_took) = timed(&list);
    assert_success(&run, &format!("get against `{endpoints}`"));
    assert_eq!(run.stdout.lines().count(), count, "{}", run.stdout);
    apply_took + list_took
}

#[test]
fn dead_member_costs_almost_nothing() {
    let mut cluster = EtcdCluster::start();
    let dead = follower(&mut cluster);
    let live: Vec<String> = (0..cluster.len())
        .filter(|&member| member != dead)
        .map(|member| cluster.endpoint(member))
        .collect();
    cluster.kill_member(dead);
    let live_only = live.join(",");
    let with_dead = format!("{},{}", cluster.endpoint(dead), live_only);

    // Alternate the two lists so a burst of load on the machine hits both alike; compare the best.
    let (mut best_live, mut best_dead) = (Duration::MAX, Duration::MAX);
    for round in 0..3 {
        best_live = best_live.min(apply_and_list(&live_only, &format!("live{round}"), 200));
        best_dead = best_dead.min(apply_and_list(&with_dead, &format!("dead{round}"), 200));
    }
    eprintln!(
        "200-document apply + get: live-only list {best_live:?}, with a dead member listed first {best_dead:?} ({:.2}×)",
        best_dead.as_secs_f64() / best_live.as_secs_f64()
    );
    // 1.5× plus a quarter second of slack: at these sizes, process start-up noise is that large.
    assert!(
        best_dead.as_secs_f64() <= 1.5 * best_live.as_secs_f64() + 0.25,
        "a dead member costs too much: {best_dead:?} against {best_live:?}"
    );
}

#[test]
fn hung_and_dead_members_together_fail_no_command_and_cost_almost_nothing() {
    // Five members, so that one hung and one dead still leave a majority.
    let mut cluster = EtcdCluster::builder().members(5).start();
    let leader = cluster.leader();
    let mut others = (0..cluster.len()).filter(|&member| member != leader);
    let (hung, dead) = (
        others.next().expect("a follower"),
        others.next().expect("another"),
    );
    cluster.pause_member(hung);
    cluster.kill_member(dead);
    let live: Vec<String> = (0..cluster.len())
        .filter(|&member| member != hung && member != dead)
        .map(|member| cluster.endpoint(member))
        .collect();
    let faulty_first = format!(
        "{},{},{}",
        cluster.endpoint(hung),
        cluster.endpoint(dead),
        live.join(",")
    );
    let slowest = apply_and_get_rounds(&faulty_first, "both", 5, Duration::from_secs(6));
    eprintln!("hung and dead members listed first: 10/10 commands succeeded, slowest {slowest:?}");

    let live_only = live.join(",");
    let (mut best_live, mut best_faulty) = (Duration::MAX, Duration::MAX);
    for round in 0..3 {
        best_live = best_live.min(apply_and_list(&live_only, &format!("clean{round}"), 200));
        best_faulty = best_faulty.min(apply_and_list(
            &faulty_first,
            &format!("faulty{round}"),
            200,
        ));
    }
    eprintln!(
        "200-document apply + get on 5 members: live-only list {best_live:?}, hung and dead listed first {best_faulty:?} ({:.2}×)",
        best_faulty.as_secs_f64() / best_live.as_secs_f64()
    );
    assert!(
        best_faulty.as_secs_f64() <= 1.5 * best_live.as_secs_f64() + 0.25,
        "faulty members cost too much: {best_faulty:?} against {best_live:?}"
    );
    cluster.resume_member(hung);
}

/// Which member dies in [`leader_killed_during_apply`].
#[derive(Clone, Copy, Debug)]
enum Victim {
    /// Every member is listed; the one netctl writes through is made the leader, then killed: the
    /// connection breaks in the middle of requests and the cluster elects a new leader at once.
    LeaderNetctlWritesThrough,
    /// Only the followers are listed; the leader dies behind them: requests stall or are refused
    /// ("leader changed") until a new leader is elected.
    LeaderNotListed,
}

/// Starts a 5000-document apply, kills the leader once a fifth of it is written, and checks the
/// result: exit 0, exactly 5000 objects, each written once.
fn leader_killed_during_apply(victim: Victim) {
    const COUNT: usize = 5000;
    let mut cluster = EtcdCluster::start();
    let leader = cluster.leader();
    let endpoints = match victim {
        Victim::LeaderNetctlWritesThrough => cluster.endpoints(),
        Victim::LeaderNotListed => (0..cluster.len())
            .filter(|&member| member != leader)
            .map(|member| cluster.endpoint(member))
            .collect(),
    }
    .join(",");
    let mut apply = Netctl::endpoints(&endpoints);
    apply.request_timeout("5s");
    let file = apply.write_file("sets.yaml", documents("big", COUNT));
    apply
        .args(["--log-level", "debug", "apply", "-f"])
        .arg(&file)
        .timeout(Duration::from_secs(150));
    let started = Instant::now();
    let running = std::thread::spawn(move || apply.run());

    let deadline = Instant::now() + Duration::from_secs(60);
    while sets_stored(&cluster) < COUNT / 5 {
        assert!(
            Instant::now() < deadline,
            "the apply wrote under 1000 objects in 60 s"
        );
        assert!(
            !running.is_finished(),
            "the apply finished before the leader could be killed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let leader = match victim {
        Victim::LeaderNotListed => leader,
        Victim::LeaderNetctlWritesThrough => {
            let writer = (0..cluster.len())
                .max_by_key(|&member| cluster.transactions_served(member))
                .expect("three members");
            cluster.move_leader(writer);
            writer
        }
    };
    let written_before_kill = sets_stored(&cluster);
    cluster.kill_member(leader);
    let run = running.join().expect("the apply thread");
    let took = started.elapsed();
    // The client's own account of the fault: which endpoint failed how, what etcd answered.
    let account: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("endpoint `") || line.contains("retrying"))
        .collect();
    eprintln!(
        "leader killed after ~{written_before_kill} of {COUNT} documents (endpoints {endpoints}, leader {}): exit {:?} in {took:?}\n  {}",
        cluster.endpoint(leader),
        run.code,
        account.join("\n  ")
    );
    assert_success(&run, "the apply across the leader change");

    assert_written_once(&cluster, COUNT);
}

#[test]
fn leader_netctl_writes_through_killed_during_a_5000_document_apply() {
    leader_killed_during_apply(Victim::LeaderNetctlWritesThrough);
}

#[test]
fn leader_behind_the_listed_followers_killed_during_a_5000_document_apply() {
    leader_killed_during_apply(Victim::LeaderNotListed);
}

#[test]
fn tls_to_an_ipv6_literal_alone_and_in_mixed_lists() {
    // The last list mixes the literal with a host name, which netctl resolves with the system resolver.
    support::require_localhost();
    let pki = Pki::generate();
    let etcd = EtcdServer::builder().tls(&pki).dual_stack().start();
    let ipv6 = etcd.ipv6_endpoint().expect("a dual-stack server");
    assert!(ipv6.starts_with("https://[::1]:"), "{ipv6}");
    let client = pki.client(support::Ca::A);
    for endpoints in [
        ipv6.clone(),
        format!("{},{ipv6}", etcd.endpoint()),
        format!("{ipv6},{}", etcd.localhost_endpoint()),
    ] {
        let mut get = Netctl::endpoints(&endpoints);
        get.request_timeout("5s");
        get.env("ETCD_CA_CERT_FILE", pki.ca_bundle())
            .env("ETCD_CERT_FILE", &client.cert)
            .env("ETCD_KEY_FILE", &client.key)
            .args(["get", "globalnetworksets"]);
        let run = get.run();
        assert_success(&run, &format!("get over TLS from `{endpoints}`"));
    }
}

#[test]
fn every_failed_endpoint_is_named_with_how_it_failed() {
    let silent = SilentListener::start();
    let not_etcd = NotEtcdServer::start();
    let refused = refused_endpoint();
    let endpoints = format!("{refused},{},{}", silent.endpoint(), not_etcd.endpoint());
    let mut get = Netctl::endpoints(&endpoints);
    get.request_timeout("1s");
    get.args(["get", "globalnetworksets"]);
    let (run, took) = timed(&get);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let stderr = run.stderr;
    eprintln!("{stderr}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    for (endpoint, how) in [
        (refused.as_str(), "refused the connection"),
        (silent.endpoint().as_str(), "did not answer within 1s"),
        (not_etcd.endpoint().as_str(), "is not an etcd server"),
    ] {
        assert!(
            stderr.contains(&format!("`{endpoint}` {how}")),
            "`{endpoint}` {how}:\n{stderr}"
        );
    }
    assert!(!stderr.contains("transport error"), "{stderr}");
}

#[test]
fn a_cluster_without_quorum_is_reported_as_such_not_as_unreachable() {
    let mut cluster = EtcdCluster::start();
    let endpoints = cluster.endpoints().join(",");
    cluster.kill_member(0);
    cluster.kill_member(1);
    let survivor = cluster.endpoint(2);
    // Right away, the survivor still believes in a leader and holds the request: it is asked for
    // its status, which tells. Seconds later it knows, and answers "no leader" itself.
    for (when, says) in [
        (
            "at once",
            format!("`{survivor}` is running but has no leader"),
        ),
        (
            "later",
            "etcd kept answering `etcdserver: no leader` for".to_owned(),
        ),
    ] {
        if when == "later" {
            std::thread::sleep(Duration::from_secs(3));
        }
        let mut get = Netctl::endpoints(&endpoints);
        get.request_timeout("2s");
        get.args(["get", "globalnetworksets"]);
        let (run, took) = timed(&get);
        assert_eq!(run.code, Some(1), "{}", run.stdout);
        let stderr = run.stderr;
        eprintln!("{when} ({took:?}): {stderr}");
        assert!(took < Duration::from_secs(8), "took {took:?}");
        assert!(
            stderr.contains(&says)
                || when == "at once"
                    && stderr.contains("etcd kept answering `etcdserver: no leader`"),
            "{when}: {stderr}"
        );
        for dead in [cluster.endpoint(0), cluster.endpoint(1)] {
            assert!(
                stderr.contains(&format!("`{dead}` refused the connection")),
                "{stderr}"
            );
        }
        assert!(
            stderr.contains("hint: the etcd members that answer cannot reach enough of the others"),
            "{stderr}"
        );
    }
}

#[test]
fn a_failed_endpoint_beside_a_healthy_one_is_not_an_error() {
    let etcd = EtcdServer::start();
    let refused = refused_endpoint();
    let mut get = Netctl::endpoints(&format!("{refused},{}", etcd.endpoint()));
    get.request_timeout("2s");
    get.args(["get", "globalnetworksets"]);
    let run = get.run();
    assert_success(&run, "get with one refused endpoint");
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

/// A write carried out by etcd whose answer never arrives is sent again to another member; the
/// guard makes the second copy fail, and the store must recognise the first copy as its own:
/// report success, with the revision of that copy, and leave the object written exactly once.
/// Seen through netctl's own client: the binary cannot show what one write returned.
#[test]
fn a_write_whose_answer_is_lost_is_reported_done_and_applied_once() {
    let cluster = EtcdCluster::start();
    // Four endpoints for three writes and their copies sent again: the fourth is a second way to
    // the first member.
    let proxies: Vec<ReplyDroppingProxy> = [0, 1, 2, 0]
        .into_iter()
        .map(|member| ReplyDroppingProxy::start(cluster.port(member)))
        .collect();
    let settings = EtcdSettings {
        endpoints: EndpointSource::Static(
            proxies
                .iter()
                .map(|proxy| EtcdEndpoint::parse(&proxy.endpoint()).expect("an endpoint"))
                .collect(),
        ),
        credentials: None,
        tls: None,
        resolver: None,
    };
    let timeouts = Timeouts {
        connect: Duration::from_secs(2),
        request: Duration::from_secs(1),
    };
    let path = "/calico/resources/v3/projectcalico.org/nodes/lost-answers";
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let store = EtcdStore::connect(&settings, timeouts)
            .await
            .expect("connect");
        // Each write goes to the endpoint in use, whose answers are then lost.
        let lose_answers_of_current = |store: &EtcdStore| {
            let current = store.current_endpoint();
            proxies
                .iter()
                .find(|proxy| proxy.endpoint() == current)
                .expect("the current endpoint is a proxy")
                .drop_replies();
        };

        let node = Resource::new(Kind::Node, "lost-answers");
        lose_answers_of_current(&store);
        let created = store.create(&node).await.expect("the create succeeds");
        let stored = cluster.entries(path);
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].version, 1, "created once");
        assert_eq!(
            created.metadata.resource_version,
            Some(stored[0].mod_revision.to_string()),
            "the revision of the copy that applied"
        );

        let mut changed = created.clone();
        changed.metadata.labels.insert("zone".into(), "a".into());
        lose_answers_of_current(&store);
        let updated = store.update(&changed).await.expect("the update succeeds");
        let stored = cluster.entries(path);
        assert_eq!(stored[0].version, 2, "updated once");
        assert_eq!(
            updated.metadata.resource_version,
            Some(stored[0].mod_revision.to_string())
        );

        lose_answers_of_current(&store);
        let deleted = store
            .delete(&node.key(), updated.metadata.resource_version.as_deref())
            .await
            .expect("the delete succeeds");
        assert_eq!(deleted.metadata.labels["zone"], "a", "the deleted version");
        assert!(cluster.entries(path).is_empty(), "deleted");

        // With the last endpoint silenced too, the next request fails, naming each one.
        lose_answers_of_current(&store);
        let error = store.get(&node.key()).await.expect_err("no member left");
        assert!(error.no_endpoint_left(), "{error:?}");
        // The neutral category, then etcd's own account of each endpoint as its cause.
        let message = netctl::errors::error_chain(&error);
        assert!(
            message.starts_with("the datastore is unavailable: "),
            "{message}"
        );
        for proxy in &proxies {
            assert!(
                message.contains(&format!("`{}` did not answer within 1s", proxy.endpoint())),
                "{message}"
            );
        }
    });
}
