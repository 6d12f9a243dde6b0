//! Human gates: a `pause` step, or a step marked `irreversible`, runs only once a person approved it
//! — on the command line in advance (`--yes`, `--approve STEP`) or, when someone is at the terminal,
//! by answering the question. An unattended run stops in front of it instead.
//!
//! [`decide`] only decides (and asks); recording the decision in the journal and the checkpoint is
//! the run's part.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::actions::pause::Interaction;
use super::error::ExecError;
use super::lock::RunLock;
use super::progress::Progress;
use super::{ApplyOptions, Confirmation};
use crate::plan::{Action, PlannedStep};

/// What a gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Gate {
    /// The step is no gate.
    Open,
    /// Approved; how (`approved on the command line`, `confirmed on the terminal`).
    Approved(&'static str),
    /// The person at the terminal said no.
    Declined { message: String },
    /// Nobody can answer: the run stops here.
    Closed { message: String },
}

/// The line naming the run's state directory and its downloaded files, which gates refer to.
fn state_directory(options: &ApplyOptions) -> String {
    format!(
        "state directory: `{}` (downloaded files in `{}`)",
        options.state_dir.display(),
        options
            .state_dir
            .join(super::checkpoint::FILES_DIR)
            .display()
    )
}

/// The question `step` puts to a person when it is a gate nobody approved in advance; `None` when
/// it runs without one.
pub(super) fn waits_for_person(step: &PlannedStep, options: &ApplyOptions) -> Option<String> {
    let message = question(step, options)?;
    let approved =
        options.confirmation == Confirmation::AssumeYes || options.approved.contains(&step.id);
    (!approved).then_some(message)
}

/// What a gate says: the pause's message, or an irreversible step's warning and rollback advice,
/// with the state directory; `None` for a step that is no gate.
fn question(step: &PlannedStep, options: &ApplyOptions) -> Option<String> {
    Some(match &step.action {
        // The gates ask for files in the state directory to be read or edited (`upgrade.yaml`, the
        // logged traffic): name it, since it depends on `--state-dir` and the environment.
        Action::Pause(gate) => format!("{}\n{}", gate.message, state_directory(options)),
        // Rollback advice names files of the state directory too (the saved previous manifest).
        _ if step.irreversible => match &step.rollback {
            Some(advice) => format!(
                "`{}` is irreversible ({})\nto go back now instead: {}\nonce it has run: {}\n{}",
                step.id,
                step.description,
                advice.before,
                advice.after,
                state_directory(options)
            ),
            None => format!("`{}` is irreversible ({})", step.id, step.description),
        },
        _ => return None,
    })
}

/// Decides whether `step` may run, asking on the terminal when the run is interactive.
pub(super) fn decide(
    step: &PlannedStep,
    options: &ApplyOptions,
    lock: Option<&RunLock>,
    progress: &Progress,
) -> Result<Gate, ExecError> {
    let Some(message) = question(step, options) else {
        return Ok(Gate::Open);
    };
    if options.confirmation == Confirmation::AssumeYes || options.approved.contains(&step.id) {
        return Ok(Gate::Approved("approved on the command line"));
    }
    if options.interaction == Interaction::Unattended {
        return Ok(Gate::Closed { message });
    }
    let question = format!("{message}\ncontinue with step `{}`?", step.id);
    // The question blocks this task, so the executor's own signal handling cannot run until it is
    // answered; a watcher releases the lock and ends the process instead. Nothing was started for
    // this step: the checkpoint already says where the run is. (The one place besides `main` that
    // exits: there is no caller to return to.)
    let revocation = lock.map(RunLock::revocation);
    let printer = progress.printer().clone();
    // Set by the signal handler itself, so it is known before the interrupted read can return.
    let interrupted = Arc::new(AtomicBool::new(false));
    let registrations: Vec<_> = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM]
        .into_iter()
        .filter_map(|signal| signal_hook::flag::register(signal, Arc::clone(&interrupted)).ok())
        .collect();
    let watcher_printer = printer.clone();
    let watcher = tokio::spawn(async move {
        let signal = super::signal::stop_requested().await;
        if let Some(revocation) = revocation {
            revocation.await;
        }
        watcher_printer.error(
            &format!("interrupted by {signal} at a question; nothing more was changed"),
            Some("`netctl upgrade apply --resume` asks again"),
        );
        std::process::exit(1);
    });
    // The printer hides the progress bar while the question is on the screen.
    let ask = || printer.ask(&question);
    // A person may take minutes to answer; the lock's lease must be renewed meanwhile, so the
    // blocking read must not hold up a runtime worker.
    let answer = match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(ask),
        _ => ask(),
    }
    .map_err(ExecError::Prompt);
    for registration in registrations {
        signal_hook::low_level::unregister(registration);
    }
    // The signal may also end the read (a closed terminal); then the watcher is releasing the lock
    // and will end the process with its message. Returning now would race it with the run's own
    // Ctrl-C handling and its different message, so this task waits for the end (the watcher runs
    // on another worker of the multi-threaded runtime).
    let multi_thread = matches!(
        tokio::runtime::Handle::current().runtime_flavor(),
        tokio::runtime::RuntimeFlavor::MultiThread
    );
    if interrupted.load(Ordering::SeqCst) && multi_thread {
        tokio::task::block_in_place(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
    }
    watcher.abort();
    Ok(match answer? {
        true => Gate::Approved("confirmed on the terminal"),
        false => Gate::Declined { message },
    })
}
