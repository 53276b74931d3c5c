//! What taking a set of candidates would cost and save: their pods placed first on the other nodes
//! (the scheduler's filters, first fit), the rest binpacked onto new nodes of each group that may grow
//! (the estimator), the cheapest group kept; the plan stands only if the saving is worth it.

use std::cell::RefCell;
use std::collections::HashSet;

use super::candidates::Candidate;
use super::reasons::{Declined, Placement};
use crate::engine::context::{new_node, Ctx};
use crate::engine::decisions::Decisions;
use crate::engine::estimator::estimate_within;
use crate::engine::health::is_ready;
use crate::engine::ledger::Ledger;
use crate::engine::limits::{above_gpu_max, below_gpu_min, gib, Amount, Resource};
use crate::engine::memory::Memory;
use crate::engine::predicates::{first_fit, repelling, NodeInfo, Repel};
use crate::labels;
use crate::model::workload::{Node, Pod};
use crate::model::NodeGroup;

/// A pool's interruption or shortage is "recent" for this long (the backoff's reset).
const RECENT: i64 = 3 * 3600;

/// A plan found for a set of candidates.
#[derive(Debug, Clone)]
pub(super) struct Found {
    /// Indices into the candidates.
    pub set: Vec<usize>,
    /// New nodes, when the pods do not all fit on the other nodes.
    pub into: Option<(String, i32)>,
    pub price: f64,
    pub saving: f64,
    /// What evicting its pods costs.
    pub cost: f64,
}

impl Found {
    /// Dollars an hour saved per unit of disruption: what plans are ranked by.
    pub fn score(&self) -> f64 {
        if self.cost <= 0.0 {
            f64::INFINITY
        } else {
            self.saving / self.cost
        }
    }
}

/// A group new nodes may come from.
struct Target<'a> {
    group: &'a NodeGroup,
    price: f64,
    /// A new node, its DaemonSet pods' requests taken off allocatable.
    node: Node,
    /// Nodes it may still add.
    room: usize,
    amount: Amount,
    spot: bool,
    pool: Option<(String, String)>,
}

/// Whether a node of these labels is spot capacity.
fn is_spot(l: &std::collections::BTreeMap<String, String>) -> bool {
    l.get(labels::EKS_CAPACITY_TYPE)
        .is_some_and(|v| v.eq_ignore_ascii_case("spot"))
        || l.get(labels::KARPENTER_CAPACITY_TYPE)
            .is_some_and(|v| v.eq_ignore_ascii_case("spot"))
}

fn pool(l: &std::collections::BTreeMap<String, String>) -> Option<(String, String)> {
    Some((
        l.get(labels::INSTANCE_TYPE)?.clone(),
        l.get(labels::ZONE)?.clone(),
    ))
}

/// Sorts `pods` as the scheduler's queue takes them: higher priority first, then older first (then
/// by key, so that the order is total). A plan binds its pods in this order, as the scheduler will.
pub fn queue_order(pods: &mut [&Pod]) {
    // The key `namespace/name` compared byte by byte without making it (a plan sorts every pod
    // it moves, in every evaluation).
    fn key(p: &Pod) -> impl Iterator<Item = u8> + '_ {
        p.namespace
            .as_str()
            .bytes()
            .chain(*b"/")
            .chain(p.name.bytes())
    }
    pods.sort_by(|a, b| {
        (-i64::from(a.meta.priority), a.meta.created)
            .cmp(&(-i64::from(b.meta.priority), b.meta.created))
            .then_with(|| key(a).cmp(key(b)))
    });
}

/// The first of `pods` (in queue order) that fits on none of `count` new nodes like `node` when
/// each is bound in turn to the first it fits, if one does not.
fn stranded(pods: &[&Pod], node: &Node, count: usize) -> Option<String> {
    let mut nodes: Vec<NodeInfo> = (0..count)
        .map(|k| {
            let mut n = node.clone();
            n.name = format!("{}-new-{k}", node.name);
            n.labels
                .insert(labels::HOSTNAME.to_string(), n.name.clone());
            NodeInfo::new(n)
        })
        .collect();
    first_fit(pods, &mut nodes, |_| true)
        .iter()
        .zip(pods)
        .find(|(at, _)| at.is_none())
        .map(|(_, p)| p.key())
}

/// Evaluates sets of candidates against the rest of the cluster.
pub(super) struct Evaluator<'a, 'c> {
    ctx: &'c Ctx<'a>,
    memory: &'c Memory,
    /// The cluster the maxima count (with what is on its way and asked for), from the ledger.
    max_nodes: usize,
    max_amount: Amount,
    infos: &'c [NodeInfo],
    /// Index into `infos` of each node that may receive pods (not going away, ready, no template).
    usable: Vec<usize>,
    /// Those nodes as they are, in that order: what an evaluation starts from. Each evaluation moves
    /// them out of here and back, and copies back from `infos` only the few it placed pods on, so that
    /// it does not clone the whole cluster.
    work: RefCell<Vec<NodeInfo>>,
    targets: Vec<Target<'a>>,
    total: Amount,
}

impl<'a, 'c> Evaluator<'a, 'c> {
    pub fn new(
        ctx: &'c Ctx<'a>,
        memory: &'c Memory,
        ledger: &Ledger,
        infos: &'c [NodeInfo],
        _d: &Decisions,
    ) -> Self {
        let world = ctx.world;
        let going = |n: &str| ledger.out_of_service(n) || world.interrupted.contains_key(n);
        let usable: Vec<usize> = infos
            .iter()
            .enumerate()
            .filter(|(_, i)| {
                is_ready(&i.node, &ctx.settings.taints) && !i.node.template && !going(&i.node.name)
            })
            .map(|(k, _)| k)
            .collect();
        let work = RefCell::new(usable.iter().map(|&k| infos[k].clone()).collect());
        let mut total = Amount::default();
        for i in infos {
            total.add(&Amount::of_node(&i.node), 1);
        }
        let mut targets = Vec::new();
        for g in world.groups.iter() {
            let Some(price) = g.price_per_hour.filter(|p| p.is_finite() && *p >= 0.0) else {
                continue;
            };
            // What scale-up obeys: group health, backoff, capacity, max size, the cluster's maxima.
            if ledger.surge_refusal(ctx, memory, g, 1).is_some() {
                continue;
            }
            let t = ctx.template(g);
            let room = (g.max_size - g.target_size - ledger.asked(&g.id)).max(0) as usize;
            let info = new_node(ctx, g, &format!("{}-consolidation", g.id));
            let mut node = info.node.clone();
            node.allocatable.cpu_milli -= info.requested.cpu_milli;
            node.allocatable.memory -= info.requested.memory;
            node.allocatable.pods -= info.requested.pods;
            targets.push(Target {
                group: g,
                price,
                spot: is_spot(&t.node.labels),
                pool: pool(&t.node.labels),
                amount: Amount::of_template(&t.node),
                node,
                room,
            });
        }
        let (max_nodes, max_amount) = ledger.cluster();
        let max_amount = max_amount.clone();
        Evaluator {
            ctx,
            memory,
            max_nodes,
            max_amount,
            infos,
            usable,
            work,
            targets,
            total,
        }
    }

    /// The last time a spot pool was interrupted or short, while recent.
    fn mark(&self, pool: &Option<(String, String)>) -> Option<i64> {
        let until = *self.memory.out_of_capacity.get(pool.as_ref()?)?;
        (self.ctx.now - until < RECENT).then_some(until)
    }

    /// The plan for the candidates `set` (indices into `cands`), or why there is none worth taking.
    pub fn evaluate(&self, cands: &[Candidate], set: &[usize]) -> Result<Found, Declined> {
        let taken: HashSet<usize> = set.iter().map(|&k| cands[k].index).collect();
        let mut pods: Vec<&Pod> = set
            .iter()
            .flat_map(|&k| cands[k].movable.iter().map(|p| p.as_ref()))
            .collect();
        // Placed as the scheduler will bind them once evicted: in its queue order.
        queue_order(&mut pods);
        let mut work = self.work.borrow_mut();
        // Where no pod placed or present looks at other nodes (no affinity, anti-affinity or
        // spread), a pod's fit on a node depends on that node alone: the taken nodes are only
        // skipped, and the cluster is not rearranged for each evaluation.
        if !pods.iter().any(|p| p.inter_pod()) && repelling(&work) == Repel::None {
            let usable = &self.usable;
            let placed = first_fit(&pods, &mut work, |p| !taken.contains(&usable[p]));
            let found = self.judge(cands, set, &pods, &placed, &[]);
            for p in placed.iter().flatten().copied().collect::<HashSet<usize>>() {
                work[p] = self.infos[usable[p]].clone();
            }
            return found;
        }
        // The usable nodes not taken, in order, moved out of `work` (the taken ones parked).
        let (mut rest, mut parked, mut at) =
            (Vec::with_capacity(work.len()), Vec::new(), Vec::new());
        for (p, info) in work.drain(..).enumerate() {
            if taken.contains(&self.usable[p]) {
                parked.push((p, info));
            } else {
                at.push(p);
                rest.push(info);
            }
        }
        let placed = first_fit(&pods, &mut rest, |_| true);
        let found = self.judge(cands, set, &pods, &placed, &rest);
        // Back as they were: the nodes that took pods copied afresh, the others moved back.
        let touched: HashSet<usize> = placed.iter().flatten().copied().collect();
        let mut parked = parked.into_iter().peekable();
        for (r, info) in rest.into_iter().enumerate() {
            while let Some((_, back)) = parked.next_if(|(p, _)| *p < at[r]) {
                work.push(back);
            }
            if touched.contains(&r) {
                work.push(self.infos[self.usable[at[r]]].clone());
            } else {
                work.push(info);
            }
        }
        work.extend(parked.map(|(_, p)| p));
        found
    }

    /// What taking `set` saves once `pods` (its pods) are `placed` on the `rest` of the cluster.
    fn judge(
        &self,
        cands: &[Candidate],
        set: &[usize],
        pods: &[&Pod],
        placed: &[Option<usize>],
        rest: &[NodeInfo],
    ) -> Result<Found, Declined> {
        let s = self.ctx.settings;
        let left: Vec<&Pod> = pods
            .iter()
            .zip(placed)
            .filter(|(_, at)| at.is_none())
            .map(|(p, _)| *p)
            .collect();
        let price: f64 = set.iter().map(|&k| cands[k].price).sum();
        let cost: f64 = set.iter().map(|&k| cands[k].cost).sum();
        let mut taken_amount = Amount::default();
        for &k in set {
            taken_amount.add(&Amount::of_node(&self.infos[cands[k].index].node), 1);
        }
        let spot_from: Vec<Option<(String, String)>> = set
            .iter()
            .map(|&k| &self.infos[cands[k].index].node.labels)
            .filter(|l| is_spot(l))
            .map(|l| pool(l))
            .collect();
        // The cheapest new capacity that takes every pod left, within bounds and limits.
        let mut best: Option<(f64, usize, &Target)> = None;
        // The cheapest kept from the plan by the spot rule, and the first pod left stranded.
        let mut spot: Option<(f64, usize, &Target)> = None;
        let mut strands: Option<(String, String, usize)> = None;
        if !left.is_empty() {
            let base: &[NodeInfo] = if left.iter().any(|p| p.inter_pod()) {
                rest
            } else {
                &[]
            };
            for t in &self.targets {
                // Spot to spot only onto a pool no more recently interrupted than those left.
                let spot_held = t.spot && !spot_from.is_empty() && {
                    let m = self.mark(&t.pool);
                    m.is_some() && spot_from.iter().any(|p| self.mark(p) < m)
                };
                let e = estimate_within(&left, &t.node, t.room, base, None);
                if !e.unplaced.is_empty() || e.nodes == 0 {
                    continue;
                }
                let n = e.nodes;
                if s.max_nodes_total > 0 && self.max_nodes + n > s.max_nodes_total {
                    continue;
                }
                // The old nodes still run while the new ones come up (surge first): the maxima
                // count both.
                let mut after = self.max_amount.clone();
                after.add(&t.amount, n as i64);
                if after.cores > s.cores_total.1
                    || after.memory > gib(s.memory_total_gib.1)
                    || above_gpu_max(&s.gpu_total, &after, &t.amount)
                {
                    continue;
                }
                // Bound in the scheduler's order, every pod left must find its place on the new
                // nodes: the estimator packs largest first, the scheduler binds by priority.
                if let Some(pod) = stranded(&left, &t.node, n) {
                    strands.get_or_insert((pod, t.group.id.clone(), n));
                    continue;
                }
                let c = t.price * n as f64;
                let key = |o: &Option<(f64, usize, &Target)>| {
                    o.is_none_or(|(bc, bn, bt)| (c, n, &t.group.id) < (bc, bn, &bt.group.id))
                };
                if spot_held {
                    if key(&spot) {
                        spot = Some((c, n, t));
                    }
                } else if key(&best) {
                    best = Some((c, n, t));
                }
            }
        }
        // Why no cheaper plan, with its figures: the spot rule kept a cheaper one, a pod would be
        // stranded, or the cheapest placement costs as much.
        let nothing = |cheapest: Option<Placement>| {
            if let Some((cost, n, t)) = spot.filter(|(c, _, _)| *c < price) {
                let (instance_type, zone) = t.pool.clone().unwrap_or_default();
                return Declined::SpotRule {
                    group: t.group.id.clone(),
                    count: n as i32,
                    instance_type,
                    zone,
                    cost,
                    price,
                };
            }
            if let Some((pod, group, count)) = strands.clone() {
                return Declined::Stranded { pod, group, count };
            }
            Declined::NothingCheaper { price, cheapest }
        };
        if !left.is_empty() && best.is_none() {
            return Err(nothing(None));
        }
        let (new_cost, into) = match best {
            Some((c, n, t)) => (c, Some((t.group.id.clone(), n as i32))),
            None => (0.0, None),
        };
        // The cluster stays at or above the --cores-total, --memory-total and --gpu-total minima.
        let mut after = self.total.clone();
        after.add(&taken_amount, -1);
        let mut added = Amount::default();
        if let Some((_, n, t)) = best {
            added.add(&t.amount, n as i64);
        }
        after.add(&added, 1);
        if after.cores < s.cores_total.0 {
            return Err(Declined::ClusterLimit(Resource::Cores));
        }
        if after.memory < gib(s.memory_total_gib.0) {
            return Err(Declined::ClusterLimit(Resource::Memory));
        }
        if below_gpu_min(&s.gpu_total, &after, &taken_amount, &added) {
            return Err(Declined::ClusterLimit(Resource::Gpu));
        }
        let saving = price - new_cost;
        if saving <= 0.0 {
            return Err(nothing(Some(Placement {
                group: best.map(|(_, _, t)| t.group.id.clone()),
                count: best.map_or(0, |(_, n, _)| n as i32),
                cost: new_cost,
            })));
        }
        if saving < s.consolidation_min_savings * price {
            return Err(Declined::SavingTooSmall {
                saving,
                price,
                min_share: s.consolidation_min_savings,
            });
        }
        let per_pod = s.consolidation_min_savings_per_pod;
        if per_pod > 0.0 && saving < per_pod * pods.len() as f64 {
            return Err(Declined::SavingPerPodTooSmall {
                saving,
                pods: pods.len(),
                min_per_pod: per_pod,
            });
        }
        Ok(Found {
            set: set.to_vec(),
            into,
            price,
            saving,
            cost,
        })
    }
}
