//! The IPAM custom resources' structural schemas for [`super::kube_crd`]: upstream's CRDs of
//! v3.32, written out here from their facts (field names, types, enums, patterns, bounds,
//! `required`): `libcalico-go/config/crd/crd.projectcalico.org_{ipamblocks,blockaffinities,
//! ipamhandles,ipamconfigs}.yaml` and, for v3.32's native API group, `api/config/crd/
//! projectcalico.org_{ipamblocks,blockaffinities,ipamhandles,ipamconfigurations}.yaml`. So a wrong
//! encoding meets what kube-apiserver would answer: `IPAMBlock.crd.projectcalico.org "10-0-0-0-26"
//! is invalid: spec.allocations[0]: Invalid value: "string": spec.allocations[0] in body must be of
//! type integer: "string"`.
//!
//! Defaulting (`default:`) is not applied: netctl always sends the fields that have defaults.

use serde_json::{Value, json};

/// The schema of an IPAM kind of `api_version`, when the server checks it.
pub fn schema(api_version: &str, kind: &str) -> Option<Value> {
    let v3 = match api_version {
        "crd.projectcalico.org/v1" => false,
        "projectcalico.org/v3" => true,
        _ => return None,
    };
    let string = json!({"type": "string"});
    let integer = json!({"type": "integer"});
    let boolean = json!({"type": "boolean"});
    let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let spec = match kind {
        "IPAMBlock" => {
            let affinity = match v3 {
                true => {
                    json!({"type": "string", "pattern": "^(host|virtual):[a-zA-Z0-9\\.\\-_]+$"})
                }
                false => string.clone(),
            };
            json!({
                "type": "object",
                "properties": {
                    "affinity": affinity,
                    "affinityClaimTime": string,
                    "allocations": {"type": "array", "items": {"type": "integer", "nullable": true}},
                    "attributes": {"type": "array", "items": {"type": "object", "properties": {
                        "alternateOwnerAttrs": string_map,
                        "handle_id": string,
                        "secondary": string_map,
                    }}},
                    "cidr": string,
                    "deleted": boolean,
                    "sequenceNumber": integer,
                    "sequenceNumberForAllocation": {"type": "object", "additionalProperties": integer},
                    "strictAffinity": boolean,
                    "unallocated": {"type": "array", "items": integer},
                },
                "required": ["allocations", "attributes", "cidr", "strictAffinity", "unallocated"],
            })
        }
        "BlockAffinity" => {
            let (deleted, state) = match v3 {
                true => (
                    boolean.clone(),
                    json!({"type": "string", "enum": ["", "confirmed", "pending", "pendingDeletion"]}),
                ),
                false => (string.clone(), string.clone()),
            };
            json!({
                "type": "object",
                "properties": {"cidr": string, "deleted": deleted, "node": string, "state": state, "type": string},
                "required": ["cidr", "deleted", "node", "state"],
            })
        }
        "IPAMHandle" => json!({
            "type": "object",
            "properties": {
                "block": {"type": "object", "additionalProperties": integer},
                "deleted": boolean,
                "handleID": string,
            },
            "required": ["block", "handleID"],
        }),
        "IPAMConfig" if !v3 => config_spec(2147483647),
        "IPAMConfiguration" if v3 => config_spec(1000000),
        _ => return None,
    };
    Some(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
        },
    }))
}

fn config_spec(maximum: i64) -> Value {
    json!({
        "type": "object",
        "properties": {
            "autoAllocateBlocks": {"type": "boolean"},
            "kubeVirtVMAddressPersistence": {"type": "string", "enum": ["Enabled", "Disabled"]},
            "maxBlocksPerHost": {"type": "integer", "minimum": 0, "maximum": maximum},
            "strictAffinity": {"type": "boolean"},
        },
        "required": ["autoAllocateBlocks", "strictAffinity"],
    })
}
