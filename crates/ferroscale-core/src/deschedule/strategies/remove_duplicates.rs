//! `RemoveDuplicates`, as the descheduler's plugin of that name proposes evictions.

use serde::Deserialize;

use crate::deschedule::{Evictor, Proposal, View};

/// `RemoveDuplicates`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveDuplicatesArgs {}

/// The pods `RemoveDuplicates` would evict, in the order it would evict them.
pub fn propose(_args: &RemoveDuplicatesArgs, _view: &View, _evictor: &Evictor) -> Vec<Proposal> {
    Vec::new()
}
