//! Upstream's health checks: the cluster's (too many unready nodes and the loop only reports) and each
//! group's (`node_group_healthiness`, the status ConfigMap's per-group `Healthy` condition). Nodes are
//! sorted by readiness in one place ([`NodeReadiness::of`]) and counted by [`Readiness::of`].

use std::time::Duration;

use super::context::Ctx;
use super::reasons::Unhealthy;
use super::settings::Settings;
use super::taints::TaintConfig;
use crate::model::duration::secs;
use crate::model::workload::Node;

pub use super::readiness::is_ready;

/// A registered node's readiness, as upstream's cluster state sorts it (`updateReadinessStats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeReadiness {
    Ready,
    /// Not ready, and younger than `maxNodeStartupTime`: still starting.
    NotStarted,
    /// Not ready, and older than `maxNodeStartupTime`: broken.
    Unready,
}

impl NodeReadiness {
    /// `node` at `now`: ready; else not started while it was first seen less than `max_startup` ago
    /// (`Node::seen`: the loop's own clock, never the API server's); else unready. Readiness itself is
    /// [`is_ready`], defined once.
    pub fn of(node: &Node, max_startup: Duration, now: i64, taints: &TaintConfig) -> Self {
        if is_ready(node, taints) {
            NodeReadiness::Ready
        } else if now.saturating_sub(node.seen) < secs(max_startup) {
            NodeReadiness::NotStarted
        } else {
            NodeReadiness::Unready
        }
    }
}

/// Upstream's check: the cluster is unhealthy when more nodes are unready than both
/// `--ok-total-unready-count` and `--max-total-unready-percentage` of all nodes allow. Nodes still
/// starting (younger than the default `maxNodeStartupTime`) are not unready yet.
pub(super) fn unhealthy(ctx: &Ctx) -> Option<Unhealthy> {
    let s = ctx.settings;
    let total = ctx.world.nodes.len();
    let unready = Readiness::of(
        ctx.world.nodes,
        s.defaults.max_node_startup_time,
        ctx.now,
        &s.taints,
    )
    .unready;
    too_many_unready(unready, total, s).then_some(Unhealthy { unready, total })
}

/// Upstream's IsClusterHealthy for these registered `nodes` at `now` (each sorted with `max_startup`):
/// false when more are unready than both thresholds allow. The loop's own check is [`unhealthy`]'s.
pub fn cluster_healthy(nodes: &[Node], max_startup: Duration, now: i64, s: &Settings) -> bool {
    let unready = Readiness::of(nodes, max_startup, now, &s.taints).unready;
    !too_many_unready(unready, nodes.len(), s)
}

/// A group's readiness and upstream's IsNodeGroupHealthy verdict: its registered `nodes` at `now`
/// (sorted with its `maxNodeStartupTime`), every instance of its `target_size` without a node counted as
/// on its way (`provisioning`): the cloud lists it, and cleanup gives it up past `maxNodeProvisionTime`.
pub fn group_health<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    target_size: i32,
    max_startup: Duration,
    now: i64,
    s: &Settings,
) -> (Readiness, bool) {
    let mut r = Readiness::of(nodes, max_startup, now, &s.taints);
    r.provisioning = (target_size.max(0) as usize).saturating_sub(r.registered());
    (r, r.healthy(target_size, s))
}

/// Upstream's thresholds: `unready` of `nodes` are too many past both `--ok-total-unready-count` and
/// `--max-total-unready-percentage`.
fn too_many_unready(unready: usize, nodes: usize, s: &Settings) -> bool {
    let share = s.max_total_unready_percentage / 100.0 * nodes as f64;
    unready > s.ok_total_unready_count && unready as f64 > share
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
    /// The registered `nodes` counted at `now`, each sorted by [`NodeReadiness::of`] with
    /// `max_startup` (a group's `maxNodeStartupTime`); `provisioning` is left to the caller, who knows
    /// the instances without a node.
    pub fn of<'a>(
        nodes: impl IntoIterator<Item = &'a Node>,
        max_startup: Duration,
        now: i64,
        taints: &TaintConfig,
    ) -> Self {
        let mut r = Readiness::default();
        for n in nodes {
            *match NodeReadiness::of(n, max_startup, now, taints) {
                NodeReadiness::Ready => &mut r.ready,
                NodeReadiness::NotStarted => &mut r.not_started,
                NodeReadiness::Unready => &mut r.unready,
            } += 1;
        }
        r
    }

    /// Registered nodes: ready, unready or not started.
    pub fn registered(&self) -> usize {
        self.ready + self.unready + self.not_started
    }

    /// Upstream's IsNodeGroupHealthy: the nodes the group's target size expects, less those still
    /// starting or provisioning, that are not ready, are unjustified; the group is unhealthy when they
    /// exceed both `--ok-total-unready-count` and `--max-total-unready-percentage` of its nodes.
    pub fn healthy(&self, target_size: i32, s: &Settings) -> bool {
        let expected =
            (target_size.max(0) as usize).saturating_sub(self.not_started + self.provisioning);
        let unjustified = expected.saturating_sub(self.ready);
        !too_many_unready(unjustified, self.registered(), s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_not_started_then_unready_past_the_startup_time() {
        let startup = Duration::from_secs(900);
        let node = |ready, seen| Node {
            ready,
            seen,
            ..Node::default()
        };
        let at = |n: &Node| NodeReadiness::of(n, startup, 1000, &TaintConfig::default());
        assert_eq!(at(&node(true, 990)), NodeReadiness::Ready);
        assert_eq!(at(&node(false, 101)), NodeReadiness::NotStarted);
        assert_eq!(at(&node(false, 100)), NodeReadiness::Unready, "900s old");
        let nodes = [
            node(true, 0),
            node(false, 0),
            node(false, 500),
            node(false, 990),
        ];
        let r = Readiness::of(&nodes, startup, 1000, &TaintConfig::default());
        assert_eq!((r.ready, r.unready, r.not_started), (1, 1, 2));
        assert_eq!(r.registered(), 4);
        // Created an hour before by the API server's clock, first seen a minute ago: still starting.
        let skewed = Node {
            created: 1000 - 3600,
            ..node(false, 940)
        };
        assert_eq!(at(&skewed), NodeReadiness::NotStarted);
        let r = Readiness::of(&nodes, Duration::ZERO, 1000, &TaintConfig::default());
        assert_eq!(
            (r.unready, r.not_started),
            (3, 0),
            "no grace without a startup time"
        );
    }

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
