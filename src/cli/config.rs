//! `netctl config view`: the effective client configuration, where each value came from, secrets
//! redacted. Useful at 3 a.m. to answer "which endpoints is this shell actually pointed at?".

use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};

use super::Context;
use crate::config::{
    ClientConfig, ConfigOption, ConfigSource, NetApiConfigDocument, NetApiConfigSpec,
};
use crate::output::TableWriter;

const REDACTED: &str = "<redacted>";

/// The group's help.
pub const EXAMPLES: &str = "\
Examples:
  netctl config view                       # values in effect and where each came from
  netctl -c /etc/netctl/netctl.cfg config view -o yaml";

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and the origin of each value (secrets redacted)
    #[command(
        after_help = "Examples:\n  netctl config view\n  NET_ETCD_ENDPOINTS=https://[fd00::1]:2379 netctl config view\n  netctl -c /etc/netctl/netctl.cfg config view -o yaml"
    )]
    View {
        /// `table` shows origins; `yaml`/`json` print a NetAPIConfig document
        #[arg(short, long, value_enum, default_value_t = ViewFormat::Table)]
        output: ViewFormat,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ViewFormat {
    Table,
    Yaml,
    Json,
}

pub fn run(context: &Context, command: ConfigCommand) -> anyhow::Result<ExitCode> {
    let ConfigCommand::View { output } = command;
    let config = context.client_config()?;
    let text = match output {
        ViewFormat::Table => table(config)?,
        ViewFormat::Yaml => crate::yaml::to_string(&document(config))?,
        ViewFormat::Json => format!("{}\n", serde_json::to_string_pretty(&document(config))?),
    };
    context.printer.data(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn shown_value(option: ConfigOption, value: &str) -> String {
    if option.is_secret() {
        REDACTED.to_string()
    } else if matches!(option, ConfigOption::EtcdCert | ConfigOption::EtcdCaCert) {
        let blocks = value.matches("-----BEGIN ").count();
        format!("<inline PEM, {blocks} block(s)>")
    } else {
        value.to_string()
    }
}

fn table(config: &ClientConfig) -> std::io::Result<String> {
    let source = match &config.source {
        ConfigSource::File(path) => format!("file `{}`", path.display()),
        ConfigSource::Environment => "environment".to_string(),
    };
    let headings = ["OPTION", "VALUE", "ORIGIN"].map(String::from).to_vec();
    let mut table = TableWriter::trimmed(Vec::new(), headings);
    table.push_row(vec![
        "datastoreType".into(),
        config.datastore_type.value.to_string(),
        config.datastore_type.origin.to_string(),
    ])?;
    for (option, value) in &config.options {
        table.push_row(vec![
            option.file_name().to_string(),
            shown_value(*option, &value.value),
            value.origin.to_string(),
        ])?;
    }
    if let Some(resolver) = &config.resolver {
        table.push_row(vec![
            "(SRV resolver)".into(),
            resolver.value.to_string(),
            resolver.origin.to_string(),
        ])?;
    }
    let table = String::from_utf8_lossy(&table.finish()?).into_owned();
    let mut text = format!("Configuration source: {source}\n\n{table}");
    if !config.ignored.is_empty() {
        text.push_str("\nIgnored:\n");
        for ignored in &config.ignored {
            text.push_str(&format!("  {ignored}\n"));
        }
    }
    Ok(text)
}

fn document(config: &ClientConfig) -> NetApiConfigDocument {
    let mut spec = NetApiConfigSpec {
        datastore_type: Some(config.datastore_type.value.to_string()),
        ..NetApiConfigSpec::default()
    };
    for (option, value) in &config.options {
        let shown = if option.is_secret() {
            REDACTED.to_string()
        } else {
            value.value.clone()
        };
        let slot = match option {
            ConfigOption::EtcdEndpoints => &mut spec.etcd_endpoints,
            ConfigOption::EtcdDiscoverySrv => &mut spec.etcd_discovery_srv,
            ConfigOption::EtcdUsername => &mut spec.etcd_username,
            ConfigOption::EtcdPassword => &mut spec.etcd_password,
            ConfigOption::EtcdKeyFile => &mut spec.etcd_key_file,
            ConfigOption::EtcdCertFile => &mut spec.etcd_cert_file,
            ConfigOption::EtcdCaCertFile => &mut spec.etcd_ca_cert_file,
            ConfigOption::EtcdKey => &mut spec.etcd_key,
            ConfigOption::EtcdCert => &mut spec.etcd_cert,
            ConfigOption::EtcdCaCert => &mut spec.etcd_ca_cert,
            ConfigOption::Kubeconfig => &mut spec.kubeconfig,
            ConfigOption::K8sApiEndpoint => &mut spec.k8s_api_endpoint,
            ConfigOption::K8sCertFile => &mut spec.k8s_cert_file,
            ConfigOption::K8sKeyFile => &mut spec.k8s_key_file,
            ConfigOption::K8sCaFile => &mut spec.k8s_ca_file,
            ConfigOption::K8sApiToken => &mut spec.k8s_api_token,
            ConfigOption::K8sCurrentContext => &mut spec.k8s_current_context,
            ConfigOption::K8sInsecureSkipTlsVerify => {
                spec.k8s_insecure_skip_tls_verify = Some(value.value == "true");
                continue;
            }
        };
        *slot = Some(shown);
    }
    NetApiConfigDocument {
        api_version: crate::resource::API_VERSION.to_string(),
        kind: crate::config::file::KIND.to_string(),
        metadata: serde_json::Map::new(),
        spec,
    }
}
