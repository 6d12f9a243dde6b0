//! Address blocks as IPAM uses them: a masked network and its prefix length, with the ordinal
//! arithmetic of an allocation block (the n-th address, the ordinal of an address) and the three
//! spellings upstream stores a CIDR under.
//!
//! The spellings (`libcalico-go/lib/backend/model/block.go`, `lib/names/cidr.go`): `10.0.0.0/26`
//! in values and Kubernetes specs; `10.0.0.0-26` in etcd keys (the `/` written as `-`); and
//! `10-0-0-0-26` as a Kubernetes object name (dots, colons and the slash written as `-`). Parsing
//! masks the host bits as Go's `net.ParseCIDR` does, so `10.0.0.7/26` names the block
//! `10.0.0.0/26`. Addresses print as Go prints them (RFC 5952 for IPv6), which Rust's `Display`
//! already does. No I/O.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// IPv4 or IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpVersion {
    V4,
    V6,
}

impl IpVersion {
    pub fn of(address: IpAddr) -> IpVersion {
        match address {
            IpAddr::V4(_) => IpVersion::V4,
            IpAddr::V6(_) => IpVersion::V6,
        }
    }

    /// `4` or `6`, as upstream's keys and labels spell it (`ipv4`, `ip-version: "4"`).
    pub fn number(self) -> u8 {
        match self {
            IpVersion::V4 => 4,
            IpVersion::V6 => 6,
        }
    }

    /// The address length in bits.
    pub fn bits(self) -> u8 {
        match self {
            IpVersion::V4 => 32,
            IpVersion::V6 => 128,
        }
    }
}

/// A network: the address with its host bits cleared, and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

/// Why a CIDR or an address does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    #[error("`{0}` is not a CIDR (ADDRESS/PREFIX, e.g. `10.0.0.0/26`)")]
    NotACidr(String),
    #[error("`{0}` is not a valid IP address")]
    NotAnAddress(String),
}

impl Cidr {
    /// The network of `address` with `prefix` bits; `None` when the prefix is longer than the
    /// address.
    pub fn new(address: IpAddr, prefix: u8) -> Option<Cidr> {
        let version = IpVersion::of(address);
        if prefix > version.bits() {
            return None;
        }
        let network = from_number(version, to_number(address) & mask(version, prefix));
        Some(Cidr { network, prefix })
    }

    /// Parses `ADDRESS/PREFIX`, masking the host bits.
    pub fn parse(text: &str) -> Result<Cidr, CidrError> {
        let invalid = || CidrError::NotACidr(text.to_string());
        let (address, prefix) = text.split_once('/').ok_or_else(invalid)?;
        let address: IpAddr = address.parse().map_err(|_| invalid())?;
        // Go's ParseCIDR takes decimal digits only: no sign, no leading `+`.
        if prefix.is_empty() || !prefix.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(invalid());
        }
        let prefix: u8 = prefix.parse().map_err(|_| invalid())?;
        Cidr::new(address, prefix).ok_or_else(invalid)
    }

    /// Parses an address or a CIDR (a WorkloadEndpoint's `ipNetworks`, a node's tunnel address)
    /// and gives the address, as upstream's `ParseCIDROrIP` does.
    pub fn address_of(text: &str) -> Result<IpAddr, CidrError> {
        let address = text.split_once('/').map_or(text, |(address, _)| address);
        match (address.parse::<IpAddr>(), text.contains('/')) {
            (Ok(parsed), false) => Ok(parsed),
            (Ok(parsed), true) => Cidr::parse(text).map(|_| parsed),
            (Err(_), _) => Err(CidrError::NotAnAddress(text.to_string())),
        }
    }

    /// Parses the etcd key form `10.0.0.0-26` (`fd00::-122`).
    pub fn from_key_form(text: &str) -> Result<Cidr, CidrError> {
        let (address, prefix) = text
            .rsplit_once('-')
            .ok_or_else(|| CidrError::NotACidr(text.to_string()))?;
        Cidr::parse(&format!("{address}/{prefix}"))
    }

    pub fn network(&self) -> IpAddr {
        self.network
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    pub fn version(&self) -> IpVersion {
        IpVersion::of(self.network)
    }

    /// Host bits: the block holds `2^host_bits` addresses.
    pub fn host_bits(&self) -> u8 {
        self.version().bits() - self.prefix
    }

    /// How many addresses the network holds; `u128::MAX` for the whole IPv6 space, which does
    /// not fit.
    pub fn size(&self) -> u128 {
        1u128
            .checked_shl(u32::from(self.host_bits()))
            .unwrap_or(u128::MAX)
    }

    /// Whether `address` lies in this network.
    pub fn contains(&self, address: IpAddr) -> bool {
        IpVersion::of(address) == self.version()
            && to_number(address) & mask(self.version(), self.prefix) == to_number(self.network)
    }

    /// Whether the two networks share an address (one contains the other).
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.contains(other.network) || other.contains(self.network)
    }

    /// The address `ordinal` places into the network (`0` is the network address).
    pub fn nth(&self, ordinal: u128) -> IpAddr {
        from_number(
            self.version(),
            to_number(self.network).wrapping_add(ordinal),
        )
    }

    /// How far into the network `address` lies, if it lies in it.
    pub fn ordinal_of(&self, address: IpAddr) -> Option<u128> {
        self.contains(address)
            .then(|| to_number(address) - to_number(self.network))
    }

    /// The network `count` networks of this size further on (splitting a pool), if it exists.
    pub fn offset(&self, count: u128) -> Option<Cidr> {
        let step = self.size().checked_mul(count)?;
        let start = to_number(self.network).checked_add(step)?;
        let limit = match self.version() {
            IpVersion::V4 => u128::from(u32::MAX),
            IpVersion::V6 => u128::MAX,
        };
        (start <= limit).then(|| Cidr {
            network: from_number(self.version(), start),
            prefix: self.prefix,
        })
    }

    /// The etcd key form: `10.0.0.0-26`.
    pub fn key_form(&self) -> String {
        format!("{}-{}", self.network, self.prefix)
    }

    /// The Kubernetes object name form (`names.CIDRToName`): `10-0-0-0-26`, `fd00--122`'s colons
    /// each a dash (`fd00---122`).
    pub fn name_form(&self) -> String {
        self.to_string().replace(['.', ':', '/'], "-")
    }
}

fn to_number(address: IpAddr) -> u128 {
    match address {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_number(version: IpVersion, number: u128) -> IpAddr {
    match version {
        IpVersion::V4 => IpAddr::V4(Ipv4Addr::from(number as u32)),
        IpVersion::V6 => IpAddr::V6(Ipv6Addr::from(number)),
    }
}

fn mask(version: IpVersion, prefix: u8) -> u128 {
    let bits = u32::from(version.bits());
    let all = match version {
        IpVersion::V4 => u128::from(u32::MAX),
        IpVersion::V6 => u128::MAX,
    };
    let host = bits - u32::from(prefix);
    all & !(1u128.checked_shl(host).map_or(u128::MAX, |value| value - 1))
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Cidr, CidrError> {
        Cidr::parse(text)
    }
}

impl Serialize for Cidr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Cidr, D::Error> {
        let text = String::deserialize(deserializer)?;
        Cidr::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_masks_host_bits_and_refuses_junk() {
        let cidr = Cidr::parse("10.65.79.7/26").unwrap();
        assert_eq!(cidr.to_string(), "10.65.79.0/26");
        assert_eq!(cidr.size(), 64);
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/-1",
            "10.0.0.0/+8",
            "x/8",
            "10.0.0/8",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Cidr::parse("fd5f:abcd:64::0/48").unwrap().to_string(),
            "fd5f:abcd:64::/48"
        );
    }

    #[test]
    fn the_three_spellings_are_upstreams() {
        let v4 = Cidr::parse("10.65.79.0/26").unwrap();
        assert_eq!(v4.key_form(), "10.65.79.0-26");
        assert_eq!(v4.name_form(), "10-65-79-0-26");
        assert_eq!(Cidr::from_key_form("10.65.79.0-26").unwrap(), v4);
        let v6 = Cidr::parse("fd5f:abcd:64:4f2c:ec1b:27b9:1989:77c0/122").unwrap();
        assert_eq!(v6.key_form(), "fd5f:abcd:64:4f2c:ec1b:27b9:1989:77c0-122");
        assert_eq!(v6.name_form(), "fd5f-abcd-64-4f2c-ec1b-27b9-1989-77c0-122");
        let short = Cidr::parse("fd00::/122").unwrap();
        assert_eq!(short.name_form(), "fd00---122");
        assert_eq!(Cidr::from_key_form("fd00::-122").unwrap(), short);
    }

    #[test]
    fn ordinals_and_offsets() {
        let block = Cidr::parse("10.0.0.64/26").unwrap();
        assert_eq!(block.nth(2).to_string(), "10.0.0.66");
        assert_eq!(block.ordinal_of("10.0.0.127".parse().unwrap()), Some(63));
        assert_eq!(block.ordinal_of("10.0.0.128".parse().unwrap()), None);
        assert_eq!(block.ordinal_of("fd00::1".parse().unwrap()), None);
        assert_eq!(block.offset(1).unwrap().to_string(), "10.0.0.128/26");
        assert!(
            Cidr::parse("255.255.255.192/26")
                .unwrap()
                .offset(1)
                .is_none()
        );
        let pool = Cidr::parse("10.0.0.0/16").unwrap();
        assert!(pool.overlaps(&block) && block.overlaps(&pool));
        assert!(!block.overlaps(&Cidr::parse("10.0.1.0/24").unwrap()));
        assert_eq!(Cidr::parse("::/0").unwrap().size(), u128::MAX);
    }

    #[test]
    fn addresses_come_out_of_ip_networks_and_plain_addresses() {
        assert_eq!(
            Cidr::address_of("10.0.0.5/32").unwrap().to_string(),
            "10.0.0.5"
        );
        assert_eq!(Cidr::address_of("fd00::5").unwrap().to_string(), "fd00::5");
        assert!(Cidr::address_of("10.240.0.300").is_err());
        assert!(Cidr::address_of("10.0.0.5/40").is_err());
    }
}
