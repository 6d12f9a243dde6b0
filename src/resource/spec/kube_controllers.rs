//! The spec of KubeControllersConfiguration (upstream `KubeControllersConfigurationSpec` through
//! v3.32; fields added after v3.27.0 carry `x-netctl-since`).
//! Only the resource named `default` exists; defaulting of the metrics port and the node controller's
//! leak grace period is in `validate.rs`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Settings of the Kubernetes controllers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeControllersConfigurationSpec {
    #[schemars(extend("enum" = ["Trace", "Debug", "Info", "Warning", "Error", "Fatal"], "x-netctl-values" = {"Trace": {"since": "v3.30.1"}}))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_severity_screen: Option<String>,
    /// `Enabled` or `Disabled`.
    #[schemars(extend("enum" = ["Enabled", "Disabled"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_checks: Option<String>,
    #[schemars(extend("format" = "duration"))]
    #[serde(
        default,
        rename = "etcdV3CompactionPeriod",
        skip_serializing_if = "Option::is_none"
    )]
    pub etcd_v3_compaction_period: Option<String>,
    /// Defaults to 9094; 0 disables the metrics endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_port: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_profile_port: Option<i64>,
    #[serde(default)]
    pub controllers: ControllersConfiguration,
}

/// Which controllers run, each with its own settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControllersConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeControllerConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<ReconcilerConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_endpoint: Option<ReconcilerConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ReconcilerConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<ReconcilerConfiguration>,
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerControllerConfiguration>,
    /// v3.32's move of default-tier policies from `default.<name>` keys to `<name>`.
    #[schemars(extend("x-netctl-since" = "v3.32.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_migration: Option<PolicyMigrationConfiguration>,
}

/// The load balancer controller (addresses for Services of type LoadBalancer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadBalancerControllerConfiguration {
    /// `AllServices` (the controller's default) or `RequestedServicesOnly`.
    #[schemars(extend("enum" = ["AllServices", "RequestedServicesOnly"]))]
    #[serde(default, rename = "assignIPs", skip_serializing_if = "Option::is_none")]
    pub assign_ips: Option<String>,
}

/// The policy name migrator of v3.32.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyMigrationConfiguration {
    /// `Enabled` (the default) or `Disabled`.
    #[schemars(extend("enum" = ["Enabled", "Disabled"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<String>,
}

/// The node controller.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeControllerConfiguration {
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciler_period: Option<String>,
    /// `Enabled` or `Disabled`.
    #[schemars(extend("enum" = ["Enabled", "Disabled"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_labels: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_endpoint: Option<AutoHostEndpointConfiguration>,
    /// Defaults to 15m when the node controller is configured.
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak_grace_period: Option<String>,
}

/// Automatic host endpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutoHostEndpointConfiguration {
    /// `Enabled` or `Disabled`.
    #[schemars(extend("enum" = ["Enabled", "Disabled"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_create: Option<String>,
    /// `Enabled` or `Disabled`: the all-interfaces `<node>-auto-hep` besides the templates'.
    #[schemars(extend("enum" = ["Enabled", "Disabled"], "x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_default_host_endpoint: Option<String>,
    /// Host endpoints to create per matching node, from its interfaces.
    #[schemars(extend("x-netctl-since" = "v3.30.0"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<HostEndpointTemplate>,
}

/// A template of automatic host endpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostEndpointTemplate {
    /// The name suffix of the endpoints made from this template.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub generate_name: String,
    /// Interfaces with an address in these CIDRs.
    #[serde(
        default,
        rename = "interfaceCIDRs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub interface_cidrs: Vec<String>,
    /// Interfaces whose name matches this regular expression.
    #[schemars(extend("x-netctl-since" = "v3.31.0"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_pattern: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<String>,
}

/// A controller whose only setting is how often it reconciles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcilerConfiguration {
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciler_period: Option<String>,
}
