//! netctl: the administration CLI of a Calico-compatible container network.
//!
//! The modules follow the flow of a command (see `docs/architecture.md`):
//! `cli` parses → `config` resolves settings → `resource` validates → `plan` builds steps →
//! `exec` runs them against a `datastore` → `output` prints — its `Printer` is the one voice on stdout and stderr.

pub mod cli;
pub mod config;
pub mod datastore;
pub mod diagnose;
pub mod errors;
pub mod exec;
pub mod exit_code;
pub mod ipam;
pub mod listing;
pub mod node;
pub mod output;
pub mod plan;
pub mod redaction;
pub mod release;
pub mod resource;
pub mod runbook;
pub mod vocabulary;
pub mod yaml;
