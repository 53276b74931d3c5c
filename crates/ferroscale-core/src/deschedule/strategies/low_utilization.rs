//! `LowNodeUtilization`, as the descheduler's plugin of that name proposes evictions.

use serde::Deserialize;

use crate::deschedule::{Evictor, Proposal, View};

/// `LowNodeUtilization`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct LowNodeUtilizationArgs {
    // TEMP (policy tests): the descheduler's fields, until the strategy's own land.
    pub use_deviation_thresholds: bool,
    pub thresholds: crate::deschedule::args::Thresholds,
    pub target_thresholds: crate::deschedule::args::Thresholds,
    pub number_of_nodes: u32,
    pub metrics_utilization: Option<serde_norway::Value>,
    pub evictable_namespaces: Option<crate::deschedule::args::Namespaces>,
    pub eviction_limits: Option<serde_norway::Value>,
}

/// The pods `LowNodeUtilization` would evict, in the order it would evict them.
pub fn propose(_args: &LowNodeUtilizationArgs, _view: &View, _evictor: &Evictor) -> Vec<Proposal> {
    Vec::new()
}
