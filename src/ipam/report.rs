//! The report file of `ipam check -o FILE` in upstream's JSON shape
//! (`calicoctl/calicoctl/commands/ipam/check.go`: `Report`, `Allocation`, `HandleInfo`), so that
//! upstream's `ipam release --from-report` reads netctl's reports and netctl reads upstream's.
//!
//! Upstream decodes with Go's `encoding/json`, which ignores fields it does not know: what netctl
//! found that upstream's shape cannot hold (addresses in use without an allocation, addresses
//! outside every pool, handles that blocks name but that do not exist, damaged blocks, what could
//! not be checked) goes under one extra key, `netctl`. A report that does not parse whole (a
//! truncated file) is refused, naming the file and where it stops.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The `version` netctl writes into its reports. Upstream refuses a report of another version
/// unless `--force`; so does netctl.
pub fn report_version() -> String {
    format!("netctl-v{}", env!("CARGO_PKG_VERSION"))
}

/// One report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    #[serde(default)]
    pub version: String,
    #[serde(rename = "clusterGUID", default)]
    pub cluster_guid: String,
    #[serde(rename = "datastoreLocked", default)]
    pub datastore_locked: bool,
    #[serde(rename = "clusterInformationRevision", default)]
    pub cluster_information_revision: String,
    #[serde(rename = "clusterType", default)]
    pub cluster_type: String,
    /// Address → its allocations (usually one), keyed and ordered as Go writes a map: by the
    /// address's text.
    #[serde(default, deserialize_with = "null_as_default")]
    pub allocations: BTreeMap<String, Vec<ReportAllocation>>,
    #[serde(
        rename = "leakedHandles",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub leaked_handles: Vec<HandleInfo>,
    /// netctl's own findings (upstream ignores this key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netctl: Option<NetctlFindings>,
}

/// One allocation as the report holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportAllocation {
    pub ip: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub handle: String,
    #[serde(
        rename = "sequenceNumber",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sequence_number: Option<u64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub allocation_type: String,
    #[serde(
        rename = "creationTimestamp",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub creation_timestamp: String,
    #[serde(rename = "inUse", default)]
    pub in_use: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub borrowed: bool,
    /// `null` when nothing uses the address, as Go writes an empty slice.
    #[serde(default)]
    pub owners: Option<Vec<String>>,
}

/// A handle no block references, with what a guarded delete compares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandleInfo {
    #[serde(rename = "ID")]
    pub id: String,
    /// The Kubernetes UID as upstream's clients see it; `null` on etcd.
    #[serde(rename = "UID", default)]
    pub uid: Option<String>,
    #[serde(rename = "Revision", default)]
    pub revision: String,
}

/// What netctl's check found beyond upstream's report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetctlFindings {
    /// Addresses in use in an active pool with no allocation: address → owners.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub in_use_without_allocation: BTreeMap<String, Vec<String>>,
    /// Addresses in use outside every active pool: address → owners.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outside_active_pools: BTreeMap<String, Vec<String>>,
    /// Handles blocks name that do not exist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_handles: Vec<String>,
    /// Handles whose count of a block disagrees with the block.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handle_counts: Vec<String>,
    /// Stored blocks that are damaged: key → problems.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub damaged_blocks: BTreeMap<String, Vec<String>>,
    /// What could not be checked, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_checked: Vec<String>,
}

/// Why a report file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read the report `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a complete IPAM report (line {line}, column {column})")]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("`{path}` is not an IPAM report: it names no cluster (`clusterGUID`)")]
    NoCluster { path: String },
}

impl crate::errors::Hint for ReportError {
    fn hint(&self) -> Option<String> {
        match self {
            ReportError::Read { .. } => None,
            ReportError::Invalid { .. } | ReportError::NoCluster { .. } => Some(
                "make a new report with `netctl ipam check -o FILE` (or `calicoctl ipam check -o FILE`)"
                    .to_string(),
            ),
        }
    }
}

impl Report {
    /// Reads and checks a report file.
    pub fn read(path: &Path) -> Result<Report, ReportError> {
        let shown = path.display().to_string();
        let text = std::fs::read(path).map_err(|source| ReportError::Read {
            path: shown.clone(),
            source,
        })?;
        Report::parse(&shown, &text)
    }

    /// Parses a report's text; `origin` names it in errors.
    pub fn parse(origin: &str, text: &[u8]) -> Result<Report, ReportError> {
        let report: Report =
            serde_json::from_slice(text).map_err(|source| ReportError::Invalid {
                path: origin.to_string(),
                line: source.line(),
                column: source.column(),
                source,
            })?;
        if report.cluster_guid.is_empty() {
            return Err(ReportError::NoCluster {
                path: origin.to_string(),
            });
        }
        Ok(report)
    }

    /// The report as upstream writes it: JSON indented by two spaces.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Hint;

    /// A report as upstream's `ipam check -o` writes one (TestIPAMCleanup's scenario on etcd).
    const UPSTREAM: &str = r#"{
  "version": "v3.32.1",
  "clusterGUID": "4f0cde3c2f2a4f4e9c0f2b6f3c8f6d10",
  "datastoreLocked": false,
  "clusterInformationRevision": "12",
  "clusterType": "k8s,bgp",
  "allocations": {
    "10.66.12.0": [
      {
        "ip": "10.66.12.0",
        "handle": "TestIPAMCleanup",
        "sequenceNumber": 0,
        "node": "host-1",
        "inUse": false,
        "owners": null
      }
    ]
  },
  "leakedHandles": [
    {
      "ID": "leaked-handle",
      "UID": null,
      "Revision": "14"
    }
  ]
}"#;

    #[test]
    fn upstreams_report_reads_and_writes_back_the_same() {
        let report = Report::parse("upstream.json", UPSTREAM.as_bytes()).unwrap();
        assert_eq!(report.leaked_handles[0].id, "leaked-handle");
        assert_eq!(report.allocations["10.66.12.0"][0].sequence_number, Some(0));
        assert_eq!(report.to_json(), UPSTREAM);
    }

    #[test]
    fn a_truncated_report_names_the_file_and_where_it_stops() {
        let error = Report::parse("cut.json", &UPSTREAM.as_bytes()[..200]).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("`cut.json` is not a complete IPAM report (line "),
            "{text}"
        );
        assert!(error.hint().is_some());
        let error = Report::parse("x.json", b"{\"allocations\": {}}").unwrap_err();
        assert!(matches!(error, ReportError::NoCluster { .. }));
    }
}
