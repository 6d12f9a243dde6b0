//! `netctl node diags`: one node's diagnostics bundle, as upstream's
//! `calicoctl/calicoctl/commands/node/diags.go` collects it, read-only.
//!
//! It runs the programs upstream runs (`ip`, `nft`, `iptables-save`, `ipset`, `ss` or `netstat`,
//! `journalctl`, ...) with upstream's file names under `diagnostics/`, plus the rules, links, all
//! routing tables and both iptables back ends that maintainers ask for next; copies the agent's
//! log directory (`--log-dir`) into `diagnostics/logs/`; and reads the logs of every container
//! named `calico` through each container CLI on `PATH` — docker, podman, nerdctl, or crictl on
//! containerd and CRI-O hosts (projectcalico/calico#5637) — with `ipset list` taken inside the
//! running calico-node container. A program that is not installed, or fails, is an index entry,
//! never the end of the command.
//!
//! Unlike upstream it starts no container (upstream runs `calico/node` to list ipsets) and sends
//! felix no signal (upstream's `pkill -SIGUSR1 felix`): it only reads. Each program has a time
//! limit and runs in its own process group, killed whole when it is over time or on Ctrl-C.
//! Programs are found on the given `PATH` only, which is also how the tests put stand-ins in place.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::DiagnoseError;
use super::bundle::{Archive, Bundle, BundleFile, BundleOptions, Entry, Status, Written};
use super::scrub::Scrubber;

/// What `netctl node diags` was asked for.
#[derive(Debug, Clone)]
pub struct NodeDiagsOptions {
    /// The agent's log directory (upstream's `--log-dir`, `/var/log/calico`).
    pub log_dir: PathBuf,
    pub bundle: BundleOptions,
    /// Where programs are looked for (the `PATH` netctl was started with).
    pub path: OsString,
    /// How long one program may run.
    pub command_timeout: Duration,
    /// Values to keep out of every file (see `super::secrets`).
    pub secrets: Vec<String>,
    /// Said in the index: the command line, secrets redacted.
    pub command_line: Vec<String>,
}

/// One program upstream (or maintainers after it) asks for, and the file its output goes to.
struct Dump {
    file: &'static str,
    program: &'static str,
    args: &'static [&'static str],
}

const fn dump(file: &'static str, program: &'static str, args: &'static [&'static str]) -> Dump {
    Dump {
        file,
        program,
        args,
    }
}

/// Upstream's list, its file names first, then what netctl adds.
const DUMPS: &[Dump] = &[
    dump("date", "date", &[]),
    dump("hostname", "hostname", &[]),
    dump("ipv4_route", "ip", &["-4", "route"]),
    dump("ipv6_route", "ip", &["-6", "route"]),
    dump("ipv4_addr", "ip", &["-4", "addr"]),
    dump("ipv6_addr", "ip", &["-6", "addr"]),
    dump("nft_ruleset", "nft", &["-n", "-a", "list", "ruleset"]),
    dump("ipv4_tables", "iptables-save", &["-c"]),
    dump("ipv6_tables", "ip6tables-save", &["-c"]),
    dump("ipsets", "ipset", &["list"]),
    dump(
        "journalctl_calico_node",
        "journalctl",
        &["-u", "calico-node.service", "--no-pager"],
    ),
    // Beyond upstream: every routing table, the policy rules, link details, neighbours, and both
    // iptables back ends (a node can hold rules in both, which is a common cause of trouble).
    dump(
        "ipv4_route_all_tables",
        "ip",
        &["-4", "route", "show", "table", "all"],
    ),
    dump(
        "ipv6_route_all_tables",
        "ip",
        &["-6", "route", "show", "table", "all"],
    ),
    dump("ipv4_rule", "ip", &["-4", "rule"]),
    dump("ipv6_rule", "ip", &["-6", "rule"]),
    dump("links", "ip", &["-d", "link"]),
    dump("neighbours", "ip", &["neigh"]),
    dump("ipv4_tables_legacy", "iptables-legacy-save", &["-c"]),
    dump("ipv4_tables_nft", "iptables-nft-save", &["-c"]),
    dump("ipv6_tables_legacy", "ip6tables-legacy-save", &["-c"]),
    dump("ipv6_tables_nft", "ip6tables-nft-save", &["-c"]),
];

/// How many items [`collect`] reports to its `step` callback.
pub const ITEMS: u64 = DUMPS.len() as u64 + 3;

/// The container CLIs asked for the agent's containers, in upstream's order of preference
/// (`containerRuntimes` on upstream's master) with podman added; every one on `PATH` is asked.
const DOCKER_LIKE: [&str; 3] = ["docker", "podman", "nerdctl"];

/// Collects the bundle. `stop` is set on Ctrl-C: the program running is killed and nothing is
/// kept. `step` is told each item as it starts (for the progress counter).
pub fn collect(
    options: &NodeDiagsOptions,
    stop: Arc<AtomicBool>,
    step: &dyn Fn(&str),
) -> Result<Archive, DiagnoseError> {
    let scrubber = Scrubber::new(options.secrets.iter().cloned());
    let bundle = Bundle::create(options.bundle.clone(), scrubber)?;
    let runner = Runner {
        bundle: &bundle,
        path: &options.path,
        timeout: options.command_timeout,
        stop: &stop,
    };
    for dump in DUMPS {
        step(dump.program);
        runner.dump(dump.file, dump.program, dump.args)?;
    }
    // Sockets: upstream takes `netstat` when it is installed and `ss` otherwise; `ss` is what
    // current distributions ship, so it comes first here.
    step("ss");
    match (runner.locate("ss"), runner.locate("netstat")) {
        (Some(_), _) => runner.dump("ss", "ss", &["-a", "-n"])?,
        (None, Some(_)) => runner.dump("netstat", "netstat", &["-a", "-n"])?,
        (None, None) => bundle.record(Entry::without_file(
            "ss -a -n",
            Status::Missing,
            "neither `ss` nor `netstat` is on PATH",
        )),
    }
    step("logs");
    copy_log_dir(&bundle, &options.log_dir, &stop)?;
    step("containers");
    container_logs(&runner)?;
    if stop.load(Ordering::Relaxed) {
        return Err(DiagnoseError::Interrupted);
    }
    bundle.finish(json!({
        "bundle": "node diags",
        "netctl": env!("CARGO_PKG_VERSION"),
        "created": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        "host": host_name(),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|text| text.trim().to_string()).unwrap_or_default(),
        "root": rustix::process::geteuid().is_root(),
        "logDir": options.log_dir,
        "maxFileSize": options.bundle.max_file_size,
        "maxSize": options.bundle.max_size,
        "commandLine": options.command_line,
    }))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|text| text.trim().to_string())
        .unwrap_or_default()
}

/// Runs programs into the bundle.
struct Runner<'a> {
    bundle: &'a Bundle,
    path: &'a OsString,
    timeout: Duration,
    stop: &'a AtomicBool,
}

/// How one program ended.
struct Ran {
    written: Option<Written>,
    outcome: Result<(), String>,
    /// The end of what it printed, for reasons and for reading lists (container names).
    tail: Vec<u8>,
}

impl Runner<'_> {
    /// The program's path on `PATH`, if it is there.
    fn locate(&self, program: &str) -> Option<PathBuf> {
        std::env::split_paths(self.path)
            .map(|directory| directory.join(program))
            .find(|candidate| is_executable(candidate))
    }

    /// Runs `program args` into `file` and records how it went.
    fn dump(&self, file: &str, program: &str, args: &[&str]) -> Result<(), DiagnoseError> {
        self.dump_owned(
            file,
            program,
            &args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        )
        .map(|_| ())
    }

    fn dump_owned(
        &self,
        file: &str,
        program: &str,
        args: &[String],
    ) -> Result<Option<Ran>, DiagnoseError> {
        let source = command_line(program, args);
        let Some(located) = self.locate(program) else {
            self.bundle.record(Entry::without_file(
                source,
                Status::Missing,
                format!("`{program}` is not installed (not found on PATH)"),
            ));
            return Ok(None);
        };
        let Some(output) = self.bundle.open(file, false)? else {
            self.bundle.record(self.bundle.full_entry(source));
            return Ok(None);
        };
        let ran = self.run(&located, args, Some(output))?;
        let written = ran.written.clone().expect("an output file was given");
        let entry = match &ran.outcome {
            Ok(()) => written.entry(source, Status::Collected, None),
            Err(reason) => written.entry(source, Status::Failed, Some(reason.clone())),
        };
        self.bundle.record(entry);
        Ok(Some(ran))
    }

    /// Runs `program args`, its output (stdout and stderr together, as upstream's
    /// `CombinedOutput`) into `output` when given; the tail is kept either way.
    fn run(
        &self,
        program: &Path,
        args: &[String],
        output: Option<BundleFile>,
    ) -> Result<Ran, DiagnoseError> {
        let spawn_failed = |error: std::io::Error| Ran {
            written: None,
            outcome: Err(format!("cannot start `{}`: {error}", program.display())),
            tail: Vec::new(),
        };
        let (mut reader, writer) = match std::io::pipe() {
            Ok(pipe) => pipe,
            Err(error) => return finish_without(output, spawn_failed(error)),
        };
        let writer_clone = match writer.try_clone() {
            Ok(clone) => clone,
            Err(error) => return finish_without(output, spawn_failed(error)),
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer_clone)
            .env("PATH", self.path)
            .env("LC_ALL", "C")
            .process_group(0);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => return finish_without(output, spawn_failed(error)),
        };
        // The command holds the pipe's writing ends now; ours went with `command`.
        drop(command);
        let copier = std::thread::spawn(move || {
            let mut output = output;
            let mut tail: Vec<u8> = Vec::new();
            let mut buffer = [0u8; 64 * 1024];
            loop {
                let read = match reader.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(read) => read,
                };
                if let Some(file) = output.as_mut() {
                    let _ = file.write_all(&buffer[..read]);
                }
                tail.extend_from_slice(&buffer[..read]);
                if tail.len() > TAIL {
                    tail.drain(..tail.len() - TAIL);
                }
            }
            (output, tail)
        });
        let started = Instant::now();
        let outcome = loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => break Ok(()),
                Ok(Some(status)) => {
                    break Err(match status.code() {
                        Some(code) => format!("exited with status {code}"),
                        None => "killed by a signal".to_string(),
                    });
                }
                Ok(None) => {}
                Err(error) => break Err(format!("cannot wait for it: {error}")),
            }
            if self.stop.load(Ordering::Relaxed) {
                kill_group(&mut child);
                break Err("interrupted".to_string());
            }
            if started.elapsed() > self.timeout {
                kill_group(&mut child);
                break Err(format!(
                    "did not finish within {} (`--command-timeout`); killed",
                    humantime::format_duration(self.timeout)
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // A grandchild still holding the pipe is in the killed group (or the command exited and
        // its group with it), so the copier ends.
        let (output, tail) = copier.join().unwrap_or((None, Vec::new()));
        let written = match output {
            Some(file) => Some(file.finish()?),
            None => None,
        };
        let outcome = outcome.map_err(|reason| match last_line(&tail) {
            Some(line) => format!("{reason}: {line}"),
            None => reason,
        });
        Ok(Ran {
            written,
            outcome,
            tail,
        })
    }

    /// Runs a listing command whose output is read, not kept; `None` when it is not installed or
    /// failed (recorded).
    fn list(&self, program: &str, args: &[&str]) -> Result<Option<String>, DiagnoseError> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let source = command_line(program, &args);
        let Some(located) = self.locate(program) else {
            return Ok(None);
        };
        let ran = self.run(&located, &args, None)?;
        match ran.outcome {
            Ok(()) => Ok(Some(String::from_utf8_lossy(&ran.tail).into_owned())),
            Err(reason) => {
                self.bundle
                    .record(Entry::without_file(source, Status::Failed, reason));
                Ok(None)
            }
        }
    }
}

/// The most of a program's output kept in memory (for reasons and listings).
const TAIL: usize = 256 * 1024;

fn finish_without(output: Option<BundleFile>, mut ran: Ran) -> Result<Ran, DiagnoseError> {
    if let Some(file) = output {
        ran.written = Some(file.finish()?);
    }
    Ok(ran)
}

fn kill_group(child: &mut std::process::Child) {
    if let Some(group) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn last_line(output: &[u8]) -> Option<String> {
    String::from_utf8_lossy(output)
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| line.chars().take(300).collect())
}

fn command_line(program: &str, args: &[String]) -> String {
    std::iter::once(program.to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// A name safe as one path component in the bundle.
fn file_name(text: &str) -> String {
    let name: String = text
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    match name.trim_start_matches('.') {
        "" => "_".to_string(),
        trimmed => trimmed.to_string(),
    }
}

/// How deep the log directory is followed.
const LOG_DEPTH: usize = 8;

/// Copies the agent's log directory into `logs/` (regular files; links are not followed, so
/// nothing outside the directory is read).
fn copy_log_dir(bundle: &Bundle, log_dir: &Path, stop: &AtomicBool) -> Result<(), DiagnoseError> {
    let source = log_dir.display().to_string();
    match std::fs::metadata(log_dir) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => {
            bundle.record(Entry::without_file(
                source,
                Status::Missing,
                "not a directory (`--log-dir`)",
            ));
            return Ok(());
        }
        Err(error) => {
            bundle.record(Entry::without_file(
                source,
                Status::Missing,
                format!("cannot read it (`--log-dir`): {error}"),
            ));
            return Ok(());
        }
    }
    let mut pending = vec![(log_dir.to_path_buf(), 0usize)];
    let mut files = Vec::new();
    while let Some((directory, depth)) = pending.pop() {
        let entries = match std::fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(error) => {
                bundle.record(Entry::without_file(
                    directory.display().to_string(),
                    Status::Failed,
                    format!("cannot list it: {error}"),
                ));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && depth < LOG_DEPTH => pending.push((path, depth + 1)),
                Ok(kind) if kind.is_file() => files.push(path),
                Ok(kind) if kind.is_symlink() => bundle.record(Entry::without_file(
                    path.display().to_string(),
                    Status::Skipped,
                    "a symbolic link: links are not followed",
                )),
                _ => {}
            }
        }
    }
    files.sort();
    for path in files {
        if stop.load(Ordering::Relaxed) {
            return Err(DiagnoseError::Interrupted);
        }
        let relative = path.strip_prefix(log_dir).unwrap_or(&path);
        let inside: Vec<String> = relative
            .components()
            .map(|component| file_name(&component.as_os_str().to_string_lossy()))
            .collect();
        let target = format!("logs/{}", inside.join("/"));
        let source = path.display().to_string();
        let mut reader = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) => {
                bundle.record(Entry::without_file(
                    source,
                    Status::Failed,
                    format!("cannot read it: {error}"),
                ));
                continue;
            }
        };
        let Some(mut file) = bundle.open(&target, false)? else {
            bundle.record(bundle.full_entry(source));
            continue;
        };
        let copied = std::io::copy(&mut reader, &mut file);
        let written = file.finish()?;
        bundle.record(match copied {
            Ok(_) => written.entry(source, Status::Collected, None),
            Err(error) => written.entry(
                source,
                Status::Failed,
                Some(format!("read failed: {error}")),
            ),
        });
    }
    Ok(())
}

/// The logs of the containers named `calico` through every container CLI on `PATH`, and the
/// ipsets inside the running calico-node container.
fn container_logs(runner: &Runner) -> Result<(), DiagnoseError> {
    let mut found_any = false;
    let mut ipsets_taken = false;
    for cli in DOCKER_LIKE {
        if runner.locate(cli).is_none() {
            continue;
        }
        found_any = true;
        // `NAME: CREATED`, one per line, as upstream lists them; pause containers left out.
        let Some(listing) = runner.list(
            cli,
            &[
                "ps",
                "-a",
                "--filter",
                "name=calico",
                "--format",
                "{{.Names}}: {{.CreatedAt}}",
            ],
        )?
        else {
            continue;
        };
        let containers: Vec<&str> = listing
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.contains("k8s_POD"))
            .collect();
        runner.bundle.write(
            &format!("logs/{cli}_containers"),
            format!("{cli} ps -a --filter name=calico"),
            format!("{}\n", containers.join("\n")).as_bytes(),
            false,
        )?;
        for line in &containers {
            let name = line.split(':').next().unwrap_or_default().trim();
            if name.is_empty() {
                continue;
            }
            runner.dump_owned(
                &format!("logs/{}.log", file_name(name)),
                cli,
                &["logs".to_string(), name.to_string()],
            )?;
        }
        if !ipsets_taken {
            let running = runner.list(
                cli,
                &[
                    "ps",
                    "--filter",
                    "name=calico-node",
                    "--format",
                    "{{.Names}}",
                ],
            )?;
            if let Some(name) = running
                .as_deref()
                .and_then(|text| text.lines().map(str::trim).find(|line| !line.is_empty()))
            {
                ipsets_taken = true;
                runner.dump_owned(
                    "ipset_container",
                    cli,
                    &[
                        "exec".to_string(),
                        name.to_string(),
                        "ipset".to_string(),
                        "list".to_string(),
                    ],
                )?;
            }
        }
    }
    if runner.locate("crictl").is_some() {
        found_any = true;
        if let Some(listing) =
            runner.list("crictl", &["ps", "-a", "--name", "calico", "-o", "json"])?
        {
            runner.bundle.write(
                "logs/crictl_containers.json",
                "crictl ps -a --name calico -o json",
                listing.as_bytes(),
                true,
            )?;
            for container in crictl_containers(&listing) {
                let pod = container.pod.as_deref().unwrap_or("pod");
                let short: String = container.id.chars().take(12).collect();
                runner.dump_owned(
                    &format!(
                        "logs/{}_{}_{short}.log",
                        file_name(pod),
                        file_name(&container.name)
                    ),
                    "crictl",
                    &["logs".to_string(), container.id.clone()],
                )?;
                if !ipsets_taken && container.running && container.name == "calico-node" {
                    ipsets_taken = true;
                    runner.dump_owned(
                        "ipset_container",
                        "crictl",
                        &[
                            "exec".to_string(),
                            container.id.clone(),
                            "ipset".to_string(),
                            "list".to_string(),
                        ],
                    )?;
                }
            }
        }
    }
    if !found_any {
        runner.bundle.record(Entry::without_file(
            "container logs",
            Status::Missing,
            "no container CLI on PATH (looked for docker, podman, nerdctl, crictl)",
        ));
    } else if !ipsets_taken {
        runner.bundle.record(Entry::without_file(
            "ipset list (in the calico-node container)",
            Status::Skipped,
            "no running container named calico-node",
        ));
    }
    Ok(())
}

/// A container as `crictl ps -o json` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CriContainer {
    id: String,
    name: String,
    pod: Option<String>,
    running: bool,
}

fn crictl_containers(listing: &str) -> Vec<CriContainer> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(listing) else {
        return Vec::new();
    };
    value["containers"]
        .as_array()
        .map(|containers| {
            containers
                .iter()
                .filter_map(|container| {
                    Some(CriContainer {
                        id: container["id"].as_str()?.to_string(),
                        name: container["metadata"]["name"].as_str()?.to_string(),
                        pod: container["labels"]["io.kubernetes.pod.name"]
                            .as_str()
                            .map(str::to_string),
                        running: container["state"] == "CONTAINER_RUNNING",
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crictl_json_gives_ids_names_pods_and_states() {
        let listing = r#"{"containers": [
          {"id": "4f9c8c3a1b2d77e0aa", "podSandboxId": "9a", "metadata": {"name": "calico-node", "attempt": 0},
           "image": {"image": "docker.io/calico/node:v3.29.2"}, "state": "CONTAINER_RUNNING",
           "createdAt": "1735700000000000000", "labels": {"io.kubernetes.pod.name": "calico-node-x7k2p"}},
          {"id": "5e", "metadata": {"name": "install-cni"}, "state": "CONTAINER_EXITED", "labels": {}}
        ]}"#;
        assert_eq!(
            crictl_containers(listing),
            [
                CriContainer {
                    id: "4f9c8c3a1b2d77e0aa".into(),
                    name: "calico-node".into(),
                    pod: Some("calico-node-x7k2p".into()),
                    running: true
                },
                CriContainer {
                    id: "5e".into(),
                    name: "install-cni".into(),
                    pod: None,
                    running: false
                },
            ]
        );
        assert!(crictl_containers("not json").is_empty());
    }

    #[test]
    fn file_names_stay_one_component() {
        assert_eq!(
            file_name("k8s_calico-node_x/../y"),
            "k8s_calico-node_x_.._y"
        );
        assert_eq!(file_name(".."), "_");
    }
}
