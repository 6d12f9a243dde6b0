//! `netctl node checksystem`: can this host run the node agent? The kernel version and the kernel
//! modules the agent needs, looked up where upstream looks (`calicoctl node checksystem`,
//! `calicoctl/calicoctl/commands/node/checksystem.go` in v3.29–v3.32).
//!
//! For each module of [`REQUIRED_MODULES`] the first place that has it wins, in upstream's order:
//! `/lib/modules/<version>/modules.dep` (loadable), `modules.builtin`, the loaded modules
//! (`/proc/modules`, what `lsmod` prints), the kernel configuration (`CONFIG_…=y|m`, the file
//! `--kernel-config` names or the first of upstream's places that exists), then
//! `/proc/net/ip_tables_matches`. The report prints upstream's `OK`/`FAIL` lines, and a missing
//! `ip6_tables` alone only warns (IPv6 is then unavailable).
//!
//! Where upstream is loose, netctl is exact, and says so in `--help`: a module name matches a whole
//! file or module name (upstream's unanchored regex finds `xt_set` inside `ipt_set.ko`'s line and
//! `ip_set` inside `ip_set_hash_net`), `-` and `_` are the same (the kernel's rule: `vfio-pci.ko`
//! loads as `vfio_pci`), compressed modules (`.ko.xz`, `.ko.zst`, `.ko.gz`) count, and the modules
//! are checked in a fixed order (Go's map order is random). The lookup table itself is upstream's,
//! including `xt_icmp6` found through the IPv4 match list: icmp6 lives in `ip6_tables`, so looking
//! for it elsewhere would turn a missing `ip6_tables` into two failures.
//!
//! Every path is read under a root directory (`/` on a node; `--root DIR` for a copy of a host,
//! the host's file system mounted into a container, and the tests). Nothing is written or loaded.

use crate::errors::Hint;
use std::path::{Path, PathBuf};

/// The oldest kernel the agent runs on: 2.6.24 brought network namespaces and veth pairs.
pub const MINIMUM_KERNEL: [u64; 3] = [2, 6, 24];

/// One module the agent needs and where else it may show up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequiredModule {
    /// The module's name as upstream prints it.
    pub name: &'static str,
    /// The kernel configuration option that builds it (upstream's table; `icmp` for the two icmp
    /// matches, which no configuration line has, so only the match list can find them).
    pub config: &'static str,
}

const fn module(name: &'static str, config: &'static str) -> RequiredModule {
    RequiredModule { name, config }
}

/// The modules upstream requires (v3.29–v3.32), in the order its source lists them.
pub const REQUIRED_MODULES: [RequiredModule; 19] = [
    module("ip_set", "CONFIG_IP_SET"),
    module("ip6_tables", "CONFIG_IP6_NF_IPTABLES"),
    module("ip_tables", "CONFIG_IP_NF_IPTABLES"),
    module("ipt_ipvs", "CONFIG_NETFILTER_XT_MATCH_IPVS"),
    module("vfio-pci", "CONFIG_VFIO"),
    module("xt_bpf", "CONFIG_BPF"),
    module("ipt_REJECT", "CONFIG_NFT_REJECT"),
    module("ipt_rpfilter", "CONFIG_IP_NF_MATCH_RPFILTER"),
    module("xt_rpfilter", "CONFIG_IP_NF_MATCH_RPFILTER"),
    module("ipt_set", "CONFIG_NET_EMATCH_IPSET"),
    module("nf_conntrack_netlink", "CONFIG_NF_CT_NETLINK"),
    module("xt_addrtype", "CONFIG_NETFILTER_XT_MATCH_ADDRTYPE"),
    module("xt_conntrack", "CONFIG_NETFILTER_XT_MATCH_CONNTRACK"),
    module("xt_icmp", "icmp"),
    module("xt_icmp6", "icmp"),
    module("xt_mark", "CONFIG_IP_NF_TARGET_MARK"),
    module("xt_multiport", "CONFIG_IP_NF_MATCH_MULTIPORT"),
    module("xt_set", "CONFIG_NETFILTER_XT_SET"),
    module("xt_u32", "CONFIG_NETFILTER_XT_MATCH_U32"),
];

/// The module whose absence alone only warns: without it there is no IPv6, but IPv4 works.
pub const IPV6_ONLY_MODULE: &str = "ip6_tables";

/// What `checksystem` is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSystemOptions {
    /// The host's root directory (`/` on the node itself).
    pub root: PathBuf,
    /// The kernel release to check, instead of the running one (`uname -r`).
    pub kernel_version: Option<String>,
    /// The kernel configuration file, instead of upstream's places (not under `root`).
    pub kernel_config: Option<PathBuf>,
}

/// Where a module was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// `modules.dep`: a loadable module.
    Loadable,
    /// `modules.builtin`.
    Builtin,
    /// `/proc/modules` (`lsmod`).
    Loaded,
    /// A `CONFIG_…=y|m` line of the kernel configuration.
    KernelConfig,
    /// `/proc/net/ip_tables_matches`.
    IptablesMatches,
}

/// The result for one module.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleResult {
    pub name: &'static str,
    /// `None`: found nowhere.
    pub found_in: Option<Source>,
}

/// The kernel version and whether it is new enough.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KernelResult {
    pub version: String,
    pub ok: bool,
}

/// Everything `checksystem` found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemReport {
    pub kernel: KernelResult,
    pub modules: Vec<ModuleResult>,
    /// The places that could not be read (a missing `modules.dep`, no kernel configuration):
    /// modules are then looked up in the others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

impl SystemReport {
    /// The modules found nowhere.
    pub fn missing(&self) -> Vec<&'static str> {
        self.modules
            .iter()
            .filter(|module| module.found_in.is_none())
            .map(|module| module.name)
            .collect()
    }

    /// Whether the host can run the agent: a new enough kernel, and every module but
    /// [`IPV6_ONLY_MODULE`] (alone) found.
    pub fn verdict(&self) -> Verdict {
        let missing = self.missing();
        match (self.kernel.ok, missing.as_slice()) {
            (true, []) => Verdict::Meets,
            (true, [IPV6_ONLY_MODULE]) => Verdict::MeetsWithoutIpv6,
            _ => Verdict::Fails,
        }
    }

    /// Upstream's lines: the two headings, then the tab-laid `<name> OK|FAIL` lines.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec!["Checking kernel version...".to_string()];
        lines.push(result_line(&self.kernel.version, self.kernel.ok));
        lines.push("Checking kernel modules...".to_string());
        lines.extend(
            self.modules
                .iter()
                .map(|module| result_line(module.name, module.found_in.is_some())),
        );
        lines
    }
}

/// What the report adds up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Meets,
    /// Everything but `ip6_tables`: IPv4 only.
    MeetsWithoutIpv6,
    Fails,
}

/// One of upstream's result lines (`printResult`: two tabs, the value padded to 20, five tabs).
fn result_line(value: &str, ok: bool) -> String {
    let result = if ok { "OK" } else { "FAIL" };
    format!("\t\t{value:<20}\t\t\t\t\t{result}")
}

/// Why the check could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckSystemError {
    #[error("`node checksystem` reads the host's kernel files and must run as root")]
    NotRoot,
    #[error("cannot read the kernel version from `{}`", path.display())]
    KernelVersion {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the kernel configuration `{}`", path.display())]
    KernelConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the host does not meet the node agent's requirements: {}", describe(.kernel_ok, .missing))]
    Requirements {
        kernel_ok: bool,
        missing: Vec<&'static str>,
    },
}

fn describe(kernel_ok: &bool, missing: &[&'static str]) -> String {
    let mut parts = Vec::new();
    if !kernel_ok {
        let minimum: Vec<String> = MINIMUM_KERNEL.iter().map(u64::to_string).collect();
        parts.push(format!("the kernel is older than {}", minimum.join(".")));
    }
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
        parts.push(format!("missing kernel modules {}", names.join(", ")));
    }
    parts.join("; ")
}

impl Hint for CheckSystemError {
    fn hint(&self) -> Option<String> {
        match self {
            CheckSystemError::NotRoot => Some(
                "run it with sudo on the node; `--root DIR` checks a copy of a host's files as any user"
                    .to_string(),
            ),
            CheckSystemError::KernelVersion { .. } => {
                Some("name the kernel release with `--kernel-version V` (what `uname -r` prints on the host)".to_string())
            }
            CheckSystemError::KernelConfig { .. } => Some(
                "leave `--kernel-config` out to look where upstream looks (/boot/config-<version>, /usr/src/linux/.config, ...)".to_string(),
            ),
            CheckSystemError::Requirements { missing, .. } if !missing.is_empty() => Some(format!(
                "load a missing module with `modprobe {}` (and list it in /etc/modules-load.d/ to keep it), or install the distribution's extra kernel modules package",
                missing[0]
            )),
            CheckSystemError::Requirements { .. } => None,
        }
    }
}

/// Checks the host. Reads files only.
pub fn check(options: &CheckSystemOptions) -> Result<SystemReport, CheckSystemError> {
    let root = options.root.as_path();
    let version = match &options.kernel_version {
        Some(version) => version.trim().to_string(),
        None => {
            let path = under(root, "proc/sys/kernel/osrelease");
            std::fs::read_to_string(&path)
                .map_err(|source| CheckSystemError::KernelVersion { path, source })?
                .trim()
                .to_string()
        }
    };
    let kernel = KernelResult {
        ok: kernel_at_least(&version, MINIMUM_KERNEL),
        version: version.clone(),
    };

    let mut unreadable = Vec::new();
    let given_config = match &options.kernel_config {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|source| {
            CheckSystemError::KernelConfig {
                path: path.clone(),
                source,
            }
        })?),
        None => None,
    };
    let config_path = kernel_config_path(root, &version);
    if given_config.is_none() && config_path.is_none() {
        unreadable.push(format!(
            "no kernel configuration found in upstream's places under `{}`",
            root.display()
        ));
    }
    let mut read = |path: PathBuf| match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(error) => {
            unreadable.push(format!("cannot read `{}`: {error}", path.display()));
            None
        }
    };
    let modules_dir = under(root, "lib/modules").join(&version);
    let loadable = read(modules_dir.join("modules.dep"));
    let builtin = read(modules_dir.join("modules.builtin"));
    let loaded = read(under(root, "proc/modules"));
    let config = given_config.or_else(|| config_path.and_then(&mut read));
    let matches = read(under(root, "proc/net/ip_tables_matches"));

    let modules = REQUIRED_MODULES
        .iter()
        .map(|module| {
            let found_in = if in_module_list(loadable.as_deref(), module.name) {
                Some(Source::Loadable)
            } else if in_module_list(builtin.as_deref(), module.name) {
                Some(Source::Builtin)
            } else if is_loaded(loaded.as_deref(), module.name) {
                Some(Source::Loaded)
            } else if in_kernel_config(config.as_deref(), module.config) {
                Some(Source::KernelConfig)
            } else if in_lines(matches.as_deref(), module.config) {
                Some(Source::IptablesMatches)
            } else {
                None
            };
            ModuleResult {
                name: module.name,
                found_in,
            }
        })
        .collect();
    Ok(SystemReport {
        kernel,
        modules,
        unreadable,
    })
}

/// `relative` under `root`.
fn under(root: &Path, relative: &str) -> PathBuf {
    root.join(relative)
}

/// Upstream's places for the kernel configuration, in its order: the first that exists.
fn kernel_config_path(root: &Path, version: &str) -> Option<PathBuf> {
    [
        "usr/src/linux/.config".to_string(),
        format!("boot/config-{version}"),
        format!("usr/src/linux-{version}/.config"),
        format!("usr/src/linux-headers-{version}/.config"),
        format!("lib/modules/{version}/build/.config"),
    ]
    .iter()
    .map(|relative| under(root, relative))
    .find(|path| path.exists())
}

/// Whether `version` (`6.1.0-18-amd64`, `2.6.32.71+`) is at least `minimum`: its leading
/// dot-separated numbers compared in order. A version without one is not.
pub fn kernel_at_least(version: &str, minimum: [u64; 3]) -> bool {
    let numbers: Vec<u64> = version
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or("")
        .split('.')
        .map_while(|part| part.parse().ok())
        .collect();
    if numbers.is_empty() {
        return false;
    }
    let mut padded = [0; 3];
    for (slot, number) in padded.iter_mut().zip(&numbers) {
        *slot = *number;
    }
    padded >= minimum
}

/// The kernel's module-name equality: `-` and `_` are the same.
fn same_module(left: &str, right: &str) -> bool {
    left.len() == right.len()
        && left
            .bytes()
            .zip(right.bytes())
            .all(|(l, r)| l == r || (matches!(l, b'-' | b'_') && matches!(r, b'-' | b'_')))
}

/// Whether a `modules.dep` or `modules.builtin` text lists the module (`kernel/net/netfilter/
/// xt_set.ko.xz: …` names `xt_set`). Only each line's own module is read: the ones it depends on
/// have lines of their own.
fn in_module_list(text: Option<&str>, name: &str) -> bool {
    let Some(text) = text else { return false };
    text.lines().any(|line| {
        let path = line.split(':').next().unwrap_or("").trim();
        let file = path.rsplit('/').next().unwrap_or(path);
        let stem = match file.find(".ko") {
            Some(at) if matches!(&file[at + 3..], "" | ".xz" | ".gz" | ".zst" | ".bz2") => {
                &file[..at]
            }
            _ => return false,
        };
        same_module(stem, name)
    })
}

/// Whether `/proc/modules` (one module a line, its name first) has the module loaded.
fn is_loaded(text: Option<&str>, name: &str) -> bool {
    text.is_some_and(|text| {
        text.lines()
            .filter_map(|line| line.split_whitespace().next())
            .any(|loaded| same_module(loaded, name))
    })
}

/// Whether the kernel configuration builds `option` in or as a module (`CONFIG_IP_SET=y|m`).
fn in_kernel_config(text: Option<&str>, option: &str) -> bool {
    text.is_some_and(|text| {
        text.lines().any(|line| {
            line.strip_prefix(option)
                .and_then(|rest| rest.strip_prefix('='))
                .is_some_and(|value| matches!(value.trim(), "y" | "m"))
        })
    })
}

/// Whether a line of the text is exactly `value` (`/proc/net/ip_tables_matches`).
fn in_lines(text: Option<&str>, value: &str) -> bool {
    text.is_some_and(|text| text.lines().any(|line| line.trim() == value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_compare_by_their_leading_numbers() {
        assert!(kernel_at_least("6.1.0-18-amd64", MINIMUM_KERNEL));
        assert!(kernel_at_least("2.6.24", MINIMUM_KERNEL));
        assert!(kernel_at_least("2.6.32.71+", MINIMUM_KERNEL));
        assert!(kernel_at_least("3", MINIMUM_KERNEL));
        assert!(!kernel_at_least("2.6.23-rc1", MINIMUM_KERNEL));
        assert!(!kernel_at_least("2.4.37", MINIMUM_KERNEL));
        assert!(!kernel_at_least("linux", MINIMUM_KERNEL));
        assert!(!kernel_at_least("", MINIMUM_KERNEL));
    }

    #[test]
    fn module_lists_match_whole_names_compressed_or_not() {
        let dep = "kernel/net/netfilter/xt_set.ko.xz: kernel/net/netfilter/ip_set.ko.xz\n\
                   kernel/drivers/vfio/pci/vfio-pci.ko.zst:\n\
                   kernel/net/netfilter/ipset/ip_set_hash_net.ko:\n";
        assert!(in_module_list(Some(dep), "xt_set"));
        assert!(in_module_list(Some(dep), "vfio-pci"));
        assert!(in_module_list(Some(dep), "vfio_pci"));
        // Upstream's regex would find these inside other names; netctl does not.
        assert!(!in_module_list(Some(dep), "ip_set"));
        assert!(!in_module_list(Some(dep), "ipt_set"));
        assert!(!in_module_list(
            Some("kernel/x/xt_set.kobject:\n"),
            "xt_set"
        ));
        assert!(!in_module_list(None, "xt_set"));
    }

    #[test]
    fn loaded_modules_are_the_first_field_of_proc_modules() {
        let modules = "xt_set 16384 4 - Live 0x0000000000000000\n\
                       ip_set_hash_net 49152 1 - Live 0x0000000000000000\n\
                       vfio_pci 16384 0 - Live 0x0000000000000000\n";
        assert!(is_loaded(Some(modules), "xt_set"));
        assert!(is_loaded(Some(modules), "vfio-pci"));
        assert!(!is_loaded(Some(modules), "ip_set"));
        assert!(!is_loaded(Some(modules), "xt_set_extra"));
    }

    #[test]
    fn the_kernel_configuration_counts_built_in_and_modules_only() {
        let config = "CONFIG_IP_SET=y\nCONFIG_NETFILTER_XT_SET=m\n# CONFIG_VFIO is not set\nCONFIG_BPF_JIT=y\n";
        assert!(in_kernel_config(Some(config), "CONFIG_IP_SET"));
        assert!(in_kernel_config(Some(config), "CONFIG_NETFILTER_XT_SET"));
        assert!(!in_kernel_config(Some(config), "CONFIG_VFIO"));
        assert!(!in_kernel_config(Some(config), "CONFIG_BPF"));
        assert!(!in_kernel_config(Some(config), "icmp"));
    }

    #[test]
    fn result_lines_are_upstreams() {
        assert_eq!(
            result_line("ip_set", true),
            "\t\tip_set              \t\t\t\t\tOK"
        );
        assert_eq!(
            result_line("nf_conntrack_netlink", false),
            "\t\tnf_conntrack_netlink\t\t\t\t\tFAIL"
        );
    }

    #[test]
    fn a_missing_ip6_tables_alone_still_meets_the_requirements() {
        let report = |missing: &[&str], kernel_ok: bool| SystemReport {
            kernel: KernelResult {
                version: "6.1.0".into(),
                ok: kernel_ok,
            },
            modules: REQUIRED_MODULES
                .iter()
                .map(|module| ModuleResult {
                    name: module.name,
                    found_in: (!missing.contains(&module.name)).then_some(Source::Loaded),
                })
                .collect(),
            unreadable: Vec::new(),
        };
        assert_eq!(report(&[], true).verdict(), Verdict::Meets);
        assert_eq!(
            report(&["ip6_tables"], true).verdict(),
            Verdict::MeetsWithoutIpv6
        );
        assert_eq!(
            report(&["ip6_tables", "xt_u32"], true).verdict(),
            Verdict::Fails
        );
        assert_eq!(report(&["xt_set"], true).verdict(), Verdict::Fails);
        assert_eq!(report(&[], false).verdict(), Verdict::Fails);
    }
}
