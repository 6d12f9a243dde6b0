//! `netctl schema`: writes the JSON Schemas built into the binary — one per resource kind and
//! release line, the NetAPIConfig file and runbook files — so editors can check documents on a
//! machine with only the installed binary. Each carries an `$id` naming it; the files committed
//! under `schemas/` are exactly what `netctl schema --all` writes. The schemas themselves are
//! generated elsewhere (`resource::spec::schema`, `config::file`, `runbook`); this file only
//! chooses and writes them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use super::args::ReleaseArg;
use crate::resource::Kind;
use crate::resource::spec::schema::{kind_schema_path, schema_files, schema_text, with_id};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  netctl schema hostendpoint > hostendpoints.schema.json
  netctl schema hostendpoint --release v3.29       # as that release line has the kind
  netctl schema --all ~/.local/share/netctl/schemas
  # then, first line of a YAML file, for editors using yaml-language-server:
  # yaml-language-server: $schema=/home/me/.local/share/netctl/schemas/hostendpoints.schema.json
  # (`netctl get ... -o yaml --schema-modeline=DIR` writes that line)")]
#[group(id = "what", required = true, args = ["kind", "all"])]
pub struct SchemaArgs {
    /// A resource kind (`hostendpoint`, `gnp`, ...), `netapiconfig` or `runbook`: printed to stdout
    #[arg(add = clap_complete::engine::ArgValueCompleter::new(super::completion::complete_schema_name))]
    kind: Option<String>,
    /// Write every schema into this directory: `<plural>.schema.json` for the newest release line,
    /// `v3.NN/<plural>.schema.json` for each older one, `netapiconfig` and `runbook`
    #[arg(long, value_name = "DIR", conflicts_with_all = ["kind", "release"])]
    all: Option<PathBuf>,
    /// The schema of KIND as this release line has it
    #[command(flatten)]
    release: ReleaseArg,
}

/// Every schema file netctl has: `(path under the schema directory, text)`, as committed under
/// `schemas/`.
pub fn every_schema_file() -> Vec<(String, String)> {
    let mut files = schema_files();
    let config: serde_json::Value =
        serde_json::from_str(&crate::config::file::json_schema()).unwrap_or_default();
    for (path, schema) in [
        ("netapiconfig.schema.json", config),
        ("runbook.schema.json", crate::runbook::json_schema()),
    ] {
        files.push((path.to_string(), schema_text(&with_id(path, schema))));
    }
    files
}

pub fn run(context: &Context, args: SchemaArgs) -> anyhow::Result<ExitCode> {
    if let Some(directory) = args.all {
        let files = every_schema_file();
        for (path, text) in &files {
            let path = directory.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create `{}`", parent.display()))?;
            }
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write `{}`", path.display()))?;
        }
        context.printer.say(format!(
            "wrote {} schemas to `{}`",
            files.len(),
            directory.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let name = args.kind.unwrap_or_default();
    let release = args.release.chosen()?;
    let path = match name.to_ascii_lowercase().as_str() {
        "netapiconfig" | "runbook" if release.is_some() => {
            anyhow::bail!("`{name}` has one schema for every release line: leave out `--release`")
        }
        "netapiconfig" => "netapiconfig.schema.json".to_string(),
        "runbook" => "runbook.schema.json".to_string(),
        _ => {
            let kind = name.parse::<Kind>()?;
            let api = release.unwrap_or_else(crate::release::ApiRelease::newest);
            if let Some(refused) = crate::resource::availability::check_kind(kind, &api) {
                anyhow::bail!("{}", refused.reason);
            }
            kind_schema_path(kind, &api.release)
        }
    };
    let text = every_schema_file()
        .into_iter()
        .find(|(candidate, _)| *candidate == path)
        .map(|(_, text)| text)
        .unwrap_or_default();
    context.printer.data(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every file under `schemas/` is what `netctl schema --all` writes (each with its `$id`), and
    /// nothing else is there: the committed schemas cannot drift from the types, the release
    /// annotations or the binary. After a deliberate change, regenerate them with
    /// `NETCTL_UPDATE_SCHEMAS=1 cargo test --lib cli::schema`.
    #[test]
    fn committed_schemas_are_what_netctl_schema_writes() {
        let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
        let update = std::env::var_os("NETCTL_UPDATE_SCHEMAS").is_some();
        let files = every_schema_file();
        let mut stale = Vec::new();
        for (path, text) in &files {
            let file = directory.join(path);
            if update {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, text).unwrap();
            } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.clone());
            }
        }
        for path in files_under(&directory, "") {
            if !files.iter().any(|(known, _)| *known == path) {
                stale.push(format!("{path} (netctl does not write it)"));
            }
        }
        assert!(
            stale.is_empty(),
            "schemas/ is out of date: {stale:?}\nregenerate with \
             `NETCTL_UPDATE_SCHEMAS=1 cargo test --lib cli::schema` (and remove what netctl does not write)"
        );
    }

    /// The files under `directory`, as paths relative to it joined with `/`.
    fn files_under(directory: &Path, prefix: &str) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(directory).unwrap() {
            let entry = entry.unwrap();
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                found.extend(files_under(&entry.path(), &format!("{name}/")));
            } else {
                found.push(name);
            }
        }
        found
    }

    #[test]
    fn every_schema_names_itself_by_its_path() {
        for (path, text) in every_schema_file() {
            let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(schema["$id"], format!("urn:netctl:schema:{path}"), "{path}");
            assert_eq!(
                schema
                    .as_object()
                    .unwrap()
                    .keys()
                    .nth(1)
                    .map(String::as_str),
                Some("$id"),
                "{path}: `$id` follows `$schema`"
            );
        }
    }
}
