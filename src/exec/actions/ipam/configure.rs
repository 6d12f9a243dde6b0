//! `ipam.configure`: a read-modify-write of the allocator's configuration (what the allocator
//! reads: `/calico/ipam/v2/config` on etcd, the `ipamconfigs` object `default` on Kubernetes), as
//! upstream's `ipam configure` does through `SetIPAMConfig` — guarded by the revision read, and
//! created with the allocator's defaults plus the change when nothing is stored yet.
//!
//! Refused before anything is written, as upstream refuses: StrictAffinity and AutoAllocateBlocks
//! both off. And beyond upstream: a field the cluster's release does not have
//! (MaxBlocksPerHost before v3.30, KubeVirtVMAddressPersistence before v3.32), and a negative
//! MaxBlocksPerHost.

use crate::datastore::Datastore;
use crate::exec::RunMode;
use crate::exec::actions::Outcome;
use crate::ipam::IpamConfig;
use crate::ipam::config::{ConfigChange, PERSISTENCE_VALUES};
use crate::release::Release;

use super::{IpamActionError, ipam_of};

/// Checks a change against the release the cluster runs (`None`: not recorded).
pub fn check_change(
    change: &ConfigChange,
    release: Option<&Release>,
) -> Result<(), IpamActionError> {
    let refused = |reason: String| Err(IpamActionError::Refused { reason });
    if change.is_empty() {
        return refused(
            "at least one configuration option must be given (--strictaffinity, --max-blocks-per-host, --kubevirt-ip-persistence)".into(),
        );
    }
    if let Some(max) = change.max_blocks_per_host {
        if max < 0 {
            return refused(format!(
                "--max-blocks-per-host must be 0 (no limit) or more, not {max}"
            ));
        }
    }
    if let Some(value) = &change.kubevirt_ip_persistence {
        if !PERSISTENCE_VALUES.contains(&value.as_str()) {
            return refused(format!(
                "invalid value `{value}` for --kubevirt-ip-persistence: use Enabled or Disabled"
            ));
        }
    }
    let needs = |field: &str, line: (u64, u64)| -> Result<(), IpamActionError> {
        match release {
            Some(release) if (release.0.major, release.0.minor) < line => {
                Err(IpamActionError::Refused {
                    reason: format!(
                        "{field} needs v{}.{}; the cluster runs {release}",
                        line.0, line.1
                    ),
                })
            }
            _ => Ok(()),
        }
    };
    if change.max_blocks_per_host.is_some() {
        needs("MaxBlocksPerHost", (3, 30))?;
    }
    if change.kubevirt_ip_persistence.is_some() {
        needs("KubeVirtVMAddressPersistence", (3, 32))?;
    }
    Ok(())
}

/// Makes the change.
pub async fn configure(
    store: &dyn Datastore,
    change: &ConfigChange,
    release: Option<&Release>,
    mode: RunMode,
) -> Result<Outcome, IpamActionError> {
    check_change(change, release)?;
    let ipam = ipam_of(store)?;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let stored = ipam.get_config().await?;
        let current = stored
            .as_ref()
            .map_or_else(IpamConfig::default, |stored| stored.value.clone());
        let changed = change.applied_to(&current);
        if !changed.strict_affinity && !changed.auto_allocate_blocks {
            return Err(IpamActionError::Refused {
                reason: "cannot disable StrictAffinity and AutoAllocateBlocks at the same time"
                    .into(),
            });
        }
        let mut transcript = Vec::new();
        let mut said = |field: &str, old: String, new: String| {
            transcript.push(match (mode, old == new) {
                (RunMode::DryRun, true) => format!("{field} is already {new}"),
                (RunMode::DryRun, false) => format!("would set {field} from {old} to {new}"),
                (RunMode::Execute, _) => format!("Successfully set {field} to: {new}"),
            });
        };
        if change.strict_affinity.is_some() {
            said(
                "StrictAffinity",
                current.strict_affinity.to_string(),
                changed.strict_affinity.to_string(),
            );
        }
        if change.max_blocks_per_host.is_some() {
            said(
                "MaxBlocksPerHost",
                current.max_blocks_per_host.to_string(),
                changed.max_blocks_per_host.to_string(),
            );
        }
        if change.kubevirt_ip_persistence.is_some() {
            let shown = |value: &Option<String>| value.clone().unwrap_or_else(|| "<unset>".into());
            said(
                "KubeVirtVMAddressPersistence",
                shown(&current.kubevirt_vm_address_persistence),
                shown(&changed.kubevirt_vm_address_persistence),
            );
        }
        if mode == RunMode::DryRun {
            if stored.is_none() {
                transcript.push(format!(
                    "would create `{}` (nothing is stored: the allocator's defaults, with the change)",
                    ipam.config_location()
                ));
            }
            return Ok(Outcome {
                summary: format!("would change `{}`", ipam.config_location()),
                transcript,
                output: None,
            });
        }
        if stored.is_some() && changed == current {
            return Ok(Outcome {
                summary: format!("`{}` unchanged", ipam.config_location()),
                transcript,
                output: None,
            });
        }
        let expected = stored.as_ref().map(|stored| stored.revision.as_str());
        match ipam.put_config(&changed, expected).await {
            Ok(_) => {
                return Ok(Outcome {
                    summary: format!("changed `{}`", ipam.config_location()),
                    transcript,
                    output: None,
                });
            }
            // Someone (a node agent creating the defaults) wrote in between: decide again.
            Err(error)
                if error.is_conflict()
                    || matches!(
                        error,
                        crate::datastore::ipam::IpamError::AlreadyExists { .. }
                    ) =>
            {
                if attempt >= 3 {
                    return Err(error.into());
                }
            }
            Err(error) => return Err(error.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_refusals_and_the_release_lines() {
        let change = |max: Option<i64>, kubevirt: Option<&str>| ConfigChange {
            strict_affinity: None,
            max_blocks_per_host: max,
            kubevirt_ip_persistence: kubevirt.map(str::to_string),
        };
        assert!(check_change(&ConfigChange::default(), None).is_err());
        assert!(check_change(&change(Some(-1), None), None).is_err());
        assert!(check_change(&change(None, Some("yes")), None).is_err());
        let v3_29 = Release::new(3, 29, 4);
        let error = check_change(&change(Some(4), None), Some(&v3_29)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "MaxBlocksPerHost needs v3.30; the cluster runs v3.29.4"
        );
        let v3_31 = Release::new(3, 31, 0);
        assert!(check_change(&change(Some(4), None), Some(&v3_31)).is_ok());
        assert!(check_change(&change(None, Some("Disabled")), Some(&v3_31)).is_err());
        assert!(check_change(&change(None, Some("Disabled")), None).is_ok());
    }
}
