//! TEMPORARY (runbook branch): wires only `upgrade plan` and `runbook lint|render|list` so they can be
//! tested end to end here. The lead replaces this file with the real command tree at merge; the
//! command files `upgrade.rs` and `runbook.rs` are the ones to keep.

pub mod runbook;
pub mod upgrade;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "netctl",
    version,
    about = "Administration CLI for a Calico-compatible network"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Plan upgrades.
    #[command(subcommand)]
    Upgrade(UpgradeCommand),
    /// Review runbooks.
    #[command(subcommand)]
    Runbook(runbook::RunbookCommand),
}

#[derive(Debug, Subcommand)]
pub enum UpgradeCommand {
    /// Show the steps an upgrade would take.
    Plan(upgrade::PlanArgs),
}
