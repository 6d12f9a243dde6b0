//! Upgrade runs against an etcd with RBAC: a user whose role covers only `/calico/` can take the
//! lock and mirror the checkpoint (both live under `/calico/netctl/`), and the etcd password is
//! written nowhere — not in the state directory, not in the datastore. A secret written into a
//! step's environment is kept nowhere either: plans keep only its name, the program gets it from
//! netctl's own environment.

use crate::exec_common::*;
use crate::support::snapshot::netctl_snapshot;
use crate::support::{AuthSetup, EtcdServer};

fn files_under(directory: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_role_limited_to_calico_runs_an_upgrade_and_no_password_is_written_anywhere() {
    let auth = AuthSetup::default();
    let etcd = EtcdServer::builder().auth(auth.clone()).start();
    // Seeding needs the admin; netctl runs as the limited user of the config file.
    seed(&etcd);
    let operator = Operator::new(&etcd);
    assert!(
        operator.config().contains(&auth.password),
        "the config carries the password"
    );
    let log = operator.home().join("log.txt");
    let mut secret_env = step(
        "pre/with-token",
        "A program that needs a token",
        action(
            "exec",
            serde_json::json!({"command": ["sh", "-c", format!("echo \"$MODE $API_TOKEN\" >> '{}'", log.display())], "env": {"API_TOKEN": "token-value-42", "MODE": "plain"}}),
        ),
    );
    secret_env.retry = None;
    let plan = plan(vec![
        secret_env,
        step(
            "pre/gate",
            "Gate",
            action("pause", serde_json::json!({"message": "go?"})),
        ),
        step(
            "pre/label-h1",
            "Label h1",
            action(
                "resource.label",
                serde_json::json!({"kind": "HostEndpoint", "name": "h1", "key": "upgrade", "value": "yes"}),
            ),
        ),
    ]);
    let plan_file = operator.write_plan(&plan);
    // The plan keeps the variable's name only: without it in netctl's environment the run is
    // refused before anything runs.
    let refused = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    netctl_snapshot!(&refused);
    let secret = [("API_TOKEN", "token-value-42")];
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &secret,
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    assert!(
        mirrored_checkpoint(&etcd).is_some(),
        "the limited user mirrored the checkpoint"
    );
    let done = operator.run(&["upgrade", "apply", "--resume", "--yes"], &secret);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "plain token-value-42\n",
        "the program inherited the secret"
    );
    std::fs::remove_file(&log).unwrap();

    for file in files_under(&operator.state_dir()) {
        let content = std::fs::read(&file).unwrap();
        let content = String::from_utf8_lossy(&content);
        for secret in [auth.password.as_str(), "token-value-42"] {
            assert!(
                !content.contains(secret),
                "`{secret}` is in {}",
                file.display()
            );
        }
    }
    let dump = String::from_utf8_lossy(&etcd.dump_prefix_bytes("")).into_owned();
    assert!(
        !dump.contains(&auth.password),
        "the etcd password is in etcd"
    );
    // The mirrored checkpoint is compressed: look inside it too.
    let mirrored = netctl_values_text(&etcd);
    assert!(mirrored.contains("pre/with-token"), "{mirrored}");
    for secret in [auth.password.as_str(), "token-value-42"] {
        assert!(
            !mirrored.contains(secret),
            "`{secret}` is in the mirrored checkpoint"
        );
    }

    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    assert!(!journal.contains("token-value-42"), "{journal}");
    assert!(journal.contains("API_TOKEN='<redacted>'"), "{journal}");
    assert!(journal.contains("MODE=plain"), "{journal}");
}

/// A datastore failure leaves nothing of the file behind. The failure is real: etcd refuses the
/// policy write because the role may only read policies. The three documents are one batch, one
/// transaction, so etcd refuses all of it and nothing needs undoing (a failure in a later batch
/// undoing earlier ones is in `batched_write_failures.rs`).
#[test]
fn a_file_that_fails_half_way_is_put_back_as_it_was() {
    let etcd = EtcdServer::builder().auth(AuthSetup::default()).start();
    let root = etcd.as_user("root", "root-pw");
    let role = AuthSetup::default().role;
    let resources = "/calico/resources/v3/projectcalico.org/";
    // Narrow the role: read everything under /calico/, write host endpoints and netctl's own keys.
    root.run(&[
        "role",
        "revoke-permission",
        &role,
        "--prefix=true",
        "/calico/",
    ]);
    root.run(&[
        "role",
        "grant-permission",
        &role,
        "--prefix=true",
        "read",
        "/calico/",
    ]);
    for prefix in [
        format!("{resources}hostendpoints/"),
        "/calico/netctl/".to_string(),
    ] {
        root.run(&[
            "role",
            "grant-permission",
            &role,
            "--prefix=true",
            "readwrite",
            &prefix,
        ]);
    }
    let existing = r#"{"kind":"HostEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"node1-eth0","uid":"7e1c","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"node":"node1","interfaceName":"eth0","expectedIPs":["10.0.0.1"]}}"#;
    etcd.put(&format!("{resources}hostendpoints/node1-eth0"), existing);
    let before = etcd
        .get(&format!("{resources}hostendpoints/node1-eth0"))
        .unwrap();

    let operator = Operator::new(&etcd);
    let file = operator.netctl.write_file(
        "batch.yaml",
        "apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node2-eth0}
spec: {node: node2, interfaceName: eth0}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0, labels: {zone: a}}
spec: {node: node1, interfaceName: eth0, expectedIPs: [10.0.0.9]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-web}
spec: {selector: has(web)}
",
    );
    let output = operator.run(&["apply", "-f", file.to_str().unwrap()], &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            // Writes go in batches of one kind: the host endpoints' batch is written, the
            // policy's is refused, and the host endpoints are put back.
            "error: a write failed, and the 2 resource(s) written before it were put back as they were: cannot apply GlobalNetworkPolicy(allow-web): permission denied by the datastore for create"
        ),
        "{stderr}"
    );
    assert!(
        etcd.get(&format!("{resources}hostendpoints/node2-eth0"))
            .is_none(),
        "the new host endpoint was not written"
    );
    let restored: serde_json::Value = serde_json::from_str(
        &etcd
            .get(&format!("{resources}hostendpoints/node1-eth0"))
            .unwrap(),
    )
    .unwrap();
    let before: serde_json::Value = serde_json::from_str(&before).unwrap();
    assert_eq!(
        restored["spec"], before["spec"],
        "the changed one has its old spec"
    );
    assert_eq!(restored["metadata"], before["metadata"]);
    assert!(
        etcd.get(&format!(
            "{resources}globalnetworkpolicies/default.allow-web"
        ))
        .is_none()
    );

    // `create` refuses a file naming an existing resource before writing any of it.
    let output = operator.run(&["create", "-f", file.to_str().unwrap()], &[]);
    netctl_snapshot!(&output);
    assert!(
        etcd.get(&format!("{resources}hostendpoints/node2-eth0"))
            .is_none()
    );
}
