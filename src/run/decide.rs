//! The loop's second stage: the pure engine on what was observed. The engine's settings and what it
//! remembers between loops live here; the actuator's bookkeeping (failed scale-ups, removals started
//! or failed) writes to the same memory, so the next decision sees it.

use std::collections::HashMap;
use std::time::Instant;

use crate::engine::{run_once_kept, Decisions, Memory, Placement, Settings};
use crate::k8s::index::Index;
use crate::metrics::LoopMetrics;

use super::observe::Observed;

/// The engine, its settings and its memory.
pub struct Decider {
    pub(super) settings: Settings,
    /// What the engine remembers between loops.
    pub(super) memory: Memory,
    /// Which pods are bound where as of the last loop: the next reads only the pods that changed.
    placement: Placement,
    record: LoopMetrics,
}

impl Decider {
    pub fn new(settings: Settings, record: LoopMetrics) -> Self {
        Decider {
            settings,
            memory: Memory::default(),
            placement: Placement::default(),
            record,
        }
    }

    /// The engine's decisions on `observed` (with the index it was read from and the removals in
    /// flight) at `now`; the priority tiers read this loop replace the settings' own.
    pub fn decide(
        &mut self,
        observed: &Observed,
        index: &Index,
        removing: &HashMap<String, bool>,
        now: i64,
    ) -> Decisions {
        if let Some(tiers) = &observed.priorities {
            self.settings.priorities = tiers.clone();
        }
        // Pod removals before this process started are unknown: consolidation's `after` counts from
        // its first loop for every node then (the same for a new leader).
        self.memory.pod_changes_known_from.get_or_insert(now);
        let world = observed.world(index, removing);
        let t = Instant::now();
        let clock = &crate::time::MONOTONIC;
        let d = run_once_kept(
            &world,
            &self.settings,
            &mut self.memory,
            now,
            clock,
            &mut self.placement,
        );
        self.record.observe("engine", t.elapsed());
        d
    }
}
