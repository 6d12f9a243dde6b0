//! One snapshot of what a user sees from one run: exit code, stdout and stderr together (uv's
//! `uv_snapshot!`), with what changes from run to run masked, so the snapshot says everything
//! else exactly.
//!
//! ```ignore
//! use crate::support::snapshot::netctl_snapshot;
//! netctl_snapshot!(Netctl::new().args(["runbook", "list"]));
//! let run = netctl_snapshot!("name", &netctl, filters = [(home, "[HOME]")]);
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
//!
//! Masked always ([`MASKS`]): a directory made in the system's temporary directory (`[TEMP]`),
//! loopback ports from the ephemeral range (`127.0.0.1:[PORT]`), RFC 3339 times (`[TIME]`), uuids
//! (`[UUID]`), datastore revisions (`resourceVersion: [REVISION]`, `revision [REVISION]`), how long
//! a step took (`([ELAPSED])`), sha256 digests (`sha256:[DIGEST]`: a plan's names the test
//! servers), generated certificates (`[CERTIFICATE]`) and the test etcd members' names. `filters`
//! are plain text replaced first (a test's home directory as `[HOME]`). The macro evaluates to the
//! [`Run`], for checks a snapshot cannot make (what the datastore holds afterwards, a value a mask
//! hides).

use std::process::Output;
use std::sync::OnceLock;

use regex::Regex;

use super::{Netctl, Run};

/// Something that runs netctl, or what a run gave.
pub trait Transcribed {
    fn transcribed_run(self) -> Run;
}

impl Transcribed for Run {
    fn transcribed_run(self) -> Run {
        self
    }
}

impl Transcribed for &Run {
    fn transcribed_run(self) -> Run {
        self.clone()
    }
}

impl Transcribed for Output {
    fn transcribed_run(self) -> Run {
        Run::from(self)
    }
}

impl Transcribed for &Output {
    fn transcribed_run(self) -> Run {
        Run::from(self.clone())
    }
}

impl Transcribed for &mut assert_cmd::Command {
    fn transcribed_run(self) -> Run {
        Run::from(self.output().expect("run netctl"))
    }
}

impl Transcribed for &mut std::process::Command {
    fn transcribed_run(self) -> Run {
        Run::from(self.output().expect("run netctl"))
    }
}

impl Transcribed for &Netctl {
    fn transcribed_run(self) -> Run {
        self.run()
    }
}

impl Transcribed for &mut Netctl {
    fn transcribed_run(self) -> Run {
        self.run()
    }
}

/// What changes from run to run, masked in every transcript: (pattern, replacement).
pub const MASKS: [(&str, &str); 12] = [
    (
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[TIME]",
    ),
    (r"(127\.0\.0\.1|localhost|\[::1\]):\d{5}\b", "$1:[PORT]"),
    (
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[UUID]",
    ),
    (r#"(resourceVersion"?: )("\d+"|'\d+'|\d+)"#, "$1[REVISION]"),
    (r"\b(revision) \d+\b", "$1 [REVISION]"),
    (r"\b(revisions?) `\d+`", "$1 `[REVISION]`"),
    // How long a step took, as the progress lines say it.
    (r"\(\d+(\.\d+)?s\)", "([ELAPSED])"),
    (r"\bin \d+\.\d+s\b", "in [ELAPSED]"),
    // Digests of plans, which name the test servers' ports and directories.
    (r"sha256:[0-9a-f]{64}", "sha256:[DIGEST]"),
    // Certificates the tests generate (`support/pki.rs`); never a private key, which must show.
    (
        r"-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----",
        "[CERTIFICATE]",
    ),
    // The test etcd members' names (`support/etcd.rs`).
    (r"netctl-test-[A-Za-z0-9]{6}-", "netctl-test-[ID]-"),
    // Filled in by `masks` with the temporary directory.
    ("", "[TEMP]"),
];

fn masks() -> &'static [(Regex, &'static str)] {
    static MASKS_COMPILED: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    MASKS_COMPILED.get_or_init(|| {
        let temp = std::env::temp_dir();
        let temp = temp.to_string_lossy();
        let temp_pattern = format!(
            r"{}/[^/\s'`:,;)\]]+",
            regex::escape(temp.trim_end_matches('/'))
        );
        MASKS
            .iter()
            .map(|(pattern, replacement)| {
                let pattern = match *pattern {
                    "" => temp_pattern.as_str(),
                    pattern => pattern,
                };
                (Regex::new(pattern).expect("a mask pattern"), *replacement)
            })
            .collect()
    })
}

/// Masks what changes from run to run in `text` ([`MASKS`]), after replacing each `(text,
/// replacement)` of `filters` (plain text, not patterns).
pub fn mask<'a>(
    text: &str,
    filters: impl IntoIterator<Item = (impl AsRef<str> + 'a, &'a str)>,
) -> String {
    let text = filters
        .into_iter()
        .fold(text.to_string(), |text, (from, to)| {
            let from = from.as_ref();
            if from.is_empty() {
                text
            } else {
                text.replace(from, to)
            }
        });
    masks().iter().fold(text, |text, (pattern, replacement)| {
        pattern.replace_all(&text, *replacement).into_owned()
    })
}

/// Exit code, stdout and stderr as one text, masked (see [`mask`]).
pub fn transcript<'a>(
    run: &Run,
    filters: impl IntoIterator<Item = (impl AsRef<str> + 'a, &'a str)>,
) -> String {
    let text = format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        run.code.unwrap_or(-1),
        run.stdout,
        run.stderr
    );
    mask(&text, filters)
}

/// No filters: the transcript with the masks only.
pub const NO_FILTERS: [(&str, &str); 0] = [];

/// insta's settings for a snapshot taken in `file` (a `file!()`): the snapshot goes to
/// `tests/it/snapshots/` whichever folder of `tests/it/` the test is in.
pub fn settings(file: &str) -> insta::Settings {
    let depth = file
        .split_once("tests/it/")
        .map_or(0, |(_, inside)| inside.matches('/').count());
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(format!("{}snapshots", "../".repeat(depth)));
    settings
}

/// Runs (or takes what gave) a netctl run and snapshots its transcript; evaluates to the [`Run`]
/// for further checks. A leading string literal names the snapshot (else insta names it after the
/// test function, `-2`, `-3`, … for the second and third in one test).
#[allow(unused_macros)]
macro_rules! netctl_snapshot {
    ($name:literal, $command:expr, filters = $filters:expr $(,)?) => {{
        let run = $crate::support::snapshot::Transcribed::transcribed_run($command);
        let transcript = $crate::support::snapshot::transcript(&run, $filters);
        $crate::support::snapshot::settings(file!())
            .bind(|| insta::assert_snapshot!($name, transcript));
        run
    }};
    ($name:literal, $command:expr $(,)?) => {
        $crate::support::snapshot::netctl_snapshot!(
            $name,
            $command,
            filters = $crate::support::snapshot::NO_FILTERS
        )
    };
    ($command:expr, filters = $filters:expr $(,)?) => {{
        let run = $crate::support::snapshot::Transcribed::transcribed_run($command);
        let transcript = $crate::support::snapshot::transcript(&run, $filters);
        $crate::support::snapshot::settings(file!()).bind(|| insta::assert_snapshot!(transcript));
        run
    }};
    ($command:expr $(,)?) => {
        $crate::support::snapshot::netctl_snapshot!(
            $command,
            filters = $crate::support::snapshot::NO_FILTERS
        )
    };
}

#[allow(unused_imports)]
pub(crate) use netctl_snapshot;
