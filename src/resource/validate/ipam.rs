//! Validation of IPAMConfiguration: upstream's `validateMetadata` (only `default`), the range of
//! `maxBlocksPerHost` (the CRD's 0…1,000,000) and the allocator's rule that StrictAffinity and
//! AutoAllocateBlocks are never both off.

use super::Checker;
use crate::resource::ObjectMeta;
use crate::resource::spec::ipam::IpamConfigurationSpec;

/// The one name an IPAMConfiguration may have.
const NAME: &str = "default";

pub(super) fn ipam_configuration(
    checker: &mut Checker,
    spec: &IpamConfigurationSpec,
    metadata: &ObjectMeta,
) {
    if !metadata.name.is_empty() && metadata.name != NAME {
        checker.fail(
            "metadata.name",
            Some(&metadata.name),
            "an IPAMConfiguration must be named `default`",
        );
    }
    if let Some(max) = spec.max_blocks_per_host {
        if !(0..=1_000_000).contains(&max) {
            checker.fail(
                "spec.maxBlocksPerHost",
                Some(&max.to_string()),
                "must be between 0 (no limit) and 1000000",
            );
        }
    }
    if !spec.strict_affinity && spec.auto_allocate_blocks == Some(false) {
        checker.fail(
            "spec.autoAllocateBlocks",
            Some("false"),
            "StrictAffinity and AutoAllocateBlocks cannot both be false",
        );
    }
}
