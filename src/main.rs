//! The `netctl` binary: parse, run, report. This is the only place that turns errors into exit codes
//! (the codes and their meanings are `netctl::exit_code`): 0 success, 1 failure, 64 bad usage, 3 a
//! run stopped at a human gate and 4 at the end of its maintenance window (resume it later); an
//! error of `netctl diff` exits 2, as kubectl diff's do. A closed stdout (`netctl get nodes | head
//! -1`) is success.

use std::process::ExitCode;

use netctl::cli;
use netctl::config::Environment;
use netctl::exit_code;
use netctl::output::Printer;

fn main() -> ExitCode {
    // Before anything else: the completion script calling back (it exits when it did).
    cli::completion::complete_if_asked();
    // One rustls crypto provider for every TLS client: with none installed, rustls panics when it
    // cannot tell which one to use ("Could not automatically determine the process-level
    // CryptoProvider", rustls `CryptoProvider::install_default`). It can only fail if one is
    // already installed, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();

    // `netctl ...`, or `kubectl netctl ...` when started as the plugin `kubectl-netctl`.
    let cli = match cli::plugin::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let usage = error.use_stderr();
            // clap prints help/version to stdout and usage errors to stderr.
            let _ = error.print();
            // Not clap's 2: `upgrade plan --detailed-exitcode` gives 2 the meaning "pending".
            return if usage {
                ExitCode::from(exit_code::USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // What an error of this command exits with (kubectl diff's errors are above its 1).
    let failure = cli.command.failure_code();
    let environment = Environment::capture();
    // The one voice every part of the command talks through (stdout data, stderr talk).
    let printer = Printer::process(
        cli.global.verbosity(),
        environment.exact("NO_COLOR").is_some(),
    );
    printer.set_listing(cli.global.listing());

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            printer.error(&format!("cannot start the async runtime: {error}"), None);
            return ExitCode::from(exit_code::FAILURE);
        }
    };
    match runtime.block_on(cli::run(cli, environment, printer.clone())) {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => match stopped_code(&error) {
            // The plan asks a person to decide, or the window ended: the exit code tells a script
            // "resume later" apart from "failed".
            Some(code) => {
                let (message, hint) = cli::report(&error, &printer);
                printer.stopped(&message, hint.as_deref());
                ExitCode::from(code)
            }
            None => {
                let (message, hint) = cli::report(&error, &printer);
                printer.error(&message, hint.as_deref());
                ExitCode::from(failure)
            }
        },
    }
}

/// The code of a run that stopped where it may be resumed (a gate, the end of its window).
fn stopped_code(error: &anyhow::Error) -> Option<u8> {
    error.chain().find_map(|cause| {
        cause
            .downcast_ref::<netctl::exec::ExecError>()
            .and_then(netctl::exec::ExecError::stopped_code)
    })
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
