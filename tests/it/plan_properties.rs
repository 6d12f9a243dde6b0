//! Properties of planning over many fact combinations: every plan is a valid order of its DAG, phases
//! never go backwards, ids are unique, digests are reproducible, and every refusal is one of the
//! documented kinds.

use std::collections::HashSet;

use netctl::datastore::DatastoreType;
use netctl::plan::{
    DiscoveredFacts, FactOverrides, Facts, InstallMethod, ManifestEdits, PlanError, PlanRequest,
    Release, plan_upgrade_with,
};
use netctl::runbook::RunbookSet;
use proptest::prelude::*;

fn install_method() -> impl Strategy<Value = InstallMethod> {
    prop_oneof![
        Just(InstallMethod::Operator),
        Just(InstallMethod::Helm),
        Just(InstallMethod::Manifest)
    ]
}

fn datastore_type() -> impl Strategy<Value = DatastoreType> {
    prop_oneof![Just(DatastoreType::Kubernetes), Just(DatastoreType::EtcdV3)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_plan_is_a_stable_topological_order(
        from_minor in 0u64..30,
        from_patch in 0u64..5,
        to_line in prop_oneof![Just(27u64), Just(28u64), Just(29u64)],
        // Every line's newest patch is at least .5 (v3.27.5, v3.28.5, v3.29.7).
        to_patch in 0u64..6,
        method in install_method(),
        datastore in datastore_type(),
        host_endpoints in 0usize..4,
        owner_references in 0usize..3,
        alp in any::<bool>(),
        no_manifest_edits in any::<bool>(),
    ) {
        let names: Vec<String> = (0..host_endpoints).map(|n| format!("hep-{n}")).collect();
        let references: Vec<serde_json::Value> = (0..owner_references)
            .map(|n| serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns",
                "name": format!("cm-{n}"), "ownerKind": "Tier", "ownerName": "t", "index": 0}))
            .collect();
        let overrides = FactOverrides {
            from: Some(Release::new(3, from_minor, from_patch)),
            datastore_type: Some(datastore),
            install_method: Some(method),
            set: vec![
                ("all_interfaces_host_endpoints".into(), names.join(",")),
                ("owner_references".into(), serde_json::Value::Array(references).to_string()),
                ("alp_enabled".into(), alp.to_string()),
                ("mesh_version".into(), "1.15.7".into()),
                ("etcd_endpoints".into(), "https://10.0.0.1:2379".into()),
            ],
        };
        let facts = Facts::assemble(&DiscoveredFacts::default(), &overrides).unwrap();
        let request = PlanRequest {
            procedure: "upgrade".into(),
            to: Some(format!("v3.{to_line}.{to_patch}")),
            facts,
        };
        let runbooks = RunbookSet::embedded().unwrap();
        let edits = if no_manifest_edits { ManifestEdits::None } else { ManifestEdits::Unstated };
        match plan_upgrade_with(&runbooks, &request, &edits) {
            Ok(plan) => {
                let mut seen = HashSet::new();
                let mut phase = plan.steps.first().map(|step| step.phase);
                for step in &plan.steps {
                    for need in &step.needs {
                        prop_assert!(seen.contains(need.as_str()), "{} runs before its need {}", step.id, need);
                    }
                    prop_assert!(seen.insert(step.id.as_str()), "duplicate id {}", step.id);
                    prop_assert!(Some(step.phase) >= phase, "phase went backwards at {}", step.id);
                    phase = Some(step.phase);
                }
                prop_assert!(plan.digest_is_valid());
                let again = plan_upgrade_with(&runbooks, &request, &edits).unwrap();
                prop_assert_eq!(again.digest, plan.digest);
                // Host-endpoint preparation exactly when crossing v3.14 with such endpoints.
                let prepared = plan.steps.iter().any(|s| s.runbook == "hostendpoint-preparation");
                prop_assert_eq!(prepared, from_minor < 14 && host_endpoints > 0);
                let detached = plan.steps.iter().any(|s| s.runbook == "ownerreferences-remove");
                prop_assert_eq!(detached, from_minor < 28 && to_line >= 28 && owner_references > 0);
                // The manifest edits gate exactly when a manifest install said nothing about them.
                let gated = plan.steps.iter().any(|s| {
                    s.id == "manifest-upgrade/reapply-local-changes"
                        || s.id == "etcd-upgrade/reapply-install-settings"
                });
                prop_assert_eq!(gated, method == InstallMethod::Manifest && !no_manifest_edits);
            }
            Err(PlanError::Unsupported { .. }) => prop_assert!(to_line >= 28 && from_minor < 15),
            Err(PlanError::NotAnUpgrade { .. }) => prop_assert!(from_minor >= to_line),
            Err(PlanError::NoUpgradeRunbook { .. }) => {
                // The operator and its chart run on the Kubernetes datastore only.
                prop_assert!(method != InstallMethod::Manifest && datastore == DatastoreType::EtcdV3);
            }
            Err(other) => prop_assert!(false, "unexpected error: {other}"),
        }
    }
}
