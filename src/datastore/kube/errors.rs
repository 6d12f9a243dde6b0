//! Turning Kubernetes client errors into [`StoreError`]s a user can act on.
//!
//! The API server answers failures with a `Status` whose code and reason say what happened (404, 409
//! `AlreadyExists` or `Conflict`, 403, 401); transport failures arrive as a chain of hyper and I/O
//! errors whose text this module reads once to tell a refused connection from a timeout or a TLS
//! failure.

use std::time::Duration;

use crate::datastore::{DatastoreType, StoreError};
use crate::errors::error_chain;
use crate::resource::ResourceKey;

/// What was being attempted, for the error.
pub struct Request<'a> {
    pub server: &'a str,
    /// `get`, `list`, `create`, `update`, `delete`.
    pub verb: &'a str,
    /// `ippools.crd.projectcalico.org`.
    pub resource: &'a str,
    pub key: Option<&'a ResourceKey>,
    /// The resourceVersion an update or delete expected.
    pub expected: Option<&'a str>,
    pub timeout: Duration,
}

/// Classifies a failed request.
pub fn classify(error: kube::Error, request: &Request<'_>) -> StoreError {
    if let kube::Error::Api(status) = &error {
        let message = status.message.clone();
        // A missing object's 404 names it in `details`; a resource type the server does not serve
        // (the CRD is not installed) answers with empty or no details.
        let names_nothing = status
            .details
            .as_ref()
            .is_none_or(|details| details.name.is_empty());
        return match (status.code, request.key) {
            (404, _) if names_nothing => StoreError::NotInstalled {
                server: request.server.to_string(),
                resource: request.resource.to_string(),
            },
            (404, Some(key)) => StoreError::NotFound(key.clone()),
            (404, None) => StoreError::NotInstalled {
                server: request.server.to_string(),
                resource: request.resource.to_string(),
            },
            (409, Some(key)) if status.reason == "AlreadyExists" => {
                StoreError::AlreadyExists(key.clone())
            }
            (409, Some(key)) => StoreError::Conflict {
                key: key.clone(),
                expected: request.expected.unwrap_or_default().to_string(),
                current: "unknown".into(),
            },
            (403, _) => StoreError::PermissionDenied {
                datastore: DatastoreType::Kubernetes,
                operation: format!("`{}` on `{}`", request.verb, request.resource),
                detail: message,
            },
            (401, _) => StoreError::AuthenticationFailed {
                datastore: DatastoreType::Kubernetes,
                detail: format!(
                    "the Kubernetes API at {} rejected the credentials (401 Unauthorized)",
                    request.server
                ),
            },
            (code, _) => StoreError::Other(format!(
                "the Kubernetes API refused `{}` on `{}` ({code} {}): {message}",
                request.verb, request.resource, status.reason
            )),
        };
    }
    transport(&error, request.server, request.timeout)
}

/// Classifies an error that never got an API answer.
pub fn transport(error: &dyn std::error::Error, server: &str, timeout: Duration) -> StoreError {
    let text = error_chain(error);
    let lower = text.to_ascii_lowercase();
    let unavailable = |detail: &str| StoreError::Unavailable {
        datastore: DatastoreType::Kubernetes,
        endpoints: server.to_string(),
        detail: detail.to_string(),
    };
    if lower.contains("connection refused") {
        return unavailable("connection refused");
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return unavailable("the host name could not be resolved");
    }
    if lower.contains("timed out") || lower.contains("elapsed") || lower.contains("timeout") {
        return StoreError::Timeout {
            datastore: DatastoreType::Kubernetes,
            endpoints: server.to_string(),
            seconds: timeout.as_secs(),
        };
    }
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        return StoreError::Tls {
            endpoint: server.to_string(),
            detail: "the server certificate is not signed by a trusted CA".into(),
        };
    }
    if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
        return StoreError::Tls {
            endpoint: server.to_string(),
            detail: text,
        };
    }
    if lower.contains("connect") || lower.contains("connection") {
        return unavailable(&text);
    }
    StoreError::Other(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Kind;
    use kube::core::Status;
    use kube::core::response::StatusDetails;

    fn api_error(code: u16, reason: &str, name: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            reason: reason.to_string(),
            message: format!("{reason} message"),
            details: Some(
                serde_json::from_value::<StatusDetails>(serde_json::json!({ "name": name }))
                    .expect("status details"),
            ),
            ..Status::default()
        }))
    }

    #[test]
    fn statuses_become_store_errors() {
        let key = ResourceKey::new(Kind::IpPool, None, "pool");
        let request = Request {
            server: "https://k8s:6443",
            verb: "update",
            resource: "ippools.crd.projectcalico.org",
            key: Some(&key),
            expected: Some("7"),
            timeout: Duration::from_secs(10),
        };
        let classify = |error| classify(error, &request);
        assert!(matches!(
            classify(api_error(404, "NotFound", "pool")),
            StoreError::NotFound(_)
        ));
        assert!(matches!(
            classify(api_error(404, "NotFound", "")),
            StoreError::NotInstalled { .. }
        ));
        assert!(matches!(
            classify(api_error(409, "AlreadyExists", "pool")),
            StoreError::AlreadyExists(_)
        ));
        assert!(matches!(
            classify(api_error(409, "Conflict", "pool")),
            StoreError::Conflict { ref expected, .. } if expected == "7"
        ));
        let denied = classify(api_error(403, "Forbidden", "pool"));
        assert_eq!(
            denied.to_string(),
            "permission denied by the datastore for `update` on `ippools.crd.projectcalico.org`"
        );
        assert!(denied.hint().unwrap().contains("RBAC"));
        assert!(matches!(
            classify(api_error(401, "Unauthorized", "")),
            StoreError::AuthenticationFailed { .. }
        ));
    }
}
