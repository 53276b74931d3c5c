//! Why the plan declines a proposal: typed, for callers to match on; text only through `Display`.

use std::collections::BTreeMap;
use std::fmt;

use crate::deschedule::args::Strategy;
use crate::deschedule::evictor::Kept;
use crate::engine::predicates::Unfit;

/// What kept a pod off each node it could have gone to: every refusal with how many nodes gave it,
/// most nodes first (a zonal volume on three nodes, a taint on one), so a decline names what blocks
/// it on each kind of node rather than one node's refusal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blocked(pub Vec<(Unfit, u32)>);

impl Blocked {
    /// The refusals, counted per node, in the order above.
    pub fn of(refusals: impl IntoIterator<Item = Unfit>) -> Self {
        let mut counts: BTreeMap<Unfit, u32> = BTreeMap::new();
        for u in refusals {
            *counts.entry(u).or_default() += 1;
        }
        let mut out: Vec<(Unfit, u32)> = counts.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Blocked(out)
    }

    /// The scheduler filters that blocked it, each once, most nodes first.
    pub fn filters(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for (u, _) in &self.0 {
            if !out.contains(&u.filter()) {
                out.push(u.filter());
            }
        }
        out
    }
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (u, n)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let nodes = if *n == 1 { "node" } else { "nodes" };
            write!(f, "{u} on {n} {nodes} ({})", u.filter())?;
        }
        Ok(())
    }
}

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
    /// pending or land back where it is. Each node's refusal, grouped.
    NoPlace(Blocked),
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
            Why::NoPlace(b) if b.0.is_empty() => write!(f, "no other node can take it"),
            Why::NoPlace(b) => write!(f, "no other node can take it: {b}"),
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
