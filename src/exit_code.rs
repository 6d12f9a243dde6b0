//! The exit codes netctl ends with, and what each means — one table, read by `main` (which maps
//! errors to them), `--help`, the notification hooks (`NETCTL_EXIT_CODE`) and the tests.
//!
//! Two commands follow the tools CI scripts already know: `upgrade plan --detailed-exitcode` takes
//! Terraform's codes (0 nothing to do, 1 error, 2 changes pending) and `netctl diff` kubectl diff's
//! (0 no difference, 1 differences, above 1 an error). So no error may exit 2 where 2 means "pending",
//! nor 1 where 1 means "differences": bad usage exits 64 (`EX_USAGE` of `sysexits.h`), not clap's 2,
//! and every error of `netctl diff` exits 2. This file decides no mapping of an error; it names the
//! codes.

/// The command did what was asked (also when the reader of stdout goes away).
pub const SUCCESS: u8 = 0;
/// The command failed: bad input, a refused configuration, a datastore error, a failed or
/// interrupted run.
pub const FAILURE: u8 = 1;
/// `netctl diff`: the files differ from what is stored (kubectl diff's 1).
pub const DIFFERENCES: u8 = 1;
/// `upgrade plan --detailed-exitcode`: an upgrade or a fix-up step is pending (Terraform's 2).
pub const PENDING: u8 = 2;
/// `netctl diff`: the diff itself failed (kubectl diff's "above 1").
pub const DIFF_FAILED: u8 = 2;
/// `upgrade apply` stopped in front of a human gate with nobody to ask.
pub const STOPPED_AT_GATE: u8 = 3;
/// `upgrade apply` stopped at a safe point because its maintenance window ends (`--deadline`,
/// `--window`).
pub const STOPPED_AT_DEADLINE: u8 = 4;
/// Bad usage: an unknown command or flag, a missing argument (`EX_USAGE`).
pub const USAGE: u8 = 64;

// Terraform reads 2 as "pending", kubectl diff reads 1 as "differences" and above 1 as an error:
// bad usage must be neither, and a failed diff above 1. Checked when netctl is compiled.
const _: () = assert!(USAGE != PENDING && USAGE != DIFFERENCES && USAGE != SUCCESS);
const _: () = assert!(DIFF_FAILED > DIFFERENCES && FAILURE != PENDING);

/// Every code with its meaning, as `--help`, the README and the docs list them: one line each, a
/// second for the command that gives the code another meaning.
pub const TABLE: [(u8, &str, Option<&str>); 6] = [
    (
        SUCCESS,
        "success (also when the reader of stdout goes away: `netctl get nodes | head -1`)",
        None,
    ),
    (
        FAILURE,
        "the command failed (bad input, refused configuration, datastore error)",
        Some("`netctl diff`: differences found"),
    ),
    (
        PENDING,
        "`upgrade plan --detailed-exitcode`: an upgrade or fix-up step is pending",
        Some("`netctl diff`: the diff failed (bad input, datastore error)"),
    ),
    (
        STOPPED_AT_GATE,
        "`upgrade apply` stopped at a human gate: `--resume --approve STEP` continues",
        None,
    ),
    (
        STOPPED_AT_DEADLINE,
        "`upgrade apply` stopped at a safe point: its window ends (`--deadline`, `--window`)",
        Some("`upgrade apply --resume` continues in the next window"),
    ),
    (
        USAGE,
        "bad usage: unknown command or flag, missing argument",
        None,
    ),
];

/// The table as `--help` prints it, after an `Exit codes:` heading (lines short enough that help
/// wrapping leaves them alone).
pub fn help_text() -> String {
    let mut text = String::from("Exit codes:");
    for (code, meaning, also) in TABLE {
        text.push_str(&format!("\n  {code:<3} {meaning}"));
        if let Some(also) = also {
            text.push_str(&format!("\n      {also}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_error_exits_with_a_code_ci_tools_read_as_a_result() {
        let codes: Vec<u8> = TABLE.iter().map(|(code, _, _)| *code).collect();
        let mut unique = codes.clone();
        unique.dedup();
        assert_eq!(codes, unique, "each code listed once");
    }

    #[test]
    fn help_lists_every_code_on_its_own_line() {
        let text = help_text();
        for (code, _, _) in TABLE {
            assert!(
                text.lines()
                    .any(|line| line.starts_with(&format!("  {code} "))),
                "{text}"
            );
        }
    }
}
