//! What one loop decided, and why.

use super::consolidate::reasons::{Declined, Waits};
use super::limits::Resource;
use super::reasons::{Cancel, Doubt, Due, InstanceFault, Pending, Removal, Unhealthy, Unremovable};
use crate::model::lifecycle::DisruptionReason;

/// A group to grow.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleUp {
    pub group: String,
    pub delta: i32,
    /// Pods (`namespace/name`) the new nodes are for.
    pub pods: Vec<String>,
}

/// A node to remove.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleDown {
    pub node: String,
    pub group: String,
    pub reason: Removal,
    /// Pods to evict first (none for an empty node).
    pub evict: Vec<String>,
    /// Pods left to go down with the node unevicted, besides DaemonSet and mirror pods: expendable ones
    /// and those terminating past their grace period (upstream leaves them out of the drain too).
    pub left: Vec<String>,
    /// DaemonSet pods to evict after `evict`, best effort (upstream's
    /// `--daemonset-eviction-for-occupied-nodes`, true, and `--daemonset-eviction-for-empty-nodes`,
    /// false): a failure does not keep the node.
    pub daemon_sets: Vec<String>,
}

/// A cloud instance to delete because it never became a usable node.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteInstance {
    pub group: String,
    /// Provider id.
    pub instance: String,
    pub reason: InstanceFault,
}

/// Capacity asked for and given up: the group's target is lowered by `count`.
#[derive(Debug, Clone, PartialEq)]
pub struct CancelCapacity {
    pub group: String,
    pub count: i32,
    pub reason: Cancel,
}

/// A node taken out of service other than for scale-down.
#[derive(Debug, Clone, PartialEq)]
pub struct Disruption {
    pub node: String,
    /// Its group, when it has one.
    pub group: Option<String>,
    pub reason: DisruptionReason,
    /// How the node goes when a notice takes it out this loop (`None` for drift and expiry, which go
    /// as scale-downs once their replacement joined).
    pub notice: Option<NoticeDrain>,
}

/// How a node with a notice is drained.
#[derive(Debug, Clone, PartialEq)]
pub enum NoticeDrain {
    /// The cloud takes the instance whatever happens: every pod but DaemonSet and mirror pods is
    /// evicted within the interruption's grace, and the instance is deleted even if some stay.
    Involuntary,
    /// Under the drainability rules and budgets, as a scale-down: these pods (`namespace/name`) are
    /// evicted, `left` go down with the node unevicted; the node is kept if any eviction fails or a pod
    /// landed meanwhile.
    Voluntary {
        evict: Vec<String>,
        left: Vec<String>,
    },
}

/// A scale-up that replaces disrupted nodes: it places pods of `for_nodes`.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    pub group: String,
    pub delta: i32,
    pub for_nodes: Vec<String>,
}

/// What a consolidation does with its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsolidationAction {
    /// Their pods fit on the other nodes: they are drained and deleted this loop.
    Delete,
    /// Their pods need new nodes (`into`), asked for this loop; the old nodes are drained once the new
    /// ones have joined and are ready (surge first), or kept if they do not within the group's
    /// `maxNodeProvisionTime`.
    Replace,
}

impl std::fmt::Display for ConsolidationAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConsolidationAction::Delete => "delete",
            ConsolidationAction::Replace => "replace",
        })
    }
}

/// New nodes of one group a consolidation asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNodes {
    pub group: String,
    pub count: i32,
}

/// A consolidation decided this loop: `nodes` go, their pods onto the other nodes and `into`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsolidationPlan {
    pub action: ConsolidationAction,
    pub nodes: Vec<String>,
    pub into: Vec<NewNodes>,
    /// Hourly price of the nodes taken (USD).
    pub price_per_hour: f64,
    /// Their price less the new nodes' (USD an hour): above 0 by construction.
    pub savings_per_hour: f64,
    /// Pods evicted from `nodes` (`namespace/name`).
    pub pods_evicted: Vec<String>,
}

/// Which way a scale event goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

/// The loop's decisions and explanations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    /// Instances that failed to launch or never registered within `--max-node-provision-time`.
    pub delete_instances: Vec<DeleteInstance>,
    pub scale_up: Vec<ScaleUp>,
    pub scale_down: Vec<ScaleDown>,
    /// Pods left pending (by key), with why.
    pub pending: Vec<(String, Pending)>,
    /// Nodes kept, with why.
    pub unremovable: Vec<(String, Unremovable)>,
    /// The expander's scores, when it chose.
    pub expander: Vec<String>,
    /// Capacity not delivered that is given up.
    pub cancel: Vec<CancelCapacity>,
    /// Set when too many nodes are unready: the loop decided nothing else.
    pub unhealthy: Option<Unhealthy>,
    /// The doubts that held scale-down (and the deletion of unregistered instances) back.
    pub held_back: Vec<Doubt>,
    /// Groups not grown because `--cores-total`, `--memory-total` or `--gpu-total` is reached, with the resource
    /// (upstream's skipped scale-ups).
    pub skipped_scale_ups: Vec<(String, Resource)>,
    /// Nodes whose instance is going away this loop, with why.
    pub disruptions: Vec<Disruption>,
    /// The scale-ups among `scale_up` that replace them.
    pub replacements: Vec<Replacement>,
    /// Nodes due for replacement (drift, expiry) this loop: those whose surge was asked for, with
    /// why, and those kept although drifted or expired, with why (drift not enabled, do-not-disrupt).
    pub due: Vec<(String, Due)>,
    /// Unneeded nodes to mark `DeletionCandidateOfClusterAutoscaler:PreferNoSchedule` (upstream's soft
    /// taint: the scheduler prefers other nodes, so the node empties before it goes).
    pub soft_taint: Vec<String>,
    /// Nodes needed again whose soft taint goes.
    pub soft_untaint: Vec<String>,
    /// Consolidations decided this loop (their deletions are in `scale_down`, their new nodes in
    /// `scale_up` and `replacements`; the old nodes of a replacement go in a later loop, as
    /// `disruptions` of reason `consolidation`).
    pub consolidations: Vec<ConsolidationPlan>,
    /// Nodes consolidation would have taken and did not, with why (saving too small, budget,
    /// do-not-disrupt, window, new nodes not ready in time).
    pub consolidation_declined: Vec<(String, Declined)>,
    /// Why consolidation looked for nothing this loop, when it did not.
    pub consolidation_waits: Option<Waits>,
    /// Nodes no pod is to be moved onto after this loop (the descheduler's destinations leave them
    /// out): every node any method is removing, replacing, consolidating or emptying, and every node
    /// scale-down holds unneeded. Sorted.
    pub not_destinations: Vec<String>,
    /// The loop's PodDisruptionBudgets with what they still allow once every eviction the loop
    /// admitted (and those of removals in flight) is counted: what a later method of the same loop
    /// (the descheduler) may still take.
    pub pdbs_left: Vec<crate::model::workload::Pdb>,
    /// The intents of the actions under way once this loop decided, by node: what the nodes'
    /// `ferroscale.io/intent` annotations are to say. None when the loop decided nothing (the cluster
    /// unhealthy): the annotations stay as they are.
    pub intents: Option<std::collections::BTreeMap<String, super::intents::Intent>>,
}

impl Decisions {
    /// Pending pods no existing or upcoming node will take (upstream's unschedulable pods).
    pub fn unschedulable(&self) -> impl Iterator<Item = &(String, Pending)> {
        self.pending.iter().filter(|(_, why)| why.unschedulable())
    }

    /// Scale events skipped because a cluster-wide limit is reached (upstream's
    /// `skipped_scale_events_count`): each group not grown and each node not removed, with the resource.
    pub fn skipped(&self) -> impl Iterator<Item = (Direction, Resource)> + '_ {
        let up = self
            .skipped_scale_ups
            .iter()
            .map(|(_, r)| (Direction::Up, *r));
        let down = self.unremovable.iter().filter_map(|(_, why)| match why {
            Unremovable::MinimalResourceLimit { resource } => Some((Direction::Down, *resource)),
            _ => None,
        });
        up.chain(down)
    }

    /// Of those, the pods that could have triggered a scale-up and did not (upstream's
    /// NotTriggerScaleUp), leaving out those only too new to count yet.
    pub fn not_triggered(&self) -> impl Iterator<Item = &(String, Pending)> {
        self.pending.iter().filter(|(_, why)| why.not_triggered())
    }
}
