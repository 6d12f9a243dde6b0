//! The flags of `node run` as typed values, and their validation into a [`NodeRunRequest`].
//!
//! Everything a user can get wrong is checked here, all at once and before any command runs: addresses
//! and their family, the AS number, the backend, both autodetection methods (every interface regex
//! compiled on its own), the node name, the Felix configuration file and the datastore settings. The
//! rules and their meaning are upstream's (`calicoctl/calicoctl/commands/node/run.go`,
//! `api/pkg/lib/numorstring/asnumber.go`); no I/O beyond reading
//! file metadata and resolving a `can-reach=` host name happens here.

use std::fmt;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::NodeError;
use super::engine::Engine;
use crate::config::{EtcdSettings, PemOrigin};
use crate::resource::spec::numorstring::parse_as_number_text;

/// IPv4 or IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpFamily {
    V4,
    V6,
}

impl IpFamily {
    fn name(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }

    fn matches(self, address: &IpAddr) -> bool {
        match self {
            IpFamily::V4 => address.is_ipv4(),
            IpFamily::V6 => address.is_ipv6(),
        }
    }

    fn address_flag(self) -> &'static str {
        match self {
            IpFamily::V4 => "--ip",
            IpFamily::V6 => "--ip6",
        }
    }

    fn method_flag(self) -> &'static str {
        match self {
            IpFamily::V4 => "--ip-autodetection-method",
            IpFamily::V6 => "--ip6-autodetection-method",
        }
    }
}

/// `--ip` / `--ip6`: a fixed address or autodetection by the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressSetting {
    Autodetect,
    Address(IpAddr),
}

impl AddressSetting {
    /// Parses `autodetect` or an address of the given family.
    pub fn parse(text: &str, family: IpFamily) -> Result<AddressSetting, NodeError> {
        if text == "autodetect" {
            return Ok(AddressSetting::Autodetect);
        }
        let address: IpAddr = text.parse().map_err(|_| NodeError::InvalidAddress {
            flag: family.address_flag(),
            value: text.to_string(),
        })?;
        if !family.matches(&address) {
            return Err(NodeError::WrongFamily {
                flag: family.address_flag(),
                expected: family.name(),
                value: text.to_string(),
            });
        }
        Ok(AddressSetting::Address(address))
    }
}

impl fmt::Display for AddressSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddressSetting::Autodetect => f.write_str("autodetect"),
            AddressSetting::Address(address) => write!(f, "{address}"),
        }
    }
}

/// A BGP AS number. Written plain (`64512`) or dotted (`1.10` = 1 × 65536 + 10); always shown plain,
/// which is the form the agent reads (upstream `api/pkg/lib/numorstring/asnumber.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsNumber(pub u32);

impl AsNumber {
    pub fn parse(text: &str) -> Result<AsNumber, NodeError> {
        parse_as_number_text(text)
            .map(AsNumber)
            .ok_or_else(|| NodeError::InvalidAsNumber {
                value: text.to_string(),
            })
    }
}

impl fmt::Display for AsNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How the agent picks the node's address when `--ip`/`--ip6` is `autodetect` or not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutodetectionMethod {
    FirstFound,
    CanReach(String),
    Interface(Vec<String>),
    SkipInterface(Vec<String>),
    Cidr(Vec<String>),
    KubernetesInternalIp,
}

impl AutodetectionMethod {
    /// Parses and checks a method for one address family.
    pub fn parse(text: &str, family: IpFamily) -> Result<AutodetectionMethod, NodeError> {
        let invalid = |reason: String| NodeError::InvalidAutodetectionMethod {
            flag: family.method_flag(),
            value: text.to_string(),
            reason,
        };
        if text == "first-found" {
            return Ok(AutodetectionMethod::FirstFound);
        }
        if text == "kubernetes-internal-ip" {
            return Ok(AutodetectionMethod::KubernetesInternalIp);
        }
        let Some((name, argument)) = text.split_once('=') else {
            return Err(invalid("unknown method".into()));
        };
        match name {
            "can-reach" => {
                check_reachable(argument, family).map_err(invalid)?;
                Ok(AutodetectionMethod::CanReach(argument.to_string()))
            }
            "interface" => Ok(AutodetectionMethod::Interface(
                regex_list(argument).map_err(invalid)?,
            )),
            "skip-interface" => Ok(AutodetectionMethod::SkipInterface(
                regex_list(argument).map_err(invalid)?,
            )),
            "cidr" => Ok(AutodetectionMethod::Cidr(
                cidr_list(argument, family).map_err(invalid)?,
            )),
            _ => Err(invalid("unknown method".into())),
        }
    }

    pub fn is_default(&self) -> bool {
        *self == AutodetectionMethod::FirstFound
    }
}

impl fmt::Display for AutodetectionMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutodetectionMethod::FirstFound => f.write_str("first-found"),
            AutodetectionMethod::KubernetesInternalIp => f.write_str("kubernetes-internal-ip"),
            AutodetectionMethod::CanReach(target) => write!(f, "can-reach={target}"),
            AutodetectionMethod::Interface(list) => write!(f, "interface={}", list.join(",")),
            AutodetectionMethod::SkipInterface(list) => {
                write!(f, "skip-interface={}", list.join(","))
            }
            AutodetectionMethod::Cidr(list) => write!(f, "cidr={}", list.join(",")),
        }
    }
}

/// `can-reach=`: an address of the right family, or a name that resolves to one.
fn check_reachable(target: &str, family: IpFamily) -> Result<(), String> {
    if target.is_empty() {
        return Err("`can-reach=` needs an address or a host name".into());
    }
    let addresses: Vec<IpAddr> = match target.parse::<IpAddr>() {
        Ok(address) => vec![address],
        Err(_) => (target, 0)
            .to_socket_addrs()
            .map_err(|error| format!("cannot resolve `{target}`: {error}"))?
            .map(|socket| socket.ip())
            .collect(),
    };
    if addresses.iter().any(|address| family.matches(address)) {
        Ok(())
    } else {
        Err(format!(
            "`{target}` does not resolve to an {} address",
            family.name()
        ))
    }
}

/// `interface=` / `skip-interface=`: a comma-separated list of regular expressions.
///
/// Each expression is compiled on its own. Upstream compiles the whole comma-joined string as one
/// expression (`calicoctl/calicoctl/commands/node/run.go`), so `eth(0,ens3` passes its check
/// because the comma belongs to the joined text, and the agent then fails at runtime. Checking each
/// entry is the fix, on
/// purpose; a regression test covers it.
fn regex_list(argument: &str) -> Result<Vec<String>, String> {
    if argument.is_empty() {
        return Err("needs at least one regular expression".into());
    }
    argument
        .split(',')
        .map(|pattern| {
            if pattern.is_empty() {
                return Err("an empty regular expression in the list".to_string());
            }
            regex::Regex::new(pattern)
                .map(|_| pattern.to_string())
                .map_err(|error| {
                    // The parser's message draws a caret diagram over several lines; its last line
                    // names the problem, which is all a one-line error needs.
                    let text = error.to_string();
                    let problem = text.lines().last().unwrap_or_default();
                    let problem = problem.strip_prefix("error: ").unwrap_or(problem);
                    format!("`{pattern}` is not a valid regular expression ({problem})")
                })
        })
        .collect()
}

/// `cidr=`: a comma-separated list of CIDRs of the family in question.
fn cidr_list(argument: &str, family: IpFamily) -> Result<Vec<String>, String> {
    if argument.is_empty() {
        return Err("needs at least one CIDR".into());
    }
    argument
        .split(',')
        .map(|cidr| {
            let bad = || format!("`{cidr}` is not a CIDR such as `10.0.0.0/8` or `fd00::/8`");
            let (address, prefix) = cidr.split_once('/').ok_or_else(bad)?;
            let address: IpAddr = address.parse().map_err(|_| bad())?;
            let prefix: u8 = prefix.parse().map_err(|_| bad())?;
            let maximum = if address.is_ipv4() { 32 } else { 128 };
            if prefix > maximum {
                return Err(bad());
            }
            if !family.matches(&address) {
                return Err(format!("`{cidr}` is not an {} CIDR", family.name()));
            }
            Ok(cidr.to_string())
        })
        .collect()
}

/// The routing backend of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Bird,
    None,
}

impl Backend {
    pub fn parse(text: &str) -> Result<Backend, NodeError> {
        match text {
            "bird" => Ok(Backend::Bird),
            "none" => Ok(Backend::None),
            _ => Err(NodeError::UnknownBackend {
                value: text.to_string(),
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Bird => "bird",
            Backend::None => "none",
        }
    }
}

/// Whether the agent creates the default IP pools on first start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultPools {
    Create,
    Skip,
}

/// Who keeps the container running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// The engine does: detached, restarted always.
    Engine,
    /// An init system (systemd, ...) does: the container runs in the foreground and is removed on exit.
    InitSystem,
}

/// The flags as given, before validation.
#[derive(Debug, Clone)]
pub struct NodeRunOptions {
    pub name: Option<String>,
    pub image: Option<String>,
    pub ip: Option<String>,
    pub ip6: Option<String>,
    pub as_number: Option<String>,
    pub ip_autodetection_method: String,
    pub ip6_autodetection_method: String,
    pub backend: String,
    pub log_dir: PathBuf,
    pub felix_config: Option<PathBuf>,
    pub default_pools: DefaultPools,
    pub lifecycle: Lifecycle,
    pub engine: Option<Engine>,
    pub secrets_dir: PathBuf,
    pub startup_timeout: Duration,
}

/// Everything `node run` needs, validated. `image` is resolved separately (it may need the datastore).
#[derive(Debug, Clone)]
pub struct NodeRunRequest {
    pub node_name: String,
    pub ipv4: Option<AddressSetting>,
    pub ipv6: Option<AddressSetting>,
    pub as_number: Option<AsNumber>,
    pub ipv4_autodetection: AutodetectionMethod,
    pub ipv6_autodetection: AutodetectionMethod,
    pub backend: Backend,
    /// Absolute, because an engine reads a relative `-v` source as a named volume.
    pub log_dir: PathBuf,
    pub felix_config: Option<PathBuf>,
    pub default_pools: DefaultPools,
    pub lifecycle: Lifecycle,
    pub secrets_dir: PathBuf,
    pub startup_timeout: Duration,
    pub etcd: EtcdSettings,
}

impl NodeRunOptions {
    /// Checks every flag (not the image, not the engine) and combines them with the etcd settings.
    /// `host_name` is only called when `--name` was not given.
    pub fn validate(
        &self,
        etcd: EtcdSettings,
        host_name: impl FnOnce() -> std::io::Result<String>,
    ) -> Result<NodeRunRequest, NodeError> {
        let ipv4 = self
            .ip
            .as_deref()
            .map(|text| AddressSetting::parse(text, IpFamily::V4))
            .transpose()?;
        let ipv6 = self
            .ip6
            .as_deref()
            .map(|text| AddressSetting::parse(text, IpFamily::V6))
            .transpose()?;
        let as_number = self.as_number.as_deref().map(AsNumber::parse).transpose()?;
        let backend = Backend::parse(&self.backend)?;
        let ipv4_autodetection =
            AutodetectionMethod::parse(&self.ip_autodetection_method, IpFamily::V4)?;
        let ipv6_autodetection =
            AutodetectionMethod::parse(&self.ip6_autodetection_method, IpFamily::V6)?;
        let node_name = match &self.name {
            Some(name) => name.clone(),
            None => host_name()
                .map_err(|source| NodeError::NodeName { source })?
                .trim()
                .to_lowercase(),
        };
        if node_name.is_empty() || node_name.chars().any(char::is_whitespace) {
            return Err(NodeError::InvalidNodeName { value: node_name });
        }
        let log_dir = absolute(&self.log_dir)?;
        let felix_config = match &self.felix_config {
            Some(path) => {
                let metadata =
                    std::fs::metadata(path).map_err(|source| NodeError::FelixConfig {
                        path: path.clone(),
                        source,
                    })?;
                if !metadata.is_file() {
                    return Err(NodeError::FelixConfig {
                        path: path.clone(),
                        source: std::io::Error::other("not a regular file"),
                    });
                }
                Some(absolute(path)?)
            }
            None => None,
        };
        // Certificate files are mounted by path, so they need an absolute one too.
        let mut etcd = etcd;
        if let Some(tls) = &mut etcd.tls {
            let identity = tls.identity.iter_mut();
            let pems = tls.ca.iter_mut().chain(
                identity.flat_map(|identity| [&mut identity.certificate, &mut identity.key]),
            );
            for pem in pems {
                if let PemOrigin::File(path) = &pem.origin {
                    pem.origin = PemOrigin::File(absolute(path)?);
                }
            }
        }
        if let Some(credentials) = &etcd.credentials {
            if credentials.username.contains(['\n', '\r']) {
                return Err(NodeError::UnsafeCredential { what: "user name" });
            }
            if credentials.password.expose().contains(['\n', '\r']) {
                return Err(NodeError::UnsafeCredential { what: "password" });
            }
        }
        Ok(NodeRunRequest {
            node_name,
            ipv4,
            ipv6,
            as_number,
            ipv4_autodetection,
            ipv6_autodetection,
            backend,
            log_dir,
            felix_config,
            default_pools: self.default_pools,
            lifecycle: self.lifecycle,
            secrets_dir: absolute(&self.secrets_dir)?,
            startup_timeout: self.startup_timeout,
            etcd,
        })
    }
}

/// The absolute form of a host path that will appear in a `-v HOST:CONTAINER` argument. A `:` or `,`
/// in it would be read as a separator by the engine, so such paths are refused here.
fn absolute(path: &Path) -> Result<PathBuf, NodeError> {
    let absolute = std::path::absolute(path).map_err(|source| NodeError::Path {
        path: path.to_path_buf(),
        source,
    })?;
    mountable(&absolute)?;
    Ok(absolute)
}

fn mountable(path: &Path) -> Result<(), NodeError> {
    if path.to_string_lossy().contains([':', ',']) {
        return Err(NodeError::UnmountablePath {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// The host name as the kernel reports it (upstream's default node name, trimmed and lower-cased by
/// the caller).
pub fn host_name() -> std::io::Result<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_numbers_plain_and_dotted() {
        assert_eq!(AsNumber::parse("64512").unwrap(), AsNumber(64512));
        assert_eq!(AsNumber::parse("1.10").unwrap(), AsNumber(65546));
        assert_eq!(AsNumber::parse("4294967295").unwrap(), AsNumber(u32::MAX));
        assert_eq!(AsNumber::parse("65535.65535").unwrap(), AsNumber(u32::MAX));
        for bad in [
            "",
            "-1",
            "4294967296",
            "65536.1",
            "1.65536",
            "1.",
            ".1",
            "1.2.3",
            "a",
            "+5",
        ] {
            assert!(AsNumber::parse(bad).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn addresses_check_family() {
        assert_eq!(
            AddressSetting::parse("autodetect", IpFamily::V6).unwrap(),
            AddressSetting::Autodetect
        );
        assert!(matches!(
            AddressSetting::parse("fd00::1", IpFamily::V4),
            Err(NodeError::WrongFamily { flag: "--ip", .. })
        ));
        assert!(matches!(
            AddressSetting::parse("10.0.0.1", IpFamily::V6),
            Err(NodeError::WrongFamily { flag: "--ip6", .. })
        ));
        assert!(matches!(
            AddressSetting::parse("10.0.0", IpFamily::V4),
            Err(NodeError::InvalidAddress { .. })
        ));
    }

    #[test]
    fn autodetection_methods() {
        let v4 = IpFamily::V4;
        assert_eq!(
            AutodetectionMethod::parse("interface=eth.*,ens[0-9]+", v4).unwrap(),
            AutodetectionMethod::Interface(vec!["eth.*".into(), "ens[0-9]+".into()])
        );
        assert_eq!(
            AutodetectionMethod::parse("can-reach=8.8.8.8", v4)
                .unwrap()
                .to_string(),
            "can-reach=8.8.8.8"
        );
        assert!(AutodetectionMethod::parse("can-reach=fd00::1", v4).is_err());
        assert!(AutodetectionMethod::parse("can-reach=fd00::1", IpFamily::V6).is_ok());
        assert!(AutodetectionMethod::parse("cidr=10.0.0.0/8,192.168.0.0/16", v4).is_ok());
        assert!(AutodetectionMethod::parse("cidr=fd00::/8", v4).is_err());
        assert!(AutodetectionMethod::parse("cidr=10.0.0.0/33", v4).is_err());
        assert!(AutodetectionMethod::parse("kubernetes-internal-ip", v4).is_ok());
        assert!(AutodetectionMethod::parse("last-found", v4).is_err());
        assert!(AutodetectionMethod::parse("interface=", v4).is_err());
        assert!(AutodetectionMethod::parse("interface=eth0,", v4).is_err());
    }

    /// Regression: upstream compiles the comma-joined list as one regex, so `eth(0,ens3)` passes there
    /// although neither `eth(0` nor `ens3)` is a valid expression on its own.
    #[test]
    fn each_interface_regex_is_compiled_on_its_own() {
        for method in ["interface=eth(0,ens3)", "skip-interface=eth(0,ens3)"] {
            let error = AutodetectionMethod::parse(method, IpFamily::V4).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("`eth(0` is not a valid regular expression (unclosed group)")
            );
        }
    }
}
