//! `netctl ipam release`: free addresses (`--ip`) or, from `ipam check` reports (`--from-report`),
//! the addresses and handles every report agrees are leaked — with upstream's refusals
//! (`calicoctl/calicoctl/commands/ipam/release.go`), checked before anything is written: a report
//! of another cluster (even with `--force`), reports that are all stale (none taken at the current
//! ClusterInformation revision; even with `--force`), a report of another version and an unlocked
//! datastore (unless `--force`). The release itself is the `ipam.release` action.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use super::Context;
use crate::cli::journaled::{JournalArgs, run_journaled};
use crate::datastore::StoreError;
use crate::datastore::readiness::LockState;
use crate::ipam::report::{HandleInfo, Report, report_version};
use crate::plan::action::{AddressRelease, HandleRelease, IpamRelease, ReportOrigin};
use crate::plan::{Action, Plan};
use crate::resource::{Kind, ResourceKey};

pub const EXAMPLES: &str = "\
Examples:
  netctl ipam release --ip 10.65.79.2
  netctl datastore migrate lock
  netctl ipam check -o report.json
  netctl ipam release --from-report report.json --dry-run
  netctl ipam release --from-report report.json
  netctl datastore migrate unlock
  netctl ipam release --from-report an-hour-ago.json --from-report now.json
With several reports only what all of them call leaked is released. An address allocated again
since the report (its sequence number or handle changed) is skipped and counted, never freed; a
handle whose revision changed is skipped. Reports written by calicoctl are read too (with --force:
the versions differ).";

#[derive(Debug, clap::Args)]
pub struct ReleaseArgs {
    /// Address to release (repeatable)
    #[arg(
        long = "ip",
        value_name = "ADDRESS",
        required_unless_present = "reports",
        conflicts_with = "reports"
    )]
    ips: Vec<String>,
    /// Release what this `ipam check -o` report calls leaked (repeatable: only what every report calls leaked)
    #[arg(long = "from-report", value_name = "FILE", id = "reports")]
    reports: Vec<PathBuf>,
    /// Release although the datastore is not locked or a report is of another version
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    journal: JournalArgs,
}

pub async fn run(context: &Context, args: ReleaseArgs) -> anyhow::Result<ExitCode> {
    // Addresses and reports are read and checked before anything connects.
    let mut addresses = Vec::new();
    for ip in &args.ips {
        let parsed: std::net::IpAddr = ip.parse().map_err(|_| {
            anyhow::anyhow!("invalid IP address `{ip}`: give IPv4 or IPv6 addresses")
        })?;
        addresses.push(AddressRelease {
            ip: parsed.to_string(),
            handle: None,
            sequence_number: None,
        });
    }
    let mut reports = Vec::new();
    for path in &args.reports {
        reports.push((path.display().to_string(), Report::read(path)?));
    }
    let store = context.datastore().await?;
    let request = match reports.is_empty() {
        true => IpamRelease {
            addresses,
            ..IpamRelease::default()
        },
        false => from_reports(context, store.as_ref(), &reports, args.force).await?,
    };
    let plan = Plan::single(
        "ipam-release",
        "release leaked IPAM addresses and handles",
        Action::IpamRelease(request),
    );
    run_journaled(context, store, &plan, &args.journal, None).await?;
    if !reports.is_empty() && !args.journal.dry_run {
        context
            .printer
            .data_line("You may now unlock the data store.")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Upstream's checks of the reports against the cluster, then the release they agree on.
async fn from_reports(
    context: &Context,
    store: &dyn crate::datastore::Datastore,
    reports: &[(String, Report)],
    force: bool,
) -> anyhow::Result<IpamRelease> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let information = match store.get(&key).await {
        Ok(information) => information,
        Err(StoreError::NotFound(_)) => anyhow::bail!(
            "ClusterInformation `default` does not exist: this datastore is not the cluster the report was taken of"
        ),
        Err(error) => {
            return Err(
                anyhow::Error::new(error).context("cannot read ClusterInformation `default`")
            );
        }
    };
    let guid = information.spec["clusterGUID"].as_str().unwrap_or_default();
    let current = information
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let version = report_version();
    for (path, report) in reports {
        if report.cluster_guid != guid {
            // Not overridden by --force: releasing another cluster's addresses frees live ones.
            return Err(crate::exec::actions::ipam::IpamActionError::OtherCluster {
                report: format!("{} (in `{path}`)", report.cluster_guid),
                cluster: guid.to_string(),
            }
            .into());
        }
        if report.version != version {
            if !force {
                anyhow::bail!(
                    "the report `{path}` was made by another version (`{}`; this is `{version}`): refusing to release (pass --force to release anyway)",
                    report.version
                );
            }
            context.printer.warn(format!(
                "the report `{path}` was made by another version (`{}`): releasing anyway because of --force",
                report.version
            ));
        }
    }
    if !reports
        .iter()
        .any(|(_, report)| report.cluster_information_revision == current)
    {
        let taken: Vec<String> = reports
            .iter()
            .map(|(path, report)| format!("`{}` in `{path}`", report.cluster_information_revision))
            .collect();
        return Err(crate::exec::actions::ipam::IpamActionError::Stale {
            current,
            taken: taken.join(", "),
        }
        .into());
    }
    let locked = LockState::of(&information).locked;
    if !locked && !force {
        return Err(crate::exec::actions::ipam::IpamActionError::NotLocked {
            what: "a release from reports",
        }
        .into());
    }
    let (addresses, handles) = merge(reports.iter().map(|(_, report)| report));
    Ok(IpamRelease {
        addresses,
        handles,
        taken_at: Some(ReportOrigin {
            cluster_guid: guid.to_string(),
            cluster_information_revision: current,
        }),
        unlocked_allowed: force,
    })
}

/// What every report calls leaked (upstream's `mergeReports`): the addresses not in use in any
/// report, with the guards of the last; the handles leaked in every report at the same revision.
fn merge<'a>(
    reports: impl Iterator<Item = &'a Report>,
) -> (Vec<AddressRelease>, Vec<HandleRelease>) {
    let mut addresses: Option<BTreeMap<String, AddressRelease>> = None;
    let mut handles: Option<BTreeMap<String, HandleInfo>> = None;
    for report in reports {
        let mut merged = BTreeMap::new();
        for allocation in report.allocations.values().flatten() {
            if allocation.in_use {
                continue;
            }
            if addresses
                .as_ref()
                .is_some_and(|before| !before.contains_key(&allocation.ip))
            {
                continue;
            }
            merged.insert(
                allocation.ip.clone(),
                AddressRelease {
                    ip: allocation.ip.clone(),
                    handle: Some(allocation.handle.clone()).filter(|h| !h.is_empty()),
                    sequence_number: allocation.sequence_number,
                },
            );
        }
        addresses = Some(merged);
        let mut merged = BTreeMap::new();
        for handle in &report.leaked_handles {
            let agrees = match &handles {
                None => true,
                Some(before) => before
                    .get(&handle.id)
                    .is_some_and(|earlier| earlier.revision == handle.revision),
            };
            if agrees {
                merged.insert(handle.id.clone(), handle.clone());
            }
        }
        handles = Some(merged);
    }
    (
        addresses.unwrap_or_default().into_values().collect(),
        handles
            .unwrap_or_default()
            .into_values()
            .map(|handle| HandleRelease {
                id: handle.id,
                revision: handle.revision,
                uid: handle.uid,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(leaked: &[(&str, u64)], used: &[&str], handles: &[(&str, &str)]) -> Report {
        let mut text =
            serde_json::json!({"clusterGUID": "g", "allocations": {}, "leakedHandles": []});
        for (ip, sequence) in leaked {
            text["allocations"][*ip] = serde_json::json!([{"ip": ip, "handle": "h", "sequenceNumber": sequence, "inUse": false, "owners": null}]);
        }
        for ip in used {
            text["allocations"][*ip] =
                serde_json::json!([{"ip": ip, "inUse": true, "owners": ["x"]}]);
        }
        for (id, revision) in handles {
            text["leakedHandles"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"ID": id, "UID": null, "Revision": revision}));
        }
        Report::parse("r", text.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn only_what_every_report_calls_leaked_is_released() {
        let earlier = report(
            &[("10.0.0.1", 1), ("10.0.0.2", 2)],
            &[],
            &[("a", "5"), ("b", "6")],
        );
        let later = report(&[("10.0.0.1", 7)], &["10.0.0.2"], &[("a", "5"), ("b", "9")]);
        let (addresses, handles) = merge([&earlier, &later].into_iter());
        assert_eq!(addresses.len(), 1);
        // The guards of the last report.
        assert_eq!(addresses[0].sequence_number, Some(7));
        assert_eq!(handles.len(), 1);
        assert_eq!(handles[0].id, "a");
    }
}
