//! `netctl config check` for the etcd datastore: proves each piece of the configuration on its own,
//! so a failure names its cause instead of "transport error".
//!
//! It checks the TLS files (a key that belongs to the certificate, a certificate and key file given
//! the wrong way round, a CA file that holds no certificate), then probes every endpoint (the
//! configured ones, or those SRV discovery finds) twice: a raw HTTP/1 `GET /version` — over plain TCP
//! first, which tells a TLS port from a plaintext one and etcd from another server — and a gRPC
//! session with the configured identity and credentials for the member's version, leader and
//! authentication. It does not decide what is printed or the exit code (`cli/config.rs` does) and
//! never changes anything on the server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, GetOptions};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use super::endpoints::tls_options;
use super::srv;
use crate::config::{EndpointSource, EtcdEndpoint, EtcdSettings, Pem, PemOrigin, Scheme};

/// What the check found, file by file and endpoint by endpoint.
#[derive(Debug)]
pub struct CheckReport {
    /// Problems with the TLS files (empty when they are consistent or there are none).
    pub files: Vec<FileProblem>,
    /// How the endpoints were found: `None` for a static list, the SRV name otherwise.
    pub discovery: Option<String>,
    /// SRV discovery failed (then there are no endpoints to probe).
    pub discovery_error: Option<String>,
    pub endpoints: Vec<EndpointReport>,
}

impl CheckReport {
    /// Whether everything checked is fine.
    pub fn passed(&self) -> bool {
        self.files.is_empty()
            && self.discovery_error.is_none()
            && !self.endpoints.is_empty()
            && self.endpoints.iter().all(|report| report.outcome.is_ok())
    }
}

/// One endpoint's result.
#[derive(Debug)]
pub struct EndpointReport {
    pub endpoint: String,
    pub outcome: Result<EndpointFacts, EndpointProblem>,
}

/// What a healthy endpoint told about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointFacts {
    /// The etcd server version (`/version`).
    pub version: String,
    pub tls: Transport,
    /// Whether this member is the leader, or the leader's member id when it is not.
    pub leader: Leadership,
    pub auth: Authentication,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Plain,
    Tls,
    /// TLS with the configured client certificate.
    MutualTls,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leadership {
    Leader,
    Follower { leader: u64 },
    NoLeader,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authentication {
    /// No credentials configured and none needed to read `/calico/`.
    NotUsed,
    /// The configured user logged in and may read `/calico/`.
    User(String),
}

/// A TLS file that cannot be what the configuration says it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileProblem {
    #[error(
        "the certificate ({certificate}) and the key ({key}) look swapped: the certificate holds a private key and the key a certificate"
    )]
    Swapped { certificate: String, key: String },
    #[error("the certificate ({0}) holds no certificate")]
    NotACertificate(String),
    #[error("the key ({0}) holds no private key")]
    NotAKey(String),
    #[error("the CA ({0}) holds no certificate")]
    CaNotACertificate(String),
    #[error("the key ({key}) does not belong to the certificate ({certificate})")]
    KeyMismatch { certificate: String, key: String },
    #[error("the key ({key}) cannot be used: {reason}")]
    UnusableKey { key: String, reason: String },
}

/// Why an endpoint does not work, each cause with its own words.
#[derive(Debug, thiserror::Error)]
pub enum EndpointProblem {
    #[error("nothing accepts connections there")]
    Unreachable(#[source] std::io::Error),
    #[error("no answer within {0:?}: something listens but says nothing")]
    Silent(Duration),
    #[error("the endpoint says `http://` but the server speaks TLS on this port: use `https://`")]
    PlainToTls,
    #[error(
        "the endpoint says `https://` but the server answers in plain text on this port: use `http://`, or the server's TLS port"
    )]
    TlsToPlain,
    #[error("this is not an etcd server: it answered `{0}`")]
    NotEtcd(String),
    #[error("the TLS handshake failed: {reason}")]
    Tls {
        reason: String,
        #[source]
        source: rustls::Error,
    },
    #[error("etcd refused the session: {0}")]
    Refused(String),
    #[error("not probed: the TLS files are wrong (see above)")]
    NotProbed,
}

/// Checks the settings' files, finds the endpoints and probes each one.
pub async fn check(settings: &EtcdSettings, timeout: Duration) -> CheckReport {
    let files = settings
        .tls
        .as_ref()
        .map(|tls| {
            let mut problems = Vec::new();
            if let Some(ca) = &tls.ca
                && CertificateDer::pem_slice_iter(&ca.bytes).next().is_none()
            {
                problems.push(FileProblem::CaNotACertificate(describe(ca)));
            }
            if let Some(identity) = &tls.identity {
                problems.extend(identity_problem(&identity.certificate, &identity.key));
            }
            problems
        })
        .unwrap_or_default();
    let (endpoints, discovery, discovery_error) = match &settings.endpoints {
        EndpointSource::Static(list) => (list.clone(), None, None),
        EndpointSource::Srv { domain } => {
            let name = srv::service_name(domain, settings.tls.is_some());
            match srv::discover(domain, settings.tls.is_some(), settings.resolver).await {
                Ok(list) => (list, Some(name), None),
                Err(error) => (
                    Vec::new(),
                    Some(name),
                    Some(crate::errors::error_chain(&error)),
                ),
            }
        }
    };
    let mut reports = Vec::new();
    for endpoint in endpoints {
        let outcome = match files.is_empty() {
            true => probe(&endpoint, settings, timeout).await,
            false => Err(EndpointProblem::NotProbed),
        };
        reports.push(EndpointReport {
            endpoint: endpoint.url(),
            outcome,
        });
    }
    CheckReport {
        files,
        discovery,
        discovery_error,
        endpoints: reports,
    }
}

fn describe(pem: &Pem) -> String {
    match &pem.origin {
        PemOrigin::File(path) => format!("`{}`", path.display()),
        PemOrigin::Inline => "inline PEM".to_string(),
    }
}

fn identity_problem(certificate: &Pem, key: &Pem) -> Option<FileProblem> {
    let certificates: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&certificate.bytes)
            .filter_map(Result::ok)
            .collect();
    let private_key = PrivateKeyDer::from_pem_slice(&key.bytes).ok();
    let (certificate_name, key_name) = (describe(certificate), describe(key));
    match (certificates.is_empty(), private_key) {
        (true, None) => {
            let swapped = PrivateKeyDer::from_pem_slice(&certificate.bytes).is_ok()
                && CertificateDer::pem_slice_iter(&key.bytes).next().is_some();
            Some(if swapped {
                FileProblem::Swapped {
                    certificate: certificate_name,
                    key: key_name,
                }
            } else {
                FileProblem::NotACertificate(certificate_name)
            })
        }
        (true, Some(_)) => Some(FileProblem::NotACertificate(certificate_name)),
        (false, None) => Some(FileProblem::NotAKey(key_name)),
        (false, Some(private_key)) => {
            let signing = match rustls::crypto::ring::sign::any_supported_type(&private_key) {
                Ok(signing) => signing,
                Err(error) => {
                    return Some(FileProblem::UnusableKey {
                        key: key_name,
                        reason: error.to_string(),
                    });
                }
            };
            let certified = rustls::sign::CertifiedKey::new(certificates, signing);
            certified
                .keys_match()
                .err()
                .map(|_| FileProblem::KeyMismatch {
                    certificate: certificate_name,
                    key: key_name,
                })
        }
    }
}

/// What a raw `GET /version` found.
enum RawAnswer {
    /// An etcd server answered over this transport, with its version.
    Etcd(String),
    /// A TLS server (a plain HTTP request got a TLS alert, Go's "HTTP request to an HTTPS server", or a
    /// closed connection).
    TlsServer,
    /// Some other HTTP server or protocol: its first line.
    Other(String),
}

async fn probe(
    endpoint: &EtcdEndpoint,
    settings: &EtcdSettings,
    timeout: Duration,
) -> Result<EndpointFacts, EndpointProblem> {
    let raw = {
        let endpoint = endpoint.clone();
        tokio::task::spawn_blocking(move || plain_version(&endpoint, timeout))
            .await
            .unwrap_or_else(|error| Err(EndpointProblem::Refused(error.to_string())))?
    };
    let version = match (endpoint.scheme, raw) {
        (Scheme::Http, RawAnswer::Etcd(version)) => version,
        (Scheme::Http, RawAnswer::TlsServer) => return Err(EndpointProblem::PlainToTls),
        (Scheme::Https, RawAnswer::Etcd(_)) => return Err(EndpointProblem::TlsToPlain),
        (_, RawAnswer::Other(first_line)) => return Err(EndpointProblem::NotEtcd(first_line)),
        (Scheme::Https, RawAnswer::TlsServer) => {
            let endpoint = endpoint.clone();
            let settings = settings.clone();
            let answer =
                tokio::task::spawn_blocking(move || tls_version(&endpoint, &settings, timeout))
                    .await
                    .unwrap_or_else(|error| Err(EndpointProblem::Refused(error.to_string())))?;
            match answer {
                RawAnswer::Etcd(version) => version,
                RawAnswer::Other(first_line) => return Err(EndpointProblem::NotEtcd(first_line)),
                RawAnswer::TlsServer => {
                    return Err(EndpointProblem::NotEtcd("(nothing over TLS)".into()));
                }
            }
        }
    };
    let (leader, auth) = session(endpoint, settings, timeout).await?;
    let tls = match (
        endpoint.scheme,
        settings.tls.as_ref().and_then(|tls| tls.identity.as_ref()),
    ) {
        (Scheme::Http, _) => Transport::Plain,
        (Scheme::Https, None) => Transport::Tls,
        (Scheme::Https, Some(_)) => Transport::MutualTls,
    };
    Ok(EndpointFacts {
        version,
        tls,
        leader,
        auth,
    })
}

fn connect_tcp(endpoint: &EtcdEndpoint, timeout: Duration) -> Result<TcpStream, EndpointProblem> {
    let addresses = (endpoint.host.as_str(), endpoint.port)
        .to_socket_addrs()
        .map_err(EndpointProblem::Unreachable)?;
    let stream = connect_first(addresses, timeout).map_err(EndpointProblem::Unreachable)?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(EndpointProblem::Unreachable)?;
    Ok(stream)
}

/// Tries each address a name resolved to, in order, as the datastore client does: `localhost` is
/// often `::1` first while etcd listens on 127.0.0.1 only. The last address's error is the answer.
fn connect_first(
    addresses: impl Iterator<Item = SocketAddr>,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    let mut last_error = None;
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(stream) => return Ok(stream),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "the host name has no address")
    }))
}

fn version_request(endpoint: &EtcdEndpoint) -> String {
    let host = match endpoint.host.contains(':') {
        true => format!("[{}]", endpoint.host),
        false => endpoint.host.clone(),
    };
    format!("GET /version HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
}

/// `GET /version` over plain TCP.
fn plain_version(endpoint: &EtcdEndpoint, timeout: Duration) -> Result<RawAnswer, EndpointProblem> {
    let mut stream = connect_tcp(endpoint, timeout)?;
    let _ = stream.write_all(version_request(endpoint).as_bytes());
    let answer = read_answer(&mut stream, timeout)?;
    if answer.first() == Some(&0x15) {
        // A TLS alert record.
        return Ok(RawAnswer::TlsServer);
    }
    if answer.is_empty() {
        // Closed without a word: what a TLS-only listener does with a plaintext request.
        return Ok(RawAnswer::TlsServer);
    }
    let text = String::from_utf8_lossy(&answer);
    if text.contains("HTTP request to an HTTPS server") {
        return Ok(RawAnswer::TlsServer);
    }
    Ok(classify_http(&text))
}

fn classify_http(text: &str) -> RawAnswer {
    match etcd_version(text) {
        Some(version) => RawAnswer::Etcd(version),
        None => RawAnswer::Other(
            text.lines()
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|character| !character.is_control())
                .take(80)
                .collect(),
        ),
    }
}

/// The `etcdserver` field of a `/version` answer.
fn etcd_version(text: &str) -> Option<String> {
    let body = text.split("\r\n\r\n").nth(1)?;
    let start = body.find('{')?;
    let end = body.rfind('}')?;
    let value: serde_json::Value = serde_json::from_str(&body[start..=end]).ok()?;
    value.get("etcdserver")?.as_str().map(str::to_string)
}

fn read_answer(stream: &mut impl Read, timeout: Duration) -> Result<Vec<u8>, EndpointProblem> {
    let mut answer = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return Ok(answer),
            Ok(count) => {
                answer.extend_from_slice(&buffer[..count]);
                if answer.len() > 64 * 1024 {
                    return Ok(answer);
                }
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return match answer.is_empty() {
                    true => Err(EndpointProblem::Silent(timeout)),
                    false => Ok(answer),
                };
            }
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
                return Ok(answer);
            }
            Err(error) => return Err(EndpointProblem::Unreachable(error)),
        }
    }
}

/// `GET /version` over TLS with the configured CA and client identity.
fn tls_version(
    endpoint: &EtcdEndpoint,
    settings: &EtcdSettings,
    timeout: Duration,
) -> Result<RawAnswer, EndpointProblem> {
    let mut roots = rustls::RootCertStore::empty();
    let ca_bytes = match settings.tls.as_ref().and_then(|tls| tls.ca.as_ref()) {
        Some(ca) => ca.bytes.clone(),
        None => std::fs::read(super::endpoints::SYSTEM_CA_BUNDLE).unwrap_or_default(),
    };
    for certificate in CertificateDer::pem_slice_iter(&ca_bytes).filter_map(Result::ok) {
        let _ = roots.add(certificate);
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let identity = settings.tls.as_ref().and_then(|tls| tls.identity.as_ref());
    let config = match identity {
        Some(identity) => {
            let certificates: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(&identity.certificate.bytes)
                    .filter_map(Result::ok)
                    .collect();
            let key = PrivateKeyDer::from_pem_slice(&identity.key.bytes).map_err(|error| {
                EndpointProblem::Refused(format!("the client key cannot be read: {error}"))
            })?;
            builder
                .with_client_auth_cert(certificates, key)
                .map_err(tls_problem)?
        }
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from(endpoint.host.clone())
        .map_err(|error| EndpointProblem::Refused(format!("invalid server name: {error}")))?;
    let connection = rustls::ClientConnection::new(Arc::new(config), name).map_err(tls_problem)?;
    let stream = connect_tcp(endpoint, timeout)?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    if let Err(error) = tls.write_all(version_request(endpoint).as_bytes()) {
        return Err(io_to_tls_problem(error));
    }
    let mut answer = Vec::new();
    if let Err(error) = tls.read_to_end(&mut answer)
        && answer.is_empty()
    {
        return Err(io_to_tls_problem(error));
    }
    Ok(classify_http(&String::from_utf8_lossy(&answer)))
}

fn io_to_tls_problem(error: std::io::Error) -> EndpointProblem {
    let tls_error = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .cloned();
    match tls_error {
        Some(source) => tls_problem(source),
        None if matches!(
            error.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) =>
        {
            EndpointProblem::Silent(Duration::ZERO)
        }
        None => EndpointProblem::Unreachable(error),
    }
}

fn tls_problem(source: rustls::Error) -> EndpointProblem {
    use rustls::{AlertDescription, CertificateError, Error};
    let reason = match &source {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the server's certificate is not signed by the configured CA (etcdCACertFile)".to_string()
        }
        Error::InvalidCertificate(CertificateError::NotValidForName)
        | Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => {
            "the server's certificate does not name this host: use the name or address it was issued for".to_string()
        }
        Error::InvalidCertificate(CertificateError::Expired)
        | Error::InvalidCertificate(CertificateError::ExpiredContext { .. }) => {
            "the server's certificate has expired".to_string()
        }
        Error::AlertReceived(
            AlertDescription::CertificateRequired | AlertDescription::HandshakeFailure,
        ) => "the server wants a client certificate (etcdCertFile, etcdKeyFile)".to_string(),
        Error::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown,
        ) => "the server does not accept the client certificate (is it signed by the server's client CA?)".to_string(),
        Error::InvalidMessage(_) => "the server does not speak TLS here".to_string(),
        other => other.to_string(),
    };
    EndpointProblem::Tls { reason, source }
}

/// A gRPC session with this member alone: its status (leader) and a read of `/calico/` (auth).
async fn session(
    endpoint: &EtcdEndpoint,
    settings: &EtcdSettings,
    timeout: Duration,
) -> Result<(Leadership, Authentication), EndpointProblem> {
    let mut options = ConnectOptions::new()
        .with_connect_timeout(timeout)
        .with_timeout(timeout);
    if endpoint.scheme == Scheme::Https {
        let tls =
            tls_options(settings).map_err(|error| EndpointProblem::Refused(error.to_string()))?;
        options = options.with_tls(tls.domain_name(endpoint.host.clone()));
    }
    if let Some(credentials) = &settings.credentials {
        options = options.with_user(credentials.username.clone(), credentials.password.expose());
    }
    let refused =
        |error: etcd_client::Error| EndpointProblem::Refused(crate::errors::error_chain(&error));
    let mut client = Client::connect([endpoint.url()], Some(options))
        .await
        .map_err(refused)?;
    let status = client.status().await.map_err(refused)?;
    let member = status
        .header()
        .map(|header| header.member_id())
        .unwrap_or_default();
    let leader = match status.leader() {
        0 => Leadership::NoLeader,
        leader if leader == member => Leadership::Leader,
        leader => Leadership::Follower { leader },
    };
    client
        .get(
            "/calico/",
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_keys_only()
                    .with_limit(1),
            ),
        )
        .await
        .map_err(refused)?;
    let auth = match &settings.credentials {
        Some(credentials) => Authentication::User(credentials.username.clone()),
        None => Authentication::NotUsed,
    };
    Ok((leader, auth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_comes_from_etcds_answer_only() {
        let etcd = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"etcdserver\":\"3.4.23\",\"etcdcluster\":\"3.4.0\"}";
        assert!(matches!(classify_http(etcd), RawAnswer::Etcd(version) if version == "3.4.23"));
        let other = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert!(
            matches!(classify_http(other), RawAnswer::Other(line) if line == "HTTP/1.1 404 Not Found")
        );
    }

    #[test]
    fn every_resolved_address_is_tried_before_giving_up() {
        // `localhost` as `::1` first, where nothing listens, then 127.0.0.1, where something does.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_address = closed.local_addr().unwrap();
        drop(closed);
        let addresses = [closed_address, listener.local_addr().unwrap()];
        let timeout = Duration::from_secs(5);
        assert!(connect_first(addresses.into_iter(), timeout).is_ok());
        let refused = connect_first([closed_address].into_iter(), timeout).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
        let none = connect_first(std::iter::empty(), timeout).unwrap_err();
        assert_eq!(none.kind(), std::io::ErrorKind::NotFound);
    }
}
