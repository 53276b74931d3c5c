//! The loop's settings: upstream cluster-autoscaler's flags, with upstream's defaults.

use std::time::Duration;

use super::expander::{Priorities, Strategy};
use crate::model::{NodeGroup, OptionValues};

/// Upstream's flags of the loop. Their defaults are the command line's (`ferroscale::cli::flags`), so
/// there is no `Default` here to disagree with them.
#[derive(Debug, Clone)]
pub struct Settings {
    pub expander: Vec<Strategy>,
    pub priorities: Priorities,
    /// `--max-nodes-total` (0: no limit).
    pub max_nodes_total: usize,
    /// `--cores-total` min:max.
    pub cores_total: (i64, i64),
    /// `--memory-total` min:max, in GiB.
    pub memory_total_gib: (i64, i64),
    /// `--max-nodes-per-scaleup`.
    pub max_nodes_per_scaleup: usize,
    /// `--max-nodegroup-binpacking-duration`: time budget of one group's estimate.
    pub max_nodegroup_binpacking_duration: Duration,
    /// `--new-pod-scale-up-delay`.
    pub new_pod_scale_up_delay: Duration,
    /// `--expendable-pods-priority-cutoff`: pods below it never trigger a scale-up.
    pub expendable_pods_priority_cutoff: i32,
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
    /// `--skip-nodes-with-system-pods`.
    pub skip_nodes_with_system_pods: bool,
    /// `--max-empty-bulk-delete`.
    pub max_empty_bulk_delete: usize,
    /// `--balance-similar-node-groups`.
    pub balance_similar_node_groups: bool,
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
    /// `--force-delete-unregistered-nodes`: delete instances without a node even in a group at min size.
    pub force_delete_unregistered_nodes: bool,
    /// Per-group option defaults (`--scale-down-utilization-threshold`, `--scale-down-unneeded-time`, ...).
    pub defaults: OptionValues,
}

impl Settings {
    /// A group's options: its own overrides on top of the flags' defaults.
    pub fn options_of(&self, g: &NodeGroup) -> OptionValues {
        match &g.options {
            Some(o) => o.apply_to(&self.defaults),
            None => self.defaults.clone(),
        }
    }
}
