//! The text of an error with its causes: `error_chain` writes `outer: cause: cause`, the one form
//! netctl shows errors in (on stderr, in checkpoints and journals, in notes of a plan).
//!
//! Messages describe their own layer and keep the cause in `#[source]` without repeating it, so the
//! chain reads each fact once. Advice is not part of the text: typed errors offer it through their
//! `hint()` methods, and `cli::report` prints it on its own line. This file imports nothing of netctl.

/// An error and its causes, outermost first, joined by `: ` (as `anyhow` prints `{:#}`). A cause
/// whose text is already there is not repeated: netctl's own errors never repeat their source, but
/// some libraries' do (a `kube::Error` carries its hyper error's text and the hyper error itself).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a message of its own and an I/O error as its cause.
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Failed(&'static str, #[source] std::io::Error);

    #[test]
    fn the_chain_reads_outermost_first() {
        let error = Failed(
            "cannot read `plan.json`",
            std::io::Error::other("disk on fire"),
        );
        assert_eq!(error_chain(&error), "cannot read `plan.json`: disk on fire");
    }

    #[test]
    fn a_cause_a_library_already_printed_is_not_repeated() {
        let refused = || std::io::Error::other("connection refused");
        let error = Failed("request failed: connection refused", refused());
        assert_eq!(error_chain(&error), "request failed: connection refused");
    }
}
