//! The closed set of actions a plan step can take, fully rendered and typed.
//!
//! A runbook names an action (`action: resource.label`) and gives its arguments as a `with:` map of
//! templated strings; after rendering, the planner converts that pair into one [`Action`] value here, so
//! unknown actions and bad arguments are refused at plan time with the step id, never half way through
//! a maintenance window. The executor matches on [`Action`] exhaustively (dry-run is total). This module
//! only describes actions; it performs none of them.
//!
//! The list of actions is defined once, in `vocabulary::action_table`: [`Action`], its serde names,
//! [`Action::name`] and [`Action::NAMES`] are generated from it here. Each family's argument types
//! live beside this file with what they say of themselves ([`Arguments`]: the one line that
//! describes the action, the rules serde cannot express): `resource.rs` (`resource.*`), `kube.rs`
//! (`kube.*`), `fetch.rs`, `process.rs` (`helm`, `exec`), `gate.rs` (`check`, `pause`),
//! `node.rs` (`node.run`, `node.status`), `ipam.rs` (`ipam.*`, `datastore.lock|unlock|restore`) and
//! `verify.rs` (`upgrade.baseline`, `upgrade.verify`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::resource::ResourceKey;

mod fetch;
mod gate;
mod ipam;
mod kube;
mod node;
mod process;
mod resource;
mod verify;

pub use crate::vocabulary::HumanDuration;
// Each family's argument types, as `plan::action::KubeApply`: a new one needs no line here.
pub use fetch::*;
pub use gate::*;
pub use ipam::*;
pub use kube::*;
pub use node::*;
pub use process::*;
pub use resource::*;
pub use verify::*;

/// What the arguments of every action say of themselves. The plan, the dry run and the journal
/// show an action by [`Arguments::describe`] alone (through `Display` of [`Action`]); the planner
/// refuses what [`Arguments::check`] refuses.
pub trait Arguments {
    /// The one line that says exactly what the action `name` does, with every rendered argument
    /// and no secret: `resource.label HostEndpoint h1 upgrade=yes --overwrite`.
    fn describe(&self, name: &str, out: &mut fmt::Formatter<'_>) -> fmt::Result;

    /// The rules serde cannot express (exactly one of two fields, a non-empty argv): the reason
    /// when one is broken.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether the action writes resources of the datastore in batches (create, apply, replace,
    /// delete): those stop between two batches on a signal and undo what they wrote.
    fn writes_resources_in_batches(&self) -> bool {
        false
    }

    /// Whether the action catches Ctrl-C and SIGTERM to stop at a safe point and undo (one-step
    /// commands): the batched resource writes, and whatever deletes what it created.
    fn stops_on_signal(&self) -> bool {
        self.writes_resources_in_batches()
    }

    /// The datastore resources the action writes; `None` when it writes none (it is not a
    /// `resource.*` write).
    fn written_resources(&self) -> Option<Vec<ResourceKey>> {
        None
    }

    /// Whether the action may add Kubernetes types (a manifest or chart with CRDs): the
    /// pre-flight leaves a type it does not find to the run when an earlier step may add it.
    fn may_add_types(&self) -> bool {
        false
    }

    /// Whether the action may change which version the node agents run (installs, restarts,
    /// programs): the pre-flight checks a step's node agent requirement when it starts instead.
    fn may_roll_workloads(&self) -> bool {
        false
    }
}

/// Defines [`Action`] from `vocabulary::action_table`: one variant per entry, serialised under
/// the entry's name.
macro_rules! define_actions {
    ( $( $audience:ident { $( $(#[$doc:meta])* $variant:ident = $name:literal ($arguments:ident), )* } )* ) => {
        /// One fully rendered action. Serialised as `{action: <name>, with: {...}}`, the same shape as
        /// a runbook step, so a saved plan reads like the runbook it came from.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "action", content = "with")]
        pub enum Action {
            $( $( $(#[$doc])* #[serde(rename = $name)] $variant($arguments), )* )*
        }

        impl Action {
            /// Every action name a runbook may use, in documentation order.
            pub const NAMES: &'static [&'static str] = crate::vocabulary::RUNBOOK_ACTIONS;

            /// The name this action has in runbooks and plans, e.g. `resource.label`.
            pub fn name(&self) -> &'static str {
                match self {
                    $( $( Action::$variant(_) => $name, )* )*
                }
            }

            /// The action's arguments, as what they say of themselves.
            pub fn arguments(&self) -> &dyn Arguments {
                match self {
                    $( $( Action::$variant(arguments) => arguments, )* )*
                }
            }
        }
    };
}
crate::vocabulary::action_table!(define_actions);

/// The one description of an action: how the plan, the dry run and the journal show it.
impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.arguments().describe(self.name(), f)
    }
}

impl Action {
    /// Whether the action writes resources of the datastore in batches (create, apply, replace,
    /// delete): those stop between two batches on a signal and undo what they wrote.
    pub fn writes_many_resources(&self) -> bool {
        self.arguments().writes_resources_in_batches()
    }

    /// Whether the action catches Ctrl-C and SIGTERM to stop at a safe point and undo (one-step
    /// commands).
    pub fn stops_on_signal(&self) -> bool {
        self.arguments().stops_on_signal()
    }

    /// The datastore resources the action writes; `None` when it is no `resource.*` write.
    pub fn written_resources(&self) -> Option<Vec<ResourceKey>> {
        self.arguments().written_resources()
    }

    /// Builds an action from its runbook name and rendered `with:` arguments.
    ///
    /// The arguments must already be rendered; files named by `resource.*` actions must already have
    /// been loaded into `documents` by the caller (see `runbook::instantiate`).
    pub fn from_parts(name: &str, with: serde_json::Value) -> Result<Action, ActionError> {
        if !Action::NAMES.contains(&name) {
            return Err(ActionError::Unknown {
                name: name.to_string(),
            });
        }
        let mut with = match with {
            serde_json::Value::Null => serde_json::Value::Object(serde_json::Map::new()),
            other => other,
        };
        resource::read_written_documents(name, &mut with).map_err(|reason| {
            ActionError::Invalid {
                name: name.to_string(),
                reason,
            }
        })?;
        let tagged = serde_json::json!({ "action": name, "with": with });
        let action: Action =
            serde_json::from_value(tagged).map_err(|source| ActionError::InvalidArguments {
                name: name.to_string(),
                source,
            })?;
        action
            .arguments()
            .check()
            .map_err(|reason| ActionError::Invalid {
                name: name.to_string(),
                reason,
            })?;
        Ok(action)
    }
}

/// Why a runbook step's action could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("unknown action `{name}`")]
    Unknown { name: String },
    #[error("invalid arguments for action `{name}`")]
    InvalidArguments {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid arguments for action `{name}`: {reason}")]
    Invalid { name: String, reason: String },
}

/// The patch formats: RFC 7386 merge patch, RFC 6902 JSON patch and Kubernetes' strategic merge
/// patch (`crate::resource::strategic_merge`; for a Kubernetes object, the API server's). A runbook
/// step without `type` is a merge patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    #[default]
    Merge,
    Json,
    Strategic,
}

impl fmt::Display for PatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PatchType::Merge => "merge",
            PatchType::Json => "json",
            PatchType::Strategic => "strategic",
        })
    }
}

/// ` -n NAMESPACE` when there is one, as the descriptions write a namespace.
fn namespace_flag(namespace: &Option<String>) -> String {
    match namespace {
        Some(namespace) => format!(" -n {namespace}"),
        None => String::new(),
    }
}

/// `namespace/name`, or the name of a cluster-wide resource.
fn namespaced(namespace: &Option<String>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests;
