//! Turning etcd client errors into decisions and messages: is it the endpoint that failed (route
//! elsewhere), the cluster that is busy (wait and send again), or a final answer (report it)?
//!
//! The gRPC stack reports most failures as "transport error" or a status whose real cause is buried in
//! a source chain (`reference/etcd-and-crates.md` G7). This module reads the whole chain once and
//! recognises the cases operators meet: wrong password, untrusted server certificate, rejected client
//! certificate, refused connection, a server that is not etcd, timeouts, leader changes and permission
//! errors. Which endpoint to use next is `endpoints`' business, not this module's.

use std::error::Error as _;
use std::fmt;
use std::time::Duration;

use crate::datastore::{DatastoreType, StoreError};

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
    pub fn hint(&self) -> &'static str {
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

/// The text of an error and all its sources, joined with `: `.
pub fn chain_text(error: &etcd_client::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
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
pub fn classify(error: &etcd_client::Error, operation: &str, https: bool) -> Classified {
    let text = chain_text(error);
    let lower = text.to_ascii_lowercase();
    let status = status_message(error);
    let code = status.as_ref().map(|(code, _)| *code);
    let message = status
        .as_ref()
        .map(|(_, message)| message.to_ascii_lowercase())
        .unwrap_or_default();

    if lower.contains("authentication failed") || lower.contains("invalid user id or password") {
        return Classified::Final(StoreError::AuthenticationFailed {
            datastore: DatastoreType::EtcdV3,
            detail: "etcd rejected the user name or password".into(),
        });
    }
    if lower.contains("user name is empty") {
        return Classified::Final(StoreError::AuthenticationFailed {
            datastore: DatastoreType::EtcdV3,
            detail: "etcd requires authentication but no user name is configured".into(),
        });
    }
    if lower.contains("invalid auth token") || lower.contains("auth token is expired") {
        return Classified::Final(StoreError::AuthenticationFailed {
            datastore: DatastoreType::EtcdV3,
            detail: "the etcd authentication token expired and could not be renewed".into(),
        });
    }
    if code == Some(tonic::Code::PermissionDenied) || lower.contains("permission denied") {
        return Classified::Final(StoreError::PermissionDenied {
            datastore: DatastoreType::EtcdV3,
            operation: operation.to_string(),
            detail: text,
        });
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

    if let Some(reason) = tls_reason(&lower, https, || root_cause(error)) {
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
    Classified::Final(StoreError::Other(text))
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
            classify(&error, "get", false),
            Classified::Busy(message) if message == "etcdserver: leader changed"
        ));
        let timed_out = etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
            "etcdserver: request timed out, possibly due to previous leader failure",
        ));
        assert!(matches!(
            classify(&timed_out, "create", false),
            Classified::Busy(_)
        ));
    }

    #[test]
    fn permission_and_credentials_are_final() {
        let denied = etcd_client::Error::GRpcStatus(tonic::Status::permission_denied(
            "etcdserver: permission denied",
        ));
        assert!(matches!(
            classify(&denied, "get", false),
            Classified::Final(StoreError::PermissionDenied { .. })
        ));
        let wrong = etcd_client::Error::GRpcStatus(tonic::Status::invalid_argument(
            "etcdserver: authentication failed, invalid user ID or password",
        ));
        assert!(matches!(
            classify(&wrong, "connect", true),
            Classified::Final(StoreError::AuthenticationFailed { .. })
        ));
    }

    #[test]
    fn a_service_that_is_not_etcd_says_so() {
        let error = etcd_client::Error::GRpcStatus(tonic::Status::unimplemented(
            "unknown service etcdserverpb.KV",
        ));
        assert!(matches!(
            classify(&error, "get", false),
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
        assert!(alike.hint().starts_with("check that etcd is running"));
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
        assert!(mixed.hint().starts_with("each endpoint failed differently"));
    }
}
