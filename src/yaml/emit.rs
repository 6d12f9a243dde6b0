//! Writing YAML that every reader takes back as the same values, YAML 1.1 readers included.
//!
//! The layout is libyaml's block style as netctl has always printed it (two-space indent, sequences
//! in a mapping not indented, multi-line strings as literal blocks, `''` quoting where a plain
//! scalar cannot be written). On top of that, a string is quoted whenever a YAML 1.1 or 1.2
//! reader would take it for another type: go-yaml v2's words and numbers (`no`, `on`, `y`, `0400`,
//! `1e3`, `~`, `2024-01-01`), PyYAML's (`190:20:30`, `1_000`, `0b101`, `=`, `<<`) and YAML 1.2's.
//! kubectl quotes such strings the same way. This module does no I/O.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use super::resolve::{Scalar, resolve_plain};

/// The YAML of any serializable value (one document, no `---`).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    Ok(value_to_string(&serde_json::to_value(value)?))
}

/// The YAML of a JSON value (one document, no `---`).
pub fn value_to_string(value: &Value) -> String {
    let mut out = String::new();
    write_document(&mut out, value, KeyOrder::AsGiven);
    out
}

/// In which order a mapping's keys are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// As the map holds them.
    AsGiven,
    /// Sorted, in every nested mapping too (what go-yaml does with JSON input); the same text as
    /// sorting a copy of the value first, without the copy.
    Sorted,
}

/// Appends the YAML of a JSON value (one document, no `---`) to `out`.
pub fn write_document(out: &mut String, value: &Value, order: KeyOrder) {
    match value {
        Value::Object(map) if !map.is_empty() => write_mapping(out, map, 0, order),
        Value::Array(items) if !items.is_empty() => write_sequence(out, items, 0, order),
        other => {
            write_inline(out, other, 0);
            out.push('\n');
        }
    }
}

/// Appends one `key: value` entry of a block mapping whose keys are at indentation `width`; the
/// caller has written the line's indentation (or `- `) already. Nested mappings follow `order`.
pub fn write_entry(out: &mut String, key: &str, value: &Value, width: usize, order: KeyOrder) {
    write_key(out, key);
    out.push(':');
    match value {
        Value::Object(inner) if !inner.is_empty() => {
            out.push('\n');
            indent(out, width + 2);
            write_mapping(out, inner, width + 2, order);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            indent(out, width);
            write_sequence(out, items, width, order);
        }
        other => {
            out.push(' ');
            write_inline(out, other, width + 2);
            out.push('\n');
        }
    }
}

/// [`write_entry`] for a string value.
pub fn write_string_entry(out: &mut String, key: &str, text: &str, width: usize) {
    write_key(out, key);
    out.push_str(": ");
    write_string(out, text, width + 2);
    out.push('\n');
}

/// [`write_entry`] for a mapping of strings, in the map's (sorted) order; an empty map is `{}`.
pub fn write_string_map_entry(
    out: &mut String,
    key: &str,
    map: &std::collections::BTreeMap<String, String>,
    width: usize,
) {
    write_key(out, key);
    if map.is_empty() {
        out.push_str(": {}\n");
        return;
    }
    out.push_str(":\n");
    for (name, text) in map {
        indent(out, width + 2);
        write_string_entry(out, name, text, width + 2);
    }
}

/// Writes `width` spaces.
pub fn indent(out: &mut String, width: usize) {
    out.extend(std::iter::repeat_n(' ', width));
}

/// A mapping whose first key is written at the current position (already indented).
fn write_mapping(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    width: usize,
    order: KeyOrder,
) {
    if order == KeyOrder::Sorted && !map.keys().is_sorted() {
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_unstable_by(|left, right| left.0.cmp(right.0));
        write_entries(out, entries.into_iter(), width, order);
    } else {
        write_entries(out, map.iter(), width, order);
    }
}

fn write_entries<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
    width: usize,
    order: KeyOrder,
) {
    for (index, (key, value)) in entries.enumerate() {
        if index > 0 {
            indent(out, width);
        }
        write_entry(out, key, value, width, order);
    }
}

/// A sequence whose first dash is written at the current position (already indented).
fn write_sequence(out: &mut String, items: &[Value], width: usize, order: KeyOrder) {
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            indent(out, width);
        }
        out.push_str("- ");
        match item {
            Value::Object(inner) if !inner.is_empty() => {
                write_mapping(out, inner, width + 2, order)
            }
            Value::Array(inner) if !inner.is_empty() => {
                write_sequence(out, inner, width + 2, order)
            }
            other => {
                write_inline(out, other, width + 2);
                out.push('\n');
            }
        }
    }
}

/// A scalar or an empty collection after `key: ` or `- `; `block` is the indent of a literal
/// block's lines.
fn write_inline(out: &mut String, value: &Value, block: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => {
            use std::fmt::Write as _;
            let _ = write!(out, "{number}");
        }
        Value::String(text) => write_string(out, text, block),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
}

/// Text libyaml writes plain whatever the readers (an ASCII letter or digit, then letters, digits
/// and `._/-`, `:` but not last): what most names, addresses and CIDRs are. Whether it must be
/// quoted as another type is still [`reads_as_other_type`]'s to say.
fn is_simple_plain(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && rest.iter().enumerate().all(|(index, byte)| {
            byte.is_ascii_alphanumeric()
                || matches!(byte, b'.' | b'_' | b'/' | b'-')
                || (*byte == b':' && index + 1 < rest.len())
        })
}

/// Writes a mapping key, quoted where a plain one would be read as another type or not at all.
pub fn write_key(out: &mut String, key: &str) {
    if is_simple_plain(key) && !reads_as_other_type(key) {
        out.push_str(key);
    } else {
        out.push_str(&key_text(key));
    }
}

fn key_text(key: &str) -> String {
    let analysis = Analysis::of(key);
    if analysis.line_breaks || !analysis.single_quoted_allowed {
        double_quoted(key)
    } else if analysis.plain_allowed && !reads_as_other_type(key) {
        key.to_string()
    } else {
        single_quoted(key)
    }
}

/// Writes a string scalar after `key: ` or `- `, quoted where needed; `block` is the indentation
/// of a literal block's lines.
pub fn write_string(out: &mut String, text: &str, block: usize) {
    if is_simple_plain(text) {
        if reads_as_other_type(text) {
            out.push('\'');
            out.push_str(text);
            out.push('\'');
        } else {
            out.push_str(text);
        }
        return;
    }
    let analysis = Analysis::of(text);
    if analysis.line_breaks {
        if analysis.block_allowed {
            write_literal(out, text, block);
        } else {
            out.push_str(&double_quoted(text));
        }
    } else if analysis.plain_allowed && !reads_as_other_type(text) {
        out.push_str(text);
    } else if analysis.single_quoted_allowed {
        out.push_str(&single_quoted(text));
    } else {
        out.push_str(&double_quoted(text));
    }
}

fn write_literal(out: &mut String, text: &str, block: usize) {
    out.push('|');
    if text.starts_with([' ', '\n']) {
        out.push('2');
    }
    let trailing = text.len() - text.trim_end_matches('\n').len();
    match trailing {
        0 => out.push('-'),
        1 => {}
        _ => out.push('+'),
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            indent(out, block);
            out.push_str(line);
        }
    }
}

fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn double_quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if !is_printable(c) || c == '\u{feff}' => {
                let code = c as u32;
                if code <= 0xff {
                    out.push_str(&format!("\\x{code:02X}"));
                } else if code <= 0xffff {
                    out.push_str(&format!("\\u{code:04X}"));
                } else {
                    out.push_str(&format!("\\U{code:08X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// libyaml's printable set (tab is not in it).
fn is_printable(c: char) -> bool {
    matches!(c as u32,
        0x0a | 0x20..=0x7e | 0x85 | 0xa0..=0xd7ff | 0xe000..=0xfffd | 0x10000..=0x10ffff)
        && c != '\u{feff}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// What libyaml's emitter allows for a scalar in block context (its `analyze_scalar`).
struct Analysis {
    line_breaks: bool,
    plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

impl Analysis {
    fn of(text: &str) -> Analysis {
        if text.is_empty() {
            return Analysis {
                line_breaks: false,
                plain_allowed: false,
                single_quoted_allowed: true,
                block_allowed: false,
            };
        }
        let mut indicators = text.starts_with("---") || text.starts_with("...");
        let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
            (false, false, false, false);
        let (mut break_space, mut space_break, mut special, mut line_breaks) =
            (false, false, false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        let chars: Vec<char> = text.chars().collect();
        for (index, &c) in chars.iter().enumerate() {
            let next = chars.get(index + 1).copied();
            let followed_by_whitespace = next.is_none_or(|n| n == ' ' || n == '\t' || is_break(n));
            let first = index == 0;
            let last = index + 1 == chars.len();
            if first {
                match c {
                    '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\''
                    | '"' | '%' | '@' | '`' => indicators = true,
                    '?' | ':' if followed_by_whitespace => indicators = true,
                    '-' if followed_by_whitespace => indicators = true,
                    _ => {}
                }
            } else {
                match c {
                    ':' if followed_by_whitespace => indicators = true,
                    '#' if preceded_by_whitespace => indicators = true,
                    _ => {}
                }
            }
            if !is_printable(c) && !is_break(c) {
                special = true;
            }
            if c == ' ' {
                if first {
                    leading_space = true;
                }
                if last {
                    trailing_space = true;
                }
                if previous_break {
                    break_space = true;
                }
                previous_space = true;
                previous_break = false;
            } else if is_break(c) {
                line_breaks = true;
                if first {
                    leading_break = true;
                }
                if last {
                    trailing_break = true;
                }
                if previous_space {
                    space_break = true;
                }
                previous_break = true;
                previous_space = false;
            } else {
                previous_space = false;
                previous_break = false;
            }
            preceded_by_whitespace = c == ' ' || c == '\t' || is_break(c);
        }
        let mut plain_allowed = !(indicators
            || leading_space
            || leading_break
            || trailing_space
            || trailing_break
            || line_breaks);
        let mut single_quoted_allowed = true;
        let mut block_allowed = !trailing_space;
        if break_space {
            plain_allowed = false;
            single_quoted_allowed = false;
        }
        if space_break || special {
            plain_allowed = false;
            single_quoted_allowed = false;
            block_allowed = false;
        }
        Analysis {
            line_breaks,
            plain_allowed,
            single_quoted_allowed,
            block_allowed,
        }
    }
}

/// PyYAML's implicit resolvers for YAML 1.1 (bool, int, float, null, timestamp, merge, value),
/// which read more plain scalars as non-strings than go-yaml v2 does (sexagesimal numbers, `=`).
static YAML_1_1_IMPLICIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:",
        r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        r"|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+",
        r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        r"|[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?",
        r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        r"|~|null|Null|NULL",
        r"|[0-9]{4}-[0-9]{2}-[0-9]{2}",
        r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?",
        r"|<<|=",
        r")$"
    ))
    .expect("the YAML 1.1 implicit type pattern is a valid regex")
});

/// YAML 1.2's core schema numbers (`0o17`, `1e3` without a dot, `+.5`).
static YAML_1_2_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)$")
        .expect("the YAML 1.2 number pattern is a valid regex")
});

/// Whether some YAML reader would take this plain text for something other than a string.
pub fn reads_as_other_type(text: &str) -> bool {
    !surely_a_string(text) && reads_as_other_type_by_rules(text)
}

/// Text no reader types otherwise, known without the patterns: every non-string plain scalar
/// (the words, numbers, timestamps, `~`, `<<`, `=`) that starts with a letter is one of the
/// boolean and null words, holds no `/`, and has at most one `.`. Most names, keys, CIDRs and
/// addresses are decided here.
fn surely_a_string(text: &str) -> bool {
    let starts_with_letter = text.as_bytes().first().is_some_and(u8::is_ascii_alphabetic);
    (starts_with_letter && !is_typed_word(text))
        || text.contains('/')
        || text.bytes().filter(|byte| *byte == b'.').count() > 1
}

/// The words some YAML reader takes for a boolean or null (go-yaml v2 and PyYAML: `y`, `n`,
/// `yes`, `no`, `on`, `off`, `true`, `false`, `null`), in any case: which cases are typed is the
/// rules' to say.
fn is_typed_word(text: &str) -> bool {
    ["y", "n", "yes", "no", "on", "off", "true", "false", "null"]
        .iter()
        .any(|word| text.eq_ignore_ascii_case(word))
}

fn reads_as_other_type_by_rules(text: &str) -> bool {
    resolve_plain(text) != Scalar::String
        || YAML_1_1_IMPLICIT.is_match(text)
        || YAML_1_2_NUMBER.is_match(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strings_other_readers_would_retype_are_quoted() {
        for text in [
            "no",
            "on",
            "yes",
            "y",
            "N",
            "1e3",
            "0400",
            "~",
            "null",
            "",
            "2024-01-01",
            "2001-12-14 21:59:43.10",
            "0x1F",
            "1_000",
            "190:20:30",
            ".inf",
            "-.5",
            "0o17",
            "0b101",
            "=",
            "<<",
            "123",
            "1.5",
        ] {
            let written = value_to_string(&json!({ "a": text }));
            assert_eq!(written, format!("a: '{text}'\n"), "{text}");
        }
    }

    #[test]
    fn the_quick_string_test_agrees_with_the_rules() {
        let mut texts: Vec<String> = [
            "no",
            "NULL",
            "False",
            "off",
            "yes",
            "y",
            "Nope",
            "nothing",
            "1.2.3",
            "1.5",
            ".5",
            "1e3",
            "1.e3",
            "1..2",
            "10.0.0.0/16",
            "2024-01-01",
            "2001-12-14 21:59:43.10",
            "2001-12-14t21:59:43.10-05:00",
            "190:20:30",
            "190:20:30.15",
            "0x1F",
            "0o17",
            "0b101",
            "+.inf",
            "-.Inf",
            ".NaN",
            "~",
            "<<",
            "=",
            "fd00::1",
            "1_000.5",
            "1.2e+3",
            "v1.2",
            "a/b",
            "Infinity",
            "nan",
            "Inf",
            "NaN",
            "TRUE",
            "tRUE",
            "Off",
            "OFF",
            "Null",
            "nULL",
            "Yes",
            "YES",
            "Y",
            "N",
            "ssh",
            "TCP",
            "https",
            "eth0",
            "name",
            "e1",
            "E5",
            "x1:20",
            "a:1",
            "0.1.2",
            "12:30",
            "1:2:3.4.5",
        ]
        .iter()
        .map(|text| text.to_string())
        .collect();
        // Every short string over a small alphabet of the characters that matter.
        let alphabet = [
            '0', '1', '9', '.', '-', '+', ':', 'e', 'x', 'o', 'n', 'y', '_', '/', ' ', 's', 'f',
            'N',
        ];
        let mut frontier = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for text in &frontier {
                for c in alphabet {
                    next.push(format!("{text}{c}"));
                }
            }
            texts.extend(next.iter().cloned());
            frontier = next;
        }
        for text in &texts {
            if surely_a_string(text) {
                assert!(!reads_as_other_type_by_rules(text), "{text:?}");
            }
            if is_simple_plain(text) {
                let analysis = Analysis::of(text);
                assert!(analysis.plain_allowed && !analysis.line_breaks, "{text:?}");
            }
        }
    }

    #[test]
    fn sorted_output_is_the_output_of_a_sorted_copy() {
        let value = json!({"b": {"z": 1, "a": [{"y": 2, "x": {"q": 1, "p": []}}]}, "a": "text"});
        let mut sorted = String::new();
        write_document(&mut sorted, &value, KeyOrder::Sorted);
        assert_eq!(
            sorted,
            "a: text\nb:\n  a:\n  - x:\n      p: []\n      q: 1\n    'y': 2\n  z: 1\n"
        );
    }

    #[test]
    fn ordinary_strings_stay_plain() {
        for text in [
            "calico-node",
            "10.0.0.1",
            "10.0.0.0/16",
            "all()",
            "has(a) && b == 'c'",
            "yEs",
            "v3.29.1",
            "1.2.3",
            "a:b",
        ] {
            let written = value_to_string(&json!({ "a": text }));
            assert_eq!(written, format!("a: {text}\n"), "{text}");
        }
    }

    #[test]
    fn layout_is_libyaml_block_style() {
        let value = json!({
            "kind": "List",
            "items": [
                {"name": "a", "ports": [80, 443], "empty": {}},
                [1, [2]],
                "!x"
            ],
            "nested": {"text": "line one\nline two\n", "none": null, "list": []},
            "tabs": "a\tb",
            "it's": "it's"
        });
        assert_eq!(
            value_to_string(&value),
            "kind: List\n\
             items:\n\
             - name: a\n  ports:\n  - 80\n  - 443\n  empty: {}\n\
             - - 1\n  - - 2\n\
             - '!x'\n\
             nested:\n  text: |\n    line one\n    line two\n  none: null\n  list: []\n\
             tabs: \"a\\tb\"\n\
             it's: it's\n"
        );
    }
}
