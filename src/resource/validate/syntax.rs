//! Syntax checks shared by every kind: Kubernetes-style names and labels, IP addresses and CIDRs,
//! MAC addresses and Go duration strings.
//!
//! Each function answers one question about one string and knows nothing about fields or paths;
//! turning an answer into a `FieldError` is the caller's business.

use std::fmt;
use std::net::IpAddr;
use std::sync::LazyLock;

use regex::Regex;

static DNS_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
        .expect("the DNS subdomain pattern is a valid regex")
});
static DNS_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").expect("the DNS label pattern is a valid regex")
});
static QUALIFIED_NAME_PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
        .expect("the qualified name pattern is a valid regex")
});

/// Checks a DNS-1123 subdomain (the rule for most resource names): the reason when it is not one.
pub fn check_subdomain(text: &str) -> Result<(), String> {
    if text.len() > 253 {
        return Err(format!(
            "name is too long by {} bytes (at most 253)",
            text.len() - 253
        ));
    }
    if !DNS_SUBDOMAIN.is_match(text) {
        return Err(
            "name must consist of lower case alphanumeric characters, `-` or `.`, and \
                    start and end with an alphanumeric character"
                .to_string(),
        );
    }
    Ok(())
}

/// Whether `text` is a DNS-1123 label (at most 63 characters, no dots).
pub fn is_dns_label(text: &str) -> bool {
    text.len() <= 63 && DNS_LABEL.is_match(text)
}

/// Checks a Kubernetes qualified name (`[prefix/]name`), the rule for label and annotation keys.
pub fn check_qualified_name(text: &str) -> Result<(), String> {
    let (prefix, name) = match text.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() || check_subdomain(prefix).is_err() {
            return Err(
                "key prefix must be a DNS subdomain (lower case alphanumerics, `-`, `.`)"
                    .to_string(),
            );
        }
    }
    if name.is_empty() {
        return Err("key name must not be empty".to_string());
    }
    if name.len() > 63 {
        return Err("key name must be at most 63 characters".to_string());
    }
    if !QUALIFIED_NAME_PART.is_match(name) {
        return Err(
            "key name must consist of alphanumerics, `-`, `_` or `.`, and start and end \
                    with an alphanumeric character"
                .to_string(),
        );
    }
    Ok(())
}

/// Checks a Kubernetes label value.
pub fn check_label_value(text: &str) -> Result<(), String> {
    if text.len() > 63 {
        return Err("label value must be at most 63 characters".to_string());
    }
    if !text.is_empty() && !QUALIFIED_NAME_PART.is_match(text) {
        return Err(
            "label value must be empty or consist of alphanumerics, `-`, `_` or `.`, and \
                    start and end with an alphanumeric character"
                .to_string(),
        );
    }
    Ok(())
}

/// Whether `text` is a Kubernetes port name (IANA service name): at most 15 lower-case
/// alphanumerics or `-`, at least one letter, no leading, trailing or doubled `-`.
pub fn is_port_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 15
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && text.chars().any(|c| c.is_ascii_lowercase())
        && !text.starts_with('-')
        && !text.ends_with('-')
        && !text.contains("--")
}

/// An IP network: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub address: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Parses `address/prefix`.
    pub fn parse(text: &str) -> Option<Cidr> {
        let (address, prefix) = text.split_once('/')?;
        let address: IpAddr = address.parse().ok()?;
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_digit()) || prefix.len() > 3 {
            return None;
        }
        let prefix: u8 = prefix.parse().ok()?;
        if prefix > maximum_prefix(address) {
            return None;
        }
        Some(Cidr { address, prefix })
    }

    /// Parses a CIDR or a bare address (a host network: /32 or /128).
    pub fn parse_address_or_cidr(text: &str) -> Option<Cidr> {
        if text.contains('/') {
            return Cidr::parse(text);
        }
        let address: IpAddr = text.parse().ok()?;
        Some(Cidr {
            address,
            prefix: maximum_prefix(address),
        })
    }

    pub fn is_ipv4(&self) -> bool {
        self.address.is_ipv4()
    }

    /// The network with host bits cleared.
    pub fn network(&self) -> Cidr {
        let address = match self.address {
            IpAddr::V4(address) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4((u32::from(address) & mask).into())
            }
            IpAddr::V6(address) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6((u128::from(address) & mask).into())
            }
        };
        Cidr {
            address,
            prefix: self.prefix,
        }
    }

    /// Whether no host bits are set (`10.0.0.0/8`, not `10.0.0.1/8`).
    pub fn is_strictly_masked(&self) -> bool {
        self.network().address == self.address
    }

    /// Whether the two networks share any address.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        if self.is_ipv4() != other.is_ipv4() {
            return false;
        }
        let prefix = self.prefix.min(other.prefix);
        let left = Cidr {
            address: self.address,
            prefix,
        };
        let right = Cidr {
            address: other.address,
            prefix,
        };
        left.network() == right.network()
    }

    /// Whether this is the whole address space of its family (`0.0.0.0/0` or `::/0`).
    pub fn is_catch_all(&self) -> bool {
        self.prefix == 0
    }
}

/// Renders the canonical form (`fd00::/64`, never `fd00:0:0::/64`).
impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

fn maximum_prefix(address: IpAddr) -> u8 {
    if address.is_ipv4() { 32 } else { 128 }
}

/// Whether `text` is a MAC address in colon or dash notation (6 or 8 octets), as Go's `ParseMAC`
/// accepts for the common forms.
pub fn is_mac_address(text: &str) -> bool {
    let separator = if text.contains(':') { ':' } else { '-' };
    let octets: Vec<&str> = text.split(separator).collect();
    matches!(octets.len(), 6 | 8)
        && octets
            .iter()
            .all(|octet| octet.len() == 2 && octet.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Parses a Go duration (`300ms`, `1h30m`, `-1.5h`, `0`): the reason when it is not one.
pub fn check_go_duration(text: &str) -> Result<(), String> {
    let invalid = || "not a duration (expected e.g. `90s`, `15m`, `1h30m`)".to_string();
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    if body == "0" {
        return Ok(());
    }
    if body.is_empty() {
        return Err(invalid());
    }
    let mut rest = body;
    while !rest.is_empty() {
        let number_length = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_length];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        rest = &rest[number_length..];
        let unit_length = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_length];
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(if unit.is_empty() {
                "duration is missing a unit (one of ns, us, ms, s, m, h)".to_string()
            } else {
                format!("duration has an unknown unit `{unit}` (one of ns, us, ms, s, m, h)")
            });
        }
        rest = &rest[unit_length..];
    }
    Ok(())
}

/// Whether `text` is a WireGuard key as upstream parses one: standard base64 of exactly 32 bytes
/// (43 characters of the alphabet and one `=`).
pub fn is_wireguard_key(text: &str) -> bool {
    let Some(body) = text.strip_suffix('=') else {
        return false;
    };
    body.len() == 43
        && body
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'+' || byte == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels() {
        assert!(check_subdomain("a-b.c").is_ok());
        assert!(check_subdomain("A").is_err());
        assert!(check_subdomain("-a").is_err());
        assert_eq!(
            check_subdomain(&"a".repeat(255)).unwrap_err(),
            "name is too long by 2 bytes (at most 253)"
        );
        assert!(is_dns_label("tier-1"));
        assert!(!is_dns_label("tier.1"));
        assert!(check_qualified_name("app.kubernetes.io/name").is_ok());
        assert!(check_qualified_name("Bad Key").is_err());
        assert!(check_qualified_name("UPPER/x").is_err());
        assert!(check_label_value("").is_ok());
        assert!(check_label_value("a b").is_err());
        assert!(is_port_name("http-alt"));
        assert!(!is_port_name("1234"));
        assert!(!is_port_name("a--b"));
    }

    #[test]
    fn cidrs() {
        let cidr = Cidr::parse("10.0.0.1/8").unwrap();
        assert!(!cidr.is_strictly_masked());
        assert_eq!(cidr.network().to_string(), "10.0.0.0/8");
        assert_eq!(
            Cidr::parse("fd00:0:0::/64").unwrap().to_string(),
            "fd00::/64"
        );
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(Cidr::parse("10.0.0.0").is_none());
        assert_eq!(
            Cidr::parse_address_or_cidr("10.0.0.1").unwrap().to_string(),
            "10.0.0.1/32"
        );
        let link_local = Cidr::parse("169.254.0.0/16").unwrap();
        assert!(Cidr::parse("169.254.1.0/24").unwrap().overlaps(&link_local));
        assert!(Cidr::parse("169.0.0.0/8").unwrap().overlaps(&link_local));
        assert!(!Cidr::parse("10.0.0.0/8").unwrap().overlaps(&link_local));
    }

    #[test]
    fn durations_and_macs() {
        for good in ["0", "15m", "1h30m", "300ms", "1.5h", "-2s", "10us"] {
            assert!(check_go_duration(good).is_ok(), "{good}");
        }
        for bad in ["", "15", "1x", "m", "1..5s", "1h 30m"] {
            assert!(check_go_duration(bad).is_err(), "{bad}");
        }
        assert!(is_mac_address("ee:ee:ee:ee:ee:ee"));
        assert!(is_mac_address("EE-EE-EE-EE-EE-EE"));
        assert!(!is_mac_address("ee:ee:ee"));
    }
}
