//! The runbooks built into the binary: a static table of every file in `runbooks/`.
//!
//! Kept by hand rather than by a build script; a test fails when this table and the directory differ,
//! so adding a runbook file means adding its line here. `--runbooks DIR` replaces the whole set.

/// `(file name, contents)` of every file in `runbooks/`, sorted by name.
pub const FILES: &[(&str, &str)] = &[
    (
        "admin-network-policies.yaml",
        include_str!("../../runbooks/admin-network-policies.yaml"),
    ),
    (
        "allow-all-upgrade.yaml",
        include_str!("../../runbooks/allow-all-upgrade.yaml"),
    ),
    (
        "alp-upgrade.yaml",
        include_str!("../../runbooks/alp-upgrade.yaml"),
    ),
    (
        "auto-host-endpoints.yaml",
        include_str!("../../runbooks/auto-host-endpoints.yaml"),
    ),
    (
        "datastore-migration.yaml",
        include_str!("../../runbooks/datastore-migration.yaml"),
    ),
    (
        "etcd-upgrade.yaml",
        include_str!("../../runbooks/etcd-upgrade.yaml"),
    ),
    (
        "helm-ownership-migration.yaml",
        include_str!("../../runbooks/helm-ownership-migration.yaml"),
    ),
    (
        "helm-upgrade.yaml",
        include_str!("../../runbooks/helm-upgrade.yaml"),
    ),
    (
        "hostendpoint-finish.yaml",
        include_str!("../../runbooks/hostendpoint-finish.yaml"),
    ),
    (
        "hostendpoint-preparation.yaml",
        include_str!("../../runbooks/hostendpoint-preparation.yaml"),
    ),
    (
        "manifest-upgrade.yaml",
        include_str!("../../runbooks/manifest-upgrade.yaml"),
    ),
    (
        "operator-crds.yaml",
        include_str!("../../runbooks/operator-crds.yaml"),
    ),
    (
        "operator-upgrade.yaml",
        include_str!("../../runbooks/operator-upgrade.yaml"),
    ),
    (
        "ownerreferences-remove.yaml",
        include_str!("../../runbooks/ownerreferences-remove.yaml"),
    ),
    (
        "ownerreferences-restore.yaml",
        include_str!("../../runbooks/ownerreferences-restore.yaml"),
    ),
    (
        "policy-names-v3.yaml",
        include_str!("../../runbooks/policy-names-v3.yaml"),
    ),
    (
        "post-upgrade-version.yaml",
        include_str!("../../runbooks/post-upgrade-version.yaml"),
    ),
    (
        "releases.yaml",
        include_str!("../../runbooks/releases.yaml"),
    ),
];

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_lists_exactly_the_files_of_the_runbook_directory() {
        let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("runbooks");
        let mut on_disk: Vec<String> = std::fs::read_dir(&directory)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = super::FILES
            .iter()
            .map(|(name, _)| name.to_string())
            .collect();
        assert_eq!(embedded, on_disk, "update src/runbook/embedded.rs");
        for (name, text) in super::FILES {
            assert_eq!(
                std::fs::read_to_string(directory.join(name)).unwrap(),
                *text
            );
        }
    }
}
