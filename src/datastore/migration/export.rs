//! Writes the migration file (see the module documentation of `migration`) from a locked etcd
//! datastore, a page at a time: memory stays bounded by a few pages of resources (three when read
//! as a pipeline, [`export_pipelined`]) and one IPAM object (plus the node names), however large
//! the datastore. Items and IPAM entries are written straight from the models, each walked once.
//!
//! Before the first byte: the datastore must be etcd and locked, and every Node must have a
//! Kubernetes name (read in a first pass, so that host endpoints and BGP peers, which come before
//! the Nodes in upstream's order, are renamed too).

use std::io::Write;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::indented;
use super::{KINDS, KUBERNETES_POLICY_PREFIX, MigrationError, NodeNames, SEPARATOR};
use crate::datastore::backup::{IpamObject, IpamRecord, record};
use crate::datastore::etcd::ipam_encoding::{self as encoding, BlockJson};
use crate::datastore::ipam::{self as ipam_store, Damaged, IpamStore};
use crate::datastore::readiness::lock_state;
use crate::datastore::{Datastore, DatastoreType, ListOptions, Page, Pages, StoreError};
use crate::ipam::BlockEncoding;
use crate::ipam::Stored;
use crate::output::PhaseClock;
use crate::resource::{Kind, ObjectMeta, Resource, ResourceKey};
use crate::yaml::emit::{self, KeyOrder};

/// What an export wrote and changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    pub resources: u64,
    pub ipam: u64,
    /// Nodes whose name changed.
    pub renamed_nodes: usize,
    /// HostEndpoints and BGPPeers whose `spec.node` was renamed (upstream leaves them).
    pub renamed_node_references: u64,
    /// `knp.default.*` NetworkPolicies left out.
    pub kubernetes_policies: u64,
}

/// Checks that `store` may be exported (etcd, locked) and reads its node names.
pub async fn prepare(store: &dyn Datastore) -> Result<NodeNames, MigrationError> {
    if store.kind() != DatastoreType::EtcdV3 {
        return Err(MigrationError::NotEtcd(store.kind()));
    }
    if !lock_state(store).await?.locked {
        return Err(MigrationError::NotLocked);
    }
    NodeNames::read(store).await
}

/// Writes the whole file to `path`, owner-only: written beside it and renamed, so `path` is a
/// whole export or absent.
pub async fn export_to_file(
    lister: Lister<'_>,
    names: &NodeNames,
    path: &std::path::Path,
    clock: &mut PhaseClock,
) -> Result<Exported, MigrationError> {
    let shown = path.display().to_string();
    let failed = |source| MigrationError::Write {
        path: shown.clone(),
        source,
    };
    let partial = path.with_extension("partial");
    let file = crate::datastore::backup::owner_only(&partial).map_err(failed)?;
    let mut out = std::io::BufWriter::new(file);
    let result = write_file(&lister, names, &mut out, &shown, clock).await;
    let finished = result.and_then(|exported| {
        let file = out
            .into_inner()
            .map_err(|error| failed(error.into_error()))?;
        file.sync_all().map_err(failed)?;
        std::fs::rename(&partial, path).map_err(failed)?;
        Ok(exported)
    });
    if finished.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    finished
}

/// Writes the whole file to `out` (`path` names it in errors), reading one page after the other.
pub async fn export(
    store: &dyn Datastore,
    names: &NodeNames,
    out: &mut dyn Write,
    path: &str,
) -> Result<Exported, MigrationError> {
    let lister = Lister::OneByOne(store);
    write_file(&lister, names, out, path, &mut PhaseClock::off()).await
}

/// [`export`] with the resources' pages read as a pipeline ([`Pages`]: etcd serves the next page
/// while this one is decoded, the one before written), marking its phases on `clock` (the
/// resources, ClusterInformation, each IPAM section).
pub async fn export_pipelined(
    store: Arc<dyn Datastore>,
    names: &NodeNames,
    out: &mut dyn Write,
    path: &str,
    clock: &mut PhaseClock,
) -> Result<Exported, MigrationError> {
    write_file(&Lister::Pipelined(store), names, out, path, clock).await
}

/// How the pages of each kind are read.
pub enum Lister<'a> {
    OneByOne(&'a dyn Datastore),
    Pipelined(Arc<dyn Datastore>),
}

impl Lister<'_> {
    fn store(&self) -> &dyn Datastore {
        match self {
            Lister::OneByOne(store) => *store,
            Lister::Pipelined(store) => store.as_ref(),
        }
    }

    fn pages(&self, kind: Kind) -> KindPages<'_> {
        let options = ListOptions::new(kind);
        match self {
            Lister::OneByOne(store) => KindPages::OneByOne {
                store: *store,
                options,
                token: None,
                done: false,
            },
            Lister::Pipelined(store) => {
                KindPages::Pipelined(Pages::new(Arc::clone(store), options))
            }
        }
    }
}

/// The pages of one kind.
enum KindPages<'a> {
    OneByOne {
        store: &'a dyn Datastore,
        options: ListOptions,
        token: Option<String>,
        done: bool,
    },
    Pipelined(Pages),
}

impl KindPages<'_> {
    async fn next(&mut self) -> Result<Option<Page>, StoreError> {
        match self {
            KindPages::Pipelined(pages) => pages.next().await,
            KindPages::OneByOne { done: true, .. } => Ok(None),
            KindPages::OneByOne {
                store,
                options,
                token,
                done,
            } => {
                let page = store.list_page(options, token.as_deref()).await?;
                *token = page.continue_token.clone();
                *done = token.is_none();
                Ok(Some(page))
            }
        }
    }
}

async fn write_file(
    lister: &Lister<'_>,
    names: &NodeNames,
    out: &mut dyn Write,
    path: &str,
    clock: &mut PhaseClock,
) -> Result<Exported, MigrationError> {
    let store = lister.store();
    let failed = |source| MigrationError::Write {
        path: path.to_string(),
        source,
    };
    let mut exported = Exported {
        renamed_nodes: names.renamed(),
        ..Exported::default()
    };
    for kind in KINDS {
        write_kind(lister.pages(kind), kind, names, out, &mut exported, path).await?;
        out.write_all(b"---\n").map_err(failed)?;
    }
    clock.mark("export resources");
    out.write_all(SEPARATOR.as_bytes()).map_err(failed)?;
    let information = store
        .get(&ResourceKey::new(Kind::ClusterInformation, None, "default"))
        .await
        .map_err(|error| match error {
            StoreError::NotFound(_) => MigrationError::NoClusterInformation,
            other => other.into(),
        })?;
    let text = serde_json::to_string_pretty(&go_order(&information)).unwrap_or_default();
    writeln!(out, "{text}").map_err(failed)?;
    out.write_all(SEPARATOR.as_bytes()).map_err(failed)?;
    clock.mark("export ClusterInformation");
    if let Some(ipam) = store.ipam() {
        exported.ipam = write_ipam(ipam, names, out, path, clock).await?;
    } else {
        out.write_all(b"{}\n").map_err(failed)?;
    }
    out.flush().map_err(failed)?;
    clock.mark("export IPAM configuration");
    Ok(exported)
}

/// One `<Kind>List` document, item by item as the pages arrive.
async fn write_kind(
    mut pages: KindPages<'_>,
    kind: Kind,
    names: &NodeNames,
    out: &mut dyn Write,
    exported: &mut Exported,
    path: &str,
) -> Result<(), MigrationError> {
    let failed = |source| MigrationError::Write {
        path: path.to_string(),
        source,
    };
    let mut revision = None;
    let mut items = 0u64;
    out.write_all(b"apiVersion: projectcalico.org/v3\n")
        .map_err(failed)?;
    loop {
        let page = match pages.next().await {
            // A kind this datastore's release does not serve holds nothing to export.
            Err(error) if error.is_not_served() => break,
            other => match other? {
                Some(page) => page,
                None => break,
            },
        };
        revision.get_or_insert(page.revision.clone());
        let mut text = String::new();
        for mut resource in page.items {
            if kind == Kind::NetworkPolicy
                && resource.metadata.name.starts_with(KUBERNETES_POLICY_PREFIX)
            {
                exported.kubernetes_policies += 1;
                continue;
            }
            let renamed = names.rename_resource(&mut resource);
            if renamed && matches!(kind, Kind::HostEndpoint | Kind::BgpPeer) {
                exported.renamed_node_references += 1;
            }
            if kind == Kind::FelixConfiguration {
                super::convert_iptables_fields(&mut resource);
            }
            if items == 0 {
                text.push_str("items:\n");
            }
            items += 1;
            list_item(&mut text, &resource);
        }
        out.write_all(text.as_bytes()).map_err(failed)?;
    }
    exported.resources += items;
    let mut text = String::new();
    if items == 0 {
        text.push_str("items: []\n");
    }
    emit::write_string_entry(&mut text, "kind", &format!("{}List", kind.as_str()), 0);
    text.push_str("metadata:\n  ");
    emit::write_string_entry(
        &mut text,
        "resourceVersion",
        revision.as_deref().unwrap_or_default(),
        2,
    );
    out.write_all(text.as_bytes()).map_err(failed)
}

/// The metadata fields upstream's export drops (`uid` and `resourceVersion` are typed fields,
/// these are kept in `other`).
const DROPPED_METADATA: [&str; 2] = ["deletionTimestamp", "deletionGracePeriodSeconds"];

/// Appends `resource` as upstream's export writes a list item (`- ` then the mapping, keys
/// sorted as go-yaml writes JSON input): metadata without `uid`, `resourceVersion` and the
/// deletion fields, `creationTimestamp: null`. Written straight from the resource: the spec and
/// status are walked once, no copy of the resource is made.
fn list_item(out: &mut String, resource: &Resource) {
    out.push_str("- ");
    emit::write_string_entry(out, "apiVersion", &resource.api_version, 2);
    emit::indent(out, 2);
    emit::write_string_entry(out, "kind", resource.kind.as_str(), 2);
    emit::indent(out, 2);
    write_metadata(out, &resource.metadata);
    for (key, value) in [("spec", &resource.spec), ("status", &resource.status)] {
        if !value.is_null() {
            emit::indent(out, 2);
            emit::write_entry(out, key, value, 2, KeyOrder::Sorted);
        }
    }
}

/// The cleaned `metadata:` entry of a list item. Its typed fields are written in sorted order
/// (`annotations`, `creationTimestamp`, `labels`, `name`, `namespace`); metadata with other
/// fields (owner references, finalizers, …) goes through a JSON value sorted as a whole.
fn write_metadata(out: &mut String, metadata: &ObjectMeta) {
    if metadata
        .other
        .keys()
        .any(|key| !DROPPED_METADATA.contains(&key.as_str()))
    {
        let mut value = serde_json::to_value(metadata).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut value {
            for field in ["uid", "resourceVersion"]
                .into_iter()
                .chain(DROPPED_METADATA)
            {
                fields.remove(field);
            }
            fields.insert("creationTimestamp".into(), Value::Null);
        }
        emit::write_entry(out, "metadata", &value, 2, KeyOrder::Sorted);
        return;
    }
    out.push_str("metadata:\n");
    if !metadata.annotations.is_empty() {
        emit::indent(out, 4);
        emit::write_string_map_entry(out, "annotations", &metadata.annotations, 4);
    }
    emit::indent(out, 4);
    out.push_str("creationTimestamp: null\n");
    if !metadata.labels.is_empty() {
        emit::indent(out, 4);
        emit::write_string_map_entry(out, "labels", &metadata.labels, 4);
    }
    if !metadata.name.is_empty() {
        emit::indent(out, 4);
        emit::write_string_entry(out, "name", &metadata.name, 4);
    }
    if let Some(namespace) = &metadata.namespace {
        emit::indent(out, 4);
        emit::write_string_entry(out, "namespace", namespace, 4);
    }
}

/// ClusterInformation as Go's encoder writes the typed object: `kind`, `apiVersion`, then
/// `metadata` and `spec`.
fn go_order(resource: &Resource) -> Value {
    let value = serde_json::to_value(resource).unwrap_or(Value::Null);
    let mut ordered = Map::new();
    for field in ["kind", "apiVersion", "metadata", "spec"] {
        if let Some(inner) = value.get(field) {
            ordered.insert(field.to_string(), inner.clone());
        }
    }
    Value::Object(ordered)
}

/// One IPAM entry as upstream's export writes it (`Key`, `Value`, `TTL`).
#[derive(Serialize)]
struct Entry<'a, V: Serialize> {
    #[serde(rename = "Key")]
    key: &'a str,
    #[serde(rename = "Value")]
    value: &'a V,
    #[serde(rename = "TTL")]
    ttl: u64,
}

/// The IPAM part: one JSON object whose lists are written an entry at a time, each entry
/// straight into the layout Go's `MarshalIndent` gives it in the whole object (`indented.rs`).
struct IpamWriter<'a> {
    out: &'a mut dyn Write,
    path: &'a str,
    /// The section open now, if any.
    open: Option<&'static str>,
    any: bool,
    count: u64,
    /// Entries gathered before a write (one write a few dozen kilobytes).
    buffer: Vec<u8>,
}

/// How much of the IPAM part is gathered before a write.
const IPAM_WRITE_BYTES: usize = 64 << 10;

impl IpamWriter<'_> {
    fn failed(&self, source: std::io::Error) -> MigrationError {
        MigrationError::Write {
            path: self.path.to_string(),
            source,
        }
    }

    fn put(
        &mut self,
        section: &'static str,
        key: &str,
        value: &impl Serialize,
    ) -> Result<(), MigrationError> {
        match self.open {
            Some(open) if open == section => self.buffer.extend_from_slice(b",\n"),
            Some(_) => self
                .buffer
                .extend_from_slice(format!("\n  ],\n  \"{section}\": [\n").as_bytes()),
            None => self
                .buffer
                .extend_from_slice(format!("{{\n  \"{section}\": [\n").as_bytes()),
        }
        self.open = Some(section);
        self.any = true;
        self.buffer.extend_from_slice(b"    ");
        self.entry(key, value, 4);
        self.count += 1;
        if self.buffer.len() >= IPAM_WRITE_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn config(&mut self, record: &IpamRecord) -> Result<(), MigrationError> {
        self.buffer.extend_from_slice(
            match (self.any, self.open) {
                (_, Some(_)) => "\n  ],\n  \"config\": ",
                (false, None) => "{\n  \"config\": ",
                (true, None) => ",\n  \"config\": ",
            }
            .as_bytes(),
        );
        self.open = None;
        self.any = true;
        self.entry(&record.key, &record.value, 2);
        self.count += 1;
        Ok(())
    }

    /// Appends `{"Key": …, "Value": …, "TTL": 0}` nested `width` spaces deep.
    fn entry(&mut self, key: &str, value: &impl Serialize, width: usize) {
        let entry = Entry { key, value, ttl: 0 };
        indented::write(&mut self.buffer, &entry, width);
    }

    fn flush(&mut self) -> Result<(), MigrationError> {
        let written = self.out.write_all(&self.buffer);
        self.buffer.clear();
        written.map_err(|error| self.failed(error))
    }

    fn finish(mut self) -> Result<u64, MigrationError> {
        let text = match (self.any, self.open) {
            (false, _) => "{}\n",
            (true, Some(_)) => "\n  ]\n}\n",
            (true, None) => "\n}\n",
        };
        self.open = None;
        self.buffer.extend_from_slice(text.as_bytes());
        self.flush()?;
        Ok(self.count)
    }
}

fn damaged<T>(item: Result<Stored<T>, Damaged>) -> Result<Stored<T>, MigrationError> {
    item.map_err(MigrationError::Damaged)
}

async fn write_ipam(
    ipam: &dyn IpamStore,
    names: &NodeNames,
    out: &mut dyn Write,
    path: &str,
    clock: &mut PhaseClock,
) -> Result<u64, MigrationError> {
    let mut writer = IpamWriter {
        out,
        path,
        open: None,
        any: false,
        count: 0,
        buffer: Vec::with_capacity(IPAM_WRITE_BYTES + (4 << 10)),
    };
    ipam_store::for_each_affinity(ipam, |item| {
        let mut affinity = damaged(item)?.value;
        names.rename_affinity(&mut affinity);
        put(
            &mut writer,
            "block_affinities",
            &IpamObject::Affinity(affinity),
        )
    })
    .await?;
    clock.mark("export IPAM block affinities");
    ipam_store::for_each_block(ipam, |item| {
        let mut block = damaged(item)?.value;
        names.rename_block(&mut block);
        // Serialized straight from the block: it is the largest IPAM object.
        let cidr = block.cidr.as_ref().ok_or_else(|| {
            MigrationError::Damaged(Damaged {
                key: "an IPAM block".into(),
                reason: "it has no CIDR".into(),
            })
        })?;
        let value = BlockJson {
            block: &block,
            encoding: BlockEncoding::OmitEmpty,
        };
        writer.put("blocks", &encoding::block_key(cidr), &value)
    })
    .await?;
    clock.mark("export IPAM blocks");
    ipam_store::for_each_handle(ipam, |item| {
        let mut handle = damaged(item)?.value;
        names.rename_handle(&mut handle);
        put(&mut writer, "handles", &IpamObject::Handle(handle))
    })
    .await?;
    clock.mark("export IPAM handles");
    if let Some(config) = ipam.get_config().await? {
        let object = IpamObject::Config(config.value);
        if let Some(record) = record(&object) {
            writer.config(&record)?;
        }
    }
    writer.finish()
}

/// An affinity or a handle as its record.
fn put(
    writer: &mut IpamWriter<'_>,
    section: &'static str,
    object: &IpamObject,
) -> Result<(), MigrationError> {
    let record = record(object).ok_or_else(|| {
        MigrationError::Damaged(Damaged {
            key: format!("an IPAM {section} entry"),
            reason: "it has no key".into(),
        })
    })?;
    writer.put(section, &record.key, &record.value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The list item as the export wrote it before it wrote items straight from the resource:
    /// the cleaned resource as a JSON value, written as a sorted document, every line indented
    /// under `- `.
    fn through_a_value(resource: &Resource) -> String {
        let mut value = serde_json::to_value(resource).unwrap();
        let metadata = value["metadata"].as_object_mut().unwrap();
        for field in [
            "uid",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            metadata.remove(field);
        }
        metadata.insert("creationTimestamp".into(), Value::Null);
        let mut document = String::new();
        emit::write_document(&mut document, &value, KeyOrder::Sorted);
        let mut out = String::new();
        for (index, line) in document.lines().enumerate() {
            out.push_str(if index == 0 { "- " } else { "  " });
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    fn resource(value: serde_json::Value) -> Resource {
        serde_json::from_value(value).unwrap()
    }

    /// Byte for byte what the value path wrote, for every shape of metadata and spec an export
    /// meets (the literal block's lines hold no empty line: there the value path indented the
    /// empty line, which go-yaml does not).
    #[test]
    fn a_list_item_is_the_sorted_document_of_the_cleaned_resource() {
        let resources = [
            json!({"apiVersion": "projectcalico.org/v3", "kind": "HostEndpoint",
                "metadata": {"name": "h1", "uid": "u", "resourceVersion": "7",
                    "creationTimestamp": "2024-01-01T00:00:00Z",
                    "labels": {"zone": "a", "app": "no", "b/c": "1e3"},
                    "annotations": {"note": "two\nlines", "x": ""}},
                "spec": {"node": "n1", "interfaceName": "*", "expectedIPs": ["10.0.0.1", "::1"],
                    "profiles": [], "ports": [{"name": "p", "port": 80, "protocol": "TCP"}]}}),
            json!({"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
                "metadata": {"name": "p", "namespace": "default",
                    "deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0},
                "spec": {"selector": "all()", "types": ["Ingress"], "order": 100.5,
                    "ingress": [{"action": "Allow", "source": {"nets": []}}]}}),
            json!({"apiVersion": "projectcalico.org/v3", "kind": "Node",
                "metadata": {"name": "node-a", "ownerReferences": [{"kind": "X", "name": "y"}],
                    "finalizers": ["f"], "generation": 3, "labels": {"l": "v"}},
                "spec": {"bgp": {"ipv4Address": "10.0.0.1/24"}},
                "status": {"podCIDRs": ["10.0.0.0/24"]}}),
            json!({"apiVersion": "projectcalico.org/v3", "kind": "KubeControllersConfiguration",
                "metadata": {"name": "default"}}),
            json!({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkSet",
                "metadata": {"name": "yes", "labels": {}},
                "spec": {"nets": ["0.0.0.0/0"], "extra": {"z": 1, "a": {"y": null, "b": true}}}}),
            json!({"apiVersion": "projectcalico.org/v3", "kind": "FelixConfiguration",
                "metadata": {"name": "default"},
                "spec": {"logSeverityScreen": "Info", "text": "a\nb\n", "quoted": " lead",
                    "emptyMap": {}, "emptyList": [], "nested": [[1, 2], []]}}),
        ];
        for value in resources {
            let resource = resource(value);
            let mut direct = String::new();
            list_item(&mut direct, &resource);
            assert_eq!(direct, through_a_value(&resource));
        }
    }

    #[test]
    fn empty_lines_of_a_literal_block_are_empty() {
        let resource = resource(json!({"apiVersion": "projectcalico.org/v3",
            "kind": "GlobalNetworkSet", "metadata": {"name": "s"},
            "spec": {"text": "a\n\nb\n"}}));
        let mut out = String::new();
        list_item(&mut out, &resource);
        assert!(out.contains("  text: |\n      a\n\n      b\n"), "{out}");
    }
}
