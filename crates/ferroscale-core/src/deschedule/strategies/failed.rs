//! `RemoveFailedPods`, as the descheduler's plugin of that name proposes evictions.

use serde::Deserialize;

use crate::deschedule::{Evictor, Proposal, View};

/// `RemoveFailedPods`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveFailedPodsArgs {
    // TEMP (policy tests): the descheduler's fields, until the strategy's own land.
    pub namespaces: Option<crate::deschedule::args::Namespaces>,
    pub label_selector: Option<crate::deschedule::args::Selector>,
    pub exclude_owner_kinds: Vec<String>,
    pub min_pod_lifetime_seconds: Option<u64>,
    pub reasons: Vec<String>,
    pub exit_codes: Vec<i32>,
    pub including_init_containers: bool,
}

/// The pods `RemoveFailedPods` would evict, in the order it would evict them.
pub fn propose(_args: &RemoveFailedPodsArgs, _view: &View, _evictor: &Evictor) -> Vec<Proposal> {
    Vec::new()
}
