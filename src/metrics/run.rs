//! The autoscaling loop's metrics (`ferroscale run`) under upstream cluster-autoscaler's names, labels
//! and label values.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::consolidation::ConsolidationMetrics;
use super::groups::GroupStates;
use super::intents::IntentMetrics;
use super::lifecycle::LifecycleMetrics;
use super::totals::ClusterTotals;
use super::untyped::UntypedCounter;
use super::Labels;
use crate::engine::upstream::UNREMOVABLE_REASONS;

/// Label of `cluster_autoscaler_function_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FunctionLabel {
    pub function: &'static str,
}

/// What one loop saw of the cluster, for the gauges upstream sets every loop.
#[derive(Debug, Default)]
pub struct Cluster {
    /// Pods no existing or upcoming node takes.
    pub unschedulable: usize,
    /// Pods without a node the scheduler has not marked unschedulable yet.
    pub scheduler_unprocessed: usize,
    pub unneeded: usize,
    pub groups: usize,
    /// Nodes by upstream's state (`ready`, `unready`, `notStarted`, `unregistered`, `longUnregistered`).
    pub nodes: Vec<(&'static str, usize)>,
    /// The groups' max sizes summed, capped by `--max-nodes-total`.
    pub max_nodes: usize,
    /// Removals in flight.
    pub pending_deletions: usize,
}

/// Label of `cluster_autoscaler_nodes_count`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: &'static str,
}

/// Label of `cluster_autoscaler_scaled_down_nodes_total`, `_failed_scale_ups_total`,
/// `_failed_node_creations_total` and `_unremovable_nodes_count`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

/// Labels of `cluster_autoscaler_skipped_scale_events_count`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SkippedLabels {
    pub direction: &'static str,
    pub reason: &'static str,
}

/// Label of `cluster_autoscaler_evicted_pods_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictionLabel {
    pub eviction_result: &'static str,
}

/// Label of `cluster_autoscaler_last_activity`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActivityLabel {
    pub activity: &'static str,
}

/// Upper bounds in seconds of loop phases, from 10ms to 5 minutes.
const FUNCTION_BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 300.0,
];

fn function_histogram() -> Histogram {
    Histogram::new(FUNCTION_BUCKETS)
}

/// The autoscaling loop's metrics (`ferroscale run`), under upstream cluster-autoscaler's names so its
/// dashboards and alerts apply unchanged. The loop records through its methods, one per thing that
/// happened; a recorder that is not registered ([`LoopMetrics::unregistered`]) records nowhere.
#[derive(Clone)]
pub struct LoopMetrics {
    function_duration: Family<FunctionLabel, Histogram, fn() -> Histogram>,
    unschedulable_pods: Family<Labels, Gauge>,
    nodes: Family<StateLabel, Gauge>,
    node_groups: Family<Labels, Gauge>,
    unneeded_nodes: Gauge,
    max_nodes: Gauge,
    pending_deletions: Gauge,
    scaled_up_nodes: Counter,
    scaled_down_nodes: Family<ReasonLabel, Counter>,
    failed_scale_ups: Family<ReasonLabel, Counter>,
    failed_node_creations: Family<ReasonLabel, Counter>,
    old_unregistered_removed: UntypedCounter,
    skipped_scale_events: Family<SkippedLabels, UntypedCounter>,
    unremovable_nodes: Family<ReasonLabel, Gauge>,
    scale_down_in_cooldown: Gauge,
    evicted_pods: Family<EvictionLabel, Counter>,
    evictions_refused: Family<ReasonLabel, Counter>,
    errors: Family<Labels, Counter>,
    last_activity: Family<ActivityLabel, Gauge>,
    safe_to_autoscale: Gauge,
    held_back: Gauge,
    /// The cluster's cores and memory and their limits.
    pub totals: ClusterTotals,
    /// Each group's health and backoff.
    pub groups: GroupStates,
    /// Disruptions and the interruption queue.
    pub lifecycle: LifecycleMetrics,
    /// Consolidation's plans, saving and declined nodes.
    pub consolidation: ConsolidationMetrics,
    /// Intents reconciled at start.
    pub intents: IntentMetrics,
}

impl LoopMetrics {
    /// Whether the loop may act (upstream's cluster health) and whether removals are held back because
    /// the state read cannot be trusted (a watch down, an object unreadable).
    pub fn safety(&self, safe_to_autoscale: bool, held_back: bool) {
        self.safe_to_autoscale.set(i64::from(safe_to_autoscale));
        self.held_back.set(i64::from(held_back));
    }

    /// A recorder whose figures go nowhere (a loop run without `Metrics::for_run`).
    pub fn unregistered() -> Self {
        LoopMetrics::register(&mut Registry::default(), Arc::default())
    }

    /// `count` nodes were asked for.
    pub fn scaled_up(&self, count: u64, unix: i64) {
        self.scaled_up_nodes.inc_by(count);
        self.activity("scaleUp", unix);
    }

    /// A scale-up of `nodes` nodes failed with upstream's error code `reason` (`cloudProviderError`,
    /// `timeout`, or the cloud's launch error code): one failed scale-up, `nodes` failed creations.
    pub fn scale_up_failed(&self, reason: &str, nodes: u64) {
        let label = ReasonLabel {
            reason: reason.to_string(),
        };
        self.failed_scale_ups.get_or_create(&label).inc();
        self.failed_node_creations
            .get_or_create(&label)
            .inc_by(nodes);
    }

    /// A node was removed (`empty`, `underutilized`, `unready`).
    pub fn scaled_down(&self, reason: &'static str) {
        self.scaled_down_nodes
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// `count` instances that never became nodes were deleted.
    pub fn unregistered_removed(&self, count: u64) {
        self.old_unregistered_removed.inc_by(count);
    }

    /// What one loop's scale-down saw: the nodes kept by upstream's reason (every reason set, 0 when
    /// none), the scale events skipped for a cluster-wide limit, and whether scale-down waits after a
    /// scale-up, a failure or a removal.
    pub fn scale_down(
        &self,
        unremovable: impl IntoIterator<Item = &'static str>,
        skipped: impl IntoIterator<Item = (&'static str, &'static str)>,
        in_cooldown: bool,
    ) {
        let mut counts: BTreeMap<&str, i64> = UNREMOVABLE_REASONS.iter().map(|&r| (r, 0)).collect();
        for r in unremovable {
            *counts.entry(r).or_default() += 1;
        }
        for (reason, n) in counts {
            self.unremovable_nodes
                .get_or_create(&ReasonLabel {
                    reason: reason.to_string(),
                })
                .set(n);
        }
        for (direction, reason) in skipped {
            self.skipped_scale_events
                .get_or_create(&SkippedLabels { direction, reason })
                .inc_by(1);
        }
        self.scale_down_in_cooldown.set(i64::from(in_cooldown));
    }

    /// A pod eviction for a scale-down ended.
    pub fn evicted(&self, succeeded: bool) {
        self.evicted_pods
            .get_or_create(&EvictionLabel {
                eviction_result: if succeeded { "succeeded" } else { "failed" },
            })
            .inc();
    }

    /// An eviction a decision asked for and the actuator refused (`not_on_node`).
    pub fn eviction_refused(&self, reason: &'static str) {
        self.evictions_refused
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// A loop failed (`cloudProviderError`, ...).
    pub fn error(&self, kind: &'static str) {
        self.errors.get_or_create(&vec![("type", kind)]).inc();
    }

    /// What one loop saw: pods no node takes, nodes unneeded, groups, nodes by state, and limits.
    pub fn cluster(&self, c: &Cluster) {
        for (kind, n) in [
            ("unschedulable", c.unschedulable),
            ("scheduler_unprocessed", c.scheduler_unprocessed),
        ] {
            self.unschedulable_pods
                .get_or_create(&vec![("type", kind)])
                .set(n as i64);
        }
        self.unneeded_nodes.set(c.unneeded as i64);
        // Node autoprovisioning does not exist here: no group is `autoprovisioned`.
        for (kind, n) in [("autoscaled", c.groups), ("autoprovisioned", 0)] {
            self.node_groups
                .get_or_create(&vec![("node_group_type", kind)])
                .set(n as i64);
        }
        for &(state, n) in &c.nodes {
            self.nodes
                .get_or_create(&StateLabel { state })
                .set(n as i64);
        }
        self.max_nodes.set(c.max_nodes as i64);
        self.pending_deletions.set(c.pending_deletions as i64);
    }

    /// Sets every series upstream's InitMetrics sets, to 0, so counters exist (and rates work) before
    /// the first event.
    fn init(&self) {
        for kind in ["cloudProviderError", "apiCallError", "internalError"] {
            self.errors.get_or_create(&vec![("type", kind)]).inc_by(0);
        }
        for reason in ["cloudProviderError", "apiCallError", "timeout"] {
            let label = ReasonLabel {
                reason: reason.into(),
            };
            self.failed_scale_ups.get_or_create(&label).inc_by(0);
            self.failed_node_creations.get_or_create(&label).inc_by(0);
        }
        for reason in ["empty", "underutilized", "unready"] {
            self.scaled_down_nodes
                .get_or_create(&ReasonLabel {
                    reason: reason.into(),
                })
                .inc_by(0);
        }
        for eviction_result in ["succeeded", "failed"] {
            self.evicted_pods
                .get_or_create(&EvictionLabel { eviction_result })
                .inc_by(0);
        }
        for direction in ["up", "down"] {
            for reason in ["CpuResourceLimit", "MemoryResourceLimit"] {
                self.skipped_scale_events
                    .get_or_create(&SkippedLabels { direction, reason })
                    .inc_by(0);
            }
        }
        self.scale_down(std::iter::empty(), std::iter::empty(), false);
    }

    pub(super) fn register(registry: &mut Registry, lock: Arc<Mutex<()>>) -> Self {
        let m = LoopMetrics {
            function_duration: Family::new_with_constructor(function_histogram),
            unschedulable_pods: Family::default(),
            nodes: Family::default(),
            node_groups: Family::default(),
            unneeded_nodes: Gauge::default(),
            max_nodes: Gauge::default(),
            pending_deletions: Gauge::default(),
            scaled_up_nodes: Counter::default(),
            scaled_down_nodes: Family::default(),
            failed_scale_ups: Family::default(),
            failed_node_creations: Family::default(),
            old_unregistered_removed: UntypedCounter::default(),
            skipped_scale_events: Family::default(),
            unremovable_nodes: Family::default(),
            scale_down_in_cooldown: Gauge::default(),
            evicted_pods: Family::default(),
            evictions_refused: Family::default(),
            errors: Family::default(),
            last_activity: Family::default(),
            safe_to_autoscale: Gauge::default(),
            held_back: Gauge::default(),
            totals: ClusterTotals::register(registry),
            groups: GroupStates::register(registry, lock),
            lifecycle: LifecycleMetrics::register(registry),
            consolidation: ConsolidationMetrics::register(registry),
            intents: IntentMetrics::register(registry),
        };
        registry.register(
            "cluster_autoscaler_cluster_safe_to_autoscale",
            "Whether the cluster is healthy enough to autoscale (1) or has too many unready nodes (0)",
            m.safe_to_autoscale.clone(),
        );
        registry.register(
            "ferroscale_scale_down_held_back",
            "1 while nothing is removed because the cluster state cannot be trusted (a watch not synced or failing, an object unreadable)",
            m.held_back.clone(),
        );
        let p = "cluster_autoscaler_";
        registry.register(
            format!("{p}function_duration_seconds"),
            "Time taken by the phases of the autoscaling loop",
            m.function_duration.clone(),
        );
        registry.register(
            format!("{p}unschedulable_pods_count"),
            "Pods the scheduler could not place, after filtering those existing or upcoming nodes take",
            m.unschedulable_pods.clone(),
        );
        registry.register(
            format!("{p}nodes_count"),
            "Nodes by state: ready, unready, notStarted, unregistered, longUnregistered",
            m.nodes.clone(),
        );
        registry.register(
            format!("{p}node_groups_count"),
            "Node groups the autoscaler manages",
            m.node_groups.clone(),
        );
        registry.register(
            format!("{p}max_nodes_count"),
            "Most nodes the groups may have: their max sizes summed, capped by --max-nodes-total",
            m.max_nodes.clone(),
        );
        registry.register(
            format!("{p}pending_node_deletions"),
            "Nodes whose removal started and has not finished or been given up",
            m.pending_deletions.clone(),
        );
        registry.register(
            format!("{p}unneeded_nodes_count"),
            "Nodes currently considered for removal",
            m.unneeded_nodes.clone(),
        );
        registry.register(
            format!("{p}scaled_up_nodes"),
            "Nodes added by scale-ups",
            m.scaled_up_nodes.clone(),
        );
        registry.register(
            format!("{p}scaled_down_nodes"),
            "Nodes removed, by reason: empty, underutilized, unregistered",
            m.scaled_down_nodes.clone(),
        );
        registry.register(
            format!("{p}failed_scale_ups"),
            "Scale-ups that failed, by reason",
            m.failed_scale_ups.clone(),
        );
        registry.register(
            format!("{p}failed_node_creations"),
            "Nodes that failed to be added, by error code: a failed scale-up of 5 nodes counts 5",
            m.failed_node_creations.clone(),
        );
        registry.register(
            format!("{p}old_unregistered_nodes_removed_count"),
            "Instances deleted because no node registered for them within maxNodeProvisionTime",
            m.old_unregistered_removed.clone(),
        );
        registry.register(
            format!("{p}skipped_scale_events_count"),
            "Scale events skipped because --cores-total or --memory-total is reached, by direction and resource",
            m.skipped_scale_events.clone(),
        );
        registry.register(
            format!("{p}unremovable_nodes_count"),
            "Nodes the last loop kept, by upstream's reason",
            m.unremovable_nodes.clone(),
        );
        registry.register(
            format!("{p}scale_down_in_cooldown"),
            "Whether scale-down waits after a scale-up, a failed removal or a removal (1) or not (0)",
            m.scale_down_in_cooldown.clone(),
        );
        registry.register(
            format!("{p}evicted_pods"),
            "Pods evicted for scale-downs, by result",
            m.evicted_pods.clone(),
        );
        registry.register(
            "ferroscale_evictions_refused",
            "Evictions the actuator refused to carry out, by reason (not_on_node: the pod is not bound to the node its removal takes; a bug)",
            m.evictions_refused.clone(),
        );
        registry.register(
            format!("{p}errors"),
            "Loop errors, by type",
            m.errors.clone(),
        );
        registry.register(
            format!("{p}last_activity"),
            "Unix time of the last activity: main (a loop), autoscaling (a successful loop), scaleUp, scaleDown",
            m.last_activity.clone(),
        );
        m.init();
        m
    }

    /// Observes one phase of the loop.
    pub fn observe(&self, function: &'static str, elapsed: Duration) {
        self.function_duration
            .get_or_create(&FunctionLabel { function })
            .observe(elapsed.as_secs_f64());
    }

    /// Sets an activity's time.
    pub fn activity(&self, activity: &'static str, unix: i64) {
        self.last_activity
            .get_or_create(&ActivityLabel { activity })
            .set(unix);
    }
}
