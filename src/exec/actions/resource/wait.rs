//! `resource.wait`: polls the datastore until named resources exist (and match a selector), or until
//! a selector matches any, reporting progress on stderr whenever it changes; fails after its
//! timeout. Also the postconditions `resource.wait` and `resource.get` give as `verify`.

use std::time::Duration;

use crate::datastore::{Datastore, StoreError};
use crate::plan::action::ResourceWait;
use crate::resource::Resource;

use super::{Outcome, RunMode};
use super::{ResourceActionError, for_each_selected, parse_selector, store_error, target_key};
use crate::exec::actions::{Context, Held, Perform, Performed};
use crate::plan::Action;

/// How often `resource.wait` reads the datastore again.
const WAIT_POLL: Duration = Duration::from_millis(500);

/// What `resource.wait` waits for, in words.
fn describe_wait(request: &ResourceWait) -> String {
    let plural = request.kind.plural();
    let selector = request
        .selector
        .as_deref()
        .map(|selector| format!(" matching `{selector}`"))
        .unwrap_or_default();
    if request.names.is_empty() {
        format!("any of the {plural}{selector}")
    } else {
        format!(
            "{plural} {}{selector}",
            request
                .names
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// One look at what `resource.wait` waits for: whether it holds, and what is missing.
async fn wait_state(
    store: &dyn Datastore,
    request: &ResourceWait,
) -> Result<(bool, String), ResourceActionError> {
    let selector = parse_selector(request.selector.as_deref())?;
    let matches = |resource: &Resource| {
        selector
            .as_ref()
            .is_none_or(|selector| selector.matches(&resource.metadata.labels))
    };
    if request.names.is_empty() {
        let mut found = 0;
        for_each_selected(
            store,
            request.kind,
            request.namespace.as_deref(),
            selector.as_ref(),
            |_| found += 1,
        )
        .await?;
        return Ok((found > 0, format!("{found} matching")));
    }
    let mut missing = Vec::new();
    let mut unmatched = Vec::new();
    for name in &request.names {
        let key = target_key(request.kind, request.namespace.as_deref(), name);
        match store.get(&key).await {
            Ok(resource) if matches(&resource) => {}
            Ok(_) => unmatched.push(name.clone()),
            Err(StoreError::NotFound(_)) => missing.push(name.clone()),
            Err(source) => return Err(store_error("read", &key)(source)),
        }
    }
    let present = request.names.len() - missing.len() - unmatched.len();
    let mut report = format!("{present}/{} present", request.names.len());
    if !missing.is_empty() {
        report.push_str(&format!("; missing {}", missing.join(", ")));
    }
    if !unmatched.is_empty() {
        report.push_str(&format!(
            "; not matching the selector: {}",
            unmatched.join(", ")
        ));
    }
    Ok((missing.is_empty() && unmatched.is_empty(), report))
}

/// `resource.wait`: polls the datastore until the resources are there, reporting progress on stderr
/// whenever it changes; fails after `timeout`. A dry-run reads once and reports what it sees.
pub async fn wait(
    store: &dyn Datastore,
    request: &ResourceWait,
    mode: RunMode,
    progress: &crate::exec::progress::Progress,
) -> Result<Outcome, ResourceActionError> {
    let what = describe_wait(request);
    if mode == RunMode::DryRun {
        let (_, report) = wait_state(store, request).await?;
        return Ok(Outcome {
            summary: format!("would wait up to {} for {what}", request.timeout),
            transcript: vec![
                format!("would wait up to {} for {what}", request.timeout),
                format!("  now: {report}"),
            ],
            output: None,
        });
    }
    let started = std::time::Instant::now();
    let mut reporter = crate::exec::progress::WaitReporter::new(progress, what.clone());
    loop {
        let (done, report) = wait_state(store, request).await?;
        if done {
            let summary = format!("{what}: {report}");
            return Ok(Outcome {
                summary: summary.clone(),
                transcript: vec![summary],
                output: Some(serde_json::json!(request.names)),
            });
        }
        reporter.report(&report);
        if started.elapsed() >= request.timeout.0 {
            return Err(ResourceActionError::WaitTimeout {
                what,
                timeout: request.timeout.to_string(),
                last: report,
            });
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}

/// Whether what `resource.wait` waits for holds now (a `verify` postcondition).
pub async fn waited_for(
    store: &dyn Datastore,
    request: &ResourceWait,
) -> Result<bool, ResourceActionError> {
    Ok(wait_state(store, request).await?.0)
}

/// `resource.wait`; as a postcondition, what it waits for is there now.
impl Perform for ResourceWait {
    async fn perform(&self, action: &Action, context: &Context<'_>, mode: RunMode) -> Performed {
        Ok(wait(context.store(action)?, self, mode, &context.progress).await?)
    }

    async fn holds(&self, action: &Action, context: &Context<'_>) -> Held {
        Ok(waited_for(context.store(action)?, self).await?)
    }

    fn is_idempotent(&self, _: &Action) -> bool {
        true
    }
}
