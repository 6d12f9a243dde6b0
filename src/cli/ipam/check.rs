//! `netctl ipam check`: upstream's consistency check (`calicoctl/calicoctl/commands/ipam/check.go`)
//! with its output lines and report file, streaming every list so memory stays flat at 100,000
//! allocations and endpoints. The check itself (what is read, what is not checked and why) is
//! `datastore::ipam_check`'s, shared with the upgrade verification; this file chooses the detail,
//! the cluster for LoadBalancer Services and writes the report.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::ExitCode;

use super::{Context, ipam_of};
use crate::datastore::ipam_check::scan;
use crate::ipam::check::{Checker, Detail as CheckDetail};

pub const EXAMPLES: &str = "\
Examples:
  netctl ipam check
  netctl ipam check --show-problem-ips
  netctl ipam check --show-all-ips -o report.json
  netctl ipam check --exit-code || echo 'IPAM has problems'
The report file (-o) has upstream's JSON shape: `calicoctl ipam release --from-report` reads it
(with --force: the versions differ) and `netctl ipam release --from-report` reads upstream's.
Make the report while the datastore is locked (`netctl datastore migrate lock`) to release from it.
Beyond upstream, a node's IPv6 VXLAN and WireGuard tunnel addresses count as in use (upstream counts
only IPv4 ones and so reports a live IPv6 tunnel address as leaked). Without a Kubernetes cluster
(etcd without --kubeconfig) or KubeControllersConfiguration `default`, LoadBalancer Service addresses
are not checked, and the check says so.";

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Print every address checked
    #[arg(long)]
    show_all_ips: bool,
    /// Print every address that is leaked or not allocated properly
    #[arg(long)]
    show_problem_ips: bool,
    /// Write the report (upstream's JSON shape) to this file
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Exit with status 1 when problems are found (upstream always exits 0)
    #[arg(long)]
    exit_code: bool,
    /// Kubeconfig of the cluster whose LoadBalancer Services to check (etcd datastore; else the
    /// configuration's cluster, if any)
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
}

pub async fn run(context: &Context, args: CheckArgs) -> anyhow::Result<ExitCode> {
    let detail = match (args.show_all_ips, args.show_problem_ips) {
        (true, _) => CheckDetail::All,
        (false, true) => CheckDetail::Problems,
        (false, false) => CheckDetail::Counts,
    };
    let store = context.datastore().await?;
    let ipam = ipam_of(store.as_ref())?;
    let mut out = context.printer.stdout();
    let mut checker = Checker::new(detail);
    writeln!(out, "Checking IPAM for inconsistencies...\n")?;

    let kubeconfig = args.kubeconfig.clone();
    let services = async || {
        kubernetes_client(context, kubeconfig)
            .await
            .map_err(|error| format!("{error:#}"))
    };
    let cluster = scan(store.as_ref(), ipam, services, &mut checker, &mut out).await?;

    let findings = checker.finish(&mut out)?;
    out.flush()?;
    if let Some(path) = &args.output {
        let report = checker.report(&cluster, &findings);
        write_report(path, &report.to_json())?;
        context
            .printer
            .say(format!("Report written to `{}`.", path.display()));
        if !cluster.locked {
            context.printer.say(
                "The datastore is not locked: a release from this report will need `--force`, and is safest made from a report taken while locked (`netctl datastore migrate lock`).",
            );
        }
    }
    Ok(match (args.exit_code, findings.problems()) {
        (true, problems) if problems > 0 => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// The report names allocations, pods and namespaces: owner-only (upstream writes it world-writable).
fn write_report(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write the report `{}`", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .with_context(|| format!("cannot write the report `{}`", path.display()))
}

/// The cluster whose Services to read: the datastore's on Kubernetes, else `--kubeconfig`, else
/// the configuration's (kubeconfig, KUBECONFIG), else none.
async fn kubernetes_client(
    context: &Context,
    kubeconfig: Option<PathBuf>,
) -> anyhow::Result<Option<kube::Client>> {
    if let Some(path) = kubeconfig {
        let settings = crate::config::KubernetesSettings::from_kubeconfig(
            path,
            context.global.context.clone(),
        );
        let api = crate::datastore::kube::client::build(&settings, context.global.request_timeout)
            .await?;
        return Ok(Some(api.client));
    }
    context.kubernetes_client().await
}
