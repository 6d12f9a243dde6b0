//! Loading: YAML streams, JSON, lists, directories, and errors that say where they are.

use std::path::{Path, PathBuf};

use super::*;
use crate::release::ApiRelease;

// The loader's forms these tests were first written against, each one use of [`Loader`].

/// A lone problem as itself (an unvalidated read stops at its input's first problem).
fn single(error: LoadError) -> LoadError {
    match error {
        LoadError::Problems(mut problems) if problems.len() == 1 => problems.remove(0),
        other => other,
    }
}

fn parse_located(text: &str, origin: &str) -> Result<Vec<Loaded>, LoadError> {
    Loader::unvalidated()
        .load_text(text, origin)
        .map_err(single)
}

fn parse_documents(text: &str, origin: &str) -> Result<Vec<Resource>, LoadError> {
    parse_located(text, origin).map(|loaded| loaded.into_iter().map(|l| l.resource).collect())
}

/// The resources of each file, in order.
fn by_file(loaded: Vec<Loaded>) -> Vec<(String, Vec<Resource>)> {
    let mut files: Vec<(String, Vec<Resource>)> = Vec::new();
    for Loaded { location, resource } in loaded {
        match files.last_mut() {
            Some((origin, resources)) if *origin == location.origin => resources.push(resource),
            _ => files.push((location.origin, vec![resource])),
        }
    }
    files
}

fn load_path(path: &Path, recursive: bool) -> Result<Vec<(String, Vec<Resource>)>, LoadError> {
    Loader::unvalidated()
        .recursive(recursive)
        .load(vec![Input::Path(path.to_path_buf())])
        .map(by_file)
        .map_err(single)
}

fn load_and_validate_for(
    inputs: &[Input],
    namespace: Option<&str>,
    release: &ApiRelease,
) -> Result<Vec<(String, Vec<Resource>)>, LoadError> {
    Loader::new(release)
        .namespace(namespace)
        .load(inputs.to_vec())
        .map(by_file)
}

fn load_and_validate(
    inputs: &[Input],
    namespace: Option<&str>,
) -> Result<Vec<(String, Vec<Resource>)>, LoadError> {
    load_and_validate_for(inputs, namespace, &ApiRelease::newest())
}

fn load_and_validate_each(
    inputs: &[Input],
    namespace: Option<&str>,
    release: &ApiRelease,
    mut visit: impl FnMut(Resource),
) -> Result<(), LoadError> {
    let mut problems = Vec::new();
    let loader = Loader::new(release).namespace(namespace);
    for document in loader.documents(inputs.to_vec()) {
        match document {
            Ok(loaded) => visit(loaded.resource),
            Err(problem) => problems.push(problem),
        }
    }
    LoadError::from_problems(problems)
}

const POOL: &str = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool1}\nspec: {cidr: 10.0.0.0/16}\n";

#[test]
fn yaml_stream_with_empty_documents() {
    let text = format!(
        "---\n{POOL}---\n# only a comment\n---\napiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {{name: security}}\n...\n"
    );
    let resources = parse_documents(&text, "pools.yaml").unwrap();
    let names: Vec<String> = resources.iter().map(|r| r.key().to_string()).collect();
    assert_eq!(names, ["IPPool(pool1)", "Tier(security)"]);
}

#[test]
fn json_documents_and_json_arrays() {
    let text = r#"{"apiVersion":"projectcalico.org/v3","kind":"Tier","metadata":{"name":"a"}}
[{"apiVersion":"projectcalico.org/v3","kind":"Tier","metadata":{"name":"b"}},
 {"apiVersion":"projectcalico.org/v3","kind":"Tier","metadata":{"name":"c"}}]"#;
    let resources = parse_documents(text, "tiers.json").unwrap();
    let names: Vec<&str> = resources.iter().map(|r| r.metadata.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[test]
fn json_documents_separated_by_yaml_markers() {
    // `kubectl`-style files mix the two: JSON documents between `---` lines.
    let text = "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Tier\",\"metadata\":{\"name\":\"a\"}}\n---\n{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Tier\",\"metadata\":{\"name\":\"b\"}}\n--- \napiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: c}\n";
    let resources = parse_documents(text, "mixed.yaml").unwrap();
    let names: Vec<&str> = resources.iter().map(|r| r.metadata.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[test]
fn yaml_flow_sequences_are_not_mistaken_for_json() {
    let text = "[{apiVersion: projectcalico.org/v3, kind: Tier, metadata: {name: a}}]\n";
    let resources = parse_documents(text, "flow.yaml").unwrap();
    assert_eq!(resources[0].metadata.name, "a");
}

#[test]
fn problems_after_parsing_name_the_line_where_the_document_starts() {
    let yaml = format!("# pools\n{POOL}---\n\n---\napiVersion: projectcalico.org/v3\nkind: Pool\n");
    assert!(
        load_error(&yaml, "p.yaml")
            .starts_with("`p.yaml` document 3 (from line 8): unknown resource kind `Pool`")
    );
    let json = "{\"apiVersion\": \"projectcalico.org/v3\", \"kind\": \"Tier\", \"metadata\": {\"name\": \"a\"}}\n\n  {\"kind\": \"Tier\"}";
    assert_eq!(
        load_error(json, "t.json"),
        "`t.json` document 2 (from line 3): apiVersion must be `projectcalico.org/v3`, found none"
    );
}

#[test]
fn typed_and_generic_lists() {
    let text = r#"
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicyList
items:
  - metadata: {name: one}
    spec: {selector: all()}
  - apiVersion: projectcalico.org/v3
    kind: GlobalNetworkPolicy
    metadata: {name: two}
---
apiVersion: v1
kind: List
items:
  - apiVersion: projectcalico.org/v3
    kind: HostEndpoint
    metadata: {name: hep}
    spec: {node: n1, interfaceName: eth0}
"#;
    let located = parse_located(text, "<stdin>").unwrap();
    let summary: Vec<String> = located
        .iter()
        .map(|item| format!("{} at {}", item.resource.key(), item.location))
        .collect();
    assert_eq!(
        summary,
        [
            "GlobalNetworkPolicy(one) at `<stdin>` document 1 (from line 2), item 1",
            "GlobalNetworkPolicy(two) at `<stdin>` document 1 (from line 2), item 2",
            "HostEndpoint(hep) at `<stdin>` document 2 (from line 10), item 1",
        ]
    );
}

fn load_error(text: &str, origin: &str) -> String {
    parse_documents(text, origin).unwrap_err().to_string()
}

#[test]
fn errors_name_origin_document_and_line() {
    let broken = format!(
        "{POOL}---\napiVersion: projectcalico.org/v3\nkind: Tier\nmetadata:\n  name: [unclosed\n"
    );
    insta::assert_snapshot!(load_error(&broken, "manifests/pools.yaml"), @"`manifests/pools.yaml` document 2, line 10: invalid YAML: while parsing a flow sequence, expected ',' or ']'");
    insta::assert_snapshot!(
        load_error("{\"kind\": \"Tier\",\n \"apiVersion\": }", "tier.json"),
        @"`tier.json` document 1, line 2: invalid JSON: expected value"
    );
}

#[test]
fn api_version_and_kind_are_checked() {
    let wrong_version = "apiVersion: projectcalico.org/v2\nkind: Tier\nmetadata: {name: a}\n";
    assert_eq!(
        load_error(wrong_version, "a.yaml"),
        "`a.yaml` document 1 (from line 1): apiVersion must be `projectcalico.org/v3`, found `projectcalico.org/v2`"
    );
    let unknown_kind = format!(
        "{POOL}---\napiVersion: projectcalico.org/v3\nkind: BGPFilters\nmetadata: {{name: a}}\n"
    );
    assert!(
        load_error(&unknown_kind, "b.yaml").starts_with(
            "`b.yaml` document 2 (from line 5): unknown resource kind `BGPFilters` for apiVersion `projectcalico.org/v3` (known kinds: BGPConfiguration, "
        )
    );
    assert_eq!(
        load_error("metadata: {name: a}\n", "c.yaml"),
        "`c.yaml` document 1 (from line 1): document has no `kind`"
    );
    assert_eq!(
        load_error(
            "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: a}\nspecs: {}\n",
            "d.yaml"
        ),
        "`d.yaml` document 1, line 4: unknown top-level field `specs`"
    );
    assert_eq!(
        load_error(
            "apiVersion: projectcalico.org/v3\nkind: TierList\nitems:\n  - kind: IPPool\n    metadata: {name: a}\n",
            "e.yaml"
        ),
        "`e.yaml` document 1 (from line 1), item 1: a `TierList` may only hold `Tier` items, found `IPPool`"
    );
    assert_eq!(
        load_error("just text\n", "f.yaml"),
        "`f.yaml` document 1 (from line 1): expected a resource (a mapping) or a list of resources, found a string"
    );
    assert_eq!(
        load_error(
            "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: a, labels: {x: [1]}}\n",
            "g.yaml"
        ),
        "`g.yaml` document 1, line 3: field `metadata.labels.x`: invalid type: sequence, expected a string"
    );
}

#[test]
fn node_status_is_accepted_and_dropped() {
    let text = "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n1}\nspec: {}\nstatus: {podCIDRs: [10.0.0.0/24]}\n";
    let resources = parse_documents(text, "node.yaml").unwrap();
    assert_eq!(resources[0].metadata.name, "n1");
}

fn scratch_directory() -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path();
    std::fs::create_dir(root.join("nested")).unwrap();
    let tier = |name: &str| {
        format!("apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {{name: {name}}}\n")
    };
    std::fs::write(root.join("b.YAML"), tier("b")).unwrap();
    std::fs::write(
        root.join("a.json"),
        r#"{"apiVersion":"projectcalico.org/v3","kind":"Tier","metadata":{"name":"a"}}"#,
    )
    .unwrap();
    std::fs::write(root.join("c.yml"), tier("c")).unwrap();
    std::fs::write(root.join("notes.txt"), "not a manifest").unwrap();
    std::fs::write(root.join("nested").join("d.yaml"), tier("d")).unwrap();
    directory
}

fn names(files: &[(String, Vec<Resource>)]) -> Vec<String> {
    files
        .iter()
        .flat_map(|(_, resources)| resources.iter().map(|r| r.metadata.name.clone()))
        .collect()
}

#[test]
fn directories_are_read_in_sorted_order_and_recursively_on_request() {
    let directory = scratch_directory();
    let flat = load_path(directory.path(), false).unwrap();
    assert_eq!(names(&flat), ["a", "b", "c"]);
    assert!(flat[0].0.ends_with("a.json"));
    let recursive = load_path(directory.path(), true).unwrap();
    assert_eq!(names(&recursive), ["a", "b", "c", "d"]);
    let single = load_path(&directory.path().join("c.yml"), false).unwrap();
    assert_eq!(names(&single), ["c"]);
}

#[test]
fn missing_paths_and_stdin_are_errors() {
    let error = load_path(&PathBuf::from("/nonexistent/x.yaml"), false).unwrap_err();
    assert_eq!(error.to_string(), "cannot read `/nonexistent/x.yaml`");
    assert!(matches!(
        load_path(&PathBuf::from("-"), false),
        Err(LoadError::StandardInputAsPath)
    ));
}

#[test]
fn load_and_validate_reports_every_problem_of_every_input() {
    let directory = scratch_directory();
    std::fs::write(
        directory.path().join("z.yaml"),
        "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: small}\nspec: {cidr: 10.0.0.0/28}\n---\napiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: ok}\n",
    )
    .unwrap();
    let inputs = [
        Input::Path(directory.path().to_path_buf()),
        Input::Text {
            origin: "<stdin>".to_string(),
            text: "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: p}\nspec: {ingress: [{action: allow, protocol: tcp}]}\n".to_string(),
        },
        Input::Text {
            origin: "broken.yaml".to_string(),
            text: "kind: [".to_string(),
        },
    ];
    let error = load_and_validate(&inputs, None).unwrap_err();
    let text = error
        .to_string()
        .replace(&directory.path().display().to_string(), "DIR");
    insta::assert_snapshot!(text, @r"
    found 3 problems in the input:
    - `broken.yaml` document 1, line 2: invalid YAML: while parsing a node, did not find expected node content
    - `DIR/z.yaml` document 1 (from line 1): `IPPool(small)` has 1 error:
        line 4: spec.cidr = '10.0.0.0/28': IP pool size is too small for use with Calico IPAM: the prefix length must be at most the block size (26)
    - `<stdin>` document 1 (from line 1): `GlobalNetworkPolicy(p)` has 2 errors:
        line 4: spec.ingress[0].action = 'allow': must be one of `Allow`, `Deny`, `Log` or `Pass`
        line 4: spec.ingress[0].protocol = 'tcp': protocol name invalid (names are case-sensitive: use `TCP`)
    ");
}

#[test]
fn load_and_validate_returns_defaulted_resources() {
    let inputs = [Input::Text {
        origin: "<stdin>".to_string(),
        text: POOL.to_string(),
    }];
    let files = load_and_validate(&inputs, None).unwrap();
    assert_eq!(files[0].0, "<stdin>");
    assert_eq!(files[0].1[0].spec["blockSize"], 26);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The loader reports bad input as errors; it never panics, whatever the bytes.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            let _ = parse_documents(&text, "<fuzz>");
        }

        /// Every resource of a generated stream comes back, in order, whatever empty documents
        /// and comments sit between them. Names that YAML 1.1 reads as another type when plain
        /// (`on`, `no`, `null`: upstream stores `"true"`, `"false"`, `""`) are left out here;
        /// `scalars_in_string_fields_are_stored_as_upstream_stores_them` covers them.
        #[test]
        fn generated_streams_load_every_document(
            names in proptest::collection::vec(
                "[a-z][a-z0-9-]{0,20}[a-z0-9]".prop_filter("plain text in YAML 1.1", |name| {
                    !matches!(
                        name.as_str(),
                        "y" | "yes" | "n" | "no" | "on" | "off" | "true" | "false" | "null"
                    )
                }),
                0..8,
            ),
            padding in proptest::collection::vec(0usize..3, 8),
        ) {
            let mut text = String::new();
            for (index, name) in names.iter().enumerate() {
                for _ in 0..padding[index] {
                    text.push_str("---\n# nothing here\n");
                }
                text.push_str(&format!(
                    "---\napiVersion: projectcalico.org/v3\nkind: Tier\nmetadata:\n  name: {name}\n"
                ));
            }
            let resources = parse_documents(&text, "<generated>").unwrap();
            let loaded: Vec<String> = resources.into_iter().map(|r| r.metadata.name).collect();
            prop_assert_eq!(loaded, names);
        }
    }
}

/// Loads and validates one text, as `apply -f` does.
fn load_one(text: &str) -> Result<Resource, String> {
    let inputs = [Input::Text {
        origin: "r.yaml".to_string(),
        text: text.to_string(),
    }];
    load_and_validate(&inputs, None)
        .map(|mut files| files.remove(0).1.remove(0))
        .map_err(|error| error.to_string())
}

#[test]
fn scalars_in_string_fields_are_stored_as_upstream_stores_them() {
    let node = load_one(
        "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    route-reflector: yes\n    routeReflector: true\n    num: 123\n    mode: 0400\n    off: Off\n",
    )
    .unwrap();
    let labels: Vec<(&str, &str)> = node
        .metadata
        .labels
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("false", "false"),
            ("mode", "256"),
            ("num", "123"),
            ("route-reflector", "true"),
            ("routeReflector", "true"),
        ]
    );
}

#[test]
fn field_names_match_case_insensitively_as_upstream() {
    let tier = load_one(
        "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: t}\nspec:\n  Order: 50\n",
    )
    .unwrap();
    assert_eq!(tier.spec["order"], 50);
    let controllers = load_one(
        "apiVersion: projectcalico.org/v3\nkind: KubeControllersConfiguration\nmetadata: {name: default}\nspec:\n  etcdv3CompactionPeriod: 10m\n",
    )
    .unwrap();
    assert_eq!(controllers.spec["etcdV3CompactionPeriod"], "10m");
    let filter = load_one(
        "apiVersion: projectcalico.org/v3\nkind: BGPFilter\nmetadata: {name: f}\nspec:\n  exportv4:\n    - {action: Accept, matchOperator: In, cidr: 10.0.0.0/8}\n",
    )
    .unwrap();
    assert_eq!(filter.spec["exportV4"][0]["cidr"], "10.0.0.0/8");
    let envelope =
        load_one("APIVersion: projectcalico.org/v3\nKind: Tier\nMetadata: {Name: u}\n").unwrap();
    assert_eq!(envelope.metadata.name, "u");
}

#[test]
fn one_field_written_twice_is_refused() {
    let error = load_one(
        "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: t}\nspec:\n  order: 1\n  Order: 2\n",
    )
    .unwrap_err();
    assert_eq!(
        error,
        "found 1 problem in the input:\n- `r.yaml` document 1, line 6: `order` and `Order` both set the field `order`"
    );
}

#[test]
fn an_unquoted_off_is_the_boolean_false_and_refused_where_a_word_is_expected() {
    let error = load_one(
        "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata: {name: default}\nspec:\n  bpfLogLevel: Off\n",
    )
    .unwrap_err();
    insta::assert_snapshot!(error, @r"
    found 1 problem in the input:
    - `r.yaml` document 1 (from line 1): `FelixConfiguration(default)` has 1 error:
        line 5: spec.bpfLogLevel = 'false': must be one of `Off`, `Info` or `Debug` (written `Off` without quotes, which YAML 1.1 reads as the boolean false; quote it to keep the text)
    ");
    let quoted = load_one(
        "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata: {name: default}\nspec:\n  bpfLogLevel: 'Off'\n",
    )
    .unwrap();
    assert_eq!(quoted.spec["bpfLogLevel"], "Off");
}

#[test]
fn empty_service_cluster_ip_blocks_are_accepted_as_upstream() {
    let configuration = load_one(
        "apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata: {name: default}\nspec:\n  serviceClusterIPs: [{}]\n",
    )
    .unwrap();
    assert_eq!(
        configuration.spec["serviceClusterIPs"],
        serde_json::json!([{}])
    );
}

#[test]
fn node_status_is_checked_as_upstream_and_not_kept() {
    let valid_key = "x6NhvRBrSdfAKxs5VPtPTaJDgMknF3cGsMoR2WvBm2E=";
    let node = load_one(&format!(
        "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {{name: n1}}\nstatus:\n  wireguardPublicKey: {valid_key}\n  podCIDRs: [10.0.0.0/24]\n"
    ))
    .unwrap();
    assert!(node.status.is_null());
    let error = load_one(
        "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n1}\nstatus:\n  wireguardPublicKey: not-a-key\n",
    )
    .unwrap_err();
    assert_eq!(
        error,
        "found 1 problem in the input:\n- `r.yaml` document 1, line 5: field `status.wireguardPublicKey`: `not-a-key` is not a WireGuard public key (32 bytes in standard base64)"
    );
    let unknown = load_one(
        "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n1}\nstatus:\n  wireguardKey: x\n",
    )
    .unwrap_err();
    assert!(
        unknown.contains("line 5: field `status.wireguardKey`: unknown field"),
        "{unknown}"
    );
}

#[test]
fn duplicate_keys_are_refused_with_document_line_and_key() {
    let policy = "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata:\n  name: p\nspec:\n  ingress:\n    - action: Allow\n  ingress:\n    - action: Deny\n";
    let error = load_one(&format!("{POOL}---\n{policy}")).unwrap_err();
    assert_eq!(
        error,
        "found 1 problem in the input:\n- `r.yaml` document 2, line 13: duplicate key `ingress`"
    );
    let names = "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata:\n  name: a\n  name: b\n";
    assert_eq!(
        load_one(names).unwrap_err(),
        "found 1 problem in the input:\n- `r.yaml` document 1, line 5: duplicate key `name`"
    );
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let pool = load_one(&format!("\u{feff}{POOL}")).unwrap();
    assert_eq!(pool.metadata.name, "pool1");
    let tier = load_one(
        "\u{feff}{\"apiVersion\": \"projectcalico.org/v3\", \"kind\": \"Tier\", \"metadata\": {\"name\": \"t\"}}",
    )
    .unwrap();
    assert_eq!(tier.metadata.name, "t");
}

/// Documents are read one at a time, but a stream that cannot be read is still reported before
/// what an earlier document says (as when the whole stream was read before any document).
#[test]
fn a_syntax_error_later_in_a_stream_is_reported_before_an_earlier_bad_document() {
    let text = format!("---\nkind: Nonsense\n---\n{POOL}---\nspec: [unclosed\n");
    let error = parse_documents(&text, "mixed.yaml").unwrap_err();
    let LoadError::Document { location, reason } = error else {
        panic!("expected a document error, got {error:?}");
    };
    assert_eq!(location.document, 3, "{reason}");
    assert!(reason.starts_with("invalid YAML"), "{reason}");
    // Without the syntax error, the first document's problem is the one reported.
    let text = format!("---\nkind: Nonsense\n---\n{POOL}");
    let error = parse_documents(&text, "mixed.yaml")
        .unwrap_err()
        .to_string();
    assert!(error.contains("document 1"), "{error}");
}

/// Streaming validation reports what loading everything first reported: read problems of every
/// input first, then every invalid resource, and nothing of an input that could not be read.
#[test]
fn validation_one_document_at_a_time_reports_every_problem_in_order() {
    let bad = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: bad}\nspec: {cidr: 10.0.0.1/16}\n";
    let inputs = [
        Input::Text {
            origin: "first.yaml".into(),
            text: format!("---\n{bad}---\n{POOL}---\n{bad}"),
        },
        Input::Text {
            origin: "broken.yaml".into(),
            text: format!("---\n{bad}---\nspec: [unclosed\n"),
        },
    ];
    let mut visited = Vec::new();
    let error = load_and_validate_each(&inputs, None, &ApiRelease::newest(), |resource| {
        visited.push(resource.metadata.name)
    })
    .unwrap_err();
    assert_eq!(visited, ["pool1"]);
    let LoadError::Problems(problems) = error else {
        panic!("expected every problem, got {error:?}");
    };
    let origins: Vec<String> = problems
        .iter()
        .map(|problem| match problem {
            LoadError::Document { location, .. } | LoadError::Invalid { location, .. } => {
                format!("{} {}", location.origin, location.document)
            }
            other => other.to_string(),
        })
        .collect();
    assert_eq!(origins, ["broken.yaml 2", "first.yaml 1", "first.yaml 3"]);
    let collected = load_and_validate_for(&inputs, None, &ApiRelease::newest())
        .unwrap_err()
        .to_string();
    assert_eq!(LoadError::Problems(problems).to_string(), collected);
}
