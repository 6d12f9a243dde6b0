//! `netctl completion SHELL`: prints a completion script generated from the clap definitions.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  netctl completion bash > /etc/bash_completion.d/netctl\n  netctl completion zsh > \"${fpath[1]}/_netctl\""
)]
pub struct CompletionArgs {
    /// The shell to generate the script for
    #[arg(value_enum)]
    shell: Shell,
}

pub fn run(context: &super::Context, args: CompletionArgs) -> anyhow::Result<ExitCode> {
    let mut command = super::Cli::command();
    // Generated into memory first: clap_complete panics when its writer fails, and a closed pipe
    // (`netctl completion bash | head`) must end as success, through the printer's error.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "netctl", &mut script);
    context.printer.data(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}
