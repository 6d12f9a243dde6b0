//! The kubectl plugin form: installed (or linked) as `kubectl-netctl` on `PATH`, the binary answers
//! `kubectl netctl ...` — kubectl runs any `kubectl-NAME` program for `kubectl NAME` — and its help
//! names itself that way, as calicoctl does when run as `kubectl-calico`
//! (`calicoctl/calicoctl/util/docstring.go`: a program name starting with `kubectl-` is a plugin).
//!
//! Only the names a person reads change: the usage lines, the version line and the examples in
//! every command's help (`netctl get nodes` becomes `kubectl netctl get nodes`). Paths such as
//! `/etc/netctl/netctl.cfg` and the `NETCTL_*` variables stay as they are. Behaviour is the same.

use std::ffi::OsString;
use std::path::Path;
use std::sync::LazyLock;

use clap::{Command, CommandFactory, FromArgMatches};
use regex::Regex;

use super::Cli;

/// The program name `scripts/install.sh` links to netctl.
pub const PLUGIN_PROGRAM: &str = "kubectl-netctl";

/// How the plugin is typed.
pub const PLUGIN_DISPLAY_NAME: &str = "kubectl netctl";

/// Whether `argv0` (the program as started) is a kubectl plugin name, `kubectl-...`.
pub fn invoked_as_plugin(argv0: &OsString) -> bool {
    Path::new(argv0)
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("kubectl-"))
}

/// Parses the command line as `netctl`, or as `kubectl netctl` when started under a plugin name.
pub fn try_parse() -> Result<Cli, clap::Error> {
    let arguments: Vec<OsString> = std::env::args_os().collect();
    let plugin = arguments.first().is_some_and(invoked_as_plugin);
    let command = if plugin {
        as_plugin(Cli::command())
    } else {
        Cli::command()
    };
    let matches = command.try_get_matches_from(arguments)?;
    Cli::from_arg_matches(&matches)
}

/// `netctl` at the start of a command line in help text (after a line start, a space, a backtick
/// or a parenthesis), followed by a space: the places a person would type it.
static COMMAND_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(^|[\s`(])netctl ").expect("a valid pattern"));

/// `text` with every command line that starts with `netctl` starting with `kubectl netctl`.
pub fn plugin_text(text: &str) -> String {
    COMMAND_LINE
        .replace_all(text, format!("${{1}}{PLUGIN_DISPLAY_NAME} "))
        .into_owned()
}

/// The command tree renamed for the plugin form, help texts included.
pub fn as_plugin(command: Command) -> Command {
    rename_help(command)
        .name(PLUGIN_PROGRAM)
        .bin_name(PLUGIN_DISPLAY_NAME)
        .display_name(PLUGIN_DISPLAY_NAME)
        .about("Administer a Calico-compatible container network (netctl as a kubectl plugin)")
}

fn rename_help(mut command: Command) -> Command {
    if let Some(text) = command.get_after_help().map(ToString::to_string) {
        command = command.after_help(plugin_text(&text));
    }
    if let Some(text) = command.get_after_long_help().map(ToString::to_string) {
        command = command.after_long_help(plugin_text(&text));
    }
    if let Some(text) = command.get_long_about().map(ToString::to_string) {
        command = command.long_about(plugin_text(&text));
    }
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_string())
        .collect();
    for name in names {
        command = command.mut_subcommand(name, rename_help);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_program_names_a_person_types_are_renamed() {
        assert!(invoked_as_plugin(&OsString::from(
            "/usr/local/bin/kubectl-netctl"
        )));
        assert!(invoked_as_plugin(&OsString::from("kubectl-netctl")));
        assert!(!invoked_as_plugin(&OsString::from("/usr/bin/netctl")));
        assert_eq!(
            plugin_text("Examples:\n  netctl get nodes\n  `netctl config view` (netctl version)"),
            "Examples:\n  kubectl netctl get nodes\n  `kubectl netctl config view` (kubectl netctl version)"
        );
        let unchanged = "/etc/netctl/netctl.cfg NETCTL_RESOLVER netctl.cfg netctl-ca";
        assert_eq!(plugin_text(unchanged), unchanged);
    }

    #[test]
    fn every_subcommand_shows_the_plugin_usage() {
        let mut command = as_plugin(Cli::command());
        command.build();
        let get = command.find_subcommand_mut("get").unwrap();
        let help = get.render_help().to_string();
        assert!(help.contains("Usage: kubectl netctl get"), "{help}");
        assert!(help.contains("  kubectl netctl get nodes"), "{help}");
        assert!(!help.contains("\n  netctl "), "{help}");
    }
}
