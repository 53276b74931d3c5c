//! The consolidations under way, each loop: the old nodes go once the new ones have joined and their
//! pods still fit, in the scheduler's queue order; or they stay.

use std::collections::HashMap;

use super::reasons::Declined;
use crate::engine::cleanup::TIMEOUT;
use crate::engine::context::Ctx;
use crate::engine::decisions::Decisions;
use crate::engine::drainability::drain_node;
use crate::engine::health::is_ready;
use crate::engine::ledger::Ledger;
use crate::engine::memory::{Consolidating, Memory};
use crate::engine::predicates::{first_fit, NodeInfo};
use crate::engine::replace::retire;
use crate::model::duration::secs;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::Pod;

/// The consolidations under way: the old nodes go once the new ones have joined (each admitted by the
/// ledger; one it declines for now waits for a later loop), or stay if they have not in time, and the
/// new nodes' group then backs off as after a failed scale-up.
pub(super) fn progress(
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
                if let Some(p) = info.bound_pods().find(|p| p.meta.do_not_disrupt) {
                    d.consolidation_declined
                        .push((old.clone(), Declined::DoNotDisrupt { pod: p.key() }));
                    continue;
                }
                match retire(ctx, ledger, info, og, DisruptionReason::Consolidation, d) {
                    Ok(()) => {}
                    // Held by the caps or a PodDisruptionBudget for now: a later loop retires it,
                    // within the group's provision time from now.
                    Err(why)
                        if why.for_now()
                            && (plan.count > 0 || ctx.now - plan.since <= provision) =>
                    {
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
/// (scale-down's removals and moves applied), bound as the scheduler binds them: in its queue order
/// ([`super::queue_order`]), each on the first node it fits, the other nodes first and the new ones
/// (`fresh`, the last to register) after them.
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
    let mut nodes: Vec<NodeInfo> = infos
        .iter()
        .filter(usable)
        .filter(|i| !is_new(i))
        .chain(infos.iter().filter(usable).filter(is_new))
        .cloned()
        .collect();
    // A node whose drain is refused is kept by `retire`: only the pods that would move count.
    let movable: Vec<_> = infos
        .iter()
        .filter(|i| plan.nodes.contains(&i.node.name))
        .filter_map(|i| drain_node(i, ledger.pdbs(), ctx).ok())
        .flat_map(|x| x.movable)
        .collect();
    let mut pods: Vec<&Pod> = movable.iter().map(|p| p.as_ref()).collect();
    super::queue_order(&mut pods);
    first_fit(&pods, &mut nodes, |_| true)
        .iter()
        .all(Option::is_some)
}
