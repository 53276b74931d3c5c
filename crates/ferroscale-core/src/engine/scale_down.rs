//! Scale-down, upstream's rules: a node of a group goes once it has been underutilized (below its
//! group's threshold, GPU nodes by GPU: `utilization`) for the group's unneeded time, the drain of its
//! pods is allowed (`drainability`) and every pod that moves fits on another node, its group stays at or
//! above min size and the cluster at or above the `--cores-total` and `--memory-total` minima (`limits`),
//! and scale-down is not paused; empty nodes go in bulk, one node with pods per loop.

use std::collections::HashMap;

use foldhash::{HashMap as FastMap, HashSet};
use std::sync::Arc;

use super::context::Ctx;
use super::decisions::{Decisions, ScaleDown};
use super::drainability::{drainability, long_terminating, Drain};
use super::health::NodeReadiness;
use super::limits::{AboveMin, Amount};
use super::memory::Memory;
use super::predicates::{fits_among, repelling, Cluster, NodeInfo, Overlay, Repel, Unfit};
use super::reasons::{Blocker, Removal, Unremovable};
use super::utilization::{missing_allocatable, utilization, LeftOut};
use crate::labels;
use crate::model::workload::{Node, Pod};

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
    let s = ctx.settings;
    let mut d = Drained::default();
    for p in pods {
        if p.meta.priority < s.expendable_pods_priority_cutoff {
            d.left.push(p.key());
            continue;
        }
        match drainability(p, ctx.world.pdbs, s, ctx.now) {
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

/// The loop interval upstream's unneeded-nodes limit assumes (`--scan-interval`'s default).
const LOOP_INTERVAL_SECS: u64 = 10;

/// Upstream's `unneededNodesLimit`: one loop finds at most 2 × `--max-scale-down-parallelism` more
/// unneeded nodes than the last (a buffer for nodes that stop being unneeded), and never more than the
/// parallelism times the loops of one unneeded time, plus that buffer: scale-down could not remove more
/// before they are looked at again.
fn unneeded_limit(settings: &super::settings::Settings, previously: usize) -> usize {
    let n = settings.max_scale_down_parallelism.max(1);
    let unneeded = settings
        .defaults
        .scale_down_unneeded_time
        .as_secs()
        .max(LOOP_INTERVAL_SECS);
    let upper = n
        .saturating_mul((unneeded / LOOP_INTERVAL_SECS) as usize)
        .saturating_add(n);
    previously.saturating_add(2 * n).min(upper)
}

/// Where the first-fit search for pods of one shape (same requests, ports, selectors, tolerations and
/// namespace; no inter-pod constraints, no volumes) may start in the loop's snapshot: the nodes before it
/// took no such pod, and nodes only fill up as the loop goes (unneeded ones take none), so they never
/// will. Keeps scale-down's simulation linear when many nodes move pods of a few deployments.
/// A shape that fits nowhere any more keeps the reason, so each later node with such a pod is told at once.
#[derive(Clone, Default)]
struct Cursors(Vec<(Arc<Pod>, usize, Option<Unfit>)>);

impl Cursors {
    fn shaped(p: &Pod) -> bool {
        p.affinity.is_empty()
            && p.anti_affinity.is_empty()
            && p.spread.is_empty()
            && p.claims.is_empty()
    }

    fn same(a: &Pod, b: &Pod) -> bool {
        a.requests == b.requests
            && a.namespace == b.namespace
            && a.host_ports == b.host_ports
            && a.node_selector == b.node_selector
            && a.node_affinity == b.node_affinity
            && a.tolerations == b.tolerations
    }

    fn entry(&self, p: &Pod) -> Option<&(Arc<Pod>, usize, Option<Unfit>)> {
        Self::shaped(p)
            .then(|| self.0.iter().find(|(q, ..)| Self::same(p, q)))
            .flatten()
    }

    fn start(&self, p: &Pod) -> usize {
        self.entry(p).map_or(0, |e| e.1)
    }

    fn set(&mut self, p: &Arc<Pod>, j: usize, why: Option<Unfit>) {
        if !Self::shaped(p) {
            return;
        }
        match self.0.iter_mut().find(|(q, ..)| Self::same(p, q)) {
            Some(e) => *e = (e.0.clone(), j, why),
            None => self.0.push((Arc::clone(p), j, why)),
        }
    }
}

/// Where the pods of node `i` would go (the nodes that receive them, changed, and `i` without them), or
/// why one cannot move. As upstream's removal simulation (`simulator/cluster.go`): the pods leave node `i`
/// first (the node stays, empty of them and with the deletion taint, so its topology domain still counts
/// unless a spread constraint honours taints), then they are placed one
/// by one on the nodes that are no `i` and not in `no_dest` (nodes already found unneeded), each seeing
/// those placed before it: a pod with one-per-zone anti-affinity may move within its own zone, and two
/// pods that repel each other do not land side by side.
fn place_elsewhere(
    movable: &[Arc<Pod>],
    i: usize,
    snap: &[NodeInfo],
    no_dest: &HashSet<usize>,
    repels: Repel,
    committed: &mut Cursors,
) -> Result<FastMap<usize, NodeInfo>, Unremovable> {
    // Moved only if every pod finds a place: a failed simulation's placements are undone.
    let mut cursors = committed.clone();
    let moving: HashSet<(&str, &str)> = movable
        .iter()
        .map(|p| (p.namespace.as_str(), p.name.as_str()))
        .collect();
    let mut node = snap[i].node.clone();
    node.taints.push(crate::model::Taint {
        key: labels::TO_BE_DELETED.into(),
        value: String::new(),
        effect: crate::model::TaintEffect::NoSchedule,
    });
    let mut emptied = NodeInfo::new(node);
    for p in snap[i]
        .pods
        .iter()
        .filter(|p| !moving.contains(&(p.namespace.as_str(), p.name.as_str())))
    {
        emptied.add(Arc::clone(p));
    }
    let mut sim = Overlay::default();
    sim.changed.insert(i, emptied);
    for p in movable {
        let mut last: Option<Unfit> = None;
        let target = {
            let cluster = Cluster {
                base: snap,
                added: &[],
                memo: None,
                overlay: Some(&sim),
            };
            (cursors.start(p)..snap.len())
                .filter(|j| *j != i && !no_dest.contains(j))
                .find(
                    |&j| match fits_among(p, cluster, sim.view(j, &snap[j]), repels) {
                        Ok(()) => true,
                        Err(u) => {
                            last.get_or_insert(u);
                            false
                        }
                    },
                )
        };
        match target {
            Some(j) => {
                cursors.set(p, j, None);
                sim.changed
                    .entry(j)
                    .or_insert_with(|| snap[j].clone())
                    .add(Arc::clone(p))
            }
            None => {
                // The reason a person reads: the first node's refusal, also before the cursor.
                let cluster = Cluster {
                    base: snap,
                    added: &[],
                    memo: None,
                    overlay: Some(&sim),
                };
                let known = cursors.entry(p).and_then(|e| e.2.clone());
                let why = last.or(known).or_else(|| {
                    (0..snap.len())
                        .filter(|j| *j != i && !no_dest.contains(j))
                        .find_map(|j| fits_among(p, cluster, sim.view(j, &snap[j]), repels).err())
                });
                // Nothing of this candidate placed yet: the pod fits nowhere in the loop's snapshot,
                // which only fills up from here.
                if sim.changed.len() == 1 {
                    committed.set(p, snap.len(), why.clone());
                }
                return Err(Unremovable::NoPlaceFor { pod: p.key(), why });
            }
        }
    }
    *committed = cursors;
    Ok(sim.changed)
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
    let paused = memory.scale_down_paused(ctx.settings, ctx.now);
    // The loop's simulated snapshot: the pods of each node found unneeded are moved out of it as upstream's
    // planner moves them, so later candidates see them where they would go; those nodes receive none.
    let mut snap: Vec<NodeInfo> = infos[..existing].to_vec();
    let mut no_dest: HashSet<usize> = HashSet::default();
    let mut cursors = Cursors::default();
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
            && (ctx.world.interrupted.contains_key(node) || memory.replacing.contains_key(node))
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
    for i in 0..existing {
        if still_unneeded.len() >= limit {
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
        // An unready node goes after the unready time whatever its pods ask (upstream). A node at or
        // below the threshold is underutilized (upstream's eligibility.go,
        // `isNodeAtOrBelowUtilizationThreshold`: only utilization > threshold is not).
        if node.ready && util.value > threshold {
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
        let Drained {
            movable,
            left,
            waits_for,
        } = match drain(&snap[i].pods, ctx) {
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
        let since = *memory.unneeded_since.get(&node.name).unwrap_or(&now);
        still_unneeded.insert(node.name.clone(), since);
        let waited = now - since;
        let needed = if node.ready {
            opts.scale_down_unneeded_time
        } else {
            opts.scale_down_unready_time
        }
        .as_secs() as i64;
        if waited < needed {
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
        let allowed = group
            .lifecycle
            .disruption_budget
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
        d.scale_down.push(ScaleDown {
            node: node.name.clone(),
            group: group.id.clone(),
            reason: Removal {
                utilization: util.value,
                threshold,
                waited,
                empty,
                unready: !node.ready,
                disruption: None,
            },
            evict: evict.iter().map(|p| p.key()).collect(),
            left,
        });
    }
    memory.unneeded_since = still_unneeded;
}

#[cfg(test)]
mod tests;
