//! Reads a migration file (ours or upstream's `calicoctl datastore migrate export`) whole and
//! checks it before anything is written: three parts, only the kinds an export holds, every
//! Node with a Kubernetes name, ClusterInformation and IPAM parts that read.
//!
//! The file is read into memory: the import compares every resource with what the target
//! holds before its first write, so it needs them all at hand. Its resources are read one at a
//! time (`items.rs`), never as one YAML tree per kind.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{KINDS, MigrationError, SEPARATOR, items, kubernetes_name};
use crate::datastore::backup::{IpamObject, IpamRecord, object};
use crate::resource::load::{LoadError, Loaded, Loader, Location};
use crate::resource::{Kind, Resource};

/// What a migration file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct MigrationFile {
    /// The resources of the first part, in the file's order.
    pub resources: Vec<Resource>,
    /// ClusterInformation's `clusterGUID` and `calicoVersion` (second part).
    pub cluster_guid: Option<String>,
    pub calico_version: Option<String>,
    /// The IPAM objects (third part): affinities, blocks, handles, configuration.
    pub ipam: Vec<IpamObject>,
}

/// The IPAM part as upstream writes it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct IpamPart {
    #[serde(default)]
    block_affinities: Vec<Entry>,
    #[serde(default)]
    blocks: Vec<Entry>,
    #[serde(default)]
    handles: Vec<Entry>,
    #[serde(default)]
    config: Option<Entry>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(rename = "Key")]
    key: String,
    #[serde(rename = "Value")]
    value: Value,
    /// Upstream writes it, always 0 (etcd leases are not carried over).
    #[serde(rename = "TTL", default)]
    _ttl: Option<Value>,
}

/// The resources of the first part, one resource's text at a time (`items.rs`: never the whole
/// part as one tree), each located in the file as if the part had been read whole.
fn load_resources(part: &str, origin: &str) -> Result<Vec<Loaded>, LoadError> {
    let loader = Loader::unvalidated();
    let mut loaded = Vec::new();
    for piece in items::pieces(part) {
        let relocate = |location: &mut Location| {
            location.origin = origin.to_string();
            location.document = piece.document;
            location.item = location.item.or(piece.item);
            location.line = location.line.map(|line| line + piece.line - 1);
            location.document_line = Some(
                location
                    .document_line
                    .map_or(piece.line, |line| line + piece.line - 1),
            );
        };
        match loader.load_text(&piece.text, origin) {
            Ok(resources) => loaded.extend(resources.into_iter().map(|mut each| {
                relocate(&mut each.location);
                each
            })),
            Err(mut error) => {
                each_location(&mut error, &mut |location| relocate(location));
                return Err(error);
            }
        }
    }
    Ok(loaded)
}

/// Calls `visit` on every location `error` names.
fn each_location(error: &mut LoadError, visit: &mut dyn FnMut(&mut Location)) {
    match error {
        LoadError::Document { location, .. } | LoadError::Invalid { location, .. } => {
            visit(location)
        }
        LoadError::Problems(problems) => problems
            .iter_mut()
            .for_each(|problem| each_location(problem, visit)),
        LoadError::Read { .. } | LoadError::StandardInputAsPath | LoadError::Empty => {}
    }
}

/// Reads and checks the file at `path`.
pub fn read(path: &Path) -> Result<MigrationFile, MigrationError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| MigrationError::Format {
        path: origin.clone(),
        reason: format!("it cannot be read ({error})"),
    })?;
    parse(&text, &origin)
}

/// Reads and checks the text of a migration file; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<MigrationFile, MigrationError> {
    let refused = |reason: String| MigrationError::Format {
        path: origin.to_string(),
        reason,
    };
    let parts: Vec<&str> = text.split(SEPARATOR).collect();
    let [resources, information, ipam] = parts[..] else {
        return Err(refused(format!(
            "it has {} part(s) separated by `===` lines, and an export has three (the resources as YAML, ClusterInformation as JSON, IPAM as JSON)",
            parts.len()
        )));
    };
    let loaded = load_resources(resources, origin)
        .map_err(|error| refused(format!("its resources do not read: {error}")))?;
    let mut file = MigrationFile {
        resources: Vec::with_capacity(loaded.len()),
        cluster_guid: None,
        calico_version: None,
        ipam: Vec::new(),
    };
    for item in loaded {
        let resource = item.resource;
        if !KINDS.contains(&resource.kind) {
            return Err(refused(format!(
                "{}: kind `{}` is not part of a migration export (it holds {})",
                item.location,
                resource.kind.as_str(),
                KINDS.map(Kind::as_str).join(", ")
            )));
        }
        if resource.kind == Kind::Node && kubernetes_name(&resource).is_none() {
            return Err(MigrationError::NoKubernetesName {
                node: resource.metadata.name.clone(),
            });
        }
        file.resources.push(resource);
    }
    let information: Value = serde_json::from_str(information).map_err(|error| {
        refused(format!(
            "its second part is not ClusterInformation as JSON ({error})"
        ))
    })?;
    if information.get("kind").and_then(Value::as_str) != Some("ClusterInformation") {
        return Err(refused(
            "its second part is not a ClusterInformation (`kind: ClusterInformation`)".into(),
        ));
    }
    let spec_field = |field: &str| {
        information["spec"][field]
            .as_str()
            .filter(|text| !text.is_empty())
            .map(str::to_string)
    };
    file.cluster_guid = spec_field("clusterGUID");
    file.calico_version = spec_field("calicoVersion");
    let part: IpamPart = serde_json::from_str(ipam).map_err(|error| {
        refused(format!(
            "its third part is not upstream's IPAM JSON ({error})"
        ))
    })?;
    let entries = part
        .block_affinities
        .into_iter()
        .chain(part.blocks)
        .chain(part.handles)
        .chain(part.config);
    for entry in entries {
        let record = IpamRecord {
            key: entry.key,
            value: entry.value,
        };
        let decoded = object(&record).map_err(|reason| {
            refused(format!(
                "its IPAM object `{}` does not read: {reason}",
                record.key
            ))
        })?;
        file.ipam.push(decoded);
    }
    Ok(file)
}
