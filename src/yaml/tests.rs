use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::*;

#[test]
fn yaml_1_1_values_as_kubectl_sends_them() {
    let text = "mode: 0400\ngroup: 0440\nbulk: yes\nb: on\nc: Off\nnil: ~\nf: 1e3\nh: 0x1F\nq: '0400'\nd: \"yes\"\nt: 2024-01-01\ns: 190:20:30\n";
    let values = read_values(text).unwrap();
    assert_eq!(
        values,
        vec![json!({
            "mode": 256, "group": 288, "bulk": true, "b": true, "c": false, "nil": null,
            "f": 1000, "h": 31, "q": "0400", "d": "yes", "t": "2024-01-01",
            "s": "190:20:30"
        })]
    );
}

#[test]
fn keys_become_strings_as_sigs_yaml_converts_them() {
    let values = read_values("yes: a\n1: b\n1.5: c\nn: d\n").unwrap();
    assert_eq!(
        values,
        vec![json!({"true": "a", "1": "b", "1.5": "c", "false": "d"})]
    );
    let error = read_documents("~: a\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "document 1, line 1: a null cannot be a key"
    );
}

#[test]
fn duplicate_keys_are_refused_with_document_line_and_key() {
    let text = "a: 1\n---\nspec:\n  ingress: []\n  egress: []\n  ingress: [x]\n";
    let error = read_documents(text).unwrap_err();
    assert_eq!(error.document, 2);
    assert_eq!(error.line, 6);
    assert_eq!(
        error.to_string(),
        "document 2, line 6: duplicate key `ingress`"
    );
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let values = read_values("\u{feff}kind: Tier\n").unwrap();
    assert_eq!(values, vec![json!({"kind": "Tier"})]);
}

#[test]
fn documents_know_their_lines() {
    let text = "# comment\n\na: 1\n---\n---\nb:\n  - c: 2\n";
    let documents = read_documents(text).unwrap();
    let lines: Vec<usize> = documents.iter().map(|document| document.line).collect();
    assert_eq!(lines, vec![3, 4, 5]);
    assert!(documents[1].value.is_null());
    assert_eq!(documents[2].lines.find("b[0].c").line, 7);
    assert_eq!(documents[2].lines.find("b[0].missing").line, 7);
}

#[test]
fn merge_keys_and_aliases() {
    let text = "base: &base {a: 1, b: 2}\nderived:\n  <<: *base\n  b: 3\nagain: *base\n";
    let values = read_values(text).unwrap();
    assert_eq!(
        values,
        vec![
            json!({"base": {"a": 1, "b": 2}, "derived": {"b": 3, "a": 1}, "again": {"a": 1, "b": 2}})
        ]
    );
}

#[test]
fn alias_bombs_are_refused_quickly() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..12 {
        let previous = level - 1;
        text.push_str(&format!(
            "a{level}: &a{level} [*a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}, *a{previous}]\n"
        ));
    }
    let started = std::time::Instant::now();
    let error = read_documents(&text).unwrap_err();
    assert_eq!(error.kind, YamlErrorKind::TooManyAliases);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn deep_nesting_is_refused_without_exhausting_the_stack() {
    let text = "[".repeat(10_000) + &"]".repeat(10_000);
    let error = read_documents(&text).unwrap_err();
    // The parser has its own limit, below netctl's for flow collections.
    let refused = error.kind == YamlErrorKind::TooDeep
        || error.to_string().contains("recursion limit exceeded");
    assert!(refused, "{error}");
    let block: String = (0..10_000)
        .map(|depth| format!("{}- \n", " ".repeat(depth * 2)))
        .collect();
    assert!(read_documents(&block).is_err());
}

#[test]
fn values_json_cannot_hold_are_refused_with_their_line() {
    let error = read_documents("a: 1\nb: .inf\n").unwrap_err();
    assert_eq!(error.line, 2);
    assert!(
        error.to_string().contains("`.inf` cannot be represented"),
        "{error}"
    );
}

#[test]
fn core_tags_are_honoured() {
    let values = read_values("a: !!str 0400\nb: !!int '12'\nc: !!float 1\n").unwrap();
    assert_eq!(values, vec![json!({"a": "0400", "b": 12, "c": 1})]);
    let error = read_documents("a: !!int nope\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "document 1, line 1: `nope` is not a valid `!!int`"
    );
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Target {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    order: Option<f64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    items: Vec<Item>,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Item {
    export_v4: Option<String>,
}

#[test]
fn scalars_become_text_where_the_type_has_a_string() {
    let text = "labels:\n  rr: yes\n  num: 123\n  f: 1e6\n  z: 0400\nname: true\ncount: 1e3\n";
    let target: Target = from_str_shaped(text, &Shapes::of::<Target>(), FieldNames::Exact).unwrap();
    assert_eq!(target.labels["rr"], "true");
    assert_eq!(target.labels["num"], "123");
    assert_eq!(target.labels["f"], "1e+06");
    assert_eq!(target.labels["z"], "256");
    assert_eq!(target.name.as_deref(), Some("true"));
    assert_eq!(target.count, Some(1000));
}

#[test]
fn field_names_fold_case_when_asked_with_an_exact_match_preferred() {
    let shapes = Shapes::of::<Target>();
    let text = "Order: 5\nitems:\n  - exportv4: x\n";
    let target: Target = from_str_shaped(text, &shapes, FieldNames::FoldCase).unwrap();
    assert_eq!(target.order, Some(5.0));
    assert_eq!(target.items[0].export_v4.as_deref(), Some("x"));

    let error = from_str_shaped::<Target>(text, &shapes, FieldNames::Exact).unwrap_err();
    assert_eq!(error.line, 1);
    assert!(
        error.to_string().contains("field `Order`: unknown field"),
        "{error}"
    );

    let error = from_str_shaped::<Target>("order: 1\nORDER: 2\n", &shapes, FieldNames::FoldCase)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "document 1, line 2: `order` and `ORDER` both set the field `order`"
    );
}

#[test]
fn a_wrong_type_names_its_field_line_and_what_yaml_1_1_read() {
    let error = from_str_shaped::<Target>(
        "name: a\ncount: off\n",
        &Shapes::of::<Target>(),
        FieldNames::Exact,
    )
    .unwrap_err();
    assert_eq!(error.line, 2);
    let message = error.to_string();
    assert!(
        message.starts_with("document 1, line 2: field `count`: invalid type: boolean `false`"),
        "{message}"
    );
    assert!(
        message.contains("written `off` without quotes, which YAML 1.1 reads as the boolean false"),
        "{message}"
    );
}

#[test]
fn written_yaml_reads_back_as_the_same_values() {
    let value = json!({
        "strings": ["no", "on", "yes", "1e3", "0400", "~", "2024-01-01", "190:20:30", "plain", ""],
        "numbers": [256, 1.5, -3],
        "flags": [true, false, null],
        "text": "first\nsecond",
    });
    let written = to_string(&value).unwrap();
    assert_eq!(read_values(&written).unwrap(), vec![value]);
}

#[test]
fn nulls_are_go_zero_values() {
    let text = "labels:\n  empty: ~\nname: null\nitems: ~\n";
    let target: Target = from_str_shaped(text, &Shapes::of::<Target>(), FieldNames::Exact).unwrap();
    assert_eq!(target.labels["empty"], "");
    assert_eq!(target.name, None);
    assert!(target.items.is_empty());
}

#[test]
fn aliases_follow_go_yaml_v2s_ratio_rule() {
    // A small bomb (10^4 nodes) is refused early, and without building it.
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..5 {
        let previous = level - 1;
        let aliases = vec![format!("*a{previous}"); 10].join(", ");
        bomb.push_str(&format!("a{level}: &a{level} [{aliases}]\n"));
    }
    assert_eq!(
        read_documents(&bomb).unwrap_err().kind,
        YamlErrorKind::TooManyAliases
    );
    // A document that reuses one anchor a hundred times among plenty of written nodes is read.
    let mut reuse = String::from("base: &base {a: 1, b: 2, c: 3}\nitems:\n");
    for index in 0..300 {
        reuse.push_str(&format!(
            "- {{name: n{index}, x: 1, y: 2, z: 3, w: 4, v: 5}}\n"
        ));
        if index % 3 == 0 {
            reuse.push_str("- *base\n");
        }
    }
    assert!(read_documents(&reuse).is_ok());
    // The counts restart with each document of a stream: one such document (606 nodes, 99.01% from
    // aliases) is under the 1,000-node floor; two in one count would be refused.
    let document = format!("a: &a [x]\nb: [{}]\n", vec!["*a"; 300].join(", "));
    let stream = vec![document.as_str(); 20].join("---\n");
    assert!(read_documents(&stream).is_ok());
    let one_document = format!("a: &a [x]\nb: [{}]\n", vec!["*a"; 600].join(", "));
    assert_eq!(
        read_documents(&one_document).unwrap_err().kind,
        YamlErrorKind::TooManyAliases
    );
}

#[test]
fn a_stream_hands_out_each_document_before_reading_the_next() {
    let text = "a: 1\n---\nb: 2\n---\nc: [unclosed\n";
    let mut documents = stream(text);
    let first = documents.next().unwrap().unwrap();
    assert_eq!(first.value, json!({"a": 1}));
    assert_eq!(first.line, 1);
    let second = documents.next().unwrap().unwrap();
    assert_eq!(second.value, json!({"b": 2}));
    assert_eq!(second.line, 2, "an explicit document starts at its `---`");
    let error = documents.next().unwrap().unwrap_err();
    assert_eq!(error.document, 3);
    assert!(matches!(error.kind, YamlErrorKind::Syntax(_)), "{error}");
    assert!(documents.next().is_none(), "the stream ends after an error");
    // Collected whole, the same stream fails with the same error.
    assert_eq!(read_documents(text).unwrap_err(), error);
}
