//! `netctl node checksystem`: flags in, `node::checksystem`'s report out — upstream's lines on
//! stdout (or a document with `-o json|yaml`), warnings on stderr, and a failure when the host
//! does not meet the requirements.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use super::node_status::{ReportFormat, encode};
use crate::node::checksystem::{
    self, CheckSystemError, CheckSystemOptions, IPV6_ONLY_MODULE, SystemReport, Verdict,
};

pub const AFTER_HELP: &str = "\
Read-only. Checks, as upstream's `calicoctl node checksystem`, that the kernel is at least 2.6.24
and that each kernel module the node agent needs is there: listed in
/lib/modules/<version>/modules.dep (loadable) or modules.builtin, loaded (/proc/modules, what
lsmod shows), built by the kernel configuration (CONFIG_...=y or =m, in the file --kernel-config
names or the first of /usr/src/linux/.config, /boot/config-<version>,
/usr/src/linux-<version>/.config, /usr/src/linux-headers-<version>/.config,
/lib/modules/<version>/build/.config), or a match in /proc/net/ip_tables_matches. Prints
upstream's OK/FAIL lines. A missing ip6_tables alone only warns (no IPv6); anything else missing
fails. Runs as root on the node; with --root it reads a copy of a host's files as any user.

Differences from upstream: names match whole module names (`-` and `_` alike, compressed .ko.xz,
.ko.zst, .ko.gz files too), where upstream's pattern also finds a name inside another; the
modules are listed in a fixed order.

Examples:
  sudo netctl node checksystem
  sudo netctl node checksystem -f ./kernel.config            # a plain-text kernel configuration
  netctl node checksystem --root /host                     # the host's / mounted at /host
  netctl node checksystem --root ./copy --kernel-version 6.1.0-18-amd64 -o json";

#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Check options")]
pub struct CheckSystemArgs {
    /// The kernel configuration file to read [default: upstream's places]
    #[arg(short = 'f', long, value_name = "FILE")]
    kernel_config: Option<PathBuf>,
    /// The host's root directory: /lib/modules, /proc, /boot and /usr/src are read under it
    /// [default: /; no root needed with a directory given]
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The kernel release to check [default: the running kernel's, from ROOT/proc]
    #[arg(long, value_name = "VERSION")]
    kernel_version: Option<String>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    output: ReportFormat,
}

/// `-o json|yaml`: the report and what it adds up to.
#[derive(serde::Serialize)]
struct CheckDocument<'a> {
    #[serde(flatten)]
    report: &'a SystemReport,
    /// Whether the host can run the agent.
    meets: bool,
    /// Whether IPv6 is available (`ip6_tables` found).
    ipv6: bool,
}

pub fn run(context: &Context, args: CheckSystemArgs) -> anyhow::Result<ExitCode> {
    if args.root.is_none() && !crate::node::running_as_root() {
        return Err(CheckSystemError::NotRoot.into());
    }
    let options = CheckSystemOptions {
        root: args.root.unwrap_or_else(|| PathBuf::from("/")),
        kernel_version: args.kernel_version,
        kernel_config: args.kernel_config,
    };
    let report = checksystem::check(&options)?;
    let verdict = report.verdict();
    let missing = report.missing();
    match args.output {
        ReportFormat::Text => {
            let mut text = report.lines().join("\n");
            text.push('\n');
            if verdict != Verdict::Fails {
                text.push_str("System meets minimum system requirements to run Calico!\n");
            }
            context.printer.data(&text)?;
        }
        format => {
            let document = CheckDocument {
                report: &report,
                meets: verdict != Verdict::Fails,
                ipv6: !missing.contains(&IPV6_ONLY_MODULE),
            };
            context.printer.data(&encode(format, &document)?)?;
        }
    }
    if !missing.is_empty() {
        for place in &report.unreadable {
            context.printer.warn(place);
        }
    }
    match verdict {
        Verdict::Meets => Ok(ExitCode::SUCCESS),
        Verdict::MeetsWithoutIpv6 => {
            context
                .printer
                .warn("IPv6 will be unavailable: the ip6_tables kernel module was not found");
            Ok(ExitCode::SUCCESS)
        }
        Verdict::Fails => Err(CheckSystemError::Requirements {
            kernel_ok: report.kernel.ok,
            missing,
        }
        .into()),
    }
}
