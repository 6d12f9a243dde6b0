//! Cross-checks the in-process API server (`support::kube_api`) with the real `kubectl`: if kubectl
//! can list, read and server-side apply against it, the protocol netctl is tested with is the one
//! real clients speak. kubectl is required; a missing one fails the test with an install hint.
//! `--validate=false` because the server publishes no OpenAPI documents, which client-side
//! validation downloads.

use std::process::Command;

use crate::support::{KubeApiServer, find_program};
use serde_json::json;

fn kubectl(server: &KubeApiServer, args: &[&str], input: Option<&str>) -> (bool, String, String) {
    let program = find_program("kubectl", "apt-get install kubernetes-client");
    let home = server.directory().join("kubectl-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("KUBECONFIG", server.kubeconfig_path())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("run kubectl");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        if let Some(input) = input {
            stdin.write_all(input.as_bytes()).unwrap();
        }
    }
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn kubectl_gets_and_server_side_applies_against_the_test_server() {
    let server = KubeApiServer::start();
    server.put(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "calico-system"}}),
    );
    server.put(
        json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
        "metadata": {"name": "default-pool"}, "spec": {"cidr": "10.244.0.0/16"}}),
    );

    let (ok, stdout, stderr) = kubectl(&server, &["version", "-o", "json"], None);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("\"minor\": \"33\""), "{stdout}");

    let (ok, stdout, stderr) = kubectl(&server, &["get", "namespaces", "-o", "name"], None);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "namespace/calico-system\n");

    let (ok, stdout, stderr) = kubectl(
        &server,
        &[
            "get",
            "ippools.crd.projectcalico.org",
            "default-pool",
            "-o",
            "jsonpath={.spec.cidr}",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "10.244.0.0/16");

    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: calico-config, namespace: calico-system}\ndata: {mtu: '1440'}\n";
    let (ok, stdout, stderr) = kubectl(
        &server,
        &["apply", "--server-side", "--validate=false", "-f", "-"],
        Some(manifest),
    );
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("configmap/calico-config serverside-applied"),
        "{stdout}"
    );
    let stored = server
        .get("v1", "configmaps", "calico-system", "calico-config")
        .unwrap();
    assert_eq!(stored["data"]["mtu"], "1440");
    assert_eq!(
        server.owners("v1", "configmaps", "calico-system", "calico-config")[".data.mtu"],
        "kubectl"
    );

    // Another manager's change is a conflict for kubectl too, until it forces.
    let changed = manifest.replace("1440", "1450");
    server.apply_as(
        "netctl",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "calico-config", "namespace": "calico-system"}, "data": {"mtu": "1500"}}),
    );
    let (ok, _, stderr) = kubectl(
        &server,
        &["apply", "--server-side", "--validate=false", "-f", "-"],
        Some(&changed),
    );
    assert!(!ok);
    assert!(stderr.contains("conflict with \"netctl\""), "{stderr}");
    let (ok, _, stderr) = kubectl(
        &server,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--validate=false",
            "-f",
            "-",
        ],
        Some(&changed),
    );
    assert!(ok, "{stderr}");
    let stored = server
        .get("v1", "configmaps", "calico-system", "calico-config")
        .unwrap();
    assert_eq!(stored["data"]["mtu"], "1450");

    let (ok, stdout, stderr) =
        kubectl(&server, &["get", "configmaps", "-n", "calico-system"], None);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("calico-config"), "{stdout}");
}
