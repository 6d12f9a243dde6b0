//! `netctl node checksystem` through the binary against fake host roots (`--root`): the files
//! upstream reads — `lib/modules/<version>/modules.dep` and `modules.builtin`, `proc/modules`, a
//! kernel configuration under `boot/`, `proc/net/ip_tables_matches`, `proc/sys/kernel/osrelease` —
//! written as a Debian host has them. All present, one missing, only ip6_tables missing, an old
//! kernel, `--kernel-config` and `-o json`.

use std::path::Path;

use crate::support::Netctl;
use crate::support::snapshot::netctl_snapshot;
use tempfile::TempDir;

const VERSION: &str = "6.1.0-18-amd64";

/// Where each module of upstream's list is on the fake host, unless a test leaves it out.
fn module_places() -> Vec<(&'static str, &'static str)> {
    vec![
        // Loadable modules, as Debian ships them (compressed).
        (
            "dep",
            "kernel/net/netfilter/ipset/ip_set.ko.xz: kernel/net/netfilter/nfnetlink.ko.xz",
        ),
        (
            "dep",
            "kernel/net/ipv6/netfilter/ip6_tables.ko.xz: kernel/net/netfilter/x_tables.ko.xz",
        ),
        (
            "dep",
            "kernel/net/ipv4/netfilter/ip_tables.ko.xz: kernel/net/netfilter/x_tables.ko.xz",
        ),
        (
            "dep",
            "kernel/net/netfilter/xt_ipvs.ko.xz: kernel/net/netfilter/ipvs/ip_vs.ko.xz",
        ),
        (
            "dep",
            "kernel/drivers/vfio/pci/vfio-pci.ko.xz: kernel/drivers/vfio/pci/vfio-pci-core.ko.xz",
        ),
        (
            "dep",
            "kernel/net/netfilter/xt_bpf.ko.xz: kernel/net/netfilter/x_tables.ko.xz",
        ),
        (
            "dep",
            "kernel/net/ipv4/netfilter/ipt_REJECT.ko.xz: kernel/net/ipv4/netfilter/nf_reject_ipv4.ko.xz",
        ),
        (
            "dep",
            "kernel/net/ipv4/netfilter/ipt_rpfilter.ko.xz: kernel/net/netfilter/x_tables.ko.xz",
        ),
        (
            "dep",
            "kernel/net/netfilter/xt_conntrack.ko.xz: kernel/net/netfilter/nf_conntrack.ko.xz",
        ),
        (
            "dep",
            "kernel/net/netfilter/nf_conntrack_netlink.ko.xz: kernel/net/netfilter/nf_conntrack.ko.xz",
        ),
        (
            "dep",
            "kernel/net/netfilter/xt_set.ko.xz: kernel/net/netfilter/ipset/ip_set.ko.xz",
        ),
        (
            "dep",
            "kernel/net/netfilter/xt_u32.ko.xz: kernel/net/netfilter/x_tables.ko.xz",
        ),
        // Built in.
        ("builtin", "kernel/net/netfilter/xt_addrtype.ko"),
        ("builtin", "kernel/net/netfilter/xt_mark.ko"),
        ("builtin", "kernel/net/netfilter/xt_multiport.ko"),
        // Loaded: the first field of /proc/modules.
        ("loaded", "xt_rpfilter 16384 2 - Live 0x0000000000000000"),
        // Only the kernel configuration knows these: `ipt_ipvs` is `xt_ipvs.ko` on this kernel,
        // and `ipt_set` is no module of its own.
        ("config", "CONFIG_NETFILTER_XT_MATCH_IPVS=m"),
        ("config", "CONFIG_NET_EMATCH_IPSET=m"),
        // The icmp matches, registered by ip_tables.
        ("matches", "icmp"),
    ]
}

/// A fake host root with the modules of `places`.
fn host(places: &[(&str, &str)]) -> TempDir {
    let root = tempfile::Builder::new()
        .prefix("netctl-checksystem-")
        .tempdir()
        .unwrap();
    let write = |relative: &str, lines: Vec<&str>| {
        let path = root.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(path, text).unwrap();
    };
    let of = |kind: &str| -> Vec<&str> {
        places
            .iter()
            .filter(|(place, _)| *place == kind)
            .map(|(_, line)| *line)
            .collect()
    };
    write("proc/sys/kernel/osrelease", vec![VERSION]);
    let mut dep = vec!["kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz"];
    dep.extend(of("dep"));
    write(&format!("lib/modules/{VERSION}/modules.dep"), dep);
    let mut builtin = vec!["kernel/fs/proc/proc.ko"];
    builtin.extend(of("builtin"));
    write(&format!("lib/modules/{VERSION}/modules.builtin"), builtin);
    let mut loaded = vec!["ext4 1015808 1 - Live 0x0000000000000000"];
    loaded.extend(of("loaded"));
    write("proc/modules", loaded);
    let mut config = vec![
        "# Automatically generated file; DO NOT EDIT.",
        "CONFIG_EXT4_FS=y",
        "# CONFIG_VFIO is not set",
    ];
    config.extend(of("config"));
    write(&format!("boot/config-{VERSION}"), config);
    let mut matches = vec!["conntrack", "addrtype"];
    matches.extend(of("matches"));
    write("proc/net/ip_tables_matches", matches);
    root
}

fn without(name_part: &str) -> Vec<(&'static str, &'static str)> {
    module_places()
        .into_iter()
        .filter(|(_, line)| !line.contains(name_part))
        .collect()
}

fn checksystem(root: &Path) -> Netctl {
    let mut netctl = Netctl::new();
    netctl.args(["node", "checksystem", "--root"]).arg(root);
    netctl
}

#[test]
fn every_module_present_meets_the_requirements() {
    let root = host(&module_places());
    netctl_snapshot!(&checksystem(root.path()));
}

#[test]
fn one_missing_module_fails() {
    // xt_set nowhere; `ipt_set.ko` and `ip_set_hash_net` (loaded) are other modules, not it.
    let mut places = without("xt_set");
    places.push((
        "dep",
        "kernel/net/ipv4/netfilter/ipt_set.ko.xz: kernel/net/netfilter/ipset/ip_set.ko.xz",
    ));
    places.push((
        "loaded",
        "ip_set_hash_net 49152 1 - Live 0x0000000000000000",
    ));
    let root = host(&places);
    netctl_snapshot!(&checksystem(root.path()));
}

#[test]
fn only_ip6_tables_missing_warns_and_meets_the_requirements() {
    let root = host(&without("ip6_tables"));
    netctl_snapshot!(&checksystem(root.path()));
}

#[test]
fn an_old_kernel_fails_and_a_given_configuration_is_read() {
    // The configuration is the only place ipt_set is found; without it, it is missing.
    let root = host(&without("CONFIG_NET_EMATCH_IPSET"));
    let run = checksystem(root.path()).run();
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout
            .contains("\t\tipt_set             \t\t\t\t\tFAIL\n"),
        "{}",
        run.stdout
    );
    let config = root.path().join("elsewhere.config");
    // It replaces upstream's places: everything only a configuration knows must be in it.
    std::fs::write(
        &config,
        "CONFIG_NET_EMATCH_IPSET=y\nCONFIG_NETFILTER_XT_MATCH_IPVS=m\n",
    )
    .unwrap();
    let run = checksystem(root.path())
        .arg("--kernel-config")
        .arg(&config)
        .run();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout
            .contains("\t\tipt_set             \t\t\t\t\tOK\n"),
        "{}",
        run.stdout
    );

    let root = host(&module_places());
    let run = checksystem(root.path())
        .args(["--kernel-version", "2.6.18-419.el5"])
        .run();
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout
            .starts_with("Checking kernel version...\n\t\t2.6.18-419.el5      \t\t\t\t\tFAIL\n"),
        "{}",
        run.stdout
    );
    // The modules of another kernel are looked for under its own directory, which is not there.
    assert!(
        run.stderr.contains("the kernel is older than 2.6.24"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("cannot read `"), "{}", run.stderr);

    let missing = root.path().join("no-such.config");
    let run = checksystem(root.path()).arg("-f").arg(&missing).run();
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("cannot read the kernel configuration"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn json_says_where_each_module_was_found() {
    let root = host(&without("ip6_tables"));
    let run = checksystem(root.path()).args(["-o", "json"]).run();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        document["kernel"],
        serde_json::json!({"version": VERSION, "ok": true})
    );
    assert_eq!(document["meets"], true);
    assert_eq!(document["ipv6"], false);
    let found = |name: &str| {
        document["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|module| module["name"] == name)
            .unwrap()["foundIn"]
            .clone()
    };
    assert_eq!(found("vfio-pci"), "loadable");
    assert_eq!(found("xt_mark"), "builtin");
    assert_eq!(found("xt_rpfilter"), "loaded");
    assert_eq!(found("ipt_set"), "kernelConfig");
    assert_eq!(found("xt_icmp6"), "iptablesMatches");
    assert_eq!(found("ip6_tables"), serde_json::Value::Null);
}
