//! The `netctl` binary: parse, run, report. This is the only place that turns errors into exit codes:
//! 0 success, 1 failure, 2 bad usage, 3 a run stopped at a human gate (resume it after the decision).
//! A closed stdout (`netctl get nodes | head -1`) is success.

use std::process::ExitCode;

use netctl::cli;
use netctl::config::Environment;
use netctl::terminal;

fn main() -> ExitCode {
    // Before anything else: the completion script calling back (it exits when it did).
    cli::completion::complete_if_asked();
    // One rustls crypto provider for every TLS client (reference/etcd-and-crates.md G1). It can only
    // fail if one is already installed, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();

    // `netctl ...`, or `kubectl netctl ...` when started as the plugin `kubectl-netctl`.
    let cli = match cli::plugin::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let usage = error.use_stderr();
            // clap prints help/version to stdout and usage errors to stderr.
            let _ = error.print();
            return if usage {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let environment = Environment::capture();
    terminal::configure(
        cli.global.log_level,
        environment.exact("NO_COLOR").is_some(),
    );

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            terminal::error(&format!("cannot start the async runtime: {error}"), None);
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(cli, environment)) {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) if is_stopped_at_gate(&error) => {
            let (message, hint) = cli::report(&error);
            terminal::stopped(&message, hint.as_deref());
            ExitCode::from(3)
        }
        Err(error) => {
            let (message, hint) = cli::report(&error);
            terminal::error(&message, hint.as_deref());
            ExitCode::FAILURE
        }
    }
}

/// An unattended run that reached a gate: the plan asks a person to decide, so the exit code tells a
/// script "waiting for a decision" apart from "failed".
fn is_stopped_at_gate(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<netctl::exec::ExecError>(),
            Some(netctl::exec::ExecError::StoppedAtGate { .. })
        )
    })
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
