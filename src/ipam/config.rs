//! The allocator's global configuration (upstream's `IPAMConfig`,
//! `libcalico-go/lib/backend/model/ipam_config.go`): whether nodes may borrow addresses from
//! blocks of other nodes, whether blocks are claimed automatically, how many blocks a node may
//! hold, and (v3.32) whether KubeVirt VMs keep their addresses. No I/O.
//!
//! This is what the allocator reads: `/calico/ipam/v2/config` on etcd, the `ipamconfigs` object
//! `default` on Kubernetes. The `IPAMConfiguration` resource kind is a different object on etcd
//! (see `docs/architecture.md`, "IPAM").

/// What a user of the IPAMConfiguration resource on etcd is told: upstream keeps that v3 object
/// apart from what the allocator reads there (only on Kubernetes are the two one object).
pub const ETCD_RESOURCE_CAVEAT: &str = "on etcd, the IPAMConfiguration resource `default` (/calico/resources/v3/projectcalico.org/ipamconfigurations/default) is not what the allocator reads: it reads /calico/ipam/v2/config, which `netctl ipam show --show-configuration` shows and `netctl ipam configure` changes";

/// The values of KubeVirt address persistence.
pub const PERSISTENCE_VALUES: [&str; 2] = ["Enabled", "Disabled"];

/// The allocator's configuration as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpamConfig {
    pub strict_affinity: bool,
    pub auto_allocate_blocks: bool,
    /// 0: no limit (v3.30+).
    pub max_blocks_per_host: i64,
    /// `Enabled` or `Disabled` (v3.32+); `None`: not set (upstream then behaves as `Enabled`).
    pub kubevirt_vm_address_persistence: Option<String>,
}

impl Default for IpamConfig {
    /// What upstream's allocator uses (and writes, on first use) when nothing is stored.
    fn default() -> IpamConfig {
        IpamConfig {
            strict_affinity: false,
            auto_allocate_blocks: true,
            max_blocks_per_host: 0,
            kubevirt_vm_address_persistence: None,
        }
    }
}

/// A change `netctl ipam configure` makes: only the fields given.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_affinity: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_blocks_per_host: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubevirt_ip_persistence: Option<String>,
}

impl ConfigChange {
    pub fn is_empty(&self) -> bool {
        self.strict_affinity.is_none()
            && self.max_blocks_per_host.is_none()
            && self.kubevirt_ip_persistence.is_none()
    }

    /// The configuration with this change made.
    pub fn applied_to(&self, config: &IpamConfig) -> IpamConfig {
        let mut changed = config.clone();
        if let Some(strict) = self.strict_affinity {
            changed.strict_affinity = strict;
        }
        if let Some(max) = self.max_blocks_per_host {
            changed.max_blocks_per_host = max;
        }
        if let Some(persistence) = &self.kubevirt_ip_persistence {
            changed.kubevirt_vm_address_persistence = Some(persistence.clone());
        }
        changed
    }
}
