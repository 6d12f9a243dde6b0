//! Values upstream accepts either as a number or as a string: ports (`80`, `"80:90"`, `"http"`),
//! protocols (`6`, `"TCP"`) and AS numbers (`64512`, `"1.10"`).
//!
//! Decoding keeps exactly what the user wrote, so a document round-trips unchanged and a bad value
//! becomes a validation error with a field path instead of a decoding failure that stops at the first
//! problem. The parsing helpers here turn the raw value into meaning; they do not decide which values a
//! given field accepts (that is `validate.rs`).

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// A number or a string, exactly as written in the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum NumberOrString {
    Number(i64),
    Text(String),
}

/// Hand-written rather than `#[serde(untagged)]` so that a wrong type says what was expected
/// instead of "data did not match any variant".
impl<'de> Deserialize<'de> for NumberOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NumberOrStringVisitor;

        impl Visitor<'_> for NumberOrStringVisitor {
            type Value = NumberOrString;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a whole number or a string")
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
                Ok(NumberOrString::Number(value))
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
                i64::try_from(value)
                    .map(NumberOrString::Number)
                    .map_err(|_| E::invalid_value(Unexpected::Unsigned(value), &self))
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
                Ok(NumberOrString::Text(value.to_string()))
            }

            fn visit_string<E: de::Error>(self, value: String) -> Result<Self::Value, E> {
                Ok(NumberOrString::Text(value))
            }
        }

        deserializer.deserialize_any(NumberOrStringVisitor)
    }
}

impl fmt::Display for NumberOrString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumberOrString::Number(number) => write!(f, "{number}"),
            NumberOrString::Text(text) => f.write_str(text),
        }
    }
}

/// A port: a number, a range `"min:max"` or a named port.
pub type Port = NumberOrString;

/// An IP protocol: a number 1–255 or a name such as `TCP`.
pub type Protocol = NumberOrString;

/// A BGP AS number: a plain 32-bit number or the dotted `high.low` form.
pub type AsNumber = NumberOrString;

/// What a port value means once parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortMeaning {
    Range { minimum: u16, maximum: u16 },
    Named(String),
}

/// Parses a port the way upstream's `numorstring.PortFromString` does: a number, `min:max`, or
/// anything else as a name. Returns the reason when the value cannot be a port.
pub fn parse_port(port: &Port) -> Result<PortMeaning, String> {
    let number_in_range = |number: i64| -> Result<u16, String> {
        if (1..=65535).contains(&number) {
            Ok(number as u16)
        } else {
            Err(format!("port number `{number}` is out of range (1-65535)"))
        }
    };
    match port {
        NumberOrString::Number(number) => {
            let number = number_in_range(*number)?;
            Ok(PortMeaning::Range {
                minimum: number,
                maximum: number,
            })
        }
        NumberOrString::Text(text) => {
            if let Some((low, high)) = text.split_once(':') {
                let parse = |part: &str| -> Result<u16, String> {
                    let number = part.trim().parse::<i64>().map_err(|_| {
                        format!("port range `{text}` is invalid (expected `min:max` with numbers)")
                    })?;
                    number_in_range(number)
                };
                let (minimum, maximum) = (parse(low)?, parse(high)?);
                if minimum > maximum {
                    return Err(format!(
                        "port range `{text}` is invalid (minimum is greater than maximum)"
                    ));
                }
                Ok(PortMeaning::Range { minimum, maximum })
            } else if let Ok(number) = text.parse::<i64>() {
                let number = number_in_range(number)?;
                Ok(PortMeaning::Range {
                    minimum: number,
                    maximum: number,
                })
            } else if is_port_name(text) {
                Ok(PortMeaning::Named(text.clone()))
            } else {
                Err(format!(
                    "port name `{text}` is invalid (allowed: 1-128 of a-z, A-Z, 0-9, `_`, `.`, `-`)"
                ))
            }
        }
    }
}

fn is_port_name(text: &str) -> bool {
    (1..=128).contains(&text.len())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// The protocol names upstream's validator accepts (case-sensitive).
pub const PROTOCOL_NAMES: [&str; 6] = ["TCP", "UDP", "ICMP", "ICMPv6", "SCTP", "UDPLite"];

/// Checks a protocol value; returns the reason when it is invalid.
pub fn check_protocol(protocol: &Protocol) -> Result<(), String> {
    match protocol {
        NumberOrString::Number(number) => {
            if (1..=255).contains(number) {
                Ok(())
            } else {
                Err("protocol number invalid (allowed: 1-255)".to_string())
            }
        }
        NumberOrString::Text(text) => {
            if PROTOCOL_NAMES.contains(&text.as_str()) {
                return Ok(());
            }
            if let Ok(number) = text.parse::<i64>() {
                return check_protocol(&NumberOrString::Number(number));
            }
            match PROTOCOL_NAMES
                .iter()
                .find(|name| name.eq_ignore_ascii_case(text))
            {
                Some(name) => Err(format!(
                    "protocol name invalid (names are case-sensitive: use `{name}`)"
                )),
                None => Err(format!(
                    "protocol name invalid (allowed: {})",
                    PROTOCOL_NAMES.join(", ")
                )),
            }
        }
    }
}

/// Whether rules with this protocol may name ports: TCP, UDP, SCTP or their numbers 6, 17, 132.
pub fn protocol_supports_ports(protocol: &Protocol) -> bool {
    match protocol {
        NumberOrString::Number(number) => matches!(number, 6 | 17 | 132),
        NumberOrString::Text(text) => {
            matches!(text.as_str(), "TCP" | "UDP" | "SCTP" | "6" | "17" | "132")
        }
    }
}

/// Parses an AS number: a plain 32-bit number or `high.low` with 16-bit parts meaning
/// `(high << 16) + low`.
pub fn parse_as_number(value: &AsNumber) -> Result<u32, String> {
    let invalid = || {
        format!(
            "AS number `{value}` is invalid (expected a 32-bit number or `high.low` with 16-bit parts)"
        )
    };
    match value {
        NumberOrString::Number(number) => u32::try_from(*number).map_err(|_| invalid()),
        NumberOrString::Text(text) => parse_as_number_text(text).ok_or_else(invalid),
    }
}

/// The one AS-number parser for text (a resource's spec, `node run --as`, a stored
/// BGPConfiguration): `64512`, or dotted `1.10` = 1 × 65536 + 10. Digits only, as upstream's
/// `strconv.ParseUint` (no sign, no spaces).
pub fn parse_as_number_text(text: &str) -> Option<u32> {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    match text.split_once('.') {
        Some((high, low)) if digits(high) && digits(low) => {
            let high = high.parse::<u16>().ok()?;
            let low = low.parse::<u16>().ok()?;
            Some((u32::from(high) << 16) + u32::from(low))
        }
        Some(_) => None,
        None if digits(text) => text.parse().ok(),
        None => None,
    }
}

/// The DSCP names upstream accepts (`api/pkg/lib/numorstring/dscp.go`), matched ignoring case.
const DSCP_NAMES: [&str; 21] = [
    "DF", "EF", "AF11", "AF12", "AF13", "AF21", "AF22", "AF23", "AF31", "AF32", "AF33", "AF41",
    "AF42", "AF43", "CS0", "CS1", "CS2", "CS3", "CS4", "CS5", "CS6",
];

/// Checks a DSCP value: a number from 0 to 63 or one of the DSCP names (any case).
pub fn check_dscp(value: &NumberOrString) -> Result<(), String> {
    match value {
        NumberOrString::Number(number) if (0..=63).contains(number) => Ok(()),
        NumberOrString::Number(number) => Err(format!("DSCP value {number} is out of range 0-63")),
        NumberOrString::Text(name)
            if DSCP_NAMES
                .iter()
                .any(|known| known.eq_ignore_ascii_case(name)) =>
        {
            Ok(())
        }
        NumberOrString::Text(name) => Err(format!(
            "`{name}` is not a DSCP value (a number 0-63 or a name such as `EF`, `AF11`, `CS1`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &str) -> NumberOrString {
        NumberOrString::Text(value.to_string())
    }

    #[test]
    fn ports_parse_as_number_range_or_name() {
        assert_eq!(
            parse_port(&NumberOrString::Number(80)),
            Ok(PortMeaning::Range {
                minimum: 80,
                maximum: 80
            })
        );
        assert_eq!(
            parse_port(&text("80:90")),
            Ok(PortMeaning::Range {
                minimum: 80,
                maximum: 90
            })
        );
        assert_eq!(
            parse_port(&text("http")),
            Ok(PortMeaning::Named("http".into()))
        );
        assert!(parse_port(&text("90:80")).is_err());
        assert!(parse_port(&NumberOrString::Number(0)).is_err());
        assert!(parse_port(&text("70000")).is_err());
        assert!(parse_port(&text("a:b")).is_err());
        assert!(parse_port(&text("bad/name")).is_err());
    }

    #[test]
    fn protocols_are_case_sensitive() {
        assert!(check_protocol(&text("TCP")).is_ok());
        assert!(check_protocol(&NumberOrString::Number(255)).is_ok());
        assert_eq!(
            check_protocol(&text("tcp")).unwrap_err(),
            "protocol name invalid (names are case-sensitive: use `TCP`)"
        );
        assert!(check_protocol(&NumberOrString::Number(0)).is_err());
        assert!(protocol_supports_ports(&NumberOrString::Number(132)));
        assert!(!protocol_supports_ports(&text("ICMP")));
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        let error = serde_json::from_value::<NumberOrString>(serde_json::json!({})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid type: map, expected a whole number or a string"
        );
        let error = serde_json::from_value::<NumberOrString>(serde_json::json!(1.5)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid type: floating point `1.5`, expected a whole number or a string"
        );
    }

    #[test]
    fn as_numbers_accept_plain_and_dotted_forms() {
        assert_eq!(parse_as_number(&NumberOrString::Number(64512)), Ok(64512));
        assert_eq!(parse_as_number(&text("1.10")), Ok(65546));
        assert!(parse_as_number(&text("70000.1")).is_err());
        assert!(parse_as_number(&NumberOrString::Number(-1)).is_err());
        assert!(parse_as_number(&text("+1")).is_err());
        assert_eq!(parse_as_number_text("4294967295"), Some(u32::MAX));
        assert_eq!(parse_as_number_text("1.x"), None);
        assert_eq!(parse_as_number_text(""), None);
    }
}
