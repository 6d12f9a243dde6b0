//! etcd's failures in etcd's terms ([`EtcdError`], with their advice), and turning etcd client
//! errors into decisions: is it the endpoint that failed (route elsewhere), the cluster that is busy
//! (wait and send again), or a final answer (report it, as a [`StoreError`] of the right category
//! with the [`EtcdError`] as its source)?
//!
//! The gRPC stack reports most failures as "transport error" or a status whose real cause is buried in
//! a source chain (etcd-client's `Error::TransportError` wraps tonic's, which wraps hyper's). This
//! module reads the whole chain once and recognises the cases operators meet: wrong password,
//! untrusted server certificate, rejected client certificate, refused connection, a server that is
//! not etcd, timeouts, leader changes and permission errors. Which endpoint to use next is
//! `endpoints`' business, not this module's.

use std::fmt;
use std::time::Duration;

use crate::datastore::StoreError;
use crate::errors::{Hint, error_chain};

/// Advice when members run but cannot elect a leader.
pub const QUORUM_HINT: &str = "the etcd members that answer cannot reach enough of the others: start the failed members (a cluster needs a majority to elect a leader), then run the command again";

/// How one endpoint failed. The pool stops routing requests to an endpoint that failed this way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointFailure {
    /// Nothing listens on the address.
    Refused,
    /// The host name does not resolve.
    Unresolved,
    /// Connected (or connecting) but no answer within the time limit: a hung or overloaded member, or
    /// a firewall that drops packets.
    TimedOut(Duration),
    /// The TLS handshake failed; the reason says which side refused what.
    Tls(String),
    /// Something answered, but not etcd's gRPC API.
    NotEtcd(String),
    /// The connection broke while a request was in flight.
    Disconnected(String),
    /// Running, but without a leader: it cannot reach a majority of the cluster.
    Leaderless,
}

impl EndpointFailure {
    /// Whether the failure happened before any request could reach the server, so the request was
    /// certainly not applied.
    pub fn before_sending(&self) -> bool {
        matches!(
            self,
            EndpointFailure::Refused | EndpointFailure::Unresolved | EndpointFailure::Tls(_)
        )
    }

    fn category(&self) -> u8 {
        match self {
            EndpointFailure::Refused => 0,
            EndpointFailure::Unresolved => 1,
            EndpointFailure::TimedOut(_) => 2,
            EndpointFailure::Tls(_) => 3,
            EndpointFailure::NotEtcd(_) => 4,
            EndpointFailure::Disconnected(_) => 5,
            EndpointFailure::Leaderless => 6,
        }
    }
}

impl fmt::Display for EndpointFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndpointFailure::Refused => f.write_str("refused the connection"),
            EndpointFailure::Unresolved => f.write_str("has a host name that does not resolve"),
            EndpointFailure::TimedOut(limit) => {
                write!(
                    f,
                    "did not answer within {}",
                    humantime::format_duration(*limit)
                )
            }
            EndpointFailure::Tls(reason) => write!(f, "failed the TLS handshake: {reason}"),
            EndpointFailure::NotEtcd(detail) => write!(f, "is not an etcd server ({detail})"),
            EndpointFailure::Disconnected(detail) => {
                write!(f, "closed the connection ({detail})")
            }
            EndpointFailure::Leaderless => f.write_str("is running but has no leader"),
        }
    }
}

/// Every endpoint of a command that failed, with how, in the configured order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointFailures(pub Vec<(String, EndpointFailure)>);

impl EndpointFailures {
    /// Advice that fits the failures: quorum first (a member without a leader means the others
    /// matter), then one cause when they all failed alike, else a general one.
    pub fn advice(&self) -> &'static str {
        if self
            .0
            .iter()
            .any(|(_, failure)| *failure == EndpointFailure::Leaderless)
        {
            return QUORUM_HINT;
        }
        let mut kinds = self.0.iter().map(|(_, failure)| failure.category());
        let first = kinds.next();
        if first.is_none() || kinds.any(|kind| Some(kind) != first) {
            return "each endpoint failed differently: fix or remove the failing ones in etcdEndpoints / ETCD_ENDPOINTS, and check that the etcd members are running";
        }
        match &self.0[0].1 {
            EndpointFailure::Refused => {
                "check that etcd is running and that the endpoints (etcdEndpoints / ETCD_ENDPOINTS) name its client URLs"
            }
            EndpointFailure::Unresolved => {
                "check the host names in etcdEndpoints / ETCD_ENDPOINTS and the DNS configuration"
            }
            EndpointFailure::TimedOut(_) => {
                "the endpoints accept connections but do not answer: check that etcd is not stopped or overloaded and that no firewall drops the traffic, or raise --request-timeout on a slow link"
            }
            EndpointFailure::Tls(_) => {
                "check etcdCACertFile (the CA that issued the server certificate), the client certificate and key, and that the endpoint's host name or address is in the server certificate"
            }
            EndpointFailure::NotEtcd(_) => {
                "check the ports: an etcd client URL (port 2379 by default), not the peer port (2380) or another service, and `https://` for a TLS server"
            }
            EndpointFailure::Disconnected(_) => {
                "check that the etcd members are running and stay up; their logs say why they closed the connection"
            }
            EndpointFailure::Leaderless => QUORUM_HINT,
        }
    }
}

impl EndpointFailures {
    /// `; also: <each failure>` to append to another message, or nothing when there is none.
    pub fn as_also(&self) -> String {
        match self.0.is_empty() {
            true => String::new(),
            false => format!("; also, {self}"),
        }
    }
}

impl fmt::Display for EndpointFailures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, (endpoint, failure)) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "`{endpoint}` {failure}")?;
        }
        Ok(())
    }
}

/// What went wrong with etcd, in etcd's terms: the source of a [`StoreError`], whose category
/// (authentication, permission, availability, configuration) callers decide on.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("etcd rejected the user name or password")]
    WrongCredentials,
    #[error("etcd requires authentication but no user name is configured")]
    NoUserName,
    #[error("the etcd authentication token expired and could not be renewed")]
    TokenExpired,
    /// etcd refused the request to this user; the text is etcd's own answer.
    #[error("etcd answered `{0}`")]
    Denied(String),
    /// Every endpoint failed; each one is named with how (the category says the datastore is
    /// unavailable).
    #[error("{0}")]
    Endpoints(EndpointFailures),
    /// A member answers, but the cluster kept refusing the request (no leader, leader changes);
    /// `failed` names the members that did not answer at all.
    #[error(
        "etcd kept answering `{answer}` for {seconds}s ({operation}, {attempts} attempts){}",
        failed.as_also()
    )]
    Busy {
        operation: String,
        attempts: u32,
        seconds: u64,
        answer: String,
        failed: EndpointFailures,
    },
    #[error("no CA certificate is configured and the system bundle `{path}` cannot be read")]
    NoCaBundle {
        path: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot look up the SRV records `{name}`")]
    Discovery {
        name: String,
        #[source]
        source: hickory_resolver::net::NetError,
    },
    #[error("the SRV records `{name}` name no etcd endpoint")]
    NoSrvRecords { name: String },
    /// A read of a key's history below etcd's compaction: nobody can tell what happened there.
    #[error("etcd's history of the key was compacted")]
    Compacted,
    #[error("etcd has no such lease (it expired or was revoked)")]
    LeaseNotFound,
    #[error("invalid list continue token `{0}`")]
    InvalidContinueToken(String),
    /// A conditional write's key was deleted between its compare and its read.
    #[error("`{key}` changed while it was being written")]
    ChangedWhileWritten { key: String },
    /// An answer no rule above names, as the client reported it.
    #[error(transparent)]
    Client(#[from] etcd_client::Error),
}

impl Hint for EtcdError {
    fn hint(&self) -> Option<String> {
        let advice = match self {
            EtcdError::WrongCredentials | EtcdError::NoUserName | EtcdError::TokenExpired => {
                "check etcdUsername/etcdPassword (or ETCD_USERNAME/ETCD_PASSWORD)"
            }
            EtcdError::Denied(_) => "grant the etcd user's role readwrite on the `/calico/` prefix",
            EtcdError::Endpoints(failures) => failures.advice(),
            EtcdError::Busy { failed, .. } if !failed.0.is_empty() => QUORUM_HINT,
            EtcdError::Busy { .. } => {
                "the etcd cluster is electing a leader, has lost quorum or is overloaded: check `etcdctl endpoint status --cluster`, then run the command again"
            }
            EtcdError::NoCaBundle { .. } => {
                "set etcdCACertFile to the CA that issued the etcd server certificate, or install the system bundle (Debian: `apt-get install ca-certificates`)"
            }
            EtcdError::Discovery { .. } | EtcdError::NoSrvRecords { .. } => {
                "check the SRV records of etcdDiscoverySrv, or list the endpoints in etcdEndpoints instead"
            }
            EtcdError::ChangedWhileWritten { .. } => "run the command again",
            EtcdError::Compacted
            | EtcdError::LeaseNotFound
            | EtcdError::InvalidContinueToken(_)
            | EtcdError::Client(_) => return None,
        };
        Some(advice.to_string())
    }
}

/// What a failed request means for the next step.
#[derive(Debug)]
pub enum Classified {
    /// The endpoint failed: use another one.
    Endpoint(EndpointFailure),
    /// etcd answered that it cannot serve the request now (leader change, no leader, a proposal
    /// that timed out or was dropped, overload): wait, then send it again.
    Busy(String),
    /// A final answer (credentials, permissions, a bad request): report it.
    Final(StoreError),
}

/// The innermost cause of an error (the source at the end of the chain), as written.
fn root_cause(error: &etcd_client::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The message etcd itself put in a status (`etcdserver: leader changed`), without gRPC's framing.
fn status_message(error: &etcd_client::Error) -> Option<(tonic::Code, String)> {
    match error {
        etcd_client::Error::GRpcStatus(status) => {
            Some((status.code(), status.message().to_string()))
        }
        _ => None,
    }
}

/// Classifies an error from `operation` against one endpoint (`https` says whether it uses TLS).
pub fn classify(error: etcd_client::Error, operation: &str, https: bool) -> Classified {
    let text = error_chain(&error);
    let lower = text.to_ascii_lowercase();
    let status = status_message(&error);
    let code = status.as_ref().map(|(code, _)| *code);
    let message = status
        .as_ref()
        .map(|(_, message)| message.to_ascii_lowercase())
        .unwrap_or_default();
    let unauthenticated =
        |why: EtcdError| Classified::Final(StoreError::Unauthenticated(Box::new(why)));
    let failed = |why: EtcdError| Classified::Final(StoreError::failed(operation, why));

    if lower.contains("authentication failed") || lower.contains("invalid user id or password") {
        return unauthenticated(EtcdError::WrongCredentials);
    }
    if lower.contains("user name is empty") {
        return unauthenticated(EtcdError::NoUserName);
    }
    if lower.contains("invalid auth token") || lower.contains("auth token is expired") {
        return unauthenticated(EtcdError::TokenExpired);
    }
    if code == Some(tonic::Code::PermissionDenied) || lower.contains("permission denied") {
        let answer = status.map(|(_, message)| message).unwrap_or(text);
        return Classified::Final(StoreError::PermissionDenied {
            operation: operation.to_string(),
            source: Box::new(EtcdError::Denied(answer)),
        });
    }
    if message.contains("required revision has been compacted") {
        return failed(EtcdError::Compacted);
    }
    if message.contains("requested lease not found") {
        return failed(EtcdError::LeaseNotFound);
    }

    // etcd's own "not now" answers: the server is up, the cluster is busy.
    if message.starts_with("etcdserver:")
        && (code == Some(tonic::Code::Unavailable)
            || code == Some(tonic::Code::ResourceExhausted)
            || code == Some(tonic::Code::DeadlineExceeded))
        || message.contains("raft proposal dropped")
    {
        return Classified::Busy(status.map(|(_, message)| message).unwrap_or(text));
    }

    if let Some(reason) = tls_reason(&lower, https, || root_cause(&error)) {
        return Classified::Endpoint(EndpointFailure::Tls(reason));
    }
    if lower.contains("connection refused") {
        return Classified::Endpoint(EndpointFailure::Refused);
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return Classified::Endpoint(EndpointFailure::Unresolved);
    }
    if let Some(detail) = not_etcd(code, &lower) {
        return Classified::Endpoint(EndpointFailure::NotEtcd(detail));
    }
    if code == Some(tonic::Code::DeadlineExceeded)
        || lower.contains("timed out")
        || lower.contains("timeout expired")
        || lower.contains("deadline has elapsed")
    {
        // The caller knows its own limit; this one came from below it (the connect timeout).
        return Classified::Endpoint(EndpointFailure::TimedOut(Duration::ZERO));
    }
    if code == Some(tonic::Code::Unavailable)
        || code == Some(tonic::Code::Cancelled)
        || matches!(error, etcd_client::Error::TransportError(_))
        || lower.contains("transport error")
        || lower.contains("connection reset")
        || lower.contains("broken pipe")
        || lower.contains("connection closed")
    {
        return Classified::Endpoint(EndpointFailure::Disconnected(disconnect_detail(&lower)));
    }
    failed(EtcdError::Client(error))
}

/// The TLS failure behind an error, in words, if it is one.
fn tls_reason(lower: &str, https: bool, root_cause: impl Fn() -> String) -> Option<String> {
    let reason = if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        "the server certificate is not signed by a trusted CA"
    } else if lower.contains("not valid for name") || lower.contains("notvalidforname") {
        "the server certificate does not match the endpoint host name"
    } else if lower.contains("certificate expired")
        || lower.contains("expired") && lower.contains("cert")
    {
        "the server certificate has expired"
    } else if lower.contains("badcertificate")
        || lower.contains("bad certificate")
        || lower.contains("certificaterequired")
        || lower.contains("unknownca")
        || lower.contains("unknown ca")
        || (https && (lower.contains("broken pipe") || lower.contains("connection closed")))
    {
        "the server rejected the client certificate (missing, or not issued by a CA it trusts)"
    } else if lower.contains("invalid dns name") || lower.contains("invalid server name") {
        "the endpoint's host is not a valid TLS server name"
    } else if lower.contains("invalidcontenttype")
        || lower.contains("corrupt message")
        || lower.contains("received corrupt")
        || lower.contains("tls handshake eof")
    {
        "the server does not speak TLS (use `http://` for a plain etcd)"
    } else if https && (lower.contains("handshake") || lower.contains("tls")) {
        return Some(format!("the handshake did not complete ({})", root_cause()));
    } else {
        return None;
    };
    Some(reason.to_string())
}

/// What shows that the server is not etcd's gRPC API, if anything does.
fn not_etcd(code: Option<tonic::Code>, lower: &str) -> Option<String> {
    if code == Some(tonic::Code::Unimplemented) {
        return Some("it does not offer etcd's gRPC services".into());
    }
    if lower.contains("http status code") {
        return Some("it answered HTTP without gRPC".into());
    }
    if lower.contains("http2 error")
        || lower.contains("invalid http/2")
        || lower.contains("frame with invalid size")
        || lower.contains("protocol error")
        || lower.contains("invalid compression flag")
        || lower.contains("content-type")
    {
        return Some("it does not speak gRPC over HTTP/2".into());
    }
    None
}

fn disconnect_detail(lower: &str) -> String {
    for (needle, detail) in [
        ("connection reset", "connection reset"),
        ("broken pipe", "broken pipe"),
        ("connection closed", "connection closed by the server"),
        ("operation was canceled", "connection closed by the server"),
        (
            "unexpected end of file",
            "the connection ended unexpectedly",
        ),
        ("unexpected eof", "the connection ended unexpectedly"),
        ("goaway", "the server ended the connection"),
        ("go away", "the server ended the connection"),
    ] {
        if lower.contains(needle) {
            return detail.to_string();
        }
    }
    "transport failure".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_changes_are_busy_not_endpoint_failures() {
        let error = etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
            "etcdserver: leader changed",
        ));
        assert!(matches!(
            classify(error, "get", false),
            Classified::Busy(message) if message == "etcdserver: leader changed"
        ));
        let timed_out = etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
            "etcdserver: request timed out, possibly due to previous leader failure",
        ));
        assert!(matches!(
            classify(timed_out, "create", false),
            Classified::Busy(_)
        ));
    }

    #[test]
    fn permission_and_credentials_are_final() {
        let denied = etcd_client::Error::GRpcStatus(tonic::Status::permission_denied(
            "etcdserver: permission denied",
        ));
        let Classified::Final(denied) = classify(denied, "a read of `/calico/`", false) else {
            panic!("permission denied is final");
        };
        assert!(matches!(denied, StoreError::PermissionDenied { .. }));
        assert_eq!(
            error_chain(&denied),
            "permission denied by the datastore for a read of `/calico/`: etcd answered `etcdserver: permission denied`"
        );
        assert!(
            denied
                .hint()
                .unwrap()
                .contains("readwrite on the `/calico/` prefix")
        );
        let wrong = etcd_client::Error::GRpcStatus(tonic::Status::invalid_argument(
            "etcdserver: authentication failed, invalid user ID or password",
        ));
        let Classified::Final(wrong) = classify(wrong, "connect", true) else {
            panic!("wrong credentials are final");
        };
        assert_eq!(
            error_chain(&wrong),
            "authentication failed: etcd rejected the user name or password"
        );
        assert!(matches!(
            wrong.backend_as::<EtcdError>(),
            Some(EtcdError::WrongCredentials)
        ));
        assert!(wrong.hint().unwrap().contains("etcdPassword"));
    }

    #[test]
    fn answers_netctl_decides_on_are_typed() {
        let compacted = etcd_client::Error::GRpcStatus(tonic::Status::out_of_range(
            "etcdserver: mvcc: required revision has been compacted",
        ));
        let Classified::Final(compacted) =
            classify(compacted, "a read of the key's history", false)
        else {
            panic!("a compacted history is final");
        };
        assert!(matches!(
            compacted.backend_as::<EtcdError>(),
            Some(EtcdError::Compacted)
        ));
        let gone = etcd_client::Error::GRpcStatus(tonic::Status::not_found(
            "etcdserver: requested lease not found",
        ));
        let Classified::Final(gone) = classify(gone, "a lease revocation", false) else {
            panic!("a missing lease is final");
        };
        assert_eq!(
            error_chain(&gone),
            "a lease revocation failed: etcd has no such lease (it expired or was revoked)"
        );
        let odd = etcd_client::Error::GRpcStatus(tonic::Status::invalid_argument(
            "etcdserver: request is too large",
        ));
        let Classified::Final(odd) = classify(odd, "a batch of writes", false) else {
            panic!("an unknown answer is final");
        };
        // The client's own words are the cause, kept as the source.
        assert!(
            error_chain(&odd).starts_with("a batch of writes failed: ")
                && error_chain(&odd).contains("etcdserver: request is too large"),
            "{}",
            error_chain(&odd)
        );
    }

    #[test]
    fn a_service_that_is_not_etcd_says_so() {
        let error = etcd_client::Error::GRpcStatus(tonic::Status::unimplemented(
            "unknown service etcdserverpb.KV",
        ));
        assert!(matches!(
            classify(error, "get", false),
            Classified::Endpoint(EndpointFailure::NotEtcd(_))
        ));
    }

    #[test]
    fn failures_are_listed_per_endpoint_with_a_fitting_hint() {
        let alike = EndpointFailures(vec![
            ("http://a:2379".into(), EndpointFailure::Refused),
            ("http://b:2379".into(), EndpointFailure::Refused),
        ]);
        assert_eq!(
            alike.to_string(),
            "`http://a:2379` refused the connection; `http://b:2379` refused the connection"
        );
        assert!(alike.advice().starts_with("check that etcd is running"));
        let mixed = EndpointFailures(vec![
            ("http://a:2379".into(), EndpointFailure::Refused),
            (
                "http://b:2379".into(),
                EndpointFailure::TimedOut(Duration::from_secs(2)),
            ),
        ]);
        assert_eq!(
            mixed.to_string(),
            "`http://a:2379` refused the connection; `http://b:2379` did not answer within 2s"
        );
        assert!(
            mixed
                .advice()
                .starts_with("each endpoint failed differently")
        );
    }
}
