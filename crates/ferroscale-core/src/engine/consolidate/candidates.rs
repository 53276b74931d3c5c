//! Which nodes consolidation may take this loop, and what evicting their pods costs: nodes of groups
//! whose policy allows it, priced, ready, left alone for the group's `after`, in an open window, under
//! the group's disruption budget, with no do-not-disrupt pod and a drain the drainability rules allow.

use std::collections::HashMap;
use std::sync::Arc;

use super::reasons::Declined;
use crate::engine::context::Ctx;
use crate::engine::decisions::Decisions;
use crate::engine::drainability::drain_node;
use crate::engine::health::is_ready;
use crate::engine::ledger::{Kind, Ledger};
use crate::engine::memory::{Memory, PodChange};
use crate::engine::predicates::NodeInfo;
use crate::engine::scale_down::recently_descheduled;
use crate::model::consolidation::ConsolidationPolicy;
use crate::model::duration::secs;
use crate::model::workload::Pod;
use crate::model::NodeGroup;

/// A node consolidation may take.
pub(super) struct Candidate<'a> {
    /// Index into the loop's existing nodes.
    pub index: usize,
    pub group: &'a NodeGroup,
    /// Its own hourly price (its instance's, else its group's).
    pub price: f64,
    /// Pods to evict and place elsewhere (unbound).
    pub movable: Vec<Arc<Pod>>,
    /// What evicting them costs (see [`eviction_cost`]): 0 for a node with nothing to evict.
    pub cost: f64,
}

impl Candidate<'_> {
    /// The order candidates are looked at in: most dollars an hour per unit of disruption first
    /// (an empty node first of all), then by name.
    pub fn worth(&self) -> f64 {
        if self.cost <= 0.0 {
            f64::INFINITY
        } else {
            self.price / self.cost
        }
    }
}

/// What evicting `p` costs, Karpenter's `EvictionCost`: 1, plus its deletion cost over 2^27 and its
/// priority over 2^25, kept within [0.1, 10] so that no pod is free and none weighs more than ten.
pub fn eviction_cost(p: &Pod) -> f64 {
    let c = 1.0
        + f64::from(p.meta.deletion_cost) / 2f64.powi(27)
        + f64::from(p.meta.priority) / 2f64.powi(25);
    c.clamp(0.1, 10.0)
}

/// The time of a node's last pod change: the last pod added to or removed from it that the memory saw
/// (Karpenter resets `consolidateAfter` on a removal too), and at least the newest creation among its
/// pods (and the node's own), which is all a snapshot tells of changes before the memory's first look.
fn last_change(info: &NodeInfo, memory: &Memory) -> i64 {
    let created = info
        .pods
        .bound(&info.node.name)
        .newest
        .max(info.node.created);
    memory
        .pod_changes
        .get(&info.node.name)
        .and_then(|c| c.at)
        .map_or(created, |at| at.max(created))
}

/// A node's bound pods, DaemonSet and mirror pods left out, in one figure (`PodList::bound`).
fn signature(info: &NodeInfo) -> (usize, u64) {
    info.pods.bound(&info.node.name).signature
}

/// Records, for each of the loop's nodes (`infos`, by name in `present`), whether a pod was added to or removed from it since
/// the last loop, and forgets nodes gone: what [`last_change`] reads. A node seen for the first time
/// counts as changed when the memory's knowledge starts (`Memory::pod_changes_known_from`), if later
/// than its pods' creation. A node whose group does not consolidate is not watched (its pods are not
/// hashed each loop: consolidation off costs nothing); when its group starts consolidating, `after`
/// counts from then, as nothing is known of the changes before.
pub(super) fn note_pod_changes(
    ctx: &Ctx,
    memory: &mut Memory,
    infos: &[NodeInfo],
    present: &HashMap<&str, &NodeInfo>,
) {
    let known_from = memory.pod_changes_known_from;
    // Updated in place: a steady cluster's nodes keep their entries (no name copied, nothing rehashed).
    memory
        .pod_changes
        .retain(|n, _| present.contains_key(n.as_str()));
    for info in infos.iter().filter(|i| !i.node.template) {
        let watched = ctx
            .world
            .node_groups
            .get(&info.node.name)
            .and_then(|g| ctx.groups.get(g.as_str()))
            .is_some_and(|g| ctx.settings.consolidation_of(g).enabled());
        let signature = watched.then(|| signature(info));
        match memory.pod_changes.get_mut(&info.node.name) {
            Some(c) if c.signature == signature => {}
            Some(c) => {
                *c = PodChange {
                    signature,
                    at: Some(ctx.now),
                }
            }
            None => {
                memory.pod_changes.insert(
                    info.node.name.clone(),
                    PodChange {
                        signature,
                        at: known_from,
                    },
                );
            }
        }
    }
}

/// How many more nodes consolidation may take of each group: what the ledger's budget (the group's, or
/// `--max-disruption`) and its min size leave; with which of the two binds.
pub(super) fn room<'a>(ctx: &Ctx<'a>, ledger: &Ledger) -> HashMap<&'a str, (usize, Declined)> {
    ctx.groups
        .iter()
        .map(|(&id, g)| {
            let by_budget = ledger.budget_left(ctx, g, Kind::Voluntary);
            let by_min = ledger.above_min(g);
            let r = if by_min < by_budget {
                (
                    by_min,
                    Declined::AtMinSize {
                        group: id.to_string(),
                    },
                )
            } else {
                let allowed = ctx.settings.budget_of(g).allowed(ledger.size_of(id));
                (
                    by_budget,
                    Declined::DisruptionBudget {
                        group: id.to_string(),
                        allowed,
                    },
                )
            };
            (id, r)
        })
        .collect()
}

/// The nodes of `infos` consolidation may take, best first; those it may not take for a reason a user
/// would want to see go to `d.consolidation_declined`.
pub(super) fn candidates<'a>(
    ctx: &Ctx<'a>,
    memory: &Memory,
    ledger: &Ledger,
    infos: &[NodeInfo],
    d: &mut Decisions,
) -> Vec<Candidate<'a>> {
    let world = ctx.world;
    let now = ctx.now;
    let room = room(ctx, ledger);
    let mut found = Vec::new();
    for (index, info) in infos.iter().enumerate() {
        let n = &info.node;
        let name = n.name.as_str();
        let Some(g) = world
            .node_groups
            .get(name)
            .and_then(|g| ctx.groups.get(g.as_str()).copied())
        else {
            continue;
        };
        let policy = ctx.settings.consolidation_of(g);
        // The node's own price (its type, zone, on-demand or spot), not its group's blend.
        let Some(price) = g
            .price_of(&n.provider_id)
            .filter(|p| p.is_finite() && *p > 0.0)
        else {
            continue;
        };
        if !policy.enabled()
            || !is_ready(n, &ctx.settings.taints)
            || n.template
            || n.scale_down_disabled
            || !ledger.available(name)
            || world.interrupted.contains_key(name)
            || memory.surge_claimed.contains_key(name)
        {
            continue;
        }
        let after = secs(policy.after);
        let recent = memory
            .consolidated
            .get(name)
            .is_some_and(|t| now - t < after);
        if recent || now - last_change(info, memory) < after {
            continue;
        }
        let mut decline = |why| d.consolidation_declined.push((name.to_string(), why));
        if !ctx.settings.disruption_allowed(g, now) {
            decline(Declined::OutsideDisruptionWindow {
                group: g.id.clone(),
            });
            continue;
        }
        if let Some(pod) = recently_descheduled(info, memory) {
            decline(Declined::Descheduled { pod });
            continue;
        }
        if n.do_not_disrupt {
            decline(Declined::NodeDoNotDisrupt);
            continue;
        }
        if let Some(p) = info.pods.bound(name).do_not_disrupt.map(|k| &info.pods[k]) {
            decline(Declined::DoNotDisrupt { pod: p.key() });
            continue;
        }
        let drained = match drain_node(info, ledger.pdbs(), ctx) {
            Ok(x) => x,
            Err(b) => {
                decline(Declined::Blocked(b));
                continue;
            }
        };
        if let Some(pod) = drained.waits_for {
            decline(Declined::OnCompletion { pod });
            continue;
        }
        if policy.policy == ConsolidationPolicy::WhenEmpty && !drained.movable.is_empty() {
            continue;
        }
        if let Some((0, why)) = room.get(g.id.as_str()) {
            decline(why.clone());
            continue;
        }
        let cost = drained.movable.iter().map(|p| eviction_cost(p)).sum();
        found.push(Candidate {
            index,
            group: g,
            price,
            movable: drained.movable,
            cost,
        });
    }
    found.sort_by(|a, b| {
        b.worth()
            .total_cmp(&a.worth())
            .then_with(|| infos[a.index].node.name.cmp(&infos[b.index].node.name))
    });
    found
}
