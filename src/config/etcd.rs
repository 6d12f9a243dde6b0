//! Validation of the etcd options into [`EtcdSettings`]: endpoint URLs, SRV discovery, RBAC credentials
//! and TLS material (files read here, so a bad path fails before anything is contacted).
//!
//! The rules are the documented ones (`README.md`, "Configuration") and upstream's client
//! construction (`libcalico-go/lib/backend/etcdv3/etcdv3.go`), checked all at once with messages
//! that say which option to change.

use std::fmt;
use std::net::Ipv6Addr;
use std::path::PathBuf;

use super::{ClientConfig, ConfigError, ConfigOption, Sourced};

/// A value that must never be printed: `Debug` and `Display` show `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must hand it to a client library.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// One parsed etcd endpoint URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdEndpoint {
    pub scheme: Scheme,
    /// Host name or IP address; IPv6 without brackets.
    pub host: String,
    pub port: u16,
}

impl EtcdEndpoint {
    /// Parses `http(s)://host:port`, with IPv6 addresses in brackets.
    pub fn parse(text: &str) -> Result<EtcdEndpoint, String> {
        let (scheme, rest) = if let Some(rest) = text.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = text.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            return Err("the scheme must be `http://` or `https://`".into());
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains('/') || authority.contains('?') || authority.contains('#') {
            return Err("an endpoint is a scheme, host and port only, with no path".into());
        }
        if authority.contains('@') {
            return Err(
                "credentials do not belong in the URL: use etcdUsername/etcdPassword".into(),
            );
        }
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let (address, after) = bracketed
                .split_once(']')
                .ok_or("an IPv6 address opened with `[` must be closed with `]`")?;
            address
                .parse::<Ipv6Addr>()
                .map_err(|_| format!("`{address}` is not an IPv6 address"))?;
            let port = after
                .strip_prefix(':')
                .ok_or("a port is required, e.g. `https://[fd00::1]:2379`")?;
            (address, port)
        } else {
            match authority.matches(':').count() {
                0 => return Err("a port is required, e.g. `https://10.0.0.1:2379`".into()),
                1 => authority.split_once(':').unwrap_or_default(),
                _ => {
                    return Err(
                        "an IPv6 address must be in brackets, e.g. `https://[fd00::1]:2379`".into(),
                    );
                }
            }
        };
        if host.is_empty() {
            return Err("the host is empty".into());
        }
        if !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
        {
            return Err(format!("`{host}` is not a valid host name or address"));
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|port| *port != 0)
            .ok_or_else(|| format!("`{port}` is not a valid port"))?;
        Ok(EtcdEndpoint {
            scheme,
            host: host.to_string(),
            port,
        })
    }

    /// The URL to hand to the gRPC client.
    pub fn url(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for EtcdEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url())
    }
}

/// How the endpoints are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointSource {
    Static(Vec<EtcdEndpoint>),
    /// DNS SRV discovery under this domain (`_etcd-client-ssl._tcp` with TLS, `_etcd-client._tcp` without).
    Srv {
        domain: String,
    },
}

/// Where PEM material came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemOrigin {
    File(PathBuf),
    Inline,
}

/// PEM bytes, read and checked to contain at least one PEM block.
#[derive(Clone, PartialEq, Eq)]
pub struct Pem {
    pub origin: PemOrigin,
    pub bytes: Vec<u8>,
}

impl fmt::Debug for Pem {
    // Never print the bytes: this may be a private key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pem({:?}, {} bytes)", self.origin, self.bytes.len())
    }
}

/// A client certificate and its private key (mutual TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub certificate: Pem,
    pub key: Pem,
}

/// TLS settings: the CAs to trust (none = the system trust store) and an optional client identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsMaterial {
    pub ca: Option<Pem>,
    pub identity: Option<ClientIdentity>,
}

/// etcd RBAC credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdCredentials {
    pub username: String,
    pub password: Secret,
}

/// Validated etcd connection settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdSettings {
    pub endpoints: EndpointSource,
    pub credentials: Option<EtcdCredentials>,
    pub tls: Option<TlsMaterial>,
    /// DNS server for SRV discovery, when not the system's.
    pub resolver: Option<std::net::SocketAddr>,
}

pub(super) fn resolve(config: &ClientConfig) -> Result<EtcdSettings, ConfigError> {
    let get = |option| {
        config
            .option(option)
            .filter(|value| !value.value.is_empty())
    };

    // Structure first (which options are set, URL shapes), file contents last, so the first error a
    // user sees is about what they wrote rather than about a file they may not need at all.
    let tls_requested = [
        ConfigOption::EtcdCaCert,
        ConfigOption::EtcdCert,
        ConfigOption::EtcdKey,
        ConfigOption::EtcdCaCertFile,
        ConfigOption::EtcdCertFile,
        ConfigOption::EtcdKeyFile,
    ]
    .into_iter()
    .any(|option| get(option).is_some());
    let endpoints = match (
        get(ConfigOption::EtcdEndpoints),
        get(ConfigOption::EtcdDiscoverySrv),
    ) {
        (Some(endpoints), Some(srv)) => {
            return Err(ConfigError::EndpointsAndSrv {
                endpoints_origin: endpoints.origin.clone(),
                srv_origin: srv.origin.clone(),
            });
        }
        (Some(list), None) => EndpointSource::Static(parse_endpoints(list)?),
        (None, Some(srv)) => EndpointSource::Srv {
            domain: srv.value.trim().trim_end_matches('.').to_string(),
        },
        (None, None) => {
            return Err(match config.option(ConfigOption::EtcdEndpoints) {
                Some(empty) => ConfigError::EmptyEndpoints {
                    origin: empty.origin.clone(),
                },
                None => ConfigError::NoEndpoints,
            });
        }
    };
    if tls_requested
        && let EndpointSource::Static(list) = &endpoints
        && let Some(plain) = list.iter().find(|endpoint| endpoint.scheme == Scheme::Http)
    {
        return Err(ConfigError::TlsWithPlainEndpoint {
            endpoint: plain.url(),
        });
    }

    let credentials = match (
        get(ConfigOption::EtcdUsername),
        get(ConfigOption::EtcdPassword),
    ) {
        (Some(username), Some(password)) => Some(EtcdCredentials {
            username: username.value.clone(),
            password: Secret::new(password.value.clone()),
        }),
        (None, None) => None,
        (Some(_), None) => {
            return Err(ConfigError::IncompletePair {
                present: "etcdUsername",
                missing: "etcdPassword",
            });
        }
        (None, Some(_)) => {
            return Err(ConfigError::IncompletePair {
                present: "etcdPassword",
                missing: "etcdUsername",
            });
        }
    };

    let tls = tls_material(config)?;
    Ok(EtcdSettings {
        endpoints,
        credentials,
        tls,
        resolver: config.resolver.as_ref().map(|resolver| resolver.value),
    })
}

fn parse_endpoints(list: &Sourced<String>) -> Result<Vec<EtcdEndpoint>, ConfigError> {
    let endpoints = list
        .value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            EtcdEndpoint::parse(entry).map_err(|reason| ConfigError::InvalidEndpoint {
                endpoint: entry.to_string(),
                origin: list.origin.clone(),
                reason,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if endpoints.is_empty() {
        return Err(ConfigError::NoEndpoints);
    }
    Ok(endpoints)
}

fn tls_material(config: &ClientConfig) -> Result<Option<TlsMaterial>, ConfigError> {
    let get = |option| {
        config
            .option(option)
            .filter(|value| !value.value.is_empty())
    };
    let inline = (
        get(ConfigOption::EtcdCaCert),
        get(ConfigOption::EtcdCert),
        get(ConfigOption::EtcdKey),
    );
    let files = (
        get(ConfigOption::EtcdCaCertFile),
        get(ConfigOption::EtcdCertFile),
        get(ConfigOption::EtcdKeyFile),
    );
    let any_inline = inline.0.is_some() || inline.1.is_some() || inline.2.is_some();
    let any_file = files.0.is_some() || files.1.is_some() || files.2.is_some();
    match (any_inline, any_file) {
        (true, true) => Err(ConfigError::MixedInlineAndFiles),
        (false, false) => Ok(None),
        (true, false) => {
            let (ca, certificate, key) = inline;
            let ca = ca
                .map(|ca| inline_pem("etcdCACert", &ca.value))
                .transpose()?;
            let identity = pair(
                ("etcdCert", certificate),
                ("etcdKey", key),
                |name, value| inline_pem(name, &value.value),
            )?;
            Ok(Some(TlsMaterial { ca, identity }))
        }
        (false, true) => {
            let (ca, certificate, key) = files;
            let ca = ca.map(|ca| file_pem("CA certificate", ca)).transpose()?;
            let identity = pair(
                ("etcdCertFile", certificate),
                ("etcdKeyFile", key),
                |name, value| {
                    file_pem(
                        if name == "etcdKeyFile" {
                            "client key"
                        } else {
                            "client certificate"
                        },
                        value,
                    )
                },
            )?;
            Ok(Some(TlsMaterial { ca, identity }))
        }
    }
}

/// A client certificate and key must come together.
fn pair(
    certificate: (&'static str, Option<&Sourced<String>>),
    key: (&'static str, Option<&Sourced<String>>),
    read: impl Fn(&'static str, &Sourced<String>) -> Result<Pem, ConfigError>,
) -> Result<Option<ClientIdentity>, ConfigError> {
    match (certificate.1, key.1) {
        (Some(certificate_value), Some(key_value)) => Ok(Some(ClientIdentity {
            certificate: read(certificate.0, certificate_value)?,
            key: read(key.0, key_value)?,
        })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(ConfigError::IncompletePair {
            present: certificate.0,
            missing: key.0,
        }),
        (None, Some(_)) => Err(ConfigError::IncompletePair {
            present: key.0,
            missing: certificate.0,
        }),
    }
}

fn inline_pem(name: &'static str, value: &str) -> Result<Pem, ConfigError> {
    let bytes = value.as_bytes().to_vec();
    check_pem(&bytes, name, "(inline)".to_string())?;
    Ok(Pem {
        origin: PemOrigin::Inline,
        bytes,
    })
}

fn file_pem(what: &'static str, value: &Sourced<String>) -> Result<Pem, ConfigError> {
    let path = PathBuf::from(&value.value);
    let bytes = std::fs::read(&path).map_err(|source| ConfigError::ReadPem {
        what,
        path: path.clone(),
        origin: value.origin.clone(),
        source,
    })?;
    check_pem(&bytes, what, format!("file `{}`", path.display()))?;
    Ok(Pem {
        origin: PemOrigin::File(path),
        bytes,
    })
}

fn check_pem(bytes: &[u8], what: &'static str, location: String) -> Result<(), ConfigError> {
    let text = String::from_utf8_lossy(bytes);
    if text.contains("-----BEGIN ") && text.contains("-----END ") {
        Ok(())
    } else {
        Err(ConfigError::NotPem { what, location })
    }
}
