//! Building a Kubernetes API client from [`KubernetesSettings`]: the kubeconfig (or the in-cluster
//! service account), the chosen context, and the overrides of server, CA, client certificate, token
//! and TLS verification that the client configuration allows.
//!
//! The client is built inside the tokio runtime (kube's `Client::try_from` needs one) and uses the
//! process-wide rustls provider installed in `main`. Building it contacts nothing; the datastore
//! proves the connection with a first request.

use std::time::Duration;

use kube::config::{AuthInfo, Cluster, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster};
use serde_json::json;

use super::errors::KubeError;
use crate::config::KubernetesSettings;
use crate::datastore::StoreError;

/// The settings cannot be used to build a client.
fn misconfigured(why: KubeError) -> StoreError {
    StoreError::Misconfigured(Box::new(why))
}

/// `location` cannot be used, for `source`'s reason.
fn unusable(location: &str, source: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    misconfigured(KubeError::Kubeconfig {
        location: location.to_string(),
        source: Box::new(source),
    })
}

/// A client and the API server URL it talks to (for messages).
#[derive(Clone)]
pub struct ApiClient {
    pub client: kube::Client,
    pub server: String,
}

/// Builds a client; `timeout` limits connecting and each read.
pub async fn build(
    settings: &KubernetesSettings,
    timeout: Duration,
) -> Result<ApiClient, StoreError> {
    let mut config = match &settings.kubeconfig {
        Some(path) => {
            let shown = format!("`{}`", path.value.display());
            let kubeconfig =
                Kubeconfig::read_from(&path.value).map_err(|error| unusable(&shown, error))?;
            from_kubeconfig(kubeconfig, settings, &shown).await?
        }
        None if settings.api_endpoint.is_some() => {
            let kubeconfig = synthetic_kubeconfig();
            from_kubeconfig(kubeconfig, settings, "the client configuration").await?
        }
        None => {
            let mut config = kube::Config::incluster()
                .map_err(|error| misconfigured(KubeError::NotInCluster(error)))?;
            if let Some(token) = &settings.token {
                config.auth_info.token = token_overlay(token.expose())?.token;
            }
            if settings.insecure_skip_tls_verify {
                config.accept_invalid_certs = true;
            }
            if let Some(ca_file) = &settings.ca_file {
                config.root_cert_file = Some(ca_file.clone());
            }
            config
        }
    };
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let client = kube::Client::try_from(config)
        .map_err(|error| unusable(&format!("the configuration of {server}"), error))?;
    Ok(ApiClient { client, server })
}

/// A kubeconfig with one empty cluster, user and context, for when only `k8sAPIEndpoint` and
/// friends are set.
fn synthetic_kubeconfig() -> Kubeconfig {
    Kubeconfig {
        clusters: vec![NamedCluster {
            name: "netctl".into(),
            cluster: Some(Cluster::default()),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "netctl".into(),
            auth_info: Some(AuthInfo::default()),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![kube::config::NamedContext {
            name: "netctl".into(),
            context: Some(kube::config::Context {
                cluster: "netctl".into(),
                user: Some("netctl".into()),
                ..kube::config::Context::default()
            }),
            ..kube::config::NamedContext::default()
        }],
        current_context: Some("netctl".into()),
        ..Kubeconfig::default()
    }
}

/// An `AuthInfo` holding only a token, built through serde so that the secret-string type kube uses
/// need not be named here; callers move its `token` field.
fn token_overlay(token: &str) -> Result<AuthInfo, StoreError> {
    serde_json::from_value(json!({ "token": token }))
        .map_err(|error| unusable("k8sAPIToken", error))
}

/// Applies the context choice and the overrides to a kubeconfig and turns it into a client config.
async fn from_kubeconfig(
    mut kubeconfig: Kubeconfig,
    settings: &KubernetesSettings,
    location: &str,
) -> Result<kube::Config, StoreError> {
    let context_name = settings
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| {
            misconfigured(KubeError::NoCurrentContext {
                location: location.to_string(),
            })
        })?;
    let context = kubeconfig
        .contexts
        .iter()
        .find(|context| context.name == context_name)
        .and_then(|context| context.context.clone())
        .ok_or_else(|| {
            misconfigured(KubeError::UnknownContext {
                location: location.to_string(),
                name: context_name.clone(),
            })
        })?;
    let has_overrides = settings.api_endpoint.is_some()
        || settings.ca_file.is_some()
        || settings.insecure_skip_tls_verify
        || settings.certificate_file.is_some()
        || settings.token.is_some();
    if has_overrides {
        let cluster = kubeconfig
            .clusters
            .iter_mut()
            .find(|cluster| cluster.name == context.cluster)
            .and_then(|cluster| cluster.cluster.as_mut())
            .ok_or_else(|| {
                misconfigured(KubeError::UnknownCluster {
                    location: location.to_string(),
                    name: context.cluster.clone(),
                })
            })?;
        if let Some(endpoint) = &settings.api_endpoint {
            cluster.server = Some(endpoint.clone());
        }
        if let Some(ca_file) = &settings.ca_file {
            cluster.certificate_authority = Some(ca_file.display().to_string());
            cluster.certificate_authority_data = None;
        }
        if settings.insecure_skip_tls_verify {
            cluster.insecure_skip_tls_verify = Some(true);
        }
        let user_name = context.user.clone().unwrap_or_else(|| "netctl".into());
        if !kubeconfig
            .auth_infos
            .iter()
            .any(|user| user.name == user_name)
        {
            kubeconfig.auth_infos.push(NamedAuthInfo {
                name: user_name.clone(),
                auth_info: Some(AuthInfo::default()),
                ..NamedAuthInfo::default()
            });
        }
        if let Some(user) = kubeconfig
            .auth_infos
            .iter_mut()
            .find(|user| user.name == user_name)
        {
            let auth = user.auth_info.get_or_insert_with(AuthInfo::default);
            if let (Some(certificate), Some(key)) = (&settings.certificate_file, &settings.key_file)
            {
                auth.client_certificate = Some(certificate.display().to_string());
                auth.client_certificate_data = None;
                auth.client_key = Some(key.display().to_string());
                auth.client_key_data = None;
            }
            if let Some(token) = &settings.token {
                auth.token = token_overlay(token.expose())?.token;
                auth.token_file = None;
            }
        }
    }
    let options = KubeConfigOptions {
        context: Some(context_name),
        cluster: None,
        user: None,
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|error| unusable(location, error))
}
