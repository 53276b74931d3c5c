//! What the policy's own strategies would evict again: a plan places no pod where one of them would
//! propose it (or its sibling) next cycle. The scheduler's filters already keep required node
//! affinity, required inter-pod anti-affinity and `DoNotSchedule` spread; these are the rules they
//! leave out: `RemoveDuplicates` (two pods of one owner on a node, above the owner's average),
//! `ScheduleAnyway` spread when a spread strategy balances it, and preferred node affinity when
//! `RemovePodsViolatingNodeAffinity` enforces it (only the nodes the pod prefers most).

use std::sync::Arc;

use super::sim::Sim;
use crate::deschedule::args::Strategy;
use crate::deschedule::policy::Policy;
use crate::deschedule::strategies::node_affinity::{
    weight, RemovePodsViolatingNodeAffinityArgs, PREFERRED,
};
use crate::deschedule::strategies::remove_duplicates::{crowded, RemoveDuplicatesArgs};
use crate::deschedule::strategies::scope::Scope;
use crate::deschedule::strategies::spread::RemovePodsViolatingTopologySpreadConstraintArgs;
use crate::deschedule::strategies::PluginArgs;
use crate::model::workload::{Node, Pod};

/// The policy's strategies whose rules a placement must keep.
#[derive(Default)]
pub(super) struct Rules<'a> {
    duplicates: Vec<&'a RemoveDuplicatesArgs>,
    soft_spread: Vec<&'a RemovePodsViolatingTopologySpreadConstraintArgs>,
    preferred: Vec<&'a RemovePodsViolatingNodeAffinityArgs>,
}

impl<'a> Rules<'a> {
    pub fn new(policy: &'a Policy) -> Self {
        let mut out = Rules::default();
        for args in policy.profiles.iter().flat_map(|p| &p.strategies) {
            match args {
                PluginArgs::RemoveDuplicates(a) => out.duplicates.push(a),
                PluginArgs::RemovePodsViolatingTopologySpreadConstraint(a)
                    if a.balances_schedule_anyway() =>
                {
                    out.soft_spread.push(a)
                }
                PluginArgs::RemovePodsViolatingNodeAffinity(a)
                    if a.node_affinity_type.iter().any(|t| t == PREFERRED) =>
                {
                    out.preferred.push(a)
                }
                _ => {}
            }
        }
        out
    }

    /// The pod as its placement must see it: its `ScheduleAnyway` constraints kept as hard ones
    /// when a spread strategy balances them for it (None: as it is).
    pub fn harden(&self, pod: &Pod) -> Option<Pod> {
        let balanced = self
            .soft_spread
            .iter()
            .any(|a| Scope::new(&a.namespaces, &a.label_selector).admits(pod));
        if !balanced || pod.meta.soft_spread.is_empty() {
            return None;
        }
        let mut hard = pod.clone();
        hard.spread.extend(pod.meta.soft_spread.iter().cloned());
        Some(hard)
    }

    /// `candidates` without the nodes where the pod would be evicted again, and the strategy that
    /// took some away (None: none was).
    pub fn narrow(
        &self,
        pod: &Pod,
        sim: &Sim,
        mut candidates: Vec<usize>,
    ) -> (Vec<usize>, Option<Strategy>) {
        let mut by = None;
        if !self.duplicates.is_empty() && !pod.meta.owners.is_empty() {
            let nodes: Vec<(&Node, &[Arc<Pod>])> =
                (0..sim.len()).map(|j| (sim.node(j), sim.pods(j))).collect();
            for a in &self.duplicates {
                let out = crowded(a, pod, &nodes);
                let before = candidates.len();
                candidates.retain(|j| !out.contains(j));
                if candidates.len() < before {
                    by = by.or(Some(Strategy::RemoveDuplicates));
                }
            }
        }
        let preferred = !pod.meta.preferred_node_affinity.is_empty()
            && self
                .preferred
                .iter()
                .any(|a| Scope::new(&a.namespaces, &a.label_selector).admits(pod));
        if preferred {
            let best = (0..sim.len())
                .filter(|&j| sim.node(j).ready)
                .map(|j| weight(pod, sim.node(j)))
                .max()
                .unwrap_or(0);
            let before = candidates.len();
            candidates.retain(|&j| weight(pod, sim.node(j)) >= best);
            if candidates.len() < before {
                by = by.or(Some(Strategy::RemovePodsViolatingNodeAffinity));
            }
        }
        (candidates, by)
    }
}
