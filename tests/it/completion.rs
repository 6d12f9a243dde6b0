//! Shell completion as a user gets it: the script `netctl completion bash` prints is sourced into a
//! real bash and its completion function called as bash calls it on TAB, so each test goes through
//! the script, the call back into the binary and clap's engine. Resource names come from a real
//! etcd; a hung etcd (SIGSTOP) must give no names, no message and no long wait. zsh and fish are not
//! installed here: their scripts are checked for the call back only.

use std::time::{Duration, Instant};

use crate::support::{EtcdServer, Netctl};

const RESOURCES: &str = "apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-all}
spec: {node: node1, interfaceName: '*'}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0}
spec: {node: node1, interfaceName: eth0, expectedIPs: [10.0.0.1]}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node2-all}
spec: {node: node2, interfaceName: '*'}
---
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: prod-clients, namespace: prod}
spec: {nets: [10.1.0.0/16]}
";

/// Sources the bash script and calls its function as bash does on TAB at the end of `$LINE`: with
/// COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT set and the word being completed and the one before
/// it as `$2` and `$3`. Prints the candidates, one a line.
const DRIVER: &str = r#"
source <("$NETCTL" completion bash) || exit 9
declare -F _netctl_complete > /dev/null || { echo "the script defines no _netctl_complete" >&2; exit 8; }
current=$1
previous=$2
shift 2
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE=$LINE
COMP_POINT=${#COMP_LINE}
COMP_TYPE=9
_netctl_complete netctl "$current" "$previous"
printf '%s\n' "${COMPREPLY[@]}"
"#;

/// The words bash makes of `line` for completion (checked against bash 5.2's readline): split at
/// blanks, and each run of the word-break characters `=` and `:` (of the default COMP_WORDBREAKS)
/// is a word of its own. Returns the words, the one being completed (readline's text after the
/// last break, empty right after one) and the word before.
fn bash_words(line: &str) -> (Vec<String>, String, String) {
    let mut words = Vec::new();
    for token in line.split(' ').filter(|token| !token.is_empty()) {
        let mut piece = String::new();
        let mut breaking = false;
        for character in token.chars() {
            let is_break = matches!(character, '=' | ':');
            if is_break != breaking && !piece.is_empty() {
                words.push(std::mem::take(&mut piece));
            }
            breaking = is_break;
            piece.push(character);
        }
        words.push(piece);
    }
    if line.ends_with(' ') {
        words.push(String::new());
    }
    let last = words.last().cloned().unwrap_or_default();
    let current = if last.chars().all(|c| matches!(c, '=' | ':')) {
        String::new()
    } else {
        last
    };
    let previous = words
        .len()
        .checked_sub(2)
        .map(|i| words[i].clone())
        .unwrap_or_default();
    (words, current, previous)
}

struct Completion {
    candidates: Vec<String>,
    stderr: String,
    took: Duration,
}

/// Completes at the end of `line` (`"netctl get ho"`, `"netctl get "`) with the environment
/// `netctl` carries.
fn complete_with(netctl: &mut Netctl, line: &str) -> Completion {
    let (words, current, previous) = bash_words(line);
    netctl
        .env("NETCTL", Netctl::program())
        .env("LINE", line)
        .args(["--norc", "--noprofile", "-c", DRIVER, "bash"])
        .arg(&current)
        .arg(&previous)
        .args(&words);
    let started = Instant::now();
    let output = netctl.output();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "completing `{line}`: {:?}\n{stderr}",
        output.status
    );
    Completion {
        candidates: String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| !line.is_empty())
            .map(str::to_string)
            .collect(),
        stderr,
        took,
    }
}

#[test]
fn the_test_splits_words_as_bash_does() {
    let (words, current, previous) = bash_words("netctl --set a=");
    assert_eq!(words, ["netctl", "--set", "a", "="]);
    assert_eq!((current.as_str(), previous.as_str()), ("", "a"));
    let (words, current, _) = bash_words("netctl -o custom-columns=NAME,IN");
    assert_eq!(words, ["netctl", "-o", "custom-columns", "=", "NAME,IN"]);
    assert_eq!(current, "NAME,IN");
    let (words, current, previous) = bash_words("netctl get ");
    assert_eq!(words, ["netctl", "get", ""]);
    assert_eq!((current.as_str(), previous.as_str()), ("", "get"));
}

fn bash() -> Netctl {
    Netctl::with_program("bash")
}

fn complete(line: &str) -> Vec<String> {
    let completion = complete_with(&mut bash(), line);
    assert_eq!(completion.stderr, "", "completing `{line}`");
    completion.candidates
}

fn against(etcd: &EtcdServer) -> Netctl {
    let mut netctl = bash();
    netctl
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint());
    netctl
}

fn with_resources() -> EtcdServer {
    let etcd = EtcdServer::start();
    Netctl::new()
        .env("DATASTORE_TYPE", "etcdv3")
        .env("ETCD_ENDPOINTS", etcd.endpoint())
        .stdin(RESOURCES)
        .args(["apply", "-f", "-"])
        .assert()
        .success();
    etcd
}

#[test]
fn commands_and_flags_still_complete() {
    assert_eq!(complete("netctl ge"), ["get"]);
    assert_eq!(complete("netctl get --no-h"), ["--no-headers"]);
}

#[test]
fn kinds_and_their_aliases_complete_after_get() {
    assert_eq!(complete("netctl get ho"), ["hostendpoint", "hostendpoints"]);
    assert_eq!(complete("netctl get he"), ["hep", "heps"]);
    // Nothing typed: one name per kind, the plural kubectl users know.
    let every = complete("netctl get ");
    assert_eq!(every.len(), netctl::resource::Kind::ALL.len(), "{every:?}");
    assert!(every.contains(&"globalnetworkpolicies".to_string()));
    // The next kind of a list, and the kinds of `delete` and `label` too.
    assert_eq!(
        complete("netctl get hep,globalnetworkp"),
        ["hep,globalnetworkpolicy", "hep,globalnetworkpolicies"]
    );
    assert_eq!(complete("netctl delete ippoo"), ["ippool", "ippools"]);
    assert_eq!(complete("netctl label tie"), ["tier", "tiers"]);
}

#[test]
fn output_formats_complete_after_dash_o() {
    assert_eq!(
        complete("netctl get hep -o "),
        [
            "ps",
            "wide",
            "yaml",
            "json",
            "name",
            "custom-columns=",
            "jsonpath=",
            "go-template=",
            "go-template-file="
        ]
    );
    assert_eq!(complete("netctl get hep -o j"), ["json", "jsonpath="]);
    assert_eq!(
        complete("netctl get hep -o go"),
        ["go-template=", "go-template-file="]
    );
    // After `custom-columns=`: the headings of the kind named before, offered as readline replaces
    // them (the text after the `=`).
    assert_eq!(
        complete("netctl get hep -o custom-columns=NAME,IN"),
        ["NAME,INTERFACE"]
    );
    assert!(complete("netctl get hep -o custom-columns=").contains(&"NODE".to_string()));
}

#[test]
fn install_methods_procedures_and_facts_complete() {
    assert_eq!(
        complete("netctl upgrade plan --install-method "),
        ["operator", "helm", "manifest"]
    );
    let procedures = complete("netctl upgrade plan --procedure ");
    for procedure in ["upgrade", "auto-host-endpoints"] {
        assert!(
            procedures.contains(&procedure.to_string()),
            "{procedure} not in {procedures:?}"
        );
    }
    assert_eq!(
        complete("netctl upgrade apply --procedure auto-h"),
        ["auto-host-endpoints"]
    );
    let facts = complete("netctl runbook render --set ");
    assert_eq!(facts.len(), 16, "{facts:?}");
    assert!(facts.iter().all(|fact| fact.ends_with('=')), "{facts:?}");
    assert!(facts.contains(&"all_interfaces_host_endpoints=".to_string()));
    assert_eq!(complete("netctl upgrade plan --set alp"), ["alp_enabled="]);
    // After `NAME=`, the values of a fact with a fixed set of them.
    assert_eq!(
        complete("netctl upgrade plan --set install_method="),
        ["operator", "helm", "manifest"]
    );
    assert_eq!(
        complete("netctl upgrade plan --set alp_enabled=t"),
        ["true"]
    );
    assert_eq!(
        complete("netctl upgrade plan --set calico_api_group="),
        ["crd.projectcalico.org/v1", "projectcalico.org/v3"]
    );
}

#[test]
fn resource_names_come_from_the_datastore() {
    let etcd = with_resources();
    let names = |line: &str| {
        let completion = complete_with(&mut against(&etcd), line);
        assert_eq!(completion.stderr, "", "completing `{line}`");
        completion.candidates
    };
    assert_eq!(
        names("netctl get hostendpoint "),
        ["node1-all", "node1-eth0", "node2-all"]
    );
    assert_eq!(
        names("netctl get hep node1-all node1-"),
        ["node1-all", "node1-eth0"]
    );
    assert_eq!(names("netctl delete heps node2"), ["node2-all"]);
    assert_eq!(names("netctl label hep node1-e"), ["node1-eth0"]);
    assert_eq!(
        names("netctl get hep/node1"),
        ["hep/node1-all", "hep/node1-eth0"]
    );
    // Namespaced kinds: `-n` as the command reads it, `default` otherwise.
    assert_eq!(names("netctl get networkset -n prod "), ["prod-clients"]);
    assert!(names("netctl get networkset ").is_empty());
    // A kind the datastore holds none of.
    assert!(names("netctl get ippool ").is_empty());
}

#[test]
fn names_follow_the_configuration_the_command_would_use() {
    let etcd = with_resources();
    // Only `-c FILE` on the line being completed says where the datastore is.
    let mut netctl = bash();
    let config = netctl.write_file("netctl.cfg", etcd.netctl_config_yaml());
    let line = format!("netctl -c {} get hep node2", config.display());
    let completion = complete_with(&mut netctl, &line);
    assert_eq!(completion.candidates, ["node2-all"]);
    assert_eq!(completion.stderr, "");
    // No configuration at all: nothing, silently.
    let completion = complete_with(&mut bash(), "netctl get hep ");
    assert!(
        completion.candidates.is_empty(),
        "{:?}",
        completion.candidates
    );
    assert_eq!(completion.stderr, "");
}

#[test]
fn a_hung_datastore_gives_no_names_no_message_and_no_long_wait() {
    let mut etcd = with_resources();
    etcd.pause();
    let completion = complete_with(&mut against(&etcd), "netctl get hep ");
    etcd.resume();
    assert!(
        completion.candidates.is_empty(),
        "{:?}",
        completion.candidates
    );
    assert_eq!(completion.stderr, "");
    // The lookup's budget is 1.5 s; the rest is bash and two netctl starts on a loaded machine.
    assert!(
        completion.took < Duration::from_secs(8),
        "completion took {:?}",
        completion.took
    );
    assert!(
        completion.took >= Duration::from_millis(1400),
        "a hung etcd answered within {:?}: the test did not hang it",
        completion.took
    );
}

#[test]
fn zsh_fish_elvish_and_powershell_scripts_call_netctl_back() {
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let output = Netctl::new().args(["completion", shell]).output();
        assert!(output.status.success(), "completion {shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains("NETCTL_COMPLETE"), "{shell}: {script}");
        assert!(
            script.contains(&*Netctl::program().to_string_lossy()),
            "{shell}: the script calls the binary that wrote it: {script}"
        );
    }
    // What the fish script asks: the words up to the cursor, then the current one.
    let output = Netctl::new()
        .env("NETCTL_COMPLETE", "fish")
        .args(["--", "netctl", "get", "hostendpoint", "-o", "ya"])
        .output();
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "yaml");
}

#[test]
fn node_status_completes_node_names_from_the_datastore() {
    let etcd = EtcdServer::start();
    for node in ["node-1", "node-2", "other"] {
        etcd.put(
            &format!("/calico/resources/v3/projectcalico.org/nodes/{node}"),
            format!(r#"{{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{{"name":"{node}"}},"spec":{{}}}}"#),
        );
    }
    let completion = complete_with(&mut against(&etcd), "netctl node status --node no");
    assert_eq!(completion.stderr, "");
    assert_eq!(completion.candidates, ["node-1", "node-2"]);
}
