//! End-to-end upgrades: `upgrade plan` and `upgrade apply` of the shipped runbooks against a real etcd
//! and the in-process Kubernetes API test server, with the manifests served from a mirror directory
//! (`--mirror-dir`, layout `<host>/<path>`), each run killed with SIGKILL in the middle and resumed.
//!
//! The test plays the cluster's other actors: it reports rollouts (`set_status` and ready pods) as the
//! controllers and kubelet would, and bumps ClusterInformation `calicoVersion` as the upgraded node
//! agents would, between the kill after the apply step and `--resume`. Nothing here talks to a real
//! cluster or the network.
//!
//! Paths: etcd + manifest (v3.13 → v3.27, all-interfaces host endpoint), Kubernetes + manifest
//! (`calico.yaml` v3.25 → v3.29, and `canal.yaml`; with a manifest overlay whose diff the plan shows
//! and whose edits the cluster ends up with, overlays that are refused, a manifest changed since the
//! reviewed plan that is refused, and hand edits made at the edits gate kept across `--resume` and
//! applied), operator (v3.26 → v3.29
//! across the OwnerReference UID change), Helm across the ownership edge (v3.20 → v3.27) and after it
//! (v3.24 → v3.27), application layer policy on the Kubernetes manifest path (the test plays the
//! deployment controller while the service Deployments restart), and the `auto-host-endpoints`
//! procedure on etcd and Kubernetes (the test plays kube-controllers, creating the `-auto-hep`
//! endpoints once `autoCreate` is on), plus dry-run transcript snapshots (etcd, operator, Helm, ALP,
//! auto host endpoints) that leave etcd and the API server unchanged, and saved plans refused because a
//! cluster fact changed since they were made.
//! There is no real Helm here: a stand-in `helm` first on `PATH` records its argv (and, for
//! `install`, creates the release secret Helm would), so the Helm scenarios prove the exact commands
//! netctl runs, not what Helm does with them. `exec` steps that run
//! `netctl` or `kubectl` run the real programs (`netctl` is linked into `$HOME/bin`).

mod application_layer_policy;
mod auto_host_endpoints;
mod canary;
pub(crate) mod common;
mod helm;
mod maintenance_window;
mod manifest_edit_discovery;
mod manifest_etcd;
mod manifest_kubernetes;
mod operator;
mod preflight;
mod readme_walkthrough;
mod rollback;
mod verification;
