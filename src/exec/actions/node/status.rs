//! `node.status`: asks nodes' calico-node for their BGP status through temporary CalicoNodeStatus
//! objects — the one step of `netctl node status --node NAME` / `--all`.
//!
//! It reads each named Node first (an unknown node is refused before anything is written, in a
//! dry run too), creates one object per node (`node::status::remote::request`), reads them back
//! until calico-node has written `status.lastUpdated` into each or the timeout passes, and deletes
//! every object it created — after the answers, after the timeout, after a failed create, and on
//! Ctrl-C or SIGTERM (checked every 100 ms while waiting; a second signal cuts the deletes short).
//! The deletes are bounded (each by the request timeout, all at once); an object that could not be
//! deleted is named with the command that deletes it. Nodes that never answered are part of the
//! result, not an error here: the command prints the others and then says which did not answer.
//!
//! A dry run reads the Nodes and describes the objects it would create; it writes nothing.

use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::datastore::{Datastore, StoreError};
use crate::errors::Hint;
use crate::exec::actions::{Context, Outcome, Perform, Performed, RunMode};
use crate::exec::interrupt::{Interrupt, StopSignal};
use crate::node::status::remote::{self, NodeAnswer};
use crate::output::Printer;
use crate::plan::Action;
use crate::plan::action::{NodeStatusQuery, NodeStatusTarget};
use crate::resource::{Kind, ResourceKey};

impl Perform for NodeStatusQuery {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        let store = context.store(action)?;
        let interrupt = context.interrupt.as_ref();
        let printer = context.progress.printer();
        Ok(ask(store, self, mode, interrupt, printer)
            .await
            .map_err(Box::new)?)
    }

    /// Each run asks with objects of its own and deletes them.
    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}

/// How often the objects are read while waiting: from this ...
const FIRST_POLL: Duration = Duration::from_millis(200);
/// ... growing to this.
const LONGEST_POLL: Duration = Duration::from_secs(1);
/// How often a wait looks for a signal.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// What the step hands back (its `output`): the answers and the objects it could not delete.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeStatusOutput {
    pub answers: Vec<NodeAnswer>,
    /// Objects left behind, each with why it could not be deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_behind: Vec<LeftBehind>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LeftBehind {
    pub object: String,
    pub reason: String,
}

/// Why the question could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum NodeStatusActionError {
    #[error("node `{node}` does not exist")]
    UnknownNode {
        node: String,
        #[source]
        source: StoreError,
    },
    #[error("cannot read node `{node}`")]
    ReadNode {
        node: String,
        #[source]
        source: StoreError,
    },
    #[error("cannot create CalicoNodeStatus `{object}` to ask node `{node}`{}", left_behind_note(.left_behind))]
    Create {
        node: String,
        object: String,
        left_behind: Vec<LeftBehind>,
        #[source]
        source: StoreError,
    },
    #[error("stopped by {}{}", .signal.describe(), stopped_note(.left_behind))]
    Interrupted {
        signal: StopSignal,
        left_behind: Vec<LeftBehind>,
    },
}

fn left_behind_note(left_behind: &[LeftBehind]) -> String {
    match left_behind {
        [] => "; nothing is left behind".to_string(),
        objects => format!("; {}", describe_left_behind(objects)),
    }
}

fn stopped_note(left_behind: &[LeftBehind]) -> String {
    match left_behind {
        [] => "; the temporary CalicoNodeStatus objects were deleted".to_string(),
        objects => format!("; {}", describe_left_behind(objects)),
    }
}

/// `CalicoNodeStatus `a` (why) and `b` (why) may be left behind`.
pub fn describe_left_behind(left_behind: &[LeftBehind]) -> String {
    let objects: Vec<String> = left_behind
        .iter()
        .map(|object| format!("`{}` ({})", object.object, object.reason))
        .collect();
    format!("CalicoNodeStatus {} may be left behind", objects.join(", "))
}

/// The command that deletes what was left behind.
pub fn delete_command(left_behind: &[LeftBehind]) -> String {
    let names: Vec<&str> = left_behind
        .iter()
        .map(|object| object.object.as_str())
        .collect();
    format!("netctl delete caliconodestatus {}", names.join(" "))
}

impl Hint for NodeStatusActionError {
    fn hint(&self) -> Option<String> {
        match self {
            NodeStatusActionError::UnknownNode { .. } => {
                Some("`netctl get nodes` lists the nodes; `--all` asks every one".to_string())
            }
            NodeStatusActionError::Create { left_behind, .. }
            | NodeStatusActionError::Interrupted { left_behind, .. }
                if !left_behind.is_empty() =>
            {
                Some(format!(
                    "delete them with `{}`",
                    delete_command(left_behind)
                ))
            }
            NodeStatusActionError::Create { source, .. }
            | NodeStatusActionError::ReadNode { source, .. } => source.hint(),
            NodeStatusActionError::Interrupted { .. } => None,
        }
    }
}

fn object_key(target: &NodeStatusTarget) -> ResourceKey {
    ResourceKey::new(Kind::CalicoNodeStatus, None, target.object.clone())
}

/// Asks the nodes (or, in a dry run, says how it would).
pub async fn ask(
    store: &dyn Datastore,
    query: &NodeStatusQuery,
    mode: RunMode,
    interrupt: Option<&Interrupt>,
    printer: &Printer,
) -> Result<Outcome, NodeStatusActionError> {
    for target in &query.nodes {
        let key = ResourceKey::new(Kind::Node, None, target.node.clone());
        match store.get(&key).await {
            Ok(_) => {}
            Err(source @ StoreError::NotFound(_)) => {
                return Err(NodeStatusActionError::UnknownNode {
                    node: target.node.clone(),
                    source,
                });
            }
            Err(source) => {
                return Err(NodeStatusActionError::ReadNode {
                    node: target.node.clone(),
                    source,
                });
            }
        }
    }
    if mode == RunMode::DryRun {
        return Ok(describe(query));
    }

    let mut created: Vec<&NodeStatusTarget> = Vec::new();
    for target in &query.nodes {
        if let Some(signal) = interrupt.and_then(Interrupt::received) {
            let left_behind = delete_all(store, &created, interrupt).await;
            return Err(NodeStatusActionError::Interrupted {
                signal,
                left_behind,
            });
        }
        let request = remote::request(&target.object, &target.node, &query.id);
        if let Err(source) = store.create(&request).await {
            // A create whose answer was lost may have been written: delete it too (but never an
            // object of the same name that was there before).
            if !matches!(source, StoreError::AlreadyExists(_)) {
                created.push(target);
            }
            let left_behind = delete_all(store, &created, interrupt).await;
            return Err(NodeStatusActionError::Create {
                node: target.node.clone(),
                object: target.object.clone(),
                left_behind,
                source,
            });
        }
        created.push(target);
    }

    printer.info(format!(
        "waiting up to {} for calico-node on {} to fill in its CalicoNodeStatus",
        query.timeout,
        match query.nodes.as_slice() {
            [one] => format!("node `{}`", one.node),
            many => format!("{} nodes", many.len()),
        }
    ));
    let waited = wait_for_answers(store, query, interrupt).await;
    let left_behind = delete_all(store, &created, interrupt).await;
    let answers = match waited {
        Err(signal) => {
            return Err(NodeStatusActionError::Interrupted {
                signal,
                left_behind,
            });
        }
        Ok(answers) => answers,
    };
    let answered = answers
        .iter()
        .filter(|answer| answer.status.is_some())
        .count();
    let summary = format!("{answered} of {} nodes answered", answers.len());
    let output = NodeStatusOutput {
        answers,
        left_behind,
    };
    Ok(Outcome {
        summary: summary.clone(),
        transcript: vec![summary],
        output: serde_json::to_value(&output).ok(),
    })
}

/// Reads the objects until each is filled in or the timeout passes; `Err` with the signal when
/// one came first.
async fn wait_for_answers(
    store: &dyn Datastore,
    query: &NodeStatusQuery,
    interrupt: Option<&Interrupt>,
) -> Result<Vec<NodeAnswer>, StopSignal> {
    let deadline = Instant::now() + query.timeout.0;
    let mut answers: Vec<NodeAnswer> = query
        .nodes
        .iter()
        .map(|target| NodeAnswer {
            node: target.node.clone(),
            object: target.object.clone(),
            status: None,
            reason: None,
        })
        .collect();
    let mut pending: Vec<usize> = (0..answers.len()).collect();
    let mut poll = FIRST_POLL;
    loop {
        // One read of every object still waited for (etcd: key ranges).
        let keys: Vec<ResourceKey> = pending
            .iter()
            .map(|&index| object_key(&query.nodes[index]))
            .collect();
        match store.read_many(&keys).await {
            Ok(reads) => {
                let mut still = Vec::new();
                for (index, read) in pending.iter().copied().zip(reads) {
                    match read {
                        Some(resource) if remote::is_filled_in(&resource.status) => {
                            answers[index].status = Some(resource.status);
                            answers[index].reason = None;
                        }
                        Some(_) => still.push(index),
                        None => {
                            answers[index].reason = Some(
                                "its CalicoNodeStatus was deleted by someone else".to_string(),
                            );
                        }
                    }
                }
                pending = still;
            }
            // A read that failed is tried again at the next poll; the last error is kept for the
            // message if the node never answers.
            Err(error) => {
                for &index in &pending {
                    answers[index].reason = Some(format!("the last read failed: {error}"));
                }
            }
        }
        if pending.is_empty() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            for &index in &pending {
                let reason = format!("no answer within {}", query.timeout);
                answers[index].reason = Some(match answers[index].reason.take() {
                    Some(read) => format!("{reason}; {read}"),
                    None => reason,
                });
            }
            break;
        }
        let until = (now + poll).min(deadline);
        while Instant::now() < until {
            if let Some(signal) = interrupt.and_then(Interrupt::received) {
                return Err(signal);
            }
            tokio::time::sleep(SIGNAL_CHECK.min(until.saturating_duration_since(Instant::now())))
                .await;
        }
        if let Some(signal) = interrupt.and_then(Interrupt::received) {
            return Err(signal);
        }
        poll = (poll * 3 / 2).min(LONGEST_POLL);
    }
    Ok(answers)
}

/// Deletes the objects, all at once, each bounded by the datastore's request timeout; a second
/// signal abandons them. Returns what could not be deleted.
async fn delete_all(
    store: &dyn Datastore,
    created: &[&NodeStatusTarget],
    interrupt: Option<&Interrupt>,
) -> Vec<LeftBehind> {
    let limit = store.request_timeout() * 2;
    let deletes = join_all(created.iter().map(|target| async move {
        let key = object_key(target);
        match tokio::time::timeout(limit, store.delete(&key, None)).await {
            Ok(Ok(_)) | Ok(Err(StoreError::NotFound(_))) => None,
            Ok(Err(error)) => Some(LeftBehind {
                object: target.object.clone(),
                reason: error.to_string(),
            }),
            Err(_) => Some(LeftBehind {
                object: target.object.clone(),
                reason: format!(
                    "the delete did not finish within {}",
                    crate::vocabulary::HumanDuration(limit)
                ),
            }),
        }
    }));
    let insisted = async {
        loop {
            if interrupt.is_some_and(Interrupt::insisted) {
                return;
            }
            tokio::time::sleep(SIGNAL_CHECK).await;
        }
    };
    tokio::select! {
        results = deletes => results.into_iter().flatten().collect(),
        () = insisted => created
            .iter()
            .map(|target| LeftBehind {
                object: target.object.clone(),
                reason: "a second signal stopped the delete".to_string(),
            })
            .collect(),
    }
}

/// The dry run's account: each object as it would be created, and what would follow.
fn describe(query: &NodeStatusQuery) -> Outcome {
    let mut transcript = Vec::new();
    for target in &query.nodes {
        let request = remote::request(&target.object, &target.node, &query.id);
        transcript.push(format!(
            "would create CalicoNodeStatus `{}` (node `{}`, classes Agent, BGP, Routes, updatePeriodSeconds {}, label {}={})",
            target.object,
            target.node,
            remote::UPDATE_PERIOD_SECONDS,
            remote::QUERY_LABEL,
            request.metadata.labels[remote::QUERY_LABEL]
        ));
    }
    transcript.push(format!(
        "would wait up to {} for calico-node to fill in each status, then delete the objects",
        query.timeout
    ));
    Outcome {
        summary: format!("would ask {} nodes for their status", query.nodes.len()),
        transcript,
        output: None,
    }
}
