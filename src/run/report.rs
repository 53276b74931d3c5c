//! What one loop decided, in logs and metrics.

use super::Runner;
use crate::engine::Decisions;
use crate::k8s::status::Status;

impl Runner {
    /// Logs the decisions and sets the gauges.
    pub(super) fn report(&self, d: &Decisions, status: &Status, groups: usize) {
        let verb = if self.run.dry_run { "would" } else { "will" };
        for s in &d.scale_up {
            tracing::info!(group = %s.group, delta = s.delta, pods = s.pods.len(), "{verb} scale up");
        }
        for s in &d.scale_down {
            tracing::info!(node = %s.node, group = %s.group, reason = %s.reason, "{verb} remove node");
        }
        for i in &d.delete_instances {
            tracing::info!(instance = %i.instance, group = %i.group, reason = %i.reason, "{verb} delete instance");
        }
        for line in &d.expander {
            tracing::debug!("{line}");
        }
        let nodes = status
            .cluster_wide
            .health
            .node_counts
            .as_ref()
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
        self.record.cluster(
            d.unschedulable().count(),
            self.memory.unneeded_since.len(),
            groups,
            &nodes,
        );
    }
}
