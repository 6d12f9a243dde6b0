//! Arguments several commands share: `-f` files, `--dry-run`, the namespace rules of `-n`/`-A`,
//! durations, and the facts and manifest edits of `upgrade plan`, `upgrade apply` and
//! `runbook render`.
//!
//! Each turns flags into plain values (documents, a [`RunMode`], a namespace, [`FactOverrides`], a
//! [`ManifestEditRequest`]); none connects to anything or plans.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use clap_complete::engine::ArgValueCompleter;

use crate::config::DatastoreType;
use crate::exec::RunMode;
use crate::plan::Release;
use crate::plan::facts::{FactOverrides, InstallMethod, parse_set};
use crate::plan::request::{Configured, ManifestEditRequest, ManifestReading, UpgradeRequest};
use crate::release::{ApiRelease, ReleaseFlagError};
use crate::resource::{Input, Kind, LoadError, Loader, Resource};
use crate::runbook::UPGRADE_PROCEDURE;

/// Parses a duration such as `10s`, `1m30s` or `500ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|error| format!("`{text}`: {error}"))
}

/// `--deadline TIME` or `--window DURATION`: when the maintenance window ends.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WindowArgs {
    /// The maintenance window ends at TIME (RFC 3339: `2026-03-01T04:00:00Z`, `2026-03-01T05:00:00+01:00`):
    /// no segment that would not finish by then is started, and the run stops at a safe point once it comes
    #[arg(long, value_name = "TIME", conflicts_with = "window", value_parser = parse_deadline)]
    pub deadline: Option<std::time::SystemTime>,
    /// The maintenance window ends DURATION from now (e.g. `2h`, `90m`); as `--deadline`
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub window: Option<Duration>,
}

impl WindowArgs {
    /// The window the flags give, measured from now for `--window`.
    pub fn window(&self) -> Option<crate::exec::window::Window> {
        let deadline = match (self.deadline, self.window) {
            (Some(deadline), _) => deadline,
            (None, Some(length)) => std::time::SystemTime::now() + length,
            (None, None) => return None,
        };
        Some(crate::exec::window::Window { deadline })
    }
}

/// `--canary N` or `--canary-selector SELECTOR`: roll the node agent to a few nodes first, verify
/// them, stop at a gate, then roll the rest (manifest installs; see `plan/canary.rs`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CanaryArgs {
    /// Roll the node agent to the first N nodes (by name) first, verify them and stop at the gate
    /// `canary/approve` before the rest (manifest installs: DaemonSet `OnDelete`, pods replaced node
    /// by node; refused on operator and Helm installs, whose operator rolls calico-node itself)
    #[arg(long, value_name = "N", conflicts_with = "canary_selector", value_parser = clap::value_parser!(u32).range(1..))]
    pub canary: Option<u32>,
    /// As `--canary`, with the nodes a Kubernetes node label selector matches (`kubectl get nodes
    /// -l SELECTOR`), e.g. `topology.kubernetes.io/zone=zone-a`
    #[arg(long, value_name = "SELECTOR")]
    pub canary_selector: Option<String>,
}

impl CanaryArgs {
    /// The canary the flags ask for.
    pub fn request(&self) -> Option<crate::plan::canary::CanaryRequest> {
        use crate::plan::canary::CanaryRequest;
        match (&self.canary, &self.canary_selector) {
            (Some(count), _) => Some(CanaryRequest::Count(*count)),
            (None, Some(selector)) => Some(CanaryRequest::Selector(selector.clone())),
            (None, None) => None,
        }
    }
}

/// Parses an RFC 3339 time with `Z` or a UTC offset (`+01:00`), as `--deadline` takes it.
pub fn parse_deadline(text: &str) -> Result<std::time::SystemTime, String> {
    let invalid = || {
        format!(
            "`{text}` is not a time: expected RFC 3339 with `Z` or an offset, e.g. `2026-03-01T04:00:00Z` or `2026-03-01T05:00:00+01:00`"
        )
    };
    let trimmed = text.trim();
    // The offset, when there is one after the time of day: `+HH:MM` or `-HH:MM`.
    let (local, offset) = match trimmed.len().checked_sub(6).map(|at| trimmed.split_at(at)) {
        Some((local, offset))
            if local.contains('T')
                && (offset.starts_with('+') || offset.starts_with('-'))
                && offset.as_bytes().get(3) == Some(&b':') =>
        {
            let hours: u64 = offset[1..3].parse().map_err(|_| invalid())?;
            let minutes: u64 = offset[4..6].parse().map_err(|_| invalid())?;
            let seconds = Duration::from_secs(hours * 3600 + minutes * 60);
            (
                format!("{local}Z"),
                Some((offset.starts_with('+'), seconds)),
            )
        }
        _ if trimmed.ends_with('Z') || trimmed.ends_with('z') => (trimmed.to_string(), None),
        _ => return Err(invalid()),
    };
    let as_if_utc = humantime::parse_rfc3339(&local).map_err(|_| invalid())?;
    Ok(match offset {
        // 05:00+01:00 is 04:00 UTC.
        Some((true, shift)) => as_if_utc - shift,
        Some((false, shift)) => as_if_utc + shift,
        None => as_if_utc,
    })
}

/// `-f FILE|DIR|-` and how to read it, shared by the commands that take documents.
#[derive(Debug, Clone, clap::Args)]
pub struct FileArgs {
    /// A file, a directory of `.yaml`/`.yml`/`.json` files, or `-` for standard input; repeatable
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE|DIR|-",
        required = true
    )]
    pub files: Vec<PathBuf>,
    /// Also read the sub-directories of a directory
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// An empty file or directory is not an error
    #[arg(long)]
    pub skip_empty: bool,
    /// Namespace for namespaced resources that name none (`default` otherwise)
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
}

impl FileArgs {
    /// Loads and validates every document of every input for writing: as [`FileArgs::read`], and
    /// ClusterInformation is refused.
    pub fn load(&self, release: &ApiRelease) -> anyhow::Result<Vec<Resource>> {
        let resources = self.read(release)?;
        if let Some(read_only) = resources
            .iter()
            .find(|r| r.kind == Kind::ClusterInformation)
        {
            anyhow::bail!(
                "{} is read-only: the node agent maintains ClusterInformation",
                read_only.key()
            );
        }
        Ok(resources)
    }

    /// Loads and validates (for `release`) every document of every input; all problems are
    /// reported together.
    pub fn read(&self, release: &ApiRelease) -> anyhow::Result<Vec<Resource>> {
        let mut resources = Vec::new();
        self.read_each(release, |resource| resources.push(resource))?;
        Ok(resources)
    }

    /// As [`FileArgs::read`], one resource at a time: each valid resource is handed to `visit` as
    /// soon as it is read and checked, and only problems are kept (all reported together, after
    /// the last document; what `visit` was given must then not be used). Returns how many
    /// resources were read.
    pub fn read_each(
        &self,
        release: &ApiRelease,
        visit: impl FnMut(Resource),
    ) -> anyhow::Result<usize> {
        self.each(self.loader(release), visit)
    }

    /// The loader of these flags, validating for `release`.
    pub fn loader(&self, release: &ApiRelease) -> Loader {
        Loader::new(release)
            .namespace(self.namespace.as_deref())
            .recursive(self.recursive)
            .skip_empty(self.skip_empty)
    }

    /// As [`FileArgs::read_each`], with `loader`.
    pub fn each(&self, loader: Loader, mut visit: impl FnMut(Resource)) -> anyhow::Result<usize> {
        let mut inputs = Vec::new();
        for path in &self.files {
            if path.as_os_str() == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .context("cannot read standard input")?;
                inputs.push(Input::Text {
                    origin: "<stdin>".into(),
                    text,
                });
            } else {
                inputs.push(Input::Path(path.clone()));
            }
        }
        let mut count = 0;
        let mut problems = Vec::new();
        for document in loader.documents(inputs) {
            match document {
                Ok(loaded) => {
                    count += 1;
                    visit(loaded.resource);
                }
                Err(problem) => problems.push(problem),
            }
        }
        LoadError::from_problems(problems)?;
        Ok(count)
    }
}

/// `--release v3.NN[.P]`: follow that release's API (kinds, fields, values, defaults) instead of
/// the cluster's (or, offline, the newest netctl knows).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReleaseArg {
    /// Validate for this release line (e.g. `v3.29`, `v3.30.1`) instead of the cluster's
    #[arg(long, value_name = "v3.NN[.P]")]
    release: Option<String>,
}

impl ReleaseArg {
    /// The release the flag names, if given.
    pub fn chosen(&self) -> Result<Option<ApiRelease>, ReleaseFlagError> {
        self.release
            .as_deref()
            .map(ApiRelease::from_flag)
            .transpose()
    }
}

/// `--dry-run`, shared by every writing command.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct DryRunArg {
    /// Print exactly what would be written and change nothing
    #[arg(long)]
    dry_run: bool,
}

impl DryRunArg {
    pub fn mode(self) -> RunMode {
        if self.dry_run {
            RunMode::DryRun
        } else {
            RunMode::Execute
        }
    }
}

/// Which namespace(s) a command addresses, from `-n`/`-A` and the kind (upstream `handleNamespace`
/// in `calicoctl/calicoctl/commands/common/resources.go`).
pub fn namespace_scope(
    kind: Kind,
    namespace: Option<&str>,
    all_namespaces: bool,
) -> anyhow::Result<Option<String>> {
    if !kind.is_namespaced() {
        if namespace.is_some() || all_namespaces {
            anyhow::bail!("`{kind}` is not namespaced: leave out `-n/--namespace` and `-A`");
        }
        return Ok(None);
    }
    match (namespace, all_namespaces) {
        (Some(_), true) => {
            anyhow::bail!("cannot use both `--namespace` and `--all-namespaces`")
        }
        (Some(namespace), false) => Ok(Some(namespace.to_string())),
        (None, true) => Ok(None),
        (None, false) => Ok(Some("default".to_string())),
    }
}

/// Install methods as flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InstallMethodArg {
    Operator,
    Helm,
    Manifest,
}

impl From<InstallMethodArg> for InstallMethod {
    fn from(arg: InstallMethodArg) -> InstallMethod {
        match arg {
            InstallMethodArg::Operator => InstallMethod::Operator,
            InstallMethodArg::Helm => InstallMethod::Helm,
            InstallMethodArg::Manifest => InstallMethod::Manifest,
        }
    }
}

/// Datastore types as flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatastoreTypeArg {
    Kubernetes,
    Etcdv3,
}

impl From<DatastoreTypeArg> for DatastoreType {
    fn from(arg: DatastoreTypeArg) -> DatastoreType {
        match arg {
            DatastoreTypeArg::Kubernetes => DatastoreType::Kubernetes,
            DatastoreTypeArg::Etcdv3 => DatastoreType::EtcdV3,
        }
    }
}

/// Facts shared by `upgrade plan` and `runbook render`.
#[derive(Debug, Clone, Args)]
pub struct FactArgs {
    /// The installed version (default: ClusterInformation `default` in the datastore).
    #[arg(long, value_name = "VERSION")]
    pub from: Option<Release>,
    /// The datastore type (default: the configured datastore).
    #[arg(long, value_enum)]
    pub datastore_type: Option<DatastoreTypeArg>,
    /// How the network was installed.
    #[arg(long, value_enum)]
    pub install_method: Option<InstallMethodArg>,
    /// Set any fact, e.g. `--set alp_enabled=true`, `--set all_interfaces_host_endpoints=h1,h2`.
    #[arg(long = "set", value_name = "FACT=VALUE", add = ArgValueCompleter::new(super::completion::complete_fact_setting))]
    pub set: Vec<String>,
    /// Use the runbooks of this directory instead of the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub runbooks: Option<PathBuf>,
}

impl FactArgs {
    /// The overrides these flags give.
    pub fn overrides(&self) -> anyhow::Result<FactOverrides> {
        let set = self
            .set
            .iter()
            .map(|text| parse_set(text))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FactOverrides {
            from: self.from.clone(),
            datastore_type: self.datastore_type.map(Into::into),
            install_method: self.install_method.map(Into::into),
            set,
        })
    }

    /// The request these flags (and `manifest`) make for `procedure`; `configured` is what the
    /// configuration says (facts `etcd_endpoints`, `calico_api_group`).
    pub fn request(
        &self,
        procedure: &str,
        to: Option<String>,
        manifest: &ManifestEditArgs,
        offline: bool,
        configured: Configured,
    ) -> anyhow::Result<UpgradeRequest> {
        Ok(UpgradeRequest {
            procedure: procedure.to_string(),
            to,
            overrides: self.overrides()?,
            configured,
            runbooks: self.runbooks.clone(),
            manifest_edits: manifest.request(),
            manifest_reading: if offline {
                ManifestReading::LocalOnly
            } else {
                ManifestReading::Anywhere
            },
            canary: None,
        })
    }
}

/// What to plan: the target, the procedure and the facts (`upgrade plan`, `runbook render`).
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// The target release, e.g. `v3.29.2` (or `v3.29` for the newest patch the catalog knows); without
    /// it, `upgrade plan` shows what the installed release can be upgraded to.
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    /// Plan another procedure of the runbooks, e.g. `auto-host-endpoints`, `datastore-migration`
    /// (etcd -> Kubernetes datastore, manifest installs on etcd only). A procedure none of whose
    /// runbooks is for this install (their `appliesTo`) is refused with each runbook's reason. The
    /// move from the
    /// `crd.projectcalico.org/v1` CRDs to the native `projectcalico.org/v3` ones
    /// (`crd-v3-migration`) is refused: upstream's kube-controllers does it, and the error says how.
    #[arg(long, default_value = UPGRADE_PROCEDURE, add = ArgValueCompleter::new(super::completion::complete_procedure))]
    pub procedure: String,
    #[command(flatten)]
    pub facts: FactArgs,
}

impl TargetArgs {
    /// The request these flags make (see [`FactArgs::request`]).
    pub fn request(
        &self,
        manifest: &ManifestEditArgs,
        offline: bool,
        configured: Configured,
    ) -> anyhow::Result<UpgradeRequest> {
        self.facts.request(
            &self.procedure,
            self.to.clone(),
            manifest,
            offline,
            configured,
        )
    }
}

/// What the user says about hand edits of an installed manifest (manifest installs only).
#[derive(Debug, Clone, Default, Args)]
pub struct ManifestEditArgs {
    /// Carry hand edits of the installed manifest onto the new one: a YAML file of partial objects,
    /// each naming its object by apiVersion, kind, metadata.name/namespace (repeatable; the plan
    /// shows the diff)
    #[arg(long, value_name = "FILE", requires = "to")]
    pub manifest_overlay: Vec<PathBuf>,
    /// The installed manifest has no hand edits: apply the new one as released, without a gate
    #[arg(long, requires = "to", conflicts_with = "manifest_overlay")]
    pub no_manifest_edits: bool,
}

impl ManifestEditArgs {
    /// The edits as the planner takes them.
    pub fn request(&self) -> ManifestEditRequest {
        match (self.no_manifest_edits, self.manifest_overlay.is_empty()) {
            (true, _) => ManifestEditRequest::None,
            (false, true) => ManifestEditRequest::Unstated,
            (false, false) => ManifestEditRequest::Overlay(self.manifest_overlay.clone()),
        }
    }
}
