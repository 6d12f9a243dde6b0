//! YAML as other tools read it, through the binary against a real etcd: documents written with YAML
//! 1.1 scalars are stored as upstream stores them (a label `yes` is "true" and selected by
//! `== 'true'`), and what `get -o yaml` prints reads back as the same strings in PyYAML, a YAML 1.1
//! reader (as kubectl's and calicoctl's go-yaml v2 is).
//!
//! PyYAML is a test prerequisite (Debian 12: `apt-get install python3-yaml`); a machine without it
//! fails these tests with that hint, never skips them.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::{EtcdServer, Netctl, find_program, ok};
use serde_json::{Value, json};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";

#[test]
fn labels_written_with_yaml_1_1_scalars_are_stored_and_selected_as_upstream() {
    let etcd = EtcdServer::start();
    let document = "apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata:
  name: reflectors
  labels:
    route-reflector: yes
    num: 123
    mode: 0400
spec:
  nets: [10.0.0.0/8]
";
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(document)
        .run());
    let stored = etcd
        .get_json(&format!("{ROOT}/globalnetworksets/reflectors"))
        .unwrap();
    assert_eq!(
        stored["metadata"]["labels"],
        json!({"route-reflector": "true", "num": "123", "mode": "256"})
    );
    let selected = ok(Netctl::etcd(&etcd)
        .args([
            "get",
            "globalnetworksets",
            "-l",
            "route-reflector == 'true'",
            "-o",
            "name",
        ])
        .run());
    assert_eq!(selected.trim(), "globalnetworkset/reflectors");
}

/// Reads YAML with PyYAML (`yaml.safe_load_all`) and returns the documents as JSON.
fn pyyaml(text: &str) -> Vec<Value> {
    let python = find_program("python3", "apt-get install python3-yaml");
    let mut child = Command::new(python)
        .args([
            "-c",
            "import json, sys\ntry:\n    import yaml\nexcept ImportError:\n    sys.exit('PyYAML is missing: install it with `apt-get install python3-yaml`')\nprint(json.dumps(list(yaml.safe_load_all(sys.stdin)), default=str))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "PyYAML could not read the output (needs `apt-get install python3-yaml`): {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn get_output_reads_back_as_the_same_strings_in_a_yaml_1_1_reader() {
    let etcd = EtcdServer::start();
    let tricky = [
        "no",
        "on",
        "yes",
        "y",
        "Off",
        "1e3",
        "0400",
        "~",
        "null",
        "2024-01-01",
        "190:20:30",
        "0x1F",
        "1_000",
        ".inf",
        "=",
    ];
    // Annotations, since label values cannot hold `~` or `:`.
    let annotations: serde_json::Map<String, Value> = tricky
        .iter()
        .enumerate()
        .map(|(index, value)| (format!("l{index}"), json!(value)))
        .collect();
    let document = json!({
        "apiVersion": "projectcalico.org/v3",
        "kind": "GlobalNetworkSet",
        "metadata": {"name": "tricky", "annotations": annotations},
        "spec": {"nets": ["10.0.0.0/8"]}
    });
    ok(Netctl::etcd(&etcd)
        .args(["apply", "-f", "-"])
        .stdin(document.to_string())
        .run());
    for args in [
        &["get", "globalnetworkset", "tricky", "-o", "yaml"][..],
        &[
            "get",
            "globalnetworkset",
            "tricky",
            "-o",
            "yaml",
            "--export",
        ][..],
        &["get", "globalnetworksets", "-o", "yaml"][..],
    ] {
        let output = ok(Netctl::etcd(&etcd).args(args).run());
        let documents = pyyaml(&output);
        let object = match &documents[0]["items"] {
            Value::Array(items) => items[0].clone(),
            _ => documents[0].clone(),
        };
        assert_eq!(
            object["metadata"]["annotations"],
            Value::Object(annotations.clone()),
            "{args:?}:\n{output}"
        );
        // netctl reads its own output back the same way.
        let again = netctl::yaml::read_values(&output).unwrap();
        assert_eq!(again.len(), documents.len());
    }
}
