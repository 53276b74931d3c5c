//! The descheduler (kubernetes-sigs/descheduler) on the engine: its policy file (`policy`), its
//! strategies (`strategies`, one module per plugin, each proposing evictions as the descheduler's plugin
//! of that name would) and its `DefaultEvictor` (`evictor`). Unlike the descheduler, proposals are not
//! evictions: `plan` checks them together against the scheduling simulation (every evicted pod must have
//! a better place that exists now, on the cluster as it will be), the budgets, the limits and the
//! previous cycles' moves, and says why for each it declines.

pub mod actual;
pub mod args;
pub mod evictor;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod plan;
pub mod policy;
pub mod strategies;
pub mod validate;
pub mod view;

pub use args::{Namespaces, Selector, Strategy};
pub use evictor::{Evictor, EvictorArgs, Kept};
pub use plan::{
    owner_key, plan, Blocked, Declined, Eviction, History, Limit, Move, Plan, Settings, Skipped,
    StrategyRun, Unavailable, Why,
};
pub use policy::{Policy, PolicyError, Profile, Warning};
pub use strategies::PluginArgs;
pub use view::{Cluster, Proposal, View};
