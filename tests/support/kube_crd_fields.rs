//! The fields of v3.32's native `projectcalico.org/v3` CRDs (`api/config/crd/projectcalico.org_*.yaml`
//! of release-v3.32), for the test API server's strict checks ([`super::kube_crd`]): per kind its
//! spec's top-level fields with their types (`""` where the CRD takes an int or a string), the
//! spec fields it requires, whether it has a `status` and whether that is a subresource.
//!
//! Written down from the manifests as data, not copied: names and types only. The `crd.projectcalico.org/v1`
//! CRDs have the same spec fields in v3.32; their differences are what [`super::kube_crd`] knows:
//! no `required: [metadata, spec]`, no `status` on IPPool and Tier, and only
//! KubeControllersConfiguration's status a subresource.

/// One kind of the `projectcalico.org/v3` group.
pub struct Fields {
    pub kind: &'static str,
    pub plural: &'static str,
    pub spec: &'static [(&'static str, &'static str)],
    pub required: &'static [&'static str],
    pub status: bool,
    pub status_subresource: bool,
}

/// Every CRD of the group in v3.32.
pub const V3_KINDS: &[Fields] = &[
    Fields {
        kind: "BGPConfiguration",
        plural: "bgpconfigurations",
        spec: &[("asNumber", "integer"), ("bindMode", "string"), ("communities", "array"), ("ignoredInterfaces", "array"), ("ipv4NormalRoutePriority", "integer"), ("ipv6NormalRoutePriority", "integer"), ("listenPort", "integer"), ("localWorkloadPeeringIPV4", "string"), ("localWorkloadPeeringIPV6", "string"), ("logSeverityScreen", "string"), ("nodeMeshMaxRestartTime", "string"), ("nodeMeshPassword", "object"), ("nodeToNodeMeshEnabled", "boolean"), ("prefixAdvertisements", "array"), ("programClusterRoutes", "string"), ("serviceClusterIPs", "array"), ("serviceExternalIPs", "array"), ("serviceLoadBalancerAggregation", "string"), ("serviceLoadBalancerIPs", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "BGPFilter",
        plural: "bgpfilters",
        spec: &[("exportV4", "array"), ("exportV6", "array"), ("importV4", "array"), ("importV6", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "BGPPeer",
        plural: "bgppeers",
        spec: &[("asNumber", "integer"), ("filters", "array"), ("keepOriginalNextHop", "boolean"), ("keepaliveTime", "string"), ("localASNumber", "integer"), ("localWorkloadSelector", "string"), ("maxRestartTime", "string"), ("nextHopMode", "string"), ("node", "string"), ("nodeSelector", "string"), ("numAllowedLocalASNumbers", "integer"), ("password", "object"), ("peerIP", "string"), ("peerSelector", "string"), ("reachableBy", "string"), ("reversePeering", "string"), ("sourceAddress", "string"), ("ttlSecurity", "integer")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "BlockAffinity",
        plural: "blockaffinities",
        spec: &[("cidr", "string"), ("deleted", "boolean"), ("node", "string"), ("state", "string"), ("type", "string")],
        required: &["cidr", "deleted", "node", "state"],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "CalicoNodeStatus",
        plural: "caliconodestatuses",
        spec: &[("classes", "array"), ("node", "string"), ("updatePeriodSeconds", "integer")],
        required: &[],
        status: true,
        status_subresource: false,
    },
    Fields {
        kind: "ClusterInformation",
        plural: "clusterinformations",
        spec: &[("calicoVersion", "string"), ("clusterGUID", "string"), ("clusterType", "string"), ("datastoreReady", "boolean"), ("variant", "string")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "FelixConfiguration",
        plural: "felixconfigurations",
        spec: &[("allowIPIPPacketsFromWorkloads", "boolean"), ("allowVXLANPacketsFromWorkloads", "boolean"), ("awsSrcDstCheck", "string"), ("bpfAttachType", "string"), ("bpfCTLBLogFilter", "string"), ("bpfConnectTimeLoadBalancing", "string"), ("bpfConnectTimeLoadBalancingEnabled", "boolean"), ("bpfConntrackLogLevel", "string"), ("bpfConntrackMode", "string"), ("bpfConntrackTimeouts", "object"), ("bpfDSROptoutCIDRs", "array"), ("bpfDataIfacePattern", "string"), ("bpfDisableGROForIfaces", "string"), ("bpfDisableUnprivileged", "boolean"), ("bpfEnabled", "boolean"), ("bpfEnforceRPF", "string"), ("bpfExcludeCIDRsFromNAT", "array"), ("bpfExportBufferSizeMB", "integer"), ("bpfExtToServiceConnmark", "integer"), ("bpfExternalServiceMode", "string"), ("bpfForceTrackPacketsFromIfaces", "array"), ("bpfHostConntrackBypass", "boolean"), ("bpfHostNetworkedNATWithoutCTLB", "string"), ("bpfJITHardening", "string"), ("bpfKubeProxyHealthzPort", "integer"), ("bpfKubeProxyIptablesCleanupEnabled", "boolean"), ("bpfKubeProxyMinSyncPeriod", "string"), ("bpfL3IfacePattern", "string"), ("bpfLogFilters", "object"), ("bpfLogLevel", "string"), ("bpfMaglevMaxEndpointsPerService", "integer"), ("bpfMaglevMaxServices", "integer"), ("bpfMapSizeConntrack", "integer"), ("bpfMapSizeConntrackCleanupQueue", "integer"), ("bpfMapSizeConntrackScaling", "string"), ("bpfMapSizeIPSets", "integer"), ("bpfMapSizeIfState", "integer"), ("bpfMapSizeNATAffinity", "integer"), ("bpfMapSizeNATBackend", "integer"), ("bpfMapSizeNATFrontend", "integer"), ("bpfMapSizePerCpuConntrack", "integer"), ("bpfMapSizeRoute", "integer"), ("bpfPSNATPorts", ""), ("bpfPolicyDebugEnabled", "boolean"), ("bpfProfiling", "string"), ("bpfRedirectToPeer", "string"), ("cgroupV2Path", "string"), ("chainInsertMode", "string"), ("dataplaneDriver", "string"), ("dataplaneWatchdogTimeout", "string"), ("debugDisableLogDropping", "boolean"), ("debugHost", "string"), ("debugMemoryProfilePath", "string"), ("debugPort", "integer"), ("debugSimulateCalcGraphHangAfter", "string"), ("debugSimulateDataplaneApplyDelay", "string"), ("debugSimulateDataplaneHangAfter", "string"), ("defaultEndpointToHostAction", "string"), ("deviceRouteProtocol", "integer"), ("deviceRouteSourceAddress", "string"), ("deviceRouteSourceAddressIPv6", "string"), ("disableConntrackInvalidCheck", "boolean"), ("endpointReportingDelay", "string"), ("endpointReportingEnabled", "boolean"), ("endpointStatusPathPrefix", "string"), ("externalNodesList", "array"), ("failsafeInboundHostPorts", "array"), ("failsafeOutboundHostPorts", "array"), ("featureDetectOverride", "string"), ("featureGates", "string"), ("floatingIPs", "string"), ("flowLogsCollectorDebugTrace", "boolean"), ("flowLogsFlushInterval", "string"), ("flowLogsGoldmaneServer", "string"), ("flowLogsLocalReporter", "string"), ("flowLogsPolicyEvaluationMode", "string"), ("genericXDPEnabled", "boolean"), ("goGCThreshold", "integer"), ("goMaxProcs", "integer"), ("goMemoryLimitMB", "integer"), ("healthEnabled", "boolean"), ("healthHost", "string"), ("healthPort", "integer"), ("healthTimeoutOverrides", "array"), ("interfaceExclude", "string"), ("interfacePrefix", "string"), ("interfaceRefreshInterval", "string"), ("ipForwarding", "string"), ("ipipEnabled", "boolean"), ("ipipMTU", "integer"), ("ipsetsRefreshInterval", "string"), ("iptablesBackend", "string"), ("iptablesFilterAllowAction", "string"), ("iptablesFilterDenyAction", "string"), ("iptablesLockProbeInterval", "string"), ("iptablesMangleAllowAction", "string"), ("iptablesMarkMask", "integer"), ("iptablesNATOutgoingInterfaceFilter", "string"), ("iptablesPostWriteCheckInterval", "string"), ("iptablesRefreshInterval", "string"), ("ipv4ElevatedRoutePriority", "integer"), ("ipv4NormalRoutePriority", "integer"), ("ipv6ElevatedRoutePriority", "integer"), ("ipv6NormalRoutePriority", "integer"), ("ipv6Support", "boolean"), ("istioAmbientMode", "string"), ("istioDSCPMark", ""), ("kubeNodePortRanges", "array"), ("liveMigrationRouteConvergenceTime", "string"), ("logActionRateLimit", "string"), ("logActionRateLimitBurst", "integer"), ("logDebugFilenameRegex", "string"), ("logFilePath", "string"), ("logPrefix", "string"), ("logSeverityFile", "string"), ("logSeverityScreen", "string"), ("logSeveritySys", "string"), ("maxIpsetSize", "integer"), ("metadataAddr", "string"), ("metadataPort", "integer"), ("mtuIfacePattern", "string"), ("natOutgoingAddress", "string"), ("natOutgoingExclusions", "string"), ("natPortRange", ""), ("netlinkTimeout", "string"), ("nftablesFilterAllowAction", "string"), ("nftablesFilterDenyAction", "string"), ("nftablesMangleAllowAction", "string"), ("nftablesMarkMask", "integer"), ("nftablesMode", "string"), ("nftablesRefreshInterval", "string"), ("nodeSelector", "string"), ("openstackRegion", "string"), ("policySyncPathPrefix", "string"), ("programClusterRoutes", "string"), ("prometheusGoMetricsEnabled", "boolean"), ("prometheusMetricsCAFile", "string"), ("prometheusMetricsCertFile", "string"), ("prometheusMetricsClientAuth", "string"), ("prometheusMetricsEnabled", "boolean"), ("prometheusMetricsHost", "string"), ("prometheusMetricsKeyFile", "string"), ("prometheusMetricsPort", "integer"), ("prometheusProcessMetricsEnabled", "boolean"), ("prometheusWireGuardMetricsEnabled", "boolean"), ("removeExternalRoutes", "boolean"), ("reportingInterval", "string"), ("reportingTTL", "string"), ("requireMTUFile", "boolean"), ("routeRefreshInterval", "string"), ("routeSource", "string"), ("routeSyncDisabled", "boolean"), ("routeTableRange", "object"), ("routeTableRanges", "array"), ("serviceLoopPrevention", "string"), ("sidecarAccelerationEnabled", "boolean"), ("usageReportingEnabled", "boolean"), ("usageReportingInitialDelay", "string"), ("usageReportingInterval", "string"), ("useInternalDataplaneDriver", "boolean"), ("vxlanEnabled", "boolean"), ("vxlanMTU", "integer"), ("vxlanMTUV6", "integer"), ("vxlanPort", "integer"), ("vxlanVNI", "integer"), ("windowsManageFirewallRules", "string"), ("wireguardEnabled", "boolean"), ("wireguardEnabledV6", "boolean"), ("wireguardHostEncryptionEnabled", "boolean"), ("wireguardInterfaceName", "string"), ("wireguardInterfaceNameV6", "string"), ("wireguardKeepAlive", "string"), ("wireguardListeningPort", "integer"), ("wireguardListeningPortV6", "integer"), ("wireguardMTU", "integer"), ("wireguardMTUV6", "integer"), ("wireguardRoutingRulePriority", "integer"), ("wireguardThreadingEnabled", "boolean"), ("workloadSourceSpoofing", "string"), ("xdpEnabled", "boolean"), ("xdpRefreshInterval", "string")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "GlobalNetworkPolicy",
        plural: "globalnetworkpolicies",
        spec: &[("applyOnForward", "boolean"), ("doNotTrack", "boolean"), ("egress", "array"), ("ingress", "array"), ("namespaceSelector", "string"), ("order", "number"), ("performanceHints", "array"), ("preDNAT", "boolean"), ("selector", "string"), ("serviceAccountSelector", "string"), ("tier", "string"), ("types", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "GlobalNetworkSet",
        plural: "globalnetworksets",
        spec: &[("nets", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "HostEndpoint",
        plural: "hostendpoints",
        spec: &[("expectedIPs", "array"), ("interfaceName", "string"), ("node", "string"), ("ports", "array"), ("profiles", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "IPAMBlock",
        plural: "ipamblocks",
        spec: &[("affinity", "string"), ("affinityClaimTime", "string"), ("allocations", "array"), ("attributes", "array"), ("cidr", "string"), ("deleted", "boolean"), ("sequenceNumber", "integer"), ("sequenceNumberForAllocation", "object"), ("strictAffinity", "boolean"), ("unallocated", "array")],
        required: &["allocations", "attributes", "cidr", "strictAffinity", "unallocated"],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "IPAMConfiguration",
        plural: "ipamconfigurations",
        spec: &[("autoAllocateBlocks", "boolean"), ("kubeVirtVMAddressPersistence", "string"), ("maxBlocksPerHost", "integer"), ("strictAffinity", "boolean")],
        required: &["autoAllocateBlocks", "strictAffinity"],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "IPAMHandle",
        plural: "ipamhandles",
        spec: &[("block", "object"), ("deleted", "boolean"), ("handleID", "string")],
        required: &["block", "handleID"],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "IPPool",
        plural: "ippools",
        spec: &[("allowedUses", "array"), ("assignmentMode", "string"), ("blockSize", "integer"), ("cidr", "string"), ("disableBGPExport", "boolean"), ("disabled", "boolean"), ("ipipMode", "string"), ("namespaceSelector", "string"), ("natOutgoing", "boolean"), ("nodeSelector", "string"), ("vxlanMode", "string")],
        required: &["cidr"],
        status: true,
        status_subresource: true,
    },
    Fields {
        kind: "IPReservation",
        plural: "ipreservations",
        spec: &[("reservedCIDRs", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "KubeControllersConfiguration",
        plural: "kubecontrollersconfigurations",
        spec: &[("controllers", "object"), ("debugProfilePort", "integer"), ("etcdV3CompactionPeriod", "string"), ("healthChecks", "string"), ("logSeverityScreen", "string"), ("prometheusMetricsPort", "integer")],
        required: &["controllers"],
        status: true,
        status_subresource: true,
    },
    Fields {
        kind: "NetworkPolicy",
        plural: "networkpolicies",
        spec: &[("egress", "array"), ("ingress", "array"), ("order", "number"), ("performanceHints", "array"), ("selector", "string"), ("serviceAccountSelector", "string"), ("tier", "string"), ("types", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "NetworkSet",
        plural: "networksets",
        spec: &[("nets", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "StagedGlobalNetworkPolicy",
        plural: "stagedglobalnetworkpolicies",
        spec: &[("applyOnForward", "boolean"), ("doNotTrack", "boolean"), ("egress", "array"), ("ingress", "array"), ("namespaceSelector", "string"), ("order", "number"), ("performanceHints", "array"), ("preDNAT", "boolean"), ("selector", "string"), ("serviceAccountSelector", "string"), ("stagedAction", "string"), ("tier", "string"), ("types", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "StagedKubernetesNetworkPolicy",
        plural: "stagedkubernetesnetworkpolicies",
        spec: &[("egress", "array"), ("ingress", "array"), ("podSelector", "object"), ("policyTypes", "array"), ("stagedAction", "string")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "StagedNetworkPolicy",
        plural: "stagednetworkpolicies",
        spec: &[("egress", "array"), ("ingress", "array"), ("order", "number"), ("performanceHints", "array"), ("selector", "string"), ("serviceAccountSelector", "string"), ("stagedAction", "string"), ("tier", "string"), ("types", "array")],
        required: &[],
        status: false,
        status_subresource: false,
    },
    Fields {
        kind: "Tier",
        plural: "tiers",
        spec: &[("defaultAction", "string"), ("order", "number")],
        required: &[],
        status: true,
        status_subresource: true,
    },
];
