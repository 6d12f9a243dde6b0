//! Upgrade runs against an etcd with RBAC: a user whose role covers only `/calico/` can take the
//! lock and mirror the checkpoint (both live under `/calico/netctl/`), and the etcd password is
//! written nowhere — not in the state directory, not in the datastore. Secret-looking values of a
//! step's environment are redacted in the journal.

mod exec_common;
mod support;

use exec_common::*;
use support::{AuthSetup, EtcdServer};

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
            serde_json::json!({"command": ["sh", "-c", format!("echo \"$MODE\" >> '{}'", log.display())], "env": {"API_TOKEN": "token-value-42", "MODE": "plain"}}),
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
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(1), "{}", text(&stopped.stderr));
    assert!(
        etcd.get(CHECKPOINT_KEY).is_some(),
        "the limited user mirrored the checkpoint"
    );
    let done = operator.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "plain\n");

    for file in files_under(&operator.state_dir()) {
        let content = std::fs::read(&file).unwrap();
        let content = String::from_utf8_lossy(&content);
        assert!(
            !content.contains(&auth.password),
            "the etcd password is in {}",
            file.display()
        );
    }
    let dump = String::from_utf8_lossy(&etcd.dump_prefix_bytes("")).into_owned();
    assert!(
        !dump.contains(&auth.password),
        "the etcd password is in etcd"
    );

    let journal = std::fs::read_to_string(operator.state_dir().join("journal.jsonl")).unwrap();
    assert!(!journal.contains("token-value-42"), "{journal}");
    assert!(journal.contains("API_TOKEN='<redacted>'"), "{journal}");
    assert!(journal.contains("MODE=plain"), "{journal}");
}
