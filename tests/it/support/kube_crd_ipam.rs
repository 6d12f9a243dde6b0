//! The structural schemas of the IPAM custom resources, which the test API server checks bodies
//! against ([`super::kube_crd`] holds the checking).
//!
//! The schemas are upstream's CRDs of v3.32, written out here from their facts:
//! `libcalico-go/config/crd/crd.projectcalico.org_{ipamblocks,blockaffinities,ipamhandles,
//! ipamconfigs}.yaml` and `api/config/crd/projectcalico.org_{ipamblocks,blockaffinities,
//! ipamhandles,ipamconfigurations}.yaml`. Defaulting (`default:`) is not applied: netctl always
//! sends the fields that have defaults.

use serde_json::{Value, json};

/// The schema of an IPAM kind of `api_version`, when the server checks it.
pub fn schema_for(api_version: &str, kind: &str) -> Option<Value> {
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
            "metadata": {"type": "object", "x-preserve": true},
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
