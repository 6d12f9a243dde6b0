//! Loading resource documents: one [`Loader`] with the options of `-f` (recursive, namespace,
//! release, skip-empty) and one iterator of located, validated documents.
//!
//! A load is a pipeline of stages, one module each:
//!
//! 1. `inputs.rs`: each input's files (a file, a directory's manifests in sorted order, text the
//!    caller read) as origin and text;
//! 2. `split.rs`: a text's documents (a YAML stream, or concatenated JSON values), each with the
//!    line it starts on and the lines of its fields; a long YAML stream is cut into chunks read on
//!    several threads with exactly the results of one (`chunks.rs`);
//! 3. `document.rs`: a document's resources (a resource, a `List`/`<Kind>List`, a sequence), the
//!    envelope read as upstream reads it;
//! 4. here: `--namespace` applied and each resource validated and defaulted for the release.
//!
//! Every problem says where it is: the origin (a file path or `<stdin>`), the 1-based document
//! index, the list item when there is one, and a line: the parser's for syntax errors, the field's
//! for validation errors, the line the document starts on otherwise. The valid documents come out
//! as they are read, then every problem: problems reading the inputs first, then the invalid
//! resources, as when every input was read before any was validated; an input that cannot be read
//! whole contributes only that problem. Whoever finds a problem writes nothing. This module reads
//! files but never writes, and never talks to a datastore; standard input is read by the caller
//! and passed in as text.

use std::fmt;
use std::path::PathBuf;
use std::sync::mpsc;

use super::Resource;
use super::validate::{ValidationError, validate_node, validate_node_and_default};
use crate::listing::{Limit, Listed};
use crate::release::ApiRelease;
use crate::yaml;

mod chunks;
mod document;
mod inputs;
mod problems;
mod split;

use document::Read;
pub use document::resource_from_value;
pub use inputs::Input;

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
    #[error("`-` (standard input) cannot be loaded as a path: read it and pass its text")]
    StandardInputAsPath,
    /// The inputs hold no resource, and the loader was not told to skip empty input.
    #[error("no resources specified in the input (pass `--skip-empty` if that is expected)")]
    Empty,
    /// Every problem found across all inputs, so that nothing is written when anything is wrong;
    /// past twenty, the rest are counted by kind (`listing`).
    #[error("{}", self.listed(&Limit::Bounded).unwrap_or_default())]
    Problems(Vec<LoadError>),
}

impl LoadError {
    /// The problems a load reported (in order) as one error: none is `Ok`, a lone
    /// [`LoadError::Empty`] stays itself, anything else is [`LoadError::Problems`].
    pub fn from_problems(mut problems: Vec<LoadError>) -> Result<(), LoadError> {
        match problems.as_slice() {
            [] => Ok(()),
            [LoadError::Empty] => Err(problems.remove(0)),
            _ => Err(LoadError::Problems(problems)),
        }
    }
}

/// A resource loaded, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub location: Location,
    pub resource: Resource,
}

/// What a loader does with each resource it reads.
#[derive(Debug, Clone)]
enum Checks {
    /// Applies `--namespace` and validates and defaults for the release.
    Validate {
        release: ApiRelease,
        namespace: Option<String>,
        /// Whether each resource keeps its defaulted spec (not for a command that keeps nothing).
        keep_specs: bool,
    },
    /// Keeps each resource as written (tests, fuzzing, documents validated later).
    None,
}

/// Reads resource documents from files, directories and text: see the module documentation.
///
/// ```no_run
/// # use netctl::resource::load::{Input, Loader};
/// # use netctl::release::ApiRelease;
/// let loader = Loader::new(&ApiRelease::newest()).namespace(Some("prod")).recursive(true);
/// let inputs = vec![Input::Path("policies/".into())];
/// for document in loader.documents(inputs) {
///     match document {
///         Ok(loaded) => println!("{} at {}", loaded.resource.key(), loaded.location),
///         Err(problem) => eprintln!("{problem}"),
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Loader {
    checks: Checks,
    recursive: bool,
    skip_empty: bool,
    threads: chunks::Threads,
}

impl Loader {
    /// A loader that validates and defaults every resource for `release` (the cluster's line,
    /// `--release`, or offline the newest); a field, value or kind the release lacks is a problem
    /// of its document. Namespaced resources without a namespace get `default`.
    pub fn new(release: &ApiRelease) -> Loader {
        Loader {
            checks: Checks::Validate {
                release: release.clone(),
                namespace: None,
                keep_specs: true,
            },
            recursive: false,
            skip_empty: true,
            threads: chunks::Threads::available(),
        }
    }

    /// A loader that reads resources as they are written, without validating them (documents
    /// validated later, tests, fuzzing).
    pub fn unvalidated() -> Loader {
        Loader {
            checks: Checks::None,
            ..Loader::new(&ApiRelease::newest())
        }
    }

    /// The command's `-n/--namespace`: a namespaced resource without a namespace gets it (or
    /// `default` when no flag was given), and one whose namespace differs from the flag is a
    /// problem (upstream `handleNamespace` in `calicoctl/calicoctl/commands/common/resources.go`).
    pub fn namespace(mut self, namespace: Option<&str>) -> Loader {
        if let Checks::Validate {
            namespace: flag, ..
        } = &mut self.checks
        {
            *flag = namespace.map(str::to_string);
        }
        self
    }

    /// Whether each resource keeps its validated, defaulted spec (it does unless told otherwise).
    /// Without, resources come with no spec: for a command that only reports (`validate`), which
    /// then never builds it.
    pub fn keep_specs(mut self, keep: bool) -> Loader {
        if let Checks::Validate { keep_specs, .. } = &mut self.checks {
            *keep_specs = keep;
        }
        self
    }

    /// `-R`: a directory's sub-directories are read too.
    pub fn recursive(mut self, recursive: bool) -> Loader {
        self.recursive = recursive;
        self
    }

    /// Without `--skip-empty`, inputs that hold no resource are a problem (upstream's "no
    /// resources specified"). Loaders skip empty input unless told otherwise.
    pub fn skip_empty(mut self, skip_empty: bool) -> Loader {
        self.skip_empty = skip_empty;
        self
    }

    /// Every resource of `inputs`, located and (unless [`Loader::unvalidated`]) validated, in
    /// order as each is read, then every problem: see the module documentation. Nothing read is
    /// kept once handed out, so inputs of any length are loaded in the memory of a few documents.
    pub fn documents(&self, inputs: Vec<Input>) -> Documents {
        // A bounded channel from a thread that runs the pipeline: memory stays that of a few
        // documents, and dropping the iterator stops the reading at the next document.
        let (sender, receiver) = mpsc::sync_channel(DOCUMENTS_AHEAD);
        let loader = self.clone();
        let worker = std::thread::spawn(move || {
            loader.run(&inputs, &mut |item| {
                // The receiver is gone when the caller stopped reading.
                let _ = sender.send(item);
            });
        });
        Documents {
            receiver,
            worker: Some(worker),
        }
    }

    /// Every resource of `inputs`, or every problem when there is any.
    pub fn load(&self, inputs: Vec<Input>) -> Result<Vec<Loaded>, LoadError> {
        let mut loaded = Vec::new();
        let mut problems = Vec::new();
        self.run(&inputs, &mut |item| match item {
            Ok(resource) => loaded.push(resource),
            Err(problem) => problems.push(problem),
        });
        LoadError::from_problems(problems).map(|()| loaded)
    }

    /// [`Loader::load`] of one text read by the caller.
    pub fn load_text(&self, text: &str, origin: &str) -> Result<Vec<Loaded>, LoadError> {
        self.load(vec![Input::Text {
            origin: origin.to_string(),
            text: text.to_string(),
        }])
    }

    /// The pipeline: valid resources to `out` as they are read, then the problems in order.
    fn run(&self, inputs: &[Input], out: &mut dyn FnMut(Result<Loaded, LoadError>)) {
        let mut read_problems = Vec::new();
        let mut invalid = Vec::new();
        let mut count = 0;
        for input in inputs {
            let mut input_invalid = Vec::new();
            let read = inputs::each_text(input, self.recursive, &mut |origin, text| {
                self.read_text(text, origin, &mut |each| match each {
                    Ok(loaded) => {
                        count += 1;
                        out(Ok(loaded));
                    }
                    Err(problem) => input_invalid.push(problem),
                })
            });
            match read {
                Ok(()) => invalid.extend(input_invalid),
                Err(LoadError::Problems(more)) => read_problems.extend(more),
                Err(problem) => read_problems.push(problem),
            }
        }
        read_problems.extend(invalid);
        if read_problems.is_empty() && count == 0 && !self.skip_empty {
            read_problems.push(LoadError::Empty);
        }
        read_problems
            .into_iter()
            .for_each(|problem| out(Err(problem)));
    }

    /// Reads and checks the documents of one file's `text`, handing each resource (valid, or its
    /// problem) to `visit` in document order; a long YAML stream is read on several threads (see
    /// [`chunks`]), with the same results as one thread. Stops at the first document that cannot
    /// be read.
    fn read_text(
        &self,
        text: &str,
        origin: &str,
        visit: &mut dyn FnMut(Result<Loaded, LoadError>),
    ) -> Result<(), LoadError> {
        let check = |read: Read<'_>| self.check(read);
        let delivered = match chunks::read_in_chunks(text, origin, &check, visit, self.threads) {
            chunks::Parallel::Done => return Ok(()),
            chunks::Parallel::NotUsed => 0,
            chunks::Parallel::Abandoned { delivered } => delivered,
        };
        // One thread, from the start; what the abandoned run already handed out is not handed out
        // again (the same text gives the same results in the same order).
        let mut skip = delivered;
        document::each_read(split::split_documents(text, origin), origin, |read| {
            if skip > 0 {
                skip -= 1;
            } else {
                visit(check(read));
            }
        })
        .map(|_| ())
    }

    /// Applies `--namespace` to one resource read, then validates and defaults it for the
    /// release, its spec decoded straight from the document; a problem names the document and,
    /// for YAML input, the line of the field.
    fn check(&self, read: Read<'_>) -> Result<Loaded, LoadError> {
        let Checks::Validate {
            release,
            namespace,
            keep_specs,
        } = &self.checks
        else {
            let location = read.location.clone();
            return Ok(Loaded {
                location,
                resource: read.into_resource(),
            });
        };
        let Read {
            location,
            mut resource,
            node,
            positioned,
        } = read;
        if resource.kind.is_namespaced() {
            match (&resource.metadata.namespace, namespace) {
                (None, flag) => {
                    resource.metadata.namespace =
                        Some(flag.as_deref().unwrap_or("default").to_string());
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
        let checked = match keep_specs {
            true => validate_node_and_default(&mut resource, node.key("spec"), release),
            false => validate_node(&resource, node.key("spec"), release),
        };
        match checked {
            Ok(()) => Ok(Loaded { location, resource }),
            Err(mut error) => {
                if positioned {
                    for field in &mut error.errors {
                        let written = node.find(&field.path);
                        field.line = Some(written.line);
                        field.reason = yaml::explain_yaml_1_1(&field.reason, written);
                    }
                }
                Err(LoadError::Invalid {
                    location,
                    error: Box::new(error),
                })
            }
        }
    }

    /// This loader reading in the given chunks and threads (tests).
    #[cfg(test)]
    fn on_threads(mut self, threads: chunks::Threads) -> Loader {
        self.threads = threads;
        self
    }
}

/// How many results the reading thread of [`Loader::documents`] may be ahead of the caller.
const DOCUMENTS_AHEAD: usize = 64;

/// The documents of a load, in order: see [`Loader::documents`].
#[derive(Debug)]
pub struct Documents {
    receiver: mpsc::Receiver<Result<Loaded, LoadError>>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Iterator for Documents {
    type Item = Result<Loaded, LoadError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.receiver.recv() {
            Ok(item) => Some(item),
            Err(mpsc::RecvError) => {
                // The pipeline ended; a panic in it is a bug, and is passed on as one.
                if let Some(worker) = self.worker.take() {
                    if let Err(panic) = worker.join() {
                        std::panic::resume_unwind(panic);
                    }
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests;
