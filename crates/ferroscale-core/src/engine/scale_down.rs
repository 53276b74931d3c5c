//! Scale-down, upstream's rules: a node of a group goes once it has been underutilized (below its
//! group's threshold, GPU nodes by GPU: `utilization`) for the group's unneeded time, the drain of its
//! pods is allowed (`drainability`) and every pod that moves fits on another node, its group stays at or
//! above min size and the cluster at or above the `--cores-total` and `--memory-total` minima (`limits`),
//! and scale-down is not paused; empty nodes go in bulk, one node with pods per loop. A node the
//! descheduler emptied (`Memory::emptying`) is looked at first and goes at once, whatever its utilization,
//! under the same rules, the group's disruption budget (or `--max-disruption`) and its do-not-disrupt pods.

use std::collections::HashMap;

use foldhash::HashSet;
use std::sync::Arc;

use super::context::Ctx;
use super::decisions::{Decisions, Disruption, ScaleDown};
use super::drainability::{drainability, long_terminating, Drain};
use super::health::NodeReadiness;
use super::limits::{AboveMin, Amount};
use super::memory::Memory;
use super::predicates::{repelling, NodeInfo, Repel};
use super::reasons::{Blocker, Removal, Unremovable};
use super::utilization::{missing_allocatable, utilization, LeftOut};
use crate::labels;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::{Node, Pdb, Pod};
use removal::{place_elsewhere, unneeded_limit, Cursors};

/// Upstream's `MaxCloudProviderNodeDeletionTime`: how long after its deletion taint was set a node
/// counts as being deleted.
const BEING_DELETED_SECS: i64 = 300;

/// Whether `node` carries a deletion taint set less than [`BEING_DELETED_SECS`] before `now` (upstream's
/// `IsNodeBeingDeleted`; the taint's value is the unix time it was set).
fn being_deleted(node: &Node, now: i64) -> bool {
    node.taints.iter().any(|t| {
        t.key == labels::TO_BE_DELETED
            && t.value
                .parse::<i64>()
                .is_ok_and(|at| now - at < BEING_DELETED_SECS)
    })
}

/// What draining a node would do with its pods.
#[derive(Default)]
pub(super) struct Drained {
    /// Pods to evict and place elsewhere, unbound from the node (shared: a pod the loop's simulation
    /// already moved is not copied again).
    pub(super) movable: Vec<Arc<Pod>>,
    /// Pods that go down with the node unevicted (besides DaemonSet and mirror pods).
    pub(super) left: Vec<String>,
    /// A pod the node waits for (`safe-to-evict: "on-completion"`).
    pub(super) waits_for: Option<String>,
}

/// The drain of `pods`, or the pod that forbids it. Expendable pods are left out of the drain as
/// upstream leaves them out of its simulation: they go down with the node.
pub(super) fn drain(pods: &[Arc<Pod>], ctx: &Ctx) -> Result<Drained, Blocker> {
    drain_with(pods, ctx.world.pdbs, ctx)
}

/// [`drain`] against `pdbs` (the loop's, less the disruptions its earlier unneeded nodes used).
fn drain_with(pods: &[Arc<Pod>], pdbs: &[Pdb], ctx: &Ctx) -> Result<Drained, Blocker> {
    let s = ctx.settings;
    let mut d = Drained::default();
    for p in pods {
        if p.meta.priority < s.expendable_pods_priority_cutoff {
            d.left.push(p.key());
            continue;
        }
        match drainability(p, pdbs, s, ctx.now) {
            Drain::Move if p.node_name.is_none() => d.movable.push(Arc::clone(p)),
            Drain::Move => d.movable.push(Arc::new(Pod {
                node_name: None,
                ..(**p).clone()
            })),
            Drain::Stay if !p.node_bound() => d.left.push(p.key()),
            Drain::Stay => {}
            Drain::Wait => {
                d.waits_for.get_or_insert_with(|| p.key());
            }
            Drain::Block(b) => return Err(b),
        }
    }
    Ok(d)
}

/// Decides which of the `existing` nodes go (their pods placed on the others in `infos`), and why the
/// others stay.
pub(super) fn scale_down(
    ctx: &Ctx,
    memory: &mut Memory,
    infos: &mut [NodeInfo],
    existing: usize,
    d: &mut Decisions,
) {
    let now = ctx.now;
    let settings = ctx.settings;
    // Nodes gone (or going) are no longer the descheduler's to empty.
    memory
        .emptying
        .retain(|n, _| infos[..existing].iter().any(|i| &i.node.name == n));
    let paused = memory.scale_down_paused(ctx.settings, ctx.now);
    // The loop's simulated snapshot: the pods of each node found unneeded are moved out of it as upstream's
    // planner moves them, so later candidates see them where they would go; those nodes receive none.
    let mut snap: Vec<NodeInfo> = infos[..existing].to_vec();
    let mut no_dest: HashSet<usize> = HashSet::default();
    let mut cursors = Cursors::default();
    // Upstream's RemainingPdbTracker: the disruptions each unneeded node's evictions would use are
    // taken from its budgets for the candidates after it.
    let mut pdbs: Vec<Pdb> = ctx.world.pdbs.to_vec();
    // Nodes going away count against their group's min size: those removed this loop and those being
    // removed in the background.
    let mut removed_per_group: HashMap<String, i32> = HashMap::new();
    for node in ctx.world.removing.keys() {
        if let Some(g) = ctx.world.node_groups.get(node) {
            *removed_per_group.entry(g.clone()).or_default() += 1;
        }
    }
    // The disruption budget also counts nodes interrupted or being replaced, and every node of a group
    // makes its size.
    let mut disrupted_per_group: HashMap<&str, usize> = HashMap::new();
    let mut group_size: HashMap<&str, usize> = HashMap::new();
    for (node, g) in ctx.world.node_groups.iter() {
        *group_size.entry(g.as_str()).or_default() += 1;
        // Removals in flight are counted above already.
        if !ctx.world.removing.contains_key(node)
            && (ctx.world.interrupted.contains_key(node) || memory.disrupting(node))
        {
            *disrupted_per_group.entry(g.as_str()).or_default() += 1;
        }
    }
    // Upstream's parallelism caps count removals in flight across loops.
    let in_flight = ctx.world.removing.len();
    let drains_in_flight = ctx.world.removing.values().filter(|d| **d).count();
    let mut removals_left = settings
        .max_scale_down_parallelism
        .saturating_sub(in_flight);
    let mut drains_left = settings
        .max_drain_parallelism
        .saturating_sub(drains_in_flight);
    // Room above the cluster's minima, without the nodes already on their way out.
    let mut total = Amount::default();
    for info in &infos[..existing] {
        if !ctx.world.removing.contains_key(&info.node.name) {
            total.add(Amount::of_node(&info.node), 1);
        }
    }
    let mut above_min = AboveMin::new(total, settings.cores_total.0, settings.memory_total_gib.0);
    let mut still_unneeded: HashMap<String, i64> = HashMap::new();
    let any_repelling = repelling(&infos[..existing]);
    let limit = unneeded_limit(settings, memory.unneeded_since.len());
    // The nodes the descheduler emptied first: it moved their pods off already in its plan.
    let mut order: Vec<usize> = (0..existing).collect();
    order.sort_by_key(|&i| !memory.emptying.contains_key(&infos[i].node.name));
    for i in order {
        let emptying = memory.emptying.get(&infos[i].node.name).copied();
        if still_unneeded.len() >= limit && emptying.is_none() {
            // Upstream's planner stops here too: more unneeded nodes than it could remove before they
            // are looked at again only cost time. The rest are looked at in a later loop.
            break;
        }
        let node = infos[i].node.clone();
        if ctx.world.removing.contains_key(&node.name)
            || ctx.world.interrupted.contains_key(&node.name)
        {
            continue;
        }
        let Some(group) = ctx
            .world
            .node_groups
            .get(&node.name)
            .and_then(|g| ctx.groups.get(g.as_str()))
        else {
            continue;
        };
        let opts = settings.options_of(group);
        // A node still starting is upcoming capacity, not a candidate (upstream leaves it out of the
        // snapshot scale-down simulates on).
        if NodeReadiness::of(&node, opts.max_node_startup_time, now, &settings.taints)
            == NodeReadiness::NotStarted
        {
            continue;
        }
        let keep = |d: &mut Decisions, why| d.unremovable.push((node.name.clone(), why));
        if being_deleted(&node, now) {
            keep(d, Unremovable::BeingDeleted);
            continue;
        }
        if node.scale_down_disabled {
            keep(d, Unremovable::ScaleDownDisabled);
            continue;
        }
        if let Some(resource) = missing_allocatable(&node) {
            keep(d, Unremovable::UtilizationUnknown { resource });
            continue;
        }
        if !node.ready && !settings.scale_down_unready_enabled {
            keep(d, Unremovable::UnreadyKept);
            continue;
        }
        let cutoff = settings.expendable_pods_priority_cutoff;
        let left_out = LeftOut {
            daemonsets: opts.ignore_daemonsets_utilization,
            mirror_pods: settings.ignore_mirror_pods_utilization,
        };
        let util = utilization(&infos[i], left_out, |p| {
            p.meta.priority >= cutoff && !long_terminating(p, now)
        });
        let threshold = if util.gpu {
            opts.scale_down_gpu_utilization_threshold
        } else {
            opts.scale_down_utilization_threshold
        };
        // A node at or below the threshold is underutilized, ready or not (upstream's eligibility.go,
        // `isNodeAtOrBelowUtilizationThreshold`: only utilization > threshold is not); an unready one
        // then waits the unready time instead of the unneeded time.
        if util.value > threshold && emptying.is_none() {
            keep(
                d,
                Unremovable::NotUnderutilized {
                    utilization: util.value,
                    threshold,
                    gpu: util.gpu,
                },
            );
            continue;
        }
        if let Some(p) = snap[i]
            .pods
            .iter()
            .find(|p| emptying.is_some() && p.meta.do_not_disrupt)
        {
            keep(
                d,
                Unremovable::Blocked(Blocker::DoNotDisrupt { pod: p.key() }),
            );
            continue;
        }
        let Drained {
            movable,
            left,
            waits_for,
        } = match drain_with(&snap[i].pods, &pdbs, ctx) {
            Ok(drained) => drained,
            Err(b) => {
                keep(d, Unremovable::Blocked(b));
                continue;
            }
        };
        let repels = movable
            .iter()
            .map(|p| Repel::of(p))
            .fold(any_repelling, Repel::max);
        let changed = match place_elsewhere(&movable, i, &snap, &no_dest, repels, &mut cursors) {
            Ok(c) => c,
            Err(why) => {
                keep(d, why);
                continue;
            }
        };
        let receivers: Vec<usize> = changed.keys().copied().filter(|&j| j != i).collect();
        for (j, n) in changed {
            snap[j] = n;
        }
        no_dest.insert(i);
        for p in &movable {
            for b in pdbs.iter_mut().filter(|b| b.covers(p)) {
                b.disruptions_allowed -= 1;
            }
        }
        let since = *memory.unneeded_since.get(&node.name).unwrap_or(&now);
        if util.value <= threshold {
            still_unneeded.insert(node.name.clone(), since);
        }
        let waited = now - emptying.unwrap_or(since);
        let needed = if node.ready {
            opts.scale_down_unneeded_time
        } else {
            opts.scale_down_unready_time
        }
        .as_secs() as i64;
        if waited < needed && emptying.is_none() {
            keep(
                d,
                if node.ready {
                    Unremovable::NotUnneededLongEnough { waited, needed }
                } else {
                    Unremovable::NotUnreadyLongEnough { waited, needed }
                },
            );
            continue;
        }
        if let Some(why) = paused {
            keep(d, Unremovable::Paused(why));
            continue;
        }
        let going = removed_per_group.get(&group.id).copied().unwrap_or(0);
        if group.target_size - going <= group.min_size {
            keep(
                d,
                Unremovable::AtMinSize {
                    group: group.id.clone(),
                },
            );
            continue;
        }
        let mut room = above_min;
        if let Err(resource) = room.take(Amount::of_node(&node)) {
            keep(d, Unremovable::MinimalResourceLimit { resource });
            continue;
        }
        if let Some(pod) = waits_for {
            keep(d, Unremovable::OnCompletion { pod });
            continue;
        }
        // The simulation moved pods of earlier unneeded nodes here; only those really here are evicted.
        let evict: Vec<&Arc<Pod>> = {
            let here: HashSet<(&str, &str)> = infos[i]
                .pods
                .iter()
                .map(|p| (p.namespace.as_str(), p.name.as_str()))
                .collect();
            movable
                .iter()
                .filter(|p| here.contains(&(p.namespace.as_str(), p.name.as_str())))
                .collect()
        };
        let empty = evict.is_empty();
        let empties = d.scale_down.iter().filter(|s| s.evict.is_empty()).count();
        if removals_left == 0 || (!empty && drains_left == 0) {
            // Full because of removals still in flight from earlier loops, or because of this loop's.
            let by_earlier = in_flight >= settings.max_scale_down_parallelism
                || (!empty && drains_in_flight >= settings.max_drain_parallelism);
            keep(
                d,
                if by_earlier {
                    Unremovable::ParallelismReached
                } else {
                    Unremovable::WaitsForNextLoop
                },
            );
            continue;
        }
        if empty && empties >= settings.max_empty_bulk_delete {
            keep(d, Unremovable::WaitsForNextLoop);
            continue;
        }
        if !settings.disruption_allowed(group, now) {
            keep(
                d,
                Unremovable::OutsideDisruptionWindow {
                    group: group.id.clone(),
                },
            );
            continue;
        }
        // Plain scale-down keeps upstream's caps (--max-scale-down-parallelism, --max-empty-bulk-delete,
        // --max-drain-parallelism); a group's own disruption budget limits it too, --max-disruption not.
        // A descheduled node is a voluntary disruption as a replacement is: `--max-disruption` too.
        let allowed = match emptying {
            Some(_) => Some(settings.budget_of(group)),
            None => group.lifecycle.disruption_budget,
        }
        .map(|b| b.allowed(group_size.get(group.id.as_str()).copied().unwrap_or(0)));
        let out = going as usize
            + disrupted_per_group
                .get(group.id.as_str())
                .copied()
                .unwrap_or(0);
        if let Some(allowed) = allowed.filter(|&a| out >= a) {
            keep(
                d,
                Unremovable::DisruptionBudget {
                    group: group.id.clone(),
                    allowed,
                },
            );
            continue;
        }
        removals_left -= 1;
        above_min = room;
        if !empty {
            drains_left -= 1;
            for j in receivers {
                infos[j] = snap[j].clone();
            }
        }
        *removed_per_group.entry(group.id.clone()).or_default() += 1;
        let disruption = emptying.map(|_| DisruptionReason::Descheduled);
        if let Some(reason) = disruption {
            d.disruptions.push(Disruption {
                node: node.name.clone(),
                group: Some(group.id.clone()),
                reason,
                notice: None,
            });
        }
        d.scale_down.push(ScaleDown {
            node: node.name.clone(),
            group: group.id.clone(),
            reason: Removal {
                utilization: util.value,
                threshold,
                waited,
                empty,
                unready: !node.ready,
                disruption,
            },
            evict: evict.iter().map(|p| p.key()).collect(),
            left,
        });
    }
    memory.unneeded_since = still_unneeded;
}

mod removal;
#[cfg(test)]
mod tests;
