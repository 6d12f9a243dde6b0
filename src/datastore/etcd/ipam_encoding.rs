//! IPAM in etcd, as upstream keeps it (`libcalico-go/lib/backend/model/{block,block_affinity,
//! ipam_handle,ipam_config}.go`): the keys and the JSON of blocks, affinities, handles and the
//! allocator's configuration. Pure functions; `ipam.rs` does the reading and writing.
//!
//! Keys: `/calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26` (blocks),
//! `/calico/ipam/v2/host/<node>/ipv4/block/10.0.0.0-26` and, from v3.30,
//! `/calico/ipam/v2/virtual/<node>/...` (affinities), `/calico/ipam/v2/handle/<id>` (handles),
//! `/calico/ipam/v2/config` (the allocator's configuration).
//!
//! Every release's block reads: `handle_id`/`secondary` written as `null` (up to v3.31) or left
//! out (v3.32+), `affinity_claim_time` and `alternateOwnerAttrs` (v3.32), `releasedAt` (upstream's
//! unreleased v3.33 line), the deprecated `hostAffinity`. A block is written as the cluster's
//! release writes it ([`BlockEncoding`]); the fields upstream writes without `omitempty` are
//! always written, in upstream's field order. A value that does not decode is damage, reported with
//! its key; an affinity stored with no value (old releases) reads as `{}`, as upstream reads it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ipam::{
    AffinityType, AllocationAttribute, AllocationBlock, BlockAffinity, BlockEncoding, Cidr,
    IpVersion, IpamConfig, IpamHandle,
};

/// Everything IPAM keeps in etcd.
pub const IPAM_ROOT: &str = "/calico/ipam/v2/";

/// Where blocks live.
pub const BLOCK_ROOT: &str = "/calico/ipam/v2/assignment/";

/// Where handles live.
pub const HANDLE_ROOT: &str = "/calico/ipam/v2/handle/";

/// The allocator's configuration.
pub const CONFIG_KEY: &str = "/calico/ipam/v2/config";

/// The key of the block of `cidr`.
pub fn block_key(cidr: &Cidr) -> String {
    format!(
        "{BLOCK_ROOT}ipv{}/block/{}",
        cidr.version().number(),
        cidr.key_form()
    )
}

/// The CIDR a block key names, if it is one.
pub fn block_cidr_of_key(key: &str) -> Option<Cidr> {
    let rest = key.strip_prefix(BLOCK_ROOT)?;
    let (version, name) = rest.split_once("/block/")?;
    if !matches!(version, "ipv4" | "ipv6") || name.contains('/') {
        return None;
    }
    Cidr::from_key_form(name).ok()
}

/// The key of a block affinity.
pub fn affinity_key(affinity_type: AffinityType, node: &str, cidr: &Cidr) -> String {
    format!(
        "{IPAM_ROOT}{}/{node}/ipv{}/block/{}",
        affinity_type.as_str(),
        cidr.version().number(),
        cidr.key_form()
    )
}

/// The type, node and CIDR an affinity key names.
pub fn affinity_of_key(key: &str) -> Option<(AffinityType, String, Cidr)> {
    let rest = key.strip_prefix(IPAM_ROOT)?;
    let mut parts = rest.split('/');
    let affinity_type = AffinityType::parse(parts.next()?)?;
    let node = parts.next()?.to_string();
    let version = parts.next()?;
    let (Some("block"), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    let cidr = Cidr::from_key_form(name).ok()?;
    let expected = match cidr.version() {
        IpVersion::V4 => "ipv4",
        IpVersion::V6 => "ipv6",
    };
    (version == expected && !node.is_empty()).then_some((affinity_type, node, cidr))
}

/// The key of handle `id`.
pub fn handle_key(id: &str) -> String {
    format!("{HANDLE_ROOT}{id}")
}

/// The handle ID a handle key names.
pub fn handle_id_of_key(key: &str) -> Option<&str> {
    key.strip_prefix(HANDLE_ROOT)
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// The block as etcd stores it, for reading: every release's fields.
#[derive(Debug, Deserialize)]
struct StoredBlock {
    #[serde(default)]
    cidr: Option<String>,
    #[serde(default)]
    affinity: Option<String>,
    #[serde(default)]
    affinity_claim_time: Option<String>,
    #[serde(default)]
    allocations: Option<Vec<Option<i64>>>,
    #[serde(default)]
    unallocated: Option<Vec<i64>>,
    #[serde(default)]
    attributes: Option<Vec<StoredAttribute>>,
    #[serde(rename = "sequenceNumber", default)]
    sequence_number: u64,
    #[serde(rename = "sequenceNumberForAllocation", default)]
    sequence_number_for_allocation: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    deleted: bool,
    #[serde(rename = "hostAffinity", default)]
    host_affinity: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoredAttribute {
    #[serde(default)]
    handle_id: Option<String>,
    #[serde(default)]
    secondary: Option<BTreeMap<String, String>>,
    #[serde(rename = "alternateOwnerAttrs", default)]
    alternate_owner_attrs: Option<BTreeMap<String, String>>,
    #[serde(rename = "releasedAt", default)]
    released_at: Option<String>,
}

/// Decodes a block's value; the error says what is wrong with it.
pub fn decode_block(value: &[u8]) -> Result<AllocationBlock, String> {
    let stored: StoredBlock =
        serde_json::from_slice(value).map_err(|error| format!("its JSON is damaged: {error}"))?;
    let cidr = match stored.cidr.as_deref() {
        Some(text) => {
            Some(Cidr::parse(text).map_err(|error| format!("its `cidr` is not valid: {error}"))?)
        }
        None => None,
    };
    Ok(AllocationBlock {
        cidr,
        affinity: stored.affinity,
        affinity_claim_time: stored.affinity_claim_time,
        allocations: stored.allocations.unwrap_or_default(),
        unallocated: stored.unallocated.unwrap_or_default(),
        attributes: stored
            .attributes
            .unwrap_or_default()
            .into_iter()
            .map(|attribute| AllocationAttribute {
                handle_id: attribute.handle_id,
                active_owner: attribute.secondary,
                alternate_owner: attribute.alternate_owner_attrs,
                released_at: attribute.released_at,
            })
            .collect(),
        sequence_number: stored.sequence_number,
        sequence_number_for_allocation: stored.sequence_number_for_allocation,
        deleted: stored.deleted,
        host_affinity: stored.host_affinity,
        strict_affinity: false,
    })
}

/// Encodes a block as a cluster of `encoding` writes it.
pub fn encode_block(block: &AllocationBlock, encoding: BlockEncoding) -> Vec<u8> {
    serde_json::to_vec(&BlockJson { block, encoding }).unwrap_or_default()
}

/// A block as the JSON value [`encode_block`] writes (for files that hold it as JSON).
pub fn block_value(block: &AllocationBlock, encoding: BlockEncoding) -> Value {
    serde_json::to_value(BlockJson { block, encoding }).unwrap_or(Value::Null)
}

/// A block serialized as a cluster of `encoding` writes it, in upstream's field order, without
/// building a JSON value first (a block of 64 addresses has 64 attributes).
pub struct BlockJson<'a> {
    pub block: &'a AllocationBlock,
    pub encoding: BlockEncoding,
}

impl Serialize for BlockJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let block = self.block;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("cidr", &block.cidr.map(|cidr| cidr.to_string()))?;
        map.serialize_entry("affinity", &block.affinity)?;
        if let (BlockEncoding::OmitEmpty, Some(time)) = (self.encoding, &block.affinity_claim_time)
        {
            map.serialize_entry("affinity_claim_time", time)?;
        }
        map.serialize_entry("allocations", &block.allocations)?;
        map.serialize_entry("unallocated", &block.unallocated)?;
        map.serialize_entry("attributes", &AttributesJson(block, self.encoding))?;
        map.serialize_entry("sequenceNumber", &block.sequence_number)?;
        map.serialize_entry(
            "sequenceNumberForAllocation",
            &block.sequence_number_for_allocation,
        )?;
        map.serialize_entry("deleted", &block.deleted)?;
        if let Some(host) = block.host_affinity.as_ref().filter(|host| !host.is_empty()) {
            map.serialize_entry("hostAffinity", host)?;
        }
        map.end()
    }
}

struct AttributesJson<'a>(&'a AllocationBlock, BlockEncoding);

impl Serialize for AttributesJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.0
                .attributes
                .iter()
                .map(|attribute| AttributeJson(attribute, self.1)),
        )
    }
}

struct AttributeJson<'a>(&'a AllocationAttribute, BlockEncoding);

fn non_empty(map: &Option<BTreeMap<String, String>>) -> Option<&BTreeMap<String, String>> {
    map.as_ref().filter(|map| !map.is_empty())
}

impl Serialize for AttributeJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let AttributeJson(attribute, encoding) = self;
        let mut map = serializer.serialize_map(None)?;
        match encoding {
            BlockEncoding::NullAttributes => {
                map.serialize_entry("handle_id", &attribute.handle_id)?;
                map.serialize_entry("secondary", &attribute.active_owner)?;
            }
            BlockEncoding::OmitEmpty => {
                if let Some(handle) = &attribute.handle_id {
                    map.serialize_entry("handle_id", handle)?;
                }
                if let Some(owner) = non_empty(&attribute.active_owner) {
                    map.serialize_entry("secondary", owner)?;
                }
                if let Some(owner) = non_empty(&attribute.alternate_owner) {
                    map.serialize_entry("alternateOwnerAttrs", owner)?;
                }
            }
        }
        // Kept as read: only upstream's unreleased v3.33 line writes it.
        if let Some(time) = &attribute.released_at {
            map.serialize_entry("releasedAt", time)?;
        }
        map.end()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoredAffinity {
    #[serde(default)]
    state: String,
    #[serde(default)]
    deleted: bool,
}

/// Decodes an affinity stored at `key`.
pub fn decode_affinity(key: &str, value: &[u8]) -> Result<BlockAffinity, String> {
    let (affinity_type, node, cidr) =
        affinity_of_key(key).ok_or_else(|| "it is not an affinity key".to_string())?;
    let stored: StoredAffinity = if value.is_empty() {
        StoredAffinity::default()
    } else {
        serde_json::from_slice(value).map_err(|error| format!("its JSON is damaged: {error}"))?
    };
    Ok(BlockAffinity {
        cidr,
        node,
        affinity_type,
        state: stored.state,
        deleted: stored.deleted,
    })
}

/// Encodes an affinity's value (its key holds the rest).
pub fn encode_affinity(affinity: &BlockAffinity) -> Vec<u8> {
    serde_json::to_vec(&StoredAffinity {
        state: affinity.state.clone(),
        deleted: affinity.deleted,
    })
    .unwrap_or_default()
}

#[derive(Debug, Deserialize, Serialize)]
struct StoredHandle {
    #[serde(default)]
    block: Option<BTreeMap<String, i64>>,
    #[serde(default)]
    deleted: bool,
}

/// Decodes the handle stored at `key`.
pub fn decode_handle(key: &str, value: &[u8]) -> Result<IpamHandle, String> {
    let id = handle_id_of_key(key).ok_or_else(|| "it is not a handle key".to_string())?;
    let stored: StoredHandle =
        serde_json::from_slice(value).map_err(|error| format!("its JSON is damaged: {error}"))?;
    Ok(IpamHandle {
        id: id.to_string(),
        blocks: stored.block.unwrap_or_default(),
        deleted: stored.deleted,
    })
}

/// Encodes a handle's value.
pub fn encode_handle(handle: &IpamHandle) -> Vec<u8> {
    serde_json::to_vec(&StoredHandle {
        block: Some(handle.blocks.clone()),
        deleted: handle.deleted,
    })
    .unwrap_or_default()
}

/// The allocator's configuration as stored: every field `omitempty`, so `false`, `0` and unset
/// are all absent.
#[derive(Debug, Default, Deserialize, Serialize)]
struct StoredConfig {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    strict_affinity: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    auto_allocate_blocks: bool,
    #[serde(rename = "maxBlocksPerHost", default, skip_serializing_if = "is_zero")]
    max_blocks_per_host: i64,
    #[serde(
        rename = "kubeVirtVMAddressPersistence",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    kubevirt_vm_address_persistence: Option<String>,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// Decodes the allocator's configuration.
pub fn decode_config(value: &[u8]) -> Result<IpamConfig, String> {
    let stored: StoredConfig =
        serde_json::from_slice(value).map_err(|error| format!("its JSON is damaged: {error}"))?;
    Ok(IpamConfig {
        strict_affinity: stored.strict_affinity,
        auto_allocate_blocks: stored.auto_allocate_blocks,
        max_blocks_per_host: stored.max_blocks_per_host,
        kubevirt_vm_address_persistence: stored.kubevirt_vm_address_persistence,
    })
}

/// Encodes the allocator's configuration.
pub fn encode_config(config: &IpamConfig) -> Vec<u8> {
    serde_json::to_vec(&StoredConfig {
        strict_affinity: config.strict_affinity,
        auto_allocate_blocks: config.auto_allocate_blocks,
        max_blocks_per_host: config.max_blocks_per_host,
        kubevirt_vm_address_persistence: config.kubevirt_vm_address_persistence.clone(),
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block as v3.31's allocator writes it (nulls for unset attribute fields).
    const V3_31_BLOCK: &str = r#"{"cidr":"10.65.79.0/30","affinity":"host:node-1","allocations":[0,null,1,null],"unallocated":[1,3],"attributes":[{"handle_id":"k8s-pod-network.1a2b","secondary":{"namespace":"default","node":"node-1","pod":"web-0","timestamp":"2026-08-01 10:00:00.000000001 +0000 UTC"}},{"handle_id":"ipip-tunnel-addr-node-1","secondary":{"node":"node-1","type":"ipipTunnelAddress"}}],"sequenceNumber":1754042400000000002,"sequenceNumberForAllocation":{"0":1754042400000000000,"2":1754042400000000001},"deleted":false}"#;

    /// The same block as v3.32 writes it, with a claim time and a migrating VM's alternate owner.
    const V3_32_BLOCK: &str = r#"{"cidr":"10.65.79.0/30","affinity":"host:node-1","affinity_claim_time":"2026-08-01T10:00:00Z","allocations":[0,null,1,null],"unallocated":[1,3],"attributes":[{"handle_id":"k8s-pod-network.1a2b","secondary":{"namespace":"default","node":"node-1","pod":"virt-launcher-vm1-abcde","vmi-name":"vm1"},"alternateOwnerAttrs":{"namespace":"default","node":"node-2","pod":"virt-launcher-vm1-fghij"}},{}],"sequenceNumber":7,"sequenceNumberForAllocation":{"0":5,"2":6},"deleted":false}"#;

    #[test]
    fn every_release_reads_and_writes_back_byte_for_byte() {
        let block = decode_block(V3_31_BLOCK.as_bytes()).unwrap();
        assert_eq!(block.allocated_count(), 2);
        assert!(block.damage().is_empty());
        assert_eq!(
            String::from_utf8(encode_block(&block, BlockEncoding::NullAttributes)).unwrap(),
            V3_31_BLOCK
        );
        let block = decode_block(V3_32_BLOCK.as_bytes()).unwrap();
        assert_eq!(
            block.attributes[0].alternate_owner.as_ref().unwrap()["node"],
            "node-2"
        );
        assert_eq!(
            String::from_utf8(encode_block(&block, BlockEncoding::OmitEmpty)).unwrap(),
            V3_32_BLOCK
        );
        // v3.32's block written for a v3.31 cluster: what v3.31 writes (nulls, no v3.32 fields).
        let older = String::from_utf8(encode_block(&block, BlockEncoding::NullAttributes)).unwrap();
        assert!(
            older.contains(r#"{"handle_id":null,"secondary":null}"#),
            "{older}"
        );
        assert!(!older.contains("alternateOwnerAttrs") && !older.contains("affinity_claim_time"));
    }

    #[test]
    fn v3_33_released_at_and_old_host_affinity_are_kept() {
        let text = r#"{"cidr":"10.0.0.0/31","affinity":null,"allocations":[0,null],"unallocated":[1],"attributes":[{"handle_id":"h","releasedAt":"2026-08-20T10:00:00Z"}],"sequenceNumber":0,"sequenceNumberForAllocation":null,"deleted":false,"hostAffinity":"old-node"}"#;
        let block = decode_block(text.as_bytes()).unwrap();
        assert_eq!(block.host_affinity.as_deref(), Some("old-node"));
        assert_eq!(
            String::from_utf8(encode_block(&block, BlockEncoding::OmitEmpty)).unwrap(),
            text
        );
    }

    #[test]
    fn damaged_values_are_errors_not_panics() {
        for bad in [
            &b"{\"cidr\":\"10.0.0.0/26\",\"allocations\":[\"x\"]"[..],
            b"{\"cidr\":\"10.0.0.0/99\"}",
            b"not json",
        ] {
            assert!(decode_block(bad).is_err());
        }
        let block =
            decode_block(br#"{"cidr":"10.0.0.0/30","allocations":[0],"attributes":[]}"#).unwrap();
        assert_eq!(block.damage().len(), 2);
    }

    #[test]
    fn keys_are_upstreams() {
        let cidr = Cidr::parse("10.65.79.0/26").unwrap();
        assert_eq!(
            block_key(&cidr),
            "/calico/ipam/v2/assignment/ipv4/block/10.65.79.0-26"
        );
        assert_eq!(
            block_cidr_of_key("/calico/ipam/v2/assignment/ipv4/block/10.65.79.0-26"),
            Some(cidr)
        );
        let v6 = Cidr::parse("fd00::/122").unwrap();
        assert_eq!(
            block_key(&v6),
            "/calico/ipam/v2/assignment/ipv6/block/fd00::-122"
        );
        let key = affinity_key(AffinityType::Virtual, "vm-host", &cidr);
        assert_eq!(
            key,
            "/calico/ipam/v2/virtual/vm-host/ipv4/block/10.65.79.0-26"
        );
        assert_eq!(
            affinity_of_key(&key),
            Some((AffinityType::Virtual, "vm-host".to_string(), cidr))
        );
        let affinity =
            decode_affinity("/calico/ipam/v2/host/node-1/ipv4/block/10.65.79.0-26", b"").unwrap();
        assert_eq!((affinity.state.as_str(), affinity.deleted), ("", false));
        assert_eq!(handle_key("h1"), "/calico/ipam/v2/handle/h1");
    }

    #[test]
    fn config_and_handles_are_upstreams_json() {
        let config = decode_config(
            br#"{"auto_allocate_blocks":true,"kubeVirtVMAddressPersistence":"Enabled"}"#,
        )
        .unwrap();
        assert!(config.auto_allocate_blocks && !config.strict_affinity);
        assert_eq!(
            String::from_utf8(encode_config(&config)).unwrap(),
            r#"{"auto_allocate_blocks":true,"kubeVirtVMAddressPersistence":"Enabled"}"#
        );
        let handle = decode_handle(
            "/calico/ipam/v2/handle/leaked-handle",
            br#"{"block":{"10.65.79.0/26":1},"deleted":false}"#,
        )
        .unwrap();
        assert_eq!(handle.id, "leaked-handle");
        assert_eq!(
            String::from_utf8(encode_handle(&handle)).unwrap(),
            r#"{"block":{"10.65.79.0/26":1},"deleted":false}"#
        );
    }
}
