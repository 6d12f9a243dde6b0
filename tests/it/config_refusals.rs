//! Every configuration refusal through the binary: exit 1, a message that says what to change, and no
//! connection attempted (the endpoints point at a closed port, so a connection attempt would surface as
//! "connection refused" instead of the message asserted here). One snapshot holds the whole transcript.

use std::fmt::Write as _;

use crate::support::Netctl;

const CLOSED: &str = "http://127.0.0.1:1";

fn transcript(title: &str, netctl: &mut Netctl) -> String {
    netctl.args(["get", "nodes"]);
    let output = netctl.output();
    let mut text = String::new();
    let _ = writeln!(text, "## {title}");
    let _ = writeln!(text, "exit: {:?}", output.status.code());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let _ = writeln!(text, "{}", stderr.trim_end());
    assert!(output.stdout.is_empty(), "{title}: nothing on stdout");
    assert!(
        !stderr.contains("connection refused"),
        "{title}: nothing may be contacted"
    );
    text
}

fn env(pairs: &[(&str, &str)]) -> Netctl {
    let mut netctl = Netctl::new();
    for (key, value) in pairs {
        netctl.env(key, value);
    }
    netctl
}

#[test]
fn refusals_say_what_to_change() {
    let file_config = |spec: &str| {
        let mut netctl = Netctl::new();
        netctl.config_file(&format!(
            "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {{}}\nspec:\n  datastoreType: etcdv3\n{spec}"
        ));
        netctl
    };
    let pem = "    -----BEGIN CERTIFICATE-----\n    AA==\n    -----END CERTIFICATE-----\n";
    let cases: Vec<(&str, Netctl)> = vec![
        (
            "retired ETCD_SCHEME",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", CLOSED),
                ("ETCD_SCHEME", "http"),
            ]),
        ),
        (
            "retired ETCD_AUTHORITY",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_AUTHORITY", "127.0.0.1:2379"),
            ]),
        ),
        (
            "retired ETC_AUTHORITY (prefixed)",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("NET_ETC_AUTHORITY", "127.0.0.1:2379"),
            ]),
        ),
        (
            "endpoints and SRV",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", CLOSED),
                ("ETCD_DISCOVERY_SRV", "example.test"),
            ]),
        ),
        ("no endpoints", env(&[("DATASTORE_TYPE", "etcdv3")])),
        (
            "TLS with an http endpoint",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", CLOSED),
                ("ETCD_CA_CERT_FILE", "/nonexistent/ca.pem"),
            ]),
        ),
        (
            "inline and file certificates mixed",
            file_config(&format!(
                "  etcdEndpoints: https://127.0.0.1:1\n  etcdCertFile: /nonexistent/cert.pem\n  etcdKeyFile: /nonexistent/key.pem\n  etcdCACert: |\n{pem}"
            )),
        ),
        (
            "inline certificate without its key",
            file_config(&format!(
                "  etcdEndpoints: https://127.0.0.1:1\n  etcdCert: |\n{pem}"
            )),
        ),
        (
            "unbracketed IPv6 endpoint",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", "https://fd00::1:2379"),
            ]),
        ),
        (
            "endpoint without scheme",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", "127.0.0.1:2379"),
            ]),
        ),
        ("unknown datastore type", env(&[("DATASTORE_TYPE", "etcd")])),
        (
            "unreadable CA file",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", "https://127.0.0.1:1"),
                ("ETCD_CA_CERT_FILE", "/nonexistent/ca.pem"),
            ]),
        ),
        ("unreadable key file", {
            let mut netctl = env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", "https://127.0.0.1:1"),
                ("ETCD_KEY_FILE", "/nonexistent/key.pem"),
            ]);
            let certificate = netctl.write_file(
                "cert.pem",
                "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n",
            );
            netctl.env("ETCD_CERT_FILE", certificate);
            netctl
        }),
        ("a certificate file that is not PEM", {
            let mut netctl = env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", "https://127.0.0.1:1"),
            ]);
            let not_pem = netctl.write_file("ca.pem", "just some text\n");
            netctl.env("ETCD_CA_CERT_FILE", not_pem);
            netctl
        }),
        (
            "user name without password",
            env(&[
                ("DATASTORE_TYPE", "etcdv3"),
                ("ETCD_ENDPOINTS", CLOSED),
                ("ETCD_USERNAME", "netctl"),
            ]),
        ),
        (
            "unknown field in the file",
            file_config("  etcdEndpoint: http://127.0.0.1:1\n"),
        ),
        ("wrong kind in the file", {
            let mut netctl = Netctl::new();
            netctl.config_file(
                "apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec: {}\n",
            );
            netctl
        }),
        ("explicit config file missing", {
            let mut netctl = Netctl::new();
            netctl.args(["-c", "/nonexistent/netctl.cfg"]);
            netctl
        }),
    ];
    let mut all = String::new();
    for (title, mut netctl) in cases {
        let text = transcript(title, &mut netctl);
        assert!(text.contains("exit: Some(1)"), "{text}");
        all.push_str(&text);
        all.push('\n');
    }
    // The config file's temporary path differs per run.
    insta::with_settings!({filters => vec![(r"/tmp/[^ `:]+", "[TEMP]")]}, {
        insta::assert_snapshot!(all);
    });
}
