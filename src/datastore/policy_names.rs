//! The `PolicyNameStore` trait: finding the default-tier policies a datastore still keeps under
//! another name than their own (the `default.<name>` keys v3.29–v3.31 wrote on etcd) and moving
//! each to its own name, as v3.32's `calicoctl datastore migrate-policy-names` and kube-controllers'
//! policy name migrator do (`kube-controllers/pkg/controllers/networkpolicy/policymigrate.go`).
//!
//! Only etcd implements it (`etcd/policy_names.rs`): on the Kubernetes datastore the objects' names
//! are kube-controllers' business. A move is one guarded write — the copy under the new name and
//! the delete of the old key together, or neither — so a listing, a stop between two moves or a
//! second run never leaves a policy under two names or none. What the move writes is the policy as
//! v3.32 stores it; deciding what to do with the answers (refusing collisions, counting) is the
//! executor's (`exec/actions/ipam/policy_names.rs`).

use async_trait::async_trait;

use super::StoreError;
use crate::resource::{Kind, Resource};

/// The four kinds whose default-tier names once carried the `default.` prefix (upstream's
/// `networkpolicy.PolicyKinds`).
pub const POLICY_KINDS: [Kind; 4] = [
    Kind::NetworkPolicy,
    Kind::GlobalNetworkPolicy,
    Kind::StagedNetworkPolicy,
    Kind::StagedGlobalNetworkPolicy,
];

/// A default-tier policy stored under another name than its own.
#[derive(Debug, Clone, PartialEq)]
pub struct MisnamedPolicy {
    /// The policy as read (its own name in `metadata.name`, `resourceVersion` the old key's).
    pub policy: Resource,
    /// The name its key carries, e.g. `default.allow-dns`.
    pub stored_name: String,
}

impl MisnamedPolicy {
    /// `GlobalNetworkPolicy default.allow-dns`, `NetworkPolicy prod/default.allow-dns`.
    pub fn describe_stored(&self) -> String {
        describe(&self.policy, &self.stored_name)
    }

    /// `GlobalNetworkPolicy allow-dns`, `NetworkPolicy prod/allow-dns`.
    pub fn describe_own(&self) -> String {
        describe(&self.policy, &self.policy.metadata.name)
    }
}

fn describe(policy: &Resource, name: &str) -> String {
    match &policy.metadata.namespace {
        Some(namespace) => format!("{} {namespace}/{name}", policy.kind),
        None => format!("{} {name}", policy.kind),
    }
}

/// One page of misnamed policies of one kind.
#[derive(Debug)]
pub struct MisnamedPage {
    pub policies: Vec<MisnamedPolicy>,
    /// How many keys the page read (misnamed or not), for the count of what was looked at.
    pub examined: usize,
    /// `None` on the last page; otherwise pass it back for the next.
    pub continue_token: Option<String>,
}

/// Where a misnamed policy stands, or what moving it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Nothing is stored under its own name: it can be moved (or was, by [`PolicyNameStore::move_policy`]).
    Movable,
    /// The same policy is stored under its own name too (a move cut short between its two
    /// writes, as upstream's two-request move can be): only the old key is left to delete.
    Duplicated,
    /// Another policy is stored under its own name: moving would lose one of the two.
    Collides {
        /// The other policy's stored revision, for the message.
        revision: String,
    },
    /// The old key is gone or changed since it was read (someone else moved or edited it).
    Changed,
}

/// Misnamed default-tier policies, found and moved.
#[async_trait]
pub trait PolicyNameStore: Send + Sync {
    /// One page of the misnamed policies of `kind` (all namespaces); `None` for the first page.
    async fn misnamed_page(
        &self,
        kind: Kind,
        continue_token: Option<&str>,
    ) -> Result<MisnamedPage, StoreError>;

    /// Where `policy` stands now, reading only.
    async fn standing(&self, policy: &MisnamedPolicy) -> Result<Standing, StoreError>;

    /// Moves `policy` to its own name when it is [`Standing::Movable`] (copy and delete in one
    /// guarded write) or [`Standing::Duplicated`] (the old key deleted, guarded); otherwise writes
    /// nothing. Returns the standing the write was decided on.
    async fn move_policy(&self, policy: &MisnamedPolicy) -> Result<Standing, StoreError>;
}
