//! [`PolicyNameStore`] on etcd: the default-tier policies whose key names them otherwise than
//! their own name (v3.29–v3.31's `/…/globalnetworkpolicies/default.<name>`), found by reading each
//! kind's keys a page at a time, and moved to `/…/<name>` as v3.32 stores them.
//!
//! A policy is misnamed, as upstream's `NeedsMigration` decides, when it is in the default tier and
//! the name its key carries differs from its own name (the `projectcalico.org/metadata` annotation,
//! or the key's name without `default.`; `conversion::decode`). The move is one transaction —
//! guarded on the old key's mod revision and on the new key being absent, it writes the new key
//! and deletes the old one — where upstream creates and then deletes in two requests (and, when the
//! new key exists, deletes the old one whatever the new one holds). When the new key holds the same
//! policy (spec, labels and annotations), only the old key is deleted, guarded on both revisions.

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, KeyValue, Txn, TxnOp, TxnOpResponse};

use super::conversion::{self, PolicyLayout};
use super::endpoints::Delivery;
use super::{EtcdStore, Range, StoreError};
use crate::datastore::policy_names::{MisnamedPage, MisnamedPolicy, PolicyNameStore, Standing};
use crate::resource::{Kind, Resource};

/// Keys read in one page: policies are few and small.
const PAGE: usize = 500;

/// How often a move is decided again when the keys change under it.
const ATTEMPTS: usize = 3;

/// The two keys of a misnamed policy.
struct Paths {
    old: String,
    new: String,
}

impl Paths {
    fn of(policy: &MisnamedPolicy) -> Paths {
        let resource = &policy.policy;
        let prefix = conversion::list_prefix(resource.kind, resource.metadata.namespace.as_deref());
        Paths {
            old: format!("{prefix}{}", policy.stored_name),
            new: format!("{prefix}{}", resource.metadata.name),
        }
    }
}

/// What the two keys hold now.
struct Found {
    old: Option<KeyValue>,
    new: Option<KeyValue>,
}

impl EtcdStore {
    /// Both keys, read in one transaction so they are seen at one revision.
    async fn read_both(&self, paths: &Paths) -> Result<Found, StoreError> {
        let reads = [
            TxnOp::get(paths.old.as_str(), None),
            TxnOp::get(paths.new.as_str(), None),
        ];
        let response = self
            .request("a read of a policy's two names", |mut connection| {
                let txn = Txn::new().and_then(reads.clone());
                async move { connection.kv.txn(txn).await }
            })
            .await?;
        let mut found = response.op_responses().into_iter().map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().cloned(),
            _ => None,
        });
        Ok(Found {
            old: found.next().flatten(),
            new: found.next().flatten(),
        })
    }

    /// Where the policy stands, from what its keys hold.
    fn judge(
        &self,
        policy: &MisnamedPolicy,
        paths: &Paths,
        found: &Found,
    ) -> Result<Standing, StoreError> {
        let expected = revision_of(&policy.policy);
        if found.old.as_ref().map(KeyValue::mod_revision) != Some(expected) {
            return Ok(Standing::Changed);
        }
        let Some(new) = &found.new else {
            return Ok(Standing::Movable);
        };
        let other = conversion::decode(&paths.new, new.value(), new.mod_revision())?;
        Ok(match same_policy(&policy.policy, &other) {
            true => Standing::Duplicated,
            false => Standing::Collides {
                revision: new.mod_revision().to_string(),
            },
        })
    }
}

/// The revision a misnamed policy was read at (its old key's mod revision).
fn revision_of(policy: &Resource) -> i64 {
    policy
        .metadata
        .resource_version
        .as_deref()
        .and_then(|revision| revision.parse().ok())
        .unwrap_or_default()
}

/// Whether two stored policies say the same: spec, labels and annotations (not revisions, UIDs
/// or creation times, which a copy made by hand does not keep).
fn same_policy(one: &Resource, other: &Resource) -> bool {
    one.spec == other.spec
        && one.metadata.labels == other.metadata.labels
        && one.metadata.annotations == other.metadata.annotations
}

/// Whether a policy read from `stored_name`'s key is misnamed: in the default tier and named
/// otherwise than its key.
fn is_misnamed(policy: &Resource, stored_name: &str) -> bool {
    let tier = policy
        .spec
        .get("tier")
        .and_then(|tier| tier.as_str())
        .filter(|tier| !tier.is_empty())
        .unwrap_or("default");
    tier == "default" && policy.metadata.name != stored_name && !policy.metadata.name.is_empty()
}

#[async_trait]
impl PolicyNameStore for EtcdStore {
    async fn misnamed_page(
        &self,
        kind: Kind,
        continue_token: Option<&str>,
    ) -> Result<MisnamedPage, StoreError> {
        let prefix = conversion::list_prefix(kind, None);
        let range = Range {
            operation: "a list of policy keys",
            prefix: &prefix,
            first: PAGE,
            page_bytes: super::FULL_PAGE_BYTES,
        };
        let (entries, continue_token, _) = self.range_page(range, continue_token).await?;
        let mut policies = Vec::new();
        let mut examined = 0;
        for entry in &entries {
            let key = String::from_utf8_lossy(entry.key());
            if !conversion::key_matches_kind(kind, &key) {
                continue;
            }
            examined += 1;
            let stored_name = key.rsplit('/').next().unwrap_or_default().to_string();
            let policy = conversion::decode(&key, entry.value(), entry.mod_revision())?;
            if is_misnamed(&policy, &stored_name) {
                policies.push(MisnamedPolicy {
                    policy,
                    stored_name,
                });
            }
        }
        Ok(MisnamedPage {
            policies,
            examined,
            continue_token,
        })
    }

    async fn standing(&self, policy: &MisnamedPolicy) -> Result<Standing, StoreError> {
        let paths = Paths::of(policy);
        let found = self.read_both(&paths).await?;
        self.judge(policy, &paths, &found)
    }

    async fn move_policy(&self, policy: &MisnamedPolicy) -> Result<Standing, StoreError> {
        let paths = Paths::of(policy);
        let key = policy.policy.key();
        let value = conversion::encode_in(&policy.policy, PolicyLayout::Named);
        let old_revision = revision_of(&policy.policy);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let found = self.read_both(&paths).await?;
            let standing = self.judge(policy, &paths, &found)?;
            let old_unchanged =
                Compare::mod_revision(paths.old.as_str(), CompareOp::Equal, old_revision);
            let txn = match (&standing, &found.new) {
                (Standing::Movable, _) => Txn::new()
                    .when([
                        old_unchanged,
                        Compare::version(paths.new.as_str(), CompareOp::Equal, 0),
                    ])
                    .and_then([
                        TxnOp::put(paths.new.as_str(), value.clone(), None),
                        TxnOp::delete(paths.old.as_str(), None),
                    ]),
                (Standing::Duplicated, Some(new)) => Txn::new()
                    .when([
                        old_unchanged,
                        Compare::mod_revision(
                            paths.new.as_str(),
                            CompareOp::Equal,
                            new.mod_revision(),
                        ),
                    ])
                    .and_then([TxnOp::delete(paths.old.as_str(), None)]),
                _ => return Ok(standing),
            };
            let mut delivery = Delivery::default();
            let response = self
                .write(
                    "a move of a policy to its own name",
                    &key,
                    txn,
                    &mut delivery,
                )
                .await?;
            if response.succeeded() {
                return Ok(standing);
            }
            // A copy of this move that applied before its answer was lost: the old key is gone and
            // the new one holds what the move writes.
            if delivery.maybe_applied() {
                let now = self.read_both(&paths).await?;
                let ours = now.new.as_ref().map(KeyValue::value) == Some(value.as_slice());
                if now.old.is_none() && (ours || standing == Standing::Duplicated) {
                    return Ok(standing);
                }
            }
            if attempt >= ATTEMPTS {
                return Ok(Standing::Changed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(name: &str, tier: Option<&str>) -> Resource {
        let mut spec = serde_json::json!({"selector": "all()"});
        if let Some(tier) = tier {
            spec["tier"] = tier.into();
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "projectcalico.org/v3",
            "kind": "GlobalNetworkPolicy",
            "metadata": {"name": name, "resourceVersion": "7"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn only_default_tier_policies_named_otherwise_than_their_key_are_misnamed() {
        assert!(is_misnamed(&policy("allow-dns", None), "default.allow-dns"));
        assert!(is_misnamed(
            &policy("allow-dns", Some("default")),
            "default.allow-dns"
        ));
        assert!(is_misnamed(
            &policy("allow-dns", Some("")),
            "default.allow-dns"
        ));
        assert!(!is_misnamed(&policy("allow-dns", None), "allow-dns"));
        // Another tier's names always carried the tier: upstream leaves a mismatch there alone.
        assert!(!is_misnamed(
            &policy("security.renamed", Some("security")),
            "security.stale"
        ));
    }

    #[test]
    fn the_same_policy_ignores_revisions_and_identity() {
        let one = policy("allow-dns", None);
        let mut copy = one.clone();
        copy.metadata.resource_version = Some("9".into());
        copy.metadata.uid = Some("another".into());
        assert!(same_policy(&one, &copy));
        copy.spec["selector"] = "role == 'db'".into();
        assert!(!same_policy(&one, &copy));
        assert_eq!(revision_of(&one), 7);
    }
}
