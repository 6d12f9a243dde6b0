//! The `NetAPIConfig` file format: a `projectcalico.org/v3` document whose `spec` holds the client options.
//!
//! Parsing is strict (unknown fields are errors, as upstream's strict unmarshal —
//! `libcalico-go/lib/apiconfig/load.go`) and every error names the file and, where the parser knows
//! it, the line and column. The JSON Schema in `schemas/netapiconfig.schema.json` is generated from
//! these types.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The only `kind` a client configuration file may have.
pub const KIND: &str = "NetAPIConfig";

/// A client configuration document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "NetAPIConfig")]
pub struct NetApiConfigDocument {
    /// Must be `projectcalico.org/v3`.
    #[schemars(extend("const" = "projectcalico.org/v3"))]
    pub api_version: String,
    /// Must be `NetAPIConfig`.
    #[schemars(extend("const" = "NetAPIConfig"))]
    pub kind: String,
    /// Present and empty; accepted for compatibility with resource documents.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub spec: NetApiConfigSpec,
}

/// The client options. Each has an environment variable of the same meaning (see `config::options`),
/// except the inline PEM values, which exist only in the file (`README.md`, "Configuration").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetApiConfigSpec {
    /// `kubernetes` (default) or `etcdv3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["kubernetes", "etcdv3"]))]
    pub datastore_type: Option<String>,
    /// Comma-separated etcd endpoint URLs; IPv6 addresses in brackets (`https://[fd00::1]:2379`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_endpoints: Option<String>,
    /// Domain whose SRV records list the etcd endpoints. Mutually exclusive with `etcdEndpoints`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_discovery_srv: Option<String>,
    /// User name for etcd RBAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_username: Option<String>,
    /// Password for `etcdUsername`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_password: Option<String>,
    /// File holding the client private key (mutual TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_key_file: Option<String>,
    /// File holding the client certificate (mutual TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_cert_file: Option<String>,
    /// File holding the CA certificate(s) that issued the etcd server certificate; each one is trusted.
    #[serde(
        default,
        rename = "etcdCACertFile",
        skip_serializing_if = "Option::is_none"
    )]
    pub etcd_ca_cert_file: Option<String>,
    /// Inline PEM private key (equivalent of `etcdKeyFile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_key: Option<String>,
    /// Inline PEM client certificate (equivalent of `etcdCertFile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_cert: Option<String>,
    /// Inline PEM CA certificate(s) (equivalent of `etcdCACertFile`).
    #[serde(
        default,
        rename = "etcdCACert",
        skip_serializing_if = "Option::is_none"
    )]
    pub etcd_ca_cert: Option<String>,
    /// Path to a kubeconfig file (Kubernetes datastore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<String>,
    /// Kubernetes API server URL, overriding the kubeconfig's.
    #[serde(
        default,
        rename = "k8sAPIEndpoint",
        skip_serializing_if = "Option::is_none"
    )]
    pub k8s_api_endpoint: Option<String>,
    /// Client certificate file for the Kubernetes API.
    #[serde(
        default,
        rename = "k8sCertFile",
        skip_serializing_if = "Option::is_none"
    )]
    pub k8s_cert_file: Option<String>,
    /// Client key file for the Kubernetes API.
    #[serde(
        default,
        rename = "k8sKeyFile",
        skip_serializing_if = "Option::is_none"
    )]
    pub k8s_key_file: Option<String>,
    /// CA file for the Kubernetes API.
    #[serde(default, rename = "k8sCAFile", skip_serializing_if = "Option::is_none")]
    pub k8s_ca_file: Option<String>,
    /// Bearer token for the Kubernetes API.
    #[serde(
        default,
        rename = "k8sAPIToken",
        skip_serializing_if = "Option::is_none"
    )]
    pub k8s_api_token: Option<String>,
    /// Skip verification of the Kubernetes API server certificate.
    #[serde(
        default,
        rename = "k8sInsecureSkipTLSVerify",
        skip_serializing_if = "Option::is_none"
    )]
    pub k8s_insecure_skip_tls_verify: Option<bool>,
    /// Kubeconfig context to use.
    #[serde(
        default,
        rename = "k8sCurrentContext",
        skip_serializing_if = "Option::is_none"
    )]
    pub k8s_current_context: Option<String>,
    /// The API group of the Calico resources in the Kubernetes datastore: `crd.projectcalico.org/v1`
    /// or `projectcalico.org/v3` (v3.32's native CRDs). Unset: `projectcalico.org/v3` when the API
    /// server serves it and not `crd.projectcalico.org/v1`, else `crd.projectcalico.org/v1`, as
    /// upstream discovers it.
    #[serde(
        default,
        rename = "calicoAPIGroup",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("enum" = ["crd.projectcalico.org/v1", "projectcalico.org/v3"]))]
    pub calico_api_group: Option<String>,
}

/// Reads and parses a configuration file, checking `apiVersion` and `kind`.
pub fn read(path: &Path) -> Result<NetApiConfigDocument, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// Parses configuration text read from `path` (used in messages only).
pub fn parse(text: &str, path: &Path) -> Result<NetApiConfigDocument, ConfigError> {
    // Upstream reads its configuration with sigs.k8s.io/yaml's strict decoding: YAML 1.1 values,
    // text where a string is expected, field names matched ignoring case.
    let shapes = crate::yaml::Shapes::of::<NetApiConfigDocument>();
    let document: NetApiConfigDocument =
        crate::yaml::from_str_shaped(text, &shapes, crate::yaml::FieldNames::FoldCase).map_err(
            |source| ConfigError::Syntax {
                path: path.to_path_buf(),
                location: format!(":{}:{}", source.line, source.column),
                source: Box::new(source.kind),
            },
        )?;
    if document.api_version != crate::resource::API_VERSION {
        return Err(ConfigError::WrongApiVersion {
            path: PathBuf::from(path),
            found: document.api_version,
        });
    }
    if document.kind != KIND {
        return Err(ConfigError::WrongKind {
            path: PathBuf::from(path),
            found: document.kind,
        });
    }
    Ok(document)
}

/// The JSON Schema of the configuration file, as checked in at `schemas/netapiconfig.schema.json`.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(NetApiConfigDocument);
    // A schema is plain JSON data; serializing it cannot fail.
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
