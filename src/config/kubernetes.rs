//! Validation of the Kubernetes options into [`KubernetesSettings`]: which kubeconfig (the option or
//! `KUBECONFIG`, else `~/.kube/config`, else in-cluster), the overrides of its server, certificates and
//! token, and the context to use (`--context` over `k8sCurrentContext`).
//!
//! Paths are checked here so that a wrong one fails before anything is contacted; the files are read
//! by the Kubernetes client when it is built (`datastore::kube`), which is the one place that knows
//! the kubeconfig format.

use std::path::{Path, PathBuf};

use super::{CalicoApiGroup, ClientConfig, ConfigError, ConfigOption, Origin, Secret, Sourced};

/// The validated Kubernetes options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesSettings {
    /// The kubeconfig file to read; `None` means in-cluster, or only the overrides below.
    pub kubeconfig: Option<Sourced<PathBuf>>,
    /// `k8sAPIEndpoint`: the API server URL, overriding the kubeconfig's.
    pub api_endpoint: Option<String>,
    pub certificate_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
    pub token: Option<Secret>,
    pub insecure_skip_tls_verify: bool,
    /// The kubeconfig context to use instead of its `current-context`.
    pub context: Option<String>,
    /// `calicoAPIGroup` / `CALICO_API_GROUP`: the group of the Calico custom resources, over what
    /// the backend discovers. `None` when unset or set empty (upstream's "not configured").
    pub api_group: Option<Sourced<CalicoApiGroup>>,
}

impl KubernetesSettings {
    /// A kubeconfig file alone (and its `context`), with no overrides: what `ipam check
    /// --kubeconfig` reads on an etcd datastore.
    pub fn from_kubeconfig(path: PathBuf, context: Option<String>) -> KubernetesSettings {
        KubernetesSettings {
            kubeconfig: Some(Sourced {
                value: path,
                origin: Origin::Default,
            }),
            api_endpoint: None,
            certificate_file: None,
            key_file: None,
            ca_file: None,
            token: None,
            insecure_skip_tls_verify: false,
            context,
            api_group: None,
        }
    }
}

/// Validates the Kubernetes options. `context` is the `--context` flag (it wins over
/// `k8sCurrentContext`); `home` is where `~/.kube/config` is looked for.
pub fn resolve(
    config: &ClientConfig,
    context: Option<&str>,
    home: Option<&Path>,
) -> Result<KubernetesSettings, ConfigError> {
    let value = |option| config.option(option);
    let kubeconfig = match value(ConfigOption::Kubeconfig) {
        Some(sourced) => Some(explicit_kubeconfig(sourced)?),
        None => home
            .map(|home| home.join(".kube").join("config"))
            .filter(|path| path.is_file())
            .map(|path| Sourced {
                value: path,
                origin: Origin::Default,
            }),
    };
    let api_endpoint = match value(ConfigOption::K8sApiEndpoint) {
        Some(endpoint) => {
            let text = endpoint.value.trim_end_matches('/');
            let rest = text
                .strip_prefix("https://")
                .or_else(|| text.strip_prefix("http://"));
            if rest.is_none_or(|rest| rest.is_empty() || rest.contains('/')) {
                return Err(ConfigError::InvalidKubernetesEndpoint {
                    endpoint: endpoint.value.clone(),
                    origin: endpoint.origin.clone(),
                });
            }
            Some(text.to_string())
        }
        None => None,
    };
    let file = |option: ConfigOption, what: &'static str| -> Result<Option<PathBuf>, ConfigError> {
        let Some(sourced) = value(option) else {
            return Ok(None);
        };
        let path = PathBuf::from(&sourced.value);
        std::fs::metadata(&path).map_err(|source| ConfigError::ReadPem {
            what,
            path: path.clone(),
            origin: sourced.origin.clone(),
            source,
        })?;
        Ok(Some(path))
    };
    let certificate_file = file(ConfigOption::K8sCertFile, "Kubernetes client certificate")?;
    let key_file = file(ConfigOption::K8sKeyFile, "Kubernetes client key")?;
    let ca_file = file(ConfigOption::K8sCaFile, "Kubernetes CA certificate")?;
    match (&certificate_file, &key_file) {
        (Some(_), None) => {
            return Err(ConfigError::IncompletePair {
                present: "k8sCertFile",
                missing: "k8sKeyFile",
            });
        }
        (None, Some(_)) => {
            return Err(ConfigError::IncompletePair {
                present: "k8sKeyFile",
                missing: "k8sCertFile",
            });
        }
        _ => {}
    }
    let insecure_skip_tls_verify =
        value(ConfigOption::K8sInsecureSkipTlsVerify).is_some_and(|value| value.value == "true");
    let context = context
        .map(str::to_string)
        .or_else(|| value(ConfigOption::K8sCurrentContext).map(|value| value.value.clone()));
    if context.is_some() && kubeconfig.is_none() {
        return Err(ConfigError::ContextWithoutKubeconfig {
            context: context.unwrap_or_default(),
        });
    }
    let api_group = match value(ConfigOption::CalicoApiGroup) {
        Some(sourced) if !sourced.value.trim().is_empty() => Some(Sourced {
            value: sourced
                .value
                .parse()
                .map_err(|value| ConfigError::InvalidApiGroup {
                    value,
                    origin: sourced.origin.clone(),
                })?,
            origin: sourced.origin.clone(),
        }),
        _ => None,
    };
    Ok(KubernetesSettings {
        kubeconfig,
        api_endpoint,
        certificate_file,
        key_file,
        ca_file,
        token: value(ConfigOption::K8sApiToken).map(|token| Secret::new(token.value.clone())),
        insecure_skip_tls_verify,
        context,
        api_group,
    })
}

/// `kubeconfig` / `KUBECONFIG`: like kubectl, a `:`-separated list; the first file that exists is used.
fn explicit_kubeconfig(sourced: &Sourced<String>) -> Result<Sourced<PathBuf>, ConfigError> {
    sourced
        .value
        .split(':')
        .filter(|part| !part.is_empty())
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .map(|path| Sourced {
            value: path,
            origin: sourced.origin.clone(),
        })
        .ok_or_else(|| ConfigError::MissingKubeconfig {
            path: sourced.value.clone(),
            origin: sourced.origin.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatastoreType;
    use crate::config::{ConfigSource, Environment};
    use crate::errors::Hint;

    fn config(pairs: &[(&str, &str)]) -> ClientConfig {
        let environment = Environment::from_pairs(pairs.iter().copied());
        crate::config::load_with_default(None, Path::new("/nonexistent"), &environment).unwrap()
    }

    #[test]
    fn kubeconfig_from_the_environment_must_exist() {
        let config = config(&[("KUBECONFIG", "/nonexistent/kubeconfig")]);
        assert_eq!(config.source, ConfigSource::Environment);
        assert_eq!(config.datastore_type.value, DatastoreType::Kubernetes);
        let error = resolve(&config, None, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "kubeconfig `/nonexistent/kubeconfig` (from `KUBECONFIG`) does not exist"
        );
    }

    #[test]
    fn the_first_existing_kubeconfig_of_a_list_is_used_and_context_flag_wins() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("config");
        std::fs::write(&path, "apiVersion: v1\nkind: Config\n").unwrap();
        let list = format!("/nonexistent/a:{}", path.display());
        let config = config(&[("KUBECONFIG", &list), ("K8S_CURRENT_CONTEXT", "from-env")]);
        let settings = resolve(&config, Some("from-flag"), None).unwrap();
        assert_eq!(settings.kubeconfig.unwrap().value, path);
        assert_eq!(settings.context.as_deref(), Some("from-flag"));
    }

    #[test]
    fn the_api_group_is_taken_from_the_environment_and_checked() {
        let settings = resolve(
            &config(&[("NET_CALICO_API_GROUP", "projectcalico.org/v3")]),
            None,
            None,
        )
        .unwrap();
        let group = settings.api_group.unwrap();
        assert_eq!(group.value, CalicoApiGroup::V3);
        assert_eq!(
            group.origin,
            Origin::Environment("NET_CALICO_API_GROUP".into())
        );
        // Set but empty is upstream's "not configured": discovered.
        let settings = resolve(&config(&[("CALICO_API_GROUP", "")]), None, None).unwrap();
        assert_eq!(settings.api_group, None);
        let error = resolve(
            &config(&[("CALICO_API_GROUP", "projectcalico.org")]),
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid Calico API group `projectcalico.org` (from `CALICO_API_GROUP`)"
        );
        assert!(error.hint().unwrap().contains("`projectcalico.org/v3`"));
    }

    #[test]
    fn endpoint_and_certificate_pair_are_checked() {
        let config1 = config(&[("K8S_API_ENDPOINT", "10.0.0.1:6443")]);
        assert!(matches!(
            resolve(&config1, None, None),
            Err(ConfigError::InvalidKubernetesEndpoint { .. })
        ));
        let directory = tempfile::tempdir().unwrap();
        let certificate = directory.path().join("cert.pem");
        std::fs::write(&certificate, "x").unwrap();
        let config2 = config(&[
            ("K8S_API_ENDPOINT", "https://10.0.0.1:6443"),
            ("K8S_CERT_FILE", certificate.to_str().unwrap()),
        ]);
        assert!(matches!(
            resolve(&config2, None, None),
            Err(ConfigError::IncompletePair {
                missing: "k8sKeyFile",
                ..
            })
        ));
    }
}
