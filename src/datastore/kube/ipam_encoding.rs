//! IPAM on the Kubernetes datastore, as upstream's clients name and encode it
//! (`libcalico-go/lib/backend/k8s/resources/{ipam_block,ipam_affinity_v1,ipam_affinity_v3,
//! ipam_handle,ipam_config_v1}.go`): the custom resources of `crd.projectcalico.org/v1` and, from
//! v3.32, their native `projectcalico.org/v3` forms. Pure functions; `ipam.rs` does the requests.
//!
//! The API group is a parameter ([`ApiGroup`]): which one a cluster uses is decided elsewhere
//! (upstream: `CALICO_API_GROUP` or discovery). The two groups differ in an affinity's `deleted`
//! (the text `"true"`/`"false"` in v1, a boolean in v3), the configuration's kind (`IPAMConfig` /
//! `ipamconfigs` in v1, `IPAMConfiguration` / `ipamconfigurations` in v3) and the UID: v1 objects'
//! UIDs are bit-reversed into the form upstream's clients (and their reports) use, v3 UIDs are
//! used as they are. Object names: a block is its CIDR with dots, colons and the slash as dashes;
//! an affinity `<node>-<block name>` (shortened with a hash past 252 characters); a handle its ID
//! lower-cased; the configuration `default`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::conversion::convert_uid;
use crate::ipam::{
    AffinityType, AllocationAttribute, AllocationBlock, BlockAffinity, Cidr, IpamConfig, IpamHandle,
};

/// Which API group holds the IPAM objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiGroup {
    /// `crd.projectcalico.org/v1`: every release.
    #[default]
    CrdV1,
    /// `projectcalico.org/v3` custom resources (v3.32's native CRDs).
    ProjectcalicoV3,
}

/// The four IPAM object types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpamType {
    Block,
    Affinity,
    Handle,
    Config,
}

impl ApiGroup {
    pub fn group(self) -> &'static str {
        match self {
            ApiGroup::CrdV1 => "crd.projectcalico.org",
            ApiGroup::ProjectcalicoV3 => "projectcalico.org",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            ApiGroup::CrdV1 => "v1",
            ApiGroup::ProjectcalicoV3 => "v3",
        }
    }

    pub fn api_version(self) -> String {
        format!("{}/{}", self.group(), self.version())
    }

    /// The kind and plural of an IPAM type in this group.
    pub fn names(self, ipam_type: IpamType) -> (&'static str, &'static str) {
        match (ipam_type, self) {
            (IpamType::Block, _) => ("IPAMBlock", "ipamblocks"),
            (IpamType::Affinity, _) => ("BlockAffinity", "blockaffinities"),
            (IpamType::Handle, _) => ("IPAMHandle", "ipamhandles"),
            (IpamType::Config, ApiGroup::CrdV1) => ("IPAMConfig", "ipamconfigs"),
            (IpamType::Config, ApiGroup::ProjectcalicoV3) => {
                ("IPAMConfiguration", "ipamconfigurations")
            }
        }
    }

    /// The UID as upstream's clients see it, from the object's.
    pub fn client_uid(self, object_uid: &str) -> String {
        match self {
            ApiGroup::CrdV1 => convert_uid(object_uid),
            ApiGroup::ProjectcalicoV3 => object_uid.to_string(),
        }
    }

    /// The object's UID, from the form clients see (for a delete's precondition).
    pub fn object_uid(self, client_uid: &str) -> String {
        // The conversion is its own inverse.
        self.client_uid(client_uid)
    }

    fn object(self, ipam_type: IpamType, name: &str, revision: Option<&str>, spec: Value) -> Value {
        let (kind, _) = self.names(ipam_type);
        let mut metadata = json!({ "name": name });
        if let Some(revision) = revision {
            metadata["resourceVersion"] = Value::String(revision.to_string());
        }
        json!({
            "apiVersion": self.api_version(),
            "kind": kind,
            "metadata": metadata,
            "spec": spec,
        })
    }
}

/// The object name of the block of `cidr`.
pub fn block_name(cidr: &Cidr) -> String {
    cidr.name_form()
}

/// The object name of handle `id`.
pub fn handle_name(id: &str) -> String {
    id.to_lowercase()
}

/// The object name of the allocator's configuration.
pub const CONFIG_NAME: &str = "default";

/// The object name of an affinity: `<node>-<block name>`, and past 252 characters the node cut
/// and an 11-digit hash added (`ipam_affinity_v1.go: parseKey`).
pub fn affinity_name(node: &str, cidr: &Cidr) -> String {
    let cidr_name = cidr.name_form();
    let name = format!("{node}-{cidr_name}");
    if name.len() < 253 {
        return name;
    }
    let mut cut = 252usize
        .saturating_sub(cidr_name.len() + 13)
        .min(node.len());
    while !node.is_char_boundary(cut) {
        cut -= 1;
    }
    let digest = sha2::Sha256::digest(format!("{node}+{cidr_name}").as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{}-{cidr_name}-{}", &node[..cut], &hex[..11])
}

/// The labels upstream (v3.31+) puts on an affinity so it can be found by node, type and IP
/// version: the node's name hashed (SHA3-256, base32 without padding: a label value holds 63
/// characters, a node name 253).
pub fn affinity_labels(affinity: &BlockAffinity) -> BTreeMap<String, String> {
    let digest = sha3::Sha3_256::digest(affinity.node.as_bytes());
    BTreeMap::from([
        (
            "projectcalico.org/hostname-hash".to_string(),
            base32_no_padding(&digest),
        ),
        (
            "projectcalico.org/affinity-type".to_string(),
            affinity.affinity_type.as_str().to_string(),
        ),
        (
            "projectcalico.org/ip-version".to_string(),
            affinity.cidr.version().number().to_string(),
        ),
    ])
}

fn base32_no_padding(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut text = String::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in bytes {
        buffer = (buffer << 8) | u32::from(*byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            text.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        text.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    text
}

#[derive(Debug, Deserialize)]
struct BlockSpec {
    #[serde(default)]
    cidr: String,
    #[serde(default)]
    affinity: Option<String>,
    #[serde(rename = "affinityClaimTime", default)]
    affinity_claim_time: Option<String>,
    #[serde(default)]
    allocations: Option<Vec<Option<i64>>>,
    #[serde(default)]
    unallocated: Option<Vec<i64>>,
    #[serde(default)]
    attributes: Option<Vec<AttributeSpec>>,
    #[serde(rename = "sequenceNumber", default)]
    sequence_number: u64,
    #[serde(rename = "sequenceNumberForAllocation", default)]
    sequence_number_for_allocation: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    deleted: bool,
    #[serde(rename = "strictAffinity", default)]
    strict_affinity: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct AttributeSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handle_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_empty_map")]
    secondary: Option<BTreeMap<String, String>>,
    #[serde(
        rename = "alternateOwnerAttrs",
        default,
        skip_serializing_if = "is_empty_map"
    )]
    alternate_owner_attrs: Option<BTreeMap<String, String>>,
    #[serde(
        rename = "releasedAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    released_at: Option<String>,
}

fn is_empty_map(map: &Option<BTreeMap<String, String>>) -> bool {
    map.as_ref().is_none_or(BTreeMap::is_empty)
}

/// What an object's metadata gives: name, resourceVersion and the UID as clients see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectIdentity {
    pub name: String,
    pub revision: String,
    pub uid: Option<String>,
}

/// Reads an object's name, resourceVersion and UID.
pub fn identity(group: ApiGroup, object: &Value) -> ObjectIdentity {
    let text = |field: &str| {
        object["metadata"][field]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let uid = text("uid");
    ObjectIdentity {
        name: text("name"),
        revision: text("resourceVersion"),
        uid: (!uid.is_empty()).then(|| group.client_uid(&uid)),
    }
}

fn spec<T: for<'de> Deserialize<'de>>(object: &Value) -> Result<T, String> {
    serde_json::from_value(object.get("spec").cloned().unwrap_or(Value::Null))
        .map_err(|error| format!("its spec is damaged: {error}"))
}

/// Decodes an IPAMBlock object.
pub fn decode_block(object: &Value) -> Result<AllocationBlock, String> {
    let spec: BlockSpec = spec(object)?;
    let cidr = Cidr::parse(&spec.cidr)
        .map_err(|error| format!("its `spec.cidr` is not valid: {error}"))?;
    Ok(AllocationBlock {
        cidr: Some(cidr),
        affinity: spec.affinity,
        affinity_claim_time: spec.affinity_claim_time,
        allocations: spec.allocations.unwrap_or_default(),
        unallocated: spec.unallocated.unwrap_or_default(),
        attributes: spec
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
        sequence_number: spec.sequence_number,
        sequence_number_for_allocation: spec.sequence_number_for_allocation,
        deleted: spec.deleted,
        host_affinity: None,
        strict_affinity: spec.strict_affinity,
    })
}

/// Encodes a block as an IPAMBlock object of `group`, guarded by `revision` when given.
pub fn encode_block(
    group: ApiGroup,
    block: &AllocationBlock,
    cidr: &Cidr,
    revision: Option<&str>,
) -> Value {
    let mut spec = serde_json::Map::new();
    spec.insert("cidr".into(), Value::String(cidr.to_string()));
    if let Some(affinity) = &block.affinity {
        spec.insert("affinity".into(), Value::String(affinity.clone()));
    }
    if let Some(time) = &block.affinity_claim_time {
        spec.insert("affinityClaimTime".into(), Value::String(time.clone()));
    }
    spec.insert("allocations".into(), json!(block.allocations));
    spec.insert("unallocated".into(), json!(block.unallocated));
    let attributes: Vec<AttributeSpec> = block
        .attributes
        .iter()
        .map(|attribute| AttributeSpec {
            handle_id: attribute.handle_id.clone(),
            secondary: attribute.active_owner.clone(),
            alternate_owner_attrs: attribute.alternate_owner.clone(),
            released_at: attribute.released_at.clone(),
        })
        .collect();
    spec.insert("attributes".into(), json!(attributes));
    spec.insert("sequenceNumber".into(), json!(block.sequence_number));
    spec.insert(
        "sequenceNumberForAllocation".into(),
        json!(block.sequence_number_for_allocation),
    );
    spec.insert("deleted".into(), Value::Bool(block.deleted));
    spec.insert("strictAffinity".into(), Value::Bool(block.strict_affinity));
    group.object(
        IpamType::Block,
        &block_name(cidr),
        revision,
        Value::Object(spec),
    )
}

#[derive(Debug, Deserialize)]
struct HandleSpec {
    #[serde(rename = "handleID", default)]
    handle_id: String,
    #[serde(default)]
    block: Option<BTreeMap<String, i64>>,
    #[serde(default)]
    deleted: bool,
}

/// Decodes an IPAMHandle object.
pub fn decode_handle(object: &Value) -> Result<IpamHandle, String> {
    let spec: HandleSpec = spec(object)?;
    if spec.handle_id.is_empty() {
        return Err("its `spec.handleID` is empty".into());
    }
    Ok(IpamHandle {
        id: spec.handle_id,
        blocks: spec.block.unwrap_or_default(),
        deleted: spec.deleted,
    })
}

/// Encodes a handle as an IPAMHandle object of `group`.
pub fn encode_handle(group: ApiGroup, handle: &IpamHandle, revision: Option<&str>) -> Value {
    let spec = json!({
        "handleID": handle.id,
        "block": handle.blocks,
        "deleted": handle.deleted,
    });
    group.object(IpamType::Handle, &handle_name(&handle.id), revision, spec)
}

/// Decodes a BlockAffinity object (v1's `deleted` is text).
pub fn decode_affinity(group: ApiGroup, object: &Value) -> Result<BlockAffinity, String> {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let text = |field: &str| spec[field].as_str().unwrap_or_default().to_string();
    let cidr = Cidr::parse(&text("cidr"))
        .map_err(|error| format!("its `spec.cidr` is not valid: {error}"))?;
    let deleted = match (group, &spec["deleted"]) {
        (_, Value::Null) => false,
        (ApiGroup::CrdV1, Value::String(text)) if text.is_empty() => false,
        (ApiGroup::CrdV1, Value::String(text)) => parse_go_bool(text)
            .ok_or_else(|| format!("its `spec.deleted` `{text}` is not a boolean"))?,
        (ApiGroup::ProjectcalicoV3, Value::Bool(value)) => *value,
        (_, other) => return Err(format!("its `spec.deleted` {other} has the wrong type")),
    };
    // Objects of releases before virtual affinities have no type: they are host affinities.
    let affinity_type = match text("type").as_str() {
        "" => AffinityType::Host,
        other => AffinityType::parse(other)
            .ok_or_else(|| format!("its `spec.type` `{other}` is neither `host` nor `virtual`"))?,
    };
    Ok(BlockAffinity {
        cidr,
        node: text("node"),
        affinity_type,
        state: text("state"),
        deleted,
    })
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Encodes an affinity as a BlockAffinity object of `group`, with upstream's labels when the
/// cluster's release writes them (`labels`, v3.31+).
pub fn encode_affinity(
    group: ApiGroup,
    affinity: &BlockAffinity,
    labels: bool,
    revision: Option<&str>,
) -> Value {
    let deleted = match group {
        ApiGroup::CrdV1 => Value::String(affinity.deleted.to_string()),
        ApiGroup::ProjectcalicoV3 => Value::Bool(affinity.deleted),
    };
    let spec = json!({
        "state": affinity.state,
        "node": affinity.node,
        "type": affinity.affinity_type.as_str(),
        "cidr": affinity.cidr.to_string(),
        "deleted": deleted,
    });
    let name = affinity_name(&affinity.node, &affinity.cidr);
    let mut object = group.object(IpamType::Affinity, &name, revision, spec);
    if labels {
        object["metadata"]["labels"] = json!(affinity_labels(affinity));
    }
    object
}

#[derive(Debug, Deserialize)]
struct ConfigSpec {
    #[serde(rename = "strictAffinity", default)]
    strict_affinity: bool,
    #[serde(rename = "autoAllocateBlocks", default)]
    auto_allocate_blocks: bool,
    #[serde(rename = "maxBlocksPerHost", default)]
    max_blocks_per_host: i64,
    #[serde(rename = "kubeVirtVMAddressPersistence", default)]
    kubevirt_vm_address_persistence: Option<String>,
}

/// Decodes the allocator's configuration object.
pub fn decode_config(object: &Value) -> Result<IpamConfig, String> {
    let spec: ConfigSpec = spec(object)?;
    Ok(IpamConfig {
        strict_affinity: spec.strict_affinity,
        auto_allocate_blocks: spec.auto_allocate_blocks,
        max_blocks_per_host: spec.max_blocks_per_host,
        kubevirt_vm_address_persistence: spec.kubevirt_vm_address_persistence,
    })
}

/// Encodes the allocator's configuration as the `default` object of `group`.
pub fn encode_config(group: ApiGroup, config: &IpamConfig, revision: Option<&str>) -> Value {
    let mut spec = serde_json::Map::new();
    spec.insert("strictAffinity".into(), Value::Bool(config.strict_affinity));
    spec.insert(
        "autoAllocateBlocks".into(),
        Value::Bool(config.auto_allocate_blocks),
    );
    if config.max_blocks_per_host != 0 {
        spec.insert("maxBlocksPerHost".into(), json!(config.max_blocks_per_host));
    }
    if let Some(persistence) = &config.kubevirt_vm_address_persistence {
        spec.insert(
            "kubeVirtVMAddressPersistence".into(),
            Value::String(persistence.clone()),
        );
    }
    group.object(IpamType::Config, CONFIG_NAME, revision, Value::Object(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPAMBlock as a v3.30 cluster stores it (`kubectl get ipamblock -o json`, trimmed).
    const V1_BLOCK: &str = r#"{"apiVersion":"crd.projectcalico.org/v1","kind":"IPAMBlock","metadata":{"name":"10-65-79-0-30","resourceVersion":"5012","uid":"0c3a0e5e-8d4b-4f4a-9f6e-2a1b3c4d5e6f"},"spec":{"cidr":"10.65.79.0/30","affinity":"host:node-1","allocations":[0,null,null,null],"unallocated":[1,2,3],"attributes":[{"handle_id":"k8s-pod-network.1a2b","secondary":{"namespace":"default","node":"node-1","pod":"web-0"}}],"sequenceNumber":3,"sequenceNumberForAllocation":{"0":2},"deleted":false,"strictAffinity":false}}"#;

    #[test]
    fn blocks_round_trip_in_both_groups() {
        let object: Value = serde_json::from_str(V1_BLOCK).unwrap();
        let block = decode_block(&object).unwrap();
        assert!(block.damage().is_empty());
        let cidr = block.cidr.unwrap();
        let written = encode_block(ApiGroup::CrdV1, &block, &cidr, Some("5012"));
        let mut expected = object.clone();
        expected["metadata"].as_object_mut().unwrap().remove("uid");
        assert_eq!(written, expected);
        let v3 = encode_block(ApiGroup::ProjectcalicoV3, &block, &cidr, None);
        assert_eq!(v3["apiVersion"], "projectcalico.org/v3");
        assert_eq!(decode_block(&v3).unwrap(), block);
        let identity = identity(ApiGroup::CrdV1, &object);
        assert_eq!(identity.name, "10-65-79-0-30");
        // The UID clients (and reports) see is the bit-reversed one on v1.
        assert_ne!(
            identity.uid.as_deref(),
            Some("0c3a0e5e-8d4b-4f4a-9f6e-2a1b3c4d5e6f")
        );
        assert_eq!(
            ApiGroup::CrdV1.object_uid(identity.uid.as_deref().unwrap()),
            "0c3a0e5e-8d4b-4f4a-9f6e-2a1b3c4d5e6f"
        );
    }

    #[test]
    fn affinities_differ_between_the_groups() {
        let affinity = BlockAffinity {
            cidr: Cidr::parse("10.65.79.0/26").unwrap(),
            node: "node-1".into(),
            affinity_type: AffinityType::Host,
            state: "confirmed".into(),
            deleted: false,
        };
        let v1 = encode_affinity(ApiGroup::CrdV1, &affinity, true, None);
        assert_eq!(v1["metadata"]["name"], "node-1-10-65-79-0-26");
        assert_eq!(v1["spec"]["deleted"], "false");
        assert_eq!(
            v1["metadata"]["labels"]["projectcalico.org/ip-version"],
            "4"
        );
        let hash = v1["metadata"]["labels"]["projectcalico.org/hostname-hash"]
            .as_str()
            .unwrap();
        assert_eq!(hash.len(), 52);
        assert_eq!(decode_affinity(ApiGroup::CrdV1, &v1).unwrap(), affinity);
        let v3 = encode_affinity(ApiGroup::ProjectcalicoV3, &affinity, true, None);
        assert_eq!(v3["spec"]["deleted"], false);
        assert_eq!(
            decode_affinity(ApiGroup::ProjectcalicoV3, &v3).unwrap(),
            affinity
        );
        // An object of a release before affinity types.
        let old = json!({"spec": {"cidr": "10.65.79.0/26", "node": "n", "state": "confirmed", "deleted": "False"}});
        assert_eq!(
            decode_affinity(ApiGroup::CrdV1, &old)
                .unwrap()
                .affinity_type,
            AffinityType::Host
        );
        let long = "n".repeat(250);
        let name = affinity_name(&long, &affinity.cidr);
        assert!(name.len() <= 253, "{}", name.len());
        assert!(name.contains("-10-65-79-0-26-"));
    }

    #[test]
    fn sha3_base32_matches_a_known_vector() {
        // SHA3-256("") = a7ffc6f8bf1ed766..., base32 of it (RFC 4648, no padding).
        let digest = sha3::Sha3_256::digest(b"");
        assert_eq!(
            base32_no_padding(&digest),
            "U774N6F7D3LWMUOBI5LKAYOWML2YB72N4Q5UT6UC3AFEXAHYINFA"
        );
    }

    #[test]
    fn handles_and_config_use_upstreams_names() {
        let handle = IpamHandle::new("TestIPAMCleanup", [("10.66.0.0/26".to_string(), 1)]);
        let object = encode_handle(ApiGroup::CrdV1, &handle, None);
        assert_eq!(object["metadata"]["name"], "testipamcleanup");
        assert_eq!(object["spec"]["handleID"], "TestIPAMCleanup");
        assert_eq!(decode_handle(&object).unwrap(), handle);
        let config = IpamConfig::default();
        let v1 = encode_config(ApiGroup::CrdV1, &config, None);
        assert_eq!(
            (v1["kind"].as_str(), v1["metadata"]["name"].as_str()),
            (Some("IPAMConfig"), Some("default"))
        );
        let v3 = encode_config(ApiGroup::ProjectcalicoV3, &config, None);
        assert_eq!(v3["kind"], "IPAMConfiguration");
        assert_eq!(decode_config(&v3).unwrap(), config);
    }
}
