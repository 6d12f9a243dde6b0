//! The text of one table cell: values as upstream's Go templates print them (numbers, floats,
//! lists cut at 80 characters, maps), and the cells that need more than one field (a Node's AS
//! number, a peer's node, a workload's NAT mappings).

use serde_json::Value;

use super::CellContext;
use crate::resource::Resource;

/// Network lists longer than this are cut, the cut ending with `...` (upstream's `joinAndTruncate`).
pub(super) const MAXIMUM_LIST_WIDTH: usize = 80;
pub(super) const TRUNCATION_SUFFIX: &str = "...";

pub(super) fn spec<'a>(resource: &'a Resource, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(&resource.spec, |value, key| value.get(key))
        .filter(|value| !value.is_null())
}

/// A scalar as text: strings as they are, numbers as Go prints them, absent as empty.
pub(super) fn scalar(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Bool(flag)) => flag.to_string(),
        Some(Value::Number(number)) => go_number(number),
        Some(other) => other.to_string(),
    }
}

/// A boolean that defaults to `false` when absent (a non-pointer Go `bool`).
pub(super) fn flag(value: Option<&Value>) -> String {
    value.and_then(Value::as_bool).unwrap_or(false).to_string()
}

/// A string that counts as set only when non-empty (Go template truthiness).
pub(super) fn non_empty(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// Integers plainly; other numbers as Go's `%v` prints a `float64` (see [`go_float`]).
pub(super) fn go_number(number: &serde_json::Number) -> String {
    if let Some(integer) = number.as_i64() {
        return integer.to_string();
    }
    if let Some(integer) = number.as_u64() {
        return integer.to_string();
    }
    number.as_f64().map_or_else(|| number.to_string(), go_float)
}

/// A `float64` as Go's `%v` prints it: the shortest digits that round-trip, in plain notation when
/// the decimal exponent is in `-4..6` and in Go's exponent notation otherwise (`100`, `1.5`,
/// `1e+06`, `1e-05`). Policy and tier orders are Go `float64`s upstream, so an order of one million
/// shows as `1e+06` there and here.
pub(super) fn go_float(float: f64) -> String {
    if !float.is_finite() {
        return float.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits and the exact exponent, e.g. `1.5e-7`.
    let scientific = format!("{float:e}");
    let (mantissa, power) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = power.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{float}");
    }
    let (sign, digits) = match power.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', power),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// A policy or tier order: always a Go `float64` upstream, so integers get float formatting too.
pub(super) fn float_cell(value: Option<&Value>) -> String {
    match value {
        Some(Value::Number(number)) => number.as_f64().map_or_else(|| number.to_string(), go_float),
        other => scalar(other),
    }
}

/// Joins a list of scalars with `,`; anything else renders as a single scalar.
pub(super) fn join(value: Option<&Value>) -> String {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| scalar(Some(item)))
            .collect::<Vec<_>>()
            .join(","),
        other => scalar(other),
    }
}

/// [`join`], cut to [`MAXIMUM_LIST_WIDTH`] characters with the cut ending in `...`.
pub(super) fn join_and_truncate(value: Option<&Value>) -> String {
    truncate(join(value))
}

pub(super) fn truncate(text: String) -> String {
    if text.chars().count() <= MAXIMUM_LIST_WIDTH {
        return text;
    }
    let kept: String = text
        .chars()
        .take(MAXIMUM_LIST_WIDTH - TRUNCATION_SUFFIX.len())
        .collect();
    kept + TRUNCATION_SUFFIX
}

/// A map as sorted `k=v` pairs joined by `,`.
pub(super) fn join_map(value: Option<&Value>) -> String {
    let Some(Value::Object(map)) = value else {
        return String::new();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(key, value)| format!("{key}={}", scalar(Some(value))))
        .collect();
    pairs.sort();
    pairs.join(",")
}

pub(super) fn name(resource: &Resource, _: &CellContext) -> String {
    resource.metadata.name.clone()
}

pub(super) fn namespace(resource: &Resource, _: &CellContext) -> String {
    resource.metadata.namespace.clone().unwrap_or_default()
}

pub(super) fn tier(resource: &Resource, _: &CellContext) -> String {
    non_empty(spec(resource, &["tier"]))
        .unwrap_or("default")
        .to_string()
}

pub(super) fn order(resource: &Resource, _: &CellContext) -> String {
    float_cell(spec(resource, &["order"]))
}

pub(super) fn policy_selector(resource: &Resource, _: &CellContext) -> String {
    scalar(spec(resource, &["selector"]))
}

pub(super) fn node(resource: &Resource, _: &CellContext) -> String {
    scalar(spec(resource, &["node"]))
}

pub(super) fn interface(resource: &Resource, _: &CellContext) -> String {
    scalar(spec(resource, &["interfaceName"]))
}

pub(super) fn profiles(resource: &Resource, _: &CellContext) -> String {
    join(spec(resource, &["profiles"]))
}

pub(super) fn nets(resource: &Resource, _: &CellContext) -> String {
    join_and_truncate(spec(resource, &["nets"]))
}

pub(super) fn node_as_number(resource: &Resource, context: &CellContext) -> String {
    if spec(resource, &["bgp"]).is_none() {
        return String::new();
    }
    match spec(resource, &["bgp", "asNumber"]) {
        Some(number) => scalar(Some(number)),
        None => format!("({})", context.global_as_number),
    }
}

pub(super) fn peer_node(resource: &Resource, _: &CellContext) -> String {
    non_empty(spec(resource, &["node"]))
        .or_else(|| non_empty(spec(resource, &["nodeSelector"])))
        .unwrap_or("(global)")
        .to_string()
}

pub(super) fn peer_as_number(resource: &Resource, _: &CellContext) -> String {
    spec(resource, &["asNumber"]).map_or_else(|| "0".to_string(), |number| scalar(Some(number)))
}

pub(super) fn encapsulation_mode(value: Option<&Value>) -> String {
    non_empty(value).unwrap_or("Never").to_string()
}

/// BGPFilter shows the same columns in `ps` and `wide`: the rule count of each list.
pub(super) const BGP_FILTER_HEADINGS: &[&str] = &[
    "NAME",
    "NUMEXPORTV4",
    "NUMIMPORTV4",
    "NUMEXPORTV6",
    "NUMIMPORTV6",
];

/// The number of entries of a list field (`0` when absent), as upstream's BGPFilter rule counts.
pub(super) fn count(value: Option<&Value>) -> String {
    value
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
        .to_string()
}

pub(super) fn set_or_dash(value: Option<&Value>) -> String {
    match value {
        Some(value) => scalar(Some(value)),
        None => "-".to_string(),
    }
}

pub(super) fn workload(resource: &Resource, _: &CellContext) -> String {
    non_empty(spec(resource, &["workload"]))
        .map(str::to_string)
        .unwrap_or_else(|| scalar(spec(resource, &["pod"])))
}

pub(super) fn nat_mappings(resource: &Resource, _: &CellContext) -> String {
    let Some(Value::Array(mappings)) = spec(resource, &["ipNATs"]) else {
        return String::new();
    };
    mappings
        .iter()
        .map(|mapping| {
            format!(
                "{{{} {}}}",
                scalar(mapping.get("internalIP")),
                scalar(mapping.get("externalIP"))
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}
