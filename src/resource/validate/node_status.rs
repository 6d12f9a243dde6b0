//! CalicoNodeStatus (upstream's struct tags on `CalicoNodeStatusSpec`: `node` required and a
//! resource name, `classes` required and without repeats, `updatePeriodSeconds` required and at
//! most a day).
//!
//! Refinement: a class other than `Agent`, `BGP` or `Routes` is refused for every line. Upstream's
//! validator lets it through (calico-node then logs it and reports nothing for it) and only the
//! v3.32 CRD refuses it on the Kubernetes datastore; a typo that silently reports nothing is worth
//! refusing everywhere.

use super::{Checker, quote_list};
use crate::resource::spec::CalicoNodeStatusSpec;
use crate::resource::spec::node_status::{CLASSES, MAXIMUM_UPDATE_PERIOD_SECONDS};

pub(super) fn calico_node_status(checker: &mut Checker, spec: &mut CalicoNodeStatusSpec) {
    if spec.node.is_empty() {
        checker.fail(
            "spec.node",
            None,
            "node is required: the name of the node to report",
        );
    } else {
        checker.name("spec.node", &spec.node);
    }
    if spec.classes.is_empty() {
        checker.fail(
            "spec.classes",
            None,
            format!("classes are required: any of {}", quote_list(&CLASSES)),
        );
    }
    for (index, class) in spec.classes.iter().enumerate() {
        let path = format!("spec.classes[{index}]");
        if !CLASSES.contains(&class.as_str()) {
            checker.fail(
                &path,
                Some(class),
                format!("must be one of {}", quote_list(&CLASSES)),
            );
        } else if spec.classes[..index].contains(class) {
            checker.fail(&path, Some(class), "each class may be named once");
        }
    }
    match spec.update_period_seconds {
        None => checker.fail(
            "spec.updatePeriodSeconds",
            None,
            "updatePeriodSeconds is required (0 reports once)",
        ),
        Some(period) if period > MAXIMUM_UPDATE_PERIOD_SECONDS => checker.fail(
            "spec.updatePeriodSeconds",
            Some(&period.to_string()),
            format!("must be between 0 and {MAXIMUM_UPDATE_PERIOD_SECONDS} (one day)"),
        ),
        Some(_) => {}
    }
}
