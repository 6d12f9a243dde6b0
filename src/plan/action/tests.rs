//! Building actions from runbook steps: names, arguments, the checks serde cannot express, and
//! the one description of each action.

use std::time::Duration;

use super::*;

#[test]
fn every_name_round_trips_through_its_variant() {
    assert_eq!(
        Action::from_parts("pause", serde_json::json!({"message": "go?"}))
            .unwrap()
            .name(),
        "pause"
    );
    let label = Action::from_parts(
        "resource.label",
        serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "k", "value": ""}),
    )
    .unwrap();
    let text = serde_json::to_string(&label).unwrap();
    assert_eq!(
        text,
        r#"{"action":"resource.label","with":{"kind":"HostEndpoint","name":"h1","key":"k","value":"","overwrite":false}}"#
    );
    assert_eq!(serde_json::from_str::<Action>(&text).unwrap(), label);
}

#[test]
fn unknown_actions_and_fields_are_refused() {
    assert_eq!(
        Action::from_parts("shell", serde_json::json!({}))
            .unwrap_err()
            .to_string(),
        "unknown action `shell`"
    );
    let error = Action::from_parts(
        "pause",
        serde_json::json!({"message": "x", "colour": "red"}),
    )
    .unwrap_err();
    assert!(matches!(error, ActionError::InvalidArguments { .. }));
    let error =
        Action::from_parts("check", serde_json::json!({"fact": "alp_enabled"})).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid arguments for action `check`: give exactly one of `equals` and `matches`"
    );
}

#[test]
fn an_owner_reference_is_restored_only_to_a_known_v3_owner() {
    let with = |api_version: &str, kind: &str| {
        serde_json::json!({
            "object": {"api_version": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n"},
            "owner": {"api_version": api_version, "kind": kind, "name": "t"},
            "controller": true,
            "block_owner_deletion": null
        })
    };
    let action = Action::from_parts(
        "kube.restore-owner-reference",
        with("projectcalico.org/v3", "Tier"),
    )
    .unwrap();
    assert!(matches!(
        action,
        Action::KubeRestoreOwnerReference(KubeRestoreOwnerReference {
            controller: Some(true),
            block_owner_deletion: None,
            ..
        })
    ));
    let error =
        Action::from_parts("kube.restore-owner-reference", with("apps/v1", "Tier")).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`owner.api_version` must be `projectcalico.org/v3`"),
        "{error}"
    );
    assert!(
        Action::from_parts(
            "kube.restore-owner-reference",
            with("projectcalico.org/v3", "Deployment")
        )
        .is_err()
    );
}

#[test]
fn waits_restarts_and_label_maps_are_checked_at_plan_time() {
    let invalid = |name: &str, with: serde_json::Value| {
        Action::from_parts(name, with).unwrap_err().to_string()
    };
    assert_eq!(
        invalid("resource.wait", serde_json::json!({"kind": "HostEndpoint"})),
        "invalid arguments for action `resource.wait`: give `names`, a `selector`, or both"
    );
    assert!(
        invalid(
            "resource.wait",
            serde_json::json!({"kind": "HostEndpoint", "selector": "a =="})
        )
        .starts_with("invalid arguments for action `resource.wait`: `selector` is not valid")
    );
    assert_eq!(
        invalid(
            "kube.restart",
            serde_json::json!({"namespace": "n", "kind": "Pod", "name": "p"})
        ),
        "invalid arguments for action `kube.restart`: `kind` must be `Deployment`, `DaemonSet` or `StatefulSet`, got `Pod`"
    );
    assert_eq!(
        invalid(
            "resource.label",
            serde_json::json!({"kind": "Node", "name": "n", "key": "k", "value": "v", "labels": {}})
        ),
        "invalid arguments for action `resource.label`: give either `labels` or one `key` with `value`/`remove`, not both"
    );
    let restart = Action::from_parts(
        "kube.restart",
        serde_json::json!({"namespace": "n", "name": "d"}),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&restart).unwrap(),
        serde_json::json!({"action": "kube.restart",
                           "with": {"namespace": "n", "kind": "Deployment", "name": "d"}})
    );
}

#[test]
fn durations_read_and_print_the_human_way() {
    let exec: Exec =
        serde_json::from_value(serde_json::json!({"command": ["true"], "timeout": "2m"})).unwrap();
    assert_eq!(exec.timeout.0, Duration::from_secs(120));
    assert_eq!(
        serde_json::to_value(exec.timeout).unwrap(),
        serde_json::json!("2m")
    );
}

#[test]
fn documents_written_in_a_runbook_are_read_as_a_files_documents() {
    let with = serde_json::json!({"documents": [{
        "apiVersion": "projectcalico.org/v3", "kind": "Tier",
        "metadata": {"name": "t", "labels": {"reflector": true}},
        "spec": {"Order": 5}
    }]});
    let Action::ResourceApply(documents) = Action::from_parts("resource.apply", with).unwrap()
    else {
        panic!("not a resource.apply");
    };
    let tier = &documents.documents[0];
    assert_eq!(tier.metadata.labels["reflector"], "true");
    assert_eq!(tier.spec["order"], 5);
}
