//! `ipam.release`: free addresses and delete leaked handles, each write a compare-and-swap and
//! each address guarded by what the request knew of it (upstream's `ipam release`,
//! `calicoctl/calicoctl/commands/ipam/release.go`).
//!
//! From reports, the cluster must be the reports' and ClusterInformation still at the revision
//! one report was taken at (checked again here, when the step runs); the datastore must be locked
//! unless the command was forced. The blocks are read once, a page at a time; each block holding
//! requested addresses is released and written back (deleted when it is empty and belongs to no
//! node, as upstream's allocator does), again on a conflict after reading it anew, and the handles
//! of what was freed are counted down. An address whose sequence number or handle changed since
//! the report was allocated again: it is skipped and counted, never freed (upstream fails the
//! whole block instead). Leaked handles are deleted only while their revision and UID are the
//! reports'. Ctrl-C or SIGTERM stop it between two blocks (or handles), saying what was done.

use std::collections::BTreeMap;
use std::net::IpAddr;

use futures_util::StreamExt;

use crate::datastore::Datastore;
use crate::datastore::ipam::{IpamError, IpamStore};
use crate::datastore::readiness::LockState;
use crate::exec::RunMode;
use crate::exec::actions::Outcome;
use crate::exec::interrupt::Interrupt;
use crate::ipam::release::{ReleaseRequest, ReleaseVerdict, release as release_in_block};
use crate::ipam::{AllocationBlock, BlockEncoding, Cidr, Stored};
use crate::plan::action::{HandleRelease, IpamRelease};
use crate::resource::{Kind, ResourceKey};

use super::{IpamActionError, ipam_of};

/// Attempts at a block or handle that others keep changing.
const ATTEMPTS: usize = 10;

/// Handle deletes out at once.
const HANDLES_IN_FLIGHT: usize = 8;

/// Addresses and skips listed by name in the output before "and N more".
const LISTED: usize = 10;

/// What every block's release needs to know of the run.
struct Run<'a> {
    ipam: &'a dyn IpamStore,
    encoding: BlockEncoding,
    mode: RunMode,
}

/// What became of the addresses so far.
#[derive(Debug, Default)]
struct Tally {
    released: Vec<String>,
    already_free: Vec<String>,
    reallocated: Vec<String>,
    handle_warnings: Vec<String>,
    damaged_blocks: Vec<String>,
}

impl Tally {
    fn done(&self, total: usize, handles: Option<(usize, usize)>) -> String {
        let mut text = format!("released {} of {total} addresses", self.released.len());
        if let Some((deleted, of)) = handles {
            text.push_str(&format!(" and deleted {deleted} of {of} handles"));
        }
        text
    }
}

pub async fn release(
    store: &dyn Datastore,
    request: &IpamRelease,
    encoding: BlockEncoding,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
) -> Result<Outcome, IpamActionError> {
    let ipam = ipam_of(store)?;
    let mut transcript = Vec::new();
    if let Some(taken_at) = &request.taken_at {
        check_cluster(store, taken_at, request.unlocked_allowed, &mut transcript).await?;
    }
    let mut wanted: BTreeMap<IpAddr, ReleaseRequest> = BTreeMap::new();
    for address in &request.addresses {
        let parsed: IpAddr = address.ip.parse().map_err(|_| IpamActionError::Refused {
            reason: format!("invalid IP address `{}`", address.ip),
        })?;
        wanted.insert(
            parsed,
            ReleaseRequest {
                address: parsed,
                handle: address.handle.clone(),
                sequence_number: address.sequence_number,
            },
        );
    }
    let total = wanted.len();
    let mut tally = Tally::default();
    let from_reports = request.taken_at.is_some();
    if total > 0 {
        if from_reports {
            transcript.push(format!(
                "{} {total} old IPs...",
                if mode == RunMode::DryRun {
                    "Would release"
                } else {
                    "Releasing"
                }
            ));
        }
        let run = Run {
            ipam,
            encoding,
            mode,
        };
        release_addresses(&run, &mut wanted, interrupt, &mut tally, &mut transcript)
            .await
            .map_err(|error| stopped(error, &tally, total, None))?;
        // What no block holds is free already.
        tally
            .already_free
            .extend(wanted.keys().map(|address| address.to_string()));
        report_addresses(&tally, total, from_reports, mode, &mut transcript)?;
    } else if from_reports {
        transcript.push("Report didn't contain any leaked IPs to clean up.".into());
    }

    let mut handles_done = (0, 0, 0);
    if !request.handles.is_empty() {
        handles_done = delete_handles(ipam, &request.handles, mode, interrupt, &mut transcript)
            .await
            .map_err(|(error, deleted)| {
                stopped(error, &tally, total, Some((deleted, request.handles.len())))
            })?;
    } else if from_reports {
        transcript.push("Report didn't contain any handles to clean up.".into());
    }
    for warning in &tally.handle_warnings {
        transcript.push(format!("Warning: {warning}"));
    }
    for key in &tally.damaged_blocks {
        transcript.push(format!(
            "Warning: block `{key}` is damaged and was not read: addresses in it were not released"
        ));
    }
    let (deleted, skipped, errors) = handles_done;
    let summary = match mode {
        RunMode::DryRun => format!(
            "would release {} addresses and delete {deleted} handles",
            tally.released.len()
        ),
        RunMode::Execute => format!(
            "released {} addresses ({} already free, {} allocated again and skipped); deleted {deleted} handles ({skipped} skipped, {errors} errors)",
            tally.released.len(),
            tally.already_free.len(),
            tally.reallocated.len()
        ),
    };
    Ok(Outcome {
        summary,
        transcript,
        output: None,
    })
}

/// Wraps a failure part way with what was done before it.
fn stopped(
    error: IpamActionError,
    tally: &Tally,
    total: usize,
    handles: Option<(usize, usize)>,
) -> IpamActionError {
    match error {
        IpamActionError::Interrupted { signal, .. } => IpamActionError::Interrupted {
            done: tally.done(total, handles),
            signal,
        },
        other => IpamActionError::Stopped {
            done: tally.done(total, handles),
            cause: Box::new(other),
        },
    }
}

/// The reports' cluster and revision must be this cluster's now, and (unless forced) it locked.
async fn check_cluster(
    store: &dyn Datastore,
    taken_at: &crate::plan::action::ReportOrigin,
    unlocked_allowed: bool,
    transcript: &mut Vec<String>,
) -> Result<(), IpamActionError> {
    let key = ResourceKey::new(Kind::ClusterInformation, None, "default");
    let information = store.get(&key).await?;
    let guid = information.spec["clusterGUID"].as_str().unwrap_or_default();
    if guid != taken_at.cluster_guid {
        return Err(IpamActionError::OtherCluster {
            report: taken_at.cluster_guid.clone(),
            cluster: guid.to_string(),
        });
    }
    let current = information
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    if current != taken_at.cluster_information_revision {
        return Err(IpamActionError::Stale {
            current,
            taken: format!("`{}`", taken_at.cluster_information_revision),
        });
    }
    if !LockState::of(&information).locked {
        if !unlocked_allowed {
            return Err(IpamActionError::NotLocked {
                what: "a release from reports",
            });
        }
        transcript.push("WARNING: Data store is not locked. Ignoring due to --force option".into());
    }
    Ok(())
}

/// Walks the blocks once and releases, in each, the wanted addresses it holds; what is released
/// or decided leaves `wanted`.
async fn release_addresses(
    run: &Run<'_>,
    wanted: &mut BTreeMap<IpAddr, ReleaseRequest>,
    interrupt: Option<&Interrupt>,
    tally: &mut Tally,
    transcript: &mut Vec<String>,
) -> Result<(), IpamActionError> {
    let mut token: Option<String> = None;
    loop {
        let page = run.ipam.block_page(token.as_deref()).await?;
        for item in page.items {
            let stored = match item {
                Ok(stored) => stored,
                Err(damaged) => {
                    tally.damaged_blocks.push(damaged.key);
                    continue;
                }
            };
            let Some(cidr) = stored.value.cidr else {
                continue;
            };
            let first = cidr.network();
            let last = cidr.nth(cidr.size().saturating_sub(1));
            let requests: Vec<ReleaseRequest> = wanted
                .range(first..=last)
                .map(|(_, request)| request.clone())
                .collect();
            if requests.is_empty() {
                continue;
            }
            if let Some(signal) = interrupt.and_then(Interrupt::received) {
                return Err(IpamActionError::Interrupted {
                    done: String::new(),
                    signal: signal.describe(),
                });
            }
            for request in &requests {
                wanted.remove(&request.address);
            }
            release_block(run, cidr, stored, &requests, tally, transcript).await?;
        }
        match page.continue_token {
            Some(next) => token = Some(next),
            None => return Ok(()),
        }
    }
}

/// Releases `requests` from one block, reading it again after a conflict.
async fn release_block(
    run: &Run<'_>,
    cidr: Cidr,
    mut stored: Stored<AllocationBlock>,
    requests: &[ReleaseRequest],
    tally: &mut Tally,
    transcript: &mut Vec<String>,
) -> Result<(), IpamActionError> {
    let (ipam, encoding, mode) = (run.ipam, run.encoding, run.mode);
    for _ in 0..ATTEMPTS {
        let damage = stored.value.damage();
        if !damage.is_empty() {
            let reason: Vec<String> = damage.iter().map(ToString::to_string).collect();
            return Err(IpamError::Damaged {
                what: format!("block `{}`", ipam.block_location(&cidr)),
                reason: reason.join("; "),
            }
            .into());
        }
        let mut block = stored.value.clone();
        let (verdicts, handles) = release_in_block(&mut block, requests);
        let any = verdicts.iter().any(ReleaseVerdict::is_released);
        if any && mode == RunMode::Execute {
            block.sequence_number += 1;
            let written = match block.is_empty() && block.affinity.is_none() {
                true => ipam.delete_block(&stored).await,
                false => ipam
                    .update_block(
                        &Stored::new(block, stored.revision.clone(), stored.uid.clone()),
                        encoding,
                    )
                    .await
                    .map(|_| ()),
            };
            match written {
                Ok(()) => {}
                Err(error) if error.is_conflict() => {
                    match ipam.get_block(&cidr).await? {
                        Some(fresh) => stored = fresh,
                        None => {
                            // Gone: everything in it is free.
                            for request in requests {
                                tally.already_free.push(request.address.to_string());
                            }
                            return Ok(());
                        }
                    }
                    continue;
                }
                Err(error) => return Err(error.into()),
            }
            for (handle, released) in &handles {
                decrement_handle(ipam, handle, &cidr.to_string(), *released, tally).await?;
            }
        }
        record(requests, &verdicts, mode, tally, transcript);
        return Ok(());
    }
    Err(IpamActionError::Refused {
        reason: format!(
            "block `{}` kept changing: gave up after {ATTEMPTS} attempts",
            ipam.block_location(&cidr)
        ),
    })
}

fn record(
    requests: &[ReleaseRequest],
    verdicts: &[ReleaseVerdict],
    mode: RunMode,
    tally: &mut Tally,
    transcript: &mut Vec<String>,
) {
    for (request, verdict) in requests.iter().zip(verdicts) {
        let address = request.address.to_string();
        match verdict {
            ReleaseVerdict::Released { handle } => {
                if mode == RunMode::DryRun {
                    transcript.push(format!(
                        "would release {address} (handle {})",
                        handle.as_deref().unwrap_or("<none>")
                    ));
                }
                tally.released.push(address);
            }
            ReleaseVerdict::NotAllocated | ReleaseVerdict::OutsideBlock => {
                tally.already_free.push(address)
            }
            ReleaseVerdict::SequenceChanged { expected, found } => {
                if mode == RunMode::DryRun {
                    transcript.push(format!(
                        "would skip {address}: allocated again since the report (sequence number {expected}, now {found})"
                    ));
                }
                tally.reallocated.push(address);
            }
            ReleaseVerdict::HandleChanged { expected, found } => {
                if mode == RunMode::DryRun {
                    transcript.push(format!(
                        "would skip {address}: allocated again since the report (handle `{expected}`, now `{found}`)"
                    ));
                }
                tally.reallocated.push(address);
            }
        }
    }
}

/// Counts `released` addresses of `block` off handle `id`; the handle goes when it holds none.
/// A handle that is missing or disagrees is a warning: the addresses are free either way.
async fn decrement_handle(
    ipam: &dyn IpamStore,
    id: &str,
    block: &str,
    released: i64,
    tally: &mut Tally,
) -> Result<(), IpamActionError> {
    for _ in 0..ATTEMPTS {
        let Some(mut stored) = ipam.get_handle(id).await? else {
            tally.handle_warnings.push(format!(
                "handle `{id}` of the released addresses does not exist"
            ));
            return Ok(());
        };
        if let Err(error) = stored.value.release_from(block, released) {
            tally.handle_warnings.push(error.to_string());
            return Ok(());
        }
        let written = match stored.value.is_empty() {
            true => ipam.delete_handle(&stored).await,
            false => ipam.update_handle(&stored).await.map(|_| ()),
        };
        match written {
            Ok(()) => return Ok(()),
            Err(error) if error.is_conflict() => continue,
            Err(error) => return Err(error.into()),
        }
    }
    tally.handle_warnings.push(format!(
        "handle `{id}` kept changing: its count was not lowered"
    ));
    Ok(())
}

fn listed(addresses: &[String]) -> String {
    let shown = addresses
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    match addresses.len().saturating_sub(LISTED) {
        0 => shown,
        more => format!("{shown} (and {more} more)"),
    }
}

fn report_addresses(
    tally: &Tally,
    total: usize,
    from_reports: bool,
    mode: RunMode,
    transcript: &mut Vec<String>,
) -> Result<(), IpamActionError> {
    if !from_reports {
        // `--ip`: each address, as upstream says it; one not assigned fails the command.
        if mode == RunMode::Execute {
            for address in &tally.released {
                transcript.push(format!("Successfully released IP address {address}"));
            }
        }
        if !tally.already_free.is_empty() || !tally.reallocated.is_empty() {
            let mut missing = tally.already_free.clone();
            missing.extend(tally.reallocated.iter().cloned());
            return Err(IpamActionError::Refused {
                reason: format!(
                    "IP address {} is not assigned{}",
                    listed(&missing),
                    match tally.released.len() {
                        0 => String::new(),
                        n => format!(" ({n} other addresses were released)"),
                    }
                ),
            });
        }
        return Ok(());
    }
    let _ = total;
    if mode == RunMode::Execute {
        transcript.push(format!(
            "Released {} IPs successfully",
            tally.released.len()
        ));
    }
    if !tally.already_free.is_empty() {
        transcript.push(format!(
            "{} addresses marked as leaked in the report had already been cleaned up.",
            tally.already_free.len()
        ));
    }
    if !tally.reallocated.is_empty() {
        transcript.push(format!(
            "{} addresses were allocated again since the report and were skipped: {}",
            tally.reallocated.len(),
            listed(&tally.reallocated)
        ));
    }
    Ok(())
}

/// Deletes the leaked handles still at the reports' revision and UID, a few at once. Returns
/// (deleted, skipped, errors), or the failure with how many were deleted.
async fn delete_handles(
    ipam: &dyn IpamStore,
    handles: &[HandleRelease],
    mode: RunMode,
    interrupt: Option<&Interrupt>,
    transcript: &mut Vec<String>,
) -> Result<(usize, usize, usize), (IpamActionError, usize)> {
    if mode == RunMode::Execute {
        transcript.push(format!("Deleting {} handles...", handles.len()));
        transcript.push("Key: '.' = Deleted OK; 'x' = skip, handle missing/changed.".into());
    }
    let (mut deleted, mut skipped, mut errors) = (0, 0, 0);
    let mut marks = String::new();
    let mut problems = Vec::new();
    let mut results = futures_util::stream::iter(handles.iter())
        .map(|handle| async move { (handle, delete_handle(ipam, handle, mode).await) })
        .buffer_unordered(HANDLES_IN_FLIGHT);
    while let Some((handle, result)) = results.next().await {
        match result {
            Ok(true) => {
                deleted += 1;
                marks.push('.');
                if mode == RunMode::DryRun {
                    transcript.push(format!("would delete handle `{}`", handle.id));
                }
            }
            Ok(false) => {
                skipped += 1;
                marks.push('x');
                if mode == RunMode::DryRun {
                    transcript.push(format!(
                        "would skip handle `{}`: missing, or changed since the report",
                        handle.id
                    ));
                }
            }
            Err(IpamError::Store(error)) if error.no_endpoint_left() => {
                return Err((IpamError::Store(error).into(), deleted));
            }
            Err(error) => {
                errors += 1;
                problems.push(format!("Deleting handle {} failed: {error}.", handle.id));
            }
        }
        if let Some(signal) = interrupt.and_then(Interrupt::received) {
            return Err((
                IpamActionError::Interrupted {
                    done: String::new(),
                    signal: signal.describe(),
                },
                deleted,
            ));
        }
    }
    if mode == RunMode::Execute {
        transcript.push(marks);
        transcript.extend(problems);
        transcript.push(format!(
            "Released {deleted} handles; {skipped} skipped; {errors} errors."
        ));
    }
    Ok((deleted, skipped, errors))
}

/// Deletes one handle if it is still as the report saw it: `Ok(false)` when it is missing or
/// changed (skipped).
async fn delete_handle(
    ipam: &dyn IpamStore,
    handle: &HandleRelease,
    mode: RunMode,
) -> Result<bool, IpamError> {
    let Some(stored) = ipam.get_handle(&handle.id).await? else {
        return Ok(false);
    };
    if stored.revision != handle.revision || stored.uid != handle.uid {
        return Ok(false);
    }
    if mode == RunMode::DryRun {
        return Ok(true);
    }
    match ipam.delete_handle(&stored).await {
        Ok(()) => Ok(true),
        Err(error) if error.is_conflict() => Ok(false),
        Err(error) => Err(error),
    }
}
