//! The habits kubectl and calicoctl users bring, through the binary: a closed stdout is success,
//! suggestions for a mistyped kind or a kubectl selector, `delete -R/--skip-empty/-s`, examples and
//! exit codes in `--help`, the kubectl forms of `get` (`hep/name`, `hep,gnp`, `--no-headers`,
//! `--show-labels`, `-o jsonpath=`), and the note on an empty node list. The datastore cases run
//! against a real etcd.

use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};

use crate::support::snapshot::netctl_snapshot;
use crate::support::{self, EtcdServer, Netctl};

const RESOURCES: &str = "apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-all, labels: {zone: a, role: edge}}
spec: {node: node1, interfaceName: '*'}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0}
spec: {node: node1, interfaceName: eth0, expectedIPs: [10.0.0.1]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: set-a}
spec: {nets: [10.0.0.0/8]}
";

fn against(etcd: &EtcdServer) -> Netctl {
    let mut netctl = Netctl::new();
    netctl
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint());
    netctl
}

/// Runs netctl with stdout a pipe whose reading end is already closed, so the first write fails
/// with EPIPE whatever the output's size; returns the exit code and stderr.
fn into_closed_pipe(etcd: Option<&EtcdServer>, args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer): (OwnedFd, OwnedFd) = rustix::pipe::pipe().expect("create a pipe");
    drop(reader);
    let home = tempfile::tempdir().expect("temporary HOME");
    let mut command = Command::new(Netctl::program());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped());
    if let Some(etcd) = etcd {
        command
            .env("DATASTORE_TYPE", "etcdv3")
            .env("ETCD_ENDPOINTS", etcd.endpoint());
    }
    let output = command.output().expect("run netctl");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_is_success_for_every_kind_of_output() {
    let etcd = EtcdServer::start();
    against(&etcd)
        .stdin(RESOURCES)
        .args(["apply", "-f", "-"])
        .assert()
        .success();
    for args in [
        &["completion", "bash"][..],
        &["completion", "zsh"],
        &["--help"],
        &["get", "--help"],
        &["runbook", "list"],
        &["get", "hep"],
        &["get", "hep", "-o", "yaml"],
        &["get", "hep", "node1-all", "-o", "json"],
        &["get", "hep", "-o", "jsonpath={.items[*].metadata.name}"],
        &["config", "view"],
        &[
            "upgrade",
            "plan",
            "--to",
            "v3.29.2",
            "--from",
            "v3.27.0",
            "--install-method",
            "operator",
            "--offline",
        ],
    ] {
        let (code, stderr) = into_closed_pipe(Some(&etcd), args);
        assert_eq!(
            code,
            Some(0),
            "netctl {args:?} into a closed pipe: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "netctl {args:?}: {stderr}");
    }
}

#[test]
fn a_mistyped_kind_gets_the_nearest_name_and_the_list_of_kinds() {
    netctl_snapshot!(Netctl::new().args(["get", "hostendpiont"]));
}

#[test]
fn a_kubectl_selector_gets_its_netctl_spelling() {
    netctl_snapshot!(Netctl::new().args(["get", "hep", "-l", "zone=a,!spot"]));
}

#[test]
fn delete_reads_directories_recursively_and_says_what_it_skipped() {
    let etcd = EtcdServer::start();
    let netctl = against(&etcd);
    netctl.write_file("resources/nested/all.yaml", RESOURCES);
    netctl.write_file("empty/none.yaml", "");
    let resources = netctl.home().join("resources");
    let empty = netctl.home().join("empty");
    against(&etcd)
        .args(["apply", "-R", "-f"])
        .arg(&resources)
        .assert()
        .success();

    // Without -R the sub-directory is not read: nothing to delete is an error unless --skip-empty.
    let mut command = against(&etcd);
    command.args(["delete", "-f"]).arg(&resources);
    let output = command.output();
    assert_eq!(output.status.code(), Some(1));
    let mut command = against(&etcd);
    command.args(["delete", "--skip-empty", "-f"]).arg(&empty);
    command.assert().success();

    let mut command = against(&etcd);
    command.args(["delete", "-R", "-f"]).arg(&resources);
    netctl_snapshot!(
        "delete_recursive",
        &command,
        filters = [(resources.display().to_string(), "[DIR]")]
    );
    for key in [
        "hostendpoints/node1-all",
        "hostendpoints/node1-eth0",
        "globalnetworksets/set-a",
    ] {
        let key = format!("/calico/resources/v3/projectcalico.org/{key}");
        assert_eq!(etcd.get(&key), None, "{key} is deleted");
    }

    netctl_snapshot!(
        "delete_skip_not_exists",
        against(&etcd).args(["delete", "globalnetworkset", "set-a", "-s"])
    );
    // `-R` and `--skip-empty` belong to `-f`: with a KIND they are usage errors (for `get` too,
    // where clap's `requires` alone let them through).
    for args in [
        &["delete", "gnetsets", "set-a", "-R"][..],
        &["delete", "gnetsets", "set-a", "--skip-empty"],
        &["get", "nodes", "-R"],
        &["get", "nodes", "--skip-empty"],
    ] {
        let output = against(&etcd).args(args).output();
        assert_eq!(output.status.code(), Some(64), "netctl {args:?}");
    }
}

#[test]
fn help_shows_examples_on_every_group_and_the_exit_codes() {
    netctl_snapshot!("help_top_level", Netctl::new().arg("--help"));
    for group in ["config", "upgrade", "runbook", "node", "ipam", "datastore"] {
        let output = Netctl::new().args([group, "--help"]).output();
        let help = String::from_utf8(output.stdout).unwrap();
        assert_eq!(output.status.code(), Some(0));
        assert!(
            help.contains("Examples:\n  netctl "),
            "`netctl {group} --help` has examples:\n{help}"
        );
    }
}

#[test]
fn the_readme_and_the_docs_give_the_exit_codes_help_gives() {
    let output = Netctl::new().arg("--help").output();
    let help = String::from_utf8(output.stdout).unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let executor =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/executor.md")).unwrap();
    // Every code `main` may end with, from the one table (`exit_code::TABLE`), is in `--help` and
    // the README; each is produced by a test (named beside it).
    for (code, meaning, _) in netctl::exit_code::TABLE {
        let words = meaning.split(':').next().unwrap();
        let in_help = help.lines().any(|line| {
            line.trim_start().starts_with(&format!("{code} ")) && line.contains(meaning)
        });
        let in_readme = readme
            .lines()
            .any(|line| line.starts_with(&format!("| {code} |")) && line.contains(words));
        assert!(
            in_help,
            "`--help` gives exit code {code} ({meaning}):\n{help}"
        );
        assert!(in_readme, "README gives exit code {code} ({words})");
    }
    // Produced by: 0 everywhere; 1 `a_stale_saved_plan_is_refused_naming_the_fact_that_changed`
    // and `netctl_diff_exits_0_without_differences_1_with_them_and_2_on_errors` (differences); 2
    // `detailed_exitcode_is_0_on_a_cluster_at_the_target_and_2_on_one_behind_it` and the diff
    // test (errors); 3 `an_unattended_run_stops_at_a_gate_and_resume_continues_past_it`; 4
    // `a_run_stops_at_a_safe_point_when_its_window_ends_and_resumes_in_the_next`; 64 below.
    for args in [
        &["frobnicate"][..],
        &["get"],
        &["upgrade", "plan", "--bogus"],
        &[],
    ] {
        let output = Netctl::new().args(args).output();
        assert_eq!(output.status.code(), Some(64), "netctl {args:?}");
    }
    for code in [
        "3 stopped at a gate",
        "4 stopped at the end of its window",
        "64 bad usage",
    ] {
        assert!(
            executor.contains(code),
            "docs/executor.md gives exit code {code}"
        );
    }
}

#[test]
fn kubectl_forms_of_get() {
    let etcd = EtcdServer::start();
    against(&etcd)
        .stdin(RESOURCES)
        .args(["apply", "-f", "-"])
        .assert()
        .success();
    netctl_snapshot!(
        "get_several_kinds",
        against(&etcd).args(["get", "hep,gnetsets"])
    );
    netctl_snapshot!(
        "get_kind_slash_name_with_labels",
        against(&etcd).args([
            "get",
            "hep/node1-all",
            "globalnetworkset/set-a",
            "--show-labels"
        ])
    );
    netctl_snapshot!(
        "get_no_headers",
        against(&etcd).args(["get", "hep", "-o", "wide", "--no-headers", "--show-labels"])
    );
    netctl_snapshot!(
        "get_jsonpath",
        against(&etcd).args([
            "get",
            "hep,gnetsets",
            "-o",
            r#"jsonpath={range .items[*]}{.kind}/{.metadata.name} {.spec.interfaceName}{"\n"}{end}"#,
        ])
    );
    netctl_snapshot!(
        "get_jsonpath_by_name",
        against(&etcd).args([
            "get",
            "hep/node1-all",
            "-o",
            "jsonpath={.metadata.labels.zone}"
        ])
    );
    netctl_snapshot!(
        "get_mixed_forms_refused",
        against(&etcd).args(["get", "hep/node1-all", "node1-eth0"])
    );
    netctl_snapshot!(
        "get_bad_jsonpath",
        against(&etcd).args(["get", "hep", "-o", "jsonpath={.items[}"])
    );
}

#[test]
fn an_empty_node_list_says_what_it_means() {
    let etcd = EtcdServer::start();
    netctl_snapshot!(against(&etcd).args(["get", "nodes"]));
}

#[test]
fn configuration_traps_are_named() {
    // A set-but-empty NET_ETCD_ENDPOINTS shadows ETCD_ENDPOINTS: the error names the winner.
    netctl_snapshot!(
        "empty_prefixed_endpoints",
        Netctl::new()
            .env("DATASTORE_TYPE", "etcdv3")
            .env("NET_ETCD_ENDPOINTS", "")
            .env("ETCD_ENDPOINTS", "http://127.0.0.1:2379")
            .args(["get", "nodes"])
    );

    // A config file in use makes the environment's settings ignored: said at info level and by
    // `config view`.
    let etcd = EtcdServer::start();
    let mut netctl = Netctl::new();
    netctl
        .config_file(&format!(
            "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: {}\n",
            etcd.endpoint()
        ))
        .env("ETCD_ENDPOINTS", "http://192.0.2.1:2379");
    let home = netctl.home().display().to_string();
    let endpoint = etcd.endpoint();
    let filters = [(home.as_str(), "[HOME]"), (endpoint.as_str(), "[ENDPOINT]")];
    netctl.args(["config", "view"]);
    netctl_snapshot!("file_shadows_environment_view", &netctl, filters = filters);
    let mut netctl_info = Netctl::new();
    netctl_info
        .config_file(&format!(
            "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: {}\n",
            etcd.endpoint()
        ))
        .env("ETCD_ENDPOINTS", "http://192.0.2.1:2379")
        .args(["--log-level", "info", "get", "nodes", "--no-headers"]);
    let home = netctl_info.home().display().to_string();
    let filters = [(home.as_str(), "[HOME]"), (endpoint.as_str(), "[ENDPOINT]")];
    netctl_snapshot!(
        "file_shadows_environment_info",
        &netctl_info,
        filters = filters
    );
}

/// Every long flag of every command, as `--help` lists it, with the command path.
fn every_flag(command: &clap::Command, path: &str, flags: &mut Vec<(String, String)>) {
    for argument in command.get_arguments() {
        if argument.is_hide_set() {
            continue;
        }
        if let Some(long) = argument.get_long() {
            flags.push((path.to_string(), format!("--{long}")));
        }
    }
    for subcommand in command.get_subcommands() {
        let path = format!("{path} {}", subcommand.get_name());
        every_flag(subcommand, &path, flags);
    }
}

#[test]
fn the_readme_command_summary_lists_every_flag_the_help_has() {
    use clap::CommandFactory;
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("## Commands")
        .expect("README has a Commands section");
    let end = start
        + readme[start..]
            .find("\n## ")
            .expect("a section follows Commands");
    let summary = &readme[start..end];
    let mut flags = Vec::new();
    every_flag(&netctl::cli::Cli::command(), "netctl", &mut flags);
    // A command's flags must be on its own line(s) of the summary (the lines that begin
    // `netctl <command>`, continuation lines included); the global options on the first line.
    let lines_of = |command: &str| -> String {
        let mut text = String::new();
        let mut inside = false;
        for line in summary.lines() {
            if let Some(rest) = line.strip_prefix("netctl ") {
                let first = rest.split(' ').next().unwrap_or_default();
                inside = if command.is_empty() {
                    first.starts_with('[')
                } else {
                    first.split('|').any(|name| name == command)
                };
            } else if !line.starts_with(' ') {
                inside = false;
            }
            if inside {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    };
    let missing: Vec<String> = flags
        .iter()
        .filter(|(_, flag)| flag != "--help" && flag != "--version")
        .filter(|(path, flag)| {
            let command = path.split(' ').nth(1).unwrap_or_default();
            let global = netctl::cli::Cli::command()
                .get_arguments()
                .any(|argument| argument.get_long() == Some(&flag[2..]));
            let lines = lines_of(if global { "" } else { command });
            !lines
                .split(|character: char| !(character.is_ascii_alphanumeric() || character == '-'))
                .any(|word| word == flag)
        })
        .map(|(path, flag)| format!("{path} {flag}"))
        .collect();
    assert!(
        missing.is_empty(),
        "README's command summary misses: {missing:#?}"
    );
    for (needle, what) in [
        ("target/release/netctl", "where the built binary is"),
        ("PATH", "how to put it on PATH"),
        ("docs/executor.md", "the executor document"),
    ] {
        assert!(readme.contains(needle), "README says {what} (`{needle}`)");
    }
}

fn tls_config(
    endpoint: &str,
    ca: &std::path::Path,
    cert: &std::path::Path,
    key: &std::path::Path,
) -> String {
    format!(
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: {endpoint}\n  etcdCACertFile: {}\n  etcdCertFile: {}\n  etcdKeyFile: {}\n",
        ca.display(),
        cert.display(),
        key.display()
    )
}

#[test]
fn config_check_names_each_cause() {
    use support::{Ca, NotEtcdServer, Pki};
    let pki = Pki::generate();
    let tls = EtcdServer::builder().tls(&pki).start();
    let plain = EtcdServer::start();
    let not_etcd = NotEtcdServer::start();
    let tls_endpoint = tls.endpoint();
    let tls_port = tls_endpoint.rsplit(':').next().unwrap().to_string();
    let plain_port = plain.endpoint().rsplit(':').next().unwrap().to_string();
    let pki_dir = pki.dir().display().to_string();
    let client = pki.client(Ca::A);
    let other = pki.client(Ca::B);
    let filters = |netctl: &Netctl| {
        vec![
            (netctl.home().display().to_string(), "[HOME]"),
            (pki_dir.clone(), "[PKI]"),
            (tls_port.clone(), "[TLS-PORT]"),
            (plain_port.clone(), "[PLAIN-PORT]"),
            (not_etcd.endpoint(), "[NOT-ETCD]"),
        ]
    };
    let run = |name: &str, netctl: &mut Netctl| {
        netctl.args(["config", "check"]);
        let transcript = support::snapshot::transcript(&netctl.run(), filters(netctl));
        insta::assert_snapshot!(name, transcript);
    };

    run(
        "config_check_tls_ok",
        Netctl::new().config_file(&tls_config(
            &tls_endpoint,
            pki.ca_bundle(),
            &client.cert,
            &client.key,
        )),
    );
    run(
        "config_check_plain_ok",
        Netctl::new()
            .env("DATASTORE_TYPE", "etcdv3")
            .env("ETCD_ENDPOINTS", plain.endpoint()),
    );
    run(
        "config_check_http_against_tls",
        Netctl::new().env("DATASTORE_TYPE", "etcdv3").env(
            "ETCD_ENDPOINTS",
            tls_endpoint.replace("https://", "http://"),
        ),
    );
    run(
        "config_check_https_against_plain",
        Netctl::new()
            .env("DATASTORE_TYPE", "etcdv3")
            .env(
                "ETCD_ENDPOINTS",
                plain.endpoint().replace("http://", "https://"),
            )
            .env("ETCD_CA_CERT_FILE", pki.ca_bundle()),
    );
    run(
        "config_check_not_etcd",
        Netctl::new()
            .env("DATASTORE_TYPE", "etcdv3")
            .env("ETCD_ENDPOINTS", not_etcd.endpoint()),
    );
    run(
        "config_check_key_of_another_certificate",
        Netctl::new().config_file(&tls_config(
            &tls_endpoint,
            pki.ca_bundle(),
            &client.cert,
            &other.key,
        )),
    );
    run(
        "config_check_swapped_files",
        Netctl::new().config_file(&tls_config(
            &tls_endpoint,
            pki.ca_bundle(),
            &client.key,
            &client.cert,
        )),
    );
    let dns = support::DnsServer::builder()
        .etcd_client("cluster.test", "localhost", plain.port(), 0, 10)
        .start();
    run(
        "config_check_srv",
        Netctl::new()
            .resolver(&dns)
            .env("DATASTORE_TYPE", "etcdv3")
            .env("ETCD_DISCOVERY_SRV", "cluster.test"),
    );
    run(
        "config_check_missing_ca",
        Netctl::new().config_file(&tls_config(
            &tls_endpoint,
            std::path::Path::new("/nonexistent/ca.pem"),
            &client.cert,
            &client.key,
        )),
    );
}

#[test]
fn install_script_puts_binary_completions_man_pages_and_schemas_in_place() {
    let prefix = tempfile::tempdir().unwrap();
    support::install_into(prefix.path());
    for file in [
        "bin/netctl",
        "share/bash-completion/completions/netctl",
        "share/zsh/site-functions/_netctl",
        "share/fish/vendor_completions.d/netctl.fish",
        "share/man/man1/netctl.1",
        "share/man/man1/netctl-get.1",
        "share/man/man1/netctl-upgrade-apply.1",
        "share/netctl/schemas/hostendpoints.schema.json",
        "share/netctl/schemas/netapiconfig.schema.json",
        "share/netctl/schemas/runbook.schema.json",
    ] {
        let path = prefix.path().join(file);
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        assert!(size > 0, "{file} is installed and not empty");
    }
    let page = std::fs::read_to_string(prefix.path().join("share/man/man1/netctl-get.1")).unwrap();
    assert!(page.contains(".TH netctl-get 1"), "{page}");
    assert!(
        page.contains("show\\-labels"),
        "the get page lists --show-labels"
    );
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            prefix
                .path()
                .join("share/netctl/schemas/hostendpoints.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(schema["$id"], "urn:netctl:schema:hostendpoints.schema.json");
    let line = prefix
        .path()
        .join("share/netctl/schemas/v3.29/hostendpoints.schema.json");
    assert!(line.is_file(), "the older lines' schemas are installed too");
    // The completion scripts call the installed binary back.
    let installed = prefix.path().join("bin/netctl");
    for file in [
        "share/bash-completion/completions/netctl",
        "share/zsh/site-functions/_netctl",
        "share/fish/vendor_completions.d/netctl.fish",
    ] {
        let script = std::fs::read_to_string(prefix.path().join(file)).unwrap();
        assert!(
            script.contains(&*installed.to_string_lossy()),
            "{file} calls `{}`:\n{script}",
            installed.display()
        );
    }
    // Without a BASE, the modeline names the schemas installed beside the binary.
    let etcd = EtcdServer::start();
    against(&etcd)
        .stdin(RESOURCES)
        .args(["apply", "-f", "-"])
        .assert()
        .success();
    let mut get = Netctl::with_program(&installed);
    get.env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint())
        .args(["get", "hep", "node1-all", "-o", "yaml", "--schema-modeline"]);
    let output = get.output();
    let yaml = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{yaml}");
    let schema = prefix
        .path()
        .join("share/netctl/schemas/hostendpoints.schema.json");
    assert!(
        yaml.starts_with(&format!(
            "# yaml-language-server: $schema={}\napiVersion: projectcalico.org/v3\n",
            schema.display()
        )),
        "{yaml}"
    );
}

#[test]
fn get_writes_a_schema_modeline_when_asked() {
    let etcd = EtcdServer::start();
    against(&etcd)
        .stdin(RESOURCES)
        .args(["apply", "-f", "-"])
        .assert()
        .success();
    netctl_snapshot!(
        "schema_modeline_export",
        against(&etcd).args([
            "get",
            "hep",
            "node1-all",
            "-o",
            "yaml",
            "--export",
            "--schema-modeline=https://schemas.example.test/netctl/"
        ])
    );
    // By the rules of `--release`: that line's schema; `KIND/NAME` and `-f` name one resource too.
    let output = against(&etcd)
        .args(["get", "gnetsets/set-a", "-o", "yaml", "--release", "v3.29"])
        .arg("--schema-modeline=/srv/schemas")
        .output();
    assert_eq!(output.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with(
            "# yaml-language-server: $schema=/srv/schemas/v3.29/globalnetworksets.schema.json\n"
        ),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    // Without the flag, the output is what it always was: no modeline.
    let plain = against(&etcd)
        .args(["get", "hep", "node1-all", "-o", "yaml", "--export"])
        .output();
    assert!(String::from_utf8_lossy(&plain.stdout).starts_with("apiVersion: "));
    // A resource that does not exist: what `get` prints for it (`[]`), after the line, and exit 1.
    let missing = against(&etcd)
        .args(["get", "hep", "nowhere", "-o", "yaml", "--schema-modeline=x"])
        .output();
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stdout),
        "# yaml-language-server: $schema=x/hostendpoints.schema.json\n[]\n"
    );
}

#[test]
fn a_schema_modeline_needs_one_yaml_document() {
    netctl_snapshot!(
        "schema_modeline_of_a_list",
        Netctl::new().args(["get", "hep", "-o", "yaml", "--schema-modeline=x"])
    );
    netctl_snapshot!(
        "schema_modeline_as_json",
        Netctl::new().args(["get", "hep", "a", "-o", "json", "--schema-modeline=x"])
    );
}

#[test]
fn schema_prints_one_kind_with_its_id() {
    let output = Netctl::new().args(["schema", "gnp"]).output();
    assert_eq!(output.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        schema["$id"],
        "urn:netctl:schema:globalnetworkpolicies.schema.json"
    );
    assert_eq!(schema["title"], "GlobalNetworkPolicy");
    netctl_snapshot!(
        "schema_unknown_kind",
        Netctl::new().args(["schema", "hostendpiont"])
    );
}

/// Every committed schema has an `$id` and is exactly what `netctl schema` prints for its kind and
/// release line, and `schema --all` writes exactly the committed tree: they cannot drift apart.
#[test]
fn committed_schemas_are_what_netctl_schema_prints() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let written = tempfile::tempdir().unwrap();
    Netctl::new()
        .args(["schema", "--all"])
        .arg(written.path())
        .assert()
        .success();
    let files = |root: &std::path::Path| -> Vec<String> {
        let mut found = Vec::new();
        let mut directories = vec![root.to_path_buf()];
        while let Some(directory) = directories.pop() {
            for entry in std::fs::read_dir(&directory).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    directories.push(path);
                } else {
                    let relative = path.strip_prefix(root).unwrap();
                    found.push(relative.to_string_lossy().into_owned());
                }
            }
        }
        found.sort();
        found
    };
    let paths = files(&committed);
    assert_eq!(
        paths,
        files(written.path()),
        "schema --all writes the committed files"
    );
    assert!(paths.len() > 60, "{paths:?}");
    for path in &paths {
        let text = std::fs::read_to_string(committed.join(path)).unwrap();
        assert_eq!(
            text,
            std::fs::read_to_string(written.path().join(path)).unwrap(),
            "schemas/{path} is what `netctl schema --all` writes"
        );
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(schema["$id"], format!("urn:netctl:schema:{path}"), "{path}");
        let (line, file) = match path.split_once('/') {
            Some((line, file)) => (Some(line), file),
            None => (None, path.as_str()),
        };
        let mut command = Netctl::new();
        command.args(["schema", file.trim_end_matches(".schema.json")]);
        if let Some(line) = line {
            command.args(["--release", line]);
        }
        let output = command.output();
        assert_eq!(output.status.code(), Some(0), "netctl schema for {path}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            text,
            "`netctl schema` prints schemas/{path}"
        );
    }
}
