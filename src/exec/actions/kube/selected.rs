//! `kube.list` and `kube.delete`: the Kubernetes objects of one kind selected by namespace and
//! labels — listed in pages (a read, so a dry-run reads too, and a postcondition: some object
//! matches), or deleted as exactly the collection a server-side dry-run delete named.

use kube::api::{DeleteParams, ListParams};
use serde_json::json;

use super::requests::{collection, describe_delete, describe_list, listing};
use super::{
    ApiAccess, KubeActionError, api_for, cluster, described, done, request_error, resolve,
    with_lines, without_cluster,
};
use crate::exec::actions::{Context, Held, Outcome, Perform, Performed, RunMode};
use crate::plan::Action;
use crate::plan::action::{KubeDelete, KubeList};

impl Perform for KubeList {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        match cluster(context, action) {
            Ok(client) => Ok(list(client, self, mode).await?),
            Err(_) => without_cluster(action, mode, describe_list(self)),
        }
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        let client = cluster(context, action)?;
        Ok(!list_names(client, self).await?.names.is_empty())
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let namespace = self.namespace.as_ref();
        let list = ApiAccess::of_type(&self.api_version, &self.kind, namespace, None, &["list"]);
        Some(vec![list])
    }
}

impl Perform for KubeDelete {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        match cluster(context, action) {
            Ok(client) => Ok(delete(client, self, mode).await?),
            Err(_) => without_cluster(action, mode, describe_delete(self)),
        }
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }

    fn kubernetes_access(&self) -> Option<Vec<ApiAccess>> {
        let (namespace, verbs) = (self.namespace.as_ref(), &["list", "deletecollection"]);
        let delete = ApiAccess::of_type(&self.api_version, &self.kind, namespace, None, verbs);
        Some(vec![delete])
    }
}

/// Objects per list request of `kube.list`, so a large namespace is read in pages.
const LIST_PAGE_SIZE: u32 = 250;

/// What a `kube.list` found: the type's plural, what the list covered as messages say it, and the
/// names (sorted).
pub struct Listed {
    pub plural: String,
    pub covered: String,
    pub names: Vec<String>,
}

/// Reads the objects a `kube.list` covers, in pages, so a large namespace is read whole.
pub async fn list_names(client: &kube::Client, list: &KubeList) -> Result<Listed, KubeActionError> {
    let (resource, namespaced) = resolve(client, &list.api_version, &list.kind).await?;
    let api = api_for(client, &resource, namespaced, list.namespace.as_deref());
    let selector = list.selector.as_ref().map(ToString::to_string);
    let covered = collection(
        &resource.plural,
        list.namespace.as_deref(),
        selector.as_deref(),
    );
    let mut params = ListParams::default().limit(LIST_PAGE_SIZE);
    if let Some(selector) = &selector {
        params = params.labels(selector);
    }
    let mut names = Vec::new();
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|error| request_error(format!("list of {covered}"), error))?;
        names.extend(page.items.into_iter().filter_map(|item| item.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    names.sort();
    Ok(Listed {
        plural: resource.plural,
        covered,
        names,
    })
}

/// `kube.list`: reads the objects and returns their names (what `register` keeps). It changes
/// nothing, so a dry-run reads too and shows what the real run would find now.
pub async fn list(
    client: &kube::Client,
    list: &KubeList,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let listed = list_names(client, list).await?;
    let output = json!(listed.names);
    if mode == RunMode::DryRun {
        let line = format!("  {}", listing(&listed.names, &listed.plural, "found"));
        let mut outcome = with_lines(described(describe_list(list)), vec![line]);
        outcome.output = Some(output);
        return Ok(outcome);
    }
    let summary = format!(
        "found {} {}{}",
        listed.names.len(),
        listed.covered,
        if listed.names.is_empty() {
            String::new()
        } else {
            format!(": {}", listed.names.join(", "))
        }
    );
    Ok(done(summary, output))
}

/// `kube.delete`: lists what the selector matches with a server-side dry-run delete, then (in
/// execute mode) deletes exactly that collection.
pub async fn delete(
    client: &kube::Client,
    delete: &KubeDelete,
    mode: RunMode,
) -> Result<Outcome, KubeActionError> {
    let description = describe_delete(delete);
    let (resource, namespaced) = resolve(client, &delete.api_version, &delete.kind).await?;
    let api = api_for(client, &resource, namespaced, delete.namespace.as_deref());
    let selector = delete.selector.to_string();
    let list = ListParams::default().labels(&selector);
    let where_ = collection(
        &resource.plural,
        delete.namespace.as_deref(),
        Some(&selector),
    );
    let rehearsal = api
        .delete_collection(&DeleteParams::default().dry_run(), &list)
        .await
        .map_err(|error| request_error(format!("server dry-run delete of {where_}"), error))?;
    // The API answers with the list of what it deleted, or a bare Status when that is not known.
    let names: Vec<String> = rehearsal
        .left()
        .map(|list| {
            list.items
                .iter()
                .filter_map(|item| item.metadata.name.clone())
                .collect()
        })
        .unwrap_or_default();
    let mut listing = vec![format!(
        "  server dry-run: {}",
        listing(&names, &resource.plural, "would be deleted")
    )];
    if mode == RunMode::DryRun {
        return Ok(with_lines(described(description), listing));
    }
    if !names.is_empty() {
        api.delete_collection(&DeleteParams::default(), &list)
            .await
            .map_err(|error| request_error(format!("delete of {where_}"), error))?;
    }
    let summary = format!("deleted {} {}", names.len(), where_);
    listing.insert(0, summary.clone());
    Ok(Outcome {
        summary,
        transcript: listing,
        output: Some(json!({ "deleted": names })),
    })
}
