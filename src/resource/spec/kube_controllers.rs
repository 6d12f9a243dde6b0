//! The spec of KubeControllersConfiguration (upstream v3.29 `KubeControllersConfigurationSpec`).
//! Only the resource named `default` exists; defaulting of the metrics port and the node controller's
//! leak grace period is in `validate.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Settings of the Kubernetes controllers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeControllersConfigurationSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_severity_screen: Option<String>,
    /// `Enabled` or `Disabled`.
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
}

/// The node controller.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeControllerConfiguration {
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciler_period: Option<String>,
    /// `Enabled` or `Disabled`.
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_create: Option<String>,
}

/// A controller whose only setting is how often it reconciles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcilerConfiguration {
    #[schemars(extend("format" = "duration"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciler_period: Option<String>,
}
