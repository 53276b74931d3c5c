//! What planning remembers between cycles: the last move of each workload, for the cooldown and so
//! that no cycle undoes an earlier one. Moves by other methods (the autoscaler's removals: scale-down,
//! consolidation, replacement, notices) are remembered too ([`History::record_disruption`]), so no
//! workload any method moved is moved again within the cooldown.

use std::collections::{HashMap, HashSet};

use super::{Eviction, Plan};
use crate::deschedule::args::Strategy;
use crate::deschedule::view::being_removed;
use crate::model::workload::{Node, Pod};

/// A workload's last move: when, from which node to which (empty when another method moved it: the
/// scheduler places it), by which strategy (None: another method's removal evicted it).
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub at: i64,
    pub from: String,
    pub to: String,
    pub strategy: Option<Strategy>,
}

/// The moves of earlier cycles, kept by the caller between cycles.
#[derive(Debug, Clone, Default)]
pub struct History {
    moves: HashMap<String, Move>,
    /// Moves of the nodes last handed to scale-down (`Plan::hand_over_emptied`): the drain makes
    /// them, so they are remembered only once scale-down has taken their node ([`History::settle`]).
    handed: Vec<Eviction>,
}

/// How a workload is known across cycles (a replacement pod has a new name): its namespace and
/// controlling owner, or the pod itself when it has none.
pub fn owner_key(pod: &Pod) -> String {
    pod.owner_key()
}

impl History {
    /// The last move of a workload, if any is remembered.
    pub fn last(&self, owner: &str) -> Option<&Move> {
        self.moves.get(owner)
    }

    /// Remembers the evictions of a plan carried out at `now` (a failed pod's removal is no move).
    pub fn record(&mut self, plan: &Plan, now: i64) {
        self.record_moves(&plan.evictions, now);
    }

    /// Remembers that another method (a removal draining `from`) evicted a pod of the workload `owner`
    /// (its [`owner_key`]) at `now`.
    pub fn record_disruption(&mut self, owner: String, from: &str, now: i64) {
        self.moves.insert(
            owner,
            Move {
                at: now,
                from: from.to_string(),
                to: String::new(),
                strategy: None,
            },
        );
    }

    /// Keeps the moves of the nodes handed to scale-down until the next cycle's [`History::settle`].
    pub fn hand_over(&mut self, handed: Vec<Eviction>) {
        self.handed = handed;
    }

    /// At the start of a cycle at `now`: the handed-over moves whose node scale-down is taking (it
    /// carries the deletion taint, the actuator's first step) or has taken (gone from `nodes`) are
    /// remembered as made now, so the cooldown covers the pods the drain moved; those of a node
    /// scale-down kept are forgotten (the plan decides anew).
    pub fn settle(&mut self, nodes: &[Node], now: i64) {
        let serving: HashSet<&str> = nodes
            .iter()
            .filter(|n| !being_removed(n))
            .map(|n| n.name.as_str())
            .collect();
        let taken: Vec<Eviction> = std::mem::take(&mut self.handed)
            .into_iter()
            .filter(|e| !serving.contains(e.node.as_str()))
            .collect();
        self.record_moves(&taken, now);
    }

    fn record_moves(&mut self, evictions: &[Eviction], now: i64) {
        for e in evictions.iter().filter(|e| !e.to.is_empty()) {
            self.moves.insert(
                owner_key(&e.pod),
                Move {
                    at: now,
                    from: e.node.clone(),
                    to: e.to.clone(),
                    strategy: Some(e.strategy),
                },
            );
        }
    }

    /// Forgets moves older than `keep_secs` before `now`, so the table does not grow with every
    /// workload ever moved.
    pub fn forget_before(&mut self, now: i64, keep_secs: i64) {
        self.moves.retain(|_, m| m.at + keep_secs > now);
    }

    /// The workloads a descheduling strategy moved less than `within` seconds before `now`: what the
    /// autoscaler's own methods leave alone meanwhile (`Memory::descheduled`).
    pub fn moved_within(&self, now: i64, within: i64) -> std::collections::HashSet<String> {
        self.moves
            .iter()
            .filter(|(_, m)| m.strategy.is_some() && now.saturating_sub(m.at) < within)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// How many workloads it remembers.
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }
}
