//! The secrets netctl itself holds, for the [`super::scrub::Scrubber`] to search every file for:
//! the etcd password and client key (inline or the key file's contents) and the Kubernetes token
//! and client key named by the client configuration, and the tokens, passwords and client keys of
//! the users in the kubeconfig it uses. A file that cannot be read adds nothing (the bundle is
//! still made; the private-key rule still applies to what it would have held).

use std::path::Path;

use serde_json::Value;

use crate::config::{ClientConfig, ConfigOption};

/// Every secret value the configuration and the kubeconfig at `kubeconfig` name.
pub fn known_secrets(config: Option<&ClientConfig>, kubeconfig: Option<&Path>) -> Vec<String> {
    let mut secrets = Vec::new();
    if let Some(config) = config {
        for option in [
            ConfigOption::EtcdPassword,
            ConfigOption::EtcdKey,
            ConfigOption::K8sApiToken,
        ] {
            if let Some(value) = config.option(option) {
                secrets.push(value.value.clone());
            }
        }
        for option in [ConfigOption::EtcdKeyFile, ConfigOption::K8sKeyFile] {
            if let Some(path) = config.option(option)
                && let Ok(text) = std::fs::read_to_string(&path.value)
            {
                secrets.push(text);
            }
        }
    }
    if let Some(path) = kubeconfig
        && let Ok(text) = std::fs::read_to_string(path)
    {
        secrets.extend(kubeconfig_secrets(&text, path.parent()));
    }
    secrets.retain(|secret| !secret.trim().is_empty());
    secrets
}

/// The users' `token`, `password`, `client-key-data` and `client-key` file contents of a
/// kubeconfig (`client-key` relative to the kubeconfig's directory, as kubectl reads it).
fn kubeconfig_secrets(text: &str, directory: Option<&Path>) -> Vec<String> {
    let Ok(documents) = crate::yaml::read_values(text) else {
        return Vec::new();
    };
    let mut secrets = Vec::new();
    for document in documents {
        let users = document
            .get("users")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for user in users {
            let Some(user) = user.get("user") else {
                continue;
            };
            for field in ["token", "password", "client-key-data"] {
                if let Some(value) = user.get(field).and_then(Value::as_str) {
                    secrets.push(value.to_string());
                }
            }
            if let Some(file) = user.get("client-key").and_then(Value::as_str) {
                let path = match directory {
                    Some(directory) => directory.join(file),
                    None => file.into(),
                };
                if let Ok(key) = std::fs::read_to_string(path) {
                    secrets.push(key);
                }
            }
        }
    }
    secrets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubeconfig_gives_its_users_tokens_passwords_and_keys() {
        let text = "apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: abc.def.ghi\n- name: b\n  user:\n    username: admin\n    password: hunter22\n    client-key-data: S0VZ\n";
        assert_eq!(
            kubeconfig_secrets(text, None),
            ["abc.def.ghi", "hunter22", "S0VZ"]
        );
        assert!(kubeconfig_secrets("not: [valid", None).is_empty());
    }
}
