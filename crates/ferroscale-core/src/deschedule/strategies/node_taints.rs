//! `RemovePodsViolatingNodeTaints`, as the descheduler's plugin of that name proposes evictions.

use serde::Deserialize;

use crate::deschedule::{Evictor, Proposal, View};

/// `RemovePodsViolatingNodeTaints`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsViolatingNodeTaintsArgs {
    // TEMP (policy tests): the descheduler's fields, until the strategy's own land.
    pub namespaces: Option<crate::deschedule::args::Namespaces>,
    pub label_selector: Option<crate::deschedule::args::Selector>,
    pub include_prefer_no_schedule: bool,
    pub excluded_taints: Vec<String>,
    pub included_taints: Vec<String>,
}

/// The pods `RemovePodsViolatingNodeTaints` would evict, in the order it would evict them.
pub fn propose(
    _args: &RemovePodsViolatingNodeTaintsArgs,
    _view: &View,
    _evictor: &Evictor,
) -> Vec<Proposal> {
    Vec::new()
}
