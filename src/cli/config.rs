//! `netctl config view`: the effective client configuration, where each value came from, secrets
//! redacted. Useful at 3 a.m. to answer "which endpoints is this shell actually pointed at?".
//! `netctl config check`: loads every file the configuration names and probes every etcd endpoint
//! (`datastore::etcd::check` does the work), printing one line per file problem and per endpoint.

use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};

use super::Context;
use crate::config::DatastoreType;
use crate::config::{
    ClientConfig, ConfigOption, ConfigSource, NetApiConfigDocument, NetApiConfigSpec,
};
use crate::datastore::etcd::check::{Authentication, EndpointFacts, Leadership, Transport};
use crate::listing::{Problem, ProblemKind};
use crate::output::TableWriter;

const REDACTED: &str = "<redacted>";

/// The group's help.
pub const EXAMPLES: &str = "\
Examples:
  netctl config view                       # values in effect and where each came from
  netctl config check                      # files, key and certificate, every endpoint
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
    /// Load every file, check the key matches the certificate, resolve SRV, and connect to each
    /// etcd endpoint, reporting each (version, leader, TLS, auth); exit 1 on any problem
    #[command(
        after_help = "Examples:\n  netctl config check\n  netctl -c /etc/netctl/netctl.cfg config check\n  DATASTORE_TYPE=etcdv3 ETCD_ENDPOINTS=https://10.0.0.1:2379,https://10.0.0.2:2379 netctl config check"
    )]
    Check,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ViewFormat {
    Table,
    Yaml,
    Json,
}

pub async fn run(context: &Context, command: ConfigCommand) -> anyhow::Result<ExitCode> {
    let output = match command {
        ConfigCommand::View { output } => output,
        ConfigCommand::Check => return check(context).await,
    };
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
    let group_configured = config
        .option(ConfigOption::CalicoApiGroup)
        .is_some_and(|group| !group.value.trim().is_empty());
    if config.datastore_type.value == DatastoreType::Kubernetes && !group_configured {
        table.push_row(vec![
            ConfigOption::CalicoApiGroup.file_name().into(),
            "(discovered on connect)".into(),
            "API server".into(),
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
    if config.datastore_type.value == DatastoreType::Kubernetes && !group_configured {
        text.push_str(
            "\nThe Calico API group is discovered on connect as upstream does it: `projectcalico.org/v3` when the\nAPI server serves it and not `crd.projectcalico.org/v1` (v3.32's native CRDs), else\n`crd.projectcalico.org/v1`. `netctl config check` shows the group in use; `NET_CALICO_API_GROUP`\n(or `calicoAPIGroup`) fixes it.\n",
        );
    }
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
            ConfigOption::CalicoApiGroup => &mut spec.calico_api_group,
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

/// `config check`: the etcd checks, one line each; the Kubernetes datastore is proved by
/// connecting, with the API group it reads and why (exit 1 when both groups hold objects).
async fn check(context: &Context) -> anyhow::Result<ExitCode> {
    let config = context.client_config()?;
    let printer = &context.printer;
    if config.datastore_type.value == DatastoreType::Kubernetes {
        let store = context.kubernetes_datastore().await?;
        printer.data_line(&format!(
            "kubernetes datastore: connected to {}",
            store.server()
        ))?;
        printer.data_line(&format!("API group: {}", store.api_group()))?;
        return Ok(match store.other_group_objects().await {
            None => ExitCode::SUCCESS,
            Some(other) => {
                printer.data_line(&format!(
                    "API group: error: {}",
                    other.warning(store.api_group())
                ))?;
                printer.data_line(&format!("  hint: {}", other.hint()))?;
                ExitCode::FAILURE
            }
        });
    }
    let settings = config.etcd()?;
    let timeout = context.global.request_timeout;
    let report = crate::datastore::etcd::check::check(&settings, timeout).await;
    // One line per check, through the bounded lister: a list of many endpoints is counted past
    // twenty lines, by outcome.
    let mut lines = Vec::new();
    match report.files.as_slice() {
        [] => lines.push(CheckLine::ok("files: ok".into())),
        problems => {
            for problem in problems {
                let problem = problem.to_string();
                lines.push(CheckLine::error(
                    format!("files: error: {problem}"),
                    &problem,
                ));
            }
        }
    }
    if let Some(name) = &report.discovery {
        lines.push(match &report.discovery_error {
            None => CheckLine::ok(format!(
                "SRV `{name}`: {} endpoint(s)",
                report.endpoints.len()
            )),
            Some(error) => CheckLine::error(format!("SRV `{name}`: error: {error}"), error),
        });
    }
    for endpoint in &report.endpoints {
        lines.push(match &endpoint.outcome {
            Ok(facts) => CheckLine::ok(format!(
                "{}: ok: {}",
                endpoint.endpoint,
                describe_facts(facts)
            )),
            Err(problem) => {
                let problem = crate::errors::error_chain(problem);
                CheckLine::error(format!("{}: error: {problem}", endpoint.endpoint), &problem)
            }
        });
    }
    printer.list_lines(&lines)?;
    Ok(match report.passed() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

/// One line of `config check`, counted by its outcome when it is not shown.
struct CheckLine {
    text: String,
    kind: ProblemKind,
}

impl CheckLine {
    fn ok(text: String) -> CheckLine {
        CheckLine {
            text,
            kind: ProblemKind::named("ok"),
        }
    }

    fn error(text: String, problem: &str) -> CheckLine {
        CheckLine {
            text,
            kind: ProblemKind::message(problem),
        }
    }
}

impl Problem for CheckLine {
    fn entry(&self) -> String {
        self.text.clone()
    }

    fn kinds(&self) -> Vec<ProblemKind> {
        vec![self.kind.clone()]
    }
}

fn describe_facts(facts: &EndpointFacts) -> String {
    let tls = match facts.tls {
        Transport::Plain => "no TLS",
        Transport::Tls => "TLS",
        Transport::MutualTls => "TLS with client certificate",
    };
    let leader = match facts.leader {
        Leadership::Leader => "leader".to_string(),
        Leadership::Follower { leader } => format!("follower (leader {leader:x})"),
        Leadership::NoLeader => "no leader".to_string(),
    };
    let auth = match &facts.auth {
        Authentication::NotUsed => "no authentication".to_string(),
        Authentication::User(user) => format!("authenticated as `{user}`"),
    };
    format!("etcd {}, {leader}, {tls}, {auth}", facts.version)
}
