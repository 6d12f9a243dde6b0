//! The IPAMConfiguration spec (`api/pkg/apis/projectcalico/v3/ipamconfig.go`): the v3 resource
//! of the allocator's settings. On the Kubernetes datastore it is the `ipamconfigs` object the
//! allocator reads; on etcd upstream keeps it at `…/projectcalico.org/ipamconfigurations/default`,
//! apart from `/calico/ipam/v2/config`, which is what the allocator reads there (see
//! `docs/architecture.md`, "IPAM").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether KubeVirt VMs keep their addresses across restarts and migrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum VmAddressPersistence {
    Enabled,
    Disabled,
}

/// The allocator's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpamConfigurationSpec {
    /// When true, a node never borrows addresses from another node's block.
    #[serde(default)]
    pub strict_affinity: bool,
    /// The most blocks one node may hold; 0 (or unset): no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000000))]
    pub max_blocks_per_host: Option<i32>,
    /// Whether blocks are claimed for nodes automatically (true when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    pub auto_allocate_blocks: Option<bool>,
    /// Enabled (when unset) or Disabled.
    #[serde(
        default,
        rename = "kubeVirtVMAddressPersistence",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    pub kubevirt_vm_address_persistence: Option<VmAddressPersistence>,
}
