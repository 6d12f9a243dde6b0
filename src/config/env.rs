//! The process environment, captured once, and the `NET_` prefix rule.
//!
//! This is the only place netctl reads environment variables (`STYLE.md`: resolve everything before
//! acting). `main` captures the environment into an [`Environment`]; tests build one from pairs, so no
//! test depends on the developer's shell.

use std::collections::BTreeMap;

/// The prefix every configuration variable may carry, for hosts where the plain name clashes with
/// something else (`README.md`, "Configuration"). Upstream uses `CALICO_` the same way
/// (`libcalico-go/lib/apiconfig/load.go`, `envconfig.Process("calico", ..)`).
pub const PREFIX: &str = "NET_";

/// A snapshot of environment variables.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    variables: BTreeMap<String, String>,
}

/// A value found in the environment, with the variable name it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvValue {
    pub variable: String,
    pub value: String,
}

impl Environment {
    /// Captures the current process environment. Variables that are not valid UTF-8 are ignored.
    pub fn capture() -> Environment {
        Environment {
            variables: std::env::vars_os()
                .filter_map(|(key, value)| {
                    Some((key.into_string().ok()?, value.into_string().ok()?))
                })
                .collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment {
            variables: pairs
                .into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
        }
    }

    /// Reads `NET_<name>`, falling back to `<name>`. The prefixed variable wins whenever it is set, even
    /// to an empty string, as upstream's envconfig does: "set" is what counts, not "non-empty".
    pub fn lookup(&self, name: &str) -> Option<EnvValue> {
        let prefixed = format!("{PREFIX}{name}");
        [prefixed, name.to_string()]
            .into_iter()
            .find_map(|variable| {
                let value = self.variables.get(&variable)?.clone();
                Some(EnvValue { variable, value })
            })
    }

    /// Every variable, by name.
    pub fn variables(&self) -> impl Iterator<Item = (&str, &str)> {
        self.variables
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }

    /// Reads a variable by its exact name, with no prefix rule.
    pub fn exact(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixed_variable_wins_even_when_empty() {
        let env =
            Environment::from_pairs([("ETCD_ENDPOINTS", "http://a:1"), ("NET_ETCD_ENDPOINTS", "")]);
        let found = env.lookup("ETCD_ENDPOINTS").unwrap();
        assert_eq!(found.variable, "NET_ETCD_ENDPOINTS");
        assert_eq!(found.value, "");
    }

    #[test]
    fn plain_variable_is_the_fallback() {
        let env = Environment::from_pairs([("ETCD_ENDPOINTS", "http://a:1")]);
        assert_eq!(
            env.lookup("ETCD_ENDPOINTS").unwrap().variable,
            "ETCD_ENDPOINTS"
        );
        assert_eq!(env.lookup("ETCD_USERNAME"), None);
    }
}
