//! One module per descheduler plugin: its arguments and the evictions it proposes. A strategy only
//! proposes; `plan` decides.

use super::{Evictor, PluginArgs, Proposal, View};

pub mod failed;
pub mod fit;
pub mod high_utilization;
pub mod inter_pod_anti_affinity;
pub mod lifetime;
pub mod low_utilization;
pub mod node_affinity;
pub mod node_taints;
pub mod remove_duplicates;
pub mod restarts;
pub mod scope;
pub mod spread;
#[cfg(test)]
pub(crate) mod testkit;
pub mod usage;
pub mod validate;

/// The evictions a configured strategy proposes this cycle.
pub fn propose(args: &PluginArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
    match args {
        PluginArgs::RemoveFailedPods(a) => failed::propose(a, view, evictor),
        PluginArgs::HighNodeUtilization(a) => high_utilization::propose(a, view, evictor),
        PluginArgs::RemovePodsViolatingInterPodAntiAffinity(a) => {
            inter_pod_anti_affinity::propose(a, view, evictor)
        }
        PluginArgs::PodLifeTime(a) => lifetime::propose(a, view, evictor),
        PluginArgs::LowNodeUtilization(a) => low_utilization::propose(a, view, evictor),
        PluginArgs::RemovePodsViolatingNodeAffinity(a) => node_affinity::propose(a, view, evictor),
        PluginArgs::RemovePodsViolatingNodeTaints(a) => node_taints::propose(a, view, evictor),
        PluginArgs::RemoveDuplicates(a) => remove_duplicates::propose(a, view, evictor),
        PluginArgs::RemovePodsHavingTooManyRestarts(a) => restarts::propose(a, view, evictor),
        PluginArgs::RemovePodsViolatingTopologySpreadConstraint(a) => {
            spread::propose(a, view, evictor)
        }
    }
}
