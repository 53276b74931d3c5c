//! The descheduler in the simulation (`simulate --deschedule-policy`): on the loops its interval says,
//! after the loop's autoscaling decisions are carried out, one cycle plans evictions on the simulated
//! cluster with the core's planner (`ferroscale_core::deschedule::plan`) as `run` plans them on the live
//! one, and carries them out as the cluster would: a failed pod is deleted, a bare pod is gone, a
//! controller's pod is recreated, pending, and bound where the plan's scheduling simulation placed it
//! (the simulated kube-scheduler binds it on the next loop when that node no longer takes it). As in
//! `run`, the nodes `HighNodeUtilization` empties are not evicted pod by pod: the plan names them
//! (`Plan::emptied`) and the simulation hands them to scale-down, which taints, drains and deletes them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::cluster::{bound, SimCluster};
use crate::deschedule::view::removing_nodes;
use crate::deschedule::{plan, Cluster, Eviction, History, Plan, Policy, Settings};
use crate::engine::predicates::fits;
use crate::model::workload::{ContainerState, Pdb, Pod, PodPhase};

/// The descheduler between the simulation's loops: the policy, its cadence and the moves it made.
#[derive(Debug, Clone)]
pub struct SimDescheduler {
    policy: Policy,
    /// `--deschedule-interval`, in seconds.
    interval: i64,
    settings: Settings,
    history: History,
    /// When the last cycle ran (simulated seconds since the epoch).
    last: Option<i64>,
}

impl SimDescheduler {
    pub fn new(policy: Policy, interval: Duration, settings: Settings) -> Self {
        SimDescheduler {
            policy,
            interval: crate::model::duration::secs(interval).max(1),
            settings,
            history: History::default(),
            last: None,
        }
    }

    /// Whether a cycle is due at `now`: the first loop runs one, then each loop the interval has passed
    /// since the last.
    pub fn due(&self, now: i64) -> bool {
        self.last.is_none_or(|l| now - l >= self.interval)
    }

    /// One cycle at `now`: plans on the cluster as it is (`removing`: the nodes the actuator is taking
    /// out or scale-down is emptying), carries the evictions out but those of the emptied nodes (left to
    /// scale-down) and remembers them for the cooldown. Returns the plan, without the evictions left.
    pub fn cycle(
        &mut self,
        cluster: &SimCluster,
        pdbs: &[Pdb],
        removing: &HashSet<String>,
        now: i64,
    ) -> Plan {
        self.last = Some(now);
        let mut planned = {
            let state = cluster.state();
            self.history.settle(&state.nodes, now);
            let removing = removing_nodes(&state.nodes, removing);
            let priority_classes = BTreeMap::new();
            let view = Cluster {
                nodes: &state.nodes,
                pods: &state.pods,
                failed: &state.failed,
                pdbs,
                removing: &removing,
                priority_classes: &priority_classes,
                now,
            };
            // Durations are not part of simulate's output: a clock that stands still keeps it reproducible.
            plan(
                &self.policy,
                &view,
                &self.history,
                &self.settings,
                &crate::clock::FixedClock::default(),
            )
        };
        let handed = planned.hand_over_emptied();
        self.history.hand_over(handed);
        cluster.deschedule(&planned.evictions, now);
        self.history.record(&planned, now);
        self.history
            .forget_before(now, self.settings.cooldown_secs.max(0));
        planned
    }
}

/// A controller's replacement of an evicted pod: the same spec, created at `now`, not yet bound, with
/// fresh containers (no ephemeral ones, no conditions yet).
fn replacement(pod: &Pod, now: i64) -> Pod {
    let mut p = pod.clone();
    p.node_name = None;
    p.meta.created = now;
    p.meta.unschedulable = false;
    p.meta.conditions = Default::default();
    p.meta.containers = pod
        .meta
        .containers
        .iter()
        .filter(|c| !c.ephemeral)
        .map(|c| ContainerState {
            init: c.init,
            ..ContainerState::default()
        })
        .collect::<Vec<_>>()
        .into();
    p
}

impl SimCluster {
    /// Carries a plan's evictions out: a failed pod is deleted; a pod without a controller is gone; a
    /// controller's pod is replaced by a pending one, bound at once on the node the plan placed it on
    /// when it still fits there (the plan's placement scores nodes as the scheduler does; the simulated
    /// scheduler, first fit, binds it next loop otherwise).
    pub fn deschedule(&self, evictions: &[Eviction], now: i64) {
        let mut guard = self.state();
        let state = &mut *guard;
        let same = |e: &Eviction, p: &Pod| p.namespace == e.pod.namespace && p.name == e.pod.name;
        let mut moved: Vec<(String, &str)> = Vec::new();
        for e in evictions {
            if e.pod.meta.phase == PodPhase::Failed {
                state.failed.retain(|p| !same(e, p));
                continue;
            }
            let Some(i) = state.pods.iter().position(|p| same(e, p)) else {
                continue;
            };
            if state.pods[i].meta.controller.is_none() {
                state.pods.remove(i);
            } else {
                state.pods[i] = Arc::new(replacement(&state.pods[i], now));
                moved.push((state.pods[i].key(), e.to.as_str()));
            }
        }
        if moved.is_empty() {
            return;
        }
        let (mut infos, index) = bound(&state.nodes, &state.pods);
        let at: HashMap<String, usize> = state
            .pods
            .iter()
            .enumerate()
            .map(|(i, p)| (p.key(), i))
            .collect();
        for (key, to) in moved {
            let (Some(&i), Some(&j)) = (at.get(&key), index.get(to)) else {
                continue;
            };
            if !infos[j].node.ready || fits(&state.pods[i], &infos, &infos[j]).is_err() {
                continue;
            }
            let p = Arc::make_mut(&mut state.pods[i]);
            p.node_name = Some(to.to_string());
            infos[j].add(Arc::clone(&state.pods[i]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_loop_runs_a_cycle_then_each_loop_the_interval_has_passed() {
        let mut d = SimDescheduler::new(
            Policy::default(),
            Duration::from_secs(300),
            Settings::default(),
        );
        assert!(d.due(1000));
        let cluster = SimCluster::default();
        let planned = d.cycle(&cluster, &[], &HashSet::new(), 1000);
        assert!(planned.evictions.is_empty());
        assert!(!d.due(1010));
        assert!(!d.due(1299));
        assert!(d.due(1300));
    }
}
