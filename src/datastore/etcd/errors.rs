//! Turning etcd client errors into [`StoreError`]s a user can act on.
//!
//! The gRPC stack reports most failures as "transport error" or a status whose real cause is buried in
//! a source chain (`reference/etcd-and-crates.md` G7). This module reads the whole chain once and
//! recognises the cases operators meet: wrong password, untrusted server certificate, rejected client
//! certificate, connection refused, timeouts and permission errors.

use std::error::Error as _;

use crate::datastore::{DatastoreType, StoreError};

/// The text of an error and all its sources, joined with `: `.
fn chain_text(error: &etcd_client::Error) -> String {
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

/// Classifies an error from an operation described by `operation` against `endpoints`.
pub fn classify(
    error: etcd_client::Error,
    endpoints: &str,
    operation: &str,
    timeout: std::time::Duration,
) -> StoreError {
    let text = chain_text(&error);
    let lower = text.to_ascii_lowercase();
    let status_code = match &error {
        etcd_client::Error::GRpcStatus(status) => Some(status.code()),
        _ => None,
    };
    let unavailable = |detail: &str| StoreError::Unavailable {
        datastore: DatastoreType::EtcdV3,
        endpoints: endpoints.to_string(),
        detail: detail.to_string(),
    };
    let tls = |detail: &str| StoreError::Tls {
        endpoint: endpoints.to_string(),
        detail: detail.to_string(),
    };

    if lower.contains("authentication failed") || lower.contains("invalid user id or password") {
        return StoreError::AuthenticationFailed {
            datastore: DatastoreType::EtcdV3,
            detail: "etcd rejected the user name or password".into(),
        };
    }
    if lower.contains("user name is empty") {
        return StoreError::AuthenticationFailed {
            datastore: DatastoreType::EtcdV3,
            detail: "etcd requires authentication but no user name is configured".into(),
        };
    }
    if lower.contains("invalid auth token") || lower.contains("auth token is expired") {
        return StoreError::AuthenticationFailed {
            datastore: DatastoreType::EtcdV3,
            detail: "the etcd authentication token expired and could not be renewed".into(),
        };
    }
    if status_code == Some(tonic_code::PERMISSION_DENIED) || lower.contains("permission denied") {
        return StoreError::PermissionDenied {
            datastore: DatastoreType::EtcdV3,
            operation: operation.to_string(),
            detail: text,
        };
    }
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        return tls("the server certificate is not signed by a trusted CA");
    }
    if lower.contains("not valid for name") || lower.contains("notvalidforname") {
        return tls("the server certificate does not match the endpoint host name");
    }
    if lower.contains("certificate expired") || lower.contains("expired") && lower.contains("cert")
    {
        return tls("the server certificate has expired");
    }
    if lower.contains("badcertificate")
        || lower.contains("bad certificate")
        || lower.contains("certificaterequired")
        || lower.contains("unknownca")
        || lower.contains("unknown ca")
        || (endpoints.contains("https://")
            && (lower.contains("broken pipe") || lower.contains("connection closed")))
    {
        return tls(
            "the server rejected the client certificate (missing, or not issued by a CA it trusts)",
        );
    }
    if lower.contains("invaliddata") || lower.contains("handshake") || lower.contains("tls") {
        return tls(&text);
    }
    if status_code == Some(tonic_code::DEADLINE_EXCEEDED)
        || lower.contains("timed out")
        || lower.contains("timeout expired")
        || lower.contains("timeoutexpired")
        || lower.contains("deadline")
    {
        return StoreError::Timeout {
            datastore: DatastoreType::EtcdV3,
            endpoints: endpoints.to_string(),
            seconds: timeout.as_secs(),
        };
    }
    if lower.contains("connection refused") {
        return unavailable("connection refused");
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return unavailable("the host name could not be resolved");
    }
    if status_code == Some(tonic_code::UNAVAILABLE) || lower.contains("transport error") {
        return unavailable(&text);
    }
    StoreError::Other(text)
}

/// Whether the request failed while establishing a connection, so it never reached a server and may
/// be sent again (to another endpoint) without risk of applying twice.
pub fn is_connect_failure(error: &etcd_client::Error) -> bool {
    let lower = chain_text(error).to_ascii_lowercase();
    [
        "connection refused",
        "tcp connect error",
        "error trying to connect",
        "connection reset",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// tonic's status codes under names that read well in a `match` guard.
mod tonic_code {
    pub const PERMISSION_DENIED: tonic::Code = tonic::Code::PermissionDenied;
    pub const DEADLINE_EXCEEDED: tonic::Code = tonic::Code::DeadlineExceeded;
    pub const UNAVAILABLE: tonic::Code = tonic::Code::Unavailable;
}
