//! `LowNodeUtilization`, as the descheduler's plugin of that name proposes evictions.

use serde::Deserialize;

use crate::deschedule::{Evictor, Proposal, View};

/// `LowNodeUtilization`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct LowNodeUtilizationArgs {}

/// The pods `LowNodeUtilization` would evict, in the order it would evict them.
pub fn propose(_args: &LowNodeUtilizationArgs, _view: &View, _evictor: &Evictor) -> Vec<Proposal> {
    Vec::new()
}
