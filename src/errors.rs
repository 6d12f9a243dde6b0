//! The text of an error with its causes: `error_chain` writes `outer: cause: cause`, the one form
//! netctl shows errors in (on stderr, in checkpoints and journals, in notes of a plan).
//!
//! Messages describe their own layer and keep the cause in `#[source]` without repeating it, so the
//! chain reads each fact once. Advice is not part of the text: typed errors offer it through their
//! `hint()` methods, and `cli::report` prints it on its own line. This file imports nothing of netctl.

/// An error and its causes, outermost first, joined by `: ` (as `anyhow` prints `{:#}`).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read `plan.json`")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn the_chain_reads_outermost_first() {
        let error = Outer(std::io::Error::other("disk on fire"));
        assert_eq!(error_chain(&error), "cannot read `plan.json`: disk on fire");
    }
}
