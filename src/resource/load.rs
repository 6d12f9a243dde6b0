//! Reading resource documents: YAML streams, JSON, and lists, from text, files and directories.
//!
//! A file holds any number of documents (a YAML stream separated by `---`, or concatenated JSON
//! values); each document is one resource, a `List` / `<Kind>List` with `items`, or a sequence of
//! resources. Every error says where it is: the origin (a file path or `<stdin>`), the 1-based
//! document index, the list item when there is one, and a line: the parser's for syntax errors, the
//! line the document starts on for anything found later. This module reads files but never writes,
//! and never talks to a datastore; standard input is read by the caller and passed in as text.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::validate::{ValidationError, validate_and_default_for};
use super::{API_VERSION, Kind, Resource};
use crate::listing::{Limit, Listed};
use crate::release::ApiRelease;
use crate::yaml::{self, FieldNames, Lines, Shapes};

/// Where in the input a document (or list item) is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// A file path, or `<stdin>`.
    pub origin: String,
    /// The 1-based index of the document in its file.
    pub document: usize,
    /// The 1-based index of the item when the document is a list.
    pub item: Option<usize>,
    /// The 1-based line of the problem, when the parser reported one.
    pub line: Option<usize>,
    /// The 1-based line where the document starts, when it is known.
    pub document_line: Option<usize>,
}

/// Renders as `` `file.yaml` document 2, line 14 `` for a parser error, and as
/// `` `file.yaml` document 2 (from line 9), item 3 `` for a problem found after parsing.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` document {}", self.origin, self.document)?;
        if let (None, Some(document_line)) = (self.line, self.document_line) {
            write!(f, " (from line {document_line})")?;
        }
        if let Some(item) = self.item {
            write!(f, ", item {item}")?;
        }
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        Ok(())
    }
}

/// Why documents could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{location}: {reason}")]
    Document { location: Location, reason: String },
    /// A resource that parsed but is invalid. The validation error is the content of this error,
    /// not a cause, so it is rendered here and not chained as a source.
    #[error("{location}: {error}")]
    Invalid {
        location: Location,
        error: Box<ValidationError>,
    },
    #[error("`-` (standard input) cannot be loaded as a path: read it and call `parse_documents`")]
    StandardInputAsPath,
    /// Every problem found across all inputs, so that nothing is written when anything is wrong;
    /// past twenty, the rest are counted by kind (`listing`).
    #[error("{}", self.listed(&Limit::Bounded).unwrap_or_default())]
    Problems(Vec<LoadError>),
}

/// One input to [`load_and_validate`].
#[derive(Debug, Clone)]
pub enum Input {
    /// A file or a directory (its `.yaml`, `.yml` and `.json` files), optionally recursive.
    Path { path: PathBuf, recursive: bool },
    /// Text already read by the caller, e.g. standard input with origin `<stdin>`.
    Text { origin: String, text: String },
}

/// A resource and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedResource {
    pub location: Location,
    pub resource: Resource,
    /// Where each field of the resource was written (YAML input only), for the lines of
    /// validation errors.
    pub lines: Option<Lines>,
}

/// Parses every document of `text` into resources (not yet validated). Empty documents are skipped.
pub fn parse_documents(text: &str, origin: &str) -> Result<Vec<Resource>, LoadError> {
    Ok(parse_located(text, origin)?
        .into_iter()
        .map(|located| located.resource)
        .collect())
}

/// As [`parse_documents`], keeping where each resource was found.
pub fn parse_located(text: &str, origin: &str) -> Result<Vec<LocatedResource>, LoadError> {
    let mut resources = Vec::new();
    each_located(text, origin, |located| resources.push(located))?;
    Ok(resources)
}

/// Parses the documents of `text` one at a time and hands each resource (not yet validated) to
/// `visit` as soon as its document is read: nothing of a document is kept after its visit. Stops
/// at the first document that cannot be read.
fn each_located(
    text: &str,
    origin: &str,
    visit: impl FnMut(LocatedResource),
) -> Result<(), LoadError> {
    each_located_in(split_documents(text, origin), origin, visit).map(|_| ())
}

/// As [`each_located`], over documents already split; returns how many documents there were.
fn each_located_in(
    mut documents: impl Iterator<Item = Result<Document, LoadError>>,
    origin: &str,
    mut visit: impl FnMut(LocatedResource),
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
            document_resources(document.value, document.lines, location, &mut resources)
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
    item_resource(document, None, None, &location)
        .map(|(resource, _)| resource)
        .map_err(|error| match error {
            LoadError::Document { reason, .. } => reason,
            other => other.to_string(),
        })
}

/// Reads a file, or every `.yaml`/`.yml`/`.json` file (any case) of a directory in sorted order,
/// descending into sub-directories when `recursive`. Returns each file's origin and resources.
///
/// An empty file or directory gives an empty list: whether that is an error (upstream's "no
/// resources specified", unless `--skip-empty`) is the caller's decision.
pub fn load_path(path: &Path, recursive: bool) -> Result<Vec<(String, Vec<Resource>)>, LoadError> {
    load_path_located(path, recursive).map(|files| {
        files
            .into_iter()
            .map(|(origin, located)| {
                let resources = located.into_iter().map(|item| item.resource).collect();
                (origin, resources)
            })
            .collect()
    })
}

fn load_path_located(
    path: &Path,
    recursive: bool,
) -> Result<Vec<(String, Vec<LocatedResource>)>, LoadError> {
    let mut loaded: Vec<(String, Vec<LocatedResource>)> = Vec::new();
    each_path_located(path, recursive, &mut |visit| match visit {
        Visit::File(origin) => loaded.push((origin.to_string(), Vec::new())),
        Visit::Resource(located) => {
            if let Some((_, resources)) = loaded.last_mut() {
                resources.push(located);
            }
        }
    })?;
    Ok(loaded)
}

/// What a reader hands to its visitor: the origin of each file before its resources, then the
/// resources one by one.
enum Visit<'origin, T> {
    File(&'origin str),
    Resource(T),
}

/// Reads a file, or the files of a directory (see [`load_path`]), one at a time: `read` is given
/// each file's origin and text.
fn each_path_text(
    path: &Path,
    recursive: bool,
    read: &mut dyn FnMut(&str, &str) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    if path == Path::new("-") {
        return Err(LoadError::StandardInputAsPath);
    }
    let read_error = |source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_dir() {
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        let origin = path.display().to_string();
        return read(&origin, &text);
    }
    let mut files = Vec::new();
    collect_files(path, recursive, &mut files)?;
    files.sort();
    for each in files {
        each_path_text(&each, false, read)?;
    }
    Ok(())
}

/// Reads a file, or the files of a directory (see [`load_path`]), one at a time.
fn each_path_located(
    path: &Path,
    recursive: bool,
    visit: &mut dyn FnMut(Visit<'_, LocatedResource>),
) -> Result<(), LoadError> {
    each_path_text(path, recursive, &mut |origin, text| {
        visit(Visit::File(origin));
        each_located(text, origin, |located| visit(Visit::Resource(located)))
    })
}

fn collect_files(
    directory: &Path,
    recursive: bool,
    files: &mut Vec<PathBuf>,
) -> Result<(), LoadError> {
    let read_error = |source| LoadError::Read {
        path: directory.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(directory).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let path = entry.path();
        // `is_dir` follows symbolic links, as upstream's directory walk does.
        if path.is_dir() {
            if recursive {
                collect_files(&path, recursive, files)?;
            }
        } else if has_manifest_extension(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn has_manifest_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| {
            ["yaml", "yml", "json"]
                .iter()
                .any(|known| extension.eq_ignore_ascii_case(known))
        })
}

/// Loads every input and validates (and defaults) every resource. Returns ALL problems at once —
/// unreadable files, malformed documents and invalid resources across every input — so a caller can
/// refuse before writing anything.
///
/// `namespace` is the command's `-n/--namespace`: a namespaced resource without a namespace gets it
/// (or `default` when no flag was given), and one whose namespace differs from the flag is a problem
/// (`reference/calicoctl.md` §4.1).
pub fn load_and_validate(
    inputs: &[Input],
    namespace: Option<&str>,
) -> Result<Vec<(String, Vec<Resource>)>, LoadError> {
    load_and_validate_for(inputs, namespace, &ApiRelease::newest())
}

/// As [`load_and_validate`], validating and defaulting for `release` (the cluster's line,
/// `--release`): a field, value or kind the release lacks is a problem of its document.
pub fn load_and_validate_for(
    inputs: &[Input],
    namespace: Option<&str>,
    release: &ApiRelease,
) -> Result<Vec<(String, Vec<Resource>)>, LoadError> {
    let mut validated: Vec<(String, Vec<Resource>)> = Vec::new();
    each_validated(inputs, namespace, release, &mut |visit| match visit {
        Visit::File(origin) => validated.push((origin.to_string(), Vec::new())),
        Visit::Resource(resource) => {
            if let Some((_, resources)) = validated.last_mut() {
                resources.push(resource);
            }
        }
    })?;
    Ok(validated)
}

/// As [`load_and_validate_for`], one resource at a time: each valid resource (defaulted) is
/// handed to `visit` as soon as its document is read and checked, and only the problems are kept,
/// so inputs of any length are validated in the memory of one document. The problems are the
/// same as [`load_and_validate_for`]'s, in the same order; when there are any, what `visit` was
/// given must not be used (nothing may be written).
pub fn load_and_validate_each(
    inputs: &[Input],
    namespace: Option<&str>,
    release: &ApiRelease,
    mut visit: impl FnMut(Resource),
) -> Result<(), LoadError> {
    each_validated(inputs, namespace, release, &mut |each| {
        if let Visit::Resource(resource) = each {
            visit(resource);
        }
    })
}

/// The one loop behind [`load_and_validate_for`] and [`load_and_validate_each`]: each file (its
/// origin) is visited before its valid resources.
fn each_validated(
    inputs: &[Input],
    namespace: Option<&str>,
    release: &ApiRelease,
    visit: &mut dyn FnMut(Visit<'_, Resource>),
) -> Result<(), LoadError> {
    // Problems reading the inputs come first, then the invalid resources, as when every input was
    // read before any was validated. An input that cannot be read whole contributes only that
    // problem: its documents are not validated.
    let mut read_problems = Vec::new();
    let mut invalid = Vec::new();
    for input in inputs {
        let mut input_invalid = Vec::new();
        let mut read = |origin: &str, text: &str| {
            visit(Visit::File(origin));
            validate_text(text, origin, namespace, release, &mut |each| match each {
                Ok(resource) => visit(Visit::Resource(resource)),
                Err(problem) => input_invalid.push(problem),
            })
        };
        let read = match input {
            Input::Path { path, recursive } => each_path_text(path, *recursive, &mut read),
            Input::Text { origin, text } => read(origin, text),
        };
        match read {
            Ok(()) => invalid.extend(input_invalid),
            Err(LoadError::Problems(more)) => read_problems.extend(more),
            Err(problem) => read_problems.push(problem),
        }
    }
    read_problems.extend(invalid);
    if read_problems.is_empty() {
        Ok(())
    } else {
        Err(LoadError::Problems(read_problems))
    }
}

/// Reads and validates the documents of one file's `text`, handing each resource (valid, or its
/// problem) to `visit` in document order; a long YAML stream is read on several threads (see
/// [`chunks`]), with the same results as one thread. Stops at the first document that cannot be
/// read, as [`each_located`] does.
fn validate_text(
    text: &str,
    origin: &str,
    namespace: Option<&str>,
    release: &ApiRelease,
    visit: &mut dyn FnMut(Result<Resource, LoadError>),
) -> Result<(), LoadError> {
    let threads = chunks::Threads::available();
    validate_text_on(text, origin, namespace, release, visit, threads)
}

/// [`validate_text`] with the given chunks and threads.
fn validate_text_on(
    text: &str,
    origin: &str,
    namespace: Option<&str>,
    release: &ApiRelease,
    visit: &mut dyn FnMut(Result<Resource, LoadError>),
    threads: chunks::Threads,
) -> Result<(), LoadError> {
    let validate = |located| validate_located(located, namespace, release);
    let delivered = match chunks::validate_in_chunks(text, origin, &validate, visit, threads) {
        chunks::Parallel::Done => return Ok(()),
        chunks::Parallel::NotUsed => 0,
        chunks::Parallel::Abandoned { delivered } => delivered,
    };
    // One thread, from the start; what the abandoned run already handed out is not handed out
    // again (the same text gives the same results in the same order).
    let mut skip = delivered;
    each_located(text, origin, |located| {
        if skip > 0 {
            skip -= 1;
        } else {
            visit(validate(located));
        }
    })
}

/// Applies `--namespace` to one resource read, then validates and defaults it for `release`; a
/// problem names the document and, for YAML input, the line of the field.
fn validate_located(
    located: LocatedResource,
    namespace: Option<&str>,
    release: &ApiRelease,
) -> Result<Resource, LoadError> {
    let LocatedResource {
        location,
        mut resource,
        lines,
    } = located;
    if resource.kind.is_namespaced() {
        match (&resource.metadata.namespace, namespace) {
            (None, flag) => {
                resource.metadata.namespace = Some(flag.unwrap_or("default").to_string());
            }
            (Some(own), Some(flag)) if own != flag => {
                return Err(LoadError::Document {
                    location,
                    reason: format!(
                        "the resource's namespace `{own}` does not match `--namespace {flag}`"
                    ),
                });
            }
            _ => {}
        }
    }
    match validate_and_default_for(&mut resource, release) {
        Ok(()) => Ok(resource),
        Err(mut error) => {
            if let Some(lines) = &lines {
                for field in &mut error.errors {
                    let node = lines.find(&field.path);
                    field.line = Some(node.line);
                    field.reason = yaml::explain_yaml_1_1(&field.reason, node);
                }
            }
            Err(LoadError::Invalid {
                location,
                error: Box::new(error),
            })
        }
    }
}

static PARSER_LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r" at line \d+ column \d+").expect("the parser location pattern is a valid regex")
});

/// A document as JSON, the line it starts on and the lines of its fields, when known.
struct Document {
    value: serde_json::Value,
    line: Option<usize>,
    lines: Option<Lines>,
}

/// Splits `text` into documents, read one at a time: a JSON stream (concatenated values) when the
/// text is JSON, a YAML stream otherwise. The documents end after the first one that cannot be read.
fn split_documents<'text>(
    text: &'text str,
    origin: &'text str,
) -> Box<dyn Iterator<Item = Result<Document, LoadError>> + 'text> {
    // JSON documents separated by `---` lines (as upstream's splitter allows) are a YAML stream:
    // YAML reads JSON.
    if looks_like_json(text) && !has_document_separator(text) {
        Box::new(split_json(text, origin))
    } else {
        Box::new(split_yaml(text, origin))
    }
}

/// Whether a line is a YAML document separator (`---`, optionally followed by a space and more).
fn has_document_separator(text: &str) -> bool {
    text.lines()
        .any(|line| line.trim_end() == "---" || line.starts_with("--- "))
}

/// Whether text is JSON rather than YAML. A YAML flow collection (`[{kind: Tier, ...}]`) starts
/// with the same brackets, so look past them: JSON's first key or value is quoted (or a number or
/// a closing bracket), YAML's is usually a bare word.
fn looks_like_json(text: &str) -> bool {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return false;
    }
    let first_token = trimmed
        .chars()
        .find(|c| !(c.is_whitespace() || *c == '{' || *c == '['));
    match first_token {
        None => true,
        Some(c) => c == '"' || c == '-' || c == '}' || c == ']' || c.is_ascii_digit(),
    }
}

fn split_json<'text>(
    text: &'text str,
    origin: &'text str,
) -> impl Iterator<Item = Result<Document, LoadError>> + 'text {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    let mut count = 0;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        // The next value starts after the previous one and any whitespace.
        let offset = stream.byte_offset();
        let start = text[offset..]
            .find(|c: char| !c.is_whitespace())
            .map(|skipped| offset + skipped);
        let document = stream.next()?;
        count += 1;
        let document = match document {
            Ok(document) => document,
            Err(error) => {
                failed = true;
                return Some(Err(LoadError::Document {
                    location: Location {
                        origin: origin.to_string(),
                        document: count,
                        item: None,
                        line: Some(error.line()),
                        document_line: None,
                    },
                    reason: format!(
                        "invalid JSON: {}",
                        PARSER_LOCATION.replace_all(&error.to_string(), "")
                    ),
                }));
            }
        };
        let line = start.map(|start| line_of_offset(text, start));
        Some(Ok(Document {
            value: document,
            line,
            lines: None,
        }))
    })
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

fn split_yaml<'text>(
    text: &'text str,
    origin: &'text str,
) -> impl Iterator<Item = Result<Document, LoadError>> + 'text {
    split_yaml_from(text, origin, 1)
}

/// As [`split_yaml`], for the part of a stream that starts on line `first_line` of it.
fn split_yaml_from<'text>(
    text: &'text str,
    origin: &'text str,
    first_line: usize,
) -> impl Iterator<Item = Result<Document, LoadError>> + 'text {
    yaml::stream_from(text, first_line).map(move |document| match document {
        Ok(document) => Ok(Document {
            value: document.value,
            line: Some(document.line),
            lines: Some(document.lines),
        }),
        Err(error) => Err(LoadError::Document {
            location: Location {
                origin: origin.to_string(),
                document: error.document,
                item: None,
                line: Some(error.line),
                document_line: None,
            },
            reason: error.reason(),
        }),
    })
}

/// The top-level fields a resource document may have. `status` is accepted (a Node read back from
/// the datastore has one) but not kept: it is owned by the system, not by documents.
const TOP_LEVEL_FIELDS: [&str; 5] = ["apiVersion", "kind", "metadata", "spec", "status"];

fn document_resources(
    document: serde_json::Value,
    lines: Option<Lines>,
    location: Location,
    resources: &mut Vec<LocatedResource>,
) -> Result<(), LoadError> {
    let fail = |location: &Location, reason: String| LoadError::Document {
        location: location.clone(),
        reason,
    };
    match document {
        serde_json::Value::Null => Ok(()),
        serde_json::Value::Array(items) => {
            for (index, item) in items.into_iter().enumerate() {
                let item_location = Location {
                    item: Some(index + 1),
                    ..location.clone()
                };
                let item_lines = lines.as_ref().and_then(|lines| lines.index(index)).cloned();
                let (resource, item_lines) = item_resource(item, item_lines, None, &item_location)?;
                resources.push(LocatedResource {
                    location: item_location,
                    resource,
                    lines: item_lines,
                });
            }
            Ok(())
        }
        serde_json::Value::Object(mut object) => {
            fold_field_names(&mut object, &["apiVersion", "kind", "metadata", "items"]);
            let kind = match object.get("kind") {
                Some(serde_json::Value::String(kind)) => kind.clone(),
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
                let (resource, lines) =
                    item_resource(serde_json::Value::Object(object), lines, None, &location)?;
                resources.push(LocatedResource {
                    location,
                    resource,
                    lines,
                });
                return Ok(());
            };
            let api_version = object.get("apiVersion").and_then(|value| value.as_str());
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
            let items = match object.remove("items") {
                Some(serde_json::Value::Array(items)) => items,
                Some(serde_json::Value::Null) | None => Vec::new(),
                Some(_) => return Err(fail(&location, "`items` must be a list".to_string())),
            };
            if let Some(unknown) = object
                .keys()
                .find(|key| !["apiVersion", "kind", "metadata"].contains(&key.as_str()))
            {
                return Err(fail(
                    &location,
                    format!("unknown field `{unknown}` in `{kind}`"),
                ));
            }
            let items_lines = lines.as_ref().and_then(|lines| lines.key("items"));
            for (index, item) in items.into_iter().enumerate() {
                let item_location = Location {
                    item: Some(index + 1),
                    ..location.clone()
                };
                let item_lines = items_lines.and_then(|lines| lines.index(index)).cloned();
                let (resource, item_lines) =
                    item_resource(item, item_lines, item_kind, &item_location)?;
                resources.push(LocatedResource {
                    location: item_location,
                    resource,
                    lines: item_lines,
                });
            }
            Ok(())
        }
        other => Err(fail(
            &location,
            format!(
                "expected a resource (a mapping) or a list of resources, found {}",
                describe_json_type(&other)
            ),
        )),
    }
}

/// Turns one mapping into a resource. In a `<Kind>List`, items may leave out `kind` and
/// `apiVersion`; when present they must agree with the list.
fn item_resource(
    item: serde_json::Value,
    lines: Option<Lines>,
    list_kind: Option<Kind>,
    location: &Location,
) -> Result<(Resource, Option<Lines>), LoadError> {
    let fail = |reason: String| LoadError::Document {
        location: location.clone(),
        reason,
    };
    let fail_at = |path: &str, reason: String| {
        let line = lines.as_ref().map(|lines| lines.position(path, &reason).0);
        LoadError::Document {
            location: Location {
                line,
                ..location.clone()
            },
            reason,
        }
    };
    let serde_json::Value::Object(mut object) = item else {
        return Err(fail(format!(
            "expected a resource (a mapping), found {}",
            describe_json_type(&item)
        )));
    };
    fold_field_names(&mut object, &TOP_LEVEL_FIELDS);
    if let Some(list_kind) = list_kind {
        object
            .entry("kind")
            .or_insert_with(|| serde_json::Value::String(list_kind.as_str().to_string()));
        object
            .entry("apiVersion")
            .or_insert_with(|| serde_json::Value::String(API_VERSION.to_string()));
    }
    let api_version = object.get("apiVersion").and_then(|value| value.as_str());
    if api_version != Some(API_VERSION) {
        return Err(fail(format!(
            "apiVersion must be `{API_VERSION}`, found {}",
            describe_api_version(api_version)
        )));
    }
    let kind_text = match object.get("kind") {
        Some(serde_json::Value::String(kind)) => kind.clone(),
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
    if let Some(unknown) = object
        .keys()
        .find(|key| !TOP_LEVEL_FIELDS.contains(&key.as_str()))
    {
        return Err(fail_at(
            unknown,
            format!("unknown top-level field `{unknown}`"),
        ));
    }
    let mut document = serde_json::Value::Object(object);
    document_shapes(kind)
        .normalize(&mut document, FieldNames::FoldCase)
        .map_err(|problem| fail_at(&problem.path, problem.kind.to_string()))?;
    let serde_json::Value::Object(mut object) = document else {
        unreachable!("normalising a mapping keeps it a mapping");
    };
    if let Some(status) = object.remove("status") {
        check_status(kind, status).map_err(|(path, reason)| {
            let reason = match &lines {
                Some(lines) => yaml::explain_yaml_1_1(&reason, lines.find(&path)),
                None => reason,
            };
            fail_at(&path, format!("field `{path}`: {reason}"))
        })?;
    }
    // The spec is any JSON value: moved into the resource, not decoded into a copy of itself.
    let spec = object.swap_remove("spec").unwrap_or_default();
    let mut resource: Resource =
        yaml::decode_value(serde_json::Value::Object(object)).map_err(|(path, reason)| {
            let reason = match &lines {
                Some(lines) => yaml::explain_yaml_1_1(&reason, lines.find(&path)),
                None => reason,
            };
            fail_at(&path, format!("field `{path}`: {reason}"))
        })?;
    resource.spec = spec;
    Ok((resource, lines))
}

/// The shape of each kind's document (envelope, metadata and typed spec), from its JSON Schema.
fn document_shapes(kind: Kind) -> &'static Shapes {
    static SHAPES: LazyLock<Vec<(Kind, Shapes)>> = LazyLock::new(|| {
        Kind::ALL
            .iter()
            .map(|kind| {
                (
                    *kind,
                    Shapes::from_schema(&super::spec::document_schema(*kind)),
                )
            })
            .collect()
    });
    SHAPES
        .iter()
        .find(|(known, _)| *known == kind)
        .map(|(_, shapes)| shapes)
        .expect("every kind has a document schema")
}

/// Renames keys that match one of `names` ignoring case (encoding/json's rule for the envelope,
/// which is read before the kind, and so the shape, is known). An exact match is left alone.
fn fold_field_names(object: &mut serde_json::Map<String, serde_json::Value>, names: &[&str]) {
    let renames: Vec<(String, &str)> = object
        .keys()
        .filter(|key| !names.contains(&key.as_str()))
        .filter_map(|key| {
            names
                .iter()
                .find(|name| yaml::fold_equal(name, key) && !object.contains_key(**name))
                .map(|name| (key.clone(), *name))
        })
        .collect();
    for (from, to) in renames {
        if object.contains_key(to) {
            continue;
        }
        if let Some(value) = object.shift_remove(&from) {
            object.insert(to.to_string(), value);
        }
    }
}

/// Checks what a document writes under `status` the way upstream validates it, although netctl
/// never stores it (the system owns it): a Node's status must be a NodeStatus (strictly) with valid
/// WireGuard public keys. Other kinds' status is accepted and ignored.
fn check_status(kind: Kind, status: serde_json::Value) -> Result<(), (String, String)> {
    if kind != Kind::Node || status.is_null() {
        return Ok(());
    }
    let status: super::spec::node::NodeStatus =
        yaml::decode_value(status).map_err(|(path, reason)| {
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
            if !super::validate::syntax::is_wireguard_key(key) {
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

fn describe_json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "nothing",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

mod chunks;
mod problems;
#[cfg(test)]
mod tests;
