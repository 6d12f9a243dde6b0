//! What a plain YAML scalar means under YAML 1.1 as upstream's reader (go-yaml v2, under
//! sigs.k8s.io/yaml) resolves it, and how Go turns a number into text.
//!
//! The rules, as go-yaml v2's `resolve` has them:
//!
//! - booleans: `y Y yes Yes YES true True TRUE on On ON` and `n N no No NO false False FALSE off Off
//!   OFF` (no other case forms: `yEs` is a string);
//! - null: the empty scalar, `~`, `null Null NULL`;
//! - integers: decimal, `0x`/`0o`/`0b` prefixes and a leading `0` for octal (`0400` is 256), with an
//!   optional sign; `_` between digits is ignored (`1_000`);
//! - floats: `1.5`, `1e3`, `.5`, `.inf .Inf .INF` (signed too), `.nan .NaN .NAN`; a number that is
//!   neither a valid integer nor a float pattern (`08`, `09`) is a float when it matches the float
//!   pattern (`08` is 8.0);
//! - timestamps: `2001-12-14`, `2001-12-14T21:59:43.10Z`, `2001-12-14 21:59:43.10` (no zone) are
//!   recognised, but go-yaml v2 keeps their text when decoding into an untyped value, so they stay
//!   strings (output quotes them, for other YAML 1.1 readers);
//! - sexagesimal numbers (`190:20:30`) are NOT resolved by go-yaml v2 (YAML 1.1 has them; upstream
//!   deliberately leaves them strings), so they stay strings here too. Output quotes them anyway,
//!   for other YAML 1.1 readers (see `emit`).
//!
//! This module reads no files and knows no document structure.

/// A resolved plain scalar.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Integer(i64),
    Unsigned(u64),
    Float(f64),
    /// A timestamp: go-yaml v2 resolves it, but keeps the text as written when decoding into an
    /// untyped value, as upstream's readers do, so it stays a string.
    Timestamp,
    /// An integer outside 64 bits: upstream keeps it as a big number that no Kubernetes or Calico
    /// field can hold, so the caller refuses it.
    BigInteger,
    String,
}

/// Resolves a plain (unquoted, untagged) scalar.
pub fn resolve_plain(text: &str) -> Scalar {
    let Some(first) = text.bytes().next() else {
        return Scalar::Null;
    };
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Scalar::Bool(false);
        }
        "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match first {
        b'.' => match text.parse::<f64>() {
            // Rust also parses `.inf`-like words and `NaN`; only digits reach this point here
            // because the words were matched above and Rust's parser needs a digit after `.`.
            Ok(value) if is_float_pattern(text) => Scalar::Float(value),
            _ => Scalar::String,
        },
        b'0'..=b'9' | b'+' | b'-' => resolve_number(text),
        _ => Scalar::String,
    }
}

/// Numbers and timestamps: the scalars that start with a digit or a sign.
fn resolve_number(text: &str) -> Scalar {
    if is_timestamp(text) {
        return Scalar::Timestamp;
    }
    let plain: String = text.chars().filter(|c| *c != '_').collect();
    match parse_go_integer(&plain) {
        Integer::Signed(value) => return Scalar::Integer(value),
        Integer::Unsigned(value) => return Scalar::Unsigned(value),
        Integer::OutOfRange => {
            if is_float_pattern(&plain) {
                if let Ok(value) = plain.parse::<f64>() {
                    return Scalar::Float(value);
                }
            }
            return Scalar::BigInteger;
        }
        Integer::Invalid => {}
    }
    if is_float_pattern(&plain) {
        if let Ok(value) = plain.parse::<f64>() {
            if value.is_finite() {
                return Scalar::Float(value);
            }
        }
    }
    Scalar::String
}

enum Integer {
    Signed(i64),
    Unsigned(u64),
    OutOfRange,
    Invalid,
}

/// Go's `strconv.ParseInt(text, 0, 64)` and then `ParseUint`: a sign, then `0x`, `0o`, `0b` or a
/// leading `0` (octal) or decimal digits.
fn parse_go_integer(text: &str) -> Integer {
    let (negative, unsigned_text) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = unsigned_text.to_ascii_lowercase();
    let (radix, digits) = if let Some(digits) = lower.strip_prefix("0x") {
        (16, digits)
    } else if let Some(digits) = lower.strip_prefix("0o") {
        (8, digits)
    } else if let Some(digits) = lower.strip_prefix("0b") {
        (2, digits)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Integer::Invalid;
    }
    let Ok(magnitude) = u128::from_str_radix(digits, radix) else {
        return Integer::OutOfRange;
    };
    if negative {
        if magnitude <= i64::MAX as u128 + 1 {
            Integer::Signed((magnitude as i128).wrapping_neg() as i64)
        } else {
            Integer::OutOfRange
        }
    } else if magnitude <= i64::MAX as u128 {
        Integer::Signed(magnitude as i64)
    } else if magnitude <= u64::MAX as u128 {
        Integer::Unsigned(magnitude as u64)
    } else {
        Integer::OutOfRange
    }
}

/// go-yaml v2's float pattern: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_float_pattern(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    if matches!(bytes.first(), Some(b'-' | b'+')) {
        at += 1;
    }
    let digits = |at: &mut usize| {
        let start = *at;
        while *at < bytes.len() && bytes[*at].is_ascii_digit() {
            *at += 1;
        }
        *at - start
    };
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        if digits(&mut at) == 0 {
            return false;
        }
    } else {
        if digits(&mut at) == 0 {
            return false;
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            digits(&mut at);
        }
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'-' | b'+')) {
            at += 1;
        }
        if digits(&mut at) == 0 {
            return false;
        }
    }
    at == bytes.len()
}

/// Whether `text` is one of the timestamp forms go-yaml v2 accepts (`2006-1-2T15:4:5.999999999Z07:00`,
/// the same with a lower-case `t`, `2006-1-2 15:4:5.999999999` and `2006-1-2`), with a real date.
pub fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 5 || !bytes[..4].iter().all(u8::is_ascii_digit) || bytes[4] != b'-' {
        return false;
    }
    let mut cursor = Cursor { bytes, at: 5 };
    let mut check = || -> Option<bool> {
        let year: u32 = text[..4].parse().ok()?;
        let month = cursor.number(1, 2)?;
        cursor.expect(b'-')?;
        let day = cursor.number(1, 2)?;
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return None;
        }
        if cursor.done() {
            return Some(true);
        }
        let zoned = match cursor.next()? {
            b'T' | b't' => true,
            b' ' => false,
            _ => return None,
        };
        let hour = cursor.number(1, 2)?;
        cursor.expect(b':')?;
        let minute = cursor.number(1, 2)?;
        cursor.expect(b':')?;
        let second = cursor.number(1, 2)?;
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        if cursor.peek() == Some(b'.') {
            cursor.at += 1;
            let start = cursor.at;
            while cursor.peek().is_some_and(|byte| byte.is_ascii_digit()) {
                cursor.at += 1;
            }
            if cursor.at == start || cursor.at - start > 9 {
                return None;
            }
        }
        if !zoned {
            return Some(cursor.done());
        }
        match cursor.next()? {
            b'Z' => {}
            b'+' | b'-' => {
                let hours = cursor.exact(2)?;
                cursor.expect(b':')?;
                let minutes = cursor.exact(2)?;
                if hours > 23 || minutes > 59 {
                    return None;
                }
            }
            _ => return None,
        }
        Some(cursor.done())
    };
    check().unwrap_or(false)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    fn expect(&mut self, wanted: u8) -> Option<()> {
        (self.next()? == wanted).then_some(())
    }

    /// One or two digits (Go's `1`, `2`, `15`, `4`, `5` layout elements).
    fn number(&mut self, minimum: usize, maximum: usize) -> Option<u32> {
        let start = self.at;
        while self.at - start < maximum && self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
            self.at += 1;
        }
        if self.at - start < minimum {
            return None;
        }
        std::str::from_utf8(&self.bytes[start..self.at])
            .ok()?
            .parse()
            .ok()
    }

    fn exact(&mut self, count: usize) -> Option<u32> {
        self.number(count, count)
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's `strconv.FormatFloat(value, 'g', -1, 64)`: what calicoctl (v3.27 to v3.31, through its
/// go-yaml-wrapper) writes when a float is decoded into a string field (`1e3` → `1000`, `1e6` →
/// `1e+06`, `0.1` → `0.1`). sigs.k8s.io/yaml (calicoctl v3.32, kubectl) uses 32 bits, which differs
/// only beyond seven significant digits.
pub fn go_float_text(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest digits that read back as the same f64: `d.ddde-x`.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if value < 0.0 { "-" } else { "" };
    // Go uses %e when the exponent is < -4 or >= 6 for the shortest form, %f otherwise.
    if !(-4..6).contains(&exponent) {
        let (head, tail) = digits.split_at(1);
        let fraction = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{sign}{head}{fraction}e{exponent_sign}{:02}",
            exponent.abs()
        );
    }
    let point = exponent + 1;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    };
    format!("{sign}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_in_the_case_forms_go_yaml_v2_accepts() {
        for text in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "TRUE",
        ] {
            assert_eq!(resolve_plain(text), Scalar::Bool(true), "{text}");
        }
        for text in [
            "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False",
        ] {
            assert_eq!(resolve_plain(text), Scalar::Bool(false), "{text}");
        }
        for text in ["yEs", "oN", "tRUE", "nO"] {
            assert_eq!(resolve_plain(text), Scalar::String, "{text}");
        }
    }

    #[test]
    fn nulls() {
        for text in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain(text), Scalar::Null, "{text}");
        }
        assert_eq!(resolve_plain("nULL"), Scalar::String);
    }

    #[test]
    fn integers_in_every_base() {
        let cases = [
            ("0400", 256),
            ("0440", 288),
            ("0o400", 256),
            ("0x1F", 31),
            ("-0x1F", -31),
            ("0b101", 5),
            ("1_000", 1000),
            ("+12", 12),
            ("-12", -12),
            ("0", 0),
            ("-9223372036854775808", i64::MIN),
        ];
        for (text, value) in cases {
            assert_eq!(resolve_plain(text), Scalar::Integer(value), "{text}");
        }
        assert_eq!(
            resolve_plain("18446744073709551615"),
            Scalar::Unsigned(u64::MAX)
        );
        // Beyond 64 bits a decimal integer is a float (the float pattern is tried before big
        // integers), a hexadecimal one a big integer.
        assert_eq!(
            resolve_plain("123456789012345678901234"),
            Scalar::Float(1.2345678901234568e23)
        );
        assert_eq!(resolve_plain("0x1FFFFFFFFFFFFFFFFFF"), Scalar::BigInteger);
    }

    #[test]
    fn floats_and_the_octal_lookalikes_that_become_floats() {
        assert_eq!(resolve_plain("1e3"), Scalar::Float(1000.0));
        assert_eq!(resolve_plain("1.5"), Scalar::Float(1.5));
        assert_eq!(resolve_plain(".5"), Scalar::Float(0.5));
        assert_eq!(resolve_plain("08"), Scalar::Float(8.0));
        assert_eq!(resolve_plain("-.inf"), Scalar::Float(f64::NEG_INFINITY));
        assert!(matches!(resolve_plain(".NaN"), Scalar::Float(value) if value.is_nan()));
        assert_eq!(resolve_plain("1e"), Scalar::String);
        assert_eq!(resolve_plain("."), Scalar::String);
        assert_eq!(resolve_plain("-"), Scalar::String);
    }

    #[test]
    fn sexagesimal_stays_a_string_as_in_go_yaml_v2() {
        assert_eq!(resolve_plain("190:20:30"), Scalar::String);
        assert_eq!(resolve_plain("10.0.0.1"), Scalar::String);
        assert_eq!(resolve_plain("1.2.3"), Scalar::String);
    }

    #[test]
    fn timestamps_are_recognised() {
        for text in [
            "2024-01-01",
            "2024-1-2",
            "2001-12-14T21:59:43.10Z",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10",
        ] {
            assert_eq!(resolve_plain(text), Scalar::Timestamp, "{text}");
        }
        // Not a date: the day does not exist, or a zone is missing from the `T` form.
        assert_eq!(resolve_plain("2023-02-29"), Scalar::String);
        assert_eq!(resolve_plain("2001-12-14T21:59:43"), Scalar::String);
    }

    #[test]
    fn floats_as_go_writes_them_into_strings() {
        assert_eq!(go_float_text(1000.0), "1000");
        assert_eq!(go_float_text(1.5), "1.5");
        assert_eq!(go_float_text(0.1), "0.1");
        assert_eq!(go_float_text(1e6), "1e+06");
        assert_eq!(go_float_text(123456.0), "123456");
        assert_eq!(go_float_text(0.0001), "0.0001");
        assert_eq!(go_float_text(0.00001), "1e-05");
        assert_eq!(go_float_text(-2.5), "-2.5");
        assert_eq!(go_float_text(std::f64::consts::PI), "3.141592653589793");
        assert_eq!(go_float_text(123456789.0), "1.23456789e+08");
        assert_eq!(go_float_text(f64::INFINITY), "+Inf");
    }
}
