//! The rest of calicoctl's surface: `version --poll`, the kubectl plugin form (`kubectl-netctl`),
//! `patch --type strategic` and `get -o go-template=` / `go-template-file=`, each against a real
//! etcd (and, for the templates, the real `kubectl` rendering the same object).

use std::io::{BufRead, BufReader};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{EtcdServer, Netctl, Run, Signal, ok, send_signal, wait_for_exit};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";

fn netctl(etcd: &EtcdServer, args: &[&str]) -> Run {
    Netctl::etcd(etcd).args(args).run()
}

fn cluster_runs(etcd: &EtcdServer, version: &str) {
    etcd.put(
        &format!("{ROOT}/clusterinformations/default"),
        format!(
            r#"{{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{{"name":"default","uid":"4b1fbc3e-2a55-4e0c-9d8a-0c3a7c0e2f11","creationTimestamp":"2026-01-01T00:00:00Z"}},"spec":{{"clusterGUID":"1d4a0e6c7a2b4f0e9b3c5d7e8f901234","clusterType":"typha,kdd,k8s,operator,bgp","calicoVersion":"{version}","datastoreReady":true}}}}"#
        ),
    );
}

/// Waits until `lines` holds a line containing `text` (at most 20 s).
fn wait_for_line(lines: &Mutex<Vec<String>>, text: &str) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        if lines.lock().unwrap().iter().any(|line| line.contains(text)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "no line with `{text}` within 20 s: {:?}",
        lines.lock().unwrap()
    );
}

#[test]
fn version_poll_prints_the_cluster_lines_again_only_when_they_change_and_stops_on_ctrl_c() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.31.2");
    let mut command = Netctl::etcd(&etcd);
    command.args(["version", "--poll", "100ms"]);
    let mut child = command.spawn();
    let stdout = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let lines = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                lines.lock().unwrap().push(line.unwrap());
            }
        })
    };
    wait_for_line(&lines, "v3.31.2");
    // Several polls with nothing changed print nothing more.
    std::thread::sleep(Duration::from_millis(400));
    cluster_runs(&etcd, "v3.32.1");
    wait_for_line(&lines, "v3.32.1");
    send_signal(child.id(), Signal::INT).unwrap();
    let run = wait_for_exit(child, Duration::from_secs(10));
    reader.join().unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines = lines.lock().unwrap();
    let cluster: Vec<&str> = lines
        .iter()
        .filter(|line| line.starts_with("Cluster"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        cluster,
        [
            "Cluster Version:   v3.31.2",
            "Cluster Type:      typha,kdd,k8s,operator,bgp",
            "Cluster Version:   v3.32.1",
        ],
        "{lines:?}"
    );
}

#[test]
fn version_poll_zero_reads_once_and_a_bad_duration_is_a_usage_error() {
    let etcd = EtcdServer::start();
    cluster_runs(&etcd, "v3.30.4");
    let once = ok(netctl(&etcd, &["version", "--poll", "0"]));
    assert!(once.contains("Cluster Version:   v3.30.4"), "{once}");
    let bad = netctl(&etcd, &["version", "--poll", "soon"]);
    assert_eq!(bad.code, Some(64), "{}", bad.stderr);
    assert!(bad.stderr.contains("`soon`"), "{}", bad.stderr);
}

#[test]
fn installed_as_kubectl_netctl_it_answers_kubectl_netctl_with_that_name_in_its_help() {
    let prefix = tempfile::tempdir().unwrap();
    crate::support::install_into(prefix.path());
    let link = prefix.path().join("bin/kubectl-netctl");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::Path::new("netctl")
    );
    let kubectl = crate::support::find_program("kubectl", "apt-get install kubernetes-client");
    let path = format!(
        "{}:{}",
        prefix.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // kubectl finds the plugin on PATH and runs it for `kubectl netctl ...`.
    let mut command = Netctl::with_program(&kubectl);
    command.env("PATH", &path).args(["netctl", "get", "--help"]);
    let help = ok(command.run());
    assert!(help.contains("Usage: kubectl netctl get"), "{help}");
    assert!(help.contains("\n  kubectl netctl get nodes"), "{help}");
    assert!(!help.contains("\n  netctl get"), "{help}");
    let mut command = Netctl::with_program(&kubectl);
    command
        .env("PATH", &path)
        .args(["netctl", "version", "--client"]);
    let version = ok(command.run());
    assert!(version.starts_with("Client Version:"), "{version}");
    let mut command = Netctl::with_program(&kubectl);
    command.env("PATH", &path).args(["plugin", "list"]);
    let listed = command.run();
    assert!(
        listed.stdout.contains("kubectl-netctl"),
        "{}{}",
        listed.stdout,
        listed.stderr
    );
    // Run as `netctl`, it stays `netctl`.
    let mut command = Netctl::with_program(prefix.path().join("bin/netctl"));
    command.args(["get", "--help"]);
    let plain = ok(command.run());
    assert!(plain.contains("Usage: netctl get"), "{plain}");
}

/// A policy as a controller stored it: labels, finalizers and owner references on the metadata.
fn stored_policy(etcd: &EtcdServer) {
    etcd.put(
        &format!("{ROOT}/globalnetworkpolicies/default.allow-dns"),
        serde_json::json!({
            "kind": "GlobalNetworkPolicy",
            "apiVersion": "projectcalico.org/v3",
            "metadata": {
                "name": "default.allow-dns",
                "uid": "0b0e8d6c-58c7-4c52-9f0e-2f3b1e7a9d41",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"team": "net", "tier": "base"},
                "finalizers": ["a.example/keep", "b.example/keep"],
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "n1", "uid": "u1"},
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "n2", "uid": "u2"}
                ]
            },
            "spec": {"tier": "default", "order": 100, "selector": "all()", "types": ["Ingress"],
                     "ingress": [{"action": "Allow", "protocol": "UDP", "destination": {"ports": [53]}}]}
        })
        .to_string(),
    );
}

/// What `kubectl patch --local --type strategic` makes of `patch` on a Service carrying the same
/// metadata: apimachinery's strategic merge over the Kubernetes types, the code calicoctl runs.
fn kubectl_strategic(patch: &str) -> serde_json::Value {
    let service = serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": "s", "namespace": "default",
            "labels": {"team": "net", "tier": "base"},
            "finalizers": ["a.example/keep", "b.example/keep"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "n1", "uid": "u1"},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "n2", "uid": "u2"}
            ]
        },
        "spec": {"externalIPs": ["10.0.0.1"]}
    });
    let output = kubectl_local(
        &service,
        &["patch", "--type", "strategic", "-o", "json", "-p", patch],
    );
    serde_json::from_str(&output).unwrap()
}

/// What `kubectl VERB --local -f FILE ARGS` prints for `document` in FILE, without a cluster.
fn kubectl_local(document: &serde_json::Value, verb_and_args: &[&str]) -> String {
    let kubectl = crate::support::find_program("kubectl", "apt-get install kubernetes-client");
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("document.json");
    std::fs::write(&file, document.to_string()).unwrap();
    let (verb, args) = verb_and_args.split_first().expect("a kubectl verb");
    let output = std::process::Command::new(kubectl)
        .env("KUBECONFIG", "/dev/null")
        .args([verb, "--local", "-f"])
        .arg(&file)
        .args(args)
        .output()
        .expect("run kubectl");
    assert!(
        output.status.success(),
        "kubectl: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The policy `stored_policy` writes, after `netctl patch gnp allow-dns FLAGS`, as `get -o json`
/// prints it.
fn patched(etcd: &EtcdServer, flags: &[&str]) -> serde_json::Value {
    stored_policy(etcd);
    ok(netctl(
        etcd,
        &[&["patch", "gnp", "allow-dns"], flags].concat(),
    ));
    serde_json::from_str(&ok(netctl(
        etcd,
        &["get", "gnp", "allow-dns", "-o", "json"],
    )))
    .unwrap()
}

#[test]
fn a_strategic_merge_patch_merges_and_replaces_lists_as_upstream_does() {
    let etcd = EtcdServer::start();
    // v3.29 … v3.31 store a default-tier policy as `default.<name>`, where `stored_policy` puts it.
    cluster_runs(&etcd, "v3.31.2");
    let metadata_patches = [
        r#"{"metadata":{"finalizers":["c.example/keep"]}}"#,
        r#"{"metadata":{"finalizers":["b.example/keep","c.example/keep"]}}"#,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.example/keep"]}}"#,
        r#"{"metadata":{"$setElementOrder/finalizers":["b.example/keep","a.example/keep","c.example/keep"],"finalizers":["c.example/keep"]}}"#,
        r#"{"metadata":{"ownerReferences":[{"uid":"u3","apiVersion":"v1","kind":"ConfigMap","name":"n3"},{"uid":"u1","name":"renamed"}]}}"#,
        r#"{"metadata":{"ownerReferences":[{"uid":"u1","$patch":"delete"}]}}"#,
        r#"{"metadata":{"ownerReferences":[{"uid":"u9","apiVersion":"v1","kind":"ConfigMap","name":"x"},{"$patch":"replace"}]}}"#,
        r#"{"metadata":{"labels":{"$patch":"replace","zone":"a"}}}"#,
        r#"{"metadata":{"labels":{"tier":null,"zone":"a"},"annotations":{"note":"x","gone":null}}}"#,
    ];
    for patch in metadata_patches {
        let ours = patched(&etcd, &["-p", patch]);
        let theirs = kubectl_strategic(patch);
        for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
            assert_eq!(
                ours["metadata"][field], theirs["metadata"][field],
                "`{field}` after {patch}"
            );
        }
    }
    // A list whose field declares no patch strategy is replaced whole: Calico's `spec.types` as
    // the Service's `spec.externalIPs` (every Calico v3 list is such a list).
    let ours = patched(
        &etcd,
        &[
            "-p",
            r#"{"spec":{"types":["Egress"],"egress":[{"action":"Allow"}]}}"#,
        ],
    );
    assert_eq!(ours["spec"]["types"], serde_json::json!(["Egress"]));
    assert_eq!(
        ours["spec"]["ingress"][0]["destination"]["ports"],
        serde_json::json!([53])
    );
    let theirs = kubectl_strategic(r#"{"spec":{"externalIPs":["10.0.0.9"]}}"#);
    assert_eq!(
        theirs["spec"]["externalIPs"],
        serde_json::json!(["10.0.0.9"])
    );

    // `--type merge` keeps RFC 7386: the finalizers are replaced, not merged.
    let merged = patched(
        &etcd,
        &[
            "-t",
            "merge",
            "-p",
            r#"{"metadata":{"finalizers":["c.example/keep"]}}"#,
        ],
    );
    assert_eq!(
        merged["metadata"]["finalizers"],
        serde_json::json!(["c.example/keep"])
    );

    // A directive in a list that is replaced whole is refused, and nothing is written.
    stored_policy(&etcd);
    let before = etcd.dump_prefix_bytes("/calico/");
    let refused = netctl(
        &etcd,
        &[
            "patch",
            "gnp",
            "allow-dns",
            "-p",
            r#"{"spec":{"ingress":[{"$patch":"delete","action":"Allow"}]}}"#,
        ],
    );
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("`spec.ingress` is replaced whole by a strategic merge"),
        "{}",
        refused.stderr
    );
    assert_eq!(etcd.dump_prefix_bytes("/calico/"), before);
}

const POLICIES: &str = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: allow-dns
  labels: {team: net, tier: base}
spec:
  order: 100
  selector: all()
  types: [Ingress, Egress]
  ingress:
    - action: Allow
      protocol: UDP
      destination: {ports: [53]}
    - action: Deny
  egress:
    - action: Allow
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: deny-all
  labels: {team: sec}
spec:
  order: 1000000
  selector: projectcalico.org/namespace == 'prod'
  doNotTrack: true
  applyOnForward: true
  types: [Ingress]
  ingress:
    - action: Deny
";

/// What `kubectl label --local -f FILE x- -o go-template=TEMPLATE` prints: kubectl's own
/// go-template printer over `document` (removing a label that is not there changes nothing).
fn kubectl_template(document: &serde_json::Value, template: &str) -> String {
    kubectl_local(
        document,
        &["label", "x-", "-o", &format!("go-template={template}")],
    )
}

#[test]
fn a_go_template_renders_what_kubectl_renders_for_the_same_object() {
    let etcd = EtcdServer::start();
    let mut apply = Netctl::etcd(&etcd);
    apply.args(["apply", "-f", "-"]).stdin(POLICIES);
    ok(apply.run());

    // One object: the document `-o json` prints, rendered by kubectl and by netctl.
    let document: serde_json::Value = serde_json::from_str(&ok(netctl(
        &etcd,
        &["get", "gnp", "allow-dns", "-o", "json"],
    )))
    .unwrap();
    for template in [
        "{{.metadata.name}}",
        "{{range $key, $value := .metadata.labels}}{{$key}}={{$value}}{{\"\\n\"}}{{end}}",
        "{{.spec.order}} {{.spec.selector}} {{len .spec.ingress}} {{.spec.types}}",
        "{{range .spec.ingress}}{{.action}} {{.protocol}} {{.destination.ports}}{{\"\\n\"}}{{end}}",
        "{{if .spec.doNotTrack}}untracked{{else}}tracked{{end}} {{.spec.applyOnForward}}",
        "{{.spec.ingress}} {{.metadata.labels}}",
        "{{printf \"%-20s|%5v|%q\" .metadata.name .spec.order .spec.selector}}",
        "{{with .spec.egress}}{{len .}} egress rules{{end}} {{index .spec.types 1}}",
    ] {
        let ours = ok(netctl(
            &etcd,
            &[
                "get",
                "gnp",
                "allow-dns",
                "-o",
                &format!("go-template={template}"),
            ],
        ));
        assert_eq!(ours, kubectl_template(&document, template), "{template}");
    }

    // A listing: `.items` of the List document, as kubectl's documented examples range over it.
    // kubectl takes any object with `items` for a list and prints each item on its own, so it
    // gets the same items under another name, and the template ranges over that name.
    let list: serde_json::Value =
        serde_json::from_str(&ok(netctl(&etcd, &["get", "gnp", "-o", "json"]))).unwrap();
    let holder = serde_json::json!({
        "apiVersion": "test.netctl.example/v1", "kind": "Holder",
        "metadata": {"name": "holder", "labels": {"a": "b"}},
        "entries": list["items"]
    });
    for template in [
        "{{range .items}}{{.metadata.name}}{{\"\\n\"}}{{end}}",
        "{{range .items}}{{.metadata.name}}{{\"\\t\"}}{{range .spec.ingress}}{{.action}}{{\", \"}}{{end}}{{\"\\n\"}}{{end}}",
        "{{range $i, $p := .items}}{{$i}}: {{$p.metadata.name}} {{$p.spec.order}}{{\"\\n\"}}{{end}}",
    ] {
        let ours = ok(netctl(
            &etcd,
            &["get", "gnp", "-o", &format!("go-template={template}")],
        ));
        let theirs = kubectl_template(&holder, &template.replace(".items", ".entries"));
        assert_eq!(ours, theirs, "{template}");
    }

    // kubectl's other forms: `-o go-template --template T` and a template file.
    let mut command = Netctl::etcd(&etcd);
    let file = command.write_file("names.tmpl", "{{range .items}}{{.metadata.name}} {{end}}");
    command
        .args(["get", "gnp", "-o"])
        .arg(format!("go-template-file={}", file.display()));
    assert_eq!(ok(command.run()), "allow-dns deny-all ");
    assert_eq!(
        ok(netctl(
            &etcd,
            &[
                "get",
                "gnp",
                "deny-all",
                "-o",
                "go-template",
                "--template",
                "{{.spec.order}}"
            ]
        )),
        "1000000"
    );
    // A template that does not parse, or fails on the data, is an error with Go's words.
    let bad = netctl(&etcd, &["get", "gnp", "-o", "go-template={{.items"]);
    assert_eq!(bad.code, Some(1), "{}", bad.stdout);
    assert!(
        bad.stderr
            .contains("the go-template does not parse: template: output:1:"),
        "{}",
        bad.stderr
    );
    let failing = netctl(
        &etcd,
        &[
            "get",
            "gnp",
            "deny-all",
            "-o",
            "go-template={{.spec.selector.x}}",
        ],
    );
    assert_eq!(failing.code, Some(1), "{}", failing.stdout);
    assert!(
        failing
            .stderr
            .contains("can't evaluate field x in type string"),
        "{}",
        failing.stderr
    );
}
