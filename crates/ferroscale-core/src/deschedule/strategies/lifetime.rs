//! `PodLifeTime`, as the descheduler's plugin of that name proposes evictions.

use serde::Deserialize;

use crate::deschedule::{Evictor, Proposal, View};

/// `PodLifeTime`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodLifeTimeArgs {
    // TEMP (policy tests): the descheduler's fields, until the strategy's own land.
    pub namespaces: Option<crate::deschedule::args::Namespaces>,
    pub label_selector: Option<crate::deschedule::args::Selector>,
    pub owner_kinds: Option<serde_norway::Value>,
    pub max_pod_life_time_seconds: Option<u64>,
    pub states: Vec<String>,
    pub conditions: Vec<serde_norway::Value>,
    pub exit_codes: Vec<i32>,
    pub including_init_containers: bool,
    pub including_ephemeral_containers: bool,
}

/// The pods `PodLifeTime` would evict, in the order it would evict them.
pub fn propose(_args: &PodLifeTimeArgs, _view: &View, _evictor: &Evictor) -> Vec<Proposal> {
    Vec::new()
}
