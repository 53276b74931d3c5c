//! What one loop decided, in logs and metrics.

use std::collections::BTreeMap;

use super::publish::Publisher;
use crate::engine::status::ClusterAutoscalerStatus;
use crate::engine::{Decisions, Memory, Settings, World};
use crate::metrics::{Cluster, GroupState};

impl Publisher {
    /// Logs the decisions and sets the gauges.
    pub(super) fn report(
        &self,
        d: &Decisions,
        status: &ClusterAutoscalerStatus,
        world: &World,
        memory: &Memory,
        settings: &Settings,
        now: i64,
    ) {
        let groups = world.groups.len();
        self.record.totals.set(
            world
                .nodes
                .iter()
                .filter(|n| !world.removing.contains_key(&n.name)),
            settings.cores_total,
            settings.memory_total_gib,
        );
        let verb = if self.dry_run { "would" } else { "will" };
        for s in &d.scale_up {
            let reason = format!(
                "{} pending pods fit a new node of this group and no existing one; expander: {}",
                s.pods.len(),
                d.expander.join("; ")
            );
            tracing::info!(group = %s.group, delta = s.delta, %reason, "{verb} scale up");
        }
        // Pods no scale-up helps: one line per reason, with how many and the first of them.
        let mut waiting: BTreeMap<String, (usize, &str)> = BTreeMap::new();
        for (pod, why) in d.not_triggered() {
            waiting.entry(why.to_string()).or_insert((0, pod)).0 += 1;
        }
        for (reason, (count, first)) in waiting {
            tracing::info!(count, first = %first, %reason, "pods did not trigger a scale-up");
        }
        for s in &d.scale_down {
            tracing::info!(node = %s.node, group = %s.group, reason = %s.reason, "{verb} remove node");
        }
        for i in &d.delete_instances {
            tracing::info!(instance = %i.instance, group = %i.group, reason = %i.reason, "{verb} delete instance");
        }
        for p in &d.consolidations {
            tracing::info!(action = %p.action, nodes = ?p.nodes, saving_per_hour = p.savings_per_hour, pods = p.pods_evicted.len(), "{verb} consolidate");
        }
        self.record.consolidation.loop_done(d);
        for line in &d.expander {
            tracing::debug!("{line}");
        }
        let nodes = status
            .cluster_wide
            .as_ref()
            .map(|c| &c.node_counts)
            .map(|c| {
                vec![
                    ("ready", c.registered.ready),
                    ("unready", c.registered.unready.total),
                    ("notStarted", c.registered.not_started),
                    ("unregistered", c.unregistered),
                    ("longUnregistered", c.long_unregistered),
                ]
            })
            .unwrap_or_default();
        self.record
            .safety(d.unhealthy.is_none(), !d.held_back.is_empty());
        for doubt in &d.held_back {
            tracing::warn!(%doubt, "scale-down held back");
        }
        if let Some(u) = &d.unhealthy {
            tracing::warn!(%u, "doing nothing");
        }
        let max_nodes: usize = world
            .groups
            .iter()
            .map(|g| g.max_size.max(0) as usize)
            .sum();
        self.record.cluster(&Cluster {
            unschedulable: d.unschedulable().count(),
            scheduler_unprocessed: world
                .pods
                .iter()
                .filter(|p| p.node_name.is_none() && !p.meta.unschedulable)
                .count(),
            unneeded: memory.unneeded_since.len(),
            groups,
            nodes,
            max_nodes: match settings.max_nodes_total {
                0 => max_nodes,
                cap => cap.min(max_nodes),
            },
            pending_deletions: world.removing.len(),
        });
        self.record.scale_down(
            d.unremovable.iter().map(|(_, why)| why.upstream_reason()),
            d.skipped()
                .filter_map(|(direction, r)| Some((direction.as_str(), r.skipped_reason()?))),
            memory.scale_down_paused(settings, now).is_some(),
        );
        self.record
            .groups
            .set(status.node_groups.iter().map(|g| GroupState {
                group: &g.name,
                healthy: g.healthy(),
                backoff: g.backoff.as_ref().map(|b| b.error_code.as_str()),
            }));
    }
}
