//! Go's `fmt` for the template functions `print`, `println` and `printf`: operands joined as
//! `fmt.Sprint` joins them (a space between two operands when neither is a string), and
//! `fmt.Sprintf`'s verbs `%v %s %q %d %x %X %o %b %c %f %F %e %E %g %G %t %T %%` with the flags
//! `-+# 0`, width and precision; a verb that does not fit its operand prints as Go prints it
//! (`%!d(string=x)`), as do missing and extra operands. A verb applies to each element of a list
//! or map, as in Go.

use serde_json::Value;

use super::value::{Kind, Val, go_exponent, go_float, number};

/// `fmt.Sprint`.
pub fn sprint(args: &[Val]) -> String {
    let mut out = String::new();
    for (index, arg) in args.iter().enumerate() {
        let is_string = |val: &Val| val.kind() == Kind::String;
        if index > 0 && !is_string(arg) && !is_string(&args[index - 1]) {
            out.push(' ');
        }
        out.push_str(&arg.to_go_string());
    }
    out
}

/// `fmt.Sprintln`.
pub fn sprintln(args: &[Val]) -> String {
    let mut text = args
        .iter()
        .map(Val::to_go_string)
        .collect::<Vec<_>>()
        .join(" ");
    text.push('\n');
    text
}

#[derive(Debug, Clone, Copy, Default)]
struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    precision: Option<usize>,
    verb: char,
}

/// `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[Val]) -> String {
    let chars: Vec<char> = format.chars().collect();
    let mut out = String::new();
    let mut next = 0usize;
    let mut at = 0usize;
    while at < chars.len() {
        if chars[at] != '%' {
            out.push(chars[at]);
            at += 1;
            continue;
        }
        at += 1;
        let mut spec = Spec::default();
        while let Some(&c) = chars.get(at) {
            match c {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '#' => spec.sharp = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                _ => break,
            }
            at += 1;
        }
        let read_number = |at: &mut usize, next: &mut usize| -> Option<usize> {
            if chars.get(*at) == Some(&'*') {
                *at += 1;
                let value = match args.get(*next) {
                    Some(Val::Int(int)) => Some((*int).max(0) as usize),
                    _ => None,
                };
                *next += 1;
                return value;
            }
            let start = *at;
            while chars.get(*at).is_some_and(char::is_ascii_digit) {
                *at += 1;
            }
            (*at > start).then(|| {
                chars[start..*at]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .unwrap_or(0)
            })
        };
        spec.width = read_number(&mut at, &mut next);
        if chars.get(at) == Some(&'.') {
            at += 1;
            spec.precision = Some(read_number(&mut at, &mut next).unwrap_or(0));
        }
        let Some(&verb) = chars.get(at) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        at += 1;
        spec.verb = verb;
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(next) {
            Some(arg) => out.push_str(&format_arg(arg, spec)),
            None => out.push_str(&format!("%!{verb}(MISSING)")),
        }
        next += 1;
    }
    if next < args.len() {
        let extra: Vec<String> = args[next..]
            .iter()
            .map(|arg| format!("{}={}", arg.type_name(), arg.to_go_string()))
            .collect();
        out.push_str(&format!("%!(EXTRA {})", extra.join(", ")));
    }
    out
}

/// One operand under one verb, padded to the width.
fn format_arg(arg: &Val, spec: Spec) -> String {
    let body = match arg {
        Val::Json(value)
            if matches!(value.as_ref(), Value::Array(_) | Value::Object(_)) && spec.verb != 'T' =>
        {
            return pad(composite(value, spec), spec, false);
        }
        _ => scalar(arg, spec),
    };
    let numeric = matches!(arg.kind(), Kind::Int | Kind::Float)
        && matches!(
            spec.verb,
            'd' | 'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'v' | 'x' | 'X' | 'o' | 'b'
        );
    pad(body, spec, numeric)
}

/// A list or map under a verb: the verb applied to each element.
fn composite(value: &Value, spec: Spec) -> String {
    let element = |value: &Value| -> String {
        let inner = Spec {
            width: None,
            ..spec
        };
        match value {
            Value::Null => "<nil>".to_string(),
            Value::Array(_) | Value::Object(_) => composite(value, inner),
            other => scalar(&json_val(other), inner),
        }
    };
    match value {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(element).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let entries: Vec<String> = keys
                .iter()
                .map(|key| {
                    let key_text = scalar(
                        &Val::Str((*key).clone()),
                        Spec {
                            width: None,
                            ..spec
                        },
                    );
                    format!("{key_text}:{}", element(&map[*key]))
                })
                .collect();
            format!("map[{}]", entries.join(" "))
        }
        other => scalar(&json_val(other), spec),
    }
}

fn json_val(value: &Value) -> Val<'static> {
    match value {
        Value::Null => Val::Missing,
        Value::Bool(bool) => Val::Bool(*bool),
        Value::Number(n) => number(n),
        Value::String(text) => Val::Str(text.clone()),
        other => Val::Json(std::borrow::Cow::Owned(other.clone())),
    }
}

fn bad(arg: &Val, verb: char) -> String {
    format!("%!{verb}({}={})", arg.type_name(), arg.to_go_string())
}

fn scalar(arg: &Val, spec: Spec) -> String {
    let verb = spec.verb;
    if verb == 'T' {
        return arg.type_name().to_string();
    }
    match arg {
        Val::Missing => match verb {
            'v' | 's' => "<nil>".to_string(),
            _ => format!("%!{verb}(<nil>)"),
        },
        Val::Bool(bool) => match verb {
            'v' | 't' => bool.to_string(),
            _ => bad(arg, verb),
        },
        Val::Str(text) => string(text, arg, spec),
        Val::Int(int) => integer(*int, arg, spec),
        Val::Float(float) => floating(*float, arg, spec),
        Val::Json(value) => match value.as_ref() {
            Value::String(text) => string(text, arg, spec),
            other => scalar(&json_val(other), spec),
        },
    }
}

fn string(text: &str, arg: &Val, spec: Spec) -> String {
    let truncated: String = match spec.precision {
        Some(precision) => text.chars().take(precision).collect(),
        None => text.to_string(),
    };
    match spec.verb {
        'v' | 's' => truncated,
        'q' => go_quote(&truncated),
        'x' => truncated.bytes().map(|b| format!("{b:02x}")).collect(),
        'X' => truncated.bytes().map(|b| format!("{b:02X}")).collect(),
        verb => bad(arg, verb),
    }
}

fn signed(body: String, negative: bool, spec: Spec) -> String {
    match (negative, spec.plus, spec.space) {
        (true, _, _) => format!("-{body}"),
        (false, true, _) => format!("+{body}"),
        (false, false, true) => format!(" {body}"),
        _ => body,
    }
}

fn integer(int: i64, arg: &Val, spec: Spec) -> String {
    let magnitude = int.unsigned_abs();
    let body = match spec.verb {
        'v' | 'd' => magnitude.to_string(),
        'x' => format!("{}{magnitude:x}", if spec.sharp { "0x" } else { "" }),
        'X' => format!("{}{magnitude:X}", if spec.sharp { "0X" } else { "" }),
        'o' => format!("{}{magnitude:o}", if spec.sharp { "0" } else { "" }),
        'b' => format!("{magnitude:b}"),
        'c' => {
            return char::from_u32(int as u32).map_or("\u{fffd}".to_string(), |c| c.to_string());
        }
        'q' => {
            let c = char::from_u32(int as u32).unwrap_or('\u{fffd}');
            return format!("'{}'", quote_char(c, '\''));
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => return bad(arg, spec.verb),
        verb => return bad(arg, verb),
    };
    let body = match spec.precision {
        Some(precision) if body.len() < precision => {
            format!("{}{body}", "0".repeat(precision - body.len()))
        }
        _ => body,
    };
    signed(body, int < 0, spec)
}

fn floating(float: f64, arg: &Val, spec: Spec) -> String {
    let negative = float.is_sign_negative();
    let magnitude = float.abs();
    let body = match spec.verb {
        'v' => return signed(go_float(magnitude), negative, spec),
        'f' | 'F' => format!("{:.*}", spec.precision.unwrap_or(6), magnitude),
        'e' | 'E' => {
            let text = exponent_form(magnitude, spec.precision.unwrap_or(6));
            if spec.verb == 'E' {
                text.to_uppercase()
            } else {
                text
            }
        }
        'g' | 'G' => {
            let text = match spec.precision {
                None => go_float(magnitude),
                Some(precision) => general(magnitude, precision.max(1)),
            };
            if spec.verb == 'G' {
                text.to_uppercase()
            } else {
                text
            }
        }
        verb => return bad(arg, verb),
    };
    signed(body, negative, spec)
}

/// `%.Ne`: `d.ddddde+XX`.
fn exponent_form(magnitude: f64, precision: usize) -> String {
    let text = format!("{magnitude:.precision$e}");
    let (mantissa, exponent) = text.split_once('e').expect("LowerExp has an exponent");
    format!("{mantissa}{}", go_exponent(exponent.parse().unwrap_or(0)))
}

/// `%.Ng`: N significant digits, `%e` form when the exponent is below -4 or at least N, trailing
/// zeros removed.
fn general(magnitude: f64, precision: usize) -> String {
    if magnitude == 0.0 {
        return "0".to_string();
    }
    let rounded = format!("{magnitude:.*e}", precision - 1);
    let (_, exponent) = rounded.split_once('e').expect("LowerExp has an exponent");
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let (mantissa, _) = rounded.split_once('e').expect("checked");
        let mantissa = trim_zeros(mantissa);
        return format!("{mantissa}{}", go_exponent(exponent));
    }
    let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
    trim_zeros(&format!("{magnitude:.decimals$}"))
}

fn trim_zeros(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

fn pad(body: String, spec: Spec, numeric: bool) -> String {
    let Some(width) = spec.width else {
        return body;
    };
    let length = body.chars().count();
    if length >= width {
        return body;
    }
    let fill = width - length;
    if spec.minus {
        return format!("{body}{}", " ".repeat(fill));
    }
    if spec.zero && numeric {
        let (sign, digits) = match body.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), body[1..].to_string()),
            _ => (String::new(), body),
        };
        return format!("{sign}{}{digits}", "0".repeat(fill));
    }
    format!("{}{body}", " ".repeat(fill))
}

/// Go's `strconv.Quote`.
pub fn go_quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        out.push_str(&quote_char(c, '"'));
    }
    out.push('"');
    out
}

fn quote_char(c: char, quote: char) -> String {
    match c {
        '\\' => "\\\\".to_string(),
        '\n' => "\\n".to_string(),
        '\t' => "\\t".to_string(),
        '\r' => "\\r".to_string(),
        '\u{7}' => "\\a".to_string(),
        '\u{8}' => "\\b".to_string(),
        '\u{c}' => "\\f".to_string(),
        '\u{b}' => "\\v".to_string(),
        c if c == quote => format!("\\{c}"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("\\x{:02x}", c as u32),
        c if c.is_control() => {
            if (c as u32) < 0x10000 {
                format!("\\u{:04x}", c as u32)
            } else {
                format!("\\U{:08x}", c as u32)
            }
        }
        c => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::borrow::Cow;

    #[test]
    fn sprintf_matches_go_for_the_common_verbs() {
        let list = json!([1, 2.5, null, "x", true, {"k": null}]);
        let args = [
            Val::Float(1234567.5),
            Val::Int(3),
            Val::Float(1234567.5),
            Val::Float(1234567.5),
            Val::Float(1234567.5),
            Val::Int(3),
            Val::Json(Cow::Borrowed(&list)),
            Val::Int(3),
            Val::Float(1.2345678901234567e19),
        ];
        // What `kubectl ... -o go-template` printed for the same operands.
        assert_eq!(
            sprintf("%v %d %5.1f %e %g %x %q %T %T", &args),
            "1.2345675e+06 3 1234567.5 1.234568e+06 1.2345675e+06 3 ['\\x01' %!q(float64=2.5) <nil> \"x\" %!q(bool=true) map[\"k\":<nil>]] int64 float64"
        );
        assert_eq!(
            sprintf(
                "%.2f %x %t %08.3f",
                &[
                    Val::Float(1.5),
                    Val::Int(255),
                    Val::Bool(true),
                    Val::Float(3.14158)
                ]
            ),
            "1.50 ff true 0003.142"
        );
        assert_eq!(
            sprintf(
                "%5d|%s|%q|%-4s|",
                &[
                    Val::Int(1000000),
                    Val::Str("x".into()),
                    Val::Str("x".into()),
                    Val::Str("ab".into())
                ]
            ),
            "1000000|x|\"x\"|ab  |"
        );
        assert_eq!(
            sprintf("%d %s", &[Val::Str("a".into())]),
            "%!d(string=a) %!s(MISSING)"
        );
        assert_eq!(
            sprintf("%d", &[Val::Int(1), Val::Str("b".into())]),
            "1%!(EXTRA string=b)"
        );
        assert_eq!(
            sprintf(
                "%.3g|%g|%6.2f%%",
                &[Val::Float(3.14158), Val::Float(1e-7), Val::Float(2.5)]
            ),
            "3.14|1e-07|  2.50%"
        );
    }

    #[test]
    fn sprint_spaces_operands_that_are_not_strings() {
        let args = [
            Val::Int(1),
            Val::Int(2),
            Val::Str("a".into()),
            Val::Str("b".into()),
            Val::Int(3),
        ];
        assert_eq!(sprint(&args), "1 2ab3");
        assert_eq!(sprintln(&[Val::Str("x".into())]), "x\n");
    }
}
