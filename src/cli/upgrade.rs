//! `netctl upgrade plan`: flags → facts → [`plan_upgrade`] → printed (and optionally saved) plan.
//!
//! The command only translates: facts come from the datastore when one is given (see
//! [`discover_facts`]) and from the cluster when one is configured (see [`discover_cluster_facts`]),
//! and every flag overrides them, so a plan can be made offline. Planning itself
//! lives in `plan::resolve`; printing in `plan::render`. `upgrade apply` belongs to the executor.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use crate::datastore::{Datastore, DatastoreType};
use crate::plan::facts::discover_cluster_facts;
use crate::plan::facts::{DiscoveredFacts, FactOverrides, Facts, InstallMethod, parse_set};
use crate::plan::overlay;
use crate::plan::render::{self, PlanFormat};
use crate::plan::{ManifestEdits, Plan, PlanRequest, Release, discover_facts, plan_upgrade_with};
use crate::runbook::{RunbookSet, UPGRADE_PROCEDURE};

/// Output formats of `upgrade plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanOutput {
    /// A readable tree (default).
    Text,
    /// The plan document, stable and machine-readable.
    Json,
    /// A maintenance checklist for a change ticket.
    Markdown,
    /// The step graph for Graphviz.
    Dot,
    /// The step graph for Mermaid.
    Mermaid,
}

impl From<PlanOutput> for PlanFormat {
    fn from(output: PlanOutput) -> PlanFormat {
        match output {
            PlanOutput::Text => PlanFormat::Text,
            PlanOutput::Json => PlanFormat::Json,
            PlanOutput::Markdown => PlanFormat::Markdown,
            PlanOutput::Dot => PlanFormat::Dot,
            PlanOutput::Mermaid => PlanFormat::Mermaid,
        }
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
    #[arg(long = "set", value_name = "FACT=VALUE")]
    pub set: Vec<String>,
    /// Use the runbooks of this directory instead of the built-in ones.
    #[arg(long, value_name = "DIR")]
    pub runbooks: Option<PathBuf>,
    /// The etcd endpoints of netctl's configuration (fact `etcd_endpoints`), set by the command
    /// from the loaded configuration, not a flag.
    #[arg(skip)]
    pub configured_etcd_endpoints: Option<String>,
}

/// The static etcd endpoints of the client configuration, comma-separated (none for the Kubernetes
/// datastore, SRV discovery, or a configuration that does not load).
pub fn configured_etcd_endpoints(config: &crate::config::ClientConfig) -> Option<String> {
    if config.datastore_type.value != DatastoreType::EtcdV3 {
        return None;
    }
    match config.etcd().ok()?.endpoints {
        crate::config::EndpointSource::Static(endpoints) => Some(
            endpoints
                .iter()
                .map(|endpoint| endpoint.url())
                .collect::<Vec<_>>()
                .join(","),
        ),
        crate::config::EndpointSource::Srv { .. } => None,
    }
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

    /// Discovers what the datastore and the cluster can tell (when there are ones) and applies the
    /// flags over it.
    pub async fn facts(
        &self,
        store: Option<&dyn Datastore>,
        cluster: Option<&kube::Client>,
    ) -> anyhow::Result<Facts> {
        let mut discovered = match store {
            Some(store) => discover_facts(store).await?,
            None => DiscoveredFacts::default(),
        };
        discovered.etcd_endpoints = self.configured_etcd_endpoints.clone();
        if let Some(client) = cluster {
            discovered.cluster = Some(discover_cluster_facts(client).await?);
        }
        Ok(Facts::assemble(&discovered, &self.overrides()?)?)
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
    /// Reads the overlay files; any that cannot be read or parsed refuses the plan.
    pub fn edits(&self) -> anyhow::Result<ManifestEdits> {
        if self.no_manifest_edits {
            return Ok(ManifestEdits::None);
        }
        if self.manifest_overlay.is_empty() {
            return Ok(ManifestEdits::Unstated);
        }
        let mut documents = Vec::new();
        for path in &self.manifest_overlay {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!("cannot read the manifest overlay `{}`", path.display())
            })?;
            documents.extend(overlay::parse_overlay(&text, &path.display().to_string())?);
        }
        Ok(ManifestEdits::Overlay(documents))
    }
}

/// How long `upgrade plan` waits for a manifest it reads for the overlay diff.
const PREVIEW_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The plan-time review of every manifest overlay: each download is read (from the mirror, a
/// `file://` URL, or — unless `offline` — the network) and the overlay applied to it. A download that
/// cannot be read is noted in the plan; an overlay that does not fit the manifest refuses the plan.
pub async fn preview_overlays(
    plan: &mut Plan,
    mirror: Option<&std::path::Path>,
    offline: bool,
) -> anyhow::Result<()> {
    let mut previews = Vec::new();
    for (step, url, overlay) in plan.overlay_downloads() {
        let network = !url.starts_with("file://") && mirror.is_none();
        let bytes = if network && offline {
            Err("not read with `--offline`; pass `--mirror-dir` to read a local copy".to_string())
        } else {
            // A review must not hang a plan on an unreachable server.
            let read = crate::exec::actions::fetch::read_bytes(url, mirror);
            match tokio::time::timeout(PREVIEW_READ_TIMEOUT, read).await {
                Ok(Ok((bytes, _))) => Ok(bytes),
                Ok(Err(error)) => Err(format!("{:#}", anyhow::Error::new(error))),
                Err(_) => Err(format!(
                    "no answer within {}s",
                    PREVIEW_READ_TIMEOUT.as_secs()
                )),
            }
        };
        let preview = overlay::preview(step, url, overlay, bytes.as_deref().map_err(Clone::clone))
            .with_context(|| format!("step `{step}` cannot apply the manifest overlay"))?;
        previews.push(preview);
    }
    if !previews.is_empty() {
        plan.set_manifest_previews(previews);
    }
    Ok(())
}

/// `netctl upgrade plan`
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  netctl upgrade plan --to v3.29.2                     # facts read from the configured datastore
  netctl upgrade plan --to v3.29.2 -o markdown > change-ticket.md
  netctl upgrade plan --to v3.29.2 --manifest-overlay my-edits.yaml --out plan.json
      # my-edits.yaml: the hand edits of a manifest install, shown as a diff in the plan:
      #   apiVersion: apps/v1
      #   kind: DaemonSet
      #   metadata: {name: calico-node, namespace: kube-system}
      #   spec:
      #     template:
      #       spec:
      #         containers:
      #         - name: calico-node            # merged by name; so is env
      #           env:
      #           - {name: IP_AUTODETECTION_METHOD, value: interface=eth0}
  netctl upgrade plan --to v3.29.2 --no-manifest-edits  # the manifest was never edited: no gate
  netctl upgrade plan --to v3.27.0 --from v3.20.1 --install-method helm --offline
  netctl upgrade plan --to v3.29.2 --out plan.json     # then: netctl upgrade apply --plan plan.json
  netctl upgrade plan --procedure auto-host-endpoints -o mermaid")]
pub struct PlanArgs {
    /// The target release, e.g. `v3.29.2` (or `v3.29` for the newest patch the catalog knows).
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    /// Plan another procedure of the runbooks, e.g. `auto-host-endpoints`.
    #[arg(long, default_value = UPGRADE_PROCEDURE)]
    pub procedure: String,
    #[command(flatten)]
    pub facts: FactArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: PlanOutput,
    /// Also save the plan (JSON, with its facts and digest) for `upgrade apply --plan`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Do not contact the datastore: every fact comes from flags and defaults.
    #[arg(long)]
    pub offline: bool,
    #[command(flatten)]
    pub manifest: ManifestEditArgs,
    /// Read manifests for the overlay diff from this directory (`<host>/<path>`), as `upgrade apply`
    #[arg(long, value_name = "DIR")]
    pub mirror_dir: Option<PathBuf>,
}

impl PlanArgs {
    /// Builds the plan these flags ask for.
    pub async fn plan(
        &self,
        store: Option<&dyn Datastore>,
        cluster: Option<&kube::Client>,
    ) -> anyhow::Result<Plan> {
        let runbooks = RunbookSet::load(self.facts.runbooks.as_deref())?;
        let edits = self.manifest.edits()?;
        let facts = self.facts.facts(store, cluster).await?;
        let request = PlanRequest {
            procedure: self.procedure.clone(),
            to: self.to.clone(),
            facts,
        };
        let mut plan = plan_upgrade_with(&runbooks, &request, &edits)?;
        preview_overlays(&mut plan, self.mirror_dir.as_deref(), self.offline).await?;
        Ok(plan)
    }

    /// Plans, prints to stdout and saves to `--out`.
    pub async fn run(
        &self,
        store: Option<&dyn Datastore>,
        cluster: Option<&kube::Client>,
    ) -> anyhow::Result<()> {
        let plan = self.plan(store, cluster).await?;
        if let Some(path) = &self.out {
            save_plan(&plan, path)?;
            eprintln!("saved plan {} to `{}`", plan.digest, path.display());
        }
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(render::render(&plan, self.output.into()).as_bytes())?;
        Ok(())
    }
}

/// Writes a plan atomically (temporary file, fsync, rename) so a crash never leaves half a plan.
pub fn save_plan(plan: &Plan, path: &std::path::Path) -> anyhow::Result<()> {
    let text = render::json(plan);
    let temporary = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    };
    write().with_context(|| format!("cannot save the plan to `{}`", path.display()))
}
