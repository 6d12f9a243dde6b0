//! Tests of the test harness itself (`tests/support`), so that a failing netctl integration test
//! points at netctl and not at the harness: every server mode starts, serves, and enforces what it
//! claims (TLS client certificates, RBAC), the cluster survives a dead member, and dnsmasq serves
//! the SRV records netctl will discover.
//!
//! They use only `etcdctl`, dnsmasq and a DNS client, never netctl's own datastore code.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{
    self, AuthSetup, Ca, DnsServer, EtcdCluster, EtcdServer, Netctl, Pki, SrvRecord,
};

#[test]
fn plain_server_put_get_and_helpers() {
    let started = Instant::now();
    let etcd = EtcdServer::start();
    eprintln!("plain server started in {:?}", started.elapsed());
    assert!(etcd.endpoint().starts_with("http://127.0.0.1:"));
    assert_eq!(etcd.endpoints(), vec![etcd.endpoint()]);
    assert!(
        etcd.data_dir().join("member").is_dir(),
        "etcd wrote its data dir"
    );

    assert_eq!(etcd.get("/calico/missing"), None);
    assert_eq!(etcd.mod_revision("/calico/missing"), None);
    etcd.put("/calico/resources/v3/a", "{\"x\":1}");
    // Values go through stdin: newlines and a leading dash survive, and so do keys with a dash.
    etcd.put("/calico/resources/v3/b", "-line one\nline two\n");
    etcd.put("-dash-key", "v");
    assert_eq!(
        etcd.get("/calico/resources/v3/a").as_deref(),
        Some("{\"x\":1}")
    );
    assert_eq!(
        etcd.get("/calico/resources/v3/b").as_deref(),
        Some("-line one\nline two\n")
    );
    assert_eq!(etcd.get("-dash-key").as_deref(), Some("v"));
    assert_eq!(
        etcd.get_prefix("/calico/"),
        vec![
            ("/calico/resources/v3/a".to_owned(), "{\"x\":1}".to_owned()),
            (
                "/calico/resources/v3/b".to_owned(),
                "-line one\nline two\n".to_owned()
            ),
        ]
    );
    assert_eq!(
        etcd.get_prefix("").len(),
        3,
        "the empty prefix is the whole store"
    );

    let revision_a = etcd
        .mod_revision("/calico/resources/v3/a")
        .expect("key exists");
    assert!(revision_a > 0);
    assert!(etcd.revision() >= revision_a);

    // The dump is stable while nothing writes, and sees a same-value rewrite.
    let before = etcd.dump_prefix_bytes("/calico/");
    assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));
    etcd.put("-dash-key", "other");
    assert_eq!(
        before,
        etcd.dump_prefix_bytes("/calico/"),
        "writes elsewhere are not in the dump"
    );
    etcd.put("/calico/resources/v3/a", "{\"x\":1}");
    assert_ne!(
        before,
        etcd.dump_prefix_bytes("/calico/"),
        "a rewrite changes the mod revision"
    );
    assert!(etcd.mod_revision("/calico/resources/v3/a").unwrap() > revision_a);

    // Binary values keep every byte.
    etcd.put("/bin", [0u8, 255, 10, 13, 0]);
    assert_eq!(etcd.entries("/bin")[0].value, vec![0u8, 255, 10, 13, 0]);

    assert!(etcd.delete("-dash-key"));
    assert!(!etcd.delete("-dash-key"));
    assert_eq!(etcd.delete_prefix("/calico/"), 2);
    assert!(etcd.get_prefix("/calico/").is_empty());

    // The pre-configured command works as is.
    let output = etcd
        .etcdctl()
        .args(["endpoint", "health"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn server_restart_keeps_data_and_ports() {
    let mut etcd = EtcdServer::start();
    etcd.put("/calico/k", "v");
    let endpoint = etcd.endpoint();
    etcd.kill();
    assert!(!etcd.is_running());
    let quick = etcd
        .admin()
        .with_timeouts(Duration::from_millis(500), Duration::from_secs(1));
    assert!(
        quick.try_get("/calico/k").is_err(),
        "a killed server does not answer"
    );
    let started = Instant::now();
    etcd.restart();
    eprintln!("restart took {:?}", started.elapsed());
    assert_eq!(etcd.endpoint(), endpoint);
    assert_eq!(etcd.get("/calico/k").as_deref(), Some("v"));
}

#[test]
fn dual_stack_server_answers_on_ipv4_and_ipv6() {
    let started = Instant::now();
    let etcd = EtcdServer::builder().dual_stack().start();
    eprintln!("dual-stack server started in {:?}", started.elapsed());
    let ipv6 = etcd
        .ipv6_endpoint()
        .expect("dual-stack has an IPv6 endpoint");
    assert_eq!(ipv6, format!("http://[::1]:{}", etcd.port()));
    assert_eq!(etcd.client_urls(), vec![etcd.endpoint(), ipv6.clone()]);

    etcd.admin()
        .with_endpoints(vec![ipv6.clone()])
        .put("/calico/v6", "written over ::1");
    assert_eq!(etcd.get("/calico/v6").as_deref(), Some("written over ::1"));
    // Read back over IPv4: one server, both stacks.
    let over_ipv4 = etcd.admin().with_endpoints(vec![etcd.endpoint()]);
    assert_eq!(
        over_ipv4.get("/calico/v6").as_deref(),
        Some("written over ::1")
    );
}

#[test]
fn pki_files_and_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let pki = Pki::generate();
    for pair in [
        pki.server(),
        pki.client(Ca::A),
        pki.client(Ca::B),
        pki.client(Ca::C),
        pki.ca(Ca::A),
    ] {
        let mode = std::fs::metadata(&pair.key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", pair.key.display());
        assert_eq!(std::fs::read_to_string(&pair.cert).unwrap(), pair.cert_pem);
        assert!(pair.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    }
    let bundle = std::fs::read_to_string(pki.ca_bundle()).unwrap();
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2);
    assert_eq!(
        bundle,
        format!("{}{}", pki.ca(Ca::A).cert_pem, pki.ca(Ca::B).cert_pem)
    );
    assert!(!bundle.contains(&pki.ca(Ca::C).cert_pem));
}

#[test]
fn tls_server_accepts_trusted_client_certificates_only() {
    let pki = Pki::generate();
    let started = Instant::now();
    let etcd = EtcdServer::builder().tls(&pki).dual_stack().start();
    eprintln!("TLS server started in {:?}", started.elapsed());
    assert!(etcd.endpoint().starts_with("https://127.0.0.1:"));

    etcd.put("/calico/tls", "ok");
    let client_b = etcd.admin().with_client_cert(pki.client(Ca::B));
    assert_eq!(
        client_b.get("/calico/tls").as_deref(),
        Some("ok"),
        "CA B is in the bundle"
    );

    // Rejected handshakes make etcdctl retry until its timeouts: keep them short.
    let quick = etcd
        .admin()
        .with_timeouts(Duration::from_millis(500), Duration::from_secs(1));
    let client_c = quick.clone().with_client_cert(pki.client(Ca::C));
    let error = client_c
        .try_get("/calico/tls")
        .expect_err("CA C is not trusted");
    assert!(!error.is_empty());
    let no_cert = quick.without_client_cert();
    no_cert
        .try_get("/calico/tls")
        .expect_err("a client certificate is required");

    // The server certificate carries ::1 too (and `localhost`, which the SRV discovery tests use;
    // an address literal here keeps this test independent of name resolution).
    let ipv6 = etcd.ipv6_endpoint().unwrap();
    let client = etcd.admin().with_endpoints(vec![ipv6.clone()]);
    assert_eq!(client.get("/calico/tls").as_deref(), Some("ok"), "{ipv6}");
    // And the server rejects CA C for the reason we think (gotcha G7: the client error is vague).
    let log = std::fs::read_to_string(etcd.log_path()).unwrap();
    assert!(
        log.contains("certificate signed by unknown authority"),
        "{}",
        etcd.log_tail()
    );
}

#[test]
fn auth_limits_the_netctl_user_to_its_prefix() {
    let started = Instant::now();
    let etcd = EtcdServer::builder()
        .auth(AuthSetup::default().token_ttl(Duration::from_secs(2)))
        .start();
    eprintln!("auth server started in {:?}", started.elapsed());
    let auth = etcd.auth().unwrap().clone();
    assert_eq!(
        (auth.user.as_str(), auth.prefix.as_str()),
        ("netctl", "/calico/")
    );

    let user = etcd.as_limited_user();
    user.put("/calico/resources/v3/x", "1");
    assert_eq!(user.get("/calico/resources/v3/x").as_deref(), Some("1"));
    let denied = user
        .try_put("/other/x", "1")
        .expect_err("outside the prefix");
    assert!(denied.contains("permission denied"), "{denied}");
    let denied = user.try_get("/other/x").expect_err("outside the prefix");
    assert!(denied.contains("permission denied"), "{denied}");

    let wrong = etcd
        .as_user("netctl", "wrong-password")
        .try_get("/calico/resources/v3/x");
    let wrong = wrong.expect_err("wrong password");
    assert!(wrong.contains("authentication failed"), "{wrong}");
    let anonymous = etcd
        .anonymous()
        .try_get("/calico/resources/v3/x")
        .expect_err("no user");
    assert!(anonymous.contains("user name is empty"), "{anonymous}");

    // The helpers act as root, which may read and write anywhere.
    etcd.put("/other/x", "root");
    assert_eq!(etcd.get("/calico/resources/v3/x").as_deref(), Some("1"));

    // Each etcdctl run logs in afresh, so a 2 s token TTL does not disturb it.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(user.get("/calico/resources/v3/x").as_deref(), Some("1"));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", etcd.pid().unwrap())).unwrap();
    assert!(String::from_utf8_lossy(&cmdline).contains("--auth-token-ttl\x002\x00"));
}

#[test]
fn tls_with_auth_takes_the_user_from_the_certificate_common_name() {
    let pki = Pki::generate();
    let started = Instant::now();
    let etcd = EtcdServer::builder()
        .tls(&pki)
        .auth(AuthSetup::default())
        .start();
    eprintln!("TLS + auth server started in {:?}", started.elapsed());
    etcd.put("/calico/k", "v");

    // The default client CN `netctl-client` is no user: denied (gotcha G6).
    let error = etcd
        .anonymous()
        .try_get("/calico/k")
        .expect_err("CN is no user");
    assert!(error.contains("permission denied"), "{error}");
    // A certificate with CN `netctl` acts as user netctl without a password.
    let as_netctl = etcd
        .anonymous()
        .with_client_cert(&pki.issue_client(Ca::B, "netctl"));
    assert_eq!(as_netctl.get("/calico/k").as_deref(), Some("v"));
    let error = as_netctl
        .try_get("/elsewhere")
        .expect_err("outside the prefix");
    assert!(error.contains("permission denied"), "{error}");
    // A password login still works over TLS.
    assert_eq!(
        etcd.as_limited_user().get("/calico/k").as_deref(),
        Some("v")
    );
}

#[test]
fn cluster_keeps_serving_with_one_member_killed() {
    let started = Instant::now();
    let mut cluster = EtcdCluster::start();
    eprintln!("3-member cluster started in {:?}", started.elapsed());
    assert_eq!(cluster.endpoints().len(), 3);
    cluster.put("/calico/before", "1");

    // A dead follower does not even slow writes down.
    let leader = cluster.leader();
    let follower = (leader + 1) % 3;
    cluster.kill_member(follower);
    assert!(!cluster.is_running(follower));
    cluster.put("/calico/follower-dead", "2");
    let restarted = Instant::now();
    cluster.restart_member(follower);
    eprintln!("member restart took {:?}", restarted.elapsed());
    let member = cluster.member_etcdctl(follower);
    assert_eq!(
        member.get("/calico/follower-dead").as_deref(),
        Some("2"),
        "caught up"
    );

    // A dead leader stalls writes until the others elect a new one.
    let killed = Instant::now();
    cluster.kill_member(leader);
    let new_leader = cluster.leader();
    eprintln!(
        "new leader elected {:?} after killing the old one",
        killed.elapsed()
    );
    assert_ne!(new_leader, leader);
    cluster.put("/calico/leader-dead", "3");
    for i in (0..3).filter(|&i| i != leader) {
        let member = cluster.member_etcdctl(i);
        assert_eq!(
            member.get("/calico/before").as_deref(),
            Some("1"),
            "member {i}"
        );
        assert_eq!(
            member.get("/calico/leader-dead").as_deref(),
            Some("3"),
            "member {i}"
        );
    }
    cluster.restart_member(leader);
    let member = cluster.member_etcdctl(leader);
    assert_eq!(
        member.get("/calico/leader-dead").as_deref(),
        Some("3"),
        "caught up"
    );
}

#[test]
fn tls_cluster_with_auth_survives_a_member_restart() {
    let pki = Pki::generate();
    let started = Instant::now();
    let mut cluster = EtcdCluster::builder()
        .tls(&pki)
        .auth(AuthSetup::default())
        .start();
    eprintln!(
        "3-member TLS + auth cluster started in {:?}",
        started.elapsed()
    );
    assert!(
        cluster
            .endpoints()
            .iter()
            .all(|url| url.starts_with("https://127.0.0.1:"))
    );
    let user = cluster.as_limited_user();
    user.put("/calico/a", "1");

    cluster.kill_member(2);
    user.put("/calico/b", "2");
    // The restart probes health as root: auth is already enabled by then.
    cluster.restart_member(2);
    let member = cluster.member_etcdctl(2).with_user("netctl", "netctl-pw");
    assert_eq!(member.get("/calico/b").as_deref(), Some("2"));
    let denied = member
        .try_put("/other", "x")
        .expect_err("outside the prefix");
    assert!(denied.contains("permission denied"), "{denied}");
}

#[test]
fn dns_server_serves_srv_records_for_both_services() {
    let started = Instant::now();
    let dns = DnsServer::builder()
        .etcd_client("example.test", "etcd1.example.test", 23791, 10, 5)
        .etcd_client("example.test", "etcd2.example.test", 23792, 0, 5)
        .etcd_client_ssl("example.test", "localhost", 23793, 0, 0)
        .host(
            "etcd1.example.test",
            &[IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))],
        )
        .start();
    eprintln!("dnsmasq started in {:?}", started.elapsed());
    let (key, value) = dns.resolver_env();
    assert_eq!(key, "NETCTL_RESOLVER");
    assert_eq!(value, format!("127.0.0.1:{}", dns.port()));

    let mut plain = dns.query_srv("_etcd-client._tcp.example.test");
    plain.sort_by_key(|record| record.priority);
    assert_eq!(
        plain,
        vec![
            SrvRecord::etcd_client("example.test", "etcd2.example.test", 23792).weight(5),
            SrvRecord::etcd_client("example.test", "etcd1.example.test", 23791)
                .priority(10)
                .weight(5),
        ]
    );
    assert_eq!(
        dns.query_srv("_etcd-client-ssl._tcp.example.test"),
        vec![SrvRecord::etcd_client_ssl(
            "example.test",
            "localhost",
            23793
        )]
    );
    assert!(dns.query_srv("_etcd-client._tcp.other.test").is_empty());
    assert_eq!(
        dns.query_a("etcd1.example.test"),
        vec![Ipv4Addr::new(127, 0, 0, 2)]
    );
    assert_eq!(dns.query_a("etcd2.example.test"), vec![Ipv4Addr::LOCALHOST]);
}

/// The same records through hickory-resolver, configured the way netctl will be (gotcha G11).
#[tokio::test]
async fn dns_server_answers_hickory_resolver_on_a_custom_port() {
    use hickory_resolver::Resolver;
    use hickory_resolver::config::{NameServerConfig, ResolverConfig};
    use hickory_resolver::net::runtime::TokioRuntimeProvider;
    use hickory_resolver::proto::rr::RData;

    let dns = DnsServer::builder()
        .etcd_client("example.test", "etcd1.example.test", 23791, 0, 10)
        .etcd_client("example.test", "etcd2.example.test", 23792, 1, 10)
        .start();
    let mut name_server = NameServerConfig::udp_and_tcp(IpAddr::V4(Ipv4Addr::LOCALHOST));
    for connection in &mut name_server.connections {
        connection.port = dns.port();
    }
    let config = ResolverConfig::from_name_servers(vec![name_server]);
    let resolver = Resolver::builder_with_config(config, TokioRuntimeProvider::default())
        .build()
        .expect("build resolver");
    let lookup = resolver
        .srv_lookup("_etcd-client._tcp.example.test.")
        .await
        .expect("SRV lookup");
    let mut found: Vec<(u16, u16, String)> = lookup
        .answers()
        .iter()
        .filter_map(|record| match &record.data {
            RData::SRV(srv) => Some((srv.priority, srv.port, srv.target.to_utf8())),
            _ => None,
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            (0, 23791, "etcd1.example.test.".to_owned()),
            (1, 23792, "etcd2.example.test.".to_owned()),
        ]
    );
}

#[test]
fn netctl_runs_in_a_sandbox() {
    let output = Netctl::new().arg("--help").output();
    assert!(
        output.status.code().is_some(),
        "netctl was killed by a signal: {output:?}"
    );

    // The sandbox, seen by `env`: only PATH, HOME, NO_COLOR and what the test sets.
    let mut env = Netctl::with_program("/usr/bin/env");
    env.env("NET_LOG_LEVEL", "debug");
    let output = env.assert().success().get_output().stdout.clone();
    let mut names: Vec<String> = String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|line| line.split('=').next().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["HOME", "NET_LOG_LEVEL", "NO_COLOR", "PATH"]);

    // The config file comes first as `-c <file>`, whatever the call order.
    let mut echo = Netctl::with_program("/bin/echo");
    echo.args(["get", "nodes"]).config_file("x: 1\n");
    let config = echo.home().join("netctl.cfg");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "x: 1\n");
    echo.assert()
        .success()
        .stdout(format!("-c {} get nodes\n", config.display()));
}

#[test]
fn netctl_config_yaml_describes_the_server() {
    let pki = Pki::generate();
    let etcd = EtcdServer::builder()
        .tls(&pki)
        .auth(AuthSetup::default())
        .start();
    let yaml = etcd.netctl_config_yaml();
    let config: serde_json::Value = netctl::yaml::from_str(&yaml).unwrap();
    assert_eq!(config["kind"], "NetAPIConfig");
    assert_eq!(config["spec"]["etcdEndpoints"], etcd.endpoint());
    assert_eq!(config["spec"]["etcdUsername"], "netctl");
    assert_eq!(config["spec"]["etcdPassword"], "netctl-pw");
    let ca = config["spec"]["etcdCACertFile"].as_str().unwrap();
    assert_eq!(std::path::Path::new(ca), pki.ca_bundle());
    let plain = EtcdCluster::builder()
        .members(1)
        .start()
        .netctl_config_yaml();
    assert!(
        !plain.contains("etcdCACertFile") && !plain.contains("etcdUsername"),
        "{plain}"
    );
}

#[test]
#[should_panic(expected = "no-such-program-netctl not found: install it with `apt-get install x`")]
fn a_missing_program_fails_with_an_install_hint() {
    support::find_program("no-such-program-netctl", "apt-get install x");
}

#[test]
fn servers_are_killed_when_a_test_panics() {
    let pid = std::thread::spawn(|| {
        let etcd = EtcdServer::start();
        let pid = etcd.pid().unwrap();
        std::panic::panic_any(pid);
    })
    .join()
    .expect_err("the thread panicked");
    let pid = *pid.downcast::<u32>().unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "etcd {pid} outlived the panicking test"
    );
}

#[test]
fn servers_of_dead_test_processes_are_reaped() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    let dir = tempfile::Builder::new()
        .prefix("netctl-test-orphan-")
        .tempdir()
        .unwrap()
        .keep();
    let mut owner = Command::new("true").spawn().unwrap();
    owner.wait().unwrap();
    std::fs::write(dir.join("owner.pid"), owner.id().to_string()).unwrap();
    // A stand-in server whose command line names its directory, as etcd's and dnsmasq's do.
    std::fs::write(dir.join("log"), "").unwrap();
    let mut server = Command::new("tail")
        .arg("-f")
        .arg(dir.join("log"))
        .spawn()
        .unwrap();
    std::fs::write(dir.join("server.pid"), server.id().to_string()).unwrap();
    // Wait until tail has exec'd, so its command line is the one checked.
    let cmdline = format!("/proc/{}/cmdline", server.id());
    while !std::fs::read_to_string(&cmdline)
        .unwrap_or_default()
        .starts_with("tail")
    {
        std::thread::sleep(Duration::from_millis(10));
    }

    support::reap::reap_orphans();
    assert_eq!(
        server.wait().unwrap().signal(),
        Some(9),
        "the orphan was killed"
    );
    assert!(!dir.exists(), "the orphan's directory was removed");
}

/// Where the hanging tests below record the pid of the program they started.
const WATCHDOG_PID_FILE: &str = "NETCTL_TEST_WATCHDOG_PID_FILE";
/// Where the test after them records that it ran.
const WATCHDOG_MARKER: &str = "NETCTL_TEST_WATCHDOG_MARKER";

/// Starts `sleep 1000` as a process of this test and records its pid in the file the test that
/// runs this one named; `None` when run by hand (`--ignored`), where there is nothing to prove.
fn start_sleep() -> Option<support::ChildGuard> {
    let pid_file = std::env::var_os(WATCHDOG_PID_FILE)?;
    let sleep = support::find_program("sleep", "apt-get install coreutils");
    let child = support::ChildGuard::new(
        std::process::Command::new(sleep)
            .arg("1000")
            .spawn()
            .unwrap(),
    );
    std::fs::write(pid_file, child.id().to_string()).unwrap();
    Some(child)
}

#[test]
#[ignore = "hangs on purpose; run by the_watchdog_stops_a_test_that_hangs_in_its_own_code"]
fn watchdog_hangs_in_its_own_code() {
    let Some(_child) = start_sleep() else {
        return;
    };
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
#[ignore = "hangs on purpose; run by the_watchdog_kills_the_processes_of_a_test_that_hangs_on_them"]
fn watchdog_hangs_on_a_process() {
    let Some(mut child) = start_sleep() else {
        return;
    };
    let status = child.wait().unwrap();
    panic!("`sleep 1000` ended early: {status}");
}

#[test]
#[ignore = "run by the_watchdog_kills_the_processes_of_a_test_that_hangs_on_them"]
fn watchdog_then_the_next_test_runs() {
    if let Some(marker) = std::env::var_os(WATCHDOG_MARKER) {
        std::fs::write(marker, "ran").unwrap();
    }
}

/// Runs this test binary again with the ignored tests named by `filters`, a time limit of 2 s.
fn run_ignored(filters: &[&str], pid_file: &Path, marker: &Path) -> (Option<i32>, String, String) {
    let output = assert_cmd::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "--test-threads=1"])
        .args(filters)
        .env("NETCTL_TEST_TIME_LIMIT", "2")
        .env(WATCHDOG_PID_FILE, pid_file)
        .env(WATCHDOG_MARKER, marker)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Whether the process whose pid `pid_file` holds is gone (or a zombie until init reaps it).
fn killed(pid_file: &Path) -> bool {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    support::poll_until(Duration::from_secs(10), Duration::from_millis(50), || {
        match std::fs::read_to_string(&stat) {
            Err(_) => Some(()),
            Ok(stat) => stat
                .rsplit_once(") ")
                .filter(|(_, rest)| rest.starts_with('Z'))
                .map(|_| ()),
        }
    })
    .is_some()
}

/// Regression: a test that never ended kept `scripts/test.sh` waiting forever.
#[test]
fn the_watchdog_stops_a_test_that_hangs_in_its_own_code() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, marker) = (dir.path().join("sleep.pid"), dir.path().join("marker"));
    let started = Instant::now();
    let (code, _, stderr) = run_ignored(
        &["harness::watchdog_hangs_in_its_own_code"],
        &pid_file,
        &marker,
    );
    assert_eq!(code, Some(101), "{stderr}");
    assert!(
        stderr.contains(
            "watchdog: test `harness::watchdog_hangs_in_its_own_code` is still running after 2 s"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "watchdog: test `harness::watchdog_hangs_in_its_own_code` did not end within 2 s \
             after its processes were killed; killing this test binary's servers and stopping it"
        ),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        killed(&pid_file),
        "`sleep` outlived the stopped test binary"
    );
}

/// With every test in one binary, a hung test must not cost the tests after it: its processes are
/// killed, it fails, and the binary goes on.
#[test]
fn the_watchdog_kills_the_processes_of_a_test_that_hangs_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, marker) = (dir.path().join("sleep.pid"), dir.path().join("marker"));
    let (code, stdout, stderr) = run_ignored(
        &[
            "harness::watchdog_hangs_on_a_process",
            "harness::watchdog_then_the_next_test_runs",
        ],
        &pid_file,
        &marker,
    );
    assert_eq!(code, Some(101), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "watchdog: test `harness::watchdog_hangs_on_a_process` is still running after 2 s, \
             its time limit (NETCTL_TEST_TIME_LIMIT); killing the processes it started"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("did not end"), "{stderr}");
    assert!(
        stdout.contains("test harness::watchdog_hangs_on_a_process ... FAILED"),
        "{stdout}"
    );
    assert!(
        stdout.contains("test harness::watchdog_then_the_next_test_runs ... ok"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran");
    assert!(killed(&pid_file));
}
