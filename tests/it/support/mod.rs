//! Test support for netctl's integration tests: real etcd servers, a real DNS server, generated
//! certificates, an in-process Kubernetes API server and a sandboxed `netctl` command.
//!
//! Integration tests include it with `mod support;`. Everything here runs real programs on loopback:
//! Debian's `etcd` 3.4 and `etcdctl` ([`etcd`], which can also hang members with SIGSTOP and kill
//! them), `dnsmasq` for SRV discovery ([`dns`]), certificates generated with rcgen ([`pki`]), the
//! endpoints that fail without being etcd — refused ports, silent listeners, a server that is not
//! etcd, a proxy that loses answers ([`faults`]) — and the `netctl` binary under a cleared environment
//! ([`netctl`]).
//! It deliberately offers no mocks: the point is to prove the datastore paths against the real thing.
//!
//! Isolation and cleanup:
//! - every server picks free loopback ports at start (and starts again on a port collision), so tests
//!   run in parallel without fixed ports;
//! - every server lives in its own temporary directory (data, logs, pid files) named
//!   `netctl-test-<kind>-*` under the system temp dir, removed when the server is dropped;
//! - every process is killed and waited for in `Drop`, also when the test panics (its log tail is
//!   printed then, so a failing test shows what the server said);
//! - if a test binary itself was killed (so no `Drop` ran), the next harness start finds the
//!   directories whose owning test process is gone, kills the server recorded in them (only after
//!   checking that the pid's command line names that directory) and removes them. See [`reap`];
//! - every test that runs netctl or starts a server has a time limit: one still running after it
//!   stops its test binary with its name, after killing the binary's servers (`watchdog`), so a
//!   hang is a failure and `cargo test --no-fail-fast` goes on with the next binary;
//! - signals go through [`send_signal`] (a system call): a minimal system has no `kill` program.
//!
//! - do not keep a server in a `static` (`OnceLock`, `LazyLock`): statics are never dropped, so its
//!   process would outlive the test binary until the next run reaps it. A server starts in about
//!   0.2 s; start one per test.
//!
//! A missing program is a test failure with an install hint, never a silent skip.
//!
//! ```ignore
//! mod support;
//! use support::{AuthSetup, EtcdServer, Netctl, Pki};
//!
//! let pki = Pki::generate();
//! let etcd = EtcdServer::builder().tls(&pki).auth(AuthSetup::default()).start();
//! etcd.put("/calico/resources/v3/projectcalico.org/ippools/pool1", r#"{"kind":"IPPool"}"#);
//! let before = etcd.dump_prefix_bytes("/calico/");
//! Netctl::new()
//!     .config_file(&etcd.netctl_config_yaml())
//!     .args(["apply", "--dry-run", "-f", "pool.yaml"])
//!     .assert()
//!     .success();
//! assert_eq!(before, etcd.dump_prefix_bytes("/calico/"));
//! ```

// Each integration-test binary compiles this module but uses only part of it; without this, every
// unused helper or re-export would be a warning (an error under `-D warnings`) in some test binary.
#![allow(dead_code, unused_imports)]

pub mod bird;
pub mod bundle;
pub mod calico_node;
pub mod dns;
pub mod etcd;
pub mod faults;
pub mod kube_api;
pub mod kube_crd;
pub mod kube_crd_fields;
pub mod kube_crd_ipam;
pub mod kube_daemon_sets;
pub mod kube_streams;
pub mod kube_strict;
pub mod netctl;
pub mod pki;
mod process;
pub mod reap;
pub mod snapshot;
mod watchdog;

pub use dns::{DnsServer, DnsServerBuilder, SrvRecord};
pub use etcd::{
    AuthSetup, EtcdCluster, EtcdClusterBuilder, EtcdServer, EtcdServerBuilder, Etcdctl, KeyValue,
};
pub use faults::{
    NotEtcdServer, ReplyDroppingProxy, SilentListener, another_writer_before_the_first_batch,
    refused_endpoint,
};
pub use kube_api::{CalicoGroups, KubeApiServer};
pub use kube_streams::ExecReply;
pub use netctl::{Netctl, Run, failed, install_into, ok, wait_for_exit};
pub use pki::{Ca, CertPair, Pki, PkiBuilder};
pub use process::{ChildGuard, Signal, find_program, poll_until, require_localhost, send_signal};
