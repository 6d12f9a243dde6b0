//! `netctl schema`: writes the JSON Schemas built into the binary — one per resource kind, the
//! NetAPIConfig file and runbook files — so editors can check documents on a machine with only the
//! installed binary. Each gets an `$id` naming it. The schemas themselves are generated elsewhere
//! (`resource::spec::schema`, `config::file`, `runbook`); this file only chooses and writes them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use crate::resource::Kind;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  netctl schema hostendpoint > hostendpoints.schema.json
  netctl schema --all ~/.local/share/netctl/schemas
  # then, first line of a YAML file, for editors using yaml-language-server:
  # yaml-language-server: $schema=/home/me/.local/share/netctl/schemas/hostendpoints.schema.json")]
#[group(id = "what", required = true, args = ["kind", "all"])]
pub struct SchemaArgs {
    /// A resource kind (`hostendpoint`, `gnp`, ...), `netapiconfig` or `runbook`: printed to stdout
    kind: Option<String>,
    /// Write every schema into this directory as `<plural>.schema.json`
    #[arg(long, value_name = "DIR", conflicts_with = "kind")]
    all: Option<PathBuf>,
}

/// Every schema netctl has, by file name.
fn every_schema() -> Vec<(String, serde_json::Value)> {
    let mut schemas: Vec<(String, serde_json::Value)> = Kind::ALL
        .into_iter()
        .map(|kind| {
            (
                format!("{}.schema.json", kind.plural()),
                crate::resource::spec::schema::document_schema(kind),
            )
        })
        .collect();
    let config: serde_json::Value =
        serde_json::from_str(&crate::config::file::json_schema()).unwrap_or_default();
    schemas.push(("netapiconfig.schema.json".to_string(), config));
    schemas.push((
        "runbook.schema.json".to_string(),
        crate::runbook::json_schema(),
    ));
    schemas
}

/// The schema with an `$id` (after `$schema`) naming it.
fn with_id(file_name: &str, schema: serde_json::Value) -> serde_json::Value {
    let serde_json::Value::Object(fields) = schema else {
        return schema;
    };
    let mut identified = serde_json::Map::new();
    let mut fields = fields.into_iter().peekable();
    if let Some((key, value)) = fields.next_if(|(key, _)| key == "$schema") {
        identified.insert(key, value);
    }
    identified.insert(
        "$id".to_string(),
        serde_json::Value::String(format!("urn:netctl:schema:{file_name}")),
    );
    identified.extend(fields.filter(|(key, _)| key != "$id"));
    serde_json::Value::Object(identified)
}

fn text(schema: &serde_json::Value) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(schema).unwrap_or_default()
    )
}

pub fn run(context: &Context, args: SchemaArgs) -> anyhow::Result<ExitCode> {
    if let Some(directory) = args.all {
        std::fs::create_dir_all(&directory)
            .with_context(|| format!("cannot create `{}`", directory.display()))?;
        for (file_name, schema) in every_schema() {
            let path = directory.join(&file_name);
            std::fs::write(&path, text(&with_id(&file_name, schema)))
                .with_context(|| format!("cannot write `{}`", path.display()))?;
        }
        context.printer.say(format!(
            "wrote {} schemas to `{}`",
            every_schema().len(),
            directory.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let name = args.kind.unwrap_or_default();
    let file_name = match name.to_ascii_lowercase().as_str() {
        "netapiconfig" => "netapiconfig.schema.json".to_string(),
        "runbook" => "runbook.schema.json".to_string(),
        _ => format!("{}.schema.json", name.parse::<Kind>()?.plural()),
    };
    let schema = every_schema()
        .into_iter()
        .find(|(candidate, _)| *candidate == file_name)
        .map(|(_, schema)| schema)
        .unwrap_or_default();
    context.printer.data(&text(&with_id(&file_name, schema)))?;
    Ok(ExitCode::SUCCESS)
}
