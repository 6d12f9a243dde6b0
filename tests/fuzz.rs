//! Fuzzing of netctl's readers of untrusted text: label selectors, resource documents, the
//! `NetAPIConfig` file and runbooks. Each target takes inputs from a seed corpus of real-looking texts
//! mutated at random (bytes flipped, inserted, deleted, duplicated, spliced with other seeds, and
//! tokens that parsers trip on inserted: anchors, aliases, tags, flow brackets, quotes, YAML 1.1
//! scalars) plus plain random text, and checks what must hold for every input:
//!
//! - no panic (a panic is caught, the input is saved and the test fails with it);
//! - an answer in bounded time (an input that takes longer than [`SLOW_INPUT`] fails the same way);
//! - for selectors, the canonical form parses again to an equal selector and matches the same labels;
//! - refusals carry a message.
//!
//! The run is bounded by time, not by a number of cases: `NETCTL_FUZZ_SECONDS` per target (default 3 in
//! the normal test run; `.ci/run` gives each target 60 s). The random seed is printed, and
//! `NETCTL_FUZZ_SEED` replays a run. Inputs that once failed live in `tests/fuzz_regressions/TARGET/`
//! and are replayed first on every run: a crash found becomes a regression test by saving the input
//! the failure printed into that directory.
//!
//! proptest (already a development dependency) supplies the random generator and text strategies;
//! cargo-fuzz would need a nightly compiler and a separate build, which CI does not have.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use netctl::plan::lint::lint_files;
use netctl::resource::Loader;
use netctl::resource::selector::Selector;
use netctl::resource::validate::validate_and_default;
use proptest::prelude::Rng;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// One input taking longer than this is a failure: every reader here is linear or bounded.
const SLOW_INPUT: Duration = Duration::from_secs(2);

/// Tokens that parsers of YAML, selectors and templates treat specially.
const DICTIONARY: &[&str] = &[
    ":",
    ": ",
    "- ",
    "-",
    "---\n",
    "...\n",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!str ",
    "!!int ",
    "!!binary ",
    "!tag ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "\"",
    "'",
    "\\",
    "\\u00",
    "#",
    "\n",
    "\n  ",
    "\t",
    "|\n",
    ">-\n",
    "? ",
    "~",
    "null",
    "yes",
    "No",
    "ON",
    "0x1F",
    "0o17",
    "0400",
    "1e999",
    ".inf",
    "-.NaN",
    "12:30:00",
    "2001-12-14",
    "\u{feff}",
    "\u{0}",
    "\u{85}",
    "\u{2028}",
    "é",
    "{{ ",
    " }}",
    "{{",
    "}}",
    "{{ to }}",
    "{{ namespace | default('x') }}",
    "==",
    "!=",
    "&&",
    "||",
    "!",
    "(",
    ")",
    "has(",
    "all()",
    "global()",
    " in {",
    " not in {",
    "contains(",
    "starts with ",
    "ends with ",
    "projectcalico.org/",
    "0.0.0.0/0",
    "::/0",
    "10.0.0.0/33",
    "apiVersion: projectcalico.org/v3\n",
    "kind: ",
    "metadata:\n  name: ",
    "spec:\n",
    "65536",
    "-1",
    "99999999999999999999999",
];

/// Runs `check` on every saved regression input of `target`, then on fresh inputs until the time
/// budget is spent. Fails with the input (escaped, and saved to a file) on a panic, a slow answer or
/// a broken property.
fn fuzz(target: &str, seeds: &[String], check: fn(&str) -> Result<(), String>) {
    for (path, input) in regressions(target) {
        if let Err(failure) = run_one(check, &input) {
            panic!(
                "fuzz target `{target}`: regression input {} fails again: {failure}",
                path.display()
            );
        }
    }
    let budget = Duration::from_secs_f64(
        std::env::var("NETCTL_FUZZ_SECONDS")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(3.0),
    );
    let seed: u64 = std::env::var("NETCTL_FUZZ_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(0, |since| since.as_nanos() as u64) ^ u64::from(std::process::id())
        });
    eprintln!(
        "fuzz target `{target}`: seed {seed} (replay with NETCTL_FUZZ_SEED={seed}), {budget:?}"
    );
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let random_text = proptest::string::string_regex(r"(?s).{0,200}").expect("a valid regex");
    let started = Instant::now();
    let mut inputs = 0u64;
    while started.elapsed() < budget {
        let input = if runner.rng().random_ratio(1, 8) {
            random_text
                .new_tree(&mut runner)
                .expect("random text")
                .current()
        } else {
            mutate(seeds, runner.rng())
        };
        if let Err(failure) = run_one(check, &input) {
            let saved = save_failure(target, &input);
            panic!(
                "fuzz target `{target}` failed after {inputs} inputs (seed {seed}): {failure}\n\
                 input: {input:?}\nsaved to {} (move it into tests/fuzz_regressions/{target}/ to keep it)",
                saved.display()
            );
        }
        inputs += 1;
    }
    eprintln!(
        "fuzz target `{target}`: {inputs} inputs in {:?}, no failure",
        started.elapsed()
    );
    assert!(inputs > 0, "the time budget allowed no input at all");
}

fn run_one(check: fn(&str) -> Result<(), String>, input: &str) -> Result<(), String> {
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| check(input)));
    let took = started.elapsed();
    match outcome {
        Err(panic) => Err(format!("panicked: {}", panic_text(&panic))),
        Ok(Err(broken)) => Err(broken),
        Ok(Ok(())) if took > SLOW_INPUT => Err(format!("took {took:?} (limit {SLOW_INPUT:?})")),
        Ok(Ok(())) => Ok(()),
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "(not a text)".to_string()
    }
}

/// One seed changed by one to four random edits, at character boundaries.
fn mutate(seeds: &[String], random: &mut TestRng) -> String {
    let mut text: Vec<char> = seeds[random.random_range(0..seeds.len())].chars().collect();
    for _ in 0..random.random_range(1..=4) {
        let at = random.random_range(0..=text.len());
        match random.random_range(0..6) {
            0 => {
                let token = DICTIONARY[random.random_range(0..DICTIONARY.len())];
                text.splice(at..at, token.chars());
            }
            1 if at < text.len() => {
                let end = (at + random.random_range(1..=16)).min(text.len());
                text.drain(at..end);
            }
            2 if at < text.len() => {
                let end = (at + random.random_range(1..=32)).min(text.len());
                let copy: Vec<char> = text[at..end].to_vec();
                text.splice(at..at, copy);
            }
            3 if at < text.len() => {
                text[at] = char::from_u32(random.random_range(0..0x80)).unwrap_or('?');
            }
            4 => {
                let other: Vec<char> = seeds[random.random_range(0..seeds.len())].chars().collect();
                let from = random.random_range(0..=other.len());
                let end = (from + random.random_range(0..=64)).min(other.len());
                text.splice(at..at, other[from..end].iter().copied());
            }
            _ => {
                // Cut the text short: half-written files happen.
                text.truncate(at);
            }
        }
    }
    text.into_iter().collect()
}

fn regressions(target: &str) -> Vec<(PathBuf, String)> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&directory) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| Some(entry.ok()?.path()))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).expect("read a regression input");
            (path, String::from_utf8_lossy(&bytes).into_owned())
        })
        .collect()
}

fn save_failure(target: &str, input: &str) -> PathBuf {
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fuzz-failures")
        .join(target);
    std::fs::create_dir_all(&directory).expect("create the failure directory");
    let path = directory.join(format!("input-{}.txt", std::process::id()));
    std::fs::write(&path, input).expect("save the failing input");
    path
}

fn repository_files(directory: &str) -> Vec<String> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join(directory);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("read {}: {error}", directory.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| std::fs::read_to_string(path).expect("read a seed file"))
        .collect()
}

// --- label selectors ----------------------------------------------------------------------------

fn selector_seeds() -> Vec<String> {
    [
        "",
        "all()",
        "role == \"db\"",
        "role == 'db' && !has(quarantine)",
        "zone in {\"a\", \"b\"} || tier not in {'frontend'}",
        "has(projectcalico.org/namespace) && projectcalico.org/name == \"default\"",
        "name starts with \"web-\" && name ends with '-1' && name contains \"x\"",
        "global()",
        "((a == 'b') || (c != \"d\")) && !(e == 'f')",
        "k8s-app == 'calico-node' && !has(node-role.kubernetes.io/master)",
        "host-endpoint-upgrade == 'true'",
        "a/b.c-d_e == \"v\"",
    ]
    .map(String::from)
    .to_vec()
}

fn check_selector(input: &str) -> Result<(), String> {
    let Ok(selector) = Selector::parse(input) else {
        return Ok(());
    };
    let canonical = selector.to_string();
    let again = Selector::parse(&canonical)
        .map_err(|error| format!("canonical form {canonical:?} does not parse: {error}"))?;
    if again != selector {
        return Err(format!(
            "canonical form {canonical:?} parses to a different selector"
        ));
    }
    for labels in sample_labels() {
        if selector.matches(&labels) != again.matches(&labels) {
            return Err(format!(
                "canonical form {canonical:?} matches {labels:?} differently"
            ));
        }
    }
    Ok(())
}

fn sample_labels() -> Vec<BTreeMap<String, String>> {
    let pairs: &[&[(&str, &str)]] = &[
        &[],
        &[("role", "db"), ("zone", "a")],
        &[
            ("tier", "frontend"),
            ("name", "web-x-1"),
            ("quarantine", ""),
        ],
        &[
            ("projectcalico.org/namespace", "default"),
            ("projectcalico.org/name", "default"),
        ],
    ];
    pairs
        .iter()
        .map(|labels| {
            labels
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn selectors() {
    fuzz("selector", &selector_seeds(), check_selector);
}

// --- resource documents ---------------------------------------------------------------------------

fn resource_seeds() -> Vec<String> {
    vec![
        "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata:\n  name: node-a-eth0\n  labels:\n    role: db\n    routeReflector: yes\nspec:\n  node: node-a\n  interfaceName: eth0\n  expectedIPs: [\"10.0.0.1\", \"fd00::1\"]\n  ports:\n  - name: https\n    port: 443\n    protocol: TCP\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata:\n  name: allow-dns\nspec:\n  order: 100\n  selector: all()\n  types: [Ingress, Egress]\n  egress:\n  - action: Allow\n    protocol: UDP\n    destination:\n      ports: [53, \"1000:2000\"]\n      nets: [10.0.0.0/8]\n  ingress:\n  - action: Deny\n    source:\n      selector: role == 'db'\n      notNets: [\"::/0\"]\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata:\n  name: web\n  namespace: prod\nspec:\n  selector: app == \"web\"\n  ingress:\n  - action: Allow\n    http:\n      methods: [GET]\n    icmp: {type: 8, code: 0}\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-1}\nspec:\n  cidr: 192.168.0.0/16\n  ipipMode: CrossSubnet\n  natOutgoing: on\n  blockSize: 26\n  nodeSelector: all()\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata:\n  name: rr\nspec:\n  peerIP: \"[fd00::1]:179\"\n  asNumber: 64512\n  keepOriginalNextHop: true\n  password:\n    secretKeyRef: {name: bgp, key: pw}\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata:\n  name: default\nspec:\n  logSeverityScreen: Info\n  reportingInterval: 0s\n  ipipEnabled: No\n  failsafeInboundHostPorts:\n  - protocol: tcp\n    port: 22\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: List\nitems:\n- &base\n  apiVersion: projectcalico.org/v3\n  kind: GlobalNetworkSet\n  metadata: {name: set-a, labels: {a: b}}\n  spec: {nets: [1.2.3.4/32]}\n- <<: *base\n  metadata: {name: set-b}\n".to_string(),
        "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-a\"},\"spec\":{\"bgp\":{\"ipv4Address\":\"10.0.0.1/24\",\"asNumber\":65001}}}\n".to_string(),
        "---\napiVersion: projectcalico.org/v3\nkind: Profile\nmetadata:\n  name: kns.default\nspec:\n  labelsToApply: {env: prod}\n---\napiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata:\n  name: default\nspec:\n  asNumber: 0o17\n  nodeToNodeMeshEnabled: off\n  serviceClusterIPs: [{cidr: 10.96.0.0/12}]\n".to_string(),
    ]
}

fn check_resources(input: &str) -> Result<(), String> {
    match Loader::unvalidated().load_text(input, "fuzz.yaml") {
        Err(error) => {
            let problems = match error {
                netctl::resource::LoadError::Problems(problems) => problems,
                other => vec![other],
            };
            if problems
                .iter()
                .any(|problem| problem.to_string().trim().is_empty())
            {
                return Err("a refusal without a message".to_string());
            }
        }
        Ok(resources) => {
            for located in resources {
                let mut resource = located.resource;
                if let Err(error) = validate_and_default(&mut resource) {
                    if error.to_string().trim().is_empty() {
                        return Err("a validation refusal without a message".to_string());
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn resource_documents() {
    fuzz("resource", &resource_seeds(), check_resources);
}

// --- the NetAPIConfig file ----------------------------------------------------------------------

fn config_seeds() -> Vec<String> {
    vec![
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://[::1]:2379,https://10.0.0.1:2379\n  etcdUsername: admin\n  etcdPassword: pw-7f3c9e\n  etcdCACertFile: /etc/ca.pem\n  etcdCertFile: /etc/cert.pem\n  etcdKeyFile: /etc/key.pem\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nmetadata:\nspec:\n  datastoreType: \"kubernetes\"\n  kubeconfig: ~/.kube/config\n  k8sAPIEndpoint: https://10.0.0.1:6443\n  k8sInsecureSkipTLSVerify: yes\n".to_string(),
        "apiVersion: projectcalico.org/v3\nkind: NetAPIConfig\nspec:\n  etcdDiscoverySrv: example.com\n  etcdCACert: |\n    -----BEGIN CERTIFICATE-----\n    MIIB\n    -----END CERTIFICATE-----\n".to_string(),
    ]
}

/// The password in the seed configuration, distinctive so it is found wherever it leaks.
const PASSWORD: &str = "pw-7f3c9e";

fn check_config(input: &str) -> Result<(), String> {
    if let Err(error) = netctl::config::file::parse(input, Path::new("netctl.cfg")) {
        let message = error.to_string();
        if message.trim().is_empty() {
            return Err("a refusal without a message".to_string());
        }
        // The seed's password must never be echoed back in a refusal, as long as it only stands
        // as the password (a mutation may copy it into another field, which may be shown).
        let only_as_password = input
            .lines()
            .filter(|line| line.contains(PASSWORD))
            .all(|line| line.trim_start().starts_with("etcdPassword:"));
        if only_as_password && message.contains(PASSWORD) {
            return Err(format!("a refusal shows the password: {message}"));
        }
    }
    Ok(())
}

#[test]
fn netapiconfig_files() {
    fuzz("netapiconfig", &config_seeds(), check_config);
}

// --- runbooks -----------------------------------------------------------------------------------

fn check_runbook(input: &str) -> Result<(), String> {
    let findings = lint_files(
        vec![("runbooks/fuzz.yaml".to_string(), input.to_string())],
        BTreeMap::new(),
    );
    if findings
        .iter()
        .any(|finding| finding.message.trim().is_empty())
    {
        return Err("a lint finding without a message".to_string());
    }
    Ok(())
}

#[test]
fn runbooks() {
    let seeds: Vec<String> = repository_files("runbooks")
        .into_iter()
        .filter(|text| netctl::runbook::looks_like_runbook(text))
        .collect();
    assert!(
        seeds.len() >= 5,
        "the runbooks/ directory should hold the embedded runbooks"
    );
    fuzz("runbook", &seeds, check_runbook);
}

// --- the harness itself -------------------------------------------------------------------------

/// The checks above pass only if the harness notices failures: a target that panics on some inputs
/// and one that breaks its property must each fail with the input shown.
#[test]
fn the_harness_reports_a_panic_and_a_broken_property_with_the_input() {
    fn panics_on_colons(input: &str) -> Result<(), String> {
        assert!(!input.contains(':'), "a colon");
        Ok(())
    }
    fn refuses_long_inputs(input: &str) -> Result<(), String> {
        if input.len() > 3 {
            return Err("longer than 3".to_string());
        }
        Ok(())
    }
    let seeds = vec!["a: b".to_string(), "abcdef".to_string()];
    for (check, expected) in [
        (
            panics_on_colons as fn(&str) -> Result<(), String>,
            "panicked: a colon",
        ),
        (refuses_long_inputs, "longer than 3"),
    ] {
        let failure = catch_unwind(AssertUnwindSafe(|| {
            fuzz("harness-self-test", &seeds, check)
        }))
        .expect_err("the harness must fail");
        let message = panic_text(&failure);
        assert!(message.contains(expected), "{message}");
        assert!(message.contains("input: \""), "{message}");
    }
}
