//! `simulate`'s descheduler: `run`'s ([`Descheduler`]), evicting through the simulated cluster, run
//! after the autoscaling decisions of the loops its interval says, on the cluster as the loop left it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::Simulation;
use crate::actuator::Acted;
use crate::deschedule::{Plan, Policy, Settings as DescheduleSettings};
use crate::descheduler::{Cycle, Descheduler, DeschedulerSettings, Seen};
use crate::engine::Decisions;
use crate::metrics::DeschedulerMetrics;

impl Simulation {
    /// Runs the descheduler with `policy` after the autoscaling decisions of each loop `interval`
    /// says, as `run` does: its evictions through the simulated cluster, the nodes it empties handed
    /// to scale-down.
    pub fn set_descheduler(
        &mut self,
        policy: Policy,
        interval: Duration,
        plan: DescheduleSettings,
    ) {
        let settings = DeschedulerSettings {
            policy: Arc::new(policy),
            interval,
            plan,
            dry_run: false,
        };
        let metrics = DeschedulerMetrics::unregistered();
        let mut d = Descheduler::with_cluster(settings, self.cluster.clone(), metrics);
        d.hand_emptied_to_scale_down();
        d.know_priority_classes(self.priority_classes.clone());
        self.descheduler = Some(d);
    }

    /// One descheduling cycle at `now` when one is due, on the cluster as it is, after the loop's
    /// decisions `d`: as in `run`, nothing is planned onto `removing` (the nodes being removed,
    /// emptied or whose instance is going away) nor the decisions' `not_destinations`, and the plan
    /// spends only what the decisions' `pdbs_left` allow (the cluster's budgets when the engine left
    /// none: it lists every budget once it counts them). Returns what the cycle did and its plan.
    pub fn deschedule(
        &mut self,
        removing: HashSet<String>,
        d: &Decisions,
        now: i64,
    ) -> Option<(Cycle, Plan)> {
        let desched = self.descheduler.as_mut().filter(|x| x.due(now))?;
        let (nodes, pods, failed, pdbs) = {
            let s = self.cluster.state();
            (
                s.nodes.clone(),
                s.pods.clone(),
                s.failed.clone(),
                s.pdbs.clone(),
            )
        };
        if let Some(u) = &self.usage {
            desched.know_usage(u.now(&nodes, &pods));
        }
        let mut removing = removing;
        removing.extend(d.not_destinations.iter().cloned());
        let seen = Seen {
            nodes: &nodes,
            pods: &pods,
            failed: &failed,
            pdbs: if d.pdbs_left.is_empty() {
                &pdbs
            } else {
                &d.pdbs_left
            },
            removing: &removing,
            ids: &self.cluster,
        };
        // The report says what it did; its log lines, meant for `run`'s operators, stay out.
        Some(tracing::dispatcher::with_default(
            &tracing::Dispatch::none(),
            || futures::executor::block_on(desched.deschedule(&seen, now)),
        ))
    }

    /// Remembers the pods this loop's removals evict, for the descheduler's cooldown.
    pub(super) fn remember_moved(&mut self, acted: &Acted, now: i64) {
        let Some(desched) = self.descheduler.as_mut() else {
            return;
        };
        let state = self.cluster.state();
        let from: HashMap<String, &str> = acted
            .evicting
            .iter()
            .filter_map(|e| Some((e.key(), e.node.as_deref()?)))
            .collect();
        let moved = state
            .pods
            .iter()
            .filter_map(|p| Some((&**p, *from.get(&p.key())?)));
        desched.remember_moved(moved, now);
    }
}
