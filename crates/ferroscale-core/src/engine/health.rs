//! Upstream's health checks: the cluster's (too many unready nodes and the loop only reports) and each
//! group's (`node_group_healthiness`, the status ConfigMap's per-group `Healthy` condition).

use super::context::Ctx;
use super::reasons::Unhealthy;
use super::settings::Settings;

/// Upstream's check: the cluster is unhealthy when more nodes are unready than both
/// `--ok-total-unready-count` and `--max-total-unready-percentage` of all nodes allow. Nodes still
/// starting (younger than `maxNodeStartupTime`) are not unready yet.
pub(super) fn unhealthy(ctx: &Ctx) -> Option<Unhealthy> {
    let s = ctx.settings;
    let startup = s.defaults.max_node_startup_time.as_secs() as i64;
    let total = ctx.world.nodes.len();
    let unready = ctx
        .world
        .nodes
        .iter()
        .filter(|n| !n.ready && ctx.now - n.created >= startup)
        .count();
    let share = s.max_total_unready_percentage / 100.0 * total as f64;
    (unready > s.ok_total_unready_count && unready as f64 > share)
        .then_some(Unhealthy { unready, total })
}

/// A group's nodes by readiness, as upstream's cluster state counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    pub ready: usize,
    /// Registered, not ready, and older than `maxNodeStartupTime`.
    pub unready: usize,
    /// Registered, not ready yet, younger than `maxNodeStartupTime`.
    pub not_started: usize,
    /// Instances without a node still within `maxNodeProvisionTime`: capacity on its way.
    pub provisioning: usize,
}

impl Readiness {
    /// Upstream's IsNodeGroupHealthy: the nodes the group's target size expects, less those still
    /// starting or provisioning, that are not ready, are unjustified; the group is unhealthy when they
    /// exceed both `--ok-total-unready-count` and `--max-total-unready-percentage` of its nodes.
    pub fn healthy(&self, target_size: i32, s: &Settings) -> bool {
        let expected =
            (target_size.max(0) as usize).saturating_sub(self.not_started + self.provisioning);
        let unjustified = expected.saturating_sub(self.ready);
        let nodes = self.ready + self.unready + self.not_started;
        let share = s.max_total_unready_percentage / 100.0 * nodes as f64;
        !(unjustified > s.ok_total_unready_count && unjustified as f64 > share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_unhealthy_only_past_both_thresholds() {
        let s = Settings::upstream();
        let r = |ready, unready| Readiness {
            ready,
            unready,
            ..Readiness::default()
        };
        assert!(r(10, 0).healthy(10, &s));
        assert!(
            r(7, 3).healthy(10, &s),
            "3 unready: not more than --ok-total-unready-count"
        );
        assert!(
            !r(5, 5).healthy(10, &s),
            "5 of 10: more than 3 and more than 45%"
        );
        assert!(r(15, 5).healthy(20, &s), "5 of 20 is 25%, under 45%");
        assert!(!r(0, 0).healthy(5, &s), "5 expected, none there");
        let starting = Readiness {
            ready: 2,
            not_started: 4,
            provisioning: 4,
            ..Readiness::default()
        };
        assert!(
            starting.healthy(10, &s),
            "nodes still starting or provisioning are justified"
        );
    }
}
