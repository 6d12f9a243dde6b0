//! The values a template works on, as kubectl hands them to Go's `text/template`: the object's
//! JSON decoded into `map[string]interface{}`, integers as `int64` and other numbers as
//! `float64` (k8s.io/apimachinery's JSON conversion). A missing key and a JSON `null` are "no
//! value" (`<no value>` when printed at the top, `<nil>` inside a printed map or list); and Go's
//! `fmt` printing of each (`%v`: `map[a:1 b:2]` with sorted keys, `[x y]`, floats in `%g` with
//! the shortest digits), which `print`, `printf` and the actions themselves use.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// A value during execution.
#[derive(Debug, Clone)]
pub enum Val<'a> {
    /// No value: a missing key, a `null`.
    Missing,
    /// A value of the data (borrowed) or made from it.
    Json(Cow<'a, Value>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

/// Go's kinds, as the builtins distinguish them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
    List,
    Map,
}

/// A JSON number as kubectl's decoding types it.
pub fn number(number: &serde_json::Number) -> Val<'static> {
    if let Some(int) = number.as_i64() {
        return Val::Int(int);
    }
    let float = number.as_f64().unwrap_or(f64::NAN);
    if float.fract() == 0.0 && float.abs() < 9.2e18 {
        return Val::Int(float as i64);
    }
    Val::Float(float)
}

impl<'a> Val<'a> {
    /// A value of the data, typed as kubectl types it.
    pub fn of(value: Cow<'a, Value>) -> Val<'a> {
        match value.as_ref() {
            Value::Null => Val::Missing,
            Value::Bool(bool) => Val::Bool(*bool),
            Value::Number(n) => number(n),
            Value::String(_) => match value {
                Cow::Borrowed(Value::String(text)) => Val::Str(text.clone()),
                Cow::Owned(Value::String(text)) => Val::Str(text),
                _ => unreachable!("matched a string"),
            },
            _ => Val::Json(value),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Val::Missing => Kind::Invalid,
            Val::Int(_) => Kind::Int,
            Val::Float(_) => Kind::Float,
            Val::Bool(_) => Kind::Bool,
            Val::Str(_) => Kind::String,
            Val::Json(value) => match value.as_ref() {
                Value::Array(_) => Kind::List,
                Value::Object(_) => Kind::Map,
                Value::Null => Kind::Invalid,
                Value::Bool(_) => Kind::Bool,
                Value::String(_) => Kind::String,
                Value::Number(n) => number(n).kind(),
            },
        }
    }

    /// Go's type name, for messages and `%T`.
    pub fn type_name(&self) -> &'static str {
        match self.kind() {
            Kind::Invalid => "<nil>",
            Kind::Bool => "bool",
            Kind::Int => "int64",
            Kind::Float => "float64",
            Kind::String => "string",
            Kind::List => "[]interface {}",
            Kind::Map => "map[string]interface {}",
        }
    }

    /// Go's truth: false, 0, "", empty list or map, and no value are false.
    pub fn truth(&self) -> bool {
        match self {
            Val::Missing => false,
            Val::Int(int) => *int != 0,
            Val::Float(float) => *float != 0.0,
            Val::Bool(bool) => *bool,
            Val::Str(text) => !text.is_empty(),
            Val::Json(value) => match value.as_ref() {
                Value::Array(items) => !items.is_empty(),
                Value::Object(map) => !map.is_empty(),
                Value::Null => false,
                _ => true,
            },
        }
    }

    pub fn as_list(&self) -> Option<&Vec<Value>> {
        match self {
            Val::Json(value) => value.as_array(),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&Map<String, Value>> {
        match self {
            Val::Json(value) => value.as_object(),
            _ => None,
        }
    }

    /// Element `index` of a list, keeping the borrow when there is one.
    pub fn element(&self, index: usize) -> Option<Val<'a>> {
        match self {
            Val::Json(Cow::Borrowed(value)) => value.get(index).map(|v| Val::of(Cow::Borrowed(v))),
            Val::Json(Cow::Owned(value)) => {
                value.get(index).map(|v| Val::of(Cow::Owned(v.clone())))
            }
            _ => None,
        }
    }

    /// `key` of a map (no value when absent).
    pub fn entry(&self, key: &str) -> Val<'a> {
        match self {
            Val::Json(Cow::Borrowed(value)) => value
                .get(key)
                .map_or(Val::Missing, |v| Val::of(Cow::Borrowed(v))),
            Val::Json(Cow::Owned(value)) => value
                .get(key)
                .map_or(Val::Missing, |v| Val::of(Cow::Owned(v.clone()))),
            _ => Val::Missing,
        }
    }

    /// `%v` as an action prints it: `<no value>` for no value at the top.
    pub fn print(&self) -> String {
        match self {
            Val::Missing => "<no value>".to_string(),
            other => other.to_go_string(),
        }
    }

    /// `%v` inside `fmt`: `<nil>` for no value.
    pub fn to_go_string(&self) -> String {
        match self {
            Val::Missing => "<nil>".to_string(),
            Val::Int(int) => int.to_string(),
            Val::Float(float) => go_float(*float),
            Val::Bool(bool) => bool.to_string(),
            Val::Str(text) => text.clone(),
            Val::Json(value) => json_go_string(value),
        }
    }
}

/// `%v` of a JSON value inside a printed container.
fn json_go_string(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(bool) => bool.to_string(),
        Value::Number(n) => number(n).to_go_string(),
        Value::String(text) => text.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(json_go_string)
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let entries: Vec<String> = keys
                .iter()
                .map(|key| format!("{key}:{}", json_go_string(&map[*key])))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

/// The decimal digits of `float`'s shortest round-trip form and its decimal exponent
/// (`1.5e3` → ("15", 3)).
pub fn shortest_digits(float: f64) -> (String, i32) {
    let text = format!("{:e}", float.abs());
    let (mantissa, exponent) = text.split_once('e').expect("LowerExp has an exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exponent.parse().expect("an integer exponent"))
}

/// Go's `%v` (`%g` with the shortest digits) of a float64: the `%e` form when the decimal exponent
/// is below -4 or at least 6 (strconv's rule for the shortest form: `1e+06`, `100000.5`).
pub fn go_float(float: f64) -> String {
    if float.is_nan() {
        return "NaN".to_string();
    }
    if float.is_infinite() {
        return if float > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if float == 0.0 {
        return if float.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sign = if float < 0.0 { "-" } else { "" };
    let (digits, exponent) = shortest_digits(float);
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let mantissa = match rest.is_empty() {
            true => first.to_string(),
            false => format!("{first}.{rest}"),
        };
        return format!("{sign}{mantissa}{}", go_exponent(exponent));
    }
    format!("{sign}{}", place_point(&digits, exponent))
}

/// `e+06`, `e-05`, `e+100`.
pub fn go_exponent(exponent: i32) -> String {
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("e{sign}{:02}", exponent.abs())
}

/// Digits `d1d2...` with the decimal point after the `exponent + 1`th digit.
fn place_point(digits: &str, exponent: i32) -> String {
    if exponent < 0 {
        return format!("0.{}{digits}", "0".repeat((-exponent - 1) as usize));
    }
    let point = exponent as usize + 1;
    if digits.len() <= point {
        format!("{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{}.{}", &digits[..point], &digits[point..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_as_go_prints_float64() {
        for (float, go) in [
            (1234567.5, "1.2345675e+06"),
            (0.00001, "1e-05"),
            (0.0001, "0.0001"),
            (100000.5, "100000.5"),
            (1e20, "1e+20"),
            (1.2345678901234567e19, "1.2345678901234567e+19"),
            (2.5, "2.5"),
            (1.5e300, "1.5e+300"),
            (-0.5, "-0.5"),
        ] {
            assert_eq!(go_float(float), go, "{float}");
        }
    }

    #[test]
    fn values_print_as_go_prints_the_decoded_json() {
        let value = json!([1, 2.5, null, "x", true, {"k": null, "a": [1]}]);
        assert_eq!(
            Val::of(Cow::Borrowed(&value)).print(),
            "[1 2.5 <nil> x true map[a:[1] k:<nil>]]"
        );
        assert_eq!(Val::Missing.print(), "<no value>");
        let integral = json!(3.0);
        assert_eq!(Val::of(Cow::Borrowed(&integral)).type_name(), "int64");
        let big = json!(12345678901234567890u64);
        assert_eq!(
            Val::of(Cow::Borrowed(&big)).print(),
            "1.2345678901234567e+19"
        );
    }
}
