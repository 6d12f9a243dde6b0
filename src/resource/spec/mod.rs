//! Typed specs of every kind netctl manages, as upstream defines them in the lines v3.27 … v3.32 (one
//! set of types: each field added or removed after v3.27.0 carries the releases that have it, see
//! `resource::availability`), and the strict decoding of a resource's JSON spec into them.
//!
//! Decoding is strict (unknown fields are errors, as upstream's `UnmarshalStrict`) and reports the
//! path of the offending field, e.g. `spec.ingress[0].destination.prots`. Values that upstream
//! accepts as number-or-string are kept as written (see [`numorstring`]) so that one bad port does not
//! hide the other problems of a document: checking them is the job of `validate.rs`. This module
//! does no defaulting and no I/O.

pub mod bgp;
pub mod endpoint;
pub mod felix;
pub mod ipam;
pub mod ippool;
pub mod kube_controllers;
pub mod misc;
pub mod node;
pub mod node_status;
pub mod numorstring;
pub mod policy;
pub mod rule;
pub mod schema;

use serde::Deserializer;
use serde::de::DeserializeOwned;

use super::Kind;
use crate::yaml::{Node, NodeValue};

pub use bgp::{BgpConfigurationSpec, BgpFilterRule, BgpFilterSpec, BgpPeerSpec};
pub use endpoint::{HostEndpointSpec, WorkloadEndpointSpec};
pub use felix::FelixConfigurationSpec;
pub use ipam::IpamConfigurationSpec;
pub use ippool::{IpPoolSpec, IpReservationSpec};
pub use kube_controllers::KubeControllersConfigurationSpec;
pub use misc::{ClusterInformationSpec, NetworkSetSpec, ProfileSpec, TierSpec};
pub use node::NodeSpec;
pub use node_status::CalicoNodeStatusSpec;
pub use policy::{
    GlobalNetworkPolicySpec, NetworkPolicySpec, StagedGlobalNetworkPolicySpec,
    StagedKubernetesNetworkPolicySpec, StagedNetworkPolicySpec,
};
pub use rule::{EntityRule, Rule};
pub use schema::document_schema;

/// A decoded spec of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum TypedSpec {
    BgpConfiguration(BgpConfigurationSpec),
    BgpFilter(BgpFilterSpec),
    BgpPeer(BgpPeerSpec),
    CalicoNodeStatus(CalicoNodeStatusSpec),
    ClusterInformation(ClusterInformationSpec),
    FelixConfiguration(Box<FelixConfigurationSpec>),
    GlobalNetworkPolicy(GlobalNetworkPolicySpec),
    GlobalNetworkSet(NetworkSetSpec),
    HostEndpoint(HostEndpointSpec),
    IpamConfiguration(IpamConfigurationSpec),
    IpPool(IpPoolSpec),
    IpReservation(IpReservationSpec),
    KubeControllersConfiguration(KubeControllersConfigurationSpec),
    NetworkPolicy(NetworkPolicySpec),
    NetworkSet(NetworkSetSpec),
    Node(NodeSpec),
    Profile(ProfileSpec),
    StagedGlobalNetworkPolicy(StagedGlobalNetworkPolicySpec),
    StagedKubernetesNetworkPolicy(StagedKubernetesNetworkPolicySpec),
    StagedNetworkPolicy(StagedNetworkPolicySpec),
    Tier(TierSpec),
    WorkloadEndpoint(WorkloadEndpointSpec),
}

/// Why a spec could not be decoded: the path of the field (`spec.…`) and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub path: String,
    pub reason: String,
}

impl TypedSpec {
    /// Decodes the JSON spec of a resource of `kind`. A missing (`null`) spec is an empty one.
    pub fn decode(kind: Kind, spec: &serde_json::Value) -> Result<TypedSpec, DecodeError> {
        match spec {
            serde_json::Value::Null => {
                TypedSpec::decode_from(kind, &Node::new(1, 1, NodeValue::Mapping(Vec::new())))
            }
            spec => TypedSpec::decode_from(kind, spec),
        }
    }

    /// Decodes the spec of a resource of `kind` straight from the document read (normalised by
    /// the kind's schema), as [`TypedSpec::decode`] decodes the JSON value it stands for. A missing
    /// spec is an empty one.
    pub fn decode_node(kind: Kind, spec: Option<&Node<'_>>) -> Result<TypedSpec, DecodeError> {
        match spec {
            Some(spec) if !spec.is_null() => TypedSpec::decode_from(kind, spec),
            _ => TypedSpec::decode_from(kind, &Node::new(1, 1, NodeValue::Mapping(Vec::new()))),
        }
    }

    fn decode_from<'de, D>(kind: Kind, spec: D) -> Result<TypedSpec, DecodeError>
    where
        D: Deserializer<'de, Error = serde_json::Error> + Copy,
    {
        Ok(match kind {
            Kind::BgpConfiguration => TypedSpec::BgpConfiguration(decode_strict(spec)?),
            Kind::BgpFilter => TypedSpec::BgpFilter(decode_strict(spec)?),
            Kind::BgpPeer => TypedSpec::BgpPeer(decode_strict(spec)?),
            Kind::CalicoNodeStatus => TypedSpec::CalicoNodeStatus(decode_strict(spec)?),
            Kind::ClusterInformation => TypedSpec::ClusterInformation(decode_strict(spec)?),
            Kind::FelixConfiguration => {
                TypedSpec::FelixConfiguration(Box::new(decode_strict(spec)?))
            }
            Kind::GlobalNetworkPolicy => TypedSpec::GlobalNetworkPolicy(decode_strict(spec)?),
            Kind::GlobalNetworkSet => TypedSpec::GlobalNetworkSet(decode_strict(spec)?),
            Kind::HostEndpoint => TypedSpec::HostEndpoint(decode_strict(spec)?),
            Kind::IpamConfiguration => TypedSpec::IpamConfiguration(decode_strict(spec)?),
            Kind::IpPool => TypedSpec::IpPool(decode_strict(spec)?),
            Kind::IpReservation => TypedSpec::IpReservation(decode_strict(spec)?),
            Kind::KubeControllersConfiguration => {
                TypedSpec::KubeControllersConfiguration(decode_strict(spec)?)
            }
            Kind::NetworkPolicy => TypedSpec::NetworkPolicy(decode_strict(spec)?),
            Kind::NetworkSet => TypedSpec::NetworkSet(decode_strict(spec)?),
            Kind::Node => TypedSpec::Node(decode_strict(spec)?),
            Kind::Profile => TypedSpec::Profile(decode_strict(spec)?),
            Kind::StagedGlobalNetworkPolicy => {
                TypedSpec::StagedGlobalNetworkPolicy(decode_strict(spec)?)
            }
            Kind::StagedKubernetesNetworkPolicy => {
                TypedSpec::StagedKubernetesNetworkPolicy(decode_strict(spec)?)
            }
            Kind::StagedNetworkPolicy => TypedSpec::StagedNetworkPolicy(decode_strict(spec)?),
            Kind::Tier => TypedSpec::Tier(decode_strict(spec)?),
            Kind::WorkloadEndpoint => TypedSpec::WorkloadEndpoint(decode_strict(spec)?),
        })
    }

    /// The spec as JSON, as it is written back to the resource (and so to the datastore).
    pub fn to_value(&self) -> serde_json::Value {
        let value = match self {
            TypedSpec::BgpConfiguration(spec) => serde_json::to_value(spec),
            TypedSpec::BgpFilter(spec) => serde_json::to_value(spec),
            TypedSpec::BgpPeer(spec) => serde_json::to_value(spec),
            TypedSpec::CalicoNodeStatus(spec) => serde_json::to_value(spec),
            TypedSpec::ClusterInformation(spec) => serde_json::to_value(spec),
            TypedSpec::FelixConfiguration(spec) => serde_json::to_value(spec),
            TypedSpec::GlobalNetworkPolicy(spec) => serde_json::to_value(spec),
            TypedSpec::GlobalNetworkSet(spec) | TypedSpec::NetworkSet(spec) => {
                serde_json::to_value(spec)
            }
            TypedSpec::HostEndpoint(spec) => serde_json::to_value(spec),
            TypedSpec::IpamConfiguration(spec) => serde_json::to_value(spec),
            TypedSpec::IpPool(spec) => serde_json::to_value(spec),
            TypedSpec::IpReservation(spec) => serde_json::to_value(spec),
            TypedSpec::KubeControllersConfiguration(spec) => serde_json::to_value(spec),
            TypedSpec::NetworkPolicy(spec) => serde_json::to_value(spec),
            TypedSpec::Node(spec) => serde_json::to_value(spec),
            TypedSpec::Profile(spec) => serde_json::to_value(spec),
            TypedSpec::StagedGlobalNetworkPolicy(spec) => serde_json::to_value(spec),
            TypedSpec::StagedKubernetesNetworkPolicy(spec) => serde_json::to_value(spec),
            TypedSpec::StagedNetworkPolicy(spec) => serde_json::to_value(spec),
            TypedSpec::Tier(spec) => serde_json::to_value(spec),
            TypedSpec::WorkloadEndpoint(spec) => serde_json::to_value(spec),
        };
        // Serializing these plain structs into a JSON value cannot fail: every map key is a string
        // and no field has a custom serializer that errors.
        value.unwrap_or(serde_json::Value::Null)
    }
}

/// Decodes `spec` into `T`, turning serde's error into the path of the field and a short reason.
/// The path is tracked only once a decode has failed: the same input fails the same way again.
fn decode_strict<'de, T, D>(spec: D) -> Result<T, DecodeError>
where
    T: DeserializeOwned,
    D: Deserializer<'de, Error = serde_json::Error> + Copy,
{
    if let Ok(decoded) = T::deserialize(spec) {
        return Ok(decoded);
    }
    serde_path_to_error::deserialize(spec).map_err(|error| {
        let path = error.path().to_string();
        let path = if path == "." || path.is_empty() {
            "spec".to_string()
        } else {
            format!("spec.{path}")
        };
        DecodeError {
            path,
            reason: shorten_serde_message(&error.inner().to_string()),
        }
    })
}

/// serde lists every allowed field after an unknown one; for a spec with a hundred fields that
/// drowns the message, so keep the unknown name and suggest the closest allowed one instead.
fn shorten_serde_message(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field ") else {
        return message.to_string();
    };
    let (unknown, expected) = match rest.split_once(", expected") {
        Some((unknown, expected)) => (unknown, expected),
        None => (rest, ""),
    };
    let unknown_name = unknown.trim_matches('`');
    let candidates = expected
        .trim_start_matches(" one of ")
        .split(", ")
        .map(|name| name.trim().trim_matches('`'))
        .filter(|name| !name.is_empty());
    let closest = candidates
        .map(|name| (edit_distance(unknown_name, name), name))
        .filter(|(distance, _)| *distance <= 2)
        .min();
    match closest {
        Some((_, name)) => format!("unknown field (did you mean `{name}`?)"),
        None => "unknown field".to_string(),
    }
}

/// Levenshtein distance, for "did you mean" suggestions on short field names.
fn edit_distance(left: &str, right: &str) -> usize {
    let right: Vec<char> = right.chars().collect();
    let mut previous: Vec<usize> = (0..=right.len()).collect();
    for (i, left_char) in left.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, right_char) in right.iter().enumerate() {
            let substitution = previous[j] + usize::from(left_char != *right_char);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[right.len()]
}

/// Serializes a float without a fraction as an integer (`order: 100`, not `100.0`), as upstream's Go
/// JSON encoder does, so that round-tripped documents keep their look.
pub(crate) mod float {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(number) if number.fract() == 0.0 && number.abs() < 9.0e15 => {
                serializer.serialize_i64(*number as i64)
            }
            Some(number) => serializer.serialize_f64(*number),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<f64>, D::Error> {
        Option::<f64>::deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_field_names_its_path_and_suggests_a_name() {
        let spec = serde_json::json!({
            "ingress": [{"action": "Allow", "destination": {"prots": [80]}}]
        });
        let error = TypedSpec::decode(Kind::GlobalNetworkPolicy, &spec).unwrap_err();
        assert_eq!(error.path, "spec.ingress[0].destination.prots");
        assert_eq!(error.reason, "unknown field (did you mean `ports`?)");
    }

    #[test]
    fn wrong_type_names_its_path() {
        let spec = serde_json::json!({ "cidr": "10.0.0.0/16", "blockSize": "big" });
        let error = TypedSpec::decode(Kind::IpPool, &spec).unwrap_err();
        assert_eq!(error.path, "spec.blockSize");
        assert!(
            error.reason.starts_with("invalid type: string"),
            "{}",
            error.reason
        );
    }

    #[test]
    fn whole_number_orders_keep_their_integer_form() {
        let spec = serde_json::json!({ "order": 100, "selector": "all()" });
        let decoded = TypedSpec::decode(Kind::GlobalNetworkPolicy, &spec).unwrap();
        assert_eq!(decoded.to_value(), spec);
    }
}
