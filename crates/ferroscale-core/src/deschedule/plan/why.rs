//! Why the plan declines a proposal: typed, for callers to match on; text only through `Display`.

use std::fmt;

use crate::deschedule::args::Strategy;
use crate::deschedule::evictor::Kept;
use crate::engine::predicates::Unfit;

/// Which of the policy's limits a proposal ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `maxNoOfPodsToEvictPerNode`.
    PerNode(u32),
    /// `maxNoOfPodsToEvictPerNamespace`.
    PerNamespace(u32),
    /// `maxNoOfPodsToEvictTotal`.
    Total(u32),
}

/// Why a proposal is declined.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// The evictor keeps it.
    Kept(Kept),
    /// No node other than its own (and those being removed) can take it now: evicted, it would stay
    /// pending or land back where it is. The first refusal is the reason.
    NoPlace(Option<Unfit>),
    /// The only place is the node an earlier cycle moved its workload from: the move would undo it.
    WouldUndo { node: String },
    /// Every node it could go to is one where `strategy`, of this policy, would evict it (or its
    /// sibling) again next cycle: a duplicate, a `ScheduleAnyway` skew, a less preferred node.
    WouldRecreate { strategy: Strategy },
    /// Its workload was moved at `at` and the cooldown has not passed.
    Cooldown { until: i64 },
    /// Another strategy plans to move its workload this cycle.
    Contested { by: Strategy },
    /// A PodDisruptionBudget covering it allows no more disruptions.
    Budget { pdb: String },
    /// One of the policy's limits is reached.
    Limit(Limit),
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Kept(k) => write!(f, "kept: {k}"),
            Why::NoPlace(Some(u)) => write!(f, "no other node can take it: {u}"),
            Why::NoPlace(None) => write!(f, "no other node can take it"),
            Why::WouldUndo { node } => {
                write!(
                    f,
                    "it would go back to {node}, which an earlier cycle moved it from"
                )
            }
            Why::WouldRecreate { strategy } => write!(
                f,
                "wherever it could go, {strategy} would evict it again next cycle"
            ),
            Why::Cooldown { until } => write!(
                f,
                "its workload was moved recently (cooldown until {until})"
            ),
            Why::Contested { by } => write!(f, "{by} moves its workload this cycle"),
            Why::Budget { pdb } => {
                write!(f, "PodDisruptionBudget {pdb} allows no more disruptions")
            }
            Why::Limit(Limit::PerNode(n)) => write!(f, "maxNoOfPodsToEvictPerNode ({n}) reached"),
            Why::Limit(Limit::PerNamespace(n)) => {
                write!(f, "maxNoOfPodsToEvictPerNamespace ({n}) reached")
            }
            Why::Limit(Limit::Total(n)) => write!(f, "maxNoOfPodsToEvictTotal ({n}) reached"),
        }
    }
}
