//! One snapshot of what a user sees from one run: exit code, stdout and stderr together (uv's
//! `uv_snapshot!`), with machine-specific text such as temporary paths filtered out.
//!
//! ```ignore
//! use support::snapshot::netctl_snapshot;
//! netctl_snapshot!(netctl().args(["runbook", "list"]));
//! let output = netctl_snapshot!(command, filters = [(temp_dir, "[TEMP]")]);
//! ```
//!
//! The snapshot reads:
//!
//! ```text
//! exit: 1
//! --- stdout
//! ...
//! --- stderr
//! error: ...
//! ```

use std::process::Output;

use super::Netctl;

/// Something that runs netctl and gives its output.
pub trait Transcribed {
    fn transcribed_output(self) -> Output;
}

impl Transcribed for Output {
    fn transcribed_output(self) -> Output {
        self
    }
}

impl Transcribed for &Output {
    fn transcribed_output(self) -> Output {
        self.clone()
    }
}

impl Transcribed for &mut assert_cmd::Command {
    fn transcribed_output(self) -> Output {
        self.output().expect("run netctl")
    }
}

impl Transcribed for &mut std::process::Command {
    fn transcribed_output(self) -> Output {
        self.output().expect("run netctl")
    }
}

impl Transcribed for &Netctl {
    fn transcribed_output(self) -> Output {
        self.output()
    }
}

impl Transcribed for &mut Netctl {
    fn transcribed_output(self) -> Output {
        self.output()
    }
}

/// Exit code, stdout and stderr as one text, with each `(text, replacement)` of `filters` applied
/// (plain text, not patterns: a temporary directory, a port).
pub fn transcript<'a>(
    output: &Output,
    filters: impl IntoIterator<Item = (impl AsRef<str> + 'a, &'a str)>,
) -> String {
    let text = format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    filters.into_iter().fold(text, |text, (from, to)| {
        let from = from.as_ref();
        if from.is_empty() {
            text
        } else {
            text.replace(from, to)
        }
    })
}

/// No filters: the transcript as it is.
pub const NO_FILTERS: [(&str, &str); 0] = [];

/// Runs (or takes the output of) a netctl command and snapshots its transcript; evaluates to the
/// [`Output`] for further checks. A leading string literal names the snapshot.
#[allow(unused_macros)]
macro_rules! netctl_snapshot {
    ($name:literal, $command:expr, filters = $filters:expr $(,)?) => {{
        let output = $crate::support::snapshot::Transcribed::transcribed_output($command);
        insta::assert_snapshot!(
            $name,
            $crate::support::snapshot::transcript(&output, $filters)
        );
        output
    }};
    ($name:literal, $command:expr $(,)?) => {{
        let output = $crate::support::snapshot::Transcribed::transcribed_output($command);
        let filters = $crate::support::snapshot::NO_FILTERS;
        insta::assert_snapshot!(
            $name,
            $crate::support::snapshot::transcript(&output, filters)
        );
        output
    }};
    ($command:expr, filters = $filters:expr $(,)?) => {{
        let output = $crate::support::snapshot::Transcribed::transcribed_output($command);
        insta::assert_snapshot!($crate::support::snapshot::transcript(&output, $filters));
        output
    }};
    ($command:expr $(,)?) => {{
        let output = $crate::support::snapshot::Transcribed::transcribed_output($command);
        let filters = $crate::support::snapshot::NO_FILTERS;
        insta::assert_snapshot!($crate::support::snapshot::transcript(&output, filters));
        output
    }};
}

#[allow(unused_imports)]
pub(crate) use netctl_snapshot;
