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
mod progress;
pub mod reasons;

use std::collections::HashMap;

use super::context::Ctx;
use super::decisions::{
    ConsolidationAction, ConsolidationPlan, Decisions, NewNodes, Replacement, ScaleUp,
};
use super::ledger::Ledger;
use super::memory::{Consolidating, Memory, Validating};
use super::predicates::NodeInfo;
use super::replace::retire;
use crate::clock::Deadline;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::Pod;
use candidates::{candidates, room, Candidate};
use evaluate::{Evaluator, Found};
use progress::progress;

pub use candidates::eviction_cost;
pub use evaluate::queue_order;
pub use reasons::{Declined, Waits};

/// How long a deletion is held before it is validated again and acted on (Karpenter's validation
/// period: it waits this long, then re-simulates the command and acts only if it still holds).
pub const VALIDATION: i64 = 15;

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
    candidates::note_pod_changes(ctx, memory, infos, &present);
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
        // A deletion held for validation is found afresh once nothing holds consolidation back.
        memory.validating = None;
        d.consolidation_waits = Some(why);
        return;
    }
    let cands = candidates(ctx, memory, ledger, infos, d);
    let best = if cands.is_empty() {
        None
    } else {
        search(ctx, memory, ledger, infos, &cands, d)
    };
    let Some(best) = best else {
        memory.validating = None;
        return;
    };
    if best.into.is_none() {
        let mut nodes: Vec<String> = best
            .set
            .iter()
            .map(|&k| infos[cands[k].index].node.name.clone())
            .collect();
        nodes.sort();
        if let Some(why) = validated(ctx, memory, nodes) {
            d.consolidation_waits = Some(why);
            return;
        }
    }
    memory.validating = None;
    carry_out(ctx, memory, ledger, infos, &cands, best, d);
}

/// Holds the deletion of `nodes` until it has been found again [`VALIDATION`] seconds after it was
/// first: None when it may be acted on now, else why it waits. A different plan found meanwhile
/// replaces the held one and waits in turn, as Karpenter drops a command whose re-simulation differs.
fn validated(ctx: &Ctx, memory: &mut Memory, nodes: Vec<String>) -> Option<Waits> {
    let since = match &memory.validating {
        Some(v) if v.nodes == nodes => v.since,
        _ => ctx.now,
    };
    if ctx.now - since >= VALIDATION {
        return None;
    }
    memory.validating = Some(Validating {
        nodes: nodes.clone(),
        since,
    });
    Some(Waits::Validating {
        nodes,
        until: since + VALIDATION,
    })
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
    if let Some(p) = memory.consolidation_paused(ctx.settings, ctx.now) {
        return Some(Waits::Paused(p));
    }
    d.scale_down
        .iter()
        .any(|s| s.reason.disruption.is_some())
        .then_some(Waits::Retiring)
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
            // "No cheaper placement" too, with its figures: every node looked at and kept says why.
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

/// `f` if the ledger would admit it now: each node's evictions within every PodDisruptionBudget as
/// it allows now (the nodes go one after another, a node whose budget is spent waiting until the
/// pods evicted before run again); for a deletion also within the caps.
fn admissible(
    ctx: &Ctx,
    ledger: &Ledger,
    cands: &[Candidate],
    f: Found,
) -> Result<Found, Declined> {
    let pods: Vec<&[std::sync::Arc<Pod>]> =
        f.set.iter().map(|&k| cands[k].movable.as_slice()).collect();
    for node in &pods {
        ledger.pdb_check_all(&[node]).map_err(Declined::Blocked)?;
    }
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
    // The nodes go in the order of their names, their pods listed in that order.
    let mut order = f.set.clone();
    order.sort_by_key(|&k| &infos[cands[k].index].node.name);
    let pods_evicted = order
        .iter()
        .flat_map(|&k| cands[k].movable.iter().map(|p| p.key()))
        .collect();
    let action = match &f.into {
        None => {
            // In the plan's order; a node whose PodDisruptionBudget (or the caps) holds it now waits,
            // out of service, for a later loop: never two nodes' pods of one budget at once.
            let mut waiting: Vec<(String, String)> = Vec::new();
            for &k in &order {
                let c = &cands[k];
                let info = &infos[c.index];
                match retire(
                    ctx,
                    ledger,
                    info,
                    c.group,
                    DisruptionReason::Consolidation,
                    d,
                ) {
                    Ok(()) => {}
                    Err(why) if why.for_now() => {
                        ledger.hold(&info.node.name, &c.group.id);
                        d.consolidation_declined
                            .push((info.node.name.clone(), why.into()));
                        waiting.push((info.node.name.clone(), c.group.id.clone()));
                    }
                    Err(why) => d
                        .consolidation_declined
                        .push((info.node.name.clone(), why.into())),
                }
            }
            if let Some((_, group)) = waiting.first() {
                memory.consolidating.push(Consolidating {
                    group: group.clone(),
                    nodes: waiting.into_iter().map(|(n, _)| n).collect(),
                    count: 0,
                    since: ctx.now,
                });
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
            memory.last_surge = Some(ctx.now);
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
mod order_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timers;
