//! Voluntary replacements: a node whose instance was launched from another revision than its group's
//! current one (drift), or older than its maximum lifetime (expiry), is replaced surge first: the group
//! is asked for one more node; once that node has joined and the group has no capacity on its way, the
//! old node is drained and deleted (its group shrinks back). Replacements wait for the group's disruption
//! budget, which every node on its way out counts against (removals, interruptions, replacements), and
//! for pods that may not be evicted.

use std::collections::HashMap;

use super::cleanup::TIMEOUT;
use super::context::Ctx;
use super::decisions::{Decisions, Disruption, Replacement, ScaleDown, ScaleUp};
use super::drainability::drain_node;
use super::health::is_ready;
use super::ledger::{Kind, Ledger};
use super::memory::{Memory, Replacing};
use super::predicates::NodeInfo;
use super::reasons::{Due, Removal, Unremovable};
use crate::model::duration::secs;
use crate::model::lifecycle::DisruptionReason;
use crate::model::NodeGroup;

/// Whether `node` of `g` is due for replacement at `now`: `Ok` with why when it is to be replaced, `Err`
/// with why not when it has drifted or expired and is kept anyway (what `simulate` says), `Ok(None)`
/// when it is not due at all.
fn due(ctx: &Ctx, g: &NodeGroup, info: &NodeInfo) -> Result<Option<DisruptionReason>, Due> {
    let n = &info.node;
    // `scale-down-disabled` keeps a node from every voluntary removal, replacements included.
    if n.scale_down_disabled {
        return Ok(None);
    }
    let drifted = g.lifecycle.drifted(&n.provider_id);
    let expired = ctx
        .settings
        .lifetime_of(g)
        .is_some_and(|lifetime| ctx.now - n.created >= secs(lifetime));
    let reason = if drifted && ctx.settings.drift_of(g).enabled() {
        DisruptionReason::Drift
    } else if expired {
        DisruptionReason::Expired
    } else if drifted {
        return Err(Due::DriftNotEnabled {
            group: g.id.clone(),
        });
    } else {
        return Ok(None);
    };
    // The node's own do-not-disrupt keeps it from every voluntary method (Karpenter's).
    if n.do_not_disrupt {
        return Err(Due::DoNotDisrupt(reason));
    }
    Ok(Some(reason))
}

/// Adds this loop's surges and retirements to `d`, each admitted by the `ledger`. `infos` are the
/// loop's existing nodes (a retirement evicts only what is bound to its node now).
pub(super) fn replace(
    ctx: &Ctx,
    memory: &mut Memory,
    ledger: &mut Ledger,
    infos: &[NodeInfo],
    d: &mut Decisions,
) {
    let world = ctx.world;
    // Nothing to replace without revisions or lifetimes: the common case costs nothing.
    let any = world
        .groups
        .iter()
        .any(|g| g.lifecycle.revision.is_some() || ctx.settings.lifetime_of(g).is_some());
    if !any && memory.replacing.is_empty() {
        return;
    }
    let present: HashMap<&str, &NodeInfo> =
        infos.iter().map(|i| (i.node.name.as_str(), i)).collect();
    memory
        .replacing
        .retain(|node, _| present.contains_key(node.as_str()));
    memory
        .surge_claimed
        .retain(|node, _| present.contains_key(node.as_str()));
    let group_of = |node: &str| world.node_groups.get(node).map(String::as_str);
    // How many nodes each group has, and whether all are ready.
    let mut size: HashMap<&str, usize> = HashMap::new();
    let mut ready: HashMap<&str, bool> = HashMap::new();
    for info in infos {
        let Some(g) = group_of(&info.node.name) else {
            continue;
        };
        *size.entry(g).or_default() += 1;
        let r = ready.entry(g).or_insert(true);
        *r &= is_ready(&info.node, &ctx.settings.taints);
    }
    let mut surges: HashMap<String, (i32, Vec<String>)> = HashMap::new();
    // Oldest first.
    let mut candidates: Vec<&NodeInfo> = infos.iter().collect();
    candidates.sort_by_key(|i| (i.node.created, i.node.name.clone()));
    for info in candidates {
        let name = info.node.name.as_str();
        let Some(g) = group_of(name).and_then(|id| ctx.groups.get(id).copied()) else {
            continue;
        };
        if let Some(r) = memory.replacing.get(name).cloned() {
            if !ledger.may_retire(name) {
                continue;
            }
            // The surge has joined when the group has every node it asked for, all ready, one of them
            // registered since the surge was asked for: a surge the cloud refused or never delivered
            // leaves the old node in place.
            let registered = size.get(g.id.as_str()).copied().unwrap_or(0);
            let all_ready = ready.get(g.id.as_str()).copied().unwrap_or(false);
            // One new node frees one old node, once: a node registered since this surge was asked for,
            // not itself being replaced, and not already counted for another old node.
            let fresh = infos.iter().find(|i| {
                group_of(&i.node.name) == Some(g.id.as_str())
                    && is_ready(&i.node, &ctx.settings.taints)
                    && i.node.seen > r.since
                    && !memory.replacing.contains_key(&i.node.name)
                    && !memory.surge_claimed.contains_key(&i.node.name)
            });
            if let (true, Some(new)) = (registered as i32 >= g.target_size && all_ready, fresh) {
                let new = new.node.name.clone();
                if retire(ctx, ledger, info, g, r.reason, d).is_ok() {
                    memory.surge_claimed.insert(new, name.to_string());
                }
            } else if fresh.is_none()
                && ctx.now - r.since > secs(ctx.settings.options_of(g).max_node_provision_time)
            {
                // Not delivered in time: the group backs off as after a failed scale-up, and the
                // replacement is not asked for again while it does. A surge that did join is never
                // asked again: the old node waits for its group instead of adding nodes.
                memory.replacing.remove(name);
                memory.scale_up_failed(&g.id, TIMEOUT, ctx.now);
            }
            continue;
        }
        if !ledger.available(name) || world.interrupted.contains_key(name) {
            continue;
        }
        let reason = match due(ctx, g, info) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(why) => {
                d.due.push((name.to_string(), why));
                continue;
            }
        };
        if !ctx.settings.disruption_allowed(g, ctx.now)
            || ledger.budget_left(ctx, g, Kind::Voluntary) == 0
        {
            continue;
        }
        if !drain_node(info, ledger.pdbs(), ctx).is_ok_and(|x| x.waits_for.is_none()) {
            // A pod that may not be evicted (or that runs to completion) keeps the node, as it keeps it
            // from scale-down.
            continue;
        }
        if let Err(why) = ledger.take_surge(ctx, memory, g, 1) {
            d.unremovable
                .push((name.to_string(), Unremovable::SurgeRefused(why)));
            continue;
        }
        d.due.push((name.to_string(), Due::Replacing(reason)));
        ledger.hold(name, &g.id);
        let surge = surges.entry(g.id.clone()).or_default();
        surge.0 += 1;
        surge.1.push(name.to_string());
        memory.replacing.insert(
            name.to_string(),
            Replacing {
                group: g.id.clone(),
                reason,
                since: ctx.now,
            },
        );
    }
    let mut surges: Vec<(String, (i32, Vec<String>))> =
        surges.into_iter().filter(|(_, (n, _))| *n > 0).collect();
    surges.sort();
    if !surges.is_empty() {
        // A surge is a scale-up: scale-down pauses after it as after any other.
        memory.last_surge = Some(ctx.now);
    }
    for (group, (delta, nodes)) in surges {
        d.scale_up.push(ScaleUp {
            group: group.clone(),
            delta,
            pods: Vec::new(),
        });
        d.replacements.push(Replacement {
            group,
            delta,
            for_nodes: nodes,
        });
    }
}

/// The old node goes, drained through the same rules as a scale-down and admitted by the ledger, and
/// deleted; not while one of its pods may not be evicted or runs to completion, nor while the ledger
/// declines it (it waits for a later loop). Whether it goes, or why not.
pub(super) fn retire(
    ctx: &Ctx,
    ledger: &mut Ledger,
    info: &NodeInfo,
    g: &NodeGroup,
    reason: DisruptionReason,
    d: &mut Decisions,
) -> Result<(), Unremovable> {
    let mut drained = drain_node(info, ledger.pdbs(), ctx).map_err(Unremovable::Blocked)?;
    if let Some(pod) = drained.waits_for {
        return Err(Unremovable::OnCompletion { pod });
    }
    ledger.take_removal(ctx, &info.node, Some(g), &drained.movable, Kind::Voluntary)?;
    d.disruptions.push(Disruption {
        node: info.node.name.clone(),
        group: Some(g.id.clone()),
        reason,
        notice: None,
    });
    let evicting = !drained.movable.is_empty();
    d.scale_down.push(ScaleDown {
        node: info.node.name.clone(),
        group: g.id.clone(),
        reason: Removal {
            utilization: 0.0,
            threshold: 0.0,
            waited: 0,
            empty: drained.movable.is_empty(),
            unready: false,
            disruption: Some(reason),
        },
        evict: drained.movable.iter().map(|p| p.key()).collect(),
        daemon_sets: drained.daemon_sets_evicted(ctx.settings, evicting),
        left: drained.left,
    });
    Ok(())
}

#[cfg(test)]
mod tests;
