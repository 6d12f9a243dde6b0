//! Reading and checking a long YAML stream on several threads, with exactly the results of one
//! thread. The text is cut into chunks of a few hundred documents at document markers (a `---` at
//! the start of a line, which YAML allows inside no scalar, so the parser ends a document there
//! too); worker threads read and validate chunks, and the calling thread hands the results out in
//! document order, with a few chunks in flight at most so that memory stays that of a few chunks.
//! Lines are those of the whole stream (each chunk is read from its first line) and document
//! indexes are shifted by the documents of the chunks before.
//!
//! Anything unusual is left to the one-thread reader: a short text, JSON, directives (`%YAML`),
//! a machine with one core. A chunk that cannot be read abandons the run, and the caller reads the
//! whole text again on one thread, so that what is reported (the error, and that it comes before
//! what the documents say) is exactly what one thread reports. This module does not know what a
//! resource is made of, or how it is validated.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use super::document::{Read, each_read};
use super::split::{has_document_separator, looks_like_json, split_yaml_from};
use super::{LoadError, Loaded};

/// About how much text one chunk holds (a hundred or two resource documents).
const CHUNK_BYTES: usize = 64 * 1024;

/// The most chunks each worker may have read ahead of what has been handed out.
const CHUNKS_AHEAD_PER_WORKER: usize = 1;

/// The most worker threads: reading is cheap enough that more would wait on the hand-out.
const MAX_WORKERS: usize = 4;

/// What [`read_in_chunks`] did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Parallel {
    /// Every document was read and handed out.
    Done,
    /// The text is not one for several threads; nothing was handed out.
    NotUsed,
    /// A chunk could not be read; this many results were handed out before it.
    Abandoned { delivered: usize },
}

/// A part of the text that starts at a document marker (or at the start), and its first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Chunk<'text> {
    pub(super) text: &'text str,
    pub(super) first_line: usize,
}

/// What a worker made of one chunk: how many documents it holds and each resource's result, or
/// `None` when the chunk could not be read.
type Outcome = Option<(usize, Vec<Result<Loaded, LoadError>>)>;

/// How a text is read in chunks: their size and the number of worker threads.
#[derive(Debug, Clone, Copy)]
pub(super) struct Threads {
    pub(super) chunk_bytes: usize,
    pub(super) workers: usize,
}

impl Threads {
    /// Chunks of a few hundred documents, on every core (a few at most).
    pub(super) fn available() -> Threads {
        let workers = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(MAX_WORKERS);
        Threads {
            chunk_bytes: CHUNK_BYTES,
            workers,
        }
    }
}

/// What is done with each resource read: the loader's checks.
type Check<'a> = &'a (dyn Fn(Read<'_>) -> Result<Loaded, LoadError> + Sync);

/// Reads and checks `text` in chunks on several threads when it is worth it, handing each result
/// to `visit` in document order (as the one-thread reader would, with the same locations).
pub(super) fn read_in_chunks(
    text: &str,
    origin: &str,
    check: Check<'_>,
    visit: &mut dyn FnMut(Result<Loaded, LoadError>),
    threads: Threads,
) -> Parallel {
    let Threads {
        chunk_bytes,
        workers,
    } = threads;
    if workers < 2 || !suits_chunks(text, chunk_bytes) {
        return Parallel::NotUsed;
    }
    let mut chunks = split(text, chunk_bytes).peekable();
    let Some(first) = chunks.next() else {
        return Parallel::NotUsed;
    };
    if chunks.peek().is_none() {
        return Parallel::NotUsed;
    }
    let mut chunks = std::iter::once(first).chain(chunks);
    let abandoned = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut jobs = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (job_sender, job_receiver) = mpsc::sync_channel::<(
                Chunk<'_>,
                mpsc::SyncSender<Outcome>,
            )>(CHUNKS_AHEAD_PER_WORKER);
            let abandoned = &abandoned;
            scope.spawn(move || {
                for (chunk, reply) in job_receiver {
                    let outcome = if abandoned.load(Ordering::Relaxed) {
                        None
                    } else {
                        read_chunk(chunk, origin, check)
                    };
                    // The receiver is gone only when the run was abandoned.
                    let _ = reply.send(outcome);
                }
            });
            jobs.push(job_sender);
        }
        let in_flight_limit = workers * CHUNKS_AHEAD_PER_WORKER;
        let mut in_flight: VecDeque<mpsc::Receiver<Outcome>> = VecDeque::new();
        let mut next_worker = 0;
        let mut documents_before = 0;
        let mut delivered = 0;
        loop {
            while in_flight.len() < in_flight_limit {
                let Some(chunk) = chunks.next() else { break };
                let (reply, outcome) = mpsc::sync_channel(1);
                if jobs[next_worker].send((chunk, reply)).is_err() {
                    // A worker that is gone panicked; the scope reports it.
                    abandoned.store(true, Ordering::Relaxed);
                    return Parallel::Abandoned { delivered };
                }
                next_worker = (next_worker + 1) % workers;
                in_flight.push_back(outcome);
            }
            let Some(next) = in_flight.pop_front() else {
                return Parallel::Done;
            };
            let Ok(Some((documents, results))) = next.recv() else {
                abandoned.store(true, Ordering::Relaxed);
                return Parallel::Abandoned { delivered };
            };
            for result in results {
                visit(match result {
                    Ok(mut loaded) => {
                        loaded.location.document += documents_before;
                        Ok(loaded)
                    }
                    Err(problem) => Err(shift_document(problem, documents_before)),
                });
                delivered += 1;
            }
            documents_before += documents;
        }
    })
}

/// Reads and checks one chunk on its own; `None` when it cannot be read.
fn read_chunk(chunk: Chunk<'_>, origin: &str, check: Check<'_>) -> Outcome {
    let mut results = Vec::new();
    let documents = each_read(
        split_yaml_from(chunk.text, origin, chunk.first_line),
        origin,
        |read| results.push(check(read)),
    )
    .ok()?;
    Some((documents, results))
}

/// A problem found in a chunk, with the index of its document in the whole stream.
fn shift_document(mut problem: LoadError, documents_before: usize) -> LoadError {
    match &mut problem {
        LoadError::Document { location, .. } | LoadError::Invalid { location, .. } => {
            location.document += documents_before;
        }
        LoadError::Read { .. }
        | LoadError::StandardInputAsPath
        | LoadError::Empty
        | LoadError::Problems(_) => {}
    }
    problem
}

/// Whether `text` is a YAML stream long enough for chunks and without anything the one-thread
/// reader had better handle: JSON (read as JSON values), or directives (which apply to the
/// document after them).
pub(super) fn suits_chunks(text: &str, chunk_bytes: usize) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let read_as_json = looks_like_json(text) && !has_document_separator(text);
    let has_directives = text.starts_with('%') || text.contains("\n%");
    text.len() >= 2 * chunk_bytes && !read_as_json && !has_directives
}

/// Cuts `text` into chunks of at least `chunk_bytes` (but the last), each but the first starting
/// on a document marker line: `---` alone or followed by a space or tab.
pub(super) fn split(text: &str, chunk_bytes: usize) -> impl Iterator<Item = Chunk<'_>> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut first_line = 1;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end = next_marker(bytes, start + chunk_bytes.max(1)).unwrap_or(bytes.len());
        let chunk = Chunk {
            // Both ends are at the start of a line (or of the text, or its end): char boundaries.
            text: &text[start..end],
            first_line,
        };
        first_line += bytes[start..end]
            .iter()
            .filter(|byte| **byte == b'\n')
            .count();
        start = end;
        Some(chunk)
    })
}

/// The offset of the first document marker line that starts after a line break at or after `from`.
fn next_marker(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from.checked_sub(1)?;
    while at < bytes.len() {
        let newline = at + bytes[at..].iter().position(|byte| *byte == b'\n')?;
        let line = newline + 1;
        let rest = &bytes[line..];
        if rest.starts_with(b"---")
            && matches!(rest.get(3), None | Some(b'\n' | b'\r' | b' ' | b'\t'))
        {
            return Some(line);
        }
        at = line;
    }
    None
}

#[cfg(test)]
mod tests;
