//! `datastore.migrate-policy-names`: the default-tier policies an etcd datastore still keeps under
//! `default.<name>` (written by v3.29–v3.31) moved to their own names, as v3.32 stores them —
//! what upstream's `calicoctl datastore migrate-policy-names` (release-v3.32, after v3.32.1) and
//! kube-controllers' policy name migrator do (`datastore/policy_names.rs` says how each move is
//! written).
//!
//! Two passes over the four policy kinds, a page at a time. The first reads only: it finds every
//! misnamed policy and where it stands, and refuses — before any write — when a policy's own name
//! is taken by a different policy (upstream then deletes the old key and keeps the other one; a
//! policy would vanish). A dry run ends there and lists the moves. The second pass moves each
//! policy in one guarded transaction, stopping between two moves on Ctrl-C or SIGTERM: nothing is
//! ever half moved, so there is nothing to undo, and running again finishes the rest (a policy
//! moved meanwhile by kube-controllers is skipped). Refused on the Kubernetes datastore, where
//! kube-controllers moves them, and on a cluster older than v3.32, whose components look for
//! `default.<name>` (`allow_version_mismatch` overrides that).

use std::collections::VecDeque;
use std::fmt::Write as _;

use super::IpamActionError;
use crate::datastore::policy_names::{MisnamedPolicy, POLICY_KINDS, PolicyNameStore, Standing};
use crate::datastore::{Datastore, DatastoreType, StoreError};
use crate::errors::Hint;
use crate::exec::RunMode;
use crate::exec::actions::Outcome;
use crate::exec::interrupt::Interrupt;
use crate::plan::action::DatastoreMigratePolicyNames;
use crate::release::Release;
use crate::resource::Kind;

/// How many collisions an error names (the rest are counted).
const LISTED: usize = 10;

/// The first release that stores default-tier policies under their own names.
const NAMED_SINCE: Release = Release::new(3, 32, 0);

/// Why the policy names were not moved.
#[derive(Debug, thiserror::Error)]
pub enum PolicyNameError {
    #[error(
        "the `{0}` datastore's policy names are moved by kube-controllers, not by `migrate-policy-names`"
    )]
    NotEtcd(DatastoreType),
    #[error(
        "the cluster runs `{0}`: releases before v3.32 look policies up by `default.<name>` and would not find them moved"
    )]
    TooOld(Release),
    #[error(
        "ClusterInformation `default` records no calicoVersion: cannot tell whether the cluster runs v3.32"
    )]
    UnknownRelease,
    #[error("{}", collisions_message(.listed, *.count))]
    Collisions { listed: Vec<String>, count: usize },
}

fn collisions_message(listed: &[String], count: usize) -> String {
    let mut message = format!(
        "{count} polic{} cannot be moved to {} own name: another policy is stored under it ({})",
        if count == 1 { "y" } else { "ies" },
        if count == 1 { "its" } else { "their" },
        listed.join("; ")
    );
    if count > listed.len() {
        let _ = write!(message, "; and {} more", count - listed.len());
    }
    message
}

impl Hint for PolicyNameError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            PolicyNameError::NotEtcd(_) => "v3.32's kube-controllers moves them once DaemonSet calico-node has rolled out (policy name migrator, on by default); see its log".into(),
            PolicyNameError::TooOld(_) => "upgrade the cluster to v3.32 first (`netctl upgrade plan --to v3.32`), or pass `--allow-version-mismatch` if it runs v3.32 already".into(),
            PolicyNameError::UnknownRelease => "pass `--allow-version-mismatch` if every component runs v3.32 or later".into(),
            PolicyNameError::Collisions { .. } => "compare the two (`etcdctl get KEY` for each), delete the one you do not want (`etcdctl del KEY`), then run the command again; nothing was moved".into(),
        })
    }
}

/// What the passes counted.
#[derive(Debug, Default)]
struct Tally {
    examined: usize,
    /// Moved (or, dry run, to move) to their own names.
    renamed: usize,
    /// Also under their own name already: only the old key deleted (or to delete).
    duplicated: usize,
    /// Changed or moved by someone else since they were listed.
    skipped: usize,
}

impl Tally {
    fn migrated(&self) -> usize {
        self.renamed + self.duplicated
    }

    fn done(&self) -> String {
        format!(
            "renamed {} polic{}",
            self.migrated(),
            if self.migrated() == 1 { "y" } else { "ies" }
        )
    }
}

/// Every misnamed policy of the four kinds, a page at a time.
struct Misnamed<'a> {
    store: &'a dyn PolicyNameStore,
    kinds: std::slice::Iter<'static, Kind>,
    /// The kind being read and its next page's token (`None` before its first page).
    reading: Option<(Kind, Option<String>)>,
    page: VecDeque<MisnamedPolicy>,
    examined: usize,
}

impl<'a> Misnamed<'a> {
    fn new(store: &'a dyn PolicyNameStore) -> Misnamed<'a> {
        Misnamed {
            store,
            kinds: POLICY_KINDS.iter(),
            reading: None,
            page: VecDeque::new(),
            examined: 0,
        }
    }

    async fn next(&mut self) -> Result<Option<MisnamedPolicy>, StoreError> {
        loop {
            if let Some(policy) = self.page.pop_front() {
                return Ok(Some(policy));
            }
            let (kind, token) = match self.reading.take() {
                Some((kind, Some(token))) => (kind, Some(token)),
                Some((_, None)) | None => match self.kinds.next() {
                    Some(kind) => (*kind, None),
                    None => return Ok(None),
                },
            };
            let page = self.store.misnamed_page(kind, token.as_deref()).await?;
            self.examined += page.examined;
            self.page.extend(page.policies);
            self.reading = page.continue_token.map(|next| (kind, Some(next)));
        }
    }
}

/// Moves (or, dry run, lists) the misnamed default-tier policies.
pub async fn migrate(
    store: &dyn Datastore,
    request: &DatastoreMigratePolicyNames,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
) -> Result<Outcome, IpamActionError> {
    let names = store
        .policy_names()
        .ok_or(PolicyNameError::NotEtcd(store.kind()))?;
    if !request.allow_version_mismatch {
        match crate::plan::release::cluster_release(store).await? {
            Some(release) if release.code_line() >= NAMED_SINCE => {}
            Some(release) => return Err(PolicyNameError::TooOld(release).into()),
            None => return Err(PolicyNameError::UnknownRelease.into()),
        }
    }
    // The first pass reads only: what would move, and what collides.
    let mut transcript = Vec::new();
    let mut collisions = Vec::new();
    let mut collision_count = 0;
    let mut planned = 0;
    let mut listing = Misnamed::new(names);
    while let Some(policy) = listing.next().await? {
        match names.standing(&policy).await? {
            Standing::Collides { revision } => {
                collision_count += 1;
                if collisions.len() < LISTED {
                    collisions.push(format!(
                        "`{}` and `{}` at revision {revision}",
                        policy.describe_stored(),
                        policy.describe_own()
                    ));
                }
            }
            Standing::Changed => {}
            standing => {
                planned += 1;
                if mode == RunMode::DryRun {
                    transcript.push(line(RunMode::DryRun, &policy, &standing));
                }
            }
        }
    }
    if collision_count > 0 {
        return Err(PolicyNameError::Collisions {
            listed: collisions,
            count: collision_count,
        }
        .into());
    }
    if mode == RunMode::DryRun {
        transcript.push(format!(
            "would rename {planned} polic{} ({} examined)",
            if planned == 1 { "y" } else { "ies" },
            listing.examined
        ));
        return Ok(Outcome {
            summary: transcript.last().cloned().unwrap_or_default(),
            transcript,
            output: None,
        });
    }
    // The second pass moves, each policy whole.
    let mut tally = Tally::default();
    let mut listing = Misnamed::new(names);
    loop {
        let next = listing.next().await;
        let policy = match next {
            Ok(Some(policy)) => policy,
            Ok(None) => break,
            Err(error) => return Err(stopped(&tally, error)),
        };
        if let Some(signal) = interrupt.and_then(Interrupt::received) {
            return Err(IpamActionError::Interrupted {
                done: tally.done(),
                signal: signal.describe(),
            });
        }
        let standing = match names.move_policy(&policy).await {
            Ok(standing) => standing,
            Err(error) => return Err(stopped(&tally, error)),
        };
        match standing {
            Standing::Movable => tally.renamed += 1,
            Standing::Duplicated => tally.duplicated += 1,
            Standing::Changed | Standing::Collides { .. } => tally.skipped += 1,
        }
        transcript.push(line(RunMode::Execute, &policy, &standing));
    }
    tally.examined = listing.examined;
    let summary = summary(&tally);
    transcript.push(summary.clone());
    Ok(Outcome {
        summary,
        transcript,
        output: Some(serde_json::json!({
            "renamed": tally.migrated(),
            "examined": tally.examined,
            "skipped": tally.skipped,
        })),
    })
}

/// The error of a move pass stopped by the datastore, saying what was done before.
fn stopped(tally: &Tally, error: StoreError) -> IpamActionError {
    IpamActionError::Stopped {
        done: tally.done(),
        cause: Box::new(error.into()),
    }
}

/// The last line: how many were renamed, as upstream's command says it.
fn summary(tally: &Tally) -> String {
    let mut line = format!(
        "Renamed {} polic{} from `default.<name>` to {} own name ({} examined",
        tally.migrated(),
        if tally.migrated() == 1 { "y" } else { "ies" },
        if tally.migrated() == 1 {
            "its"
        } else {
            "their"
        },
        tally.examined
    );
    if tally.duplicated > 0 {
        let _ = write!(
            line,
            "; {} already stored under both names, the old key deleted",
            tally.duplicated
        );
    }
    if tally.skipped > 0 {
        let _ = write!(
            line,
            "; {} changed or moved by someone else meanwhile, left alone",
            tally.skipped
        );
    }
    line.push_str(").");
    line
}

/// One line of the account for a policy.
fn line(mode: RunMode, policy: &MisnamedPolicy, standing: &Standing) -> String {
    let verb = match mode {
        RunMode::DryRun => "would ",
        RunMode::Execute => "",
    };
    let (old, own) = (policy.describe_stored(), policy.describe_own());
    match standing {
        Standing::Movable => format!("{verb}rename `{old}` to `{own}`"),
        Standing::Duplicated => {
            format!("{verb}delete `{old}`: `{own}` holds the same policy already")
        }
        Standing::Changed | Standing::Collides { .. } => {
            format!("left `{old}` alone: it was changed or moved by someone else meanwhile")
        }
    }
}
