//! netctl's integration tests, one binary (`cargo test --test it`): each module below was a test
//! binary of its own once; they share `support` (real etcd, dnsmasq, certificates, the Kubernetes
//! API test server, the sandboxed `netctl` command and its snapshots) compiled once.
//!
//! The tests run in parallel threads of this one process, so nothing here may change what the
//! process shares: no `std::env::set_var`, no `set_current_dir`, no signal handlers of the test
//! process itself; environments, working directories and signals belong to the child processes a
//! test starts (`support::Netctl`), ports to `support`'s allocator. A test that runs too long has
//! its processes killed and, if it still does not end, stops this binary (`support/watchdog.rs`).
//! The fuzz targets keep a binary of their own (`tests/fuzz.rs`). See docs/architecture.md, "Tests".

mod support;

mod exec_common;
mod ipam_common;

mod batched_label_steps;
mod batched_write_failures;
mod batched_writes;
mod calicoctl_surface;
mod citations;
mod cli_habits;
mod cli_runbook;
mod completion;
mod config_refusals;
mod datastore_backup;
mod datastore_migration;
mod diagnostics_cluster;
mod diagnostics_node;
mod etcd_connect;
mod etcd_faults;
mod etcd_store;
mod exec_apply;
mod exec_apply_to;
mod exec_auth;
mod exec_dry_run;
mod exec_fetch;
mod exec_resume;
mod exec_run_one;
mod exec_terminal;
mod harness;
mod ipam;
mod ipam_store;
mod ipam_writes;
mod kube_actions;
mod kube_api_groups;
mod kube_apply_manifest;
mod kube_coordination;
mod kube_datastore;
mod kube_kubectl;
mod list_output;
mod migrate;
mod node_checksystem;
mod node_run;
mod node_run_etcd;
mod node_status_local;
mod node_status_remote;
mod plan_properties;
mod policy_names;
mod release_lines;
mod resource_commands;
mod runbook_lint;
mod upgrade_ci;
mod upgrade_discovery;
mod upgrade_discovery_kubernetes;
mod upgrade_e2e;
mod upgrade_plan;
mod upgrade_real_manifests;
mod voice_and_listings;
mod yaml_readers;
