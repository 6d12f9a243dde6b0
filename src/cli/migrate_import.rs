//! `netctl datastore migrate import`: the one-step plan `datastore.import`, with the CRD manifest
//! it installs decided, read and checked when the plan is made (`datastore/migration/crds.rs`):
//! the release's own file for the export's `calicoVersion` and the target's API group, from its
//! URL (through `--mirror-dir` for an air-gapped site) or a local copy (`--crds FILE`), its digest
//! pinned in the plan so the run installs exactly what was checked.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use super::journaled::{JournalArgs, operator, run_journaled};
use crate::config::CalicoApiGroup;
use crate::datastore::migration::{self, crds};
use crate::exec::actions::fetch;
use crate::exec::actions::ipam::restore::file_digest;
use crate::plan::action::DatastoreImport;
use crate::plan::facts::DEFAULT_MANIFEST_BASE_URL;
use crate::plan::{Action, Plan};

pub const IMPORT_EXAMPLES: &str = "\
Examples:
  netctl -c kubernetes.yaml datastore migrate import -f calico-migration.txt --dry-run
  netctl -c kubernetes.yaml datastore migrate import -f calico-migration.txt
  netctl -c kubernetes.yaml datastore migrate import -f calico-migration.txt --crds crds.yaml
  netctl -c kubernetes.yaml datastore migrate import -f calico-migration.txt --mirror-dir /srv/mirror
Into the Kubernetes datastore, as one journaled step: refused before any write when the target
holds Calico resources or IPAM data other than this file's (an import that was stopped half way is
finished instead: run it again and every resource is there exactly once). Then it installs the CRDs
of the release the export came from (server-side apply), locks the target, creates the resources
(Nodes update the Kubernetes nodes of the same name; a node Kubernetes does not have is skipped and
named), copies clusterGUID and calicoVersion into ClusterInformation and creates the IPAM objects.
The CRDs are the release's own file, for the API group the target uses:
<base>/<calicoVersion>/manifests/crds.yaml for crd.projectcalico.org/v1, or
manifests/v3_projectcalico_org.yaml for v3.32's native projectcalico.org/v3 (CALICO_API_GROUP or
`calicoAPIGroup` chooses it on a cluster that serves neither yet). The plan reads the file, refuses
it unless it defines every kind the export holds, and pins its digest. `--crds FILE` uses a local
copy; `--mirror-dir DIR` reads `DIR/<host>/<path>` instead of the network; `--skip-crds` installs
none (they must be served already, e.g. installed by the operator).
Reads files written by `netctl datastore migrate export` and by `calicoctl datastore migrate
export`. The target stays locked: switch the components to the Kubernetes datastore, then
`netctl datastore migrate unlock`.";

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The export, as `netctl datastore migrate export` or `calicoctl datastore migrate export`
    /// wrote it
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub filename: PathBuf,
    /// The CRD manifest to install (a file or a URL) [default: the release's, for the export's
    /// calicoVersion and the target's API group]
    #[arg(long, value_name = "FILE|URL", conflicts_with = "skip_crds")]
    pub crds: Option<String>,
    /// Read downloads from DIR/<host>/<path> instead of the network (air-gapped sites)
    #[arg(long, value_name = "DIR")]
    pub mirror_dir: Option<PathBuf>,
    /// Install no CRDs: they are installed already (refused when they are not served)
    #[arg(long)]
    pub skip_crds: bool,
    #[command(flatten)]
    pub journal: JournalArgs,
}

pub async fn import(context: &Context, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let file = args.filename.display().to_string();
    let sha256 = file_digest(&args.filename)
        .with_context(|| format!("cannot read the migration export `{file}`"))?;
    // Refused here, before connecting, when the file is no whole export.
    let export = migration::file::read(&args.filename)?;
    let store = context.migration_target().await?;
    // Into etcd the action refuses, naming why; nothing to download for it.
    let into_etcd = store.kind() != crate::datastore::DatastoreType::Kubernetes;
    let (crds, crds_sha256) = match args.skip_crds || into_etcd {
        true => (None, None),
        false => {
            let group = store.calico_api_group().unwrap_or(CalicoApiGroup::CrdV1);
            let source = crd_source(&args, &export, group)?;
            let (bytes, _) = fetch::read_bytes(&source, None).await.with_context(|| {
                format!("cannot read the CRD manifest `{source}` (pass a local copy with `--crds FILE`, or `--mirror-dir DIR`)")
            })?;
            let text = String::from_utf8_lossy(&bytes);
            let needed = crds::needed_kinds(&export, group);
            crds::group_crds(&text, &format!("`{source}`"), group, &needed)?;
            (Some(source), Some(fetch::sha256(&bytes)))
        }
    };
    let plan = Plan::single(
        "datastore-import",
        "import a migration export into the Kubernetes datastore",
        Action::DatastoreImport(DatastoreImport {
            file,
            sha256,
            by: operator(),
            datastore: Default::default(),
            crds,
            crds_sha256,
        }),
    );
    run_journaled(context, store, &plan, &args.journal, None).await?;
    Ok(ExitCode::SUCCESS)
}

/// Where the CRD manifest is read: `--crds` (a path becomes a `file://` URL), else the release's
/// URL for the export's `calicoVersion`, through the mirror directory when one is given.
fn crd_source(
    args: &ImportArgs,
    export: &migration::file::MigrationFile,
    group: CalicoApiGroup,
) -> anyhow::Result<String> {
    if let Some(given) = &args.crds {
        if given.contains("://") {
            return Ok(given.clone());
        }
        let path = std::fs::canonicalize(given)
            .with_context(|| format!("cannot read the CRD manifest `{given}`"))?;
        return Ok(format!("file://{}", path.display()));
    }
    let Some(version) = export.calico_version.as_deref() else {
        anyhow::bail!(
            "the export's ClusterInformation has no calicoVersion, so the release whose CRDs to install is unknown: pass the CRD manifest with `--crds FILE`, or `--skip-crds` when the CRDs are installed"
        );
    };
    if group == CalicoApiGroup::V3
        && version
            .parse::<crate::release::Release>()
            .is_ok_and(|release| release.0 < semver::Version::new(3, 32, 0))
    {
        anyhow::bail!(
            "the target uses `projectcalico.org/v3`, whose native CRDs exist from v3.32 on, and the export is of {version}: upgrade to v3.32 before the migration, or import into `crd.projectcalico.org/v1` (CALICO_API_GROUP=crd.projectcalico.org/v1)"
        );
    }
    let url = crds::release_url(DEFAULT_MANIFEST_BASE_URL, version, group);
    Ok(match &args.mirror_dir {
        Some(mirror) => match fetch::mirror_path(mirror, &url) {
            Some(path) => format!("file://{}", path.display()),
            None => url,
        },
        None => url,
    })
}
