//! Reading in chunks on several threads gives exactly what one thread gives: the same resources in
//! the same order, and the same problems with the same documents and lines.

use super::*;
use crate::release::ApiRelease;
use crate::resource::load::Loader;

/// A host endpoint document, about 300 bytes, with an indented block scalar holding marker-like
/// lines (which must not cut a chunk).
fn endpoint(index: usize) -> String {
    format!(
        "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: host-{index}\n  \
         labels: {{role: worker}}\n  annotations:\n    note: |\n      ---\n      --- not a marker\n      \
         ...\nspec:\n  node: node-{index}\n  interfaceName: eth0\n  expectedIPs: [10.0.{}.{}]\n",
        index / 250,
        index % 250 + 1
    )
}

fn stream(count: usize, replace: &[(usize, &str)]) -> String {
    (0..count)
        .map(|index| {
            replace
                .iter()
                .find(|(at, _)| *at == index)
                .map_or_else(|| endpoint(index), |(_, text)| text.to_string())
        })
        .collect()
}

/// What the loader hands out and returns for one text, as text to compare.
fn run(text: &str, threads: Threads) -> (Vec<String>, Result<(), String>) {
    let mut seen = Vec::new();
    let loader = Loader::new(&ApiRelease::newest())
        .namespace(Some("default"))
        .on_threads(threads);
    let result = loader.read_text(text, "fleet.yaml", &mut |each| {
        seen.push(match each {
            Ok(loaded) => format!("{loaded:?}"),
            Err(problem) => format!("problem: {problem}"),
        })
    });
    (seen, result.map_err(|problem| problem.to_string()))
}

const ONE_THREAD: Threads = Threads {
    chunk_bytes: usize::MAX / 4,
    workers: 1,
};

/// Chunks of about four documents, so that a stream of 40 has about ten.
const SMALL_CHUNKS: Threads = Threads {
    chunk_bytes: 1200,
    workers: 2,
};

fn parallel(text: &str) -> Parallel {
    let loader = Loader::new(&ApiRelease::newest()).namespace(Some("default"));
    let check = |read: Read<'_>| loader.check(read);
    read_in_chunks(text, "fleet.yaml", &check, &mut |_| {}, SMALL_CHUNKS)
}

#[test]
fn chunks_start_at_markers_and_carry_their_first_line() {
    let text = stream(40, &[]);
    let chunks: Vec<Chunk<'_>> = split(&text, 1200).collect();
    assert!(chunks.len() >= 8, "{} chunks", chunks.len());
    assert_eq!(chunks.concat_text(), text);
    let mut line = 1;
    for chunk in &chunks {
        assert!(
            chunk.text.starts_with("---\napiVersion"),
            "{:?}",
            chunk.text
        );
        assert_eq!(chunk.first_line, line);
        line += chunk.text.matches('\n').count();
    }
}

trait ConcatText {
    fn concat_text(&self) -> String;
}

impl ConcatText for Vec<Chunk<'_>> {
    fn concat_text(&self) -> String {
        self.iter().map(|chunk| chunk.text).collect()
    }
}

#[test]
fn a_valid_stream_gives_what_one_thread_gives() {
    let text = stream(40, &[]);
    assert_eq!(parallel(&text), Parallel::Done);
    let (seen, result) = run(&text, SMALL_CHUNKS);
    assert_eq!(result, Ok(()));
    assert_eq!(seen.len(), 40);
    assert_eq!((seen, result), run(&text, ONE_THREAD));
}

#[test]
fn invalid_resources_in_later_chunks_keep_their_documents_and_lines() {
    // Document 14 (in the fourth chunk) has an invalid address, document 31 a namespace that
    // differs from `--namespace`, and document 22 an empty document before it.
    let invalid = endpoint(13).replace("[10.0.0.14]", "[10.0.0.999]");
    let namespaced = "---\napiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata:\n  \
                      name: allow\n  namespace: other\nspec:\n  selector: all()\n";
    let text = stream(
        40,
        &[(13, &invalid), (21, "---\n# nothing\n"), (30, namespaced)],
    );
    assert_eq!(parallel(&text), Parallel::Done);
    let (seen, result) = run(&text, SMALL_CHUNKS);
    let problems: Vec<&String> = seen
        .iter()
        .filter(|each| each.starts_with("problem"))
        .collect();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].contains("`fleet.yaml` document 14 (from line 196)"),
        "{}",
        problems[0]
    );
    assert!(
        problems[0].contains("line 210: spec.expectedIPs[0]"),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].contains("`fleet.yaml` document 31 (from line"),
        "{}",
        problems[1]
    );
    assert_eq!((seen, result), run(&text, ONE_THREAD));
}

#[test]
fn malformed_yaml_in_a_chunk_is_reported_as_one_thread_reports_it() {
    // The second chunk cannot be read, the third has an invalid resource: one thread reports only
    // the stream's error, after handing out the documents before it.
    let malformed =
        "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {name: [x\n";
    let invalid = endpoint(12).replace("node: node-12", "node: Not_A_Node");
    let text = stream(40, &[(5, malformed), (12, &invalid)]);
    assert!(matches!(parallel(&text), Parallel::Abandoned { .. }));
    let (seen, result) = run(&text, SMALL_CHUNKS);
    let error = result.clone().expect_err("the stream cannot be read");
    assert!(error.contains("`fleet.yaml` document 6, line"), "{error}");
    assert_eq!((seen, result), run(&text, ONE_THREAD));
}

#[test]
fn texts_for_one_thread_are_left_to_it() {
    let text = stream(40, &[]);
    assert_eq!(
        parallel(&format!("%YAML 1.1\n{text}")),
        Parallel::NotUsed,
        "directives"
    );
    assert_eq!(parallel(&endpoint(1)), Parallel::NotUsed, "short");
    let json: String = (0..40)
        .map(|index| {
            format!(
                "{{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Tier\",\"metadata\":{{\"name\":\"t{index}\"}}}}\n"
            )
        })
        .collect();
    assert_eq!(parallel(&json), Parallel::NotUsed, "json");
    // A leading byte order mark stays with the first chunk.
    let marked = format!("\u{feff}{text}");
    assert_eq!(parallel(&marked), Parallel::Done);
    assert_eq!(run(&marked, SMALL_CHUNKS), run(&marked, ONE_THREAD));
}
