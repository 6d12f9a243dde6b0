//! Long lists through the binary against a real etcd: several pages (the first of 1000, the next
//! grown to the rest), read ahead while printing, with only the table's fields decoded. Every format
//! must print every resource, in key order, with the cells the whole resource gives; a list entry
//! must be the document a get by name prints.

use crate::support::{EtcdServer, Netctl, ok};
use etcd_client::{Client, Txn, TxnOp};
use serde_json::{Value, json};

const ROOT: &str = "/calico/resources/v3/projectcalico.org";
const COUNT: usize = 2_500;

fn host_endpoint(index: usize) -> Value {
    let mut spec = json!({
        "node": format!("node-{:03}", index % 700),
        "interfaceName": if index.is_multiple_of(2) { "*" } else { "eth0" },
        "expectedIPs": [format!("10.0.{}.{}", index / 256, index % 256)],
        "ports": [{"name": "ssh", "port": 22, "protocol": "TCP"}],
    });
    if index.is_multiple_of(3) {
        spec["profiles"] = json!(["p1", "projectcalico-default-allow"]);
    }
    let zone = ["a", "b", "c"][index % 3];
    json!({
        "apiVersion": "projectcalico.org/v3",
        "kind": "HostEndpoint",
        "metadata": {
            "name": format!("hep-{index:05}"),
            "uid": format!("uid-{index}"),
            "labels": {"zone": zone, "on": "yes"},
        },
        "spec": spec,
    })
}

/// Stores the host endpoints, 100 to a transaction.
fn load(etcd: &EtcdServer) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = Client::connect([etcd.endpoint()], None).await.unwrap();
        let indexes: Vec<usize> = (0..COUNT).collect();
        for chunk in indexes.chunks(100) {
            let puts: Vec<TxnOp> = chunk
                .iter()
                .map(|index| {
                    let key = format!("{ROOT}/hostendpoints/hep-{index:05}");
                    TxnOp::put(key, host_endpoint(*index).to_string(), None)
                })
                .collect();
            client.txn(Txn::new().and_then(puts)).await.unwrap();
        }
    });
}

/// A table's rows, cells split on runs of spaces (no cell here holds a space).
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .filter(|line| !line.is_empty())
        .map(|line| line.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn a_long_list_prints_every_resource_in_every_format() {
    let etcd = EtcdServer::start();
    load(&etcd);

    let document: Value = serde_json::from_str(&ok(Netctl::etcd(&etcd)
        .args(["get", "hep", "-o", "json"])
        .run()))
    .unwrap();
    let items = document["items"].as_array().unwrap();
    assert_eq!(items.len(), COUNT);
    for (index, item) in items.iter().enumerate() {
        let stored = host_endpoint(index);
        assert_eq!(item["metadata"]["name"], stored["metadata"]["name"]);
        // A document is the whole resource.
        assert_eq!(item["metadata"]["uid"], stored["metadata"]["uid"]);
        assert_eq!(item["spec"], stored["spec"]);
    }
    let revision = document["metadata"]["resourceVersion"].as_str().unwrap();

    // The wide table: every cell as the whole resource gives it, though only five fields were read.
    let wide = rows(&ok(Netctl::etcd(&etcd)
        .args(["get", "hep", "-o", "wide"])
        .run()));
    assert_eq!(wide.len(), COUNT);
    for (row, item) in wide.iter().zip(items) {
        let spec = &item["spec"];
        let mut expected = vec![
            item["metadata"]["name"].as_str().unwrap().to_string(),
            spec["node"].as_str().unwrap().to_string(),
            spec["interfaceName"].as_str().unwrap().to_string(),
            spec["expectedIPs"][0].as_str().unwrap().to_string(),
        ];
        if let Some(profiles) = spec["profiles"].as_array() {
            let names: Vec<&str> = profiles.iter().filter_map(Value::as_str).collect();
            expected.push(names.join(","));
        }
        assert_eq!(row, &expected);
    }

    // A selector reads the labels, which a plain table does not.
    let zone_a = rows(&ok(Netctl::etcd(&etcd)
        .args(["get", "hep", "-l", "zone == 'a'"])
        .run()));
    assert_eq!(zone_a.len(), COUNT.div_ceil(3));
    assert!(zone_a.iter().all(|row| {
        let index: usize = row[0]["hep-".len()..].parse().unwrap();
        index.is_multiple_of(3)
    }));

    let names = ok(Netctl::etcd(&etcd).args(["get", "hep", "-o", "name"]).run());
    let expected: String = (0..COUNT)
        .map(|index| format!("hostendpoint/hep-{index:05}\n"))
        .collect();
    assert_eq!(names, expected);

    // YAML: each list entry is the document a get by name prints, shifted under `- `.
    let yaml = ok(Netctl::etcd(&etcd).args(["get", "hep", "-o", "yaml"]).run());
    assert!(yaml.starts_with("apiVersion: projectcalico.org/v3\nitems:\n- apiVersion:"));
    assert!(yaml.ends_with(&format!(
        "kind: HostEndpointList\nmetadata:\n  resourceVersion: '{revision}'\n"
    )));
    assert_eq!(yaml.matches("\n- apiVersion: ").count(), COUNT);
    for index in [0, 999, 1000, 1001, COUNT - 1] {
        let name = format!("hep-{index:05}");
        let alone = ok(Netctl::etcd(&etcd)
            .args(["get", "hep", &name, "-o", "yaml"])
            .run());
        let entry: String = alone
            .lines()
            .enumerate()
            .map(|(line, text)| format!("{}{text}\n", if line == 0 { "- " } else { "  " }))
            .collect();
        assert!(yaml.contains(&entry), "{name}: {entry}");
    }
}

/// Stored values a decoded value would normalize (escapes, numbers at the edges, a repeated key,
/// keys out of order, YAML 1.1 words, empty collections), a status, and a policy in the tiered
/// layout without its name annotation: every list entry, in JSON and YAML, is still the document
/// a get by name prints (which decodes the value whole), though a list prints from the stored text.
#[test]
fn list_entries_printed_from_stored_text_are_the_documents_gets_print() {
    let etcd = EtcdServer::start();
    let stored = [
        (
            "hostendpoints/tricky-1",
            r#"{"kind":"HostEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"tricky-1","uid":"u1","labels":{"on":"yes"},"selfLink":"/x","generation":3},"spec":{"node":"n1","text":"\u00fc\ud83d\ude00 q\"\\\/\n\t\u0001","numbers":[0,-0,1.0,-1.5e-7,1e300,18446744073709551615,123456789012345678901234567890],"node":"n2","words":["yes","no","on","0400","~","","- x","a: b","multi\nline\n"],"empty":{},"none":[],"nested":[[[]],[1,[2,{}]]]}}"#,
        ),
        (
            "hostendpoints/tricky-2",
            "{\n  \"apiVersion\" : \"projectcalico.org/v3\",\n  \"kind\" : \"HostEndpoint\",\n  \"metadata\" : { \"name\" : \"tricky-2\" },\n  \"spec\" : null,\n  \"status\" : { \"zeta\" : 1, \"alpha\" : [ \"off\" ] }\n}\n",
        ),
        (
            "hostendpoints/tricky-3",
            r#"{"apiVersion":"projectcalico.org/v3","kind":"HostEndpoint","metadata":{"name":"tricky-3"}}"#,
        ),
        (
            "globalnetworkpolicies/default.tiered",
            r#"{"apiVersion":"projectcalico.org/v3","kind":"GlobalNetworkPolicy","metadata":{"name":"default.tiered"},"spec":{"tier":"default","order":10,"selector":"all()","types":["Ingress"]}}"#,
        ),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = Client::connect([etcd.endpoint()], None).await.unwrap();
        for (key, value) in stored {
            client
                .put(format!("{ROOT}/{key}"), value, None)
                .await
                .unwrap();
        }
    });
    for (kind, names) in [
        ("hep", &["tricky-1", "tricky-2", "tricky-3"][..]),
        ("gnp", &["tiered"][..]),
    ] {
        let json = ok(Netctl::etcd(&etcd).args(["get", kind, "-o", "json"]).run());
        let yaml = ok(Netctl::etcd(&etcd).args(["get", kind, "-o", "yaml"]).run());
        for name in names {
            let alone = ok(Netctl::etcd(&etcd)
                .args(["get", kind, name, "-o", "json"])
                .run());
            let entry: Vec<String> = alone.lines().map(|line| format!("    {line}")).collect();
            assert!(json.contains(&entry.join("\n")), "{name}: {json}");
            let alone = ok(Netctl::etcd(&etcd)
                .args(["get", kind, name, "-o", "yaml"])
                .run());
            let entry: String = alone
                .lines()
                .enumerate()
                .map(|(line, text)| format!("{}{text}\n", if line == 0 { "- " } else { "  " }))
                .collect();
            assert!(yaml.contains(&entry), "{name}: {yaml}");
        }
    }
}
