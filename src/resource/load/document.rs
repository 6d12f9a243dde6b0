//! From one document read to the resources it holds (not yet validated): a resource, a `List` or
//! `<Kind>List` with `items`, or a sequence of resources. The envelope is read as upstream reads
//! it: field names matched ignoring case, booleans and numbers in string fields made text (by the
//! kind's schema), `apiVersion` and `kind` checked, unknown top-level fields refused, a Node's
//! `status` checked and dropped. The spec stays the document's node, normalised by the same
//! schema, for validation to decode straight into its typed form. Every problem names its
//! document, item and line.

use std::borrow::Cow;

use super::split::Document;
use super::{LoadError, Location};
use crate::resource::kind::PerKind;
use crate::resource::{API_VERSION, Kind, Resource};
use crate::yaml::{self, FieldNames, Node, NodeValue, Shapes};

/// A resource read from a document, not yet validated, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Read<'text> {
    pub location: Location,
    /// The envelope; its spec is left `null` (it is in `node`).
    pub resource: Resource,
    /// The resource's document, normalised by its kind's schema: where each field was written,
    /// and the spec to decode.
    pub node: Node<'text>,
    /// Whether the nodes know their lines (YAML input; JSON is read whole, without them).
    pub positioned: bool,
}

impl<'text> Read<'text> {
    /// The spec's node, if the document has one.
    pub fn spec(&self) -> Option<&Node<'text>> {
        self.node.key("spec")
    }

    /// The resource with its spec as written (normalised), for a load that does not validate.
    pub fn into_resource(self) -> Resource {
        let spec = self.spec().map(Node::to_value).unwrap_or_default();
        let mut resource = self.resource;
        resource.spec = spec;
        resource
    }
}

/// Reads the resources of each document in turn, handing each to `visit` as soon as its document
/// is read; returns how many documents there were. Stops at the first document that cannot be read
/// (a stream that cannot be read is reported before what an earlier document says, as when the
/// whole stream was read first).
pub(super) fn each_read<'text>(
    mut documents: impl Iterator<Item = Result<Document<'text>, LoadError>>,
    origin: &str,
    mut visit: impl FnMut(Read<'text>),
) -> Result<usize, LoadError> {
    let mut resources = Vec::new();
    let mut index = 0;
    while let Some(document) = documents.next() {
        let document = document?;
        index += 1;
        let location = Location {
            origin: origin.to_string(),
            document: index,
            item: None,
            line: None,
            document_line: document.line,
        };
        if let Err(problem) =
            document_resources(document.node, document.positioned, location, &mut resources)
        {
            // A stream that cannot be read is reported before what its documents say, as when
            // the whole stream was read first.
            return Err(documents.find_map(Result::err).unwrap_or(problem));
        }
        resources.drain(..).for_each(&mut visit);
    }
    Ok(index)
}

/// Turns one document already read into a resource (not yet validated), the way a document of a
/// file is read: field names matched ignoring case, booleans and numbers in string fields made
/// text. For documents that reach netctl as JSON values, e.g. a runbook's rendered documents.
pub fn resource_from_value(document: serde_json::Value) -> Result<Resource, String> {
    let location = Location {
        origin: String::new(),
        document: 1,
        item: None,
        line: None,
        document_line: None,
    };
    item_resource(Node::from_value(document), false, None, &location)
        .map(Read::into_resource)
        .map_err(|error| match error {
            LoadError::Document { reason, .. } => reason,
            other => other.to_string(),
        })
}

/// The top-level fields a resource document may have. `status` is accepted (a Node read back from
/// the datastore has one) but not kept: it is owned by the system, not by documents.
const TOP_LEVEL_FIELDS: [&str; 5] = ["apiVersion", "kind", "metadata", "spec", "status"];

fn document_resources<'text>(
    document: Node<'text>,
    positioned: bool,
    location: Location,
    resources: &mut Vec<Read<'text>>,
) -> Result<(), LoadError> {
    let fail = |location: &Location, reason: String| LoadError::Document {
        location: location.clone(),
        reason,
    };
    let item_location = |index: usize| Location {
        item: Some(index + 1),
        ..location.clone()
    };
    let mut entries = match document.value {
        NodeValue::Null => return Ok(()),
        NodeValue::Sequence(items) => {
            for (index, item) in items.into_iter().enumerate() {
                resources.push(item_resource(
                    item,
                    positioned,
                    None,
                    &item_location(index),
                )?);
            }
            return Ok(());
        }
        NodeValue::Mapping(entries) => entries,
        _ => {
            return Err(fail(
                &location,
                format!(
                    "expected a resource (a mapping) or a list of resources, found {}",
                    document.describe()
                ),
            ));
        }
    };
    fold_field_names(&mut entries, &["apiVersion", "kind", "metadata", "items"]);
    let kind = match entry(&entries, "kind").map(|node| &node.value) {
        Some(NodeValue::String(kind)) => kind.to_string(),
        Some(_) => return Err(fail(&location, "`kind` must be a string".to_string())),
        None => return Err(fail(&location, "document has no `kind`".to_string())),
    };
    let list_kind = if kind == "List" {
        Some(None)
    } else {
        kind.strip_suffix("List")
            .and_then(Kind::from_document_kind)
            .map(Some)
    };
    let Some(item_kind) = list_kind else {
        let document = Node {
            value: NodeValue::Mapping(entries),
            ..document
        };
        resources.push(item_resource(document, positioned, None, &location)?);
        return Ok(());
    };
    let api_version = entry(&entries, "apiVersion").and_then(Node::as_str);
    // A generic `List` is what kubectl writes (`apiVersion: v1`); typed lists are ours.
    let version_accepted = match (item_kind, api_version) {
        (None, Some("v1")) => true,
        (_, Some(version)) => version == API_VERSION,
        (_, None) => false,
    };
    if !version_accepted {
        return Err(fail(
            &location,
            format!(
                "`{kind}` must have apiVersion `{API_VERSION}`, found {}",
                describe_api_version(api_version)
            ),
        ));
    }
    let items = match entries.iter().position(|(key, _)| key == "items") {
        Some(position) => match entries.remove(position).1.value {
            NodeValue::Sequence(items) => items,
            NodeValue::Null => Vec::new(),
            _ => return Err(fail(&location, "`items` must be a list".to_string())),
        },
        None => Vec::new(),
    };
    if let Some((unknown, _)) = entries
        .iter()
        .find(|(key, _)| !["apiVersion", "kind", "metadata"].contains(&key.as_ref()))
    {
        return Err(fail(
            &location,
            format!("unknown field `{unknown}` in `{kind}`"),
        ));
    }
    for (index, item) in items.into_iter().enumerate() {
        resources.push(item_resource(
            item,
            positioned,
            item_kind,
            &item_location(index),
        )?);
    }
    Ok(())
}

/// Turns one mapping into a resource. In a `<Kind>List`, items may leave out `kind` and
/// `apiVersion`; when present they must agree with the list.
fn item_resource<'text>(
    mut node: Node<'text>,
    positioned: bool,
    list_kind: Option<Kind>,
    location: &Location,
) -> Result<Read<'text>, LoadError> {
    let fail = |reason: String| LoadError::Document {
        location: location.clone(),
        reason,
    };
    let fail_at = |node: &Node<'_>, path: &str, reason: String| LoadError::Document {
        location: Location {
            line: positioned.then(|| node.position(path, &reason).0),
            ..location.clone()
        },
        reason,
    };
    let (line, column) = (node.line, node.column);
    let NodeValue::Mapping(entries) = &mut node.value else {
        return Err(fail(format!(
            "expected a resource (a mapping), found {}",
            node.describe()
        )));
    };
    fold_field_names(entries, &TOP_LEVEL_FIELDS);
    if let Some(list_kind) = list_kind {
        for (field, value) in [("kind", list_kind.as_str()), ("apiVersion", API_VERSION)] {
            if entry(entries, field).is_none() {
                let value = NodeValue::String(Cow::Borrowed(value));
                entries.push((Cow::Borrowed(field), Node::new(line, column, value)));
            }
        }
    }
    let api_version = entry(entries, "apiVersion").and_then(Node::as_str);
    if api_version != Some(API_VERSION) {
        return Err(fail(format!(
            "apiVersion must be `{API_VERSION}`, found {}",
            describe_api_version(api_version)
        )));
    }
    let kind_text = match entry(entries, "kind").map(|node| &node.value) {
        Some(NodeValue::String(kind)) => kind.to_string(),
        Some(_) => return Err(fail("`kind` must be a string".to_string())),
        None => return Err(fail("document has no `kind`".to_string())),
    };
    let Some(kind) = Kind::from_document_kind(&kind_text) else {
        let known: Vec<&str> = Kind::ALL.iter().map(|kind| kind.as_str()).collect();
        return Err(fail(format!(
            "unknown resource kind `{kind_text}` for apiVersion `{API_VERSION}` (known kinds: {})",
            known.join(", ")
        )));
    };
    if let Some(list_kind) = list_kind {
        if kind != list_kind {
            return Err(fail(format!(
                "a `{list_kind}List` may only hold `{list_kind}` items, found `{kind}`"
            )));
        }
    }
    if let Some((unknown, _)) = entries
        .iter()
        .find(|(key, _)| !TOP_LEVEL_FIELDS.contains(&key.as_ref()))
    {
        let unknown = unknown.to_string();
        return Err(fail_at(
            &node,
            &unknown,
            format!("unknown top-level field `{unknown}`"),
        ));
    }
    document_shapes(kind)
        .normalize(&mut node, FieldNames::FoldCase)
        .map_err(|problem| fail_at(&node, &problem.path, problem.kind.to_string()))?;
    let field_problem = |node: &Node<'_>, path: String, reason: String| {
        let reason = match positioned {
            true => yaml::explain_yaml_1_1(&reason, node.find(&path)),
            false => reason,
        };
        fail_at(node, &path, format!("field `{path}`: {reason}"))
    };
    if let Some(status) = node.key("status") {
        check_status(kind, status).map_err(|(path, reason)| field_problem(&node, path, reason))?;
    }
    // The envelope is decoded without the spec and status (`null` in their place for the
    // moment); the spec stays in the node, to be decoded into its type when it is validated.
    let spec = take_entry(&mut node, "spec");
    let status = take_entry(&mut node, "status");
    let envelope = yaml::decode_node::<Resource>(&node);
    put_entry(&mut node, "spec", spec);
    put_entry(&mut node, "status", status);
    let resource = envelope.map_err(|(path, reason)| field_problem(&node, path, reason))?;
    Ok(Read {
        location: location.clone(),
        resource,
        node,
        positioned,
    })
}

/// The node of an entry of a mapping by its exact key.
fn entry<'a, 'text>(
    entries: &'a [(Cow<'text, str>, Node<'text>)],
    key: &str,
) -> Option<&'a Node<'text>> {
    entries
        .iter()
        .find(|(name, _)| name == key)
        .map(|(_, node)| node)
}

/// The value of a top-level entry, `null` left in its place.
fn take_entry<'text>(node: &mut Node<'text>, key: &str) -> Option<NodeValue<'text>> {
    let NodeValue::Mapping(entries) = &mut node.value else {
        return None;
    };
    let (_, entry) = entries.iter_mut().find(|(name, _)| name == key)?;
    Some(std::mem::replace(&mut entry.value, NodeValue::Null))
}

/// Puts back what [`take_entry`] took.
fn put_entry<'text>(node: &mut Node<'text>, key: &str, value: Option<NodeValue<'text>>) {
    let (NodeValue::Mapping(entries), Some(value)) = (&mut node.value, value) else {
        return;
    };
    if let Some((_, entry)) = entries.iter_mut().find(|(name, _)| name == key) {
        entry.value = value;
    }
}

/// The shape of each kind's document (envelope, metadata and typed spec), from its JSON Schema.
fn document_shapes(kind: Kind) -> &'static Shapes {
    static SHAPES: PerKind<Shapes> = PerKind::new();
    SHAPES.get(kind, |kind| {
        Shapes::from_schema(crate::resource::spec::schema::document_schema_of(kind))
    })
}

/// Renames keys that match one of `names` ignoring case (encoding/json's rule for the envelope,
/// which is read before the kind, and so the shape, is known). An exact match is left alone, and
/// a key whose name is already written exactly keeps its spelling (it is then unknown).
fn fold_field_names(entries: &mut [(Cow<'_, str>, Node<'_>)], names: &[&'static str]) {
    for position in 0..entries.len() {
        let key = &entries[position].0;
        if names.contains(&key.as_ref()) {
            continue;
        }
        let Some(name) = names
            .iter()
            .find(|name| yaml::fold_equal(name, key))
            .copied()
        else {
            continue;
        };
        if entries.iter().any(|(other, _)| other == name) {
            continue;
        }
        entries[position].0 = Cow::Borrowed(name);
    }
}

/// Checks what a document writes under `status` the way upstream validates it, although netctl
/// never stores it (the system owns it): a Node's status must be a NodeStatus (strictly) with valid
/// WireGuard public keys. Other kinds' status is accepted and ignored.
fn check_status(kind: Kind, status: &Node<'_>) -> Result<(), (String, String)> {
    if kind != Kind::Node || status.is_null() {
        return Ok(());
    }
    let status: crate::resource::spec::node::NodeStatus =
        yaml::decode_node(status).map_err(|(path, reason)| {
            (
                format!("status.{path}").trim_end_matches('.').to_string(),
                reason,
            )
        })?;
    for (field, key) in [
        ("wireguardPublicKey", &status.wireguard_public_key),
        ("wireguardPublicKeyV6", &status.wireguard_public_key_v6),
    ] {
        if let Some(key) = key.as_deref().filter(|key| !key.is_empty()) {
            if !crate::resource::validate::syntax::is_wireguard_key(key) {
                return Err((
                    format!("status.{field}"),
                    format!("`{key}` is not a WireGuard public key (32 bytes in standard base64)"),
                ));
            }
        }
    }
    Ok(())
}

fn describe_api_version(api_version: Option<&str>) -> String {
    match api_version {
        Some(version) => format!("`{version}`"),
        None => "none".to_string(),
    }
}
