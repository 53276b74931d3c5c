//! Reading the nodes' intents back before the first loop (a restart, a new leader): each is resumed
//! (the engine's memory restored, so it finishes the action under today's rules), rolled back (the
//! drain's taint and cordon undone, the annotation cleared) or found finished; each outcome is an
//! Event on its node and a count in `ferroscale_intents_reconciled_total{action,outcome}`.

use std::collections::HashSet;

use crate::actuator::{disruption_taints, Cluster, EventKind, Lookup, Mark, Regarding};
use crate::engine::intents::{self, Outcome, Reconciled};
use crate::model::instance_id;

use super::Runner;
use crate::k8s::cluster::LiveCluster;
use crate::metrics::IntentMetrics;

impl Runner {
    /// Reconciles every intent on the nodes, then takes off the deletion taints nothing owns (left
    /// by a version without intents, or by cluster-autoscaler), as upstream cleans up when it starts
    /// acting: one reading of the index and one cloud refresh serve both. `now` is the loop's clock.
    /// Not in dry-run.
    pub async fn start_acting(&mut self, now: i64) {
        if self.run.dry_run {
            return;
        }
        self.observer.update_index(now);
        let (nodes, groups) = self.observer.intent_facts().await;
        let memory = &mut self.decider.memory;
        let outcomes = intents::reconcile(&nodes, &groups, memory, now);
        self.observer.restored = memory.noticed.clone();
        let index = &self.observer.index;
        if let Some(queue) = self.observer.interruptions.as_mut() {
            queue.restore(
                memory
                    .noticed
                    .iter()
                    .filter_map(|(name, (reason, _))| {
                        let (n, _) = index.nodes.get(name)?;
                        Some((instance_id(&n.provider_id).to_string(), *reason))
                    })
                    .collect(),
            );
        }
        let cluster = self.actuator.cluster().clone();
        let record = self.publisher.record.intents.clone();
        for r in &outcomes {
            let uid = self.observer.index.node(&r.node).and_then(|n| n.uid);
            undo(&cluster, &record, r, uid, now).await;
        }
        // The disruption taint stays on the old nodes of the plans resumed, and goes from any other
        // (a plan rolled back, or one whose intent was lost).
        let wanted = intents::desired(&self.decider.memory);
        let removing = self.actuator.in_flight();
        let busy = |n: &str| removing.contains_key(n);
        disruption_taints(&cluster, busy, &wanted, &self.observer.index, now).await;
        // From the same reading: deletion taints no intent accounts for, unless their instance is
        // terminating (untainted, pods would land on it and die undrained).
        let reconciled: HashSet<&str> = outcomes.iter().map(|r| r.node.as_str()).collect();
        let stale = nodes
            .iter()
            .filter(|f| !reconciled.contains(f.name.as_str()))
            .filter(|f| {
                self.observer
                    .index
                    .nodes
                    .get(&f.name)
                    .is_some_and(|(n, _)| n.marked_for_deletion())
            })
            .filter(|f| {
                if f.terminating {
                    tracing::info!(node = %f.name, "deletion taint kept: its instance is terminating");
                }
                !f.terminating
            })
            .map(|f| f.name.clone())
            .collect();
        self.actuator.clean_stale_taints(stale).await;
    }
}

/// Carries one outcome out on the cluster and tells it.
async fn undo(
    cluster: &LiveCluster,
    record: &IntentMetrics,
    r: &Reconciled,
    uid: Option<String>,
    now: i64,
) {
    if cluster.may_act("reconciling intents").is_err() {
        return;
    }
    let mut failed = None;
    if r.untaint {
        if let Err(e) = cluster
            .set_taint(&r.node, Mark::ToBeDeleted, false, now)
            .await
        {
            failed.get_or_insert(e);
        }
    }
    if r.uncordon {
        if let Err(e) = cluster.cordon(&r.node, false).await {
            failed.get_or_insert(e);
        }
    }
    if r.clear && failed.is_none() {
        if let Err(e) = cluster.set_intent(&r.node, None).await {
            failed.get_or_insert(e);
        }
    }
    let action = r.action.map_or("unknown", |a| a.as_str());
    if let Some(e) = failed {
        // The intent stays: the next start (or the stale-taint clean-up) tries again.
        tracing::warn!(node = %r.node, action, error = %e, "intent not reconciled");
        return;
    }
    record.reconciled(action, r.outcome.as_str());
    if r.action == Some(intents::Action::Surge) {
        return;
    }
    let (kind, reason, note) = match &r.outcome {
        Outcome::Resumed => (
            EventKind::Normal,
            "IntentResumed",
            format!("{action} under way before a restart: resumed under today's rules"),
        ),
        Outcome::RolledBack(why) => (
            EventKind::Warning,
            "IntentRolledBack",
            format!("{action} under way before a restart rolled back: {why}"),
        ),
        Outcome::Finished => (
            EventKind::Normal,
            "IntentFinished",
            format!("{action} under way before a restart: its instance is already going"),
        ),
    };
    tracing::info!(node = %r.node, action, outcome = r.outcome.as_str(), "{note}");
    cluster.event(
        Regarding::Node {
            name: r.node.clone(),
            uid,
        },
        kind,
        reason,
        note,
    );
}
