//! Groups that scale all or nothing (`zeroOrMaxNodeScaling`) in scale-down, as upstream's planner
//! (`prefilterIncompleteAtomicNodeGroups`, `simulateAtomicNodeGroup`), its `AtomicResizeFilteringProcessor`
//! and its budgets (`CropNodes`: emptyAtomic/drainAtomic) have it: a group's nodes go together, every
//! registered one (or as many as its target size), or none does. A loop that would take only part of
//! such a group is planned again with the group kept whole: its nodes stay, destinations for the
//! others' pods, each kept for `AtomicScaleDownFailed`. And the order upstream's scale-down candidates
//! are looked at in: empty nodes first, then those found unneeded before.

use foldhash::{HashMap, HashSet};

use crate::engine::context::Ctx;
use crate::engine::decisions::{Decisions, ScaleDown};
use crate::engine::drainability::long_terminating;
use crate::engine::predicates::NodeInfo;

/// The atomic groups of the loop, and those kept whole in this plan.
#[derive(Default)]
pub(in crate::engine) struct Atomic {
    /// Groups with `zeroOrMaxNodeScaling`.
    pub groups: HashSet<String>,
    /// Atomic groups of which this plan takes no node.
    pub blocked: HashSet<String>,
}

impl Atomic {
    /// The loop's atomic groups.
    pub fn of(ctx: &Ctx) -> Self {
        Atomic {
            groups: ctx
                .groups
                .values()
                .filter(|g| ctx.settings.options_of(g).zero_or_max_node_scaling)
                .map(|g| g.id.clone())
                .collect(),
            blocked: HashSet::default(),
        }
    }

    pub fn is_atomic(&self, group: &str) -> bool {
        !self.groups.is_empty() && self.groups.contains(group)
    }

    /// The atomic groups of which `removed` takes some nodes but not all: fewer than the group's
    /// registered nodes (those already being removed counted as taken) and than its target size.
    pub fn partial(&self, ctx: &Ctx, infos: &[NodeInfo], removed: &[ScaleDown]) -> Vec<String> {
        let mut taken: HashMap<&str, i32> = HashMap::default();
        for r in removed.iter().filter(|r| self.is_atomic(&r.group)) {
            *taken.entry(r.group.as_str()).or_default() += 1;
        }
        if taken.is_empty() {
            return Vec::new();
        }
        // Registered nodes of each group taken from, and how many of them are already going.
        let mut registered: HashMap<&str, (i32, i32)> = HashMap::default();
        for i in infos {
            let Some(g) = ctx.world.node_groups.get(&i.node.name) else {
                continue;
            };
            if let Some(e) = taken.get_key_value(g.as_str()).map(|(k, _)| *k) {
                let r = registered.entry(e).or_default();
                r.0 += 1;
                r.1 += i32::from(ctx.world.removing.contains_key(&i.node.name));
            }
        }
        let mut partial: Vec<String> = taken
            .iter()
            .filter(|(g, n)| {
                let (size, going) = registered.get(*g).copied().unwrap_or_default();
                let target = ctx.groups.get(*g).map_or(size, |g| g.target_size);
                **n + going != size && **n != target
            })
            .map(|(g, _)| g.to_string())
            .collect();
        partial.sort();
        partial
    }
}

/// Where `d`'s lists stood before a plan: what a plan made again is cut back to.
pub(super) struct Marks(pub usize, usize, usize);

impl Marks {
    pub fn of(d: &Decisions) -> Self {
        Marks(d.scale_down.len(), d.unremovable.len(), d.disruptions.len())
    }

    pub fn truncate(&self, d: &mut Decisions) {
        d.scale_down.truncate(self.0);
        d.unremovable.truncate(self.1);
        d.disruptions.truncate(self.2);
    }
}

/// Whether `info`'s node is empty as upstream's candidate sorting reads it: none of the pods bound to
/// it would move (only DaemonSet and mirror pods, pods terminating past their grace period, and
/// expendable ones, which go down with it).
pub(super) fn empty(info: &NodeInfo, ctx: &Ctx) -> bool {
    let name = info.node.name.as_str();
    info.pods
        .iter()
        .filter(|p| p.node_name.as_deref() == Some(name))
        .all(|p| {
            p.node_bound()
                || long_terminating(p, ctx.now)
                || p.meta.priority < ctx.settings.expendable_pods_priority_cutoff
        })
}
