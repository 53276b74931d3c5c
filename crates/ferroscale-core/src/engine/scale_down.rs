//! Scale-down, upstream's rules: a node of a group goes once it has been underutilized (below its
//! group's threshold, GPU nodes by GPU: `utilization`) for the group's unneeded time, the drain of its
//! pods is allowed (`drainability`) and every pod that moves fits on another node, its group stays at or
//! above min size and the cluster at or above the `--cores-total`, `--memory-total` and `--gpu-total`
//! minima (`limits`), and scale-down is not paused; empty nodes first, up to `--max-scale-down-parallelism`
//! (`--max-drain-parallelism` for nodes with pods); a group that scales all or nothing goes whole or not at all. A node the
//! descheduler emptied (`Memory::emptying`) is looked at first and goes at once, whatever its utilization,
//! under the same rules, the group's disruption budget (or `--max-disruption`) and its do-not-disrupt pods.

use std::collections::HashMap;

use foldhash::HashSet;
use std::sync::Arc;

use super::context::Ctx;
use super::decisions::{Decisions, Disruption, ScaleDown};
use super::drainability::{drain, Drained};
use super::health::{is_ready, NodeReadiness};
use super::ledger::{count_down, Kind, Ledger};
use super::limits::{AboveMin, Amount};
use super::memory::Memory;
use super::predicates::{repelling, NodeInfo, Repel};
use super::reasons::{Blocker, Removal, Unremovable};
use super::utilization::{missing_allocatable, utilization, Counted, LeftOut};
use crate::model::duration::secs;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::{Pdb, Pod};
use atomic::{empty, Atomic, Marks};
use removal::{place_elsewhere, unneeded_limit, Cursors};

/// A pod an admitted removal moves, and the index of the node it goes to.
pub(super) type Move = (usize, Arc<Pod>);

/// Decides which of the `existing` nodes go (their pods placed on the others in `infos`), each removal
/// admitted by the `ledger`, and why the others stay. Returns the moves of the removals admitted: the
/// what-if placements of the nodes found unneeded and kept never leave this function. A plan that
/// takes part of an atomic group (`zeroOrMaxNodeScaling`) is made again with that group kept whole.
pub(super) fn scale_down(
    ctx: &Ctx,
    memory: &mut Memory,
    ledger: &mut Ledger,
    infos: &[NodeInfo],
    existing: usize,
    d: &mut Decisions,
) -> Vec<Move> {
    let mut atomic = Atomic::of(ctx);
    if atomic.groups.is_empty() {
        return plan(ctx, memory, ledger, infos, existing, d, &atomic);
    }
    loop {
        let (memory_before, ledger_before, marks) = (memory.clone(), ledger.clone(), Marks::of(d));
        let moves = plan(ctx, memory, ledger, infos, existing, d, &atomic);
        let partial = atomic.partial(ctx, &infos[..existing], &d.scale_down[marks.0..]);
        if partial.is_empty() {
            return moves;
        }
        // Each pass keeps at least one more group whole: at most one pass per atomic group.
        *memory = memory_before;
        *ledger = ledger_before;
        marks.truncate(d);
        atomic.blocked.extend(partial);
    }
}

/// One plan of [`scale_down`], the groups of `atomic.blocked` kept whole.
fn plan(
    ctx: &Ctx,
    memory: &mut Memory,
    ledger: &mut Ledger,
    infos: &[NodeInfo],
    existing: usize,
    d: &mut Decisions,
    atomic: &Atomic,
) -> Vec<Move> {
    let now = ctx.now;
    let settings = ctx.settings;
    let mut moves = Vec::new();
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
    // taken from its budgets for the candidates after it, starting from what the ledger still allows.
    let mut pdbs: Vec<Pdb> = ledger.pdbs().to_vec();
    // Room above the cluster's minima, without the nodes already on their way out.
    let mut total = Amount::default();
    for info in &infos[..existing] {
        if !ctx.world.removing.contains_key(&info.node.name) {
            total.add(&Amount::of_node(&info.node), 1);
        }
    }
    let mut above_min = AboveMin::new(
        &total,
        settings.cores_total.0,
        settings.memory_total_gib.0,
        &settings.gpu_total,
    );
    let mut still_unneeded: HashMap<String, i64> = HashMap::new();
    // Pods that will land elsewhere whatever scale-down decides: those an admitted removal evicts and
    // those of nodes held for a replacement. Where the snapshot moves them again (their destination
    // found unneeded too), the new destination receives them.
    let mut landing: HashSet<String> = HashSet::default();
    let any_repelling = repelling(&infos[..existing]);
    let limit = unneeded_limit(settings, memory.unneeded_since.len());
    // Unneeded nodes of groups that scale one by one: what upstream's limit counts.
    let mut individual = 0;
    // The nodes held for a replacement first: they go once their new nodes join, so their pods'
    // room is reserved before any other node is found unneeded (a surge node is not taken away from
    // the pods it came for). Then the nodes the descheduler emptied: it moved their pods off already.
    // Then the nodes of atomic groups, which upstream's budgets serve before the others. Then
    // upstream's order of candidates: empty nodes, then those found unneeded before, then the rest,
    // each in the cluster's order.
    let rank: Vec<(bool, bool, bool, bool, bool)> = infos[..existing]
        .iter()
        .map(|i| {
            let name = i.node.name.as_str();
            (
                !ledger.held(name),
                !memory.emptying.contains_key(name),
                !ctx.world
                    .node_groups
                    .get(name)
                    .is_some_and(|g| atomic.is_atomic(g)),
                !empty(i, ctx),
                !memory.unneeded_since.contains_key(name),
            )
        })
        .collect();
    let mut order: Vec<usize> = (0..existing).collect();
    order.sort_by_key(|&i| rank[i]);
    for i in order {
        let emptying = memory.emptying.get(&infos[i].node.name).copied();
        let held = ledger.held(&infos[i].node.name);
        let group_id = ctx.world.node_groups.get(&infos[i].node.name);
        let in_atomic = group_id.is_some_and(|g| atomic.is_atomic(g));
        if individual >= limit && emptying.is_none() && !held && !in_atomic {
            // Upstream's planner skips these too: more unneeded nodes than it could remove before
            // they are looked at again only cost time. They are looked at in a later loop.
            continue;
        }
        let node = &infos[i].node;
        if held {
            landing.extend(reserve(
                ctx,
                &mut snap,
                i,
                &mut no_dest,
                &mut pdbs,
                any_repelling,
                &mut cursors,
            ));
            continue;
        }
        if ledger.out_of_service(&node.name) || ctx.world.interrupted.contains_key(&node.name) {
            continue;
        }
        let Some(group) = group_id.and_then(|g| ctx.groups.get(g.as_str())) else {
            continue;
        };
        let opts = settings.options_of(group);
        // A node still starting is upcoming capacity, not a candidate (upstream leaves it out of the
        // snapshot scale-down simulates on).
        if NodeReadiness::of(node, opts.max_node_startup_time, now, &settings.taints)
            == NodeReadiness::NotStarted
        {
            continue;
        }
        let keep = |d: &mut Decisions, why| d.unremovable.push((node.name.clone(), why));
        if node.being_deleted(now) {
            keep(d, Unremovable::BeingDeleted);
            continue;
        }
        // Upstream's pre-filtering (`pre_filtering_processor.go`): a node that can never go now (the
        // annotation, its group at min size) is no candidate: it is not simulated as removed, so it
        // stays a destination for the others' pods, and it gets no soft taint.
        if node.scale_down_disabled {
            keep(d, Unremovable::ScaleDownDisabled);
            continue;
        }
        if node.do_not_disrupt {
            keep(d, Unremovable::DoNotDisrupt);
            continue;
        }
        if ledger.above_min(group) == 0 {
            keep(
                d,
                Unremovable::AtMinSize {
                    group: group.id.clone(),
                },
            );
            continue;
        }
        // The descheduler's moves stand for its cooldown: a pod it placed here is not moved again.
        if let Some(p) = recently_descheduled(&infos[i], memory).filter(|_| emptying.is_none()) {
            keep(d, Unremovable::Descheduled { pod: p });
            continue;
        }
        if let Some(resource) = missing_allocatable(node) {
            keep(d, Unremovable::UtilizationUnknown { resource });
            continue;
        }
        let ready = is_ready(node, &settings.taints);
        if !ready && !settings.scale_down_unready_enabled {
            keep(d, Unremovable::UnreadyKept);
            continue;
        }
        let cutoff = settings.expendable_pods_priority_cutoff;
        let left_out = LeftOut {
            daemonsets: opts.ignore_daemonsets_utilization,
            mirror_pods: settings.ignore_mirror_pods_utilization,
        };
        let util = utilization(&infos[i], left_out, Counted { cutoff, now });
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
        // An underutilized node of an atomic group that cannot go whole is not simulated: it stays a
        // destination for the others' pods (upstream's prefilter and its simulation's rollback).
        if atomic.blocked.contains(&group.id) {
            keep(
                d,
                Unremovable::AtomicScaleDownFailed {
                    group: group.id.clone(),
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
        let mut drained = match drain(&snap[i].pods, &pdbs, ctx) {
            Ok(drained) => drained,
            Err(b) => {
                keep(d, Unremovable::Blocked(b));
                continue;
            }
        };
        let movable = std::mem::take(&mut drained.movable);
        let waits_for = drained.waits_for.take();
        let repels = movable
            .iter()
            .map(|p| Repel::of(p))
            .fold(any_repelling, Repel::max);
        let (changed, placed) =
            match place_elsewhere(&movable, i, &snap, &no_dest, repels, &mut cursors) {
                Ok(c) => c,
                Err(why) => {
                    keep(d, why);
                    continue;
                }
            };
        for (j, n) in changed {
            snap[j] = n;
        }
        no_dest.insert(i);
        count_down(&mut pdbs, &movable);
        let since = *memory.unneeded_since.get(&node.name).unwrap_or(&now);
        if util.value <= threshold {
            still_unneeded.insert(node.name.clone(), since);
            individual += usize::from(!in_atomic);
        }
        let waited = now - emptying.unwrap_or(since);
        let needed = secs(if ready {
            opts.scale_down_unneeded_time
        } else {
            opts.scale_down_unready_time
        });
        if waited < needed && emptying.is_none() {
            keep(
                d,
                if ready {
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
        let mut room = above_min.clone();
        if let Err(resource) = room.take(&Amount::of_node(node)) {
            keep(d, Unremovable::MinimalResourceLimit { resource });
            continue;
        }
        if let Some(pod) = waits_for {
            keep(d, Unremovable::OnCompletion { pod });
            continue;
        }
        // The simulation moved pods of earlier unneeded nodes here (and pending pods that will fit);
        // only those bound here now are evicted.
        let bound = infos[i].bound();
        let here: HashSet<(&str, &str)> = bound
            .iter()
            .map(|p| (p.namespace.as_str(), p.name.as_str()))
            .collect();
        let really = |p: &Arc<Pod>| here.contains(&(p.namespace.as_str(), p.name.as_str()));
        let evict: Vec<Arc<Pod>> = movable.iter().filter(|p| really(p)).cloned().collect();
        let empty = evict.is_empty();
        // Plain scale-down keeps upstream's caps (--max-scale-down-parallelism for every removal,
        // --max-drain-parallelism for those with pods to evict; --max-empty-bulk-delete no more, as
        // upstream since 1.33); a group's own disruption budget limits it too, --max-disruption not.
        // A descheduled node is a voluntary disruption as a replacement is: `--max-disruption` too.
        let kind = match emptying {
            Some(_) => Kind::Voluntary,
            None => Kind::ScaleDown,
        };
        if in_atomic {
            ledger.overflow_for(ctx, &group.id, !evict.is_empty());
        }
        if let Err(why) = ledger.take_removal(ctx, node, Some(group), &evict, kind) {
            keep(d, why.into());
            continue;
        }
        above_min = room;
        for (p, j) in movable.iter().zip(&placed) {
            if really(p) || landing.contains(&p.key()) {
                ledger.receive(&infos[*j].node.name);
                moves.push((*j, Arc::clone(p)));
                landing.insert(p.key());
            }
        }
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
                unready: !ready,
                disruption,
            },
            evict: evict.iter().map(|p| p.key()).collect(),
            daemon_sets: drained.daemon_sets_evicted(settings, !empty),
            left: drained.left,
        });
    }
    memory.unneeded_since = still_unneeded;
    moves
}

/// Moves the pods of node `i`, held for a replacement, out of the loop's simulated snapshot onto the
/// others (when they all fit), as if it were removed: the room they take is no longer found unneeded.
/// Returns the pods moved (their keys).
fn reserve(
    ctx: &Ctx,
    snap: &mut [NodeInfo],
    i: usize,
    no_dest: &mut HashSet<usize>,
    pdbs: &mut [Pdb],
    any_repelling: Repel,
    cursors: &mut Cursors,
) -> Vec<String> {
    no_dest.insert(i);
    let Ok(Drained { movable, .. }) = drain(&snap[i].pods, pdbs, ctx) else {
        return Vec::new();
    };
    let repels = movable
        .iter()
        .map(|p| Repel::of(p))
        .fold(any_repelling, Repel::max);
    if let Ok((changed, _)) = place_elsewhere(&movable, i, snap, no_dest, repels, cursors) {
        for (j, n) in changed {
            snap[j] = n;
        }
        count_down(pdbs, &movable);
        return movable.iter().map(|p| p.key()).collect();
    }
    Vec::new()
}

/// A pod bound to `info`'s node whose workload the descheduler moved within its cooldown, if any.
pub(super) fn recently_descheduled(info: &NodeInfo, memory: &Memory) -> Option<String> {
    if memory.descheduled.is_empty() {
        return None;
    }
    info.bound_pods()
        .find(|p| memory.descheduled.contains(&p.owner_key()))
        .map(|p| p.key())
}

mod atomic;
mod removal;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_daemon_sets;
