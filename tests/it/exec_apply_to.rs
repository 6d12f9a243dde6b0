//! `upgrade apply --to` plans from the built-in runbooks against the connected etcd's facts and runs
//! that plan through the executor: the dry-run is total (Kubernetes requests described, nothing
//! changed), and a real run downloads through a `file://` base URL, stops at the runbook's gate, and on
//! resume fails cleanly at the first Kubernetes step, since no cluster is configured.

use crate::exec_common::*;
use crate::support::EtcdServer;
use crate::support::snapshot::netctl_snapshot;

#[test]
fn apply_to_plans_with_the_runbooks_and_runs_through_the_executor() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let mirror = operator.home().join("mirror");
    operator.netctl.write_file(
        "mirror/v3.29.2/manifests/calico-etcd.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calico-config\n  namespace: kube-system\ndata:\n  etcd_endpoints: \"http://<ETCD_IP>:<ETCD_PORT>\"\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: calico-node\n  namespace: kube-system\n",
    );
    operator.netctl.write_file(
        "mirror/v3.29.2/manifests/calico.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: calico-node\n  namespace: kube-system\n",
    );
    let base = format!("manifest_base_url=file://{}", mirror.display());
    let args = [
        "upgrade",
        "apply",
        "--to",
        "v3.29.2",
        "--install-method",
        "manifest",
        "--set",
        &base,
        // No cluster here: the run goes as far as it can, the Kubernetes steps are skipped by hand.
        "--skip-preflight",
        "cluster",
    ];

    let before = etcd.dump_prefix_bytes("");
    let mut dry_run = args.to_vec();
    dry_run.push("--dry-run");
    let output = operator.run(&dry_run, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        before,
        etcd.dump_prefix_bytes(""),
        "the dry-run changed etcd"
    );
    let transcript = text(&output.stdout);
    assert!(
        transcript.starts_with("dry run of plan sha256:")
            && transcript.contains("(upgrade v3.26.4 → v3.29.2,"),
        "{transcript}"
    );
    assert!(
        transcript.contains("would download file://"),
        "{transcript}"
    );
    assert!(!operator.state_dir().exists());

    let stopped = operator.run(&args, &[]);
    netctl_snapshot!(&stopped);
    let mut downloaded: Vec<String> = std::fs::read_dir(operator.state_dir().join("files"))
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    downloaded.sort();
    assert_eq!(
        downloaded,
        ["upgrade.yaml", "upgrade.yaml.original"],
        "the manifest was downloaded, and overlaid with the etcd endpoints, before the gate"
    );
    let overlaid =
        std::fs::read_to_string(operator.state_dir().join("files/upgrade.yaml")).unwrap();
    assert!(overlaid.contains(&etcd.endpoint()), "{overlaid}");

    let resumed = operator.run(
        &[
            "upgrade",
            "apply",
            "--resume",
            "--yes",
            "--skip-preflight",
            "cluster",
        ],
        &[],
    );
    let resumed_text = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(1), "{resumed_text}");
    assert!(
        resumed_text.contains("needs the Kubernetes API, and no cluster is configured"),
        "{resumed_text}"
    );
    assert!(
        resumed_text
            .contains("then `netctl upgrade apply --resume --skip etcd-upgrade/apply-manifest`"),
        "{resumed_text}"
    );
    let status = status_json(&operator);
    assert_eq!(status["checkpoint"]["run"]["state"], "failed", "{status}");
    assert!(status["lock"].is_null());
}
