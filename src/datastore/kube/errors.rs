//! The Kubernetes API's failures in its own terms ([`KubeError`], with their advice), and turning
//! Kubernetes client errors into [`StoreError`]s of the category a caller acts on.
//!
//! The API server answers failures with a `Status` whose code and reason say what happened (404, 409
//! `AlreadyExists` or `Conflict`, 403, 401); transport failures arrive as a chain of hyper and I/O
//! errors whose text this module reads once to tell a refused connection from a timeout or a TLS
//! failure. The client error itself stays the cause where nothing more specific can be said.

use std::time::Duration;

use crate::datastore::StoreError;
use crate::errors::{Hint, error_chain};
use crate::resource::ResourceKey;

/// What went wrong with the Kubernetes API or its configuration: the source of a [`StoreError`].
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// A kubeconfig (or the client configuration's overrides) the client cannot be built from.
    #[error("cannot use {location} to reach the Kubernetes API")]
    Kubeconfig {
        location: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{location} has no current context")]
    NoCurrentContext { location: String },
    #[error("{location} has no context `{name}`")]
    UnknownContext { location: String, name: String },
    #[error("{location} has no cluster `{name}`")]
    UnknownCluster { location: String, name: String },
    #[error(
        "no kubeconfig is configured (KUBECONFIG, ~/.kube/config) and netctl is not running in a pod"
    )]
    NotInCluster(#[source] kube::config::InClusterError),
    #[error("the Kubernetes API at {server} rejected the credentials (401 Unauthorized)")]
    Unauthorized { server: String },
    /// An answer with a status no other variant names (403, 422, 500, ...), as the server gave it.
    #[error("the Kubernetes API answered {code} {reason}: {message}")]
    Status {
        code: u16,
        reason: String,
        message: String,
    },
    #[error("the Kubernetes API at {server} does not serve `{resource}`")]
    NotInstalled { server: String, resource: String },
    #[error("`{server}` refused the connection")]
    Refused { server: String },
    #[error("the host name of `{server}` could not be resolved")]
    Unresolved { server: String },
    #[error("`{server}` did not answer within {seconds}s")]
    TimedOut { server: String, seconds: u64 },
    #[error(
        "the TLS handshake with `{server}` failed: the server certificate is not signed by a trusted CA"
    )]
    UntrustedServer { server: String },
    #[error("the TLS handshake with `{server}` failed")]
    Tls {
        server: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot reach `{server}`")]
    Unreachable {
        server: String,
        #[source]
        source: kube::Error,
    },
    /// A client failure no rule above names.
    #[error(transparent)]
    Client(kube::Error),
    #[error(
        "pod `{pod}` has an invalid {what} `{value}`, so its workload endpoint cannot be shown"
    )]
    InvalidPod {
        pod: String,
        what: &'static str,
        value: String,
    },
    #[error("continue token `{0}` was not issued by a profile listing")]
    InvalidContinueToken(String),
    /// A create of a key found it taken, and it was gone again when read.
    #[error("`{key}` changed while it was being written")]
    ChangedWhileWritten { key: String },
}

impl Hint for KubeError {
    fn hint(&self) -> Option<String> {
        let advice = match self {
            KubeError::Kubeconfig { .. }
            | KubeError::UnknownCluster { .. }
            | KubeError::NotInCluster(_) => {
                "check KUBECONFIG (or `kubeconfig`), the context (`--context`, k8sCurrentContext) and the k8s* overrides"
            }
            KubeError::NoCurrentContext { .. } | KubeError::UnknownContext { .. } => {
                "choose a context of the kubeconfig with `--context` (or k8sCurrentContext); `kubectl config get-contexts` lists them"
            }
            KubeError::Unauthorized { .. } => {
                "check the credentials of the kubeconfig user (token, client certificate) or k8sAPIToken"
            }
            KubeError::Status { code: 403, .. } => {
                "ask a cluster administrator for RBAC access to the Calico resources named above (see `kubectl auth can-i`)"
            }
            KubeError::NotInstalled { .. } => {
                "install the Calico CRDs in the cluster, or check the kubeconfig context; netctl reads the API group calico-node reads, `crd.projectcalico.org/v1` unless only `projectcalico.org/v3` is served, and `NET_CALICO_API_GROUP` (or `calicoAPIGroup`) names it"
            }
            KubeError::Refused { .. }
            | KubeError::Unresolved { .. }
            | KubeError::TimedOut { .. }
            | KubeError::Unreachable { .. } => {
                "check that the cluster is up and that the kubeconfig (KUBECONFIG, --context) or k8sAPIEndpoint names its API server"
            }
            KubeError::UntrustedServer { .. } | KubeError::Tls { .. } => {
                "check the cluster's certificate-authority in the kubeconfig (or k8sCAFile) and the client certificate and key"
            }
            KubeError::InvalidPod { .. } => {
                "fix or delete the Pod's annotation; the CNI plugin writes it when the pod starts"
            }
            KubeError::ChangedWhileWritten { .. } => "run the command again",
            KubeError::Status { .. }
            | KubeError::Client(_)
            | KubeError::InvalidContinueToken(_) => {
                return None;
            }
        };
        Some(advice.to_string())
    }
}

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

impl Request<'_> {
    /// The discovery request that lists the API groups (the API group choice).
    pub fn api_groups(server: &str, timeout: Duration) -> Request<'_> {
        Request {
            server,
            verb: "list",
            resource: "API groups",
            key: None,
            expected: None,
            timeout,
        }
    }

    /// `` `update` on `ippools.crd.projectcalico.org` ``, for messages.
    fn operation(&self) -> String {
        format!("`{}` on `{}`", self.verb, self.resource)
    }
}

/// Classifies a failed request.
pub fn classify(error: kube::Error, request: &Request<'_>) -> StoreError {
    if let kube::Error::Api(status) = &error {
        // A missing object's 404 names it in `details`; a resource type the server does not serve
        // (the CRD is not installed) answers with empty or no details.
        let names_nothing = status
            .details
            .as_ref()
            .is_none_or(|details| details.name.is_empty());
        let not_installed = || {
            StoreError::Misconfigured(Box::new(KubeError::NotInstalled {
                server: request.server.to_string(),
                resource: request.resource.to_string(),
            }))
        };
        let answered = || KubeError::Status {
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        };
        return match (status.code, request.key) {
            (404, _) if names_nothing => not_installed(),
            (404, Some(key)) => StoreError::NotFound(key.clone()),
            (404, None) => not_installed(),
            (409, Some(key)) if status.reason == "AlreadyExists" => {
                StoreError::AlreadyExists(key.clone())
            }
            (409, Some(key)) => StoreError::Conflict {
                key: key.clone(),
                expected: request.expected.unwrap_or_default().to_string(),
                current: "unknown".into(),
            },
            (403, _) => StoreError::PermissionDenied {
                operation: request.operation(),
                source: Box::new(answered()),
            },
            (401, _) => StoreError::Unauthenticated(Box::new(KubeError::Unauthorized {
                server: request.server.to_string(),
            })),
            _ => StoreError::failed(request.operation(), answered()),
        };
    }
    transport(error, request)
}

/// Classifies an error that never got an API answer.
fn transport(error: kube::Error, request: &Request<'_>) -> StoreError {
    let lower = error_chain(&error).to_ascii_lowercase();
    let server = request.server.to_string();
    let unavailable = |why: KubeError| StoreError::Unavailable(Box::new(why));
    if lower.contains("connection refused") {
        return unavailable(KubeError::Refused { server });
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return unavailable(KubeError::Unresolved { server });
    }
    if lower.contains("timed out") || lower.contains("elapsed") || lower.contains("timeout") {
        return StoreError::TimedOut(Box::new(KubeError::TimedOut {
            server,
            seconds: request.timeout.as_secs(),
        }));
    }
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        return unavailable(KubeError::UntrustedServer { server });
    }
    if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
        return unavailable(KubeError::Tls {
            server,
            source: error,
        });
    }
    if lower.contains("connect") || lower.contains("connection") {
        return unavailable(KubeError::Unreachable {
            server,
            source: error,
        });
    }
    StoreError::failed(request.operation(), KubeError::Client(error))
}

/// The status code of the Kubernetes API's answer behind `error`, and its reason, when it was
/// one (for the coordination objects' own decisions on 404 and 409).
pub fn status_of(error: &StoreError) -> Option<(u16, &str)> {
    match error.backend_as::<KubeError>()? {
        KubeError::Status { code, reason, .. } => Some((*code, reason)),
        KubeError::NotInstalled { .. } => Some((404, "NotFound")),
        _ => None,
    }
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
        let missing = classify(api_error(404, "NotFound", ""));
        assert!(matches!(missing, StoreError::Misconfigured(_)));
        assert!(missing.hint().unwrap().contains("install the Calico CRDs"));
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
            error_chain(&denied),
            "permission denied by the datastore for `update` on `ippools.crd.projectcalico.org`: the Kubernetes API answered 403 Forbidden: Forbidden message"
        );
        assert!(denied.hint().unwrap().contains("RBAC"));
        let unauthorized = classify(api_error(401, "Unauthorized", ""));
        assert!(matches!(unauthorized, StoreError::Unauthenticated(_)));
        assert_eq!(
            error_chain(&unauthorized),
            "authentication failed: the Kubernetes API at https://k8s:6443 rejected the credentials (401 Unauthorized)"
        );
        assert!(unauthorized.hint().unwrap().contains("kubeconfig user"));
        let invalid = classify(api_error(422, "Invalid", "pool"));
        assert_eq!(
            error_chain(&invalid),
            "`update` on `ippools.crd.projectcalico.org` failed: the Kubernetes API answered 422 Invalid: Invalid message"
        );
        assert_eq!(status_of(&invalid), Some((422, "Invalid")));
    }
}
