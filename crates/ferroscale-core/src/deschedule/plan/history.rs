//! What planning remembers between cycles: the last move of each workload, for the cooldown and so
//! that no cycle undoes an earlier one.

use std::collections::HashMap;

use super::Plan;
use crate::deschedule::args::Strategy;
use crate::model::workload::Pod;

/// A workload's last move: when, from which node to which, by which strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub at: i64,
    pub from: String,
    pub to: String,
    pub strategy: Strategy,
}

/// The moves of earlier cycles, kept by the caller between cycles.
#[derive(Debug, Clone, Default)]
pub struct History {
    moves: HashMap<String, Move>,
}

/// How a workload is known across cycles (a replacement pod has a new name): its namespace and
/// controlling owner, or the pod itself when it has none.
pub fn owner_key(pod: &Pod) -> String {
    match (&pod.meta.controller, &pod.meta.controller_name) {
        (Some(kind), Some(name)) => format!("{}/{kind}/{name}", pod.namespace),
        _ => format!("{}/Pod/{}", pod.namespace, pod.name),
    }
}

impl History {
    /// The last move of a workload, if any is remembered.
    pub fn last(&self, owner: &str) -> Option<&Move> {
        self.moves.get(owner)
    }

    /// Remembers the evictions of a plan carried out at `now` (a failed pod's removal is no move).
    pub fn record(&mut self, plan: &Plan, now: i64) {
        for e in plan.evictions.iter().filter(|e| !e.to.is_empty()) {
            self.moves.insert(
                owner_key(&e.pod),
                Move {
                    at: now,
                    from: e.node.clone(),
                    to: e.to.clone(),
                    strategy: e.strategy,
                },
            );
        }
    }

    /// Forgets moves older than `keep_secs` before `now`, so the table does not grow with every
    /// workload ever moved.
    pub fn forget_before(&mut self, now: i64, keep_secs: i64) {
        self.moves.retain(|_, m| m.at + keep_secs > now);
    }

    /// How many workloads it remembers.
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }
}
