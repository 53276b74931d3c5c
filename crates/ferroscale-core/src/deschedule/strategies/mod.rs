//! One module per descheduler plugin: its arguments and the evictions it proposes; and, over them all,
//! [`PluginArgs`] (a strategy with its arguments) and [`propose`]. A strategy only proposes; `plan`
//! decides.

use super::args::{ArgsError, Strategy};
use super::view::Verdict;
use super::{Evictor, Proposal, View};
use failed::RemoveFailedPodsArgs;
use high_utilization::HighNodeUtilizationArgs;
use inter_pod_anti_affinity::RemovePodsViolatingInterPodAntiAffinityArgs;
use lifetime::PodLifeTimeArgs;
use low_utilization::LowNodeUtilizationArgs;
use node_affinity::RemovePodsViolatingNodeAffinityArgs;
use node_taints::RemovePodsViolatingNodeTaintsArgs;
use remove_duplicates::RemoveDuplicatesArgs;
use restarts::RemovePodsHavingTooManyRestartsArgs;
use spread::RemovePodsViolatingTopologySpreadConstraintArgs;

pub mod failed;
pub mod fit;
pub mod high_utilization;
pub mod inter_pod_anti_affinity;
pub mod lifetime;
pub mod low_utilization;
pub mod measured;
pub mod node_affinity;
pub mod node_taints;
pub mod remove_duplicates;
pub mod restarts;
pub mod scope;
pub mod spread;
#[cfg(test)]
pub(crate) mod testkit;
pub mod usage;

/// A strategy with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginArgs {
    RemoveDuplicates(RemoveDuplicatesArgs),
    LowNodeUtilization(LowNodeUtilizationArgs),
    HighNodeUtilization(HighNodeUtilizationArgs),
    RemovePodsViolatingInterPodAntiAffinity(RemovePodsViolatingInterPodAntiAffinityArgs),
    RemovePodsViolatingNodeAffinity(RemovePodsViolatingNodeAffinityArgs),
    RemovePodsViolatingNodeTaints(RemovePodsViolatingNodeTaintsArgs),
    RemovePodsViolatingTopologySpreadConstraint(RemovePodsViolatingTopologySpreadConstraintArgs),
    RemovePodsHavingTooManyRestarts(RemovePodsHavingTooManyRestartsArgs),
    PodLifeTime(PodLifeTimeArgs),
    RemoveFailedPods(RemoveFailedPodsArgs),
}

impl PluginArgs {
    pub fn strategy(&self) -> Strategy {
        match self {
            PluginArgs::RemoveDuplicates(_) => Strategy::RemoveDuplicates,
            PluginArgs::LowNodeUtilization(_) => Strategy::LowNodeUtilization,
            PluginArgs::HighNodeUtilization(_) => Strategy::HighNodeUtilization,
            PluginArgs::RemovePodsViolatingInterPodAntiAffinity(_) => {
                Strategy::RemovePodsViolatingInterPodAntiAffinity
            }
            PluginArgs::RemovePodsViolatingNodeAffinity(_) => {
                Strategy::RemovePodsViolatingNodeAffinity
            }
            PluginArgs::RemovePodsViolatingNodeTaints(_) => Strategy::RemovePodsViolatingNodeTaints,
            PluginArgs::RemovePodsViolatingTopologySpreadConstraint(_) => {
                Strategy::RemovePodsViolatingTopologySpreadConstraint
            }
            PluginArgs::RemovePodsHavingTooManyRestarts(_) => {
                Strategy::RemovePodsHavingTooManyRestarts
            }
            PluginArgs::PodLifeTime(_) => Strategy::PodLifeTime,
            PluginArgs::RemoveFailedPods(_) => Strategy::RemoveFailedPods,
        }
    }

    /// The strategy's arguments read from a policy's `pluginConfig` args, as `policy` decoded and
    /// defaulted them (their shape and the descheduler's defaults are applied there, on the values;
    /// [`PluginArgs::validate`] then checks them).
    pub fn from_value(
        s: Strategy,
        args: serde_norway::Value,
    ) -> Result<PluginArgs, serde_norway::Error> {
        use serde_norway::from_value as read;
        Ok(match s {
            Strategy::RemoveDuplicates => PluginArgs::RemoveDuplicates(read(args)?),
            Strategy::LowNodeUtilization => PluginArgs::LowNodeUtilization(read(args)?),
            Strategy::HighNodeUtilization => PluginArgs::HighNodeUtilization(read(args)?),
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                PluginArgs::RemovePodsViolatingInterPodAntiAffinity(read(args)?)
            }
            Strategy::RemovePodsViolatingNodeAffinity => {
                PluginArgs::RemovePodsViolatingNodeAffinity(read(args)?)
            }
            Strategy::RemovePodsViolatingNodeTaints => {
                PluginArgs::RemovePodsViolatingNodeTaints(read(args)?)
            }
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                PluginArgs::RemovePodsViolatingTopologySpreadConstraint(read(args)?)
            }
            Strategy::RemovePodsHavingTooManyRestarts => {
                PluginArgs::RemovePodsHavingTooManyRestarts(read(args)?)
            }
            Strategy::PodLifeTime => PluginArgs::PodLifeTime(read(args)?),
            Strategy::RemoveFailedPods => PluginArgs::RemoveFailedPods(read(args)?),
        })
    }

    /// The strategy's own checks of its arguments (its `validation.go`), and a refusal of what
    /// ferroscale does not honour where ignoring it would evict more than the policy asks. Every
    /// policy goes through it (`Policy::parse`).
    pub fn validate(&self) -> Result<(), ArgsError> {
        match self {
            PluginArgs::RemoveDuplicates(a) => a.validate(),
            PluginArgs::LowNodeUtilization(a) => a.validate(),
            PluginArgs::HighNodeUtilization(a) => a.validate(),
            PluginArgs::RemovePodsViolatingInterPodAntiAffinity(a) => a.validate(),
            PluginArgs::RemovePodsViolatingNodeAffinity(a) => a.validate(),
            PluginArgs::RemovePodsViolatingNodeTaints(a) => a.validate(),
            PluginArgs::RemovePodsViolatingTopologySpreadConstraint(a) => a.validate(),
            PluginArgs::RemovePodsHavingTooManyRestarts(a) => a.validate(),
            PluginArgs::PodLifeTime(a) => a.validate(),
            PluginArgs::RemoveFailedPods(a) => a.validate(),
        }
    }

    /// The args struct's own defaults (tests and callers that build args in code). A policy that
    /// enables a plugin without a `pluginConfig` entry gets the descheduler's defaults instead,
    /// which `policy` applies to the values before `from_value`.
    pub fn default_for(s: Strategy) -> PluginArgs {
        match s {
            Strategy::RemoveDuplicates => PluginArgs::RemoveDuplicates(Default::default()),
            Strategy::LowNodeUtilization => PluginArgs::LowNodeUtilization(Default::default()),
            Strategy::HighNodeUtilization => PluginArgs::HighNodeUtilization(Default::default()),
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                PluginArgs::RemovePodsViolatingInterPodAntiAffinity(Default::default())
            }
            Strategy::RemovePodsViolatingNodeAffinity => {
                PluginArgs::RemovePodsViolatingNodeAffinity(Default::default())
            }
            Strategy::RemovePodsViolatingNodeTaints => {
                PluginArgs::RemovePodsViolatingNodeTaints(Default::default())
            }
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                PluginArgs::RemovePodsViolatingTopologySpreadConstraint(Default::default())
            }
            Strategy::RemovePodsHavingTooManyRestarts => {
                PluginArgs::RemovePodsHavingTooManyRestarts(Default::default())
            }
            Strategy::PodLifeTime => PluginArgs::PodLifeTime(Default::default()),
            Strategy::RemoveFailedPods => PluginArgs::RemoveFailedPods(Default::default()),
        }
    }
}

/// The evictions a configured strategy proposes this cycle, each told to `sink` as it is made and
/// answered with what the plan made of it: `LowNodeUtilization` and `HighNodeUtilization` go on to
/// their next candidates when one is declined; the others propose every pod they find either way.
pub fn propose_into(
    args: &PluginArgs,
    view: &View,
    evictor: &Evictor,
    sink: &mut dyn FnMut(Proposal) -> Verdict,
) {
    match args {
        PluginArgs::LowNodeUtilization(a) => low_utilization::propose_into(a, view, evictor, sink),
        PluginArgs::HighNodeUtilization(a) => {
            high_utilization::propose_into(a, view, evictor, sink)
        }
        other => {
            for p in propose(other, view, evictor) {
                sink(p);
            }
        }
    }
}

/// The evictions a configured strategy proposes this cycle, as if the plan made every one.
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
