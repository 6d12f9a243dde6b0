//! The `apis` and `permissions` pre-flight checks: which Kubernetes types each `kube.*` step
//! touches and how (verbs), whether the API server serves each type (discovery), and whether
//! netctl's identity may do each of those things (one SelfSubjectAccessReview per verb, resource,
//! namespace and name, as `kubectl auth can-i` asks).
//!
//! A type the server does not serve fails the `apis` check, except: a type Kubernetes removed at
//! a version the cluster has reached ([`REMOVED_TYPES`], e.g. PodSecurityPolicy in 1.25) makes its
//! step one to skip, with the reason; and a type an earlier step may install (it applies a
//! manifest, which may hold its CRD) is left to that step's run. The objects of a manifest that is
//! downloaded during the run are not known before it and are not checked here (the report says
//! which steps). It writes nothing: a SelfSubjectAccessReview is a question, not an object.

use std::collections::BTreeMap;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};

use super::{SkippedStep, Verdict};
use crate::exec::actions::kube::{ApiAccess, resolve};
use crate::exec::actions::kubernetes_access;
use crate::plan::PlannedStep;

/// Types Kubernetes no longer serves from a version on: `(apiVersion, kind, minor version)`.
pub const REMOVED_TYPES: &[(&str, &str, u32)] = &[("policy/v1beta1", "PodSecurityPolicy", 25)];

/// One thing a step does to one type.
#[derive(Debug, Clone)]
struct Need {
    step: String,
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: Option<String>,
    verbs: Vec<&'static str>,
}

/// What discovery said about a type.
#[derive(Debug, Clone)]
enum Found {
    Served {
        group: String,
        plural: String,
    },
    /// Removed from Kubernetes at a version this cluster has reached; why.
    Removed(String),
    /// Not served now; an earlier step applies a manifest that may define it.
    Later {
        by: String,
    },
    Missing,
    Unreadable(String),
}

/// What the steps need of the cluster, and what discovery found.
pub(super) struct Access {
    needs: Vec<(Need, Found)>,
    /// Steps whose objects are known only when they run (downloaded manifests).
    unknown: Vec<String>,
}

impl Access {
    /// Lists what each step needs and asks discovery about each type once.
    pub async fn discover(client: &kube::Client, steps: &[&PlannedStep]) -> Access {
        let minor = client
            .apiserver_version()
            .await
            .ok()
            .and_then(|version| version.minor.trim_end_matches('+').parse::<u32>().ok());
        let mut found: BTreeMap<(String, String), Found> = BTreeMap::new();
        let mut needs = Vec::new();
        let mut unknown = Vec::new();
        let mut applied_before: Option<String> = None;
        for step in steps {
            match step_needs(step) {
                Ok(list) => {
                    for need in list {
                        let key = (need.api_version.clone(), need.kind.clone());
                        if !found.contains_key(&key) {
                            let answer = ask(
                                client,
                                &need.api_version,
                                &need.kind,
                                minor,
                                &applied_before,
                            )
                            .await;
                            found.insert(key.clone(), answer);
                        }
                        needs.push((need, found[&key].clone()));
                    }
                }
                Err(()) => unknown.push(step.id.clone()),
            }
            if step.action.arguments().may_add_types() {
                applied_before.get_or_insert_with(|| step.id.clone());
            }
        }
        Access { needs, unknown }
    }

    /// The steps to skip because their type was removed from Kubernetes.
    pub fn skipped_steps(&self) -> Vec<SkippedStep> {
        let mut skipped: Vec<SkippedStep> = Vec::new();
        for (need, found) in &self.needs {
            if let Found::Removed(reason) = found
                && !skipped.iter().any(|step| step.id == need.step)
            {
                skipped.push(SkippedStep {
                    id: need.step.clone(),
                    reason: reason.clone(),
                });
            }
        }
        skipped
    }

    pub fn apis_verdict(&self) -> Verdict {
        let mut missing: Vec<String> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        for (need, found) in &self.needs {
            let what = format!("`{}` `{}`", need.api_version, need.kind);
            match found {
                Found::Missing => {
                    missing.push(format!("{what} (step `{}`)", need.step));
                }
                Found::Unreadable(detail) => {
                    missing.push(format!(
                        "{what} (step `{}`): discovery failed: {detail}",
                        need.step
                    ));
                }
                Found::Later { by } => notes.push(format!(
                    "{what} is not served yet; step `{by}` may install it, and step `{}` checks it when it runs",
                    need.step
                )),
                Found::Served { .. } | Found::Removed(_) => {}
            }
        }
        missing.dedup();
        notes.dedup();
        if !missing.is_empty() {
            return Verdict::Failed {
                problem: format!(
                    "the Kubernetes API server does not serve {}",
                    missing.join(", ")
                ),
                fix: "install the CRD that defines each type (or upgrade the cluster to a version that serves it), or check the runbook's `api_version`/`kind`"
                    .to_string(),
            };
        }
        let served = self
            .needs
            .iter()
            .filter(|(_, found)| matches!(found, Found::Served { .. }))
            .map(|(need, _)| (need.api_version.as_str(), need.kind.as_str()))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let mut what = format!("{served} type(s) served");
        if !self.unknown.is_empty() {
            notes.push(format!(
                "the objects of downloaded manifests are checked when they are applied (steps {})",
                quoted(&self.unknown)
            ));
        }
        if !notes.is_empty() {
            what = format!("{what}; {}", notes.join("; "));
        }
        Verdict::Passed(what)
    }

    /// One SelfSubjectAccessReview per verb, resource, namespace and name the steps need.
    pub async fn permissions_verdict(&self, client: &kube::Client) -> Verdict {
        let reviews: kube::Api<SelfSubjectAccessReview> = kube::Api::all(client.clone());
        let mut asked: BTreeMap<(String, String, String, String, String), bool> = BTreeMap::new();
        let mut denied: Vec<String> = Vec::new();
        for (need, found) in &self.needs {
            let Found::Served { group, plural } = found else {
                continue;
            };
            for verb in &need.verbs {
                let key = (
                    verb.to_string(),
                    group.clone(),
                    plural.clone(),
                    need.namespace.clone().unwrap_or_default(),
                    need.name.clone().unwrap_or_default(),
                );
                if asked.contains_key(&key) {
                    continue;
                }
                let review = SelfSubjectAccessReview {
                    spec: SelfSubjectAccessReviewSpec {
                        resource_attributes: Some(ResourceAttributes {
                            verb: Some(verb.to_string()),
                            group: Some(group.clone()),
                            resource: Some(plural.clone()),
                            namespace: need.namespace.clone(),
                            name: need.name.clone(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let allowed = match reviews.create(&Default::default(), &review).await {
                    Ok(answer) => answer.status.is_some_and(|status| status.allowed),
                    Err(error) => {
                        return Verdict::Failed {
                            problem: format!(
                                "cannot ask the API server what netctl may do (SelfSubjectAccessReview): {}",
                                crate::errors::error_chain(&error)
                            ),
                            fix: "every authenticated user may create SelfSubjectAccessReviews unless RBAC was changed; check `kubectl auth can-i --list`"
                                .to_string(),
                        };
                    }
                };
                asked.insert(key, allowed);
                if !allowed {
                    let resource = match group.as_str() {
                        "" => format!("`{plural}`"),
                        group => format!("`{plural}.{group}`"),
                    };
                    let namespace = match &need.namespace {
                        Some(namespace) => format!(" in namespace `{namespace}`"),
                        None => String::new(),
                    };
                    let name = match &need.name {
                        Some(name) => format!(" (`{name}`)"),
                        None => String::new(),
                    };
                    denied.push(format!(
                        "`{verb}` on {resource}{namespace}{name} for step `{}`",
                        need.step
                    ));
                }
            }
        }
        if denied.is_empty() {
            return Verdict::Passed(format!("{} access review(s) allowed", asked.len()));
        }
        Verdict::Failed {
            problem: format!("netctl may not {}", denied.join(", ")),
            fix: "grant netctl's identity these verbs in its RBAC role (check with `kubectl auth can-i VERB RESOURCE -n NAMESPACE`), or run with a kubeconfig that has them"
                .to_string(),
        }
    }
}

fn quoted(ids: &[String]) -> String {
    ids.iter()
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Discovery's answer about one type.
async fn ask(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    minor: Option<u32>,
    applied_before: &Option<String>,
) -> Found {
    match resolve(client, api_version, kind).await {
        Ok((resource, _)) => Found::Served {
            group: resource.group,
            plural: resource.plural,
        },
        Err(crate::exec::actions::kube::KubeActionError::UnknownType { .. }) => {
            let removed = REMOVED_TYPES.iter().find(|(version, removed_kind, _)| {
                *version == api_version && *removed_kind == kind
            });
            match (removed, applied_before) {
                (Some((_, _, removed_in)), _) => Found::Removed(format!(
                    "the cluster does not serve `{api_version}` `{kind}`, which Kubernetes removed in 1.{removed_in}{}; there is nothing of it to change",
                    match minor {
                        Some(minor) => format!(" (this cluster runs 1.{minor})"),
                        None => String::new(),
                    }
                )),
                (None, Some(by)) => Found::Later { by: by.clone() },
                (None, None) => Found::Missing,
            }
        }
        Err(error) => Found::Unreadable(crate::errors::error_chain(&error)),
    }
}

/// What `step` does to which types; `Err` when that is known only when it runs.
fn step_needs(step: &PlannedStep) -> Result<Vec<Need>, ()> {
    let access = kubernetes_access(&step.action).ok_or(())?;
    let need = |access: ApiAccess| Need {
        step: step.id.clone(),
        api_version: access.api_version,
        kind: access.kind,
        namespace: access.namespace,
        name: access.name,
        verbs: access.verbs,
    };
    Ok(access.into_iter().map(need).collect())
}
