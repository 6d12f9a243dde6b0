//! Snapshot tests of the plans users see for the upgrade paths of the issue, built from the shipped
//! runbooks with offline facts (every fact from a flag or a default).

use netctl::datastore::DatastoreType;
use netctl::plan::render::{self, PlanFormat};
use netctl::plan::{
    DiscoveredFacts, FactOverrides, Facts, InstallMethod, ManifestEdits, Plan, PlanRequest,
    Release, plan_upgrade, plan_upgrade_with,
};
use netctl::runbook::RunbookSet;

fn plan(
    from: &str,
    to: &str,
    install_method: InstallMethod,
    datastore_type: DatastoreType,
    set: &[(&str, &str)],
) -> Result<Plan, netctl::plan::PlanError> {
    let overrides = FactOverrides {
        from: Some(from.parse::<Release>().unwrap()),
        datastore_type: Some(datastore_type),
        install_method: Some(install_method),
        set: set
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
    };
    let facts = Facts::assemble(&DiscoveredFacts::default(), &overrides).unwrap();
    let runbooks = RunbookSet::embedded().unwrap();
    plan_upgrade(
        &runbooks,
        &PlanRequest {
            procedure: "upgrade".into(),
            to: Some(to.into()),
            facts,
        },
    )
}

fn step_ids(plan: &Plan) -> Vec<&str> {
    plan.steps.iter().map(|step| step.id.as_str()).collect()
}

#[test]
fn helm_from_v3_13_with_all_interfaces_host_endpoints() {
    let plan = plan(
        "v3.13.2",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::Kubernetes,
        &[("all_interfaces_host_endpoints", "node1-eth0,node2-eth0")],
    )
    .unwrap();
    let ids = step_ids(&plan);
    // The temporary policy is in place before anything is upgraded, and removed only at the end.
    let policy = ids
        .iter()
        .position(|id| *id == "hostendpoint-preparation/apply-allow-all-upgrade")
        .unwrap();
    let chart = ids
        .iter()
        .position(|id| *id == "helm-ownership-migration/install-chart")
        .unwrap();
    assert!(policy < chart);
    // The verification comes last; before it, the finish phase.
    assert_eq!(ids.last(), Some(&"verify/cluster"));
    assert_eq!(
        ids.iter().rev().nth(1),
        Some(&"hostendpoint-finish/unlabel-all-interfaces-heps")
    );
    insta::assert_snapshot!(render::text(&plan));
}

#[test]
fn helm_from_v3_20_crosses_the_ownership_edge() {
    let plan = plan(
        "v3.20.1",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap();
    assert!(
        step_ids(&plan)
            .iter()
            .all(|id| !id.starts_with("helm-upgrade/"))
    );
    insta::assert_snapshot!(render::text(&plan));
    insta::assert_snapshot!("helm_from_v3_20_markdown", render::markdown(&plan));
}

#[test]
fn the_old_helm_release_is_listed_and_deleted_where_it_lives() {
    let legacy = plan(
        "v3.20.1",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::Kubernetes,
        &[("helm_release_namespace", "legacy")],
    )
    .unwrap();
    assert_eq!(legacy.facts.helm_release_namespace.value, "legacy");
    for id in [
        "helm-ownership-migration/list-old-release-secrets",
        "helm-ownership-migration/delete-old-release-secrets",
    ] {
        let step = legacy.steps.iter().find(|step| step.id == id).unwrap();
        let with = serde_json::to_value(&step.action).unwrap()["with"].clone();
        assert_eq!(with["namespace"], "legacy", "{id}");
        assert_eq!(
            with["selector"],
            serde_json::json!({"name": "calico", "owner": "helm"}),
            "{id}"
        );
    }

    // A release already in the operator namespace is not what the migration is for: installing
    // over it fails, and deleting "the old release" would delete the new one.
    let error = plan(
        "v3.20.1",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::Kubernetes,
        &[("helm_release_namespace", "tigera-operator")],
    )
    .unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(error));
    assert!(
        text.contains("the Helm release is already in the operator namespace"),
        "{text}"
    );
}

#[test]
fn helm_from_v3_23_takes_the_plain_upgrade() {
    let plan = plan(
        "v3.23.0",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap();
    let ids = step_ids(&plan);
    assert!(ids.contains(&"helm-upgrade/upgrade-release"));
    assert!(
        ids.iter()
            .all(|id| !id.starts_with("helm-ownership-migration/"))
    );
}

#[test]
fn operator_from_v3_26_to_v3_29_detaches_owner_references() {
    let references = r#"[{"apiVersion":"apps/v1","kind":"Deployment","namespace":"shop","name":"cart","ownerKind":"NetworkPolicy","ownerName":"cart-policy","index":1},{"apiVersion":"v1","kind":"ConfigMap","namespace":"shop","name":"cart-rules","ownerKind":"GlobalNetworkSet","ownerName":"blocked","index":0}]"#;
    let plan = plan(
        "v3.26.4",
        "v3.29.2",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[("owner_references", references)],
    )
    .unwrap();
    insta::assert_snapshot!(render::text(&plan));
    insta::assert_snapshot!("operator_owner_references_json", render::json(&plan));
    insta::assert_snapshot!(
        "operator_owner_references_dot",
        render::render(&plan, PlanFormat::Dot)
    );
    insta::assert_snapshot!(
        "operator_owner_references_mermaid",
        render::render(&plan, PlanFormat::Mermaid)
    );
    // The saved form reads back and still matches its digest.
    let read: Plan = serde_json::from_str(&render::json(&plan)).unwrap();
    assert!(read.digest_is_valid());
    assert_eq!(read, plan);
}

#[test]
fn operator_from_v3_28_has_no_owner_reference_steps() {
    let plan = plan(
        "v3.28.1",
        "v3.29.2",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[("owner_references", r#"[{"apiVersion":"v1","kind":"ConfigMap","name":"x","ownerKind":"Tier","ownerName":"t","index":0}]"#)],
    )
    .unwrap();
    assert!(
        step_ids(&plan)
            .iter()
            .all(|id| !id.starts_with("ownerreferences"))
    );
}

#[test]
fn manifest_from_v3_25_to_v3_29_on_kubernetes() {
    let plan = plan(
        "v3.25.1",
        "v3.29.2",
        InstallMethod::Manifest,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap();
    insta::assert_snapshot!(render::text(&plan));
}

#[test]
fn manifest_canal_flavour_downloads_canal() {
    let plan = plan(
        "v3.25.1",
        "v3.29",
        InstallMethod::Manifest,
        DatastoreType::Kubernetes,
        &[("manifest_flavor", "canal")],
    )
    .unwrap();
    assert_eq!(
        plan.to.to_string(),
        "v3.29.7",
        "a release line takes the catalog's latest patch"
    );
    let text = render::text(&plan);
    assert!(
        text.contains("/v3.29.7/manifests/canal.yaml -> upgrade.yaml"),
        "{text}"
    );
}

#[test]
fn etcd_from_v3_24_to_v3_27_with_application_layer_policy() {
    let plan = plan(
        "v3.24.3",
        "v3.27.4",
        InstallMethod::Manifest,
        DatastoreType::EtcdV3,
        &[
            ("alp_enabled", "true"),
            ("mesh_version", "1.15.7"),
            ("service_deployments", "shop/cart,shop/front"),
            (
                "etcd_endpoints",
                "https://10.0.0.1:2379,https://10.0.0.2:2379",
            ),
        ],
    )
    .unwrap();
    insta::assert_snapshot!(render::text(&plan));
}

#[test]
fn etcd_without_known_endpoints_is_refused() {
    let error = plan(
        "v3.24.3",
        "v3.27.4",
        InstallMethod::Manifest,
        DatastoreType::EtcdV3,
        &[],
    )
    .unwrap_err();
    let chain = format!("{:#}", anyhow::Error::new(error));
    assert!(
        chain.contains("netctl knows no etcd endpoints to write into the manifest"),
        "{chain}"
    );
}

#[test]
fn manifest_edits_decide_the_gate_and_the_overlay_reaches_the_download() {
    let facts = Facts::assemble(
        &DiscoveredFacts::default(),
        &FactOverrides {
            from: Some("v3.25.2".parse().unwrap()),
            install_method: Some(InstallMethod::Manifest),
            ..FactOverrides::default()
        },
    )
    .unwrap();
    let request = PlanRequest {
        procedure: "upgrade".into(),
        to: Some("v3.29.0".into()),
        facts,
    };
    let runbooks = RunbookSet::embedded().unwrap();
    let gate = "manifest-upgrade/reapply-local-changes";
    let unstated = plan_upgrade(&runbooks, &request).unwrap();
    assert!(step_ids(&unstated).contains(&gate));
    let none = plan_upgrade_with(&runbooks, &request, &ManifestEdits::None).unwrap();
    assert!(!step_ids(&none).contains(&gate));
    let document = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "calico-config", "namespace": "kube-system"},
        "data": {"veth_mtu": "1440", "calico_backend": null}});
    let overlaid = plan_upgrade_with(
        &runbooks,
        &request,
        &ManifestEdits::Overlay(vec![document.clone()]),
    )
    .unwrap();
    assert!(!step_ids(&overlaid).contains(&gate));
    let download = serde_json::to_value(&overlaid.steps[1]).unwrap();
    assert_eq!(download["with"]["overlay"], serde_json::json!([document]));
    assert_ne!(overlaid.digest, none.digest, "the overlay is in the digest");

    // The review every format shows: the diff when the manifest was read, else the overlay itself.
    let released = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-config\n  namespace: kube-system\ndata:\n  calico_backend: bird\n  veth_mtu: \"0\"\n";
    let (step, url, overlay) = overlaid.overlay_downloads().next().unwrap();
    let preview =
        netctl::plan::overlay::preview(step, url, overlay, Ok(released.as_bytes())).unwrap();
    let mut reviewed = overlaid.clone();
    reviewed.set_manifest_previews(vec![preview]);
    let text = render::text(&reviewed);
    assert!(
        text.contains("  -  calico_backend: bird\n  -  veth_mtu: '0'\n  +  veth_mtu: '1440'\n"),
        "{text}"
    );
    let markdown = render::render(&reviewed, PlanFormat::Markdown);
    assert!(
        markdown.contains("## manifest overlay of `manifest-upgrade/download-manifest`"),
        "{markdown}"
    );
    assert!(
        markdown.contains("```diff\n--- `v1 ConfigMap"),
        "{markdown}"
    );
    let json: serde_json::Value = serde_json::from_str(&render::json(&reviewed)).unwrap();
    assert!(
        json["manifest_previews"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+  veth_mtu: '1440'")
    );
    let unread = render::text(&overlaid);
    assert!(
        unread.contains("the manifest was not read at plan time; the overlay as given:"),
        "{unread}"
    );

    // On an operator install no step takes the overlay up: refused, not ignored.
    let mut operator = request.clone();
    operator.facts.install_method.value = InstallMethod::Operator;
    let error = plan_upgrade_with(
        &runbooks,
        &operator,
        &ManifestEdits::Overlay(vec![document]),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("a manifest overlay was given, but no step"),
        "{error}"
    );
}

#[test]
fn application_layer_policy_without_a_mesh_version_is_refused() {
    let error = plan(
        "v3.24.3",
        "v3.27.4",
        InstallMethod::Manifest,
        DatastoreType::EtcdV3,
        &[("alp_enabled", "true")],
    )
    .unwrap_err();
    // As `main` prints it: the error chain, each cause once.
    insta::assert_snapshot!(format!("{:#}", anyhow::Error::from(error)));
}

#[test]
fn v3_14_to_v3_29_is_refused_with_the_route() {
    let error = plan(
        "v3.14.0",
        "v3.29.2",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap_err();
    insta::assert_snapshot!(shown(error));
}

/// An error as a user sees it: the message, then the advice on its own `hint:` line.
fn shown(error: netctl::plan::PlanError) -> String {
    let (message, hint) = netctl::cli::report(
        &anyhow::Error::from(error),
        &netctl::output::Printer::default(),
    );
    match hint {
        Some(hint) => format!("{message}\nhint: {hint}"),
        None => message,
    }
}

#[test]
fn other_refusals_name_the_reason() {
    let unknown = plan(
        "v3.20.0",
        "v3.33.0",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap_err();
    let downgrade = plan(
        "v3.28.0",
        "v3.27.4",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap_err();
    // Every line of the catalog names its newest patch (once v3.27 did not: "the catalog knows no
    // latest patch"), so a line alone is enough.
    let line_only = plan(
        "v3.20.0",
        "v3.27",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap();
    assert_eq!(line_only.to.to_string(), "v3.27.5");
    let operator_on_etcd = plan(
        "v3.20.0",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::EtcdV3,
        &[],
    );
    insta::assert_snapshot!(format!(
        "{}\n---\n{}\n---\n{}",
        shown(unknown),
        shown(downgrade),
        operator_on_etcd
            .map(|plan| plan.steps.len().to_string())
            .unwrap_or_else(shown)
    ));
}

#[test]
fn a_release_candidate_target_keeps_its_version_edges() {
    let plan = plan(
        "v3.27.3",
        "v3.29.0-rc1",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[("owner_references", r#"[{"apiVersion":"v1","kind":"ConfigMap","name":"x","ownerKind":"Tier","ownerName":"t","index":0}]"#)],
    )
    .unwrap();
    assert!(step_ids(&plan).contains(&"ownerreferences-remove/remove-owner-reference[0]"));
    assert!(render::text(&plan).contains("/v3.29.0-rc1/manifests/tigera-operator.yaml"));
}

#[test]
fn plans_are_identical_run_to_run() {
    let first = plan(
        "v3.13.2",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::Kubernetes,
        &[("all_interfaces_host_endpoints", "a,b,c")],
    )
    .unwrap();
    for _ in 0..5 {
        let again = plan(
            "v3.13.2",
            "v3.27.4",
            InstallMethod::Helm,
            DatastoreType::Kubernetes,
            &[("all_interfaces_host_endpoints", "a,b,c")],
        )
        .unwrap();
        assert_eq!(again.digest, first.digest);
        assert_eq!(render::json(&again), render::json(&first));
    }
}

fn auto_host_endpoint_plan(host_endpoints: &str) -> Result<Plan, netctl::plan::PlanError> {
    let overrides = FactOverrides {
        from: Some("v3.29.2".parse().unwrap()),
        install_method: Some(InstallMethod::Operator),
        set: vec![(
            "all_interfaces_host_endpoints".into(),
            host_endpoints.into(),
        )],
        ..FactOverrides::default()
    };
    let facts = Facts::assemble(&DiscoveredFacts::default(), &overrides).unwrap();
    plan_upgrade(
        &RunbookSet::embedded().unwrap(),
        &PlanRequest {
            procedure: "auto-host-endpoints".into(),
            to: None,
            facts,
        },
    )
}

#[test]
fn the_auto_host_endpoint_procedure_is_planned_on_its_own() {
    let plan = auto_host_endpoint_plan(
        r#"[{"name": "node1-eth0", "node": "node1", "labels": {"role": "edge", "zone": "a"}}]"#,
    )
    .unwrap();
    insta::assert_snapshot!(render::text(&plan));
}

#[test]
fn the_auto_host_endpoint_procedure_needs_each_host_endpoints_node() {
    let error = auto_host_endpoint_plan("node1-eth0").unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(error));
    assert!(
        text.contains("the node of an all-interfaces host endpoint is unknown"),
        "{text}"
    );
}

/// Facts are typed before any template sees them: a value that would change what a selector, a
/// path or a command means is refused, whether given with `--set` or not, and a selector is
/// rendered from labels, so no value can widen it.
#[test]
fn facts_that_would_change_a_selector_or_a_path_are_refused() {
    let assemble = |name: &str, value: &str| {
        Facts::assemble(
            &DiscoveredFacts::default(),
            &FactOverrides {
                from: Some(Release::new(3, 20, 1)),
                datastore_type: Some(DatastoreType::Kubernetes),
                install_method: Some(InstallMethod::Helm),
                set: vec![(name.to_string(), value.to_string())],
            },
        )
        .map(|_| ())
        .map_err(|error| error.to_string())
    };
    for (name, value, reason) in [
        ("helm_release", "x in (a),owner", "lower case alphanumeric"),
        (
            "operator_namespace",
            "../../etc",
            "a namespace is a DNS-1123 label",
        ),
        (
            "helm_release_namespace",
            "kube system",
            "a namespace is a DNS-1123 label",
        ),
        ("manifest_base_url", "raw.example/calico", "not a URL"),
        (
            "manifest_base_url",
            "https://mirror.example/?x={{",
            "a query",
        ),
        (
            "etcd_endpoints",
            "ftp://10.0.0.1:2379",
            "expected a URL starting with",
        ),
        (
            "mesh_version",
            "1.20 && rm",
            "expected the full mesh version",
        ),
        (
            "all_interfaces_host_endpoints",
            r#"[{"name": "h1", "labels": {"role": "a,b in (c)"}}]"#,
            "",
        ),
        (
            "helm_release",
            "a-release-name-that-is-far-too-long-for-helm-to-accept-it",
            "at most 53",
        ),
    ] {
        let error = assemble(name, value).unwrap_err();
        assert!(
            error.starts_with(&format!("invalid value `{value}` for fact `{name}`"))
                || error.contains("invalid value"),
            "{name}={value}: {error}"
        );
        assert!(error.contains(reason), "{name}={value}: {error}");
    }
    assert_eq!(assemble("helm_release", "calico"), Ok(()));
    assert_eq!(assemble("operator_namespace", "tigera-operator"), Ok(()));
    assert_eq!(assemble("mesh_version", "1.20.2"), Ok(()));

    // The irreversible delete of the Helm migration selects by labels, rendered from a map.
    let plan = plan(
        "v3.20.1",
        "v3.27.4",
        InstallMethod::Helm,
        DatastoreType::Kubernetes,
        &[("helm_release", "calico")],
    )
    .unwrap();
    let delete = plan
        .steps
        .iter()
        .find(|step| step.id == "helm-ownership-migration/delete-old-release-secrets")
        .unwrap();
    let json = serde_json::to_value(&delete.action).unwrap();
    assert_eq!(
        json["with"]["selector"],
        serde_json::json!({"name": "calico", "owner": "helm"})
    );
    assert!(render::text(&plan).contains("-l name=calico,owner=helm"));
    // A selector written as text is refused: it could say anything.
    let error = netctl::plan::Action::from_parts(
        "kube.delete",
        serde_json::json!({"api_version": "v1", "kind": "Secret", "selector": "name=calico,owner"}),
    )
    .unwrap_err();
    assert!(
        netctl::errors::error_chain(&error).contains("write the selector as labels"),
        "{error}"
    );
    let error = netctl::plan::Action::from_parts(
        "kube.delete",
        serde_json::json!({"api_version": "v1", "kind": "Secret", "selector": {"name": "x in (a)"}}),
    )
    .unwrap_err();
    assert!(
        netctl::errors::error_chain(&error).contains("value `x in (a)` of label `name`"),
        "{error}"
    );
}

/// Every supported starting line plans to v3.32 with every install method that runs there; the
/// steps of the edges to v3.32 come with their reasons.
#[test]
fn every_supported_line_plans_to_v3_32() {
    let methods = [
        (InstallMethod::Operator, DatastoreType::Kubernetes),
        (InstallMethod::Helm, DatastoreType::Kubernetes),
        (InstallMethod::Manifest, DatastoreType::Kubernetes),
        (InstallMethod::Manifest, DatastoreType::EtcdV3),
    ];
    let etcd = [("etcd_endpoints", "https://10.0.0.1:2379")];
    for from in [
        "v3.15.0", "v3.23.0", "v3.27.5", "v3.28.5", "v3.29.4", "v3.30.7", "v3.31.7",
    ] {
        for (method, datastore) in methods {
            let facts: &[(&str, &str)] = if datastore == DatastoreType::EtcdV3 {
                &etcd
            } else {
                &[]
            };
            let plan = plan(from, "v3.32", method, datastore, facts).unwrap_or_else(|error| {
                panic!("{from} {method:?} {datastore:?}: {}", shown(error))
            });
            assert_eq!(plan.to.to_string(), "v3.32.1");
            let ids = step_ids(&plan);
            // On etcd netctl moves the policy names itself; on Kubernetes kube-controllers does,
            // and the plan waits for the operator to confirm it.
            let names_step = match datastore {
                DatastoreType::EtcdV3 => "policy-names-v3/move-policy-names",
                DatastoreType::Kubernetes => "policy-names-v3/confirm-policy-names-moved",
            };
            for step in [
                "admin-network-policies/confirm-no-admin-network-policies",
                names_step,
            ] {
                assert!(ids.contains(&step), "{from} {method:?}: {ids:?}");
            }
            let other = [
                "policy-names-v3/move-policy-names",
                "policy-names-v3/confirm-policy-names-moved",
            ]
            .into_iter()
            .find(|step| *step != names_step)
            .unwrap();
            assert!(!ids.contains(&other), "{from} {method:?}: {ids:?}");
            let why = &plan
                .steps
                .iter()
                .find(|s| s.id.starts_with("policy-names-v3/"))
                .unwrap()
                .reason;
            assert!(why.contains("kube-controllers moves the old keys"), "{why}");
        }
    }
}

#[test]
fn the_crds_come_first_from_v3_30_and_change_their_file_at_v3_32() {
    let crds = |to: &str, method: InstallMethod| {
        let plan = plan("v3.29.4", to, method, DatastoreType::Kubernetes, &[]).unwrap();
        plan.steps
            .iter()
            .filter(|step| {
                step.description.contains("Download") && step.description.contains(".yaml")
            })
            .map(|step| step.description.clone())
            .collect::<Vec<_>>()
    };
    assert!(
        crds("v3.29", InstallMethod::Operator)
            .iter()
            .all(|step| !step.contains("crd")),
        "no CRD step before v3.30"
    );
    assert!(
        crds("v3.31", InstallMethod::Operator)
            .iter()
            .any(|step| step.contains("`operator-crds.yaml` of v3.31.7"))
    );
    assert!(
        crds("v3.32", InstallMethod::Operator)
            .iter()
            .any(|step| step.contains("`v1_crd_projectcalico_org.yaml` of v3.32.1"))
    );
    assert!(
        crds("v3.32", InstallMethod::Helm)
            .iter()
            .any(|step| step.contains("`v1_crd_projectcalico_org.yaml`"))
    );
    assert!(
        crds("v3.30", InstallMethod::Helm)
            .iter()
            .any(|step| step.contains("`operator-crds.yaml`"))
    );
    // Within the v3.32 line there is no edge to cross.
    let patch = plan(
        "v3.32.0",
        "v3.32",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap();
    assert!(
        !step_ids(&patch)
            .iter()
            .any(|id| id.starts_with("policy-names-v3/"))
    );
}

#[test]
fn v3_14_to_v3_32_is_refused_with_the_way_forward() {
    let error = plan(
        "v3.14.2",
        "v3.32",
        InstallMethod::Operator,
        DatastoreType::Kubernetes,
        &[],
    )
    .unwrap_err();
    assert_eq!(
        shown(error),
        "upgrading from `v3.14.2` to `v3.32.1` is not supported: v3.32 may only be upgraded from versions matching `>=3.15.0`\nhint: upgrade to v3.27 first, then to v3.32"
    );
}

/// The plan of the v3.13 → v3.27 manifest upgrade over `endpoints`, with `set` changed as `edit`
/// says before planning.
fn host_endpoint_plan(endpoints: &str, edit: impl Fn(&mut RunbookSet)) -> Plan {
    let overrides = FactOverrides {
        from: Some("v3.13.2".parse::<Release>().unwrap()),
        datastore_type: Some(DatastoreType::EtcdV3),
        install_method: Some(InstallMethod::Manifest),
        set: vec![
            (
                "all_interfaces_host_endpoints".to_string(),
                endpoints.to_string(),
            ),
            (
                "etcd_endpoints".to_string(),
                "https://10.0.0.1:2379".to_string(),
            ),
        ],
    };
    let facts = Facts::assemble(&DiscoveredFacts::default(), &overrides).unwrap();
    let mut runbooks = RunbookSet::embedded().unwrap();
    edit(&mut runbooks);
    plan_upgrade(
        &runbooks,
        &PlanRequest {
            procedure: "upgrade".into(),
            to: Some("v3.27.0".into()),
            facts,
        },
    )
    .unwrap()
}

/// Sets `name` of the label steps' `with` (and their `verify`'s) to `template`.
fn label_name_template(runbooks: &mut RunbookSet, template: &str) {
    for loaded in &mut runbooks.runbooks {
        for step in &mut loaded.runbook.spec.steps {
            if step.action != "resource.label" || step.foreach.is_none() {
                continue;
            }
            let mut withs: Vec<_> = step.with.iter_mut().collect();
            withs.extend(
                step.verify
                    .iter_mut()
                    .flat_map(|verify| verify.with.as_mut()),
            );
            for with in withs {
                if with.contains_key("labels") {
                    continue;
                }
                with.insert("name".into(), serde_json::json!(template));
            }
        }
    }
}

// A label `foreach` whose items differ only in the name is rendered for its first item alone and
// takes the other items' names; rendering every item (what any other `name` template does) must
// give the same plan, step for step and digest for digest.
#[test]
fn a_label_foreach_planned_from_its_first_item_equals_rendering_every_item() {
    let endpoints = "h1,h2,h3,h4,h5,h6,h7";
    let quick = host_endpoint_plan(endpoints, |_| {});
    // `| string` keeps the value but is not the plain `{{ item.name }}`: every item is rendered.
    let rendered = host_endpoint_plan(endpoints, |runbooks| {
        label_name_template(runbooks, "{{ item.name | string }}")
    });
    assert_eq!(render::json(&quick), render::json(&rendered));
    assert_eq!(quick.digest, rendered.digest);
    let label = quick
        .steps
        .iter()
        .find(|step| step.id == "hostendpoint-preparation/label-all-interfaces-heps")
        .expect("one folded label step");
    assert_eq!(label.action.name(), "resource.label-each");
    assert!(
        label.description.contains("the same for 6 more"),
        "{}",
        label.description
    );
}

// A `name` template that reads more than the item's name renders every item, and they still fold.
#[test]
fn a_label_foreach_whose_name_reads_more_than_the_item_name_renders_each_item_and_folds() {
    let plan = host_endpoint_plan("h1,h2", |runbooks| {
        label_name_template(runbooks, "{{ item.name }}-{{ item.node }}")
    });
    let label = plan
        .steps
        .iter()
        .find(|step| step.id == "hostendpoint-preparation/label-all-interfaces-heps")
        .expect("one folded label step");
    let netctl::plan::Action::ResourceLabelEach(each) = &label.action else {
        panic!("a batched label: {:?}", label.action);
    };
    assert_eq!(each.names, ["h1-", "h2-"]);
}
