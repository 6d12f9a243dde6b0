//! Which of the node's daemons run, from the command lines in `/proc/<pid>/cmdline`.
//!
//! Upstream (`status.go`, through gopsutil) looks for a process whose arguments begin with
//! `calico-felix` (older calico/node images) or `calico-node -felix` (newer ones: runit starts
//! Felix as `calico-node -felix`), and for `bird` and `bird6`. Refinements: a program started by
//! its path (`/usr/bin/calico-node -felix`) counts, and every word must match — upstream's loop
//! accepts a process when any one of the words is in its place, so any `… -felix` process would
//! pass for Felix.
//!
//! The process table is read from a proc directory: `/proc` on a node, `<root>/proc` with
//! `--root` (the host's /proc mounted into a container, or a test's copy). A process that ends
//! while it is read, or whose command line is not readable, is skipped.

use std::path::Path;

/// The running programs found, as their argument lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessTable {
    commands: Vec<Vec<String>>,
}

/// What `node status` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Daemon {
    /// Felix, the node agent: `calico-felix` or `calico-node -felix`.
    Agent,
    /// BIRD for IPv4: `bird`.
    Bird,
    /// BIRD for IPv6: `bird6`.
    Bird6,
}

impl ProcessTable {
    /// Reads every `<proc>/<pid>/cmdline`. An unreadable proc directory is an error (not "nothing
    /// runs").
    pub fn read(proc: &Path) -> std::io::Result<ProcessTable> {
        let mut commands = Vec::new();
        for entry in std::fs::read_dir(proc)? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.is_empty() || !name.bytes().all(|byte| byte.is_ascii_digit()) {
                continue;
            }
            // Kernel threads have an empty command line; a process gone since is no error.
            let Ok(bytes) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let words: Vec<String> = bytes
                .split(|byte| *byte == 0)
                .filter(|word| !word.is_empty())
                .map(|word| String::from_utf8_lossy(word).into_owned())
                .collect();
            if !words.is_empty() {
                commands.push(words);
            }
        }
        Ok(ProcessTable { commands })
    }

    /// A table of these command lines (for tests and callers that have them already).
    pub fn from_commands(commands: Vec<Vec<String>>) -> ProcessTable {
        ProcessTable { commands }
    }

    /// The command line of the first process that is `daemon`, joined with spaces.
    pub fn find(&self, daemon: Daemon) -> Option<String> {
        self.commands
            .iter()
            .find(|words| is(daemon, words))
            .map(|words| words.join(" "))
    }
}

fn is(daemon: Daemon, words: &[String]) -> bool {
    let program = words
        .first()
        .map(|first| first.rsplit('/').next().unwrap_or(first));
    match daemon {
        Daemon::Agent => match program {
            Some("calico-felix") => true,
            Some("calico-node") => words.get(1).is_some_and(|word| word == "-felix"),
            _ => false,
        },
        Daemon::Bird => program == Some("bird"),
        Daemon::Bird6 => program == Some("bird6"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(commands: &[&[&str]]) -> ProcessTable {
        ProcessTable::from_commands(
            commands
                .iter()
                .map(|words| words.iter().map(|word| word.to_string()).collect())
                .collect(),
        )
    }

    #[test]
    fn felix_is_found_under_both_names_and_by_path() {
        assert!(
            table(&[&["calico-node", "-felix"]])
                .find(Daemon::Agent)
                .is_some()
        );
        assert!(table(&[&["calico-felix"]]).find(Daemon::Agent).is_some());
        assert_eq!(
            table(&[&["/usr/bin/calico-node", "-felix"]]).find(Daemon::Agent),
            Some("/usr/bin/calico-node -felix".into())
        );
        // Other calico-node services are not Felix, nor is another program's `-felix`.
        assert!(
            table(&[
                &["calico-node", "-confd"],
                &["calico-node", "-node-services"]
            ])
            .find(Daemon::Agent)
            .is_none()
        );
        assert!(table(&[&["sleep", "-felix"]]).find(Daemon::Agent).is_none());
        assert!(table(&[&["calico-node"]]).find(Daemon::Agent).is_none());
    }

    #[test]
    fn bird_and_bird6_are_told_apart() {
        let processes = table(&[&["bird6", "-R", "-s", "/var/run/calico/bird6.ctl"]]);
        assert!(processes.find(Daemon::Bird).is_none());
        assert!(processes.find(Daemon::Bird6).is_some());
        let processes = table(&[&["bird", "-R", "-s", "/var/run/calico/bird.ctl"]]);
        assert!(processes.find(Daemon::Bird).is_some());
        assert!(processes.find(Daemon::Bird6).is_none());
    }

    #[test]
    fn the_proc_directory_is_read_pid_by_pid() {
        let proc = tempfile::tempdir().unwrap();
        for (pid, cmdline) in [
            ("1", &b"/sbin/init\0"[..]),
            ("42", b"calico-node\0-felix\0"),
            ("7", b""),
            ("self", b"netctl\0"),
        ] {
            std::fs::create_dir(proc.path().join(pid)).unwrap();
            std::fs::write(proc.path().join(pid).join("cmdline"), cmdline).unwrap();
        }
        let processes = ProcessTable::read(proc.path()).unwrap();
        assert_eq!(
            processes.find(Daemon::Agent),
            Some("calico-node -felix".into())
        );
        assert!(ProcessTable::read(&proc.path().join("missing")).is_err());
    }
}
