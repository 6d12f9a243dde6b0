//! The dataplane dumps maintainers ask for first (projectcalico/calico#12457), taken by exec into
//! the `calico-node` container of each chosen calico-node pod — upstream's
//! `collectCalicoNodeDiags`: iptables (legacy and nft), nftables, routes (all tables, both
//! families), rules, addresses, links, neighbours, ipsets, conntrack, the eBPF state as JSON with a
//! plain-text fallback for a calico-node that predates `--json` or the subcommand (upstream's
//! `bpfJSONCmd`: `<file>.json`, else `<file>.txt`), `bpftool` programs and maps, a dump of each
//! `cali*` map, `tc qdisc`, and the CNI plugin's logs.
//!
//! Files: `nodes/<node>/<upstream's name>`. A program the image lacks (an iptables-legacy-only
//! image has no `nft`) is an index entry with the runtime's message, as is a command that fails.

use futures_util::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use regex::Regex;
use tokio::io::AsyncReadExt;

use super::super::DiagnoseError;
use super::super::bundle::{Status, Written};
use super::Collector;
use super::pods::ChosenPod;

/// The container the dumps are taken in.
const CONTAINER: &str = "calico-node";

/// Plain dumps: file and command.
const DUMPS: &[(&str, &[&str])] = &[
    ("iptables-legacy-save.txt", &["iptables-legacy-save", "-c"]),
    ("iptables-nft-save.txt", &["iptables-nft-save", "-c"]),
    ("nft-ruleset.txt", &["nft", "-n", "-a", "list", "ruleset"]),
    ("ip-route.txt", &["ip", "route", "show", "table", "all"]),
    (
        "ip-route-v6.txt",
        &["ip", "-6", "route", "show", "table", "all"],
    ),
    ("ip-rule.txt", &["ip", "rule"]),
    ("ip-rule-v6.txt", &["ip", "-6", "rule"]),
    ("ip-addr.txt", &["ip", "addr"]),
    ("ip-link.txt", &["ip", "link"]),
    ("ip-neigh.txt", &["ip", "neigh"]),
    ("ipset-list.txt", &["ipset", "list"]),
    ("conntrack-list.txt", &["conntrack", "-LSC"]),
    ("bpf-prog.txt", &["bpftool", "prog", "list"]),
    ("tc-qdisc.txt", &["tc", "qdisc", "show"]),
];

/// eBPF dumps as JSON with a text fallback: file stem and `calico-node -bpf` subcommand.
const BPF_DUMPS: &[(&str, &[&str])] = &[
    ("bpf-conntrack", &["conntrack", "dump"]),
    ("bpf-ipsets", &["ipsets", "dump"]),
    ("bpf-nat", &["nat", "dump"]),
    ("bpf-routes", &["routes", "dump"]),
    ("bpf-counters", &["counters", "dump"]),
    ("bpf-arp", &["arp", "dump"]),
    ("bpf-ifstate", &["ifstate", "dump"]),
    ("bpf-conntrack-stats", &["conntrack", "stats"]),
    ("bpf-nat-aff", &["nat", "aff"]),
    ("bpf-nat-maglev", &["nat", "maglev"]),
];

/// Where the CNI plugin logs inside the container.
const CNI_LOG_DIR: &str = "/var/log/calico/cni";

/// The `calico-node -bpf` command for a dump, with or without `--json`.
pub(super) fn bpf_command(subcommand: &[&str], json: bool) -> Vec<String> {
    let mut command: Vec<String> = ["calico-node", "-bpf"]
        .iter()
        .chain(subcommand)
        .map(|part| part.to_string())
        .collect();
    if json {
        command.push("--json".to_string());
    }
    command
}

/// Every dump of every chosen calico-node pod.
pub(super) async fn dumps(
    collector: &Collector,
    chosen: &[ChosenPod],
) -> Result<(), DiagnoseError> {
    let nodes: Vec<&ChosenPod> = chosen
        .iter()
        .filter(|pod| {
            pod.name.starts_with("calico-node-") && pod.containers.iter().any(|c| c == CONTAINER)
        })
        .collect();
    let per_node = (DUMPS.len() + BPF_DUMPS.len() + 2) as u64;
    collector.progress.add(per_node * nodes.len() as u64);
    for result in join_all(nodes.iter().map(|pod| node_dumps(collector, pod))).await {
        result?;
    }
    Ok(())
}

async fn node_dumps(collector: &Collector, pod: &ChosenPod) -> Result<(), DiagnoseError> {
    let directory = format!("nodes/{}", pod.node);
    let plain = DUMPS.iter().map(|(file, command)| {
        let command: Vec<String> = command.iter().map(|part| part.to_string()).collect();
        let file = format!("{directory}/{file}");
        async move {
            run(collector, pod, &command, Some(&file)).await?;
            Ok::<(), DiagnoseError>(())
        }
    });
    let bpf = BPF_DUMPS
        .iter()
        .map(|(stem, subcommand)| bpf_dump(collector, pod, &directory, stem, subcommand));
    let maps = bpf_maps(collector, pod, &directory);
    let cni = cni_logs(collector, pod, &directory);
    let (plain, bpf, maps, cni) = tokio::join!(join_all(plain), join_all(bpf), maps, cni);
    for result in plain.into_iter().chain(bpf) {
        result?;
    }
    maps?;
    cni
}

/// How one exec ended.
pub(super) struct Executed {
    written: Option<Written>,
    /// `Err` with the reason (the `Status` message, stderr's last line).
    outcome: Result<(), String>,
    /// The end of stdout, for listings.
    tail: Vec<u8>,
}

/// The most of stdout kept in memory for listings.
const TAIL: usize = 256 * 1024;

/// Runs `command` in the pod's calico-node container, stdout into `file` when given (then the
/// outcome is recorded against it; without a file the caller reads the output and records).
async fn run(
    collector: &Collector,
    pod: &ChosenPod,
    command: &[String],
    file: Option<&str>,
) -> Result<Option<Executed>, DiagnoseError> {
    let source = source(pod, command);
    let work = exec(collector, pod, command, file);
    let Some(result) = collector.item(&source, work).await else {
        return Ok(None);
    };
    let executed = match result? {
        Ok(executed) => executed,
        Err(error) => {
            collector.failed(&source, &error);
            return Ok(None);
        }
    };
    if let Some(written) = &executed.written {
        let entry = match &executed.outcome {
            Ok(()) => written.entry(source, Status::Collected, None),
            Err(reason) => written.entry(source, Status::Failed, Some(reason.clone())),
        };
        collector.bundle.record(entry);
    }
    Ok(Some(executed))
}

fn source(pod: &ChosenPod, command: &[String]) -> String {
    format!(
        "exec {}/{} -c {CONTAINER} -- {}",
        pod.namespace,
        pod.name,
        command.join(" ")
    )
}

/// The exec itself: stdout into the file (or nowhere), stderr kept for the reason, the `Status`
/// from the error channel.
async fn exec(
    collector: &Collector,
    pod: &ChosenPod,
    command: &[String],
    file: Option<&str>,
) -> Result<Result<Executed, kube::Error>, DiagnoseError> {
    let api: Api<Pod> = Api::namespaced(collector.client.clone(), &pod.namespace);
    let params = AttachParams::default()
        .container(CONTAINER)
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut attached = match api.exec(&pod.name, command.to_vec(), &params).await {
        Ok(attached) => attached,
        Err(error) => return Ok(Err(error)),
    };
    let mut out = match file {
        Some(file) => collector.bundle.open(file, false)?,
        None => None,
    };
    let mut stdout = attached.stdout();
    let mut stderr = attached.stderr();
    let status = attached.take_status();
    let read_stdout = async {
        let mut tail = Vec::new();
        let mut failure = None;
        if let Some(stdout) = stdout.as_mut() {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                match stdout.read(&mut buffer).await {
                    Ok(0) => break,
                    Ok(read) => {
                        if let Some(out) = out.as_mut()
                            && let Err(error) = std::io::Write::write_all(out, &buffer[..read])
                        {
                            failure = Some(error);
                            break;
                        }
                        tail.extend_from_slice(&buffer[..read]);
                        if tail.len() > TAIL {
                            tail.drain(..tail.len() - TAIL);
                        }
                    }
                    Err(_) => break,
                }
            }
        }
        (tail, failure)
    };
    let read_stderr = async {
        let mut text = Vec::new();
        if let Some(stderr) = stderr.as_mut() {
            let mut buffer = vec![0u8; 16 * 1024];
            while let Ok(read) = stderr.read(&mut buffer).await {
                if read == 0 {
                    break;
                }
                if text.len() < 64 * 1024 {
                    text.extend_from_slice(&buffer[..read]);
                }
            }
        }
        text
    };
    let ((tail, write_failure), stderr_text) = tokio::join!(read_stdout, read_stderr);
    let status = match status {
        Some(status) => status.await,
        None => None,
    };
    let _ = attached.join().await;
    if let (Some(error), Some(file)) = (write_failure, file) {
        return Err(DiagnoseError::Write {
            path: file.into(),
            source: error,
        });
    }
    let written = match out {
        Some(out) => Some(out.finish()?),
        None => None,
    };
    let stderr_line = String::from_utf8_lossy(&stderr_text)
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_string);
    let outcome = match status {
        Some(status) if status.status.as_deref() == Some("Success") => Ok(()),
        Some(status) => Err(match stderr_line {
            Some(line) => format!("{}; stderr: {line}", status.message.unwrap_or_default()),
            None => status.message.unwrap_or_default(),
        }),
        None => Err("the exec ended without a status from the container".to_string()),
    };
    Ok(Ok(Executed {
        written,
        outcome,
        tail,
    }))
}

/// A `calico-node -bpf` dump as JSON, else as text (upstream's fallback for older calico-node).
async fn bpf_dump(
    collector: &Collector,
    pod: &ChosenPod,
    directory: &str,
    stem: &str,
    subcommand: &[&str],
) -> Result<(), DiagnoseError> {
    let json_command = bpf_command(subcommand, true);
    let json_file = format!("{directory}/{stem}.json");
    let source = source(pod, &json_command);
    let Some(result) = collector
        .item(
            &source,
            exec(collector, pod, &json_command, Some(&json_file)),
        )
        .await
    else {
        return Ok(());
    };
    let json_error = match result? {
        Ok(executed) => match (executed.outcome, executed.written) {
            (Ok(()), Some(written)) => {
                collector
                    .bundle
                    .record(written.entry(source, Status::Collected, None));
                return Ok(());
            }
            (outcome, written) => {
                if let Some(written) = written {
                    collector.bundle.discard(&written);
                }
                outcome.err().unwrap_or_default()
            }
        },
        Err(error) => super::describe(&error).1,
    };
    let text_command = bpf_command(subcommand, false);
    let text_file = format!("{directory}/{stem}.txt");
    let text_source = self::source(pod, &text_command);
    let Some(result) = collector
        .item(
            &text_source,
            exec(collector, pod, &text_command, Some(&text_file)),
        )
        .await
    else {
        return Ok(());
    };
    match result? {
        Ok(executed) => {
            if let Some(written) = executed.written {
                let entry = match executed.outcome {
                    Ok(()) => written.entry(
                        text_source,
                        Status::Collected,
                        Some(format!("plain text: the JSON dump failed ({json_error})")),
                    ),
                    Err(reason) => written.entry(
                        text_source,
                        Status::Failed,
                        Some(format!("{reason} (and as JSON: {json_error})")),
                    ),
                };
                collector.bundle.record(entry);
            }
        }
        Err(error) => collector.failed(&text_source, &error),
    }
    Ok(())
}

/// `bpftool map list`, then a dump of each `cali*` map (`bpf-maps/<name>-id_<id>.txt`).
async fn bpf_maps(
    collector: &Collector,
    pod: &ChosenPod,
    directory: &str,
) -> Result<(), DiagnoseError> {
    let list: Vec<String> = ["bpftool", "map", "list"].map(String::from).to_vec();
    let file = format!("{directory}/bpf-maps.txt");
    let Some(executed) = run(collector, pod, &list, Some(&file)).await? else {
        return Ok(());
    };
    if executed.outcome.is_err() {
        return Ok(());
    }
    let maps = calico_maps(&String::from_utf8_lossy(&executed.tail));
    collector.progress.add(maps.len() as u64);
    let dumps = maps.iter().map(|(id, name)| {
        let command: Vec<String> = ["bpftool", "map", "dump", "id", id]
            .map(String::from)
            .to_vec();
        let file = format!("{directory}/bpf-maps/{name}-id_{id}.txt");
        async move { run(collector, pod, &command, Some(&file)).await.map(|_| ()) }
    });
    for result in join_all(dumps).await {
        result?;
    }
    Ok(())
}

/// The `cali*` maps of a `bpftool map list` (`35: lru_hash  name cali_v4_srmsg  flags 0x0`).
pub(super) fn calico_maps(listing: &str) -> Vec<(String, String)> {
    let line = Regex::new(r"^(\d+):.*name (cali\w+)").expect("a valid pattern");
    listing
        .lines()
        .filter_map(|text| {
            let captures = line.captures(text)?;
            Some((captures[1].to_string(), captures[2].to_string()))
        })
        .collect()
}

/// The CNI plugin's logs: `ls` of its directory, then each file.
async fn cni_logs(
    collector: &Collector,
    pod: &ChosenPod,
    directory: &str,
) -> Result<(), DiagnoseError> {
    let list: Vec<String> = vec!["ls".to_string(), CNI_LOG_DIR.to_string()];
    let Some(executed) = run(collector, pod, &list, None).await? else {
        return Ok(());
    };
    if let Err(reason) = executed.outcome {
        collector
            .bundle
            .record(super::super::bundle::Entry::without_file(
                source(pod, &list),
                Status::Failed,
                reason,
            ));
        return Ok(());
    }
    let listing = String::from_utf8_lossy(&executed.tail).into_owned();
    let files: Vec<&str> = listing
        .split_whitespace()
        .filter(|name| !name.contains('/') && !name.starts_with('.'))
        .collect();
    collector.progress.add(files.len() as u64);
    let reads = files.iter().map(|name| {
        let command = vec!["cat".to_string(), format!("{CNI_LOG_DIR}/{name}")];
        let file = format!("{directory}/cni/{name}");
        async move { run(collector, pod, &command, Some(&file)).await.map(|_| ()) }
    });
    for result in join_all(reads).await {
        result?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpf_dumps_ask_for_json_and_fall_back_to_text_without_it() {
        assert_eq!(
            bpf_command(&["nat", "maglev"], true),
            ["calico-node", "-bpf", "nat", "maglev", "--json"]
        );
        assert_eq!(
            bpf_command(&["nat", "maglev"], false),
            ["calico-node", "-bpf", "nat", "maglev"]
        );
    }

    #[test]
    fn calico_maps_are_read_from_bpftools_listing() {
        let listing = "35: lru_hash  name cali_v4_srmsg  flags 0x0\n\tkey 16B  value 8B  max_entries 510000  memlock 12242944B\n\tpids calico-node(28576)\n36: hash  name other_map  flags 0x0\n41: array  name cali_v4_state  flags 0x0\n";
        assert_eq!(
            calico_maps(listing),
            [
                ("35".to_string(), "cali_v4_srmsg".to_string()),
                ("41".to_string(), "cali_v4_state".to_string())
            ]
        );
    }
}
