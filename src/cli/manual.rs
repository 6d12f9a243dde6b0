//! `netctl man`: man pages generated from the clap definitions (clap_mangen), so they say what
//! `--help` says. One page for `netctl` on stdout, or with `--dir` a page per command
//! (`netctl-get.1`, `netctl-upgrade-apply.1`, ...) for `scripts/install.sh`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::CommandFactory;

use super::Context;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  netctl man | man -l -
  netctl man --dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write `netctl.1` and a page per command into this directory instead of printing
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(context: &Context, args: ManArgs) -> anyhow::Result<ExitCode> {
    let mut command = super::Cli::command();
    command.build();
    let Some(directory) = args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command).render(&mut page)?;
        context.printer.data(&String::from_utf8_lossy(&page))?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("cannot create `{}`", directory.display()))?;
    let mut written = 0;
    let mut pending = vec![("netctl".to_string(), command)];
    while let Some((name, command)) = pending.pop() {
        for subcommand in command.get_subcommands() {
            if subcommand.get_name() != "help" {
                let name = format!("{name}-{}", subcommand.get_name());
                pending.push((name, subcommand.clone()));
            }
        }
        let path = directory.join(format!("{name}.1"));
        let mut page = Vec::new();
        clap_mangen::Man::new(command.clone().name(name.clone())).render(&mut page)?;
        std::fs::write(&path, page)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        written += 1;
    }
    context.printer.say(format!(
        "wrote {written} man pages to `{}`",
        directory.display()
    ));
    Ok(ExitCode::SUCCESS)
}
