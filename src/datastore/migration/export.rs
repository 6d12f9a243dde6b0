//! Writes the migration file (see the module documentation of `migration`) from a locked etcd
//! datastore, a page at a time: memory stays bounded by a page of resources and one IPAM object
//! (plus the node names), however large the datastore.
//!
//! Before the first byte: the datastore must be etcd and locked, and every Node must have a
//! Kubernetes name (read in a first pass, so that host endpoints and BGP peers, which come before
//! the Nodes in upstream's order, are renamed too).

use std::io::Write;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{KINDS, KUBERNETES_POLICY_PREFIX, MigrationError, NodeNames, SEPARATOR};
use crate::datastore::backup::{IpamObject, IpamRecord, record};
use crate::datastore::ipam::{self as ipam_store, Damaged, IpamStore};
use crate::datastore::readiness::lock_state;
use crate::datastore::{Datastore, DatastoreType, ListOptions, StoreError};
use crate::ipam::Stored;
use crate::resource::{Kind, Resource, ResourceKey};
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
    store: &dyn Datastore,
    names: &NodeNames,
    path: &std::path::Path,
) -> Result<Exported, MigrationError> {
    let shown = path.display().to_string();
    let failed = |source| MigrationError::Write {
        path: shown.clone(),
        source,
    };
    let partial = path.with_extension("partial");
    let file = crate::datastore::backup::owner_only(&partial).map_err(failed)?;
    let mut out = std::io::BufWriter::new(file);
    let result = export(store, names, &mut out, &shown).await;
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

/// Writes the whole file to `out` (`path` names it in errors).
pub async fn export(
    store: &dyn Datastore,
    names: &NodeNames,
    out: &mut dyn Write,
    path: &str,
) -> Result<Exported, MigrationError> {
    let failed = |source| MigrationError::Write {
        path: path.to_string(),
        source,
    };
    let mut exported = Exported {
        renamed_nodes: names.renamed(),
        ..Exported::default()
    };
    for kind in KINDS {
        write_kind(store, kind, names, out, &mut exported, path).await?;
        out.write_all(b"---\n").map_err(failed)?;
    }
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
    if let Some(ipam) = store.ipam() {
        exported.ipam = write_ipam(ipam, names, out, path).await?;
    } else {
        out.write_all(b"{}\n").map_err(failed)?;
    }
    out.flush().map_err(failed)?;
    Ok(exported)
}

/// One `<Kind>List` document, item by item as the pages arrive.
async fn write_kind(
    store: &dyn Datastore,
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
    let options = ListOptions::new(kind);
    let mut token: Option<String> = None;
    let mut revision = None;
    let mut items = 0u64;
    out.write_all(b"apiVersion: projectcalico.org/v3\n")
        .map_err(failed)?;
    loop {
        let page = match store.list_page(&options, token.as_deref()).await {
            // A kind this datastore's release does not serve holds nothing to export.
            Err(error) if error.is_not_served() => break,
            other => other?,
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
            list_item(&mut text, &cleaned(&resource));
        }
        out.write_all(text.as_bytes()).map_err(failed)?;
        match page.continue_token {
            Some(next) => token = Some(next),
            None => break,
        }
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

/// The resource as upstream's export writes a list item: metadata without `uid`,
/// `resourceVersion` and the deletion fields, `creationTimestamp: null`.
fn cleaned(resource: &Resource) -> Value {
    let mut value = serde_json::to_value(resource).unwrap_or(Value::Null);
    if let Some(Value::Object(metadata)) = value.get_mut("metadata") {
        for field in [
            "uid",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            metadata.remove(field);
        }
        metadata.insert("creationTimestamp".into(), Value::Null);
    }
    value
}

/// Appends `value` as an item of a block sequence at indentation 0 (`- ` then the mapping).
fn list_item(out: &mut String, value: &Value) {
    let mut document = String::new();
    emit::write_document(&mut document, value, KeyOrder::Sorted);
    for (index, line) in document.lines().enumerate() {
        out.push_str(if index == 0 { "- " } else { "  " });
        out.push_str(line);
        out.push('\n');
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
struct Entry<'a> {
    #[serde(rename = "Key")]
    key: &'a str,
    #[serde(rename = "Value")]
    value: &'a Value,
    #[serde(rename = "TTL")]
    ttl: u64,
}

/// The IPAM part: one JSON object whose lists are written an entry at a time.
struct IpamWriter<'a> {
    out: &'a mut dyn Write,
    path: &'a str,
    /// The section open now, if any.
    open: Option<&'static str>,
    any: bool,
    count: u64,
}

impl IpamWriter<'_> {
    fn failed(&self, source: std::io::Error) -> MigrationError {
        MigrationError::Write {
            path: self.path.to_string(),
            source,
        }
    }

    fn put(&mut self, section: &'static str, record: &IpamRecord) -> Result<(), MigrationError> {
        let mut text = String::new();
        match self.open {
            Some(open) if open == section => text.push_str(",\n"),
            Some(_) => text.push_str(&format!("\n  ],\n  \"{section}\": [\n")),
            None => text.push_str(&format!("{{\n  \"{section}\": [\n")),
        }
        self.open = Some(section);
        self.any = true;
        let entry = Entry {
            key: &record.key,
            value: &record.value,
            ttl: 0,
        };
        indented(&mut text, &entry, 4);
        self.count += 1;
        self.out
            .write_all(text.as_bytes())
            .map_err(|error| self.failed(error))
    }

    fn config(&mut self, record: &IpamRecord) -> Result<(), MigrationError> {
        let mut text = String::from(match (self.any, self.open) {
            (_, Some(_)) => "\n  ],\n  \"config\": ",
            (false, None) => "{\n  \"config\": ",
            (true, None) => ",\n  \"config\": ",
        });
        self.open = None;
        self.any = true;
        let entry = Entry {
            key: &record.key,
            value: &record.value,
            ttl: 0,
        };
        let mut body = String::new();
        indented(&mut body, &entry, 2);
        text.push_str(body.trim_start());
        self.count += 1;
        self.out
            .write_all(text.as_bytes())
            .map_err(|error| self.failed(error))
    }

    fn finish(mut self) -> Result<u64, MigrationError> {
        let text = match (self.any, self.open) {
            (false, _) => "{}\n",
            (true, Some(_)) => "\n  ]\n}\n",
            (true, None) => "\n}\n",
        };
        self.open = None;
        self.out
            .write_all(text.as_bytes())
            .map_err(|error| self.failed(error))?;
        Ok(self.count)
    }
}

/// `value` as indented JSON, every line `width` spaces in (as Go's `MarshalIndent` nests it).
fn indented(out: &mut String, value: &impl Serialize, width: usize) {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    for (index, line) in text.lines().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.extend(std::iter::repeat_n(' ', width));
        out.push_str(line);
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
) -> Result<u64, MigrationError> {
    let mut writer = IpamWriter {
        out,
        path,
        open: None,
        any: false,
        count: 0,
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
    ipam_store::for_each_block(ipam, |item| {
        let mut block = damaged(item)?.value;
        names.rename_block(&mut block);
        put(&mut writer, "blocks", &IpamObject::Block(block))
    })
    .await?;
    ipam_store::for_each_handle(ipam, |item| {
        let mut handle = damaged(item)?.value;
        names.rename_handle(&mut handle);
        put(&mut writer, "handles", &IpamObject::Handle(handle))
    })
    .await?;
    if let Some(config) = ipam.get_config().await? {
        let object = IpamObject::Config(config.value);
        if let Some(record) = record(&object) {
            writer.config(&record)?;
        }
    }
    writer.finish()
}

fn put(
    writer: &mut IpamWriter<'_>,
    section: &'static str,
    object: &IpamObject,
) -> Result<(), MigrationError> {
    let record = record(object).ok_or_else(|| {
        MigrationError::Damaged(Damaged {
            key: "an IPAM block".into(),
            reason: "it has no CIDR".into(),
        })
    })?;
    writer.put(section, &record)
}
