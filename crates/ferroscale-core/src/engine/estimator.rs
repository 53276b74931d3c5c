//! How many new nodes of one template the pending pods need (pure): upstream's binpacking estimator.
//! Pods are grouped into equivalence groups (same requests and constraints), groups are taken in
//! decreasing order of `cpu / allocatable cpu + memory / allocatable memory`, and each group is placed
//! in upstream's two steps: its pods go to the first new node they fit until one fits none; from then on
//! each pod of the group is tried on the LAST new node only (a pod with a hostname spread constraint
//! that the last node refuses for its spread also on the other new nodes), and a node is added when it
//! does not fit. Once the limit refuses a node, later groups still fill the new nodes already there.
//! A node added for a pod that then does not fit it (its neighbours refuse) ends the group, holds no
//! pod and is not counted, but counts against the limit, as upstream's limiter granted it.
//!
//! Inter-pod constraints (topology spread, pod affinity and anti-affinity) count the pods already in the
//! cluster: the estimate runs against the cluster's nodes (`base`, see [`super::topology::relevant`])
//! plus the new ones, and only new nodes receive pods.
//!
//! Fast path: within a group of identical pods whose placement can only get harder as nodes fill
//! (no pod affinity, no spread constraint), a node one pod did not fit is never tried again by the next,
//! so a group costs O(pods + nodes) checks instead of O(pods × nodes).

use crate::labels;

use super::equivalence::equivalence_groups;
use super::predicates::{
    fits_among, fits_in, repelling, Cluster, NodeInfo, Repel, SpreadMemo, Unfit,
};
use crate::clock::Deadline;
use crate::model::workload::{Node, Pod};

/// What the estimate found.
#[derive(Debug, Clone)]
pub struct Estimate {
    /// New nodes needed.
    pub nodes: usize,
    /// Indices (into the pods given) of the pods placed on them.
    pub scheduled: Vec<usize>,
    /// Pods not placed, with why: they fit no empty template node, or the node limit was reached.
    pub unplaced: Vec<(usize, Unplaced)>,
    /// The new nodes with their pods (only their sums when no pod has inter-pod constraints).
    pub placements: Vec<NodeInfo>,
}

/// Why a pod was left out of an estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unplaced {
    /// It does not fit even an empty node of the template.
    NoFit(Unfit),
    /// The node limit (max size, `--max-nodes-per-scaleup`, ...) was reached first.
    Limit,
    /// The time budget (`--max-nodegroup-binpacking-duration`) ran out first.
    TimeBudget,
}

/// Pods between two reads of the clock inside one equivalence group.
const CLOCK_EVERY: usize = 256;

/// A new node of the template, with a hostname of its own (per-node topology must tell them apart).
fn new_node(template: &Node, n: usize) -> NodeInfo {
    let mut node = template.clone();
    node.name = format!("{}-new-{n}", template.name);
    node.labels
        .insert(labels::HOSTNAME.to_string(), node.name.clone());
    NodeInfo::new(node)
}

/// Estimates the new nodes of `template` that `pods` need, adding at most `max_nodes`.
pub fn estimate(pods: &[&Pod], template: &Node, max_nodes: usize) -> Estimate {
    estimate_within(pods, template, max_nodes, &[], None)
}

/// [`estimate`] in a cluster whose nodes (`base`) inter-pod constraints count, stopping at `deadline`:
/// pods not looked at by then are [`Unplaced::TimeBudget`], so one pathological group cannot stall the
/// loop (upstream's `--max-nodegroup-binpacking-duration`).
pub fn estimate_within(
    pods: &[&Pod],
    template: &Node,
    max_nodes: usize,
    base: &[NodeInfo],
    deadline: Option<Deadline<'_>>,
) -> Estimate {
    estimate_shaped(
        pods,
        equivalence_groups(pods),
        template,
        max_nodes,
        base,
        deadline,
    )
}

/// [`estimate_within`] with the pods' equivalence groups already made (`equivalence_groups(pods)`):
/// scale-up estimates the same pods for every group and groups them once.
pub fn estimate_shaped(
    pods: &[&Pod],
    mut groups: Vec<Vec<usize>>,
    template: &Node,
    max_nodes: usize,
    base: &[NodeInfo],
    deadline: Option<Deadline<'_>>,
) -> Estimate {
    let out_of_time = || deadline.is_some_and(|d| d.passed());
    let alloc = &template.allocatable;
    let score = |p: &Pod| {
        let share = |want: i64, have: i64| {
            if have > 0 {
                want as f64 / have as f64
            } else {
                0.0
            }
        };
        share(p.requests.cpu_milli, alloc.cpu_milli) + share(p.requests.memory, alloc.memory)
    };
    groups.sort_by(|a, b| score(pods[b[0]]).total_cmp(&score(pods[a[0]])));

    let mut b = Binpack {
        pods,
        template,
        base,
        nodes: Vec::with_capacity(max_nodes.min(pods.len())),
        held: Vec::with_capacity(max_nodes.min(pods.len())),
        scheduled: Vec::with_capacity(pods.len()),
        unplaced: Vec::new(),
        // Whether any placed pod has anti-affinity, which every later pod must then be checked against.
        any_anti: repelling(base),
        // Without inter-pod constraints no check reads the pods on a node: only their sum is kept.
        keep_pods: pods.iter().any(|p| p.inter_pod()),
        // Spread counts, kept as nodes are added and pods placed.
        memo: SpreadMemo::default(),
    };
    let empty = new_node(template, 0);
    // Why no more new nodes may be added (upstream's limiter said no): later groups still fill the
    // new nodes already there.
    let mut closed: Option<Unplaced> = None;
    for group in groups {
        let first = pods[group[0]];
        if let Err(why) = fits_in(first, &[], &empty, Repel::None) {
            // Refused by the node alone: no neighbour is to blame.
            b.unplace(&group, Unplaced::NoFit(why));
            continue;
        }
        if closed.is_none() && out_of_time() {
            closed = Some(Unplaced::TimeBudget);
        }
        let monotone = first.affinity.is_empty() && first.spread.is_empty();
        let k = b.onto_new_nodes(&group, monotone, &out_of_time);
        if k == group.len() {
            continue;
        }
        if let Some(why) = &closed {
            b.unplace(&group[k..], why.clone());
            continue;
        }
        closed = b.onto_last_node(&group[k..], max_nodes, &out_of_time);
    }
    // Only a node added for a pod that then did not fit it holds nothing; it is not counted.
    let placements: Vec<NodeInfo> = if b.held.iter().all(|&h| h > 0) {
        b.nodes
    } else {
        b.nodes
            .into_iter()
            .zip(b.held)
            .filter_map(|(n, held)| (held > 0).then_some(n))
            .collect()
    };
    Estimate {
        nodes: placements.len(),
        scheduled: b.scheduled,
        unplaced: b.unplaced,
        placements,
    }
}

/// One estimate's state: the new nodes so far, with the pods each holds.
struct Binpack<'a> {
    pods: &'a [&'a Pod],
    template: &'a Node,
    base: &'a [NodeInfo],
    nodes: Vec<NodeInfo>,
    /// Pods on each new node: a node added for a pod it then refused holds none and is not counted.
    held: Vec<usize>,
    scheduled: Vec<usize>,
    unplaced: Vec<(usize, Unplaced)>,
    any_anti: Repel,
    keep_pods: bool,
    memo: SpreadMemo,
}

impl Binpack<'_> {
    fn unplace(&mut self, group: &[usize], why: Unplaced) {
        self.unplaced
            .extend(group.iter().map(|&i| (i, why.clone())));
    }

    fn cluster(&self) -> Cluster<'_> {
        Cluster {
            base: self.base,
            added: &self.nodes,
            memo: Some(&self.memo),
            overlay: None,
        }
    }

    /// Whether the pod fits new node `n`: the cheap room check first.
    fn fits(&self, pod: &Pod, n: usize) -> bool {
        self.nodes[n].has_room_for(pod)
            && fits_among(pod, self.cluster(), &self.nodes[n], self.any_anti).is_ok()
    }

    /// Why the pod does not fit new node `n`, if it does not.
    fn refusal(&self, pod: &Pod, n: usize) -> Option<Unfit> {
        fits_among(pod, self.cluster(), &self.nodes[n], self.any_anti).err()
    }

    fn place(&mut self, i: usize, n: usize) {
        let pod = self.pods[i];
        if self.keep_pods {
            self.nodes[n].add(pod.clone());
            self.memo.pod_placed(&self.nodes[n], pod);
        } else {
            self.nodes[n].add_counted(pod);
        }
        self.held[n] += 1;
        self.any_anti = self.any_anti.max(Repel::of(pod));
        self.scheduled.push(i);
    }

    /// Upstream's first step for a group: each pod onto any new node already there, until one fits
    /// none. Returns how many of the group were placed.
    fn onto_new_nodes(
        &mut self,
        group: &[usize],
        monotone: bool,
        out_of_time: &dyn Fn() -> bool,
    ) -> usize {
        // Within a group whose placement only gets harder as nodes fill, a node one pod did not fit
        // is never tried again by the next.
        let mut start = 0;
        for (k, &i) in group.iter().enumerate() {
            if k > 0 && k % CLOCK_EVERY == 0 && out_of_time() {
                self.unplace(&group[k..], Unplaced::TimeBudget);
                return group.len();
            }
            let pod = self.pods[i];
            let from = if monotone { start } else { 0 };
            let Some(n) = (from..self.nodes.len()).find(|&n| self.fits(pod, n)) else {
                return k;
            };
            self.place(i, n);
            start = n;
        }
        group.len()
    }

    /// Upstream's second step for the rest of a group: each pod onto the last new node only (another
    /// new node only when a hostname spread constraint refuses the last), else onto a node added for
    /// it. Stops the group when the last node was added and holds nothing yet (the pods fit no fresh
    /// node), or a fresh node refuses the pod; returns why no more nodes may be added, if so.
    fn onto_last_node(
        &mut self,
        rest: &[usize],
        max_nodes: usize,
        out_of_time: &dyn Fn() -> bool,
    ) -> Option<Unplaced> {
        for (k, &i) in rest.iter().enumerate() {
            let pod = self.pods[i];
            if let Some(last) = self.nodes.len().checked_sub(1) {
                // The cheap room check first; the full one only with room (a reason only if needed).
                let why = if self.nodes[last].has_room_for(pod) {
                    match self.refusal(pod, last) {
                        None => {
                            self.place(i, last);
                            continue;
                        }
                        why => why,
                    }
                } else {
                    None
                };
                if matches!(why, Some(Unfit::TopologySpread(_))) && by_hostname(pod) {
                    if let Some(n) = (0..last).find(|&n| self.fits(pod, n)) {
                        self.place(i, n);
                        continue;
                    }
                }
                if self.held[last] == 0 {
                    let why = why.or_else(|| self.refusal(pod, last));
                    let why = why.unwrap_or_else(|| Unfit::Insufficient("pods".into()));
                    self.unplace(&rest[k..], Unplaced::NoFit(why));
                    return None;
                }
            }
            if self.nodes.len() >= max_nodes {
                self.unplace(&rest[k..], Unplaced::Limit);
                return Some(Unplaced::Limit);
            }
            if out_of_time() {
                self.unplace(&rest[k..], Unplaced::TimeBudget);
                return Some(Unplaced::TimeBudget);
            }
            // The fresh node is checked before it joins the new nodes (its own domain empty).
            let node = new_node(self.template, self.nodes.len());
            let refused = fits_among(pod, self.cluster(), &node, self.any_anti).err();
            self.nodes.push(node);
            self.held.push(0);
            let n = self.nodes.len() - 1;
            self.memo.node_added(&self.nodes[n]);
            if let Some(why) = refused {
                // Only neighbours (spread, anti-affinity) can refuse a fresh node.
                self.unplace(&rest[k..], Unplaced::NoFit(why));
                return None;
            }
            self.place(i, n);
        }
        None
    }
}

/// Whether a pod spreads over hostnames (upstream then tries the other new nodes when the last
/// refuses it for its spread).
fn by_hostname(pod: &Pod) -> bool {
    pod.spread
        .iter()
        .any(|c| c.topology_key == labels::HOSTNAME)
}

#[cfg(test)]
mod tests;
