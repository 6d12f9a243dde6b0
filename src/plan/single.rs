//! One-step plans: what `create`, `apply`, `replace`, `delete`, `label`, `patch` and `node run` hand
//! the executor.
//!
//! A normal command builds `Plan::single(...)` and hands it to `Executor::run_one`, so dry-run,
//! retries, error reporting and the optional journal behave exactly as in an upgrade. One-step runs
//! take no lock and write no checkpoint: they are one conditional write (or one container start),
//! safe to repeat. Their facts are defaults: a one-step plan depends on none.

use super::facts::ManifestFlavor;
use super::{Action, Fact, FactOrigin, Facts, InstallMethod, Phase, Plan, PlannedStep, Release};
use crate::config::DatastoreType;

impl Plan {
    /// A plan of one step running `action`; `procedure` names the command (e.g. `label`).
    pub fn single(procedure: &str, description: impl Into<String>, action: Action) -> Plan {
        let reason = format!("`netctl {procedure}`");
        let step = PlannedStep::new(
            procedure,
            procedure,
            Phase::Upgrade,
            action,
            description,
            reason,
        );
        Plan::new(
            procedure,
            Release::UNKNOWN,
            Release::UNKNOWN,
            unknown_facts(),
            vec![step],
        )
    }
}

/// Facts for a plan that depends on none: every value a default.
fn unknown_facts() -> Facts {
    let default = |value| Fact::new(value, FactOrigin::Default);
    Facts {
        installed_version: Fact::new(Release::UNKNOWN, FactOrigin::Default),
        datastore_type: Fact::new(DatastoreType::EtcdV3, FactOrigin::Default),
        install_method: Fact::new(InstallMethod::Manifest, FactOrigin::Default),
        operator_namespace: default(String::new()),
        system_namespace: default(String::new()),
        helm_release: default(String::new()),
        helm_release_namespace: default(String::new()),
        manifest_flavor: Fact::new(ManifestFlavor::Calico, FactOrigin::Default),
        manifest_base_url: default(String::new()),
        all_interfaces_host_endpoints: Fact::new(Vec::new(), FactOrigin::Default),
        owner_references: Fact::new(Vec::new(), FactOrigin::Default),
        alp_enabled: Fact::new(false, FactOrigin::Default),
        mesh_version: default(String::new()),
        etcd_endpoints: default(String::new()),
        calico_api_group: default(String::new()),
        service_deployments: Fact::new(Vec::new(), FactOrigin::Default),
    }
}
