//! `RemovePodsHavingTooManyRestarts`, as the descheduler's plugin of that name proposes evictions.

use serde::Deserialize;

use crate::deschedule::{Evictor, Proposal, View};

/// `RemovePodsHavingTooManyRestarts`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsHavingTooManyRestartsArgs {
    // TEMP (policy tests): the descheduler's fields, until the strategy's own land.
    pub namespaces: Option<crate::deschedule::args::Namespaces>,
    pub label_selector: Option<crate::deschedule::args::Selector>,
    pub pod_restart_threshold: i32,
    pub including_init_containers: bool,
    pub states: Vec<String>,
}

/// The pods `RemovePodsHavingTooManyRestarts` would evict, in the order it would evict them.
pub fn propose(
    _args: &RemovePodsHavingTooManyRestartsArgs,
    _view: &View,
    _evictor: &Evictor,
) -> Vec<Proposal> {
    Vec::new()
}
