//! Scale-up: for the pods no node will take, each group's estimate of the nodes it needs, the expander's
//! choice among them, and for every pod left over the groups' reasons.

use std::collections::{BTreeMap, HashMap};

use super::context::{new_node, Ctx};
use super::decisions::{Decisions, ScaleUp};
use super::equivalence::equivalence_groups;
use super::estimator::{estimate_shaped, Unplaced};
use super::expander::{self, Context, ExpansionOption};
use super::health::group_health;
use super::limits::{gib, gpu_room, Amount, Resource};
use super::memory::Memory;
use super::predicates::{self, NodeInfo};
use super::reasons::{Pending, Refusal};
use super::settings::Settings;
use super::similar::similar;
use super::topology;
use crate::clock::Deadline;
use crate::model::workload::{Node, Pod};
use crate::model::NodeGroup;

/// Nodes, cores, memory (bytes) and GPUs the cluster has, counting this loop's scale-ups.
struct Budget {
    nodes: usize,
    amount: Amount,
}

/// The scale-up options for some pods: one per group that can hold any, with the pods it holds, and per
/// pod the groups' reasons for refusing it.
struct Round {
    options: Vec<ExpansionOption>,
    /// Per option, indices (into the pods given) of the pods it places.
    scheduled: Vec<Vec<usize>>,
    /// Per option, its new nodes with the pods placed on them.
    placements: Vec<Vec<NodeInfo>>,
    refusals: Vec<BTreeMap<Refusal, usize>>,
    /// Groups skipped because a cluster-wide maximum is reached, with the resource.
    skipped: Vec<(String, Resource)>,
    /// Per option, the groups its scale-up is split across: its own first, then its similar groups.
    peers: Vec<Vec<String>>,
}

/// A group that can take nodes this round: its template, which pods fit it, and how many nodes the
/// cluster-wide limits leave it (its own room aside).
struct Open<'a> {
    group: &'a NodeGroup,
    template: NodeInfo,
    fits: Vec<bool>,
    cap: usize,
}

/// Grows groups for `candidates` (pods no existing or upcoming node takes): the expander picks the best
/// option, and the pods it does not place get another round with the groups not chosen yet, so one loop
/// serves every kind of pod. Pods left over are pending with the first round's refusals.
pub(super) fn scale_up(
    ctx: &Ctx,
    memory: &mut Memory,
    candidates: &[&Pod],
    infos: &[NodeInfo],
    existing: usize,
    starting: &(usize, Amount),
    d: &mut Decisions,
) {
    // The cluster as its maxima count it: a node still starting only by the upcoming copy standing
    // for it.
    let mut used = Amount::default();
    for i in infos {
        used.add(&Amount::of_node(&i.node), 1);
    }
    used.add(&starting.1, -1);
    let mut budget = Budget {
        nodes: infos.len().saturating_sub(starting.0),
        amount: used,
    };
    let mut refusals: Vec<BTreeMap<Refusal, usize>> = vec![BTreeMap::new(); candidates.len()];
    let mut helped = vec![false; candidates.len()];
    let mut chosen_groups: Vec<String> = Vec::new();
    let mut first_round = true;
    // What inter-pod constraints count: the cluster, and the nodes each round adds to it.
    let mut base = topology::relevant(candidates, infos);
    let constrained = candidates.iter().any(|p| topology::constrained(p));
    let unhealthy = unhealthy_groups(ctx);
    loop {
        let waiting: Vec<usize> = (0..candidates.len()).filter(|&k| !helped[k]).collect();
        if waiting.is_empty() {
            break;
        }
        let pods: Vec<&Pod> = waiting.iter().map(|&k| candidates[k]).collect();
        let groups: Vec<&NodeGroup> = ctx
            .world
            .groups
            .iter()
            .map(|g| g.as_ref())
            .filter(|g| !chosen_groups.contains(&g.id))
            .collect();
        let mut round = options_for(ctx, &pods, &groups, memory, &budget, &base, &unhealthy);
        if first_round {
            d.skipped_scale_ups = std::mem::take(&mut round.skipped);
            for (w, r) in round.refusals.into_iter().enumerate() {
                refusals[waiting[w]] = r;
            }
            first_round = false;
        }
        if round.options.is_empty() {
            break;
        }
        let context = Context {
            cluster_nodes: existing,
            priorities: ctx.settings.priorities.clone(),
            seed: Some(expander::seed(ctx.now, &round.options)),
        };
        let decision = expander::choose(&ctx.settings.expander, &round.options, &context);
        d.expander.extend(decision.explanation.iter().cloned());
        let Some(best) = expander::tie_break(&decision.kept, context.seed) else {
            break;
        };
        if decision.kept.len() > 1 {
            d.expander.push(format!(
                "tie: picked {} at random",
                round.options[best].group
            ));
        }
        let scheduled = &round.scheduled[best];
        let keys: Vec<String> = scheduled.iter().map(|&w| pods[w].key()).collect();
        for &w in scheduled {
            helped[waiting[w]] = true;
        }
        if constrained {
            base.append(&mut round.placements[best]);
        }
        let option = &round.options[best];
        // Upstream's BalanceScaleUpBetweenGroups over the option's similar groups (itself alone
        // without --balance-similar-node-groups).
        let peers: Vec<&NodeGroup> = round.peers[best]
            .iter()
            .map(|id| ctx.groups[id.as_str()])
            .collect();
        let split = balance(&peers, option.node_count);
        for (group, delta) in split {
            let g = ctx.groups[group.as_str()];
            budget.nodes += delta as usize;
            let per_node = Amount::of_template(&ctx.template(g).node);
            budget.amount.add(&per_node, i64::from(delta));
            chosen_groups.push(group.clone());
            // The provision time of the capacity asked for counts from now.
            memory
                .unfulfilled_since
                .entry(group.clone())
                .or_insert(ctx.now);
            d.scale_up.push(ScaleUp {
                group,
                delta,
                pods: keys.clone(),
            });
        }
        memory.last_scale_up = Some(ctx.now);
    }
    for (k, p) in candidates.iter().enumerate() {
        if helped[k] {
            continue;
        }
        let reason = if refusals[k].is_empty() {
            Pending::NoNodeGroup
        } else {
            Pending::no_group_fits(std::mem::take(&mut refusals[k]))
        };
        d.pending.push((p.key(), reason));
    }
}

/// Upstream's IsNodeGroupHealthy for scale-up: each group's registered nodes by readiness (with its
/// `maxNodeStartupTime`), the instances asked for and not registered yet counting as on their way.
/// The unhealthy groups, each with its unready node count.
pub(super) fn unhealthy_groups<'a>(ctx: &Ctx<'a>) -> HashMap<&'a str, usize> {
    let mut by_group: HashMap<&str, Vec<&Node>> = HashMap::new();
    for n in ctx.world.nodes {
        if let Some(g) = ctx.world.node_groups.get(&n.name) {
            by_group.entry(g.as_str()).or_default().push(n);
        }
    }
    let mut out = HashMap::new();
    for g in ctx.world.groups {
        let nodes = by_group.remove(g.id.as_str()).unwrap_or_default();
        let startup = ctx.settings.options_of(g).max_node_startup_time;
        let (r, healthy) = group_health(nodes, g.target_size, startup, ctx.now, ctx.settings);
        if !healthy {
            out.insert(g.id.as_str(), r.unready);
        }
    }
    out
}

/// Why `g` can take no node at all now, if it cannot: [`unavailable`], then its size.
fn closed(
    ctx: &Ctx,
    g: &NodeGroup,
    memory: &Memory,
    unhealthy: &HashMap<&str, usize>,
) -> Option<Refusal> {
    unavailable(ctx, g, memory, unhealthy.get(g.id.as_str()).copied()).or_else(|| {
        (g.max_size <= g.target_size).then(|| Refusal::AtMaxSize {
            group: g.id.clone(),
        })
    })
}

/// Why `g` may be asked for no node now, whatever the count, if it may not: upstream's
/// IsNodeGroupHealthy (`unready`: its unready nodes when it is unhealthy), IsNodeGroupReadyToScaleUp
/// (backed off), then capacity. Scale-up and every surge (the ledger's) read it.
pub(super) fn unavailable(
    ctx: &Ctx,
    g: &NodeGroup,
    memory: &Memory,
    unready: Option<usize>,
) -> Option<Refusal> {
    let now = ctx.now;
    if let Some(unready) = unready {
        return Some(Refusal::Unhealthy {
            group: g.id.clone(),
            unready,
        });
    }
    if let Some(until) = memory.backed_off(&g.id, now) {
        return Some(Refusal::BackedOff {
            group: g.id.clone(),
            seconds: until - now,
        });
    }
    memory
        .capacity_out(&g.template, now)
        .map(|(instance_type, zone, until)| Refusal::OutOfCapacity {
            group: g.id.clone(),
            instance_type,
            zone,
            seconds: until - now,
        })
}

/// The room `g` has left below its max size.
fn room(g: &NodeGroup) -> usize {
    (g.max_size - g.target_size).max(0) as usize
}

/// Upstream's ComputeSimilarNodeGroups for `open[i]`: with `--balance-similar-node-groups`, the other
/// open groups whose template is similar and which take every pod `open[i]` takes (upstream's
/// matchingSchedulablePodGroups); none when its group scales zero-or-max or takes no pod.
fn similar_groups(open: &[Open], i: usize, s: &Settings) -> Vec<usize> {
    let me = &open[i];
    if !s.balance_similar_node_groups
        || s.options_of(me.group).zero_or_max_node_scaling
        || !me.fits.iter().any(|&f| f)
    {
        return Vec::new();
    }
    (0..open.len())
        .filter(|&j| j != i)
        .filter(|&j| {
            let other = &open[j];
            me.fits.iter().zip(&other.fits).all(|(&a, &b)| !a || b)
                && similar(&me.template, &other.template, &s.balancing)
        })
        .collect()
}

fn options_for(
    ctx: &Ctx,
    pods: &[&Pod],
    groups: &[&NodeGroup],
    memory: &Memory,
    budget: &Budget,
    base: &[NodeInfo],
    unhealthy: &HashMap<&str, usize>,
) -> Round {
    let settings = ctx.settings;
    let mut round = Round {
        options: Vec::new(),
        scheduled: Vec::new(),
        placements: Vec::new(),
        refusals: vec![BTreeMap::new(); pods.len()],
        skipped: Vec::new(),
        peers: Vec::new(),
    };
    let mut open: Vec<Open> = Vec::new();
    // Pods of one shape fit a template alike: each template is checked once per shape.
    let shapes = equivalence_groups(pods);
    for g in groups {
        let mut why_not = closed(ctx, g, memory, unhealthy);
        let mut cap = settings.max_nodes_per_scaleup;
        if settings.max_nodes_total > 0 {
            cap = cap.min(settings.max_nodes_total.saturating_sub(budget.nodes));
            if cap == 0 && why_not.is_none() {
                why_not = Some(Refusal::MaxNodesTotal);
            }
        }
        let per_node = Amount::of_template(&ctx.template(g).node);
        let room_for =
            |left: i64, per: i64| usize::try_from(left.max(0) / per.max(1)).unwrap_or(usize::MAX);
        let by_cores = room_for(
            settings.cores_total.1.saturating_sub(budget.amount.cores),
            per_node.cores,
        );
        let by_memory = room_for(
            gib(settings.memory_total_gib.1).saturating_sub(budget.amount.memory),
            per_node.memory,
        );
        let by_gpus = gpu_room(&settings.gpu_total, &budget.amount, &per_node);
        cap = cap.min(by_cores).min(by_memory).min(by_gpus);
        // A zero-or-max group grows by all its room or not at all (upstream's atomic scale-up): the
        // cluster-wide limits must leave room for all of it.
        let whole = if settings.options_of(g).zero_or_max_node_scaling {
            room(g)
        } else {
            1
        };
        if settings.max_nodes_total > 0
            && budget.nodes + whole > settings.max_nodes_total
            && why_not.is_none()
        {
            why_not = Some(Refusal::MaxNodesTotal);
        }
        if (by_cores < whole || by_memory < whole || by_gpus < whole) && why_not.is_none() {
            let exceeded: Vec<Resource> = [
                (by_cores, Resource::Cores),
                (by_memory, Resource::Memory),
                (by_gpus, Resource::Gpu),
            ]
            .into_iter()
            .filter(|&(n, _)| n < whole)
            .map(|(_, r)| r)
            .collect();
            round
                .skipped
                .extend(exceeded.iter().map(|&r| (g.id.clone(), r)));
            why_not = Some(Refusal::ResourceLimits { exceeded });
        }
        let template = new_node(ctx, g, &format!("{}-template", g.id));
        // Upstream's SchedulablePodGroups: the pods whose predicates pass on the template.
        let mut fits = vec![false; pods.len()];
        for shape in &shapes {
            if predicates::fits(pods[shape[0]], &[], &template).is_ok() {
                for &k in shape {
                    fits[k] = true;
                }
            }
        }
        if let Some(why) = why_not {
            for (k, _) in fits.iter().enumerate().filter(|(_, &f)| f) {
                // Only groups the pod would fit are worth naming.
                *round.refusals[k].entry(why.clone()).or_default() += 1;
            }
            continue;
        }
        open.push(Open {
            group: g,
            template,
            fits,
            cap,
        });
    }
    for i in 0..open.len() {
        let peers = similar_groups(&open, i, settings);
        let Open {
            group: g,
            template,
            cap,
            ..
        } = &open[i];
        // Upstream's sngCapacityThreshold: the estimate may use the room of the similar groups too.
        let limit = peers
            .iter()
            .map(|&j| room(open[j].group))
            .sum::<usize>()
            .saturating_add(room(g))
            .min(*cap);
        let mut node = template.node.clone();
        // Pods pack onto what a node has left after its DaemonSet pods.
        node.allocatable.cpu_milli -= template.requested.cpu_milli;
        node.allocatable.memory -= template.requested.memory;
        node.allocatable.pods -= template.requested.pods;
        let deadline = Deadline::after(ctx.clock, settings.max_nodegroup_binpacking_duration);
        let e = estimate_shaped(pods, shapes.clone(), &node, limit, base, Some(deadline));
        for (k, why) in &e.unplaced {
            let reason = match why {
                Unplaced::NoFit(u) => Refusal::Unfit(u.clone()),
                Unplaced::Limit => Refusal::WouldExceedLimit {
                    group: g.id.clone(),
                },
                Unplaced::TimeBudget => Refusal::TimeBudget {
                    group: g.id.clone(),
                },
            };
            *round.refusals[*k].entry(reason).or_default() += 1;
        }
        if e.nodes > 0 {
            // Upstream's ComputeExpansionOption: a zero-or-max group's only valid count is its max
            // (its room here: the same from zero, and never past the max).
            let node_count = if settings.options_of(g).zero_or_max_node_scaling {
                room(g)
            } else {
                e.nodes
            };
            round.options.push(ExpansionOption {
                group: g.id.clone(),
                node_count: node_count as i32,
                pods: e
                    .scheduled
                    .iter()
                    .map(|&k| pods[k].requests.clone())
                    .collect(),
                template: (*ctx.template(g).node).clone(),
                price_per_hour: g.price_per_hour,
            });
            round.scheduled.push(e.scheduled);
            round.placements.push(e.placements);
            round.peers.push(
                std::iter::once(g.id.clone())
                    .chain(peers.iter().map(|&j| open[j].group.id.clone()))
                    .collect(),
            );
        }
    }
    round
}

/// Splits `delta` new nodes across similar groups so their sizes even out, within each one's max.
fn balance(groups: &[&NodeGroup], delta: i32) -> Vec<(String, i32)> {
    let mut sizes: Vec<(String, i32, i32)> = groups
        .iter()
        .map(|g| (g.id.clone(), g.target_size, g.max_size))
        .collect();
    let mut added: BTreeMap<String, i32> = BTreeMap::new();
    for _ in 0..delta {
        let Some(g) = sizes
            .iter_mut()
            .filter(|(_, size, max)| size < max)
            .min_by_key(|(id, size, _)| (*size, id.clone()))
        else {
            break;
        };
        g.1 += 1;
        *added.entry(g.0.clone()).or_default() += 1;
    }
    added.into_iter().collect()
}

#[cfg(test)]
mod tests;
