//! Carrying one loop's decisions out, the same way for `run` and `simulate`: instances given up,
//! capacity cancelled, scale-ups, nodes taken out (scale-down, drift and expiry, interruption notices,
//! all through [`removal`]'s one procedure) and the bookkeeping that follows (the engine's memory of
//! failed scale-ups and removals). The cluster side is a [`Cluster`]: the live Kubernetes API for `run`,
//! the simulated cluster for `simulate`. Removals report back as [`Finished`] messages on a channel;
//! the loop books them at its next start, so nothing is shared with the tasks but that channel.

pub mod cluster;
mod marks;
mod notices;
pub mod removal;

pub use cluster::{
    Attempt, Cluster, DrainSettings, EventKind, Evictee, Lookup, Mark, NodeRef, Regarding,
};
pub use marks::disruption_taints;
pub use removal::{Finished, Pace, Removal, Removing, SharedStage, Stage, Why};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::cloud::Cloud;
use crate::engine::intents::Intent;
use crate::engine::reasons::InstanceFault;
use crate::engine::upstream::CLOUD_PROVIDER_ERROR;
use crate::engine::{Decisions, DeleteInstance, Memory, ScaleDown};
use crate::error::Error;
use crate::metrics::LoopMetrics;
use removal::Remover;

/// What one `act` did, beyond what the cloud and the cluster now show.
#[derive(Debug, Default)]
pub struct Acted {
    /// Per scale-up of the decisions, in order: how many of its nodes the cloud could not launch now
    /// (all of them when the call failed).
    pub unlaunched: Vec<i32>,
    /// Per instance of the decisions' `delete_instances`: whether it was deleted.
    pub deleted_instances: Vec<bool>,
    /// Per entry of the decisions' `cancel`: whether the target was lowered.
    pub cancelled: Vec<bool>,
    /// The first failed scale-up (the others were still tried).
    pub error: Option<Error>,
    /// The pods whose eviction a removal started this loop (each with the node it leaves): the
    /// descheduler remembers their workloads as moved, for its cooldown.
    pub evicting: Vec<Evictee>,
}

/// Carries decisions out against a cloud and a cluster.
pub struct Actuator<C: Cluster> {
    remover: Remover<C>,
    /// Removals started and not finished, by node.
    removing: HashMap<String, Removing>,
    /// Each removal's stage and its task (when in the background), to supersede it by a faster one.
    stages: HashMap<String, (SharedStage, Option<tokio::task::AbortHandle>)>,
    /// Nodes a notice's removal was started for, counted in `ferroscale_nodes_disrupted_total` once;
    /// forgotten when a removal of theirs succeeds.
    notified: BTreeSet<String>,
    /// Nodes whose deletion taint a failed removal could not take off.
    untaint: BTreeSet<String>,
    finished: mpsc::UnboundedReceiver<Finished>,
    /// Messages `settle` received and the loop has not booked yet.
    received: Vec<Finished>,
    /// Removals with pods to evict run here, in the background (`run`); without it they run to their
    /// end inside `act` (`simulate`, whose clock does not move while it acts).
    background: Option<JoinSet<()>>,
    /// How long one loop may spend on soft taints (`--max-bulk-soft-taint-time`).
    soft_taint_time: std::time::Duration,
    /// The pods whose eviction a removal started during this `act`.
    evicting: Vec<Evictee>,
}

impl<C: Cluster> Actuator<C> {
    /// An actuator on `cloud` and `cluster`; `background` runs drains as tasks (a tokio runtime needed).
    pub fn new(
        cloud: Arc<dyn Cloud>,
        cluster: C,
        record: LoopMetrics,
        drain: DrainSettings,
        background: bool,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Actuator {
            remover: Remover {
                cloud,
                cluster,
                record,
                drain,
                finished: tx,
            },
            removing: HashMap::new(),
            stages: HashMap::new(),
            notified: BTreeSet::new(),
            untaint: BTreeSet::new(),
            finished: rx,
            received: Vec::new(),
            background: background.then(JoinSet::new),
            soft_taint_time: std::time::Duration::from_secs(3),
            evicting: Vec::new(),
        }
    }

    /// Sets how long one loop may spend on soft taints (the loop's `--max-bulk-soft-taint-time`).
    pub fn set_soft_taint_time(&mut self, budget: std::time::Duration) {
        self.soft_taint_time = budget;
    }

    /// The cluster side.
    pub fn cluster(&self) -> &C {
        &self.remover.cluster
    }

    /// The cluster side, to change how it acts (the Lease's fence once the loop campaigns).
    pub fn cluster_mut(&mut self) -> &mut C {
        &mut self.remover.cluster
    }

    /// Removals in flight, as the engine's world takes them (node → whether it is drained).
    pub fn in_flight(&self) -> HashMap<String, bool> {
        self.removing
            .iter()
            .map(|(n, r)| (n.clone(), r.drained))
            .collect()
    }

    /// Books the removals that finished since the last loop: a failed scale-down starts
    /// `--scale-down-delay-after-failure`, a taint left behind is tried again.
    pub fn book(&mut self, memory: &mut Memory, now: i64) -> Vec<Finished> {
        let mut done = std::mem::take(&mut self.received);
        while let Ok(f) = self.finished.try_recv() {
            done.push(f);
        }
        if let Some(tasks) = &mut self.background {
            while tasks.try_join_next().is_some() {}
        }
        for f in &done {
            self.removing.remove(&f.node);
            self.stages.remove(&f.node);
            if f.result.is_ok() {
                self.notified.remove(&f.node);
            }
            if f.reason.is_scale_down() && f.result.is_err() {
                memory.last_scale_down_failure = Some(now);
            }
            if f.still_tainted {
                self.untaint.insert(f.node.clone());
            }
        }
        done
    }

    /// Waits for the removals running in the background; their outcomes, in order of completion, are
    /// booked by the next loop.
    pub async fn settle(&mut self) -> Vec<Result<(), String>> {
        if let Some(tasks) = &mut self.background {
            while tasks.join_next().await.is_some() {}
        }
        while let Ok(f) = self.finished.try_recv() {
            self.received.push(f);
        }
        self.received
            .iter()
            .map(|f| f.result.as_ref().map(|_| ()).map_err(ToString::to_string))
            .collect()
    }

    /// Stops the removals running in the background (leadership lost, shutdown).
    pub fn abort(&mut self) {
        if let Some(tasks) = &mut self.background {
            tasks.abort_all();
        }
    }

    /// Carries the decisions out. Every change first checks this replica may act. A failed scale-up
    /// backs its group off and is returned after everything else was tried, so one bad group does not
    /// stop the others; a failed clean-up (instances, capacity given up) is tried again by a later loop.
    pub async fn act(
        &mut self,
        d: &Decisions,
        view: &dyn Lookup,
        memory: &mut Memory,
        now: i64,
    ) -> Acted {
        // Intents before anything they announce (a surge, a drain), and the old nodes of the plans
        // they name tainted before their surge is asked for.
        if let Some(wanted) = &d.intents {
            self.write_these(wanted, view).await;
            let removing = |n: &str| self.removing.contains_key(n);
            marks::disruption_taints(self.cluster(), removing, wanted, view, now).await;
        }
        let mut acted = Acted {
            deleted_instances: self.delete_instances(&d.delete_instances).await,
            ..Acted::default()
        };
        for c in &d.cancel {
            let cloud = &self.remover.cloud;
            let outcome = match self.cluster().may_act("lowering a target size") {
                Ok(()) => {
                    let guard = self.cluster().write_guard();
                    cloud.decrease_target_size(&c.group, -c.count, &guard).await
                }
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => {
                    tracing::info!(group = %c.group, count = c.count, reason = %c.reason, "gave up capacity not delivered");
                    self.remover
                        .record
                        .scale_up_failed(c.reason.code(), c.count.max(0) as u64);
                }
                Err(ref e) => {
                    tracing::warn!(group = %c.group, error = %e, "giving up undelivered capacity failed; a later loop tries again")
                }
            }
            acted.cancelled.push(outcome.is_ok());
        }
        let t = Instant::now();
        for s in &d.scale_up {
            let (unlaunched, error) = self.scale_up(s, view, memory, now).await;
            acted.unlaunched.push(unlaunched);
            if let Some(e) = error {
                acted.error.get_or_insert(e);
            }
        }
        if !d.scale_up.is_empty() {
            self.remover.record.observe("scaleUp", t.elapsed());
        }
        self.disrupt(&d.disruptions, d.intents.as_ref(), view, now)
            .await;
        let t = Instant::now();
        let mut started = false;
        for s in &d.scale_down {
            let plan = d
                .intents
                .as_ref()
                .and_then(|i| i.get(&s.node))
                .filter(|i| i.is_plan())
                .cloned();
            let intent = plan.unwrap_or_else(|| {
                let mut i = Intent::scale_down(&s.node, now);
                i.reason = s.reason.disruption;
                i
            });
            started |= self.scale_down(s, intent, view, now).await;
        }
        if started {
            // Upstream's lastScaleDownDeleteTime: the loop that started deleting.
            memory.last_scale_down_delete = Some(now);
        }
        if !d.scale_down.is_empty() {
            self.remover.record.observe("scaleDown", t.elapsed());
        }
        marks::soft_taints(self.cluster(), d, self.soft_taint_time, now).await;
        acted.evicting = std::mem::take(&mut self.evicting);
        acted
    }

    /// Deletes the instances that failed or never registered, one call per group.
    async fn delete_instances(&self, instances: &[DeleteInstance]) -> Vec<bool> {
        let mut by_group: BTreeMap<&str, Vec<&DeleteInstance>> = BTreeMap::new();
        for i in instances {
            by_group.entry(&i.group).or_default().push(i);
        }
        let mut deleted: HashMap<&str, bool> = HashMap::new();
        for (group, instances) in by_group {
            let ids: Vec<String> = instances.iter().map(|i| i.instance.clone()).collect();
            let outcome = match self.cluster().may_act("deleting instances") {
                Ok(()) => {
                    let guard = self.cluster().write_guard();
                    self.remover.cloud.delete_nodes(group, &ids, &guard).await
                }
                Err(e) => Err(e),
            };
            match &outcome {
                Ok(()) => self.record_failed_creations(&instances),
                Err(e) => {
                    tracing::warn!(group, error = %e, "deleting unregistered instances failed; a later loop tries again")
                }
            }
            for i in instances {
                deleted.insert(&i.instance, outcome.is_ok());
            }
        }
        instances
            .iter()
            .map(|i| deleted.get(i.instance.as_str()).copied().unwrap_or(false))
            .collect()
    }

    /// One scale-up: the call, its events and metrics, or the group's backoff. Returns how many nodes
    /// the cloud could not launch now, and the error of a failed call.
    async fn scale_up(
        &self,
        s: &crate::engine::ScaleUp,
        view: &dyn Lookup,
        memory: &mut Memory,
        now: i64,
    ) -> (i32, Option<Error>) {
        let cloud = &self.remover.cloud;
        let before = cloud.snapshot().group(&s.group).ok().cloned();
        let outcome = match self.cluster().may_act("increasing a group") {
            Ok(()) => {
                let guard = self.cluster().write_guard();
                cloud.increase_size(&s.group, s.delta, &guard).await
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => {
                self.remover.record.scaled_up(s.delta as u64, now);
                let (from, max) = before
                    .as_ref()
                    .map_or((0, 0), |g| (g.target_size, g.max_size));
                let note = format!(
                    "pod triggered scale-up: [{{{} {}->{} (max: {})}}]",
                    s.group,
                    from,
                    from + s.delta,
                    max
                );
                for p in s.pods.iter().filter_map(|k| view.pod(k)) {
                    self.cluster().event(
                        Regarding::Pod(p),
                        EventKind::Normal,
                        "TriggeredScaleUp",
                        note.clone(),
                    );
                }
                // What the cloud could not launch shows now; the engine gives it up and backs the
                // group off in the next loop.
                let placeholders = |g: Option<&crate::model::NodeGroup>| {
                    g.map_or(0, |g| g.placeholder_count() as i32)
                };
                let after = placeholders(cloud.snapshot().group(&s.group).ok().map(|g| &**g));
                ((after - placeholders(before.as_deref())).max(0), None)
            }
            Err(e) => {
                tracing::warn!(group = %s.group, delta = s.delta, error = %e, "scale-up failed; backing the group off");
                memory.scale_up_failed(&s.group, CLOUD_PROVIDER_ERROR, now);
                self.remover
                    .record
                    .scale_up_failed(CLOUD_PROVIDER_ERROR, s.delta.max(0) as u64);
                (s.delta, Some(e))
            }
        }
    }

    /// Starts one scale-down; false when its node is no longer there.
    async fn scale_down(
        &mut self,
        s: &ScaleDown,
        intent: Intent,
        view: &dyn Lookup,
        now: i64,
    ) -> bool {
        let Some(node) = view.node(&s.node) else {
            return false;
        };
        let removal = Removal {
            node: s.node.clone(),
            uid: node.uid,
            group: s.group.clone(),
            provider_id: node.provider_id,
            pods: self.bound_to(&s.node, &s.evict, view),
            left: s.left.clone(),
            daemon_sets: self.bound_to(&s.node, &s.daemon_sets, view),
            reason: Why::ScaleDown(s.reason.clone()),
            pace: Pace::Drain,
            stage: SharedStage::default(),
            intent,
        };
        self.remover.record.activity("scaleDown", now);
        let background = !(removal.pods.is_empty() && removal.daemon_sets.is_empty());
        self.start(removal, now, background).await;
        true
    }

    /// The pods of `keys` a removal of `node` evicts: only those bound to `node` now, as the loop's
    /// view has them (a pod gone from the view is left out, as it needs no eviction). Any other (on
    /// another node, or pending) was named by mistake: it is refused, logged as a bug and counted
    /// (`ferroscale_evictions_refused_total{reason="not_on_node"}`).
    pub(crate) fn bound_to(&self, node: &str, keys: &[String], view: &dyn Lookup) -> Vec<Evictee> {
        let mut pods = Vec::with_capacity(keys.len());
        for p in keys.iter().filter_map(|k| view.pod(k)) {
            if p.node.as_deref() == Some(node) {
                pods.push(p);
                continue;
            }
            tracing::error!(pod = %p.key(), node, bound_to = ?p.node, "bug: an eviction named a pod not bound to the node its removal takes; refused");
            self.remover.record.eviction_refused("not_on_node");
        }
        pods
    }

    /// Records the removal as in flight and runs it: as a task when `background` allows and there is
    /// a runtime to run it, else to its end now.
    async fn start(&mut self, removal: Removal, now: i64, background: bool) {
        self.removing.insert(
            removal.node.clone(),
            Removing {
                drained: !removal.pods.is_empty(),
                reason: removal.reason.clone(),
                since: now,
                pace: removal.pace,
            },
        );
        self.evicting.extend(removal.pods.iter().cloned());
        let node = removal.node.clone();
        let stage = removal.stage.clone();
        let job = self.remover.clone().remove(removal, now);
        match (&mut self.background, background) {
            (Some(tasks), true) => {
                let task = tasks.spawn(job);
                self.stages.insert(node, (stage, Some(task)));
            }
            _ => {
                self.stages.insert(node, (stage, None));
                job.await
            }
        }
    }

    /// Brings the nodes' intents to `wanted`: each loop's decisions, and right after a descheduling
    /// cycle (its emptied nodes' intents would otherwise wait for the next loop).
    pub async fn write_these(&self, wanted: &BTreeMap<String, Intent>, view: &dyn Lookup) {
        marks::write_intents(self.cluster(), &self.removing, wanted, view).await;
    }

    /// Tries again to take off the deletion taints failed removals could not remove.
    pub async fn retry_untaint(&mut self) {
        if self.untaint.is_empty() || self.cluster().may_act("untainting").is_err() {
            return;
        }
        for name in std::mem::take(&mut self.untaint) {
            match self
                .cluster()
                .set_taint(&name, Mark::ToBeDeleted, false, 0)
                .await
            {
                Ok(()) => {
                    tracing::info!(node = %name, "removed the deletion taint of a failed removal")
                }
                Err(e) => {
                    tracing::warn!(node = %name, error = %e, "deletion taint still not removed");
                    self.untaint.insert(name);
                }
            }
        }
    }

    /// Takes the deletion taint off `tainted` nodes no removal of this replica is working on: left by a
    /// replica that stopped mid-drain (or a leader before this one), as upstream cleans up when it
    /// starts acting.
    pub async fn clean_stale_taints(&mut self, tainted: Vec<String>) {
        if self.cluster().may_act("untainting").is_err() {
            return;
        }
        for name in tainted {
            if self.removing.contains_key(&name) {
                continue;
            }
            match self
                .cluster()
                .set_taint(&name, Mark::ToBeDeleted, false, 0)
                .await
            {
                Ok(()) => tracing::info!(node = %name, "removed a stale deletion taint"),
                Err(e) => tracing::warn!(node = %name, error = %e, "stale deletion taint kept"),
            }
        }
    }

    /// Records one group's deleted instances as upstream does: a failed scale-up per error code with
    /// its nodes, and those that never registered as old unregistered nodes removed.
    fn record_failed_creations(&self, instances: &[&DeleteInstance]) {
        let mut by_code: BTreeMap<&str, u64> = BTreeMap::new();
        for i in instances {
            *by_code.entry(i.reason.code()).or_default() += 1;
        }
        let record = &self.remover.record;
        for (code, nodes) in by_code {
            record.scale_up_failed(code, nodes);
        }
        let unregistered = instances
            .iter()
            .filter(|i| matches!(i.reason, InstanceFault::NotRegistered { .. }))
            .count();
        record.unregistered_removed(unregistered as u64);
    }
}
