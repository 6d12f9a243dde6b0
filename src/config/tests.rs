//! Unit tests of configuration loading and validation. The end-to-end tests through the binary are in
//! `tests/it/config_refusals.rs`; these pin the rules and messages cheaply.

use std::io::Write;
use std::path::Path;

use super::*;

fn env(pairs: &[(&str, &str)]) -> Environment {
    Environment::from_pairs(pairs.iter().copied())
}

fn from_env(pairs: &[(&str, &str)]) -> Result<ClientConfig, ConfigError> {
    load_with_default(None, Path::new("/nonexistent/netctl.cfg"), &env(pairs))
}

fn etcd_from_env(pairs: &[(&str, &str)]) -> Result<EtcdSettings, ConfigError> {
    from_env(pairs)?.etcd()
}

fn config_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

#[test]
fn datastore_type_defaults_to_kubernetes() {
    let config = from_env(&[]).unwrap();
    assert_eq!(config.datastore_type.value, DatastoreType::Kubernetes);
    assert_eq!(config.datastore_type.origin, Origin::Default);
    assert!(config.warnings.is_empty());
}

#[test]
fn endpoints_without_datastore_type_warn() {
    let config = from_env(&[("ETCD_ENDPOINTS", "http://127.0.0.1:2379")]).unwrap();
    assert_eq!(config.datastore_type.value, DatastoreType::Kubernetes);
    assert!(config.warnings[0].contains("`DATASTORE_TYPE=etcdv3` is required"));
}

#[test]
fn prefixed_variables_win_and_are_recorded() {
    let config = from_env(&[
        ("DATASTORE_TYPE", "kubernetes"),
        ("NET_DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "http://a:1"),
        ("NET_ETCD_ENDPOINTS", "http://b:2"),
    ])
    .unwrap();
    assert_eq!(config.datastore_type.value, DatastoreType::EtcdV3);
    assert_eq!(
        config.datastore_type.origin,
        Origin::Environment("NET_DATASTORE_TYPE".into())
    );
    let endpoints = config.option(ConfigOption::EtcdEndpoints).unwrap();
    assert_eq!(endpoints.value, "http://b:2");
}

#[test]
fn inline_pem_options_have_no_environment_variable() {
    for option in [
        ConfigOption::EtcdKey,
        ConfigOption::EtcdCert,
        ConfigOption::EtcdCaCert,
    ] {
        assert_eq!(option.variable(), None);
    }
    let config = from_env(&[("ETCD_KEY", "x"), ("NET_ETCD_CERT", "y")]).unwrap();
    assert!(config.options.is_empty());
}

#[test]
fn retired_variables_are_refused() {
    for variable in [
        "ETCD_SCHEME",
        "ETCD_AUTHORITY",
        "ETC_AUTHORITY",
        "NET_ETCD_SCHEME",
    ] {
        let error = from_env(&[(variable, "x")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("`{variable}` is no longer supported")
        );
        assert!(error.hint().unwrap().contains("ETCD_ENDPOINTS"));
    }
}

#[test]
fn unknown_datastore_type_is_refused() {
    let error = from_env(&[("DATASTORE_TYPE", "etcd")]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown datastore type `etcd` (from `DATASTORE_TYPE`): expected `etcdv3` or `kubernetes`"
    );
}

#[test]
fn endpoints_and_srv_are_exclusive() {
    let error = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "http://a:1"),
        ("ETCD_DISCOVERY_SRV", "example.org"),
    ])
    .unwrap_err();
    assert!(
        matches!(error, ConfigError::EndpointsAndSrv { .. }),
        "{error}"
    );
}

#[test]
fn endpoint_urls_are_checked() {
    let cases = [
        (
            "127.0.0.1:2379",
            "the scheme must be `http://` or `https://`",
        ),
        (
            "https://fd00::1:2379",
            "an IPv6 address must be in brackets",
        ),
        ("https://[fd00::1:2379", "must be closed with `]`"),
        ("https://[fd00::zz]:2379", "is not an IPv6 address"),
        ("http://etcd1", "a port is required"),
        ("http://etcd1:99999", "`99999` is not a valid port"),
        ("http://etcd1:2379/v3", "no path"),
    ];
    for (endpoint, reason) in cases {
        let error = etcd_from_env(&[("DATASTORE_TYPE", "etcdv3"), ("ETCD_ENDPOINTS", endpoint)])
            .unwrap_err();
        assert!(error.to_string().contains(reason), "{endpoint}: {error}");
        assert!(error.to_string().contains(endpoint), "{endpoint}: {error}");
    }
}

#[test]
fn ipv4_ipv6_and_mixed_lists_parse() {
    let settings = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        (
            "ETCD_ENDPOINTS",
            "http://10.0.0.1:2379, http://[fd00::1]:2379,http://etcd.example:2379",
        ),
    ])
    .unwrap();
    let EndpointSource::Static(list) = settings.endpoints else {
        panic!("static endpoints expected");
    };
    let urls: Vec<_> = list.iter().map(EtcdEndpoint::url).collect();
    assert_eq!(
        urls,
        [
            "http://10.0.0.1:2379",
            "http://[fd00::1]:2379",
            "http://etcd.example:2379"
        ]
    );
}

#[test]
fn tls_with_http_endpoint_is_refused() {
    let ca = config_file("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n");
    let error = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "https://a:1,http://b:2"),
        ("ETCD_CA_CERT_FILE", ca.path().to_str().unwrap()),
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "TLS options are set but etcd endpoint `http://b:2` uses `http://`"
    );
}

#[test]
fn unreadable_files_are_named() {
    let error = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "https://a:1"),
        ("ETCD_CA_CERT_FILE", "/nonexistent/ca.pem"),
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot read CA certificate file `/nonexistent/ca.pem` (from `ETCD_CA_CERT_FILE`)"
    );
}

#[test]
fn client_certificate_needs_its_key() {
    let cert = config_file("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n");
    let error = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "https://a:1"),
        ("ETCD_CERT_FILE", cert.path().to_str().unwrap()),
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`etcdCertFile` is set but `etcdKeyFile` is not"
    );
}

#[test]
fn credentials_come_in_pairs_and_stay_secret() {
    let error = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "http://a:1"),
        ("ETCD_USERNAME", "netctl"),
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`etcdUsername` is set but `etcdPassword` is not"
    );

    let settings = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "http://a:1"),
        ("ETCD_USERNAME", "netctl"),
        ("ETCD_PASSWORD", "hunter2"),
    ])
    .unwrap();
    assert!(!format!("{settings:?}").contains("hunter2"));
}

const PEM_CERT: &str = "-----BEGIN CERTIFICATE-----\n    AA==\n    -----END CERTIFICATE-----";

#[test]
fn inline_and_file_certificates_do_not_mix() {
    let file = config_file(&format!(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {{}}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://a:1\n  etcdCACertFile: /x/ca.pem\n  etcdCert: |\n    {PEM_CERT}\n"
    ));
    let config = load_with_default(Some(file.path()), Path::new("/x"), &env(&[])).unwrap();
    let error = config.etcd().unwrap_err();
    assert!(matches!(error, ConfigError::MixedInlineAndFiles), "{error}");
}

#[test]
fn inline_certificate_needs_inline_key() {
    let file = config_file(&format!(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {{}}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://a:1\n  etcdCert: |\n    {PEM_CERT}\n"
    ));
    let config = load_with_default(Some(file.path()), Path::new("/x"), &env(&[])).unwrap();
    assert_eq!(
        config.etcd().unwrap_err().to_string(),
        "`etcdCert` is set but `etcdKey` is not"
    );
}

#[test]
fn file_wins_over_environment_without_merging() {
    let file = config_file(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: http://file:1\n",
    );
    let config = load_with_default(
        Some(file.path()),
        Path::new("/x"),
        &env(&[("ETCD_USERNAME", "from-env"), ("ETCD_SCHEME", "http")]),
    )
    .unwrap();
    assert_eq!(config.source, ConfigSource::File(file.path().to_path_buf()));
    assert_eq!(config.option(ConfigOption::EtcdUsername), None);
    assert_eq!(
        config.option(ConfigOption::EtcdEndpoints).unwrap().origin,
        Origin::File(file.path().to_path_buf())
    );
}

#[test]
fn default_file_is_used_when_present() {
    let file = config_file(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: http://file:1\n",
    );
    let config = load_with_default(None, file.path(), &env(&[])).unwrap();
    assert_eq!(config.datastore_type.value, DatastoreType::EtcdV3);
}

#[test]
fn explicit_missing_file_is_an_error() {
    let error = load_with_default(
        Some(Path::new("/nonexistent/x.cfg")),
        Path::new("/x"),
        &env(&[]),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "config file `/nonexistent/x.cfg` does not exist"
    );
}

#[test]
fn file_errors_name_file_and_line() {
    let file = config_file(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  datastoreType: etcdv3\n  etcdEndpoint: http://a:1\n",
    );
    let error = load_with_default(Some(file.path()), Path::new("/x"), &env(&[])).unwrap_err();
    let text = format!("{:#}", anyhow::Error::new(error));
    assert!(
        text.contains(&format!("{}:5:", file.path().display())),
        "{text}"
    );
    assert!(text.contains("unknown field `etcdEndpoint`"), "{text}");

    let wrong_kind =
        config_file("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec: {}\n");
    let error = load_with_default(Some(wrong_kind.path()), Path::new("/x"), &env(&[])).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("kind is `CalicoAPIConfig`, expected `NetAPIConfig`")
    );
    assert!(error.hint().unwrap().contains("kind: NetAPIConfig"));

    let wrong_version = config_file("apiVersion: v1\nkind: NetAPIConfig\nspec: {}\n");
    let error =
        load_with_default(Some(wrong_version.path()), Path::new("/x"), &env(&[])).unwrap_err();
    assert!(error.to_string().contains("apiVersion is `v1`"));

    let broken = config_file("apiVersion: [\n");
    let error = load_with_default(Some(broken.path()), Path::new("/x"), &env(&[])).unwrap_err();
    assert!(matches!(error, ConfigError::Syntax { .. }));
}

#[test]
fn json_config_files_are_accepted() {
    let file = config_file(
        r#"{"apiVersion":"projectcalico.org/v3","kind":"NetAPIConfig","metadata":{},"spec":{"datastoreType":"etcdv3","etcdDiscoverySrv":"example.org"}}"#,
    );
    let config = load_with_default(Some(file.path()), Path::new("/x"), &env(&[])).unwrap();
    assert_eq!(
        config.etcd().unwrap().endpoints,
        EndpointSource::Srv {
            domain: "example.org".into()
        }
    );
}

#[test]
fn resolver_variable_accepts_address_with_or_without_port() {
    let config = from_env(&[(RESOLVER_VARIABLE, "127.0.0.1:5353")]).unwrap();
    assert_eq!(config.resolver.unwrap().value.port(), 5353);
    let config = from_env(&[(RESOLVER_VARIABLE, "::1")]).unwrap();
    assert_eq!(config.resolver.unwrap().value.port(), 53);
    assert!(from_env(&[(RESOLVER_VARIABLE, "dns.example")]).is_err());
}

#[test]
fn file_read_as_upstream_reads_it_byte_order_mark_yaml_1_1_and_field_case() {
    let file = config_file(
        "\u{feff}apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  DatastoreType: etcdv3\n  etcdEndpoints: http://a:1\n  k8sInsecureSkipTLSVerify: yes\n",
    );
    let config = load_with_default(Some(file.path()), Path::new("/x"), &env(&[]));
    assert!(config.is_ok(), "{:?}", config.err());
}

#[test]
fn an_empty_prefixed_endpoints_variable_is_named_in_the_error() {
    let error = etcd_from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("NET_ETCD_ENDPOINTS", ""),
        ("ETCD_ENDPOINTS", "http://127.0.0.1:2379"),
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "etcd endpoints are empty (from `NET_ETCD_ENDPOINTS`)"
    );
    let hint = error.hint().unwrap();
    assert!(
        hint.starts_with("`NET_ETCD_ENDPOINTS` is set, so `ETCD_ENDPOINTS` is not read"),
        "{hint}"
    );
    let config = from_env(&[("NET_ETCD_ENDPOINTS", ""), ("ETCD_ENDPOINTS", "x")]).unwrap();
    assert_eq!(
        config.ignored,
        ["`ETCD_ENDPOINTS` is ignored: `NET_ETCD_ENDPOINTS` is set (empty) and wins"]
    );
}

#[test]
fn environment_variables_a_config_file_shadows_are_listed() {
    let file = config_file(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: http://10.0.0.1:2379\n",
    );
    let environment = env(&[
        ("ETCD_ENDPOINTS", "http://127.0.0.1:2379"),
        ("HOME", "/root"),
    ]);
    let config = load_with_default(None, file.path(), &environment).unwrap();
    assert_eq!(
        config.ignored,
        [format!(
            "`ETCD_ENDPOINTS` is ignored: the configuration comes from file `{}` only",
            file.path().display()
        )]
    );
}

#[test]
fn the_api_group_is_ignored_with_etcd_and_said_so() {
    let config = from_env(&[
        ("DATASTORE_TYPE", "etcdv3"),
        ("ETCD_ENDPOINTS", "http://127.0.0.1:2379"),
        ("NET_CALICO_API_GROUP", "projectcalico.org/v3"),
    ])
    .unwrap();
    assert_eq!(
        config.ignored,
        [
            "`calicoAPIGroup` (from `NET_CALICO_API_GROUP`) is ignored: it chooses the API group of the `kubernetes` datastore, and this one is `etcdv3`"
        ]
    );
    let file = config_file(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  calicoAPIGroup: projectcalico.org/v3\n",
    );
    let config =
        load_with_default(Some(file.path()), Path::new("/nonexistent"), &env(&[])).unwrap();
    let group = config.option(ConfigOption::CalicoApiGroup).unwrap();
    assert_eq!(group.value, "projectcalico.org/v3");
    assert_eq!(group.origin, Origin::File(file.path().to_path_buf()));
    assert!(config.ignored.is_empty());
}
