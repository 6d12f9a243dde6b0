//! `fetch` steps in upgrade runs: over HTTP (a one-file server on loopback), from a mirror directory
//! for air-gapped sites, with the bytes kept in the state directory and their digest registered in
//! the checkpoint; a missing file fails the step with advice; a pinned download (`sha256`) refuses
//! other bytes with nothing written; and a resume keeps what a completed download left — edited at a
//! gate (with and without an overlay), or downloaded again when deleted — and journals it.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use crate::exec_common::*;
use crate::support::EtcdServer;
use crate::support::snapshot::netctl_snapshot;

const MANIFEST: &str = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: calico-node\n";

/// `sha256:<hex>`, as the checkpoint and plans write digests.
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Serves `MANIFEST` for `/calico.yaml` and 404 for anything else, until the test ends.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request_line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // Drain the headers.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok() && line.trim() != "" {
                line.clear();
            }
            let response = if request_line.starts_with("GET /calico.yaml ") {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{MANIFEST}",
                    MANIFEST.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            };
            let _ = stream.write_all(response.as_bytes());
        }
    });
    format!("http://{address}")
}

fn fetch_step(id: &str, url: &str, file: &str) -> netctl::plan::PlannedStep {
    let mut step = step(
        id,
        &format!("Download {file}"),
        action("fetch", serde_json::json!({"url": url, "file": file})),
    );
    step.register = Some(id.replace('/', "_"));
    step
}

#[test]
fn downloads_are_kept_beside_the_checkpoint_with_their_digest() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let server = serve();

    // Online: over HTTP.
    let online = Operator::new(&etcd);
    let plan_file = online.write_plan(&plan(vec![fetch_step(
        "pre/download",
        &format!("{server}/calico.yaml"),
        "v3.29.2/calico.yaml",
    )]));
    let output = online.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let kept = online.state_dir().join("files/v3.29.2/calico.yaml");
    assert_eq!(std::fs::read_to_string(kept).unwrap(), MANIFEST);
    let online_digest = status_json(&online)["checkpoint"]["outputs"]["pre_download"]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(online_digest.starts_with("sha256:"));

    // Air-gapped: every URL is read from `<mirror>/<host>/<path>`, never from the network.
    let offline = Operator::new(&etcd);
    offline
        .netctl
        .write_file("mirror/downloads.example/v3.29.2/calico.yaml", MANIFEST);
    let plan_file = offline.write_plan(&plan(vec![fetch_step(
        "pre/download",
        "https://downloads.example/v3.29.2/calico.yaml",
        "v3.29.2/calico.yaml",
    )]));
    let mirror = offline.home().join("mirror");
    let output = offline.run(
        &[
            "upgrade",
            "apply",
            "--plan",
            plan_file.to_str().unwrap(),
            "--mirror-dir",
            mirror.to_str().unwrap(),
        ],
        &[],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let outputs = &status_json(&offline)["checkpoint"]["outputs"];
    assert_eq!(
        outputs["pre_download"]["sha256"],
        online_digest.as_str(),
        "same bytes"
    );
}

#[test]
fn a_missing_download_fails_the_step_with_advice() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let server = serve();
    let plan_file = operator.write_plan(&plan(vec![fetch_step(
        "pre/http",
        &format!("{server}/missing.yaml"),
        "missing.yaml",
    )]));
    let output = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let message = scrub(&text(&output.stderr), operator.home());
    assert!(
        message.contains(
            "error: step `pre/http` failed after 1 attempt(s): cannot download `http://127.0.0.1:"
        ),
        "{message}"
    );
    assert!(message.contains("the server answered 404"), "{message}");
    assert!(
        message.contains("hint: for an air-gapped site, pass `--mirror-dir DIR`"),
        "{message}"
    );
}

#[test]
fn a_resume_on_another_machine_downloads_again_and_insists_on_the_same_bytes() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let first = Operator::new(&etcd);
    let source = first.netctl.write_file("published/calico.yaml", MANIFEST);
    let plan = plan(vec![
        step(
            "pre/download",
            "Download the manifest",
            action(
                "fetch",
                serde_json::json!({"url": format!("file://{}", source.display()), "file": "upgrade.yaml"}),
            ),
        ),
        step(
            "pre/window",
            "Confirm the window",
            action("pause", serde_json::json!({"message": "go?"})),
        ),
    ]);
    let plan_file = first.write_plan(&plan);
    let stopped = first.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3));

    // The published file changes; a second machine (no local state) tries to resume.
    std::fs::write(&source, format!("{MANIFEST}# edited\n")).unwrap();
    let second = Operator::new(&etcd);
    let refused = second.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert_eq!(refused.status.code(), Some(1));
    netctl_snapshot!(&refused);

    // Put back the original: the second machine downloads it again and finishes the run.
    std::fs::write(&source, MANIFEST).unwrap();
    let resumed = second.run(&["upgrade", "apply", "--resume", "--yes"], &[]);
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(
        std::fs::read_to_string(second.state_dir().join("files/upgrade.yaml")).unwrap(),
        MANIFEST
    );
    assert!(
        text(&resumed.stderr).contains("downloaded file://"),
        "{}",
        text(&resumed.stderr)
    );
}

/// A plan that downloads `source` to `upgrade.yaml` (with `overlay`, when given) and then stops at a
/// gate, as the manifest runbooks do when the plan was not told about hand edits.
fn download_then_gate(
    source: &std::path::Path,
    overlay: Option<serde_json::Value>,
) -> netctl::plan::Plan {
    let mut with =
        serde_json::json!({"url": format!("file://{}", source.display()), "file": "upgrade.yaml"});
    if let Some(overlay) = overlay {
        with["overlay"] = overlay;
    }
    plan(vec![
        step(
            "pre/download",
            "Download the manifest",
            action("fetch", with),
        ),
        step(
            "pre/edits",
            "Carry the hand edits over",
            action(
                "pause",
                serde_json::json!({"message": "make the same edits in `upgrade.yaml` now"}),
            ),
        ),
    ])
}

/// The journal events of `event` for `step`, as JSON.
fn journal_events(operator: &Operator, event: &str, step: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(operator.state_dir().join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["event"] == event && entry["step"] == step)
        .collect()
}

/// Regression: the gate asks the operator to edit `upgrade.yaml` while the run is stopped; the resume
/// once saw a digest other than the download's, downloaded the file again and dropped the edits.
#[test]
fn edits_made_while_stopped_at_a_gate_are_kept_on_resume_and_journaled() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let source = operator
        .netctl
        .write_file("published/calico.yaml", MANIFEST);
    let plan_file = operator.write_plan(&download_then_gate(&source, None));
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let file = operator.state_dir().join("files/upgrade.yaml");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), MANIFEST);

    let edited = format!("{MANIFEST}  labels:\n    edited: by-hand\n");
    std::fs::write(&file, &edited).unwrap();
    let resumed = operator.run(
        &["upgrade", "apply", "--resume", "--approve", "pre/edits"],
        &[],
    );
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        edited,
        "the resume keeps the edited file"
    );
    let restored = journal_events(&operator, "restored", "pre/download");
    assert_eq!(restored.len(), 1, "{restored:?}");
    let summary = restored[0]["summary"].as_str().unwrap();
    let now = sha256(edited.as_bytes());
    let downloaded = sha256(MANIFEST.as_bytes());
    assert!(
        summary.contains("as edited since the download")
            && summary.contains(&now)
            && summary.contains(&downloaded),
        "{summary}"
    );
    assert!(
        text(&resumed.stderr).contains("as edited since the download"),
        "{}",
        text(&resumed.stderr)
    );
    // The checkpoint still records the download's digest (a resume elsewhere fetches those bytes).
    let status = status_json(&operator);
    assert_eq!(
        status["checkpoint"]["steps"][0]["download_digest"],
        downloaded.as_str(),
        "{status}"
    );
}

#[test]
fn a_download_deleted_while_stopped_at_a_gate_is_downloaded_again_and_journaled() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let source = operator
        .netctl
        .write_file("published/calico.yaml", MANIFEST);
    let plan_file = operator.write_plan(&download_then_gate(&source, None));
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let file = operator.state_dir().join("files/upgrade.yaml");
    std::fs::remove_file(&file).unwrap();
    let resumed = operator.run(
        &["upgrade", "apply", "--resume", "--approve", "pre/edits"],
        &[],
    );
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), MANIFEST);
    let restored = journal_events(&operator, "restored", "pre/download");
    assert_eq!(restored.len(), 1, "{restored:?}");
    let summary = restored[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("again") && summary.contains("was missing"),
        "{summary}"
    );
}

/// With a manifest overlay the edited `upgrade.yaml` is kept too, even when the kept download
/// beside it (`upgrade.yaml.original`) is gone and must be downloaded again.
#[test]
fn an_edited_overlaid_manifest_is_kept_when_its_original_is_downloaded_again() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let source = operator
        .netctl
        .write_file("published/calico.yaml", MANIFEST);
    let overlay = serde_json::json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "calico-node", "labels": {"overlaid": "yes"}}}]);
    let plan_file = operator.write_plan(&download_then_gate(&source, Some(overlay)));
    let stopped = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped.stderr));
    let files = operator.state_dir().join("files");
    let overlaid = std::fs::read_to_string(files.join("upgrade.yaml")).unwrap();
    // Quoted, so that kubectl (a YAML 1.1 reader) applies the string, not the boolean true.
    assert!(overlaid.contains("overlaid: 'yes'"), "{overlaid}");

    let edited = overlaid.replace("overlaid: 'yes'", "overlaid: edited-at-the-gate");
    std::fs::write(files.join("upgrade.yaml"), &edited).unwrap();
    std::fs::remove_file(files.join("upgrade.yaml.original")).unwrap();
    let resumed = operator.run(
        &["upgrade", "apply", "--resume", "--approve", "pre/edits"],
        &[],
    );
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    assert_eq!(
        std::fs::read_to_string(files.join("upgrade.yaml")).unwrap(),
        edited
    );
    assert_eq!(
        std::fs::read_to_string(files.join("upgrade.yaml.original")).unwrap(),
        MANIFEST
    );
    let restored = journal_events(&operator, "restored", "pre/download");
    assert_eq!(restored.len(), 1, "{restored:?}");
    let summary = restored[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("as edited since the download") && summary.contains("was missing"),
        "{summary}"
    );
}

/// A `fetch` pinned to a digest (as `upgrade plan` pins a manifest it reviewed) refuses other bytes
/// before writing anything.
#[test]
fn a_pinned_download_with_another_digest_is_refused_and_nothing_is_written() {
    let etcd = EtcdServer::start();
    seed(&etcd);
    let operator = Operator::new(&etcd);
    let source = operator
        .netctl
        .write_file("published/calico.yaml", format!("{MANIFEST}# re-tagged\n"));
    let url = format!("file://{}", source.display());
    let reviewed = sha256(MANIFEST.as_bytes());
    let served = sha256(format!("{MANIFEST}# re-tagged\n").as_bytes());
    let plan_file = operator.write_plan(&plan(vec![step(
        "pre/download",
        "Download the manifest",
        action(
            "fetch",
            serde_json::json!({"url": url, "file": "upgrade.yaml", "sha256": reviewed}),
        ),
    )]));
    let output = operator.run(
        &["upgrade", "apply", "--plan", plan_file.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let message = text(&output.stderr);
    assert!(
        message.contains(&format!(
            "`{url}` serves a manifest with digest {served}, not the {reviewed} the plan was reviewed with"
        )),
        "{message}"
    );
    assert!(
        message.contains("hint: ")
            && message.contains("run `netctl upgrade plan` again and review the new diff"),
        "{message}"
    );
    assert!(!operator.state_dir().join("files/upgrade.yaml").exists());

    // The bytes reviewed are accepted.
    std::fs::write(&source, MANIFEST).unwrap();
    let output = operator.run(&["upgrade", "apply", "--resume"], &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        std::fs::read_to_string(operator.state_dir().join("files/upgrade.yaml")).unwrap(),
        MANIFEST
    );
}

#[test]
fn a_pin_that_is_not_a_sha256_digest_is_refused() {
    let error = netctl::plan::Action::from_parts(
        "fetch",
        serde_json::json!({"url": "file:///m.yaml", "file": "m.yaml", "sha256": "md5:abc"}),
    )
    .unwrap_err();
    assert!(error.to_string().contains("`sha256` must be"), "{error}");
}
