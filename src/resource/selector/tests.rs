//! Tests of the selector language: upstream's bad selectors and canonical forms, evaluation truth
//! tables, error rendering, and property tests (print → parse is a fixed point that keeps meaning;
//! no input panics the parser).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn canonical(text: &str) -> String {
    Selector::parse(text)
        .unwrap_or_else(|error| panic!("{error}"))
        .to_string()
}

/// What a selector can start with, as the errors name it.
const TERM: &str = "expected a label, `has(..)`, `all()`, `global()`, `!` or `(`";
/// What follows a label, as the errors name it.
const OPERATOR: &str = "expected an operator (`==`, `!=`, `in`, `not in`, `contains`, `starts with`, `ends with`) after label";

/// Each `(selector, column, message)` is refused at that column with that message.
fn assert_refused<const N: usize>(cases: [(&str, usize, String); N]) {
    for (text, column, message) in cases {
        let error = Selector::parse(text).expect_err(text);
        assert_eq!(
            (error.column(), error.kind().to_string()),
            (column, message),
            "{text}"
        );
    }
}

#[test]
fn every_bad_selector_from_upstream_is_rejected() {
    // (selector, column, message) — the bad selectors of upstream's
    // `libcalico-go/lib/selector/parser/parser_test.go`, each with where and why it fails here.
    let cases = [
        (
            "b == b",
            5,
            "expected a quoted string, found label `b`".to_string(),
        ),
        (
            "b contains b",
            11,
            "expected a quoted string, found label `b`".to_string(),
        ),
        ("'b1' == b", 0, format!("{TERM}, found string \"b1\"")),
        ("b", 1, format!("{OPERATOR} `b`")),
        ("a b", 2, format!("{OPERATOR} `a`")),
        ("!", 1, format!("{TERM}, found the end of the selector")),
        ("foo == \"bar\" &", 13, "expected `&&`".to_string()),
        (
            "foo != ||",
            7,
            "expected a quoted string, found `||`".to_string(),
        ),
        (
            "foo in \"\"",
            7,
            "expected a set literal such as `{\"a\", \"b\"}`, found string \"\"".to_string(),
        ),
        ("\"FOO", 0, "unterminated string".to_string()),
        ("\"FOO'", 0, "unterminated string".to_string()),
        ("(", 1, format!("{TERM}, found the end of the selector")),
        (
            "(a == \"foo\"",
            11,
            "expected `)`, found the end of the selector".to_string(),
        ),
        (")", 0, format!("{TERM}, found `)`")),
        ("()", 1, format!("{TERM}, found `)`")),
        ("%", 0, "unexpected characters".to_string()),
        ("a == \"b\" && %", 12, "unexpected characters".to_string()),
        ("a ", 2, format!("{OPERATOR} `a`")),
        (
            "has(foo) &&",
            11,
            format!("{TERM}, found the end of the selector"),
        ),
    ];
    assert_refused(cases);
}

#[test]
fn more_mistakes_are_placed_and_named() {
    let cases = [
        (
            "foo in {\"\", ||",
            12,
            "expected `}`, found `||`".to_string(),
        ),
        ("a = \"b\"", 2, "expected `==`".to_string()),
        ("has(a) | has(b)", 7, "expected `||`".to_string()),
        (
            "has(a) has(b)",
            7,
            "expected `&&`, `||` or the end of the selector, found `has(b)`".to_string(),
        ),
        ("has()", 0, "expected `has(<label>)`".to_string()),
        ("all(x)", 0, "expected `all()`".to_string()),
        ("global(", 0, "expected `global()`".to_string()),
        ("a == \"b\"\n", 8, "unexpected characters".to_string()),
        (
            "a in {\"x\" \"y\"}",
            10,
            "expected `}`, found string \"y\"".to_string(),
        ),
        ("a inx {}", 2, format!("{OPERATOR} `a`")),
        (
            "a == 'b' ||",
            11,
            format!("{TERM}, found the end of the selector"),
        ),
        ("!= 'b'", 0, format!("{TERM}, found `!=`")),
        ("a in {,}", 6, "expected `}`, found `,`".to_string()),
    ];
    assert_refused(cases);
}

#[test]
fn an_over_long_label_is_named_as_such() {
    let long = "a".repeat(MAX_LABEL_LENGTH + 1);
    let error = Selector::parse(&format!("{long} == \"x\"")).unwrap_err();
    assert_eq!(error.kind(), &SelectorErrorKind::LabelTooLong);
    let longest = "a".repeat(MAX_LABEL_LENGTH);
    assert!(Selector::parse(&format!("has({longest})")).is_ok());
    assert!(Selector::parse(&format!("has({long})")).is_err());
}

#[test]
fn deep_nesting_is_refused_without_exhausting_the_stack() {
    let deep = "(".repeat(100_000);
    let error = Selector::parse(&deep).unwrap_err();
    assert_eq!(
        error.kind(),
        &SelectorErrorKind::TooDeep { limit: MAX_NESTING }
    );
    let allowed = format!(
        "{}all(){}",
        "(".repeat(MAX_NESTING),
        ")".repeat(MAX_NESTING)
    );
    assert_eq!(canonical(&allowed), "all()");
    let negations = format!("{}has(a)", "!".repeat(100_001));
    assert_eq!(canonical(&negations), "!has(a)");
}

#[test]
fn errors_render_with_the_selector_and_a_caret() {
    let error = Selector::parse("a == \"b\" && %").unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid selector `a == \"b\" && %`: unexpected characters at column 12"
    );
    insta::assert_snapshot!(error.render_with_caret(), @r#"
    invalid selector `a == "b" && %`: unexpected characters at column 12
      a == "b" && %
                  ^
    "#);
    let with_tab = Selector::parse("a ==\t%").unwrap_err();
    assert_eq!(with_tab.caret_diagram(), "  a ==\t%\n      \t^");
    let at_end = Selector::parse("has(a) &&").unwrap_err();
    assert_eq!(at_end.caret_diagram(), "  has(a) &&\n           ^");
    let second_line = Selector::parse("a == \"x\ny\" && ?").unwrap_err();
    assert_eq!(second_line.column(), 14);
    assert_eq!(second_line.caret_diagram(), "  y\" && ?\n        ^");
}

#[test]
fn canonical_forms_match_upstream() {
    let cases = [
        ("", "all()"),
        ("   \t", "all()"),
        (" (all() )", "all()"),
        ("a startswith '\"'", "a starts with '\"'"),
        ("a!='\"'", "a != '\"'"),
        ("a in {\"z\",\"x\",\"a\"}", "a in {\"a\", \"x\", \"z\"}"),
        ("a in {'z','z',}", "a in {\"z\"}"),
        ("a not in {}", "a not in {}"),
        ("a notin{'x'}", "a not in {\"x\"}"),
        ("a==\"b\"&&c==\"d\"", "(a == \"b\" && c == \"d\")"),
        (
            "a == 'b' && c == 'd' || e == 'f'",
            "((a == \"b\" && c == \"d\") || e == \"f\")",
        ),
        (
            "a == 'b' && (c == 'd' || e == 'f')",
            "(a == \"b\" && (c == \"d\" || e == \"f\"))",
        ),
        ("!has(a)", "!has(a)"),
        ("!!has(a)", "has(a)"),
        ("!(has(b) || !has(a))", "!(has(b) || !has(a))"),
        ("!(!has(a))", "has(a)"),
        ("!a == 'x'", "!a == \"x\""),
        ("has( a.b/c )", "has(a.b/c)"),
        ("a contains'x'", "a contains \"x\""),
        ("a ends  with 'x'", "a ends with \"x\""),
        ("global( )", "global()"),
        ("a == \"it's\"", "a == \"it's\""),
    ];
    for (text, expected) in cases {
        assert_eq!(canonical(text), expected, "{text:?}");
        assert_eq!(
            canonical(expected),
            expected,
            "canonical form of {text:?} re-parses"
        );
    }
}

#[test]
fn comparisons_follow_upstream_semantics() {
    let present = labels(&[("a", "abc")]);
    let absent = labels(&[("other", "abc")]);
    let empty_value = labels(&[("a", "")]);
    // (selector, a=abc, a absent, a="")
    let table = [
        ("a == 'abc'", true, false, false),
        ("a != 'abc'", false, true, true),
        ("a != 'x'", true, true, true),
        ("a contains 'b'", true, false, false),
        ("a contains ''", true, false, true),
        ("a starts with 'ab'", true, false, false),
        ("a ends with 'bc'", true, false, false),
        ("a ends with 'ab'", false, false, false),
        ("a in {'abc', 'x'}", true, false, false),
        ("a in {}", false, false, false),
        ("a in {''}", false, false, true),
        ("a not in {'abc'}", false, true, true),
        ("a not in {}", true, true, true),
        ("has(a)", true, false, true),
        ("!has(a)", false, true, false),
        ("all()", true, true, true),
        ("global()", true, true, true),
        ("", true, true, true),
        ("!a == 'abc'", false, true, true),
    ];
    for (text, with_value, without, with_empty) in table {
        let selector = Selector::parse(text).unwrap();
        assert_eq!(
            (
                selector.matches(&present),
                selector.matches(&absent),
                selector.matches(&empty_value)
            ),
            (with_value, without, with_empty),
            "{text}"
        );
    }
}

#[test]
fn and_binds_tighter_than_or() {
    let selector = Selector::parse("has(a) || has(b) && has(c)").unwrap();
    let truth = [
        // (a, b, c) → a || (b && c)
        ((false, false, false), false),
        ((false, false, true), false),
        ((false, true, false), false),
        ((false, true, true), true),
        ((true, false, false), true),
        ((true, false, true), true),
        ((true, true, false), true),
        ((true, true, true), true),
    ];
    for ((a, b, c), expected) in truth {
        let mut map = BTreeMap::new();
        for (present, key) in [(a, "a"), (b, "b"), (c, "c")] {
            if present {
                map.insert(key.to_string(), String::new());
            }
        }
        assert_eq!(selector.matches(&map), expected, "{a} {b} {c}");
    }
}

#[test]
fn global_usage_is_reported() {
    let usage = |text: &str| Selector::parse(text).unwrap().global_usage();
    assert_eq!(usage("global()"), GlobalUsage::Alone);
    assert_eq!(usage("(global())"), GlobalUsage::Alone);
    assert_eq!(usage("global() && has(a)"), GlobalUsage::Combined);
    assert_eq!(usage("has(a) || (global())"), GlobalUsage::Combined);
    assert_eq!(usage("!global()"), GlobalUsage::Combined);
    assert_eq!(usage("has(a)"), GlobalUsage::Absent);
    assert!(!Selector::parse("all()").unwrap().uses_global());
    assert!(Selector::parse("!global()").unwrap().uses_global());
}

#[test]
fn selectors_compare_by_meaning_and_serialise_as_written() {
    let written = Selector::parse("a=='b'").unwrap();
    assert_eq!(written, Selector::parse("a == \"b\"").unwrap());
    assert_eq!(written.source(), "a=='b'");
    assert_eq!(serde_json::to_string(&written).unwrap(), "\"a=='b'\"");
    let read: Selector = serde_json::from_str("\"has(x)\"").unwrap();
    assert_eq!(read.to_string(), "has(x)");
    let refused = serde_json::from_str::<Selector>("\"has(\"").unwrap_err();
    assert!(
        refused.to_string().starts_with("invalid selector `has(`"),
        "{refused}"
    );
    assert_eq!(Selector::default().to_string(), "all()");
    assert_eq!("has(x)".parse::<Selector>().unwrap().to_string(), "has(x)");
}

// ----- property tests -----

fn label_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[abc]",
        1 => "[a-zA-Z0-9_./-]{1,12}",
    ]
}

/// Values as a parsed literal can hold them: anything but both kinds of quote at once.
fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[xy]{0,2}",
        1 => "[xy \t\"{}(),!&|=é]{0,6}".prop_filter("one kind of quote", |value| !value.contains('"')),
        1 => "[xy \t'{}(),!&|=\\n]{0,6}",
    ]
}

fn leaf_strategy() -> impl Strategy<Value = Expression> {
    let comparison =
        (0..5usize, label_strategy(), value_strategy()).prop_map(|(operator, label, value)| {
            match operator {
                0 => Expression::Equals { label, value },
                1 => Expression::NotEquals { label, value },
                2 => Expression::Contains { label, value },
                3 => Expression::StartsWith { label, value },
                _ => Expression::EndsWith { label, value },
            }
        });
    let set = (
        any::<bool>(),
        label_strategy(),
        proptest::collection::btree_set(value_strategy(), 0..4),
    )
        .prop_map(
            |(negated, label, values): (bool, String, BTreeSet<String>)| {
                if negated {
                    Expression::NotIn { label, values }
                } else {
                    Expression::In { label, values }
                }
            },
        );
    prop_oneof![
        1 => Just(Expression::All),
        1 => Just(Expression::Global),
        2 => label_strategy().prop_map(Expression::Has),
        4 => comparison,
        2 => set,
    ]
}

fn expression_strategy() -> impl Strategy<Value = Expression> {
    leaf_strategy().prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(Expression::negated),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Expression::And),
            proptest::collection::vec(inner, 2..4).prop_map(Expression::Or),
        ]
    })
}

fn label_map_strategy() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map("[abc]", "[xy]{0,2}", 0..4)
}

/// An independent statement of upstream's semantics (`libcalico-go/lib/selector/parser/ast.go`), to
/// check the evaluator against.
fn reference_evaluate(expression: &Expression, labels: &BTreeMap<String, String>) -> bool {
    let get = |label: &String| labels.get(label);
    match expression {
        Expression::All | Expression::Global => true,
        Expression::Has(label) => labels.contains_key(label),
        Expression::Equals { label, value } => get(label) == Some(value),
        Expression::NotEquals { label, value } => get(label) != Some(value),
        Expression::Contains { label, value } => {
            get(label).is_some_and(|v| v.contains(value.as_str()))
        }
        Expression::StartsWith { label, value } => {
            get(label).is_some_and(|v| v.starts_with(value.as_str()))
        }
        Expression::EndsWith { label, value } => {
            get(label).is_some_and(|v| v.ends_with(value.as_str()))
        }
        Expression::In { label, values } => get(label).is_some_and(|v| values.contains(v)),
        Expression::NotIn { label, values } => !get(label).is_some_and(|v| values.contains(v)),
        Expression::Not(inner) => !reference_evaluate(inner, labels),
        Expression::And(operands) => operands.iter().all(|o| reference_evaluate(o, labels)),
        Expression::Or(operands) => operands.iter().any(|o| reference_evaluate(o, labels)),
    }
}

/// Text built from selector pieces, so that the parser sees near-misses rather than only noise.
fn selector_like_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("a".to_string()),
        Just("b.c/d".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("==".to_string()),
        Just("!=".to_string()),
        Just("!".to_string()),
        Just("=".to_string()),
        Just("&&".to_string()),
        Just("&".to_string()),
        Just("||".to_string()),
        Just("|".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(",".to_string()),
        Just("'x'".to_string()),
        Just("\"y\"".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("has(".to_string()),
        Just("has(a)".to_string()),
        Just("all()".to_string()),
        Just("global()".to_string()),
        Just(" in ".to_string()),
        Just(" not in ".to_string()),
        Just(" contains ".to_string()),
        Just(" starts with ".to_string()),
        Just(" endswith ".to_string()),
        Just("é".to_string()),
        Just("\n".to_string()),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn printing_then_parsing_is_a_fixed_point_that_keeps_meaning(
        expression in expression_strategy(),
        maps in proptest::collection::vec(label_map_strategy(), 1..8),
    ) {
        let printed = expression.to_string();
        let parsed = Selector::parse(&printed)
            .map_err(|error| TestCaseError::fail(error.render_with_caret()))?;
        prop_assert_eq!(parsed.to_string(), printed.clone());
        prop_assert_eq!(parsed.expression(), &expression);
        for map in &maps {
            prop_assert_eq!(parsed.matches(map), expression.evaluate(map), "{} on {:?}", printed, map);
            prop_assert_eq!(parsed.matches(map), reference_evaluate(&expression, map));
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        check_any_text(&text)?;
    }

    #[test]
    fn selector_like_text_never_panics(text in selector_like_text()) {
        check_any_text(&text)?;
    }
}

/// Whatever the outcome, it is consistent: a success prints a canonical form that is a fixed point;
/// a failure points inside (or just past the end of) the text and renders.
fn check_any_text(text: &str) -> Result<(), TestCaseError> {
    match Selector::parse(text) {
        Ok(selector) => {
            let printed = selector.to_string();
            let reparsed = Selector::parse(&printed)
                .map_err(|error| TestCaseError::fail(error.render_with_caret()))?;
            prop_assert_eq!(reparsed.to_string(), printed);
            prop_assert_eq!(reparsed, selector);
        }
        Err(error) => {
            prop_assert!(error.column() <= text.chars().count());
            let rendered = error.render_with_caret();
            prop_assert!(rendered.starts_with("invalid selector `"));
        }
    }
    Ok(())
}
