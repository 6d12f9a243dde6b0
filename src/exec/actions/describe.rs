//! One line about an action, for progress, journals, `verify` lines and gates: `label HostEndpoint
//! h1 host-endpoint-upgrade=`, `run helm upgrade ...`, `fact \`installed_version\` equals v3.29.2`.
//!
//! Secrets are never in it: commands print through `process::display_command`, which redacts what
//! the environment passes, and documents are named by their keys only. This file performs nothing.

use super::{process, resource};
use crate::plan::Action;

/// A one-line account of an action for progress, journals and `verify` lines (secrets redacted).
pub fn describe_action(action: &Action) -> String {
    match action {
        Action::ResourceGet(target) => format!(
            "{} exists",
            resource::target_key(target.kind, target.namespace.as_deref(), &target.name)
        ),
        Action::ResourceList(list) => format!("{} listed", list.kind.plural()),
        Action::ResourceCreate(documents)
        | Action::ResourceApply(documents)
        | Action::ResourceReplace(documents) => {
            let keys: Vec<String> = documents
                .documents
                .iter()
                .map(|document| document.key().to_string())
                .collect();
            format!("{} {}", action.name(), keys.join(", "))
        }
        Action::ResourceDelete(deletion) => {
            let keys: Vec<String> = deletion
                .targets
                .iter()
                .map(|target| {
                    resource::target_key(target.kind, target.namespace.as_deref(), &target.name)
                        .to_string()
                })
                .collect();
            format!("delete {}", keys.join(", "))
        }
        Action::ResourceLabel(label) => match (&label.labels, label.remove) {
            (Some(labels), _) => {
                let pairs: Vec<String> = labels
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect();
                format!("label {} {} {}", label.kind, label.name, pairs.join(","))
            }
            (None, true) => format!("label {} {} remove {}", label.kind, label.name, label.key),
            (None, false) => format!(
                "label {} {} {}={}",
                label.kind,
                label.name,
                label.key,
                label.value.as_deref().unwrap_or_default()
            ),
        },
        Action::ResourceLabelEach(each) => {
            let change = match each.remove {
                true => format!("remove {}", each.key),
                false => format!("{}={}", each.key, each.value.as_deref().unwrap_or_default()),
            };
            format!(
                "label {} {change} on {} resource(s): {}",
                each.kind,
                each.names.len(),
                each.names_shown()
            )
        }
        Action::ResourcePatch(patch) => {
            format!(
                "{} patch of {} {}",
                patch.patch_type, patch.kind, patch.name
            )
        }
        Action::Exec(exec) => format!("run {}", process::display_command(&exec.command, &exec.env)),
        Action::Helm(helm) => {
            let mut argv = vec!["helm".to_string()];
            argv.extend(helm.args.iter().cloned());
            format!(
                "run {}",
                process::display_command(&argv, &Default::default())
            )
        }
        Action::Fetch(fetch) => format!("download {} to {}", fetch.url, fetch.file),
        Action::Check(check) => match (&check.equals, &check.matches) {
            (Some(expected), _) => format!("fact `{}` equals {expected}", check.fact),
            (None, Some(pattern)) => format!("fact `{}` matches `{pattern}`", check.fact),
            (None, None) => format!("fact `{}`", check.fact),
        },
        Action::Pause(gate) => format!("confirmation: {}", gate.message),
        Action::KubeRestoreOwnerReference(restore) => format!(
            "{} refers to {} `{}` with its current UID",
            restore.object, restore.owner.kind, restore.owner.name
        ),
        // Read both as a listing and as a `verify` (which holds when any matches).
        Action::KubeList(list) => {
            let mut text = format!("any {} {}", list.api_version, list.kind);
            if let Some(namespace) = &list.namespace {
                text.push_str(&format!(" in `{namespace}`"));
            }
            if let Some(selector) = &list.selector {
                text.push_str(&format!(" matching `{selector}`"));
            }
            text
        }
        Action::NodeRun(request) => format!("run {}", request.command.shell_line()),
        Action::NodeStatus(query) => format!(
            "ask {} for its status through a temporary CalicoNodeStatus",
            match query.nodes.as_slice() {
                [one] => format!("node `{}`", one.node),
                many => format!("{} nodes", many.len()),
            }
        ),
        other => other.name().to_string(),
    }
}
