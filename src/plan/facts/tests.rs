//! The fact list's readers: assembling, `--set`, the type checks, the plan format, discovery.

mod assemble {
    use super::super::*;

    fn overrides(set: &[(&str, &str)]) -> FactOverrides {
        FactOverrides {
            from: Some("v3.20.1".parse().unwrap()),
            install_method: Some(InstallMethod::Helm),
            set: set
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            ..FactOverrides::default()
        }
    }

    #[test]
    fn flags_beat_discovery_and_defaults_fill_the_rest() {
        let discovered = DiscoveredFacts {
            installed_version: Some("v3.19.0".parse().unwrap()),
            datastore_type: Some(DatastoreType::EtcdV3),
            all_interfaces_host_endpoints: Some(vec![HostEndpointFact::named("h1")]),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&discovered, &overrides(&[("alp_enabled", "true")])).unwrap();
        assert_eq!(facts.installed_version.value.to_string(), "v3.20.1");
        assert_eq!(facts.installed_version.origin, FactOrigin::Flag);
        assert_eq!(facts.datastore_type.origin, FactOrigin::Discovered);
        assert_eq!(facts.system_namespace.value, "calico-system");
        assert!(facts.alp_enabled.value);
        assert_eq!(
            facts.values()["all_interfaces_host_endpoints"],
            serde_json::json!([{"name": "h1", "node": "", "labels": {}}])
        );
    }

    #[test]
    fn etcd_endpoints_come_from_the_configuration_and_are_left_out_of_plans_while_unset() {
        let unset = Facts::assemble(&DiscoveredFacts::default(), &overrides(&[])).unwrap();
        let json = serde_json::to_value(&unset).unwrap();
        assert!(json.get("etcd_endpoints").is_none(), "{json}");
        assert_eq!(unset.values()["etcd_endpoints"], serde_json::json!(""));
        assert_eq!(serde_json::from_value::<Facts>(json).unwrap(), unset);

        let configured = DiscoveredFacts {
            etcd_endpoints: Some("https://10.0.0.1:2379".into()),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&configured, &overrides(&[])).unwrap();
        assert_eq!(facts.etcd_endpoints.origin, FactOrigin::Discovered);
        let json = serde_json::to_value(&facts).unwrap();
        assert_eq!(json["etcd_endpoints"]["value"], "https://10.0.0.1:2379");
        let flagged = Facts::assemble(
            &configured,
            &overrides(&[("etcd_endpoints", "https://a:2379, https://b:2379")]),
        )
        .unwrap();
        assert_eq!(
            flagged.etcd_endpoints.value,
            "https://a:2379,https://b:2379"
        );
        assert_eq!(flagged.etcd_endpoints.origin, FactOrigin::Flag);
    }

    #[test]
    fn the_helm_release_namespace_defaults_to_default_only_for_helm_installs() {
        let helm = Facts::assemble(&DiscoveredFacts::default(), &overrides(&[])).unwrap();
        assert_eq!(
            helm.helm_release_namespace,
            Fact::new("default".to_string(), FactOrigin::Default)
        );
        let json = serde_json::to_value(&helm).unwrap();
        assert_eq!(json["helm_release_namespace"]["value"], "default");

        let mut operator = overrides(&[]);
        operator.install_method = Some(InstallMethod::Operator);
        let facts = Facts::assemble(&DiscoveredFacts::default(), &operator).unwrap();
        let json = serde_json::to_value(&facts).unwrap();
        assert!(json.get("helm_release_namespace").is_none(), "{json}");
        assert_eq!(facts.values()["helm_release_namespace"], "");
        assert_eq!(serde_json::from_value::<Facts>(json).unwrap(), facts);

        let discovered = DiscoveredFacts {
            cluster: Some(ClusterFacts {
                install_method: Some(InstallMethod::Helm),
                helm_release: Some("calico".into()),
                helm_release_namespace: Some("ops".into()),
                ..ClusterFacts::default()
            }),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&discovered, &overrides(&[])).unwrap();
        assert_eq!(
            facts.helm_release_namespace,
            Fact::new("ops".to_string(), FactOrigin::Discovered)
        );
        let facts = Facts::assemble(
            &discovered,
            &overrides(&[("helm_release_namespace", "legacy")]),
        )
        .unwrap();
        assert_eq!(
            facts.helm_release_namespace,
            Fact::new("legacy".to_string(), FactOrigin::Flag)
        );
        assert!(
            Facts::assemble(&discovered, &overrides(&[("helm_release_namespace", " ")])).is_err()
        );
    }

    #[test]
    fn unknown_and_malformed_facts_are_refused() {
        let error = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("colour", "red")]),
        )
        .unwrap_err();
        assert_eq!(error.to_string(), "unknown fact `colour`");
        assert!(error.hint().unwrap().starts_with("known facts are"));
        let error = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("alp_enabled", "yes")]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid value `yes` for fact `alp_enabled`: expected `true` or `false`"
        );
        assert!(parse_set("novalue").is_err());
        assert_eq!(
            parse_set("a=b=c").unwrap(),
            ("a".to_string(), "b=c".to_string())
        );
    }

    #[test]
    fn owner_references_of_one_object_are_removed_from_the_end() {
        let references = r#"[
            {"apiVersion":"v1","kind":"ConfigMap","name":"b","ownerKind":"Tier","ownerName":"t","index":0},
            {"apiVersion":"v1","kind":"ConfigMap","name":"a","ownerKind":"Tier","ownerName":"t","index":0},
            {"apiVersion":"v1","kind":"ConfigMap","name":"a","ownerKind":"Tier","ownerName":"u","index":2}
        ]"#;
        let facts = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("owner_references", references)]),
        )
        .unwrap();
        let order: Vec<(&str, usize)> = facts
            .owner_references
            .value
            .iter()
            .map(|reference| (reference.name.as_str(), reference.index))
            .collect();
        assert_eq!(order, vec![("a", 2), ("a", 0), ("b", 0)]);
    }

    #[test]
    fn host_endpoints_and_service_deployments_are_given_as_lists_or_json() {
        let facts = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[
                ("all_interfaces_host_endpoints", "a,b"),
                ("service_deployments", "shop/cart, shop/front"),
            ]),
        )
        .unwrap();
        assert_eq!(
            facts.all_interfaces_host_endpoints.value,
            [HostEndpointFact::named("a"), HostEndpointFact::named("b")]
        );
        assert_eq!(
            facts.values()["service_deployments"],
            serde_json::json!([{"namespace": "shop", "name": "cart"}, {"namespace": "shop", "name": "front"}])
        );
        let facts = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[(
                "all_interfaces_host_endpoints",
                r#"["a", {"name": "b", "node": "n1", "labels": {"role": "edge"}}]"#,
            )]),
        )
        .unwrap();
        assert_eq!(facts.all_interfaces_host_endpoints.value[1].node, "n1");
        let error = Facts::assemble(
            &DiscoveredFacts::default(),
            &overrides(&[("service_deployments", "cart")]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid value `cart` for fact `service_deployments`: expected `namespace/name` items separated by commas, got `cart`"
        );
    }

    #[test]
    fn a_missing_install_method_asks_for_the_flag() {
        let mut overrides = overrides(&[]);
        overrides.install_method = None;
        let error = Facts::assemble(&DiscoveredFacts::default(), &overrides).unwrap_err();
        assert!(matches!(error, FactError::MissingInstallMethod));
    }

    #[test]
    fn an_etcd_datastore_without_a_cluster_is_a_manifest_install() {
        let mut overrides = overrides(&[]);
        overrides.install_method = None;
        let discovered = DiscoveredFacts {
            datastore_type: Some(DatastoreType::EtcdV3),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&discovered, &overrides).unwrap();
        assert_eq!(facts.install_method.value, InstallMethod::Manifest);
        assert_eq!(facts.install_method.origin, FactOrigin::Default);
        assert_eq!(facts.system_namespace.value, "kube-system");
    }
}

mod discovery {
    //! Discovery against the in-memory test datastore, paged two resources at a time (as the real
    //! backends page); the etcd tests cover the real store.

    use super::super::*;
    use crate::datastore::testing::TestStore;
    use crate::resource::{Kind, Resource};

    /// A store holding `resources`, listed two at a time.
    fn store(resources: Vec<Resource>) -> TestStore {
        TestStore::with_resources(resources).page_size(2)
    }

    fn host_endpoint(name: &str, interface: &str) -> Resource {
        let mut resource = Resource::new(Kind::HostEndpoint, name);
        resource.spec = serde_json::json!({"interfaceName": interface, "node": "n"});
        resource
    }

    fn names(endpoints: &Option<Vec<HostEndpointFact>>) -> Vec<String> {
        endpoints
            .iter()
            .flatten()
            .map(|endpoint| endpoint.name.clone())
            .collect()
    }

    #[tokio::test]
    async fn discovery_reads_the_version_and_all_interfaces_host_endpoints_across_pages() {
        let mut information = Resource::new(Kind::ClusterInformation, "default");
        information.spec = serde_json::json!({"calicoVersion": "v3.26.4", "datastoreReady": true});
        let mut labelled = host_endpoint("b-all", "*");
        labelled
            .metadata
            .labels
            .insert("role".into(), "edge".into());
        let mut automatic = host_endpoint("n-auto-hep", "*");
        automatic.metadata.labels.insert(
            "projectcalico.org/created-by".into(),
            "calico-kube-controllers".into(),
        );
        let store = store(vec![
            information,
            host_endpoint("d-all", "*"),
            host_endpoint("a-eth0", "eth0"),
            labelled,
            host_endpoint("c-eth1", "eth1"),
            host_endpoint("e-all", "*"),
            automatic,
        ]);
        let discovered = discover_facts(&store).await.unwrap();
        assert_eq!(discovered.installed_version, Some(Release::new(3, 26, 4)));
        assert_eq!(discovered.datastore_type, Some(DatastoreType::EtcdV3));
        assert_eq!(
            names(&discovered.all_interfaces_host_endpoints),
            ["b-all", "d-all", "e-all"],
            "automatic host endpoints are not the ones to replace"
        );
        let first = &discovered.all_interfaces_host_endpoints.unwrap()[0];
        assert_eq!(first.node, "n");
        assert_eq!(first.labels["role"], "edge");
    }

    #[tokio::test]
    async fn a_missing_cluster_information_leaves_the_version_unknown() {
        let store = store(vec![]);
        let discovered = discover_facts(&store).await.unwrap();
        assert_eq!(discovered.installed_version, None);
        let overrides = FactOverrides {
            install_method: Some(InstallMethod::Operator),
            ..FactOverrides::default()
        };
        let error = Facts::assemble(&discovered, &overrides).unwrap_err();
        assert!(matches!(error, FactError::MissingInstalledVersion));
    }
}

mod definitions {
    use super::super::*;

    fn operator_facts() -> Facts {
        let overrides = FactOverrides {
            from: Some("v3.20.1".parse().unwrap()),
            install_method: Some(InstallMethod::Operator),
            ..FactOverrides::default()
        };
        Facts::assemble(&DiscoveredFacts::default(), &overrides).unwrap()
    }

    #[test]
    fn the_plan_format_lists_the_facts_in_the_order_of_the_list() {
        let facts = operator_facts();
        let json = serde_json::to_value(&facts).unwrap();
        let names: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let shown: Vec<&str> = FACT_NAMES
            .iter()
            .copied()
            .filter(|name| {
                ![
                    "helm_release_namespace",
                    "etcd_endpoints",
                    "calico_api_group",
                ]
                .contains(name)
            })
            .collect();
        assert_eq!(names, shown);
        let names: Vec<&str> = facts.shown().iter().map(|(name, ..)| *name).collect();
        assert_eq!(
            names, shown,
            "the plan's facts table shows what the plan holds"
        );
        assert_eq!(
            facts.values().len(),
            FACT_NAMES.len(),
            "templates see every fact"
        );
        let error = serde_json::from_value::<Facts>(serde_json::json!({})).unwrap_err();
        assert_eq!(error.to_string(), "missing field `installed_version`");
        let mut unknown = json.clone();
        unknown["colour"] = serde_json::json!({"value": "red", "origin": "flag"});
        assert!(serde_json::from_value::<Facts>(unknown).is_err());
    }

    #[test]
    fn every_fixed_value_of_a_fact_is_one_set_accepts_and_others_are_refused_naming_them() {
        let with_values: Vec<&FactDefinition> = FACTS
            .iter()
            .filter(|fact| !fact.values.is_empty())
            .collect();
        assert_eq!(with_values.len(), 5, "{with_values:?}");
        for fact in with_values {
            for value in fact.values {
                let mut facts = operator_facts();
                facts.set(fact.name, value).unwrap();
                assert_eq!(fact.origin(&facts), FactOrigin::Flag);
                let shown = match &facts.values()[fact.name] {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                assert_eq!(shown, *value);
            }
            let error = operator_facts().set(fact.name, "other").unwrap_err();
            let expected = crate::resource::validate::quote_list(fact.values);
            assert!(
                error.to_string().ends_with(&format!("expected {expected}")),
                "{error}"
            );
        }
    }

    #[test]
    fn discovery_is_named_once_per_fact() {
        let from = |discovery: Discovery| -> Vec<&str> {
            FACTS
                .iter()
                .filter(|fact| fact.discovery == discovery)
                .map(|fact| fact.name)
                .collect()
        };
        assert_eq!(
            from(Discovery::Datastore),
            [
                "installed_version",
                "datastore_type",
                "all_interfaces_host_endpoints",
                "alp_enabled",
                "calico_api_group"
            ]
        );
        assert_eq!(from(Discovery::Configuration), ["etcd_endpoints"]);
        assert_eq!(
            from(Discovery::Never),
            ["system_namespace", "manifest_base_url", "mesh_version"]
        );
        let discovered = DiscoveredFacts {
            installed_version: Some("v3.26.4".parse().unwrap()),
            alp_enabled: Some(true),
            cluster: Some(ClusterFacts {
                install_method: Some(InstallMethod::Helm),
                ..ClusterFacts::default()
            }),
            ..DiscoveredFacts::default()
        };
        let facts = Facts::assemble(&discovered, &FactOverrides::default()).unwrap();
        for fact in FACTS {
            let expected = match fact.name {
                "installed_version"
                | "alp_enabled"
                | "install_method"
                | "owner_references"
                | "service_deployments" => FactOrigin::Discovered,
                _ => FactOrigin::Default,
            };
            assert_eq!(fact.origin(&facts), expected, "{}", fact.name);
        }
    }
}
