//! End-to-end tests of the foundation: every way of configuring netctl (file, environment, `NET_`
//! prefix) and every etcd security mode (plain, IPv6, RBAC, mutual TLS from files and inline PEM, CA
//! bundles, SRV discovery, a 3-member cluster), through the `netctl` binary against real etcd servers;
//! and the distinct, readable failures (wrong password, untrusted server, rejected client certificate,
//! refused connection, timeout).

use std::net::TcpListener;
use std::time::Duration;

use crate::support::snapshot::netctl_snapshot;
use crate::support::{self, AuthSetup, Ca, DnsServer, EtcdCluster, EtcdServer, Netctl, Pki};

const NODES: &str = "/calico/resources/v3/projectcalico.org/nodes/";

fn seed_nodes(etcd: &EtcdServer, names: &[&str]) {
    for name in names {
        etcd.put(
            &format!("{NODES}{name}"),
            format!(
                r#"{{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{{"name":"{name}"}},"spec":{{}}}}"#
            ),
        );
    }
}

fn stdout_of(netctl: &Netctl) -> String {
    let output = netctl.output();
    assert!(
        output.status.success(),
        "netctl failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn stderr_of_failure(netctl: &Netctl) -> String {
    let output = netctl.output();
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected exit 1; stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8(output.stderr).unwrap()
}

fn etcd_env<'a>(netctl: &'a mut Netctl, endpoints: &str) -> &'a mut Netctl {
    netctl
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", endpoints)
}

#[test]
fn empty_datastore_prints_an_empty_table() {
    let etcd = EtcdServer::start();
    let mut netctl = Netctl::new();
    etcd_env(&mut netctl, &etcd.endpoint()).args(["get", "nodes"]);
    assert_eq!(stdout_of(&netctl), "NAME   \n\n");
}

#[test]
fn environment_configuration_lists_registered_nodes() {
    let etcd = EtcdServer::start();
    seed_nodes(&etcd, &["node-b", "node-a"]);
    let mut netctl = Netctl::new();
    etcd_env(&mut netctl, &etcd.endpoint()).args(["get", "nodes"]);
    assert_eq!(stdout_of(&netctl), "NAME     \nnode-a   \nnode-b   \n\n");
}

#[test]
fn prefixed_variables_win_over_plain_ones() {
    let etcd = EtcdServer::start();
    seed_nodes(&etcd, &["node-a"]);
    let mut netctl = Netctl::new();
    netctl
        .env("DATASTORE_TYPE", "kubernetes")
        .env("NET_DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", "http://127.0.0.1:1")
        .env("NET_ETCD_ENDPOINTS", etcd.endpoint())
        .args(["get", "nodes"]);
    assert!(stdout_of(&netctl).contains("node-a"));
}

#[test]
fn file_configuration_is_used_and_environment_ignored() {
    let etcd = EtcdServer::start();
    seed_nodes(&etcd, &["node-a"]);
    let mut netctl = Netctl::new();
    netctl
        .config_file(&etcd.netctl_config_yaml())
        .env("ETCD_ENDPOINTS", "http://127.0.0.1:1")
        .env("DATASTORE_TYPE", "etcdv3")
        .args(["get", "nodes"]);
    assert!(stdout_of(&netctl).contains("node-a"));

    let json = format!(
        r#"{{"apiVersion":"projectcalico.org/v3","kind":"NetAPIConfig","metadata":{{}},"spec":{{"datastoreType":"etcdv3","etcdEndpoints":"{}"}}}}"#,
        etcd.endpoint()
    );
    let mut netctl = Netctl::new();
    netctl.config_file(&json).args(["get", "nodes"]);
    assert!(
        stdout_of(&netctl).contains("node-a"),
        "JSON config files work too"
    );
}

#[test]
fn ipv6_and_mixed_endpoint_lists_connect() {
    let etcd = EtcdServer::builder().dual_stack().start();
    seed_nodes(&etcd, &["node-a"]);
    let ipv6 = etcd
        .ipv6_endpoint()
        .expect("dual-stack server has an IPv6 endpoint");
    assert!(ipv6.contains("[::1]"), "{ipv6}");
    for endpoints in [ipv6.clone(), format!("{},{}", etcd.endpoint(), ipv6)] {
        let mut netctl = Netctl::new();
        etcd_env(&mut netctl, &endpoints).args(["get", "nodes"]);
        assert!(stdout_of(&netctl).contains("node-a"), "{endpoints}");
    }
}

#[test]
fn rbac_user_and_password() {
    let etcd = EtcdServer::builder().auth(AuthSetup::default()).start();
    seed_nodes(&etcd, &["node-a"]);

    let mut netctl = Netctl::new();
    etcd_env(&mut netctl, &etcd.endpoint())
        .env("ETCD_USERNAME", "netctl")
        .env("NET_ETCD_PASSWORD", "netctl-pw")
        .args(["get", "nodes"]);
    assert!(stdout_of(&netctl).contains("node-a"));

    let mut wrong = Netctl::new();
    etcd_env(&mut wrong, &etcd.endpoint())
        .env("ETCD_USERNAME", "netctl")
        .env("ETCD_PASSWORD", "not-the-password")
        .args(["get", "nodes"]);
    netctl_snapshot!(&wrong);

    let mut anonymous = Netctl::new();
    etcd_env(&mut anonymous, &etcd.endpoint()).args(["get", "nodes"]);
    netctl_snapshot!(&anonymous);
}

#[test]
fn rbac_permission_denied_is_reported() {
    // A user whose role covers another prefix can authenticate but not read `/calico/`.
    let etcd = EtcdServer::builder()
        .auth(AuthSetup::default().prefix("/elsewhere/"))
        .start();
    let mut netctl = Netctl::new();
    etcd_env(&mut netctl, &etcd.endpoint())
        .env("ETCD_USERNAME", "netctl")
        .env("ETCD_PASSWORD", "netctl-pw")
        .args(["get", "nodes"]);
    netctl_snapshot!(&netctl);
}

fn tls_env<'a>(netctl: &'a mut Netctl, etcd: &EtcdServer, pki: &Pki, client: Ca) -> &'a mut Netctl {
    etcd_env(netctl, &etcd.endpoint())
        .env("ETCD_CA_CERT_FILE", pki.ca_bundle())
        .env("ETCD_CERT_FILE", &pki.client(client).cert)
        .env("ETCD_KEY_FILE", &pki.client(client).key)
}

#[test]
fn mutual_tls_with_files_and_a_two_ca_bundle() {
    let pki = Pki::generate();
    let etcd = EtcdServer::builder().tls(&pki).start();
    seed_nodes(&etcd, &["node-a"]);
    assert!(etcd.endpoint().starts_with("https://"));
    // The server's bundle trusts clients of CA A and CA B; our bundle (A+B) verifies the server (A).
    for client in [Ca::A, Ca::B] {
        let mut netctl = Netctl::new();
        tls_env(&mut netctl, &etcd, &pki, client).args(["get", "nodes"]);
        assert!(
            stdout_of(&netctl).contains("node-a"),
            "client of {client:?}"
        );
    }
}

#[test]
fn mutual_tls_with_inline_pem_in_the_config_file() {
    let pki = Pki::generate();
    let etcd = EtcdServer::builder().tls(&pki).start();
    seed_nodes(&etcd, &["node-a"]);
    let indent = |pem: &str| pem.trim_end().replace('\n', "\n    ");
    let client = pki.client(Ca::B);
    let config = format!(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {{}}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: {}\n  etcdCACert: |\n    {}\n  etcdCert: |\n    {}\n  etcdKey: |\n    {}\n",
        etcd.endpoint(),
        indent(pki.ca_bundle_pem()),
        indent(&client.cert_pem),
        indent(&client.key_pem),
    );
    let mut netctl = Netctl::new();
    netctl.config_file(&config).args(["get", "nodes"]);
    assert!(stdout_of(&netctl).contains("node-a"));

    // `config view` shows where values came from but never the private key.
    let mut view = Netctl::new();
    view.config_file(&config).args(["config", "view"]);
    netctl_snapshot!(&view);
    let mut yaml = Netctl::new();
    yaml.config_file(&config)
        .args(["config", "view", "-o", "yaml"]);
    netctl_snapshot!(&yaml);
}

#[test]
fn untrusted_server_certificate_is_a_distinct_error() {
    let pki = Pki::generate();
    let etcd = EtcdServer::builder().tls(&pki).start();
    let mut netctl = Netctl::new();
    netctl.args(["--request-timeout", "3s", "get", "nodes"]);
    etcd_env(&mut netctl, &etcd.endpoint())
        // Trusting only CA C, which did not issue the server certificate.
        .env("ETCD_CA_CERT_FILE", &pki.ca(Ca::C).cert)
        .env("ETCD_CERT_FILE", &pki.client(Ca::A).cert)
        .env("ETCD_KEY_FILE", &pki.client(Ca::A).key);
    netctl_snapshot!(&netctl);
}

#[test]
fn rejected_client_certificate_is_a_distinct_error() {
    let pki = Pki::generate();
    let etcd = EtcdServer::builder().tls(&pki).start();
    let mut netctl = Netctl::new();
    netctl.args(["--request-timeout", "3s", "get", "nodes"]);
    tls_env(&mut netctl, &etcd, &pki, Ca::C);
    netctl_snapshot!(&netctl);
}

#[test]
fn refused_connection_is_a_distinct_error() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut netctl = Netctl::new();
    etcd_env(&mut netctl, &format!("http://127.0.0.1:{port}")).args(["get", "nodes"]);
    let stderr = stderr_of_failure(&netctl);
    assert!(
        stderr.contains(&format!("`http://127.0.0.1:{port}` refused the connection")),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: check that etcd is running"),
        "{stderr}"
    );
}

#[test]
fn silent_endpoint_times_out_with_a_distinct_error() {
    // Accepts TCP connections but never speaks: a hung or firewalled etcd.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let mut netctl = Netctl::new();
    netctl.args(["--request-timeout", "1s", "get", "nodes"]);
    etcd_env(&mut netctl, &endpoint);
    let started = std::time::Instant::now();
    netctl_snapshot!(&netctl);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    drop(listener);
}

#[test]
fn srv_discovery_without_tls() {
    // The record names a host, as real ones do; netctl resolves it with the system resolver.
    support::require_localhost();
    let etcd = EtcdServer::start();
    seed_nodes(&etcd, &["node-a"]);
    let dns = DnsServer::builder()
        .etcd_client("cluster.test", "localhost", etcd.port(), 0, 10)
        .start();
    let mut netctl = Netctl::new();
    netctl
        .resolver(&dns)
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_DISCOVERY_SRV", "cluster.test")
        .args(["get", "nodes"]);
    assert!(stdout_of(&netctl).contains("node-a"));
}

#[test]
fn srv_discovery_with_tls_uses_the_ssl_service() {
    // The record names a host, as real ones do; netctl resolves it with the system resolver.
    support::require_localhost();
    let pki = Pki::generate();
    let etcd = EtcdServer::builder().tls(&pki).start();
    seed_nodes(&etcd, &["node-a"]);
    // Only the TLS service name is published: finding it proves the `_etcd-client-ssl` lookup.
    let dns = DnsServer::builder()
        .etcd_client_ssl("secure.test", "localhost", etcd.port(), 0, 10)
        .start();
    let mut netctl = Netctl::new();
    netctl
        .resolver(&dns)
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_DISCOVERY_SRV", "secure.test")
        .env("ETCD_CA_CERT_FILE", pki.ca_bundle())
        .env("ETCD_CERT_FILE", &pki.client(Ca::A).cert)
        .env("ETCD_KEY_FILE", &pki.client(Ca::A).key)
        .args(["get", "nodes"]);
    assert!(stdout_of(&netctl).contains("node-a"));
}

#[test]
fn srv_discovery_failure_names_the_record() {
    let dns = DnsServer::builder().start();
    let mut netctl = Netctl::new();
    netctl
        .resolver(&dns)
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_DISCOVERY_SRV", "nothing.test")
        .args(["--request-timeout", "3s", "get", "nodes"]);
    netctl_snapshot!(&netctl);
}

#[test]
fn cluster_keeps_serving_when_the_leader_dies() {
    let mut cluster = EtcdCluster::start();
    cluster.put(&format!("{NODES}node-a"), r#"{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"node-a"},"spec":{}}"#);
    let endpoints = cluster.endpoints().join(",");
    let leader = cluster.leader();
    cluster.kill_member(leader);
    cluster.leader();
    let mut netctl = Netctl::new();
    etcd_env(&mut netctl, &endpoints).args(["get", "nodes"]);
    assert!(stdout_of(&netctl).contains("node-a"));
}

#[test]
fn endpoints_without_datastore_type_warn() {
    let mut netctl = Netctl::new();
    netctl
        .env("ETCD_ENDPOINTS", "http://127.0.0.1:2379")
        .args(["config", "view"]);
    let output = netctl.output();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: etcd endpoints are set but the datastore type is not: `DATASTORE_TYPE=etcdv3` is required"), "{stderr}");
}
