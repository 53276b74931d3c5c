//! Carrying one loop's decisions out: instances given up, scale-ups, NotTriggerScaleUp events, node
//! removals started in the background, and the clean-up of deletion taints a previous leader left.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::Api;
use kube::runtime::events::EventType;

use super::events::pod_ref;
use super::removal::{DrainContext, Removal};
use super::{Runner, NOT_TRIGGERED_REPEAT};
use crate::engine::reasons::InstanceFault;
use crate::engine::upstream::CLOUD_PROVIDER_ERROR;
use crate::engine::{Decisions, DeleteInstance};
use crate::error::Result;
use crate::k8s::drain::{self, Evictee};
use crate::k8s::index::Index;

impl Runner {
    /// Carries the decisions out. Every mutation first checks this replica still leads. A failed
    /// scale-up is logged, recorded and returned after everything else was tried, so one bad group does
    /// not stop the others; a failed clean-up (instances, capacity given up) is logged and tried again
    /// by a later loop, never a loop error.
    pub(super) async fn act(&mut self, d: &Decisions, index: &Index, now: i64) -> Result<()> {
        let mut first_error = None;
        let evictee = |key: &str| {
            index.pods.get(key).map(|(p, x)| Evictee {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                uid: x.uid.clone(),
                grace_period: p.meta.grace_period,
            })
        };

        // Instances that failed or never registered.
        let mut by_group: BTreeMap<&str, Vec<&DeleteInstance>> = BTreeMap::new();
        for i in &d.delete_instances {
            by_group.entry(&i.group).or_default().push(i);
        }
        for (group, instances) in by_group {
            let ids: Vec<String> = instances.iter().map(|i| i.instance.clone()).collect();
            let outcome = match self.fence.check("deleting instances") {
                Ok(()) => self.cloud.delete_nodes(group, &ids).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => self.record_failed_creations(&instances),
                Err(e) => {
                    tracing::warn!(group, error = %e, "deleting unregistered instances failed; a later loop tries again")
                }
            }
        }

        // Capacity not delivered, given up.
        for c in &d.cancel {
            let outcome = match self.fence.check("lowering a target size") {
                Ok(()) => self.cloud.decrease_target_size(&c.group, -c.count).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => {
                    tracing::info!(group = %c.group, count = c.count, reason = %c.reason, "gave up capacity not delivered");
                    self.record
                        .scale_up_failed(c.reason.code(), c.count.max(0) as u64);
                }
                Err(e) => {
                    tracing::warn!(group = %c.group, error = %e, "giving up undelivered capacity failed; a later loop tries again")
                }
            }
        }

        // Scale-ups.
        let t = Instant::now();
        for s in &d.scale_up {
            let before = self
                .cloud
                .snapshot()
                .group(&s.group)
                .map(|g| (g.target_size, g.max_size));
            let outcome = match self.fence.check("increasing a group") {
                Ok(()) => self.cloud.increase_size(&s.group, s.delta).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => {
                    self.record.scaled_up(s.delta as u64, now);
                    let (from, max) = before.unwrap_or((0, 0));
                    let note = format!(
                        "pod triggered scale-up: [{{{} {}->{} (max: {})}}]",
                        s.group,
                        from,
                        from + s.delta,
                        max
                    );
                    for p in s.pods.iter().filter_map(|k| evictee(k)) {
                        self.events.send(
                            pod_ref(&p),
                            EventType::Normal,
                            "TriggeredScaleUp",
                            note.clone(),
                        );
                    }
                }
                Err(e) => {
                    tracing::warn!(group = %s.group, delta = s.delta, error = %e, "scale-up failed; backing the group off");
                    self.memory
                        .scale_up_failed(&s.group, CLOUD_PROVIDER_ERROR, now);
                    self.record
                        .scale_up_failed(CLOUD_PROVIDER_ERROR, s.delta.max(0) as u64);
                    first_error.get_or_insert(e);
                }
            }
        }
        if !d.scale_up.is_empty() {
            self.observe("scaleUp", t);
        }

        // Pods no scale-up helps.
        let mut seen = HashSet::new();
        for (key, reason) in d.not_triggered() {
            seen.insert(key.clone());
            let repeat = match self.not_triggered.get(key) {
                Some((r, at)) => r != reason || now - at >= NOT_TRIGGERED_REPEAT,
                None => true,
            };
            if let (true, Some(p)) = (repeat, evictee(key)) {
                self.events.send(
                    pod_ref(&p),
                    EventType::Normal,
                    "NotTriggerScaleUp",
                    format!("pod didn't trigger scale-up: {reason}"),
                );
                self.not_triggered
                    .insert(key.clone(), (reason.clone(), now));
            }
        }
        self.not_triggered.retain(|k, _| seen.contains(k));

        // Nodes whose instance is going away: out of service at once.
        self.disrupt(&d.disruptions, index, now);

        // Scale-downs: empty nodes now, the others drained in the background.
        let t = Instant::now();
        let ctx = self.drain_context();
        for s in &d.scale_down {
            let Some((node, extra)) = index.nodes.get(&s.node) else {
                continue;
            };
            let removal = Removal {
                node: s.node.clone(),
                uid: extra.uid.clone(),
                group: s.group.clone(),
                provider_id: node.provider_id.clone(),
                pods: s.evict.iter().filter_map(|k| evictee(k)).collect(),
                left: s.left.clone(),
                reason: s.reason.clone(),
            };
            self.in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(s.node.clone(), !removal.pods.is_empty());
            self.record.activity("scaleDown", now);
            if removal.pods.is_empty() {
                if let Err(e) = ctx.clone().remove(removal, now).await {
                    first_error.get_or_insert(e);
                }
            } else {
                self.drains.spawn(ctx.clone().remove(removal, now));
            }
        }
        if !d.scale_down.is_empty() {
            self.observe("scaleDown", t);
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Takes the deletion taint off every node that has it: left by a replica that stopped mid-drain (or
    /// by a leader before this one), as upstream cleans up when it starts acting. Not in dry-run.
    pub async fn clean_stale_taints(&mut self) {
        if self.run.dry_run || self.fence.check("untainting").is_err() {
            return;
        }
        self.index.update(&self.watches);
        let api: Api<KubeNode> = Api::all(self.client.clone());
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let tainted: Vec<String> = self
            .index
            .nodes
            .items()
            .iter()
            .filter(|n| {
                n.taints
                    .iter()
                    .any(|t| t.key == crate::labels::TO_BE_DELETED)
            })
            .map(|n| n.name.clone())
            .filter(|name| !in_flight.contains_key(name))
            .collect();
        for name in tainted {
            match drain::set_deletion_taint(&api, &name, false, 0).await {
                Ok(()) => tracing::info!(node = %name, "removed a stale deletion taint"),
                Err(e) => tracing::warn!(node = %name, error = %e, "stale deletion taint kept"),
            }
        }
    }
}

impl Runner {
    /// Tries again to take off the deletion taints a failed removal could not remove.
    pub(super) async fn retry_untaint(&self) {
        let nodes: Vec<String> = self
            .untaint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        if nodes.is_empty() || self.fence.check("untainting").is_err() {
            return;
        }
        let api: Api<KubeNode> = Api::all(self.client.clone());
        for name in nodes {
            match drain::set_deletion_taint(&api, &name, false, 0).await {
                Ok(()) => {
                    self.untaint
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&name);
                    tracing::info!(node = %name, "removed the deletion taint of a failed removal");
                }
                Err(e) => {
                    tracing::warn!(node = %name, error = %e, "deletion taint still not removed")
                }
            }
        }
    }
}

impl Runner {
    /// What a background drain shares with the loop.
    pub(super) fn drain_context(&self) -> DrainContext {
        DrainContext {
            client: self.client.clone(),
            cloud: self.cloud.clone(),
            events: self.events.clone(),
            record: self.record.clone(),
            settings: self.run.drain.clone(),
            in_flight: self.in_flight.clone(),
            fence: self.fence.clone(),
            untaint: self.untaint.clone(),
            outcomes: self.outcomes.clone(),
        }
    }

    /// Records one group's deleted instances as upstream does: a failed scale-up per error code with
    /// its nodes, and those that never registered as old unregistered nodes removed.
    fn record_failed_creations(&self, instances: &[&DeleteInstance]) {
        let mut by_code: BTreeMap<&str, u64> = BTreeMap::new();
        for i in instances {
            *by_code.entry(i.reason.code()).or_default() += 1;
        }
        for (code, nodes) in by_code {
            self.record.scale_up_failed(code, nodes);
        }
        let unregistered = instances
            .iter()
            .filter(|i| matches!(i.reason, InstanceFault::NotRegistered { .. }))
            .count();
        self.record.unregistered_removed(unregistered as u64);
    }
}
