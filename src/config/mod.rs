//! Client configuration: where netctl finds its datastore and how it authenticates.
//!
//! Settings come from exactly one source — the `NetAPIConfig` file when one is used, otherwise the
//! environment — never a merge of both (as upstream:
//! `calicoctl/calicoctl/commands/clientmgr/client.go`). `load` turns that source into a
//! [`ClientConfig`] that remembers where every value came from (for `config view`), and
//! [`ClientConfig::etcd`] validates the etcd options completely — URLs parsed, key and certificate files
//! read — before any connection is opened. This module owns every read of environment variables.
//!
//! It does not connect to anything: the datastore backends take the validated settings.

mod api_group;
mod datastore_type;
mod env;
mod etcd;
pub mod file;
mod kubernetes;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::errors::Hint;
pub use api_group::CalicoApiGroup;
pub use datastore_type::DatastoreType;
pub use env::{EnvValue, Environment};
pub use etcd::{
    ClientIdentity, EndpointSource, EtcdCredentials, EtcdEndpoint, EtcdSettings, Pem, PemOrigin,
    Scheme, Secret, TlsMaterial,
};
pub use file::{NetApiConfigDocument, NetApiConfigSpec};
pub use kubernetes::KubernetesSettings;

/// The configuration file used when `-c/--config` is not given and the file exists.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/netctl/netctl.cfg";

/// Environment variable naming the DNS server (`IP[:PORT]`) used for SRV discovery instead of the
/// system resolver. For sites with a dedicated resolver, and for the tests' local DNS server.
pub const RESOLVER_VARIABLE: &str = "NETCTL_RESOLVER";

/// Variables of the legacy v1 configuration that netctl refuses rather than silently ignoring
/// (`README.md`, "Configuration"; upstream ignores them — only the v1 configuration,
/// `libcalico-go/lib/apis/v1/apiconfig.go`, read them — which hides mistakes).
const RETIRED_VARIABLES: [&str; 3] = ["ETCD_SCHEME", "ETCD_AUTHORITY", "ETC_AUTHORITY"];

/// Why a configuration could not be loaded. Each says what to change.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file `{}` does not exist", path.display())]
    MissingFile { path: PathBuf },
    #[error("cannot read config file `{}`", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid config file `{}{location}`", path.display())]
    Syntax {
        path: PathBuf,
        location: String,
        #[source]
        source: Box<crate::yaml::YamlErrorKind>,
    },
    #[error("invalid config file `{}`: apiVersion is `{found}`, expected `projectcalico.org/v3`", path.display())]
    WrongApiVersion { path: PathBuf, found: String },
    #[error("invalid config file `{}`: kind is `{found}`, expected `NetAPIConfig`", path.display())]
    WrongKind { path: PathBuf, found: String },
    #[error("`{variable}` is no longer supported")]
    RetiredVariable { variable: String },
    #[error("unknown datastore type `{value}` (from {origin}): expected `etcdv3` or `kubernetes`")]
    UnknownDatastoreType { value: String, origin: Origin },
    #[error("both etcdEndpoints ({endpoints_origin}) and etcdDiscoverySrv ({srv_origin}) are set")]
    EndpointsAndSrv {
        endpoints_origin: Origin,
        srv_origin: Origin,
    },
    #[error("no etcd endpoints configured for the `etcdv3` datastore")]
    NoEndpoints,
    /// The endpoints option is set to nothing: from the environment, usually `NET_ETCD_ENDPOINTS=`
    /// shadowing a plain `ETCD_ENDPOINTS` (a set `NET_` variable wins even when empty).
    #[error("etcd endpoints are empty (from {origin})")]
    EmptyEndpoints { origin: Origin },
    #[error("invalid etcd endpoint `{endpoint}` (from {origin}): {reason}")]
    InvalidEndpoint {
        endpoint: String,
        origin: Origin,
        reason: String,
    },
    #[error("TLS options are set but etcd endpoint `{endpoint}` uses `http://`")]
    TlsWithPlainEndpoint { endpoint: String },
    #[error(
        "inline certificates (etcdKey, etcdCert, etcdCACert) and certificate files (etcdKeyFile, etcdCertFile, etcdCACertFile) are both set"
    )]
    MixedInlineAndFiles,
    #[error("`{present}` is set but `{missing}` is not")]
    IncompletePair {
        present: &'static str,
        missing: &'static str,
    },
    #[error("cannot read {what} file `{}` (from {origin})", path.display())]
    ReadPem {
        what: &'static str,
        path: PathBuf,
        origin: Origin,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} {location} holds no PEM block")]
    NotPem {
        what: &'static str,
        location: String,
    },
    #[error("invalid `{variable}` value `{value}`: expected an IP address with an optional port")]
    InvalidResolver { variable: String, value: String },
    #[error("kubeconfig `{path}` (from {origin}) does not exist")]
    MissingKubeconfig { path: String, origin: Origin },
    #[error("invalid Kubernetes API endpoint `{endpoint}` (from {origin})")]
    InvalidKubernetesEndpoint { endpoint: String, origin: Origin },
    #[error("context `{context}` is asked for but there is no kubeconfig to take it from")]
    ContextWithoutKubeconfig { context: String },
    #[error("invalid Calico API group `{value}` (from {origin})")]
    InvalidApiGroup { value: String, origin: Origin },
    #[error("invalid boolean `{value}` for {name} (from {origin}): expected `true` or `false`")]
    InvalidBool {
        name: &'static str,
        value: String,
        origin: Origin,
    },
}

impl Hint for ConfigError {
    /// Advice for the user, printed on its own `hint:` line.
    fn hint(&self) -> Option<String> {
        Some(match self {
            ConfigError::MissingFile { .. } => format!(
                "check the path given to `-c/--config`, or leave it out to use `{DEFAULT_CONFIG_PATH}` or the environment"
            ),
            ConfigError::Syntax { .. } => "the file must be a YAML or JSON `NetAPIConfig` document; see `schemas/netapiconfig.schema.json`".into(),
            ConfigError::WrongKind { found, .. } if found == "CalicoAPIConfig" => {
                "netctl reads the same options as calicoctl: change `kind: CalicoAPIConfig` to `kind: NetAPIConfig`".into()
            }
            ConfigError::WrongKind { .. } | ConfigError::WrongApiVersion { .. } => {
                "a netctl config file starts with `apiVersion: projectcalico.org/v3` and `kind: NetAPIConfig`".into()
            }
            ConfigError::RetiredVariable { .. } => {
                "unset it and list the endpoints in `ETCD_ENDPOINTS` instead, e.g. `ETCD_ENDPOINTS=https://10.0.0.1:2379`".into()
            }
            ConfigError::EndpointsAndSrv { .. } => {
                "use either a list of endpoints or SRV discovery, not both".into()
            }
            ConfigError::NoEndpoints => {
                "set `ETCD_ENDPOINTS` (or `etcdEndpoints` in the config file), or `ETCD_DISCOVERY_SRV` for DNS discovery".into()
            }
            ConfigError::EmptyEndpoints {
                origin: Origin::Environment(variable),
            } if variable.starts_with(env::PREFIX) => format!(
                "`{variable}` is set, so `{}` is not read even though `{variable}` is empty: unset `{variable}` or put the endpoints in it",
                &variable[env::PREFIX.len()..]
            ),
            ConfigError::EmptyEndpoints { origin } => {
                format!("put the endpoints in {origin}, e.g. `https://10.0.0.1:2379`")
            }
            ConfigError::InvalidEndpoint { .. } => {
                "endpoints look like `https://10.0.0.1:2379` or `https://[fd00::1]:2379`, separated by commas".into()
            }
            ConfigError::TlsWithPlainEndpoint { .. } => {
                "use `https://` for every endpoint when TLS is enabled on etcd".into()
            }
            ConfigError::MixedInlineAndFiles => {
                "use either the inline PEM options or the *File options, not a mix".into()
            }
            ConfigError::IncompletePair { missing, .. } => format!("set `{missing}` too"),
            ConfigError::UnknownDatastoreType { .. } => {
                "set `DATASTORE_TYPE` (or `datastoreType`) to `etcdv3` or `kubernetes`".into()
            }
            ConfigError::ReadPem { .. } => "check the path and that netctl may read the file".into(),
            ConfigError::MissingKubeconfig { .. } => {
                "point `KUBECONFIG` (or `kubeconfig` in the config file) at an existing kubeconfig file".into()
            }
            ConfigError::InvalidKubernetesEndpoint { .. } => {
                "the API endpoint is a URL such as `https://10.0.0.1:6443`, without a path".into()
            }
            ConfigError::ContextWithoutKubeconfig { .. } => {
                "set `KUBECONFIG` (or `kubeconfig`), or drop `--context` / `k8sCurrentContext`".into()
            }
            ConfigError::InvalidApiGroup { .. } => {
                "the Calico API group is `crd.projectcalico.org/v1` or `projectcalico.org/v3` (v3.32's native CRDs); leave it unset to use the one the API server serves".into()
            }
            ConfigError::NotPem { .. } => {
                "certificates and keys must be PEM (`-----BEGIN ...-----` blocks)".into()
            }
            _ => return None,
        })
    }
}

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The configuration file at this path.
    File(PathBuf),
    /// This environment variable (with or without the `NET_` prefix).
    Environment(String),
    /// netctl's built-in default.
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "file `{}`", path.display()),
            Origin::Environment(variable) => write!(f, "`{variable}`"),
            Origin::Default => f.write_str("default"),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub origin: Origin,
}

/// Which source the configuration was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    Environment,
}

/// Every option of the client configuration, each with its origin. Not yet validated beyond types:
/// see [`ClientConfig::etcd`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub source: ConfigSource,
    pub datastore_type: Sourced<DatastoreType>,
    pub options: Vec<(ConfigOption, Sourced<String>)>,
    /// DNS server for SRV discovery (`NETCTL_RESOLVER`), when not the system resolver.
    pub resolver: Option<Sourced<SocketAddr>>,
    /// Things the user should know but that do not stop the command (printed to stderr).
    pub warnings: Vec<String>,
    /// Settings that were found but not used, and why (info level; `config view` lists them).
    pub ignored: Vec<String>,
}

/// The options of the client configuration: file name, environment variable, whether secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigOption {
    EtcdEndpoints,
    EtcdDiscoverySrv,
    EtcdUsername,
    EtcdPassword,
    EtcdKeyFile,
    EtcdCertFile,
    EtcdCaCertFile,
    EtcdKey,
    EtcdCert,
    EtcdCaCert,
    Kubeconfig,
    K8sApiEndpoint,
    K8sCertFile,
    K8sKeyFile,
    K8sCaFile,
    K8sApiToken,
    K8sInsecureSkipTlsVerify,
    K8sCurrentContext,
    CalicoApiGroup,
}

impl ConfigOption {
    pub const ALL: [ConfigOption; 19] = [
        ConfigOption::EtcdEndpoints,
        ConfigOption::EtcdDiscoverySrv,
        ConfigOption::EtcdUsername,
        ConfigOption::EtcdPassword,
        ConfigOption::EtcdKeyFile,
        ConfigOption::EtcdCertFile,
        ConfigOption::EtcdCaCertFile,
        ConfigOption::EtcdKey,
        ConfigOption::EtcdCert,
        ConfigOption::EtcdCaCert,
        ConfigOption::Kubeconfig,
        ConfigOption::K8sApiEndpoint,
        ConfigOption::K8sCertFile,
        ConfigOption::K8sKeyFile,
        ConfigOption::K8sCaFile,
        ConfigOption::K8sApiToken,
        ConfigOption::K8sInsecureSkipTlsVerify,
        ConfigOption::K8sCurrentContext,
        ConfigOption::CalicoApiGroup,
    ];

    /// The option's name in the config file's `spec`.
    pub fn file_name(self) -> &'static str {
        match self {
            ConfigOption::EtcdEndpoints => "etcdEndpoints",
            ConfigOption::EtcdDiscoverySrv => "etcdDiscoverySrv",
            ConfigOption::EtcdUsername => "etcdUsername",
            ConfigOption::EtcdPassword => "etcdPassword",
            ConfigOption::EtcdKeyFile => "etcdKeyFile",
            ConfigOption::EtcdCertFile => "etcdCertFile",
            ConfigOption::EtcdCaCertFile => "etcdCACertFile",
            ConfigOption::EtcdKey => "etcdKey",
            ConfigOption::EtcdCert => "etcdCert",
            ConfigOption::EtcdCaCert => "etcdCACert",
            ConfigOption::Kubeconfig => "kubeconfig",
            ConfigOption::K8sApiEndpoint => "k8sAPIEndpoint",
            ConfigOption::K8sCertFile => "k8sCertFile",
            ConfigOption::K8sKeyFile => "k8sKeyFile",
            ConfigOption::K8sCaFile => "k8sCAFile",
            ConfigOption::K8sApiToken => "k8sAPIToken",
            ConfigOption::K8sInsecureSkipTlsVerify => "k8sInsecureSkipTLSVerify",
            ConfigOption::K8sCurrentContext => "k8sCurrentContext",
            ConfigOption::CalicoApiGroup => "calicoAPIGroup",
        }
    }

    /// The environment variable (without the `NET_` prefix); `None` for file-only options.
    pub fn variable(self) -> Option<&'static str> {
        Some(match self {
            ConfigOption::EtcdEndpoints => "ETCD_ENDPOINTS",
            ConfigOption::EtcdDiscoverySrv => "ETCD_DISCOVERY_SRV",
            ConfigOption::EtcdUsername => "ETCD_USERNAME",
            ConfigOption::EtcdPassword => "ETCD_PASSWORD",
            ConfigOption::EtcdKeyFile => "ETCD_KEY_FILE",
            ConfigOption::EtcdCertFile => "ETCD_CERT_FILE",
            ConfigOption::EtcdCaCertFile => "ETCD_CA_CERT_FILE",
            ConfigOption::EtcdKey | ConfigOption::EtcdCert | ConfigOption::EtcdCaCert => {
                return None;
            }
            ConfigOption::Kubeconfig => "KUBECONFIG",
            ConfigOption::K8sApiEndpoint => "K8S_API_ENDPOINT",
            ConfigOption::K8sCertFile => "K8S_CERT_FILE",
            ConfigOption::K8sKeyFile => "K8S_KEY_FILE",
            ConfigOption::K8sCaFile => "K8S_CA_FILE",
            ConfigOption::K8sApiToken => "K8S_API_TOKEN",
            ConfigOption::K8sInsecureSkipTlsVerify => "K8S_INSECURE_SKIP_TLS_VERIFY",
            ConfigOption::K8sCurrentContext => "K8S_CURRENT_CONTEXT",
            // Upstream's variable keeps its `CALICO_` (`apiconfig.go`), so netctl's is
            // `NET_CALICO_API_GROUP`.
            ConfigOption::CalicoApiGroup => "CALICO_API_GROUP",
        })
    }

    /// Whether the value must never be shown (passwords, tokens, private keys).
    pub fn is_secret(self) -> bool {
        matches!(
            self,
            ConfigOption::EtcdPassword | ConfigOption::EtcdKey | ConfigOption::K8sApiToken
        )
    }

    fn value_in(self, spec: &NetApiConfigSpec) -> Option<String> {
        match self {
            ConfigOption::EtcdEndpoints => spec.etcd_endpoints.clone(),
            ConfigOption::EtcdDiscoverySrv => spec.etcd_discovery_srv.clone(),
            ConfigOption::EtcdUsername => spec.etcd_username.clone(),
            ConfigOption::EtcdPassword => spec.etcd_password.clone(),
            ConfigOption::EtcdKeyFile => spec.etcd_key_file.clone(),
            ConfigOption::EtcdCertFile => spec.etcd_cert_file.clone(),
            ConfigOption::EtcdCaCertFile => spec.etcd_ca_cert_file.clone(),
            ConfigOption::EtcdKey => spec.etcd_key.clone(),
            ConfigOption::EtcdCert => spec.etcd_cert.clone(),
            ConfigOption::EtcdCaCert => spec.etcd_ca_cert.clone(),
            ConfigOption::Kubeconfig => spec.kubeconfig.clone(),
            ConfigOption::K8sApiEndpoint => spec.k8s_api_endpoint.clone(),
            ConfigOption::K8sCertFile => spec.k8s_cert_file.clone(),
            ConfigOption::K8sKeyFile => spec.k8s_key_file.clone(),
            ConfigOption::K8sCaFile => spec.k8s_ca_file.clone(),
            ConfigOption::K8sApiToken => spec.k8s_api_token.clone(),
            ConfigOption::K8sInsecureSkipTlsVerify => {
                spec.k8s_insecure_skip_tls_verify.map(|v| v.to_string())
            }
            ConfigOption::K8sCurrentContext => spec.k8s_current_context.clone(),
            ConfigOption::CalicoApiGroup => spec.calico_api_group.clone(),
        }
    }
}

/// Loads the client configuration.
///
/// `explicit` is the `-c/--config` path: it must exist. Without it, [`DEFAULT_CONFIG_PATH`] is used
/// when it exists, else the environment. Nothing is contacted.
pub fn load(
    explicit: Option<&Path>,
    environment: &Environment,
) -> Result<ClientConfig, ConfigError> {
    load_with_default(explicit, Path::new(DEFAULT_CONFIG_PATH), environment)
}

/// [`load`] with the default path made explicit, so tests need not touch `/etc`.
pub fn load_with_default(
    explicit: Option<&Path>,
    default_path: &Path,
    environment: &Environment,
) -> Result<ClientConfig, ConfigError> {
    let path = match explicit {
        Some(path) if !path.exists() => {
            return Err(ConfigError::MissingFile {
                path: path.to_path_buf(),
            });
        }
        Some(path) => Some(path),
        None => default_path.exists().then_some(default_path),
    };
    let mut config = match path {
        Some(path) => {
            let mut config = from_file(path)?;
            config.ignored = ignored_by_file(path, environment);
            config
        }
        None => from_environment(environment)?,
    };
    if config.datastore_type.value == DatastoreType::EtcdV3
        && let Some(group) = config.option(ConfigOption::CalicoApiGroup)
    {
        // As upstream (`UsingV3CRDs` reads it for the Kubernetes datastore only).
        config.ignored.push(format!(
            "`calicoAPIGroup` (from {}) is ignored: it chooses the API group of the `kubernetes` datastore, and this one is `etcdv3`",
            group.origin
        ));
    }
    config.resolver = resolver(environment)?;
    Ok(config)
}

fn from_file(path: &Path) -> Result<ClientConfig, ConfigError> {
    let document = file::read(path)?;
    let origin = Origin::File(path.to_path_buf());
    let options = ConfigOption::ALL
        .into_iter()
        .filter_map(|option| {
            let value = option.value_in(&document.spec)?;
            Some((
                option,
                Sourced {
                    value,
                    origin: origin.clone(),
                },
            ))
        })
        .collect();
    let datastore_type = document.spec.datastore_type.map(|value| Sourced {
        value,
        origin: origin.clone(),
    });
    finish(
        ConfigSource::File(path.to_path_buf()),
        datastore_type,
        options,
        "datastoreType: etcdv3",
    )
}

/// The environment a program netctl starts for the operator's own purposes gets (the notification
/// hooks of `upgrade apply`): netctl's own, without what opens the datastore — its configuration
/// variables, with or without `NET_` — and without any variable whose name looks secret
/// (`redaction.rs`), so a hook never holds the credentials netctl runs with.
pub fn environment_without_datastore_access(
    environment: &Environment,
) -> std::collections::BTreeMap<String, String> {
    let configuration: Vec<&str> = std::iter::once("DATASTORE_TYPE")
        .chain(
            ConfigOption::ALL
                .into_iter()
                .filter_map(ConfigOption::variable),
        )
        .collect();
    environment
        .variables()
        .filter(|(name, _)| {
            let plain = name.strip_prefix(env::PREFIX).unwrap_or(name);
            !configuration.contains(&plain)
                && !RETIRED_VARIABLES.contains(&plain)
                && !crate::redaction::looks_secret(name)
        })
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// The configuration variables set in the environment, which a config file in use makes netctl
/// ignore (one source, never a merge): easy to miss when `/etc/netctl/netctl.cfg` exists.
fn ignored_by_file(path: &Path, environment: &Environment) -> Vec<String> {
    std::iter::once("DATASTORE_TYPE")
        .chain(
            ConfigOption::ALL
                .into_iter()
                .filter_map(ConfigOption::variable),
        )
        .filter_map(|name| environment.lookup(name))
        .map(|found| {
            format!(
                "`{}` is ignored: the configuration comes from file `{}` only",
                found.variable,
                path.display()
            )
        })
        .collect()
}

/// Plain variables that a set `NET_` variable shadows (it wins even when empty).
fn shadowed(environment: &Environment) -> Vec<String> {
    std::iter::once("DATASTORE_TYPE")
        .chain(
            ConfigOption::ALL
                .into_iter()
                .filter_map(ConfigOption::variable),
        )
        .filter_map(|name| {
            let winner = environment.lookup(name)?;
            (winner.variable != name && environment.exact(name).is_some()).then(|| {
                format!(
                    "`{name}` is ignored: `{}` is set{} and wins",
                    winner.variable,
                    if winner.value.is_empty() {
                        " (empty)"
                    } else {
                        ""
                    }
                )
            })
        })
        .collect()
}

fn from_environment(environment: &Environment) -> Result<ClientConfig, ConfigError> {
    for name in RETIRED_VARIABLES {
        if let Some(found) = environment.lookup(name) {
            return Err(ConfigError::RetiredVariable {
                variable: found.variable,
            });
        }
    }
    let sourced = |found: EnvValue| Sourced {
        value: found.value,
        origin: Origin::Environment(found.variable),
    };
    let options = ConfigOption::ALL
        .into_iter()
        .filter_map(|option| {
            let found = environment.lookup(option.variable()?)?;
            Some((option, sourced(found)))
        })
        .collect();
    let datastore_type = environment.lookup("DATASTORE_TYPE").map(sourced);
    let mut config = finish(
        ConfigSource::Environment,
        datastore_type,
        options,
        "DATASTORE_TYPE=etcdv3",
    )?;
    config.ignored = shadowed(environment);
    Ok(config)
}

fn finish(
    source: ConfigSource,
    datastore_type: Option<Sourced<String>>,
    options: Vec<(ConfigOption, Sourced<String>)>,
    etcd_setting: &str,
) -> Result<ClientConfig, ConfigError> {
    let mut warnings = Vec::new();
    let datastore_type = match datastore_type {
        Some(Sourced { value, origin }) => Sourced {
            value: value
                .parse()
                .map_err(|value| ConfigError::UnknownDatastoreType {
                    value,
                    origin: origin.clone(),
                })?,
            origin,
        },
        None => {
            // Upstream silently switches to etcdv3 when endpoints are set; the type is required for
            // etcd (`README.md`, "Configuration"), so keep the documented default and say what is
            // missing.
            if options
                .iter()
                .any(|(option, _)| *option == ConfigOption::EtcdEndpoints)
            {
                warnings.push(format!(
                    "etcd endpoints are set but the datastore type is not: `{etcd_setting}` is required to use etcd (using the default, `kubernetes`)"
                ));
            }
            Sourced {
                value: DatastoreType::Kubernetes,
                origin: Origin::Default,
            }
        }
    };
    let config = ClientConfig {
        source,
        datastore_type,
        options,
        resolver: None,
        warnings,
        ignored: Vec::new(),
    };
    if let Some(value) = config.option(ConfigOption::K8sInsecureSkipTlsVerify)
        && value.value != "true"
        && value.value != "false"
    {
        return Err(ConfigError::InvalidBool {
            name: "k8sInsecureSkipTLSVerify",
            value: value.value.clone(),
            origin: value.origin.clone(),
        });
    }
    Ok(config)
}

fn resolver(environment: &Environment) -> Result<Option<Sourced<SocketAddr>>, ConfigError> {
    let Some(value) = environment.exact(RESOLVER_VARIABLE) else {
        return Ok(None);
    };
    let invalid = || ConfigError::InvalidResolver {
        variable: RESOLVER_VARIABLE.to_string(),
        value: value.to_string(),
    };
    let address = match value.parse::<SocketAddr>() {
        Ok(address) => address,
        Err(_) => SocketAddr::new(value.parse().map_err(|_| invalid())?, 53),
    };
    Ok(Some(Sourced {
        value: address,
        origin: Origin::Environment(RESOLVER_VARIABLE.to_string()),
    }))
}

impl ClientConfig {
    /// The value of one option, if set.
    pub fn option(&self, option: ConfigOption) -> Option<&Sourced<String>> {
        self.options
            .iter()
            .find(|(candidate, _)| *candidate == option)
            .map(|(_, value)| value)
    }

    /// Validates the etcd options completely and reads the key and certificate files.
    pub fn etcd(&self) -> Result<EtcdSettings, ConfigError> {
        etcd::resolve(self)
    }

    /// The static etcd endpoints, comma-separated: what a plan's fact `etcd_endpoints` defaults to.
    /// `None` for the Kubernetes datastore, SRV discovery, or etcd settings that do not resolve.
    pub fn static_etcd_endpoints(&self) -> Option<String> {
        if self.datastore_type.value != DatastoreType::EtcdV3 {
            return None;
        }
        match self.etcd().ok()?.endpoints {
            EndpointSource::Static(endpoints) => Some(
                endpoints
                    .iter()
                    .map(|endpoint| endpoint.url())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            EndpointSource::Srv { .. } => None,
        }
    }

    /// Validates the Kubernetes options. `context` is the `--context` flag; `home` is where
    /// `~/.kube/config` is looked for when no kubeconfig is configured.
    pub fn kubernetes(
        &self,
        context: Option<&str>,
        home: Option<&Path>,
    ) -> Result<KubernetesSettings, ConfigError> {
        kubernetes::resolve(self, context, home)
    }
}

#[cfg(test)]
mod tests;
