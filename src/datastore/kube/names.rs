//! The name of the custom resource that holds a resource, per API group and release.
//!
//! Every resource's custom resource has the resource's own name, except a default-tier
//! (Staged)(Global)NetworkPolicy under `crd.projectcalico.org/v1`: up to v3.31 upstream named its
//! custom resource `default.<name>` (`customresource.go`, `defaultPolicyName`, and the v3 client's
//! `convertPolicyNameForStorage` before v3.29), and from v3.32 it uses the name itself, with
//! kube-controllers renaming the older custom resources once calico-node has rolled out
//! (`kube-controllers/pkg/controllers/networkpolicy/policy_name_migrator.go`). Under
//! `projectcalico.org/v3` there is no prefix: those CRDs exist only from v3.32, and upstream's v1 → v3
//! migration creates each object under its v3 name.
//!
//! So under v1 a default-tier policy is looked for under both names, a create uses the cluster's
//! naming (ClusterInformation `calicoVersion`, read at each policy create) and is refused when
//! either name exists, an update writes the custom resource it found, and a delete removes both when
//! both exist (as they do while kube-controllers renames). Without transactions a move cannot be
//! made atomic, so netctl does not move: kube-controllers does. The etcd backend's rules are the
//! same in intent (`etcd/policy_keys.rs`).

use crate::config::CalicoApiGroup;
use crate::datastore::etcd::has_two_layouts;
use crate::release::Release;
use crate::resource::ResourceKey;

/// The prefix of default-tier policy names in custom resources before v3.32.
const DEFAULT_TIER_PREFIX: &str = "default.";

/// How the cluster's release names default-tier policy custom resources under v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyNaming {
    /// `default.<name>`: up to v3.31, and when the release is not known.
    Prefixed,
    /// `<name>`: from v3.32.
    Plain,
}

impl PolicyNaming {
    /// The naming of a release (`calicoVersion`); not known is [`PolicyNaming::Prefixed`], which
    /// every release reads (v3.32 renames it).
    pub fn of(release: Option<&Release>) -> PolicyNaming {
        match release.map(Release::code_line) {
            Some(release) if release >= Release::new(3, 32, 0) => PolicyNaming::Plain,
            _ => PolicyNaming::Prefixed,
        }
    }
}

/// Whether the custom resource of `key` may have either of two names in `group`.
pub fn has_two_names(key: &ResourceKey, group: CalicoApiGroup) -> bool {
    group == CalicoApiGroup::CrdV1 && has_two_layouts(key)
}

/// The names the custom resource of `key` may have in `group`, in the order reads try them: the
/// prefixed one first under v1 (every cluster before v3.32, and a v3.32 one until its
/// kube-controllers has renamed them).
pub fn read_order(key: &ResourceKey, group: CalicoApiGroup) -> Vec<String> {
    if has_two_names(key, group) {
        vec![
            format!("{DEFAULT_TIER_PREFIX}{}", key.name),
            key.name.clone(),
        ]
    } else {
        vec![key.name.clone()]
    }
}

/// The name a new custom resource of `key` gets in `group` under `naming`.
pub fn write_name(key: &ResourceKey, group: CalicoApiGroup, naming: PolicyNaming) -> String {
    match (has_two_names(key, group), naming) {
        (true, PolicyNaming::Prefixed) => format!("{DEFAULT_TIER_PREFIX}{}", key.name),
        _ => key.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Kind;

    fn key(kind: Kind, name: &str) -> ResourceKey {
        ResourceKey::new(kind, None, name)
    }

    #[test]
    fn default_tier_policies_have_two_names_under_v1_only() {
        let policy = key(Kind::GlobalNetworkPolicy, "allow-all");
        let v1 = CalicoApiGroup::CrdV1;
        assert_eq!(read_order(&policy, v1), ["default.allow-all", "allow-all"]);
        assert_eq!(
            read_order(&policy, CalicoApiGroup::V3),
            ["allow-all".to_string()]
        );
        assert_eq!(
            write_name(&policy, v1, PolicyNaming::Prefixed),
            "default.allow-all"
        );
        assert_eq!(write_name(&policy, v1, PolicyNaming::Plain), "allow-all");
        assert_eq!(
            write_name(&policy, CalicoApiGroup::V3, PolicyNaming::Prefixed),
            "allow-all"
        );
        // A tiered name and other kinds have one name.
        let tiered = key(Kind::GlobalNetworkPolicy, "security.deny");
        assert_eq!(read_order(&tiered, v1), ["security.deny".to_string()]);
        let staged = key(Kind::StagedNetworkPolicy, "trial");
        assert_eq!(read_order(&staged, v1), ["default.trial", "trial"]);
        assert_eq!(read_order(&key(Kind::IpPool, "p"), v1), ["p".to_string()]);
    }

    #[test]
    fn naming_follows_the_release() {
        assert_eq!(PolicyNaming::of(None), PolicyNaming::Prefixed);
        assert_eq!(
            PolicyNaming::of(Some(&Release::new(3, 31, 4))),
            PolicyNaming::Prefixed
        );
        assert_eq!(
            PolicyNaming::of(Some(&Release::new(3, 32, 0))),
            PolicyNaming::Plain
        );
    }
}
