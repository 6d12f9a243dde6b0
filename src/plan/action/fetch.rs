//! The arguments of `fetch` — download a manifest into the run's state directory — with their
//! checks (a pinned digest written as netctl writes digests, overlay documents that can apply) and
//! their one-line description.
//!
//! The download itself is `exec/actions/fetch.rs`'s; this file only says what it is asked.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

use super::Arguments;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fetch {
    /// `https://`, `http://` or `file://`.
    pub url: String,
    /// Where to write the download, relative to the run's state directory.
    pub file: String,
    /// Manifest overlay documents applied to the download before it is written to `file` (the
    /// original is kept beside it as `<file>.original`); see [`crate::plan::overlay`]. Nested lists are
    /// flattened and `null` items dropped, so a runbook can list its own documents and add the
    /// user's with `- "{{ manifest_overlay }}"`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "flattened_documents"
    )]
    pub overlay: Vec<serde_json::Value>,
    /// The sha256 (`sha256:<hex>`) the download must have: the digest of the manifest reviewed at
    /// plan time (`upgrade plan` pins it when it reads the manifest for the overlay diff), so a file
    /// changed at its URL since the review is refused instead of applied. `None`: not pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The same manifest of the installed release. `upgrade plan` compares it with the objects it
    /// created in the cluster and the new manifest to find the operator's hand edits (see
    /// [`crate::plan::edit_discovery`]); the run itself never reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits_from: Option<String>,
}

/// Whether `digest` is written as netctl writes digests: `sha256:` and 64 lowercase hex digits.
pub fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn flattened_documents<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<serde_json::Value>, D::Error> {
    fn flatten(value: serde_json::Value, into: &mut Vec<serde_json::Value>) {
        match value {
            serde_json::Value::Array(items) => {
                items.into_iter().for_each(|item| flatten(item, into))
            }
            serde_json::Value::Null => {}
            other => into.push(other),
        }
    }
    let mut documents = Vec::new();
    flatten(
        serde_json::Value::deserialize(deserializer)?,
        &mut documents,
    );
    Ok(documents)
}

impl Arguments for Fetch {
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "{name} {} -> {}", self.url, self.file)?;
        // Whether the run refuses a file changed at the URL since the review.
        match &self.sha256 {
            Some(digest) => write!(out, " (pinned to the reviewed {digest})")?,
            None => out.write_str(
                " (not pinned: not read at plan time; the run uses whatever the URL serves then)",
            )?,
        }
        match self.overlay.len() {
            0 => Ok(()),
            documents => write!(
                out,
                " with the manifest overlay ({documents} document(s), shown below)"
            ),
        }
    }

    fn check(&self) -> Result<(), String> {
        if let Some(digest) = &self.sha256
            && !is_sha256_digest(digest)
        {
            return Err(format!(
                "`sha256` must be `sha256:` and 64 lowercase hex digits (got `{digest}`)"
            ));
        }
        self.overlay
            .iter()
            .enumerate()
            .try_for_each(|(index, document)| {
                crate::plan::overlay::check_document(document, "overlay", index + 1)
            })
            .map_err(|error| error.to_string())
    }
}
