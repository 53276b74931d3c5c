//! The loop's settings: upstream cluster-autoscaler's flags, with upstream's defaults.

use std::time::Duration;

use super::expander::{Priorities, Strategy};
use super::limits::GpuLimit;
use super::profile::SchedulerProfile;
use super::similar::Balancing;
use super::taints::TaintConfig;
use crate::model::consolidation::Consolidation;
use crate::model::drift::DriftPolicy;
use crate::model::lifecycle::Budget;
use crate::model::{NodeGroup, OptionValues};

/// Upstream's flags of the loop. Their defaults are [`Settings::upstream`], the one place they are
/// written: the command line's flags (`ferroscale::cli::flags`) take theirs from it.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The scheduler profile's plugin arguments (`--scheduler-config-file`): the default profile
    /// unless given.
    pub scheduler: SchedulerProfile,
    pub expander: Vec<Strategy>,
    pub priorities: Priorities,
    /// `--max-nodes-total` (0: no limit).
    pub max_nodes_total: usize,
    /// `--cores-total` min:max.
    pub cores_total: (i64, i64),
    /// `--memory-total` min:max, in GiB.
    pub memory_total_gib: (i64, i64),
    /// `--gpu-total`: `<gpu_type>:<min>:<max>` limits, one per GPU type (none by default).
    pub gpu_total: Vec<GpuLimit>,
    /// `--enforce-node-group-min-size`: groups below their min size grow to it, pending pods or not.
    pub enforce_node_group_min_size: bool,
    /// `--max-nodes-per-scaleup`.
    pub max_nodes_per_scaleup: usize,
    /// `--max-nodegroup-binpacking-duration`: time budget of one group's estimate.
    pub max_nodegroup_binpacking_duration: Duration,
    /// `--new-pod-scale-up-delay`.
    pub new_pod_scale_up_delay: Duration,
    /// `--expendable-pods-priority-cutoff`: pods below it never trigger a scale-up.
    pub expendable_pods_priority_cutoff: i32,
    /// `--scan-interval`: the time between loops, which upstream's unneeded-nodes limit divides the
    /// unneeded time by.
    pub scan_interval: Duration,
    /// How long a group backs off after failed scale-ups (`--initial-node-group-backoff-duration`,
    /// `--max-node-group-backoff-duration`, `--node-group-backoff-reset-timeout`).
    pub node_group_backoff: NodeGroupBackoff,
    /// `--scale-down-enabled`.
    pub scale_down_enabled: bool,
    /// `--scale-down-delay-after-add`.
    pub scale_down_delay_after_add: Duration,
    /// `--scale-down-delay-after-delete`: after a node was removed, the next removal waits this long.
    pub scale_down_delay_after_delete: Duration,
    /// `--scale-down-delay-after-failure`: after a removal failed, scale-down waits this long.
    pub scale_down_delay_after_failure: Duration,
    /// `--skip-nodes-with-local-storage`.
    pub skip_nodes_with_local_storage: bool,
    /// `--ignore-mirror-pods-utilization`: static (mirror) pods leave utilization as DaemonSet pods do
    /// with `--ignore-daemonsets-utilization`.
    pub ignore_mirror_pods_utilization: bool,
    /// `--skip-nodes-with-system-pods`.
    pub skip_nodes_with_system_pods: bool,
    /// `--skip-nodes-with-custom-controller-pods`: only ReplicaSet, ReplicationController, Job and
    /// StatefulSet owners make a pod replicated, and `--min-replica-count` applies.
    pub skip_nodes_with_custom_controller_pods: bool,
    /// `--min-replica-count`: pods of a ReplicaSet or ReplicationController with fewer replicas keep
    /// their node.
    pub min_replica_count: i32,
    /// `--blocking-system-pod-distruption-timeout` (upstream's spelling): a kube-system pod without a
    /// PodDisruptionBudget keeps its node until this long after its creation.
    pub blocking_system_pod_disruption_timeout: Duration,
    /// `--max-empty-bulk-delete`: deprecated and read by nothing, as upstream's since 1.33.
    pub max_empty_bulk_delete: usize,
    /// `--daemonset-eviction-for-occupied-nodes`: a removed node with pods to evict has its DaemonSet
    /// pods evicted too (best effort, after the others).
    pub daemonset_eviction_for_occupied_nodes: bool,
    /// `--daemonset-eviction-for-empty-nodes`: so has an empty one.
    pub daemonset_eviction_for_empty_nodes: bool,
    /// `--balance-similar-node-groups`.
    pub balance_similar_node_groups: bool,
    /// How similar groups are told (`--balancing-label`, `--balancing-ignore-label`, the ratios).
    pub balancing: Balancing,
    /// `--ok-total-unready-count`: unready nodes the cluster may have and still be healthy.
    pub ok_total_unready_count: usize,
    /// `--max-total-unready-percentage`: beyond this share of unready nodes (and the count above) the
    /// cluster is unhealthy and the loop only reports.
    pub max_total_unready_percentage: f64,
    /// `--scale-down-unready-enabled`: unready nodes may be removed after the unready time.
    pub scale_down_unready_enabled: bool,
    /// `--max-scale-down-parallelism`: removals (empty or drained) in flight at once, across loops.
    pub max_scale_down_parallelism: usize,
    /// `--max-drain-parallelism`: drains of nodes with pods in flight at once, across loops.
    pub max_drain_parallelism: usize,
    /// `--max-evictions-per-loop`: pods one loop's disruption methods may plan to evict together,
    /// every method counted (0: no limit). Involuntary notices are counted, never held.
    pub max_evictions_per_loop: usize,
    /// `--force-delete-unregistered-nodes`: delete instances without a node even in a group at min size.
    pub force_delete_unregistered_nodes: bool,
    /// `--node-max-lifetime`: nodes older than this are replaced (None or 0: never; groups may set
    /// their own).
    pub node_max_lifetime: Option<Duration>,
    /// `--max-disruption`: how many of a group's nodes may be out of service at once (groups may set
    /// their own).
    pub max_disruption: Budget,
    /// `--max-interruptions-per-minute`: how many nodes a minute an involuntary notice (a spot warning,
    /// the instance stopping) takes out regardless of pod disruption budgets; beyond it they drain as
    /// voluntary ones do, so a flood of forged or mistaken notices cannot empty the cluster at once.
    /// A count, or a share of the cluster's nodes rounded up as Karpenter's budgets (`10%`).
    pub max_interruptions_per_minute: Budget,
    /// Per-group option defaults (`--scale-down-utilization-threshold`,
    /// `--scale-down-gpu-utilization-threshold`, `--ignore-daemonsets-utilization`,
    /// `--scale-down-unneeded-time`, ...).
    pub defaults: OptionValues,
    /// Start-up and status taints besides upstream's prefixes (`--startup-taint`, `--ignore-taint`,
    /// `--status-taint`).
    pub taints: TaintConfig,
    /// `--bypassed-scheduler-names`: schedulers whose pods without a node count as pending at once.
    pub bypassed_scheduler_names: Vec<String>,
    /// `--max-bulk-soft-taint-count`: soft taints (`DeletionCandidateOfClusterAutoscaler`) added or taken
    /// off per loop (0: none).
    pub max_bulk_soft_taint_count: usize,
    /// `--max-bulk-soft-taint-time`: how long one loop spends on them.
    pub max_bulk_soft_taint_time: Duration,
    /// `--node-deletion-candidate-ttl`: at start, a node whose soft taint is younger than this is taken
    /// as unneeded since the taint's time, so a restart does not start its unneeded time over (0: off).
    pub node_deletion_candidate_ttl: Duration,
    /// `--consolidation`: the policy of groups that set none (`Never`: cluster-autoscaler's behaviour).
    pub consolidation: Consolidation,
    /// `--consolidation-min-savings`: a plan goes ahead only if it saves at least this share (0.1: 10%)
    /// of the hourly price of the nodes it takes.
    pub consolidation_min_savings: f64,
    /// `--consolidation-min-savings-per-pod`: and at least this many dollars an hour per pod evicted
    /// (0: off).
    pub consolidation_min_savings_per_pod: f64,
    /// `--consolidation-max-candidates`: nodes looked at alone each loop, best first; multi-node sets
    /// are prefixes of the same order, up to `--consolidation-max-set` nodes.
    pub consolidation_max_candidates: usize,
    /// `--consolidation-max-set`: most nodes one plan takes.
    pub consolidation_max_set: usize,
    /// `--consolidation-search-time`: the search's time budget per loop; the best plan found by then
    /// is taken.
    pub consolidation_search_time: Duration,
    /// `--drift`: what groups that set none do with drifted nodes (`Never`: cluster-autoscaler's
    /// behaviour, nothing).
    pub drift: DriftPolicy,
}

/// Upstream's exponential backoff of a group after failed scale-ups (`exponential_backoff.go`): the
/// first failure backs it off `initial`, a failure after that backoff ended doubles it up to `max`, and
/// a group without a failure for `reset` starts again from `initial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeGroupBackoff {
    /// `--initial-node-group-backoff-duration`.
    pub initial: Duration,
    /// `--max-node-group-backoff-duration`.
    pub max: Duration,
    /// `--node-group-backoff-reset-timeout`.
    pub reset: Duration,
}

impl NodeGroupBackoff {
    /// Upstream's defaults: 5m, 30m, 3h.
    pub const UPSTREAM: NodeGroupBackoff = NodeGroupBackoff {
        initial: Duration::from_secs(5 * 60),
        max: Duration::from_secs(30 * 60),
        reset: Duration::from_secs(3 * 3600),
    };
}

impl Default for NodeGroupBackoff {
    /// Upstream's defaults, for a memory no loop has run with yet.
    fn default() -> Self {
        NodeGroupBackoff::UPSTREAM
    }
}

impl Settings {
    /// A group's disruption budget: its own, else `--max-disruption`.
    pub fn budget_of(&self, g: &NodeGroup) -> Budget {
        g.lifecycle.disruption_budget.unwrap_or(self.max_disruption)
    }

    /// Whether voluntary disruptions of `g` may happen at `now`: always without a window.
    pub fn disruption_allowed(&self, g: &NodeGroup, now: i64) -> bool {
        g.lifecycle
            .disruption_window
            .as_ref()
            .is_none_or(|w| w.open(now))
    }

    /// A group's maximum node lifetime: its own, else `--node-max-lifetime`; 0 is none, the same for
    /// the flag, the tag and the memory cloud's field (a group's `0s` turns the flag's off for it).
    pub fn lifetime_of(&self, g: &NodeGroup) -> Option<Duration> {
        g.lifecycle
            .max_node_lifetime
            .or(self.node_max_lifetime)
            .filter(|d| !d.is_zero())
    }

    /// A group's consolidation: its own, else `--consolidation`.
    pub fn consolidation_of(&self, g: &NodeGroup) -> Consolidation {
        g.lifecycle.consolidation.unwrap_or(self.consolidation)
    }

    /// A group's drift policy: its own, else `--drift`.
    pub fn drift_of(&self, g: &NodeGroup) -> DriftPolicy {
        g.lifecycle.drift.unwrap_or(self.drift)
    }

    /// A group's options: its own overrides on top of the flags' defaults.
    pub fn options_of(&self, g: &NodeGroup) -> OptionValues {
        match &g.options {
            Some(o) => o.apply_to(&self.defaults),
            None => self.defaults.clone(),
        }
    }
}

impl Settings {
    /// Upstream cluster-autoscaler's defaults: what the binary's flags default to, and what the core's
    /// tests run with.
    pub fn upstream() -> Settings {
        Settings {
            scheduler: SchedulerProfile::default(),
            expander: vec![Strategy::LeastWaste],
            priorities: Priorities::default(),
            max_nodes_total: 0,
            cores_total: (0, 320_000),
            memory_total_gib: (0, 6_400_000),
            gpu_total: Vec::new(),
            enforce_node_group_min_size: false,
            max_nodes_per_scaleup: 1000,
            max_nodegroup_binpacking_duration: Duration::from_secs(10),
            new_pod_scale_up_delay: Duration::ZERO,
            expendable_pods_priority_cutoff: -10,
            scan_interval: Duration::from_secs(10),
            node_group_backoff: NodeGroupBackoff::UPSTREAM,
            scale_down_enabled: true,
            scale_down_delay_after_add: Duration::from_secs(600),
            scale_down_delay_after_delete: Duration::ZERO,
            scale_down_delay_after_failure: Duration::from_secs(180),
            skip_nodes_with_local_storage: true,
            ignore_mirror_pods_utilization: false,
            skip_nodes_with_system_pods: true,
            skip_nodes_with_custom_controller_pods: true,
            min_replica_count: 0,
            blocking_system_pod_disruption_timeout: Duration::from_secs(3600),
            max_empty_bulk_delete: 10,
            daemonset_eviction_for_occupied_nodes: true,
            daemonset_eviction_for_empty_nodes: false,
            balance_similar_node_groups: false,
            balancing: Balancing::DEFAULT,
            ok_total_unready_count: 3,
            max_total_unready_percentage: 45.0,
            scale_down_unready_enabled: true,
            max_scale_down_parallelism: 10,
            max_drain_parallelism: 1,
            max_evictions_per_loop: 0,
            force_delete_unregistered_nodes: false,
            node_max_lifetime: None,
            max_disruption: Budget::default(),
            // A real reclaim wave takes one spot pool (type × zone) at a time, rarely more than a few
            // dozen instances in the same minute; 100 lets such a wave through at the involuntary pace
            // while a flood of notices naming every node of a large cluster is held to its budgets.
            max_interruptions_per_minute: Budget::Count(100),
            defaults: OptionValues::DEFAULT,
            taints: TaintConfig::default(),
            bypassed_scheduler_names: Vec::new(),
            max_bulk_soft_taint_count: 10,
            max_bulk_soft_taint_time: Duration::from_secs(3),
            node_deletion_candidate_ttl: Duration::ZERO,
            consolidation: Consolidation::default(),
            consolidation_min_savings: 0.1,
            consolidation_min_savings_per_pod: 0.0,
            consolidation_max_candidates: 50,
            consolidation_max_set: 10,
            consolidation_search_time: Duration::from_secs(1),
            drift: DriftPolicy::Never,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_no_lifetime_for_the_flag_and_for_a_group() {
        let hour = Some(Duration::from_secs(3600));
        let group = |own: Option<Duration>| {
            let mut g = NodeGroup::new("g", Default::default(), "memory:///g/");
            g.lifecycle.max_node_lifetime = own;
            g
        };
        let with_flag = |flag: Option<Duration>| Settings {
            node_max_lifetime: flag,
            ..Settings::upstream()
        };
        let zero = Some(Duration::ZERO);
        assert_eq!(with_flag(zero).lifetime_of(&group(None)), None);
        assert_eq!(with_flag(None).lifetime_of(&group(zero)), None);
        assert_eq!(
            with_flag(hour).lifetime_of(&group(zero)),
            None,
            "a group's 0 turns the flag's lifetime off for it"
        );
        assert_eq!(with_flag(hour).lifetime_of(&group(None)), hour);
        assert_eq!(with_flag(zero).lifetime_of(&group(hour)), hour);
    }
}
