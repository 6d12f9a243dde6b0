//! The datastore types a client configuration can name (`datastoreType`: `kubernetes` or `etcdv3`).
//!
//! A setting, so it lives with the configuration; `datastore` connects to the type named here, and
//! runbooks and plans use it as a fact. This file holds the value and its text forms only.

/// The datastore types of the client configuration (`datastoreType`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub enum DatastoreType {
    #[serde(rename = "kubernetes")]
    Kubernetes,
    #[serde(rename = "etcdv3")]
    EtcdV3,
}

impl DatastoreType {
    pub fn as_str(self) -> &'static str {
        match self {
            DatastoreType::Kubernetes => "kubernetes",
            DatastoreType::EtcdV3 => "etcdv3",
        }
    }
}

impl std::fmt::Display for DatastoreType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DatastoreType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "kubernetes" => Ok(DatastoreType::Kubernetes),
            "etcdv3" => Ok(DatastoreType::EtcdV3),
            other => Err(other.to_string()),
        }
    }
}
