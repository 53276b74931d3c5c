//! What one loop decided, in logs and metrics.

use super::Runner;
use crate::engine::Decisions;
use crate::k8s::status::Status;
use crate::metrics::StateLabel;

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
        let Some(m) = self.loop_metrics() else {
            return;
        };
        m.unschedulable_pods.set(d.unschedulable().count() as i64);
        m.unneeded_nodes
            .set(self.memory.unneeded_since.len() as i64);
        m.node_groups.set(groups as i64);
        if let Some(c) = &status.cluster_wide.health.node_counts {
            for (state, n) in [
                ("ready", c.registered.ready),
                ("unready", c.registered.unready.total),
                ("notStarted", c.registered.not_started),
                ("unregistered", c.unregistered),
                ("longUnregistered", c.long_unregistered),
            ] {
                m.nodes.get_or_create(&StateLabel { state }).set(n as i64);
            }
        }
    }
}
