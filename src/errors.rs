//! How netctl's errors read: [`error_chain`] writes an error with its causes (`outer: cause:
//! cause`), the one form netctl shows errors in (on stderr, in checkpoints and journals, in notes
//! of a plan); [`Hint`] is the one way an error offers advice.
//!
//! Messages describe their own layer and keep the cause in `#[source]` without repeating it, so the
//! chain reads each fact once. Advice is not part of the text: every error that has some implements
//! [`Hint`], and `cli::report` asks the errors of a chain for it, outermost first, and prints it on
//! its own `hint:` line. This file imports nothing of netctl.

/// Advice for the user about an error: what to do, printed on its own `hint:` line.
///
/// `None` when this error has no advice of its own; the reporter then asks the next error of the
/// chain (its cause), so an error that only adds context need not repeat its cause's advice.
/// Errors whose advice depends on their cause may still ask it (a variant that wraps another
/// error without keeping it as `source`, e.g. `#[error(transparent)]`, must).
pub trait Hint {
    fn hint(&self) -> Option<String>;
}

/// An error and its causes, outermost first, joined by `: ` (as `anyhow` prints `{:#}`). A cause
/// whose text is already there is not repeated: netctl's own errors never repeat their source, but
/// some libraries' do (a `kube::Error` carries its hyper error's text and the hyper error itself).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    error_chain_with(error, |_| None)
}

/// As [`error_chain`], with some errors of the chain written otherwise: `rewrite` gives the text of
/// an error of the chain in place of its `Display` (the reporter lists every problem of a listing
/// this way when asked to), or `None` to keep it.
pub fn error_chain_with(
    error: &(dyn std::error::Error + 'static),
    rewrite: impl Fn(&(dyn std::error::Error + 'static)) -> Option<String>,
) -> String {
    let mut text = rewrite(error).unwrap_or_else(|| error.to_string());
    let mut source = error.source();
    while let Some(cause) = source {
        let line = rewrite(cause).unwrap_or_else(|| cause.to_string());
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

    #[test]
    fn a_cause_can_be_written_otherwise() {
        let error = Failed("cannot read `plan.json`", std::io::Error::other("short"));
        let text = error_chain_with(&error, |cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .map(|_| "the long form".to_string())
        });
        assert_eq!(text, "cannot read `plan.json`: the long form");
    }
}
