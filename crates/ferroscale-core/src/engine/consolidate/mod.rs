//! Consolidation (issue #29): each loop after scale-up, scale-down and drift replacement, nodes of groups
//! whose policy allows it (`Settings::consolidation_of`) are deleted when their pods fit on the other
//! nodes, or replaced by fewer or cheaper new nodes of any group, when the hourly saving is worth the
//! disruption (`--consolidation-min-savings`, `--consolidation-min-savings-per-pod`).
//!
//! A replacement is surge first, as drift's: the new nodes are asked for (a scale-up, and a
//! `Replacement` naming the old nodes); the old nodes are drained and deleted in a later loop once as
//! many new nodes of that group have registered, ready, since; they are kept (and are no candidates
//! again for their group's `after`) when the new nodes are not ready within the group's
//! `maxNodeProvisionTime`. One consolidation is under way at a time, and none starts while a group
//! backs off, while the loop scales up, or while scale-down's cooldown applies.
//!
//! The search is bounded: candidates are ordered by hourly price per unit of eviction cost
//! (`candidates`); each of the first `--consolidation-max-candidates` is evaluated alone, and prefixes of
//! that order of 2 up to `--consolidation-max-set` nodes as sets, all within
//! `--consolidation-search-time` on the loop's clock. The plan saving the most per unit of disruption
//! wins. A larger bound finds sets of nodes that are only worth replacing together at the cost of time
//! (each evaluation places every evicted pod on the rest of the cluster); an unexamined set is found in
//! a later loop once the better ones are taken.

mod candidates;
mod evaluate;
pub mod reasons;

use std::collections::HashMap;

use super::cleanup::TIMEOUT;
use super::context::Ctx;
use super::decisions::{
    ConsolidationAction, ConsolidationPlan, Decisions, NewNodes, Replacement, ScaleUp,
};
use super::drainability::drain;
use super::health::is_ready;
use super::ledger::Ledger;
use super::memory::{Consolidating, Memory};
use super::predicates::{first_fit, NodeInfo};
use super::reasons::{Blocker, Unremovable};
use super::replace::retire;
use crate::clock::Deadline;
use crate::model::duration::secs;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::Pod;
use candidates::{candidates, room, Candidate};
use evaluate::{Evaluator, Found};

pub use candidates::eviction_cost;
pub use reasons::{Declined, Waits};

/// Adds this loop's consolidations to `d`, each admitted by the `ledger`: the old nodes of those under
/// way whose new nodes have joined, and at most one new plan. `infos` are the loop's existing nodes with
/// the moves of the actions admitted before (where pods go); what a removal evicts is only what is bound
/// to its node now ([`NodeInfo::bound`]).
pub(super) fn consolidate(
    ctx: &Ctx,
    memory: &mut Memory,
    ledger: &mut Ledger,
    infos: &[NodeInfo],
    d: &mut Decisions,
) {
    let present: HashMap<&str, &NodeInfo> =
        infos.iter().map(|i| (i.node.name.as_str(), i)).collect();
    memory
        .consolidated
        .retain(|n, _| present.contains_key(n.as_str()));
    candidates::note_pod_changes(memory, infos, ctx.now);
    progress(ctx, memory, ledger, infos, &present, d);
    let settings = ctx.settings;
    if !ctx
        .world
        .groups
        .iter()
        .any(|g| settings.consolidation_of(g).enabled())
    {
        return;
    }
    if let Some(why) = waits(ctx, memory, d) {
        d.consolidation_waits = Some(why);
        return;
    }
    let cands = candidates(ctx, memory, ledger, infos, d);
    if cands.is_empty() {
        return;
    }
    let Some(best) = search(ctx, memory, ledger, infos, &cands, d) else {
        return;
    };
    carry_out(ctx, memory, ledger, infos, &cands, best, d);
}

/// Why no new plan is looked for this loop, if none is.
fn waits(ctx: &Ctx, memory: &Memory, d: &Decisions) -> Option<Waits> {
    if !memory.consolidating.is_empty() {
        return Some(Waits::InProgress);
    }
    let mut ids: Vec<&str> = ctx.world.groups.iter().map(|g| g.id.as_str()).collect();
    ids.sort();
    if let Some(g) = ids
        .into_iter()
        .find(|g| memory.backed_off(g, ctx.now).is_some())
    {
        return Some(Waits::BackingOff {
            group: g.to_string(),
        });
    }
    if !d.scale_up.is_empty() {
        return Some(Waits::ScalingUp);
    }
    if let Some(p) = memory.scale_down_paused(ctx.settings, ctx.now) {
        return Some(Waits::Paused(p));
    }
    d.scale_down
        .iter()
        .any(|s| s.reason.disruption.is_some())
        .then_some(Waits::Retiring)
}

/// The consolidations under way: the old nodes go once the new ones have joined (each admitted by the
/// ledger; one it declines for now waits for a later loop), or stay if they have not in time, and the
/// new nodes' group then backs off as after a failed scale-up.
fn progress(
    ctx: &Ctx,
    memory: &mut Memory,
    ledger: &mut Ledger,
    infos: &[NodeInfo],
    present: &HashMap<&str, &NodeInfo>,
    d: &mut Decisions,
) {
    let world = ctx.world;
    let plans = std::mem::take(&mut memory.consolidating);
    for plan in plans {
        let Some(g) = ctx.groups.get(plan.group.as_str()).copied() else {
            continue;
        };
        let provision = secs(ctx.settings.options_of(g).max_node_provision_time);
        let mut fresh: Vec<&str> = present
            .values()
            .filter(|i| {
                let name = i.node.name.as_str();
                world.node_groups.get(name) == Some(&g.id)
                    && is_ready(&i.node, &ctx.settings.taints)
                    && i.node.seen > plan.since
                    && !memory.surge_claimed.contains_key(name)
                    // A new node on its way out is no room for the old nodes' pods (scale-down
                    // waits while a replacement is under way, but a removal may be in flight).
                    && !ledger.out_of_service(name)
            })
            .map(|i| i.node.name.as_str())
            .collect();
        fresh.sort();
        let joined = fresh.len() >= plan.count as usize;
        fresh.truncate(plan.count as usize);
        if joined && !still_fits(ctx, ledger, infos, &plan, &fresh) {
            // New pods (bound since) took the room the plan counted on: the old nodes stay.
            for old in &plan.nodes {
                memory.consolidated.insert(old.clone(), ctx.now);
                d.consolidation_declined.push((
                    old.clone(),
                    Declined::RoomTaken {
                        group: g.id.clone(),
                    },
                ));
            }
        } else if joined {
            let first = plan.nodes.iter().min().cloned().unwrap_or_default();
            for new in fresh {
                memory.surge_claimed.insert(new.to_string(), first.clone());
            }
            let mut waiting = Vec::new();
            for old in &plan.nodes {
                let Some(info) = present.get(old.as_str()) else {
                    continue;
                };
                let Some(og) = world
                    .node_groups
                    .get(old)
                    .and_then(|id| ctx.groups.get(id.as_str()).copied())
                else {
                    continue;
                };
                // A pod that may no longer be evicted (or has been marked do-not-disrupt since) keeps
                // its node, as it keeps it from scale-down.
                if info.node.do_not_disrupt {
                    d.consolidation_declined
                        .push((old.clone(), Declined::NodeDoNotDisrupt));
                    continue;
                }
                if let Some(p) = info.bound().iter().find(|p| p.meta.do_not_disrupt) {
                    d.consolidation_declined
                        .push((old.clone(), Declined::DoNotDisrupt { pod: p.key() }));
                    continue;
                }
                match retire(ctx, ledger, info, og, DisruptionReason::Consolidation, d) {
                    Ok(()) => {}
                    // Held by the caps or a PodDisruptionBudget for now: a later loop retires it,
                    // within the group's provision time from now.
                    Err(
                        why @ (Unremovable::ParallelismReached
                        | Unremovable::WaitsForNextLoop
                        | Unremovable::EvictionLimit { .. }
                        | Unremovable::Blocked(Blocker::Budget { .. })),
                    ) if plan.count > 0 || ctx.now - plan.since <= provision => {
                        d.consolidation_declined.push((old.clone(), why.into()));
                        waiting.push(old.clone());
                    }
                    Err(why) => {
                        memory.consolidated.insert(old.clone(), ctx.now);
                        d.consolidation_declined.push((old.clone(), why.into()));
                    }
                }
            }
            if !waiting.is_empty() {
                memory.consolidating.push(Consolidating {
                    nodes: waiting,
                    group: plan.group.clone(),
                    count: 0,
                    since: if plan.count > 0 { ctx.now } else { plan.since },
                });
            }
        } else if ctx.now - plan.since > provision {
            // The new nodes did not come: their group backs off as after a failed scale-up, so the
            // plan is not made again while it does (consolidation waits while a group backs off).
            memory.scale_up_failed(&g.id, TIMEOUT, ctx.now);
            for old in &plan.nodes {
                memory.consolidated.insert(old.clone(), ctx.now);
                d.consolidation_declined.push((
                    old.clone(),
                    Declined::NotReadyInTime {
                        group: g.id.clone(),
                    },
                ));
            }
        } else {
            memory.consolidating.push(plan);
        }
    }
}

/// Whether the pods `plan` evicts still fit on the rest of the cluster as this loop leaves it
/// (scale-down's removals and moves applied), as the plan placed them: first fit on the other nodes
/// in order, the rest, largest first, on the new nodes `fresh`.
fn still_fits(
    ctx: &Ctx,
    ledger: &Ledger,
    infos: &[NodeInfo],
    plan: &Consolidating,
    fresh: &[&str],
) -> bool {
    let world = ctx.world;
    let going = |n: &str| {
        plan.nodes.iter().any(|x| x == n)
            || ledger.out_of_service(n)
            || world.interrupted.contains_key(n)
    };
    let usable = |i: &&NodeInfo| {
        is_ready(&i.node, &ctx.settings.taints) && !i.node.template && !going(&i.node.name)
    };
    let is_new = |i: &&NodeInfo| fresh.contains(&i.node.name.as_str());
    let mut others: Vec<NodeInfo> = infos
        .iter()
        .filter(usable)
        .filter(|i| !is_new(i))
        .cloned()
        .collect();
    let mut new: Vec<NodeInfo> = infos
        .iter()
        .filter(usable)
        .filter(is_new)
        .cloned()
        .collect();
    // A node whose drain is refused is kept by `retire`: only the pods that would move count.
    let movable: Vec<_> = infos
        .iter()
        .filter(|i| plan.nodes.contains(&i.node.name))
        .filter_map(|i| drain(&i.bound(), ledger.pdbs(), ctx).ok())
        .flat_map(|x| x.movable)
        .collect();
    let pods: Vec<&Pod> = movable.iter().map(|p| p.as_ref()).collect();
    let placed = first_fit(&pods, &mut others, |_| true);
    let mut left: Vec<&Pod> = pods
        .iter()
        .zip(&placed)
        .filter(|(_, at)| at.is_none())
        .map(|(p, _)| *p)
        .collect();
    left.sort_by_key(|p| std::cmp::Reverse((p.requests.cpu_milli, p.requests.memory)));
    first_fit(&left, &mut new, |_| true)
        .iter()
        .all(Option::is_some)
}

/// The best plan among single candidates and prefixes of the candidates' order, within the bounds.
fn search(
    ctx: &Ctx,
    memory: &Memory,
    ledger: &Ledger,
    infos: &[NodeInfo],
    cands: &[Candidate],
    d: &mut Decisions,
) -> Option<Found> {
    let s = ctx.settings;
    let deadline = Deadline::after(ctx.clock, s.consolidation_search_time);
    let eval = Evaluator::new(ctx, memory, ledger, infos, d);
    let mut best: Option<Found> = None;
    let mut consider = |f: Found| {
        let better = best.as_ref().is_none_or(|b| {
            f.score() > b.score() || (f.score() == b.score() && f.saving > b.saving)
        });
        if better {
            best = Some(f);
        }
    };
    let limit = s.consolidation_max_candidates.min(cands.len());
    for k in 0..limit {
        if deadline.passed() {
            break;
        }
        match eval
            .evaluate(cands, &[k])
            .and_then(|f| admissible(ctx, ledger, cands, f))
        {
            Ok(f) => consider(f),
            // No cheaper placement is the common case, not worth reporting each loop.
            Err(Declined::NothingCheaper) => {}
            Err(why) => d
                .consolidation_declined
                .push((infos[cands[k].index].node.name.clone(), why)),
        }
    }
    // Prefixes of the order as sets, each group kept within its budget and min size.
    let mut room: HashMap<&str, usize> = room(ctx, ledger)
        .into_iter()
        .map(|(g, (n, _))| (g, n))
        .collect();
    let mut set = Vec::new();
    for k in 0..limit {
        if set.len() >= s.consolidation_max_set || deadline.passed() {
            break;
        }
        let left = room.entry(cands[k].group.id.as_str()).or_default();
        if *left == 0 {
            continue;
        }
        *left -= 1;
        set.push(k);
        if set.len() >= 2 {
            if let Ok(f) = eval
                .evaluate(cands, &set)
                .and_then(|f| admissible(ctx, ledger, cands, f))
            {
                consider(f);
            }
        }
    }
    best
}

/// `f` if the ledger would admit it now: its evictions within every PodDisruptionBudget, node after
/// node; for a deletion (carried out this loop) also within the caps.
fn admissible(
    ctx: &Ctx,
    ledger: &Ledger,
    cands: &[Candidate],
    f: Found,
) -> Result<Found, Declined> {
    let pods: Vec<&[std::sync::Arc<Pod>]> =
        f.set.iter().map(|&k| cands[k].movable.as_slice()).collect();
    ledger.pdb_check_all(&pods).map_err(Declined::Blocked)?;
    if f.into.is_none() {
        let drains = pods.iter().filter(|p| !p.is_empty()).count();
        if drains > ledger.drains_left(ctx) {
            return Err(Declined::Parallelism);
        }
        let evictions: usize = pods.iter().map(|p| p.len()).sum();
        if !ledger.evictions_allowed(ctx, evictions) {
            return Err(Declined::EvictionLimit {
                max: ctx.settings.max_evictions_per_loop,
            });
        }
    }
    Ok(f)
}

/// Carries the chosen plan out, through the ledger: a deletion at once, a replacement's new nodes
/// first (its old nodes are held out of service until they join).
fn carry_out(
    ctx: &Ctx,
    memory: &mut Memory,
    ledger: &mut Ledger,
    infos: &[NodeInfo],
    cands: &[Candidate],
    f: Found,
    d: &mut Decisions,
) {
    let mut nodes: Vec<String> = f
        .set
        .iter()
        .map(|&k| infos[cands[k].index].node.name.clone())
        .collect();
    nodes.sort();
    // The plan's nodes are no longer declined for something a smaller plan lacked.
    d.consolidation_declined.retain(|(n, _)| !nodes.contains(n));
    let pods_evicted = f
        .set
        .iter()
        .flat_map(|&k| cands[k].movable.iter().map(|p| p.key()))
        .collect();
    let action = match &f.into {
        None => {
            for &k in &f.set {
                let c = &cands[k];
                let info = &infos[c.index];
                if let Err(why) = retire(
                    ctx,
                    ledger,
                    info,
                    c.group,
                    DisruptionReason::Consolidation,
                    d,
                ) {
                    d.consolidation_declined
                        .push((info.node.name.clone(), why.into()));
                }
            }
            ConsolidationAction::Delete
        }
        Some((group, count)) => {
            let Some(g) = ctx.groups.get(group.as_str()).copied() else {
                return;
            };
            if let Err(why) = ledger.take_surge(ctx, memory, g, *count) {
                for n in &nodes {
                    d.consolidation_declined
                        .push((n.clone(), Declined::NoNewNodes(why.clone())));
                }
                return;
            }
            for &k in &f.set {
                ledger.hold(&infos[cands[k].index].node.name, &cands[k].group.id);
            }
            d.scale_up.push(ScaleUp {
                group: group.clone(),
                delta: *count,
                pods: Vec::new(),
            });
            d.replacements.push(Replacement {
                group: group.clone(),
                delta: *count,
                for_nodes: nodes.clone(),
            });
            memory.consolidating.push(Consolidating {
                nodes: nodes.clone(),
                group: group.clone(),
                count: *count,
                since: ctx.now,
            });
            // New capacity is a scale-up: scale-down pauses after it as after any other.
            memory.last_scale_up = Some(ctx.now);
            ConsolidationAction::Replace
        }
    };
    d.consolidations.push(ConsolidationPlan {
        action,
        nodes,
        into: f
            .into
            .map(|(group, count)| vec![NewNodes { group, count }])
            .unwrap_or_default(),
        price_per_hour: f.price,
        savings_per_hour: f.saving,
        pods_evicted,
    });
}

impl From<crate::engine::ledger::Declined> for Declined {
    fn from(d: crate::engine::ledger::Declined) -> Self {
        use crate::engine::ledger::Declined as L;
        match d {
            L::Window { group } => Declined::OutsideDisruptionWindow { group },
            L::MinSize { group } => Declined::AtMinSize { group },
            L::Budget { group, allowed } => Declined::DisruptionBudget { group, allowed },
            L::Parallelism { .. } => Declined::Parallelism,
            L::EvictionLimit { max } => Declined::EvictionLimit { max },
            L::Pdb(b) => Declined::Blocked(b),
        }
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timers;
