//! What the members of a replicated datastore say about themselves, for the upgrade pre-flight:
//! every member with the endpoint it serves clients on, whether it answered a status request and
//! what it reported (database size, quota), and the cluster's active alarms.
//!
//! Only etcd has members to ask (`etcd/mod.rs` fills this in from `member list`, each member's
//! `status` and `alarm list`); the Kubernetes datastore's health is its API server's, which the
//! pre-flight checks on its own. This file holds data only; judging it is `exec/preflight.rs`'s.

/// The members of the datastore's cluster and its alarms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatastoreHealth {
    pub members: Vec<MemberHealth>,
    /// Active alarms, e.g. `NOSPACE on member 8e9e05c52164694d`.
    pub alarms: Vec<String>,
}

/// One member, as the member list names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberHealth {
    /// The member's name (`--name`), or its id in hex when it has none yet.
    pub name: String,
    /// The client URL it was asked at; empty when it advertises none (not started).
    pub endpoint: String,
    /// What it reported, or why it did not answer.
    pub status: Result<MemberStatus, String>,
}

/// A member's answer to a status request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberStatus {
    pub version: String,
    /// The size of its database file in bytes (what the quota is measured against).
    pub database_bytes: i64,
    /// The quota the member reports (etcd 3.6 and later); `None` when it does not.
    pub quota_bytes: Option<i64>,
    /// Whether it knows a leader.
    pub has_leader: bool,
    /// Errors the member reports about itself (etcd 3.4: e.g. a corrupt database, an alarm).
    pub errors: Vec<String>,
}
