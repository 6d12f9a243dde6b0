//! Shell completion. `netctl completion SHELL` prints a small script that, on each TAB, calls netctl
//! back with `NETCTL_COMPLETE=SHELL netctl -- WORDS...`; [`complete_if_asked`] answers those calls
//! through clap_complete's dynamic engine, so completion follows the clap definitions and knows
//! values: kinds and their aliases, `-o` formats, install methods, procedures, `--set` fact names
//! and resource names read from the datastore (the completers below, attached to the arguments).
//!
//! It does not run commands or print errors: a completion that cannot answer (no configuration, a
//! datastore that does not answer within [`NAME_LOOKUP_BUDGET`]) offers nothing, silently.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clap::{ArgMatches, CommandFactory};
use clap_complete::Shell;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{Bash, CompleteEnv, Elvish, EnvCompleter, Fish, Powershell, Shells, Zsh};

use crate::config::Environment;
use crate::datastore::connect::{self, ConnectOptions, IN_CLUSTER_VARIABLE};
use crate::datastore::{Detail, ListOptions, Pages};
use crate::output::{Printer, Verbosity, headings_for};
use crate::plan::facts::FACTS;
use crate::resource::Kind;
use crate::runbook::RunbookSet;

/// The variable the completion script sets when it calls netctl back.
pub const COMPLETE_VARIABLE: &str = "NETCTL_COMPLETE";

/// How long a completion may spend reading resource names (connecting included).
pub const NAME_LOOKUP_BUDGET: Duration = Duration::from_millis(1500);

/// At most this many resource names are offered.
const MOST_NAMES: usize = 1000;

/// The formats `get -o` takes; those ending in `=` take a value after it.
const OUTPUT_FORMATS: [&str; 9] = [
    "ps",
    "wide",
    "yaml",
    "json",
    "name",
    "custom-columns=",
    "jsonpath=",
    "go-template=",
    "go-template-file=",
];

#[derive(Debug, clap::Args)]
#[command(after_help = "\
The script calls netctl back on each TAB (for kinds, formats, procedures, facts and the names
in the datastore), so load it anew in each shell rather than saving an old copy:
  bash:  echo 'source <(netctl completion bash)' >> ~/.bashrc
  zsh:   echo 'source <(netctl completion zsh)' >> ~/.zshrc
  fish:  netctl completion fish > ~/.config/fish/completions/netctl.fish

Examples:
  source <(netctl completion bash)
  netctl completion bash > /usr/share/bash-completion/completions/netctl")]
pub struct CompletionArgs {
    /// The shell to generate the script for
    #[arg(value_enum)]
    shell: Shell,
}

/// The bash script: clap_complete's protocol (the variables its bash adapter reads), with the words
/// bash split at `=` and `:` joined again. Bash splits `--set alp_enabled=` into `alp_enabled` and
/// `=`, netctl reads one word; and readline replaces only the text after the `=`, so the candidates
/// are offered without what precedes it.
const BASH_SCRIPT: &str = r#"
_netctl_complete() {
    local IFS=$'\013'
    local rest="${COMP_LINE:0:COMP_POINT}" words=() word spaces i
    for (( i = 0; i <= COMP_CWORD; i++ )); do
        word="${COMP_WORDS[i]}"
        spaces="${rest%%[![:space:]]*}"
        rest="${rest#"$spaces"}"
        if (( i > 0 )) && [[ -z "$spaces" ]]; then
            words[${#words[@]}-1]+="$word"
        else
            words+=("$word")
        fi
        rest="${rest#"$word"}"
    done
    local before="${words[${#words[@]}-1]}"
    before="${before%"$2"}"
    local space=true
    if compopt +o nospace 2> /dev/null; then
        space=false
    fi
    local candidates
    candidates=( $( \
        _CLAP_IFS="$IFS" \
        _CLAP_COMPLETE_INDEX="$(( ${#words[@]} - 1 ))" \
        _CLAP_COMPLETE_COMP_TYPE="${COMP_TYPE}" \
        _CLAP_COMPLETE_SPACE="$space" \
        NETCTL_COMPLETE="bash" \
        COMPLETER -- "${words[@]}" \
    ) ) || { unset COMPREPLY; return; }
    COMPREPLY=()
    local candidate
    for candidate in "${candidates[@]}"; do
        COMPREPLY+=("${candidate#"$before"}")
    done
    if [[ $space == false ]] && [[ "${COMPREPLY-}" =~ [=/:]$ ]]; then
        compopt -o nospace
    fi
}
if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -o nospace -o bashdefault -o nosort -F _netctl_complete netctl
else
    complete -o nospace -o bashdefault -F _netctl_complete netctl
fi
"#;

/// Appended to the zsh script; see `run`.
const ZSH_AUTOLOADED: &str = r#"
if [ "$funcstack[1]" = "_netctl" ]; then
    _clap_dynamic_completer_netctl "$@"
fi
"#;

pub fn run(context: &super::Context, args: CompletionArgs) -> anyhow::Result<ExitCode> {
    let completer = completer_program();
    // Written into memory first, so a closed pipe (`netctl completion bash | head`) ends as
    // success through the printer's error.
    let mut script = Vec::new();
    if args.shell == Shell::Bash {
        let quoted = format!("'{}'", completer.replace('\'', r"'\''"));
        script.extend(BASH_SCRIPT.replace("COMPLETER", &quoted).into_bytes());
    } else {
        let name = args.shell.to_string();
        let shells = Shells::builtins();
        let Some(shell) = shells.completer(&name) else {
            anyhow::bail!("no completion script for `{name}`");
        };
        shell.write_registration(
            COMPLETE_VARIABLE,
            "netctl",
            "netctl",
            &completer,
            &mut script,
        )?;
        if args.shell == Shell::Zsh {
            // Installed as `_netctl` in `$fpath`, zsh autoloads the file on the first TAB: complete
            // then too, not only from the second on.
            script.extend_from_slice(ZSH_AUTOLOADED.as_bytes());
        }
    }
    context.printer.data(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

/// The program the script calls back: `netctl` from PATH when this one was started by name, else
/// this program's path (a build started as `./target/debug/netctl` completes with itself).
fn completer_program() -> String {
    let Some(started_as) = std::env::args_os().next().map(PathBuf::from) else {
        return "netctl".to_string();
    };
    if started_as.components().count() < 2 {
        return "netctl".to_string();
    }
    let absolute = match std::env::current_dir() {
        Ok(directory) => directory.join(&started_as),
        Err(_) => started_as,
    };
    absolute.to_string_lossy().into_owned()
}

/// The words of the command line being completed, as the script passed them.
static COMMAND_LINE: OnceLock<Vec<OsString>> = OnceLock::new();

/// When the completion script called (`NETCTL_COMPLETE` set), prints the candidates and exits;
/// otherwise returns at once. Called first thing in `main`.
pub fn complete_if_asked() {
    let Some(shell) = std::env::var_os(COMPLETE_VARIABLE) else {
        return;
    };
    if shell.is_empty() || shell == "0" {
        return;
    }
    // Nothing may reach the terminal while the user types: a panic in a completer says nothing.
    std::panic::set_hook(Box::new(|_| {}));
    let _ = COMMAND_LINE.set(std::env::args_os().collect());
    CompleteEnv::with_factory(super::Cli::command)
        .var(COMPLETE_VARIABLE)
        .shells(Shells(&[
            &FlagsAfterDash(ShellKind::Bash),
            &FlagsAfterDash(ShellKind::Zsh),
            &FlagsAfterDash(ShellKind::Fish),
            &Elvish,
            &Powershell,
        ]))
        .complete();
}

/// The shells whose answers [`FlagsAfterDash`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellKind {
    Bash,
    Zsh,
    Fish,
}

/// clap_complete's bash, zsh and fish answers (the same format, see `clap_complete::env`), except
/// that flags are offered only once a `-` is typed, as kubectl does: `get <TAB>` lists the kinds,
/// not the kinds and twenty flags, and `get hep <TAB>` lists names or nothing.
struct FlagsAfterDash(ShellKind);

impl EnvCompleter for FlagsAfterDash {
    fn name(&self) -> &'static str {
        match self.0 {
            ShellKind::Bash => Bash.name(),
            ShellKind::Zsh => Zsh.name(),
            ShellKind::Fish => Fish.name(),
        }
    }

    fn is(&self, name: &str) -> bool {
        name == self.name()
    }

    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        match self.0 {
            ShellKind::Bash => Bash.write_registration(var, name, bin, completer, buf),
            ShellKind::Zsh => Zsh.write_registration(var, name, bin, completer, buf),
            ShellKind::Fish => Fish.write_registration(var, name, bin, completer, buf),
        }
    }

    fn write_complete(
        &self,
        command: &mut clap::Command,
        mut args: Vec<OsString>,
        current_dir: Option<&std::path::Path>,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let index = match self.0 {
            ShellKind::Fish => args.len().saturating_sub(1),
            ShellKind::Bash | ShellKind::Zsh => std::env::var("_CLAP_COMPLETE_INDEX")
                .ok()
                .and_then(|index| index.parse().ok())
                .unwrap_or_default(),
        };
        if args.len() == index {
            args.push(OsString::new());
        }
        let typing_a_flag = args
            .get(index)
            .is_some_and(|word| word.to_string_lossy().starts_with('-'));
        let mut candidates = clap_complete::engine::complete(command, args, index, current_dir)?;
        if !typing_a_flag {
            candidates
                .retain(|candidate| !candidate.get_value().to_string_lossy().starts_with('-'));
        }
        let separator = std::env::var("_CLAP_IFS").unwrap_or_else(|_| "\n".to_string());
        for (position, candidate) in candidates.iter().enumerate() {
            let value = candidate.get_value().to_string_lossy();
            let help = candidate.get_help().map(|help| {
                help.to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string()
            });
            match self.0 {
                ShellKind::Bash => {
                    if position > 0 {
                        write!(buf, "{separator}")?;
                    }
                    write!(buf, "{value}")?;
                }
                ShellKind::Zsh => {
                    if position > 0 {
                        write!(buf, "{separator}")?;
                    }
                    write!(buf, "{}", value.replace('\\', "\\\\").replace(':', "\\:"))?;
                    if let Some(help) = help {
                        write!(buf, ":{}", help.replace('\\', "\\\\"))?;
                    }
                }
                ShellKind::Fish => {
                    write!(buf, "{value}")?;
                    if let Some(help) = help {
                        write!(buf, "\t{help}")?;
                    }
                    writeln!(buf)?;
                }
            }
        }
        Ok(())
    }
}

/// What the words before the one being completed say, parsed by clap leniently (missing arguments
/// and unknown values are no error here).
struct LineSoFar {
    /// The matches of the top-level command and of each subcommand, outermost first.
    levels: Vec<ArgMatches>,
}

impl LineSoFar {
    fn read() -> Option<LineSoFar> {
        let words = COMMAND_LINE.get()?;
        let start = words.iter().position(|word| word == "--")? + 1;
        let words = &words[start..];
        // bash and zsh say which word is being completed; fish passes the words up to it.
        let index = std::env::var("_CLAP_COMPLETE_INDEX")
            .ok()
            .and_then(|index| index.parse::<usize>().ok())
            .unwrap_or(words.len().saturating_sub(1));
        let preceding = words.get(..index.min(words.len()))?;
        let matches = super::Cli::command()
            .ignore_errors(true)
            .try_get_matches_from(preceding)
            .ok()?;
        let mut levels = vec![matches];
        while let Some((_, sub)) = levels.last().and_then(ArgMatches::subcommand) {
            let sub = sub.clone();
            levels.push(sub);
        }
        Some(LineSoFar { levels })
    }

    /// The value of `id` in the innermost command that has one (global flags may sit at any level).
    fn value<T: Clone + Send + Sync + 'static>(&self, id: &str) -> Option<T> {
        self.levels
            .iter()
            .rev()
            .find_map(|matches| matches.try_get_one::<T>(id).ok().flatten().cloned())
    }

    /// The single kind the command names so far (`get hep`, `delete gnp`), if it names one.
    fn kind(&self) -> Option<Kind> {
        Kind::from_user_input(&self.value::<String>("kind")?)
    }
}

/// Completes KIND: the kinds' names and aliases (only the plurals when nothing is typed yet, as
/// kubectl), after a comma the next kind of a list, and after `KIND/` that kind's names.
pub fn complete_kind(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    if let Some((kind_text, name)) = current.split_once('/') {
        let Some(kind) = Kind::from_user_input(kind_text) else {
            return Vec::new();
        };
        let line = LineSoFar::read();
        return resource_names(kind, name, line.as_ref())
            .into_iter()
            .map(|name| CompletionCandidate::new(format!("{kind_text}/{name}")))
            .collect();
    }
    let (before, typed) = match current.rsplit_once(',') {
        Some((before, typed)) => (format!("{before},"), typed),
        None => (String::new(), current),
    };
    let typed = typed.to_ascii_lowercase();
    let mut candidates = Vec::new();
    for kind in Kind::ALL {
        let names: Vec<&str> = if typed.is_empty() {
            vec![kind.plural()]
        } else {
            kind.aliases()
                .iter()
                .copied()
                .filter(|alias| alias.starts_with(&typed))
                .collect()
        };
        candidates.extend(names.into_iter().map(|name| {
            CompletionCandidate::new(format!("{before}{name}")).help(Some(kind.as_str().into()))
        }));
    }
    candidates
}

/// Completes the NAME of a resource of the kind given before it, from the datastore.
pub fn complete_resource_name(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    let Some(line) = LineSoFar::read() else {
        return Vec::new();
    };
    let Some(kind) = line.kind() else {
        return Vec::new();
    };
    resource_names(kind, current, Some(&line))
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}

/// Completes a node's name (`node status --node`), from the datastore.
pub fn complete_node_name(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    resource_names(Kind::Node, current, LineSoFar::read().as_ref())
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}

/// Completes `-o`: the formats, and after `custom-columns=` the headings of the kind given before.
pub fn complete_output_format(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    if let Some(columns) = current.strip_prefix("custom-columns=") {
        let Some(kind) = LineSoFar::read().and_then(|line| line.kind()) else {
            return Vec::new();
        };
        let (before, typed) = match columns.rsplit_once(',') {
            Some((before, typed)) => (format!("custom-columns={before},"), typed),
            None => ("custom-columns=".to_string(), columns),
        };
        let typed = typed.to_ascii_uppercase();
        return headings_for(kind)
            .into_iter()
            .filter(|heading| heading.starts_with(&typed))
            .map(|heading| CompletionCandidate::new(format!("{before}{heading}")))
            .collect();
    }
    OUTPUT_FORMATS
        .into_iter()
        .filter(|format| format.starts_with(current))
        .map(CompletionCandidate::new)
        .collect()
}

/// Completes `--procedure`: the procedures of `--runbooks DIR` when given, else of the built-in
/// runbooks.
pub fn complete_procedure(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    let directory = LineSoFar::read().and_then(|line| line.value::<PathBuf>("runbooks"));
    let Ok(set) = RunbookSet::load(directory.as_deref()) else {
        return Vec::new();
    };
    set.procedures()
        .into_iter()
        .filter(|procedure| procedure.starts_with(current))
        .map(CompletionCandidate::new)
        .collect()
}

/// Completes `--set`: `NAME=` for every fact the planner knows, and after `NAME=` the values of
/// the facts that have a fixed set of them.
pub fn complete_fact_setting(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    if let Some((name, typed)) = current.split_once('=') {
        let values = FACTS
            .iter()
            .find(|fact| fact.name == name)
            .map_or(&[][..], |fact| fact.values);
        return values
            .iter()
            .filter(|value| value.starts_with(typed))
            .map(|value| CompletionCandidate::new(format!("{name}={value}")))
            .collect();
    }
    FACTS
        .iter()
        .filter(|fact| fact.name.starts_with(current))
        .map(|fact| CompletionCandidate::new(format!("{}=", fact.name)))
        .collect()
}

/// The names of `kind` starting with `prefix`, read as the command would read them (`-c`, the
/// environment, the config file; `-n` or `default` for namespaced kinds; `--context`), sorted. Empty
/// when anything fails or the datastore does not answer within [`NAME_LOOKUP_BUDGET`].
fn resource_names(kind: Kind, prefix: &str, line: Option<&LineSoFar>) -> Vec<String> {
    let value = |id: &str| line.and_then(|line| line.value::<String>(id));
    let environment = Environment::capture();
    let config_path = line.and_then(|line| line.value::<PathBuf>("config"));
    let Ok(config) = crate::config::load(config_path.as_deref(), &environment) else {
        return Vec::new();
    };
    let request_timeout = line
        .and_then(|line| line.value::<Duration>("request_timeout"))
        .map_or(NAME_LOOKUP_BUDGET, |timeout| {
            timeout.min(NAME_LOOKUP_BUDGET)
        });
    let options = ConnectOptions {
        request_timeout,
        kube_context: value("context"),
        home: environment.exact("HOME").map(PathBuf::from),
        in_cluster: environment.exact(IN_CLUSTER_VARIABLE).is_some(),
        // Completion answers silently: the shell's line must not be written over.
        printer: Printer::process(Verbosity::QUIET, true),
        crds_optional: false,
    };
    let namespace = kind
        .is_namespaced()
        .then(|| value("namespace").unwrap_or_else(|| "default".to_string()));
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let lookup = async {
        let store = connect::connect(&config, &options).await.ok()?;
        let list = ListOptions::new(kind)
            .in_namespace(namespace)
            .with_detail(Detail::Summary {
                spec_fields: Vec::new(),
                labels: false,
            });
        let mut pages = Pages::new(Arc::clone(&store), list);
        let mut names = Vec::new();
        while let Ok(Some(page)) = pages.next().await {
            names.extend(
                page.items
                    .into_iter()
                    .map(|resource| resource.metadata.name)
                    .filter(|name| name.starts_with(prefix)),
            );
            if names.len() >= MOST_NAMES {
                break;
            }
        }
        Some(names)
    };
    let found = runtime
        .block_on(async { tokio::time::timeout(NAME_LOOKUP_BUDGET, lookup).await })
        .ok()
        .flatten()
        .unwrap_or_default();
    // A connection still trying must not hold the shell up.
    runtime.shutdown_background();
    let mut names = found;
    names.truncate(MOST_NAMES);
    names.sort();
    names
}

/// Completes what `netctl schema` takes: the kinds, `netapiconfig` and `runbook`.
pub fn complete_schema_name(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(typed) = current.to_str() else {
        return Vec::new();
    };
    let mut candidates: Vec<CompletionCandidate> = ["netapiconfig", "runbook"]
        .into_iter()
        .filter(|name| name.starts_with(typed))
        .map(CompletionCandidate::new)
        .collect();
    if !typed.contains(['/', ',']) {
        candidates.extend(complete_kind(current));
    }
    candidates
}
