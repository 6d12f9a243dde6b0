//! The one rule for secrets in what netctl shows and keeps: a command-line option or environment
//! variable whose name suggests a secret (`password`, `token`, `secret`, `key`, …) has its value
//! replaced by [`REDACTED`].
//!
//! Plans apply it once, when they are made (`Plan::new`): a program's environment value under such
//! a name is kept as [`REDACTED`] and supplied at run time from netctl's own environment, which the
//! program inherits; a secret on a command line makes the planner refuse the runbook (a command line
//! is visible to every user of the machine, and there is nothing to supply it from at run time).
//! Everything made from a plan — its text, JSON and Markdown, the checkpoint, its mirror, the
//! journal, a dry-run transcript — therefore holds no such value, and the displays of a command line
//! apply the same rule again ([`command_line`], the one way a command line is shown: quoted for a
//! shell, secrets redacted). This file only decides what is secret and how it is shown.

use std::collections::BTreeMap;

/// What a secret value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Whether a variable or option name suggests a secret.
pub fn looks_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "secret",
        "token",
        "private",
        "credential",
        "key",
    ]
    .iter()
    .any(|word| lower.contains(word))
}

/// Environment variables with the values of secret-looking names replaced.
pub fn redact_env(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    env.iter()
        .map(|(name, value)| {
            let shown = match looks_secret(name) {
                true => REDACTED.to_string(),
                false => value.clone(),
            };
            (name.clone(), shown)
        })
        .collect()
}

/// An argv with secrets replaced: `--password=x`, `--token x` and `password=x` lose their values.
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut shown = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for argument in argv {
        if hide_next {
            shown.push(REDACTED.to_string());
            hide_next = false;
            continue;
        }
        match argument.split_once('=') {
            Some((name, _)) if looks_secret(name) => shown.push(format!("{name}={REDACTED}")),
            None if argument.starts_with('-') && looks_secret(argument) => {
                shown.push(argument.clone());
                hide_next = true;
            }
            _ => shown.push(argument.clone()),
        }
    }
    shown
}

/// The option or name in `argv` whose value is a secret by the rule (`--password`, `token=`), if
/// any: exactly what [`redact_argv`] would hide.
pub fn secret_in_argv(argv: &[String]) -> Option<String> {
    let mut arguments = argv.iter().peekable();
    while let Some(argument) = arguments.next() {
        match argument.split_once('=') {
            Some((name, _)) if looks_secret(name) => return Some(format!("{name}=")),
            None if argument.starts_with('-')
                && looks_secret(argument)
                && arguments.peek().is_some() =>
            {
                return Some(argument.clone());
            }
            _ => {}
        }
    }
    None
}

/// Quotes one word for a POSIX shell, for showing command lines (nothing is run through a shell):
/// unchanged when it holds only safe characters, otherwise in single quotes (a `'` inside becomes
/// `'\''`).
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A command line as netctl shows it (plans, transcripts, the journal): the environment's
/// `NAME=value` pairs, then the argv, every word quoted for a shell and every secret redacted.
pub fn command_line(argv: &[String], env: &BTreeMap<String, String>) -> String {
    redact_env(env)
        .into_iter()
        .map(|(name, value)| format!("{name}={}", shell_quote(&value)))
        .chain(redact_argv(argv).iter().map(|word| shell_quote(word)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn secrets_in_argv_and_env_are_redacted() {
        let argv = strings(&[
            "etcdctl",
            "--password",
            "hunter2",
            "--user=root",
            "token=abc",
            "get",
        ]);
        assert_eq!(
            redact_argv(&argv),
            strings(&[
                "etcdctl",
                "--password",
                REDACTED,
                "--user=root",
                "token=<redacted>",
                "get"
            ])
        );
        let env = BTreeMap::from([
            ("ETCD_PASSWORD".to_string(), "hunter2".to_string()),
            ("MODE".to_string(), "fast".to_string()),
        ]);
        assert_eq!(
            redact_env(&env),
            BTreeMap::from([
                ("ETCD_PASSWORD".to_string(), REDACTED.to_string()),
                ("MODE".to_string(), "fast".to_string())
            ])
        );
    }

    #[test]
    fn the_secret_on_a_command_line_is_named_by_its_option() {
        assert_eq!(
            secret_in_argv(&strings(&["etcdctl", "--password", "hunter2"])),
            Some("--password".to_string())
        );
        assert_eq!(
            secret_in_argv(&strings(&["helm", "--set", "token=abc"])),
            Some("token=".to_string())
        );
        assert_eq!(secret_in_argv(&strings(&["ls", "-l", "/tmp"])), None);
    }

    #[test]
    fn quoting_leaves_safe_words_alone() {
        assert_eq!(shell_quote("NODENAME=node-1"), "NODENAME=node-1");
        assert_eq!(
            shell_quote("/var/log/calico:/var/log/calico"),
            "/var/log/calico:/var/log/calico"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(
            shell_quote("IP_AUTODETECTION_METHOD=interface=eth.*"),
            "'IP_AUTODETECTION_METHOD=interface=eth.*'"
        );
        let argv = strings(&["sh", "-c", "echo 'hi' >> f", "--token", "t0p"]);
        let env = BTreeMap::from([("API_KEY".to_string(), "k".to_string())]);
        assert_eq!(
            command_line(&argv, &env),
            r#"API_KEY='<redacted>' sh -c 'echo '\''hi'\'' >> f' --token '<redacted>'"#
        );
    }
}
