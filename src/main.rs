//! TEMPORARY (runbook branch): parse → run → report for the runbook and upgrade-plan commands only,
//! planning offline (no datastore connection). The lead replaces this file at merge.

use std::process::ExitCode;

use clap::Parser;
use netctl::cli::{Cli, Command, UpgradeCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Upgrade(UpgradeCommand::Plan(args)) => {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(anyhow::Error::from)
                .and_then(|runtime| runtime.block_on(args.run(None)))
        }
        Command::Runbook(command) => command.run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
